#!/usr/bin/env bash
# Benchmark of an agent's typical actions (issue 46 item 3): the same commands, in one run on one
# host, in a sandbox of the VM engine, in one of the gVisor engine and natively on the host, each
# in the same Debian image.
#
# The image (bookworm with python3, pytest, pip, git, gcc, nodejs, chromium; `space image build
# --debian`, minutes) is kept as a tarball in $SPACE_CACHE/bench-images/<key>.tar (outside the
# clone, keyed by suite, packages and the host's apt sources) and imported into a private root
# under /tmp. The rows, each run --runs times after its untimed preparation:
#   py_pass      python3 -c pass
#   py_imports   python3 -c "import ssl, sqlite3, json"
#   pytest50     python3 -m pytest on a 50-test project the script writes
#   git200       git init, add and commit of 200 files
#   pip_wheel    pip install --no-index of a wheel the script builds (no network)
#   node         node -e 0 (where the image has node)
#   cc_hello     cc hello.c && ./a.out
#   tar30        tar -x of a 30 MB archive (the image's /usr/lib/python3.11, archived once)
#   sha256_100m  sha256sum of a 100 MB file (guest user-space speed, plus the reads)
#   chromium     chromium --headless --dump-dom of a page served on 127.0.0.2, in the sandbox
#                through the egress broker (--net allow=127.0.0.2:PORT), natively direct
# Columns:
#   vm      a sandbox restored from a template booted without the image's programs ever run
#           (`create --image`): every file is read from its disk for the first time;
#   vm-warm a sandbox restored from a template built with --image and --run WARM (the image's
#           interpreters and tools already run once before the snapshot: page cache, dentries);
#   native  chroot into a read-only loop mount of the same image disk with a tmpfs overlay, in a
#           private mount namespace (same binaries, the host's kernel).
#   gvisor  a sandbox of the gvisor engine (`create --engine gvisor --image`, from a template
#           built with --engine gvisor), where runsc is installed (deps.sh's ensure_runsc).
# Each cell is the median wall time of the whole command (host side: `space exec` end to end;
# the guest's own part, guest-init's Exec-to-exit time, follows in brackets) and, per row, the
# ratio of vm and vm-warm to native and the commands' own CPU split (user/sys, from the shell's
# `times`, so the guest kernel's share shows) and, in the VM columns, the page faults per run
# (guest-init's cminflt before and after, less what reading it costs). Plain lines, no
# assertions on the figures; it exits non-zero only if something failed to run (a row that fails
# or times out is printed as such and the others go on).
#
# Usage: scripts/bench-workloads.sh [--root DIR] [--runs N] [--rows ROW,...] [--memory MIB] [--no-warm] [--no-native] [--no-gvisor] [--keep]
# Environment: SPACE_BIN (default build/space), SPACE_GUEST_INIT (default build/guest-init),
# SPACE_CACHE (default /var/cache/space), SPACE_BENCH_ROW_TIMEOUT (seconds per run, default 600).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
. "$SRC/scripts/bench-lib.sh"
SPACE_GUEST_INIT=${SPACE_GUEST_INIT:-$SRC/build/guest-init}
CACHE=${SPACE_CACHE:-/var/cache/space}
RUNS=3
ROWS=""
MEMORY_MIB=1024
WARM=1
NATIVE=1
GVISOR=1
KEEP=0
ROOT=""
SUITE=bookworm
PACKAGES=python3,python3-pytest,python3-pip,git,gcc,libc6-dev,nodejs,chromium,ca-certificates

usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=${2:?}; shift 2 ;;
    --runs) RUNS=${2:?}; shift 2 ;;
    --rows) ROWS=${2:?}; shift 2 ;;
    --memory) MEMORY_MIB=${2:?}; shift 2 ;;
    --no-warm) WARM=0; shift ;;
    --no-native) NATIVE=0; shift ;;
    --no-gvisor) GVISOR=0; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage ;;
    *) echo "bench-workloads: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -e /dev/kvm ] || { echo "bench-workloads: /dev/kvm is absent: the VM engine cannot run here" >&2; exit 1; }
[ -x "$SPACE_BIN" ] || { echo "bench-workloads: no space binary at $SPACE_BIN (build it, or set SPACE_BIN)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench-workloads: run as root (image builds, loop mounts, chroot)" >&2; exit 1; }

if [ $GVISOR = 1 ]; then
  . "$SRC/scripts/deps.sh"
  ensure_runsc || { echo "bench-workloads: no runsc: the gvisor column is not measured" >&2; GVISOR=0; }
fi
KERNEL=$("$SRC/scripts/build-kernel.sh")
ROOTFS=$("$SRC/scripts/build-rootfs.sh" --guest-init "$SPACE_GUEST_INIT" \
  --space-secret "$(dirname "$SPACE_GUEST_INIT")/space-secret")

bench_private_root bench-workloads /tmp/space-bench-wl.XXXXXX  # run dir, fixtures, the native root's mounts
export SPACE_BOOT_TIMEOUT=${SPACE_BOOT_TIMEOUT:-600}
cat >"$ROOT/config.toml" <<TOML
[defaults]
kernel = "$KERNEL"
rootfs = "$ROOTFS"
memory_mib = $MEMORY_MIB
cpus = 1
template = "default"
TOML

cleanup() {
  local rc=$?
  set +e
  [ -n "${SERVER_PID:-}" ] && kill "$SERVER_PID" 2>/dev/null
  bench_destroy wl
  if [ $KEEP = 0 ]; then
    bench_remove_work bench-workloads || rc=1
  else
    bench_kept bench-workloads
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_machine_line
echo "software: space $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '?'); guest kernel $KERNEL"
echo "settings: $RUNS runs per row, guest $MEMORY_MIB MiB 1 vCPU, root $ROOT"

# The image: from the cache, else built once (minutes) and cached as a tarball of its files.
key=$({ echo "$SUITE $PACKAGES"; cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
  /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } | sha256sum | cut -c1-16)
tarball=$CACHE/bench-images/$key.tar
mkdir -p "$CACHE/bench-images"
(
  flock 9
  if [ ! -f "$tarball" ]; then
    echo "bench-workloads: building the image ($SUITE: $PACKAGES; once per key, minutes)" >&2
    "$SPACE_BIN" image build wl-build --size 6G --debian "$SUITE" --packages "$PACKAGES" >/dev/null
    disk=$ROOT/store/images/wl-build/disk.ext4
    mkdir -p "$WORK/export"
    mount -o ro,noload,loop "$disk" "$WORK/export"
    rc=0
    tar --numeric-owner --xattrs --xattrs-include='*' --one-file-system --exclude=./lost+found \
      -C "$WORK/export" -cf "$tarball.tmp" . || rc=$?
    umount "$WORK/export"
    [ $rc = 0 ] || { rm -f "$tarball.tmp"; exit 1; }
    mv "$tarball.tmp" "$tarball"
    "$SPACE_BIN" image rm wl-build >/dev/null
  fi
) 9>"$CACHE/bench-images/.lock"
"$SPACE_BIN" image inspect wl >/dev/null 2>&1 ||
  "$SPACE_BIN" image import --size 6G wl "$tarball" >/dev/null

if ! "$SPACE_BIN" template inspect default >/dev/null 2>&1; then
  echo "bench-workloads: building template 'default' (one cold boot)" >&2
  "$SPACE_BIN" template build default >/dev/null
fi
WARM_CMD='python3 -c "import ssl, sqlite3, json, pytest, pip._internal.cli.main"; git --version; cc --version; sha256sum /dev/null; tar --version; command -v node >/dev/null && node -e 0; chromium --headless --no-sandbox --disable-gpu --dump-dom about:blank; true'
if [ $WARM = 1 ] && ! "$SPACE_BIN" template inspect wl-warm >/dev/null 2>&1; then
  echo "bench-workloads: building template 'wl-warm' (a cold boot with the image, then: $WARM_CMD)" >&2
  "$SPACE_BIN" template build wl-warm --image wl --run "$WARM_CMD" >/dev/null
fi

if [ $GVISOR = 1 ] && ! "$SPACE_BIN" template inspect wl-gvisor >/dev/null 2>&1; then
  "$SPACE_BIN" template build --engine gvisor wl-gvisor >/dev/null
fi

# A page for chromium, on 127.0.0.2 (never any other address).
mkdir -p "$WORK/www"
echo '<html><body><p id="m">space-bench-page</p></body></html>' >"$WORK/www/index.html"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.2 --directory "$WORK/www" "$PORT" >/dev/null 2>&1 &
SERVER_PID=$!

python3 "$SRC/scripts/bench_workloads.py" --space "$SPACE_BIN" --work "$WORK" --runs "$RUNS" \
  --rows "$ROWS" --warm "$WARM" --native "$NATIVE" --gvisor "$GVISOR" --port "$PORT" \
  --disk "$ROOT/store/images/wl/disk.ext4"
