#!/usr/bin/env bash
# ctest jail.check: `space check` starts a real jailed VMM without a VM (launch/vmm_probe.h: the
# launcher, a new PID namespace, `__vmm --probe` entering its jail) and reports "ok"; a VMM that
# fails inside its jail is reported with its reason; nothing is left behind (run directory,
# cgroup, process). Needs root, not KVM. Usage: jail_start.sh SPACE_BINARY
set -euo pipefail
space=$1
[ "$(id -u)" = 0 ] || { echo "SKIP: a jail needs root"; exit 77; }
tmp=$(mktemp -d /tmp/space-jail-start.XXXXXX)
cleanup() {
  find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d -name "$(basename "$tmp")" 2>/dev/null |
    while read -r c; do find "$c" -depth -type d -exec rmdir {} + 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/root"
# A cgroup parent of its own, so that other tests' groups (jail.entry's) are not taken for ours.
parent=$(basename "$tmp")
printf '[jail]\ncgroup_parent = "%s"\n' "$parent" >"$tmp/root/config.toml"
export SPACE_RUN_DIR=$tmp/run
fail() { echo "FAIL: $*"; exit 1; }
# jail_field KEY: check's JSON .jail.KEY (check exits 125 on a host without KVM: not our concern).
jail_field() {
  local out
  out=$("$space" --root "$tmp/root" check --format json 2>/dev/null || true)
  python3 -c 'import json, sys; print(json.loads(sys.argv[1])["jail"][sys.argv[2]])' "$out" "$1"
}
nothing_left() {
  local left
  left=$(ls -A "$tmp/run" 2>/dev/null | grep -v '^\.uids$' || true)
  [ -z "$left" ] || fail "left in the run directory: $left"
  ! find /sys/fs/cgroup -maxdepth 3 -type d -path "*/$parent/vmm-probe-*" | grep -q . ||
    fail "a probe's cgroup is left"
  ! pgrep -f -- "--root $tmp/root( .* | )__" >/dev/null || fail "a probe's process is left"
}

start=$(jail_field start)
[ "$start" = ok ] || fail "jail start: $start"
ms=$(jail_field start_ms)
python3 -c 'import sys; sys.exit(0 if 0 < float(sys.argv[1]) < 10000 else 1)' "$ms" || fail "start_ms $ms"
nothing_left
echo "ok: a jailed VMM without a VM started (${ms} ms)"

# A VMM that fails in its jail: SPACE_SECCOMP reaches VMMs (their fixed environment keeps it),
# and a value it does not know stops the VMM before the jail, with the reason.
start=$(SPACE_SECCOMP=bogus jail_field start)
case $start in
  *"SPACE_SECCOMP=bogus"*) echo "ok: a failing VMM is reported: $start" ;;
  *) fail "a failing VMM was reported as: $start" ;;
esac
nothing_left

# SPACE_SECCOMP=log weakens every VMM: check reports it as a problem, and the VMM it starts warns.
out=$(SPACE_SECCOMP=log "$space" --root "$tmp/root" check --format json 2>"$tmp/stderr" || true)
python3 -c 'import json, sys
problems = json.loads(sys.argv[1])["problems"]
sys.exit(0 if any("SPACE_SECCOMP=log is set" in p for p in problems) else 1)' "$out" ||
  fail "check does not report SPACE_SECCOMP=log as a problem: $out"
grep -q "SPACE_SECCOMP=log is set" "$tmp/stderr" || fail "no warning when a VMM starts: $(cat "$tmp/stderr")"
nothing_left
echo "ok: SPACE_SECCOMP=log is reported by check and warned of at a VMM's start"

# The jail off: nothing is tried.
printf '[jail]\nenable = false\n' >"$tmp/root/config.toml"
[ "$(jail_field enabled)" = False ] || fail "the jail is not reported off"
nothing_left
echo "ok: nothing left behind"
