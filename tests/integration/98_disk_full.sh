# Scenario: the store fills up. A store of 1 GiB (config.toml [store] size_gib), a sandbox keep1
# with a checkpoint, and a sandbox whose guest fills the store through its image disk (O_DIRECT
# writes, tests/programs/diskfill.cpp): the guest's writes fail in the guest once the store is
# full (an I/O error, as from a full disk) and its VMM keeps running. While the store is full,
# commands that need space (checkpoint, create, image import, cp into the store) exit 125 with
# an ENOSPC message, leave nothing half-made, and keep1 keeps running with its old checkpoint
# intact. Once the filler is destroyed, keep1 checkpoints and resumes with its data, and new
# sandboxes can be made. Restored from the shared test template.
source "$(dirname "$0")/lib.sh"
needs_vm "a guest filling the store through its image disk (a gvisor sandbox writes to runsc's overlay, bounded by --memory or --disk-size: 96_limits)"
printf '[store]\nsize_gib = 1\n' >>"$SPACE_ROOT/config.toml"
shared_template base
DISKFILL=$(dirname "$SPACE_BIN")/diskfill
[ -x "$DISKFILL" ] || fail "no $DISKFILL: build it first (ninja -C build diskfill)"
store_size=$(df -B1 --output=size "$SPACE_ROOT/store" | tail -1)
[ "$store_size" -le $((1100 << 20)) ] || fail "the store is $store_size bytes, not 1 GiB"
avail() { df -B1 --output=avail "$SPACE_ROOT/store" | tail -1; }

# no_space WHAT: the last command failed as a full store should: 125 and ENOSPC's message.
no_space() {
  assert_contains "$ERR" "space: error:" "$1 on a full store"
  assert_contains "$ERR" "No space left on device" "$1 on a full store"
}

mkdir -p "$TEST_ROOT/img/bin"
cp "$(command -v busybox)" "$TEST_ROOT/img/bin/busybox"
for a in sh cat chmod rm sync echo; do ln -s busybox "$TEST_ROOT/img/bin/$a"; done
tar -C "$TEST_ROOT/img" -cf "$TEST_ROOT/img.tar" .
expect_status 0 space image import --size 64M tiny "$TEST_ROOT/img.tar"

expect_status 0 space create --template base keep1
expect_status 0 space exec keep1 -- sh -c 'echo first > /root/mark; echo mem-first > /tmp/mem; sync'
expect_status 0 space checkpoint keep1
expect_status 0 space resume keep1
expect_status 0 space exec keep1 -- sh -c 'echo mem-second > /tmp/mem'

# Fill the store from a guest. The host takes all but 48 MiB first (a guest writes about 5 MiB/s
# on a PVM host, whose guest kernel is interpreted), then the guest writes until it fails.
expect_status 0 space create --template base --image tiny --disk-size 2G filler
expect_status 0 space exec -i filler -- sh -c 'cat > /diskfill && chmod 755 /diskfill' <"$DISKFILL"
n=0
while [ "$(avail)" -gt $((64 << 20)) ] && fallocate -l 16M "$SPACE_ROOT/store/pad0.$n" 2>/dev/null; do
  n=$((n + 1))
  [ $((n % 8)) != 0 ] || sync
done
sync
rc=0
space exec filler -- /diskfill /fill 2000 >"$TEST_ROOT/fill.out" 2>&1 || rc=$?
echo "the guest's fill: $(cat "$TEST_ROOT/fill.out") (exit $rc); store free: $(($(avail) >> 20)) MiB"
[ $rc = 1 ] || fail "the guest's fill of a 1 GiB store exited $rc: $(cat "$TEST_ROOT/fill.out")"
grep -q "Input/output error\|No space left on device" "$TEST_ROOT/fill.out" ||
  fail "the guest's fill did not end with a write error: $(cat "$TEST_ROOT/fill.out")"
[ "$(status_of filler)" = running ] || fail "the filler's VMM did not survive its full disk"
expect_status 0 space exec filler -- echo alive
# A store that is full for data may still have metadata room: top it up from the host, so that
# everything below meets a store with no room at all.
fallocate -l "$(avail)" "$SPACE_ROOT/store/pad" 2>/dev/null || true
dd if=/dev/zero of="$SPACE_ROOT/store/pad2" bs=1M 2>/dev/null || true
sync

# Commands that need space fail clearly, and leave nothing.
expect_status 125 space checkpoint keep1
no_space "checkpoint"
[ "$(status_of keep1)" = running ] || fail "a failed checkpoint left keep1 $(status_of keep1)"
[ ! -e "$SPACE_ROOT/store/sandboxes/keep1/checkpoint.tmp" ] || fail "a failed checkpoint left checkpoint.tmp"
expect_status 0 space exec keep1 -- cat /tmp/mem
[ "$OUT" = mem-second ] || fail "keep1's memory after the failed checkpoint: '$OUT'"
rc=0
"$SPACE_BIN" image import --size 64M tiny2 "$TEST_ROOT/img.tar" >/dev/null 2>"$TEST_ROOT/stderr" || rc=$?
ERR=$(cat "$TEST_ROOT/stderr")
[ $rc = 125 ] || fail "image import on a full store exited $rc: $ERR"
no_space "image import"
[ -z "$(ls -A "$SPACE_ROOT/store/images" | grep -v '^tiny$')" ] || fail "a failed import left: $(ls -A "$SPACE_ROOT/store/images")"
rc=0
"$SPACE_BIN" create --template base new1 >/dev/null 2>"$TEST_ROOT/stderr" || rc=$?
ERR=$(cat "$TEST_ROOT/stderr")
if [ $rc = 0 ]; then
  echo "create on a full store: succeeded (reflinks need no data space)"
  expect_status 0 space destroy new1
else
  [ $rc = 125 ] || fail "create on a full store exited $rc: $ERR"
  no_space "create"
  assert_gone new1 0
fi

# Free the space: the sandboxes that existed work again.
rm -f "$SPACE_ROOT"/store/pad*
expect_status 0 space destroy filler
btrfs filesystem sync "$SPACE_ROOT/store" >/dev/null
free_above() { [ "$(avail)" -gt "$1" ]; }
wait_until 60 free_above $((300 << 20))
expect_status 0 space exec keep1 -- sh -c 'echo second > /root/mark; sync'
expect_status 0 space checkpoint keep1
expect_status 0 space resume keep1
expect_status 0 space exec keep1 -- cat /root/mark /tmp/mem
[ "$OUT" = "second
mem-second" ] || fail "keep1 after the store was freed: '$OUT'"
expect_status 0 space create --template base new2
expect_status 0 space exec new2 -- echo fresh
expect_status 0 space destroy new2
expect_status 0 space destroy keep1
echo "PASS"
