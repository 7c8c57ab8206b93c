#!/usr/bin/env bash
# Installs everything space needs on a Debian 12 host and runs a first sandbox: the Debian
# packages, a build of space (installed to /usr/local with its man pages), the guest kernel and
# rootfs (cached under $SPACE_CACHE, default /var/cache/space, keyed by their inputs), the
# default template (rebuilt only when the kernel or rootfs changed), then create, list and
# destroy of one sandbox. It stops first, saying why, on a host without /dev/kvm. It also
# remounts the host's cgroup2 hierarchy with favordynmods (until the next boot), so that moving a
# VMM into its cgroup does not wait for an RCU grace period (5-7 ms per create measured on a PVM
# host; `space check` reports it). Idempotent: a second run rebuilds nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
step() { echo "install: $*" >&2; }

# Every sandbox is a KVM guest: without /dev/kvm nothing below could run one, so say so before
# spending minutes on packages and builds. (scripts/test.sh still builds and runs the unit tests
# on such a host; its integration tests skip.)
if [ ! -e /dev/kvm ] && [ -d /sys/module/kvm_pvm ]; then
  step "this host has no /dev/kvm although kvm_pvm is loaded, as on a kernel that is itself a PVM guest: PVM does not nest, and 'dmesg | grep kvm-pvm' says why. Run space on the PVM host itself, or on a host with hardware virtualisation"
  exit 1
fi
if [ ! -e /dev/kvm ]; then
  step "this host has no /dev/kvm, and every sandbox is a KVM guest: load the module (modprobe kvm_intel or kvm_amd), enable hardware virtualisation (on a VM: nested virtualisation), or use a host that has it"
  exit 1
fi
if ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
  step "/dev/kvm is not readable and writable by $(id -un): run this as root (sudo scripts/install.sh)"
  exit 1
fi

step "checking Debian packages"
ensure_debian_packages
step "building space"
build_space build
step "installing space and its man pages to /usr/local"
cmake --install build --prefix /usr/local >/dev/null
# Every cgroup move takes one host-wide lock whose writer otherwise waits for an RCU grace
# period; the option (Linux 6.0+) makes moves cheap and forks and exits a little dearer.
cgroup2=$(findmnt -rn -t cgroup2 -o TARGET | head -n1 || true)
if [ -n "$cgroup2" ] && ! findmnt -rn -t cgroup,cgroup2 -o OPTIONS | grep -qw favordynmods; then
  # Its present options are given again: a remount would clear nsdelegate and the like.
  if mount -o "remount,$(findmnt -rn -o OPTIONS "$cgroup2"),favordynmods" "$cgroup2" 2>/dev/null; then
    step "cgroup moves: $cgroup2 remounted with favordynmods"
  else
    step "cgroup moves: this kernel cannot remount $cgroup2 with favordynmods; creates wait for cgroup moves"
  fi
fi
step "guest kernel"
kernel=$(scripts/build-kernel.sh)
step "kernel: $kernel"
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
sys.exit(0 if t.get("restorable") and t.get("kernel") == sys.argv[1] and t.get("rootfs") == sys.argv[2] else 1)
' "$kernel" "$rootfs"
}
if template_current; then
  step "default template: up to date"
else
  step "default template (boots a VM once: 15-45 s on a PVM host)"
  space template build --force --kernel "$kernel" --rootfs "$rootfs" default >/dev/null
fi

step "running a first sandbox (restored from the default template)"
id=$(space create)
trap 'space destroy --force "$id" >/dev/null 2>&1 || true' EXIT
space list
space destroy "$id"
trap - EXIT
step "done: space is ready (try 'space check' and 'man space')"
