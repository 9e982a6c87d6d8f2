#!/usr/bin/env python3
"""Keras 3's losses against numpy: each loss the library runs (compile's
names and classes' configs, model/losses.c and model/ops_loss*.c) and each
pasco.losses function traced into a loss graph (the fallback for custom
code), forward and gradient, against an independent numpy implementation
of Keras's definition (keras/src/losses/losses.py), written here. The
gradient's reference is the central difference of the numpy loss in f64.

Usage: losses_numpy.py LOSS_VALUES_EXE SOURCE_ROOT. Exit 77 without numpy.
"""
import json
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable}")
    sys.exit(77)

sys.path.insert(0, sys.argv[2] + "/python")
from pasco import losses  # noqa: E402

EPS = 1e-7
rng = np.random.default_rng(33)
failures = []


def per_example(v):
    """Keras's reduction sum_over_batch_size of per-example losses."""
    return float(np.mean(v))


def np_bce(y, p):
    p = np.clip(p, EPS, 1 - EPS)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def hinge_labels(y):
    return 2 * y - 1 if np.all((y == 0) | (y == 1)) else y


def l2n(x):
    return x / np.sqrt(np.maximum((x * x).sum(-1, keepdims=True), 1e-14))


def focal(y, p, balance=False, alpha=0.25, gamma=2.0, logits=False,
          smoothing=0.0):
    y = y * (1 - smoothing) + 0.5 * smoothing
    if logits:
        p = sigmoid(p)
    pt = y * p + (1 - y) * (1 - p)
    f = (1 - pt) ** gamma * np_bce(y, p)
    if balance:
        f = (y * alpha + (1 - y) * (1 - alpha)) * f
    return per_example(f.mean(-1))


def cce(y, p, logits=False, smoothing=0.0):
    y = y * (1 - smoothing) + smoothing / p.shape[-1]
    if logits:
        return per_example(-(y * log_softmax(p)).sum(-1))
    q = np.clip(p / p.sum(-1, keepdims=True), EPS, 1 - EPS)
    return per_example(-(y * np.log(q)).sum(-1))


def bce(y, p, logits=False, smoothing=0.0):
    y = y * (1 - smoothing) + 0.5 * smoothing
    if logits:
        return per_example((np.maximum(p, 0) - p * y +
                            np.log1p(np.exp(-np.abs(p)))).mean(-1))
    return per_example(np_bce(y, p).mean(-1))


def huber(y, p, delta=1.0):
    e = p - y
    a = np.abs(e)
    return per_example(np.where(a <= delta, 0.5 * e * e,
                                delta * a - 0.5 * delta * delta).mean(-1))


# Keras's definitions: (y_true, y_pred) -> the batch's loss
REF = {
    "mse": lambda y, p: per_example(((y - p) ** 2).mean(-1)),
    "mae": lambda y, p: per_example(np.abs(y - p).mean(-1)),
    "mape": lambda y, p: per_example(100 * np.abs(
        (y - p) / np.maximum(np.abs(y), EPS)).mean(-1)),
    "huber": huber,
    "log_cosh": lambda y, p: per_example(np.log(np.cosh(p - y)).mean(-1)),
    "hinge": lambda y, p: per_example(
        np.maximum(1 - hinge_labels(y) * p, 0).mean(-1)),
    "squared_hinge": lambda y, p: per_example(
        (np.maximum(1 - hinge_labels(y) * p, 0) ** 2).mean(-1)),
    "kl_divergence": lambda y, p: per_example(
        (np.clip(y, EPS, 1) * np.log(np.clip(y, EPS, 1) /
                                     np.clip(p, EPS, 1))).sum(-1)),
    "poisson": lambda y, p: per_example((p - y * np.log(p + EPS)).mean(-1)),
    "cosine_similarity": lambda y, p: per_example(
        -(l2n(y) * l2n(p)).sum(-1)),
    "binary_crossentropy": bce,
    "categorical_crossentropy": cce,
    "sparse_categorical_crossentropy": lambda y, p, logits=False: cce(
        np.eye(p.shape[-1])[y.astype(int)], p, logits),
    "binary_focal_crossentropy": focal,
}


def grad_of(f, y, p):
    """The central difference of f(y, p) in each element of p."""
    g = np.zeros_like(p)
    for i in np.ndindex(p.shape):
        h = 1e-6 * max(1.0, abs(p[i]))
        a, b = p.copy(), p.copy()
        a[i] += h
        b[i] -= h
        g[i] = (f(y, a) - f(y, b)) / (2 * h)
    return g


def data(kind, b=5, w=3):
    """(y, y_dtype, p) for a loss of kind, away from its kinks."""
    if kind in ("kl_divergence",):
        y = np.exp(rng.normal(size=(b, w)))
        y /= y.sum(-1, keepdims=True)
        y[0, 0] = 0.0  # clipped to 1e-7
        p = np.exp(rng.normal(size=(b, w)))
        return y, "float32", p / p.sum(-1, keepdims=True)
    if kind == "poisson":
        return (rng.integers(0, 4, size=(b, w)).astype(float), "float32",
                rng.uniform(0.2, 3, size=(b, w)))
    if kind in ("hinge", "squared_hinge", "binary"):
        return (rng.integers(0, 2, size=(b, w)).astype(float), "float32",
                rng.uniform(0.05, 0.95, size=(b, w)))
    if kind == "hinge_pm":
        return (rng.choice([-1.0, 1.0], size=(b, w)), "float32",
                rng.normal(size=(b, w)))
    if kind == "categorical":
        return (np.eye(w)[rng.integers(0, w, size=b)], "float32",
                rng.uniform(0.05, 1, size=(b, w)))
    if kind == "sparse":
        return (rng.integers(0, w, size=b).astype(float), "int64",
                rng.normal(size=(b, w)))
    if kind == "mape":
        return (rng.uniform(0.5, 2, size=(b, w)) * rng.choice([-1, 1], (b, w)),
                "float32", rng.normal(size=(b, w)))
    return rng.normal(size=(b, w)), "float32", rng.normal(size=(b, w)) * 2


def cfg(cls, **config):
    return {"class_name": cls, "config": config}


# (what, the library's loss, the numpy reference, data kind, the
# pasco.losses object whose traced graph is checked too)
CASES = [
    ("mse", "mse", REF["mse"], "normal", losses.MeanSquaredError()),
    ("mae", "mae", REF["mae"], "normal", losses.MeanAbsoluteError()),
    ("mean_absolute_error", "mean_absolute_error", REF["mae"], "normal",
     None),
    ("mape", "mape", REF["mape"], "mape",
     losses.MeanAbsolutePercentageError()),
    ("huber", "huber", REF["huber"], "normal", losses.Huber()),
    ("Huber(0.5)", cfg("Huber", delta=0.5),
     lambda y, p: huber(y, p, 0.5), "normal", losses.Huber(0.5)),
    ("Huber(2.0) by Keras's full config",
     cfg("Huber", delta=2.0, name="huber_loss",
         reduction="sum_over_batch_size", dtype=None),
     lambda y, p: huber(y, p, 2.0), "normal", losses.Huber(delta=2.0)),
    ("log_cosh", "logcosh", REF["log_cosh"], "normal", losses.LogCosh()),
    ("hinge of 0/1 labels", "hinge", REF["hinge"], "hinge", losses.Hinge()),
    ("hinge of -1/1 labels", "hinge", REF["hinge"], "hinge_pm",
     losses.Hinge()),
    ("squared_hinge", "squared_hinge", REF["squared_hinge"], "hinge",
     losses.SquaredHinge()),
    ("kl_divergence", "kld", REF["kl_divergence"], "kl_divergence",
     losses.KLDivergence()),
    ("poisson", "poisson", REF["poisson"], "poisson", losses.Poisson()),
    ("cosine_similarity", cfg("CosineSimilarity", axis=-1),
     REF["cosine_similarity"], "normal", losses.CosineSimilarity()),
    ("binary_crossentropy", "binary_crossentropy",
     REF["binary_crossentropy"], "binary", losses.BinaryCrossentropy()),
    ("BinaryCrossentropy(label_smoothing=0.1)",
     cfg("BinaryCrossentropy", label_smoothing=0.1),
     lambda y, p: bce(y, p, smoothing=0.1), "binary",
     losses.BinaryCrossentropy(label_smoothing=0.1)),
    ("BinaryCrossentropy(from_logits, label_smoothing=0.2)",
     cfg("BinaryCrossentropy", from_logits=True, label_smoothing=0.2),
     lambda y, p: bce(y, p, True, 0.2), "binary_logits",
     losses.BinaryCrossentropy(from_logits=True, label_smoothing=0.2)),
    ("CategoricalCrossentropy(label_smoothing=0.2)",
     cfg("CategoricalCrossentropy", label_smoothing=0.2),
     lambda y, p: cce(y, p, smoothing=0.2), "categorical",
     losses.CategoricalCrossentropy(label_smoothing=0.2)),
    ("CategoricalCrossentropy(from_logits, label_smoothing=0.1)",
     cfg("CategoricalCrossentropy", from_logits=True, label_smoothing=0.1),
     lambda y, p: cce(y, p, True, 0.1), "categorical",
     losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)),
    ("SparseCategoricalCrossentropy(from_logits)",
     cfg("SparseCategoricalCrossentropy", from_logits=True),
     lambda y, p: REF["sparse_categorical_crossentropy"](y, p, True),
     "sparse", losses.SparseCategoricalCrossentropy(from_logits=True)),
    ("binary_focal_crossentropy", "binary_focal_crossentropy",
     REF["binary_focal_crossentropy"], "binary",
     losses.BinaryFocalCrossentropy()),
    ("BinaryFocalCrossentropy(balanced, alpha 0.4, gamma 1.5)",
     cfg("BinaryFocalCrossentropy", apply_class_balancing=True, alpha=0.4,
         gamma=1.5),
     lambda y, p: focal(y, p, True, 0.4, 1.5), "binary",
     losses.BinaryFocalCrossentropy(True, 0.4, 1.5)),
    ("BinaryFocalCrossentropy(from_logits, label_smoothing=0.1, gamma 3)",
     cfg("BinaryFocalCrossentropy", from_logits=True, label_smoothing=0.1,
         gamma=3.0),
     lambda y, p: focal(y, p, logits=True, smoothing=0.1, gamma=3.0),
     "binary_logits",
     losses.BinaryFocalCrossentropy(gamma=3.0, from_logits=True,
                                    label_smoothing=0.1)),
]

# What the library refuses, and the words it says.
BAD = [
    (cfg("Huber", delta=0.0), "Huber: delta must be a number > 0"),
    (cfg("Hinge", delta=1.0), "Hinge takes no delta"),
    (cfg("BinaryCrossentropy", label_smoothing=1.5),
     "label_smoothing must be in [0, 1]"),
    (cfg("BinaryCrossentropy", reduction="sum"),
     'reduction "sum_over_batch_size"'),
    (cfg("CosineSimilarity", axis=0), "only the last axis (-1) is taken"),
    (cfg("Dice"), "Dice"),
    ("huber_loss", "unknown loss 'huber_loss'"),
]


def case_json(loss, y, ydt, p):
    return {"loss": loss, "pred": p.ravel().tolist(), "shape": p.shape,
            "y": y.ravel().tolist(), "y_shape": y.shape, "y_dtype": ydt}


def main():
    runs, refs = [], []
    for what, loss, ref, kind, obj in CASES:
        y, ydt, p = data("binary" if kind == "binary_logits" else kind)
        y = y.astype(np.float32).astype(np.float64)  # as the labels go
        if kind == "binary_logits":
            p = rng.normal(size=p.shape) * 2
        want = (ref(y, p), grad_of(ref, y, p))
        runs.append(case_json(loss, y, ydt, p))
        refs.append((what + " (the library's)", want))
        if obj is not None:  # the traced fallback of pasco.losses
            yshape = (None,) if kind == "sparse" else (None, p.shape[1])
            graph = losses.trace(obj, ("int64" if kind == "sparse" else
                                       "float64", yshape),
                                 ("float64", (None, p.shape[1])))
            runs.append(case_json(graph, y, ydt, p))
            refs.append((what + " (pasco.losses traced)", want))
    for loss, _ in BAD:
        y, ydt, p = data("normal")
        runs.append(case_json(loss, y, ydt, p))
    out = subprocess.run([sys.argv[1]], input=json.dumps(runs), text=True,
                         capture_output=True, check=True)
    got = json.loads(out.stdout)
    for (what, (loss, grad)), g in zip(refs, got):
        if "error" in g:
            failures.append(f"{what}: {g['error']}")
            continue
        if not np.isclose(g["loss"], loss, rtol=1e-9, atol=1e-12):
            failures.append(f"{what}: loss {g['loss']!r}, numpy {loss!r}")
        gg = np.array(g["grad"]).reshape(grad.shape)
        if not np.allclose(gg, grad, rtol=1e-5, atol=1e-7):
            failures.append(f"{what}: gradient {gg.ravel()[:6]}, numpy "
                            f"{grad.ravel()[:6]} (max difference "
                            f"{np.abs(gg - grad).max():.3g})")
    for (loss, words), g in zip(BAD, got[len(refs):]):
        if words not in g.get("error", ""):
            failures.append(f"{loss}: want an error saying {words!r}, got "
                            f"{g}")
    print(f"{len(refs)} losses against numpy, {len(BAD)} refusals")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
