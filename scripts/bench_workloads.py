#!/usr/bin/env python3
# The measuring half of scripts/bench-workloads.sh (which prepares the root, the image, the
# templates and the page server, and documents the rows and columns): it writes the fixtures,
# makes the sandboxes, runs every row in each column and prints the table. Natively the rows run
# in a child process (`--native-server`) that lives in a private mount namespace of its own: a
# read-only loop mount of the image's disk under a tmpfs overlay, chrooted into per command, so
# its mounts go away with it whatever happens. All timing is time.perf_counter_ns around one
# subprocess each, in this process or in that child. No assertion on any figure.
import argparse
import base64
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
import zipfile

GUEST_DIR = "/var/tmp/w"
TIMEOUT = int(os.environ.get("SPACE_BENCH_ROW_TIMEOUT", "600"))
NOT_IN_IMAGE = 200  # a row's exit code when the image lacks its program


def rows(port, sha_zero_100m):
    """(name, preparation, command, expected substring of stdout)."""
    return [
        ("py_pass", "", "python3 -c pass", ""),
        ("py_imports", "", 'python3 -c "import ssl, sqlite3, json"', ""),
        ("pytest50", "", "python3 -m pytest -q -p no:cacheprovider proj", "50 passed"),
        ("git200", "rm -rf g && cp -r tree200 g",
         "cd g && git init -q && git add -A && "
         "git -c user.name=b -c user.email=b@example.invalid commit -q -m x && "
         "git rev-list --count HEAD", "1"),
        ("pip_wheel", "rm -rf site",
         "python3 -m pip install -q --no-index --no-deps --disable-pip-version-check "
         "--no-compile --target site wl_pkg-1.0-py3-none-any.whl && "
         "test -f site/wl_pkg/__init__.py && echo installed", "installed"),
        ("node", "", "command -v node >/dev/null || exit %d; node -e 0" % NOT_IN_IMAGE, ""),
        ("cc_hello", "rm -f a.out", "cc hello.c && ./a.out", "hello 42"),
        ("tar30", "[ -f a30.tar ] || tar -cf a30.tar -C /usr/lib python3.11; rm -rf x && mkdir x",
         "tar -xf a30.tar -C x", ""),
        ("sha256_100m", "[ -f big ] || head -c 104857600 /dev/zero >big", "sha256sum big",
         sha_zero_100m),
        ("chromium", "",
         "command -v chromium >/dev/null || exit %d; "
         "chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
         "--no-first-run ${http_proxy:+--proxy-server=\"$http_proxy\" --proxy-bypass-list='<-loopback>'} "
         "--dump-dom http://127.0.0.2:%d/ 2>/dev/null" % (NOT_IN_IMAGE, port), "space-bench-page"),
    ]


def wrap(cmd):
    # The command in braces (a cd stays inside), then the shell's `times` (its children's user and
    # system CPU) on stderr: a builtin, so no process and no read of /proc is added.
    return "cd %s && { %s\n}; rc=$?; times >&2; exit $rc" % (GUEST_DIR, cmd)


def write_fixtures(d):
    os.makedirs(d)
    proj = os.path.join(d, "proj")
    os.makedirs(proj)
    for f in range(5):
        with open(os.path.join(proj, "test_m%d.py" % f), "w") as out:
            out.write("import json\n\n")
            for t in range(10):
                out.write("def test_%d_%d():\n    data = [i * %d for i in range(200)]\n"
                          "    assert json.loads(json.dumps(data)) == data\n\n" % (f, t, t + 1))
    for i in range(200):
        sub = os.path.join(d, "tree200", "d%d" % (i % 10))
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, "f%d.txt" % i), "w") as out:
            out.write(("line %d of file %d\n" % (i, i)) * 100)
    with open(os.path.join(d, "hello.c"), "w") as out:
        out.write('#include <stdio.h>\nint main(void) { printf("hello %d\\n", 6 * 7); return 0; }\n')
    # A pure-Python wheel made by hand (a zip with its dist-info and RECORD): no build backend.
    files = {"wl_pkg/__init__.py": b"VALUE = 42\n",
             "wl_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: wl-pkg\nVersion: 1.0\n",
             "wl_pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: space-bench\n"
                                           b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (name, digest, len(data))
    record += "wl_pkg-1.0.dist-info/RECORD,,\n"
    with zipfile.ZipFile(os.path.join(d, "wl_pkg-1.0-py3-none-any.whl"), "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("wl_pkg-1.0.dist-info/RECORD", record)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


TIMES = re.compile(r"^(\d+)m([0-9.]+)s (\d+)m([0-9.]+)s$", re.M)
STATS = re.compile(r"guest_ms=([0-9.]+)")


def children_cpu(stderr):
    # `times` prints the shell's own line, then its children's: the last match is the children's.
    m = TIMES.findall(stderr)
    if not m:
        return None
    um, us, sm, ss = m[-1]
    return int(um) * 60 + float(us), int(sm) * 60 + float(ss)


class Result:
    def __init__(self):
        self.wall, self.guest, self.user, self.sys, self.faults = [], [], [], [], []
        self.error = None

    def cell(self):
        if self.error:
            return self.error
        s = "%.2f s" % (statistics.median(self.wall) / 1e3)
        if self.guest:
            s += " (%.2f)" % (statistics.median(self.guest) / 1e3)
        return s


# --- the VM engine -------------------------------------------------------------------------

class Sandbox:
    def __init__(self, space, sid, faults=True):
        # faults: whether the guest's /proc/1/stat counts page faults (gVisor's reports none).
        self.space, self.sid, self.faults = space, sid, faults

    def run(self, *args, env=None, timeout=None):
        return subprocess.run([self.space, *args], capture_output=True, text=True, env=env,
                              timeout=timeout)

    def sh(self, script, stats=False):
        env = dict(os.environ, SPACE_EXEC_STATS="1") if stats else None
        return self.run("exec", "--timeout", str(TIMEOUT), self.sid, "--", "sh", "-c", script,
                        env=env, timeout=TIMEOUT + 60)

    def pgfault(self):
        if not self.faults:
            return 0
        # guest-init's cminflt (/proc/1/stat field 11): the minor faults of every process it
        # reaped, each exec's with all of its descendants (the guest kernel has no vm event
        # counters, so /proc/vmstat has no pgfault). The reading `cat` itself counts in the next.
        p = self.run("exec", self.sid, "--", "cat", "/proc/1/stat")
        try:
            return int(p.stdout.rsplit(")", 1)[1].split()[8])
        except (IndexError, ValueError):
            raise SystemExit("bench-workloads: cannot read the guest's /proc/1/stat: %r" % p.stdout)


def measure_vm(box, name, prep, cmd, expect, runs):
    r = Result()
    # What one `cat /proc/vmstat` costs in faults, subtracted from each run's difference.
    a = box.pgfault()
    reader = box.pgfault() - a
    for _ in range(runs):
        if prep:
            p = box.sh("cd %s && %s" % (GUEST_DIR, prep))
            if p.returncode != 0:
                r.error = "prep failed (%d)" % p.returncode
                print("  %s: %s" % (name, p.stderr.strip()[-300:]), file=sys.stderr)
                return r
        f0 = box.pgfault()
        t0 = time.perf_counter_ns()
        p = box.sh(wrap(cmd), stats=True)
        wall = (time.perf_counter_ns() - t0) / 1e6
        f1 = box.pgfault()
        if p.returncode == NOT_IN_IMAGE:
            r.error = "not in the image"
            return r
        if p.returncode == 124:
            r.error = "timeout (%d s)" % TIMEOUT
            return r
        if p.returncode != 0 or expect not in p.stdout:
            r.error = "failed (%d)" % p.returncode
            print("  %s: rc %d, stdout %r, stderr %s" % (name, p.returncode, p.stdout[-200:],
                                                          p.stderr.strip()[-400:]), file=sys.stderr)
            return r
        r.wall.append(wall)
        m = STATS.search(p.stderr)
        if m:
            r.guest.append(float(m.group(1)))
        cpu = children_cpu(p.stderr)
        if cpu:
            r.user.append(cpu[0])
            r.sys.append(cpu[1])
        if box.faults:
            r.faults.append(f1 - f0 - reader)
    return r


# --- natively, in a private mount namespace -------------------------------------------------

def native_server(disk, work, fixtures):
    """Runs in `unshare -m`: mounts, then answers one JSON line per request on stdin."""
    def sh(*cmd):
        subprocess.run(cmd, check=True)
    sh("mount", "--make-rprivate", "/")
    base = os.path.join(work, "native")
    lower, upper, merged = (os.path.join(base, x) for x in ("lower", "rw", "root"))
    for d in (lower, upper, merged):
        os.makedirs(d, exist_ok=True)
    sh("mount", "-o", "ro,noload,loop", disk, lower)
    sh("mount", "-t", "tmpfs", "-o", "size=2g", "tmpfs", upper)
    os.makedirs(upper + "/up")
    os.makedirs(upper + "/work")
    sh("mount", "-t", "overlay", "overlay", "-o",
       "lowerdir=%s,upperdir=%s/up,workdir=%s/work" % (lower, upper, upper), merged)
    sh("mount", "-t", "proc", "proc", merged + "/proc")
    sh("mount", "--rbind", "/dev", merged + "/dev")
    sh("mount", "-t", "tmpfs", "tmpfs", merged + "/tmp")
    sh("mount", "-t", "tmpfs", "tmpfs", merged + "/dev/shm")
    sh("cp", "-a", fixtures, merged + GUEST_DIR)
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
           "HOME": "/root", "LANG": "C.UTF-8"}

    def enter():
        os.chroot(merged)
        os.chdir("/")

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        t0 = time.perf_counter_ns()
        try:
            p = subprocess.run(["/bin/sh", "-c", req["script"]], capture_output=True, text=True,
                               env=env, preexec_fn=enter, timeout=TIMEOUT)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            rc, out, err = 124, "", ""
        wall = (time.perf_counter_ns() - t0) / 1e6
        print(json.dumps({"rc": rc, "out": out[-4096:], "err": err[-4096:], "wall": wall}),
              flush=True)


class Native:
    def __init__(self, disk, work, fixtures):
        self.p = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", sys.executable, os.path.abspath(__file__),
             "--native-server", "--disk", disk, "--work", work, "--fixtures", fixtures],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if not json.loads(self.p.stdout.readline() or "{}").get("ready"):
            raise SystemExit("bench-workloads: the native root could not be set up")

    def sh(self, script):
        self.p.stdin.write(json.dumps({"script": script}) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def measure_native(nat, name, prep, cmd, expect, runs):
    r = Result()
    for _ in range(runs):
        if prep:
            a = nat.sh("cd %s && %s" % (GUEST_DIR, prep))
            if a["rc"] != 0:
                r.error = "prep failed (%d)" % a["rc"]
                return r
        a = nat.sh(wrap(cmd))
        if a["rc"] == NOT_IN_IMAGE:
            r.error = "not in the image"
            return r
        if a["rc"] != 0 or expect not in a["out"]:
            r.error = "failed (%d)" % a["rc"]
            print("  native %s: rc %d, %s" % (name, a["rc"], a["err"].strip()[-400:]),
                  file=sys.stderr)
            return r
        r.wall.append(a["wall"])
        cpu = children_cpu(a["err"])
        if cpu:
            r.user.append(cpu[0])
            r.sys.append(cpu[1])
    return r


# --- the run ---------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--native-server", action="store_true")
    ap.add_argument("--space")
    ap.add_argument("--work", required=True)
    ap.add_argument("--fixtures")
    ap.add_argument("--disk", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rows", default="")
    ap.add_argument("--warm", type=int, default=1)
    ap.add_argument("--native", type=int, default=1)
    ap.add_argument("--gvisor", type=int, default=0)
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    if a.native_server:
        return native_server(a.disk, a.work, a.fixtures)

    fixtures = os.path.join(a.work, "fixtures")
    write_fixtures(fixtures)
    table = rows(a.port, hashlib.sha256(bytes(104857600)).hexdigest())
    if a.rows:
        want = set(a.rows.split(","))
        unknown = want - {r[0] for r in table}
        if unknown:
            raise SystemExit("bench-workloads: no such row: %s" % ", ".join(sorted(unknown)))
        table = [r for r in table if r[0] in want]

    columns = []  # (title, measure function or None, target)
    net = "allow=127.0.0.2:%d" % a.port
    boxes = []

    def make_box(sid, *create_args, faults=True):
        t0 = time.perf_counter_ns()
        subprocess.run([a.space, "create", "--net", net, *create_args, sid], check=True,
                       stdout=subprocess.DEVNULL)
        box = Sandbox(a.space, sid, faults)
        boxes.append(box)
        p = box.run("cp", fixtures, "%s:%s" % (sid, GUEST_DIR))
        if p.returncode != 0:
            raise SystemExit("bench-workloads: space cp into %s: %s" % (sid, p.stderr.strip()))
        print("sandbox %s: create + cp of the fixtures %.2f s" %
              (sid, (time.perf_counter_ns() - t0) / 1e9), flush=True)
        return box

    columns.append(("vm", measure_vm, make_box("wl-cold", "--image", "wl")))
    if a.warm:
        columns.append(("vm-warm", measure_vm, make_box("wl-warm", "--template", "wl-warm")))
    if a.gvisor:
        columns.append(("gvisor", measure_vm,
                        make_box("wl-gvisor", "--engine", "gvisor", "--template", "wl-gvisor",
                                 "--image", "wl", faults=False)))
    nat = None
    if a.native:
        nat = Native(a.disk, a.work, fixtures)
        columns.append(("native", measure_native, nat))

    results = {}
    try:
        for name, prep, cmd, expect in table:
            for title, fn, target in columns:
                t0 = time.perf_counter_ns()
                results[(name, title)] = res = fn(target, name, prep, cmd, expect, a.runs)
                print("  %-12s %-8s %s (%.0f s with preparation)" %
                      (name, title, res.cell(), (time.perf_counter_ns() - t0) / 1e9),
                      file=sys.stderr, flush=True)
    finally:
        if nat:
            nat.close()
        for box in boxes:
            box.run("destroy", "--force", box.sid)

    titles = [c[0] for c in columns]
    print()
    print("Median wall time per run (%d runs; the sandbox's own part, from guest-init's Exec to "
          "the exit, in brackets)" % a.runs)
    head = "%-12s" % "row" + "".join("%-22s" % t for t in titles)
    ratios = [t for t in titles if t != "native"] if "native" in titles else []
    head += "".join("  %s/native" % t for t in ratios)
    print(head)
    for name, *_ in table:
        line = "%-12s" % name + "".join("%-22s" % results[(name, t)].cell() for t in titles)
        nat_r = results.get((name, "native"))
        for t in ratios:
            r = results[(name, t)]
            if r.error or not nat_r or nat_r.error:
                line += "  %-12s" % "-"
            else:
                line += "  %-12s" % ("%.1fx" % (statistics.median(r.wall) /
                                                statistics.median(nat_r.wall)))
        print(line)
    if not a.gvisor:
        print("gvisor: not measured (no runsc here, or --no-gvisor)")
    print()
    print("Where the time goes: the commands' CPU, user / system (s, median), and the guest's "
          "page faults per run (median; not for gvisor, whose /proc does not count them)")
    print("%-12s" % "row" + "".join("%-26s" % t for t in titles))
    for name, *_ in table:
        line = "%-12s" % name
        for t in titles:
            r = results[(name, t)]
            if r.error or not r.user:
                line += "%-26s" % "-"
                continue
            cell = "%.2f / %.2f" % (statistics.median(r.user), statistics.median(r.sys))
            if r.faults:
                cell += ", %d pf" % statistics.median(r.faults)
            line += "%-26s" % cell
        print(line)
    p90 = [(name, t, pct(results[(name, t)].wall, 0.9)) for name, *_ in table for t in titles
           if not results[(name, t)].error]
    print()
    print("p90 wall (s): " + ", ".join("%s %s %.2f" % (n, t, v / 1e3) for n, t, v in p90))


if __name__ == "__main__":
    main()
