#!/usr/bin/env python3
"""A Python chief against a C chief: examples/mlp_csv's MLP fit on
examples/make_table's DIR/train.csv with 2 ps and 2 workers (C, the same
build), the chief build/bench/python_chief (C) or
bench/python_chief_fit.py (Python), runs alternating C, Python, C, ...;
best of ROUNDS each. The C chief reads the very dataset the Python one
declares (its "pasco.files:{spec}" name, pasco.data.csv's).

    bench/python_chief.py [--steps N] [--rounds R]   (from the checkout)

Prints a table and the bench/run JSON figures (bench "python"): fit
steps/s of each chief (the Python one's ratio to the C one's), and the
chief process's CPU per step (CLOCK_PROCESS_CPUTIME_ID over fit / steps).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.path.join(root, "build")
env = dict(os.environ, PYTHONPATH=os.path.join(root, "python"),
           PASCO_LIBRARY=os.path.join(build, "libpasco.so"),
           PYTHONUNBUFFERED="1")
sys.path.insert(0, os.path.join(root, "python"))
os.environ.setdefault("PASCO_LIBRARY", env["PASCO_LIBRARY"])
import pasco  # noqa: E402  (the dataset name only: no cluster here)

LINE = re.compile(r"python_chief: (c|python) (\d+) steps ([0-9.]+) s "
                  r"([0-9.]+) s")


def run(chief, steps):
    cmd = [os.path.join(build, "pasco"), "launch", "--ps", "2",
           "--workers", "2", "--", *chief, str(steps)]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    m = LINE.search(p.stdout)
    if p.returncode != 0 or m is None:
        sys.stderr.write(p.stdout)
        sys.exit(f"python_chief: {' '.join(cmd)} failed "
                 f"(exit status {p.returncode})")
    n, wall, cpu = int(m.group(2)), float(m.group(3)), float(m.group(4))
    return n / wall, cpu / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="pasco-bench-py-") as d:
        subprocess.run([os.path.join(build, "examples", "make_table"), d],
                       check=True, stdout=subprocess.DEVNULL)
        name = pasco.data.csv(f"{d}/train.csv", label="label",
                              batch_size=32, shuffle=1000).name(-1)
        chiefs = {"c": [os.path.join(build, "bench", "python_chief"), name],
                  "python": [sys.executable,
                             os.path.join(root, "bench",
                                          "python_chief_fit.py"), d]}
        best = {}
        for _ in range(a.rounds):
            for k, chief in chiefs.items():  # alternating C, Python
                rate, cpu = run(chief, a.steps)
                if k not in best or rate > best[k][0]:
                    best[k] = (rate, cpu)
    (c_rate, c_cpu), (p_rate, p_cpu) = best["c"], best["python"]
    print(f"Python chief vs C chief: MLP 64-64-64-10 fit, 2 ps, 2 workers, "
          f"{a.steps} steps, best of {a.rounds} (alternating)")
    print(f"  {'C chief':16} {c_rate:8.0f} steps/s  chief CPU "
          f"{c_cpu * 1e6:6.0f} us/step")
    print(f"  {'Python chief':16} {p_rate:8.0f} steps/s  chief CPU "
          f"{p_cpu * 1e6:6.0f} us/step  {p_rate / c_rate:.2f}x the C chief")
    figs = [("MLP fit, C chief", c_rate, "steps/s", 0),
            ("MLP fit, Python chief", p_rate, "steps/s", c_rate),
            ("chief CPU per step, C chief", c_cpu * 1e6, "us/step", 0),
            ("chief CPU per step, Python chief", p_cpu * 1e6, "us/step",
             c_cpu * 1e6)]
    for fig, v, unit, base in figs:
        o = {"bench": "python", "figure": fig, "value": round(v, 6),
             "unit": unit}
        if base > 0:
            o.update(baseline=round(base, 6), ratio=round(v / base, 4))
        print(json.dumps(o))


if __name__ == "__main__":
    main()
