#!/usr/bin/env bash
# The jail's set-up cost per VMM start (issue 15's target: at most 1 ms), measured without KVM:
# build/jail-bench (tests/programs/jail_bench.cpp) runs the launcher's path with and without the
# jail, interleaved, with the production code (core::prepare_jail, monitor::enter_vmm_jail) up to
# the point where the VMM would build its VM, and prints median and p90 of each, their difference,
# where it goes (the time to the VMM's first step, with the jail's PID 1 and without; the rest),
# the phases, and the seccomp programs compiled at run time against the built-in ones. The
# end-to-end figures with a VM (creates jailed and not, side by side) are bench-create.sh's.
# Needs root (namespaces, cgroups, uids). Environment: BENCH_RUNS (default 100), SPACE_BUILD
# (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
[ "$(id -u)" = 0 ] || { echo "bench-jail: run as root (the jail needs namespaces, cgroups and uids)" >&2; exit 1; }
build=${SPACE_BUILD:-build}
build_space "$build"
exec "$build/jail-bench" --rounds "${BENCH_RUNS:-100}"
