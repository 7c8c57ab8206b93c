# Scenario: bad input gives exit 125 and a clear message, and changes nothing: unknown ids,
# invalid ids, a missing kernel, a duplicate id, nonsense flags. Also: every user command has
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
expect_status 125 space create --memory lots k2
expect_status 125 space create --cpus 0 k3
expect_status 125 space frobnicate
[ -z "$(ls "$SPACE_ROOT/store/sandboxes" 2>/dev/null)" ] || fail "a failed create left a sandbox: $(ls "$SPACE_ROOT/store/sandboxes")"
[ -z "$(ls "$SPACE_RUN_DIR" 2>/dev/null)" ] || fail "a failed create left a socket directory"
[ -z "$(vmm_pids)" ] || fail "a failed create left a VMM"
echo "PASS"
