# Scenario: damaged templates. Writable copies of a good template (btrfs snapshots) get a vmstate
# with flipped bytes, a truncated memory file, and a garbled template.toml; creating a sandbox
# from each fails with a clear message and exit 125, and leaves no sandbox, socket directory or
# VMM behind. The good template still restores afterwards. One boot: the template build.
source "$(dirname "$0")/lib.sh"
needs_vm "damaged vmstate and memory files"

store=$SPACE_ROOT/store
expect_status 0 space template build good

# bad_copy NAME: a writable copy of the good template, renamed in its template.toml.
bad_copy() {
  btrfs -q subvolume snapshot "$store/templates/good" "$store/templates/$1"
  sed -i "s/^name = \"good\"$/name = \"$1\"/" "$store/templates/$1/template.toml"
}
# expect_clean_failure NAME WHAT: create from template NAME fails with WHAT and leaves nothing.
expect_clean_failure() {
  expect_status 125 space create --template "$1" "from-$1"
  assert_contains "$ERR" "space: error: create sandbox from-$1" "create from $1"
  assert_contains "$ERR" "$2" "create from $1"
  assert_contains "$ERR" "space template build --force $1" "create from $1: hint"
  [ ! -e "$store/sandboxes/from-$1" ] || fail "create from $1 left its sandbox"
  [ ! -e "$SPACE_RUN_DIR/from-$1" ] || fail "create from $1 left its socket directory"
  [ -z "$(vmm_pids)" ] || fail "create from $1 left a VMM: $(vmm_pids)"
}

bad_copy flipped
size=$(stat -c %s "$store/templates/flipped/vmstate")
printf '\xde\xad\xbe\xef' | dd of="$store/templates/flipped/vmstate" bs=1 seek=$((size / 2)) conv=notrunc status=none
expect_clean_failure flipped "vmstate"

bad_copy short
truncate -s 1M "$store/templates/short/memory"
expect_clean_failure short "memory"

bad_copy garbled
echo 'vcpus = "many"' >>"$store/templates/garbled/template.toml"
expect_clean_failure garbled "template.toml"
assert_contains "$ERR" "space template build --force" "garbled template.toml hint"

expect_status 0 space create --template good ok
python3 "$SRC/tests/integration/agent.py" "$SPACE_RUN_DIR/ok/vsock.sock" hello >/dev/null || fail "the good template does not restore"
expect_status 0 space destroy ok
echo "PASS"
