# Scenario: the mediated network, on sandboxes restored from the shared test template. The guest
# has no NIC: a program reaches out only through guest-init's proxy (HTTP_PROXY, 127.0.0.1:3128)
# and the host's broker, which connects only where the sandbox's policy allows and audits every
# attempt. Web servers on 127.0.0.2 (allowed) and 127.0.0.3 (not) stand in for the internet; no
# other address is ever used. Covered: no network by default (no proxy variables, nothing
# answers); --net allow=ADDR:PORT (plain HTTP through the proxy, a CONNECT tunnel, the other
# server and another port refused 403 with the reason); space net allow/deny/show at run time;
# exec --no-proxy-env; a branch inheriting the policy and one given --net none; the audit log
# (every allow and deny, kept after destroy); space forward into a guest server (50 clients at
# once, a refused guest port, SIGINT, the sandbox going); destroy removing the policy; the
# broker's sockets gone once it stops.
source "$(dirname "$0")/lib.sh"
export SPACE_EGRESS_IDLE_SECONDS=300

web_servers

shared_template base

# No --net: no network. No proxy variables, and nothing in the guest answers for 127.0.0.2.
expect_status 0 space create --template base n0
expect_status 0 space exec n0 -- sh -c 'env | grep -i _proxy || echo no-proxy'
[ "$OUT" = no-proxy ] || fail "a sandbox without a network has proxy variables: $OUT"
expect_status 0 space exec n0 -- sh -c "wget -q -T 5 -O - http://127.0.0.2:$P2/ || echo unreachable"
[ "$OUT" = unreachable ] || fail "a sandbox without a network reached 127.0.0.2: $OUT"
expect_status 0 space net show --format json n0
[ "$(echo "$OUT" | json_field network)" = False ] || fail "net show of n0: $OUT"

# --net allow=127.0.0.2:P2: plain HTTP through the proxy.
expect_status 0 space create --template base --net "allow=127.0.0.2:$P2" s1
expect_status 0 space exec s1 -- sh -c 'echo "$HTTP_PROXY $https_proxy $NO_PROXY"'
[ "$OUT" = "http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1,::1" ] ||
  fail "proxy variables in s1: $OUT"
expect_status 0 space exec s1 -- wget -q -O - "http://127.0.0.2:$P2/index.html"
[ "$OUT" = "hello from 127.0.0.2" ] || fail "GET through the proxy: '$OUT'"
# A CONNECT tunnel (what HTTPS clients use), spoken by hand with nc.
expect_status 0 space exec s1 -- sh -c "printf 'CONNECT 127.0.0.2:$P2 HTTP/1.1\r\n\r\nGET /index.html HTTP/1.0\r\n\r\n' | nc 127.0.0.1 3128"
assert_contains "$OUT" "200 Connection established" "CONNECT"
assert_contains "$OUT" "hello from 127.0.0.2" "bytes through the CONNECT tunnel"
# Not allowed: the other server, and the allowed server on another port; 403 with the reason.
expect_status 0 space exec s1 -- sh -c "wget -q -O - http://127.0.0.3:$P3/ 2>&1; echo rc=\$?"
assert_contains "$OUT" "403" "GET of 127.0.0.3"
assert_contains "$OUT" "rc=1" "wget's status for a refused GET"
expect_status 0 space exec s1 -- sh -c "printf 'CONNECT 127.0.0.2:$P3 HTTP/1.1\r\n\r\n' | nc 127.0.0.1 3128"
assert_contains "$OUT" "403 Forbidden" "CONNECT to another port"
assert_contains "$OUT" "127.0.0.2" "the refusal names the destination"
# A name the host cannot resolve, allowed by a rule: 502 naming the name.
expect_status 0 space net allow s1 'no-such-host.invalid:80'
expect_status 0 space exec s1 -- sh -c "printf 'GET http://no-such-host.invalid/ HTTP/1.1\r\nHost: no-such-host.invalid\r\n\r\n' | nc 127.0.0.1 3128"
assert_contains "$OUT" "502" "an unresolvable name"
assert_contains "$OUT" "cannot resolve no-such-host.invalid" "an unresolvable name"
# exec --no-proxy-env: the variables are left out.
expect_status 0 space exec --no-proxy-env s1 -- sh -c 'env | grep -i _proxy || echo no-proxy'
[ "$OUT" = no-proxy ] || fail "exec --no-proxy-env: $OUT"

# At run time: allow the other server, then deny it again.
expect_status 0 space net allow s1 "127.0.0.3:$P3"
assert_contains "$OUT" "127.0.0.3:$P3" "net allow prints the rules"
expect_status 0 space exec s1 -- wget -q -O - "http://127.0.0.3:$P3/"
[ "$OUT" = "hello from 127.0.0.3" ] || fail "GET after net allow: '$OUT'"
expect_status 0 space net deny s1 "127.0.0.3:$P3" 'no-such-host.invalid:80'
expect_status 0 space net show --format json s1
[ "$(echo "$OUT" | json_field rules.0)" = "127.0.0.2:$P2" ] || fail "net show after deny: $OUT"
[ "$(echo "$OUT" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["rules"]))')" = 1 ] ||
  fail "net show after deny has other rules: $OUT"
expect_status 1 space exec s1 -- wget -q -O - "http://127.0.0.3:$P3/"
expect_status 125 space net deny s1 "127.0.0.9:1"
assert_contains "$ERR" "has no rule 127.0.0.9:1" "deny of a rule it does not have"
expect_status 125 space net allow s1 "bad rule"
assert_contains "$ERR" "network rule" "a malformed rule"
# A sandbox created without a network gains one at run time.
expect_status 0 space net allow n0 "127.0.0.2:$P2"
expect_status 0 space exec n0 -- wget -q -O - "http://127.0.0.2:$P2/index.html"
[ "$OUT" = "hello from 127.0.0.2" ] || fail "GET after net allow on n0: '$OUT'"
expect_status 0 space net deny --all n0
expect_status 0 space exec n0 -- sh -c 'env | grep -i _proxy || echo no-proxy'
[ "$OUT" = no-proxy ] || fail "net deny --all left proxy variables: $OUT"
expect_status 0 space exec --no-proxy-env n0 -- sh -c "printf 'CONNECT 127.0.0.2:$P2 HTTP/1.1\r\n\r\n' | nc 127.0.0.1 3128"
# 403 from the broker, or 502 when the VMM already found no broker socket for n0: either way
# the reason is the same.
case "$OUT" in "HTTP/1.1 403 "* | "HTTP/1.1 502 "*) ;; *) fail "the proxy after net deny --all: $OUT" ;; esac
assert_contains "$OUT" "has no network" "the proxy after net deny --all"

# A checkpoint and resume keeps the policy (the broker finds the sandbox's socket again).
expect_status 0 space checkpoint s1
expect_status 0 space resume s1
expect_status 0 space exec s1 -- wget -q -O - "http://127.0.0.2:$P2/index.html"
[ "$OUT" = "hello from 127.0.0.2" ] || fail "GET after checkpoint and resume: '$OUT'"

# Branches: one inherits the policy, one is given none.
expect_status 0 space branch s1 --name b1
expect_status 0 space branch s1 --name b2 --net none
expect_status 0 space exec b1 -- wget -q -O - "http://127.0.0.2:$P2/index.html"
[ "$OUT" = "hello from 127.0.0.2" ] || fail "GET from a branch that inherited the policy: '$OUT'"
expect_status 0 space exec --no-proxy-env b2 -- sh -c "printf 'CONNECT 127.0.0.2:$P2 HTTP/1.1\r\n\r\n' | nc 127.0.0.1 3128"
case "$OUT" in "HTTP/1.1 403 "* | "HTTP/1.1 502 "*) ;; *) fail "a branch with --net none: $OUT" ;; esac
assert_contains "$OUT" "has no network" "a branch with --net none"

# The audit log: every allow and deny of s1, with the reason; kept after destroy.
expect_status 0 space net log s1
log=$OUT
count() { echo "$log" | python3 -c 'import json,sys
want = dict(a.split("=", 1) for a in sys.argv[1:])
print(sum(1 for l in sys.stdin if l.strip() and all(str(json.loads(l).get(k)) == v for k, v in want.items())))' "$@"; }
[ "$(count decision=allow host=127.0.0.2 port="$P2")" -ge 2 ] || fail "audit: allowed GETs of 127.0.0.2: $log"
[ "$(count decision=deny host=127.0.0.3 port="$P3")" -ge 2 ] || fail "audit: denied GETs of 127.0.0.3: $log"
[ "$(count decision=allow host=127.0.0.3 port="$P3")" -ge 1 ] || fail "audit: the allowed GET of 127.0.0.3: $log"
[ "$(count decision=deny host=127.0.0.2 port="$P3")" -ge 1 ] || fail "audit: the denied port: $log"
[ "$(count decision=error host=no-such-host.invalid)" -ge 1 ] || fail "audit: the unresolvable name: $log"
echo "$log" | head -1 | python3 -c 'import json,sys; r=json.load(sys.stdin)
assert r["sandbox"] == "s1" and r["time"].endswith("Z"), r' || fail "audit record fields: $log"
[ "$(stat -c %a "$SPACE_ROOT/egress/audit/s1.log")" = 600 ] || fail "the audit log is not mode 0600"

# Port forwarding in: busybox httpd in s1 on the guest's 127.0.0.1:8000, reached from the host
# through `space forward` on 127.0.0.2 (port chosen by the kernel), 50 clients at once.
expect_status 0 space exec s1 -- sh -c 'mkdir -p /tmp/www && echo "guest page" >/tmp/www/index.html &&
  httpd -p 127.0.0.1:8000 -h /tmp/www </dev/null >/dev/null 2>&1'
"$SPACE_BIN" forward s1 127.0.0.2:0:8000 0:8001 >"$TEST_ROOT/fwd.out" 2>"$TEST_ROOT/fwd.err" &
FWD=$!
at_exit "kill $FWD 2>/dev/null"
wait_until 20 grep -q ' -> 8001$' "$TEST_ROOT/fwd.out"
FP=$(sed -n 's/^127\.0\.0\.2:\([0-9]*\) -> 8000$/\1/p' "$TEST_ROOT/fwd.out")
FP2=$(sed -n 's/^127\.0\.0\.1:\([0-9]*\) -> 8001$/\1/p' "$TEST_ROOT/fwd.out")
[ -n "$FP" ] && [ -n "$FP2" ] || fail "space forward printed: $(cat "$TEST_ROOT/fwd.out")"
python3 - "$FP" <<'PY' || fail "clients through space forward: $(cat "$TEST_ROOT/fwd.err")"
import sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
url = "http://127.0.0.2:%s/index.html" % sys.argv[1]
def get(_):
    with urllib.request.urlopen(url, timeout=300) as r:
        return r.read().decode()
with ThreadPoolExecutor(50) as ex:
    got = list(ex.map(get, range(50)))
bad = [g for g in got if g != "guest page\n"]
assert not bad, "%d of 50 answers were wrong: %r" % (len(bad), bad[:3])
PY
# Nothing listens on guest port 8001: that client is closed, the reason is on stderr, and the
# forward goes on.
python3 -c 'import socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5); s.settimeout(60)
assert s.recv(10) == b""' "$FP2" || fail "a client of a guest port nothing listens on was not closed"
wait_until 20 grep -q "127.0.0.1:$FP2 -> 8001: 127.0.0.1:8001 in the guest: Connection refused" "$TEST_ROOT/fwd.err"
kill -0 $FWD || fail "space forward ended after a refused connection"
kill -INT $FWD
rc=0; wait $FWD || rc=$?
[ $rc -eq 0 ] || fail "space forward exited $rc after SIGINT: $(cat "$TEST_ROOT/fwd.err")"
assert_contains "$(cat "$TEST_ROOT/fwd.err")" "interrupted by SIGINT" "space forward's last words"
served 127.0.0.2 "$FP" && fail "space forward still listens after SIGINT"
# A forward ends by itself when its sandbox goes.
"$SPACE_BIN" forward b1 0:8000 >"$TEST_ROOT/fwd2.out" 2>"$TEST_ROOT/fwd2.err" &
FWD2=$!
at_exit "kill $FWD2 2>/dev/null"
wait_until 20 grep -q ' -> 8000$' "$TEST_ROOT/fwd2.out"
expect_status 125 space forward n0 1:2:3:4
assert_contains "$ERR" "forms: HOST_PORT:GUEST_PORT" "a malformed forward"

# Destroy: the policy goes, the log stays; the broker's sockets go when it stops.
for id in n0 s1 b1 b2; do expect_status 0 space destroy "$id"; done
[ ! -e "$SPACE_ROOT/egress/policy/s1.json" ] || fail "destroy left the policy of s1"
wait_until 10 sh -c "! kill -0 $FWD2 2>/dev/null"
assert_contains "$(cat "$TEST_ROOT/fwd2.err")" "sandbox b1 is no longer running" "space forward after destroy"
expect_status 0 space net log s1
assert_contains "$OUT" '"decision":"allow"' "the log after destroy"
broker=$(pgrep -f -- "--root $SPACE_ROOT( .* | )__egress" || true)
[ -n "$broker" ] || fail "no network broker process was running"
kill $broker
wait_until 10 sh -c "! kill -0 $broker 2>/dev/null"
left=$(find "$SPACE_RUN_DIR" -name '*egress*' 2>/dev/null || true)
[ -z "$left" ] || fail "the broker left sockets behind: $left"
echo PASS
