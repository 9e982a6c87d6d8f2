#!/usr/bin/env python3
"""The library zeroes its allocations with pasci_calloc, never calloc.

glibc 2.36's calloc takes the heap's lock for every block, however small,
where malloc first looks in the thread's own cache; pasci_calloc
(base/util.h) is malloc and memset up to 1 KB and calloc past that. A bare
calloc( in a library layer's C file (base, net, client, worker, ps,
coordinator, model, node, kit) is named with its file and line. base/util.h
itself, which calls calloc for big blocks, is the exception.
Usage: test_zeroed_allocs.py SOURCE_ROOT
"""
import os
import re
import sys

from test_source_sizes import sources

LAYERS = ("base", "net", "client", "worker", "ps", "coordinator", "model",
          "node", "kit")
ALLOWED = {os.path.join("base", "util.h")}
BARE = re.compile(r"(^|[^A-Za-z0-9_])calloc\(")


def main(root):
    files = [f for f in sources(root)
             if f.split(os.sep)[0] in LAYERS and f not in ALLOWED]
    if not any(f == os.path.join("ps", "store.c") for f in files):
        print(f"ps/store.c is not among the checked files: is {root} the "
              "source root?")
        return 1
    found = []
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                if BARE.search(line):
                    found.append(f"{rel}:{i}: {line.strip()}")
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} bare calloc( in the library: use pasci_calloc "
              "(base/util.h), which takes no heap lock for small blocks")
        return 1
    print(f"{len(files)} library files, no bare calloc")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
