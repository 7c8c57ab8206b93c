#!/usr/bin/env bash
# Scenario: podman runs containers in space microVMs through `--runtime` (space-oci, the runc
# grammar): an image made with `podman import`; output, exit codes (7, and 137 for kill -9), -i
# stdin, -t through script(1); run -d, exec, stop and rm; ps and inspect show the state and the
# pid; two containers at once are two VMs; nothing is left behind. podman (with conmon) comes
# from Debian, installed here when missing.
source "$(dirname "$0")/lib.sh"
for p in podman script; do
  if ! command -v $p >/dev/null; then
    echo "$p is missing: installing it from Debian"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman bsdutils >/dev/null ||
      fail "$p is not installed and apt-get could not install it: apt-get install podman bsdutils"
  fi
done
command -v busybox >/dev/null || fail "busybox (static) is not installed: apt-get install busybox-static"
shared_template default

work=$TEST_ROOT/podman
STATE=$TEST_ROOT/oci-state
mkdir -p "$work/root/bin" "$TEST_ROOT/bin"
cp "$(command -v busybox)" "$work/root/bin/busybox"
for a in sh echo cat sleep tty stty id; do ln -s busybox "$work/root/bin/$a"; done
tar -C "$work/root" -cf "$work/rootfs.tar" .
# The runtime podman runs: space-oci with this test's store and state directory (podman starts
# runtimes with an environment of its own, without SPACE_ROOT).
runtime=$TEST_ROOT/bin/space-oci-test
space_oci_wrapper "$runtime" "$STATE"
tag=localhost/space-oci-test-$$
pod() { podman --storage-driver vfs --root "$work/store" --runroot "$work/run" --runtime "$runtime" "$@"; }
cleanup_podman() {
  pod rm -af -t 0 >/dev/null 2>&1 || true
  pod rmi -f "$tag" >/dev/null 2>&1 || true
  rm -rf "$work/store" "$work/run" 2>/dev/null || true
}
at_exit cleanup_podman
pod import -q "$work/rootfs.tar" "$tag" >/dev/null || fail "podman import"

# Output and exit codes.
expect_status 0 pod run --rm "$tag" echo hi
[ "$OUT" = hi ] || fail "podman run echo hi printed: $OUT; stderr: $ERR"
expect_status 7 pod run --rm "$tag" sh -c 'exit 7'
expect_status 137 pod run --rm "$tag" sh -c 'kill -9 $$'
# -i: stdin reaches the process.
OUT=$(echo piped | pod run -i --rm "$tag" sh -c 'read x; echo got $x') || fail "podman run -i"
[ "$OUT" = "got piped" ] || fail "podman run -i printed: $OUT"
# -t: a terminal, through script(1) so that podman has one.
OUT=$(script -qec "podman --storage-driver vfs --root $work/store --runroot $work/run --runtime $runtime run --rm -t $tag sh -c 'tty; stty size'" /dev/null </dev/null | tr -d '\r')
assert_contains "$OUT" "/dev/pts/" "podman run -t: the process's stdin is a terminal"

# Detached containers: two at once, two VMs; ps, inspect, exec, stop, rm.
expect_status 0 pod run -d --name a "$tag" sleep 1000
expect_status 0 pod run -d --name b "$tag" sleep 1000
ps=$(pod ps --format '{{.Names}} {{.Status}}' | sort)
assert_contains "$ps" "a Up" "podman ps: a"
assert_contains "$ps" "b Up" "podman ps: b"
for c in a b; do
  read -r pid status id <<<"$(pod inspect --format '{{.State.Pid}} {{.State.Status}} {{.Id}}' $c)"
  [ "$status" = running ] || fail "podman inspect $c: status $status"
  alive "$pid" || fail "podman inspect $c: pid $pid is not running"
  [ "$("$SPACE_BIN" --oci --root "$STATE" state "$id" | json_field pid)" = "$pid" ] ||
    fail "podman's pid for $c is not the runtime's"
  sb=$("$SPACE_BIN" --oci --root "$STATE" state "$id" | json_field sandbox)
  assert_contains "$sb" "${id:0:12}-" "the sandbox of $c: podman's short id"
  [ "$(status_of "$sb")" = running ] || fail "the sandbox of $c is not running"
  eval "vmm_$c=$(pid_of "$sb")"
done
[ "$vmm_a" != "$vmm_b" ] || fail "two containers share one VMM"
expect_status 4 pod exec a sh -c 'echo in-exec; exit 4'
[ "$OUT" = in-exec ] || fail "podman exec printed: $OUT"
expect_status 0 pod stop -t 30 a
[ "$(pod inspect --format '{{.State.Status}} {{.State.ExitCode}}' a)" = "exited 143" ] ||
  fail "after podman stop: $(pod inspect --format '{{.State.Status}} {{.State.ExitCode}}' a)"
wait_until 30 gone "$vmm_a"
expect_status 0 pod rm a
expect_status 0 pod rm -f -t 0 b
wait_until 30 gone "$vmm_b"
[ -z "$(pod ps -aq)" ] || fail "containers left: $(pod ps -a)"
[ -z "$("$SPACE_BIN" --oci --root "$STATE" list -q)" ] || fail "runtime records left"
left=$(space list --format json | python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)))')
[ -z "$left" ] || fail "sandboxes left: $left"
echo "PASS"
