# Scenario: two sandboxes booted at once; list and state show them running with live VMMs and
# a guest-init that answers; destroying one leaves no process, socket directory or sandbox
# directory behind and does not disturb the other.
source "$(dirname "$0")/lib.sh"

space create --cpus 1 --memory 192 alpha >"$TEST_ROOT/a.out" 2>&1 &
a=$!
space create beta >"$TEST_ROOT/b.out" 2>&1 &
b=$!
wait $a || fail "create alpha failed: $(cat "$TEST_ROOT/a.out")"
wait $b || fail "create beta failed: $(cat "$TEST_ROOT/b.out")"
[ "$(cat "$TEST_ROOT/a.out")" = alpha ] || fail "create did not print the id: $(cat "$TEST_ROOT/a.out")"

list=$(space list)
assert_contains "$list" "alpha" "space list"
assert_contains "$list" "beta" "space list"
[ "$(space list --format json | python3 -c 'import json,sys; print(sorted((s["id"], s["status"]) for s in json.load(sys.stdin)))')" \
  = "[('alpha', 'running'), ('beta', 'running')]" ] || fail "list --format json: $(space list --format json)"

[ "$(status_of alpha)" = running ] || fail "alpha not running"
# --memory reached the VM (and beta got config.toml's 256).
[ "$(space state alpha | python3 -c 'import json,sys; print(json.load(sys.stdin)["memory_mib"])')" = 192 ] \
  || fail "alpha's memory is not the 192 MiB asked for: $(space state alpha)"
[ "$(space state beta | python3 -c 'import json,sys; print(json.load(sys.stdin)["memory_mib"])')" = 256 ] \
  || fail "beta's memory is not config.toml's 256 MiB"
apid=$(pid_of alpha)
kill -0 "$apid" || fail "alpha's VMM $apid is not alive"
[ -S "$SPACE_RUN_DIR/alpha/control.sock" ] || fail "no control socket"
hello=$(python3 "$SRC/tests/integration/agent.py" "$SPACE_RUN_DIR/alpha/vsock.sock" hello)
assert_contains "$hello" "hostname=alpha" "guest-init hello"
grep -q "guest-init" "$SPACE_ROOT/store/sandboxes/alpha/console.log" || fail "console.log has no guest-init line"

expect_status 0 space destroy alpha
assert_gone alpha "$apid"
[ "$(status_of beta)" = running ] || fail "beta disturbed by destroying alpha"
bpid=$(pid_of beta)
expect_status 0 space destroy beta
assert_gone beta "$bpid"
[ -z "$(space list --format json | python3 -c 'import json,sys; print(json.load(sys.stdin) or "")')" ] || fail "list not empty"
echo "PASS"
