# Scenario: a VMM ends when its guest powers off (guest-init resets the VM through the i8042)
# and the state says stopped (observed: a jailed VMM writes no file of its sandbox's, so readers
# see that the process it names is gone); a VMM killed with SIGKILL shows as stopped too, and so
# does its jail (its PID 1 exits with it); destroy cleans up both completely.
source "$(dirname "$0")/lib.sh"
shared_template default  # sandboxes restore from it: no boot each

space create off >/dev/null 2>"$TEST_ROOT/off.err" &
a=$!
space create killed >/dev/null 2>"$TEST_ROOT/killed.err" &
b=$!
wait $a || fail "create off: $(cat "$TEST_ROOT/off.err")"
wait $b || fail "create killed: $(cat "$TEST_ROOT/killed.err")"

opid=$(pid_of off)
python3 "$SRC/tests/integration/agent.py" "$SPACE_RUN_DIR/off/vsock.sock" poweroff
wait_until "$SPACE_TEST_TIMEOUT" gone "$opid"
[ "$(status_of off)" = stopped ] || fail "powered-off sandbox is '$(status_of off)', not stopped"
[ "$(space list --format json | python3 -c 'import json,sys; print([s["status"] for s in json.load(sys.stdin) if s["id"] == "off"][0])')" = stopped ] ||
  fail "list does not show the powered-off sandbox as stopped"

kpid=$(pid_of killed)
kinit=$(awk '{print $4}' "/proc/$kpid/stat")  # its jail's PID 1 (gvisor: none, the CLI's parent)
kill -9 "$kpid"
wait_until 10 gone "$kpid"
[ "$ENGINE" != vm ] || wait_until 10 gone "$kinit"
[ "$(status_of killed)" = stopped ] || fail "killed sandbox is '$(status_of killed)', not stopped"
assert_contains "$(space list)" "stopped" "list shows the stopped sandboxes"

expect_status 0 space destroy off killed
assert_gone off "$opid"
assert_gone killed "$kpid"
echo "PASS"
