#!/usr/bin/env bash
# Benchmark of the mediated network (issue 14), all on this machine: a web server on 127.0.0.2
# stands in for the internet. Two figures, each beside a peer measured in the same run:
#  - connection set-up: the time from a CONNECT request to guest-init's proxy until
#    "200 Connection established" (guest proxy -> vsock -> VMM -> broker -> policy -> TCP connect
#    and back). The client runs on the host and reaches the proxy through `space forward`
#    (another vsock hop), so it is an upper bound; beside it, the same client's set-up of a
#    direct TCP connection to the server on the host, and `space exec ID true`.
#  - bulk download: GET of a --mib MiB file (default 64) by busybox wget in the guest through the
#    proxy, timed by the host around `space exec`, beside `space exec ID cat` of the same bytes
#    from the guest's /tmp (the in-sandbox baseline: the same exec, the same vsock, no network).
# Prints median and p90 and the ratios; no assertions. The HTTPS request through the broker with
# and without interception (secrets bound to hosts) is scripts/bench-inject.sh's. Without ID it creates a sandbox with
# --net allow=127.0.0.2:PORT and destroys it afterwards; with ID it adds that rule (space net
# allow) and removes it again.
#
# On a PVM host, whose interpreted guest kernel moves tens to hundreds of KB/s through vsock,
# use --mib 4.
#
# Usage: scripts/bench-net.sh [--root DIR] [--count N] [--mib N] [ID]
# Environment: SPACE_BIN (default build/space), SPACE_ROOT (the root when --root is not given).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
COUNT=10
MIB=64
ROOT=${SPACE_ROOT:-/var/lib/space}
ID=""

usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=${2:?}; shift 2 ;;
    --count) COUNT=${2:?}; shift 2 ;;
    --mib) MIB=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) ID=$1; shift ;;
  esac
done
[ -x "$SPACE_BIN" ] || { echo "bench-net: no space binary at $SPACE_BIN (build it, or set SPACE_BIN)" >&2; exit 1; }
sp() { "$SPACE_BIN" --root "$ROOT" "$@"; }

work=$(mktemp -d /tmp/bench-net.XXXXXX)
created="" rule="" web="" fwd=""
cleanup() {
  [ -z "$fwd" ] || kill "$fwd" 2>/dev/null || true
  [ -z "$web" ] || kill "$web" 2>/dev/null || true
  if [ -n "$created" ]; then sp destroy --force "$created" >/dev/null 2>&1 || true
  elif [ -n "$rule" ]; then sp net deny "$ID" "$rule" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2", 0)); print(s.getsockname()[1])')
head -c $((MIB << 20)) /dev/urandom >"$work/big.bin"
python3 -m http.server --bind 127.0.0.2 --directory "$work" "$port" >/dev/null 2>&1 &
web=$!
rule=127.0.0.2:$port
if [ -z "$ID" ]; then
  ID=bench-net-$$
  echo "bench-net: creating sandbox $ID in $ROOT" >&2
  sp create --net "allow=$rule" "$ID" >/dev/null
  created=$ID
else
  sp net allow "$ID" "$rule" >/dev/null
fi
sp forward "$ID" 0:3128 >"$work/fwd.out" 2>"$work/fwd.err" &
fwd=$!
for _ in $(seq 100); do grep -q ' -> 3128$' "$work/fwd.out" 2>/dev/null && break; sleep 0.1; done
fport=$(sed -n 's/^127\.0\.0\.1:\([0-9]*\) -> 3128$/\1/p' "$work/fwd.out")
[ -n "$fport" ] || { echo "bench-net: space forward did not start: $(cat "$work/fwd.err")" >&2; exit 1; }
# The guest copy for the exec-cat baseline, in tmpfs.
sp exec "$ID" -- wget -q -O /tmp/bench-net.bin "http://$rule/big.bin"

echo "bench-net: $(uname -r), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg); sandbox $ID, $COUNT runs each, $MIB MiB"
python3 - "$SPACE_BIN" "$ROOT" "$ID" "$COUNT" "$MIB" "$port" "$fport" <<'PY'
import socket, statistics, subprocess, sys, time

space, root, sid, count, mib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
port, fport = int(sys.argv[6]), int(sys.argv[7])

def p90(v):
    s = sorted(v)
    return s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))]

def timed(f):
    t = time.monotonic()
    f()
    return time.monotonic() - t

def via_proxy():
    with socket.create_connection(("127.0.0.1", fport), 60) as s:
        s.sendall(b"CONNECT 127.0.0.2:%d HTTP/1.1\r\n\r\n" % port)
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = s.recv(4096)
            if not chunk:
                raise SystemExit("bench-net: the proxy closed: %r" % got)
            got += chunk
        if b" 200 " not in got.split(b"\r\n")[0]:
            raise SystemExit("bench-net: the proxy answered %r" % got)

def direct():
    socket.create_connection(("127.0.0.2", port), 5).close()

def run(*args):
    subprocess.run([space, "--root", root] + list(args), check=True, stdout=subprocess.DEVNULL)

def line(name, v, peer_name, peer):
    m, pm = statistics.median(v), statistics.median(peer)
    print("%-22s median %9.2f ms p90 %9.2f ms | %-18s median %9.2f ms p90 %9.2f ms | ratio %.1f"
          % (name, m * 1e3, p90(v) * 1e3, peer_name, pm * 1e3, p90(peer) * 1e3, m / pm))

proxy = [timed(via_proxy) for _ in range(count)]
tcp = [timed(direct) for _ in range(count)]
true = [timed(lambda: run("exec", sid, "--", "true")) for _ in range(count)]
line("set-up via proxy", proxy, "direct TCP (host)", tcp)
line("set-up via proxy", proxy, "exec true", true)

runs = max(1, min(count, 5))
get = [timed(lambda: run("exec", sid, "--", "wget", "-q", "-O", "/dev/null",
                         "http://127.0.0.2:%d/big.bin" % port)) for _ in range(runs)]
cat = [timed(lambda: run("exec", sid, "--", "cat", "/tmp/bench-net.bin")) for _ in range(runs)]
mb = mib * 1.048576
mg, mc = statistics.median(get), statistics.median(cat)
print("%-22s median %7.2f s p90 %7.2f s %8.3g MB/s | exec cat: median %7.2f s p90 %7.2f s %8.3g MB/s | cat/wget %.2f"
      % ("%d MiB via proxy" % mib, mg, p90(get), mb / mg, mc, p90(cat), mb / mc, mc / mg))
PY
sp exec "$ID" -- rm -f /tmp/bench-net.bin
