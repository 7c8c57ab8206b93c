# The Debian packages space needs to build, to build its guest kernel and rootfs, to build Debian
# images (mmdebstrap), and to run its tests (podman makes archives as a real client does) and
# benchmarks; sourced by install.sh and test.sh.
# ensure_debian_packages installs only what is missing, so with everything present it costs one
# dpkg-query.
SPACE_DEBIAN_PACKAGES=(
  g++ cmake ninja-build pkg-config
  libcli11-dev libseccomp-dev libbtrfsutil-dev libtomlplusplus-dev doctest-dev libarchive-dev
  linux-source-6.1 bc flex bison libelf-dev libssl-dev xz-utils cpio
  busybox-static e2fsprogs btrfs-progs python3 procps
  mmdebstrap podman
  clang clang-format clang-tidy
)

ensure_debian_packages() {
  local missing=() p
  for p in "${SPACE_DEBIAN_PACKAGES[@]}"; do
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

# build_space BUILD_DIR: configures (once) and builds space, guest-init and the tests.
build_space() {
  local dir=$1
  [ -f "$dir/build.ninja" ] || cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >&2
  ninja -C "$dir" -j2 >&2
}
