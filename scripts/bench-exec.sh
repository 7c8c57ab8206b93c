#!/usr/bin/env bash
# Benchmark of one exec, host side separated from guest work (issue 3 item 6). It runs
# `space exec ID true` --count times (after one warm-up) with SPACE_EXEC_STATS=1 and prints the
# median and p90 of: the end-to-end wall time of the `space` process (time.perf_counter_ns around
# subprocess.run in one python3 process), the guest's own time from the Exec request to the
# process's exit as guest-init measures it, and per run their difference: what the host side
# costs (process start, connect through the VMM's vsock bridge, handshake, relaying, exit).
# It also prints the medians of the host's connect and Hello+Exec round-trip parts, and where
# the CPU time of an exec goes: the VMM's threads (the vCPU runs the guest's kernel and user
# code), guest-init's own time and its exec'd processes' (from /proc/1/stat in the guest), and,
# for comparison, busybox `time -v true` run by a shell in the guest.
# Without ID it creates a sandbox in the root (as `space create` would: from the default
# template, else a cold boot) and destroys it afterwards. Plain lines, no assertions.
#
# Usage: scripts/bench-exec.sh [--root DIR] [--count N] [ID]
# Environment: SPACE_BIN (default build/space), SPACE_ROOT (the root when --root is not given).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
COUNT=20
ROOT=${SPACE_ROOT:-/var/lib/space}
ID=""

usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=${2:?}; shift 2 ;;
    --count) COUNT=${2:?}; shift 2 ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) ID=$1; shift ;;
  esac
done
[ -x "$SPACE_BIN" ] || { echo "bench-exec: no space binary at $SPACE_BIN (build it, or set SPACE_BIN)" >&2; exit 1; }

created=""
cleanup() {
  if [ -n "$created" ]; then "$SPACE_BIN" --root "$ROOT" destroy --force "$created" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
if [ -z "$ID" ]; then
  ID=bench-exec-$$
  echo "bench-exec: creating sandbox $ID in $ROOT" >&2
  "$SPACE_BIN" --root "$ROOT" create "$ID" >/dev/null
  created=$ID
fi

echo "bench-exec: $(uname -r), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg); sandbox $ID"
python3 - "$SPACE_BIN" "$ROOT" "$ID" "$COUNT" <<'PY'
import json, os, re, subprocess, sys, time

space, root, sid, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
env = dict(os.environ, SPACE_EXEC_STATS="1")
pat = re.compile(r"(\w+)_ms=([0-9.]+)")

def one():
    t0 = time.perf_counter_ns()
    p = subprocess.run([space, "--root", root, "exec", sid, "--", "true"], env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = (time.perf_counter_ns() - t0) / 1e6
    if p.returncode != 0:
        sys.exit("bench-exec: exec failed (%d): %s" % (p.returncode, p.stderr.strip()))
    stats = dict((k, float(v)) for k, v in pat.findall(p.stderr))
    return wall, stats

def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]

def space_out(*args):
    return subprocess.run([space, "--root", root, *args], check=True, capture_output=True,
                          text=True).stdout

def guest_init_stat():
    # /proc/1/stat in the guest: guest-init's own minflt, utime, stime (fields 10, 14, 15) and its
    # reaped children's cminflt, cutime, cstime (11, 16, 17); times in USER_HZ (100) ticks.
    f = space_out("exec", sid, "--", "cat", "/proc/1/stat").rsplit(")", 1)[1].split()
    g = lambda n: int(f[n - 3])
    return {"own_ms": (g(14) + g(15)) * 10, "children_ms": (g(16) + g(17)) * 10,
            "children_minflt": g(11)}

vmm_pid = json.loads(space_out("state", sid, "--format", "json"))["pid"]
def vmm_cpu_ms():  # every thread of the VMM (vCPU, devices, control), to the nanosecond
    total = 0
    for t in os.listdir(f"/proc/{vmm_pid}/task"):
        try:
            total += int(open(f"/proc/{vmm_pid}/task/{t}/schedstat").read().split()[0])
        except OSError:
            pass
    return total / 1e6

one()  # warm-up: page cache, first connection
before, cpu0 = guest_init_stat(), vmm_cpu_ms()
runs = [one() for _ in range(count)]
cpu1, after = vmm_cpu_ms(), guest_init_stat()
wall = [w for w, _ in runs]
guest = [s["guest"] for _, s in runs]
host = [w - g for w, g in zip(wall, guest)]
print("%d runs of `space exec %s true` (after 1 warm-up), in ms:" % (count, sid))
print("  %-34s %10s %10s" % ("", "median", "p90"))
for name, xs in (("end to end (space process)", wall), ("guest: Exec request to exit", guest),
                 ("host side (difference per run)", host)):
    print("  %-34s %10.1f %10.1f" % (name, pct(xs, 0.5), pct(xs, 0.9)))
print("  host parts, median: connect %.1f ms, Hello+Exec round trip %.1f ms, in-process total %.1f ms"
      % (pct([s["connect"] for _, s in runs], 0.5), pct([s["hello"] for _, s in runs], 0.5),
         pct([s["total"] for _, s in runs], 0.5)))

# Where the time goes, as CPU time per exec over the runs above (means). The VMM's threads
# include the vCPU, so the guest kernel's work; guest-init's own time and its reaped children's
# come from /proc/1/stat in the guest (10 ms ticks; the children are the runs' `true`s plus the
# `cat` that read the first sample, hence count + 1).
n = count + 1
d = {k: (after[k] - before[k]) / n for k in before}
print("CPU time per exec (means over %d):" % count)
print("  the VMM, all threads (vCPU: the guest's kernel and user code; devices) %8.1f ms"
      % ((cpu1 - cpu0) / count))
print("  of which guest-init (PID 1) itself, user + system                     %8.1f ms" % d["own_ms"])
print("  of which the exec'd process (fork, exec, run, exit), user + system    %8.1f ms, %.0f page faults"
      % (d["children_ms"], d["children_minflt"]))

# The guest kernel's cost of one process's life with nothing of space in the way: busybox
# `time -v true` run by a shell in the guest.
tv = space_out("exec", sid, "--", "sh", "-c", "time -v true 2>&1")
field = lambda name: re.search(re.escape(name) + r": *([0-9.:]+)", tv)
if field("System time (seconds)"):
    el = re.search(r"Elapsed .*\): *(?:(\d+)h )?(\d+)m ([0-9.]+)s", tv)
    el_ms = (int(el.group(1) or 0) * 3600 + int(el.group(2)) * 60 + float(el.group(3))) * 1000
    print("  for comparison, `time -v true` from a shell in the guest: %.0f ms elapsed, system %.0f ms,"
          " user %.0f ms, %s page faults" % (el_ms,
          float(field("System time (seconds)").group(1)) * 1000,
          float(field("User time (seconds)").group(1)) * 1000,
          field("Minor (reclaiming a frame) page faults").group(1)))
PY
