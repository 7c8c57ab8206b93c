# Scenario: space cp, files into and out of sandboxes through guest-init's file conversation,
# in one image sandbox (a busybox OCI image whose User is "app") and one base sandbox. Checked:
#   - create --copy puts a file in place before the first exec;
#   - round trips by checksum: a 64 MiB random file and a tree of 2,000 small files (on PVM
#     hosts 4 MiB and 200 files, see below) with symlinks, hard links, empty directories, a 4755 file and a name
#     with spaces and UTF-8, into the sandbox and back out, and out of a paused sandbox (which
#     stays paused);
#   - owners: files copied in belong to the image's User, -a keeps numeric owners; copied out
#     they belong to the caller, unless -a, and lose setuid bits unless -a --keep-privileges (-a
#     alone says on stderr what it dropped);
#   - tar streams: `tar -c | space cp - ID:DIR` and `space cp ID:SRC - | tar -x`;
#   - a hostile guest: links to / and /etc/passwd, a directory holding a link to /: copied out,
#     links stay links, nothing outside DST is written (a canary beside DST is checked);
#   - hostile host input: a tar with `../`, an absolute name and a link-then-write pair copied in
#     writes nothing outside DST in the guest;
#   - errors exit 125 with a clear message: unknown sandbox, missing source, DST not a directory,
#     a stopped sandbox, the size limit (and what it wrote is removed);
#   - destroy leaves nothing behind.
source "$(dirname "$0")/lib.sh"
shared_template default

command -v busybox >/dev/null || fail "busybox (static) is not installed: apt-get install busybox-static"
data=$TEST_ROOT/data
mkdir -p "$data"
# The image: busybox with the applets used below, /etc/passwd with "app" (1234), User app.
python3 - "$data/oci" "$(command -v busybox)" <<'PY'
import hashlib, io, json, os, sys, tarfile
out, busybox = sys.argv[1], sys.argv[2]
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
    def entry(name, kind=tarfile.REGTYPE, data=b"", mode=0o644, link=""):
        ti = tarfile.TarInfo(name); ti.type = kind; ti.mode = mode; ti.linkname = link
        ti.size = len(data) if kind == tarfile.REGTYPE else 0
        t.addfile(ti, io.BytesIO(data) if ti.size else None)
    for d in ("bin", "etc", "work", "tmp"): entry(d, tarfile.DIRTYPE, mode=0o1777 if d == "tmp" else 0o755)
    entry("bin/busybox", data=open(busybox, "rb").read(), mode=0o755)
    for a in "sh cat ls stat ln mkdir sha256sum tar rm readlink find wc echo".split():
        entry("bin/" + a, tarfile.SYMTYPE, link="busybox")
    entry("etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\napp:x:1234:1234:app:/work:/bin/sh\n")
    entry("etc/group", data=b"root:x:0:\napp:x:1234:\n")
layer = buf.getvalue()
os.makedirs(out + "/blobs/sha256")
def blob(b):
    h = hashlib.sha256(b).hexdigest(); open(out + "/blobs/sha256/" + h, "wb").write(b); return "sha256:" + h, len(b)
cfg = {"architecture": "amd64", "os": "linux", "config": {"User": "app", "Env": ["PATH=/bin"]},
       "rootfs": {"type": "layers", "diff_ids": [blob(layer)[0]]}}
c, cn = blob(json.dumps(cfg).encode())
l, ln = blob(layer)
m, mn = blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": c, "size": cn},
    "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": l, "size": ln}]}).encode())
open(out + "/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
           "digest": m, "size": mn}]}, open(out + "/index.json", "w"))
PY
expect_status 0 space image import bb "$data/oci" --size 512M

# The data: a 64 MiB random file, and a tree of 2,000 small files with every kind of entry. On a
# PVM host the guest kernel, which moves every byte through vsock and makes every file, is
# interpreted (tens to hundreds of KB/s and a few files a second, measured by
# scripts/bench-cp.sh): there the file has $SPACE_TEST_CP_MIB MiB (default 4) and the tree
# $SPACE_TEST_CP_FILES files (default 200). The unit tests (test_copy.cpp) round-trip 64 MiB and
# 2,000 files through the same host and guest-init code without a VM on every host.
big_mib=64 files=2000
if [ "$(space check --format json | json_field host)" = pvm ]; then
  big_mib=${SPACE_TEST_CP_MIB:-4} files=${SPACE_TEST_CP_FILES:-200}
fi
head -c $((big_mib << 20)) /dev/urandom >"$data/big.bin"
python3 - "$data/tree" "$files" <<'PY'
import os, sys
root = sys.argv[1]
for i in range(int(sys.argv[2])):
    d = os.path.join(root, "d%02d" % (i % 10))
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "f%04d" % i), "w").write("file %d\n" % i * (i % 7 + 1))
os.makedirs(os.path.join(root, "empty/deeper"))
open(os.path.join(root, "with space \u00e9\u00e8 \u2603"), "w").write("unicode\n")
open(os.path.join(root, "setuid"), "w").write("#!/bin/sh\n")
os.chmod(os.path.join(root, "setuid"), 0o4755)
os.symlink("d00/f0000", os.path.join(root, "rel-link"))
os.symlink("/etc/passwd", os.path.join(root, "abs-link"))
os.link(os.path.join(root, "d01/f0001"), os.path.join(root, "hard-1"))
os.link(os.path.join(root, "d01/f0001"), os.path.join(root, "d02/hard-2"))
PY
# manifest DIR [setid]: one line per entry (mode, kind, size and sha256 or link target, and for
# hard links the first name of its group), sorted: equal manifests mean equal trees. Without
# "setid" the setuid and setgid bits are left out.
manifest() {
  python3 - "$1" "${2:-}" <<'PY'
import hashlib, os, stat, sys
root, with_setid = sys.argv[1], sys.argv[2] == "setid"
entries, groups = [], {}
for dp, dns, fns in os.walk(root):
    for n in dns + fns:
        p = os.path.join(dp, n); st = os.lstat(p); rel = os.path.relpath(p, root)
        entries.append((rel, p, st))
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1: groups.setdefault(st.st_ino, []).append(rel)
lines = []
for rel, p, st in entries:
    mode = stat.S_IMODE(st.st_mode) & (0o7777 if with_setid else 0o1777)
    if stat.S_ISLNK(st.st_mode): what, mode = "link " + os.readlink(p), 0
    elif stat.S_ISDIR(st.st_mode): what = "dir"
    else:
        what = "file %d %s" % (st.st_size, hashlib.sha256(open(p, "rb").read()).hexdigest())
        if st.st_ino in groups: what += " linked-with " + min(groups[st.st_ino])
    lines.append("%s %o %s" % (rel, mode, what))
print("\n".join(sorted(lines)))
PY
}
manifest "$data/tree" setid >"$data/tree.manifest"

# create --copy: the file is there before the first exec.
echo "copied at create" >"$data/hello.txt"
expect_status 0 space create --image bb --copy "$data/hello.txt:/work/hello.txt" s1
[ "$(space exec s1 -- cat /work/hello.txt)" = "copied at create" ] || fail "create --copy"
# A --copy that cannot land (its guest directory is missing) fails the create after the
# sandbox ran, and the sandbox is gone again; so does run's, before its command.
count() { space list --format json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
before=$(count)
expect_status 125 space create --image bb --copy "$data/hello.txt:/no/such/dir/x" s-bad
assert_contains "$ERR" "create sandbox s-bad" "a failed create --copy"
[ ! -e "$SPACE_ROOT/store/sandboxes/s-bad" ] || fail "a failed create --copy left its sandbox"
expect_status 125 space run --image bb --copy "$data/hello.txt:/no/such/dir/x" -- touch /ran
[ "$(count)" = "$before" ] ||
  fail "a failed create or run --copy left a sandbox: $(space list)"

# Into the sandbox, and back out: the same bytes, the same tree.
t0=$(date +%s.%N)
expect_status 0 space cp --format json "$data/big.bin" s1:/work/
[ "$(echo "$OUT" | json_field bytes)" = $((big_mib << 20)) ] || fail "cp --format json: $OUT"
expect_status 0 space cp "$data/tree" s1:/work/
t1=$(date +%s.%N)
guest_sum=$(space exec s1 -- sha256sum /work/big.bin | cut -d' ' -f1)
[ "$guest_sum" = "$(sha256sum <"$data/big.bin" | cut -d' ' -f1)" ] || fail "the $big_mib MiB file changed on the way in"
out=$(space exec s1 -- stat -c '%u %g %a %n' /work/big.bin /work/tree/setuid /work/tree/d03)
[ "$out" = "$(printf '1234 1234 644 /work/big.bin\n1234 1234 4755 /work/tree/setuid\n1234 1234 755 /work/tree/d03')" ] ||
  fail "owners and modes in the guest (the image's User owns what is copied in): $out"
mkdir "$data/out"
expect_status 0 space cp s1:/work/tree "$data/out/"
expect_status 0 space cp s1:/work/big.bin "$data/out/big.copy"
t2=$(date +%s.%N)
cmp -s "$data/big.bin" "$data/out/big.copy" || fail "the $big_mib MiB file changed on the round trip"
manifest "$data/out/tree" setid | diff <(sed 's/^\(setuid\) 4755/\1 755/' "$data/tree.manifest") - ||
  fail "the tree changed on the round trip (setuid bits are dropped on the way out without -a)"
[ "$(stat -c %u "$data/out/tree/d05/f0005")" = "$(id -u)" ] || fail "copied out: not owned by the caller"
echo "timing: in $(echo "$t1 - $t0" | bc) s, out $(echo "$t2 - $t1" | bc) s ($big_mib MiB + $files files each way)"

# -a keeps numeric owners; out of a paused sandbox, which stays paused. Copied out, the setuid
# bit is dropped (and stderr says so) unless --keep-privileges.
install -o 4321 -g 4321 -m 0640 "$data/hello.txt" "$data/owned"
expect_status 0 space cp -a "$data/owned" s1:/work/
[ "$(space exec s1 -- stat -c '%u %g %a' /work/owned)" = "4321 4321 640" ] || fail "cp -a in"
expect_status 0 space pause s1
expect_status 0 space cp -a s1:/work/tree "$data/paused"
[ "$(status_of s1)" = paused ] || fail "a copy out of a paused sandbox must leave it paused"
assert_contains "$ERR" "space cp: dropped setuid/setgid bits of 1 file and " "cp -a out: the warning"
manifest "$data/paused" setid | diff <(sed 's/^\(setuid\) 4755/\1 755/' "$data/tree.manifest") - ||
  fail "copy out of a paused sandbox (-a drops the setuid bit)"
[ "$(stat -c %u "$data/paused/d05/f0005")" = 1234 ] || fail "cp -a out: owner not kept"
expect_status 0 space cp -a --keep-privileges s1:/work/tree/setuid "$data/kept-setuid"
[ "$(stat -c %a "$data/kept-setuid")" = 4755 ] || fail "cp -a --keep-privileges out: setuid bit not kept"
case "$ERR" in *dropped*) fail "cp -a --keep-privileges warned: $ERR" ;; esac
expect_status 0 space resume s1

# Tar streams both ways (a stream's destination directory must exist; /work belongs to root).
space exec -u root s1 -- mkdir /work/streamed || fail "mkdir /work/streamed"
tar -C "$data/tree" -cf - d07 | space cp - s1:/work/streamed || fail "tar stream in"
space cp s1:/work/streamed/d07 - | tar -C "$data" -xf - || fail "tar stream out"
diff -r "$data/tree/d07" "$data/d07" || fail "tar stream round trip"

# A hostile guest: links planted in the guest are copied as links and never followed.
echo untouched >"$data/canary"
space exec -u root s1 -- sh -c 'ln -s / /tmp/evil; ln -s /etc/passwd /tmp/f; mkdir /tmp/d;
  ln -s / /tmp/d/root; ln -s ../../canary /tmp/d/up' || fail "planting links"
mkdir "$data/dst"
for src in /tmp/evil /tmp/f /tmp/d /tmp/d; do  # /tmp/d twice: the second copy meets its own links
  expect_status 0 space cp "s1:$src" "$data/dst/"
done
[ "$(readlink "$data/dst/evil")" = / ] && [ "$(readlink "$data/dst/f")" = /etc/passwd ] &&
  [ "$(readlink "$data/dst/d/root")" = / ] || fail "links copied out must stay links"
[ "$(ls -A "$data/dst" | tr '\n' ' ')" = "d evil f " ] || fail "DST holds more than the copies: $(ls -A "$data/dst")"
[ "$(cat "$data/canary")" = untouched ] || fail "the canary beside DST changed"
expect_status 0 space cp -L s1:/tmp/f "$data/passwd"
assert_contains "$(cat "$data/passwd")" "app:x:1234" "-L copies what the link points to"

# Hostile host input: ../, absolute names, a link then a write through it; nothing escapes.
space exec -u root s1 -- sh -c 'mkdir -p /work/in; echo untouched > /work/canary' || fail "guest canary"
python3 - "$data/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    def f(name, data=b"evil\n"):
        ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
    ln = tarfile.TarInfo("up"); ln.type = tarfile.SYMTYPE; ln.linkname = ".."; t.addfile(ln)
    f("up/canary")
PY
python3 - "$data/dotdot.tar" "$data/abs.tar" <<'PY'
import io, sys, tarfile
for path, name in ((sys.argv[1], "../canary"), (sys.argv[2], "/work/canary")):
    with tarfile.open(path, "w") as t:
        ti = tarfile.TarInfo(name); ti.size = 5; t.addfile(ti, io.BytesIO(b"evil\n"))
PY
for tarball in evil dotdot abs; do
  expect_status 125 space cp - s1:/work/in <"$data/$tarball.tar"
done
[ "$(space exec s1 -- sh -c 'cat /work/canary; ls -A /work/in | wc -l')" = "$(printf 'untouched\n0')" ] ||
  fail "a hostile tar wrote outside DST in the guest, or left entries in it"

# Errors: exit 125 and a message that names the problem.
expect_status 125 space cp "$data/hello.txt" nosuch:/work
assert_contains "$ERR" "nosuch" "unknown sandbox"
expect_status 125 space cp s1:/no/such/file "$data/"
assert_contains "$ERR" "no such file or directory in the sandbox" "missing source"
expect_status 125 space cp "$data/tree" s1:/work/hello.txt
assert_contains "$ERR" "cannot copy a directory" "DST is a file"
expect_status 125 space cp "$data/hello.txt" s1:/work/missing/
assert_contains "$ERR" "does not exist" "DST directory missing"
# The size limit: one file over it, and a tree (about 8 KB here) that crosses it part way.
expect_status 125 space cp --max-size 1M s1:/work/big.bin "$data/limited"
assert_contains "$ERR" "size limit" "size limit (file)"
[ ! -e "$data/limited" ] || fail "a file copy stopped by the size limit left $data/limited"
expect_status 125 space cp --max-size 2K s1:/work/tree "$data/limited"
assert_contains "$ERR" "size limit" "size limit (tree)"
assert_contains "$ERR" "hint: raise it with --max-size" "size limit's hint (tree)"
[ ! -e "$data/limited" ] || fail "a copy stopped by the size limit left $(ls "$data/limited" | wc -l) entries"

# The base root (no image) works the same; a stopped sandbox is refused.
expect_status 0 space create s2
expect_status 0 space cp "$data/hello.txt" s2:/tmp/
[ "$(space exec s2 -- cat /tmp/hello.txt)" = "copied at create" ] || fail "copy into a sandbox without an image"
kill -9 "$(pid_of s2)"
wait_until 10 sh -c "[ \"\$($SPACE_BIN state s2 | python3 -c 'import json,sys; print(json.load(sys.stdin)[\"status\"])')\" = stopped ]"
expect_status 125 space cp "$data/hello.txt" s2:/tmp/
assert_contains "$ERR" "stopped" "a stopped sandbox"

expect_status 0 space destroy s1 s2
[ -z "$(ls "$SPACE_ROOT/store/sandboxes")" ] || fail "sandboxes left: $(ls "$SPACE_ROOT/store/sandboxes")"
[ -z "$(vmm_pids)" ] || fail "VMMs left: $(vmm_pids)"
echo "PASS"
