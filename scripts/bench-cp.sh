#!/usr/bin/env bash
# Benchmark of space cp (issue 13): copies into and out of one sandbox of a 64 MiB random file
# and of a tree of 2,000 small files (see --mib, --files), side by side with the same data through the hand-made
# path, `tar -c | space exec -i ID tar -x` in and `space exec ID tar -c | tar -x` out, in the same
# run. Prints per case the median and p90 wall time, MB/s (or files/s) and the ratio of the
# exec-tar time to the cp time (above 1: cp is faster). The guest side lives in /tmp (tmpfs), so
# the base rootfs's small disk is no limit; the sandbox is cleaned between runs, outside the
# timing. Without ID it creates a sandbox in the root and destroys it afterwards. Plain lines,
# no assertions.
#
# --mib and --files change the sizes (64 and 2000): on a PVM host, whose interpreted guest kernel
# moves tens to hundreds of KB/s through vsock, 64 MiB takes many minutes per copy.
#
# Usage: scripts/bench-cp.sh [--root DIR] [--count N] [--mib N] [--files N] [ID]
# Environment: SPACE_BIN (default build/space), SPACE_ROOT (the root when --root is not given).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
COUNT=3
MIB=64
FILES=2000
ROOT=${SPACE_ROOT:-/var/lib/space}
ID=""

usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=${2:?}; shift 2 ;;
    --count) COUNT=${2:?}; shift 2 ;;
    --mib) MIB=${2:?}; shift 2 ;;
    --files) FILES=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) ID=$1; shift ;;
  esac
done
[ -x "$SPACE_BIN" ] || { echo "bench-cp: no space binary at $SPACE_BIN (build it, or set SPACE_BIN)" >&2; exit 1; }

work=$(mktemp -d /tmp/bench-cp.XXXXXX)
created=""
cleanup() {
  if [ -n "$created" ]; then "$SPACE_BIN" --root "$ROOT" destroy --force "$created" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
if [ -z "$ID" ]; then
  ID=bench-cp-$$
  echo "bench-cp: creating sandbox $ID in $ROOT" >&2
  "$SPACE_BIN" --root "$ROOT" create "$ID" >/dev/null
  created=$ID
fi

echo "bench-cp: $(uname -r), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg); sandbox $ID, $COUNT runs each, $MIB MiB, $FILES files"
python3 - "$SPACE_BIN" "$ROOT" "$ID" "$COUNT" "$work" "$MIB" "$FILES" <<'PY'
import os, shutil, statistics, subprocess, sys, time

space, root, sid, count, work = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
mib, nfiles = int(sys.argv[6]), int(sys.argv[7])
big = os.path.join(work, "big")
small = os.path.join(work, "small")
os.makedirs(big)
with open(os.path.join(big, "data.bin"), "wb") as f:
    f.write(os.urandom(mib << 20))
for i in range(nfiles):
    d = os.path.join(small, "d%02d" % (i % 40))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%04d" % i), "w") as f:
        f.write("file %d\n" % i * (i % 7 + 1))

def sp(*args, **kw):
    return [space, "--root", root] + list(args)

def sh(cmd):
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL)

def guest_clean():
    subprocess.run(sp("exec", sid, "--", "rm", "-rf", "/tmp/b"), check=True)
    subprocess.run(sp("exec", sid, "--", "mkdir", "-p", "/tmp/b"), check=True)

def timed(cmd):
    t0 = time.perf_counter()
    sh(cmd)
    return time.perf_counter() - t0

def q(x):
    import shlex
    return shlex.quote(x)

S = " ".join(q(x) for x in sp())
out = os.path.join(work, "out")
results = []
for name, src, amount, unit in (("%d MiB file" % mib, big, mib * 1.048576, "MB/s"),
                                ("%d small files" % nfiles, small, float(nfiles), "files/s")):
    times = {k: [] for k in ("cp in", "tar in", "cp out", "tar out")}
    for _ in range(count):
        guest_clean()
        times["cp in"].append(timed("%s cp %s/. %s:/tmp/b" % (S, q(src), sid)))
        guest_clean()
        times["tar in"].append(timed("tar -C %s -cf - . | %s exec -i %s -- tar -x -C /tmp/b" % (q(src), S, sid)))
        shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
        times["cp out"].append(timed("%s cp %s:/tmp/b/. %s" % (S, sid, q(out))))
        shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
        times["tar out"].append(timed("%s exec %s -- tar -c -C /tmp/b . | tar -x -C %s" % (S, sid, q(out))))
    def p90(v):
        v = sorted(v); return v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))]
    for way in ("in", "out"):
        cp, tar = times["cp " + way], times["tar " + way]
        mc, mt = statistics.median(cp), statistics.median(tar)
        print("%-17s %-3s  cp: median %7.2f s p90 %7.2f s %8.3g %s | exec tar: median %7.2f s p90 %7.2f s %8.3g %s | tar/cp %.2f"
              % (name, way, mc, p90(cp), amount / mc, unit, mt, p90(tar), amount / mt, unit, mt / mc))
guest_clean()
PY
