# Scenario: two sandboxes, A and B, each granted its own secret (restored from the shared test template: no boot).
# A cannot get B's secret: not by asking for it, nor by forged requests written raw on its own
# vsock connection (another sandbox's id appended, a bad name, a frame of another type). A host
# process that is not B's VMM, connecting to B's helper socket, is refused. Every refusal is in
# the audit log. A stopped (SIGSTOP) helper gives the guest a clear timeout error naming the
# credential helper; once it is killed (SIGKILL), the next exec starts a new helper (a jailed
# VMM cannot) and its request succeeds, and so does the next operator command. Branches: without --keep-secrets a branch of
# B can fetch nothing; with it, it has B's grants (and counts its own uses). `space run
# --secret --secret-env` hands a value to its one command.
source "$(dirname "$0")/lib.sh"
export SPACE_CREDD_IDLE_SECONDS=120
CRED=$SPACE_ROOT.cred

shared_template base
printf 'value-of-a' | space secret set SA || fail "secret set SA"
printf 'value-of-b' | space secret set SB || fail "secret set SB"
expect_status 0 space create --template base --secret SA a
expect_status 0 space create --template base --secret SB b

expect_status 0 space exec b -- space-secret SB
[ "$OUT" = value-of-b ] || fail "B's own secret: '$OUT'"
expect_status 1 space exec a -- space-secret SB
assert_contains "$ERR" "SB: not granted to this sandbox" "A asking for B's secret"

# Forged requests on A's own connection (space-secret --raw sends stdin verbatim).
frame() {  # frame TYPE PAYLOAD-PYTHON-EXPR > file
  python3 -c "import struct,sys
def s(b): return struct.pack('<I', len(b)) + b
p = $2
sys.stdout.buffer.write(struct.pack('<IHH', len(p), $1, 0) + p)"
}
frame 20 "s(b'SB')" >"$TEST_ROOT/plain"
frame 20 "s(b'SB') + s(b'b')" >"$TEST_ROOT/with-id"
frame 20 "s(b'../b/cred.sock')" >"$TEST_ROOT/bad-name"
frame 1 "b'x' * 16" >"$TEST_ROOT/other-type"
raw() { space exec -i a -- space-secret --raw <"$TEST_ROOT/$1"; }
expect_status 0 raw plain
assert_contains "$OUT" "not granted to this sandbox" "forged plain request"
case "$OUT" in *value-of-b*) fail "a forged request got B's value" ;; esac
for f in with-id bad-name other-type; do
  expect_status 0 raw $f
  case "$OUT" in *value-of-b*) fail "forged request $f got B's value" ;; esac
  case "$OUT" in *"malformed request"*|*"unexpected frame type"*) ;;
    *) fail "forged request $f: no clear refusal in '$OUT'" ;; esac
done

# A host process that is not B's VMM, on B's socket.
reply=$(python3 - "$SPACE_RUN_DIR/b/cred.sock" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
p = struct.pack('<I', 2) + b'SB'
s.sendall(struct.pack('<IHH', len(p), 20, 0) + p)
data = b''
while True:
    c = s.recv(4096)
    if not c:
        break
    data += c
    if len(data) >= 8 and len(data) >= 8 + struct.unpack('<I', data[:4])[0]:
        break
print(struct.unpack('<H', data[4:6])[0], data[8:].decode(errors='replace').replace('\0', ' '))
PY
)
assert_contains "$reply" "22 " "reply type to a non-VMM peer"
assert_contains "$reply" "not from this sandbox's VMM" "non-VMM peer on B's socket"
case "$reply" in *value-of-b*) fail "a non-VMM peer got B's value" ;; esac

expect_status 0 space secret audit --sandbox a --format json
case "$OUT" in *'"fetched"'*) fail "the audit log shows a fetch by A: $OUT" ;; esac
assert_contains "$OUT" "malformed request" "audit of A's forged requests"
expect_status 0 space secret audit --sandbox b --format json
assert_contains "$OUT" "from pid" "audit of the non-VMM peer"
! grep -a -q -e value-of-a -e value-of-b "$CRED/audit.log" || fail "a value is in the audit log"

# The helper stopped: a clear error, after the guest's 10 s timeout.
hp=$(pgrep -f -- "__credd --cred-dir $CRED" || true)
[ -n "$hp" ] || fail "no credential helper running"
kill -STOP "$hp"
expect_status 2 space exec b -- space-secret SB
assert_contains "$ERR" "no answer from the credential helper" "fetch from a stopped helper"
kill -KILL "$hp"
wait_until 10 gone "$hp"
# Killed: the next exec brings a new helper up (a jailed VMM cannot) and its request is served.
expect_status 0 space exec b -- space-secret SB
[ "$OUT" = value-of-b ] || fail "after the helper was killed: '$OUT'"
hp2=$(pgrep -f -- "__credd --cred-dir $CRED" || true)
[ -n "$hp2" ] && [ "$hp2" != "$hp" ] || fail "no new helper after the kill"
kill -KILL "$hp2"
wait_until 10 gone "$hp2"
expect_status 0 space secret list  # the operator side restarts it as well
assert_contains "$OUT" "SB" "secret list after a helper kill"

# Branches (A goes first: at most two VMs at a time).
expect_status 0 space destroy a
expect_status 0 space branch b --name b-plain
expect_status 2 space exec b-plain -- space-secret SB
assert_contains "$ERR" "credential helper refused the connection" "a branch without --keep-secrets"
expect_status 0 space destroy b-plain
expect_status 0 space grant b SA:uses=1
expect_status 0 space branch b --keep-secrets --name b-keep
expect_status 0 space exec b-keep -- space-secret SB
[ "$OUT" = value-of-b ] || fail "branch --keep-secrets: '$OUT'"
expect_status 0 space exec b-keep -- sh -c 'space-secret SA >/dev/null'
expect_status 0 space exec b -- sh -c 'space-secret SA >/dev/null'  # its own use, still there
expect_status 1 space exec b-keep -- space-secret SA
assert_contains "$ERR" "used up" "a branch's copied uses"
expect_status 0 space destroy b-keep b

expect_status 0 space run --template base --secret SA:uses=1 --secret-env V=SA -- sh -c 'test "$V" = value-of-a'
expect_status 125 space run --template base --secret-env V=SA -- true
assert_contains "$ERR" "SA:" "run --secret-env without a grant"
echo "PASS"
