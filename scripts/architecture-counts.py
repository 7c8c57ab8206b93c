#!/usr/bin/env python3
"""ARCHITECTURE.md's layer table: the files and lines columns, counted from the tree rather than
typed. Each row names its folder (`util/`, ..., `guest-init/`); its last two cells are set to the
number of .cpp and .h files in it and below (src/<folder>/ or guest-init/) and their lines.

Usage: architecture-counts.py [--check] [SOURCE_DIR]
  without --check: rewrites ARCHITECTURE.md in place (when a count changed) and prints the rows
  it changed; with --check: changes nothing, prints each stale row and exits 1 if any (ctest
  "docs.counts" runs this, so the table stays true).
"""
import glob
import os
import re
import sys

ROW = re.compile(r"^\| (?P<num>[^|]*) \| `(?P<folder>[a-z-]+)/` \|(?P<mid>.*)\| (?P<files>\d+) \| (?P<lines>\d+) \|$")


def counts(src, folder):
    base = os.path.join(src, "guest-init") if folder == "guest-init" else os.path.join(src, "src", folder)
    files = sorted(glob.glob(os.path.join(base, "**", "*.cpp"), recursive=True) +
                   glob.glob(os.path.join(base, "**", "*.h"), recursive=True))
    lines = 0
    for f in files:
        with open(f, "rb") as fh:
            lines += fh.read().count(b"\n")
    return len(files), lines


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    src = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(src, "ARCHITECTURE.md")
    with open(path) as f:
        text = f.read().split("\n")
    stale = []
    rows = 0
    for i, line in enumerate(text):
        m = ROW.match(line)
        if not m:
            continue
        rows += 1
        files, lines = counts(src, m.group("folder"))
        if (files, lines) != (int(m.group("files")), int(m.group("lines"))):
            new = "| %s | `%s/` |%s| %d | %d |" % (m.group("num"), m.group("folder"), m.group("mid"), files, lines)
            stale.append("%s/: %s files, %s lines in ARCHITECTURE.md; %d files, %d lines in the tree" % (
                m.group("folder"), m.group("files"), m.group("lines"), files, lines))
            text[i] = new
    if rows == 0:
        print("architecture-counts: no layer rows found in %s" % path)
        return 1
    for s in stale:
        print(s)
    if check:
        if stale:
            print("run scripts/architecture-counts.py to update the table")
        return 1 if stale else 0
    if stale:
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(text))
        os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
