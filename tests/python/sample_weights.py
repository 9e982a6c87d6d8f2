"""sample_weight, class_weight and weighted_metrics (run_test.py's
sample_weights case, `pasco launch --ps 2 --workers 3`, every task
`python3 sample_weights.py DIR`). Against numpy references written here,
Keras 3's definitions:

- evaluate(x, y, sample_weight=w): the loss is sum_i(w_i * l_i) / n
  (keras.losses.Loss's "sum_over_batch_size": not divided by the weights'
  sum), l_i the sparse categorical cross-entropy of example i; metrics=
  ["accuracy"] is every example's hit once, weighted_metrics=["accuracy",
  ...] sum(w_i * hit_i) / sum(w_i), logged as "weighted_accuracy"
  (Keras's name for a taken one); a binary model's weighted bce loss and
  weighted_metrics AUC (its confusion counts weighted), precision and mse
  beside the unweighted "auc";
- fit(x, y, sample_weight=w), one SGD step over the whole batch: the
  kernel and bias move by -lr times numpy's gradient of the weighted loss,
  sum_i w_i (p_i - onehot_i) x_i / n, and the epoch's loss is the weighted
  loss before the step;
- fit(x, y, class_weight={0: .., 2: ..}): the same with w_i the class's
  weight of y_i (1 for class 1, not named), as Keras's
  class_weight_to_sample_weights; the same step on a pasco.data dataset
  given class_weight (its spec's, applied by the workers);
- validation_data=(x, y, w): val_loss and val_weighted_accuracy weighted;
  validation_split=0.25 with sample_weight: the last quarter's weights;
- sample_weight with class_weight, a weight array of the wrong length and
  a class_weight with a string key are refused with Keras's messages.
Prints "sample_weights: OK" or "sample_weights: FAILED: why" (exit 1)."""

import os
import sys

import numpy as np

import pasco


def fail(msg):
    print(f"sample_weights: FAILED: {msg}", flush=True)
    return 1


def probs(k, b, x):
    z = x.astype(np.float64) @ k + b
    z = z - z.max(axis=1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)


def weighted_xent(p, y, w):
    """Keras's reduce_weighted_values: sum(w * loss) / examples."""
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return float(np.sum(w * -np.log(p[np.arange(len(y)), y])) / len(y))


def grads(k, b, x, y, w):
    """The weighted loss's gradients in the kernel and bias."""
    p = probs(k, b, x)
    d = p.copy()
    d[np.arange(len(y)), y] -= 1
    d *= (w / len(y))[:, None]
    return x.astype(np.float64).T @ d, d.sum(axis=0)


def close(a, b, what, tol=2e-5):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    err = float(np.max(np.abs(a - b)))
    if err > tol * max(1.0, float(np.max(np.abs(b)))):
        raise AssertionError(f"{what}: {a!r}, numpy says {b!r}")
    print(f"{what}: max |diff| {err:.2e}", flush=True)


def refused(what, fn, text):
    try:
        fn()
    except (ValueError, TypeError) as e:
        if text not in str(e):
            raise AssertionError(f"{what}: {e!r} does not say {text!r}")
        print(f"{what}: {e}", flush=True)
        return
    raise AssertionError(f"{what}: no error")


def roc_auc(y, p, w, n=200):
    """Keras's AUC (ROC, interpolation, n thresholds as float32, a
    prediction above one positive), each example's counts times w."""
    t = np.array([-1e-7] + [j / (n - 1) for j in range(1, n - 1)] +
                 [1 + 1e-7], np.float32).astype(np.float64)
    pos = (y != 0).astype(np.float64) * w
    neg = (y == 0).astype(np.float64) * w
    above = p[None, :] > t[:, None]
    tp, fp = above @ pos, above @ neg
    tpr = tp / pos.sum()
    fpr = fp / neg.sum()
    return float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2))


def binary_weighted_metrics(strategy, x, w):
    """A binary model's weighted loss and weighted AUC, precision and mse
    against numpy, from the outputs predict returns (the ones evaluate
    counted)."""
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.float32)
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(4,)),
                                  pasco.layers.Dense(1,
                                                     activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy",
                  metrics=["auc"],
                  weighted_metrics=["auc", "precision", "mse"])
    ev = model.evaluate(x, y, batch_size=9, sample_weight=w,
                        return_dict=True)
    p = model.predict(x).reshape(-1).astype(np.float64)
    z = np.log(p) - np.log1p(-p)  # the logits, as the loss takes them
    bce = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
    above = p > np.float32(0.5)
    want = {"loss": np.sum(w * bce) / len(y),
            "auc": roc_auc(y, p, np.ones(len(y))),
            "weighted_auc": roc_auc(y, p, w),
            "precision": np.sum(w * above * y) / np.sum(w * above),
            "mse": np.sum(w * (p - y) ** 2) / np.sum(w)}
    if sorted(ev) != sorted(want):
        raise AssertionError(f"evaluate's logs {sorted(ev)}")
    for k, v in want.items():
        close(ev[k], v, f"binary {k}", tol=1e-5)


def one_step(model, lr, x, y, w, fit, shares=None):
    """The weights before and after fit (one step of SGD(lr) over one
    batch) against numpy's step on the weighted loss of that batch: every
    example, or (shares) the examples of one of the workers' shares,
    whichever worker ran it."""
    k, b = (np.asarray(a, np.float64) for a in model.get_weights())
    h = fit()
    k2, b2 = model.get_weights()
    errs = []
    for rows in shares or [np.arange(len(y))]:
        gk, gb = grads(k, b, x[rows], y[rows], w[rows])
        try:
            close(k2, k - lr * gk, "kernel after one weighted step")
            close(b2, b - lr * gb, "bias after one weighted step")
            close(h.history["loss"][0],
                  weighted_xent(probs(k, b, x[rows]), y[rows], w[rows]),
                  "fit's loss (weighted, before the step)")
            return h
        except AssertionError as e:
            errs.append(str(e))
    raise AssertionError("; ".join(errs))


def run(d, strategy):
    rng = np.random.default_rng(5)
    n = 48
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = np.argmax(x[:, :3] + 0.3 * rng.normal(size=(n, 3)), axis=1)
    y = y.astype(np.int64)
    w = rng.uniform(0, 3, size=n).astype(np.float32)
    w[::7] = 0
    lr = 0.5
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(4,)),
                                  pasco.layers.Dense(3,
                                                     activation="softmax")])
    model.compile(optimizer=pasco.optimizers.SGD(lr),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"], weighted_metrics=["accuracy"])

    ev = model.evaluate(x, y, batch_size=5, sample_weight=w,
                        return_dict=True)
    k, b = model.get_weights()
    p = probs(k, b, x)
    hit = (np.argmax(p, axis=1) == y).astype(np.float64)
    if sorted(ev) != ["accuracy", "loss", "weighted_accuracy"]:
        raise AssertionError(f"evaluate's logs {sorted(ev)}")
    close(ev["loss"], weighted_xent(p, y, w), "evaluate's weighted loss")
    close(ev["accuracy"], hit.mean(), "accuracy (unweighted)")
    close(ev["weighted_accuracy"], np.sum(w * hit) / np.sum(w),
          "weighted_accuracy")
    unweighted = model.evaluate(x, y, batch_size=5, return_dict=True)
    close(unweighted["loss"], weighted_xent(p, y, np.ones(n)),
          "evaluate without weights")
    close(unweighted["weighted_accuracy"], hit.mean(),
          "weighted_accuracy without weights")

    # numpy arrays: the step's batch is every example (exact epochs)
    one_step(model, lr, x, y, w, lambda: model.fit(
        x, y, sample_weight=w, batch_size=n, epochs=1, shuffle=False,
        verbose=0))

    cw = {0: 0.25, 2: 4.0}
    wc = np.array([cw.get(int(c), 1.0) for c in y])
    one_step(model, lr, x, y, wc, lambda: model.fit(
        x, y, class_weight=cw, batch_size=n, epochs=1, shuffle=True,
        verbose=0))

    # a pasco.data dataset (every worker reads it whole) with the weights
    # as a feature, or given class_weight: the workers weigh it
    path = os.path.join(d, "data.tfrecord")
    pasco.data.write_tfrecord(path, {"input": x, "sw": w, "label": y})
    feats = {"input": pasco.data.Feature("float", 4),
             "sw": pasco.data.Feature("float", 1)}
    ds = pasco.data.tfrecord(path, feats, label="label", batch_size=n,
                             repeat=-1, shard="none", sample_weight="sw")
    one_step(model, lr, x, y, w, lambda: model.fit(
        ds, steps_per_epoch=1, epochs=1, verbose=0))
    ds = pasco.data.tfrecord(path, {"input": feats["input"]}, label="label",
                             batch_size=n, repeat=-1, shard="none")
    one_step(model, lr, x, y, wc, lambda: model.fit(
        ds, class_weight=cw, steps_per_epoch=1, epochs=1, verbose=0))

    # validation_data with weights: evaluated with them at the epoch's end
    h = model.fit(x[:32], y[:32], batch_size=8, epochs=1, verbose=0,
                  validation_data=(x[32:], y[32:], w[32:]))
    k, b = model.get_weights()
    p = probs(k, b, x[32:])
    hit = (np.argmax(p, axis=1) == y[32:]).astype(np.float64)
    close(h.history["val_loss"][-1], weighted_xent(p, y[32:], w[32:]),
          "val_loss (weighted)")
    close(h.history["val_weighted_accuracy"][-1],
          np.sum(w[32:] * hit) / np.sum(w[32:]), "val_weighted_accuracy")

    binary_weighted_metrics(strategy, x, w)

    # validation_split splits the weights with the arrays (Keras's)
    h = model.fit(x, y, sample_weight=w, validation_split=0.25,
                  batch_size=8, epochs=1, verbose=0)
    k, b = model.get_weights()
    close(h.history["val_loss"][-1],
          weighted_xent(probs(k, b, x[36:]), y[36:], w[36:]),
          "val_loss (validation_split, weighted)")

    refused("both weights",
            lambda: model.fit(x, y, sample_weight=w, class_weight=cw),
            "You cannot `class_weight` and `sample_weight` at the same "
            "time.")
    refused("weights of the wrong length",
            lambda: model.evaluate(x, y, sample_weight=w[:5]),
            "sample_weight must be one number per example")
    refused("a class_weight key that is no class",
            lambda: model.fit(x, y, class_weight={"a": 1.0}),
            "integer keys")
    return 0


def chief(cluster):
    d = cluster.argv[1]
    strategy = pasco.ParameterServerStrategy(cluster)
    try:
        rv = run(d, strategy)
    except AssertionError as e:
        return fail(str(e))
    if rv == 0:
        print("sample_weights: OK", flush=True)
    return rv


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
