#!/usr/bin/env bash
# vector-state.sh: does a sandbox keep each guest process's vector registers across context
# switches? Creates a sandbox from a template (default: default) under the usual root, copies
# build/vector-check (tests/programs/vector_check.cpp) into it through exec's stdin, runs it
# (more processes than vCPUs keeping patterns in vector registers while they yield), prints its
# report and destroys the sandbox. Exit status: vector-check's (0: no mismatch, 1: mismatches).
# A diagnostic for any host (tests/integration/50_session.sh runs the same program under ctest).
# On PVM hosts the VMM keeps guest tasks' AVX state for the guest kernel (scripts/kernel/README.md,
# "Vector state on PVM"); a mismatch here means that broke.
# Usage: scripts/vector-state.sh [--template NAME] [vector-check flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
template=default
if [ "${1:-}" = --template ]; then template=$2; shift 2; fi
space=${SPACE_BIN:-build/space}
check=${SPACE_VECTOR_CHECK:-build/vector-check}
[ -x "$check" ] || { echo "vector-state: build it first: ninja -C build vector-check" >&2; exit 2; }
id=$("$space" create --template "$template")
trap '"$space" destroy --force "$id" >/dev/null 2>&1 || true' EXIT
"$space" exec -i "$id" -- sh -c 'cat >/tmp/vector-check && chmod 755 /tmp/vector-check' <"$check"
rc=0
"$space" exec "$id" -- /tmp/vector-check "$@" || rc=$?
exit $rc
