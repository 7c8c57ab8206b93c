# Scenario: one sandbox, many execs (restored from the shared test template: no boot). Exit codes 0, 3 and 255,
# SIGKILL -> 137; stdin with -i and EOF without it; stdout and stderr kept apart; 16 MiB of
# output checksummed against the same generator on the host; 4 concurrent execs; --timeout ->
# 124 with the process group gone; a missing command -> 127, a non-executable one -> 126; env,
# cwd and user honoured; -t through script(1) (a real pty, its size, the exit code); SIGINT to
# `space exec` forwarded to the process; and 125 for an unknown sandbox and for a stopped one.
source "$(dirname "$0")/lib.sh"
shared_template default  # sandboxes restore from it: no boot each

space create ex >/dev/null 2>"$TEST_ROOT/create.err" || fail "create: $(cat "$TEST_ROOT/create.err")"

# Exit codes.
expect_status 0 space exec ex -- true
expect_status 3 space exec ex -- sh -c 'exit 3'
expect_status 255 space exec ex -- sh -c 'exit 255'
expect_status 137 space exec ex -- sh -c 'kill -9 $$'

# Stdin: forwarded with -i, at EOF at once without it (cat ends although our stdin never does).
out=$(printf 'hello\nworld\n' | space exec -i ex -- cat) || fail "exec -i cat failed"
[ "$out" = $'hello\nworld' ] || fail "exec -i cat gave '$out'"
rc=0
out=$(set +o pipefail; yes | timeout 120 "$SPACE_BIN" exec ex -- cat) || rc=$?
[ "$rc" -eq 0 ] || fail "exec without -i exited $rc (did it wait for stdin?)"
[ -z "$out" ] || fail "without -i the process read stdin: '$(echo "$out" | head -c 100)'"

# Stdout and stderr stay apart.
space exec ex -- sh -c 'echo to-out; echo to-err >&2' >"$TEST_ROOT/o" 2>"$TEST_ROOT/e"
[ "$(cat "$TEST_ROOT/o")" = to-out ] || fail "stdout: $(cat "$TEST_ROOT/o")"
[ "$(cat "$TEST_ROOT/e")" = to-err ] || fail "stderr: $(cat "$TEST_ROOT/e")"

# 16 MiB of output (seq 1 2250000 is 16888896 bytes), compared with the same generator here.
want=$(seq 1 2250000 | sha256sum)
got=$(space exec ex -- seq 1 2250000 | sha256sum) || fail "exec seq failed"
[ "$got" = "$want" ] || fail "16 MiB output checksum: got $got, want $want"

# Four execs at once; each must see its own output and exit code.
for i in 1 2 3 4; do
  space exec ex -- sh -c "sleep 1; echo run-$i; exit $i" >"$TEST_ROOT/c$i" 2>&1 &
  eval "pid$i=$!"
done
for i in 1 2 3 4; do
  rc=0
  eval "wait \$pid$i" || rc=$?
  [ "$rc" -eq "$i" ] || fail "concurrent exec $i exited $rc: $(cat "$TEST_ROOT/c$i")"
  [ "$(cat "$TEST_ROOT/c$i")" = "run-$i" ] || fail "concurrent exec $i printed: $(cat "$TEST_ROOT/c$i")"
done

# --timeout kills the whole process group and returns 124.
expect_status 124 space exec --timeout 2 ex -- sh -c 'sleep 300 & sleep 301'
assert_contains "$ERR" "timed out" "timeout message"
left=$(space exec ex -- ps) || fail "exec ps failed"
case "$left" in *"sleep 30"*) fail "processes left after the timeout: $left" ;; esac

# Commands that cannot run.
expect_status 127 space exec ex -- no-such-command
assert_contains "$ERR" "No such file" "not-found message"
expect_status 126 space exec ex -- /etc/passwd
assert_contains "$ERR" "Permission denied" "not-executable message"

# Environment, working directory and user.
expect_status 0 space exec -e FOO=bar -e "SPACE_EMPTY=" -w /tmp -u 1000:1000 ex -- \
  sh -c 'echo "$FOO|${SPACE_EMPTY-unset}|$(pwd)|$(id -u):$(id -g)|$HOME"'
[ "$OUT" = "bar||/tmp|1000:1000|/home/user" ] || fail "env/cwd/user: $OUT"
expect_status 0 space exec -u 1000 ex -- id -g
[ "$OUT" = 1000 ] || fail "-u 1000 should take gid 1000 from /etc/passwd, got $OUT"

# -t: a pty of the caller's size, through script(1); the exit code comes back through it.
out=$(script -qec "stty rows 30 cols 100; $SPACE_BIN exec -t ex -- sh -c 'tty; stty size'" /dev/null </dev/null) ||
  fail "exec -t through script failed: $out"
assert_contains "$out" "/dev/pts/" "exec -t gives a pty"
assert_contains "$out" "30 100" "exec -t passes the window size"
rc=0
printf 'echo hi-from-$((6*7))\nexit 4\n' | script -qec "$SPACE_BIN exec -it ex -- sh" /dev/null >"$TEST_ROOT/tty" || rc=$?
[ "$rc" -eq 4 ] || fail "exec -it sh through script exited $rc: $(cat "$TEST_ROOT/tty")"
grep -q "hi-from-42" "$TEST_ROOT/tty" || fail "exec -it output: $(cat "$TEST_ROOT/tty")"

# SIGINT to space exec reaches the process (its trap runs and picks the exit code). Started
# without the `space` function, so that $! is space itself.
"$SPACE_BIN" exec ex -- sh -c 'trap "echo got-int; exit 9" INT; echo ready; while :; do sleep 1; done' \
  >"$TEST_ROOT/sig" 2>&1 &
spid=$!
wait_until "$SPACE_TEST_TIMEOUT" grep -q ready "$TEST_ROOT/sig"
kill -INT "$spid"
rc=0
wait "$spid" || rc=$?
[ "$rc" -eq 9 ] || fail "exec after SIGINT exited $rc, expected 9: $(cat "$TEST_ROOT/sig")"
grep -q got-int "$TEST_ROOT/sig" || fail "the trap did not run: $(cat "$TEST_ROOT/sig")"

# Errors of space itself: 125 with a clear message.
expect_status 125 space exec no-such-sandbox -- true
assert_contains "$ERR" "does not exist" "unknown sandbox"
vpid=$(pid_of ex)
kill -9 "$vpid"
wait_until 10 bash -c "! kill -0 $vpid 2>/dev/null"
expect_status 125 space exec ex -- true
assert_contains "$ERR" "not running" "stopped sandbox"

expect_status 0 space destroy ex
assert_gone ex "$vpid"
echo "PASS"
