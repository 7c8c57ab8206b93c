#!/usr/bin/env python3
"""The layering check (ctest "layers"). The layers and what each depends on are read from one
source, CMakeLists.txt's space_layer(space_<folder> src/<folder> <libraries>...) calls: every
folder under src/ is a layer and a static library, and the space_<layer> libraries it names are
its dependencies. Then:

  - every #include "..." in src/<layer> must name a header of that layer or of a layer it
    depends on, directly or through others (CMake links them transitively);
  - every layer it names directly must be included by one of its files (else the link is unused:
    drop it from CMakeLists.txt);
  - the graph has no cycle, and its order (each layer after all it depends on) is the one that
    ARCHITECTURE.md's table lists;
  - guest-init/ (the static PID 1 agent) may use util and proto only; src/main.cpp is the top.

Quoted includes in src/ must spell the layer folder ("store/state.h"); guest-init's own headers
are included by bare name. Prints each offending line as FILE:LINE: TEXT: WHY and exits 1 if any.

Usage: check_layers.py [SOURCE_DIR]   (default: the repository holding this script)
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
LAYER_CALL = re.compile(r'space_layer\(\s*space_(\w+)\s+src/(\w+)([^)]*)\)')
TABLE_ROW = re.compile(r"^\| (\d+) \| `(\w+)/` \|")


def read_graph(root):
    """{layer: [layers it names]} from CMakeLists.txt, in the order of the calls."""
    with open(os.path.join(root, "CMakeLists.txt"), encoding="utf-8") as f:
        text = f.read()
    graph = {}
    for lib, folder, rest in LAYER_CALL.findall(text):
        if lib != folder:
            raise SystemExit("layers: space_layer(space_%s src/%s): the library must be named "
                             "after its folder" % (lib, folder))
        graph[folder] = [t[len("space_"):] for t in rest.split() if t.startswith("space_")]
    for layer, deps in graph.items():  # space_seccomp, space_openssl...: not layers
        graph[layer] = [d for d in deps if d in graph]
    return graph


def order_of(graph):
    """The layers, each after all it depends on (a cycle is an error)."""
    out, state = [], {}

    def visit(layer, path):
        if state.get(layer) == "done":
            return
        if state.get(layer) == "visiting":
            raise SystemExit("layers: a cycle in CMakeLists.txt: %s" % " -> ".join(path + [layer]))
        state[layer] = "visiting"
        for d in graph[layer]:
            visit(d, path + [layer])
        state[layer] = "done"
        out.append(layer)

    for layer in graph:
        visit(layer, [])
    return out


def closure(graph, layer):
    seen, todo = set(), list(graph[layer])
    while todo:
        d = todo.pop()
        if d not in seen:
            seen.add(d)
            todo.extend(graph[d])
    return seen


def allowed(graph, reach, layer_of_file, target):
    """'' if `target` may be included from a file of `layer_of_file`, else why not."""
    top = target.split("/", 1)[0] if "/" in target else None
    if layer_of_file == "guest-init":
        if top is None or top in ("util", "proto"):
            return ""  # guest-init's own header, or its two layers
        return "guest-init may include only util/ and proto/ headers and its own"
    if top is None or top not in graph:
        return 'includes in src/ name a layer folder ("util/fd.h"); %r is none of %s' % (
            target, ", ".join(graph))
    if layer_of_file == "main" or top == layer_of_file or top in reach[layer_of_file]:
        return ""
    return ("%s does not depend on %s in CMakeLists.txt (its space_layer call names %s): "
            "layers depend one way" % (layer_of_file, top, ", ".join(graph[layer_of_file]) or
                                       "none"))


def layer_of(graph, rel):
    parts = rel.split("/")
    if parts[0] == "guest-init":
        return "guest-init"
    if parts[0] == "src":
        if len(parts) == 2:
            return "main" if parts[1] == "main.cpp" else None
        return parts[1] if parts[1] in graph else None
    return None


def table_order(root):
    """The folders of ARCHITECTURE.md's layer table, in its order."""
    rows = []
    with open(os.path.join(root, "ARCHITECTURE.md"), encoding="utf-8") as f:
        for line in f:
            m = TABLE_ROW.match(line)
            if m:
                rows.append(m.group(2))
    return rows


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    graph = read_graph(root)
    order = order_of(graph)
    reach = {layer: closure(graph, layer) for layer in graph}
    problems = []
    used = {layer: set() for layer in graph}  # layers each one's files include
    checked = 0
    for top in ("src", "guest-init"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith((".h", ".cpp")):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                layer = layer_of(graph, rel)
                if layer is None:
                    problems.append("%s:1: a source file outside every layer folder (%s)" % (
                        rel, ", ".join(graph)))
                    continue
                checked += 1
                with open(path, encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        why = allowed(graph, reach, layer, m.group(1))
                        if why:
                            problems.append("%s:%d: %s: %s" % (rel, n, line.strip(), why))
                        elif layer in used and "/" in m.group(1):
                            used[layer].add(m.group(1).split("/", 1)[0])
    for layer, deps in graph.items():
        for d in deps:
            if d not in used[layer]:
                problems.append("CMakeLists.txt: space_layer(space_%s ...) names space_%s, which no "
                                "file of src/%s includes: drop it" % (layer, d, layer))
    table = table_order(root)
    if table and [t for t in table if t in graph] != [l for l in order if l in table]:
        # The table lists the layers in an order CMake's graph allows?
        pos = {l: i for i, l in enumerate(table)}
        for layer in graph:
            for d in graph[layer]:
                if layer in pos and d in pos and pos[d] > pos[layer]:
                    problems.append("ARCHITECTURE.md: the layer table lists %s before %s, which it "
                                    "depends on" % (layer, d))
    for p in problems:
        print(p)
    if problems:
        print("layers: %d problem(s) with the layers CMakeLists.txt declares; see ARCHITECTURE.md"
              % len(problems))
        return 1
    print("layers: %d files follow the graph CMakeLists.txt declares (%s)" % (
        checked, " < ".join(order)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
