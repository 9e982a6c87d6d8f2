#!/usr/bin/env python3
"""Pasco's Python names, argument names and defaults against Keras 3's.

Usage: keras_signatures.py SOURCE_ROOT [B_SANITIZE]

Skips (77), saying why, in a sanitized build: python3 cannot load a
libpasco built with -fsanitize.

Each tests/python/keras3/*.sig file is a table of Keras 3 signatures, one
per line, written as a call: the object's path under ``pasco`` (Keras's
``keras.`` dropped), its required arguments as bare names, and its
arguments with defaults as ``name=default``; a bare ``*`` starts the
keyword-only ones. ``#`` starts a comment. Example::

    layers.BatchNormalization(axis=-1, momentum=0.99, epsilon=0.001)
    losses.Huber(delta=1.0, reduction="sum_over_batch_size", name="huber_loss")

For each line the object must exist in pasco, take every named argument
(Pasco may take more), require exactly the bare ones, give the listed
defaults, and take the arguments before ``*`` positionally in the same
order. The defaults are Keras 3's (keras/src, version 3.x); a file's
header names what it covers.
"""
import ast
import glob
import importlib
import inspect
import os
import sys

P = inspect.Parameter


def resolve(path):
    """pasco.<path>, importing pasco.<module> for each prefix."""
    parts = path.split(".")
    obj = importlib.import_module("pasco")
    for i, part in enumerate(parts):
        if not hasattr(obj, part):
            try:
                obj = importlib.import_module(
                    "pasco." + ".".join(parts[:i + 1]))
                continue
            except ImportError:
                raise LookupError(f"pasco.{path}: pasco has no "
                                  f"{'.'.join(parts[:i + 1])}")
        obj = getattr(obj, part)
    return obj


def dotted(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return dotted(node.value) + "." + node.attr
    raise ValueError("not a dotted name")


def parse(line):
    """(path, [(name, required, default, positional)]) of a table line."""
    text = line.replace("(*,", "(_star_,").replace(", *,", ", _star_,") \
               .replace(", *)", ")").replace("(*)", "()")
    call = ast.parse(text, mode="eval").body
    if not isinstance(call, ast.Call):
        raise ValueError("expected a call")
    args, positional = [], True
    for a in call.args:
        if not isinstance(a, ast.Name):
            raise ValueError("a required argument is a bare name")
        if a.id == "_star_":
            positional = False
            continue
        args.append((a.id, True, None, positional))
    for kw in call.keywords:
        args.append((kw.arg, False, ast.literal_eval(kw.value), positional))
    # keywords follow the bare names in a call; a "*" among the bare names
    # makes every keyword after it keyword-only
    star = [a.id for a in call.args].index("_star_") \
        if "_star_" in [getattr(a, "id", None) for a in call.args] else None
    if star is not None and star == len(call.args) - 1:
        args = [(n, r, d, p if r else False) for n, r, d, p in args]
    return dotted(call.func), args


def same(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def check(path, args):
    """The ways pasco.<path> differs from its table line."""
    obj = resolve(path)
    sig = inspect.signature(obj)
    params = sig.parameters
    bad = []
    order = []
    for name, required, default, positional in args:
        p = params.get(name)
        if p is None:
            if not any(q.kind == P.VAR_KEYWORD for q in params.values()) \
                    or required:
                bad.append(f"has no argument {name!r}")
            continue
        if required and p.default is not P.empty:
            bad.append(f"{name!r} has a default ({p.default!r}); Keras "
                       f"requires it")
        if not required:
            if p.default is P.empty:
                bad.append(f"{name!r} is required; Keras's default is "
                           f"{default!r}")
            elif not same(p.default, default):
                bad.append(f"{name!r} defaults to {p.default!r}; Keras's "
                           f"is {default!r}")
        if positional:
            if p.kind == P.KEYWORD_ONLY:
                bad.append(f"{name!r} is keyword-only; Keras takes it "
                           f"positionally")
            else:
                order.append(name)
    names = [n for n, q in params.items()
             if q.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    at = [names.index(n) for n in order if n in names]
    if at != sorted(at):
        bad.append(f"positional order {order} differs from pasco's "
                   f"{[n for n in names if n in order]}")
    return bad


def main():
    root = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] not in ("", "none"):
        print(f"SKIP: this build uses -fsanitize={sys.argv[2]} (python3 "
              f"cannot load its libpasco)")
        return 77
    sys.path.insert(0, os.path.join(root, "python"))
    files = sorted(glob.glob(os.path.join(root, "tests", "python",
                                          "keras3", "*.sig")))
    if not files:
        print("no tests/python/keras3/*.sig tables")
        return 1
    failures, n = 0, 0
    for f in files:
        for k, line in enumerate(open(f), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            n += 1
            where = f"{os.path.basename(f)}:{k}"
            try:
                path, args = parse(line)
                bad = check(path, args)
            except (LookupError, ValueError, SyntaxError, TypeError) as e:
                bad = [str(e)]
                path = line
            for b in bad:
                print(f"{where}: pasco.{path}: {b}")
                failures += 1
    print(f"{n} signatures, {failures} differences")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
