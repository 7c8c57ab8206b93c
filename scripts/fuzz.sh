#!/usr/bin/env bash
# Runs the libFuzzer harnesses (tests/fuzz, built into BUILD/fuzz by cmake when clang++ is found)
# for longer than ctest does, one after the other, and prints a table: executions, executions
# per second, coverage (edges reached), corpus size and crashes. Each harness keeps a corpus of
# its own under $SPACE_CACHE/fuzz/<name> (default /var/cache/space/fuzz), so that the next run
# starts where this one stopped; the seeds in tests/fuzz/corpus/<name> are read too. A crash
# stops that harness; the input is saved as $SPACE_CACHE/fuzz/<name>-crash-* and named in the
# table, and the script exits 1 at the end. No harness named: all of them. --jobs N runs N
# harnesses at once (each still for N minutes of wall time; the table gives the CPU time each
# had), and --nice runs them at nice 19, so that they take only the CPU nothing else wants.
#
# Usage: scripts/fuzz.sh [--minutes N] [--jobs N] [--nice] [--build DIR] [HARNESS...]
# Harnesses: archive devices files frames http_rewrite lines mcp oci_spec open_resolved passwd proxy tree
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build
MINUTES=10
JOBS=1
NICE=()
CACHE=${SPACE_CACHE:-/var/cache/space}/fuzz
ALL=(archive devices files frames http_rewrite lines mcp oci_spec open_resolved passwd proxy tree)
NAMES=()

usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) MINUTES=${2:?}; shift 2 ;;
    --build) BUILD=${2:?}; shift 2 ;;
    --jobs) JOBS=${2:?}; shift 2 ;;
    --nice) NICE=(nice -n 19); shift ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
[ ${#NAMES[@]} -gt 0 ] || NAMES=("${ALL[@]}")
case $MINUTES in ''|*[!0-9]*|0) echo "fuzz.sh: --minutes takes a whole number above 0" >&2; exit 2 ;; esac
case $JOBS in ''|*[!0-9]*|0) echo "fuzz.sh: --jobs takes a whole number above 0" >&2; exit 2 ;; esac

targets=()
for n in "${NAMES[@]}"; do
  case " ${ALL[*]} " in *" $n "*) ;; *) echo "fuzz.sh: no harness '$n' (${ALL[*]})" >&2; exit 2 ;; esac
  targets+=("fuzz_$n")
done
[ -f "$BUILD/build.ninja" ] || cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$BUILD" "${targets[@]}" >/dev/null || {
  echo "fuzz.sh: building ${targets[*]} failed (is clang installed? apt-get install clang)" >&2
  exit 1
}
mkdir -p "$CACHE"

max_len() {  # the same limits ctest uses
  case $1 in
    files) echo 16384 ;; frames|proxy) echo 8192 ;; passwd) echo 2048 ;; *) echo 4096 ;;
  esac
}

ROWS=$(mktemp -d)
trap 'rm -rf "$ROWS"' EXIT

# Runs harness $1 and writes its row of the table to $ROWS/$1 (and $ROWS/$1.failed on a crash).
run_one() {
  local n=$1 corpus=$CACHE/$1 log=$CACHE/$1.log seeds=() rc=0
  mkdir -p "$corpus"
  [ -d "$SRC/tests/fuzz/corpus/$n" ] && seeds=("$SRC/tests/fuzz/corpus/$n")
  echo "fuzz.sh: $n for $MINUTES min (log $log)" >&2
  local t0 cpu
  t0=$(date +%s)
  # bash's time builtin gives the CPU seconds the harness had (user + system).
  local TIMEFORMAT='%U %S'
  # (The inner braces keep the harness's redirection off time's own report.)
  { time { (cd "$CACHE" && exec "${NICE[@]}" "$BUILD/fuzz/fuzz_$n" -max_total_time=$((MINUTES * 60)) \
    -max_len="$(max_len "$n")" -print_final_stats=1 -artifact_prefix="$CACHE/$n-" \
    "$corpus" "${seeds[@]}") >"$log" 2>&1 || rc=$?; }; } 2>"$ROWS/$n.cpu"
  cpu=$(awk '{ printf "%dm", ($1 + $2) / 60 }' "$ROWS/$n.cpu")
  local runs rate cov size crash
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)
  size=$(find "$corpus" -type f | wc -l)
  crash=$( (grep -o "Test unit written to [^ ]*" "$log" || true) | tail -1 | sed 's/Test unit written to //')
  if [ $rc -ne 0 ]; then
    touch "$ROWS/$n.failed"
    crash=${crash:-"exit $rc, see $log"}
  fi
  printf '%-8s %6s %6s %12s %10s %8s %8s  %s\n' "$n" "$((($(date +%s) - t0) / 60))m" "$cpu" "${runs:-?}" \
    "${rate:-?}" "${cov:-?}" "$size" "${crash:-none}" >"$ROWS/$n"
}

running=0
for n in "${NAMES[@]}"; do
  if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
  run_one "$n" &
  running=$((running + 1))
done
wait

printf '%-8s %6s %6s %12s %10s %8s %8s  %s\n' harness wall cpu executions "exec/s" coverage corpus crash
failed=0
for n in "${NAMES[@]}"; do
  cat "$ROWS/$n"
  [ ! -e "$ROWS/$n.failed" ] || failed=1
done
exit $failed
