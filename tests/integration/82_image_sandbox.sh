# Scenario: sandboxes with a user image, restored from the shared test template (one template
# serves every image: its empty second disk gets the image's copy at create). The image is an
# OCI layout built here: a static busybox, its own /etc/passwd with a user "app", a marker file,
# and a config with Env, WorkingDir, User and Cmd. Checked:
#   - state and list name the image; execs run inside it (its marker, its passwd), as its User,
#     in its WorkingDir, with its Env; -u/-w/-e override them; /proc, /dev, /tmp, /etc/hostname
#     (the sandbox id) are in place and space-secret is on its PATH;
#   - sandboxes are independent: a write in one is seen neither in another nor in the image;
#     --disk-size grows a sandbox's copy;
#   - branch and checkpoint/resume keep the image sandbox's files;
#   - run --image with no command runs Entrypoint+Cmd;
#   - template build --image --run: a pre-warmed template whose sandboxes start inside the
#     image with the state --run left (one boot);
#   - errors: an unknown image, --disk-size without --image, --image on a template that has one;
#   - destroy leaves no VMM, subvolume or run directory behind.
source "$(dirname "$0")/lib.sh"
shared_template default

command -v busybox >/dev/null || fail "busybox (static) is not installed: apt-get install busybox-static"
work=$TEST_ROOT/imgsrc
mkdir -p "$work"
python3 - "$work" "$(command -v busybox)" <<'PY'
import hashlib, io, json, os, sys, tarfile
w, busybox = sys.argv[1], sys.argv[2]
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    def add(name, data=None, mode=0o644, kind="file", link=None, uid=0):
        ti = tarfile.TarInfo(name); ti.mtime = 1700000000; ti.uid = ti.gid = uid; ti.mode = mode
        if kind == "dir": ti.type = tarfile.DIRTYPE; t.addfile(ti); return
        if kind == "sym": ti.type = tarfile.SYMTYPE; ti.linkname = link; t.addfile(ti); return
        ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    for d in ("bin", "etc", "work", "home", "usr", "usr/local"): add(d, kind="dir", mode=0o755)
    add("home/app", kind="dir", mode=0o755, uid=1234)
    add("work/data", kind="dir", mode=0o777)
    add("bin/busybox", open(busybox, "rb").read(), 0o755)
    for a in ("sh", "cat", "id", "pwd", "ls", "hostname", "df", "mkdir", "test", "echo", "sleep", "stat", "which"):
        add("bin/" + a, kind="sym", link="busybox")
    add("etc/passwd", b"root:x:0:0:root:/root:/bin/sh\napp:x:1234:1234:App:/home/app:/bin/sh\n")
    add("etc/group", b"root:x:0:\napp:x:1234:\nstaff:x:50:app\n")
    add("marker", b"from-the-image\n")
layer = buf.getvalue()
config = {"architecture": "amd64", "os": "linux",
          "config": {"Env": ["PATH=/usr/local/bin:/bin", "GREETING=hello"], "WorkingDir": "/work",
                     "User": "app", "Cmd": ["sh", "-c", "echo from-cmd $GREETING $(id -u)"]},
          "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]}}
d = w + "/oci"
os.makedirs(d + "/blobs/sha256")
def put(b):
    h = hashlib.sha256(b).hexdigest(); open(d + "/blobs/sha256/" + h, "wb").write(b); return "sha256:" + h
man = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(json.dumps(config).encode()), "size": 1},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": put(layer), "size": len(layer)}]}).encode()
open(d + "/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
open(d + "/index.json", "w").write(json.dumps({"schemaVersion": 2, "manifests": [
    {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": put(man), "size": len(man)}]}))
PY
expect_status 0 space image import bb "$work/oci" --size 256M

# Two sandboxes from the same image, the second with a larger disk.
expect_status 0 space create --image bb s1
expect_status 0 space create --image bb --disk-size 1G s2
[ "$(space state s1 | json_field image)" = bb ] || fail "state does not name the image: $(space state s1)"
assert_contains "$(space list)" "bb" "list shows the image"

# One exec checks most of the image's environment (each exec is a guest fork+exec).
out=$(space exec s1 -- sh -c 'cat /marker; id -u; id -g; pwd; echo "G=$GREETING"; hostname;
  cat /etc/hostname; test -r /proc/self/status && echo proc-ok; test -c /dev/null && echo dev-ok;
  test -d /dev/pts && echo pts-ok; stat -c %a /tmp; which space-secret; echo "H=$HOME";
  echo written-in-s1 > /work/data/file') || fail "exec in s1 failed: $out"
expected="from-the-image
1234
1234
/work
G=hello
s1
s1
proc-ok
dev-ok
pts-ok
1777
/usr/local/bin/space-secret
H=/home/app"
[ "$out" = "$expected" ] || fail "exec in the image: got
$out
expected
$expected"

# The command line overrides the image's User, WorkingDir and Env; names resolve in its files.
out=$(space exec -u root -w / -e GREETING=over s1 -- sh -c 'id -u; pwd; echo "G=$GREETING $HOME"')
[ "$out" = "$(printf '0\n/\nG=over /root')" ] || fail "overrides: $out"
out=$(space exec -u app:staff s2 -- sh -c 'id -u; id -g; cat /work/data/file 2>&1 || echo absent;
  df -k / | tail -1')
assert_contains "$out" "$(printf '1234\n50\n')" "-u app:staff in s2"
assert_contains "$out" "absent" "s2 must not see s1's write"
blocks=$(echo "$out" | tail -1 | awk '{print $2}')
[ "$blocks" -gt 700000 ] || fail "--disk-size 1G: / has only $blocks KiB in s2 ($out)"
expect_status 126 space exec -u ghost s1 -- true
assert_contains "$ERR" "user ghost is not in /etc/passwd" "unknown user"

# The image itself is untouched.
if image_stat bb /work/data/file | grep -q "Inode:"; then
  fail "a sandbox's write reached the image's disk"
fi

# Branch and checkpoint/resume keep the files of an image sandbox.
expect_status 0 space branch s1 --name b1
[ "$(space exec b1 -- cat /work/data/file)" = written-in-s1 ] || fail "branch lost the image's files"
[ "$(space exec b1 -- hostname)" = b1 ] || fail "branch hostname"
expect_status 0 space checkpoint s1
expect_status 0 space resume s1
[ "$(space exec s1 -- cat /work/data/file)" = written-in-s1 ] || fail "checkpoint/resume lost a file"
expect_status 0 space destroy s1 s2 b1

# run --image without a command runs Entrypoint + Cmd, as the image's User.
[ "$(space run --image bb)" = "from-cmd hello 1234" ] || fail "run --image without a command"

# Errors name the fix.
expect_status 125 space create --image nosuch bad1
assert_contains "$ERR" "space image list" "unknown image hint"
if [ "$ENGINE" = vm ]; then
  expect_status 125 space create --disk-size 1G bad2
  assert_contains "$ERR" "--image" "--disk-size without --image"
else  # gvisor: --disk-size bounds the overlay's writes, with an image or without
  expect_status 0 space create --disk-size 64M dq
  [ "$(space state dq | json_field disk_limit_bytes)" = $((64 << 20)) ] || fail "dq: no disk limit"
  expect_status 0 space destroy dq
fi

if [ "$ENGINE" = vm ]; then
  # A pre-warmed template from the image: one boot, --run inside the image before the snapshot.
  expect_status 0 space template build warm --image bb --run 'echo warmed-$(id -u) > /work/data/warm'
  expect_status 0 space create --template warm w1
  [ "$(space state w1 | json_field image)" = bb ] || fail "sandbox of template warm: no image in state"
  out=$(space exec w1 -- sh -c 'cat /work/data/warm; cat /marker; id -u')
  [ "$out" = "$(printf 'warmed-1234\nfrom-the-image\n1234')" ] || fail "warm template: $out"
else
  # A gvisor template keeps no running state, so --run is refused; one with the image works.
  expect_status 125 space template build warm --image bb --run true
  assert_contains "$ERR" "keeps no running state" "--run on a gvisor template"
  expect_status 0 space template build warm --image bb
  # A create on the vm engine refuses it, naming the engine it needs (where a VM cannot run
  # here, the refusal is that one, naming gvisor too).
  expect_status 125 space create --engine vm --template warm w0
  assert_contains "$ERR" "--engine gvisor" "a gvisor template on the vm engine"
  if [ -e /dev/kvm ]; then
    assert_contains "$ERR" "template warm is a gvisor template" "a gvisor template on the vm engine"
  fi
  [ ! -e "$SPACE_ROOT/store/sandboxes/w0" ] || fail "a refused create left w0"
  expect_status 0 space create --template warm w1
  [ "$(space state w1 | json_field image)" = bb ] || fail "sandbox of template warm: no image in state"
  out=$(space exec w1 -- sh -c 'cat /marker; id -u')
  [ "$out" = "$(printf 'from-the-image\n1234')" ] || fail "gvisor template with an image: $out"
fi
expect_status 125 space create --template warm --image bb bad3
assert_contains "$ERR" "built with an image of its own" "--image on template warm"
expect_status 0 space destroy w1
expect_status 0 space template rm warm

[ -z "$(ls "$SPACE_ROOT/store/sandboxes")" ] || fail "sandboxes left: $(ls "$SPACE_ROOT/store/sandboxes")"
[ -z "$(vmm_pids)" ] || fail "VMMs left: $(vmm_pids)"
[ -z "$(ls "$SPACE_RUN_DIR" 2>/dev/null)" ] || fail "run directories left: $(ls "$SPACE_RUN_DIR")"
echo "PASS"
