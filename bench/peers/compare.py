#!/usr/bin/env python3
"""Pasco / PyTorch RPC ratios from the figures of one bench/run.

    python3 bench/peers/compare.py FIGURES

FIGURES holds one JSON figure per line (bench/run's collection). Prints a
table and one JSON line per pair (bench "vs-torch": value = Pasco's figure,
baseline = PyTorch's, ratio = Pasco / PyTorch).
"""
import json
import sys

# (what, Pasco bench, Pasco figure, PyTorch figure)
PAIRS = [
    ("no-op calls, synchronous", "dispatch",
     "closures, 1 worker, window 1, unbatched", "no-op rpc, sync"),
    ("no-op calls, pipelined", "dispatch",
     "closures, 1 worker, window 4, unbatched", "no-op rpc, 32 in flight"),
    ("no-op calls, defaults (batching)", "dispatch",
     "closures, 1 worker, defaults (batching)", "no-op rpc, 32 in flight"),
    ("pull 4 KB", "ps_dense", "pull 4K, 1 client", "pull 4 KB"),
    ("push 4 KB", "ps_dense", "push 4K, 1 client", "push 4 KB"),
    ("pull 256 KB", "ps_dense", "pull 256K, 1 client", "pull 256 KB"),
    ("push 256 KB", "ps_dense", "push 256K, 1 client", "push 256 KB"),
    ("pull 4 MB", "ps_dense", "pull 4096K, 1 client", "pull 4 MB"),
    ("push 4 MB", "ps_dense", "push 4096K, 1 client", "push 4 MB"),
    ("pull 64 MB", "ps_dense", "pull 65536K, 1 client", "pull 64 MB"),
    ("push 64 MB", "ps_dense", "push 65536K, 1 client", "push 64 MB"),
    ("train MLP 784-256-10, 2 workers", "train",
     "MLP 784-256-10, 2 workers", "train MLP 784-256-10, 2 workers"),
    ("train softmax 784-10, 2 workers", "train",
     "softmax 784-10, 2 workers", "train softmax 784-10, 2 workers"),
]


def main():
    figs = {}
    with open(sys.argv[1]) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                d = json.loads(line)
                figs[(d["bench"], d["figure"])] = d
    pairs = list(PAIRS)
    # bench/scale's training figures against the peer's at the same N
    for model in ("MLP 784-256-10", "softmax 784-10"):
        for n in range(1, 65):
            w = f"{n} worker{'s' if n > 1 else ''}"
            pairs.append((f"train {model}, {w} (scale)", "scale",
                          f"{model} steps, 1 ps, {w}", f"train {model}, {w}"))
    rows = []
    for what, bench, ours, theirs in pairs:
        a, b = figs.get((bench, ours)), figs.get(("peer-torch", theirs))
        if a is None or b is None or b["value"] <= 0:
            continue
        rows.append((what, a["value"], b["value"], a["unit"]))
    print("Pasco vs PyTorch RPC, same machine, same run")
    print(f"{'figure':<36} {'pasco':>12} {'pytorch':>12} {'ratio':>8}")
    for what, a, b, unit in rows:
        print(f"{what:<36} {a:12.3f} {b:12.3f} {a / b:7.2f}x  ({unit})")
    for what, a, b, unit in rows:
        print(json.dumps({"bench": "vs-torch", "figure": what, "value": a,
                          "unit": unit, "baseline": b, "ratio": round(a / b, 4)}))


if __name__ == "__main__":
    main()
