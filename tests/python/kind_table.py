"""What the table checks share (layer_table.py, optimizer_table.py): load
one module of the Python package alone, read the C table its printer
writes, check each kind, and find the classes no C kind has."""
import importlib.util
import json
import os
import subprocess


def load_module(root, filename):
    """python/pasco/FILENAME alone (no numpy, no library): imported as
    pasco.<name> from a bare package (pasco/__init__.py not run), so its
    relative imports of other plain modules (layers.py's of
    _layers_prep.py) work."""
    import sys
    import types
    pkg = types.ModuleType("pasco")
    pkg.__path__ = [os.path.join(root, "python", "pasco")]
    sys.modules["pasco"] = pkg
    return importlib.import_module("pasco." + filename[:-3])


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
