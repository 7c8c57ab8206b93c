#!/usr/bin/env bash
# Benchmarks of long-running sessions, as the CLI user sees them (wall time of each `space`
# command): pause and resume latency; checkpoint and restore (resume) time after the guest wrote
# 64 MiB to memory; branch latency for each N in $BENCH_BRANCH_COUNTS; host memory added per
# branch (RSS and PSS of the branch's VMM: PSS splits pages shared with other processes).
# Prints median and p90 of each. Uses the integration tests' set-up (a private root under /tmp,
# the cached kernel and rootfs, cleanup of everything on exit) and one template build.
# Environment: SPACE_BIN, SPACE_GUEST_INIT (default build/), BENCH_RUNS (default 20; the
# checkpoint and branch rows use a quarter of it, at least 3), BENCH_BRANCH_COUNTS (default
# "1 10"; N=10 runs 11 VMs at once), BENCH_WRITE_MIB (default 64; non-zero data, since the
# memory file skips zero pages; on a PVM host the guest kernel is interpreted and writes about
# 0.25 MiB/s, so 64 MiB takes minutes there).
source "$(dirname "$0")/../tests/integration/lib.sh"

RUNS=${BENCH_RUNS:-20}
SLOW_RUNS=$(( RUNS / 4 > 3 ? RUNS / 4 : 3 ))
COUNTS=${BENCH_BRANCH_COUNTS:-"1 10"}
WRITE_MIB=${BENCH_WRITE_MIB:-64}

# timed FILE CMD...: runs CMD (quietly, failing the bench if it fails) and appends its ms to FILE.
timed() {
  local file=$1 t0 t1
  shift
  t0=$(date +%s%N)
  "$@" >/dev/null 2>"$TEST_ROOT/bench.err" || fail "'$*' failed: $(cat "$TEST_ROOT/bench.err")"
  t1=$(date +%s%N)
  echo "scale=3; ($t1 - $t0) / 1000000" | bc >>"$file"
}
# stats NAME UNIT FILE: prints "NAME  median X  p90 Y UNIT  (n=K)".
stats() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
name, unit, path = sys.argv[1:]
v = sorted(float(x) for x in open(path) if x.strip())
if not v:
    print(f"{name:<34} no samples"); sys.exit()
med = v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
p90 = v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))]
print(f"{name:<34} median {med:9.1f}  p90 {p90:9.1f} {unit}  (n={len(v)})")
PY
}
mem_kib() {  # mem_kib PID FIELD(Rss|Pss)
  awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/smaps_rollup"
}

B=$TEST_ROOT/bench
mkdir -p "$B"
echo "bench: building the template (one boot)" >&2
space template build base >/dev/null
space create --template base s >/dev/null

echo "bench: pause/resume x$RUNS" >&2
for _ in $(seq "$RUNS"); do
  timed "$B/pause" space pause s
  timed "$B/resume" space resume s
done

echo "bench: checkpoint/restore with $WRITE_MIB MiB written x$SLOW_RUNS" >&2
space exec s -- sh -c "yes 0123456789abcdef | head -c $((WRITE_MIB << 20)) >/tmp/blob" \
  || fail "could not write $WRITE_MIB MiB in the guest"
for _ in $(seq "$SLOW_RUNS"); do
  timed "$B/checkpoint" space checkpoint s
  timed "$B/restore" space resume s
  space exec s -- true || fail "no exec after restore"
done
echo "bench: checkpoint memory file: $(du -h "$SPACE_ROOT/store/sandboxes/s/checkpoint/memory" | cut -f1) on disk" >&2

for n in $COUNTS; do
  echo "bench: branch --count $n x$SLOW_RUNS" >&2
  for r in $(seq "$SLOW_RUNS"); do
    timed "$B/branch$n" space branch s --count "$n" --name "br$r"
    if [ "$n" = 1 ]; then
      pid=$(pid_of "br$r")
      space exec "br$r" -- true || fail "branch does not answer exec"
      mem_kib "$pid" Rss | awk '{ print $1 / 1024 }' >>"$B/rss"
      mem_kib "$pid" Pss | awk '{ print $1 / 1024 }' >>"$B/pss"
      space destroy "br$r" >/dev/null
    else
      # shellcheck disable=SC2046
      space destroy $(for i in $(seq "$n"); do echo "br$r-$i"; done) >/dev/null
    fi
  done
done

echo
echo "space session benchmarks ($(nproc) CPUs, guest 256 MiB, wall time of the CLI command)"
stats "pause" ms "$B/pause"
stats "resume (paused VMM)" ms "$B/resume"
stats "checkpoint ($WRITE_MIB MiB written)" ms "$B/checkpoint"
stats "restore (resume from checkpoint)" ms "$B/restore"
for n in $COUNTS; do stats "branch --count $n" ms "$B/branch$n"; done
stats "RSS added per branch" MiB "$B/rss"
stats "PSS added per branch" MiB "$B/pss"
