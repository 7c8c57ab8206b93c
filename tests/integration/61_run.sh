# Scenario: `space run` creates, runs and destroys, leaving nothing behind: after a command that
# succeeds, after one that fails (its exit code passes through), and after SIGINT (forwarded,
# then the sandbox is destroyed); --keep keeps the sandbox and names it on stderr. Four
# sandboxes, two at a time, restored from the shared test template (lib.sh).
source "$(dirname "$0")/lib.sh"
shared_template default  # sandboxes restore from it: no boot each

sandboxes() { ls "$SPACE_ROOT/store/sandboxes" 2>/dev/null || true; }

# Success and failure, side by side.
space run -- sh -c 'echo ran-ok' >"$TEST_ROOT/ok.out" 2>"$TEST_ROOT/ok.err" &
okpid=$!
space run -- sh -c 'echo failing >&2; exit 3' >"$TEST_ROOT/bad.out" 2>"$TEST_ROOT/bad.err" &
badpid=$!
rc=0
wait $okpid || rc=$?
[ "$rc" -eq 0 ] || fail "run (success) exited $rc: $(cat "$TEST_ROOT/ok.err")"
[ "$(cat "$TEST_ROOT/ok.out")" = ran-ok ] || fail "run output: $(cat "$TEST_ROOT/ok.out")"
rc=0
wait $badpid || rc=$?
[ "$rc" -eq 3 ] || fail "run (failure) exited $rc, expected 3: $(cat "$TEST_ROOT/bad.err")"
assert_contains "$(cat "$TEST_ROOT/bad.err")" "failing" "run stderr"
[ -z "$(sandboxes)" ] || fail "sandboxes left after run: $(sandboxes)"
[ -z "$(vmm_pids)" ] || fail "VMMs left after run: $(vmm_pids)"
[ -z "$(ls "$SPACE_RUN_DIR" 2>/dev/null)" ] || fail "run directories left: $(ls "$SPACE_RUN_DIR")"

# SIGINT while the command runs, and --keep, side by side ($! must be space itself, hence no
# `space` function here).
"$SPACE_BIN" run --name intr -- sh -c 'trap "echo got-int; exit 5" INT; echo ready; while :; do sleep 1; done' \
  >"$TEST_ROOT/int.out" 2>"$TEST_ROOT/int.err" &
intpid=$!
space run --keep --name kept -- true >/dev/null 2>"$TEST_ROOT/keep.err" &
keeppid=$!
wait_until "$SPACE_TEST_TIMEOUT" grep -q ready "$TEST_ROOT/int.out"
kill -INT $intpid
rc=0
wait $intpid || rc=$?
[ "$rc" -eq 5 ] || fail "run after SIGINT exited $rc, expected 5: $(cat "$TEST_ROOT/int.err")"
grep -q got-int "$TEST_ROOT/int.out" || fail "SIGINT was not forwarded: $(cat "$TEST_ROOT/int.out")"
rc=0
wait $keeppid || rc=$?
[ "$rc" -eq 0 ] || fail "run --keep exited $rc: $(cat "$TEST_ROOT/keep.err")"
assert_contains "$(cat "$TEST_ROOT/keep.err")" "kept sandbox kept" "run --keep message"
[ "$(sandboxes)" = kept ] || fail "after SIGINT and --keep, sandboxes are: $(sandboxes)"
[ "$(status_of kept)" = running ] || fail "kept sandbox is not running"
kpid=$(pid_of kept)
expect_status 0 space destroy kept
assert_gone kept "$kpid"
assert_gone intr 0
[ -z "$(vmm_pids)" ] || fail "VMMs left: $(vmm_pids)"
echo "PASS"
