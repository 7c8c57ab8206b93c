#!/usr/bin/env bash
# Installs everything space needs on a Debian 12 host and runs a first sandbox: the Debian
# packages, a build of space (installed to /usr/local with its man pages), the guest kernel and
# rootfs (cached under $SPACE_CACHE, default /var/cache/space, keyed by their inputs), the
# default template (rebuilt only when the kernel or rootfs changed), then create, list and
# destroy of one sandbox. On a host without a usable /dev/kvm it says so in one line and sets up
# the gvisor engine instead (launch/engine.h): it writes [engine] default = "gvisor" to the root's
# config.toml, installs runsc from bookworm-backports, builds no kernel, and makes the default
# template a gvisor one; nothing falls back by itself later, this is the one place that chooses.
# With /dev/kvm it also remounts the host's cgroup2 hierarchy with favordynmods (until the next
# boot), so that moving a VMM into its cgroup does not wait for an RCU grace period (5-7 ms per
# create measured on a PVM host; `space check` reports it). Idempotent: a second run rebuilds
# nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
step() { echo "install: $*" >&2; }

root=${SPACE_ROOT:-/var/lib/space}
engine=vm
why=
if [ ! -e /dev/kvm ] && [ -d /sys/module/kvm_pvm ]; then
  why="no /dev/kvm: this kernel is itself a PVM guest, and PVM does not nest ('dmesg | grep kvm-pvm')"
elif [ ! -e /dev/kvm ]; then
  why="no /dev/kvm (no KVM module loaded, or no hardware or nested virtualisation)"
elif ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
  step "/dev/kvm is not readable and writable by $(id -un): run this as root (sudo scripts/install.sh)"
  exit 1
fi
if [ -n "$why" ]; then
  engine=gvisor
  step "$why: setting $root's default engine to gvisor (runsc from bookworm-backports; a user-space kernel, a weaker boundary than a VM's)"
fi

step "checking Debian packages"
ensure_debian_packages
step "building space"
build_space build
step "installing space and its man pages to /usr/local"
cmake --install build --prefix /usr/local >/dev/null
if [ "$engine" = gvisor ]; then
  ensure_runsc
  mkdir -p "$root"
  if ! grep -qs '^\[engine\]' "$root/config.toml"; then
    printf '\n[engine]\ndefault = "gvisor"  # written by install.sh: %s\n' "$why" >>"$root/config.toml"
  elif [ "$(space check --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["default_engine"])')" != gvisor ]; then
    step "$root/config.toml already has an [engine] table that does not choose gvisor; left as it is"
  fi
fi
# Every cgroup move takes one host-wide lock whose writer otherwise waits for an RCU grace
# period; the option (Linux 6.0+) makes moves cheap and forks and exits a little dearer.
cgroup2=$(findmnt -rn -t cgroup2 -o TARGET | head -n1 || true)
if [ "$engine" = vm ] && [ -n "$cgroup2" ] && ! findmnt -rn -t cgroup,cgroup2 -o OPTIONS | grep -qw favordynmods; then
  # Its present options are given again: a remount would clear nsdelegate and the like.
  if mount -o "remount,$(findmnt -rn -o OPTIONS "$cgroup2"),favordynmods" "$cgroup2" 2>/dev/null; then
    step "cgroup moves: $cgroup2 remounted with favordynmods"
  else
    step "cgroup moves: this kernel cannot remount $cgroup2 with favordynmods; creates wait for cgroup moves"
  fi
fi
kernel=
if [ "$engine" = vm ]; then
  step "guest kernel"
  kernel=$(scripts/build-kernel.sh)
  step "kernel: $kernel"
fi
step "guest rootfs"
rootfs=$(scripts/build-rootfs.sh --guest-init build/guest-init --space-secret build/space-secret)
step "rootfs: $rootfs"

space template list >/dev/null  # mounts the store if it exists but is not mounted
# Up to date when the default template exists, this space can restore it, and it was built from
# this kernel and rootfs (space template inspect prints its template.toml as JSON).
template_current() {
  local meta
  meta=$(space template inspect default --format json 2>/dev/null) || return 1
  printf '%s' "$meta" | python3 -c '
import json, sys
t = json.load(sys.stdin)
sys.exit(0 if t.get("restorable") and t.get("engine", "vm") == sys.argv[1] and t.get("kernel", "") == sys.argv[2] and t.get("rootfs") == sys.argv[3] else 1)
' "$engine" "$kernel" "$rootfs"
}
if template_current; then
  step "default template: up to date"
elif [ "$engine" = vm ]; then
  step "default template (boots a VM once: 15-45 s on a PVM host)"
  space template build --force --engine vm --kernel "$kernel" --rootfs "$rootfs" default >/dev/null
else
  step "default template (gvisor: the rootfs and the sandbox size, no boot)"
  space template build --force --engine gvisor --rootfs "$rootfs" default >/dev/null
fi

step "running a first sandbox (from the default template)"
id=$(space create)
trap 'space destroy --force "$id" >/dev/null 2>&1 || true' EXIT
space list
space destroy "$id"
trap - EXIT
step "done: space is ready (try 'space check' and 'man space')"
