"""What the table checks share (layer_table.py, optimizer_table.py): load
one module of the Python package alone, read the C table its printer
writes, check each kind, and find the classes no C kind has."""
import importlib.util
import json
import os
import subprocess


def load_module(root, filename):
    """python/pasco/FILENAME without the package's __init__ (no numpy, no
    library): as pasco.<name> of an empty package over python/pasco, so
    that its relative imports (pasco.layers' of its kinds' modules)
    load the files they name."""
    import sys
    import types
    d = os.path.join(root, "python", "pasco")
    if "pasco" not in sys.modules:
        pkg = types.ModuleType("pasco")
        pkg.__path__ = [d]
        sys.modules["pasco"] = pkg
    name = "pasco." + filename[:-3]
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(d, filename))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def run(what, program, mod, base, table_file, check_kind):
    """check_kind(mod, kind, problems) for every kind PROGRAM prints, and
    each subclass of BASE in mod.__all__ must have a C kind; prints the
    problems and returns main's status."""
    table = json.loads(subprocess.run([program], check=True,
                                      capture_output=True, text=True).stdout)
    problems = []
    for kind in table:
        check_kind(mod, kind, problems)
    c_names = {k["class_name"] for k in table}
    for n in mod.__all__:
        cls = getattr(mod, n)
        if isinstance(cls, type) and issubclass(cls, base) and \
                cls is not base and cls.class_name not in c_names:
            problems.append(f"{n}: no C {what.split('_')[0]} kind of class "
                            f"{cls.class_name!r} ({table_file})")
    for p in problems:
        print(f"{what}:", p)
    if not problems:
        print(f"{what}: {len(table)} kinds, each with its Python class "
              f"(fields and defaults agree)")
    return 1 if problems else 0
