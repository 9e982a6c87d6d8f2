"""Issue 33's remaining Keras options on a launched cluster (run_test.py's
keras_extras case, `pasco launch --ps 2 --workers 1`, every task
`python3 keras_extras.py DIR`), fit, evaluate and predict run by the
worker against numpy references written here from Keras's definitions:

- BatchNormalization(axis=1) on [batch, C, T] (a Reshape first), with a
  gamma_regularizer: after one training step on one batch its moving
  mean and variance on the ps are Keras's update along axis 1
  (statistics over the batch and the steps); a second, frozen one
  (trainable=False) keeps every variable as it was; evaluate's loss is
  numpy's inference pass plus the L2 penalty of the trained gamma;
- Embedding with embeddings_regularizer L2 and activity_regularizer L1,
  then Dense with activity_regularizer L2: evaluate's loss (one batch)
  is numpy's mse + l2 * sum of the looked-up rows squared (each once) +
  the activity terms divided by the batch size;
- a sequence model (Embedding's sequence, Dense per step): predict
  returns [examples, steps, dim], numpy's forward pass.
Prints "keras_extras: OK" or "keras_extras: FAILED: why" (exit 1)."""

import numpy as np

import pasco
from numpy_check import close, weights

L = pasco.layers


def batch_norm_axis(strategy):
    rng = np.random.default_rng(5)
    n, c, t = 24, 3, 4
    x = (rng.normal(size=(n, c, t)) * [[1.0], [4.0], [0.5]] +
         [[0.0], [3.0], [-2.0]]).astype(np.float32)
    y = x.reshape(n, -1).sum(1, keepdims=True).astype(np.float32) * 0.1
    bn = L.BatchNormalization(axis=1, momentum=0.9,
                              gamma_regularizer=pasco.regularizers.L2(0.5))
    frozen = L.BatchNormalization(axis=-2, trainable=False)
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(c * t,)),
                                  L.Reshape((c, t)), bn, frozen,
                                  L.Flatten(), L.Dense(1)])
    model.compile(optimizer=pasco.optimizers.SGD(0.05), loss="mse")
    model.build()
    before = weights(model)
    model.fit(x.reshape(n, -1), y, batch_size=n, epochs=1, shuffle=False,
              verbose=0)
    w = weights(model)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=(0, 2))
    var = (x64 * x64).mean(axis=(0, 2)) - mean * mean  # Keras's moments
    close(w[f"{bn.name}/moving_mean"], mean * 0.1, "moving_mean, axis 1")
    close(w[f"{bn.name}/moving_variance"], 0.9 + var * 0.1,
          "moving_variance, axis 1")
    for s in ("gamma", "beta", "moving_mean", "moving_variance"):
        name = f"{frozen.name}/{s}"
        if not np.array_equal(w[name], before[name]):
            raise AssertionError(f"{name} changed: {before[name]} -> "
                                 f"{w[name]} (trainable=False)")
    print("trainable=False: its variables are as they were", flush=True)
    if np.array_equal(w[f"{bn.name}/gamma"], before[f"{bn.name}/gamma"]):
        raise AssertionError("the trainable layer's gamma was not trained")

    def infer(layer, h, axis_shape):
        g = w[f"{layer}/gamma"].reshape(axis_shape)
        b = w[f"{layer}/beta"].reshape(axis_shape)
        m = w[f"{layer}/moving_mean"].reshape(axis_shape)
        v = w[f"{layer}/moving_variance"].reshape(axis_shape)
        return (h - m) / np.sqrt(v + 1e-3) * g + b

    h = infer(bn.name, x64, (1, c, 1))
    h = infer(frozen.name, h, (1, c, 1))
    dense = [k for k in w if k.endswith("/kernel")][0].split("/")[0]
    p = h.reshape(n, -1) @ w[f"{dense}/kernel"] + w[f"{dense}/bias"]
    want = np.mean((p - y) ** 2) + 0.5 * np.sum(w[f"{bn.name}/gamma"] ** 2)
    got = model.evaluate(x.reshape(n, -1), y, batch_size=n, verbose=0)
    close(got, want, "evaluate: mse + gamma's L2")


def embedding_regularizers(strategy):
    rng = np.random.default_rng(6)
    n, k, vocab, dim = 16, 3, 50, 4
    ids = rng.integers(0, 12, size=(n, k)).astype(np.int64)  # rows < 12
    y = rng.normal(size=(n, 1)).astype(np.float32)
    emb = L.Embedding(vocab, dim,
                      embeddings_regularizer=pasco.regularizers.L2(0.3),
                      activity_regularizer=pasco.regularizers.L1(0.2))
    dense = L.Dense(1, activity_regularizer="l2")  # Keras's l2: 0.01
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(k,), dtype="int64"),
                                  emb, dense])
    model.compile(optimizer=pasco.optimizers.SGD(0.01), loss="mse")
    model.fit(ids, y, batch_size=n, epochs=2, shuffle=False, verbose=0)
    w = weights(model)
    table = w[f"{emb.name}/embeddings"]
    e = table[ids].mean(axis=1)  # combiner mean
    p = e @ w[f"{dense.name}/kernel"] + w[f"{dense.name}/bias"]
    rows = np.unique(ids)
    want = (np.mean((p - y) ** 2) + 0.3 * np.sum(table[rows] ** 2) +
            0.2 * np.sum(np.abs(e)) / n + 0.01 * np.sum(p * p) / n)
    got = model.evaluate(ids, y, batch_size=n, verbose=0)
    close(got, want, "evaluate: mse + rows' L2 + activity terms")


def sequence_predict(strategy):
    rng = np.random.default_rng(7)
    n, t, vocab, dim, units = 10, 5, 20, 3, 2
    ids = rng.integers(0, vocab, size=(n, t)).astype(np.int64)
    emb = L.Embedding(vocab, dim, combiner=None)
    dense = L.Dense(units, activation="tanh")
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(t,), dtype="int64"),
                                  emb, dense])
    model.compile(optimizer="sgd", loss="mse")
    got = model.predict(ids, batch_size=4)
    w = weights(model)
    want = np.tanh(w[f"{emb.name}/embeddings"][ids] @
                   w[f"{dense.name}/kernel"] + w[f"{dense.name}/bias"])
    if got.shape != (n, t, units):
        raise AssertionError(f"predict: shape {got.shape}, Keras's is "
                             f"{(n, t, units)}")
    close(got, want, "predict of a sequence [examples, steps, units]")


def chief(cluster):
    strategy = pasco.ParameterServerStrategy(cluster)
    try:
        batch_norm_axis(strategy)
        embedding_regularizers(strategy)
        sequence_predict(strategy)
    except AssertionError as e:
        print(f"keras_extras: FAILED: {e}", flush=True)
        return 1
    print("keras_extras: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
