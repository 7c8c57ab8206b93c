# Scenario: the host restarts under running sandboxes. Three sandboxes (one running, one
# checkpointed after its guest wrote to disk and memory, one paused), then what a host crash
# leaves: every VMM and helper killed with SIGKILL, the store unmounted and its loop device
# detached, the runtime directory emptied and the cgroups gone. Then `space list` shows each
# sandbox as stopped, the one with a checkpoint resumes from it with
# its disk and memory as they were, resume of the others fails with an error that names
# destroy, they destroy cleanly, and a new sandbox can be made from the template.
# Restored from the shared test template.
source "$(dirname "$0")/lib.sh"
shared_template base

expect_status 0 space create --template base run1
expect_status 0 space create --template base ck1
expect_status 0 space create --template base pz1
expect_status 0 space exec run1 -- sh -c 'echo run1-disk > /root/mark; sync'
expect_status 0 space exec ck1 -- sh -c 'echo ck1-disk > /root/mark; echo ck1-mem > /tmp/mem; sync'
expect_status 0 space checkpoint ck1
expect_status 0 space resume ck1
expect_status 0 space exec ck1 -- sh -c 'echo after-checkpoint > /tmp/mem'  # lost with the host
expect_status 0 space pause pz1

# The crash.
pids="$(jail_pids) $(runsc_pids)"  # (gvisor: the monitors, and runsc's sandboxes and gofers)
[ -n "${pids// /}" ] || fail "no VMMs to kill"
kill -9 $pids $(pgrep -f -- "__credd --cred-dir $TEST_ROOT/" || true) \
  $(pgrep -f -- "--root $SPACE_ROOT( .* | )__(egress|expire)" || true) 2>/dev/null || true
# A paused gvisor sandbox is frozen (the cgroup v1 freezer): its processes die of a SIGKILL only
# once thawed, as a crash would leave nothing frozen.
for f in /sys/fs/cgroup/freezer/"$CGROUP_PARENT"/*/freezer.state; do
  if [ -e "$f" ]; then echo THAWED >"$f"; fi
done
for p in $pids; do wait_until 10 gone "$p"; done
loop=$(losetup -j "$SPACE_ROOT/store.img" -O NAME -n)
umount "$SPACE_ROOT/store"
[ -z "$loop" ] || losetup -d $loop 2>/dev/null || true
wait_until 10 sh -c "[ -z \"\$(losetup -j '$SPACE_ROOT/store.img' -O NAME -n)\" ]"
find "$SPACE_RUN_DIR" -mindepth 1 -delete
for d in $(cgroup_dirs); do find "$d" -mindepth 1 -depth -type d -exec rmdir {} +; done

# After the restart.
expect_status 0 space list --format json
statuses=$(echo "$OUT" | python3 -c 'import json,sys; print(" ".join(sorted(s["id"] + "=" + s["status"] for s in json.load(sys.stdin))))')
[ "$statuses" = "ck1=stopped pz1=stopped run1=stopped" ] || fail "after a host restart list shows: $statuses"
expect_status 0 space resume ck1
expect_status 0 space exec ck1 -- cat /root/mark /tmp/mem
[ "$OUT" = "ck1-disk
ck1-mem" ] || fail "the checkpoint resumed with '$OUT'"
for id in run1 pz1; do
  expect_status 125 space resume "$id"
  assert_contains "$ERR" "space destroy $id" "resume of a sandbox that died with the host"
  expect_status 0 space destroy "$id"
  assert_gone "$id" 0
done
expect_status 0 space create --template base new1
expect_status 0 space exec new1 -- echo fresh
[ "$OUT" = fresh ] || fail "a sandbox made after the restart answered '$OUT'"
expect_status 0 space destroy ck1
expect_status 0 space destroy new1
echo "PASS"
