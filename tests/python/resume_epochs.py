"""A numpy fit resumed by BackupAndRestore after every process was
restarted reads the batches and runs the steps the uninterrupted run did
(run_test.py's resume_epochs case, `pasco launch --ps 2 --workers 2`,
every task `python3 resume_epochs.py DIR MODE`).

The data reveal which examples each epoch read, as in exact_epochs.py:
24 examples, example i's target 2**i, its input 0 and the model
Dense(1, use_bias=False), batch_size 4, mae: an epoch of k steps has loss
sum(2**i over its examples) / (4 k), exact in float32. 6 batches a pass,
shuffled, steps_per_epoch=4: epochs of 4, 2, 4, 2 steps (Keras's order:
an epoch ends early where its pass runs out).

MODE crash: the uninterrupted fit of 4 epochs, its losses written to
DIR/full.json; then the same fit with BackupAndRestore(DIR/backup), whose
chief writes its losses to DIR/crashed.json and exits at once (os._exit,
every other process then stopped by the launcher) at the end of epoch 2
(epochs 0, 1, 2 done: 4, 2, 4 steps, the next epoch in the middle of
pass 2). MODE resume, a new launch: the same fit resumes at epoch 3,
which must read pass 2's last 2 batches (not a new pass's 4), and
together with the crashed run's epochs it must give the uninterrupted
run's losses, epoch by epoch.

Prints "resume_epochs: OK ..." or "resume_epochs: FAILED: why" (exit 1)."""

import json
import os
import sys

import numpy as np

import pasco
from exact_epochs import check_passes  # tests/python, beside this file

N, B = 24, 4
STEPS = [4, 2, 4, 2]


class Record(pasco.callbacks.Callback):
    """Each epoch's loss; at the end of epoch `crash_after`, the losses
    into `path` and the process gone at once."""

    def __init__(self, path=None, crash_after=None):
        self.losses, self.path, self.crash_after = [], path, crash_after

    def on_epoch_end(self, epoch, logs=None):
        self.losses.append((epoch, logs["loss"]))
        if epoch == self.crash_after:
            with open(self.path, "w") as f:
                json.dump(self.losses, f)
            print(f"resume_epochs: crashing after epoch {epoch}",
                  flush=True)
            os._exit(17)


def fit(strategy, callbacks):
    x = np.zeros((N, 1), np.float32)
    y = (2.0 ** np.arange(N)).astype(np.float32)
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(1,)),
                                  pasco.layers.Dense(1, use_bias=False)],
                                 seed=7)
    model.compile(optimizer=pasco.optimizers.SGD(0.01), loss="mae")
    return model.fit(x, y, batch_size=B, epochs=4, steps_per_epoch=4,
                     shuffle=True, verbose=0, callbacks=callbacks)


def run(d, strategy, mode):
    backup = pasco.callbacks.BackupAndRestore(os.path.join(d, "backup"))
    if mode == "crash":
        h = fit(strategy, [])
        check_passes(h, N, B, STEPS, "uninterrupted")
        with open(os.path.join(d, "full.json"), "w") as f:
            json.dump(h.history["loss"], f)
        fit(strategy, [backup, Record(os.path.join(d, "crashed.json"), 2)])
        raise AssertionError("the run did not crash after epoch 2")
    with open(os.path.join(d, "full.json")) as f:
        full = json.load(f)
    with open(os.path.join(d, "crashed.json")) as f:
        crashed = json.load(f)
    h = fit(strategy, [backup])
    if h.epoch != [3]:
        raise AssertionError(f"resumed at epochs {h.epoch}, not [3] (the "
                             f"backup was taken at the end of epoch 2)")
    h.history["loss"] = [loss for _, loss in crashed] + h.history["loss"]
    h.epoch = [e for e, _ in crashed] + h.epoch
    check_passes(h, N, B, STEPS, "crashed after epoch 2, resumed")
    for e, (got, want) in enumerate(zip(h.history["loss"], full)):
        if got != want:
            raise AssertionError(f"epoch {e}: loss {got!r}, the "
                                 f"uninterrupted run's {want!r}")
    return 0


def chief(cluster):
    d, mode = cluster.argv[1], cluster.argv[2]
    strategy = pasco.ParameterServerStrategy(cluster)
    try:
        rv = run(d, strategy, mode)
    except AssertionError as e:
        print(f"resume_epochs: FAILED: {e}", flush=True)
        return 1
    print(f"resume_epochs: OK (epochs of {STEPS} steps, the resumed "
          f"run's losses the uninterrupted run's)", flush=True)
    return rv


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
