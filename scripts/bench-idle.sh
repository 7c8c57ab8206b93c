#!/usr/bin/env bash
# Benchmarks of idle pause and idle checkpoint (core/idle.h), on the engine the integration
# tests use here (vm where /dev/kvm works, else gvisor; SPACE_TEST_ENGINE chooses):
#   - the time to the first command after an idle pause and after an idle checkpoint: `exec
#     true` against a sandbox asleep in each, next to the peer measured in the same run, `exec
#     true` against a running sandbox, interleaved; the difference of the medians is what a wake
#     adds to the command;
#   - density: host memory with BENCH_IDLE_COUNT sandboxes (default 200) running idle, against
#     the same sandboxes once every one has checkpointed itself: MemAvailable's drop from before
#     they were made, the PSS of their engine processes (VMMs, or gvisor monitors and runsc)
#     summed, and how busy the host's CPUs are over 10 s; plus what the checkpoints take on disk,
#     and how long the reaper took to put them all to sleep. (An idle gvisor sandbox costs about
#     2.4% of a core, runsc's own: a 2-core host saturates at about 80 of them, and its creates
#     slow down; use BENCH_IDLE_COUNT=50 there, or BENCH_IDLE_PAUSE.)
# Prints median and p90 of each timing. Uses the integration tests' set-up (a private root under
# /tmp, the cached rootfs, clean-up of everything on exit); no timing is asserted.
# Environment: SPACE_BIN (default build/space), BENCH_RUNS (default 20; the checkpoint rows use
# half, at least 5), BENCH_IDLE_COUNT (default 200; 0 skips the density part),
# BENCH_IDLE_AFTER (the density sandboxes' --idle-checkpoint, in seconds: "600s"; default: long
# enough that all of them are made before the first sleeps, 4 s per sandbox + 60 s; the bench
# says so if one slept too early), BENCH_IDLE_PAUSE (seconds, "30s": the density sandboxes also
# get --idle-pause, so each one is frozen soon after it is made and the host's CPUs stay free for
# the next creates; the "live" figures are then of all of them idle-paused, whose memory stays
# resident, instead of all running).
source "$(dirname "$0")/../tests/integration/lib.sh"

RUNS=${BENCH_RUNS:-20}
CK_RUNS=$(( RUNS / 2 > 5 ? RUNS / 2 : 5 ))
COUNT=${BENCH_IDLE_COUNT:-200}
AFTER=${BENCH_IDLE_AFTER:-$(( COUNT * 4 + 60 ))s}
PAUSE=${BENCH_IDLE_PAUSE:-}
case $PAUSE in '' | *[0-9]s) ;; *) echo "bench-idle: BENCH_IDLE_PAUSE takes seconds, e.g. 30s" >&2; exit 2 ;; esac
LIVE="running idle"
[ -z "$PAUSE" ] || LIVE="idle-paused"
case $AFTER in *[0-9]s) ;; *) echo "bench-idle: BENCH_IDLE_AFTER takes seconds, e.g. 300s" >&2; exit 2 ;; esac

source "$SRC/scripts/bench-lib.sh"
bench_machine_line
echo "engine: $ENGINE"
shared_template base

B=$TEST_ROOT/bench
mkdir -p "$B"
expect_status 0 space create --template base peer
expect_status 0 space create --template base --idle-pause 1s p
expect_status 0 space create --template base --idle-checkpoint 1s c

echo "bench: first command after an idle pause x$RUNS and after an idle checkpoint x$CK_RUNS," \
  "each next to exec true on a running sandbox" >&2
# One python3 process times each command (perf_counter_ns around the exec). Before each timed
# wake it waits, untimed, until the reaper has put the sandbox to sleep (its state.json says so).
python3 - "$SPACE_BIN" "$SPACE_ROOT" "$RUNS" "$CK_RUNS" "$B" <<'PY'
import json, subprocess, sys, time
space, root, runs, ck_runs, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

def asleep(i, status):
    with open(f"{root}/store/sandboxes/{i}/state.json") as f:
        s = json.load(f)
    return s["status"] == status and (s.get("idle") or {}).get("asleep")

def wait_asleep(i, status):
    deadline = time.monotonic() + 120
    while not asleep(i, status):
        if time.monotonic() > deadline:
            sys.exit(f"bench: {i} did not become {status} (idle) within 120 s")
        time.sleep(0.05)

def timed(*args):
    t0 = time.perf_counter_ns()
    r = subprocess.run([space, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    ms = (time.perf_counter_ns() - t0) / 1e6
    if r.returncode != 0:
        sys.exit(f"bench: space {' '.join(args)} failed: {r.stderr.strip()}")
    return ms

for name, sid, status, n in (("pause", "p", "paused", runs), ("checkpoint", "c", "checkpointed", ck_runs)):
    woke, peer = [], []
    for _ in range(n):
        wait_asleep(sid, status)
        woke.append(timed("exec", sid, "--", "true"))
        peer.append(timed("exec", "peer", "--", "true"))
    open(f"{out}/wake-{name}", "w").write("".join(f"{v}\n" for v in woke))
    open(f"{out}/peer-{name}", "w").write("".join(f"{v}\n" for v in peer))
PY

stats() { bench_stats "$1" ms "$2"; }  # NAME FILE
median() { bench_median "$1"; }
added() {  # NAME WOKE PEER
  awk -v name="$1" -v w="$(median "$2")" -v p="$(median "$3")" \
    'BEGIN { printf "%-52s %+9.2f ms  (%.2fx the running sandbox'"'"'s exec)\n", name, w - p, w / p }'
}

echo
echo "== the first command after sleeping (exec true, wall time of the CLI)"
stats "exec true, running sandbox (peer, pause rounds)" "$B/peer-pause"
stats "exec true, asleep in an idle pause" "$B/wake-pause"
added "  a wake from an idle pause adds" "$B/wake-pause" "$B/peer-pause"
stats "exec true, running sandbox (peer, checkpoint rounds)" "$B/peer-checkpoint"
stats "exec true, asleep in an idle checkpoint" "$B/wake-checkpoint"
added "  a restore from an idle checkpoint adds" "$B/wake-checkpoint" "$B/peer-checkpoint"
expect_status 0 space destroy peer p c

[ "$COUNT" -gt 0 ] || exit 0
avail_kib() { awk '/^MemAvailable:/ { print $2 }' /proc/meminfo; }
engine_pss_kib() {  # the engine processes of this root: VMMs, or gvisor monitors and runsc's
  local sum=0 p v
  for p in $(vmm_pids) $(runsc_pids); do
    v=$(awk '$1 == "Pss:" { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || true)
    sum=$((sum + ${v:-0}))
  done
  echo $sum
}
host_cpu_pct() {  # how busy the host's CPUs are over 10 s, in % of one core (all of them)
  local a b
  a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat)
  sleep 10
  b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat)
  echo "scale=1; ($b - $a) * 100 / $(getconf CLK_TCK) / 10" | bc
}
asleep_count() {  # [STATUS]: how many are asleep from idleness in STATUS (checkpointed)
  local n=0 d
  for d in "$SPACE_ROOT"/store/sandboxes/d-*/; do
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["status"] == sys.argv[2] and s["idle"]["asleep"] else 1)' "$d/state.json" "${1:-checkpointed}" 2>/dev/null && n=$((n + 1))
  done
  echo $n
}

echo
echo "== density: $COUNT sandboxes, --idle-checkpoint $AFTER${PAUSE:+ --idle-pause $PAUSE}"
sync; echo 3 >/proc/sys/vm/drop_caches
before=$(avail_kib)
t0=$SECONDS
for i in $(seq 1 "$COUNT"); do
  space create --template base --idle-checkpoint "$AFTER" ${PAUSE:+--idle-pause "$PAUSE"} "d-$i" >/dev/null ||
    fail "create d-$i failed after $((i - 1)) sandboxes"
done
made_s=$((SECONDS - t0))
sleep 5  # the last ones settle
if [ -n "$PAUSE" ]; then  # every one frozen before the live figures
  deadline=$((SECONDS + ${PAUSE%s} + COUNT + 60))
  until [ "$(asleep_count paused)" -ge "$COUNT" ]; do
    [ $SECONDS -lt $deadline ] || fail "only $(asleep_count paused) of $COUNT idle-paused themselves"
    sleep 2
  done
fi
running_avail=$(avail_kib)
running_pss=$(engine_pss_kib)
running_cpu=$(host_cpu_pct)
early=$(asleep_count)
[ "$early" = 0 ] || echo "bench: $early of $COUNT slept before the last was made: give BENCH_IDLE_AFTER more than $AFTER" >&2
echo "bench: $COUNT made in $made_s s; waiting for every one to checkpoint itself" >&2
deadline=$((SECONDS + ${AFTER%s} + COUNT * 5 + 60))
until [ "$(asleep_count)" -ge "$COUNT" ]; do
  [ $SECONDS -lt $deadline ] || fail "only $(asleep_count) of $COUNT checkpointed themselves"
  sleep 2
done
asleep_s=$((SECONDS - t0 - ${AFTER%s}))  # from when the first one was due
sleep 2
asleep_avail=$(avail_kib)
asleep_pss=$(engine_pss_kib)
asleep_cpu=$(host_cpu_pct)
disk_kib=$(du -sk "$SPACE_ROOT"/store/sandboxes/d-*/checkpoint | awk '{ s += $1 } END { print s }')
echo "$COUNT sandboxes made in                               $made_s s (engine $ENGINE)"
awk -v n="$COUNT" -v b="$before" -v r="$running_avail" -v a="$asleep_avail" -v rp="$running_pss" \
  -v ap="$asleep_pss" -v d="$disk_kib" -v s="$asleep_s" -v rc="$running_cpu" -v ac="$asleep_cpu" -v nc="$(nproc)" -v live="$LIVE" 'BEGIN {
  printf "host memory used, all %-12s (MemAvailable)      %8.1f MiB  (%.1f MiB each)\n", live, (b - r) / 1024, (b - r) / 1024 / n
  printf "host memory used, all checkpointed (MemAvailable)      %8.1f MiB  (%.1f MiB each)\n", (b - a) / 1024, (b - a) / 1024 / n
  printf "engine processes PSS, all %s / all checkpointed   %8.1f / %.1f MiB\n", live, rp / 1024, ap / 1024
  printf "host CPU busy, all %s / all checkpointed          %8.1f / %.1f %% of a core (%d cores)\n", live, rc, ac, nc
  printf "checkpoints on disk                                    %8.1f MiB  (%.1f MiB each)\n", d / 1024, d / 1024 / n
  printf "time for the reaper to checkpoint them all             %8d s (from the first one due)\n", s
}'
for i in $(seq 1 "$COUNT"); do space destroy --force "d-$i" >/dev/null 2>&1; done
