#!/usr/bin/env python3
"""A minimal container engine for the OCI runtime tests: what conmon does around a runc-style
runtime, and no more. It becomes a child subreaper (so the container's host process, left behind
by `create`, becomes its child), gives the runtime stdio files, reads --pid-file, waits for that
process and records how it ended, as podman would report it.

Usage:
  oci_engine.py OUT RUNTIME STATE run BUNDLE ID [--start-after FILE]
      create, wait for FILE (if given), start, wait for the container's process
  oci_engine.py OUT RUNTIME STATE exec ID PROCESS_JSON [--detach]
      exec --process (with --detach: wait for the pid it leaves, as conmon does)

OUT is a directory: OUT/stdin is the process's stdin when it exists; the engine writes
OUT/stdout, OUT/stderr, OUT/pid, OUT/create.rc (runtime create's exit code) and OUT/exit
("exit N", or "signal N" for a process killed by signal N) at the end. Exits 0 unless the
engine itself failed.
"""
import ctypes
import os
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def stdio(out):
    stdin_path = os.path.join(out, "stdin")
    stdin = open(stdin_path, "rb") if os.path.exists(stdin_path) else subprocess.DEVNULL
    return stdin, open(os.path.join(out, "stdout"), "wb"), open(os.path.join(out, "stderr"), "wb")


def record(out, name, text):
    tmp = os.path.join(out, name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text + "\n")
    os.rename(tmp, os.path.join(out, name))


def wait_pid(pid):
    """Waits for our (adopted) child `pid`; reaps other children on the way."""
    while True:
        got, status = os.waitpid(-1, 0)
        if got != pid:
            continue
        if os.WIFSIGNALED(status):
            return "signal %d" % os.WTERMSIG(status)
        return "exit %d" % os.WEXITSTATUS(status)


def main():
    out, runtime, state, mode = sys.argv[1:5]
    rest = sys.argv[5:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    pid_file = os.path.join(out, "pid")
    base = [runtime, "--root", state]
    stdin, stdout, stderr = stdio(out)
    if mode == "run":
        bundle, cid = rest[0], rest[1]
        start_after = rest[3] if len(rest) > 3 and rest[2] == "--start-after" else None
        rc = subprocess.call(base + ["create", "--bundle", bundle, "--pid-file", pid_file, cid],
                             stdin=stdin, stdout=stdout, stderr=stderr)
        record(out, "create.rc", str(rc))
        if rc != 0:
            return
        pid = int(open(pid_file).read())
        while start_after and not os.path.exists(start_after):
            time.sleep(0.05)
        rc = subprocess.call(base + ["start", cid])
        if rc != 0:
            record(out, "start.rc", str(rc))
        record(out, "exit", wait_pid(pid))
    elif mode == "exec":
        cid, process = rest[0], rest[1]
        detach = "--detach" in rest[2:]
        args = base + ["exec", "--process", process, "--pid-file", pid_file]
        if detach:
            args.append("--detach")
        rc = subprocess.call(args + [cid], stdin=stdin, stdout=stdout, stderr=stderr)
        if not detach:
            record(out, "exit", "exit %d" % rc)
            return
        record(out, "create.rc", str(rc))
        if rc == 0:
            record(out, "exit", wait_pid(int(open(pid_file).read())))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
