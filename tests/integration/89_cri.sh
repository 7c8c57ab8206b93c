#!/usr/bin/env bash
# Scenario: Kubernetes' path (issue 45). containerd's CRI plugin, driven by cri-client (a CRI v1
# client generated from the CRI's own api.proto, tests/cri), the way the kubelet drives it, runs
# pods through a RuntimeClass handler "space" whose runtime is space-oci
# (io.containerd.runc.v2, BinaryName), beside the default runc handler as the peer:
#   Version; RunPodSandbox (the pod's pause container runs no sandbox: its shim is the whole
#   container); PullImage from a registry on this machine; CreateContainer and StartContainer
#   (each application container is a sandbox); ExecSync (stdout, stderr, exit code, a timeout);
#   ContainerStatus; the container's log at the CRI's log_path in the CRI format; StopContainer
#   with a grace period (the process's SIGTERM handler runs) and without one (SIGKILL);
#   RemoveContainer, StopPodSandbox, RemovePodSandbox.
# The pod's network namespace carries the sandbox's egress, with the space.net annotation as the
# policy: containerd runs in a network namespace this test makes, its CNI bridge and the pods'
# namespaces live there, and an HTTP server on the bridge's address is reached when allowed and
# refused when not. Resources: a CPU quota lands on the sandbox's cgroup; a memory limit under
# the guest's RAM is refused, naming the fix. Bad input: an unknown handler, a container that
# exits at once, a stop during a start. Nothing is left: no sandbox, no runtime record, no shim.
# containerd, runc and the CNI plugins come from Debian (installed when missing).
source "$(dirname "$0")/lib.sh"
CRI=${SPACE_CRI_CLIENT:-$(dirname "$SPACE_BIN")/cri-client}
if [ ! -x "$CRI" ]; then
  echo "SKIP: cri-client was not built: it needs gRPC for C++ (apt-get install libgrpc++-dev protobuf-compiler-grpc) and the CRI's api.proto (scripts/cri-api.sh), then a new cmake run"
  exit 77
fi
if ! command -v containerd >/dev/null || [ ! -x /usr/lib/cni/bridge ] || ! command -v podman >/dev/null; then
  echo "containerd, the CNI plugins or podman are missing: installing them from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q containerd runc containernetworking-plugins podman >/dev/null ||
    fail "apt-get could not install containerd, runc, containernetworking-plugins and podman"
fi
command -v busybox >/dev/null || fail "busybox (static) is not installed: apt-get install busybox-static"
shared_template default

work=$TEST_ROOT/cri
STATE=$TEST_ROOT/oci-state
ns=spacecri-$$
mkdir -p "$work/img/bin" "$work/cni/conf" "$work/logs" "$TEST_ROOT/bin"
# Into the test's network namespace only (ip netns exec would add a mount namespace, whose copy
# of the store's mount outlives the test's unmount). Background processes are started with
# $INNS itself, not through a function, so that $! is theirs (nsenter execs them).
INNS=(nsenter "--net=/run/netns/$ns")
inns() { "${INNS[@]}" "$@"; }

# The image: busybox, served as an OCI layout by a registry on this machine (in the test's
# network namespace, where containerd pulls from).
cp "$(command -v busybox)" "$work/img/bin/busybox"
for a in sh echo cat sleep wget trap; do ln -sf busybox "$work/img/bin/$a"; done
tar -C "$work/img" -cf "$work/rootfs.tar" .
pod() { podman --storage-driver vfs --root "$work/pstore" --runroot "$work/prun" "$@"; }
pod import -q -c 'CMD ["/bin/sleep","2147483647"]' "$work/rootfs.tar" localhost/space-cri:1 >/dev/null ||
  fail "podman import"
pod save -q --format oci-dir -o "$work/layout" localhost/space-cri:1 || fail "podman save"
rm -rf "$work/pstore" "$work/prun"

ip netns add "$ns" || fail "ip netns add $ns"
inns ip link set lo up
REG_PORT=5000
"${INNS[@]}" python3 "$SRC/tests/cri/registry.py" "$work/layout" 127.0.0.2 "$REG_PORT" 2>"$work/registry.log" &
REG=$!
IMG=127.0.0.2:$REG_PORT/space-cri:1

# The runtime the shim runs: space-oci with this test's store. The shim passes its own --root
# (/run/containerd/runc/<namespace>); the wrapper keeps the records in the test's directory.
runtime=$TEST_ROOT/bin/space-oci-test
space_oci_wrapper "$runtime" "$STATE" --drop-root

# A bridge inside the test's namespace: pods get 10.231.0.0/24, the bridge 10.231.0.1.
cat >"$work/cni/conf/10-space-cri.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "space-cri", "plugins": [
  {"type": "bridge", "bridge": "spcri0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "subnet": "10.231.0.0/24", "dataDir": "$work/cni/ipam"}}]}
JSON
sock=$work/containerd.sock
cat >"$work/config.toml" <<TOML
version = 2
root = "$work/root"
state = "$work/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$IMG"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$work/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."127.0.0.2:$REG_PORT"]
    endpoint = ["http://127.0.0.2:$REG_PORT"]
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.space]
      runtime_type = "io.containerd.runc.v2"
      pod_annotations = ["space.*"]
      container_annotations = ["space.*"]
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.space.options]
        BinaryName = "$runtime"
TOML
"${INNS[@]}" containerd --config "$work/config.toml" >"$work/containerd.log" 2>&1 &
cd_pid=$!
stop_all() {
  local c p
  for p in $(timeout 60 "$CRI" -s "$sock" pods 2>/dev/null | python3 -c 'import json,sys; print(" ".join(i["id"] for i in json.load(sys.stdin).get("items", [])))' 2>/dev/null); do
    timeout 60 "$CRI" -s "$sock" stopp "$p" >/dev/null 2>&1
    timeout 60 "$CRI" -s "$sock" rmp "$p" >/dev/null 2>&1
  done
  kill "$cd_pid" 2>/dev/null && wait "$cd_pid" 2>/dev/null
  pkill -f -- "containerd-shim-runc-v2 -namespace k8s.io .*-address $sock" 2>/dev/null
  for c in $("$SPACE_BIN" --oci --root "$STATE" list -q 2>/dev/null); do
    "$SPACE_BIN" --oci --root "$STATE" delete --force "$c" >/dev/null 2>&1
  done
  for p in "$REG" "${WEB:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
  done
  findmnt -rn -o TARGET | grep -E "^($work/|/run/netns/cni-)" | sort -r | xargs -r -n1 umount -l
  ip netns del "$ns" 2>/dev/null
  rm -rf "$work"
}
at_exit stop_all
wait_until 30 bash -c "'$CRI' -s '$sock' version >/dev/null 2>&1"
wait_until 20 inns python3 -c 'import socket,sys; socket.create_connection(("127.0.0.2", int(sys.argv[1])), 1)' "$REG_PORT"
cri() { "$CRI" -s "$sock" "$@"; }
field() { python3 -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v = v.get(k) if isinstance(v, dict) else None
print(v)' "$1"; }
sandboxes() { space list --format json | python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)))'; }

expect_status 0 cri version
[ "$(echo "$OUT" | field runtime_name)" = containerd ] || fail "Version: $OUT"
[ "$(echo "$OUT" | field runtime_api_version)" = v1 ] || fail "Version: $OUT"
expect_status 0 cri pull "$IMG"
case $OUT in sha256:*) ;; *) fail "PullImage returned '$OUT'" ;; esac
grep -Eq '"(HEAD|GET) /v2/space-cri/manifests/1 ' "$work/registry.log" ||
  fail "PullImage did not reach the registry: $(cat "$work/registry.log")"

# A pod on the space handler: its pause container is the shim alone, no sandbox.
P="--handler space --name web --namespace t --uid u-web --log-dir $work/logs/web"
mkdir -p "$work/logs/web"
t0=${EPOCHREALTIME/./}
expect_status 0 cri runp $P
POD=$OUT
echo "RunPodSandbox (space handler): $(( (${EPOCHREALTIME/./} - t0) / 1000 )) ms"
[ -z "$(sandboxes)" ] || fail "the pod's sandbox container made a sandbox: $(sandboxes)"
pause_pid=$("$SPACE_BIN" --oci --root "$STATE" state "$POD" | field pid)
alive "$pause_pid" || fail "the pod's sandbox container has no live shim: $("$SPACE_BIN" --oci --root "$STATE" state "$POD")"
echo "the pod's sandbox container: its shim alone, PSS $(awk '$1 == "Pss:" { print $2 }' "/proc/$pause_pid/smaps_rollup") KiB"
expect_status 0 cri podstatus "$POD"
[ "$(echo "$OUT" | field state)" = SANDBOX_READY ] || fail "PodSandboxStatus: $OUT"
ip=$(echo "$OUT" | field network.ip)
case $ip in 10.231.0.*) ;; *) fail "the pod has no address on the test's bridge: $OUT" ;; esac

# Its application container: a sandbox, its egress through the pod's namespace and the policy
# the space.net annotation gives it.
"${INNS[@]}" python3 -m http.server --bind 10.231.0.1 8080 >"$work/web.log" 2>&1 &
WEB=$!
wait_until 20 inns python3 -c 'import socket; socket.create_connection(("10.231.0.1", 8080), 1)'
expect_status 0 cri create "$POD" "$IMG" app $P --log-path app.log --cannotation space.net=allow=10.231.0.1:8080 \
  -- /bin/sh -c 'trap "echo got-term; exit 3" TERM; echo started; while :; do sleep 0.2; done'
APP=$OUT
expect_status 0 cri start "$APP"  # containerd runs the runtime's create, then its start, here
[ "$(sandboxes | wc -w)" = 1 ] ||
  fail "one sandbox expected for the container: $(space list); runtime: $("$SPACE_BIN" --oci --root "$STATE" list)"
wait_until 30 grep -q "stdout F started" "$work/logs/web/app.log"
expect_status 0 cri status "$APP"
[ "$(echo "$OUT" | field state)" = CONTAINER_RUNNING ] || fail "ContainerStatus: $OUT"
expect_status 4 cri exec "$APP" -- sh -c 'echo out; echo err >&2; exit 4'
[ "$OUT" = out ] && [ "$ERR" = err ] || fail "ExecSync: stdout '$OUT', stderr '$ERR'"
expect_status 1 cri exec "$APP" --timeout 1 -- sleep 10
assert_contains "$ERR" "timeout" "an ExecSync past its timeout"
# (No -T: Debian's static busybox wget crashes with it under gVisor; ExecSync bounds the call.)
expect_status 0 cri exec "$APP" --timeout 60 -- wget -q -O - http://10.231.0.1:8080/
grep -q '"GET / HTTP' "$work/web.log" || fail "the server in the pod's network saw no request"
expect_status 0 cri exec "$APP" --timeout 60 -- sh -c 'wget -q -O - http://10.231.0.1:8081/ 2>&1; echo rc=$?'
assert_contains "$OUT" "rc=1" "a connection the space.net policy does not allow"
# Stop with a grace period: the process's handler runs; its log has it, in the CRI format.
expect_status 0 cri stop "$APP" --timeout 10
expect_status 0 cri status "$APP"
[ "$(echo "$OUT" | field state)" = CONTAINER_EXITED ] || fail "after StopContainer: $OUT"
[ "$(echo "$OUT" | field exit_code)" = 3 ] || fail "the exit code after SIGTERM: $OUT"
grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z stdout F got-term$' "$work/logs/web/app.log" ||
  fail "the container's log is not in the CRI format: $(cat "$work/logs/web/app.log")"
expect_status 0 cri rm "$APP"
[ -z "$(sandboxes)" ] || fail "RemoveContainer left a sandbox: $(sandboxes)"

# A process that ignores SIGTERM is killed once its grace period is over.
# It says so once its trap is set: on a PVM host the shell takes seconds to get there, and a
# SIGTERM before it would end it at once.
expect_status 0 cri create "$POD" "$IMG" stubborn $P --log-path stubborn.log -- \
  /bin/sh -c 'trap "" TERM; echo ignoring; while :; do sleep 0.2; done'
S=$OUT
expect_status 0 cri start "$S"
wait_until 30 grep -q "stdout F ignoring" "$work/logs/web/stubborn.log"
t0=$SECONDS
expect_status 0 cri stop "$S" --timeout 2
[ $((SECONDS - t0)) -ge 2 ] || fail "StopContainer did not wait for the grace period"
expect_status 0 cri status "$S"
[ "$(echo "$OUT" | field exit_code)" = 137 ] || fail "after StopContainer without grace: $OUT"
expect_status 0 cri rm "$S"

# Resources as for space-oci: a CPU quota on the sandbox's cgroup; a memory limit under the
# guest's RAM refused, naming the fix.
expect_status 0 cri create "$POD" "$IMG" capped $P --cpu-quota 50000 --cpu-period 100000 -- /bin/sleep 1000
CAP=$OUT
expect_status 0 cri start "$CAP"
sb=$(sandboxes)
[ -n "$sb" ] || fail "no sandbox for the started container"
cg=$(space state "$sb" | field cgroup)
if [ -n "$cg" ] && [ -e "/sys/fs/cgroup/cpu/$cg/cpu.cfs_quota_us" ]; then
  [ "$(cat "/sys/fs/cgroup/cpu/$cg/cpu.cfs_quota_us")" = 50000 ] || fail "the CPU quota: $(cat "/sys/fs/cgroup/cpu/$cg/cpu.cfs_quota_us")"
elif [ -n "$cg" ] && [ -e "/sys/fs/cgroup/$cg/cpu.max" ]; then
  [ "$(cut -d' ' -f1 "/sys/fs/cgroup/$cg/cpu.max")" = 50000 ] || fail "the CPU quota: $(cat "/sys/fs/cgroup/$cg/cpu.max")"
fi
expect_status 0 cri stop "$CAP" --timeout 0
expect_status 0 cri rm "$CAP"
# (containerd runs the runtime's create at StartContainer: that is where it is refused.)
expect_status 0 cri create "$POD" "$IMG" small $P --memory $((64 << 20)) -- /bin/sleep 1000
SMALL=$OUT
expect_status 1 cri start "$SMALL"
assert_contains "$ERR" "memory" "a memory limit under the guest's RAM"
expect_status 0 cri rm "$SMALL"
[ -z "$(sandboxes)" ] || fail "a refused container left a sandbox: $(sandboxes)"

# A container that exits at once; a stop while its start runs.
expect_status 0 cri create "$POD" "$IMG" quick $P -- /bin/sh -c 'echo quick; exit 9'
Q=$OUT
expect_status 0 cri start "$Q"
wait_until 30 bash -c "'$CRI' -s '$sock' status '$Q' | grep -q CONTAINER_EXITED"
expect_status 0 cri status "$Q"
[ "$(echo "$OUT" | field exit_code)" = 9 ] || fail "a container that exits at once: $OUT"
[ "$(echo "$OUT" | field reason)" = Error ] || fail "the reason of a non-zero exit: $OUT"
expect_status 0 cri rm "$Q"
expect_status 0 cri create "$POD" "$IMG" racer $P -- /bin/sleep 1000
R=$OUT
"$CRI" -s "$sock" start "$R" >/dev/null 2>&1 &
starter=$!
expect_status 0 cri stop "$R" --timeout 0
wait "$starter" || true
expect_status 0 cri rm "$R"

# The pod goes, and nothing with it.
expect_status 0 cri stopp "$POD"
expect_status 0 cri rmp "$POD"
[ -z "$(sandboxes)" ] || fail "sandboxes left: $(sandboxes)"
[ -z "$("$SPACE_BIN" --oci --root "$STATE" list -q)" ] || fail "runtime records left: $("$SPACE_BIN" --oci --root "$STATE" list)"

# An unknown handler.
expect_status 1 cri runp --handler nosuch --name bad --log-dir "$work/logs"
assert_contains "$ERR" "nosuch" "RunPodSandbox with an unknown handler"

# The peer: the default runc handler, same client, same image, measured in this run.
t0=${EPOCHREALTIME/./}
rc=0
PR=$(cri runp --name peer --uid u-peer --log-dir "$work/logs" 2>"$work/runc.err") || rc=$?
if [ $rc = 0 ]; then
  echo "RunPodSandbox (runc handler, the peer): $(( (${EPOCHREALTIME/./} - t0) / 1000 )) ms"
  cri stopp "$PR" >/dev/null && cri rmp "$PR" >/dev/null || fail "the runc pod did not go"
else
  echo "note: the runc handler's pod fails on this host, so it is no peer here: $(cat "$work/runc.err")"
fi
sleep 1
left=$(pgrep -f -- "containerd-shim-runc-v2 -namespace k8s.io .*-address $sock" || true)
[ -z "$left" ] || fail "shims left: $left"
echo "PASS"
