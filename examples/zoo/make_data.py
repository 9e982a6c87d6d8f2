"""Synthetic data for the model zoo (examples/zoo/), deterministic:

    python3 examples/zoo/make_data.py DIR [--rows N]

DIR/clicks/: a click log of 8 categorical fields, each a string such as
"f3_v1234" drawn from a Zipf-like vocabulary, 3 dense features and a
label drawn from a known logit that is mostly pairwise interactions of
the fields (each value has a hidden 4-wide vector; each pair of fields
adds the dot product of its two values' vectors) and of a dense feature
with a field: a model that crosses fields (FM, cross layers, dot
interactions) beats a linear one. Written as tf.train.Example records
(train-0.tfrecord, train-1.tfrecord, eval.tfrecord) whose features are
f0..f7 (one bytes value each), fields (the 8 strings, for a linear part
over every field), dense (3 floats) and label (a float, 0 or 1).

DIR/pairs/: user/item interactions for the two-tower model: users and
items have hidden vectors; a user clicks an item with a probability that
grows with their dot product. Features user (the user id's string),
user_group (a coarse string of the user), item, item_category (strings),
and label (1: every row is a positive pair; the loss is in-batch
softmax).

Each directory also has data.npz: the same rows as strings and numbers,
in file order (train-0 then train-1, then eval), which the PyTorch
checks (tests/python/zoo_torch.py) read. The strings become keys by
pasco's stated hash (XXH64, pasco_hash_key) as pasco.data parses them.
"""

from __future__ import annotations

import os
import struct
import sys

import numpy as np

FIELDS = 8
VOCAB = (8, 12, 16, 24, 32, 48, 64, 100)
HIDDEN = 4
DENSE = 3


def _crc32c_table() -> list:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC = _crc32c_table()


def _crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    c = _crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def example(row: dict) -> bytes:
    """A tf.train.Example of {name: list of str | float | int}: strings
    as a bytes_list, floats as a float_list, ints as an int64_list."""
    feats = b""
    for name, values in row.items():
        if isinstance(values[0], str):
            body = b"".join(_field(1, v.encode()) for v in values)
            feature = _field(1, body)
        elif isinstance(values[0], float):
            feature = _field(2, _field(1, struct.pack(f"<{len(values)}f",
                                                      *values)))
        else:
            feature = _field(3, _field(1, b"".join(_varint(v)
                                                   for v in values)))
        feats += _field(1, _field(1, name.encode()) + _field(2, feature))
    return _field(1, feats)


def write_tfrecord(path: str, records: list) -> None:
    """TensorFlow's framing: length, its masked CRC-32C, data, its CRC."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        for r in records:
            n = struct.pack("<Q", len(r))
            f.write(n + struct.pack("<I", _masked(n)) + r +
                    struct.pack("<I", _masked(r)))
    os.replace(tmp, path)


def _zipf(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1) ** 1.05
    return rng.choice(n, size=size, p=p / p.sum())


def clicks(rows: int, seed: int = 32) -> dict:
    """The click rows: cat [rows, 8] strings, dense [rows, 3] f32, label
    [rows] int64 and the true probability p [rows]."""
    rng = np.random.default_rng(seed)
    idx = np.stack([_zipf(rng, v, rows) for v in VOCAB], axis=1)
    vec = [rng.normal(0, 0.8, (v, HIDDEN)) for v in VOCAB]
    bias = [rng.normal(0, 0.3, v) for v in VOCAB]
    dense = rng.normal(0, 1, (rows, DENSE)).astype(np.float32)
    logit = np.full(rows, -0.3)
    for i in range(FIELDS):
        logit += bias[i][idx[:, i]]
        for j in range(i + 1, FIELDS):
            logit += (vec[i][idx[:, i]] * vec[j][idx[:, j]]).sum(1) * 0.6
    logit += 0.4 * dense[:, 0] + dense[:, 1] * vec[0][idx[:, 0], 0]
    p = 1 / (1 + np.exp(-logit))
    label = (rng.random(rows) < p).astype(np.int64)
    cat = np.array([[f"f{i}_v{idx[r, i]}" for i in range(FIELDS)]
                    for r in range(rows)])
    return {"cat": cat, "dense": dense, "label": label, "p": p}


def pairs(rows: int, users: int = 200, items: int = 100,
          seed: int = 33) -> dict:
    """The interactions: user, user_group, item, item_category strings
    [rows] each; a user's item is drawn from a softmax of the hidden dot
    products."""
    rng = np.random.default_rng(seed)
    ucat = rng.integers(0, 8, users)
    icat = rng.integers(0, 12, items)
    cvec, gvec = rng.normal(0, 1, (12, 8)), rng.normal(0, 1, (8, 8))
    uvec = gvec[ucat] + rng.normal(0, 0.7, (users, 8))
    ivec = cvec[icat] + rng.normal(0, 0.7, (items, 8))
    u = _zipf(rng, users, rows)
    logits = uvec[u] @ ivec.T * 3.0
    logits -= logits.max(1, keepdims=True)
    prob = np.exp(logits)
    prob /= prob.sum(1, keepdims=True)
    cum = prob.cumsum(1)
    it = np.minimum((cum < rng.random((rows, 1))).sum(1), items - 1)
    return {"user": np.array([f"u{k}" for k in u]),
            "user_group": np.array([f"g{ucat[k]}" for k in u]),
            "item": np.array([f"i{k}" for k in it]),
            "item_category": np.array([f"c{icat[k]}" for k in it])}


def _write_clicks(d: str, rows: int) -> None:
    os.makedirs(d, exist_ok=True)
    c = clicks(rows)
    n_eval = rows // 5
    half = (rows - n_eval) // 2
    parts = {"train-0": (0, half), "train-1": (half, rows - n_eval),
             "eval": (rows - n_eval, rows)}
    for name, (a, b) in parts.items():
        recs = [example({**{f"f{i}": [c["cat"][r, i]]
                            for i in range(FIELDS)},
                         "fields": list(c["cat"][r]),
                         "dense": [float(x) for x in c["dense"][r]],
                         "label": [float(c["label"][r])]})
                for r in range(a, b)]
        write_tfrecord(os.path.join(d, f"{name}.tfrecord"), recs)
    np.savez(os.path.join(d, "data.npz"), train_rows=rows - n_eval, **c)


def _write_pairs(d: str, rows: int) -> None:
    os.makedirs(d, exist_ok=True)
    c = pairs(rows)
    n_eval = rows // 5
    half = (rows - n_eval) // 2
    parts = {"train-0": (0, half), "train-1": (half, rows - n_eval),
             "eval": (rows - n_eval, rows)}
    for name, (a, b) in parts.items():
        recs = [example({**{k: [c[k][r]] for k in c}, "label": [1.0]})
                for r in range(a, b)]
        write_tfrecord(os.path.join(d, f"{name}.tfrecord"), recs)
    np.savez(os.path.join(d, "data.npz"), train_rows=rows - n_eval, **c)


def main(argv: list) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--rows", type=int, default=40000,
                    help="click rows (a fifth for evaluation); the pairs "
                         "are as many")
    a = ap.parse_args(argv)
    if a.rows < 100:
        print(f"--rows: expected at least 100, got {a.rows}",
              file=sys.stderr)
        return 2
    _write_clicks(os.path.join(a.dir, "clicks"), a.rows)
    _write_pairs(os.path.join(a.dir, "pairs"), a.rows)
    print(f"wrote {a.rows} click rows to {a.dir}/clicks and {a.rows} "
          f"user/item pairs to {a.dir}/pairs (a fifth of each in "
          f"eval.tfrecord)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
