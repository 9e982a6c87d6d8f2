"""LayerNormalization's axes, traced losses with sample weights and
compile's loss_weights on a launched cluster (run_test.py's keras_weights
case, `pasco launch --ps 2 --workers 1`, every task `python3
keras_weights.py DIR`), against numpy references written here from
Keras 3's definitions:

- LayerNormalization(axis=[1, 2]) then LayerNormalization(axis=1) on
  [batch, T, D] (a Reshape first), after a fit of two steps: gamma and
  beta have Keras's shapes ([T, D], [T]), and predict is numpy's forward
  pass with the trained variables (keras/src/ops/nn.py
  _layer_normalization: each example's mean and biased variance over the
  axes, gamma and beta broadcast along the others);
- a custom loss traced from a function returning per-example losses:
  evaluate(x, y, sample_weight=w) is sum(w_i * l_i) / n, Keras's
  sum_over_batch_size; a pasco.losses.Loss subclass returning a scalar:
  l * mean(w), as Keras's reduce_weighted_values broadcasts it; one SGD
  step of fit(x, y, sample_weight=w) moves the kernel by -lr times
  numpy's gradient of the weighted loss;
- compile(loss_weights=...): a float, [float] or {output name: float}
  scales evaluate's loss; one SGD step of fit moves the kernel by -lr
  times the scaled gradient; a list of two is refused naming the count.
Prints "keras_weights: OK" or "keras_weights: FAILED: why" (exit 1)."""

import numpy as np

import pasco
from numpy_check import close, weights
from pasco import ops

L = pasco.layers


def layer_norm(x, gamma, beta, axes, eps=1e-3):
    """Keras's _layer_normalization, axes sorted."""
    mean = x.mean(axis=axes, keepdims=True)
    var = (x * x).mean(axis=axes, keepdims=True) - mean * mean
    shape = [1] * x.ndim
    for a in axes:
        shape[a] = x.shape[a]
    return (x - mean) / np.sqrt(var + eps) * gamma.reshape(shape) + \
        beta.reshape(shape)


def layer_norm_axes(strategy):
    rng = np.random.default_rng(3)
    n, t, d = 12, 4, 5
    x = (rng.normal(size=(n, t, d)) * np.arange(1, t + 1)[:, None] +
         np.arange(d)).astype(np.float32)
    y = x.reshape(n, -1)[:, :3].sum(1, keepdims=True) * 0.1
    whole = L.LayerNormalization(axis=[-1, 1])  # sorted: [1, 2]
    steps = L.LayerNormalization(axis=1)
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(t * d,)),
                                  L.Reshape((t, d)), whole, steps,
                                  L.Flatten(), L.Dense(1)])
    model.compile(optimizer=pasco.optimizers.SGD(0.1), loss="mse")
    model.fit(x.reshape(n, -1), y, batch_size=n // 2, epochs=1,
              shuffle=False, verbose=0)
    w = weights(model)
    for name, want in ((f"{whole.name}/gamma", (t, d)),
                       (f"{whole.name}/beta", (t, d)),
                       (f"{steps.name}/gamma", (t,))):
        if w[name].shape != want:
            raise AssertionError(f"{name}: shape {w[name].shape}, Keras's "
                                 f"is {want}")
    if np.allclose(w[f"{whole.name}/gamma"], 1):
        raise AssertionError("the first LayerNormalization's gamma was "
                             "not trained")
    h = layer_norm(x.astype(np.float64), w[f"{whole.name}/gamma"],
                   w[f"{whole.name}/beta"], (1, 2))
    h = layer_norm(h, w[f"{steps.name}/gamma"], w[f"{steps.name}/beta"],
                   (1,))
    dense = [k for k in w if k.endswith("/kernel")][0].split("/")[0]
    want = h.reshape(n, -1) @ w[f"{dense}/kernel"] + w[f"{dense}/bias"]
    close(model.predict(x.reshape(n, -1), batch_size=5), want,
          "predict through LayerNormalization axes [1, 2] then 1")


def per_example_sq(y_true, y_pred):
    return ops.mean(ops.square(y_pred - y_true), axis=-1)


class ScalarSq(pasco.losses.Loss):
    def call(self, y_true, y_pred):
        return ops.mean(ops.square(y_pred - y_true))


def dense_model(strategy, loss, lr=0.1, **compile_args):
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(3,)), L.Dense(1)])
    model.compile(optimizer=pasco.optimizers.SGD(lr), loss=loss,
                  **compile_args)
    model.build()
    return model


def data():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(8, 3)).astype(np.float32)
    y = rng.normal(size=(8, 1)).astype(np.float32)
    sw = np.array([1, 3, 0.5, 0, 2, 1, 1, 0.25], np.float32)
    return x, y, sw


def predict(w, x):
    k = [v for n, v in w.items() if n.endswith("/kernel")][0]
    b = [v for n, v in w.items() if n.endswith("/bias")][0]
    return x.astype(np.float64) @ k + b, k


def traced_losses_take_weights(strategy):
    x, y, sw = data()
    n = len(x)
    model = dense_model(strategy, per_example_sq)
    w = weights(model)
    p, k = predict(w, x)
    per = ((p - y) ** 2).mean(axis=1)
    got = model.evaluate(x, y, sample_weight=sw, batch_size=n, verbose=0)
    close(got, np.sum(sw * per) / n, "a traced per-example loss, weighted")
    got = model.evaluate(x, y, batch_size=n, verbose=0)
    close(got, per.mean(), "the same, unweighted")
    model.fit(x, y, sample_weight=sw, batch_size=n, epochs=1,
              shuffle=False, verbose=0)
    # d/dp of sum_i w_i mean_j (p_ij - y_ij)^2 / n
    g = (sw[:, None] * 2 * (p - y) / y.shape[1]) / n
    k2 = [v for nm, v in weights(model).items() if nm.endswith("/kernel")]
    close(k2[0], k - 0.1 * x.astype(np.float64).T @ g,
          "one SGD step on the weighted traced loss")
    scalar = dense_model(strategy, ScalarSq())
    p, _ = predict(weights(scalar), x)
    got = scalar.evaluate(x, y, sample_weight=sw, batch_size=n, verbose=0)
    close(got, ((p - y) ** 2).mean() * sw.mean(),
          "a traced scalar loss, weighted: loss * mean(w)")


def loss_weights(strategy):
    x, y, _ = data()
    n = len(x)
    plain = dense_model(strategy, "mse")
    p, k = predict(weights(plain), x)
    mse = ((p - y) ** 2).mean()
    close(plain.evaluate(x, y, batch_size=n, verbose=0), mse, "mse")
    for lw in (0.25, [0.25], "by name"):
        m = dense_model(strategy, "mse")
        if lw == "by name":
            lw = {m.layers[-1].name: 0.25}
        m.compile(optimizer=pasco.optimizers.SGD(0.1), loss="mse",
                  loss_weights=lw)
        p, k = predict(weights(m), x)
        close(m.evaluate(x, y, batch_size=n, verbose=0),
              0.25 * ((p - y) ** 2).mean(), f"loss_weights={lw!r}")
    m.fit(x, y, batch_size=n, epochs=1, shuffle=False, verbose=0)
    g = 0.25 * 2 * (p - y) / p.size
    k2 = [v for nm, v in weights(m).items() if nm.endswith("/kernel")]
    close(k2[0], k - 0.1 * x.astype(np.float64).T @ g,
          "one SGD step on the scaled loss")
    if m.get_config()["compile_config"].get("loss_weights") != 0.25:
        raise AssertionError(f"compile_config: "
                             f"{m.get_config()['compile_config']}")
    try:
        m.compile(optimizer="sgd", loss="mse", loss_weights=[1.0, 2.0])
    except ValueError as e:
        if "2 weights" not in str(e) or "1 output" not in str(e):
            raise AssertionError(f"loss_weights [1, 2]: {e}")
        print(f"loss_weights [1, 2]: {e}", flush=True)
    else:
        raise AssertionError("loss_weights [1, 2]: no error")


def chief(cluster):
    strategy = pasco.ParameterServerStrategy(cluster)
    try:
        layer_norm_axes(strategy)
        traced_losses_take_weights(strategy)
        loss_weights(strategy)
    except AssertionError as e:
        print(f"keras_weights: FAILED: {e}", flush=True)
        return 1
    print("keras_weights: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
