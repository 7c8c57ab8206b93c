#!/usr/bin/env python3
"""The layering check (ctest "layers"): every #include "..." in src/ and guest-init/ must name a
header of the including file's own layer or of an earlier one. The layers, in order:

    util, proto, memory, devices, vmm, gvisor, jail, store, cred, egress, image, core, oci, mcp,
    monitor, cli

guest-init/ (the static PID 1 agent) may use util and proto only. src/main.cpp is the top. Quoted
includes in src/ must spell the layer folder ("store/state.h"); guest-init's own headers are
included by bare name. Prints each offending line as FILE:LINE: TEXT: WHY and exits 1 if any.

Usage: check_layers.py [SOURCE_DIR]   (default: the repository holding this script)
"""
import os
import re
import sys

LAYERS = ["util", "proto", "memory", "devices", "vmm", "gvisor", "jail", "store", "cred", "egress",
          "image", "core", "oci", "mcp", "monitor", "cli"]
RANK = {name: i for i, name in enumerate(LAYERS)}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def allowed(layer_of_file, target):
    """'' if `target` may be included from a file of `layer_of_file`, else why not."""
    top = target.split("/", 1)[0] if "/" in target else None
    if layer_of_file == "guest-init":
        if top is None:
            return ""  # guest-init's own header
        if top in ("util", "proto"):
            return ""
        return "guest-init may include only util/ and proto/ headers and its own"
    if top is None or top not in RANK:
        return 'includes in src/ name a layer folder ("util/fd.h"); %r is none of %s' % (
            target, ", ".join(LAYERS))
    if layer_of_file == "main":
        return ""
    if RANK[top] > RANK[layer_of_file]:
        return "%s (layer %d) may not include %s (layer %d): layers depend one way, %s" % (
            layer_of_file, RANK[layer_of_file] + 1, top, RANK[top] + 1, " < ".join(LAYERS))
    return ""


def layer_of(rel):
    parts = rel.split("/")
    if parts[0] == "guest-init":
        return "guest-init"
    if parts[0] == "src":
        if len(parts) == 2:
            return "main" if parts[1] == "main.cpp" else None
        return parts[1] if parts[1] in RANK else None
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = []
    checked = 0
    for top in ("src", "guest-init"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                layer = layer_of(rel)
                if layer is None:
                    problems.append("%s:1: a source file outside every layer folder (%s)" % (
                        rel, ", ".join(LAYERS)))
                    continue
                checked += 1
                with open(path, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        why = allowed(layer, m.group(1))
                        if why:
                            problems.append("%s:%d: %s: %s" % (rel, n, line.strip(), why))
    for p in problems:
        print(p)
    if problems:
        print("layers: %d include(s) against the layer order; see ARCHITECTURE.md" % len(problems))
        return 1
    print("layers: %d files follow %s" % (checked, " < ".join(LAYERS)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
