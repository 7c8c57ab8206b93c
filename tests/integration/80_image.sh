# Scenario: image import, no VM needed. Archives built here with Python: an OCI layout of two
# layers (a whiteout, an opaque directory, a hard link across layers, a symlinked directory, a
# file capability, a setuid file, Env/Cmd/WorkingDir/User in its config), the same as an OCI
# archive and as a docker archive, and a rootfs tarball. Each imports to an ext4 disk whose files
# debugfs checks. Hostile input is refused (exit 125) with no image registered and no build
# directory left: '..' and absolute names, a file written through a planted symlink, a hard
# link outside the root, a digest mismatch, an unsupported media type, a truncated archive, and
# a disk too small for the files. The same content imported twice (same digest, platform and
# size) is stored once: the second disk is a reflink sharing every extent of the first (filefrag's
# physical offsets, btrfs's exclusive bytes). Then list, inspect, rm.
source "$(dirname "$0")/lib.sh"

work=$TEST_ROOT/img
mkdir -p "$work"
python3 - "$work" <<'PY'
import hashlib, io, json, os, sys, tarfile
w = sys.argv[1]

def tar_bytes(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for e in entries:
            ti = tarfile.TarInfo(e["name"])
            ti.mode = e.get("mode", 0o644)
            ti.mtime = 1700000000
            ti.uid, ti.gid = e.get("uid", 0), e.get("gid", 0)
            data = e.get("data", b"")
            kind = e.get("type", "file")
            if kind == "dir": ti.type = tarfile.DIRTYPE; ti.mode = e.get("mode", 0o755)
            elif kind == "sym": ti.type = tarfile.SYMTYPE; ti.linkname = e["link"]
            elif kind == "hard": ti.type = tarfile.LNKTYPE; ti.linkname = e["link"]
            if "xattrs" in e: ti.pax_headers = {"SCHILY.xattr." + k: v for k, v in e["xattrs"].items()}
            ti.size = len(data) if kind == "file" else 0
            t.addfile(ti, io.BytesIO(data) if kind == "file" else None)
    return buf.getvalue()

cap = b"\x00\x00\x00\x02" + b"\x00\x04\x00\x00" + b"\x00" * 12  # v2 (LE), cap_net_bind_service
layer1 = tar_bytes([
    {"name": "etc", "type": "dir"}, {"name": "etc/os-release", "data": b"ID=spacetest\n"},
    {"name": "etc/gone", "data": b"lower\n"},
    {"name": "opt", "type": "dir"}, {"name": "opt/old1", "data": b"1"}, {"name": "opt/old2", "data": b"2"},
    {"name": "usr", "type": "dir"}, {"name": "usr/lib", "type": "dir"},
    {"name": "usr/lib/libx.so", "data": b"ELF-ish"},
    {"name": "lib", "type": "sym", "link": "usr/lib"},
    {"name": "bin", "type": "dir"}, {"name": "bin/ping", "mode": 0o4755, "data": b"ping",
     "xattrs": {"security.capability": cap.decode("latin-1")}},
])
layer2 = tar_bytes([
    {"name": "etc/.wh.gone"}, {"name": "opt/.wh..wh..opq"}, {"name": "opt/new", "data": b"new"},
    {"name": "bin/pong", "type": "hard", "link": "bin/ping"},
    {"name": "home", "type": "dir"}, {"name": "home/app", "type": "dir", "uid": 1000, "gid": 1000},
    {"name": "home/app/.profile", "data": b"export X=1\n", "uid": 1000, "gid": 1000},
])
config = {"architecture": "amd64", "os": "linux",
          "config": {"Env": ["PATH=/usr/bin:/bin", "GREETING=hello"], "Cmd": ["cat", "/etc/os-release"],
                     "WorkingDir": "/home/app", "User": "app"},
          "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(l).hexdigest() for l in (layer1, layer2)]}}

def oci_layout(d, layer_type="application/vnd.oci.image.layer.v1.tar", tamper=False):
    os.makedirs(d + "/blobs/sha256")
    def put(b):
        h = hashlib.sha256(b).hexdigest()
        open(d + "/blobs/sha256/" + h, "wb").write(b)
        return "sha256:" + h
    ls = [put(layer1), put(layer2)]
    cfg = put(json.dumps(config).encode())
    man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                      "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": 1},
                      "layers": [{"mediaType": layer_type, "digest": x, "size": 1} for x in ls]}).encode()
    m = put(man)
    open(d + "/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
    open(d + "/index.json", "w").write(json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": m, "size": len(man),
         "platform": {"os": "linux", "architecture": "amd64"}}]}))
    if tamper:
        open(d + "/blobs/sha256/" + ls[1][7:], "ab").write(b"x")

def tar_dir(d, out):
    with tarfile.open(out, "w") as t:
        for name in sorted(os.listdir(d)): t.add(os.path.join(d, name), arcname=name)

oci_layout(w + "/oci")
tar_dir(w + "/oci", w + "/oci.tar")
oci_layout(w + "/foreign", "application/vnd.oci.image.layer.nondistributable.v1.tar")
oci_layout(w + "/tampered", tamper=True)
# docker archive
os.makedirs(w + "/docker/l1"); os.makedirs(w + "/docker/l2")
open(w + "/docker/l1/layer.tar", "wb").write(layer1); open(w + "/docker/l2/layer.tar", "wb").write(layer2)
cb = json.dumps(config).encode(); ch = hashlib.sha256(cb).hexdigest()
open(w + "/docker/" + ch + ".json", "wb").write(cb)
open(w + "/docker/manifest.json", "w").write(json.dumps([{"Config": ch + ".json", "RepoTags": ["t:1"], "Layers": ["l1/layer.tar", "l2/layer.tar"]}]))
tar_dir(w + "/docker", w + "/docker.tar")
# a rootfs tarball, and hostile ones
open(w + "/rootfs.tar", "wb").write(tar_bytes([{"name": "./etc", "type": "dir"}, {"name": "./etc/hostname", "data": b"plain\n"}]))
open(w + "/dotdot.tar", "wb").write(tar_bytes([{"name": "../../escape", "data": b"x"}]))
open(w + "/abs.tar", "wb").write(tar_bytes([{"name": "/tmp/escape", "data": b"x"}]))
open(w + "/through.tar", "wb").write(tar_bytes([{"name": "evil", "type": "sym", "link": w + "/outside"},
                                                 {"name": "evil/escape", "data": b"x"}]))
open(w + "/hardout.tar", "wb").write(tar_bytes([{"name": "h", "type": "hard", "link": "../../../etc/passwd"}]))
big = tar_bytes([{"name": "big", "data": os.urandom(200000)}])
open(w + "/truncated.tar", "wb").write(big[:100000])
open(w + "/toobig.tar", "wb").write(tar_bytes([{"name": "big%d" % i, "data": os.urandom(1 << 20)} for i in range(80)]))
os.makedirs(w + "/outside")
PY

images=$SPACE_ROOT/store/images
f() { image_cat "$@"; }
st() { image_stat "$@"; }

# extents IMAGE: the logical and physical offsets and lengths of its disk's extents;
# unshared IMAGE: how many of them filefrag does not flag shared.
extents() { filefrag -v "$images/$1/disk.ext4" | awk '/^ *[0-9]+:/ { print $2, $3, $4, $5, $6 }'; }
unshared() { filefrag -v "$images/$1/disk.ext4" | awk '/^ *[0-9]+:/ && $NF !~ /shared/ { n++ } END { print n + 0 }'; }
# exclusive IMAGE: the bytes of its disk that no other file shares.
exclusive() { btrfs filesystem du --raw -s "$images/$1/disk.ext4" | awk 'NR == 2 { print $2 }'; }
# assert_shares NEW OLD: NEW's disk is a reflink of OLD's.
assert_shares() {
  local new old
  new=$(extents "$1") old=$(extents "$2")
  [ -n "$old" ] && [ "$new" = "$old" ] || fail "$1's disk does not have $2's extents: $new / $old"
  [ "$(unshared "$1")" = 0 ] || fail "$1's disk has $(unshared "$1") extents not flagged shared"
  [ "$(exclusive "$1")" = 0 ] || fail "$1's disk has $(exclusive "$1") bytes of its own"
}

check_layers_applied() {  # IMAGE
  [ "$(f "$1" /etc/os-release)" = ID=spacetest ] || fail "$1: /etc/os-release"
  [ -z "$(f "$1" /etc/gone)" ] || fail "$1: the whiteout did not remove /etc/gone"
  [ "$(f "$1" /opt/new)" = new ] || fail "$1: /opt/new missing"
  [ -z "$(f "$1" /opt/old1)" ] || fail "$1: the opaque directory kept a lower file"
  [ "$(f "$1" /lib/libx.so)" = ELF-ish ] || fail "$1: symlinked directory"
  assert_contains "$(st "$1" /lib)" "Type: symlink" "$1: /lib is a symlink"
  assert_contains "$(st "$1" /bin/pong)" "Links: 2" "$1: hard link across layers"
  assert_contains "$(st "$1" /bin/ping)" "Mode:  04755" "$1: setuid bit"
  assert_contains "$(debugfs -R "ea_list /bin/ping" "$images/$1/disk.ext4" 2>/dev/null)" "security.capability" "$1: file capability"
  assert_contains "$(st "$1" /home/app/.profile)" "User:  1000" "$1: owner"
}

expect_status 0 space image import oci1 "$work/oci"
[ "$OUT" = oci1 ] || fail "import printed '$OUT'"
assert_contains "$ERR" "image: applying layer 2/2" "import progress"
check_layers_applied oci1
inspect=$(space image inspect --format json oci1)
[ "$(echo "$inspect" | json_field kind)" = oci ] || fail "inspect kind: $inspect"
[ "$(echo "$inspect" | json_field config.user)" = app ] || fail "inspect user: $inspect"
[ "$(echo "$inspect" | json_field config.working_dir)" = /home/app ] || fail "inspect workdir: $inspect"
[ "$(echo "$inspect" | json_field config.env.1)" = GREETING=hello ] || fail "inspect env: $inspect"
[ "$(echo "$inspect" | json_field config.cmd.0)" = cat ] || fail "inspect cmd: $inspect"
expect_status 0 space image import oci2 "$work/oci.tar"
check_layers_applied oci2
# The OCI archive of the same layout: same manifest digest, platform and size, so stored once.
assert_contains "$ERR" "same content as image oci1" "import of the same OCI image"
case "$ERR" in *"applying layer"*) fail "the same OCI image had its layers applied again: $ERR" ;; esac
assert_shares oci2 oci1
expect_status 0 space image import dock "$work/docker.tar"
check_layers_applied dock
[ "$(space image inspect --format json dock | json_field kind)" = docker ] || fail "docker kind"
expect_status 0 space image import plain "$work/rootfs.tar" --size 64M
[ "$(f plain /etc/hostname)" = plain ] || fail "rootfs tarball content"
e2fsck -fn "$images/plain/disk.ext4" >/dev/null 2>&1 || fail "the disk of plain does not pass e2fsck"
[ "$(stat -c %s "$images/plain/disk.ext4")" = $((64 << 20)) ] || fail "--size not honoured"
# The disk is sparse: far less allocated than its size.
[ "$(stat -c %b "$images/plain/disk.ext4")" -lt $((32 << 11)) ] || fail "the disk is not sparse"
# The same tarball again is not even unpacked; at another size it is a disk of its own.
expect_status 0 space image import plain2 "$work/rootfs.tar" --size 64M
assert_contains "$ERR" "same content as image plain" "import of the same tarball"
case "$ERR" in *unpacking*) fail "the same tarball was unpacked again: $ERR" ;; esac
assert_shares plain2 plain
[ "$(f plain2 /etc/hostname)" = plain ] || fail "plain2 content"
expect_status 0 space image import plain3 "$work/rootfs.tar" --size 128M
case "$ERR" in *"same content"*) fail "a disk of another size was shared: $ERR" ;; esac
[ "$(exclusive plain3)" != 0 ] || fail "plain3's disk is shared"

# Refusals: exit 125, a message naming the problem, nothing registered or left behind.
refused() {  # NAME SOURCE NEEDLE [FLAGS...]
  local name=$1 src=$2 needle=$3
  shift 3
  expect_status 125 space image import "$name" "$src" "$@"
  assert_contains "$ERR" "$needle" "import of $src"
  space image inspect "$name" >/dev/null 2>&1 && fail "a refused import registered $name"
  [ -z "$(ls -A "$images" | grep '^\.')" ] || fail "a refused import left $(ls -A "$images")"
  [ -z "$(ls -A "$work/outside")" ] || fail "a refused import wrote outside: $(ls -A "$work/outside")"
}
refused bad1 "$work/dotdot.tar" "'..'"
refused bad2 "$work/abs.tar" "absolute"
refused bad3 "$work/through.tar" "symbolic link"
refused bad4 "$work/hardout.tar" "'..'"
refused bad5 "$work/tampered" "does not match its digest"
refused bad6 "$work/foreign" "unsupported layer media type application/vnd.oci.image.layer.nondistributable.v1.tar"
refused bad7 "$work/truncated.tar" "truncated.tar"
refused bad8 "$work/toobig.tar" "do not fit" --size 64M
refused bad9 "$work/rootfs.tar" "invalid size" --size lots
expect_status 125 space image import oci1 "$work/oci"
assert_contains "$ERR" "already exists" "import over an existing image"
expect_status 0 space image import --force oci1 "$work/oci"
assert_contains "$ERR" "same content as image oci1" "replacing an image with the same content"
check_layers_applied oci1

# list, rm; destroying leaves nothing.
[ "$(space image list --format json | python3 -c 'import json,sys; print(" ".join(i["name"] for i in json.load(sys.stdin)))')" = "dock oci1 oci2 plain plain2 plain3" ] \
  || fail "image list: $(space image list)"
expect_status 0 space image rm oci1 oci2 dock plain plain2 plain3
[ -z "$(ls -A "$images")" ] || fail "image rm left: $(ls -A "$images")"
expect_status 125 space image rm oci1
assert_contains "$ERR" "does not exist" "rm of a missing image"
echo "PASS"
