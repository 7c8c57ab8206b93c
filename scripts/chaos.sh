#!/usr/bin/env bash
# Fault campaign (issue 16, item 3): trials that kill -9 a VMM, a CLI command or the credential
# helper at a random moment while an operation runs (create, exec, pause, checkpoint, resume,
# branch, destroy, template build, and an idle checkpoint, whose "CLI" is the expiry reaper that
# takes it: core/idle.h), or SIGSTOP a VMM (a hung VMM), deterministically from a seed.
# After every trial it checks that:
#   - every state.json parses, and `space list` agrees with reality: a sandbox listed running or
#     paused has a live VMM answering its control socket, one listed stopped has none;
#   - a checkpoint reported complete restores, and the file the guest wrote before it is intact;
#   - after a cut idle checkpoint, the next exec wakes the sandbox and reads that file, or ends
#     with a clear error;
#   - commands against a stopped or hung VMM end with a clear error (exit 125, "space: error")
#     within a bounded time, never hang;
#   - `destroy --force` of everything, then `template list` (which sweeps dead template builds),
#     leave no process, socket, subvolume, mount, loop device or cgroup of the trial behind.
# It prints one line per trial and a table of trials by operation and outcome; it exits 1 if any
# check failed. Plain lines, no timing assertions.
#
# Usage: scripts/chaos.sh [--trials N] [--seed S] [--template-dir DIR] [--keep]
#   --template-dir: an exported template to import as "base" (default: the newest in
#   $SPACE_CACHE/test-templates, else one cold boot). The root is $SPACE_ROOT when set (the
#   integration test's), else a private one under /tmp. Needs /dev/kvm, or runsc for the gvisor
#   engine (then the "VMM" a trial kills or stops is the sandbox's gvisor monitor).
# Environment: SPACE_BIN (default build/space), SPACE_CHAOS_TIMEOUT (seconds any command may
# take before it counts as hung, default 120).
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
TRIALS=100
SEED=1
TEMPLATE_DIR=""
KEEP=0
usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --trials) TRIALS=${2:?}; shift 2 ;;
    --seed) SEED=${2:?}; shift 2 ;;
    --template-dir) TEMPLATE_DIR=${2:?}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage ;;
    *) echo "chaos: unknown argument '$1'" >&2; usage ;;
  esac
done
source "$SRC/scripts/private-root.sh"
campaign_root chaos

echo "chaos: $TRIALS trials, seed $SEED, root $SPACE_ROOT, space $SPACE_BIN"
python3 - "$SPACE_BIN" "$SPACE_ROOT" "${SPACE_RUN_DIR:-/run/space}" "$CGROUP_PARENT" "$TRIALS" "$SEED" \
  "${SPACE_CHAOS_TIMEOUT:-120}" <<'PY'
import collections, glob, json, os, random, signal, socket, subprocess, sys, time

space, root, run_dir, cg_parent, trials, seed, limit = sys.argv[1:8]
trials, seed, limit = int(trials), int(seed), int(limit)
rng = random.Random(seed)
cred_dir = root.rstrip("/") + ".cred"

def sh(*args, timeout=None, check=False, inp=None):
    """Runs space ARGS; returns (rc, stdout, stderr, seconds); rc None when it hung."""
    t0 = time.monotonic()
    try:
        r = subprocess.run([space, *args], capture_output=True, text=True, input=inp,
                           timeout=timeout or limit)
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or "", e.stderr or "", time.monotonic() - t0
    if check and r.returncode != 0:
        raise RuntimeError(f"space {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r.returncode, r.stdout, r.stderr, time.monotonic() - t0

def state(i):
    try:
        with open(f"{root}/store/sandboxes/{i}/state.json") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except ValueError as e:
        problems.append(f"{i}/state.json does not parse: {e}")
        return None

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False

def pings(i, timeout=5.0):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    try:
        s.connect(f"{run_dir}/{i}/control.sock")
        s.sendall(b'{"op":"ping"}\n')
        return b'"ok":true' in s.recv(4096)
    except OSError:
        return False
    finally:
        s.close()

def jail_pids():
    """VMMs and their jails' PID 1, gvisor monitors, and runsc's processes of this root."""
    out = subprocess.run(["pgrep", "-f", f"--root {root}( .* | )__(vmm|jail-init|gvisor) "], capture_output=True, text=True)
    runsc = subprocess.run(["pgrep", "-f", f"--root={run_dir.rstrip('/')}/"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split() + runsc.stdout.split()]

def reaper_pids():
    out = subprocess.run(["pgrep", "-f", f"--root {root}( .* | )__expire"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]

def credd_pid():
    out = subprocess.run(["pgrep", "-f", f"__credd --cred-dir {cred_dir}"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]

def mounts():
    """Mount points under this root or its run directory (the store's own mount is the baseline)."""
    out = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4]
            if mp.startswith(root.rstrip("/") + "/") or mp.startswith(run_dir.rstrip("/") + "/"):
                out.add(mp)
    return out

def loops():
    """Loop devices backed by a file under this root (other tests' stores are theirs), as (device,
    file) pairs: the table's padding widens when any /dev/loop10+ appears, so lines do not compare."""
    r = subprocess.run(["losetup", "--list", "--raw", "--noheadings", "--output", "NAME,BACK-FILE"],
                       capture_output=True, text=True)
    pairs = {tuple(l.split(None, 1)) for l in r.stdout.split("\n") if l.strip()}
    return {p for p in pairs if len(p) == 2 and p[1].startswith(root.rstrip("/") + "/")}

def sandboxes():
    d = f"{root}/store/sandboxes"
    return sorted(os.listdir(d)) if os.path.isdir(d) else []

def settled(i, l, seconds=3.0):
    # The listing of i once its VMM answers or list no longer shows it running or paused.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if pings(i):
            return l
        rc, out, _, _ = sh("list", "--format", "json")
        now = {s["id"]: s for s in json.loads(out)}.get(i) if rc == 0 else None
        if now is not None and now["status"] not in ("running", "paused"):
            return now
    return l

problems = []
def check(cond, what):
    if not cond:
        problems.append(what)
    return cond

def clear_error(rc, err):
    return rc == 125 and "space: error:" in err

sh("secret", "set", "CHAOS", inp="chaos-value", check=True)
BASE_MOUNTS, BASE_LOOPS = mounts(), loops()

OPS = ["create", "exec", "pause", "checkpoint", "resume", "branch", "destroy", "template", "idle"]
# How long each operation roughly takes here, to draw the moment of the kill from.
SPAN = {"create": 0.08, "exec": 2.5, "pause": 0.05, "checkpoint": 0.5, "resume": 0.1,
        "branch": 0.2, "destroy": 0.1, "template": 20.0, "idle": 0.3}
table = collections.Counter()
lines = []

for t in range(trials):
    op = OPS[t % len(OPS)] if t < len(OPS) else rng.choice(OPS)
    target = rng.choice(["vmm", "cli", "credd", "stop-vmm"])
    if op == "template" and target in ("vmm", "credd", "stop-vmm"):
        target = rng.choice(["cli", "vmm"])
    delay = rng.uniform(0, SPAN[op])
    sid = f"c{t}"
    problems.clear()
    # Set-up: a running sandbox with a marker file (and a grant, for the helper to be there).
    if op != "create" and op != "template":
        idle = ["--idle-checkpoint", "1s"] if op == "idle" else []
        rc, _, err, _ = sh("create", "--template", "base", "--secret", "CHAOS", *idle, sid)
        if rc != 0:
            problems.append(f"set-up create failed: {err.strip()}")
        else:
            sh("exec", sid, "--", "sh", "-c", f"echo mark-{t} > /root/mark; sync")
            if op == "resume":
                sh("checkpoint", sid, check=True)
    args = {"create": ["create", "--template", "base", sid],
            "exec": ["exec", sid, "--", "sh", "-c", "sleep 1; echo done"],
            "pause": ["pause", sid],
            "checkpoint": ["checkpoint", sid],
            "resume": ["resume", sid],
            "branch": ["branch", sid, "--count", "2", "--name", f"{sid}b"],
            "destroy": ["destroy", sid],
            "template": ["template", "build", f"t{t}"],
            "idle": ["exec", sid, "--", "cat", "/root/mark"]}[op]
    before = state(sid)
    proc = None
    if op == "idle":  # the reaper's checkpoint is the operation; the exec comes after the kill
        d = f"{root}/store/sandboxes/{sid}"
        deadline = time.monotonic() + 60
        while (not os.path.isdir(f"{d}/checkpoint.tmp") and not os.path.isdir(f"{d}/checkpoint")
               and time.monotonic() < deadline):
            time.sleep(0.002)
    else:
        proc = subprocess.Popen([space, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    victim = None
    st = state(sid)
    if target == "cli" and proc is None:
        for p in reaper_pids():
            victim = p
            os.kill(p, signal.SIGKILL)
    elif target == "cli":
        victim = proc.pid
        os.kill(proc.pid, signal.SIGKILL)
    elif target in ("vmm", "stop-vmm"):
        pid = (st or {}).get("pid") or 0
        if op == "template":
            cands = [p for p in jail_pids()]  # the build's VMM (and its jail init)
            pid = cands[-1] if cands else 0
        if pid and alive(pid):
            victim = pid
            os.kill(pid, signal.SIGKILL if target == "vmm" else signal.SIGSTOP)
    elif target == "credd":
        for p in credd_pid():
            victim = p
            os.kill(p, signal.SIGKILL)
    # A hung VMM: a new command against it ends, clearly, within a bounded time (the one already
    # waiting on it may wait: a command in the guest can run for as long as it likes). Then the
    # VMM goes on.
    if target == "stop-vmm" and victim:
        rc2, _, err2, secs = sh("pause", sid, timeout=60)
        check(rc2 is not None, "pause of a hung VMM hung")
        check(rc2 == 0 or clear_error(rc2, err2), f"pause of a hung VMM: exit {rc2}: {err2.strip()[:200]}")
        os.kill(victim, signal.SIGCONT)
    if proc is None:
        proc = subprocess.Popen([space, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=limit)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = None
    if rc is None:
        outcome = "hung"
        problems.append(f"'space {' '.join(args)}' did not end within {limit} s")
    elif rc == 0:
        outcome = "completed"
    elif rc < 0 and target == "cli" and op != "idle":
        outcome = "cli killed"
    elif clear_error(rc, err):
        outcome = "clear error"
    else:
        outcome = "unclear error"
        problems.append(f"'space {' '.join(args)}' exited {rc} without a clear error: {err.strip()[:200]}")

    # Every record parses; list agrees with the processes and sockets.
    rcl, lout, lerr, _ = sh("list", "--format", "json")
    if check(rcl == 0, f"list failed: {lerr.strip()}"):
        listed = {s["id"]: s for s in json.loads(lout)}
        for i in sandboxes():
            s = state(i)
            if s is None:
                continue  # a create or branch caught before its record: destroy --force cleans it
            l = listed.get(i)
            if not check(l is not None, f"{i} has a record but list skips it"):
                continue
            if l["status"] in ("running", "paused") and not pings(i):
                # A VMM just killed takes a moment to exit (its guest's memory to unmap): until
                # it has, list rightly shows it; it must show it stopped within 3 s.
                l = settled(i, l)
            if l["status"] in ("running", "paused"):
                check(alive(l["pid"]), f"{i} listed {l['status']} but its VMM {l['pid']} is gone")
                check(pings(i), f"{i} listed {l['status']} but its control socket does not answer")
            elif l["status"] in ("stopped", "checkpointed"):
                check(not l.get("pid") or not alive(l["pid"]) or l["status"] == "stopped",
                      f"{i} listed {l['status']} with a live VMM")

    # After a cut idle checkpoint, an exec that completed read the guest's file.
    if op == "idle" and rc == 0:
        check(out.strip() == f"mark-{t}", f"file after a cut idle checkpoint: '{out.strip()}'")

    # A checkpoint reported complete restores with the guest's file.
    if op == "checkpoint" and rc == 0:
        rc3, _, err3, _ = sh("resume", sid)
        if check(rc3 == 0, f"resume of a completed checkpoint failed: {err3.strip()[:200]}"):
            rc4, o4, _, _ = sh("exec", sid, "--", "cat", "/root/mark")
            check(rc4 == 0 and o4.strip() == f"mark-{t}", f"checkpointed guest file: '{o4.strip()}'")

    # Clean-up leaves nothing.
    for i in sandboxes():
        rc5, _, err5, _ = sh("destroy", "--force", i)
        check(rc5 == 0, f"destroy --force {i}: {err5.strip()[:200]}")
    sh("template", "list")  # sweeps template builds that died
    if op == "template":
        sh("template", "rm", f"t{t}")
    deadline = time.monotonic() + 5
    while jail_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    check(not jail_pids(), f"VMM or jail processes left: {jail_pids()}")
    left = [e for e in os.listdir(run_dir) if not e.startswith(".uids")] if os.path.isdir(run_dir) else []
    left = [e for e in left if not e.startswith("egress-")]
    check(not left, f"run directories left: {left}")
    check(not sandboxes(), f"sandbox subvolumes left: {sandboxes()}")
    builds = glob.glob(f"{root}/store/templates/.*")
    check(not builds, f"template builds left: {builds}")
    cgs = [d for d in glob.glob(f"/sys/fs/cgroup/*/{cg_parent}/*/") if not d.rstrip("/").endswith("/init")]
    check(not cgs, f"cgroups left: {cgs}")
    check(mounts() == BASE_MOUNTS, f"mounts left: {sorted(mounts() - BASE_MOUNTS)}")
    check(loops() == BASE_LOOPS, f"loop devices left: {sorted(loops() - BASE_LOOPS)}")
    if target == "credd":
        sh("secret", "list")  # the helper comes back for the next trial

    verdict = "ok" if not problems else "FAIL"
    table[(op, outcome, verdict)] += 1
    print(f"trial {t:3d}: {op:<10} kill {target:<8} after {delay * 1000:7.1f} ms: {outcome:<16} {verdict}"
          + ("" if not problems else " -- " + "; ".join(problems)), flush=True)
    lines.append(verdict)

print()
print(f"{'operation':<11} {'outcome':<17} {'checks':<6} trials")
for (op, outcome, verdict), n in sorted(table.items()):
    print(f"{op:<11} {outcome:<17} {verdict:<6} {n}")
failed = lines.count("FAIL")
print(f"{len(lines)} trials, {failed} with failed checks (seed {seed})")
sys.exit(1 if failed else 0)
PY
