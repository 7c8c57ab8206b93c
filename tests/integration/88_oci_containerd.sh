#!/usr/bin/env bash
# Scenario: containerd runs containers in space microVMs through its runc shim
# (io.containerd.runc.v2 with --runc-binary naming space-oci): an image imported with
# `ctr image import`; output, exit codes (7, 137 for kill -9), a detached task with exec, kill
# and delete; nothing is left behind. containerd runs here as a private daemon (its own root,
# state and socket, the CRI plugin off); it and podman (which makes the image archive) come from
# Debian, installed when missing.
source "$(dirname "$0")/lib.sh"
if ! command -v containerd >/dev/null || ! command -v ctr >/dev/null || ! command -v podman >/dev/null; then
  echo "containerd or podman is missing: installing them from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q containerd podman >/dev/null ||
    fail "containerd is not installed and apt-get could not install it: apt-get install containerd podman"
fi
command -v busybox >/dev/null || fail "busybox (static) is not installed: apt-get install busybox-static"
shared_template default

work=$TEST_ROOT/cd
STATE=$TEST_ROOT/oci-state
mkdir -p "$work/img/bin" "$TEST_ROOT/bin"
cp "$(command -v busybox)" "$work/img/bin/busybox"
for a in sh echo cat sleep; do ln -s busybox "$work/img/bin/$a"; done
tar -C "$work/img" -cf "$work/rootfs.tar" .
tag=localhost/space-cd-test-$$:latest
pod() { podman --storage-driver vfs --root "$work/pstore" --runroot "$work/prun" "$@"; }
pod import -q "$work/rootfs.tar" "$tag" >/dev/null || fail "podman import"
pod save -q --format docker-archive -o "$work/image.tar" "$tag" || fail "podman save"
pod rmi -f "$tag" >/dev/null 2>&1
rm -rf "$work/pstore" "$work/prun"

# The runtime the shim runs: space-oci with this test's store. The shim passes its own --root
# (/run/containerd/runc/<namespace>); the wrapper keeps the records in the test's directory.
runtime=$TEST_ROOT/bin/space-oci-test
space_oci_wrapper "$runtime" "$STATE" --drop-root

sock=$work/containerd.sock
cat >"$work/config.toml" <<TOML
version = 2
root = "$work/root"
state = "$work/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
TOML
containerd --config "$work/config.toml" >"$work/containerd.log" 2>&1 &
cd_pid=$!
stop_containerd() {
  ctr -a "$sock" -n spacetest tasks kill -s KILL lived >/dev/null 2>&1
  ctr -a "$sock" -n spacetest containers rm lived >/dev/null 2>&1
  kill "$cd_pid" 2>/dev/null && wait "$cd_pid" 2>/dev/null
  pkill -f -- "containerd-shim-runc-v2 -namespace spacetest -address $sock" 2>/dev/null
  local c
  for c in $("$SPACE_BIN" --oci --root "$STATE" list -q 2>/dev/null); do
    "$SPACE_BIN" --oci --root "$STATE" delete --force "$c" >/dev/null 2>&1
  done
  findmnt -rn -o TARGET | grep "^$work/" | sort -r | xargs -r -n1 umount -l
  rm -rf "$work"
}
at_exit stop_containerd
wait_until 30 bash -c "ctr -a '$sock' version >/dev/null 2>&1"
c() { ctr -a "$sock" -n spacetest "$@"; }
expect_status 0 c image import --base-name localhost/space-cd-test "$work/image.tar"
img=$(c image ls -q | head -1)
[ -n "$img" ] || fail "ctr image import made no image: $ERR"
run() { c run --rm --snapshotter native --runc-binary "$runtime" "$img" "$@"; }

expect_status 0 run t1 echo hi
[ "$OUT" = hi ] || fail "ctr run echo hi printed: $OUT; stderr: $ERR"
expect_status 7 run t2 sh -c 'exit 7'
expect_status 137 run t3 sh -c 'kill -9 $$'

# A detached task: exec in it, kill it, delete it.
expect_status 0 c run -d --snapshotter native --runc-binary "$runtime" "$img" lived sleep 1000
wait_until 60 bash -c "ctr -a '$sock' -n spacetest tasks ls | grep -q 'lived .*RUNNING'"
pid=$(c tasks ls | awk '$1 == "lived" { print $2 }')
alive "$pid" || fail "the task's pid $pid is not running"
expect_status 5 c tasks exec --exec-id e1 lived sh -c 'echo in-exec; exit 5'
[ "$OUT" = in-exec ] || fail "ctr tasks exec printed: $OUT"
expect_status 0 c tasks kill -s TERM lived
wait_until 60 bash -c "ctr -a '$sock' -n spacetest tasks ls | grep -q 'lived .*STOPPED'"
expect_status 0 c tasks delete lived
expect_status 0 c containers rm lived
[ -z "$("$SPACE_BIN" --oci --root "$STATE" list -q)" ] || fail "runtime records left"
left=$(space list --format json | python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)))')
[ -z "$left" ] || fail "sandboxes left: $left"
echo "PASS"
