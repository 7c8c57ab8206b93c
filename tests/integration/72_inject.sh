# Scenario: secrets that never enter the sandbox (issue 42). A test CA made here signs HTTPS
# servers on 127.0.0.2 and 127.0.0.3 (tests/integration/https_recorder.py: they record the
# headers they get, and 127.0.0.2 serves a git repository over smart HTTP behind Basic auth);
# config.toml's [egress] ca_file makes the broker trust that CA. A sandbox with the Debian image
# gets TOKEN bound to 127.0.0.2 (create --inject): in the guest, space-secret and --secret-env
# give a placeholder, and curl (Bearer), Python urllib and `git clone` (Basic, a token as the
# password) each carry it, and 127.0.0.2 sees the real value each time. The same placeholder to
# 127.0.0.3, allowed but not bound, arrives as the placeholder. The value is nowhere in the
# guest (environments, files), nor in its checkpoint, nor in any audit line; the credential
# helper's audit has one "injected" line per swap, with method and path. Refused: plain HTTP to
# the bound host (same port, and port 80), a binding to a host the policy does not allow (with
# the rule to add), a bound host whose certificate does not verify (audited), a request head of
# 100 KB; a client that stops mid-handshake leaves the broker serving. A branch gets its own
# placeholder; uses=N is spent one per swap.
source "$(dirname "$0")/lib.sh"
shared_template default
debian_image py
export SPACE_EGRESS_IDLE_SECONDS=300


# The test CA, and certificates for the two servers (and one the broker must refuse).
ca=$TEST_ROOT/ca
mkdir -p "$ca"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=space test CA" \
  -keyout "$ca/ca.key" -out "$ca/ca.pem" 2>/dev/null || fail "openssl: the test CA"
for ip in 127.0.0.2 127.0.0.3; do
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$ip" \
    -keyout "$ca/$ip.key" -out "$ca/$ip.csr" 2>/dev/null
  openssl x509 -req -in "$ca/$ip.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" -CAcreateserial -days 2 \
    -extfile <(printf 'subjectAltName=IP:%s\n' "$ip") -out "$ca/$ip.pem" 2>/dev/null || fail "openssl: $ip"
done
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=127.0.0.2" \
  -addext "subjectAltName=IP:127.0.0.2" -keyout "$ca/rogue.key" -out "$ca/rogue.pem" 2>/dev/null
printf '[egress]\nca_file = "%s"\n' "$ca/ca.pem" >>"$SPACE_ROOT/config.toml"

VALUE="ghs_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s' "$VALUE" | space secret set TOKEN || fail "secret set TOKEN"

# A git repository to clone.
git init -q --bare "$TEST_ROOT/git/repo.git"
git -C "$TEST_ROOT/git" clone -q repo.git work 2>/dev/null
(cd "$TEST_ROOT/git/work" && echo "cloned through the broker" >README && git add README &&
  git -c user.name=t -c user.email=t@t commit -q -m one && git push -q origin HEAD:master) || fail "git set-up"
git -C "$TEST_ROOT/git/repo.git" symbolic-ref HEAD refs/heads/master

P2=$(free_port 127.0.0.2)
P3=$(free_port 127.0.0.3)
PR=$(free_port 127.0.0.2)
python3 "$SRC/tests/integration/https_recorder.py" 127.0.0.2 "$P2" "$ca/127.0.0.2.pem" "$ca/127.0.0.2.key" \
  "$TEST_ROOT/seen2.log" "$TEST_ROOT/git" "$VALUE" >/dev/null 2>"$TEST_ROOT/srv2.err" &
S2=$!
python3 "$SRC/tests/integration/https_recorder.py" 127.0.0.3 "$P3" "$ca/127.0.0.3.pem" "$ca/127.0.0.3.key" \
  "$TEST_ROOT/seen3.log" >/dev/null 2>"$TEST_ROOT/srv3.err" &
S3=$!
python3 "$SRC/tests/integration/https_recorder.py" 127.0.0.2 "$PR" "$ca/rogue.pem" "$ca/rogue.key" \
  "$TEST_ROOT/seenr.log" >/dev/null 2>"$TEST_ROOT/srvr.err" &
SR=$!
at_exit "kill $S2 $S3 $SR 2>/dev/null"
wait_until 20 served 127.0.0.2 "$P2"
wait_until 20 served 127.0.0.3 "$P3"
wait_until 20 served 127.0.0.2 "$PR"

NET="allow=127.0.0.2:$P2,127.0.0.3:$P3,127.0.0.2:$PR"
expect_status 0 space create --image py --net "$NET" --inject "TOKEN=127.0.0.2:$P2" s1
space cp "$ca/ca.pem" s1:/root/testca.pem || fail "cp the test CA in"

# The guest holds a placeholder, both ways.
expect_status 0 space exec s1 -- space-secret TOKEN
TOK=$OUT
[[ $TOK == space-placeholder-* ]] || fail "space-secret TOKEN gave '$TOK', not a placeholder"
expect_status 0 space exec --secret-env T=TOKEN s1 -- sh -c 'printf %s "$T"'
[ "$OUT" = "$TOK" ] || fail "--secret-env gave '$OUT', not the placeholder $TOK"
expect_status 0 space exec s1 -- sh -c 'echo $SSL_CERT_FILE $NODE_EXTRA_CA_CERTS; grep -c BEGIN /etc/ssl/certs/ca-certificates.crt'
echo "guest CA environment: $OUT"
assert_contains "$OUT" "/etc/ssl/certs/ca-certificates.crt /etc/space/ca.pem" "the CA environment"

# curl, Python and git carry the placeholder; 127.0.0.2 sees the value.
seen() {  # LOG PATH HEADER: the header of the last request for PATH
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
hits = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["path"].startswith(sys.argv[2])]
print(hits[-1]["headers"].get(sys.argv[3], "") if hits else "<no request>")
PY
}
expect_status 0 space exec --secret-env T=TOKEN s1 -- sh -c \
  "curl -sS -f -H \"Authorization: Bearer \$T\" https://127.0.0.2:$P2/curl"
[ "$(seen "$TEST_ROOT/seen2.log" /curl Authorization)" = "Bearer $VALUE" ] ||
  fail "curl: 127.0.0.2 saw '$(seen "$TEST_ROOT/seen2.log" /curl Authorization)'"
expect_status 0 space exec --secret-env T=TOKEN s1 -- python3 -c "
import os, urllib.request
r = urllib.request.Request('https://127.0.0.2:$P2/python', headers={'Authorization': 'Bearer ' + os.environ['T'], 'X-Api-Key': os.environ['T']})
print(urllib.request.urlopen(r).read().decode().strip())"
[ "$(seen "$TEST_ROOT/seen2.log" /python Authorization)" = "Bearer $VALUE" ] || fail "python: Authorization not swapped"
[ "$(seen "$TEST_ROOT/seen2.log" /python X-Api-Key)" = "$VALUE" ] || fail "python: X-Api-Key not swapped"
expect_status 0 space exec --secret-env T=TOKEN s1 -- sh -c \
  "git clone -q https://x-access-token:\$T@127.0.0.2:$P2/repo.git /root/repo && cat /root/repo/README"
[ "$OUT" = "cloned through the broker" ] || fail "git clone: '$OUT' $ERR"
auth=$(seen "$TEST_ROOT/seen2.log" /repo.git Authorization)
[ "$(echo "${auth#Basic }" | base64 -d)" = "x-access-token:$VALUE" ] || fail "git: the server saw '$auth'"
echo "curl, python urllib and git clone: 127.0.0.2 saw the value"

# Allowed but not bound: the placeholder goes out as it is.
expect_status 0 space exec --secret-env T=TOKEN s1 -- sh -c \
  "curl -sS -f --cacert /root/testca.pem -H \"Authorization: Bearer \$T\" https://127.0.0.3:$P3/other"
[ "$(seen "$TEST_ROOT/seen3.log" /other Authorization)" = "Bearer $TOK" ] ||
  fail "127.0.0.3 saw '$(seen "$TEST_ROOT/seen3.log" /other Authorization)', not the placeholder"

# Refused: plain HTTP to the bound host (at its port, and at 80), a rogue certificate, a huge head.
expect_status 0 space exec --secret-env T=TOKEN s1 -- sh -c \
  "curl -sS -m 20 -H \"Authorization: Bearer \$T\" http://127.0.0.2:$P2/plain 2>&1; echo rc=\$?"
assert_contains "$OUT" "rc=" "plain HTTP"
[[ $OUT != *"rc=0"* ]] || fail "plain HTTP to the bound host's port succeeded: $OUT"
# Another port of the bound host: a tunnel for TLS (curl -k: the server there has a certificate
# of its own), refused in clear text.
expect_status 0 space exec s1 -- curl -sS -f -k -m 20 "https://127.0.0.2:$PR/other-port-tls"
[ "$OUT" = ok ] || fail "TLS to another port of the bound host: '$OUT'"
expect_status 0 space exec s1 -- sh -c "curl -sS -m 20 http://127.0.0.2:$PR/plain-other 2>&1; echo rc=\$?"
[[ $OUT != *"rc=0"* ]] || fail "plain HTTP to another port of the bound host succeeded: $OUT"
grep -q "that does not start with TLS is refused" "$SPACE_ROOT"/egress/audit/s1.log* ||
  fail "plain HTTP to another port of the bound host: not refused as such in the network audit"
grep -q '"/plain' "$TEST_ROOT/seen2.log" && fail "a plain request reached 127.0.0.2"
# (Granted again, a binding names all its hosts: the grant replaces the one before.)
expect_status 0 space grant s1 TOKEN --inject "127.0.0.2:$P2" --inject "127.0.0.2:$PR"
expect_status 0 space exec --secret-env T=TOKEN s1 -- sh -c \
  "curl -sS -m 20 -H \"Authorization: Bearer \$T\" https://127.0.0.2:$PR/rogue 2>&1; echo rc=\$?"
[[ $OUT != *"rc=0"* ]] || fail "a bound host with a rogue certificate was reached: $OUT"
grep -q '"/rogue' "$TEST_ROOT/seenr.log" 2>/dev/null && fail "the rogue server got the bound request"
expect_status 0 space exec --secret-env T=TOKEN s1 -- sh -c \
  "curl -sS -m 20 -H \"X-Big: \$(head -c 100000 /dev/zero | tr '\\000' a)\" -H \"Authorization: Bearer \$T\" https://127.0.0.2:$P2/big 2>&1; echo rc=\$?"
[[ $OUT != *"rc=0"* ]] || fail "a 100 KB request head went through: ${OUT:0:200}"
# A client that stops mid-handshake: the broker goes on serving.
expect_status 0 space exec s1 -- python3 -c "
import socket, os
p = os.environ['https_proxy'].rsplit(':', 1)
s = socket.create_connection((p[0].split('//')[-1], int(p[1].strip('/'))))
s.sendall(b'CONNECT 127.0.0.2:$P2 HTTP/1.1\r\nHost: 127.0.0.2:$P2\r\n\r\n')
print(s.recv(100).split(b'\r\n')[0].decode())
s.sendall(b'\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03')  # a ClientHello cut short
s.close()"
expect_status 0 space exec --secret-env T=TOKEN s1 -- sh -c \
  "curl -sS -f -H \"Authorization: Bearer \$T\" https://127.0.0.2:$P2/after"
[ "$(seen "$TEST_ROOT/seen2.log" /after Authorization)" = "Bearer $VALUE" ] || fail "after a cut handshake"
echo "refused: plain HTTP, a rogue certificate, a 100 KB head; a cut handshake left the broker serving"

# A sandbox whose root has no CA bundle (the busybox rootfs) gets one holding its CA.
expect_status 0 space create --net "allow=127.0.0.2:$P2" --inject "TOKEN=127.0.0.2:$P2" s2
expect_status 0 space exec s2 -- sh -c 'grep -c BEGIN "$SSL_CERT_FILE"; cmp /etc/space/ca.pem "$NODE_EXTRA_CA_CERTS" && echo same'
[ "$OUT" = "$(printf '1\nsame')" ] || fail "the bundle made for a root without one: $OUT"
expect_status 0 space destroy s2
[ ! -e "$SPACE_ROOT.cred/ca/s2" ] || fail "destroy left the CA of s2"

# A binding to a host the policy does not allow fails, naming the rule.
expect_status 125 space grant s1 TOKEN --inject 127.0.0.9:443
assert_contains "$ERR" "space net allow s1 127.0.0.9:443" "a binding outside the policy"

# A branch: its own placeholder (--keep-secrets), which works toward the bound host.
expect_status 0 space branch s1 --keep-secrets --name s1b
expect_status 0 space exec s1b -- space-secret TOKEN
[[ $OUT == space-placeholder-* && $OUT != "$TOK" ]] || fail "the branch's placeholder: '$OUT' (source's $TOK)"
expect_status 0 space exec --secret-env T=TOKEN s1b -- sh -c \
  "curl -sS -f -H \"Authorization: Bearer \$T\" https://127.0.0.2:$P2/branch"
[ "$(seen "$TEST_ROOT/seen2.log" /branch Authorization)" = "Bearer $VALUE" ] || fail "the branch's swap"
expect_status 0 space destroy s1b

# uses=2: two swaps, then refused.
expect_status 0 space grant s1 TOKEN:uses=2 --inject "127.0.0.2:$P2" --inject "127.0.0.2:$PR"
for i in 1 2; do
  expect_status 0 space exec --secret-env T=TOKEN s1 -- sh -c \
    "curl -sS -f -H \"Authorization: Bearer \$T\" https://127.0.0.2:$P2/use$i"
done
# (A fetch of a spent binding is refused too: the placeholder it had, sent again, is not swapped.)
expect_status 0 space exec s1 -- sh -c \
  "curl -sS -m 20 -H \"Authorization: Bearer $TOK\" https://127.0.0.2:$P2/use3 2>&1; echo rc=\$?"
[[ $OUT != *"rc=0"* ]] || fail "a third swap of a uses=2 grant went through"
grep -q '"/use3' "$TEST_ROOT/seen2.log" && fail "the third request reached the server"

# Its checkpoint holds no value either; nor does any audit line, but each swap is audited.
expect_status 0 space checkpoint s1
found=$(grep -rlsF "$VALUE" "$SPACE_ROOT/store/sandboxes/s1" "$SPACE_RUN_DIR" "$SPACE_ROOT/egress" 2>/dev/null | head -3 || true)
if [ -n "$found" ]; then
  for f in $found; do
    grep -aboF "$VALUE" "$f" | head -3 | while IFS=: read -r off _; do
      echo "--- $f at $off:"; dd if="$f" bs=1 skip=$((off > 300 ? off - 300 : 0)) count=700 2>/dev/null | strings -n 3
    done
  done
  fail "the value is in the sandbox's files or checkpoint: $found"
fi
ls "$SPACE_ROOT/store/sandboxes/s1/checkpoint"* >/dev/null 2>&1 || fail "no checkpoint to search"
CRED_AUDIT=$SPACE_ROOT.cred/audit.log
grep -qF "$VALUE" "$CRED_AUDIT" && fail "the credential audit log holds the value"
injected=$(grep -c '"injected"' "$CRED_AUDIT" || true)
[ "$injected" -ge 8 ] || fail "only $injected swaps audited: $(grep injected "$CRED_AUDIT" | head -3)"
grep '"injected"' "$CRED_AUDIT" | grep -q "127.0.0.2:$P2 GET /curl" || fail "a swap's audit line lacks method and path"
grep -q 'interception refused\|TLS with 127.0.0.2 (a secret is bound' "$SPACE_ROOT"/egress/audit/s1.log* ||
  fail "the refused interceptions are not in the network audit"
# Nor in the guest's environments and files, searched only now: the search itself puts the value
# into guest processes' memory (their command lines), which a checkpoint would then hold.
expect_status 0 space resume s1
expect_status 0 space exec s1 -- sh -c "cat /proc/[0-9]*/environ 2>/dev/null | grep -c '$VALUE'; \
  grep -rlsF '$VALUE' /root /etc /tmp /home /var /run 2>/dev/null | head -3; echo end"
[ "$OUT" = "$(printf '0\nend')" ] || fail "the value is in the guest: $OUT"

echo "no value in the guest, its checkpoint or any audit line; $injected swaps audited"
expect_status 0 space destroy s1
echo "PASS"
