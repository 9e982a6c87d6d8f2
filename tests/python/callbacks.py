"""Keras's callbacks on a launched cluster (2 ps, 2 workers), the chief in
Python. Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 callbacks.py DIR lr
    (TF_CONFIG by hand, the chief in tmux) python3 callbacks.py DIR bar

lr: a Dense(1) trained by SGD on a batch every step the same (every row
of DIR/same.csv is x = (1, 2), y = 3), one step an epoch, so each epoch's
update is known: ReduceLROnPlateau's learning rate per epoch is the one
of an independent implementation of Keras's rule fed the same logs, and
each weight's update is -lr_epoch * its gradient (numpy: 2 e x, 2 e for
e = w.x + b - y) as the ps applied it; LearningRateScheduler likewise;
the rate the callbacks left stays on model.optimizer and the next fit
runs at it; a callback's own model.optimizer.learning_rate = lr applies;
CSVLogger's file (header, a row per epoch equal to the History, append);
LambdaCallback's calls in order; TerminateOnNaN stops a fit fed a NaN
feature (DIR/nan.csv) after its first epoch; a schedule with
ReduceLROnPlateau is TypeError naming both; verbose=2 under the
launcher's pipe prints one line per epoch.
bar: fits with verbose=1 and "auto" in a terminal; the test reads the
screen (tests/python/run_test.py's progress_bar case).
The chief prints "callbacks: OK <mode>" or "callbacks: FAILED: why".
"""

import csv
import sys

import numpy as np

import pasco

X, Y = np.array([1.0, 2.0]), 3.0


def write_data(d):
    with open(f"{d}/same.csv", "w") as f:
        f.write("x0,x1,label\n" + "1,2,3\n" * 16)
    with open(f"{d}/nan.csv", "w") as f:
        f.write("x0,x1,label\n" + "nan,2,3\n" * 16)


def keras_plateau(values, lr, factor, patience, min_delta, cooldown, min_lr):
    """Keras 3's ReduceLROnPlateau (mode min) over the monitored values:
    the rate each epoch ran at, and the rate after the last."""
    best, wait, cool, out = None, 0, 0, []
    for v in values:
        out.append(lr)
        if cool > 0:
            cool, wait = cool - 1, 0
        if best is None or v + min_delta < best:
            best, wait = v, 0
        elif cool == 0:
            wait += 1
            if wait >= patience and lr > np.float32(min_lr):
                lr = max(lr * factor, min_lr)
                cool, wait = cooldown, 0
    return out, lr


def sgd_step(w, b, lr):
    """numpy: one SGD step of mse on the batch (x, y)."""
    e = float(w @ X + b - Y)
    return w - lr * 2 * e * X, b - lr * 2 * e


class Weights(pasco.callbacks.Callback):
    """The weights at each epoch's begin and end."""

    def __init__(self):
        self.begin, self.end = [], []

    def on_epoch_begin(self, epoch, logs=None):
        self.begin.append([a.astype(np.float64)
                           for a in self.model.get_weights()])

    def on_epoch_end(self, epoch, logs=None):
        self.end.append([a.astype(np.float64)
                         for a in self.model.get_weights()])


def check_updates(rec, lrs, what):
    """Each epoch's update is numpy's SGD step at that epoch's rate."""
    for e, lr in enumerate(lrs):
        (w0, b0), (w1, b1) = rec.begin[e], rec.end[e]
        w, b = sgd_step(w0.reshape(2), float(b0[0]), lr)
        if not (np.allclose(w1.reshape(2), w, rtol=1e-5, atol=1e-6) and
                abs(float(b1[0]) - b) < 1e-5 * (1 + abs(b))):
            raise AssertionError(f"{what}: epoch {e} at lr {lr}: the ps "
                                 f"gave {w1.ravel()}, {b1}; numpy "
                                 f"{w}, {b}")


def model_of(strategy, lr):
    with strategy.scope():
        m = pasco.Sequential([pasco.Input(shape=(2,)), pasco.layers.Dense(1)])
    m.compile(optimizer=pasco.optimizers.SGD(lr), loss="mse")
    return m


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


def lr_checks(strategy, d, train):
    # ReduceLROnPlateau on "loss" (min_delta 0.5: only big falls count)
    model = model_of(strategy, 0.05)
    rec = Weights()
    plateau = pasco.callbacks.ReduceLROnPlateau(
        monitor="loss", factor=0.5, patience=2, min_delta=0.5, cooldown=1,
        min_lr=0.004)
    log = pasco.callbacks.CSVLogger(f"{d}/log.csv")
    h = model.fit(train, epochs=10, steps_per_epoch=1, verbose=0,
                  callbacks=[rec, plateau, log])
    want, final = keras_plateau(h.history["loss"], 0.05, 0.5, 2, 0.5, 1,
                                0.004)
    print("losses", h.history["loss"], "\nrates", h.history["learning_rate"],
          "\nkeras's", want, flush=True)
    if not np.allclose(h.history["learning_rate"], want, rtol=1e-12) or \
            len(set(want)) < 3:
        raise AssertionError(f"ReduceLROnPlateau's rates "
                             f"{h.history['learning_rate']}, Keras's {want}")
    check_updates(rec, want, "ReduceLROnPlateau")
    if model.optimizer.learning_rate != final:
        raise AssertionError(f"model.optimizer.learning_rate "
                             f"{model.optimizer.learning_rate} after fit")
    kept = model.optimizer.learning_rate

    # CSVLogger: Keras's header, a row per epoch, numbers as repr
    rows = read_csv(f"{d}/log.csv")
    keys = sorted(h.history)
    if rows[0] != ["epoch"] + keys + [f"val_{k}" for k in keys] or \
            len(rows) != 11:
        raise AssertionError(f"CSVLogger's file: {rows[:2]}, {len(rows)} "
                             f"rows")
    for e, row in enumerate(rows[1:]):
        for k, v in zip(keys, row[1:]):
            if float(v) != h.history[k][e] or repr(float(v)) != v:
                raise AssertionError(f"CSVLogger: epoch {e} {k} {v}, the "
                                     f"History's {h.history[k][e]}")
        if row[0] != str(e) or row[len(keys) + 1:] != ["NA"] * len(keys):
            raise AssertionError(f"CSVLogger row {row}")

    # the next fit runs at the rate left; a callback's own setting, the
    # schedule, the order of LambdaCallback's calls; CSVLogger appends
    calls = []

    def own(epoch, logs):
        model.optimizer.learning_rate = 0.02 if epoch == 1 else \
            model.optimizer.learning_rate
    lam = pasco.callbacks.LambdaCallback(
        on_train_begin=lambda logs: calls.append("train_begin"),
        on_epoch_begin=lambda e, logs: calls.append(f"epoch_begin {e}"),
        on_train_batch_begin=lambda b, logs: calls.append(f"batch_begin {b}"),
        on_train_batch_end=lambda b, logs: calls.append(
            f"batch_end {b} {'loss' in logs}"),
        on_epoch_end=lambda e, logs: calls.append(f"epoch_end {e}"),
        on_train_end=lambda logs: calls.append("train_end"))
    rec = Weights()
    log = pasco.callbacks.CSVLogger(f"{d}/log.csv", append=True)
    h = model.fit(train, epochs=3, steps_per_epoch=1, verbose=0,
                  callbacks=[rec, pasco.callbacks.LambdaCallback(
                      on_epoch_begin=own), lam, log])
    check_updates(rec, [kept, 0.02, 0.02], "the rate left, then set")
    want_calls = ["train_begin"] + [
        c for e in range(3) for c in (f"epoch_begin {e}", f"batch_begin 0",
                                      f"batch_end 0 True", f"epoch_end {e}")
    ] + ["train_end"]
    if calls != want_calls:
        raise AssertionError(f"LambdaCallback's calls {calls}")
    rows = read_csv(f"{d}/log.csv")
    if len(rows) != 14 or [r[0] for r in rows[11:]] != ["0", "1", "2"] or \
            any(r[0] == "epoch" for r in rows[1:]):
        raise AssertionError(f"CSVLogger append: {rows}")

    sched = pasco.callbacks.LearningRateScheduler(
        lambda epoch, lr: 0.04 * 0.5 ** epoch)
    rec = Weights()
    # verbose=2: the library's progress runs the callbacks as a list of
    # its own (coordinator/model_fit.c), which passes the rate back
    h = model.fit(train, epochs=4, steps_per_epoch=1, verbose=2,
                  callbacks=[sched, rec])
    want = [0.04 * 0.5 ** e for e in range(4)]
    if h.history["learning_rate"] != want:
        raise AssertionError(f"LearningRateScheduler's rates "
                             f"{h.history['learning_rate']}")
    check_updates(rec, want, "LearningRateScheduler")
    calls.clear()
    lam2 = pasco.callbacks.LambdaCallback(
        on_train_batch_begin=lambda b, logs: calls.append(f"bb {b}"),
        on_train_batch_end=lambda b, logs: calls.append(f"be {b}"))
    model.fit(train, epochs=2, steps_per_epoch=4, steps_per_execution=2,
              verbose=0, callbacks=[lam2])
    if calls != ["bb 0", "bb 2", "be 1", "be 3"] * 2:
        raise AssertionError(f"batch calls with steps_per_execution 2: "
                             f"{calls}")

    # a schedule refused with ReduceLROnPlateau or LearningRateScheduler,
    # as Keras refuses them (TypeError naming both), before any step
    with strategy.scope():
        sm = pasco.Sequential([pasco.Input(shape=(2,)),
                               pasco.layers.Dense(1)])
    sm.compile(optimizer=pasco.optimizers.SGD(
        pasco.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)),
        loss="mse")
    for cb in (pasco.callbacks.ReduceLROnPlateau(),
               pasco.callbacks.LearningRateScheduler(lambda e, lr: lr)):
        name = type(cb).__name__
        try:
            sm.fit(train, epochs=1, steps_per_epoch=1, verbose=0,
                   callbacks=[cb])
            raise AssertionError(f"a schedule with {name} ran")
        except TypeError as e:
            if name not in str(e) or "ExponentialDecay" not in str(e):
                raise AssertionError(f"the TypeError says {e}")
            print("refused:", e, flush=True)
    # and the schedule alone trains, at its rate, with no learning_rate log
    h = sm.fit(train, epochs=2, steps_per_epoch=1, verbose=0)
    if "learning_rate" in h.history:
        raise AssertionError(f"a schedule's fit logs {h.history}")


def nan_check(strategy, d):
    model = model_of(strategy, 0.05)
    nan = pasco.data.csv(f"{d}/nan.csv", label="label", batch_size=4)
    h = model.fit(nan, epochs=5, steps_per_epoch=3, verbose=0,
                  callbacks=[pasco.callbacks.TerminateOnNaN()])
    if len(h.epoch) != 1 or not h.stopped_early or \
            not np.isnan(h.history["loss"][0]):
        raise AssertionError(f"TerminateOnNaN: epochs {h.epoch}, "
                             f"{h.history}")
    try:
        model.fit(nan, epochs=5, steps_per_epoch=3, verbose=0,
                  callbacks=[pasco.callbacks.TerminateOnNaN(
                      raise_error=True)])
        raise AssertionError("raise_error=True did not raise")
    except RuntimeError as e:
        if "NaN or Inf loss encountered at batch 0" not in str(e):
            raise AssertionError(f"raise_error: {e}")


def chief(cluster):
    d, mode = cluster.argv[1], cluster.argv[2]
    strategy = pasco.ParameterServerStrategy(cluster)
    train = pasco.data.csv(f"{d}/same.csv", label="label", batch_size=4)
    try:
        if mode == "lr":
            lr_checks(strategy, d, train)
            nan_check(strategy, d)
            print("verbose=2 fit:", flush=True)
            model_of(strategy, 0.01).fit(train, epochs=3, steps_per_epoch=5,
                                         verbose=2)
        else:
            model = model_of(strategy, 0.001)
            model.fit(train, epochs=2, steps_per_epoch=1500, verbose=1)
            print("auto:", flush=True)
            model.fit(train, epochs=1, steps_per_epoch=300)
    except AssertionError as e:
        print(f"callbacks: FAILED: {e}", flush=True)
        return 1
    print(f"callbacks: OK {mode}", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[2] == "data":
        write_data(sys.argv[1])
        raise SystemExit(0)
    raise SystemExit(pasco.main(chief))
