#!/usr/bin/env python3
"""The Python optimizer classes against the C optimizer table.

Usage: optimizer_table.py OPTIMIZER_TABLE_PROGRAM SOURCE_ROOT

OPTIMIZER_TABLE_PROGRAM (tests/model/optimizer_table.c) prints the table
(base/optimizers/, one per line of include/pasco/optimizer_kinds.h): per
kind its name, Keras's class name, its config fields and the config the
library writes for the kind's defaults. Every C kind must have a class in pasco.optimizers (and every class a kind) with
the same class name, in __all__, that get() returns for the kind's name,
with one constructor argument per config field (in Keras's order, which
is not the config's), whose defaults give the config the C library writes for its own defaults.
optimizers.py is loaded alone (no numpy, no library).
"""
import inspect
import json
import sys

import kind_table


def same(py, c):
    if py is None or c is None:  # a common field not set (clipnorm)
        return py is c
    if isinstance(py, bool) or isinstance(c, bool):
        return py is c
    if isinstance(py, (int, float)) and isinstance(c, (int, float)):
        return float(py) == float(c)
    return False


def check_kind(mod, kind, problems):
    name = kind["class_name"]
    cls = getattr(mod, name, None)
    if not (isinstance(cls, type) and issubclass(cls, mod.Optimizer)) or \
            name not in mod.__all__:
        problems.append(f"{name}: no class pasco.optimizers.{name} in "
                        f"__all__ (python/pasco/optimizers.py)")
        return
    if cls.class_name != name:
        problems.append(f"{name}: class_name is {cls.class_name!r}")
    try:
        got = type(mod.get(kind["name"]))
    except ValueError as e:
        problems.append(f"{name}: get({kind['name']!r}) refused: {e}")
    else:
        if got is not cls:
            problems.append(f"{name}: get({kind['name']!r}) is "
                            f"{got.__name__}")
    params = [p for p in inspect.signature(cls.__init__).parameters
              if p != "self"]
    keys = kind["keys"]
    for k in keys:
        if k not in params:
            problems.append(f"{name}: config field {k!r} has no "
                            f"constructor argument")
    for p in params:
        if p not in keys:
            problems.append(f"{name}: argument {p!r} is no config field of "
                            f"the C optimizer ({', '.join(keys)})")
    if set(params) != set(keys):
        return
    config = json.loads(json.dumps(cls().get_config()))
    if config.get("class_name") != name:
        problems.append(f"{name}: get_config names {config.get('class_name')!r}")
    written = config.get("config", {})
    for k in keys:
        c = kind["defaults"][k]
        if k not in written:
            problems.append(f"{name}: {k!r} left out of the config; the C "
                            f"default is {json.dumps(c)}")
        elif not same(written[k], c):
            problems.append(f"{name}: {k!r} defaults to "
                            f"{json.dumps(written[k])}; the C default is "
                            f"{json.dumps(c)}")


def main(program, root):
    mod = kind_table.load_module(root, "optimizers.py")
    return kind_table.run("optimizer_table", program, mod, mod.Optimizer,
                          "include/pasco/optimizer_kinds.h", check_kind)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
