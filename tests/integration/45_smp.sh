# Scenario: a guest with two vCPUs. `template build --cpus 2` boots one (on a PVM host this hung
# at "x86: Booting SMP configuration" until the VMM stopped offering KVM's hypercall-based
# paravirtual features, which PVM never completes: cpuid.h), and a sandbox restored from it sees
# two CPUs (nproc, state's vcpus), runs user code on both at once (each CPU's user ticks in
# /proc/stat grow while two loops run), sends IPIs between them, and keeps each task's vector
# state with processes on both CPUs (tests/programs/vector_check.cpp). A checkpoint and resume
# and a branch keep both vCPUs. Everything is destroyed without leftovers.
source "$(dirname "$0")/lib.sh"
needs_vm "a guest kernel with two vCPUs"

expect_status 0 space template build smp --cpus 2
expect_status 0 space create --template smp s1
expect_status 0 space exec s1 -- nproc
[ "$OUT" = 2 ] || fail "nproc in a 2-vCPU sandbox: '$OUT'"
[ "$(space state s1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["vcpus"])')" = 2 ] ||
  fail "state of s1 does not say 2 vcpus"

# Two busy loops (shell builtins only: no fork per step) and each CPU's user ticks around them.
expect_status 0 space exec s1 -- sh -c '
  grep "^cpu[01] " /proc/stat
  loop() { i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; }
  loop & loop & wait
  grep "^cpu[01] " /proc/stat
  grep -E "^ *(RES|CAL):" /proc/interrupts'
echo "$OUT"
python3 - "$OUT" <<'PY' || fail "both vCPUs did not run user code"
import sys
lines = [l.split() for l in sys.argv[1].splitlines() if l.startswith("cpu")]
before, after = {l[0]: int(l[1]) for l in lines[:2]}, {l[0]: int(l[1]) for l in lines[2:4]}
grew = {c: after[c] - before[c] for c in ("cpu0", "cpu1")}
print("user ticks during the loops:", grew)
sys.exit(0 if all(v > 0 for v in grew.values()) else 1)
PY
python3 - "$OUT" <<'PY' || fail "no IPI reached each vCPU"
import sys
ipis = [l.split() for l in sys.argv[1].splitlines() if l.strip().startswith(("RES:", "CAL:"))]
per_cpu = [sum(int(l[1 + c]) for l in ipis) for c in (0, 1)]
print("rescheduling + function-call IPIs per CPU:", per_cpu)
sys.exit(0 if all(n > 0 for n in per_cpu) else 1)
PY

VECTOR_CHECK=${SPACE_VECTOR_CHECK:-$(dirname "$SPACE_BIN")/vector-check}
[ -x "$VECTOR_CHECK" ] || fail "no $VECTOR_CHECK: build it first (ninja -C build vector-check)"
expect_status 0 space exec -i s1 -- sh -c 'cat >/root/vector-check && chmod 755 /root/vector-check && sync' <"$VECTOR_CHECK"
expect_status 0 space exec s1 -- /root/vector-check --procs 4 --rounds 300
assert_contains "$OUT" "os mode: 4 processes x 300 rounds" "vector-check output"
echo "vector-check on 2 vCPUs: $(echo "$OUT" | tr '\n' ';')"

expect_status 0 space checkpoint s1
expect_status 0 space resume s1
expect_status 0 space exec s1 -- nproc
[ "$OUT" = 2 ] || fail "nproc after checkpoint and resume: '$OUT'"
expect_status 0 space branch s1 --name b1
expect_status 0 space exec b1 -- sh -c 'nproc; loop() { i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; }; loop & loop & wait; echo done'
[ "$OUT" = "2"$'\n'"done" ] || fail "a branch of a 2-vCPU sandbox: '$OUT'"

s1pid=$(pid_of s1)
b1pid=$(pid_of b1)
expect_status 0 space destroy s1 b1
assert_gone s1 "$s1pid"
assert_gone b1 "$b1pid"
[ -z "$(vmm_pids)" ] || fail "VMMs left: $(vmm_pids)"
echo "PASS"
