#!/usr/bin/env python3
"""The library's layering, checked from the sources.

The build enforces it too (each layer's meson library has only the include
paths it may use); this test keeps the rule written down and catches a
meson.build that widens a path. Each layer includes only public headers and
the internal headers of the layers below it; the protobuf-c code generated
from schemas/ is included by the wire codec (wire.proto) and the Example
parser (example.proto) alone; header names are unique (headers are
included by file name); no library file is over 800 lines.
Usage: test_layers.py SOURCE_ROOT
"""
import os
import re
import sys

# layer -> the layers it may include from (itself included)
ALLOWED = {
    "base": {"base"},
    "net": {"net", "base"},
    "client": {"client", "net", "base"},
    "kit": {"kit", "client", "net", "base"},
    "model": {"model", "kit", "client", "net", "base"},
    "ps": {"ps", "net", "base"},
    "worker": {"worker", "model", "kit", "client", "net", "base"},
    "coordinator": {"coordinator", "model", "client", "net", "base"},
    "node": {"node", "coordinator", "worker", "ps", "model", "kit", "client",
             "net", "base"},
}
GENERATED = {
    "wire.pb-c.h": {"net/wire.c", "net/wire_build.c"},
    "example.pb-c.h": {"kit/data/example.c"},
}
MAX_LINES = 800


def sources(root):
    for layer in ALLOWED:
        for d, _, files in os.walk(os.path.join(root, layer)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    path = os.path.join(d, f)
                    yield layer, os.path.relpath(path, root)


def main(root):
    problems = []
    owner = {}
    files = list(sources(root))
    for layer, rel in files:
        name = os.path.basename(rel)
        if rel.endswith(".h"):
            if name in owner:
                problems.append(f"header name {name} is used twice "
                                f"({owner[name][1]}, {rel})")
            owner[name] = (layer, rel)
    include = re.compile(r'^#include "([^"]+)"', re.M)
    for layer, rel in files:
        text = open(os.path.join(root, rel), encoding="utf-8").read()
        lines = text.count("\n")
        if lines > MAX_LINES:
            problems.append(f"{rel} has {lines} lines (at most {MAX_LINES})")
        for h in include.findall(text):
            if h.startswith("pasco/") or h == "pasco.h":
                continue
            # a path beside the file ("optimizers/opt_kernel.h" from
            # base/): the header of that name, if it is that file
            near = os.path.normpath(os.path.join(os.path.dirname(rel), h))
            if "/" in h and owner.get(os.path.basename(h), ("", ""))[1] \
                    == near:
                h = os.path.basename(h)
            if h in GENERATED:
                if rel not in GENERATED[h]:
                    problems.append(f"{rel} includes generated {h} (only "
                                    f"{', '.join(sorted(GENERATED[h]))})")
                continue
            if h not in owner:
                problems.append(f"{rel} includes {h}, which no layer holds")
            elif owner[h][0] not in ALLOWED[layer]:
                problems.append(
                    f"{rel} ({layer}) includes {h} of layer {owner[h][0]}; "
                    f"{layer} may use {', '.join(sorted(ALLOWED[layer]))}")
    for p in problems:
        print("test_layers:", p)
    if not problems:
        print(f"test_layers: {len(files)} library files, every include "
              f"within its layers, none over {MAX_LINES} lines")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
