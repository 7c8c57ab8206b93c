# Scenario: the life of a secret in one sandbox (restored from the shared test template: no boot). A sandbox created
# with --secret fetches the value both ways (space-secret in the guest, exec --secret-env; the
# guest prints only its SHA-256, compared with the host's: a value printed to stdout would be
# relayed by guest-init like any output, and this test is about space's own copies); an
# ungranted name is denied; a uses=1 grant is used up; a ttl=2s grant expires; a revoked grant is
# denied; checkpoint revokes every grant (denied after resume); the audit log records every
# outcome and never the value; after all that the value is in no file under the run directory
# or the socket directory (checkpoint, disks, store image, logs, state); after destroy nothing
# can fetch, and a new sandbox with the same id inherits nothing. create --secret of a missing
# secret fails and leaves no sandbox.
source "$(dirname "$0")/lib.sh"
export SPACE_CREDD_IDLE_SECONDS=120
CRED=$SPACE_ROOT.cred

VALUE=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')  # 40 hex characters
[ ${#VALUE} -eq 40 ] || fail "could not make a random value"
OTHER_VALUE=$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n')

shared_template base

# A grant of a secret that does not exist fails the create, and the sandbox is gone again.
expect_status 125 space create --template base --secret TOKEN s0
assert_contains "$ERR" "no secret named TOKEN" "create --secret of a missing secret"
[ ! -e "$SPACE_ROOT/store/sandboxes/s0" ] || fail "create --secret left sandbox s0 behind"

printf '%s' "$VALUE" | space secret set TOKEN || fail "secret set TOKEN"
for n in ONCE SHORT OTHER; do printf '%s' "$OTHER_VALUE" | space secret set $n || fail "secret set $n"; done
expect_status 0 space secret list
assert_contains "$OUT" "TOKEN" "secret list"
case "$OUT" in *"$VALUE"*) fail "secret list shows the value" ;; esac
[ "$(stat -c %a "$CRED/secrets.json")" = 600 ] || fail "secrets.json is not mode 0600"
[ "$(stat -c %a "$CRED")" = 700 ] || fail "the credential directory is not mode 0700"

expect_status 0 space create --template base --secret TOKEN s1

# Both ways of fetching; the exact bytes (no newline added) by their hash.
WANT=$(printf '%s' "$VALUE" | sha256sum | cut -d' ' -f1)
expect_status 0 space exec s1 -- sh -c 'space-secret TOKEN | sha256sum'
[ "${OUT%% *}" = "$WANT" ] || fail "space-secret TOKEN: hash '$OUT', want $WANT"
expect_status 0 space exec --secret-env MY_TOKEN=TOKEN s1 -- sh -c 'printf %s "$MY_TOKEN" | sha256sum'
[ "${OUT%% *}" = "$WANT" ] || fail "--secret-env: hash '$OUT', want $WANT"
expect_status 0 space exec --secret-env MY_TOKEN=TOKEN s1 -- sh -c 'test "${#MY_TOKEN}" = 40'

# Not granted: denied with the helper's reason, both ways.
expect_status 1 space exec s1 -- space-secret OTHER
assert_contains "$ERR" "space-secret: OTHER: not granted to this sandbox" "ungranted space-secret"
expect_status 125 space exec --secret-env X=OTHER s1 -- true
assert_contains "$ERR" "OTHER: not granted to this sandbox" "ungranted --secret-env"

# uses=1: one fetch, then used up.
expect_status 0 space grant s1 ONCE:uses=1
expect_status 0 space exec s1 -- sh -c 'space-secret ONCE >/dev/null'
expect_status 1 space exec s1 -- space-secret ONCE
assert_contains "$ERR" "used up" "second fetch of a uses=1 grant"

# ttl=8s: fetched at once (two fork+execs in the guest, seconds on a busy PVM host), expired
# after the ttl has passed.
granted=$SECONDS
expect_status 0 space grant s1 SHORT:ttl=8s
expect_status 0 space exec s1 -- sh -c 'space-secret SHORT >/dev/null'
while [ $((SECONDS - granted)) -lt 10 ]; do sleep 0.5; done
expect_status 1 space exec s1 -- space-secret SHORT
assert_contains "$ERR" "expired" "fetch after the ttl"

# Revoke.
expect_status 0 space grant s1 OTHER
expect_status 0 space exec s1 -- sh -c 'space-secret OTHER >/dev/null'
expect_status 0 space revoke s1 OTHER
expect_status 1 space exec s1 -- space-secret OTHER
assert_contains "$ERR" "not granted" "fetch after revoke"

# Checkpoint revokes every grant; after resume the sandbox can fetch nothing.
expect_status 0 space checkpoint s1
expect_status 0 space resume s1
expect_status 1 space exec s1 -- space-secret TOKEN
assert_contains "$ERR" "not granted" "fetch after checkpoint and resume"

# The audit log: every kind of outcome, and no value.
expect_status 0 space secret audit --format json
for outcome in set granted fetched denied expired revoked; do
  assert_contains "$OUT" "\"outcome\": \"$outcome\"" "audit log"
done
assert_contains "$OUT" "checkpoint" "audit of the checkpoint's revocation"
! grep -a -F -q "$VALUE" "$CRED/audit.log" || fail "the value is in the audit log"
[ "$(stat -c %a "$CRED/audit.log")" = 600 ] || fail "audit.log is not mode 0600"

# No file under the run directory or the socket directory holds the value: disks, the
# checkpoint (guest memory), the store image, logs, state. The grep reads the files themselves,
# including the loop-mounted store's image and everything in the mounted store.
sync
# -z: records end at NUL bytes, so the zeros of a sparse image bound what grep holds at once
# (without it a disk image is one enormous "line", and grep took 24 GiB of RAM for it here).
found=$(grep -r -a -z -F -l "$VALUE" "$SPACE_ROOT" "$SPACE_RUN_DIR" 2>/dev/null || true)
[ -z "$found" ] || fail "the secret's bytes are in: $found"
if [ "$ENGINE" = vm ]; then
  ls "$SPACE_ROOT/store/sandboxes/s1/checkpoint/memory" >/dev/null || fail "no checkpoint memory to search"
else  # runsc's image, uncompressed: the guest's memory as it was
  ls "$SPACE_ROOT/store/sandboxes/s1/checkpoint/checkpoint.img" >/dev/null || fail "no checkpoint image to search"
fi

# Destroy: the grants go with the sandbox and its socket closes; a new s1 inherits nothing.
expect_status 0 space grant s1 TOKEN
expect_status 0 space destroy s1
[ ! -e "$SPACE_RUN_DIR/s1/cred.sock" ] || fail "the helper still listens for the destroyed sandbox"
expect_status 0 space secret grants --format json
case "$OUT" in *'"s1"'*) fail "grants of the destroyed sandbox remain: $OUT" ;; esac
# One sandbox's grants, of a destroyed sandbox or an invalid id: an error, not an empty table.
expect_status 125 space secret grants s1
assert_contains "$ERR" "sandbox s1 does not exist" "grants of a destroyed sandbox"
expect_status 125 space secret grants BAD/id
assert_contains "$ERR" "invalid sandbox id" "grants of an invalid id"
expect_status 0 space create --template base s1
expect_status 2 space exec s1 -- space-secret TOKEN
assert_contains "$ERR" "credential helper refused the connection" "fetch by a new sandbox of the same id"
expect_status 0 space destroy s1
echo "PASS"
