#!/usr/bin/env bash
# Runs the libFuzzer harnesses (tests/fuzz, built into BUILD/fuzz by cmake when clang++ is found)
# for longer than ctest does, one after the other, and prints a table: executions, executions
# per second, coverage (edges reached), corpus size and crashes. Each harness keeps a corpus of
# its own under $SPACE_CACHE/fuzz/<name> (default /var/cache/space/fuzz), so that the next run
# starts where this one stopped; the seeds in tests/fuzz/corpus/<name> are read too. A crash
# stops that harness; the input is saved as $SPACE_CACHE/fuzz/<name>-crash-* and named in the
# table, and the script exits 1 at the end. No harness named: all of them.
#
# Usage: scripts/fuzz.sh [--minutes N] [--build DIR] [HARNESS...]
# Harnesses: devices files frames lines passwd proxy tree
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$SRC/build
MINUTES=10
CACHE=${SPACE_CACHE:-/var/cache/space}/fuzz
ALL=(devices files frames lines passwd proxy tree)
NAMES=()

usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) MINUTES=${2:?}; shift 2 ;;
    --build) BUILD=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) NAMES+=("$1"); shift ;;
  esac
done
[ ${#NAMES[@]} -gt 0 ] || NAMES=("${ALL[@]}")
case $MINUTES in ''|*[!0-9]*|0) echo "fuzz.sh: --minutes takes a whole number above 0" >&2; exit 2 ;; esac

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

failed=0
rows=()
for n in "${NAMES[@]}"; do
  corpus=$CACHE/$n
  mkdir -p "$corpus"
  seeds=()
  [ -d "$SRC/tests/fuzz/corpus/$n" ] && seeds=("$SRC/tests/fuzz/corpus/$n")
  log=$CACHE/$n.log
  echo "fuzz.sh: $n for $MINUTES min (log $log)" >&2
  rc=0
  (cd "$CACHE" && "$BUILD/fuzz/fuzz_$n" -max_total_time=$((MINUTES * 60)) -max_len="$(max_len "$n")" \
    -print_final_stats=1 -artifact_prefix="$CACHE/$n-" "$corpus" "${seeds[@]}") >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  cov=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | cut -d' ' -f2)
  size=$(find "$corpus" -type f | wc -l)
  crash=$( (grep -o "Test unit written to [^ ]*" "$log" || true) | tail -1 | sed 's/Test unit written to //')
  if [ $rc -ne 0 ]; then
    failed=1
    crash=${crash:-"exit $rc, see $log"}
  fi
  rows+=("$(printf '%-8s %12s %10s %8s %8s  %s' "$n" "${runs:-?}" "${rate:-?}" "${cov:-?}" "$size" "${crash:-none}")")
done

printf '%-8s %12s %10s %8s %8s  %s\n' harness executions "exec/s" coverage corpus crash
printf '%s\n' "${rows[@]}"
exit $failed
