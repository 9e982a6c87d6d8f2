"""Normalization.adapt(dataset) from a Python chief: the layer adapted
from pasco.data.csv(DIR/train.csv) (built whole on the chief,
pasco_dataset_from_name) has on the ps exactly numpy's per-column mean
and population variance of the CSV's feature columns; adapted from a
TFRecord file of the same rows (pasco.data.write_tfrecord), the same;
the model then trains (val_accuracy >= 0.9); a dataset repeated forever
is ValueError, a missing file NotFoundError naming it. Run on every
task:
    pasco launch --ps 2 --workers 2 -- python3 adapt.py DIR"""

import numpy as np

import pasco


def fail(msg):
    print(f"adapt: FAILED: {msg}", flush=True)
    return 1


def stats(model, layer):
    got = {v.name: v.numpy() for v in model.variables}
    return got[f"{layer.name}/mean"], got[f"{layer.name}/variance"]


def close(a, b):
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-5, atol=1e-6)


def chief(cluster):
    if cluster is None or len(cluster.argv) != 2:
        print("usage: pasco launch ... -- python3 adapt.py DIR")
        return 2
    d = cluster.argv[1]
    table = np.loadtxt(f"{d}/train.csv", delimiter=",", skiprows=1)
    with open(f"{d}/train.csv") as f:
        header = f.readline().strip().split(",")
    x = table[:, [i for i, c in enumerate(header) if c != "label"]]
    want_mean, want_var = x.mean(axis=0), x.var(axis=0)

    strategy = pasco.ParameterServerStrategy(cluster)
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32,
                           shuffle=1000)
    val = pasco.data.csv(f"{d}/eval.csv", label="label", batch_size=256)
    norm = pasco.layers.Normalization()
    norm.adapt(pasco.data.csv(f"{d}/train.csv", label="label",
                              batch_size=500))
    with strategy.scope():
        model = pasco.Sequential([
            norm, pasco.layers.Dense(32, activation="relu"),
            pasco.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=pasco.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.build()
    mean, var = stats(model, norm)
    print(f"csv: mean[:3] {mean[:3]} (numpy {want_mean[:3]}), var[:3] "
          f"{var[:3]} (numpy {want_var[:3]})", flush=True)
    if not close(mean, want_mean) or not close(var, want_var):
        return fail("the csv-adapted mean / variance are not numpy's")

    # the same rows as one TFRecord feature named as the model's input
    pasco.data.write_tfrecord(f"{d}/train.tfrecord",
                              {"input": x.astype(np.float32)})
    norm2 = pasco.layers.Normalization()
    norm2.adapt(pasco.data.tfrecord(
        f"{d}/train.tfrecord",
        features={"input": pasco.data.Feature("float", x.shape[1])},
        batch_size=1000))
    with strategy.scope():
        m2 = pasco.Sequential([norm2, pasco.layers.Dense(1)])
    m2.compile(optimizer="sgd", loss="mse")
    m2.build()
    mean2, var2 = stats(m2, norm2)
    if not close(mean2, want_mean) or not close(var2, want_var):
        return fail(f"the tfrecord-adapted statistics are not numpy's: "
                    f"{mean2[:3]} {var2[:3]}")

    history = model.fit(train, epochs=2, steps_per_epoch=100,
                        validation_data=val, verbose=0)
    acc = history.history["val_accuracy"][-1]
    print(f"fit: val_accuracy {acc:.4f}", flush=True)
    if acc < 0.9:
        return fail(f"val_accuracy {acc} < 0.9")

    try:
        pasco.layers.Normalization().adapt(train.repeat())
        return fail("adapt of a dataset repeated forever was accepted")
    except ValueError as e:
        print(f"repeat forever: ValueError: {e}", flush=True)
    norm3 = pasco.layers.Normalization(input_shape=(x.shape[1],))
    norm3.adapt(pasco.data.csv(f"{d}/missing.csv", label="label",
                               columns=[c for c in header if c != "label"]))
    with strategy.scope():
        m3 = pasco.Sequential([norm3, pasco.layers.Dense(1)])
    m3.compile(optimizer="sgd", loss="mse")
    try:
        m3.build()
        return fail("adapt of a missing file did not fail")
    except pasco.NotFoundError as e:
        print(f"missing file: NotFoundError: {e}", flush=True)
        if "missing.csv" not in str(e):
            return fail("the error does not name the file")
    print("adapt: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
