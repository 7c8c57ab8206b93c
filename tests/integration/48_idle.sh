# Scenario: idle pause and idle checkpoint (core/idle.h). A sandbox with --idle-pause 6s
# --idle-checkpoint 20s: an exec that runs longer than 6 s, and a guest that keeps making
# network connections (through the broker, to 127.0.0.2), keep it awake; unused, it becomes
# "paused (idle)" in list, state and stats; an exec wakes it with the right answer; an explicit
# pause is never woken, and makes an idle pause explicit; unused longer, it checkpoints itself
# (its VMM gone, no run directory) and the next exec restores it, a counter in guest memory going
# on from where it was; cp and a forwarded connection wake it too, and the forward outlives its
# sleep; a TTL ends a sandbox asleep in an idle checkpoint on time; the reaper killed (kill -9)
# during an idle checkpoint leaves a sandbox that the next exec resumes or restores, or that
# reports a clear error; bad flags and config.toml's defaults.
source "$(dirname "$0")/lib.sh"

web_servers
shared_template base

state_field() {  # ID PYTHON-EXPRESSION-OF-s
  space state "$1" | python3 -c "import json,sys; s=json.load(sys.stdin); print($2)"
}
asleep_as() {  # ID STATUS: STATUS, and asleep from idleness
  [ "$(state_field "$1" 's["status"] + " " + str(s["idle"]["asleep"])')" = "$2 True" ]
}
awake() { [ "$(state_field "$1" 's["status"] + " " + str(s["idle"]["asleep"])')" = "running False" ]; }
# count ID: the counter's value. The loop rewrites the file in place (truncate, then write), so a
# read can land in between and see it empty (more likely in a guest just restored, while its
# memory faults back in): read again then, as 50_session does.
count() {
  local v=""
  for _ in 1 2 3 4 5; do
    v=$(space exec "$1" -- cat /tmp/count)
    [ -z "$v" ] || break
  done
  echo "$v"
}

# Idle pause 6 s: long enough that the steps between two commands here never reach it on a loaded
# host (a fresh-clone run once failed with 3 s), short enough to wait for.
expect_status 0 space create --template base --idle-pause 6s --idle-checkpoint 20s \
  --net "allow=127.0.0.2:$P2" i1
state_field i1 's["idle"]["pause_after_ms"], s["idle"]["checkpoint_after_ms"], s["idle"]["next"]' |
  grep -qx "6000 20000 pause" || fail "i1's idle settings: $(space state i1)"
space list | grep -q "^i1 .* running .*(pause at 20" || fail "list's IDLE column: $(space list)"

# A counter in guest memory that forks nothing (see 50_session).
counter='exec 3<>/tmp/tick; i=0; while :; do i=$((i+1)); echo $i >/tmp/count; read -t 0.1 x <&3; done'
expect_status 0 space exec i1 -- sh -c "mkfifo /tmp/tick && { setsid sh -c '$counter' </dev/null >/dev/null 2>&1 & }"

# An exec longer than the idle pause keeps it awake, and so does its end.
"$SPACE_BIN" exec i1 -- sleep 9 &
LONG=$!
sleep 8
awake i1 || fail "i1 was put to sleep during a 9 s exec: $(space state i1)"
wait $LONG || fail "the 9 s exec failed"
awake i1 || fail "i1 was put to sleep right after an exec"

# So do the guest's own network connections, one a second, with no exec running.
expect_status 0 space exec i1 -- sh -c "{ setsid sh -c 'while [ ! -e /tmp/stop-net ]; do wget -q -O /dev/null http://127.0.0.2:$P2/; sleep 1; done' </dev/null >/dev/null 2>&1 & }"
# Five of them, however long they take: on a PVM host each round's fork and exec of wget and sleep
# costs the guest kernel seconds, so 10 s saw only three.
requests() { [ "$(grep -c "GET / " "$TEST_ROOT/www2.log" || true)" -ge "$1" ]; }
sleep 10
awake i1 || fail "i1 was put to sleep while its guest made connections: $(space state i1)"
wait_until 60 requests 5
awake i1 || fail "i1 was put to sleep while its guest made connections: $(space state i1)"
expect_status 0 space exec i1 -- touch /tmp/stop-net

# Unused, it pauses itself: list, state and stats say so.
wait_until 30 asleep_as i1 paused
space list | grep -q "^i1 .*paused (idle)" || fail "list does not show paused (idle): $(space list)"
space stats i1 | grep -q "^i1 .*paused (idle)" || fail "stats does not show paused (idle): $(space stats i1)"
state_field i1 's["idle"]["next"]' | grep -qx checkpoint || fail "next step: $(space state i1)"

# An exec wakes it, with the right answer.
c1=$(count i1)
[ "$c1" -gt 0 ] || fail "the counter read '$c1'"
awake i1 || fail "i1 is not running after the exec that woke it: $(space state i1)"

# An explicit pause stays: an exec is refused, naming resume; an idle pause paused again by
# hand becomes explicit.
expect_status 0 space pause i1
expect_status 125 space exec i1 -- true
assert_contains "$ERR" "space resume i1" "exec of an explicitly paused sandbox"
[ "$(state_field i1 's["status"]')" = paused ] || fail "an exec woke an explicitly paused sandbox"
expect_status 0 space resume i1
wait_until 30 asleep_as i1 paused
expect_status 0 space pause i1
[ "$(state_field i1 's["idle"]["asleep"]')" = False ] || fail "pause left i1 asleep: $(space state i1)"
expect_status 125 space exec i1 -- true
expect_status 0 space resume i1

# Unused longer, it checkpoints itself: its VMM exits, its run directory goes.
pid=$(pid_of i1)
wait_until 60 asleep_as i1 checkpointed
wait_until 20 gone "$pid"
[ ! -e "$SPACE_RUN_DIR/i1" ] || fail "i1's run directory outlived its idle checkpoint"
space list | grep -q "^i1 .*checkpointed (idle)" || fail "list: $(space list)"
# The next exec restores it, and the counter goes on from where it was.
c2=$(count i1)
[ "$c2" -ge "$c1" ] || fail "the counter went back across the idle checkpoint: $c1 -> $c2"
awake i1 || fail "i1 is not running after the exec that restored it: $(space state i1)"
sleep 1
c3=$(count i1)
[ "$c3" -gt "$c2" ] || fail "the counter stopped after the restore: $c2 -> $c3"

# cp wakes it.
echo "copied in" >"$TEST_ROOT/in.txt"
wait_until 30 asleep_as i1 paused
expect_status 0 space cp "$TEST_ROOT/in.txt" i1:/tmp/in.txt
awake i1 || fail "i1 is not running after the cp that woke it: $(space state i1)"
expect_status 0 space exec i1 -- cat /tmp/in.txt
[ "$OUT" = "copied in" ] || fail "the copied file reads '$OUT'"

# A forward outlives the sleep, and its next connection wakes the sandbox.
expect_status 0 space exec i1 -- sh -c 'mkdir -p /tmp/www && echo "guest page" >/tmp/www/index.html &&
  httpd -p 127.0.0.1:8000 -h /tmp/www </dev/null >/dev/null 2>&1'
"$SPACE_BIN" forward i1 127.0.0.2:0:8000 >"$TEST_ROOT/fwd.out" 2>"$TEST_ROOT/fwd.err" &
FWD=$!
at_exit "kill $FWD 2>/dev/null"
wait_until 20 grep -q ' -> 8000$' "$TEST_ROOT/fwd.out"
FP=$(sed -n 's/^127\.0\.0\.2:\([0-9]*\) -> 8000$/\1/p' "$TEST_ROOT/fwd.out")
wait_until 30 asleep_as i1 paused
kill -0 $FWD || fail "space forward ended when its sandbox paused from idleness: $(cat "$TEST_ROOT/fwd.err")"
page=$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen("http://127.0.0.2:%s/index.html" % sys.argv[1], timeout=120).read().decode(), end="")' "$FP") ||
  fail "a connection through space forward to a sleeping sandbox: $(cat "$TEST_ROOT/fwd.err")"
[ "$page" = "guest page" ] || fail "through space forward: '$page'"
awake i1 || fail "i1 is not running after a forwarded connection woke it: $(space state i1)"
kill -INT $FWD
wait $FWD || true

# A TTL ends a sandbox asleep in an idle checkpoint on time.
expect_status 0 space create --template base --idle-checkpoint 2s --ttl 15s i2
wait_until 40 asleep_as i2 checkpointed
wait_until 60 sh -c "! '$SPACE_BIN' --root '$SPACE_ROOT' state i2 >/dev/null 2>&1"

# The reaper killed during an idle checkpoint: the sandbox still answers the next exec, or says
# clearly why not; nothing is left once it is destroyed (lib.sh checks).
expect_status 0 space create --template base --idle-checkpoint 2s i3
expect_status 0 space exec i3 -- sh -c 'echo mark > /root/mark; sync'
dir="$SPACE_ROOT/store/sandboxes/i3"
deadline=$((SECONDS + 60))
until [ -d "$dir/checkpoint.tmp" ] || [ -d "$dir/checkpoint" ]; do
  [ $SECONDS -lt $deadline ] || fail "no idle checkpoint of i3 began"
done
for p in $(pgrep -f -- "--root $SPACE_ROOT( .* | )__expire" || true); do kill -9 "$p"; done
rc=0
OUT=$("$SPACE_BIN" exec i3 -- cat /root/mark 2>"$TEST_ROOT/i3.err") || rc=$?
if [ $rc -eq 0 ]; then
  [ "$OUT" = mark ] || fail "i3's file after the cut idle checkpoint reads '$OUT'"
else
  [ $rc -eq 125 ] && grep -q "space: error:" "$TEST_ROOT/i3.err" ||
    fail "exec after a cut idle checkpoint: exit $rc: $(cat "$TEST_ROOT/i3.err")"
fi
expect_status 0 space destroy i3

# Bad flags, and config.toml's defaults.
expect_status 125 space create --template base --idle-pause 1m --idle-checkpoint 30s i4
assert_contains "$ERR" "comes before the idle pause" "a checkpoint before the pause"
assert_contains "$ERR" "hint:" "a checkpoint before the pause"
expect_status 125 space create --template base --idle-pause soon i4
assert_contains "$ERR" "invalid duration" "--idle-pause soon"
[ -z "$(ls "$SPACE_ROOT/store/sandboxes" | grep '^i4$' || true)" ] || fail "a refused create left i4"
echo 'idle_pause = "1h"' >>"$SPACE_ROOT/config.toml"  # [defaults] is last
expect_status 0 space create --template base i5
[ "$(state_field i5 's["idle"]["pause_after_ms"]')" = 3600000 ] || fail "config.toml's idle_pause: $(space state i5)"
expect_status 0 space create --template base --idle-pause off i6
[ "$(state_field i6 's["idle"]')" = None ] || fail "--idle-pause off: $(space state i6)"
expect_status 0 space destroy i5 i6 i1
echo PASS
