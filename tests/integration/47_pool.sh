# Scenario: the gvisor engine's warm pool ([engine.gvisor] pool = 2, core/pool.h), on gvisor
# whatever the host (a VM host runs it on gvisor too). `template pool NAME` fills the pool
# (`check` and `stats --pool` show it); a
# create from the template takes a ready sandbox (its monitor is the member's, already running)
# and it is that sandbox in every way: its id as hostname, exec, files in and out, a network
# policy through the broker (127.0.0.2 allowed, 127.0.0.3 not), pause/resume, checkpoint and a
# resume from it, an expiry, list and state; the pool refills itself in the background; --image
# and --disk-size start a sandbox afresh and leave the pool as it was; a member whose monitor
# was killed is replaced, not handed out; a create killed (kill -9) at moments through its claim
# leaves a whole sandbox or nothing once the pool refills; `template pool --drain` and
# `template rm` leave no process, subvolume, run directory or cgroup (lib.sh's clean-up checks
# the rest).
export SPACE_TEST_ENGINE=${SPACE_TEST_ENGINE:-gvisor}
source "$(dirname "$0")/lib.sh"

web_servers

printf '[engine.gvisor]\npool = 2\n' >>"$SPACE_ROOT/config.toml"
shared_template base
at_exit "'$SPACE_BIN' template pool --drain >/dev/null 2>&1"

pool_json() { space template pool --format json; }
ready_of() {  # TEMPLATE: its pool's ready members
  pool_json | python3 -c 'import json,sys; print(next((p["ready"] for p in json.load(sys.stdin) if p["template"] == sys.argv[1]), -1))' "$1"
}
members() { ls "$SPACE_ROOT/store/pool/base" 2>/dev/null | grep -v '^\.' || true; }
ready_is() { [ "$(ready_of base)" = "$1" ]; }

# Filled in the foreground: two members, each a running monitor, none in list.
expect_status 0 space template pool base
assert_contains "$OUT" "base" "template pool base"
[ "$(ready_of base)" = 2 ] || fail "the pool of base is not full: $(pool_json)"
[ "$(members | wc -l)" = 2 ] || fail "pool members on disk: $(members)"
space check | grep -q '^gvisor pool  *2 per gvisor template; base 2 ready' ||
  fail "space check's pool line: $(space check | grep pool)"
# What they cost while they wait: stats --pool, one row per member, its memory counted.
space stats --pool --format json | python3 -c '
import json, sys
rows = json.load(sys.stdin)
assert len(rows) == 2, rows
for r in rows:
    assert r["pool"] == "base" and r["id"].startswith("base/"), r
    assert r["status"] == "running" and r["pss_bytes"] and r["memory_bytes"], r
' || fail "stats --pool: $(space stats --pool --format json)"
for m in $(members); do
  [ -S "$SPACE_RUN_DIR/.pool-$m/control.sock" ] || fail "member $m has no control socket"
done
[ -z "$(space list --format json | python3 -c 'import json,sys; print(json.load(sys.stdin) or "")')" ] ||
  fail "pool members show in list: $(space list)"

# A create takes the oldest member: the same monitor, under the new id.
oldest=$(for m in $(members); do echo "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["created"])' "$SPACE_ROOT/store/pool/base/$m/state.json") $m"; done | sort | head -1 | cut -d' ' -f2)
mpid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$SPACE_ROOT/store/pool/base/$oldest/state.json")
expect_status 0 space create --template base --net "allow=127.0.0.2:$P2" --ttl 1h p1
[ "$OUT" = p1 ] || fail "create printed '$OUT'"
[ "$(pid_of p1)" = "$mpid" ] || fail "p1's monitor $(pid_of p1) is not member $oldest's ($mpid)"
[ ! -e "$SPACE_ROOT/store/pool/base/$oldest" ] || fail "member $oldest is still in the pool"
[ -d "$SPACE_RUN_DIR/p1" ] && [ ! -L "$SPACE_RUN_DIR/p1" ] || fail "p1's run directory is not the member's, moved"
# runsc's own records name the member's paths: a link leads them to p1's (destroy removes it).
[ "$(readlink "$SPACE_RUN_DIR/.pool-$oldest")" = p1 ] || fail "no link from the member's run directory to p1's"
[ "$(status_of p1)" = running ] || fail "p1: $(space state p1)"
space state p1 | python3 -c 'import json,sys; s=json.load(sys.stdin); assert s["template"]=="base" and s["engine"]=="gvisor" and s["expires"], s' ||
  fail "p1's record: $(space state p1)"
space list | grep -q '^p1 ' || fail "list does not show p1: $(space list)"

# It works as any sandbox: its name, exec, files, the network policy.
expect_status 0 space exec p1 -- hostname
[ "$OUT" = p1 ] || fail "p1's hostname is '$OUT'"
expect_status 0 space exec p1 -- sh -c 'echo pooled >/root/f && cat /root/f'
[ "$OUT" = pooled ] || fail "exec in p1: $OUT"
echo "from the host" >"$TEST_ROOT/in.txt"
expect_status 0 space cp "$TEST_ROOT/in.txt" p1:/root/in.txt
expect_status 0 space cp p1:/root/in.txt "$TEST_ROOT/out.txt"
[ "$(cat "$TEST_ROOT/out.txt")" = "from the host" ] || fail "cp in and out of p1"
expect_status 0 space exec p1 -- wget -q -O - "http://127.0.0.2:$P2/index.html"
[ "$OUT" = "hello from 127.0.0.2" ] || fail "GET through p1's proxy: '$OUT'"
expect_status 0 space exec p1 -- sh -c "wget -q -O - http://127.0.0.3:$P3/ 2>&1; echo rc=\$?"
assert_contains "$OUT" "403" "GET of 127.0.0.3 from p1"
expect_status 0 space net log p1
assert_contains "$OUT" "127.0.0.2" "p1's audit log"

# Pause/resume, then a checkpoint and a resume from it (a new monitor, under p1's own name).
expect_status 0 space pause p1
[ "$(status_of p1)" = paused ] || fail "p1 not paused"
expect_status 0 space resume p1
expect_status 0 space exec p1 -- cat /root/f
[ "$OUT" = pooled ] || fail "p1 after resume: $OUT"
expect_status 0 space checkpoint p1
expect_status 0 space resume p1
[ "$(pid_of p1)" != "$mpid" ] || fail "p1 resumed from its checkpoint with the old monitor"
expect_status 0 space exec p1 -- cat /root/f
[ "$OUT" = pooled ] || fail "p1's file after checkpoint and resume: $OUT"

# The pool refilled itself in the background.
wait_until 60 ready_is 2
[ -n "$(members)" ] || fail "no members after the refill"

# --image and --disk-size are fixed at runsc's start: those creates start afresh.
before=$(members | sort)
expect_status 0 space create --template base --disk-size 1G d1
[ "$(members | sort)" = "$before" ] || fail "a --disk-size create took a pool member"
expect_status 0 space destroy d1

# A member whose monitor died is not handed out: the create gets a live one (or starts one).
victim=$(members | head -1)
vpid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$SPACE_ROOT/store/pool/base/$victim/state.json")
kill -9 "$vpid"
wait_until 10 gone "$vpid"
expect_status 0 space create --template base p2
[ "$(pid_of p2)" != "$vpid" ] || fail "p2 was given the dead member"
expect_status 0 space exec p2 -- hostname
[ "$OUT" = p2 ] || fail "p2's hostname is '$OUT'"
wait_until 60 ready_is 2
[ ! -e "$SPACE_ROOT/store/pool/base/$victim" ] || fail "the dead member $victim is still in the pool"

# Destroy leaves nothing of a pooled sandbox (its cgroup was the member's).
cg=$(space state p1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["cgroup"])')
ppid=$(pid_of p1)
expect_status 0 space destroy p1
assert_gone p1 "$ppid"
[ ! -L "$SPACE_RUN_DIR/.pool-$oldest" ] || fail "destroy left the link to p1's run directory"
for h in /sys/fs/cgroup /sys/fs/cgroup/*; do
  [ ! -d "$h/$cg" ] || fail "p1's cgroup $h/$cg is left"
done
expect_status 0 space destroy p2

# kill -9 of a create at moments through its claim: each leaves sandbox kN whole (destroy removes
# it) or nothing; the next fill removes what a claim left half done, and nothing else is left.
for i in 1 2 3 4 5 6 7 8; do
  expect_status 0 space template pool base  # a killed create may not have started its refill
  [ "$(ready_of base)" = 2 ] || fail "the pool before create k$i: $(pool_json)"
  "$SPACE_BIN" create --template base "k$i" >/dev/null 2>&1 &
  c=$!
  sleep "0.00$((i + 1))"
  kill -9 $c 2>/dev/null || true
  wait $c 2>/dev/null || true
  if [ -e "$SPACE_ROOT/store/sandboxes/k$i" ]; then
    echo "create k$i killed after $((i + 1)) ms: the sandbox was made ($(status_of "k$i" 2>&1))"
    expect_status 0 space destroy --force "k$i"
  else
    echo "create k$i killed after $((i + 1)) ms: no sandbox"
  fi
  [ ! -e "$SPACE_RUN_DIR/k$i" ] || fail "k$i's run directory is left after its create was killed"
done
expect_status 0 space template pool base
for e in $(ls -A "$SPACE_RUN_DIR"); do
  case $e in
    .pool-*)
      if [ -L "$SPACE_RUN_DIR/$e" ]; then fail "a link is left: $e -> $(readlink "$SPACE_RUN_DIR/$e")"; fi
      [ -d "$SPACE_ROOT/store/pool/base/${e#.pool-}" ] || fail "run directory $e has no member" ;;
    k*) fail "run directory $e is left" ;;
  esac
done
[ "$(members | wc -l)" = 2 ] || fail "the pool after the killed creates: $(members)"

# Drained: nothing of the members is left; template rm drains too.
pids=$(for m in $(members); do python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$SPACE_ROOT/store/pool/base/$m/state.json"; done)
expect_status 0 space template pool --drain base
for p in $pids; do gone "$p" || fail "member monitor $p survived the drain"; done
[ ! -e "$SPACE_ROOT/store/pool/base" ] || fail "the pool directory is left: $(ls -a "$SPACE_ROOT/store/pool/base")"
ls -a "$SPACE_RUN_DIR" | grep -q '^\.pool-' && fail "members' run directories left: $(ls -a "$SPACE_RUN_DIR")"
expect_status 0 space template pool base
wait_until 5 ready_is 2
expect_status 0 space template rm base
[ ! -e "$SPACE_ROOT/store/pool/base" ] || fail "template rm left its pool"
[ -z "$(jail_pids)" ] || fail "monitors left after template rm: $(jail_pids)"
echo "PASS"
