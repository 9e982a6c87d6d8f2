"""A worker SIGKILLed mid-fit under a Python chief: the chief kills
worker 1 itself (found by its TF_CONFIG among the processes that carry
this run's PASCO_TEST_MARK) while epoch 2's steps are in flight; fit must
complete every epoch, its step count exact (the checkpoint of its last
epoch is ckpt-<epochs * steps>), every step applied on the ps (the global
step at least epochs * steps; closures lost with the worker run again,
at least once, coordinator.h: at most one window of batches more, 4 * 32)
and val_accuracy >= 0.9. Run on every task:
    pasco launch --restart --ps 2 --workers 2 -- python3 worker_killed.py DIR
Prints "worker_killed: killed worker 1 pid P" and, when every check holds,
"worker_killed: OK"; exits 1 saying what is wrong otherwise."""

import os
import signal
import threading
import time

import pasco
from task_proc import worker_pid

EPOCHS, STEPS = 5, 400


class KillDuringEpoch(pasco.callbacks.Callback):
    """At epoch 2's start, kills worker 1 after 50 ms (steps in flight)."""

    def __init__(self):
        self.killed = None
        self.epochs = []

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 2:
            def kill():
                pid = worker_pid(1)
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                    self.killed = pid
                    print(f"worker_killed: killed worker 1 pid {pid}",
                          flush=True)
            t = threading.Timer(0.05, kill)
            t.start()
            self.timer = t

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(epoch)
        print(f"epoch {epoch}: {logs}", flush=True)


def fail(msg):
    print(f"worker_killed: FAILED: {msg}", flush=True)
    return 1


def chief(cluster):
    d = cluster.argv[1]
    strategy = pasco.ParameterServerStrategy(cluster)
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32,
                           shuffle=1000)
    val = pasco.data.csv(f"{d}/eval.csv", label="label", batch_size=256)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.layers.Dense(64, activation="relu"),
            pasco.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=pasco.optimizers.Adam(1e-3),
                  loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    cb = KillDuringEpoch()
    start = time.monotonic()
    ckpt = os.path.join(d, "ckpt")
    history = model.fit(train, epochs=EPOCHS, steps_per_epoch=STEPS,
                        validation_data=val, verbose=0, callbacks=[
                            cb, pasco.callbacks.ModelCheckpoint(ckpt)])
    cb.timer.join()
    print(f"fit: {time.monotonic() - start:.1f} s", flush=True)
    if cb.killed is None:
        return fail("worker 1 was not found to kill")
    if cb.epochs != list(range(EPOCHS)) or \
            len(history.history["loss"]) != EPOCHS:
        return fail(f"epochs {cb.epochs}, history of "
                    f"{len(history.history['loss'])}")
    gs = strategy.global_step()
    print(f"global step {gs}", flush=True)
    n = EPOCHS * STEPS
    if not n <= gs <= n + 4 * 32:
        return fail(f"global step {gs}: steps lost or run again more than "
                    f"the lost worker had in flight (expected {n} to "
                    f"{n + 4 * 32})")
    steps = sorted(int(f[5:]) for f in os.listdir(ckpt)
                   if f.startswith("ckpt-") and f[5:].isdigit())
    print(f"checkpoints at steps {steps}", flush=True)
    if steps[-1:] != [n] or len(steps) != EPOCHS:
        return fail(f"checkpoints at steps {steps}: fit's step count is "
                    f"not {STEPS} an epoch")
    acc = history.history["val_accuracy"][-1]
    if acc < 0.9:
        return fail(f"val_accuracy {acc} < 0.9")
    try:
        os.kill(cb.killed, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    if alive:
        return fail(f"the killed worker (pid {cb.killed}) is still there")
    print(f"worker_killed: OK global step {gs} val_accuracy {acc:.4f}",
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
