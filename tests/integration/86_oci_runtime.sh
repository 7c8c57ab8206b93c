#!/usr/bin/env bash
# Scenario: runc's command line alone, driven as conmon drives it (oci_engine.py: a subreaper
# that waits for the pid in --pid-file), with a hand-written bundle. Every state transition
# (created, running, paused, stopped, deleted), the process's stdio, exit status, user, cwd,
# hostname, groups, umask, rlimits and bind-mounted files; the bundle's CPU quota on the VM's cgroup, a memory limit
# under the guest's memory refused with nothing left; egress from the
# bundle's network namespace; kill with a forwarded signal and with KILL; exec --process in
# the foreground and detached; delete of a running container refused; a second container of the
# same root reuses its image; a malformed config.json fails with exit 1 and leaves nothing.
source "$(dirname "$0")/lib.sh"
shared_template default

mkdir -p "$TEST_ROOT/bin"
ln -s "$SPACE_BIN" "$TEST_ROOT/bin/space-oci"
OCI=$TEST_ROOT/bin/space-oci
STATE=$TEST_ROOT/oci-state
ENGINE=$SRC/tests/integration/oci_engine.py
oci() { "$OCI" --root "$STATE" "$@"; }
cleanup_oci() {
  local c
  for c in $(oci list -q 2>/dev/null); do oci delete --force "$c" >/dev/null 2>&1; done
}
at_exit cleanup_oci
oci_status() { oci state "$1" | json_field status; }

command -v busybox >/dev/null || fail "busybox (static) is not installed: apt-get install busybox-static"
bundle=$TEST_ROOT/bundle
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/etc" "$bundle/rootfs/srv" "$TEST_ROOT/shared"
cp "$(command -v busybox)" "$bundle/rootfs/bin/busybox"
for a in sh cat id pwd hostname ls sleep wget; do ln -s busybox "$bundle/rootfs/bin/$a"; done
echo "nameserver 127.0.0.9" >"$TEST_ROOT/resolv.conf"
echo "shared data" >"$TEST_ROOT/shared/f"
# config.json with process ARGS (a JSON array), and optionally more members of "linux" and
# annotations (JSON text each, with a leading comma).
write_config() {
  cat >"$bundle/config.json" <<JSON
{"ociVersion": "1.0.2",
 "process": {"terminal": false, "user": {"uid": 1000, "gid": 1000, "additionalGids": [10], "umask": 23},
             "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 321, "hard": 654}],
             "args": $1, "env": ["PATH=/bin", "GREETING=hello"], "cwd": "/srv"},
 "root": {"path": "rootfs"},
 "hostname": "ocibox",
 "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/etc/resolv.conf", "type": "bind", "source": "$TEST_ROOT/resolv.conf", "options": ["rbind", "ro"]},
            {"destination": "/data", "type": "bind", "source": "$TEST_ROOT/shared", "options": ["rbind"]}],
 "annotations": {"test": "86"${3:-}},
 "linux": {"namespaces": [{"type": "pid"}, {"type": "mount"}${2:-}],
           "resources": {"cpu": {"quota": 120000, "period": 100000}}}}
JSON
}

# 1. One container through every state: created, running, stopped; its stdio and exit status.
write_config '["sh", "-c", "echo out $GREETING; echo err >&2; hostname; id -u; id -G; umask; ulimit -n; pwd; cat /data/f /etc/resolv.conf; read line; echo stdin=$line; exit 7"]'
e1=$TEST_ROOT/e1 && mkdir -p "$e1" && echo "fed" >"$e1/stdin"
python3 "$ENGINE" "$e1" "$OCI" "$STATE" run "$bundle" c1 --start-after "$e1/go" &
engine1=$!
wait_until 120 test -e "$e1/create.rc"
[ "$(cat "$e1/create.rc")" = 0 ] || fail "create: $(cat "$e1/stderr")"
[ "$(oci_status c1)" = created ] || fail "after create: $(oci state c1)"
shim=$(cat "$e1/pid")
[ "$(oci state c1 | json_field pid)" = "$shim" ] || fail "state's pid is not --pid-file's"
[ "$(oci state c1 | json_field bundle)" = "$bundle" ] || fail "state's bundle"
[ "$(oci state c1 | json_field annotations.test)" = 86 ] || fail "state's annotations"
alive "$shim" || fail "the container's process $shim is not running after create"
[ "$(status_of c1)" = running ] || fail "the sandbox c1 is not running after create"
# linux.resources.cpu is the VM's cgroup's bandwidth (space's default for 1 vCPU: 150000).
cg=$(space state c1 | json_field cgroup)
quota=$(find /sys/fs/cgroup -path "*/$cg/cpu.cfs_quota_us" 2>/dev/null | head -1)
if [ -n "$quota" ]; then
  [ "$(cat "$quota")" = 120000 ] || fail "the cgroup's cpu quota is $(cat "$quota"), not the bundle's 120000"
else
  quota=$(find /sys/fs/cgroup -path "*/$cg/cpu.max" 2>/dev/null | head -1)
  [ -n "$quota" ] || fail "no cpu controller file for cgroup $cg"
  [ "$(cat "$quota")" = "120000 100000" ] || fail "the cgroup's cpu.max is $(cat "$quota")"
fi
image=$(space state c1 | json_field image)
assert_contains "$image" "oci-" "the sandbox's image"
expect_status 1 oci start nosuch
assert_contains "$ERR" "container nosuch does not exist" "start of a missing container"
touch "$e1/go"
wait_until 120 test -e "$e1/exit"
wait "$engine1"
[ "$(cat "$e1/exit")" = "exit 7" ] || fail "exit status: $(cat "$e1/exit"); stderr: $(cat "$e1/stderr")"
want=$'out hello\nocibox\n1000\n1000 10\n0027\n321\n/srv\nshared data\nnameserver 127.0.0.9\nstdin=fed'
[ "$(cat "$e1/stdout")" = "$want" ] || fail "stdout: $(cat "$e1/stdout")"
[ "$(cat "$e1/stderr")" = "err" ] || fail "stderr: $(cat "$e1/stderr")"
[ "$(oci_status c1)" = stopped ] || fail "after the process ended: $(oci state c1)"
[ "$(oci state c1 | json_field pid)" = 0 ] || fail "a stopped container has pid 0"
wait_until 20 bash -c "[ \"\$(\"$SPACE_BIN\" state c1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"status\"])')\" = stopped ]"
expect_status 1 oci kill c1 TERM
# runc's words, which containerd's shim reads as "process already finished" (89_cri)
assert_contains "$ERR" "container not running: c1" "kill of a stopped container"
expect_status 0 oci delete c1
[ ! -e "$STATE/c1" ] || fail "delete left $STATE/c1"
[ ! -e "$SPACE_ROOT/store/sandboxes/c1" ] || fail "delete left the sandbox"

# 2. Two long-running containers at once, two VMs; the same root reuses the image.
write_config '["sleep", "1000"]'
images_before=$(space image list --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
for c in c2 c3; do
  mkdir -p "$TEST_ROOT/$c"
  python3 "$ENGINE" "$TEST_ROOT/$c" "$OCI" "$STATE" run "$bundle" "$c" &
done
wait_until 120 test -e "$TEST_ROOT/c2/create.rc" -a -e "$TEST_ROOT/c3/create.rc"
wait_until 30 bash -c "[ \"\$(\"$OCI\" --root \"$STATE\" state c2 | grep -c '\"running\"')\" = 1 ]"
wait_until 30 bash -c "[ \"\$(\"$OCI\" --root \"$STATE\" state c3 | grep -c '\"running\"')\" = 1 ]"
[ "$(space state c2 | json_field pid)" != "$(space state c3 | json_field pid)" ] || fail "two containers share a VMM"
images_after=$(space image list --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$images_after" = "$images_before" ] || fail "the same root made another image ($images_before -> $images_after)"
[ "$(space state c2 | json_field image)" = "$image" ] || fail "c2 has another image than c1"
[ "$(oci list -q | sort | tr '\n' ' ')" = "c2 c3 " ] || fail "list: $(oci list)"

# exec --process, in the foreground and detached.
cat >"$TEST_ROOT/p1.json" <<'JSON'
{"args": ["sh", "-c", "echo from-exec $(id -u) $(pwd); exit 3"], "env": ["PATH=/bin"], "cwd": "/data", "user": {"uid": 0, "gid": 0}}
JSON
x1=$TEST_ROOT/x1 && mkdir -p "$x1"
python3 "$ENGINE" "$x1" "$OCI" "$STATE" exec c2 "$TEST_ROOT/p1.json"
[ "$(cat "$x1/exit")" = "exit 3" ] || fail "exec: $(cat "$x1/exit"); $(cat "$x1/stderr")"
[ "$(cat "$x1/stdout")" = "from-exec 0 /data" ] || fail "exec's stdout: $(cat "$x1/stdout")"
x2=$TEST_ROOT/x2 && mkdir -p "$x2"
python3 "$ENGINE" "$x2" "$OCI" "$STATE" exec c2 "$TEST_ROOT/p1.json" --detach
[ "$(cat "$x2/create.rc")" = 0 ] || fail "exec --detach: $(cat "$x2/stderr")"
[ "$(cat "$x2/exit")" = "exit 3" ] || fail "detached exec: $(cat "$x2/exit"); $(cat "$x2/stderr")"
[ "$(cat "$x2/stdout")" = "from-exec 0 /data" ] || fail "detached exec's stdout: $(cat "$x2/stdout")"
# exec with the process on the command line (no process.json), and nothing left in the state dir.
expect_status 4 oci exec --cwd /data --env X=from-args -e Y=2 c2 sh -c 'echo $X$Y $(pwd); exit 4'
[ "$OUT" = "from-args2 /data" ] || fail "exec from the command line: $OUT; $ERR"
expect_status 1 oci exec c2
case $ERR in *"exec needs --process FILE or a command"*) ;; *) fail "exec without a process: $ERR" ;; esac
expect_status 1 oci exec --process "$TEST_ROOT/p1.json" c2 true
case $ERR in *"not both"*) ;; *) fail "exec with a process and a command: $ERR" ;; esac
leftover=$(find "$STATE" -name 'exec-*.json')
[ -z "$leftover" ] || fail "exec left $leftover"

# pause and resume map onto space's.
expect_status 0 oci pause c3
[ "$(oci_status c3)" = paused ] || fail "after pause: $(oci state c3)"
[ "$(status_of c3)" = paused ] || fail "the sandbox is not paused"
expect_status 0 oci resume c3
[ "$(oci_status c3)" = running ] || fail "after resume: $(oci state c3)"

# A running container is not deleted without --force.
expect_status 1 oci delete c2
assert_contains "$ERR" "that is not stopped: running" "delete of a running container"
# kill delivers the signal to the container's process: sleep dies of SIGUSR1 (128+10).
expect_status 0 oci kill c2 USR1
wait_until 60 test -e "$TEST_ROOT/c2/exit"
[ "$(cat "$TEST_ROOT/c2/exit")" = "exit 138" ] || fail "kill USR1: $(cat "$TEST_ROOT/c2/exit")"
# KILL ends the process and the VM at once.
vmm3=$(space state c3 | json_field pid)
expect_status 0 oci kill c3 KILL
wait_until 30 test -e "$TEST_ROOT/c3/exit"
[ "$(cat "$TEST_ROOT/c3/exit")" = "signal 9" ] || fail "kill KILL: $(cat "$TEST_ROOT/c3/exit")"
wait_until 10 gone "$vmm3"
[ "$(oci_status c3)" = stopped ] || fail "after kill KILL: $(oci state c3)"
wait
expect_status 0 oci delete c2
expect_status 0 oci delete --force c3
[ -z "$(oci list -q)" ] || fail "containers left: $(oci list)"
[ -z "$(space list --format json | python3 -c 'import json,sys; print(" ".join(s["id"] for s in json.load(sys.stdin)))')" ] ||
  fail "sandboxes left: $(space list)"

# 3. The engine's network namespace: the container's connections leave from it, under the
# policy of its space.net annotation. The same address serves "host" on the host and "netns" in
# a namespace this test makes; the container must get the namespace's.
ns=spacetest-$$
ip netns add "$ns" || fail "ip netns add $ns"
at_exit "ip netns del $ns"
ip -n "$ns" link set lo up
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.2", 0)); print(s.getsockname()[1])')
mkdir -p "$TEST_ROOT/www-host" "$TEST_ROOT/www-ns"
echo host >"$TEST_ROOT/www-host/m"
echo netns >"$TEST_ROOT/www-ns/m"
python3 -m http.server --bind 127.0.0.2 --directory "$TEST_ROOT/www-host" "$port" >/dev/null 2>&1 &
at_exit "kill $! 2>/dev/null"
ip netns exec "$ns" python3 -m http.server --bind 127.0.0.2 --directory "$TEST_ROOT/www-ns" "$port" >/dev/null 2>&1 &
at_exit "kill $! 2>/dev/null"
listening() { "$@" python3 -c "import socket; socket.create_connection(('127.0.0.2', $port), 1)" 2>/dev/null; }
wait_until 20 listening
wait_until 20 listening ip netns exec "$ns"
write_config "[\"wget\", \"-q\", \"-O\", \"-\", \"http://127.0.0.2:$port/m\"]" \
  ", {\"type\": \"network\", \"path\": \"/run/netns/$ns\"}" ", \"space.net\": \"allow=127.0.0.2:$port\""
n1=$TEST_ROOT/n1 && mkdir -p "$n1"
python3 "$ENGINE" "$n1" "$OCI" "$STATE" run "$bundle" n1 --start-after "$n1/go" &
engine_n1=$!
wait_until 120 test -e "$n1/create.rc"
[ "$(cat "$n1/create.rc")" = 0 ] || fail "create with a network namespace: $(cat "$n1/stderr")"
[ "$(space net show --format json n1 | json_field netns)" = "/run/netns/$ns" ] ||
  fail "net show: $(space net show --format json n1)"
touch "$n1/go"
wait_until 120 test -e "$n1/exit"
wait "$engine_n1"
[ "$(cat "$n1/exit")" = "exit 0" ] || fail "wget in the namespace: $(cat "$n1/exit"); $(cat "$n1/stderr")"
[ "$(cat "$n1/stdout")" = netns ] || fail "the connection did not leave from the engine's namespace: $(cat "$n1/stdout")"
assert_contains "$(space net log --format json n1)" "127.0.0.2:$port" "the audit line of the connection"
expect_status 0 oci delete n1
[ ! -e "$SPACE_ROOT/egress/netns/n1" ] || fail "delete left the namespace record"

# 4. A malformed config.json: exit 1 with the field named, nothing left behind.
echo '{"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": {"args": "sh"}}' >"$bundle/config.json"
expect_status 1 oci --log "$TEST_ROOT/oci.log" --log-format json create --bundle "$bundle" --pid-file "$TEST_ROOT/bad.pid" bad
assert_contains "$ERR" "config.json: process.args: expected an array" "a malformed config.json"
assert_contains "$(cat "$TEST_ROOT/oci.log")" '"level":"error"' "the --log line"
[ ! -e "$STATE/bad" ] && [ ! -e "$TEST_ROOT/bad.pid" ] && [ ! -e "$SPACE_ROOT/store/sandboxes/bad" ] ||
  fail "a failed create left something behind"
# 5. A memory limit under the template's guest memory: refused by the create (it names the limit
# and the fix), and the sandbox it made is gone again with the staged bind mounts.
write_config '["true"]'
sed -i 's/"resources": {"cpu"/"resources": {"memory": {"limit": 67108864}, "cpu"/' "$bundle/config.json"
expect_status 1 oci create --bundle "$bundle" --pid-file "$TEST_ROOT/small.pid" small
assert_contains "$ERR" "linux.resources.memory.limit (64 MiB) is below the template's guest memory" \
  "a memory limit under the guest's"
[ ! -e "$STATE/small" ] && [ ! -e "$SPACE_ROOT/store/sandboxes/small" ] && [ ! -e "$SPACE_RUN_DIR/small" ] ||
  fail "a refused create left something behind"
# The two grammars stay apart: space's own `state` still answers for sandboxes.
expect_status 125 space state bad
assert_contains "$ERR" "does not exist" "space state after a failed OCI create"
echo "PASS"
