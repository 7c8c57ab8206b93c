# Scenario: images made by a real client, no VM needed. podman imports a root filesystem tarball
# (with a config change: Env, WorkingDir, Cmd) and saves it as a docker archive and as an OCI
# archive; `space image import` takes both, with the files and podman's config intact, and the
# same content saved twice in one format is stored once. podman comes from Debian
# (scripts/deps.sh installs it; this test installs it when it is missing).
source "$(dirname "$0")/lib.sh"

if ! command -v podman >/dev/null; then
  echo "podman is missing: installing it from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman >/dev/null ||
    fail "podman is not installed and apt-get could not install it: apt-get install podman"
fi
command -v busybox >/dev/null || fail "busybox (static) is not installed: apt-get install busybox-static"

work=$TEST_ROOT/podman
tag=localhost/space-test-$$
mkdir -p "$work/root/bin" "$work/root/etc"
cp "$(command -v busybox)" "$work/root/bin/busybox"
ln -s busybox "$work/root/bin/sh"
echo "made by podman" >"$work/root/etc/marker"
mkdir -p "$work/root/srv/app"
tar -C "$work/root" -cf "$work/rootfs.tar" .
# podman's own storage, for this test only and removed with it.
pod() { podman --storage-driver vfs --root "$work/store" --runroot "$work/run" "$@"; }
cleanup_podman() { pod rmi -f "$tag" >/dev/null 2>&1 || true; rm -rf "$work/store" "$work/run" 2>/dev/null || true; }
at_exit cleanup_podman
pod import -q --change 'ENV GREETING=from-podman' --change 'WORKDIR /srv/app' \
  --change 'CMD ["sh", "-c", "echo hi"]' "$work/rootfs.tar" "$tag" >/dev/null || fail "podman import"
pod save -q --format docker-archive -o "$work/docker.tar" "$tag" || fail "podman save (docker)"
pod save -q --format oci-archive -o "$work/oci.tar" "$tag" || fail "podman save (oci)"

expect_status 0 space image import pdock "$work/docker.tar" --size 128M
expect_status 0 space image import poci "$work/oci.tar" --size 128M
for img in pdock poci; do
  [ "$(image_cat $img /etc/marker)" = "made by podman" ] || fail "$img: the image's files"
  image_stat $img /bin/busybox | grep -q "Size: $(stat -c %s "$work/root/bin/busybox")" ||
    fail "$img: busybox has another size"
  meta=$(space image inspect --format json $img)
  [ "$(echo "$meta" | json_field config.working_dir)" = /srv/app ] || fail "$img: WorkingDir: $meta"
  assert_contains "$(echo "$meta" | json_field config.env)" "GREETING=from-podman" "$img: Env"
  assert_contains "$(echo "$meta" | json_field config.cmd)" "echo hi" "$img: Cmd"
done
[ "$(space image inspect --format json pdock | json_field kind)" = docker ] || fail "kind of the docker archive"
[ "$(space image inspect --format json poci | json_field kind)" = oci ] || fail "kind of the OCI archive"

# The same image saved again imports as the same content: stored once.
pod save -q --format docker-archive -o "$work/docker2.tar" "$tag" || fail "podman save again"
expect_status 0 space image import pdock2 "$work/docker2.tar" --size 128M
assert_contains "$ERR" "same content as image pdock" "the second import of the same image"
expect_status 0 space image rm pdock pdock2 poci
echo "PASS"
