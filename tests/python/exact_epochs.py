"""fit on numpy arrays gives each example exactly once per epoch, whatever
the worker count (run_test.py's exact_epochs case, `pasco launch --ps 2
--workers 3`, every task `python3 exact_epochs.py DIR`).

The model's per-step loss reveals which examples the step read: 24
examples, example i's target 2**i, its input 0 and the model Dense(1,
use_bias=False), so the output is 0 whatever the weights and a step's mae
is sum(2**i for i in its batch) / 4 (batch_size 4, six steps an epoch),
exact in float32. An epoch's "loss" (the mean of its six steps' losses)
times 24 is then the sum of 2**i over the examples the epoch read, counted
with repeats; it equals 2**24 - 1 exactly when they are 24 with no carry
in the binary sum, i.e. every example once. Checked for 3 epochs shuffled
and 2 in order, and with steps_per_execution=4 (closures of 4 and 2
steps). An explicit steps_per_epoch reads as Keras's EpochIterator reads
arrays (keras/src/trainers/epoch_iterator.py): the epochs take the next
batches of one pass of six until it runs out, which ends that epoch
early, and the next epoch starts a new pass: steps_per_epoch=4 gives
epochs of 4 and 2 steps whose examples are disjoint and together every
example once (the sums' bits), and steps_per_epoch=9 gives epochs of one
pass each. Executions are whole, as Keras runs them (range(0,
steps_per_epoch, steps_per_execution), each of steps_per_execution steps
while the pass lasts): steps_per_epoch=4 with steps_per_execution=3 runs
epochs of 3 + 3 = 6 steps, steps_per_epoch=3 with steps_per_execution=2
epochs of 2 + 2 and then 2 (the pass's last) steps. The written batch files
are removed at the end.

`exact_epochs.py DIR kill` (under `pasco launch --restart`): the same
over 40 shuffled epochs while the chief SIGKILLs worker 1 at epoch 3's
start (steps in flight; closures lost with it run again on another
worker, naming the same batch): every epoch still reads each example
once.
Prints "exact_epochs: OK" or "exact_epochs: FAILED: why" (exit 1)."""

import os
import signal
import sys
import threading

import numpy as np

import pasco
from worker_killed import worker_pid  # tests/python, beside this file


def check(h, n, what):
    for e, loss in enumerate(h.history["loss"]):
        seen = loss * n  # sum of 2**i over the epoch's examples
        if abs(seen - (2 ** n - 1)) > 1e-3:
            bits = int(round(seen))
            raise AssertionError(
                f"{what}, epoch {e}: the examples read sum to {seen!r}, "
                f"not 2**{n} - 1 (every example once): "
                f"{bin(bits).count('1')} set bits")
    print(f"{what}: {len(h.history['loss'])} epochs, every example once "
          f"in each", flush=True)


def check_passes(h, n, b, steps, what):
    """Epochs of steps[e] steps each, consecutive ones making passes:
    each epoch's examples distinct, and each pass every example once."""
    losses = h.history["loss"]
    if len(losses) != len(steps):
        raise AssertionError(f"{what}: {len(losses)} epochs")
    acc = 0
    for e, (loss, k) in enumerate(zip(losses, steps)):
        seen = int(round(loss * k * b))  # its steps' sums of 2**i
        if abs(loss * k * b - seen) > 1e-3 or \
                bin(seen).count("1") != min(k * b, n) or acc & seen:
            raise AssertionError(
                f"{what}, epoch {e}: {k} steps read examples summing to "
                f"{loss * k * b!r} ({bin(seen).count('1')} set bits, "
                f"{bin(acc & seen).count('1')} read before in its pass): "
                f"not Keras's batches")
        acc |= seen
        if acc == 2 ** n - 1:
            acc = 0  # the pass is over
    if acc:
        raise AssertionError(f"{what}: a pass left unfinished: "
                             f"{bin(acc).count('1')} examples")
    print(f"{what}: epochs of {steps} steps, every example once per pass",
          flush=True)


class KillAtEpoch3(pasco.callbacks.Callback):
    """Kills worker 1 20 ms into epoch 3 (its steps in flight)."""
    killed = None

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 3:
            def kill():
                pid = worker_pid(1)
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    self.killed = pid
                    print(f"exact_epochs: killed worker 1 pid {pid}",
                          flush=True)
            self.timer = threading.Timer(0.02, kill)
            self.timer.start()


def run(d, strategy, kill):
    n, b = 24, 4
    x = np.zeros((n, 1), np.float32)
    y = (2.0 ** np.arange(n)).astype(np.float32)
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(1,)),
                                  pasco.layers.Dense(1, use_bias=False)])
    model.compile(optimizer=pasco.optimizers.SGD(0.01), loss="mae")
    if kill:
        cb = KillAtEpoch3()
        h = model.fit(x, y, batch_size=b, epochs=40, verbose=0,
                      callbacks=[cb])
        cb.timer.join()
        if cb.killed is None:
            raise AssertionError("worker 1 was not found to kill")
        check(h, n, "worker 1 killed at epoch 3")
    for shuffle, epochs in ((True, 3), (False, 2)):
        h = model.fit(x, y, batch_size=b, epochs=epochs, shuffle=shuffle,
                      verbose=0)
        check(h, n, f"shuffle={shuffle}")
    h = model.fit(x, y, batch_size=b, epochs=2, steps_per_execution=4,
                  verbose=0)
    check(h, n, "steps_per_execution=4")
    # Keras runs range(0, steps_per_epoch, steps_per_execution)
    # executions of steps_per_execution steps each while the pass lasts
    for spe, spx, steps in ((4, 1, [4, 2, 4, 2]), (4, 3, [6, 6, 6, 6]),
                            (3, 2, [4, 2, 4, 2])):
        h = model.fit(x, y, batch_size=b, epochs=4, steps_per_epoch=spe,
                      steps_per_execution=spx, verbose=0)
        check_passes(h, n, b, steps,
                     f"steps_per_epoch={spe}, steps_per_execution={spx}")
    h = model.fit(x, y, batch_size=b, epochs=2, steps_per_epoch=9,
                  shuffle=False, verbose=0)
    check_passes(h, n, b, [6, 6], "steps_per_epoch=9")
    left = [f for f in os.listdir(os.path.join(d, "tmp"))
            if f.startswith("pasco-numpy-")]
    if left:
        raise AssertionError(f"files left in TMPDIR: {left}")
    return 0


def chief(cluster):
    d = cluster.argv[1]
    strategy = pasco.ParameterServerStrategy(cluster)
    try:
        rv = run(d, strategy, cluster.argv[2:] == ["kill"])
    except AssertionError as e:
        print(f"exact_epochs: FAILED: {e}", flush=True)
        return 1
    print("exact_epochs: OK", flush=True)
    return rv


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
