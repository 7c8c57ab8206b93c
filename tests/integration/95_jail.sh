# Scenario: every VMM is jailed (issue 15). For a VMM restored from a template, a branch child
# and a VMM resumed from a checkpoint, /proc shows seccomp in filter mode, no_new_privs, no
# capability in any set, a uid and gid of its own (not root, none supplementary), mount, PID,
# network, IPC and UTS namespaces other than ours (the network one shared by all jails, with only
# a loopback device, down), as its root its run directory, read-only (its sockets, nothing of the
# host's files; a branch child has its source's), its run directory as working directory, no
# descriptor of a host directory (".." from one would leave the jail; a branch child still holds
# its run directory's, see README), and its own cgroup with the memory limit (guest RAM
# plus the overhead) and pid limit; the jail's PID 1 is its parent and jailed alike; neither keeps
# the caller's environment (the jail's PID 1, a clone of the CLI, rewrites it). A branch
# shares its source's uid and outlives it, but a process of that uid is refused by its source's
# sockets; the memory+swap limit and RLIMIT_FSIZE bound it. Everything else still works under the jail (exec,
# cp, pause, resume, checkpoint, branch). Destroy removes the cgroups and frees the uid.
source "$(dirname "$0")/lib.sh"
needs_vm "the VMM's jail, seccomp filters and namespaces"

shared_template base
# A variable of the caller's that no jailed process may keep (see check_jailed).
export SPACE_TEST_CALLER_SECRET=do-not-inherit

status_field() { awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "/proc/$1/status"; }
ns_of() { stat -L -c %i "/proc/$1/ns/$2"; }

# check_jailed PID ID [ROOT_ID]: the VMM PID of sandbox ID is jailed as described above, in the
# run directory of sandbox ROOT_ID (default ID) as its root.
check_jailed() {
  local pid=$1 id=$2 root_id=${3:-$2} what="VMM $1 of $2" uid
  alive "$pid" || fail "$what is not running"
  [ "$(status_field "$pid" Seccomp)" = 2 ] || fail "$what: seccomp is not in filter mode"
  [ "$(status_field "$pid" NoNewPrivs)" = 1 ] || fail "$what: no_new_privs is not set"
  for set in CapInh CapPrm CapEff CapBnd CapAmb; do
    [ "$(status_field "$pid" $set)" = 0000000000000000 ] || fail "$what: $set is not empty"
  done
  uid=$(status_field "$pid" Uid | awk '{print $1}')
  [ "$uid" -ne 0 ] || fail "$what runs as root"
  [ "$(status_field "$pid" Uid)" = "$uid $uid $uid $uid" ] || fail "$what: real, effective, saved uids differ"
  [ "$(status_field "$pid" Gid)" = "$uid $uid $uid $uid" ] || fail "$what: gids are not its uid"
  [ -z "$(status_field "$pid" Groups)" ] || fail "$what has supplementary groups"
  for ns in mnt pid net ipc uts; do
    [ "$(ns_of "$pid" $ns)" != "$(ns_of $$ $ns)" ] || fail "$what shares our $ns namespace"
  done
  # The jails' shared network namespace: the one mounted at /run/space/.netns, with only a
  # loopback device, down.
  [ "$(ns_of "$pid" net)" = "$(stat -L -c %i /run/space/.netns)" ] || fail "$what is not in the jails' network namespace"
  local links
  links=$(nsenter --net=/run/space/.netns ip -o link | awk -F': ' '{print $2}' | tr '\n' ' ')
  [ "$links" = "lo " ] || fail "the jails' network namespace has devices: $links"
  nsenter --net=/run/space/.netns ip -o link show lo | grep -q ',UP' && fail "loopback is up in the jails' network namespace"
  # Its mount namespace is a private copy of the jails' base mount namespace (an empty read-only
  # tmpfs, kept at /run/space/.mnt/ns), not that one itself.
  [ "$(stat -L -c %i /run/space/.mnt/ns)" != "$(ns_of "$pid" mnt)" ] || fail "$what lives in the jails' base mount namespace itself"
  local where="$SPACE_RUN_DIR/$root_id"
  [ "$(stat -L -c %d:%i "/proc/$pid/root")" = "$(stat -c %d:%i "$where")" ] || fail "$what: its root is not $where"
  [ "$(ls -A "/proc/$pid/root/")" = "$(ls -A "$where")" ] || fail "$what sees other files in its root: $(ls -A "/proc/$pid/root/")"
  ls -A "/proc/$pid/root/" | grep -qx vsock.sock || fail "$what: no vsock.sock in its root"
  [ -n "$(awk '$5 == "/" && $6 ~ /^ro,/' "/proc/$pid/mountinfo")" ] || fail "$what: its root is not read-only: $(cat "/proc/$pid/mountinfo")"
  [ "$(wc -l <"/proc/$pid/mountinfo")" = 1 ] || fail "$what sees mounts besides its root: $(cat "/proc/$pid/mountinfo")"
  [ "$(stat -L -c %d:%i "/proc/$pid/cwd")" = "$(stat -c %d:%i "$SPACE_RUN_DIR/$id")" ] || fail "$what: cwd is not its run directory"
  if [ "$root_id" = "$id" ]; then
    local fd
    for fd in /proc/"$pid"/fd/*; do
      [ -d "$fd" ] && fail "$what holds a descriptor of directory $(readlink "$fd")"
    done
  fi
  [ "$(space state "$id" | json_field uid)" = "$uid" ] || fail "$what: state.json names another uid"
  # Its cgroup: its own, with the limits of a 256 MiB guest (plus 128 MiB for the VMM).
  local cg=$CGROUP_PARENT/$id
  [ "$(space state "$id" | json_field cgroup)" = "$cg" ] || fail "$what: state.json names no cgroup"
  grep -q ":memory:/$cg\$" "/proc/$pid/cgroup" || fail "$what is not in memory cgroup $cg: $(cat /proc/$pid/cgroup)"
  grep -q ":pids:/$cg\$" "/proc/$pid/cgroup" || fail "$what is not in pids cgroup $cg"
  [ "$(cat /sys/fs/cgroup/memory/$cg/memory.limit_in_bytes)" = $(((256 + 128) << 20)) ] || fail "$what: memory limit"
  [ "$(cat /sys/fs/cgroup/pids/$cg/pids.max)" = 512 ] || fail "$what: pid limit"
  # No swap past the memory limit, where the host accounts swap.
  if [ -e "/sys/fs/cgroup/memory/$cg/memory.memsw.limit_in_bytes" ]; then
    [ "$(cat "/sys/fs/cgroup/memory/$cg/memory.memsw.limit_in_bytes")" = $(((256 + 128) << 20)) ] ||
      fail "$what: memory+swap limit is not the memory limit"
  fi
  # Its files cannot grow past its largest disk or memory (RLIMIT_FSIZE, soft = hard, bounded).
  local fsize
  fsize=$(awk '/^Max file size/ { print $4 " " $5 }' "/proc/$pid/limits")
  [[ "$fsize" =~ ^([0-9]+)\ ([0-9]+)$ ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ] &&
    [ "${BASH_REMATCH[1]}" -ge $(((256 + 64) << 20)) ] || fail "$what: RLIMIT_FSIZE is '$fsize'"
  # The jail's PID 1, an ancestor (a branch's parent is its source until that exits), is
  # jailed the same way and waits in the jails' own group.
  local init=$pid
  while [ "$(status_field "$init" NSpid | awk '{print $NF}')" != 1 ]; do
    init=$(awk '{print $4}' "/proc/$init/stat")
    [ "$init" -gt 1 ] || fail "$what: no jail PID 1 among its ancestors"
  done
  [ "$(ns_of "$init" pid)" = "$(ns_of "$pid" pid)" ] || fail "$what: its jail's PID 1 is in another PID namespace"
  [ "$(status_field "$init" Seccomp)" = 2 ] || fail "$what: its jail's PID 1 has no seccomp filter"
  [ "$(status_field "$init" Uid | awk '{print $1}')" = "$uid" ] || fail "$what: its jail's PID 1 runs as another uid"
  [ "$(status_field "$init" CapEff)" = 0000000000000000 ] || fail "$what: its jail's PID 1 keeps capabilities"
  grep -q ":memory:/$CGROUP_PARENT/init\$" "/proc/$init/cgroup" || fail "$what: its jail's PID 1 is not in the init group"
  # It names itself, and neither it nor the VMM keeps the caller's environment (a CI job's
  # tokens): both have the daemon environment the CLI builds.
  [[ "$(tr '\0' ' ' <"/proc/$init/cmdline")" == "space --root $SPACE_ROOT __jail-init "* ]] ||
    fail "$what: its jail's PID 1 is named $(tr '\0' ' ' <"/proc/$init/cmdline")"
  local p
  for p in "$init" "$pid"; do
    tr '\0' '\n' <"/proc/$p/environ" | grep -q '^SPACE_TEST_CALLER_SECRET=' &&
      fail "$what: process $p keeps the caller's environment"
    tr '\0' '\n' <"/proc/$p/environ" | grep -qx 'TZ=UTC0' || fail "$what: process $p lacks the daemon environment"
  done
  echo "$what: jailed as uid $uid"
}

expect_status 0 space create --template base a
A=$(pid_of a)
check_jailed "$A" a
A_UID=$(space state a | json_field uid)
# The caller's environment does not reach the VMM.
CI_TOKEN=secret-of-the-ci expect_status 0 space create --template base e
tr '\0' '\n' <"/proc/$(pid_of e)/environ" | grep -q CI_TOKEN && fail "the caller's environment reached the VMM"
# Its zone is named, so that libc never opens /etc/localtime in the jail.
tr '\0' '\n' <"/proc/$(pid_of e)/environ" | grep -qx TZ=UTC0 || fail "the VMM has no TZ=UTC0"
expect_status 0 space destroy e

# Everything still works under the jail.
expect_status 0 space exec a -- sh -c 'echo in-jail > /tmp/mark; cat /tmp/mark'
[ "$OUT" = in-jail ] || fail "exec in a jailed sandbox: '$OUT'"
echo copied >"$TEST_ROOT/f"
expect_status 0 space cp "$TEST_ROOT/f" a:/tmp/f
expect_status 0 space cp a:/tmp/f "$TEST_ROOT/g"
[ "$(cat "$TEST_ROOT/g")" = copied ] || fail "cp through a jailed VMM"
expect_status 0 space pause a
expect_status 0 space resume a

# A branch child: jailed alike, with the source's uid and a cgroup of its own; it outlives its
# source.
expect_status 0 space branch a --name b
B=$(pid_of b)
check_jailed "$B" b a
[ "$(space state b | json_field uid)" = "$A_UID" ] || fail "the branch does not share its source's uid"
expect_status 0 space exec b -- cat /tmp/mark
[ "$OUT" = in-jail ] || fail "the branch lost its source's memory"
# A branch reaches nothing of its source: a process of their shared uid in the source's root (as a
# compromised branch VMM is) is refused by the source's vsock.sock and control.sock, which serve
# only root and the VMM itself (control.sock is root's, mode 0600, so its connect fails at once).
# Before the fix the vsock handshake answered "OK 1024", an exec.
for sock in vsock.sock control.sock; do
  got=$(python3 - "$SPACE_RUN_DIR/a" "$A_UID" "$sock" <<'PY'
import os, socket, sys
root, uid, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.chroot(root)
os.chdir("/")
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
try:
    s.connect("/" + name)
except OSError as e:
    print("connect failed: %s" % e)
    sys.exit(0)
try:
    s.sendall(b"CONNECT 1024\n" if name == "vsock.sock" else b'{"op":"state"}\n')
    data = s.recv(200)
    print("closed" if data == b"" else "answered: %r" % data)
except socket.timeout:
    print("answered: nothing, but held open")
except OSError as e:
    print("closed" if e.errno in (104, 32) else "error: %s" % e)
PY
)
  # Refused either way: closed by the VMM's peer check, or (control.sock, bound by root before
  # the VMM's jail, mode 0600) not even connected.
  case $got in
    closed | "connect failed: [Errno 13] Permission denied") ;;
    *) fail "a process of the branch's uid in the source's root got into its $sock: $got" ;;
  esac
done
grep -q "refusing a client of uid $A_UID" "$SPACE_ROOT/store/sandboxes/a/vmm.log" ||
  fail "the source's vmm.log does not say it refused the branch's uid"
echo "a process of the shared uid is refused by the source's vsock.sock and control.sock"
expect_status 0 space destroy a
assert_gone a "$A"
[ ! -d "/sys/fs/cgroup/memory/$CGROUP_PARENT/a" ] || fail "the source's cgroup outlived it"
expect_status 0 space exec b -- echo still-here
[ "$OUT" = still-here ] || fail "the branch did not outlive its source"

# Checkpoint: the VMM goes, and its cgroup with it; resume makes a new jail.
expect_status 0 space checkpoint b
[ ! -d "/sys/fs/cgroup/memory/$CGROUP_PARENT/b" ] || fail "a checkpointed sandbox kept its cgroup"
[ "$(space state b | json_field uid)" = 0 ] || fail "a checkpointed sandbox still names a uid"
wait_until "$SPACE_TEST_TIMEOUT" gone "$B"
expect_status 0 space resume b
R=$(pid_of b)
check_jailed "$R" b
expect_status 0 space exec b -- cat /tmp/mark
[ "$OUT" = in-jail ] || fail "the resumed VMM lost the guest's memory"
R_UID=$(space state b | json_field uid)
expect_status 0 space destroy b
assert_gone b "$R"
# The jail is gone with its last process: no process runs as its uids any more.
wait_until "$SPACE_TEST_TIMEOUT" sh -c "! pgrep -U $A_UID >/dev/null && ! pgrep -U $R_UID >/dev/null"
echo "PASS"
