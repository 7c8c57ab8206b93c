# Scenario: a real userland in a sandbox. A Debian bookworm image with python3, python3-venv,
# git, gcc, libc6-dev and make (lib.sh debian_image: built with `space image build --debian`
# once per key and cached outside the clone) is attached to a sandbox restored from the shared
# test template, and the tools users run work there:
#   - Python: a 4-process multiprocessing.Pool computing sha256 of known data, checked against
#     the host's result; sqlite3 and ssl import; `python3 -m venv --without-pip` makes a working
#     venv (with pip, ensurepip installs and byte-compiles pip: over 11 minutes here, where every
#     page fault and file operation is interpreted guest kernel code; too long for the suite);
#   - gcc compiles and links a C program that runs; git init, commit and log;
#   - the same as a user of the image (`-u nobody`, looked up in the image's /etc/passwd);
# then the sandbox is destroyed without leftovers. The guest kernel config these need is listed
# in scripts/kernel/README.md ("For users' own images").
source "$(dirname "$0")/lib.sh"
shared_template default
debian_image py

expect_status 0 space create --image py d1

# Python: multiprocessing (fork, pipes, POSIX semaphores on /dev/shm), hashlib, sqlite3, ssl.
script='
import hashlib, multiprocessing, sqlite3, ssl
def h(i):
    return hashlib.sha256(bytes([i]) * 1000000).hexdigest()[:16]
if __name__ == "__main__":
    with multiprocessing.Pool(4) as p:
        print(",".join(p.map(h, range(8))))
    db = sqlite3.connect(":memory:")
    print("sqlite", db.execute("select 6*7").fetchone()[0], "ssl", ssl.OPENSSL_VERSION.split()[0])
'
want=$(python3 -c "$script")
want=${want%%$'\n'*}
expect_status 0 space exec d1 -- python3 -c "$script"
[ "$(echo "$OUT" | head -1)" = "$want" ] || fail "multiprocessing sha256 in the guest: $OUT (host: $want)"
assert_contains "$OUT" "sqlite 42 ssl OpenSSL" "sqlite3 and ssl"

# venv, gcc, git: one exec (each exec is a guest fork+exec, slow under PVM).
expect_status 0 space exec -w /tmp d1 -- sh -c '
  set -e
  python3 -m venv --without-pip /tmp/venv && /tmp/venv/bin/python -c "import sys; print(\"venv\", sys.prefix)"
  printf "#include <stdio.h>\nint main(void) { printf(\"hello from gcc %%d\\\\n\", 6 * 7); return 0; }\n" > hello.c
  gcc -O1 -o hello hello.c && ./hello
  git init -q repo && cd repo && echo data > f && git add f
  git -c user.name=t -c user.email=t@example.invalid commit -q -m first && git log --format=%s'
assert_contains "$OUT" "venv /tmp/venv" "python3 -m venv --without-pip"
assert_contains "$OUT" "hello from gcc 42" "gcc"
assert_contains "$OUT" "first" "git log"

# As a user from the image's own /etc/passwd.
expect_status 0 space exec -u nobody d1 -- python3 -c 'import os, pwd; print(os.getuid(), pwd.getpwuid(os.getuid()).pw_name)'
[ "$OUT" = "65534 nobody" ] || fail "python as nobody: $OUT"

d1pid=$(pid_of d1)
expect_status 0 space destroy d1
assert_gone d1 "$d1pid"
[ -z "$(vmm_pids)" ] || fail "VMMs left: $(vmm_pids)"
echo "PASS"
