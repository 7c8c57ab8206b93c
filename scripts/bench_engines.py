#!/usr/bin/env python3
# The measuring half of scripts/bench-engines.sh (which prepares the private root, the rootfs and
# the Debian image, and documents the rows): it runs each row in each column and prints the table.
# The bare-runsc peer runs the same runsc with space's flags (--network=none, the overlay, no host
# sockets) on the same rootfs and image, mounted read-only under $WORK/mnt, with a sleeping
# process as the container's; bwrap and native run only the exec rows (they have no sandbox to
# create or keep). All timing is time.perf_counter_ns around one subprocess each. No assertion
# on any figure; a row that fails prints as such and the others go on.
import json
import os
import statistics
import subprocess
import sys
import time

SPACE = os.environ["SPACE_BIN"]
WORK = os.environ["WORK"]
ROOTFS = os.environ["ROOTFS"]
RUNS = int(os.environ.get("RUNS", "10"))
LIVE = int(os.environ.get("LIVE", "20"))
IMAGE = os.environ.get("IMAGE", "1") == "1"
HAVE_KVM = os.path.exists("/dev/kvm")
failed = []


def run(argv, check=True, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv[:4]), r.returncode, r.stderr.strip()[-300:]))
    return r


def timed(argv, **kw):
    t0 = time.perf_counter_ns()
    run(argv, **kw)
    return (time.perf_counter_ns() - t0) / 1e6


def p50(xs):
    return statistics.median(xs) if xs else None


def p90(xs):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.9 * (len(s) - 1))))]


def pss_kib(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def pids_of_cgroup(rel):
    out = set()
    for hier in ("memory", "pids", "unified", ""):
        path = os.path.join("/sys/fs/cgroup", hier, rel, "cgroup.procs")
        try:
            with open(path) as f:
                out.update(int(x) for x in f.read().split())
        except OSError:
            pass
    return out


# --- space (either engine) ------------------------------------------------------------------


class Space:
    def __init__(self, engine):
        self.engine = engine
        self.n = 0

    def new_id(self):
        self.n += 1
        return "be-%s-%d" % (self.engine[:2], self.n)

    def create(self, image=None):
        sid = self.new_id()
        argv = [SPACE, "create", "--engine", self.engine, "--template", "bench-" + self.engine]
        if image:
            argv += ["--image", image]
        t = timed(argv + [sid])
        return sid, t

    def exec(self, sid, *cmd):
        return timed([SPACE, "exec", sid, "--"] + list(cmd))

    def destroy(self, sid):
        return timed([SPACE, "destroy", "--force", sid])

    def pss(self, sid):
        st = json.loads(run([SPACE, "state", sid]).stdout)
        pids = {st["pid"]} | pids_of_cgroup(st["cgroup"]) if st.get("cgroup") else {st["pid"]}
        return sum(pss_kib(p) for p in pids)


# --- bare runsc -------------------------------------------------------------------------------


class Runsc:
    def __init__(self):
        self.root = os.path.join(WORK, "runsc-state")
        self.n = 0
        os.makedirs(self.root, exist_ok=True)
        self.flags = ["--root=" + self.root, "--platform=systrap", "--network=none",
                      "--overlay2=all:memory", "--host-uds=open"]

    def bundle(self, root_dir, cid):
        b = os.path.join(WORK, "bundles", cid)
        os.makedirs(b, exist_ok=True)
        run(["runsc", "spec", "--bundle", b, "--", "sleep", "100000000"])
        with open(os.path.join(b, "config.json")) as f:
            spec = json.load(f)
        spec["root"] = {"path": root_dir, "readonly": False}
        spec["process"]["terminal"] = False
        spec["linux"]["cgroupsPath"] = "/bench-runsc/" + cid
        spec["linux"].setdefault("resources", {})["memory"] = {"limit": 256 << 20}
        with open(os.path.join(b, "config.json"), "w") as f:
            json.dump(spec, f)
        return b

    def cmd(self, *args):
        return ["runsc"] + self.flags + list(args)

    def create(self, root_dir):
        self.n += 1
        cid = "br%06d" % self.n
        b = self.bundle(root_dir, cid)
        # runsc create leaves its daemons holding its stdout and stderr: a file, not a pipe that
        # would never reach EOF.
        log = open(os.path.join(WORK, "runsc-create.log"), "ab")
        t0 = time.perf_counter_ns()
        r = subprocess.run(self.cmd("create", "--bundle", b, cid), stdin=subprocess.DEVNULL,
                           stdout=log, stderr=log)
        log.close()
        if r.returncode != 0:
            raise RuntimeError("runsc create: exit %d (see %s/runsc-create.log)" % (r.returncode, WORK))
        run(self.cmd("start", cid))
        return cid, (time.perf_counter_ns() - t0) / 1e6

    def exec(self, cid, *cmd):
        return timed(self.cmd("exec", cid) + list(cmd))

    def destroy(self, cid):
        return timed(self.cmd("delete", "--force", cid))

    def pss(self, cid):
        return sum(pss_kib(p) for p in pids_of_cgroup("bench-runsc/" + cid))


def mount_ro(image, name):
    d = os.path.join(WORK, "mnt", name)
    os.makedirs(d, exist_ok=True)
    run(["mount", "-o", "ro,noload,loop", image, d])
    return d


# --- the rows ---------------------------------------------------------------------------------


def fmt(ms):
    if ms is None:
        return "-"
    return "%.0f ms" % ms if ms >= 100 else "%.1f ms" % ms


def lifecycle(name, eng, results, image_name):
    """create, first exec, exec true, python3, pause/resume, destroy, for `eng`."""
    creates, firsts, execs, destroys = [], [], [], []
    pauses, resumes = [], []
    for _ in range(RUNS):
        sid, t = eng.create() if name != "runsc" else eng.create(ROOTFS_DIR)
        creates.append(t)
        firsts.append(eng.exec(sid, "true") if name != "runsc" else eng.exec(sid, "/bin/true"))
        destroys.append(eng.destroy(sid))
    sid, _ = eng.create() if name != "runsc" else eng.create(ROOTFS_DIR)
    for _ in range(RUNS):
        execs.append(eng.exec(sid, "true") if name != "runsc" else eng.exec(sid, "/bin/true"))
    for _ in range(max(3, RUNS // 2)):
        if name == "runsc":
            pauses.append(timed(eng.cmd("pause", sid)))
            resumes.append(timed(eng.cmd("resume", sid)))
        else:
            pauses.append(timed([SPACE, "pause", sid]))
            resumes.append(timed([SPACE, "resume", sid]))
    if name != "runsc":
        for count in (1, 10):
            bid = "be-br-%s-%d" % (name[:2], count)
            t = timed([SPACE, "branch", "--count", str(count), "--name", bid, sid])
            results[("branch %d" % count, name)] = fmt(t)
            for i in range(1, count + 1):
                eng.destroy(bid if count == 1 else "%s-%d" % (bid, i))
    eng.destroy(sid)
    results[("create p50 (p90)", name)] = "%s (%s)" % (fmt(p50(creates)), fmt(p90(creates)))
    results[("first exec", name)] = fmt(p50(firsts))
    results[("exec true p50 (p90)", name)] = "%s (%s)" % (fmt(p50(execs)), fmt(p90(execs)))
    results[("pause / resume", name)] = "%s / %s" % (fmt(p50(pauses)), fmt(p50(resumes)))
    results[("destroy", name)] = fmt(p50(destroys))
    raw[("create", name)] = p50(creates)
    raw[("exec", name)] = p50(execs)
    if IMAGE and image_name:
        if name == "runsc":
            sid, _ = eng.create(IMAGE_DIR)
            ts = [eng.exec(sid, "python3", "-c", "pass") for _ in range(RUNS)]
        else:
            sid, _ = eng.create(image_name)
            ts = [eng.exec(sid, "python3", "-c", "pass") for _ in range(RUNS)]
        eng.destroy(sid)
        results[("python3 -c pass", name)] = fmt(p50(ts))
        raw[("python", name)] = p50(ts)


def density(name, eng, results):
    ids, ok = [], True
    try:
        for _ in range(LIVE):
            sid, _ = eng.create() if name != "runsc" else eng.create(ROOTFS_DIR)
            ids.append(sid)
        time.sleep(2)  # idle
        total = sum(eng.pss(sid) for sid in ids)
        results[("PSS per idle sandbox (%d live)" % LIVE, name)] = "%.1f MiB" % (total / len(ids) / 1024)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        ok = False
        results[("PSS per idle sandbox (%d live)" % LIVE, name)] = "failed at %d: %s" % (len(ids), e)
        failed.append(name)
    finally:
        for sid in ids:
            try:
                eng.destroy(sid)
            except Exception:  # noqa: BLE001
                pass
    return ok


def pooled(eng, results):
    """space gvisor with [engine.gvisor] pool = 2 (core/pool.h): each create finds a ready member
    (the refill is waited for between creates, untimed); then its first exec, and the destroy."""
    conf = os.path.join(os.environ["SPACE_ROOT"], "config.toml")
    with open(conf) as f:
        before = f.read()
    with open(conf, "a") as f:
        f.write("[engine.gvisor]\npool = 2\n")

    def ready():
        pools = json.loads(run([SPACE, "template", "pool", "--format", "json"]).stdout)
        return next((p["ready"] for p in pools if p["template"] == "bench-gvisor"), 0)

    creates, firsts = [], []
    try:
        run([SPACE, "template", "pool", "bench-gvisor"])
        for _ in range(RUNS):
            deadline = time.monotonic() + 60
            while ready() < 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            sid, t = eng.create()
            creates.append(t)
            firsts.append(eng.exec(sid, "true"))
            eng.destroy(sid)
    finally:
        run([SPACE, "template", "pool", "--drain"], check=False)
        with open(conf, "w") as f:
            f.write(before)
    results[("create from a pool p50 (p90)", "space gvisor")] = "%s (%s)" % (
        fmt(p50(creates)), fmt(p90(creates)))
    results[("first exec, pooled", "space gvisor")] = fmt(p50(firsts))
    raw[("pooled create", "space gvisor")] = p50(creates)


def exec_only(name, results):
    bw = ["bwrap", "--ro-bind", ROOTFS_DIR, "/", "--proc", "/proc", "--dev", "/dev",
          "--unshare-all", "--die-with-parent"]
    if name == "bwrap":
        ts = [timed(bw + ["/bin/true"]) for _ in range(RUNS)]
    else:
        ts = [timed(["/bin/true"]) for _ in range(RUNS)]
    results[("exec true p50 (p90)", name)] = "%s (%s)" % (fmt(p50(ts)), fmt(p90(ts)))
    raw[("exec", name)] = p50(ts)
    if IMAGE:
        if name == "bwrap":
            ib = ["bwrap", "--ro-bind", IMAGE_DIR, "/", "--proc", "/proc", "--dev", "/dev",
                  "--tmpfs", "/tmp", "--unshare-all", "--die-with-parent"]
            ts = [timed(ib + ["python3", "-c", "pass"]) for _ in range(RUNS)]
        else:
            ts = [timed(["chroot", IMAGE_DIR, "python3", "-c", "pass"]) for _ in range(RUNS)]
        results[("python3 -c pass", name)] = fmt(p50(ts))
        raw[("python", name)] = p50(ts)


raw = {}
results = {}
ROOTFS_DIR = mount_ro(ROOTFS, "rootfs")
IMAGE_DIR = None
if IMAGE:
    IMAGE_DIR = mount_ro(os.path.join(os.environ["SPACE_ROOT"], "store/images/deb/disk.ext4"), "image")

columns = ["space gvisor", "runsc", "bwrap", "native"] + (["space vm"] if HAVE_KVM else [])
engines = {"space gvisor": Space("gvisor"), "runsc": Runsc()}
run([SPACE, "template", "build", "--engine", "gvisor", "bench-gvisor"])
if HAVE_KVM:
    engines["space vm"] = Space("vm")
    run([SPACE, "template", "build", "--engine", "vm", "bench-vm"])
for col in columns:
    try:
        if col in engines:
            lifecycle(col if col != "runsc" else "runsc", engines[col], results,
                      "deb" if IMAGE else None)
            density(col, engines[col], results)
            if col == "space gvisor":
                pooled(engines[col], results)
        else:
            exec_only(col, results)
    except Exception as e:  # noqa: BLE001 - reported, the other columns go on
        print("bench-engines: %s failed: %s" % (col, e), file=sys.stderr)
        failed.append(col)

rows = ["create p50 (p90)", "first exec", "create from a pool p50 (p90)", "first exec, pooled",
        "exec true p50 (p90)", "python3 -c pass",
        "pause / resume", "branch 1", "branch 10", "destroy",
        "PSS per idle sandbox (%d live)" % LIVE]
width = max(len(r) for r in rows) + 2
print("".join(c.ljust(18) for c in [" " * width] + columns))
for r in rows:
    print(r.ljust(width) + "".join(results.get((r, c), "-").ljust(18) for c in columns))


def ratio(a, b):
    return "%.2fx" % (a / b) if a and b else "-"


print("ratios: gvisor/runsc create %s (from a pool %s), exec %s, python %s; gvisor/native "
      "python %s; gvisor/bwrap exec %s" % (
          ratio(raw.get(("create", "space gvisor")), raw.get(("create", "runsc"))),
          ratio(raw.get(("pooled create", "space gvisor")), raw.get(("create", "runsc"))),
          ratio(raw.get(("exec", "space gvisor")), raw.get(("exec", "runsc"))),
          ratio(raw.get(("python", "space gvisor")), raw.get(("python", "runsc"))),
          ratio(raw.get(("python", "space gvisor")), raw.get(("python", "native"))),
          ratio(raw.get(("exec", "space gvisor")), raw.get(("exec", "bwrap")))))
for m in (ROOTFS_DIR, IMAGE_DIR):
    if m:
        run(["umount", m], check=False)
sys.exit(1 if failed else 0)
