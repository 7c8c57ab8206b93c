#!/usr/bin/env bash
# build-kernel.sh: builds the space guest kernel, an uncompressed x86_64 ELF
# vmlinux that the VMM boots directly at its 64-bit entry.
#
# It owns ${SPACE_CACHE:-/var/cache/space}/kernel/: one <hash>/ directory per
# build (vmlinux and the .config it was built with), the `current` symlink to
# the latest successful build, build.log of the last build, and short-lived
# .build.* temp trees (renamed .trash.* and deleted in the background). The hash covers the linux-source-6.1 package version,
# scripts/kernel/config.fragment, every scripts/kernel/patches/*.patch and this
# script, so any change to them gives a new kernel and an unchanged input is a
# cache hit that returns at once.
#
# Steps: unpack Debian's /usr/src/linux-source-6.1.tar.xz, apply the patches,
# `make tinyconfig`, merge the fragment, olddefconfig, check that every option
# of the fragment survived, `make vmlinux`, rename the result into place.
#
# Usage: build-kernel.sh [--print-path]
#   stdout: only the path of the vmlinux. Progress goes to stderr.
#   --print-path  print the path the kernel has (or would have) and exit 0 if
#                 it is built, 1 if not; never builds.
# Environment: SPACE_CACHE (cache root), SPACE_KERNEL_JOBS (make -j, default 2).
set -euo pipefail

readonly PKG=linux-source-6.1
readonly TARBALL=/usr/src/linux-source-6.1.tar.xz

script_path=$(readlink -f "${BASH_SOURCE[0]}")
kernel_dir=$(dirname "$script_path")/kernel
fragment=$kernel_dir/config.fragment
patch_dir=$kernel_dir/patches
cache=${SPACE_CACHE:-/var/cache/space}/kernel
jobs=${SPACE_KERNEL_JOBS:-2}

say() { echo "build-kernel: $*" >&2; }
die() { echo "build-kernel: error: $*" >&2; exit 1; }

print_only=0
case "${1:-}" in
    "") ;;
    --print-path) print_only=1 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$script_path"; exit 0 ;;
    *) die "unknown argument '$1' (usage: build-kernel.sh [--print-path])" ;;
esac

[[ -f $fragment ]] || die "missing $fragment"
shopt -s nullglob
patches=("$patch_dir"/*.patch)
shopt -u nullglob

pkg_state=$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$PKG" 2>/dev/null) || pkg_state=
[[ $pkg_state == "installed "* ]] || die "package $PKG is not installed: apt-get install $PKG"
pkg_version=${pkg_state#installed }

# Cache key: every input, each preceded by its name so that moving bytes
# from one file to another changes the key.
hash=$(
    {
        printf 'package %s %s\n' "$PKG" "$pkg_version"
        for f in "$fragment" "${patches[@]}" "$script_path"; do
            printf 'file %s %s\n' "$(basename "$f")" "$(stat -c %s "$f")"
            cat "$f"
        done
    } | sha256sum | cut -c1-16
)
out_dir=$cache/$hash
vmlinux=$out_dir/vmlinux

set_current() {
    ln -sfn "$hash" "$cache/.current.$$"
    mv -fT "$cache/.current.$$" "$cache/current"
}

if (( print_only )); then
    echo "$vmlinux"
    [[ -f $vmlinux ]] && exit 0 || exit 1
fi
if [[ -f $vmlinux ]]; then
    [[ "$(readlink "$cache/current" 2>/dev/null)" == "$hash" ]] || set_current 2>/dev/null || true
    echo "$vmlinux"
    exit 0
fi

# --- preflight: name the package for anything missing ----------------------
[[ -f $TARBALL ]] || die "$TARBALL not found: apt-get install $PKG"
need() { command -v "$1" >/dev/null || die "'$1' not found: apt-get install $2"; }
need make make
need gcc gcc
need ld binutils
need flex flex
need bison bison
need bc bc
need perl perl
need xz xz-utils
need patch patch
need flock util-linux
[[ -f /usr/include/gelf.h ]] || die "libelf headers not found: apt-get install libelf-dev"
[[ -f /usr/include/openssl/opensslv.h ]] || die "openssl headers not found: apt-get install libssl-dev"

mkdir -p "$cache"
exec 9>"$cache/.lock"
if ! flock -n 9; then
    say "another build is running, waiting for it"
    flock 9
fi
if [[ -f $vmlinux ]]; then   # built by the run we waited for
    set_current
    echo "$vmlinux"
    exit 0
fi

# Deleting a 1 GB tree of fresh files takes minutes on a busy disk, so it
# is renamed away at once and removed in the background. Leftovers of
# killed runs (we hold the lock, so no other build is live) go the same way.
trash_dir() {
    local t
    t=$(mktemp -u "$cache/.trash.XXXXXX")
    mv -f "$1" "$t" && { setsid nohup rm -rf "$t" >/dev/null 2>&1 9>&- & }
}
for old in "$cache"/.build.* "$cache"/.trash.*; do
    [[ -d $old ]] && { trash_dir "$old" || true; }
done
work=$(mktemp -d "$cache/.build.XXXXXX")
log=$work/build.log
cleanup() {
    local rc=$?
    [[ -f $log ]] && cp -f "$log" "$cache/build.log" 2>/dev/null
    if (( rc != 0 )) && [[ -f $log ]]; then
        echo "build-kernel: last lines of the build log (full log: $cache/build.log):" >&2
        tail -n 25 "$log" >&2 || true
    fi
    trash_dir "$work" 2>/dev/null || rm -rf "$work"
}
trap cleanup EXIT
src=$work/src
mkdir "$src"
start=$SECONDS

# --- unpack ---------------------------------------------------------------
# Files an x86 vmlinux build never reads are skipped (about half the tree):
# sources of other architectures and of big driver families this config
# does not build (their Kconfig files stay: Kconfig sources them all), docs
# and selftests. Enabling e.g. DRM later means removing its line here.
say "unpacking $TARBALL ($PKG $pkg_version)"
top=linux-source-6.1
skip=(Documentation/translations Documentation/devicetree 'Documentation/*.rst'
      tools/testing tools/perf
      'drivers/gpu/*.[ch]' 'drivers/net/ethernet/*.[ch]' 'drivers/net/wireless/*.[ch]'
      'drivers/media/*.c' 'drivers/staging/*.c' 'drivers/infiniband/*.c' 'sound/*.c')
for d in alpha arc arm arm64 csky hexagon ia64 loongarch m68k microblaze mips \
         nios2 openrisc parisc powerpc riscv s390 sh sparc um xtensa; do
    skip+=("arch/$d/*.[chS]" "arch/$d/*.dts" "arch/$d/*.dtsi")
done
tar -xJf "$TARBALL" -C "$src" --strip-components=1 \
    "${skip[@]/#/--exclude=$top/}" \
    || die "could not unpack $TARBALL"

say "applying ${#patches[@]} patch(es)"
for p in "${patches[@]}"; do
    patch -d "$src" -p1 --forward --batch --quiet < "$p" >>"$log" 2>&1 ||
        die "patch $(basename "$p") does not apply to $PKG $pkg_version"
done

# --- configure ------------------------------------------------------------
say "configuring (tinyconfig + $(basename "$fragment"))"
kmake=(make -C "$src" ARCH=x86 KBUILD_BUILD_USER=space KBUILD_BUILD_HOST=space
       "KBUILD_BUILD_TIMESTAMP=$PKG $pkg_version")
"${kmake[@]}" tinyconfig >>"$log" 2>&1 || die "make tinyconfig failed"
(cd "$src" && ARCH=x86 scripts/kconfig/merge_config.sh -m .config "$fragment") >>"$log" 2>&1 ||
    die "merging $fragment failed"
"${kmake[@]}" olddefconfig >>"$log" 2>&1 || die "make olddefconfig failed"

# olddefconfig silently drops options whose dependencies are off: check that
# every line of the fragment is what ended up in .config.
missing=()
while IFS= read -r line; do
    [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]] || continue
    opt=${BASH_REMATCH[1]} want=${BASH_REMATCH[2]}
    if [[ $want == n ]]; then
        grep -q "^$opt=" "$src/.config" && missing+=("$opt=n (is $(grep "^$opt=" "$src/.config"))")
    else
        grep -qxF "$opt=$want" "$src/.config" ||
            missing+=("$opt=$want (is $(grep -E "^$opt=|^# $opt is not set" "$src/.config" || echo absent))")
    fi
done < "$fragment"
if (( ${#missing[@]} )); then
    printf 'build-kernel: option not applied: %s\n' "${missing[@]}" >&2
    die "${#missing[@]} option(s) of $(basename "$fragment") did not survive olddefconfig (a dependency is off)"
fi

# --- compile --------------------------------------------------------------
say "compiling with -j$jobs (about 2-3 min)"
"${kmake[@]}" -j"$jobs" vmlinux >>"$log" 2>&1 || die "make vmlinux failed"
[[ -s $src/vmlinux ]] || die "make succeeded but produced no vmlinux"

# --- install: same filesystem as $work, so mv is an atomic rename ----------
mkdir -p "$out_dir"
cp "$src/.config" "$out_dir/config"
mv -f "$src/vmlinux" "$out_dir/.vmlinux.$$"
mv -f "$out_dir/.vmlinux.$$" "$vmlinux"
set_current
say "done in $((SECONDS - start)) s: $(stat -c %s "$vmlinux") bytes"
echo "$vmlinux"
