"""BatchNormalization on a launched cluster (issue 33), the chief in
Python, the ps and workers real processes. Run on every task:
    pasco launch --ps 2 --workers 1 -- python3 batch_norm.py DIR one
    pasco launch --ps 2 --workers 2 -- python3 batch_norm.py DIR two

one: 1 worker, batches in the file's order: after 10 steps the moving
mean and variance on the ps equal Keras's recurrence in numpy
(moving * momentum + batch * (1 - momentum), variance biased) over the
same batches; predict normalizes by them (numpy's inference pass on the
weights read back); a @pasco.function step calling the model with
training=True gives the same moving statistics.

two: 2 workers. Every batch of the same rows (mean c, variance 0): after
N steps Keras's recurrence gives moving_mean = c (1 - m^N) and
moving_variance = m^N, in any order, and at momentum m = 0.999 a step
that read a value another changed meanwhile moves that by 1e-6 of it:
so log(1 - mean / c) / log(m) counts the updates, which must be the N
steps (none lost, none twice). Then a digits-like task (deterministic:
8x8 class templates, noise, features of very different scales; no
scikit-learn here) trains an MLP with BatchNormalization to the
accuracy band of the same MLP without it: both >= 0.9, the first at
most 0.03 below (seen: 0.946 without, 1.0 with: it evens the scales)."""

import os

import numpy as np

import pasco

B = 16  # rows per batch


def fail(msg):
    print(f"batch_norm: FAILED: {msg}", flush=True)
    return 1


def write_csv(path, x, y):
    cols = [f"f{j}" for j in range(x.shape[1])]
    with open(path, "w") as f:
        f.write(",".join(cols + ["label"]) + "\n")
        for row, label in zip(x, y):
            f.write(",".join(repr(float(v)) for v in row) +
                    f",{label!r}\n")


def moving(model, layer):
    got = {v.name: v.numpy() for v in model.variables}
    return (got[f"{layer.name}/moving_mean"],
            got[f"{layer.name}/moving_variance"], got)


def numpy_recurrence(batches, momentum, width):
    mm, mv = np.zeros(width), np.ones(width)
    for x in batches:
        mean = x.mean(0)
        var = (x * x).mean(0) - mean * mean  # Keras's moments, biased
        mm = mm * momentum + mean * (1 - momentum)
        mv = mv * momentum + var * (1 - momentum)
    return mm, mv


def one(strategy, d):
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(4 * B, 3)) * [1.0, 5.0, 0.2] +
         [0.0, 10.0, -3.0]).astype(np.float32)
    x[B:2 * B] += 2.0  # batches of other means
    y = x @ np.array([0.5, -0.1, 2.0], np.float32)
    write_csv(f"{d}/one.csv", x, y)
    data = pasco.data.csv(f"{d}/one.csv", label="label", batch_size=B,
                          label_type="float")
    bn = pasco.layers.BatchNormalization(momentum=0.9)
    with strategy.scope():
        model = pasco.Sequential([bn, pasco.layers.Dense(1)])
    model.compile(optimizer=pasco.optimizers.SGD(0.01), loss="mse")
    model.fit(data, epochs=1, steps_per_epoch=10, verbose=0)
    mm, mv, got = moving(model, bn)
    x64 = x.astype(np.float64)
    want_mm, want_mv = numpy_recurrence(
        [x64[(t % 4) * B:(t % 4 + 1) * B] for t in range(10)], 0.9, 3)
    print(f"one: moving_mean {mm} (numpy {want_mm}), moving_variance {mv} "
          f"(numpy {want_mv})", flush=True)
    if not (np.allclose(mm, want_mm, rtol=1e-5, atol=1e-5) and
            np.allclose(mv, want_mv, rtol=1e-5, atol=1e-5)):
        return fail("the moving statistics are not Keras's recurrence")
    pred = model.predict(pasco.data.csv(f"{d}/one.csv", label="label",
                                        batch_size=B, label_type="float",
                                        repeat=1))
    g, b = got[f"{bn.name}/gamma"], got[f"{bn.name}/beta"]
    k, c = got["dense/kernel"], got["dense/bias"]
    want = ((x64 - mm) / np.sqrt(mv + 1e-3) * g + b) @ k + c
    err = float(np.max(np.abs(pred - want)))
    print(f"one: predict against numpy's inference pass: max error {err:.3g}",
          flush=True)
    if pred.shape != want.shape or err > 1e-4 * max(1, np.abs(want).max()):
        return fail("predict does not normalize by the moving statistics")
    return traced(strategy, d, want_mm, want_mv)


def traced(strategy, d, want_mm, want_mv):
    """The same 10 steps as a @pasco.function step calling the model with
    training=True: the same moving statistics."""
    coordinator = pasco.ClusterCoordinator(strategy)
    bn = pasco.layers.BatchNormalization(momentum=0.9)
    with strategy.scope():
        model = pasco.Sequential([bn, pasco.layers.Dense(1)])
    optimizer = pasco.optimizers.SGD(0.01)

    @pasco.function
    def train_step(iterator):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            pred = model(x, training=True)
            loss = pasco.losses.mean_squared_error(y, pred)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    data = pasco.data.csv(f"{d}/one.csv", label="label", batch_size=B,
                          label_type="float")
    model.build(data)
    it = iter(coordinator.create_per_worker_dataset(data))
    for _ in range(10):
        coordinator.schedule(train_step, args=(it,)).fetch()
    mm, mv, _ = moving(model, bn)
    print(f"one: a traced step's moving_mean {mm}, moving_variance {mv}",
          flush=True)
    if not (np.allclose(mm, want_mm, rtol=1e-5, atol=1e-5) and
            np.allclose(mv, want_mv, rtol=1e-5, atol=1e-5)):
        return fail("a traced step's moving statistics are not Keras's "
                    "recurrence")
    return 0


def count_updates(strategy, d, steps):
    c = np.array([1.0, 2.0, -3.0], np.float32)
    write_csv(f"{d}/same.csv", np.tile(c, (4 * B, 1)), np.zeros(4 * B))
    data = pasco.data.csv(f"{d}/same.csv", label="label", batch_size=B,
                          label_type="float")
    bn = pasco.layers.BatchNormalization(momentum=0.999)
    with strategy.scope():
        model = pasco.Sequential([bn, pasco.layers.Dense(1)])
    model.compile(optimizer=pasco.optimizers.SGD(0.01), loss="mse")
    model.fit(data, epochs=2, steps_per_epoch=steps // 2, verbose=0)
    mm, mv, _ = moving(model, bn)
    n_mean = np.log(1 - mm.astype(np.float64) / c) / np.log(0.999)
    n_var = np.log(mv.astype(np.float64)) / np.log(0.999)
    print(f"two: {steps} steps on 2 workers; updates counted by "
          f"moving_mean {n_mean}, by moving_variance {n_var}", flush=True)
    if np.max(np.abs(n_mean - steps)) > 0.05 or \
            np.max(np.abs(n_var - steps)) > 0.05:
        return fail(f"the moving statistics count other than {steps} "
                    f"updates")
    return 0


def digits_like(n, rng, templates):
    y = rng.integers(0, 10, size=n)
    x = templates[y] + rng.normal(scale=4.0, size=(n, 64))
    # pixels of very different scales and offsets: what BN evens out
    x = x * np.linspace(0.05, 20, 64) + np.linspace(-50, 50, 64)
    return x.astype(np.float32), y


def accuracy_band(strategy, d):
    rng = np.random.default_rng(7)
    templates = rng.uniform(0, 16, size=(10, 64))
    xt, yt = digits_like(2000, rng, templates)
    xv, yv = digits_like(500, rng, templates)
    write_csv(f"{d}/train.csv", xt, yt)
    write_csv(f"{d}/eval.csv", xv, yv)
    acc = {}
    for bn in (False, True):
        train = pasco.data.csv(f"{d}/train.csv", label="label",
                               batch_size=32, shuffle=1000, seed=1)
        val = pasco.data.csv(f"{d}/eval.csv", label="label", batch_size=250)
        layers = [pasco.layers.Dense(32)]
        if bn:
            layers.append(pasco.layers.BatchNormalization())
        layers += [pasco.layers.Activation("relu"),
                   pasco.layers.Dense(10, activation="softmax")]
        with strategy.scope():
            model = pasco.Sequential(layers)
        model.compile(optimizer=pasco.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"])
        model.fit(train, epochs=3, steps_per_epoch=60, verbose=0)
        acc[bn] = model.evaluate(val, return_dict=True)["accuracy"]
    print(f"two: digits-like accuracy without BatchNormalization "
          f"{acc[False]:.4f}, with {acc[True]:.4f}", flush=True)
    if min(acc.values()) < 0.9 or acc[True] < acc[False] - 0.03:
        return fail("with BatchNormalization the accuracy is below 0.9 or "
                    "more than 0.03 below the model's without it")
    return 0


def bad_arguments():
    """Arguments Pasco does not take are ValueError naming them."""
    L = pasco.layers
    cases = [(lambda: L.BatchNormalization(axis=0), "axis"),
             (lambda: L.BatchNormalization(momentum=1.5), "momentum"),
             (lambda: L.BatchNormalization(epsilon=-1), "epsilon"),
             (lambda: L.BatchNormalization(synchronized=True),
              "synchronized"),
             (lambda: L.BatchNormalization(axis=[1, 2]), "axis"),
             (lambda: L.BatchNormalization(gamma_regularizer="l3"),
              "gamma_regularizer"),
             (lambda: L.LayerNormalization(beta_constraint="nope"),
              "beta_constraint"),
             (lambda: L.LayerNormalization(gamma_initializer="nope"),
              "gamma_initializer")]
    for make, word in cases:
        try:
            make()
            return f"{word}: a bad value was accepted"
        except ValueError as e:
            if not str(e).startswith(word):
                return f"{word}: the message does not name it: {e}"
    return None


def chief(cluster):
    if cluster is None or len(cluster.argv) != 3 or \
            cluster.argv[2] not in ("one", "two"):
        print("usage: pasco launch ... -- python3 batch_norm.py DIR one|two")
        return 2
    d, mode = cluster.argv[1], cluster.argv[2]
    os.makedirs(d, exist_ok=True)
    bad = bad_arguments()
    if bad:
        return fail(bad)
    strategy = pasco.ParameterServerStrategy(cluster)
    if mode == "one":
        rv = one(strategy, d)
    else:
        rv = count_updates(strategy, d, 40) or accuracy_band(strategy, d)
    if rv == 0:
        print(f"batch_norm: OK {mode}", flush=True)
    return rv


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
