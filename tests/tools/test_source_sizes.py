#!/usr/bin/env python3
"""No library source is over 800 lines (split a longer one by concern).

Checks every C file (.c, .h) of the checkout outside tests/ (the library's
layers, include/, bench/, fuzz/, tools/, examples/) and every Python file
under python/ (the pasco package), committed or not. Build directories
(any folder holding build.ninja or meson-private/), hidden folders
(.git, .deps), subprojects/ and node_modules/ are not sources and are
skipped. Each file over the limit is named with its line count (as wc -l
counts them, plus an unterminated last line).
Usage: test_source_sizes.py SOURCE_ROOT
"""
import os
import sys

MAX_LINES = 800
SKIPPED = {"subprojects", "node_modules", "__pycache__"}
# files that must be among those checked: a walk that finds none of them
# has skipped the sources themselves, and would pass on nothing
EXPECTED = ("include/pasco.h", "ps/ps_server.c", "bench/model.c",
            "python/pasco/layers.py", "python/pasco/models.py")


def is_build_dir(path):
    return os.path.exists(os.path.join(path, "build.ninja")) or \
        os.path.isdir(os.path.join(path, "meson-private"))


def sources(root):
    """The checked files, as paths relative to root, sorted."""
    found = []
    for d, dirs, files in os.walk(root):
        rel_d = os.path.relpath(d, root)
        dirs[:] = sorted(
            x for x in dirs
            if not x.startswith(".") and x not in SKIPPED and
            not (rel_d == "." and x == "tests") and
            not is_build_dir(os.path.join(d, x)))
        top = rel_d.split(os.sep)[0]
        for f in files:
            if f.endswith((".c", ".h")) or (top == "python" and
                                            f.endswith(".py")):
                found.append(os.path.normpath(os.path.join(rel_d, f)))
    return sorted(found)


def line_count(path):
    with open(path, "rb") as f:
        data = f.read()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n")
                                else 0)


def main(root):
    files = sources(root)
    problems = [f"{e}: not found among the checked files (is {root} the "
                f"source root?)" for e in EXPECTED if e not in files]
    sizes = {rel: line_count(os.path.join(root, rel)) for rel in files}
    for rel, n in sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0])):
        if n > MAX_LINES:
            problems.append(f"{rel} has {n} lines (at most {MAX_LINES}: "
                            f"split it by concern)")
    for p in problems:
        print("source_sizes:", p)
    if not problems:
        biggest = max(sizes, key=lambda r: (sizes[r], r))
        print(f"source_sizes: {len(files)} library sources, none over "
              f"{MAX_LINES} lines (the longest: {biggest}, "
              f"{sizes[biggest]})")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
