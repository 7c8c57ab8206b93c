#!/usr/bin/env bash
# Benchmark of sandbox creation (issue 4 item 5). Against a private root under /tmp (never
# /var/lib/space) it builds the `default` template if that root lacks it (one cold boot, timed), then
# runs --count creates from it, each followed by `exec ID true` and a destroy, and prints min,
# median, p90 and p99 of the `space create` wall time and of the time to first exec (create plus
# `exec true`). Then it imports a tarball of at least 200 MB of this host's /usr as an image (time
# and MB/s) and times `create --image` next to plain `create`, interleaved, with the first exec in
# each fresh image sandbox. Then it times creates with the jail and without ([jail] enable = false),
# interleaved, and prints the difference and the VMM's jail phases. Then it times creates with
# btrfs quotas off on the store and on (plain, and with a qgroup limit from [limits] disk_size;
# BENCH_QUOTA=0 skips it), and turns them off again. Then it keeps --alive (20) sandboxes alive and idle and prints the host memory of their VMMs
# (and of their jails' PID 1s) per sandbox: RSS and PSS (PSS splits the template's copy-on-write pages among their sharers, so
# it is the honest figure), and beside them times a burst of --burst (20) creates back to back,
# each sandbox left running, with the ratio of its p90 to the one-at-a-time median. Side by side, Debian's qemu-system-x86_64 -M microvm boots the same
# kernel, rootfs, memory size and command line once, is paused and saved to a migration file
# after guest-init's "ready" line, then --qemu-count times restores it with -incoming and is
# timed from its start until QMP query-status says "running"; the script prints the ratio of
# QEMU's median to space's create median. All timing is done in one python3 process
# (time.perf_counter_ns around subprocess calls), so no extra fork per sample is counted.
# It prints the machine and the settings first; plain lines, no assertions on the figures; it
# exits non-zero only if something failed to run. It removes everything it made (sandboxes,
# QEMU processes, the loopback store mount) unless --keep; with --root DIR the root (and its
# template) is kept for the next run, only its store is unmounted.
#
# Usage: scripts/bench-create.sh [--root DIR] [--count N] [--qemu-count N] [--alive N] [--burst N] [--keep]
#   (--qemu-count 0 skips QEMU, which then need not be installed)
# Environment: SPACE_BIN (default build/space), SPACE_GUEST_INIT (default build/guest-init),
# SPACE_BENCH_MEMORY_MIB (default 256) and SPACE_BENCH_CPUS (default 1) for the template.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
. "$SRC/scripts/bench-lib.sh"
SPACE_GUEST_INIT=${SPACE_GUEST_INIT:-$SRC/build/guest-init}
MEMORY_MIB=${SPACE_BENCH_MEMORY_MIB:-256}
CPUS=${SPACE_BENCH_CPUS:-1}
COUNT=50
QEMU_COUNT=10
ALIVE=20
BURST=20
KEEP=0
ROOT=""

usage() { sed -n 's/^# Usage: //p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=${2:?}; shift 2 ;;
    --count) COUNT=${2:?}; shift 2 ;;
    --qemu-count) QEMU_COUNT=${2:?}; shift 2 ;;
    --alive) ALIVE=${2:?}; shift 2 ;;
    --burst) BURST=${2:?}; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage ;;
    *) echo "bench-create: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -e /dev/kvm ] || { echo "bench-create: /dev/kvm is absent" >&2; exit 1; }
[ -x "$SPACE_BIN" ] || { echo "bench-create: no space binary at $SPACE_BIN" >&2; exit 1; }
if [ "$QEMU_COUNT" -gt 0 ] && ! command -v qemu-system-x86_64 >/dev/null; then
  # The peer is installed like the rest of the dependencies (as root; otherwise it says how).
  . "$SRC/scripts/deps.sh"
  ensure_debian_packages "${SPACE_BENCH_PACKAGES[@]}" || {
    echo "bench-create: qemu-system-x86_64 is not installed (apt-get install qemu-system-x86, or --qemu-count 0)" >&2
    exit 1
  }
fi

KERNEL=$("$SRC/scripts/build-kernel.sh")
SPACE_SECRET_BIN=${SPACE_SECRET_BIN:-$(dirname "$SPACE_GUEST_INIT")/space-secret}
ROOTFS=$("$SRC/scripts/build-rootfs.sh" --guest-init "$SPACE_GUEST_INIT" --space-secret "$SPACE_SECRET_BIN")

bench_private_root bench-create /tmp/space-bench.XXXXXX  # run dir, QEMU files, the harness
export SPACE_BOOT_TIMEOUT=${SPACE_BOOT_TIMEOUT:-300}
cat >"$ROOT/config.toml" <<TOML
[defaults]
kernel = "$KERNEL"
rootfs = "$ROOTFS"
memory_mib = $MEMORY_MIB
cpus = $CPUS
template = "default"
TOML

cleanup() {
  local rc=$?
  set +e
  if [ $KEEP = 0 ]; then
    bench_destroy bench
    [ -f "$WORK/qemu.pids" ] && while read -r p; do kill -9 "$p" 2>/dev/null; done <"$WORK/qemu.pids"
    bench_remove_work bench-create || rc=1
  else
    bench_kept bench-create
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The machine and the settings.
bench_machine_line
echo "software: space $SPACE_BIN (git $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo '?')), $( [ "$QEMU_COUNT" -gt 0 ] && qemu-system-x86_64 --version | head -1 || echo 'no QEMU run')"
echo "guest: kernel $KERNEL, rootfs $ROOTFS"
echo "settings: $COUNT creates (each + exec true + destroy), $ALIVE alive for memory, a burst of $BURST beside them, $QEMU_COUNT QEMU restores; root $ROOT"

# (`template list` mounts an existing store image; a plain directory test would not see it.)
if ! "$SPACE_BIN" template list --format json | python3 -c '
import json, sys
sys.exit(0 if any(t.get("name") == "default" for t in json.load(sys.stdin)) else 1)'; then
  echo "bench-create: building template 'default' (one cold boot)" >&2
  t0=$(date +%s.%N)
  "$SPACE_BIN" --log-level info template build default 2>"$WORK/template-build.log" >/dev/null ||
    { cat "$WORK/template-build.log" >&2; exit 1; }
  # The whole command, and from its log the boot to guest-init's first answer and the wait for
  # an idle guest (after the flush) before the snapshot.
  echo "cold boot: \`space template build default\` $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s;" \
    "boot to guest-init $(sed -n "s/.*first answer in \([0-9.]*\) s.*/\1/p" "$WORK/template-build.log") s;" \
    "idle $(sed -n "s/.*went idle after \([0-9]*\) ms.*/\1/p" "$WORK/template-build.log") ms after the flush"
else
  echo "cold boot: not measured (the root already has template 'default')"
fi
# QEMU gets what the template has (a reused root may have been built with other settings).
read -r MEMORY_MIB CPUS < <("$SPACE_BIN" template list --format json | python3 -c '
import json, sys
t = [t for t in json.load(sys.stdin) if t.get("name") == "default"][0]
print(t.get("memory_mib", sys.argv[1]), t.get("vcpus", t.get("cpus", sys.argv[2])))' "$MEMORY_MIB" "$CPUS")
echo "template default: $MEMORY_MIB MiB, $CPUS vCPU (QEMU gets the same)"

cat >"$WORK/harness.py" <<'PY'
import json, os, re, shutil, socket, subprocess, sys, time

space, work, root, kernel, rootfs, count, qcount, alive, burst = sys.argv[1:10]
count, qcount, alive, burst = int(count), int(qcount), int(alive), int(burst)
now = time.perf_counter_ns

def run(*args, **kw):
    r = subprocess.run([space, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"bench-create: 'space {' '.join(args)}' exited {r.returncode}: {r.stderr.strip()}")
    return r

def pct(v, q):  # nearest rank
    v = sorted(v)
    return v[max(0, min(len(v) - 1, -(-len(v) * q // 100) - 1))]

def median(v):
    v = sorted(v); n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2

def show(name, v):
    print(f"{name:<34} min {min(v):8.1f}  median {median(v):8.1f}  p90 {pct(v, 90):8.1f}  "
          f"p99 {pct(v, 99):8.1f} ms  (n={len(v)})", flush=True)

has_exec = subprocess.run([space, "exec", "--help"], capture_output=True).returncode == 0
def first_exec(i):
    if has_exec:
        run("exec", i, "--", "true")
    else:  # stand-in while `space exec` is missing: the agent's hello
        sock = os.path.join(os.environ["SPACE_RUN_DIR"], i, "vsock.sock")
        r = subprocess.run([sys.executable, os.path.join(os.environ["BENCH_SRC"], "tests", "integration",
                                                          "agent.py"), sock, "hello"], capture_output=True)
        if r.returncode != 0: sys.exit(f"bench-create: no hello from {i}")

# 1. create, first exec, destroy (--count 0 skips 1 and 2: QEMU only).
print(f"first contact: {'space exec ID -- true' if has_exec else 'agent.py hello (space exec absent)'}")
if count:  # warm the page cache
    run("create", "bench-warm"); first_exec("bench-warm"); run("destroy", "bench-warm")
create, to_exec, destroy = [], [], []
for n in range(count):
    i = f"bench-{n}"
    t0 = now(); run("create", i); t1 = now(); first_exec(i); t2 = now()
    run("destroy", i); t3 = now()
    create.append((t1 - t0) / 1e6); to_exec.append((t2 - t0) / 1e6); destroy.append((t3 - t2) / 1e6)
if count:
    show("space create", create)
    show("space create + exec true", to_exec)
    show("space destroy", destroy)

# 1b. images: import MB/s, then create --image next to plain create (interleaved, same template),
# and the first exec in a fresh image sandbox (which includes the guest mounting the disk).
img_src = os.environ.get("BENCH_IMAGE_TAR", "")
if count and img_src:
    mb = os.path.getsize(img_src) / 1e6
    t0 = now(); run("image", "import", "--force", "bench-img", img_src, "--size", "4G"); t1 = now()
    s = (t1 - t0) / 1e9
    print(f"image import of a {mb:.0f} MB tarball: {s:.1f} s, {mb / s:.0f} MB/s", flush=True)
    plain, with_image, first = [], [], []
    for n in range(count):
        a, b = f"bench-p{n}", f"bench-i{n}"
        t0 = now(); run("create", a); t1 = now()
        run("create", "--image", "bench-img", b); t2 = now()
        first_exec(b); t3 = now()
        run("destroy", a, b)
        plain.append((t1 - t0) / 1e6); with_image.append((t2 - t1) / 1e6); first.append((t3 - t2) / 1e6)
    show("space create (same run)", plain)
    show("space create --image", with_image)
    show("first exec in an image sandbox", first)
    print(f"create --image - create: median {median(with_image) - median(plain):+.1f} ms, "
          f"p90 {pct(with_image, 90) - pct(plain, 90):+.1f} ms", flush=True)
    run("image", "rm", "bench-img")

# 1c. the jail's cost: creates with the jail (the default) and without ([jail] enable = false in
# config.toml), interleaved, and the VMM's own jail phases from its log.
if count:
    cfg = os.path.join(root, "config.toml")
    base = open(cfg).read()
    jailed, bare, phases = [], [], {}
    for n in range(count):
        for jail in (True, False):
            with open(cfg, "w") as f:
                f.write(base if jail else "[jail]\nenable = false\n" + base)
            i = f"bench-j{n}"
            t0 = now(); run("--log-level", "info", "create", i); t1 = now()
            (jailed if jail else bare).append((t1 - t0) / 1e6)
            if jail:
                log = open(os.path.join(root, "store", "sandboxes", i, "vmm.log")).read()
                for k, v in re.findall(r"(seccomp programs|jail: [a-z ]+|jail enter|drop|jail) ([0-9.]+) ms", log):
                    phases.setdefault(k, []).append(float(v))
            run("destroy", i)
    with open(cfg, "w") as f:
        f.write(base)
    show("space create, jailed", jailed)
    show("space create, not jailed", bare)
    print(f"jail's cost per create: median {median(jailed) - median(bare):+.2f} ms, "
          f"p90 {pct(jailed, 90) - pct(bare, 90):+.2f} ms", flush=True)
    # Each jailed create ran right before its unjailed twin: the differences of those pairs
    # cancel much of what the host does meanwhile.
    pairs = [j - b for j, b in zip(jailed, bare)]
    print(f"  paired (jailed - its unjailed twin): median {median(pairs):+.2f} ms, "
          f"p90 {pct(pairs, 90):+.2f} ms", flush=True)
    print("  inside the VMM (medians): " + ", ".join(f"{k} {median(v):.3f} ms" for k, v in phases.items()), flush=True)

# 1d. btrfs quotas' cost (RELIABILITY.md, review item 10): creates with quotas off on the store,
# then with quotas on (plain, and with a qgroup limit: config.toml's [limits] disk_size),
# interleaved within each state; the store's quotas are turned off again afterwards. Qgroups account every extent a
# snapshot shares, which is what a default disk quota per sandbox would put on every create.
if count and os.environ.get("BENCH_QUOTA", "1") == "1":
    store = os.path.join(root, "store")
    def quota(state):
        subprocess.run(["btrfs", "quota", state, store], check=True, capture_output=True)
    def block(args, n, tag):
        v = []
        for k in range(n):
            i = f"bench-q{tag}{k}"
            t0 = now(); run("create", *args, i); v.append((now() - t0) / 1e6)
            run("destroy", i)
        return v
    quota("disable")
    off = block([], count, "o")
    quota("enable")
    subprocess.run(["btrfs", "quota", "rescan", "-w", store], check=False, capture_output=True)
    on, limited = [], []
    cfg = os.path.join(root, "config.toml")
    base = open(cfg).read()
    for k in range(count):
        on += block([], 1, f"n{k}-")
        with open(cfg, "w") as f:  # every create then gets a qgroup limit
            f.write('[limits]\ndisk_size = "1G"\n' + base)
        limited += block([], 1, f"l{k}-")
        with open(cfg, "w") as f:
            f.write(base)
    quota("disable")
    show("space create, quotas off", off)
    show("space create, quotas on", on)
    show("space create, quotas on + [limits]", limited)
    print(f"quotas' cost per create: median {median(on) - median(off):+.2f} ms, with a limit "
          f"{median(limited) - median(off):+.2f} ms; p90 {pct(limited, 90) - pct(off, 90):+.2f} ms",
          flush=True)

# 2. memory of idle sandboxes.
ids = [f"bench-alive-{n}" for n in range(alive)] if count else []
for i in ids:
    run("create", i); first_exec(i)
time.sleep(2)
def rollup(pid):  # RSS and PSS of one process, KiB
    f = dict(l.split(":", 1) for l in open(f"/proc/{pid}/smaps_rollup").read().splitlines()[1:])
    return int(f["Rss"].split()[0]), int(f["Pss"].split()[0])
def jail_init_of(pid):  # a jailed VMM's parent, the jail's PID 1 (jail/init.h), or None
    ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    return ppid if b"__jail-init" in open(f"/proc/{ppid}/cmdline", "rb").read() else None
rss = pss = init_rss = init_pss = inits = 0
for i in ids:
    pid = json.loads(run("state", i).stdout)["pid"]
    r, p = rollup(pid); rss += r; pss += p
    if (init := jail_init_of(pid)) is not None:
        r, p = rollup(init); init_rss += r; init_pss += p; inits += 1
if ids: print(f"host memory per idle sandbox ({alive} alive, after one exec each): "
      f"the VMM: RSS {rss / alive / 1024:.1f} MiB, PSS {pss / alive / 1024:.1f} MiB "
      f"(sums {rss / 1024:.0f} / {pss / 1024:.0f} MiB)", flush=True)
if inits: print(f"  and its jail's PID 1 ({inits} of {alive}): RSS {init_rss / inits / 1024:.1f} MiB, "
      f"PSS {init_pss / inits / 1024:.1f} MiB; together PSS {(pss + init_pss) / alive / 1024:.1f} MiB",
      flush=True)

# 2b. a burst beside them: creates back to back, each sandbox left running (its guest still busy
# with its first moments after the restore when the next create comes).
burst_ids = [f"bench-burst-{n}" for n in range(burst)] if count and burst else []
burst_ms = []
for i in burst_ids:
    t0 = now(); run("create", i); burst_ms.append((now() - t0) / 1e6)
if burst_ms:
    show(f"burst: {burst} creates, {alive} idle", burst_ms)
    print(f"  first {burst_ms[0]:.1f} ms, last {burst_ms[-1]:.1f} ms; burst p90 / one-at-a-time "
          f"median = {pct(burst_ms, 90) / median(create):.1f}x", flush=True)
time.sleep(1)
for i in burst_ids + ids:
    run("destroy", i)

# 3. QEMU microvm: the same kernel, rootfs, memory and command line; boot once, save, restore.
if qcount == 0:
    sys.exit(0)
mem = os.environ["BENCH_MEMORY_MIB"]; cpus = os.environ["BENCH_CPUS"]
cmdline = os.environ["BENCH_CMDLINE"]
q = os.path.join(work, "qemu"); os.makedirs(q, exist_ok=True)
disk = os.path.join(q, "rootfs.ext4"); shutil.copyfile(rootfs, disk)
state = os.path.join(q, "vm.state")
pids = open(os.path.join(work, "qemu.pids"), "a")

def qemu(tag, extra):
    sock = os.path.join(q, f"qmp-{tag}.sock")
    argv = ["qemu-system-x86_64", "-M", "microvm,acpi=off", "-enable-kvm", "-cpu", "host,-arch-capabilities,-cx16",
            "-m", mem, "-smp", cpus, "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
            "-serial", f"file:{os.path.join(q, f'serial-{tag}.log')}", "-monitor", "none",
            "-kernel", kernel, "-append", cmdline,
            "-drive", f"id=root,file={disk},format=raw,if=none,cache=none,aio=threads",
            "-device", "virtio-blk-device,drive=root",
            "-qmp", f"unix:{sock},server=on,wait=off", *extra]
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=open(os.path.join(q, f"qemu-{tag}.err"), "w"))
    pids.write(f"{p.pid}\n"); pids.flush()
    return p, sock

class Qmp:
    def __init__(self, sock, proc, deadline):
        while True:
            if proc.poll() is not None: sys.exit(f"bench-create: QEMU exited {proc.returncode}")
            try:
                self.s = socket.socket(socket.AF_UNIX); self.s.connect(sock); break
            except OSError:
                self.s.close()
                if time.monotonic() > deadline: sys.exit("bench-create: no QMP socket")
                time.sleep(0.0005)
        self.f = self.s.makefile("rw")
        self.f.readline()  # greeting
        self.cmd("qmp_capabilities")
    def cmd(self, name, **args):
        self.f.write(json.dumps({"execute": name, "arguments": args}) + "\n"); self.f.flush()
        while True:
            r = json.loads(self.f.readline())
            if "return" in r: return r["return"]
            if "error" in r: sys.exit(f"bench-create: QMP {name}: {r['error']}")

p, sock = qemu("boot", [])
t0 = time.monotonic(); serial = os.path.join(q, "serial-boot.log")
while not (os.path.exists(serial) and "guest-init: ready" in open(serial, errors="replace").read()):
    if p.poll() is not None or time.monotonic() - t0 > 600:
        sys.exit("bench-create: QEMU's guest did not reach 'guest-init: ready'")
    time.sleep(0.2)
boot_s = time.monotonic() - t0
m = Qmp(sock, p, time.monotonic() + 10)
m.cmd("stop")
m.cmd("migrate", uri=f"exec:cat > {state}")
while m.cmd("query-migrate").get("status") not in ("completed", "failed", "cancelled"):
    time.sleep(0.01)
if m.cmd("query-migrate")["status"] != "completed": sys.exit("bench-create: QEMU migration failed")
m.cmd("quit"); p.wait()
print(f"qemu: cold boot to 'guest-init: ready' {boot_s:.1f} s; migration file "
      f"{os.path.getsize(state) / 2**20:.1f} MiB", flush=True)

qtimes = []
for n in range(qcount):
    t0 = now()
    p, sock = qemu(f"r{n}", ["-incoming", f"exec:cat {state}"])
    m = Qmp(sock, p, time.monotonic() + 60)
    while True:
        st = m.cmd("query-status")["status"]
        if st == "running": break
        if st in ("paused", "postmigrate", "prelaunch"):  # saved while paused: start it
            m.cmd("cont"); continue
        if p.poll() is not None: sys.exit("bench-create: restored QEMU exited")
        time.sleep(0.0002)
    qtimes.append((now() - t0) / 1e6)
    m.cmd("quit"); p.wait()
show("qemu -incoming to running", qtimes)
if count: print(f"ratio: qemu restore median / space create median = {median(qtimes) / median(create):.1f}x; "
      f"min/min {min(qtimes) / min(create):.1f}x")
PY

# The command line our VMM gives the kernel (from a sandbox's vmm.log), less its own virtio-mmio
# device list (QEMU adds one for its devices) and with a neutral space.id.
"$SPACE_BIN" --log-level info create bench-cmdline >/dev/null
cmdline=$(sed -n 's/.*kernel command line: //p' "$ROOT/store/sandboxes/bench-cmdline/vmm.log" | tail -1)
if [ -z "$cmdline" ]; then  # a restored VMM may not log it: the one machine.cpp/host.cpp build
  cmdline="console=ttyS0 reboot=k panic=-1 root=/dev/vda rw rootfstype=ext4 io_delay=none quiet tsc=reliable clocksource=kvm-clock space.id=qemu"
  [ -d /sys/module/kvm_pvm ] && cmdline+=" pvm_quirks noxsave clearcpuid=popcnt,smap,erms,fsrm,pcid,invpcid,fsgsbase,rdtscp,rdpid,rdrand,rdseed rodata=off percpu_alloc=page noreplace-smp"
fi
"$SPACE_BIN" destroy bench-cmdline >/dev/null
cmdline=$(echo "$cmdline" | sed -E 's/ virtio_mmio\.device=[^ ]+//g; s/space\.id=[^ ]+/space.id=qemu/')
echo "guest command line (both): $cmdline"

# An image source of at least 200 MB from this host's files (a tarball of some of /usr).
img_tar=$WORK/image.tar
img_dirs=()
for d in usr/include usr/share/locale usr/share/doc usr/lib/python3 usr/share/perl usr/lib/gcc; do
  [ -d "/$d" ] || continue
  img_dirs+=("$d")
  [ "$(du -scm "${img_dirs[@]/#//}" | tail -1 | cut -f1)" -ge 250 ] && break
done
tar -C / -cf "$img_tar" --ignore-failed-read "${img_dirs[@]}" 2>/dev/null || true
# ... plus a static busybox as bin/true, for the first exec.
python3 - "$img_tar" "$(command -v busybox)" <<'PYTAR'
import sys, tarfile
with tarfile.open(sys.argv[1], "a") as t:
    t.add(sys.argv[2], arcname="bin/busybox")
    link = tarfile.TarInfo("bin/true"); link.type = tarfile.SYMTYPE; link.linkname = "busybox"
    t.addfile(link)
PYTAR
echo "image source: $img_tar, $(( $(stat -c %s "$img_tar") / 1000000 )) MB of /${img_dirs[*]}"

BENCH_IMAGE_TAR=$img_tar BENCH_SRC=$SRC BENCH_MEMORY_MIB=$MEMORY_MIB BENCH_CPUS=$CPUS BENCH_CMDLINE=$cmdline \
  python3 "$WORK/harness.py" "$SPACE_BIN" "$WORK" "$ROOT" "$KERNEL" "$ROOTFS" "$COUNT" "$QEMU_COUNT" "$ALIVE" "$BURST"
