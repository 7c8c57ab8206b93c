# Scenario: what a create from a template costs, counted rather than timed (issue 17's guard).
# - It commits no btrfs transaction: the store's /sys/fs/btrfs/<uuid>/commit_stats count does not
#   move across a create (a subvolume snapshot would commit one). A periodic commit can land in
#   the window by chance, so a rise is measured once more before it counts.
# - Under strace -f (run with -D, so that it outlives the CLI and follows the VMM): the create
#   starts exactly two processes (the jail's PID 1 and the VMM it spawns) and executes one program
#   besides itself (the VMM); the VMM registers guest memory (KVM_SET_USER_MEMORY_REGION) before
#   it makes the irqchip and the PIT (the other order costs an RCU grace period per VM).
# - A restored guest's clocks do not leap by the time its template sat on disk (kvm-clock).
source "$(dirname "$0")/lib.sh"
needs_vm "the btrfs and memory cost of a VM restore"

shared_template base
command -v strace >/dev/null || fail "strace is not installed (apt-get install strace)"

store=$SPACE_ROOT/store
uuid=$(findmnt -n -o UUID --target "$store")
[ -n "$uuid" ] && [ -r "/sys/fs/btrfs/$uuid/commit_stats" ] ||
  fail "no commit_stats for the store's btrfs ($uuid): needs Linux 6.0 or later"
commits() { awk '$1 == "commits" { print $2 }' "/sys/fs/btrfs/$uuid/commit_stats"; }

# One create between two counts, after a sync that commits whatever was pending.
commits_of_create() {
  sync -f "$store/sandboxes"
  local before after
  before=$(commits)
  space create --template base "$1" >/dev/null
  after=$(commits)
  echo $((after - before))
}
n=$(commits_of_create cost1)
if [ "$n" -ne 0 ]; then
  echo "a commit during the first create; measuring again"
  n=$(commits_of_create cost2)
fi
[ "$n" -eq 0 ] || fail "create committed $n btrfs transaction(s) (a subvolume snapshot?)"
echo "ok: create commits no btrfs transaction"

trace=$TEST_ROOT/create.trace
strace -D -f -qq -o "$trace" -e trace=execve,clone,clone3,fork,vfork,ioctl \
  "$SPACE_BIN" create --template base traced >/dev/null
# The CLI has returned, so the VMM has built its VM; strace writes each line as the call returns.
# Stop the tracer once the PIT is in the trace (the VMM, detached, goes on).
pit_traced() { grep -q KVM_CREATE_PIT2 "$trace"; }
wait_until 10 pit_traced
pkill -KILL -f -- "strace -D -f -qq -o $trace" || true
tracer_gone() { ! pgrep -f -- "strace -D -f -qq -o $trace" >/dev/null; }
wait_until 5 tracer_gone
[ "$(status_of traced)" = running ] || fail "the traced sandbox is not running"
space exec traced -- true || fail "exec in the traced sandbox failed"

python3 - "$trace" <<'PY' || fail "the create's trace is not as expected (above)"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
procs = [l for l in lines if re.search(r"\b(clone3?|v?fork)\(", l) and "CLONE_THREAD" not in l
         and not l.split(None, 1)[1].startswith("<...")]
execs = [l for l in lines if " execve(" in l and not re.search(r"= -\d", l)]
bad = []
if len(procs) != 2:
    bad.append(f"{len(procs)} processes started, not 2 (jail PID 1, VMM):\n  " + "\n  ".join(procs))
if len(execs) != 2:
    bad.append(f"{len(execs)} programs executed, not 2 (the CLI, the VMM):\n  " + "\n  ".join(execs))
def first(name):
    for i, l in enumerate(lines):
        if name + "," in l or name + ")" in l:
            return i
    return None
mem, irq, pit = first("KVM_SET_USER_MEMORY_REGION"), first("KVM_CREATE_IRQCHIP"), first("KVM_CREATE_PIT2")
if None in (mem, irq, pit):
    bad.append(f"KVM set-up not seen in the trace (memslot {mem}, irqchip {irq}, pit {pit})")
elif not (mem < irq and mem < pit):
    bad.append("the VMM registered its memory after the irqchip or the PIT:\n  " +
               "\n  ".join(lines[i] for i in sorted((mem, irq, pit))))
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "ok: a create starts 2 processes and 1 program, memory slot before irqchip and PIT"

# A restored guest's clocks go on from its snapshot: they do not leap by the time the template
# sat on disk (a guest on the TSC did, and paid for it in kernel time after every restore). Two
# sandboxes of one template, created 4 s apart, read about the same uptime just after their
# creates; with the leap the second would read 4 s more.
space create --template base clock1 >/dev/null
up1=$(space exec clock1 -- cat /proc/uptime | cut -d' ' -f1)
sleep 4
space create --template base clock2 >/dev/null
up2=$(space exec clock2 -- cat /proc/uptime | cut -d' ' -f1)
python3 -c "import sys; a, b = float('$up1'), float('$up2'); sys.exit(0 if b - a < 2.5 else 1)" ||
  fail "the second guest's uptime is $up2 s against $up1 s: its clock leapt by the time between the creates"
clocksource=$(space exec clock2 -- cat /sys/devices/system/clocksource/clocksource0/current_clocksource)
[ "$clocksource" = kvm-clock ] || fail "the guest's clocksource is $clocksource, not kvm-clock"
echo "ok: uptimes $up1 and $up2 s 4 s apart: no leap; clocksource $clocksource"
space destroy clock1 clock2

for id in cost1 cost2 traced; do
  [ -d "$store/sandboxes/$id" ] && space destroy "$id"
done
echo PASS
