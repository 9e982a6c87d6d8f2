#!/usr/bin/env python3
"""Keras 3's initializers on variables made on a ps, against numpy: each
Keras config (keras/src/initializers) is read by the library, the
variable made on in-process ps (the fill runs there), in one piece and in
shards over two ps (the same values), and its values checked against
Keras's definition computed here: the mean and variance (VarianceScaling's
scale / max(1, fan) whatever the distribution, the truncated normal's
0.87962566103423978 correction included), the bounds (2 stddev for the
truncated normals, +-limit for the uniforms), and Orthogonal's
orthogonality (gain^2 I) for square, tall, wide and rank-3 shapes.

Usage: initializers_numpy.py INIT_VALUES_EXE SOURCE_ROOT. Exit 77 without
numpy.
"""
import json
import math
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable}")
    sys.exit(77)

sys.path.insert(0, sys.argv[2] + "/python")
from pasco import initializers as I  # noqa: E402

failures = []


def fans(shape):
    """Keras's compute_fans."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    rf = math.prod(shape[:-2])
    return shape[-2] * rf, shape[-1] * rf


def scaling(shape, scale, mode, dist):
    """(mean, stddev, bound) of Keras's VarianceScaling on shape."""
    fi, fo = fans(shape)
    n = {"fan_in": fi, "fan_out": fo, "fan_avg": (fi + fo) / 2}[mode]
    s = scale / max(1.0, n)
    if dist == "truncated_normal":
        return 0.0, math.sqrt(s), 2 * math.sqrt(s) / 0.87962566103423978
    if dist == "untruncated_normal":
        return 0.0, math.sqrt(s), None
    return 0.0, math.sqrt(s), math.sqrt(3 * s)


def truncated_std(stddev):
    """The stddev of a normal of stddev cut at 2 stddev."""
    return stddev * 0.87962566103423978


def cfg(cls, **config):
    return {"class_name": cls, "config": config}


BIG = [200, 300]
CONV = [3, 3, 16, 32]
# (what, config, shape, (mean, stddev, bound) by Keras's definition)
MOMENTS = [
    ("RandomUniform(-0.3, 0.7)", cfg("RandomUniform", minval=-0.3,
                                     maxval=0.7, seed=5), BIG,
     (0.2, 1 / math.sqrt(12), (-0.3, 0.7))),
    ("RandomNormal(0.5, 2)", cfg("RandomNormal", mean=0.5, stddev=2.0,
                                 seed=6), BIG, (0.5, 2.0, None)),
    ("TruncatedNormal(0, 0.5)", cfg("TruncatedNormal", stddev=0.5, seed=7),
     BIG, (0.0, truncated_std(0.5), (-1.0, 1.0))),
    ("GlorotUniform", cfg("GlorotUniform", seed=8), BIG,
     scaling(BIG, 1.0, "fan_avg", "uniform")),
    ("GlorotNormal", cfg("GlorotNormal", seed=9), BIG,
     scaling(BIG, 1.0, "fan_avg", "truncated_normal")),
    ("HeNormal", cfg("HeNormal", seed=10), BIG,
     scaling(BIG, 2.0, "fan_in", "truncated_normal")),
    ("HeNormal of a conv kernel", cfg("HeNormal", seed=11), CONV,
     scaling(CONV, 2.0, "fan_in", "truncated_normal")),
    ("HeUniform (pasco.initializers')", I.HeUniform(seed=12).to_dict(), BIG,
     scaling(BIG, 2.0, "fan_in", "uniform")),
    ("LecunNormal", cfg("LecunNormal", seed=13), BIG,
     scaling(BIG, 1.0, "fan_in", "truncated_normal")),
    ("LecunUniform", cfg("LecunUniform", seed=14), BIG,
     scaling(BIG, 1.0, "fan_in", "uniform")),
    ("VarianceScaling(3, fan_out, untruncated_normal) (pasco's)",
     I.VarianceScaling(3.0, "fan_out", "untruncated_normal", 15).to_dict(),
     BIG,
     scaling(BIG, 3.0, "fan_out", "untruncated_normal")),
    ("VarianceScaling(0.5, fan_avg, uniform)",
     cfg("VarianceScaling", scale=0.5, mode="fan_avg",
         distribution="uniform", seed=16), CONV,
     scaling(CONV, 0.5, "fan_avg", "uniform")),
    ("VarianceScaling() of Keras's defaults (fan_in, truncated_normal)",
     cfg("VarianceScaling", seed=17), BIG,
     scaling(BIG, 1.0, "fan_in", "truncated_normal")),
    ("VarianceScaling(distribution='normal'), Keras's alias",
     cfg("VarianceScaling", scale=2.0, distribution="normal", seed=18), BIG,
     scaling(BIG, 2.0, "fan_in", "truncated_normal")),
]
EXACT = [
    ("Ones", cfg("Ones"), [3, 4], 1.0),
    ("Zeros", cfg("Zeros"), [3, 4], 0.0),
    ("Constant(2.5)", cfg("Constant", value=2.5), [3, 4], 2.5),
    ("Constant() of Keras's default", cfg("Constant"), [5], 0.0),
]
ORTHOGONAL = [
    ("square", 1.0, [50, 50]),
    ("tall, gain 1.5", 1.5, [64, 32]),
    ("wide", 1.0, [32, 64]),
    ("rank 3", 0.5, [4, 8, 16]),
]
BAD = [
    (cfg("Orthogonal"), [10], "Orthogonal takes a shape of rank 2 or more"),
    (cfg("VarianceScaling", scale=0.0), [4, 4],
     "VarianceScaling: scale must be > 0"),
    (cfg("VarianceScaling", mode="fan_x"), [4, 4],
     "mode 'fan_x' is none of fan_in, fan_out, fan_avg"),
    (cfg("HeNormal", input_axes=[0]), [4, 4],
     "input_axes and output_axes: only null"),
]


def check_moments(what, x, mean, std, bound):
    n = x.size
    if abs(x.mean() - mean) > 5 * std / math.sqrt(n):
        failures.append(f"{what}: mean {x.mean():.5g}, Keras's {mean:.5g} "
                        f"(n {n})")
    # the sample variance's spread: sqrt(2 / n) of it for a normal, less
    # for a uniform or a truncated normal
    if abs(x.var() - std * std) > 6 * std * std * math.sqrt(2 / n):
        failures.append(f"{what}: variance {x.var():.5g}, Keras's "
                        f"{std * std:.5g} (n {n})")
    if bound is not None:
        lo, hi = bound if isinstance(bound, tuple) else (-bound, bound)
        if x.min() < lo - 1e-12 or x.max() > hi + 1e-12:
            failures.append(f"{what}: values in [{x.min():.5g}, "
                            f"{x.max():.5g}], Keras's bounds [{lo:.5g}, "
                            f"{hi:.5g}]")
        # and the values reach near the bounds: not a narrower law
        if x.max() < hi - 0.05 * (hi - lo) or x.min() > lo + 0.05 * (hi - lo):
            failures.append(f"{what}: values in [{x.min():.5g}, "
                            f"{x.max():.5g}] do not fill [{lo:.5g}, "
                            f"{hi:.5g}]")


def main():
    cases = []
    for _, c, shape, _ in MOMENTS:
        cases.append({"init": c, "shape": shape, "shards": 3})
    for _, c, shape, _ in EXACT:
        cases.append({"init": c, "shape": shape, "shards": 2})
    for _, gain, shape in ORTHOGONAL:
        cases.append({"init": I.Orthogonal(gain, seed=21).to_dict(),
                      "shape": shape, "shards": 3})
    for c, shape, _ in BAD:
        cases.append({"init": c, "shape": shape, "shards": 1})
    out = subprocess.run([sys.argv[1]], input=json.dumps(cases), text=True,
                         capture_output=True, timeout=100)
    if out.returncode != 0:
        print(out.stderr)
        return 1
    got = iter(json.loads(out.stdout))

    def values(what, shape, init=None):
        g = next(got)
        if "error" in g:
            failures.append(f"{what}: {g['error']}")
            return None
        written = g.get("config", {})
        want = {k: v for k, v in (init or {}).get("config", {}).items()
                if v is not None}
        if want.get("distribution") == "normal":  # Keras's alias
            want["distribution"] = "truncated_normal"
        if init is not None and (
                written.get("class_name") != init["class_name"] or
                any(written["config"].get(k) != v for k, v in want.items())):
            failures.append(f"{what}: written back as {written}, read "
                            f"from {init}")
        v = np.array(g["values"]).reshape(shape)
        if g["values"] != g["sharded"]:
            failures.append(f"{what}: the sharded variable's values differ "
                            f"from the whole's")
        return v

    for what, init, shape, (mean, std, bound) in MOMENTS:
        v = values(what, shape, init)
        if v is not None:
            check_moments(what, v.ravel(), mean, std, bound)
    for what, _, shape, want in EXACT:
        v = values(what, shape)
        if v is not None and not np.all(v == want):
            failures.append(f"{what}: {v.ravel()[:4]}, want all {want}")
    for what, gain, shape in ORTHOGONAL:
        v = values("Orthogonal " + what, shape,
                   I.Orthogonal(gain, seed=21).to_dict())
        if v is None:
            continue
        q = v.reshape(-1, shape[-1])
        gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
        err = np.abs(gram - gain * gain * np.eye(gram.shape[0])).max()
        if err > 1e-9:
            failures.append(f"Orthogonal {what}: Q^T Q is gain^2 I within "
                            f"{err:.3g}")
        if np.abs(q).max() == 0 or np.std(q) == 0:
            failures.append(f"Orthogonal {what}: constant values")
    for c, shape, words in BAD:
        g = next(got)
        if words not in g.get("error", ""):
            failures.append(f"{c} of shape {shape}: want an error saying "
                            f"{words!r}, got {g}")
    print(f"{len(MOMENTS)} moments, {len(EXACT)} constants, "
          f"{len(ORTHOGONAL)} orthogonal, {len(BAD)} refusals")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
