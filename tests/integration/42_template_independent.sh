# Scenario: sandboxes created from one template are independent. Both start from the same
# memory image, yet a file written to one's disk is absent from the other, a value kept in one's
# memory (tmpfs) is absent from the other, and they read different bytes from /dev/urandom (the
# host reseeds each guest's RNG on contact), while both map the template's memory file. One boot: the template build.
source "$(dirname "$0")/lib.sh"

expect_status 0 space template build base
for id in one two; do expect_status 0 space create --template base "$id"; done

# Both VMMs map the template's own memory file, so they share its page cache. (A gvisor
# template has no memory file: each sandbox starts afresh from its rootfs.)
if [ "$ENGINE" = vm ]; then
  for id in one two; do
    grep -q "/templates/base/memory" "/proc/$(pid_of $id)/maps" ||
      fail "sandbox $id does not map the template's memory file"
  done
fi

x() { timeout "$SPACE_TEST_TIMEOUT" "$SPACE_BIN" exec "$@"; }
x one -- sh -c 'echo disk-one > /root/marker && echo mem-one > /tmp/marker && sync'
[ "$(x one -- cat /root/marker)" = disk-one ] || fail "file not written in one"
x two -- test ! -e /root/marker || fail "a file written in sandbox one appeared in sandbox two"
x two -- test ! -e /tmp/marker || fail "memory (tmpfs) of sandbox one appeared in sandbox two"
[ "$(x one -- cat /tmp/marker)" = mem-one ] || fail "tmpfs value lost in one"

r1=$(x one -- od -An -tx1 -N16 /dev/urandom)
r2=$(x two -- od -An -tx1 -N16 /dev/urandom)
[ -n "$r1" ] && [ -n "$r2" ] || fail "could not read /dev/urandom"
[ "$r1" != "$r2" ] || fail "two sandboxes from one template read the same /dev/urandom bytes: $r1"

expect_status 0 space destroy one two
echo "PASS"
