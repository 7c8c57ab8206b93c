# Scenario: the store and templates. The test root is under /tmp (ext4 here), so the first
# command that needs the store makes the loopback image and mounts it. One template build (the
# only boot of this file), then five creates that restore from it, each answering hello; the
# default template from config.toml; destroy deletes each sandbox's subvolume; template list and
# inspect and rm; export and import (a copy under another name that a sandbox restores from;
# refusals of an existing name or directory, a corrupt vmstate and a symlinked file, leaving
# nothing behind); and lib.sh's cleanup checks that no mount or loop device is left.
source "$(dirname "$0")/lib.sh"
needs_vm "template build boots a VM and snapshots its memory"

store=$SPACE_ROOT/store
loopback=1
if [ "$(stat -f -c %T "$SPACE_ROOT")" = btrfs ]; then loopback=0; fi
# json_field PATH: the value at PATH (dot-separated keys and list indexes) of the JSON on stdin.
json_field() { python3 -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v=v[int(k)] if isinstance(v, list) else v[k]
print(v)' "$1"; }

[ "$(space check --format json | json_field store.kind)" = "$([ $loopback = 1 ] && echo loopback || echo btrfs-root)" ] \
  || fail "space check names the wrong store kind: $(space check --format json)"
[ "$(space check --format json | json_field store.ready)" = False ] || fail "store ready before first use"
[ -z "$(space template list --format json | json_field 0 2>/dev/null)" ] || fail "templates before any build"
[ ! -e "$store" ] || [ -z "$(ls -A "$store")" ] || fail "list/check made the store"

# Errors that need no boot: a missing named template, bad names.
expect_status 125 space create --template nope x1
assert_contains "$ERR" "template nope does not exist" "missing template"
assert_contains "$ERR" "space template build nope" "missing template hint"
expect_status 125 space template build "Bad/Name"
expect_status 125 space create --template base --cold x2
expect_status 125 space template rm nope
expect_status 125 space template inspect nope
assert_contains "$ERR" "template nope does not exist" "inspect of a missing template"
[ -z "$(ls "$store/sandboxes" 2>/dev/null)" ] || fail "a failed create left a sandbox"

# The one boot.
expect_status 0 space --log-level info template build base
[ "$OUT" = base ] || fail "template build printed '$OUT'"
assert_contains "$ERR" "template: booting" "build progress"
# Before the snapshot: the guest's writes flushed (a shell ran in it) and the guest idle.
assert_contains "$ERR" "template: flushing the guest's writes (sh -c sync)" "build progress"
assert_contains "$ERR" "the guest went idle after" "the wait for an idle guest"
case $ERR in *"sh -c sync failed"*) fail "the flush before the snapshot failed: $ERR" ;; esac
assert_contains "$ERR" "template: snapshotting" "build progress"
if [ $loopback = 1 ]; then
  [ -f "$SPACE_ROOT/store.img" ] || fail "no store.img"
  [ "$(findmnt -n -o FSTYPE --target "$store")" = btrfs ] || fail "$store is not a btrfs mount"
  [ "$(findmnt -n -o TARGET --target "$store")" = "$store" ] || fail "$store is not a mount point"
  [ -n "$(losetup -j "$SPACE_ROOT/store.img")" ] || fail "no loop device on store.img"
  [ "$(space check --format json | json_field store.mounted)" = True ] || fail "check: not mounted"
fi
btrfs subvolume list -o "$store" | grep -q "templates/base$" || fail "templates/base is not a subvolume"
for f in rootfs.ext4 memory vmstate template.toml; do [ -f "$store/templates/base/$f" ] || fail "template lacks $f"; done
for f in config.json console.log vmm.log; do [ ! -e "$store/templates/base/$f" ] || fail "template keeps $f"; done
[ -z "$(ls -A "$store/templates" | grep '^\.')" ] || fail "build directory left: $(ls -A "$store/templates")"
list=$(space template list)
assert_contains "$list" "base" "template list"
[ "$(space template list --format json | json_field 0.memory_mib)" = 256 ] || fail "template list json"
# inspect reads template.toml (written by toml++) back: what install.sh relies on.
inspect=$(space template inspect --format json base)
[ "$(echo "$inspect" | json_field restorable)" = True ] || fail "inspect: not restorable: $inspect"
[ "$(echo "$inspect" | json_field name)" = base ] || fail "inspect: wrong name: $inspect"
[ -f "$(echo "$inspect" | json_field kernel)" ] || fail "inspect: kernel is not a file: $inspect"
assert_contains "$(space template inspect base)" "restorable:      yes" "inspect text"
expect_status 125 space template build base
assert_contains "$ERR" "already exists" "second build without --force"

# export, then import under another name.
exp=$TEST_ROOT/exported
expect_status 0 space template export base "$exp"
for f in template.toml rootfs.ext4 memory vmstate; do [ -f "$exp/$f" ] || fail "export lacks $f"; done
[ -z "$(ls -A "$TEST_ROOT" | grep 'exported\.tmp-')" ] || fail "export left its temporary directory"
expect_status 125 space template export base "$exp"
assert_contains "$ERR" "already exists" "export into an existing directory"
expect_status 125 space template export nope "$TEST_ROOT/exp2"
[ ! -e "$TEST_ROOT/exp2" ] || fail "a failed export left its directory"
expect_status 0 space template import copy "$exp"
[ "$OUT" = copy ] || fail "import printed '$OUT'"
[ "$(space template inspect --format json copy | json_field name)" = copy ] || fail "imported template keeps the old name"
[ "$(space template inspect --format json copy | json_field restorable)" = True ] || fail "imported template not restorable"
expect_status 125 space template import copy "$exp"
assert_contains "$ERR" "already exists" "import over an existing name"
expect_status 0 space template import --force copy "$exp"
# Refused before anything is installed: a corrupt vmstate, a file that is a symlink.
bad=$TEST_ROOT/bad
cp -r --sparse=always "$exp" "$bad"
printf 'garbage' | dd of="$bad/vmstate" bs=1 seek=40 conv=notrunc status=none
expect_status 125 space template import broken "$bad"
assert_contains "$ERR" "vmstate" "import of a corrupt vmstate"
rm "$bad/vmstate" && cp "$exp/vmstate" "$bad/vmstate"
mv "$bad/memory" "$TEST_ROOT/memory.real" && ln -s "$TEST_ROOT/memory.real" "$bad/memory"
expect_status 125 space template import broken "$bad"
assert_contains "$ERR" "not a regular file" "import of a symlinked memory file"
space template inspect broken >/dev/null 2>&1 && fail "a refused import registered a template"
[ -z "$(ls -A "$store/templates" | grep '^\.')" ] || fail "import left a build directory: $(ls -A "$store/templates")"

# Five creates from it, all restores (no guest round trip), all answering.
for i in 1 2 3 4 5; do
  t0=$(date +%s%N)
  expect_status 0 space --log-level debug create --template base "t$i"
  t1=$(date +%s%N)
  echo "create t$i: $(((t1 - t0) / 1000000)) ms; $(echo "$ERR" | grep -o 'create t[0-9]*: .*')"
  [ "$OUT" = "t$i" ] || fail "create printed '$OUT'"
  case "$ERR" in *cold-booting*) fail "create t$i cold-booted" ;; esac
done
for i in 1 2 3 4 5; do
  [ "$(status_of "t$i")" = running ] || fail "t$i not running"
  [ "$(space state "t$i" | json_field template)" = base ] || fail "t$i: state.json lacks the template"
  hello=$(timeout "$SPACE_TEST_TIMEOUT" python3 "$SRC/tests/integration/agent.py" "$SPACE_RUN_DIR/t$i/vsock.sock" hello) \
    || fail "t$i does not answer hello"
  assert_contains "$hello" "agent=guest-init" "hello from t$i"
  btrfs subvolume list -o "$store/sandboxes" | grep -q "sandboxes/t$i$" || fail "t$i is not a subvolume"
done

# The default template comes from config.toml: a plain create restores it.
echo 'template = "base"' >>"$SPACE_ROOT/config.toml"  # appended to the [defaults] table
expect_status 0 space create t6
case "$ERR" in *cold-booting*) fail "create t6 cold-booted" ;; esac
[ "$(space state t6 | json_field template)" = base ] || fail "t6 not made from the default template"

# A sandbox restores from the imported copy.
expect_status 0 space create --template copy t7
timeout "$SPACE_TEST_TIMEOUT" python3 "$SRC/tests/integration/agent.py" "$SPACE_RUN_DIR/t7/vsock.sock" hello >/dev/null \
  || fail "a sandbox made from the imported template does not answer"
expect_status 0 space destroy t7
expect_status 0 space template rm copy

# destroy deletes the subvolumes; rm deletes the template; sandboxes do not depend on it.
expect_status 0 space template rm base
[ ! -e "$store/templates/base" ] || fail "template rm left the directory"
timeout "$SPACE_TEST_TIMEOUT" python3 "$SRC/tests/integration/agent.py" "$SPACE_RUN_DIR/t6/vsock.sock" hello >/dev/null \
  || fail "t6 stopped answering after its template was removed"
for i in 1 2 3 4 5 6; do
  pid=$(pid_of "t$i")
  expect_status 0 space destroy "t$i"
  assert_gone "t$i" "$pid"
done
[ -z "$(btrfs subvolume list -o "$store/sandboxes")" ] || fail "subvolumes left: $(btrfs subvolume list -o "$store/sandboxes")"
[ -z "$(space template list --format json | json_field 0 2>/dev/null)" ] || fail "template list not empty"
echo "PASS"
