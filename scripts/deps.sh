# The Debian packages space needs to build, to build its guest kernel and rootfs, to build Debian
# images (mmdebstrap), and to run its tests (podman makes archives as a real client does; strace
# traces what a create starts; containerd and gRPC for the CRI test client) and benchmarks; sourced by install.sh and test.sh.
# ensure_debian_packages installs only what is missing, so with everything present it costs one
# dpkg-query.
SPACE_DEBIAN_PACKAGES=(
  g++ cmake ninja-build pkg-config ccache
  libcli11-dev libseccomp-dev libbtrfsutil-dev libtomlplusplus-dev doctest-dev libarchive-dev
  linux-source-6.1 bc flex bison libelf-dev libssl-dev xz-utils cpio
  busybox-static e2fsprogs btrfs-progs python3 procps strace iproute2 util-linux
  mmdebstrap podman containerd runc containernetworking-plugins
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  clang clang-format clang-tidy
)

# The peers the benchmarks measure space against (QEMU's microvm restore for create), installed
# by the benchmark scripts themselves when missing: ensure_debian_packages "${SPACE_BENCH_PACKAGES[@]}".
SPACE_BENCH_PACKAGES=(qemu-system-x86)

# ensure_runsc: runsc for the gvisor engine, from bookworm-backports (an official Debian suite on
# the same mirror; Debian 12's own runsc, 20221219, is too old: ../shared/gvisor-notes.md). Adds
# the suite to apt's sources if it is missing; packages from it are installed only when asked
# for with -t, so nothing else on the host changes. Nothing happens when a recent runsc is there.
ensure_runsc() {
  local v
  v=$(runsc --version 2>/dev/null) || v=
  if [[ $v =~ ([0-9]{8}) ]] && [ "${BASH_REMATCH[1]}" -ge 20240729 ]; then return 0; fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: need root to install runsc: sudo apt-get install -t bookworm-backports runsc" >&2
    return 1
  fi
  local sources=/etc/apt/sources.list.d/bookworm-backports.sources
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "deps: enabling bookworm-backports in $sources" >&2
    printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: bookworm-backports" \
      "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" >"$sources"
  fi
  echo "deps: installing runsc from bookworm-backports" >&2
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q -t bookworm-backports runsc >&2
}

# ensure_node: node and npm for the MCP test client (tests/mcp: the official MCP TypeScript SDK,
# from the npm registry). Any node >= 18 on PATH will do (Debian 12's is 18.19); when there is
# none, Debian's nodejs and npm are installed.
ensure_node() {
  local v
  v=$(node --version 2>/dev/null) || v=
  if [[ $v =~ ^v([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge 18 ] && command -v npm >/dev/null; then
    return 0
  fi
  ensure_debian_packages nodejs npm
}

# ensure_debian_packages [PACKAGE...]: the named packages (default: SPACE_DEBIAN_PACKAGES).
ensure_debian_packages() {
  local missing=() p
  local want=("$@")
  [ ${#want[@]} -gt 0 ] || want=("${SPACE_DEBIAN_PACKAGES[@]}")
  for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "deps: installing ${missing[*]}" >&2
  if [ "$(id -u)" -ne 0 ]; then
    echo "deps: need root to install packages: sudo apt-get install ${missing[*]}" >&2
    return 1
  fi
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
}

# use_ccache: compiles go through ccache, whose cache lives outside the clone in
# $SPACE_CACHE/ccache (keyed by each compile's preprocessed input, compiler and flags), so a
# clean clone rebuilds only what changed since the last build on this host.
use_ccache() {
  export CCACHE_DIR=${CCACHE_DIR:-${SPACE_CACHE:-/var/cache/space}/ccache}
  # Paths relative to the clone, wherever it is: another clone's outputs serve this one.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  mkdir -p "$CCACHE_DIR"
  [ -f "$CCACHE_DIR/ccache.conf" ] || ccache --max-size 5G >/dev/null
  CCACHE_FLAGS=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
}

# build_space BUILD_DIR [CMAKE ARGS]: configures (once) and builds space, guest-init and the
# tests.
build_space() {
  local dir=$1
  shift
  use_ccache
  [ -f "$dir/build.ninja" ] ||
    cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${CCACHE_FLAGS[@]}" "$@" >&2
  ninja -C "$dir" -j2 >&2
}
