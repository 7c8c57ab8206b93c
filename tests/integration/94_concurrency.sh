# Scenario: commands that race. 20 parallel creates of one id: exactly one wins, every other
# exits 125 saying the id exists, and one VMM runs. 8 parallel branches of one source: all eight
# succeed with distinct sandboxes that answer exec, and the source keeps running. A destroy
# racing an exec and a branch of the same sandbox: every command ends (none hangs), each either
# succeeds or exits with a clear error (the exec's names the destroy), and nothing of the sandbox or its branches is left once
# they are destroyed (lib.sh's clean-up fails the test on any process, cgroup or mount left).
# Restored from the shared test template.
source "$(dirname "$0")/lib.sh"
shared_template base

# timed_bg NAME CMD...: runs CMD in the background with its status in $TEST_ROOT/NAME.rc and its
# stderr in $TEST_ROOT/NAME.err; a command still running after $SPACE_TEST_TIMEOUT is killed and
# recorded as "hung".
timed_bg() {
  local name=$1
  shift
  (
    rc=0
    timeout -s KILL "$SPACE_TEST_TIMEOUT" "$@" >"$TEST_ROOT/$name.out" 2>"$TEST_ROOT/$name.err" || rc=$?
    [ $rc != 137 ] || rc=hung
    echo $rc >"$TEST_ROOT/$name.rc"
  ) &
}
rc_of() { cat "$TEST_ROOT/$1.rc"; }

# 20 creates of one id at once.
for i in $(seq 1 20); do timed_bg "create$i" "$SPACE_BIN" create --template base same; done
wait
won=0
for i in $(seq 1 20); do
  case $(rc_of "create$i") in
    0) won=$((won + 1)) ;;
    125) assert_contains "$(cat "$TEST_ROOT/create$i.err")" "create sandbox same: already exists" "a losing create" ;;
    *) fail "create $i of 'same' exited $(rc_of "create$i"): $(cat "$TEST_ROOT/create$i.err")" ;;
  esac
done
[ $won = 1 ] || fail "$won of 20 parallel creates of one id succeeded, not exactly one"
[ "$(status_of same)" = running ] || fail "the winner is $(status_of same)"
[ "$(vmm_pids | wc -w)" = 1 ] || fail "20 creates of one id left $(vmm_pids | wc -w) VMMs"
expect_status 0 space exec same -- echo one
[ "$OUT" = one ] || fail "the winning sandbox answered '$OUT'"

# 8 branches of one source at once.
for i in $(seq 1 8); do timed_bg "branch$i" "$SPACE_BIN" branch same --name "b$i"; done
wait
for i in $(seq 1 8); do
  [ "$(rc_of "branch$i")" = 0 ] || fail "parallel branch $i exited $(rc_of "branch$i"): $(cat "$TEST_ROOT/branch$i.err")"
  [ "$(cat "$TEST_ROOT/branch$i.out")" = "b$i" ] || fail "branch $i printed '$(cat "$TEST_ROOT/branch$i.out")', not b$i"
done
[ "$(vmm_pids | wc -w)" = 9 ] || fail "the source and 8 branches are $(vmm_pids | wc -w) VMMs, not 9"
for i in $(seq 1 8); do
  expect_status 0 space exec "b$i" -- hostname
  [ "$OUT" = "b$i" ] || fail "branch b$i answered hostname '$OUT'"
done
expect_status 0 space exec same -- echo still
for i in $(seq 1 8); do expect_status 0 space destroy "b$i"; done

# destroy racing exec and branch: each ends, clearly.
timed_bg exec "$SPACE_BIN" exec same -- sh -c 'sleep 2; echo done'
timed_bg branch "$SPACE_BIN" branch same --count 2 --name race
sleep 0.3
timed_bg destroy "$SPACE_BIN" destroy --force same
wait
for c in exec branch destroy; do
  r=$(rc_of $c)
  [ "$r" != hung ] || fail "$c racing destroy did not end within $SPACE_TEST_TIMEOUT s"
  err=$(cat "$TEST_ROOT/$c.err")
  case $c/$r in
    destroy/0 | branch/0 | exec/0) ;;
    # The exec was running when destroy came (its command sleeps 2 s): it says what happened.
    # (When the VMM is still on its way out as exec looks, the lost connection is all it can say.)
    exec/125) case $err in *"was destroyed while the command ran"* | *"became stopped"* | *"Connection reset"*) ;;
      *) fail "exec racing destroy: $err" ;; esac ;;
    */125) assert_contains "$err" "space: error:" "$c racing destroy" ;;
    *) fail "$c racing destroy exited $r: $err" ;;
  esac
  echo "racing destroy: $c exited $r${err:+ ($(echo "$err" | head -1))}"
done
[ "$(rc_of destroy)" = 0 ] || fail "destroy --force lost the race: $(cat "$TEST_ROOT/destroy.err")"
expect_status 125 space state same
# Branches that won the race are sandboxes of their own: they work and destroy cleanly.
for id in $(ls "$SPACE_ROOT/store/sandboxes" 2>/dev/null); do
  [ "$(status_of "$id")" = running ] || fail "branch $id from the race is $(status_of "$id")"
  expect_status 0 space exec "$id" -- true
  expect_status 0 space destroy "$id"
done
[ -z "$(vmm_pids)" ] || fail "VMMs left after the race: $(vmm_pids)"
ls "$SPACE_RUN_DIR" | grep -v '^\.' | grep -qv '^egress' && fail "run directories left: $(ls "$SPACE_RUN_DIR")"
echo "PASS"
