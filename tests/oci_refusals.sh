#!/usr/bin/env bash
# ctest oci.refusals: hostile bundles that space-oci must refuse before any VM exists, so this
# runs on every host (no KVM needed): a bind mount whose destination climbs out with '..' (a
# pod's mountPath aimed at the host's /etc/cron.d) exits 1, writes runc's JSON error line to
# --log naming the mount, writes nothing outside, and leaves no container state or pid file.
# Usage: oci_refusals.sh SPACE_BINARY
set -euo pipefail
space=$1
tmp=$(mktemp -d /tmp/space-oci-refusals.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ln -s "$space" "$tmp/space-oci"
mkdir -p "$tmp/bundle/rootfs" "$tmp/volume" "$tmp/outside/a/b/c/d"
echo '* * * * * root touch /tmp/pwned' >"$tmp/volume/evil"
cat >"$tmp/bundle/config.json" <<JSON
{"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "process": {"args": ["sh"]},
 "mounts": [{"destination": "/../../../../escaped", "type": "bind", "source": "$tmp/volume",
             "options": ["rbind"]}]}
JSON
rc=0
(cd "$tmp/outside/a/b/c/d" && "$tmp/space-oci" --root "$tmp/state" --log "$tmp/log.json" \
  --log-format json create --bundle "$tmp/bundle" --pid-file "$tmp/pid" c1) 2>"$tmp/stderr" || rc=$?
[ "$rc" = 1 ] || fail "exit status $rc, not 1: $(cat "$tmp/stderr")"
python3 - "$tmp/log.json" <<'PY' || fail "no JSON error line naming the mount: $(cat "$tmp/log.json")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert any(l["level"] == "error" and "mounts[0].destination" in l["msg"] and "'..'" in l["msg"]
           for l in lines), lines
PY
! find "$tmp" -name escaped | grep -q . || fail "something was written at the escaped path"
[ ! -e "$tmp/pid" ] || fail "a pid file was left"
[ -z "$(ls -A "$tmp/state" 2>/dev/null)" ] || fail "container state was left: $(ls -A "$tmp/state")"
echo "ok: a bundle whose mount climbs out with '..' is refused (exit 1, JSON log line, nothing left)"
