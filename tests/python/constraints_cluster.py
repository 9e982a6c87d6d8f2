"""Keras's constraints and a loss object on a real cluster (issue 33):
a model of Dense(3, kernel_constraint=MaxNorm(0.5), bias_constraint=
NonNeg()) then Dense(1, kernel_constraint=NonNeg()), compiled with
pasco.losses.Huber(0.7) and SGD, one step on one worker: every variable
on the ps equals numpy's projection (Keras's MaxNorm, NonNeg) of the
unconstrained SGD update of its value before the step, with the Huber
gradient computed here; after 20 more steps every kernel column's norm is
<= 0.5 and no constrained weight is negative. Run on every task:
    pasco launch --ps 2 --workers 1 -- python3 constraints_cluster.py DIR"""

import json

import numpy as np

import pasco
from pasco import constraints, initializers, losses


def fail(msg):
    print(f"constraints: FAILED: {msg}", flush=True)
    return 1


def max_norm(w, m, axis=0):
    """Keras's MaxNorm: w * clip(n, 0, m) / (1e-7 + n)."""
    n = np.sqrt(np.sum(w * w, axis=axis, keepdims=True))
    return w * (np.clip(n, 0, m) / (1e-7 + n))


def non_neg(w):
    return w * (w >= 0)


def chief(cluster):
    d = cluster.argv[1]
    rng = np.random.default_rng(3)
    x = rng.normal(size=(16, 4)).astype(np.float32)
    y = rng.normal(size=16).astype(np.float32) * 2
    with open(f"{d}/c.csv", "w") as f:
        f.write("a,b,c,e,label\n")
        for r, t in zip(x, y):
            f.write(",".join(repr(float(v)) for v in [*r, t]) + "\n")
    strategy = pasco.ParameterServerStrategy(cluster)
    normal = initializers.RandomNormal(stddev=1.0, seed=4)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.layers.Dense(3, kernel_initializer=normal,
                               bias_initializer=initializers.RandomNormal(
                                   stddev=1.0, seed=5),
                               kernel_constraint=constraints.MaxNorm(0.5),
                               bias_constraint="non_neg",
                               input_shape=(4,)),
            pasco.layers.Dense(1, kernel_initializer="he_normal",
                               kernel_constraint=constraints.NonNeg())])
    lr = 0.1
    model.compile(optimizer=pasco.optimizers.SGD(lr),
                  loss=losses.Huber(delta=0.7))
    model.build()
    config = json.loads(model.to_json())
    dense = config["config"]["layers"][0]["config"]
    if dense.get("kernel_constraint") != {
            "class_name": "MaxNorm", "config": {"max_value": 0.5,
                                                "axis": 0}} or \
            dense.get("bias_constraint") != {"class_name": "NonNeg",
                                             "config": {}}:
        return fail(f"the layer's config: {dense}")
    if config["compile_config"]["loss"]["class_name"] != "Huber":
        return fail(f"the compile config's loss: "
                    f"{config['compile_config']['loss']}")
    w = {v.name: v.numpy().astype(np.float64) for v in model.variables}
    w1, b1 = w["dense/kernel"], w["dense/bias"]
    w2, b2 = w["dense_1/kernel"], w["dense_1/bias"]
    if np.sqrt((w1 * w1).sum(0)).max() <= 0.5 or b1.min() >= 0:
        return fail("the initial values already satisfy the constraints: "
                    "the test would prove nothing")

    data = pasco.data.csv(f"{d}/c.csv", label="label", batch_size=16,
                          label_type="float")
    model.fit(data, epochs=1, steps_per_epoch=1, verbose=0)
    # numpy: forward, Huber(0.7)'s gradient, SGD, then the projections
    xs = x.astype(np.float64)
    h = xs @ w1 + b1
    out = h @ w2 + b2
    e = out - y.astype(np.float64)[:, None]
    g = np.clip(e, -0.7, 0.7) / e.size
    gw2, gb2 = h.T @ g, g.sum(0)
    dh = g @ w2.T
    gw1, gb1 = xs.T @ dh, dh.sum(0)
    want = {"dense/kernel": max_norm(w1 - lr * gw1, 0.5),
            "dense/bias": non_neg(b1 - lr * gb1),
            "dense_1/kernel": non_neg(w2 - lr * gw2),
            "dense_1/bias": b2 - lr * gb2}
    got = {v.name: v.numpy() for v in model.variables}
    for name, v in want.items():
        if not np.allclose(got[name], v, rtol=1e-5, atol=1e-6):
            return fail(f"{name} after one step: {got[name].ravel()[:6]}, "
                        f"numpy's {v.ravel()[:6]}")
    norms = np.sqrt((got["dense/kernel"].astype(np.float64) ** 2).sum(0))
    print(f"one step: every variable is numpy's projection of the SGD "
          f"update (kernel column norms {norms})", flush=True)

    model.fit(data, epochs=1, steps_per_epoch=20, verbose=0)
    got = {v.name: v.numpy() for v in model.variables}
    norms = np.sqrt((got["dense/kernel"].astype(np.float64) ** 2).sum(0))
    if norms.max() > 0.5 + 1e-6:
        return fail(f"kernel column norms {norms} > 0.5")
    for name in ("dense/bias", "dense_1/kernel"):
        if got[name].min() < 0:
            return fail(f"{name} has a negative entry: {got[name]}")
    print(f"21 steps: column norms {norms}, no negative constrained weight",
          flush=True)
    # a norm over axis 0 of a variable split over the ps is refused; an
    # Embedding's rows (axis 1) are each on one ps
    with strategy.scope():
        bad = pasco.Sequential([pasco.layers.Embedding(
            40, 4, num_shards=2, input_length=2,
            embeddings_constraint=constraints.MaxNorm(1.0))])
        good = pasco.Sequential([pasco.layers.Embedding(
            40, 4, num_shards=2, input_length=2,
            embeddings_constraint=constraints.MaxNorm(1.0, axis=1))])
    bad.compile(optimizer="sgd", loss="mse")
    good.compile(optimizer="sgd", loss="mse")
    try:
        bad.build()
        return fail("MaxNorm over axis 0 of a sharded table was accepted")
    except pasco.InvalidArgumentError as e:
        if "MaxNorm over axis 0 needs the whole variable on one ps" \
                not in str(e):
            return fail(f"the refusal says: {e}")
        print(f"sharded, axis 0: {e}", flush=True)
    good.build()
    print("constraints: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
