# Scenario: bad input gives exit 125 and a clear message, and changes nothing: unknown ids,
# invalid ids, a missing kernel, an unknown or unusable engine, a duplicate id, nonsense flags. Also: every user command has
# --help and a man page, the internal ones (__vmm, __gvisor, __credd, __egress) stay out of --help, and --version
# prints the version of CMakeLists.txt.
source "$(dirname "$0")/lib.sh"

expect_status 0 space --version
ver=$(sed -nE 's/^project\(space VERSION ([0-9.]+).*/\1/p' "$SRC/CMakeLists.txt")
[ "$OUT" = "space $ver (agent protocol 3)" ] || fail "space --version printed '$OUT', want 'space $ver (agent protocol 3)'"
expect_status 0 space --help
help=$OUT
for c in create destroy list state check exec run template pause resume checkpoint branch \
  secret grant revoke cp image net forward completion; do
  grep -qE "^  $c[ ,]" <<<"$help" || fail "space --help does not list $c"
  expect_status 0 space "$c" --help
  [ -f "$SRC/man/space-$c.1" ] || fail "no man page man/space-$c.1"
done
case "$help" in *__vmm* | *__gvisor* | *__credd* | *__egress*) fail "space --help shows an internal command: $help" ;; esac

expect_status 125 space destroy nosuch
assert_contains "$ERR" "nosuch" "destroy of an unknown id names it"
expect_status 125 space state nosuch
assert_contains "$ERR" "space: error:" "error prefix"
expect_status 125 space create "Bad/Id"
assert_contains "$ERR" "invalid" "invalid id"
if [ "$ENGINE" = vm ]; then
  expect_status 125 space create --kernel /nonexistent/vmlinux k1
  assert_contains "$ERR" "/nonexistent/vmlinux" "missing kernel named"
  assert_contains "$ERR" "hint:" "missing kernel has a hint"
else  # gVisor is its own kernel: --kernel is refused, saying so
  expect_status 125 space create --kernel /nonexistent/vmlinux k1
  assert_contains "$ERR" "gVisor is its own kernel" "--kernel on gvisor"
fi
# Engines: an unknown name, from the flag or the environment, and a chosen engine that cannot run
# here fail closed (exit 125, the hint naming the other), leaving nothing.
expect_status 125 space create --engine qemu e1
assert_contains "$ERR" "qemu not in" "--engine with an unknown engine"
expect_status 125 env SPACE_ENGINE=qemu "$SPACE_BIN" create e2
assert_contains "$ERR" 'SPACE_ENGINE names engine "qemu"' "SPACE_ENGINE with an unknown engine"
if [ ! -e /dev/kvm ]; then
  expect_status 125 space create --engine vm e3
  assert_contains "$ERR" "cannot run on this host" "--engine vm without /dev/kvm"
  assert_contains "$ERR" "--engine gvisor" "the hint names the other engine"
fi
if ! runsc_usable; then
  expect_status 125 space create --engine gvisor e4
  assert_contains "$ERR" "--engine vm" "the hint names the other engine"
fi
for e in e1 e2 e3 e4; do [ ! -e "$SPACE_ROOT/store/sandboxes/$e" ] || fail "a refused create left $e"; done
[ -z "$(jail_pids)$(runsc_pids)" ] || fail "a refused create left processes: $(jail_pids) $(runsc_pids)"
expect_status 125 space create --memory lots k2
expect_status 125 space create --cpus 0 k3
expect_status 125 space frobnicate
[ -z "$(ls "$SPACE_ROOT/store/sandboxes" 2>/dev/null)" ] || fail "a failed create left a sandbox: $(ls "$SPACE_ROOT/store/sandboxes")"
[ -z "$(ls "$SPACE_RUN_DIR" 2>/dev/null)" ] || fail "a failed create left a socket directory"
[ -z "$(vmm_pids)" ] || fail "a failed create left a VMM"
echo "PASS"
