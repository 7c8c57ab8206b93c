#!/usr/bin/env bash
# build-rootfs.sh: builds the space guest root filesystem, an ext4 image (label space-root) made
# with `mkfs.ext4 -d` from a staging tree and fixed up with debugfs: no loop mount, and no root
# (as non-root, mkfs runs in a user namespace so the staged files appear root-owned).
#
# It owns ${SPACE_CACHE:-/var/cache/space}/rootfs/: one <hash>/rootfs.ext4 per build, the
# `current` symlink to the latest build, the .lock file that serialises builds, and short-lived
# .build.* temp trees. The hash covers the guest-init and space-secret binaries, the busybox-static package version
# and binary, every file under scripts/rootfs/, the image size, the timestamp and this script, so
# an unchanged input is a cache hit that prints its path at once.
#
# Image layout: /sbin/init = guest-init (debug info stripped); /usr/bin/space-secret (the guest's
# tool to fetch a granted secret, stripped likewise); /bin/busybox from busybox-static
# with a symlink per applet in /bin (from `busybox --list`; not init/linuxrc: guest-init is init);
# /usr/bin/env -> busybox; scripts/rootfs/ copied over / (etc/passwd, group, shadow, hosts,
# profile, nsswitch.conf); /dev/console and /dev/null nodes for the moment before devtmpfs is up;
# empty /proc /sys /dev /tmp /run /root /home/user (uid 1000) /var/tmp /mnt, and /.space/host and
# /.space/image, the gVisor engine's mount points.
# Every file has the same timestamp and the filesystem a fixed UUID and hash seed, so the same
# inputs give the same bytes. Inode tables and journal are written here, not lazily by the guest
# kernel (which is interpreted on PVM hosts).
#
# Usage: build-rootfs.sh [--guest-init PATH] [--space-secret PATH] [--size MIB] [--print-path]
#   --guest-init PATH  the static guest-init to install (default: <repo>/build/guest-init)
#   --space-secret PATH  the static space-secret to install (default: next to guest-init)
#   --size MIB         image size, sparse (default: $SPACE_ROOTFS_MIB or 64)
#   --print-path       print the path the image has (or would have) and exit 0 if it is built,
#                      1 if not; never builds.
#   stdout: only the path of rootfs.ext4. Progress goes to stderr.
# Environment: SPACE_CACHE (cache root), SPACE_ROOTFS_MIB, SOURCE_DATE_EPOCH (file timestamps).
set -euo pipefail

readonly BUSYBOX_PKG=busybox-static
readonly BUSYBOX=/bin/busybox
readonly LABEL=space-root
# Fixed identity of every image; guests find the root by device (root=/dev/vda), not by UUID.
readonly FS_UUID=5eace0de-0000-4000-8000-000000000001

script_path=$(readlink -f "${BASH_SOURCE[0]}")
repo=$(dirname "$(dirname "$script_path")")
static_dir=$(dirname "$script_path")/rootfs
cache=${SPACE_CACHE:-/var/cache/space}/rootfs
guest_init=$repo/build/guest-init
space_secret=
size_mib=${SPACE_ROOTFS_MIB:-64}
epoch=${SOURCE_DATE_EPOCH:-1704067200}
print_only=0

say() { echo "build-rootfs: $*" >&2; }
die() { echo "build-rootfs: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$script_path"; }

while (($#)); do
    case "$1" in
        --guest-init) (($# >= 2)) || die "--guest-init needs a path"; guest_init=$2; shift 2 ;;
        --guest-init=*) guest_init=${1#*=}; shift ;;
        --space-secret) (($# >= 2)) || die "--space-secret needs a path"; space_secret=$2; shift 2 ;;
        --space-secret=*) space_secret=${1#*=}; shift ;;
        --size) (($# >= 2)) || die "--size needs a size in MiB"; size_mib=$2; shift 2 ;;
        --size=*) size_mib=${1#*=}; shift ;;
        --print-path) print_only=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (usage: build-rootfs.sh [--guest-init PATH] [--space-secret PATH] [--size MIB] [--print-path])" ;;
    esac
done

[[ $size_mib =~ ^[0-9]+$ ]] && ((size_mib >= 16 && size_mib <= 1048576)) ||
    die "--size must be a whole number of MiB between 16 and 1048576, got '$size_mib'"
[[ $epoch =~ ^[0-9]+$ ]] || die "SOURCE_DATE_EPOCH must be a number of seconds, got '$epoch'"
[[ -f $guest_init ]] ||
    die "guest-init not found at $guest_init: build it first (cmake -S . -B build -G Ninja && ninja -C build guest-init) or pass --guest-init PATH"
guest_init=$(readlink -f "$guest_init")
[[ -n $space_secret ]] || space_secret=$(dirname "$guest_init")/space-secret
[[ -f $space_secret ]] ||
    die "space-secret not found at $space_secret: build it first (ninja -C build space-secret) or pass --space-secret PATH"
space_secret=$(readlink -f "$space_secret")
[[ -d $static_dir ]] || die "missing $static_dir"
bb_version=$(dpkg-query -W -f='${Version}' "$BUSYBOX_PKG" 2>/dev/null) || bb_version=
[[ -n $bb_version && -x $BUSYBOX ]] ||
    die "package $BUSYBOX_PKG is not installed: apt-get install $BUSYBOX_PKG"
mkfs=$(PATH=$PATH:/usr/sbin:/sbin command -v mkfs.ext4) ||
    die "mkfs.ext4 not found: apt-get install e2fsprogs"

# Cache key: every input, each preceded by its name so that moving bytes between inputs
# changes the key.
hash=$(
    {
        printf 'package %s %s\n' "$BUSYBOX_PKG" "$bb_version"
        printf 'size %s\nepoch %s\n' "$size_mib" "$epoch"
        printf 'file guest-init %s\n' "$(sha256sum <"$guest_init")"
        printf 'file space-secret %s\n' "$(sha256sum <"$space_secret")"
        printf 'file busybox %s\n' "$(sha256sum <"$BUSYBOX")"
        printf 'file build-rootfs.sh %s\n' "$(sha256sum <"$script_path")"
        (cd "$static_dir" && find . -type f -print0 | LC_ALL=C sort -z |
            while IFS= read -r -d '' f; do printf 'static %s %s\n' "$f" "$(sha256sum <"$f")"; done)
    } | sha256sum | cut -c1-16
)
out_dir=$cache/$hash
out=$out_dir/rootfs.ext4

update_current() {
    ln -sfn "$hash" "$cache/.current.$$"
    mv -T "$cache/.current.$$" "$cache/current"
}

if ((print_only)); then
    echo "$out"
    [[ -f $out ]]
    exit
fi
if [[ -f $out ]]; then
    update_current
    echo "$out"
    exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
if [[ -f $out ]]; then  # another build finished it while we waited
    update_current
    echo "$out"
    exit 0
fi

work=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/root
say "staging in $stage"

umask 022
mkdir -p "$stage"/{bin,sbin,etc,dev,proc,sys,run,root,mnt,home/user,usr/bin,usr/sbin,usr/local/bin,var/tmp,tmp}
# Mount points for the gVisor engine (proto/agent.h): runsc makes none in a read-only root.
mkdir -p "$stage"/.space/{host,image}
chmod 0700 "$stage/root"
chmod 1777 "$stage/tmp" "$stage/var/tmp"

# guest-init as /sbin/init; debug info is of no use inside the guest.
if command -v strip >/dev/null; then
    strip --strip-debug -o "$stage/sbin/init" "$guest_init"
else
    cp "$guest_init" "$stage/sbin/init"
fi
chmod 0755 "$stage/sbin/init"
if command -v strip >/dev/null; then
    strip --strip-debug -o "$stage/usr/bin/space-secret" "$space_secret"
else
    cp "$space_secret" "$stage/usr/bin/space-secret"
fi
chmod 0755 "$stage/usr/bin/space-secret"

# busybox and its applets.
cp "$BUSYBOX" "$stage/bin/busybox"
chmod 0755 "$stage/bin/busybox"
applets=0
while IFS= read -r applet; do
    case "$applet" in
        busybox|init|linuxrc|'') continue ;;
        */*) die "unexpected applet name '$applet' from busybox --list" ;;
    esac
    ln -s busybox "$stage/bin/$applet"
    applets=$((applets + 1))
done < <("$BUSYBOX" --list)
ln -s ../../bin/busybox "$stage/usr/bin/env"
say "busybox $bb_version: $applets applets"

# Static files; modes are set here, not taken from the checkout.
cp -R "$static_dir"/. "$stage"/
find "$stage/etc" -type d -exec chmod 0755 {} +
find "$stage/etc" -type f -exec chmod 0644 {} +
[[ -f $stage/etc/shadow ]] && chmod 0600 "$stage/etc/shadow"

# Fixed timestamps everywhere (ctime cannot be set; debugfs fixes it below).
find "$stage" -exec touch -h -d "@$epoch" {} +

img=$work/rootfs.ext4
truncate -s "${size_mib}M" "$img"
say "mkfs.ext4 ${size_mib} MiB"
mkfs_cmd=(env E2FSPROGS_FAKE_TIME="$epoch" "$mkfs" -q -F -t ext4 -b 4096 -i 4096 -m 0
    -L "$LABEL" -U "$FS_UUID"
    -E "hash_seed=$FS_UUID,lazy_itable_init=0,lazy_journal_init=0,nodiscard,root_owner=0:0"
    -d "$stage" "$img")
if ((EUID == 0)); then
    "${mkfs_cmd[@]}" >&2
else
    # Inside a user namespace our files appear to be owned by root, which is what mkfs copies.
    unshare --map-root-user -- "${mkfs_cmd[@]}" >&2 ||
        die "mkfs.ext4 failed; as non-root this needs unprivileged user namespaces, or run as root"
fi

# Post-processing with debugfs: device nodes (no mknod needed), owners that differ from the
# builder's, and the same ctime/atime/crtime on every inode.
dbg=$work/debugfs.cmd
{
    echo "cd /dev"
    echo "mknod console c 5 1"
    echo "mknod null c 1 3"
    echo "cd /"
    echo "sif /dev/console mode 020600"
    echo "sif /dev/null mode 020666"
    echo "sif /home/user uid 1000"
    echo "sif /home/user gid 1000"
    (cd "$stage" && find . -mindepth 1 -print | LC_ALL=C sort) | sed 's|^\.||' |
        cat - <(printf '/\n/dev/console\n/dev/null\n/lost+found\n') |
        while IFS= read -r p; do
            for field in atime ctime mtime crtime; do echo "sif \"$p\" $field @$epoch"; done
            for field in atime_extra ctime_extra mtime_extra crtime_extra; do echo "sif \"$p\" $field 0"; done
        done
} >"$dbg"
E2FSPROGS_FAKE_TIME=$epoch debugfs -w -f "$dbg" "$img" >"$work/debugfs.log" 2>&1 ||
    die "debugfs failed: $(tail -5 "$work/debugfs.log")"
if grep -v -e '^debugfs' -e '^Allocated inode' "$work/debugfs.log" | grep -q .; then
    die "debugfs reported: $(grep -v -e '^debugfs' -e '^Allocated inode' "$work/debugfs.log" | head -5)"
fi
e2fsck_out=$(PATH=$PATH:/usr/sbin:/sbin e2fsck -fn "$img" 2>&1) ||
    die "the new image does not pass e2fsck: $e2fsck_out"

mkdir -p "$out_dir"
mv -f "$img" "$out"
update_current
say "built $out ($(du -k "$out" | cut -f1) KiB used of ${size_mib} MiB)"
echo "$out"
