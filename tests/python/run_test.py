"""Runs one Python-package test (suite 'python') against this build:
    run_test.py CASE PASCO_EXE MAKE_TABLE_EXE LIBPASCO SOURCE_ROOT [SANITIZE]
CASE: train_csv (make_table's data, 2 ps and 2 workers, every task
`python3 train_csv.py`), errors (bad arguments and the library's errors
as exceptions, on a real cluster). Exit 77 (skipped) with the reason when
numpy is missing."""

import os
import subprocess
import sys
import tempfile

try:
    import numpy  # noqa: F401
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable} "
          f"(apt-get install python3-numpy)")
    sys.exit(77)

case, pasco, make_table, libpasco, root = sys.argv[1:6]
sanitize = sys.argv[6] if len(sys.argv) > 6 else "none"
if sanitize != "none":
    print(f"SKIP: this build uses -fsanitize={sanitize}: python3 cannot "
          f"load its libpasco (the sanitizer runtime must be the first "
          f"library); the python suite runs in the plain build")
    sys.exit(77)
here = os.path.join(root, "tests", "python")
env = dict(os.environ, PYTHONPATH=os.path.join(root, "python"),
           PASCO_LIBRARY=libpasco, PYTHONUNBUFFERED="1")


def launch(script, *args, timeout=150):
    cmd = [pasco, "launch", "--ps", "2", "--workers", "2", "--",
           sys.executable, os.path.join(here, script), *args]
    print("+", " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    print(p.stdout, flush=True)
    return p


with tempfile.TemporaryDirectory(prefix="pasco-py-") as d:
    if case == "train_csv":
        subprocess.run([make_table, d], check=True)
        p = launch("train_csv.py", d)
        ok = p.returncode == 0 and "train_csv: OK" in p.stdout
    elif case == "errors":
        p = launch("errors.py", d)
        ok = p.returncode == 0 and "errors: OK" in p.stdout
    else:
        sys.exit(f"unknown case {case}")
print("PASS" if ok else f"FAIL (exit status {p.returncode})")
sys.exit(0 if ok else 1)
