# Scenario: long-running sessions. No boot (the shared test template, lib.sh), then a sandbox made from it runs
# a counter in guest memory (tmpfs) and has a file on its disk. The counter carries on and the
# file stays across pause/resume, across checkpoint/resume (the VMM is stopped in between), and
# across a kill -9 of the VMM followed by a resume from the last checkpoint. Then branch --count 3:
# every branch answers exec, has the history up to the branch point, then diverges (files and
# memory), reads different bytes from /dev/urandom and has its own hostname; each branch's VMM
# was forked from the source's (the fast path; on gvisor each restores runsc's checkpoint of
# the source); the source keeps running; destroying the
# source leaves the branches working, and a branch of a branch works. Wrong-status and unknown-id
# requests exit 125 with a clear message.
# Vector state: tests/programs/vector_check.cpp (processes keeping patterns in vector registers
# while they yield) finds no mismatch in s1, in a run that spans a checkpoint and resume, and in
# a run that spans a branch, in the source and in every branch.
source "$(dirname "$0")/lib.sh"

# Errors that need no VM.
for cmd in pause resume checkpoint branch; do
  expect_status 125 space $cmd nope
  assert_contains "$ERR" "sandbox nope does not exist" "$cmd of an unknown id"
done

shared_template base
expect_status 0 space create --template base s1
[ "$(vmm_pids)" = "$(pid_of s1)" ] || fail "vmm_pids sees '$(vmm_pids)', not s1's VMM $(pid_of s1)"
x() { space exec "$@"; }  # exec in a sandbox, output on stdout
# The counter forks nothing: it waits 0.1 s in `read -t` on a FIFO no one writes (a shell
# builtin), where `sleep` would fork and exec, which costs the guest kernel about half a second
# of CPU per step on a PVM host, and with five sandboxes counting would take both host cores.
counter='exec 3<>/tmp/tick; i=0; while :; do i=$((i+1)); echo $i >/tmp/count; read -t 0.1 x <&3; done'
expect_status 0 x s1 -- sh -c "mkfifo /tmp/tick && { setsid sh -c '$counter' </dev/null >/dev/null 2>&1 & } && echo before >/root/file; sync"
# count ID: the counter's value. The loop rewrites the file in place (truncate, then write), so a
# read can land in between and see it empty: read again then.
count() {
  local v=""
  for _ in 1 2 3 4 5; do
    v=$(x "$1" -- cat /tmp/count)
    [ -z "$v" ] || break
  done
  echo "$v"
}
# advancing ID: the counter of ID moves forward within a minute; prints its value. On a loaded
# host one sample half a second apart is not enough. A counter stopped for good (a lost timer
# after a restore, say) still fails.
advancing() {
  local a b deadline=$((SECONDS + 60))
  a=$(count "$1")
  while :; do
    sleep 0.5
    b=$(count "$1")
    [ "$b" -le "$a" ] || break
    [ $SECONDS -lt $deadline ] || fail "counter of $1 is not advancing ($a, then $b a minute later)"
  done
  echo "$b"
}
c0=$(advancing s1)
[ "$(x s1 -- hostname)" = s1 ] || fail "a sandbox restored from a template kept the template's hostname"

# Vector registers survive context switches (on PVM hosts the VMM keeps them for the guest).
VECTOR_CHECK=${SPACE_VECTOR_CHECK:-$(dirname "$SPACE_BIN")/vector-check}
[ -x "$VECTOR_CHECK" ] || fail "no $VECTOR_CHECK: build it first (ninja -C build vector-check)"
expect_status 0 space exec -i s1 -- sh -c 'cat >/root/vector-check && chmod 755 /root/vector-check && sync' <"$VECTOR_CHECK"
expect_status 0 x s1 -- /root/vector-check --procs 4 --rounds 300
assert_contains "$OUT" "os mode: 4 processes x 300 rounds" "vector-check output"
echo "vector-check in s1: $(echo "$OUT" | tr '\n' ';')"
# vc_start ID ROUNDS: vector-check in the background; vc_running ID: it has not finished yet;
# vc_passed ID: wait for it and fail unless it found no mismatch.
# ROUNDS are sized for a PVM guest, whose kernel is interpreted; under gVisor the same rounds
# take about 1/60 of the time (0.3 s for 600), too short to span a checkpoint or a branch.
vc_scale=1
[ "$ENGINE" = vm ] || vc_scale=60
vc_start() {
  x "$1" -- sh -c "rm -f /tmp/vc.rc; setsid sh -c '/root/vector-check --mode os --procs 4 --rounds $(($2 * vc_scale)) >/tmp/vc.out 2>&1; echo \$? >/tmp/vc.rc' </dev/null >/dev/null 2>&1 &"
}
vc_running() { x "$1" -- test ! -e /tmp/vc.rc || fail "vector-check in $1 ended too soon to span $2"; }
vc_passed() {  # one exec that waits in the guest: polling with execs would slow the guest down
  local rc
  rc=$(timeout 600 "$SPACE_BIN" exec "$1" -- sh -c 'while [ ! -s /tmp/vc.rc ]; do sleep 1; done; cat /tmp/vc.rc') \
    || fail "vector-check in $1 (across $2) did not finish"
  [ "$rc" = 0 ] || fail "vector-check in $1 (across $2): $(x "$1" -- cat /tmp/vc.out)"
}

# pause / resume
expect_status 0 space pause s1
[ "$(status_of s1)" = paused ] || fail "status after pause: $(status_of s1)"
expect_status 125 space pause s1
assert_contains "$ERR" "already paused" "second pause"
expect_status 125 space branch s1 --count 0
# A paused source stays paused; its branch runs.
expect_status 0 space branch s1 --name bp
[ "$(status_of s1)" = paused ] || fail "a paused source is $(status_of s1) after branch"
[ "$(status_of bp)" = running ] || fail "the branch of a paused source is $(status_of bp)"
advancing bp >/dev/null
expect_status 0 space destroy bp
expect_status 0 space resume s1
[ "$(status_of s1)" = running ] || fail "status after resume: $(status_of s1)"
expect_status 125 space resume s1
assert_contains "$ERR" "already running" "resume of a running sandbox"
c1=$(advancing s1)
[ "$c1" -gt "$c0" ] || fail "counter went back across pause/resume: $c0 -> $c1"
[ "$(x s1 -- cat /root/file)" = before ] || fail "file lost across pause/resume"

# checkpoint / resume
vc_start s1 600
pid=$(pid_of s1)
vc_running s1 "a checkpoint"
expect_status 0 space checkpoint s1 --format json
if [ "$ENGINE" = vm ]; then
  # s1's RAM maps the template's memory file: only the pages written since go to the checkpoint.
  python3 -c 'import json,sys; v=json.loads(sys.argv[1]); assert v["memory_diff"] is True and 0 < v["memory_data_bytes"] < 64 << 20, v' "$OUT" \
    || fail "checkpoint did not write memory as a small diff against the template: $OUT"
fi
[ "$(status_of s1)" = checkpointed ] || fail "status after checkpoint: $(status_of s1)"
wait_until 10 gone "$pid"
if [ "$ENGINE" = vm ]; then
  [ -f "$SPACE_ROOT/store/sandboxes/s1/checkpoint/vmstate" ] || fail "no checkpoint/vmstate"
else  # runsc's image of the sandbox, and no runsc process left of it
  [ -f "$SPACE_ROOT/store/sandboxes/s1/checkpoint/checkpoint.img" ] || fail "no checkpoint/checkpoint.img"
  [ -z "$(runsc_pids)" ] || fail "runsc processes left after checkpoint: $(runsc_pids)"
fi
[ ! -e "$SPACE_ROOT/store/sandboxes/s1/checkpoint.tmp" ] || fail "checkpoint.tmp left behind"
for cmd in pause checkpoint branch; do
  expect_status 125 space $cmd s1
  assert_contains "$ERR" "checkpointed" "$cmd of a checkpointed sandbox"
done
expect_status 0 space resume s1
[ "$(status_of s1)" = running ] || fail "status after resume from checkpoint: $(status_of s1)"
# (vector-check first: four processes that yield all the time can starve the counter on a
# loaded host, and the counter's checks below sample it only 0.5 s apart)
vc_passed s1 "a checkpoint and resume"
c2=$(advancing s1)
[ "$c2" -gt "$c1" ] || fail "counter went back across checkpoint/resume: $c1 -> $c2"
[ "$(x s1 -- cat /root/file)" = before ] || fail "file lost across checkpoint/resume"

# kill -9 of the VMM, then resume from the last checkpoint (taken here, with a second file).
expect_status 0 x s1 -- sh -c 'echo ck2 >/root/file2; sync'
expect_status 0 space pause --checkpoint s1
expect_status 0 space resume s1
expect_status 0 x s1 -- sh -c 'echo after >/root/file3; sync'
kill -9 "$(pid_of s1)"
wait_until 10 sh -c "[ \"\$('$SPACE_BIN' state s1 | grep -c '\"stopped\"')\" = 1 ]"
assert_contains "$(space list)" stopped "space list after kill -9"
for cmd in pause checkpoint branch; do
  expect_status 125 space $cmd s1
  assert_contains "$ERR" "stopped" "$cmd of a sandbox whose VMM died"
done
expect_status 0 space resume s1
assert_contains "$ERR" "resuming from its last checkpoint" "resume after kill -9"
[ "$(x s1 -- cat /root/file2)" = ck2 ] || fail "checkpointed file lost after kill -9 + resume"
x s1 -- test -e /root/file3 && fail "a write after the last checkpoint survived its restore"
advancing s1 >/dev/null

# branch --count 3
expect_status 0 x s1 -- sh -c 'echo shared >/root/history; sync'
vc_start s1 300
vc_running s1 "a branch"
expect_status 0 space branch s1 --count 3 --name b --format json
python3 -c 'import json,sys; v=json.loads(sys.argv[1]); assert [b["id"] for b in v]==["b-1","b-2","b-3"], v' "$OUT" \
  || fail "branch printed: $OUT"
[ "$(status_of s1)" = running ] || fail "source not running after branch"
# Before any exec: each branch VMM said Hello to its guest by itself (fresh entropy, clock, id).
for b in b-1 b-2 b-3; do
  wait_until 60 grep -q "hostname $b (from the host)" "$SPACE_ROOT/store/sandboxes/$b/console.log"
done
for s in s1 b-1 b-2 b-3; do vc_passed $s "a branch"; done  # (before the counter checks)
for b in b-1 b-2 b-3; do
  [ "$(status_of $b)" = running ] || fail "$b is $(status_of $b)"
  # The fast path: the branch's VMM was forked by the source's, and the guest took its new id.
  # (gvisor: each branch restores runsc's image in a monitor of its own.)
  if [ "$ENGINE" = vm ]; then
    [ "$(ps -o ppid= -p "$(pid_of $b)" | tr -d ' ')" = "$(pid_of s1)" ] \
      || fail "$b's VMM was not forked from the source's VMM"
  fi
  [ "$(x $b -- hostname)" = $b ] || fail "$b's hostname is $(x $b -- hostname)"
  [ "$(x $b -- cat /root/history)" = shared ] || fail "$b lacks the source's history"
  advancing $b >/dev/null
  expect_status 0 x $b -- sh -c "echo $b >/root/mine; sync"
done
advancing s1 >/dev/null
x s1 -- test -e /root/mine && fail "a branch's file appeared in the source"
for b in b-1 b-2 b-3; do
  [ "$(x $b -- cat /root/mine)" = $b ] || fail "$b's file is not its own"
  x $b -- od -An -tx1 -N16 /dev/urandom >"$TEST_ROOT/rand.$b"
done
[ "$(sort -u "$TEST_ROOT"/rand.* | wc -l)" = 3 ] || fail "branches read the same /dev/urandom bytes"
# Memory diverges: a value set in one branch's tmpfs is not in another's.
expect_status 0 x b-1 -- sh -c 'echo one >/tmp/mem'
x b-2 -- test -e /tmp/mem && fail "b-1's memory write appeared in b-2"
expect_status 0 space destroy b-2 b-3

# Destroying the parent leaves the branch working; a branch of a branch works.
expect_status 0 space destroy s1
advancing b-1 >/dev/null
expect_status 0 space branch b-1 --name bb
[ "$(x bb -- cat /tmp/mem)" = one ] || fail "branch of a branch lost memory state"
[ "$(space state bb | python3 -c 'import json,sys; print(json.load(sys.stdin)["parent"])')" = b-1 ] \
  || fail "parent of bb is not b-1"
expect_status 0 space checkpoint bb  # and a checkpointed sandbox is destroyed like any other
expect_status 0 space destroy b-1 bb
[ -z "$(vmm_pids)" ] || fail "VMMs left: $(vmm_pids)"
echo "PASS: sessions"
