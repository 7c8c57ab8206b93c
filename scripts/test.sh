#!/usr/bin/env bash
# Builds space and runs every test with ctest: the doctest unit tests (no KVM needed), the
# libFuzzer harnesses (built only when clang++ is installed), and the integration tests, which
# run real sandboxes: on the vm engine where /dev/kvm exists, on the gvisor engine where it does
# not (only the scenarios about the VM itself skip there, each saying why), and on a KVM host
# the integration.gvisor.* variants of lifecycle, session, exec, secrets, cp, net and images run
# beside the VM ones. Missing Debian packages and runsc (bookworm-backports) are installed, and
# the guest kernel (where /dev/kvm exists) and rootfs are built into the cache ($SPACE_CACHE)
# first when absent, so a clean clone on a fresh host works. `.ci/run` calls this.
#
# `scripts/test.sh --sanitize [CTEST ARGS]` instead builds everything with ASan and UBSan in
# build-sanitize (cmake -DSPACE_SANITIZE=ON) and runs the unit tests there: any leak, overflow,
# use after free or undefined behaviour fails them. It is not part of CI's run (a second full
# build; the figures are in RELIABILITY.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_debian_packages
if [ "${1:-}" = --sanitize ]; then
  shift
  use_ccache
  [ -f build-sanitize/build.ninja ] ||
    cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSPACE_SANITIZE=ON "${CCACHE_FLAGS[@]}" >&2
  ninja -C build-sanitize -j2 unit_tests guest-init space-secret >&2
  # Reports go to files, not stderr: the tests read the stderr of the programs they run.
  logs=$PWD/build-sanitize/sanitizer-logs
  # Writable by all (sticky): a process that dropped to another uid (an exec as a user's uid and
  # groups) writes its reports here too; ASan aborts a process whose log it cannot open.
  rm -rf "$logs" && mkdir -p "$logs" && chmod 1777 "$logs"
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:log_path=$logs/asan}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan}
  rc=0
  ctest --test-dir build-sanitize --output-on-failure -R '^unit$' "$@" || rc=$?
  for f in $(grep -l -E 'ERROR: |runtime error' "$logs"/* 2>/dev/null || true); do
    echo "--- $f" >&2
    cat "$f" >&2
    rc=1
  done
  exit $rc
fi
ensure_runsc || echo "test: no runsc: the gvisor engine's integration tests skip" >&2
ensure_node  # integration.85_mcp: the official MCP SDK's client
# integration.89_cri: the CRI's api.proto, which cri-client is generated from (cached).
scripts/cri-api.sh >/dev/null || echo "test: no CRI api.proto: integration.89_cri skips" >&2
build_space build
[ ! -e /dev/kvm ] || echo "test: guest kernel $(scripts/build-kernel.sh)" >&2
echo "test: guest rootfs $(scripts/build-rootfs.sh --guest-init build/guest-init --space-secret build/space-secret)" >&2
ctest --test-dir build --output-on-failure -j2 "$@"
