#!/usr/bin/env bash
# Load and density (issue 16, item 7). Prints figures; asserts nothing about time.
#   Load: --workers N (default 8) loop create, exec, destroy for --minutes M (default 10); each
#   sandbox has a secret granted and a network policy, so the credential helper and the network
#   broker, the long-lived processes, serve every one. It prints the failures (each with its
#   error), the cycles, and the descriptor count and RSS of each long-lived process at the start,
#   at its peak and at the end.
#   Density: --density N (default 200) idle sandboxes made one at a time and left running; at 10,
#   50, 100 and N live sandboxes it prints the create latency (median and p90 of the last 10
#   creates) and host memory per sandbox (the PSS of its VMM and jail, and the drop of the host's
#   MemAvailable divided by the sandboxes).
# It exits 1 if any command failed.
#
# Usage: scripts/soak.sh [--workers N] [--minutes M] [--density N] [--no-load] [--no-density] [--keep]
# Environment: SPACE_BIN (default build/space); SPACE_ROOT to use a root that exists (else a
# private one under /tmp, removed at the end).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
WORKERS=8
MINUTES=10
DENSITY=200
LOAD=1
DENS=1
KEEP=0
usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --workers) WORKERS=${2:?}; shift 2 ;;
    --minutes) MINUTES=${2:?}; shift 2 ;;
    --density) DENSITY=${2:?}; shift 2 ;;
    --no-load) LOAD=0; shift ;;
    --no-density) DENS=0; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage ;;
    *) echo "soak: unknown argument '$1'" >&2; usage ;;
  esac
done
source "$SRC/scripts/private-root.sh"
campaign_root soak

echo "soak: root $SPACE_ROOT, space $SPACE_BIN"
python3 - "$SPACE_BIN" "$SPACE_ROOT" "$WORKERS" "$MINUTES" "$DENSITY" "$LOAD" "$DENS" <<'PY'
import json, os, re, statistics, subprocess, sys, threading, time

space, root, workers, minutes, density, load, dens = sys.argv[1:8]
workers, minutes, density, load, dens = int(workers), float(minutes), int(density), load == "1", dens == "1"
failures = []

def sh(*args, inp=None):
    t0 = time.monotonic()
    r = subprocess.run([space, *args], capture_output=True, text=True, input=inp, timeout=300)
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0

def pctl(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]

def long_lived():
    """pid -> role of this root's credential helper, network broker and expiry reaper."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in cmd]
        joined = " ".join(args)
        if f"--cred-dir {root}.cred" in joined and "__credd" in args:
            out[int(pid)] = "credential helper"
        elif f"--root {root}" in joined and "__egress" in args:
            out[int(pid)] = "network broker"
    return out

def fds_rss(pid):
    try:
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        rss = int(re.search(r"VmRSS:\s+(\d+)", open(f"/proc/{pid}/status").read()).group(1))
        return fds, rss
    except (OSError, AttributeError):
        return None

if load:
    sh("secret", "set", "SOAK", inp="soak-value")
    stop = time.monotonic() + minutes * 60
    cycles = [0] * workers
    lat = []
    lock = threading.Lock()
    def worker(w):
        n = 0
        while time.monotonic() < stop:
            sid = f"w{w}-{n}"
            n += 1
            ok = True
            for args in (["create", "--template", "base", "--secret", "SOAK", "--net", "allow=127.0.0.2:9", sid],
                         ["exec", sid, "--", "sh", "-c", "test -n \"$(space-secret SOAK)\""],
                         ["destroy", sid]):
                rc, _, err, secs = sh(*args)
                if rc != 0:
                    ok = False
                    with lock:
                        failures.append(f"worker {w}: space {' '.join(args)}: exit {rc}: {err.strip()[:300]}")
                    if args[0] != "destroy":
                        sh("destroy", "--force", sid)
                    break
                if args[0] == "create":
                    with lock:
                        lat.append(secs)
            if ok:
                cycles[w] += 1
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    samples = {}  # pid -> list of (fds, rss)
    roles = {}
    while any(t.is_alive() for t in threads):
        for pid, role in long_lived().items():
            v = fds_rss(pid)
            if v:
                roles[pid] = role
                samples.setdefault(pid, []).append(v)
        time.sleep(5)
    for t in threads:
        t.join()
    print(f"\nload: {workers} workers for {minutes:g} min: {sum(cycles)} create-exec-destroy cycles, "
          f"{len(failures)} failures")
    if lat:
        print(f"  create under load: median {statistics.median(lat) * 1000:.0f} ms, "
              f"p90 {pctl(lat, 90) * 1000:.0f} ms")
    print(f"  {'process':<18} {'pid':>7} {'samples':>7} {'fds start/peak/end':>20} {'RSS KiB start/peak/end':>26}")
    for pid, s in samples.items():
        f = [x[0] for x in s]
        r = [x[1] for x in s]
        print(f"  {roles[pid]:<18} {pid:>7} {len(s):>7} {f'{f[0]}/{max(f)}/{f[-1]}':>20} "
              f"{f'{r[0]}/{max(r)}/{r[-1]}':>26}")
    for f in failures[:20]:
        print("  FAIL " + f)

def mem_available():
    return int(re.search(r"MemAvailable:\s+(\d+)", open("/proc/meminfo").read()).group(1))

def pss(pid):
    try:
        return int(re.search(r"Pss:\s+(\d+)", open(f"/proc/{pid}/smaps_rollup").read()).group(1))
    except (OSError, AttributeError):
        return 0

def jail_pids():
    out = subprocess.run(["pgrep", "-f", "--", f"--root {root}( .* | )__(vmm|jail-init) "], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]

if dens:
    base_avail = mem_available()
    lat = []
    marks = sorted({m for m in (10, 50, 100, density) if m <= density})
    print(f"\ndensity: up to {density} idle sandboxes (256 MiB guests)")
    print(f"  {'live':>5} {'create median':>14} {'p90':>8} {'PSS/sandbox':>12} {'MemAvailable drop/sandbox':>27}")
    for i in range(1, density + 1):
        rc, _, err, secs = sh("create", "--template", "base", f"d{i}")
        if rc != 0:
            failures.append(f"density create {i}: exit {rc}: {err.strip()[:300]}")
            print(f"  create {i} failed: {err.strip()[:300]}")
            break
        lat.append(secs)
        if i in marks:
            time.sleep(5)  # the newest guests finish their restore work
            last = lat[-10:]
            pids = jail_pids()
            if not pids:  # a figure of 0 would be a lie: say the measurement failed
                failures.append(f"density {i}: no VMM processes found to measure")
            p = sum(pss(pid) for pid in pids)
            drop = base_avail - mem_available()
            print(f"  {i:>5} {statistics.median(last) * 1000:>11.1f} ms {pctl(last, 90) * 1000:>5.1f} ms "
                  f"{p / i / 1024:>8.1f} MiB {drop / i / 1024:>23.1f} MiB", flush=True)
    for i in range(1, density + 1):
        sh("destroy", "--force", f"d{i}")

sys.exit(1 if failures else 0)
PY
