# Shared set-up for the integration tests (sourced, not run). Each test gets a private run
# directory under /tmp (so it never touches /var/lib/space), the cached kernel and rootfs (built
# on demand by the scripts), and a trap that force-destroys whatever it created, unmounts the
# loopback store (/tmp is not btrfs, so the root's store is a mounted store.img; unmounting it
# detaches its loop device) and fails the test if any VMM process, mount or loop device of its
# root survives. Every wait is bounded by $SPACE_TEST_TIMEOUT.
# The engine (launch/engine.h) the scenarios run on is ENGINE: $SPACE_TEST_ENGINE, else vm where
# /dev/kvm exists, else gvisor where runsc does; the root's config.toml makes it the default, so
# the scenarios' own commands name no engine. A scenario about the VM itself calls needs_vm,
# which skips it on gvisor. Tests skip (exit 77, "SKIP: why") only when their engine cannot run
# here: the vm engine without /dev/kvm, the gvisor engine without a recent enough runsc.
set -euo pipefail

SRC=${SPACE_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SPACE_BIN=${SPACE_BIN:-$SRC/build/space}
SPACE_GUEST_INIT=${SPACE_GUEST_INIT:-$SRC/build/guest-init}
export SPACE_TEST_TIMEOUT=${SPACE_TEST_TIMEOUT:-180}
export SPACE_BOOT_TIMEOUT=$SPACE_TEST_TIMEOUT

runsc_usable() {  # runsc 20240729 or later (bookworm-backports), as launch/engine.h checks
  local v
  v=$(runsc --version 2>/dev/null) || return 1  # whole: a pipe into head would SIGPIPE runsc
  v=${v%%$'\n'*}
  [[ $v =~ ([0-9]{8}) ]] && [ "${BASH_REMATCH[1]}" -ge 20240729 ]
}
if [ -n "${SPACE_TEST_ENGINE:-}" ]; then
  ENGINE=$SPACE_TEST_ENGINE
elif [ -e /dev/kvm ]; then
  ENGINE=vm
else
  ENGINE=gvisor
fi
# The integration.gvisor.* variant of a scenario (CMakeLists.txt) where the plain run is on gvisor
# already: nothing more to see.
if [ -n "${SPACE_TEST_VARIANT:-}" ] && [ ! -e /dev/kvm ]; then
  echo "SKIP: no /dev/kvm here, so this scenario's plain run is on gvisor already"
  exit 77
fi
case $ENGINE in
  vm)
    [ -e /dev/kvm ] || { echo "SKIP: /dev/kvm is absent on this host; the vm engine needs KVM"; exit 77; } ;;
  gvisor)
    runsc_usable || {
      echo "SKIP: no /dev/kvm here, and no runsc for the gvisor engine (apt-get install -t bookworm-backports runsc)"
      exit 77
    } ;;
  *) echo "FAIL: SPACE_TEST_ENGINE=$ENGINE names no engine (vm or gvisor)" >&2; exit 1 ;;
esac
# needs_vm WHY: this scenario is about the VM itself (its vector state, jail, seccomp, create
# cost, cold boot); on another engine it skips, saying so.
needs_vm() {
  if [ "$ENGINE" != vm ]; then
    echo "SKIP: $1: a scenario of the vm engine; this run's engine is $ENGINE"
    exit 77
  fi
}

# $SPACE_TEST_KERNEL / $SPACE_TEST_ROOTFS pin other images; by default the cached ones. The
# gvisor engine boots no kernel.
if [ "$ENGINE" = vm ]; then
  KERNEL=${SPACE_TEST_KERNEL:-$("$SRC/scripts/build-kernel.sh")}
else
  KERNEL=
fi
SPACE_SECRET_BIN=${SPACE_SECRET_BIN:-$(dirname "$SPACE_GUEST_INIT")/space-secret}
ROOTFS=${SPACE_TEST_ROOTFS:-$("$SRC/scripts/build-rootfs.sh" --guest-init "$SPACE_GUEST_INIT" --space-secret "$SPACE_SECRET_BIN")}

# A test killed outright (ctest's timeout sends SIGKILL, which no trap sees) leaves its root and
# VMMs behind, and they would load the host under every later test. Each root names its test's
# process (pid and start time) in "owner"; roots whose owner is gone are cleaned up here first.
sweep_dead_test_roots() {
  local - d pid start id
  set +e
  exec {sweep_lock}>/tmp/space-it.sweep.lock
  flock "$sweep_lock"
  for d in /tmp/space-it.*/; do
    d=${d%/}
    [ -f "$d/owner" ] || continue
    read -r pid start <"$d/owner" || continue
    [ "$(awk '{ print $22 }' "/proc/$pid/stat" 2>/dev/null)" != "$start" ] || continue
    echo "lib.sh: cleaning up $d, left by test process $pid, which was killed" >&2
    for id in $(ls "$d/root/store/sandboxes" 2>/dev/null); do
      SPACE_ROOT=$d/root SPACE_RUN_DIR=$d/run "$SPACE_BIN" destroy --force "$id" >/dev/null 2>&1
    done
    pkill -9 -f -- "--root $d/root( .* | )__" 2>/dev/null
    pkill -9 -f -- "--root=$d/run/" 2>/dev/null  # runsc's sandboxes and gofers
    pkill -9 -f -- "__credd --cred-dir $d/" 2>/dev/null
    sleep 0.2
    umount "$d/root/store" 2>/dev/null
    rm -rf --one-file-system "$d" 2>/dev/null
    find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d -name "$(basename "$d")" 2>/dev/null |
      while read -r c; do find "$c" -depth -type d -exec rmdir {} + 2>/dev/null; done
  done
  exec {sweep_lock}>&-
  return 0
}
sweep_dead_test_roots

TEST_ROOT=$(mktemp -d /tmp/space-it.XXXXXX)
echo "$$ $(awk '{ print $22 }' /proc/$$/stat)" >"$TEST_ROOT/owner"
export SPACE_ROOT=$TEST_ROOT/root
export SPACE_RUN_DIR=$TEST_ROOT/run
mkdir -p "$SPACE_ROOT"
# [defaults] last: tests append keys to it.
{
  echo "[jail]"
  echo "cgroup_parent = \"$(basename "$TEST_ROOT")\""
  echo "[engine]"
  echo "default = \"$ENGINE\""
  echo "[defaults]"
  [ -z "$KERNEL" ] || echo "kernel = \"$KERNEL\""
  echo "rootfs = \"$ROOTFS\""
  echo "memory_mib = 256"
  echo "cpus = 1"
} >"$SPACE_ROOT/config.toml"
# This test's cgroups (jail/cgroup.h): <hierarchy>/<cgroup_parent>/<id>, removed with each sandbox.
CGROUP_PARENT=$(basename "$TEST_ROOT")
cgroup_dirs() { find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name "$CGROUP_PARENT" 2>/dev/null || true; }

space() { "$SPACE_BIN" "$@"; }

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# jail_pids: pids of the processes of this test's root's VMM jails: each VMM (its command line is
# "space --root ROOT [--log-level L --log-format F] __vmm ID ...") and its jail's PID 1 (which
# names itself "space --root ROOT __jail-init ID").
jail_pids() { pgrep -f -- "--root $SPACE_ROOT( .* | )__(vmm|jail-init|gvisor) " || true; }
# runsc_pids: runsc's processes (sandbox, gofer) of this root's gvisor sandboxes, whose state
# lives in the sandbox's run directory.
runsc_pids() { pgrep -f -- "--root=$SPACE_RUN_DIR/" || true; }
# vmm_pids: the VMMs among them (a jail's PID 1 is PID 1 of its own PID namespace).
vmm_pids() {
  local p
  for p in $(jail_pids); do
    awk '/^NSpid:/ { exit ($NF == 1) ? 1 : 0 }' "/proc/$p/status" 2>/dev/null && echo "$p"
  done
  return 0
}

# store_leftovers: mounts under the test's directory and loop devices on its store image.
store_leftovers() {
  findmnt -rn -o TARGET | grep "^$TEST_ROOT/" || true
  [ ! -e "$SPACE_ROOT/store.img" ] || losetup -j "$SPACE_ROOT/store.img" -O NAME -n || true
}

# space_oci_wrapper FILE STATE [--drop-root]: writes FILE, an executable an engine runs as its OCI
# runtime: space-oci with this test's store and STATE as its state directory (engines start
# runtimes with an environment of their own, without SPACE_ROOT). --drop-root drops the --root
# the engine passes (containerd's runc shim passes its own).
space_oci_wrapper() {
  local file=$1 state=$2 drop=${3:-}
  mkdir -p "$(dirname "$file")"
  {
    echo '#!/bin/bash'
    echo "export SPACE_ROOT=$SPACE_ROOT SPACE_RUN_DIR=$SPACE_RUN_DIR"
    if [ "$drop" = --drop-root ]; then
      echo 'args=()'
      echo 'while [ $# -gt 0 ]; do'
      echo '  case "$1" in --root) shift 2 ;; *) args+=("$1"); shift ;; esac'
      echo 'done'
      echo "exec -a space-oci \"$SPACE_BIN\" --root \"$state\" \"\${args[@]}\""
    else
      echo "exec -a space-oci \"$SPACE_BIN\" --root \"$state\" \"\$@\""
    fi
  } >"$file"
  chmod +x "$file"
}

# at_exit CMD: a test's own clean-up (a server it started), run first by cleanup; the test's
# exit status is kept (a trap of the test's own would lose it).
AT_EXIT=()
at_exit() { AT_EXIT+=("$1"); }

# free_port ADDR: a TCP port free on ADDR. served ADDR PORT: something listens there.
free_port() { python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1], 0)); print(s.getsockname()[1])' "$1"; }
served() { python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 1)' "$1" "$2" 2>/dev/null; }

# web_servers: plain HTTP servers standing in for the internet on 127.0.0.2 (port $P2) and
# 127.0.0.3 (port $P3), each serving index.html "hello from <its address>"; stopped at exit.
web_servers() {
  mkdir -p "$TEST_ROOT/www2" "$TEST_ROOT/www3"
  echo "hello from 127.0.0.2" >"$TEST_ROOT/www2/index.html"
  echo "hello from 127.0.0.3" >"$TEST_ROOT/www3/index.html"
  P2=$(free_port 127.0.0.2)
  P3=$(free_port 127.0.0.3)
  python3 -m http.server --bind 127.0.0.2 --directory "$TEST_ROOT/www2" "$P2" >"$TEST_ROOT/www2.log" 2>&1 &
  WEB2=$!
  python3 -m http.server --bind 127.0.0.3 --directory "$TEST_ROOT/www3" "$P3" >"$TEST_ROOT/www3.log" 2>&1 &
  WEB3=$!
  at_exit "kill $WEB2 $WEB3 2>/dev/null"
  wait_until 20 served 127.0.0.2 "$P2"
  wait_until 20 served 127.0.0.3 "$P3"
}

cleanup() {
  local rc=$?
  set +e
  local c
  for c in "${AT_EXIT[@]}"; do eval "$c"; done
  if [ $rc != 0 ]; then  # what each sandbox's VMM and guest said last, to see why it failed
    for c in "$SPACE_ROOT"/store/sandboxes/*/; do
      [ -d "$c" ] || continue
      echo "--- $(basename "$c"): vmm.log and console.log, last lines" >&2
      tail -n 8 "$c/vmm.log" "$c/console.log" 2>/dev/null | sed 's/^/  /' >&2
      if [ -s "$SPACE_ROOT/egress/audit/$(basename "$c").log" ]; then
        echo "--- $(basename "$c"): network audit, last lines" >&2
        tail -n 6 "$SPACE_ROOT/egress/audit/$(basename "$c").log" | sed 's/^/  /' >&2
      fi
    done
  fi
  for id in $(ls "$SPACE_ROOT/store/sandboxes" 2>/dev/null); do "$SPACE_BIN" destroy --force "$id" >/dev/null 2>&1; done
  local left
  # The credential helper of this root (destroy may have started it): stopped by its pid.
  for pid in $(pgrep -f -- "__credd --cred-dir $TEST_ROOT/" || true); do kill "$pid" 2>/dev/null; done
  # The network broker of this root (a sandbox with a network started it): SIGTERM ends it and
  # it removes its sockets.
  for pid in $(pgrep -f -- "--root $SPACE_ROOT( .* | )__egress" || true); do kill "$pid" 2>/dev/null; done
  for _ in 1 2 3 4 5 6 7 8 9 10; do  # a jail's PID 1 exits just after its VMM
    left=$(echo $(jail_pids) $(runsc_pids))
    [ -n "$left" ] || break
    sleep 0.2
  done
  if [ -n "$left" ]; then
    echo "FAIL: VMM, monitor, jail or runsc processes left behind: $left" >&2
    kill -9 $left 2>/dev/null
    sleep 0.5
    rc=1
  fi
  # Every sandbox's cgroup goes with it; only the jails' shared "init" group may remain.
  local d g
  for d in $(cgroup_dirs); do
    for g in "$d"/*/; do
      [ -d "$g" ] || continue
      case "$g" in */init/) rmdir "$g" 2>/dev/null ;; *) echo "FAIL: cgroup left behind: $g" >&2; rmdir "$g" 2>/dev/null; rc=1 ;; esac
    done
    rmdir "$d" 2>/dev/null
  done
  if mountpoint -q "$SPACE_ROOT/store" 2>/dev/null && ! umount "$SPACE_ROOT/store"; then
    echo "FAIL: could not unmount $SPACE_ROOT/store" >&2
    rc=1
  fi
  for _ in 1 2 3 4 5 6 7 8 9 10; do  # the loop device goes with the last close: allow a moment
    left=$(store_leftovers)
    [ -n "$left" ] || break
    sleep 0.2
  done
  if [ -n "$left" ]; then
    # Who still holds the store mounted, in a mount namespace of its own? A process of another
    # test (mmdebstrap, unshare) that made its namespace while this store was mounted holds a
    # copy that our unmount does not reach: the loop device goes when that process ends. That
    # is not this test's leak; a process of this root is.
    local p holders="" ours=""
    for p in $(grep -l " $SPACE_ROOT/store " /proc/[0-9]*/mountinfo 2>/dev/null | cut -d/ -f3); do
      holders+=" $p"
      if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "SPACE_ROOT=$SPACE_ROOT" ||
        tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$TEST_ROOT"; then
        ours+=" $p"
      fi
    done
    if [ -n "$holders" ] && [ -z "$ours" ] && ! findmnt -rn -o TARGET | grep -q "^$TEST_ROOT/"; then
      echo "note: $left is still held by another test's mount namespace (pids$holders); it goes when they end" >&2
    else
      echo "FAIL: left behind after unmounting the store: $left" >&2
      for p in ${ours:-$holders}; do
        echo "  held by $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-160)" >&2
      done
      rc=1
    fi
    findmnt -rn -o TARGET | grep "^$TEST_ROOT/" | sort -r | xargs -r -n1 umount -l
    losetup -j "$SPACE_ROOT/store.img" -O NAME -n | xargs -r -n1 losetup -d
  fi
  rm -rf --one-file-system "$TEST_ROOT"
  exit $rc
}
trap cleanup EXIT

# shared_template NAME: gives this test's root a template NAME without booting: a copy of one
# template built once per kernel, rootfs, space binary and machine size, cached (outside the
# clone) in $SPACE_CACHE/test-templates/<key> and shared by every test that only needs a booted
# guest (a boot costs ~85 s on PVM hosts; `template import` of the exported copy, ~1 s). The
# first test to need a key builds it under a lock while the others wait; the two newest keys are
# kept. Tests about `template build` itself (40-42) and the cold-boot path (10) boot their own.
shared_template() {
  local name=$1 cache=${SPACE_CACHE:-/var/cache/space}/test-templates key dir
  if [ "$ENGINE" = gvisor ]; then  # no boot: a gvisor template is its rootfs and size
    expect_status 0 space template build "$name"
    return
  fi
  key=$({ echo "$KERNEL $ROOTFS 256 1"; sha256sum <"$SPACE_BIN"; } | sha256sum | cut -c1-16)
  dir=$cache/$key
  mkdir -p "$cache"
  (
    flock 9
    [ -f "$dir/template.toml" ] || build_shared_template "$dir"
  ) 9>"$cache/.lock" || fail "could not build the shared test template"
  touch "$dir"
  expect_status 0 space template import "$name" "$dir"
}

# build_shared_template DIR: boots a template in a private root and keeps its files in DIR.
build_shared_template() {
  local dir=$1 tmp rc=0
  tmp=$(mktemp -d /tmp/space-shared.XXXXXX)
  rm -rf "$dir.tmp"
  mkdir -p "$tmp/root"
  cp "$SPACE_ROOT/config.toml" "$tmp/root/"
  echo "shared_template: booting the shared test template (once per kernel, rootfs and binary)" >&2
  SPACE_ROOT=$tmp/root SPACE_RUN_DIR=$tmp/run "$SPACE_BIN" template build base >/dev/null 2>"$tmp/build.err" || { rc=$?; cat "$tmp/build.err" >&2; }
  [ $rc -ne 0 ] || SPACE_ROOT=$tmp/root SPACE_RUN_DIR=$tmp/run "$SPACE_BIN" template export base "$dir.tmp" || rc=$?
  umount "$tmp/root/store" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    [ -z "$(losetup -j "$tmp/root/store.img" -O NAME -n 2>/dev/null)" ] && break
    sleep 0.2
  done
  rm -rf --one-file-system "$tmp"
  [ $rc -eq 0 ] || { rm -rf "$dir.tmp"; return 1; }
  mv "$dir.tmp" "$dir"
  # Keep the two newest keys.
  ls -1dt "$(dirname "$dir")"/*/ | tail -n +3 | xargs -r rm -rf
}

# expect_status WANT CMD...: runs CMD, fails unless its exit status is WANT. Output in $OUT/$ERR.
expect_status() {
  local want=$1
  shift
  local rc=0
  OUT=$("$@" 2>"$TEST_ROOT/stderr") || rc=$?
  ERR=$(cat "$TEST_ROOT/stderr")
  [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, expected $want; stderr: $ERR"
}

assert_contains() {  # HAYSTACK NEEDLE WHAT
  case "$1" in *"$2"*) ;; *) fail "$3: expected to find '$2' in: $1" ;; esac
}

# status_of ID: the status field of `space state ID`.
status_of() { space state "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])'; }
pid_of() { space state "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])'; }

# wait_until SECONDS CMD...: polls CMD every 0.2 s until it succeeds; fails after SECONDS.
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for: $*"
    sleep 0.2
  done
}

# alive PID: the process exists and has not exited (Z: a zombie its parent has yet to reap; X:
# being reaped). One read of /proc/PID/stat: a check, then a second read, would call a process
# reaped in between alive (the second read fails). The state follows the last ')' (comm may
# hold spaces and parentheses).
alive() {
  local line
  { read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
  line=${line##*) }
  case ${line%% *} in Z | X | "") return 1 ;; *) return 0 ;; esac
}

gone() { ! alive "$1"; }

# assert_gone ID PID: no process, no socket directory, no sandbox directory for ID.
assert_gone() {
  local id=$1 pid=$2
  if [ "$pid" != 0 ] && alive "$pid"; then fail "VMM $pid of $id still running"; fi
  [ ! -e "$SPACE_RUN_DIR/$id" ] || fail "socket directory of $id left behind"
  [ ! -e "$SPACE_ROOT/store/sandboxes/$id" ] || fail "sandbox directory of $id left behind"
}

# image_cat IMAGE PATH, image_stat IMAGE PATH: the contents, or debugfs's stat, of PATH in the
# disk of IMAGE (in this test's root); no VM needed.
image_cat() { debugfs -R "cat $2" "$SPACE_ROOT/store/images/$1/disk.ext4" 2>/dev/null; }
image_stat() { debugfs -R "stat $2" "$SPACE_ROOT/store/images/$1/disk.ext4" 2>/dev/null; }
# json_field KEY[.KEY|.INDEX...]: that field of the JSON on standard input.
json_field() {
  python3 -c 'import json,sys; v=json.load(sys.stdin)
for k in sys.argv[1].split("."): v=v[int(k)] if isinstance(v, list) else v[k]
print(v)' "$1"
}

# The packages of the Debian test image: an interpreter, a compiler and git, like a user's.
DEBIAN_TEST_PACKAGES=python3,python3-venv,git,gcc,libc6-dev,make,curl,ca-certificates

# debian_image NAME [SUITE [PACKAGES]]: gives this test's root an image NAME of Debian SUITE
# (default bookworm) with PACKAGES (default $DEBIAN_TEST_PACKAGES). mmdebstrap takes minutes, so
# the first test to need a key (suite, packages, mirror: $SPACE_TEST_DEBIAN_MIRROR or the host's
# apt sources) runs `space image build` under a lock and keeps its files, as a tarball made from
# the disk, in $SPACE_CACHE/test-images/<key>.tar (outside the clone; the two newest keys are
# kept), with the image.json of that build beside it; later ones import the tarball (~10 s).
# Sets DEBIAN_IMAGE_BUILT to 1 when this call built it, 0 when it came from the cache, and
# DEBIAN_IMAGE_CACHED to the tarball's path.
debian_image() {
  local name=$1 suite=${2:-bookworm} packages=${3:-$DEBIAN_TEST_PACKAGES}
  local mirror=${SPACE_TEST_DEBIAN_MIRROR:-} cache=${SPACE_CACHE:-/var/cache/space}/test-images key
  local flags=(--debian "$suite" --packages "$packages")
  [ -z "$mirror" ] || flags+=(--mirror "$mirror")
  key=$({ echo "$suite $packages $mirror"; [ -n "$mirror" ] || cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } | sha256sum | cut -c1-16)
  DEBIAN_IMAGE_CACHED=$cache/$key.tar
  mkdir -p "$cache"
  (
    flock 9
    [ -f "$DEBIAN_IMAGE_CACHED" ] && exit 0
    echo "debian_image: building $suite with $packages (once per key; minutes)" >&2
    local start=$SECONDS
    expect_status 0 space image build "$name" "${flags[@]}"
    echo "debian_image: built in $((SECONDS - start)) s" >&2
    export_image_tar "$name" "$DEBIAN_IMAGE_CACHED"
    cp "$SPACE_ROOT/store/images/$name/image.json" "${DEBIAN_IMAGE_CACHED%.tar}.json"
    ls -1t "$cache"/*.tar | tail -n +3 | while read -r old; do rm -f "$old" "${old%.tar}.json"; done
  ) 9>"$cache/.lock" || fail "could not build the Debian test image"
  touch "$DEBIAN_IMAGE_CACHED"
  if space image inspect "$name" >/dev/null 2>&1; then
    DEBIAN_IMAGE_BUILT=1
  else
    DEBIAN_IMAGE_BUILT=0
    expect_status 0 space image import --size 4G "$name" "$DEBIAN_IMAGE_CACHED"
  fi
}

# export_image_tar IMAGE TAR: the files of IMAGE's disk as a tarball (owners, modes, xattrs,
# devices), through a read-only loop mount that is gone when this returns.
export_image_tar() {
  local image=$1 tar=$2 mnt=$TEST_ROOT/export.$$ rc=0
  mkdir -p "$mnt"
  mount -o ro,noload,loop "$SPACE_ROOT/store/images/$image/disk.ext4" "$mnt" || fail "mount $image's disk"
  tar --numeric-owner --xattrs --xattrs-include='*' --one-file-system --exclude=./lost+found -C "$mnt" -cf "$tar.tmp" . || rc=$?
  umount "$mnt" || rc=1
  rmdir "$mnt"
  [ $rc -eq 0 ] || { rm -f "$tar.tmp"; fail "could not export $image to $tar"; }
  mv "$tar.tmp" "$tar"
}
