"""A CSV classifier trained from a Python chief on C workers and ps:
examples/make_table's data (DIR/train.csv, DIR/eval.csv), the MLP of
examples/mlp_csv. Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 train_csv.py DIR
The chief checks what it got and exits 1 when something is wrong:
val_accuracy below 0.9 at the end, a Python callback that did not see
every epoch's logs, evaluate disagreeing with the last epoch's
validation, weights that do not round-trip."""

import os
import sys

import numpy as np

import pasco


class Recorder(pasco.callbacks.Callback):
    """Keeps each epoch's logs as the Python callback sees them."""

    def __init__(self):
        self.seen = []
        self.began = self.ended = False

    def on_train_begin(self, logs=None):
        self.began = True

    def on_epoch_end(self, epoch, logs=None):
        self.seen.append((epoch, dict(logs)))
        print(f"callback: epoch {epoch}: {logs}", flush=True)

    def on_train_end(self, logs=None):
        self.ended = True


def header_index(path, name):
    with open(path) as f:
        return f.readline().strip().split(",").index(name)


def fail(msg):
    print(f"train_csv: FAILED: {msg}", flush=True)
    return 1


def chief(cluster):
    if cluster is None or len(cluster.argv) != 2:
        print("usage: pasco launch ... -- python3 train_csv.py DIR")
        return 2
    d = cluster.argv[1]
    strategy = pasco.ParameterServerStrategy(cluster)
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32,
                           shuffle=1000)
    val = pasco.data.csv(f"{d}/eval.csv", label="label", batch_size=256)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.layers.Dense(64, activation="relu"),
            pasco.layers.Dense(64, activation="relu"),
            pasco.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=pasco.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    rec = Recorder()
    history = model.fit(train, epochs=3, steps_per_epoch=100,
                        validation_data=val, callbacks=[rec])
    print("history:", history.history, flush=True)
    if [e for e, _ in rec.seen] != [0, 1, 2] or not rec.began or \
            not rec.ended:
        return fail(f"the callback saw epochs {[e for e, _ in rec.seen]}")
    for (e, logs), i in zip(rec.seen, range(3)):
        for k in ("loss", "accuracy", "val_loss", "val_accuracy"):
            if k not in logs or logs[k] != history.history[k][i]:
                return fail(f"epoch {e}: the callback's {k} "
                            f"{logs.get(k)} is not the History's")
    acc = history.history["val_accuracy"][-1]
    if acc < 0.9:
        return fail(f"val_accuracy {acc} < 0.9")
    ev = model.evaluate(val, return_dict=True)
    print("evaluate:", ev, flush=True)
    if abs(ev["accuracy"] - acc) > 1e-9:
        return fail(f"evaluate's accuracy {ev['accuracy']} is not the last "
                    f"val_accuracy {acc}")
    w = model.get_weights()
    if [a.shape for a in w] != [(64, 64), (64,), (64, 64), (64,), (64, 10),
                                (10,)]:
        return fail(f"weights of shapes {[a.shape for a in w]}")
    model.set_weights([np.zeros_like(a) for a in w])
    zero = model.evaluate(val, return_dict=True)
    if zero["accuracy"] > 0.2:
        return fail(f"all-zero weights still score {zero['accuracy']}")
    model.set_weights(w)
    back = model.evaluate(val, return_dict=True)
    if abs(back["accuracy"] - acc) > 1e-9:
        return fail("set_weights did not restore the weights")
    import glob
    import tempfile
    tmps = os.path.join(tempfile.gettempdir(), "pasco-predict-*")
    before = set(glob.glob(tmps))
    pred = model.predict(val)
    if pred.shape != (2000, 10) or \
            not np.allclose(pred.sum(axis=1), 1, atol=1e-4):
        return fail(f"predict gave {pred.shape}")
    if set(glob.glob(tmps)) != before:
        return fail("predict left its temporary directory behind")
    # in the file's order (Keras's): its accuracy against the file's labels
    # is evaluate's, though 2 workers each scored every other row
    labels = np.loadtxt(f"{d}/eval.csv", delimiter=",", skiprows=1,
                        usecols=[header_index(f"{d}/eval.csv", "label")])
    if abs((pred.argmax(1) == labels).mean() - acc) > 1e-9:
        return fail(f"predict's rows are not in the file's order: accuracy "
                    f"{(pred.argmax(1) == labels).mean()} against {acc}")
    # the same rows split into 4 files, sharded by files: file order too
    parts = tempfile.mkdtemp(prefix="pasco-parts-")
    with open(f"{d}/eval.csv") as f:
        head, *rows = f.read().splitlines()
    for k, (lo, hi) in enumerate([(0, 700), (700, 1000), (1000, 1900),
                                  (1900, len(rows))]):
        with open(f"{parts}/part-{k}.csv", "w") as f:
            f.write("\n".join([head] + rows[lo:hi]) + "\n")
    split = pasco.data.csv(f"{parts}/part-*.csv", label="label",
                           batch_size=256)
    again = model.predict(split)
    import shutil
    shutil.rmtree(parts)
    if again.shape != pred.shape or not np.allclose(again, pred, atol=1e-5):
        return fail("predict over 4 files is not the one file's order")
    print(f"train_csv: OK val_accuracy {acc:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
