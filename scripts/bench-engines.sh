#!/usr/bin/env bash
# Benchmark of the engines (issue 41 item 8): in one run on one host, space on the gvisor engine
# against its peer, bare runsc (the same runsc, flags, rootfs and image, driven directly:
# create+start, exec, pause/resume, delete), against bwrap and native for the exec rows, and
# space on the vm engine where /dev/kvm exists. Rows (scripts/bench_engines.py measures them):
#   create        p50 and p90 of --runs creates (space: `space create`; runsc: create + start)
#   first exec    `true` in a sandbox just made
#   from a pool   space gvisor only: create p50/p90 with [engine.gvisor] pool = 2 (core/pool.h),
#                 a member ready for each (the refill waited for, untimed), and its first exec
#   exec true     p50 and p90 of `true` in a running sandbox (bwrap: a new sandbox each time)
#   python3       `python3 -c pass` in the Debian image (bookworm with python3; made once with
#                 `space image build --debian` and kept as a tarball in $SPACE_CACHE/bench-images)
#   pause/resume  one pause and one resume of a running sandbox, medians
#   branch 1, 10  `space branch --count N`
#   destroy       p50 of destroys (runsc: delete --force)
#   PSS/idle      proportional set size of all of a sandbox's host processes, per sandbox, with
#                 --live of them running idle at once (20 by default), and whether they all ran
# Plain lines, the ratio of each column to its peer (gvisor to runsc; python3 to native), no
# assertions on any figure; it exits non-zero only when something failed to run.
#
# Usage: scripts/bench-engines.sh [--root DIR] [--runs N] [--live N] [--no-image] [--keep]
# Environment: SPACE_BIN (default build/space), SPACE_GUEST_INIT (default build/guest-init),
# SPACE_CACHE (default /var/cache/space).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
SPACE_GUEST_INIT=${SPACE_GUEST_INIT:-$SRC/build/guest-init}
. "$SRC/scripts/bench-lib.sh"
. "$SRC/scripts/deps.sh"
RUNS=10
LIVE=20
IMAGE=1
KEEP=0
ROOT=""
usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=${2:?}; shift 2 ;;
    --runs) RUNS=${2:?}; shift 2 ;;
    --live) LIVE=${2:?}; shift 2 ;;
    --no-image) IMAGE=0; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage ;;
    *) echo "bench-engines: unknown argument '$1'" >&2; usage ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "bench-engines: run as root (runsc, loop mounts, chroot)" >&2; exit 1; }
[ -x "$SPACE_BIN" ] || { echo "bench-engines: no space binary at $SPACE_BIN (build it, or set SPACE_BIN)" >&2; exit 1; }
ensure_runsc
ensure_debian_packages bubblewrap

ROOTFS=$("$SRC/scripts/build-rootfs.sh" --guest-init "$SPACE_GUEST_INIT" \
  --space-secret "$(dirname "$SPACE_GUEST_INIT")/space-secret")
KERNEL=
[ ! -e /dev/kvm ] || KERNEL=$("$SRC/scripts/build-kernel.sh")

bench_private_root bench-engines /tmp/space-bench-eng.XXXXXX
cleanup() {
  local rc=$?
  set +e
  bench_destroy be
  # The bare runsc peer's containers, if a row failed before deleting them, and their cgroups.
  for c in $(runsc --root="$WORK/runsc-state" list -q 2>/dev/null); do
    runsc --root="$WORK/runsc-state" kill "$c" KILL >/dev/null 2>&1
    runsc --root="$WORK/runsc-state" delete --force "$c" >/dev/null 2>&1
  done
  pkill -9 -f -- "--root=$WORK/runsc-state" 2>/dev/null  # one caught half-made is in no list
  sleep 0.2
  find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d -name bench-runsc 2>/dev/null |
    while read -r c; do find "$c" -depth -type d -exec rmdir {} + 2>/dev/null; done
  for m in "$WORK"/mnt/*; do mountpoint -q "$m" && umount "$m"; done
  if [ $KEEP = 1 ]; then bench_kept bench-engines; else bench_remove_work bench-engines || rc=1; fi
  exit $rc
}
trap cleanup EXIT
{
  echo "[defaults]"
  echo "rootfs = \"$ROOTFS\""
  [ -z "$KERNEL" ] || echo "kernel = \"$KERNEL\""
  echo "memory_mib = 256"
  echo "cpus = 1"
} >"$ROOT/config.toml"

# The Debian image with python3, cached as a tarball keyed by suite, packages and apt sources.
if [ $IMAGE = 1 ]; then
  cache=${SPACE_CACHE:-/var/cache/space}/bench-images
  key=$({ echo "bookworm python3"; cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } | sha256sum | cut -c1-16)
  tar=$cache/engines-$key.tar
  mkdir -p "$cache"
  if [ ! -f "$tar" ]; then
    echo "bench-engines: building the Debian image (once per key; minutes)" >&2
    "$SPACE_BIN" image build deb --debian bookworm --packages python3 >&2
    mnt=$WORK/mnt/export
    mkdir -p "$mnt"
    mount -o ro,noload,loop "$ROOT/store/images/deb/disk.ext4" "$mnt"
    tar --numeric-owner -C "$mnt" --exclude=./lost+found -cf "$tar.tmp" .
    umount "$mnt"
    mv "$tar.tmp" "$tar"
  else
    "$SPACE_BIN" image import deb "$tar" >/dev/null
  fi
fi

bench_machine_line
echo "runsc: $(runsc --version | head -1); bwrap: $(bwrap --version)"
SPACE_BIN=$SPACE_BIN WORK=$WORK ROOTFS=$ROOTFS RUNS=$RUNS LIVE=$LIVE IMAGE=$IMAGE \
  python3 "$SRC/scripts/bench_engines.py"
