#!/usr/bin/env bash
# Benchmark of secrets bound to hosts (issue 42): the time of an HTTPS request from a sandbox
# through the network broker, with interception (a host a secret is bound to: TLS ended and
# begun again by the broker, the placeholder in the Authorization header swapped for the value)
# against without (the same server at a port no secret is bound to: an opaque tunnel), measured
# in the same run, on this machine only (an HTTPS server on 127.0.0.2 with a CA made here).
# Timed inside the guest by Python's http.client through guest-init's proxy, so no exec or
# vsock set-up is counted:
#  - first request: a new connection each time (CONNECT, both TLS handshakes, one GET);
#  - keep-alive request: the next GET on one open connection;
# and the broker's CPU time per keep-alive request (its utime+stime, /proc/PID/stat, over the
# run). Prints median and p90 and the ratios; no assertions.
#
# Usage: scripts/bench-inject.sh [--count N] [--keep]
# Environment: SPACE_BIN (default build/space), SPACE_CACHE (where the Debian image with python3
# is kept as a tarball, made once: scripts/bench-engines.sh's).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
SPACE_GUEST_INIT=${SPACE_GUEST_INIT:-$SRC/build/guest-init}
. "$SRC/scripts/bench-lib.sh"
. "$SRC/scripts/deps.sh"
COUNT=100
KEEP=0
ROOT=""
usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --count) COUNT=${2:?}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage ;;
    *) echo "bench-inject: unknown argument '$1'" >&2; usage ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "bench-inject: run as root" >&2; exit 1; }
[ -x "$SPACE_BIN" ] || { echo "bench-inject: no space binary at $SPACE_BIN (build it, or set SPACE_BIN)" >&2; exit 1; }

ROOTFS=$("$SRC/scripts/build-rootfs.sh" --guest-init "$SPACE_GUEST_INIT" \
  --space-secret "$(dirname "$SPACE_GUEST_INIT")/space-secret")
KERNEL=
ENGINE=vm
if [ -e /dev/kvm ]; then KERNEL=$("$SRC/scripts/build-kernel.sh"); else ENGINE=gvisor; ensure_runsc; fi

bench_private_root bench-inject /tmp/space-bench-inj.XXXXXX
SERVERS=()
cleanup() {
  local rc=$?
  set +e
  [ ${#SERVERS[@]} = 0 ] || kill "${SERVERS[@]}" 2>/dev/null
  bench_destroy bi
  for pid in $(pgrep -f -- "__credd --cred-dir $ROOT.cred" || true); do kill "$pid"; done
  for pid in $(pgrep -f -- "--root $ROOT( .* | )__egress" || true); do kill "$pid"; done
  if [ $KEEP = 1 ]; then bench_kept bench-inject; else bench_remove_work bench-inject || rc=1; rm -rf "$ROOT.cred"; fi
  exit $rc
}
trap cleanup EXIT

ca=$WORK/ca
mkdir -p "$ca"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
  -keyout "$ca/ca.key" -out "$ca/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.2" \
  -keyout "$ca/srv.key" -out "$ca/srv.csr" 2>/dev/null
openssl x509 -req -in "$ca/srv.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" -CAcreateserial -days 2 \
  -extfile <(echo "subjectAltName=IP:127.0.0.2") -out "$ca/srv.pem" 2>/dev/null
{
  echo "[defaults]"
  echo "rootfs = \"$ROOTFS\""
  [ -z "$KERNEL" ] || echo "kernel = \"$KERNEL\""
  echo "memory_mib = 512"
  echo "cpus = 1"
  echo "[engine]"
  echo "default = \"$ENGINE\""
  echo "[egress]"
  echo "ca_file = \"$ca/ca.pem\""
} >"$ROOT/config.toml"

cache=${SPACE_CACHE:-/var/cache/space}/bench-images
key=$({ echo "bookworm python3"; cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } | sha256sum | cut -c1-16)
tar=$cache/engines-$key.tar
if [ -f "$tar" ]; then
  "$SPACE_BIN" image import deb "$tar" >/dev/null
else
  echo "bench-inject: building the Debian image (minutes; scripts/bench-engines.sh keeps it)" >&2
  "$SPACE_BIN" image build deb --debian bookworm --packages python3,ca-certificates >&2
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2", 0)); print(s.getsockname()[1])'; }
PB=$(free_port)
PF=$(free_port)
for p in "$PB" "$PF"; do
  python3 "$SRC/tests/integration/https_recorder.py" 127.0.0.2 "$p" "$ca/srv.pem" "$ca/srv.key" /dev/null >/dev/null 2>&1 &
  SERVERS+=($!)
done
for p in "$PB" "$PF"; do
  for _ in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.2', $p), 1)" 2>/dev/null && break; sleep 0.1; done
done

printf '%s' "bench-value-$RANDOM$RANDOM" | "$SPACE_BIN" secret set BENCH_TOKEN
"$SPACE_BIN" create --image deb --net "allow=127.0.0.2:$PB,127.0.0.2:$PF" \
  --inject "BENCH_TOKEN=127.0.0.2:$PB" bi-1 >/dev/null
"$SPACE_BIN" cp "$ca/ca.pem" bi-1:/root/bench-ca.pem

client='
import http.client, json, os, ssl, sys, time
port, n, phase = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
token = os.environ["T"]
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
ctx.load_verify_locations("/root/bench-ca.pem")
proxy = os.environ["https_proxy"].split("//")[-1].rstrip("/").rsplit(":", 1)
def conn():
    c = http.client.HTTPSConnection(proxy[0], int(proxy[1]), context=ctx, timeout=30)
    c.set_tunnel("127.0.0.2", port)
    return c
def get(c):
    t = time.perf_counter()
    c.request("GET", "/bench", headers={"Authorization": "Bearer " + token})
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
    return (time.perf_counter() - t) * 1000
out = []
if phase == "first":
    for _ in range(n):
        t = time.perf_counter(); c = conn(); get(c); c.close()
        out.append((time.perf_counter() - t) * 1000)
else:
    c = conn(); get(c)
    out = [get(c) for _ in range(n)]
print(json.dumps(out))'

broker_ticks() {
  local pid
  pid=$(pgrep -f -- "--root $ROOT( .* | )__egress" | head -1)
  awk '{ print $14 + $15 }' "/proc/$pid/stat"
}
run() {  # PORT PHASE -> JSON list of ms
  "$SPACE_BIN" exec --secret-env T=BENCH_TOKEN bi-1 -- python3 -c "$client" "$1" "$COUNT" "$2"
}
bench_machine_line
echo "engine: $ENGINE; $COUNT requests per row"
run "$PB" first >/dev/null  # warm: the broker's contexts, the leaf certificate
declare -A R
for mode in intercepted tunnel; do
  port=$PB
  [ $mode = tunnel ] && port=$PF
  R[$mode-first]=$(run "$port" first)
  t0=$(broker_ticks)
  R[$mode-ka]=$(run "$port" keepalive)
  t1=$(broker_ticks)
  R[$mode-cpu]=$(( (t1 - t0) * 10000 / COUNT ))  # microseconds per request (100 ticks/s)
done
python3 - "${R[intercepted-first]}" "${R[intercepted-ka]}" "${R[tunnel-first]}" "${R[tunnel-ka]}" \
  "${R[intercepted-cpu]}" "${R[tunnel-cpu]}" <<'PY'
import json, statistics, sys
def q(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(p * len(v)))]
rows = [("first request (new connection)", json.loads(sys.argv[1]), json.loads(sys.argv[3])),
        ("keep-alive request", json.loads(sys.argv[2]), json.loads(sys.argv[4]))]
print(f"{'':32} {'intercepted p50':>16} {'p90':>8} {'tunnel p50':>11} {'p90':>8} {'ratio':>6} {'added':>8}")
for name, a, b in rows:
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{name:32} {ma:13.2f} ms {q(a, .9):8.2f} {mb:8.2f} ms {q(b, .9):8.2f} {ma / mb:6.2f} {ma - mb:5.2f} ms")
print(f"broker CPU per keep-alive request: intercepted {int(sys.argv[5])} us, tunnel {int(sys.argv[6])} us "
      "(utime+stime at 100 ticks/s over the row)")
PY
