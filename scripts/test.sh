#!/usr/bin/env bash
# Builds space and runs every test with ctest: the doctest unit tests (no KVM needed), the
# libFuzzer harness of the protocol decoders for a fixed 200000 inputs (fuzz.frames; built only
# when clang++ is installed), and the integration tests, which boot real VMs (they skip only
# where /dev/kvm is absent). Missing Debian packages are installed, and the guest kernel and
# rootfs are built into the cache ($SPACE_CACHE) first when absent, so a clean clone on a fresh
# host works. `.ci/run` calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
ensure_debian_packages
build_space build
if [ -e /dev/kvm ]; then
  echo "test: guest kernel $(scripts/build-kernel.sh)" >&2
  echo "test: guest rootfs $(scripts/build-rootfs.sh --guest-init build/guest-init --space-secret build/space-secret)" >&2
fi
ctest --test-dir build --output-on-failure -j2 "$@"
