#!/usr/bin/env bash
# The CRI's own definition, k8s.io/cri-api/pkg/apis/runtime/v1/api.proto (v0.32.3), which the
# CRI test client (tests/cri) is generated from at build time. Debian 12 has no package of it;
# Debian trixie's golang-github-kubernetes-cri-api-dev holds it as a plain file, so its .deb is
# fetched from the same mirror, checked against the SHA-256 pinned here (trixie's Packages
# index), and unpacked with dpkg-deb -x: nothing from trixie is installed. Cached outside the
# clone, keyed by the package's version: $SPACE_CACHE/cri-api/<version>/api.proto. The file's
# gogoproto import and its file-level gogoproto options (Go code generation only; they change no
# message or wire format) are left out, so protoc needs no gogo.proto.
# Prints the proto's path. --cached: only print it if it is cached already (exit 1 otherwise).
set -euo pipefail
VERSION=0.32.3-1
SHA256=634610347b36362eb4614eb98c494cb9363d5d873da99806ba2b181460a93b20
URL=http://deb.debian.org/debian/pool/main/g/golang-github-kubernetes-cri-api/golang-github-kubernetes-cri-api-dev_${VERSION}_all.deb
dir=${SPACE_CACHE:-/var/cache/space}/cri-api/$VERSION
proto=$dir/api.proto
if [ -f "$proto" ]; then
  echo "$proto"
  exit 0
fi
[ "${1:-}" != --cached ] || exit 1
mkdir -p "$dir"
tmp=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
curl -fsS --retry 3 -o "$tmp/cri-api.deb" "$URL" ||
  { echo "cri-api: could not fetch $URL" >&2; exit 1; }
echo "$SHA256  $tmp/cri-api.deb" | sha256sum -c --quiet - ||
  { echo "cri-api: $URL does not have the pinned SHA-256 $SHA256" >&2; exit 1; }
dpkg-deb -x "$tmp/cri-api.deb" "$tmp/x"
src=$(find "$tmp/x" -path '*/cri-api/pkg/apis/runtime/v1/api.proto' | head -1)
[ -n "$src" ] || { echo "cri-api: no runtime/v1/api.proto in the package" >&2; exit 1; }
sed -e '/^import "github.com\/gogo\/protobuf\/gogoproto\/gogo.proto";$/d' -e '/^option (gogoproto\./d' \
  "$src" >"$tmp/api.proto"
! grep -q gogoproto "$tmp/api.proto" ||
  { echo "cri-api: $src uses gogoproto beyond its file options: update this script" >&2; exit 1; }
mv "$tmp/api.proto" "$proto"
echo "$proto"
