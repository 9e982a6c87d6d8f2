#!/usr/bin/env python3
"""Issue 33's preprocessing layers against numpy implementations of
Keras's definitions (keras/src/layers/preprocessing), written here.

Usage: prep_layers.py PREP_RUN_PROGRAM SOURCE_ROOT

Each case makes a model config with pasco.layers' classes (python/pasco,
loaded without the library), runs its forward pass in C (PREP_RUN_PROGRAM,
tests/model/prep_run.c; strings go in as text and are fingerprinted
there), and compares the output with the reference: StringLookup's and
IntegerLookup's index layout (mask, OOV indices, vocabulary), OOV
buckets, invert, the one_hot / multi_hot / count encodings, Hashing and
HashedCrossing (XXH64 written here from its specification), CategoryEncoding,
tf_idf (adapt's idf weights and count * idf, Keras's index_lookup.py),
Discretization's right-open bins and adapt's quantiles within epsilon,
adapt's vocabulary order (Keras's lexsort), config round trips, and the
errors (unknown output_mode, duplicates, num_bins < 1) naming the layer
and the value. Needs numpy (/usr/bin/python3).
"""
import json
import os
import subprocess
import sys

import numpy as np

M = (1 << 64) - 1
P1, P2, P3 = 11400714785074694791, 14029467366897019727, 1609587929392839161
P4, P5 = 9650029242287828579, 2870177450012600261


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def _round(acc, lane):
    return (_rotl((acc + lane * P2) & M, 31) * P1) & M


def xxh64(data, seed=0):
    """XXH64 as the xxHash specification defines it."""
    n, i = len(data), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed & M, (seed - P1) & M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = _round(v[k], int.from_bytes(data[i:i + 8], "little"))
                i += 8
        acc = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) +
               _rotl(v[3], 18)) & M
        for k in range(4):
            acc = ((acc ^ _round(0, v[k])) * P1 + P4) & M
    else:
        acc = (seed + P5) & M
    acc = (acc + n) & M
    while i + 8 <= n:
        acc ^= _round(0, int.from_bytes(data[i:i + 8], "little"))
        acc = (_rotl(acc, 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        acc ^= (int.from_bytes(data[i:i + 4], "little") * P1) & M
        acc = (_rotl(acc, 23) * P2 + P3) & M
        i += 4
    while i < n:
        acc ^= (data[i] * P5) & M
        acc = (_rotl(acc, 11) * P1) & M
        i += 1
    acc ^= acc >> 33
    acc = (acc * P2) & M
    acc ^= acc >> 29
    acc = (acc * P3) & M
    return acc ^ (acc >> 32)


def fingerprint(s):
    """pasco_hash_key of a string, as unsigned 64 bits (-1 becomes -2)."""
    h = xxh64(s.encode())
    return (M - 1) if h == M else h


def key_of(v):
    """Hashing's key: a string's fingerprint, an integer's decimal's."""
    return fingerprint(v if isinstance(v, str) else str(int(v)))


def hash_bin(v, bins, salt=None):
    k = key_of(v)
    if salt is not None:
        k = xxh64(k.to_bytes(8, "little"), salt)
    return k % bins


def encode(idx, mode, depth):
    """Keras's encode_categorical_inputs on [batch, w] indices (-1:
    dropped, a masked token)."""
    idx = np.asarray(idx).reshape(len(idx), -1)
    if mode == "int":
        return idx.astype(np.float64)
    out = np.zeros((idx.shape[0], depth))
    for b, row in enumerate(idx):
        for i in row:
            if i >= 0:
                out[b, i] = out[b, i] + 1 if mode == "count" else 1
    return out


def lookup_ref(x, vocab, mask=None, num_oov=1, mode="int", strings=True,
               invert=False):
    """Keras's IndexLookup on x."""
    oov_start = 1 if mask is not None and mode == "int" else 0
    start = oov_start + num_oov
    index = {t: start + i for i, t in enumerate(vocab)}
    out = []
    for row in x:
        r = []
        for v in row:
            if invert:
                r.append(mask if mask is not None and v == 0 else
                         vocab[v - start] if 0 <= v - start < len(vocab)
                         else -1)
            elif mask is not None and v == mask:
                r.append(0 if mode == "int" else -1)
            elif v in index:
                r.append(index[v])
            elif strings:
                r.append(oov_start + fingerprint(v) % num_oov)
            else:
                r.append(oov_start + v % num_oov)  # floormod
        out.append(r)
    return encode(out, mode, start + len(vocab))


class Runner:
    def __init__(self, program, mod):
        self.program, self.mod, self.fails = program, mod, []

    def run(self, layers, inputs):
        """layers: [(layer, [input names])]; inputs: [(Input, dtype,
        values)]. The C output (or its error)."""
        ins = [i.get_config() for i, _, _ in inputs]
        cfg = {"class_name": "Functional",
               "config": {"name": "m", "seed": 1, "inputs": ins,
                          "layers": [{**l.to_json_layer(),
                                      "inbound_nodes": names}
                                     for l, names in layers]}}
        feed = [{"dtype": dt, "shape": list(np.asarray(v).shape),
                 "data": np.asarray(v).reshape(-1).tolist()}
                for _, dt, v in inputs]
        return self.raw(cfg, feed)

    def raw(self, cfg, feed):
        p = subprocess.run([self.program], input=json.dumps(
            {"config": cfg, "inputs": feed}), capture_output=True,
            text=True, timeout=30, check=True)
        return json.loads(p.stdout)

    def check(self, what, got, want):
        if "error" in got:
            self.fails.append(f"{what}: {got['error']}")
            return
        a = np.asarray(got["data"]).reshape(got["shape"])
        b = np.asarray(want, dtype=np.float64).reshape(a.shape[0], -1)
        if a.shape != b.shape or not np.array_equal(a, b):
            self.fails.append(f"{what}: got {a.tolist()}, want {b.tolist()}")

    def error(self, what, got, *words):
        msg = got.get("error", "")
        if not all(w in msg for w in words):
            self.fails.append(f"{what}: expected an error naming {words}, "
                              f"got {got}")


def string_lookups(r, L):
    x = [["a", "zz"], ["c", "b"], ["", "a"], ["q", ""]]
    vocab = ["a", "b", "c"]
    for kw in ({}, {"mask_token": ""},
               {"mask_token": "", "num_oov_indices": 3},
               {"num_oov_indices": 2}, {"output_mode": "multi_hot"},
               {"mask_token": "", "output_mode": "count"},
               {"num_oov_indices": 2, "output_mode": "multi_hot",
                "pad_to_max_tokens": True, "max_tokens": 9}):
        L.reset_names()
        s = L.Input(shape=(2,), name="s", dtype="string")
        lk = L.StringLookup(vocabulary=vocab, **kw)
        got = r.run([(lk, ["s"])], [(s, "string", x)])
        want = lookup_ref(x, vocab, kw.get("mask_token"),
                          kw.get("num_oov_indices", 1),
                          kw.get("output_mode", "int"))
        if kw.get("pad_to_max_tokens"):
            want = np.pad(want, ((0, 0), (0, 9 - want.shape[1])))
        r.check(f"StringLookup({kw})", got, want)
        if "config" in got and got["config"]["config"]["layers"][0][
                "config"] != {**lk.get_config()}:
            r.fails.append(f"StringLookup({kw}): config read back as "
                           f"{got['config']['config']['layers'][0]}")
    # called on values (Keras's eager call, on the chief)
    for kw in ({}, {"mask_token": ""}):
        lk = L.StringLookup(vocabulary=vocab, **kw)
        got = {"shape": [4, 2], "data": lk(x).reshape(-1).tolist()}
        r.check(f"StringLookup({kw}) on values", got,
                lookup_ref(x, vocab, kw.get("mask_token")))
    il = L.IntegerLookup(vocabulary=[10, 20], num_oov_indices=3)
    got = {"shape": [1, 4], "data": il([[10, 7, -5, 20]]).reshape(-1).tolist()}
    r.check("IntegerLookup on values", got,
            lookup_ref([[10, 7, -5, 20]], [10, 20], None, 3, strings=False))
    # one_hot: one value per example
    s = L.Input(shape=(1,), name="s", dtype="string")
    got = r.run([(L.StringLookup(vocabulary=vocab, output_mode="one_hot"),
                  ["s"])], [(s, "string", [["b"], ["nope"]])])
    r.check("StringLookup one_hot", got, [[0, 0, 1, 0], [1, 0, 0, 0]])


def integer_lookups(r, L):
    x = [[10, 7], [0, 30], [-5, 20]]
    vocab = [10, 20, 30]
    for kw in ({}, {"mask_token": 0}, {"mask_token": 0, "num_oov_indices": 3},
               {"output_mode": "count", "mask_token": 0}):
        i = L.Input(shape=(2,), name="i", dtype="int64")
        lk = L.IntegerLookup(vocabulary=vocab, **kw)
        got = r.run([(lk, ["i"])], [(i, "i64", x)])
        r.check(f"IntegerLookup({kw})", got,
                lookup_ref(x, vocab, kw.get("mask_token"),
                           kw.get("num_oov_indices", 1),
                           kw.get("output_mode", "int"), strings=False))
    ids = [[0, 1], [2, 3], [4, 5]]
    i = L.Input(shape=(2,), name="i", dtype="int64")
    got = r.run([(L.IntegerLookup(vocabulary=vocab, mask_token=0,
                                  invert=True), ["i"])], [(i, "i64", ids)])
    r.check("IntegerLookup invert", got,
            lookup_ref(ids, vocab, 0, strings=False, invert=True))
    got = r.run([(L.IntegerLookup(vocabulary=vocab, num_oov_indices=0),
                  ["i"])], [(i, "i64", [[10, 11]] * 3)])
    r.error("IntegerLookup num_oov_indices=0", got, "integer_lookup", "11",
            "num_oov_indices is 0")


def hashing(r, L):
    xs = [["a", "b"], ["m", "hello world, a longer string of 40 bytes!"]]
    for kw in ({"num_bins": 7}, {"num_bins": 7, "mask_value": "m"},
               {"num_bins": 5, "salt": 12345},
               {"num_bins": 6, "output_mode": "multi_hot"}):
        s = L.Input(shape=(2,), name="s", dtype="string")
        got = r.run([(L.Hashing(**kw), ["s"])], [(s, "string", xs)])
        bins, mask = kw["num_bins"], kw.get("mask_value")
        idx = [[0 if v == mask else
                1 + hash_bin(v, bins - 1, kw.get("salt")) if mask else
                hash_bin(v, bins, kw.get("salt")) for v in row] for row in xs]
        r.check(f"Hashing({kw})", got,
                encode(idx, kw.get("output_mode", "int"), bins))
    ints = [[3, -12], [0, 123456789]]
    i = L.Input(shape=(2,), name="i", dtype="int64")
    got = r.run([(L.Hashing(num_bins=11, mask_value=0), ["i"])],
                [(i, "i64", ints)])
    r.check("Hashing ints", got, [[0 if v == 0 else 1 + hash_bin(v, 10)
                                   for v in row] for row in ints])
    a = L.Input(shape=(1,), name="a", dtype="string")
    b = L.Input(shape=(1,), name="b", dtype="int64")
    got = r.run([(L.HashedCrossing(num_bins=13), ["a", "b"])],
                [(a, "string", [["x"], ["y"]]), (b, "i64", [[4], [7]])])
    want = [[xxh64(key_of(u).to_bytes(8, "little") +
                   key_of(v).to_bytes(8, "little")) % 13]
            for u, v in (("x", 4), ("y", 7))]
    r.check("HashedCrossing", got, want)
    # uniform: 20000 strings over 10 bins, chi-square (9 degrees of
    # freedom) under its 0.001 quantile, 27.88
    s = L.Input(shape=(1,), name="s", dtype="string")
    got = r.run([(L.Hashing(num_bins=10), ["s"])],
                [(s, "string", [[f"user{k}"] for k in range(20000)])])
    counts = np.bincount(np.asarray(got["data"], dtype=int), minlength=10)
    chi2 = float(((counts - 2000.0) ** 2 / 2000.0).sum())
    if chi2 > 27.88:
        r.fails.append(f"Hashing is not uniform: {counts.tolist()}, "
                       f"chi-square {chi2:.1f}")


def encodings(r, L):
    x = [[0, 3, 3], [2, 2, 1]]
    for mode in ("multi_hot", "count"):
        i = L.Input(shape=(3,), name="i", dtype="int64")
        got = r.run([(L.CategoryEncoding(num_tokens=4, output_mode=mode),
                      ["i"])], [(i, "i64", x)])
        r.check(f"CategoryEncoding {mode}", got, encode(x, mode, 4))
    i = L.Input(shape=(1,), name="i", dtype="int64")
    got = r.run([(L.CategoryEncoding(num_tokens=4, output_mode="one_hot"),
                  ["i"])], [(i, "i64", [[1], [3]])])
    r.check("CategoryEncoding one_hot", got, encode([[1], [3]], "one_hot", 4))
    got = r.run([(L.CategoryEncoding(num_tokens=4), ["i"])],
                [(i, "i64", [[1], [4]])])
    r.error("CategoryEncoding out of range", got, "category_encoding", "4",
            "num_tokens=4")
    # StringLookup -> CategoryEncoding, chained before the reads
    s = L.Input(shape=(2,), name="s", dtype="string")
    lk = L.StringLookup(vocabulary=["a", "b"], name="lk")
    got = r.run([(lk, ["s"]),
                 (L.CategoryEncoding(num_tokens=3, output_mode="count"),
                  ["lk"])], [(s, "string", [["a", "a"], ["b", "z"]])])
    r.check("StringLookup -> CategoryEncoding", got,
            [[0, 2, 0], [1, 0, 1]])


def discretization(r, L):
    bounds = [0.0, 1.5, 3.0]
    x = np.array([[-1.0, 0.0, 1.4999], [1.5, 2.9, 3.0], [7.0, -0.0, np.nan]])
    for mode in ("int", "multi_hot", "count"):
        f = L.Input(shape=(3,), name="f")
        got = r.run([(L.Discretization(bin_boundaries=bounds,
                                       output_mode=mode), ["f"])],
                    [(f, "f32", np.nan_to_num(x, nan=5.0))])
        r.check(f"Discretization {mode}", got,
                encode(np.digitize(np.nan_to_num(x, nan=5.0), bounds), mode,
                       4))
    rng = np.random.default_rng(3)
    data = rng.lognormal(size=5000)
    for bins, eps in ((4, 0.01), (10, 0.001)):
        d = L.Discretization(num_bins=bins, epsilon=eps)
        d.adapt(data)
        b = np.asarray(d.bin_boundaries)
        ranks = np.searchsorted(np.sort(data), b) / len(data)
        want = np.arange(1, bins) / bins
        if len(b) != bins - 1 or np.abs(ranks - want).max() > eps + 1e-9:
            r.fails.append(f"Discretization.adapt({bins}, {eps}): "
                           f"boundaries {b} at ranks {ranks}, want {want} "
                           f"within {eps}")
        if d.get_config()["bin_boundaries"] != d.bin_boundaries:
            r.fails.append("Discretization: adapted boundaries not in the "
                           "config")


def adapt_order(r, L):
    """Keras's finalize_state: np.lexsort((tokens, counts))[::-1]."""
    rng = np.random.default_rng(5)
    data = rng.choice(["a", "b", "c", "d", "e", "[UNK]", "zz"], size=400,
                      p=[.3, .2, .2, .1, .1, .05, .05])
    toks, counts = np.unique(data, return_counts=True)
    keep = toks != "[UNK]"
    toks, counts = toks[keep], counts[keep]
    want = toks[np.lexsort((toks, counts))[::-1]][:4].tolist()
    lk = L.StringLookup(max_tokens=5)
    lk.adapt(data)
    if lk.get_vocabulary() != ["[UNK]"] + want:
        r.fails.append(f"StringLookup.adapt: {lk.get_vocabulary()}, want "
                       f"{['[UNK]'] + want}")
    ints = np.array([5, 5, 7, 7, 9, 1, 1, 1, -1])
    il = L.IntegerLookup(mask_token=1)
    il.adapt(ints)
    if il.get_vocabulary() != [1, -1, 7, 5, 9]:
        r.fails.append(f"IntegerLookup.adapt: {il.get_vocabulary()}")


def idf_ref(docs, max_tokens=None, start=1):
    """Keras's adapt in tf_idf (index_lookup.py, finalize_state): the
    vocabulary by np.lexsort((tokens, counts))[::-1], and each token's
    log(1 + num_documents / (1 + document_frequency))."""
    toks, counts = np.unique(np.asarray(docs).reshape(-1),
                             return_counts=True)
    order = toks[np.lexsort((toks, counts))[::-1]]
    if max_tokens is not None:
        order = order[:max_tokens - start]
    df = np.array([sum(t in row for row in docs) for t in order])
    return order.tolist(), np.log(1 + len(docs) / (1 + df))


def tf_idf(r, L):
    """tf_idf: count * idf, the OOV indices' weight the idf weights'
    mean, padding's 0; a mask dropped (Keras's encode, then multiply)."""
    docs = [["a", "b", "a"], ["b", "c", "c"], ["a", "a", "d"],
            ["e", "b", "b"], ["a", "f", "b"]]
    x = [["a", "zz", "b"], ["c", "c", "q"], ["", "d", "a"]]
    for kw in ({}, {"num_oov_indices": 2}, {"mask_token": ""},
               {"max_tokens": 9, "pad_to_max_tokens": True},
               {"max_tokens": 4}):
        L.reset_names()
        s = L.Input(shape=(3,), name="s", dtype="string")
        lk = L.StringLookup(output_mode="tf_idf", **kw)
        lk.adapt(np.array(docs))
        n_oov = kw.get("num_oov_indices", 1)
        vocab, idf = idf_ref(docs, kw.get("max_tokens"), n_oov)
        if lk.vocabulary != vocab or not np.allclose(lk.idf_weights, idf,
                                                     rtol=1e-15):
            r.fails.append(f"StringLookup.adapt tf_idf({kw}): "
                           f"{lk.vocabulary} {lk.idf_weights}, want "
                           f"{vocab} {idf.tolist()}")
        got = r.run([(lk, ["s"])], [(s, "string", x)])
        counts = lookup_ref(x, vocab, kw.get("mask_token"), n_oov, "count")
        weights = np.concatenate([[idf.mean()] * n_oov, idf])
        depth = kw.get("max_tokens") if kw.get("pad_to_max_tokens") else \
            len(weights)
        weights = np.pad(weights, (0, depth - len(weights)))
        counts = np.pad(counts, ((0, 0), (0, depth - counts.shape[1])))
        want = counts * weights
        if "error" in got:
            r.fails.append(f"StringLookup tf_idf({kw}): {got['error']}")
            continue
        a = np.asarray(got["data"]).reshape(got["shape"])
        if a.shape != want.shape or not np.allclose(a, want, rtol=1e-6):
            r.fails.append(f"StringLookup tf_idf({kw}): got {a.tolist()}, "
                           f"want {want.tolist()}")
        if got["config"]["config"]["layers"][0]["config"] != \
                lk.get_config():
            r.fails.append(f"StringLookup tf_idf({kw}): config read back "
                           f"as {got['config']['config']['layers'][0]}")
    # IntegerLookup with idf_weights given, "tf-idf" spelled as Keras
    # also takes it
    i = L.Input(shape=(2,), name="i", dtype="int64")
    il = L.IntegerLookup(vocabulary=[10, 20], idf_weights=[0.5, 2.0],
                         output_mode="tf-idf")
    got = r.run([(il, ["i"])], [(i, "i64", [[10, 20], [20, 7]])])
    if "error" in got or not np.allclose(
            np.asarray(got["data"]).reshape(2, 3),
            [[0, 0.5, 2.0], [1.25, 0, 2.0]]):
        r.fails.append(f"IntegerLookup tf-idf: {got}")


def errors(r, L):
    s = L.Input(shape=(1,), name="s", dtype="string")
    base = {"class_name": "Functional", "config": {
        "name": "m", "seed": 1, "inputs": [s.get_config()], "layers": []}}

    def config_error(layer, what, *words):
        c = json.loads(json.dumps(base))
        c["config"]["layers"] = [{**layer, "inbound_nodes": ["s"]}]
        r.error(what, r.raw(c, []), *words)

    lk = L.StringLookup(vocabulary=["a", "b"], name="look").to_json_layer()
    lk["config"]["output_mode"] = "bogus"
    config_error(lk, "unknown output_mode", "look", "bogus")
    lk["config"]["output_mode"] = "tf_idf"
    config_error(lk, "tf_idf without idf_weights", "look", "idf_weights",
                 "one per vocabulary token (2), got 0")
    lk["config"]["idf_weights"] = [1.0, "x"]
    config_error(lk, "idf_weights not numbers", "look", "idf_weights[1]")
    lk["config"]["output_mode"] = "count"
    lk["config"]["idf_weights"] = [1.0, 2.0]
    config_error(lk, "idf_weights in count", "look", "only for output_mode")
    lk["config"]["idf_weights"] = None
    lk["config"]["output_mode"] = "int"
    lk["config"]["vocabulary"] = ["a", "b", "a"]
    config_error(lk, "duplicates", "look", "'a'", "index 2", "index 0")
    h = L.Hashing(num_bins=3, name="hh").to_json_layer()
    h["config"]["num_bins"] = 0
    config_error(h, "num_bins < 1", "hh", "num_bins")
    for make, words in (
            (lambda: L.Hashing(num_bins=0, name="h0"),
             ("h0", "num_bins", "0")),
            (lambda: L.StringLookup(vocabulary=["x", "x"], name="sl"),
             ("sl", "'x'", "index 1")),
            (lambda: L.StringLookup(vocabulary=["a"], output_mode="tf_idf",
                                    name="tf"),
             ("tf", "tf_idf", "idf_weights")),
            (lambda: L.StringLookup(vocabulary=["a"], idf_weights=[1.0],
                                    name="ti"),
             ("ti", "idf_weights", "'int'")),
            (lambda: L.StringLookup(vocabulary=["a", "b"], idf_weights=[1],
                                    output_mode="tf_idf", name="tw"),
             ("tw", "idf_weights must be 2 numbers")),
            (lambda: L.Hashing(num_bins=3, output_mode="tf_idf", name="ht"),
             ("ht", "output_mode", "tf_idf")),
            (lambda: L.CategoryEncoding(num_tokens=0, name="ce"),
             ("ce", "num_tokens", "0"))):
        try:
            make()
            r.fails.append(f"{words[0]}: no error")
        except ValueError as e:
            if not all(w in str(e) for w in words):
                r.fails.append(f"{words[0]}: {e} does not name {words}")
    # a depth of 2^53 over 2048 rows (2^64 elements) is refused, not
    # allocated short and written past
    big = L.StringLookup(vocabulary=["a"], max_tokens=2 ** 53, name="big",
                         pad_to_max_tokens=True, output_mode="multi_hot")
    try:
        got = r.run([(big, ["s"])], [(s, "string", [["a"]] * 2048)])
        r.error("a huge depth", got, "big", "2^31")
    except subprocess.CalledProcessError as e:
        r.fails.append(f"a huge depth: prep_run died ({e.returncode})")
    # a string input fed i32 (not fingerprints) is refused, not read past
    got = r.run([(L.Hashing(num_bins=3, name="h32"), ["s"])],
                [(s, "i32", [[1], [2]])])
    r.error("strings of i32", got, "h32", "fingerprints", "i32")
    # a StringLookup on numbers is refused naming the layer
    i = L.Input(shape=(1,), name="i", dtype="int64")
    got = r.run([(L.StringLookup(vocabulary=["a"], name="sn"), ["i"])],
                [(i, "i64", [[1]])])
    r.error("StringLookup on ints", got, "sn", "not strings")


def main(program, root):
    sys.path.insert(0, os.path.join(root, "tests", "python"))
    import kind_table
    L = kind_table.load_module(root, "layers.py")
    if xxh64(b"abc") != 0x44BC2CF5AD770999 or xxh64(b"") != \
            0xEF46DB3751D8E999:
        print("prep_layers: the reference XXH64 is wrong")
        return 1
    r = Runner(program, L)
    for case in (string_lookups, integer_lookups, hashing, encodings,
                 discretization, adapt_order, tf_idf, errors):
        L.reset_names()
        case(r, L)
    for f in r.fails:
        print("prep_layers:", f)
    if not r.fails:
        print("prep_layers: every layer agrees with its numpy reference")
    return 1 if r.fails else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
