#!/usr/bin/env bash
# Benchmarks of long-running sessions: the CLI's start-up (--version, state, list) next to
# /bin/true in the same loop; pause and resume latency (the CLI command's wall time, with the
# guest idle and back to back, and the VMM's own time to park or release the vCPUs); checkpoint
# and restore (resume) time of sandboxes whose guest wrote $BENCH_WRITE_MIB MiB of non-zero data to memory since the
# template (the writer's memory is branched, so each checkpointed sandbox has the whole write
# as its own; the checkpoint writes only pages that differ from the memory file the guest maps);
# branch latency for each N in $BENCH_BRANCH_COUNTS (CLI wall time, its phases as the CLI logs
# them, and inside the source VMM: capture, fork and children ready); host memory added per branch (the PSS of all VMMs of the
# run before and after `branch --count N`, divided by N; PSS splits shared pages, so the sum is
# the real total; plus one branch VMM's RSS and PSS). The peer, measured in the same run: the
# persisted path a branch replaces (checkpoint the source to disk, restore from it).
# Prints median and p90 of each. Uses the integration tests' set-up (a private root under /tmp,
# the cached kernel and rootfs, cleanup of everything on exit) and one template build.
# Environment: SPACE_BIN, SPACE_GUEST_INIT (default build/), BENCH_RUNS (default 20; the
# checkpoint and branch rows use a quarter of it, at least 3), BENCH_BRANCH_COUNTS (default
# "1 10"; N=10 runs 11 VMs at once), BENCH_WRITE_MIB (default 64; on a PVM host the guest
# kernel is interpreted and the guest writes about 1 MiB/s, so 64 MiB takes about a minute).
source "$(dirname "$0")/../tests/integration/lib.sh"

RUNS=${BENCH_RUNS:-20}
SLOW_RUNS=$(( RUNS / 4 > 3 ? RUNS / 4 : 3 ))
COUNTS=${BENCH_BRANCH_COUNTS:-"1 10"}
WRITE_MIB=${BENCH_WRITE_MIB:-64}

# timed FILE CMD...: runs CMD (failing the bench if it fails), appends its ms to FILE; its stdout
# is left in $TEST_ROOT/bench.out.
timed() {
  local file=$1 t0 t1
  shift
  t0=${EPOCHREALTIME/./}  # microseconds, read without a fork (a $(date) would be timed too)
  "$@" >"$TEST_ROOT/bench.out" 2>"$TEST_ROOT/bench.err" || fail "'$*' failed: $(cat "$TEST_ROOT/bench.err")"
  t1=${EPOCHREALTIME/./}
  echo "scale=3; ($t1 - $t0) / 1000" | bc >>"$file"
}
# field KEY: the JSON field KEY of $TEST_ROOT/bench.out.
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$TEST_ROOT/bench.out" "$1"; }
source "$SRC/scripts/bench-lib.sh"
stats() { bench_stats "$@"; }
median() { bench_median "$1"; }
mem_kib() {  # mem_kib PID FIELD(Rss|Pss)
  awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/smaps_rollup"
}
total_pss_kib() {  # PSS of every VMM of this run, summed
  local sum=0 p
  for p in $(vmm_pids); do sum=$((sum + $(mem_kib "$p" Pss))); done
  echo "$sum"
}

B=$TEST_ROOT/bench
mkdir -p "$B"
echo "bench: building the template (one boot)" >&2
space template build base >/dev/null
space --log-level info create --template base s >/dev/null

echo "bench: pause/resume x$RUNS, the guest idle, then x$RUNS back to back" >&2
# One python3 process times each command (perf_counter_ns around the exec). Idle: before each
# pause, an untimed `exec true` waits until guest-init has answered (a resume's Hello keeps the
# interpreted guest kernel busy for a while afterwards, and a busy vCPU competes for the two
# cores with the command and the VMM's control thread). Back to back: each pause follows the
# previous resume at once, while the guest still works on its Hello.
python3 - "$SPACE_BIN" "$RUNS" "$B" <<'PY'
import json, subprocess, sys, time
space, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def timed(*args):
    t0 = time.perf_counter_ns()
    r = subprocess.run([space, *args, "--format", "json"], capture_output=True, text=True)
    ms = (time.perf_counter_ns() - t0) / 1e6
    if r.returncode != 0:
        sys.exit(f"bench: space {' '.join(args)} failed: {r.stderr.strip()}")
    return ms, json.loads(r.stdout)
rows = {k: [] for k in ("pause", "pause_vmm", "resume", "resume_vmm", "pause_busy", "resume_busy")}
for quiet in (True, False):
    for _ in range(n):
        if quiet:
            subprocess.run([space, "exec", "s", "--", "true"], check=True)
        ms, j = timed("pause", "s")
        rows["pause" if quiet else "pause_busy"].append(ms)
        if quiet: rows["pause_vmm"].append(j["pause_us"] / 1000)
        ms, j = timed("resume", "s")
        rows["resume" if quiet else "resume_busy"].append(ms)
        if quiet: rows["resume_vmm"].append(j["resume_us"] / 1000)
for k, v in rows.items():
    with open(f"{out}/{k}", "w") as f:
        f.write("".join(f"{x:.3f}\n" for x in v))
PY

echo "bench: CLI start-up x$((RUNS * 10)), each command interleaved with /bin/true" >&2
# One python3 process times every run (perf_counter_ns around the exec), so nothing else forks
# inside a sample. The peer is /bin/true, started the same way in the same loop.
python3 - "$SPACE_BIN" $((RUNS * 10)) >"$B/startup" <<'PY'
import subprocess, sys, time
space, n = sys.argv[1], int(sys.argv[2])
cmds = {"/bin/true": ["/bin/true"], "space --version": [space, "--version"],
        "space state s": [space, "state", "s"], "space list": [space, "list"]}
t = {k: [] for k in cmds}
for _ in range(n):
    for k, argv in cmds.items():
        t0 = time.perf_counter_ns()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        t[k].append((time.perf_counter_ns() - t0) / 1e6)
def med(v):
    v = sorted(v); return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
base = med(t["/bin/true"])
for k, v in t.items():
    v = sorted(v)
    p90 = v[min(len(v) - 1, int(round(0.9 * (len(v) - 1))))]
    print(f"{k:<44} median {med(v):9.2f}  p90 {p90:9.2f} ms  (n={len(v)})  {med(v) / base:4.1f}x /bin/true")
PY

echo "bench: the guest writes $WRITE_MIB MiB (non-zero) to its memory (tmpfs)" >&2
t0=$(date +%s%N)
space exec s -- sh -c "yes 0123456789abcdef | head -c 1048576 >/tmp/mib; set --; \
  for i in \$(seq $WRITE_MIB); do set -- \"\$@\" /tmp/mib; done; cat \"\$@\" >/tmp/blob; rm /tmp/mib" \
  || fail "could not write $WRITE_MIB MiB in the guest"
write_s=$(echo "scale=1; ($(date +%s%N) - $t0) / 1000000000" | bc)

echo "bench: branch, then checkpoint/restore x$SLOW_RUNS (each has the $WRITE_MIB MiB as its own)" >&2
space branch s --count "$SLOW_RUNS" --name ck >/dev/null
for r in $(seq "$SLOW_RUNS"); do
  timed "$B/checkpoint" space checkpoint "ck-$r" --format json
  echo "scale=3; $(field memory_data_bytes) / 1048576" | bc >>"$B/ck_mib"
  python3 -c 'import json,sys; m = json.load(open(sys.argv[1]))["ms"]
print(m["disk"], m["total"] - m["snapshot"] - m["disk"])' "$TEST_ROOT/bench.out" >>"$B/ck_cli"
  grep "snapshot to .*checkpoint.tmp" "$SPACE_ROOT/store/sandboxes/ck-$r/vmm.log" | tail -1 |
    sed -E 's/.* memory ([0-9.]+) ms, disk_sync ([0-9.]+) ms.*/\1 \2/' >>"$B/ck_vmm"
  timed "$B/restore" space resume "ck-$r"
  space exec "ck-$r" -- test -s /tmp/blob || fail "the written data is gone after restore"
done
ck_disk=$(du -h "$SPACE_ROOT/store/sandboxes/ck-1/checkpoint/memory" | cut -f1)
# shellcheck disable=SC2046
space destroy $(for r in $(seq "$SLOW_RUNS"); do echo "ck-$r"; done) >/dev/null

for n in $COUNTS; do
  echo "bench: branch --count $n x$SLOW_RUNS" >&2
  for r in $(seq "$SLOW_RUNS"); do
    before=$(total_pss_kib)
    timed "$B/branch$n" space --log-level info branch s --count "$n" --name "br$r"
    grep "branched into $n:" "$SPACE_ROOT/store/sandboxes/s/vmm.log" | tail -1 |
      sed -E 's/.*capture ([0-9.]+) ms, fork ([0-9.]+) ms, ready ([0-9.]+) ms.*/\1 \2 \3/' >>"$B/vmm_branch$n"
    grep "branch s into $n:" "$TEST_ROOT/bench.err" | tail -1 |
      sed -E 's/.*pause ([0-9.]+) ms, clones and records ([0-9.]+) ms, fork ([0-9.]+) ms, records and resume ([0-9.]+) ms.*/\1 \2 \3 \4/' >>"$B/cli_branch$n"
    ids=$(if [ "$n" = 1 ]; then echo "br$r"; else for i in $(seq "$n"); do echo "br$r-$i"; done; fi)
    for id in $ids; do space exec "$id" -- true || fail "branch $id does not answer exec"; done
    after=$(total_pss_kib)
    echo "scale=2; ($after - $before) / 1024 / $n" | bc >>"$B/pss_added"
    if [ "$n" = 1 ]; then
      pid=$(pid_of "br$r")
      echo "scale=2; $(mem_kib "$pid" Rss) / 1024" | bc >>"$B/rss"
      echo "scale=2; $(mem_kib "$pid" Pss) / 1024" | bc >>"$B/pss"
    fi
    # shellcheck disable=SC2086
    space destroy $ids >/dev/null
  done
done

echo
echo "space session benchmarks ($(nproc) CPUs, guest 256 MiB; load average $(cut -d' ' -f1-3 /proc/loadavg))"
cat "$B/startup"
stats "pause (CLI, guest idle)" ms "$B/pause"
stats "pause (VMM: park the vCPUs)" ms "$B/pause_vmm"
stats "resume (CLI, paused VMM)" ms "$B/resume"
stats "resume (VMM: release the vCPUs)" ms "$B/resume_vmm"
stats "pause right after a resume (guest busy)" ms "$B/pause_busy"
stats "resume of that pause" ms "$B/resume_busy"
echo "guest write of $WRITE_MIB MiB: $write_s s"
stats "checkpoint ($WRITE_MIB MiB written)" ms "$B/checkpoint"
stats "  memory written by the checkpoint" MiB "$B/ck_mib"
echo "  checkpoint memory file on disk: $ck_disk (a reflink of the template's plus the diff)"
cut -d' ' -f1 "$B/ck_vmm" >"$B/ck_memory"; cut -d' ' -f2 "$B/ck_vmm" >"$B/ck_disk_sync"
cut -d' ' -f1 "$B/ck_cli" >"$B/ck_disk"; cut -d' ' -f2 "$B/ck_cli" >"$B/ck_stop"
stats "  in the VMM: write memory (diff, fsync)" ms "$B/ck_memory"
stats "  in the VMM: flush the disk" ms "$B/ck_disk_sync"
stats "  in the CLI: reflink the disk, fsync" ms "$B/ck_disk"
stats "  in the CLI: stop the VMM, record" ms "$B/ck_stop"
stats "restore (resume from checkpoint)" ms "$B/restore"
for n in $COUNTS; do
  stats "branch --count $n (CLI)" ms "$B/branch$n"
  for col in 1 2 3; do
    name=$(echo "capture fork ready" | cut -d' ' -f$col)
    cut -d' ' -f$col "$B/vmm_branch$n" >"$B/vmm_branch$n.$name"
    stats "  in the source VMM: $name" ms "$B/vmm_branch$n.$name"
  done
  for col in 1 2 3 4; do
    name=$(echo "pause clones+records branch-op records+resume" | cut -d' ' -f$col)
    cut -d' ' -f$col "$B/cli_branch$n" >"$B/cli_branch$n.$name"
    stats "  in the CLI: $name" ms "$B/cli_branch$n.$name"
  done
done
stats "host PSS added per branch (all VMMs)" MiB "$B/pss_added"
stats "RSS of one branch VMM" MiB "$B/rss"
stats "PSS of one branch VMM" MiB "$B/pss"
peer=$(python3 -c 'import sys; print(sum(float(sys.argv[1+i]) for i in range(2)))' "$(median "$B/checkpoint")" "$(median "$B/restore")")
b1=$(median "$B/branch1" 2>/dev/null || echo 0)
echo "peer (persisted path: checkpoint + restore, medians): $peer ms; branch --count 1 is $(echo "scale=1; $peer / $b1" | bc)x faster"
