#!/usr/bin/env python3
"""The Python layer classes against the C layer table (model/layers/).

Usage: layer_table.py LAYER_TABLE_PROGRAM SOURCE_ROOT

LAYER_TABLE_PROGRAM (tests/model/layer_table.c) prints the table: per kind
its Keras class name, automatic-name prefix, config fields, the fields
Keras requires, and the config the library writes for the kind's defaults.
Every C kind must have a class in pasco.layers (and every class a kind)
with the same class name and automatic name, one constructor argument per
config field (``_config_args`` names those called otherwise), required
exactly where Keras requires them, and defaults that give the config the
C library writes for its own defaults. A class serialized as another
kind's config (Lambda: a Custom layer, traced) names that kind in
``serialized_as`` and is checked as being that kind's. Runs without
numpy: layers.py is loaded with the modules it imports, not the
package.
"""
import inspect
import json
import sys

import kind_table

# Keras's own constructor arguments that are no config field
PYTHON_ONLY = {"self", "name", "input_shape", "input_length", "dtype"}
# a value for each required field, to construct a layer
EXAMPLES = {"units": 1, "input_dim": 1, "output_dim": 1, "rate": 0.5,
            "activation": "relu", "target_shape": [1], "axes": 1,
            "num_bins": 1, "num_tokens": 1, "bin_boundaries": [0.0]}


def same(py, c):
    """py (a Python config value) means c (the C writer's): an initializer
    or a regularizer of the same class whose given fields agree."""
    if isinstance(py, dict) and isinstance(c, dict) and "class_name" in py:
        return (py["class_name"] == c.get("class_name") and
                all(same(v, c.get("config", {}).get(k))
                    for k, v in py.get("config", {}).items()))
    if isinstance(py, bool) or isinstance(c, bool):
        return py is c
    if isinstance(py, (int, float)) and isinstance(c, (int, float)):
        return float(py) == float(c)
    return py == c


def check_kind(mod, kind, problems):
    name = kind["class_name"]
    cls = getattr(mod, name, None)
    if not (isinstance(cls, type) and issubclass(cls, mod.Layer)) or \
            name not in mod.__all__:
        problems.append(f"{name}: no class pasco.layers.{name} in __all__ "
                        f"(python/pasco/layers.py)")
        return
    if cls.class_name != name:
        problems.append(f"{name}: class_name is {cls.class_name!r}")
    keys = set(kind["keys"]) - {"name"}
    params = inspect.signature(cls.__init__).parameters
    aliases = getattr(cls, "_config_args", {})
    fields = {aliases.get(p, p): p for p in params
              if p not in PYTHON_ONLY}
    for k in sorted(keys - set(fields)):
        problems.append(f"{name}: config field {k!r} has no constructor "
                        f"argument")
    for k in sorted(set(fields) - keys):
        problems.append(f"{name}: argument {fields[k]!r} is no config field "
                        f"of the C layer ({', '.join(sorted(keys))})")
    for k in sorted(keys & set(fields)):
        required = params[fields[k]].default is inspect.Parameter.empty
        if required and k not in kind["args"]:
            problems.append(f"{name}: {fields[k]!r} is required; the C "
                            f"layer has a default")
        if k in kind["args"] and not required and \
                params[fields[k]].default is not None:
            problems.append(f"{name}: {fields[k]!r} has a default; Keras "
                            f"requires it")
    missing = [a for a in kind["args"] if a not in EXAMPLES]
    if missing:
        problems.append(f"{name}: no example value for {missing} in "
                        f"EXAMPLES (tests/python/layer_table.py)")
        return
    mod.reset_names()
    layer = cls(**{fields[a]: EXAMPLES[a] for a in kind["args"]
                   if a in fields})
    if layer.name != kind["prefix"]:
        problems.append(f"{name}: named {layer.name!r} automatically; the "
                        f"C library names it {kind['prefix']!r}")
    config = json.loads(json.dumps(layer.get_config()))
    for k in sorted(keys - set(kind["args"])):
        c = kind["defaults"].get(k)
        if k not in config:
            if c is not None:
                problems.append(f"{name}: {k!r} left out of the config; "
                                f"the C default is {json.dumps(c)}")
        elif not same(config[k], c):
            problems.append(f"{name}: {k!r} defaults to "
                            f"{json.dumps(config[k])}; the C default is "
                            f"{json.dumps(c)}")


def unlisted_files(root):
    """The files of model/layers/ that hold a kind's descriptor but have no
    line in include/pasco/layer_kinds.h: the build would not compile
    them, and the kind would be missing without a word."""
    import os
    import re
    with open(os.path.join(root, "include/pasco/layer_kinds.h")) as f:
        listed = set(re.findall(r"PASCO_LAYER_KIND\(\s*\w+\s*,\s*(\w+)\s*\)",
                                f.read()))
    d = os.path.join(root, "model/layers")
    return sorted(f for f in os.listdir(d)
                  if f.endswith(".c") and f != "table.c" and
                  f[:-2] not in listed)


def load_layers(root):
    """pasco.layers with the modules it imports (_layers_merge.py, ...)
    but not the package's __init__ (numpy, the library): an empty
    package 'pasco' over python/pasco."""
    import importlib
    import os
    import types
    pkg = types.ModuleType("pasco")
    pkg.__path__ = [os.path.join(root, "python", "pasco")]
    sys.modules["pasco"] = pkg
    return importlib.import_module("pasco.layers")


def main(program, root):
    unlisted = unlisted_files(root)
    for f in unlisted:
        print(f"layer_table: model/layers/{f} has no line in "
              f"include/pasco/layer_kinds.h, so it is not built "
              f"(PASCO_LAYER_KIND(NAME, {f[:-2]}))")
    mod = load_layers(root)
    rv = kind_table.run("layer_table", program, mod, mod.Layer,
                        "model/layers/table.c", check_kind)
    return rv or (1 if unlisted else 0)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
