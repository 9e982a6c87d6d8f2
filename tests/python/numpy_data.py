"""fit / evaluate / predict on numpy arrays (run_test.py's numpy_data
case, `pasco launch --ps 2 --workers 2`, every task
`python3 numpy_data.py DIR`). Against numpy references written here:

- evaluate(x, y) is the sparse categorical cross-entropy over every
  example, computed by numpy from the model's weights (Keras's: the mean
  of -log(softmax(relu(x K1 + b1) K2 + b2)[y])), to float32 rounding;
- predict(x) returns every row once, in x's order: the numpy forward pass;
- fit(x, y, validation_split=0.25): validation on the last quarter (Keras
  splits before shuffling): val_loss is numpy's loss of those rows under
  the weights fit ends with; validation_data=(x, y) the same;
- a functional model of two named inputs given a dict of arrays;
- the written files are removed (TMPDIR is DIR/tmp: no pasco-numpy-*
  directory is left there);
- class_weight with sample_weight, a too small validation_split and y
  without x are refused
  with Keras's messages or Pasco's naming the argument.
Prints "numpy_data: OK" or "numpy_data: FAILED: why" (exit 1)."""

import os
import sys

import numpy as np

import pasco


def fail(msg):
    print(f"numpy_data: FAILED: {msg}", flush=True)
    return 1


def forward(ws, x):
    k1, b1, k2, b2 = ws
    h = np.maximum(x.astype(np.float64) @ k1 + b1, 0)
    z = h @ k2 + b2
    z = z - z.max(axis=1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)


def xent(p, y):
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return float(np.mean(-np.log(p[np.arange(len(y)), y])))


def close(a, b, what, tol=2e-5):
    if abs(a - b) > tol * max(1.0, abs(b)):
        raise AssertionError(f"{what}: {a!r}, numpy says {b!r}")
    print(f"{what}: {a:.7f} (numpy {b:.7f})", flush=True)


def refused(what, fn, text):
    try:
        fn()
    except (ValueError, TypeError) as e:
        if text not in str(e):
            raise AssertionError(f"{what}: {e!r} does not say {text!r}")
        print(f"{what}: {e}", flush=True)
        return
    raise AssertionError(f"{what}: no error")


def run(d, strategy):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(101, 3)).astype(np.float32)
    y = (np.argmax(x @ rng.normal(size=(3, 3)), axis=1)).astype(np.int64)
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(3,)),
                                  pasco.layers.Dense(6, activation="relu"),
                                  pasco.layers.Dense(3,
                                                     activation="softmax")])
    model.compile(optimizer=pasco.optimizers.Adam(0.01),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    ev = model.evaluate(x, y, batch_size=7, return_dict=True)
    ws = model.get_weights()
    close(ev["loss"], xent(forward(ws, x), y), "evaluate before fit")
    acc = float(np.mean(np.argmax(forward(ws, x), axis=1) == y))
    close(ev["accuracy"], acc, "accuracy before fit")
    p = model.predict(x, batch_size=8)
    if p.shape != (101, 3):
        raise AssertionError(f"predict: shape {p.shape}")
    err = np.abs(p - forward(ws, x)).max()
    if err > 1e-5:
        raise AssertionError(f"predict: rows differ from numpy's by {err}")
    print(f"predict: 101 rows in order, max |diff| {err:.2e}", flush=True)

    h = model.fit(x, y, batch_size=10, epochs=3, validation_split=0.25,
                  verbose=0)
    split = int(np.floor(101 * 0.75))
    ws = model.get_weights()
    close(h.history["val_loss"][-1],
          xent(forward(ws, x[split:]), y[split:]), "val_loss (split)")
    if len(h.history["loss"]) != 3 or not \
            h.history["loss"][-1] < h.history["loss"][0]:
        raise AssertionError(f"fit's losses {h.history['loss']}")
    h = model.fit(x[:60], y[:60], epochs=1, validation_data=(x[60:],
                                                            y[60:]),
                  verbose=0, shuffle=False)
    ws = model.get_weights()
    close(h.history["val_loss"][-1], xent(forward(ws, x[60:]), y[60:]),
          "val_loss (validation_data)")
    close(model.evaluate(x, y, return_dict=True)["loss"],
          xent(forward(ws, x), y),
          "evaluate after fit")

    # named inputs, as a dict
    with strategy.scope():
        a = pasco.Input(shape=(2,), name="a")
        b = pasco.Input(shape=(1,), name="b")
        o = pasco.layers.Dense(3, activation="softmax")(
            pasco.layers.Concatenate()([a, b]))
        two = pasco.Model(inputs=[a, b], outputs=o)
    two.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    feeds = {"a": x[:, :2], "b": x[:, 2]}
    # integer arrays for a float input are its numbers, as Keras casts them
    ints = np.round(x * 3).astype(np.int32)
    got = two.predict({"a": ints[:, :2], "b": ints[:, 2]})
    k, bias = two.get_weights()
    z = ints.astype(np.float64) @ k + bias
    want = np.exp(z - z.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    if np.abs(got - want).max() > 1e-5:
        raise AssertionError("predict on integer arrays differs")
    got = two.predict(feeds)
    k, bias = two.get_weights()
    z = x.astype(np.float64) @ k + bias
    want = np.exp(z - z.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    if np.abs(got - want).max() > 1e-5:
        raise AssertionError("predict on a dict of arrays differs")
    close(two.evaluate(feeds, y), xent(want, y), "evaluate on a dict")

    refused("class_weight with sample_weight",
            lambda: model.fit(x, y, class_weight={0: 1.0, 1: 2.0},
                              sample_weight=np.ones(len(y))),
            "You cannot `class_weight` and `sample_weight`")
    refused("validation_split too large",
            lambda: model.fit(x[:1], y[:1], validation_split=0.5),
            "which is not sufficient to split it")
    refused("no y", lambda: model.fit(x), "y: required")
    left = [f for f in os.listdir(os.path.join(d, "tmp"))
            if f.startswith("pasco-numpy-")]
    if left:
        raise AssertionError(f"files left in TMPDIR: {left}")
    return 0


def chief(cluster):
    d = cluster.argv[1]
    strategy = pasco.ParameterServerStrategy(cluster)
    try:
        rv = run(d, strategy)
    except AssertionError as e:
        return fail(str(e))
    if rv == 0:
        print("numpy_data: OK", flush=True)
    return rv


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
