# Scenario: `image build --debian`, no VM needed. A bookworm image with an interpreter, a
# compiler and git (debian_image: built by `space image build` on a cache miss, imported from the
# cached tarball of an earlier build otherwise) holds /usr/bin/python3, git, gcc and make and an
# /etc/passwd with root, as debugfs reads its disk; the build's image.json says kind debian.
# Failures exit 125 naming the cause, register nothing and leave no staging directory, no
# mmdebstrap process and no mount: an unknown package (apt's message surfaced), an unknown suite,
# an unreachable mirror (a closed port on 127.0.0.1), a package name that is an option, and a
# build stopped by SIGTERM while mmdebstrap runs. A build whose space process is SIGKILLed leaves
# no mmdebstrap running, and its staging directory goes with the next import.
source "$(dirname "$0")/lib.sh"

images=$SPACE_ROOT/store/images
f() { image_cat "$@"; }
st() { image_stat "$@"; }

# no_mmdebstrap: no mmdebstrap runs for this root (the [m] keeps pgrep from matching a shell
# whose command line holds the pattern).
no_mmdebstrap() { ! pgrep -f "[m]mdebstrap .*$SPACE_ROOT/" >/dev/null; }

# nothing_left: no build directory, no mmdebstrap of this root, no mount under the test's root
# but the store.
nothing_left() {
  [ -z "$(ls -A "$images" | grep '^\.')" ] || fail "a failed build left $(ls -A "$images")"
  no_mmdebstrap || fail "mmdebstrap left running: $(pgrep -af '[m]mdebstrap')"
  [ -z "$(findmnt -rn -o TARGET | grep "^$TEST_ROOT/" | grep -v "^$SPACE_ROOT/store$" || true)" ] \
    || fail "mounts left: $(findmnt -rn -o TARGET | grep "^$TEST_ROOT/")"
}

# refused NAME NEEDLE BUILD-FLAGS...: the build fails with exit 125 naming NEEDLE, leaving nothing.
refused() {
  local name=$1 needle=$2
  shift 2
  expect_status 125 space image build "$name" "$@"
  assert_contains "$ERR" "$needle" "build $name $*"
  space image inspect "$name" >/dev/null 2>&1 && fail "a failed build registered $name"
  nothing_left
}

# --- the image, and what is in it
debian_image deb
echo "debian image: built=$DEBIAN_IMAGE_BUILT cache=$DEBIAN_IMAGE_CACHED" >&2
for p in /usr/bin/python3 /usr/bin/git /usr/bin/gcc /usr/bin/make /bin/bash /usr/bin/apt-get; do
  assert_contains "$(st deb "$p")" "Inode:" "$p in the Debian image"
done
assert_contains "$(st deb /usr/bin/python3)" "Type: symlink" "/usr/bin/python3 (a link to python3.11)"
assert_contains "$(st deb /usr/bin/python3.11)" "Type: regular" "/usr/bin/python3.11"
assert_contains "$(st deb /usr/lib/python3.11/venv/__init__.py)" "Type: regular" "python3-venv"
assert_contains "$(st deb /usr/include/stdio.h)" "Type: regular" "libc6-dev"
f deb /etc/passwd | grep -q '^root:x:0:0:' || fail "/etc/passwd has no root: $(f deb /etc/passwd)"
e2fsck -fn "$images/deb/disk.ext4" >/dev/null 2>&1 || fail "the Debian image's disk does not pass e2fsck"
used=$(stat -c %b "$images/deb/disk.ext4")
echo "debian image: disk $(stat -c %s "$images/deb/disk.ext4") bytes, $((used / 2048)) MiB allocated" >&2
inspect=$(space image inspect --format json deb)
if [ "$DEBIAN_IMAGE_BUILT" = 1 ]; then
  built=$inspect
  [ "$(echo "$inspect" | json_field source)" = debian:bookworm ] || fail "source: $inspect"
  [ -f "$images/deb/mmdebstrap.log" ] || fail "the build's mmdebstrap.log is not in the image"
else
  built=$(cat "${DEBIAN_IMAGE_CACHED%.tar}.json")  # what `space image build` wrote for the cache
  [ "$(echo "$inspect" | json_field kind)" = tarball ] || fail "import of the cached tarball: $inspect"
fi
[ "$(echo "$built" | json_field kind)" = debian ] || fail "kind: $built"
[ "$(echo "$built" | json_field platform)" = linux/amd64 ] || fail "platform: $built"
[ "$(echo "$built" | json_field config.cmd.0)" = /bin/bash ] || fail "cmd: $built"
[ "$(echo "$built" | json_field config.env.0)" = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" ] \
  || fail "env: $built"

# --- failures
refused bad-name "invalid package '--allow-unauthenticated'" --debian bookworm --packages git,--allow-unauthenticated
refused bad-suite-name "invalid suite" --debian ../etc
refused bad-mirror "the mirror cannot be reached" --debian bookworm --mirror http://127.0.0.1:9/debian
assert_contains "$ERR" "Could not connect to 127.0.0.1:9" "mmdebstrap's own message"
refused bad-suite "suite 'nosuchsuite' is not on http://deb.debian.org/debian" --debian nosuchsuite
assert_contains "$ERR" "hint: name a suite" "the unknown suite's hint"
refused bad-pkg "package no-such-package-space-test not found in bookworm" --debian bookworm --packages git,no-such-package-space-test
assert_contains "$ERR" "E: Unable to locate package no-such-package-space-test" "apt's message"
assert_contains "$ERR" "hint: check the names" "the unknown package's hint"

# --- stopped while mmdebstrap runs (SIGTERM: a background job of a script ignores SIGINT)
"$SPACE_BIN" image build stopped --debian bookworm --packages git >"$TEST_ROOT/stop.out" 2>"$TEST_ROOT/stop.err" &
pid=$!
wait_until 120 grep -q "resolving packages" "$TEST_ROOT/stop.err"
no_mmdebstrap && fail "no mmdebstrap running: $(cat "$TEST_ROOT/stop.err")"
kill -TERM $pid
rc=0
wait $pid || rc=$?
[ $rc -eq 125 ] || fail "the stopped build exited $rc: $(cat "$TEST_ROOT/stop.err")"
assert_contains "$(cat "$TEST_ROOT/stop.err")" "interrupted by SIGTERM" "the stopped build"
space image inspect stopped >/dev/null 2>&1 && fail "a stopped build registered its image"
nothing_left

# --- space itself killed (SIGKILL): mmdebstrap dies with it (its init has PR_SET_PDEATHSIG), and
# the next build or import deletes the staging directory it left, nested subvolume and all.
"$SPACE_BIN" image build killed --debian bookworm --packages git >/dev/null 2>"$TEST_ROOT/kill.err" &
pid=$!
wait_until 120 grep -q "resolving packages" "$TEST_ROOT/kill.err"
kill -KILL $pid
wait $pid || true
wait_until 30 no_mmdebstrap
ls -A "$images" | grep -q '^\.killed\.tmp-' || fail "the killed build left no staging directory"
mkdir -p "$TEST_ROOT/tiny/etc"
echo tiny >"$TEST_ROOT/tiny/etc/hostname"
tar -C "$TEST_ROOT/tiny" -cf "$TEST_ROOT/tiny.tar" .
expect_status 0 space image import tiny "$TEST_ROOT/tiny.tar" --size 64M
nothing_left
space image inspect killed >/dev/null 2>&1 && fail "a killed build registered its image"

expect_status 0 space image rm deb tiny
[ -z "$(ls -A "$images")" ] || fail "image rm left: $(ls -A "$images")"
echo "PASS"
