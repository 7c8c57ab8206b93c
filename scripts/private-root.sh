# Sourced by the campaign scripts (chaos.sh, soak.sh): a private space root for a run, and the
# "base" template in it. private_root NAME makes $WORK=/tmp/space-NAME.XXXXXX with SPACE_ROOT and
# SPACE_RUN_DIR under it and a config.toml naming the cached kernel and rootfs (built when
# missing), unless SPACE_ROOT is already set (an integration test's root: then it only reads
# the root's cgroup parent). private_root_cleanup destroys every sandbox of a private root,
# stops its helpers, unmounts its store and deletes it (with KEEP=1, keeps it). base_template
# imports the newest cached test template as "base", or boots one. campaign_root NAME does all
# of it for a campaign script: checks /dev/kvm (without it, runsc: the gvisor engine) and the binary, makes the root, arranges its
# cleanup on exit (and on INT/TERM) and provides "base".
# Needs: SRC (the source tree) and SPACE_BIN.

private_root() {
  OWN_ROOT=0
  if [ -z "${SPACE_ROOT:-}" ]; then
    OWN_ROOT=1
    WORK=$(mktemp -d "/tmp/space-$1.XXXXXX")
    export SPACE_ROOT=$WORK/root SPACE_RUN_DIR=$WORK/run
    mkdir -p "$SPACE_ROOT"
    local kernel="" rootfs
    # The gvisor engine boots no kernel: building one there would take the machine for an hour.
    [ "${SPACE_ENGINE:-}" = gvisor ] || kernel=$("$SRC/scripts/build-kernel.sh")
    rootfs=$("$SRC/scripts/build-rootfs.sh" --guest-init "$SRC/build/guest-init" --space-secret "$SRC/build/space-secret")
    {
      echo "[jail]"
      echo "cgroup_parent = \"$(basename "$WORK")\""
      echo "[defaults]"
      [ -z "$kernel" ] || echo "kernel = \"$kernel\""
      echo "rootfs = \"$rootfs\""
      echo "memory_mib = 256"
      echo "cpus = 1"
    } >"$SPACE_ROOT/config.toml"
  fi
  CGROUP_PARENT=$(python3 -c '
import sys, tomllib
try:
    print(tomllib.load(open(sys.argv[1], "rb")).get("jail", {}).get("cgroup_parent", "space"))
except FileNotFoundError:
    print("space")' "$SPACE_ROOT/config.toml")
}

private_root_cleanup() {
  [ "$OWN_ROOT" = 1 ] && [ "${KEEP:-0}" = 0 ] || return 0
  set +e  # every step runs, whatever the one before it found (a helper already gone)
  local id pid
  for id in $(ls "$SPACE_ROOT/store/sandboxes" 2>/dev/null); do "$SPACE_BIN" destroy --force "$id" >/dev/null 2>&1; done
  for pid in $(pgrep -f -- "--root $SPACE_ROOT( .* | )__(credd|egress|expire)" || true); do kill "$pid" 2>/dev/null; done
  pkill -f -- "__credd --cred-dir $SPACE_ROOT.cred" 2>/dev/null
  sleep 0.5
  umount "$SPACE_ROOT/store" 2>/dev/null
  rm -rf --one-file-system "$WORK" "$SPACE_ROOT.cred"
  find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d -name "$CGROUP_PARENT" 2>/dev/null |
    while read -r d; do find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
  return 0
}

base_template() {
  "$SPACE_BIN" template inspect base >/dev/null 2>&1 && return 0
  if [ "${SPACE_ENGINE:-}" = gvisor ] || grep -qs '^default = "gvisor"' "$SPACE_ROOT/config.toml"; then
    "$SPACE_BIN" template build --engine gvisor base >/dev/null  # no boot: nothing to import
    return 0
  fi
  local dir=${TEMPLATE_DIR:-}
  [ -n "$dir" ] || dir=$(ls -1dt "${SPACE_CACHE:-/var/cache/space}"/test-templates/*/ 2>/dev/null | head -1 || true)
  if [ -n "$dir" ] && "$SPACE_BIN" template import base "$dir" >/dev/null 2>&1; then
    echo "$(basename "$0"): imported template base from $dir" >&2
  else
    echo "$(basename "$0"): building template base (one cold boot)" >&2
    "$SPACE_BIN" template build base >/dev/null
  fi
}

campaign_root() {
  if [ ! -e /dev/kvm ] && [ -z "${SPACE_ENGINE:-}" ] && ! grep -qs '^default = "gvisor"' "${SPACE_ROOT:-/nonexistent}/config.toml"; then
    runsc --version >/dev/null 2>&1 ||
      { echo "$1: /dev/kvm is absent, and so is runsc for the gvisor engine" >&2; exit 1; }
    echo "$1: /dev/kvm is absent: the campaign runs on the gvisor engine" >&2
    export SPACE_ENGINE=gvisor
  fi
  [ -x "$SPACE_BIN" ] || { echo "$1: no space binary at $SPACE_BIN" >&2; exit 1; }
  private_root "$1"
  trap 'rc=$?; set +e; private_root_cleanup; exit $rc' EXIT
  trap 'exit 130' INT TERM
  base_template
}
