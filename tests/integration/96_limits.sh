# Scenario: the limits a user sets (issue 15). --ttl ends a sandbox by itself: destroyed at its
# time by the expiry reaper, or with --on-expiry checkpoint checkpointed (resume continues it);
# list and state show the expiry; and with no reaper (killed), the VMM's own backstop stops the
# guest soon after. --disk-size gives the image disk that size and limits what the sandbox may
# keep in the store (a btrfs qgroup): a guest writing past it gets ENOSPC inside the guest, and
# the store gets its space back on destroy. config.toml's [limits] disk_size gives a vm sandbox
# created without --disk-size that quota, its image disk left as it is. A guest program that allocates past the guest's RAM
# is killed by the guest's own OOM killer, and the VMM (in its cgroup, limited to RAM plus the
# overhead) never is (a 64 MiB guest booted for it); on gvisor, whose kernel has no OOM killer of
# its own, the host's ends the sandbox, and only it. Restored from the shared test template.
source "$(dirname "$0")/lib.sh"
shared_template base

reaper_pid() { pgrep -f -- "--root $SPACE_ROOT( .* | )__expire" || true; }
exists() { [ -e "$SPACE_ROOT/store/sandboxes/$1/state.json" ]; }
missing() { ! exists "$1"; }

# --ttl 5s: destroyed by the reaper at its time.
expect_status 0 space create --template base --ttl 5s t-destroy
P=$(pid_of t-destroy)
[ -n "$(space state t-destroy | json_field expires)" ] || fail "state shows no expiry"
[ "$(space state t-destroy | json_field on_expiry)" = destroy ] || fail "state's on_expiry"
assert_contains "$(space list)" "(destroy)" "list shows the expiry"
[ -n "$(reaper_pid)" ] || fail "no expiry reaper runs"
expires_s=$(date -d "$(space state t-destroy | json_field expires)" +%s)
wait_until 30 missing t-destroy
# Against its recorded time (whole seconds), not this script's clock: a slow create on a loaded
# host leaves less of the 5 s after it.
[ "$(date +%s)" -ge $((expires_s - 1)) ] || fail "the sandbox ended before its time"
assert_gone t-destroy "$P"
[ ! -d "/sys/fs/cgroup/memory/$CGROUP_PARENT/t-destroy" ] || fail "an expired sandbox kept its cgroup"

# --on-expiry checkpoint: checkpointed at its time; resume continues it, with no expiry.
# (The expiry is given by resume --ttl, after the file is written: an exec still running at the
# expiry ends with the sandbox.)
expect_status 0 space create --template base t-ck
expect_status 0 space exec t-ck -- sh -c 'echo kept > /root/mark; sync'
expect_status 0 space pause t-ck
expect_status 0 space resume --ttl 3s --on-expiry checkpoint t-ck
[ "$(space state t-ck | json_field on_expiry)" = checkpoint ] || fail "resume --ttl set no expiry"
wait_until 30 sh -c "[ \"\$($SPACE_BIN state t-ck | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"status\"])')\" = checkpointed ]"
[ "$(space state t-ck | json_field expires)" = None ] || fail "a checkpointed expiry still shows"
expect_status 0 space resume t-ck
expect_status 0 space exec t-ck -- cat /root/mark
[ "$OUT" = kept ] || fail "the expired checkpoint lost the guest's file: '$OUT'"
expect_status 0 space destroy t-ck
wait_until 30 sh -c "[ -z \"\$(pgrep -f -- '--root $SPACE_ROOT( .* | )__expire')\" ]"  # idle: gone

# Errors name the flag.
expect_status 125 space create --template base --ttl 5 t-bad
assert_contains "$ERR" "--ttl 30s" "a ttl without a unit"
expect_status 125 space create --template base --on-expiry checkpoint t-bad
assert_contains "$ERR" "--on-expiry needs --ttl" "--on-expiry alone"

# The backstop: the reaper killed, the VMM stops its guest on its own, 30 s past the expiry.
# (A TTL of 10 s: the reaper must be killed before it, and a create on a loaded host, beside the
# other tests, has taken 2 s.)
expect_status 0 space create --template base --ttl 10s t-back
P=$(pid_of t-back)
kill -9 "$(reaper_pid)"
exists t-back || fail "t-back ended before its reaper was killed: the create took its whole TTL"
wait_until 90 gone "$P"
grep -q "expired and nothing destroyed it" "$SPACE_ROOT/store/sandboxes/t-back/vmm.log" ||
  fail "the VMM did not say why it stopped"
expect_status 0 space destroy t-back

# Past the guest's RAM: the guest kills the program; the VMM lives, its cgroup never hit its limit.
# A guest of 64 MiB, booted here (about 25 s): filling the shared template's 256 MiB would take
# 4 minutes on a PVM host, where each page the guest kernel hands out costs about 4 ms.
MEMHOG=$(dirname "$SPACE_BIN")/memhog
[ -x "$MEMHOG" ] || fail "no $MEMHOG: build it first (ninja -C build memhog)"
expect_status 0 space template build --memory 64 small-ram
expect_status 0 space create --template small-ram m
P=$(pid_of m)
expect_status 0 space exec -i m -- sh -c 'cat >/root/memhog && chmod 755 /root/memhog' <"$MEMHOG"
rc=0
space exec m -- /root/memhog 256 >"$TEST_ROOT/memhog.out" 2>&1 || rc=$?
if [ "$ENGINE" = gvisor ]; then
  # gVisor's kernel has no out-of-memory killer of its own: past --memory the host's kills the
  # sandbox's kernel in its cgroup, so the sandbox ends (as a container does), the command says
  # so, and nothing else is touched. space(1), ENGINES, says this.
  # (The OOM killer picks runsc's sandbox or its gofer: either ends the sandbox.)
  [ $rc != 0 ] || fail "memhog past --memory on gvisor succeeded: $(tail -3 "$TEST_ROOT/memhog.out")"
  wait_until 30 sh -c "[ \"\$('$SPACE_BIN' state m | grep -c '\"stopped\"')\" = 1 ]"
  expect_status 0 space destroy m
  [ -z "$(runsc_pids)" ] || fail "runsc processes left: $(runsc_pids)"
fi
if [ "$ENGINE" = vm ]; then
[ $rc = 137 ] || fail "memhog past the guest's RAM exited $rc, not 137 (SIGKILL by the guest): $(tail -3 "$TEST_ROOT/memhog.out")"
alive "$P" || fail "the VMM died when its guest ran out of memory"
expect_status 0 space exec m -- echo still-here
cg=/sys/fs/cgroup/memory/$CGROUP_PARENT/m
if [ -d "$cg" ]; then
  # At the limit the kernel reclaims page cache (the template's memory file, read before the
  # guest overwrote it): that is allowed; killing anything in the group is not.
  kills=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
  [ "${kills:-0}" = 0 ] || fail "the kernel OOM-killed $kills processes in the VMM's cgroup"
  echo "VMM peak memory: $(($(cat "$cg/memory.max_usage_in_bytes") >> 20)) MiB of a $(($(cat "$cg/memory.limit_in_bytes") >> 20)) MiB limit, reached $(cat "$cg/memory.failcnt") times (page cache reclaimed)"
elif [ -f "/sys/fs/cgroup/$CGROUP_PARENT/m/memory.events" ]; then  # cgroup v2
  kills=$(awk '$1 == "oom_kill" { print $2 }' "/sys/fs/cgroup/$CGROUP_PARENT/m/memory.events")
  [ "${kills:-0}" = 0 ] || fail "the kernel OOM-killed $kills processes in the VMM's cgroup"
else
  fail "the VMM has no memory cgroup"
fi
expect_status 0 space destroy m
fi

# --disk-size: an image disk of that size, and a store quota.
DISKFILL=$(dirname "$SPACE_BIN")/diskfill
[ -x "$DISKFILL" ] || fail "no $DISKFILL: build it first (ninja -C build diskfill)"
mkdir -p "$TEST_ROOT/img/bin"
cp "$(command -v busybox)" "$TEST_ROOT/img/bin/busybox"
cp "$DISKFILL" "$TEST_ROOT/img/bin/diskfill"
for a in sh dd df sync echo cat; do ln -s busybox "$TEST_ROOT/img/bin/$a"; done
tar -C "$TEST_ROOT/img" -cf "$TEST_ROOT/img.tar" .
expect_status 0 space image import --size 64M small "$TEST_ROOT/img.tar"
expect_status 0 space create --template base --image small --disk-size 96M q
limit=$(space state q | json_field disk_limit_bytes)
# (vm: the image disk's 96M plus its root disk, RAM and 64 MiB; gvisor: the overlay's 96M)
[ "$limit" -ge $((96 << 20)) ] || fail "no disk limit recorded: $limit"
btrfs qgroup show -re --raw "$SPACE_ROOT/store" | grep -q " $limit" || fail "no qgroup limit of $limit on the store"
free_before=$(df -B1 --output=avail "$SPACE_ROOT/store" | tail -1)
rc=0
# O_DIRECT writes (diskfill): buffered ones would cost the guest kernel seconds per MiB here.
space exec q -- sh -c 'diskfill /fill 120; sync' >"$TEST_ROOT/dd.out" 2>&1 || rc=$?
grep -q "No space left on device" "$TEST_ROOT/dd.out" || fail "the guest wrote past --disk-size: $(cat "$TEST_ROOT/dd.out")"
expect_status 0 space exec q -- df -k /
expect_status 0 space destroy q
# A deleted subvolume's space comes back when btrfs's cleaner has been through it: wait for that
# (it lags under load), then for df to say so.
btrfs subvolume sync "$SPACE_ROOT/store" >/dev/null 2>&1 || true
wait_until 30 sh -c "[ \$(df -B1 --output=avail '$SPACE_ROOT/store' | tail -1) -ge $((free_before - (8 << 20))) ]"
# [limits] disk_size in config.toml: a vm sandbox created without --disk-size gets that quota (its
# image disk keeps its own size); --disk-size overrides it. gvisor sandboxes without --disk-size
# keep their writes in memory (bounded by --memory), so the default is the vm engine's.
if [ "$ENGINE" = vm ]; then
  cp "$SPACE_ROOT/config.toml" "$TEST_ROOT/config.saved"
  printf '[limits]\ndisk_size = "128M"\n' >>"$SPACE_ROOT/config.toml"
  expect_status 0 space create --template base --image small dl
  limit=$(space state dl | json_field disk_limit_bytes)
  [ "$limit" -ge $((128 << 20)) ] || fail "[limits] disk_size: no limit recorded ($limit)"
  btrfs qgroup show -re --raw "$SPACE_ROOT/store" | grep -q " $limit" ||
    fail "[limits] disk_size: no qgroup limit of $limit on the store"
  blocks=$(space exec dl -- df -k / | awk 'NR == 2 {print $2}')
  [ "$blocks" -lt 80000 ] || fail "[limits] disk_size grew the image disk: / has $blocks KiB"
  expect_status 0 space create --template base --image small --disk-size 96M dl2
  [ "$(space state dl2 | json_field disk_limit_bytes)" -lt "$limit" ] ||
    fail "--disk-size 96M did not override [limits] disk_size"
  expect_status 0 space destroy dl dl2
  cp "$TEST_ROOT/config.saved" "$SPACE_ROOT/config.toml"
  expect_status 0 space create --template base dn
  [ "$(space state dn | json_field disk_limit_bytes)" = None ] || fail "a quota without [limits] disk_size"
  expect_status 0 space destroy dn
fi
echo "PASS"
