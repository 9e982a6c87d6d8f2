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
and 2 in order; the written batch files are removed at the end.
Prints "exact_epochs: OK" or "exact_epochs: FAILED: why" (exit 1)."""

import os
import sys

import numpy as np

import pasco


def run(d, strategy):
    n, b = 24, 4
    x = np.zeros((n, 1), np.float32)
    y = (2.0 ** np.arange(n)).astype(np.float32)
    with strategy.scope():
        model = pasco.Sequential([pasco.Input(shape=(1,)),
                                  pasco.layers.Dense(1, use_bias=False)])
    model.compile(optimizer=pasco.optimizers.SGD(0.01), loss="mae")
    for shuffle, epochs in ((True, 3), (False, 2)):
        h = model.fit(x, y, batch_size=b, epochs=epochs, shuffle=shuffle,
                      verbose=0)
        for e, loss in enumerate(h.history["loss"]):
            seen = loss * n  # sum of 2**i over the epoch's examples
            if abs(seen - (2 ** n - 1)) > 1e-3:
                bits = int(round(seen))
                raise AssertionError(
                    f"shuffle={shuffle}, epoch {e}: the examples read sum "
                    f"to {seen!r}, not 2**{n} - 1 (every example once): "
                    f"{bin(bits).count('1')} set bits")
            print(f"shuffle={shuffle}, epoch {e}: every example once "
                  f"(sum {int(round(seen))})", flush=True)
    left = [f for f in os.listdir(os.path.join(d, "tmp"))
            if f.startswith("pasco-numpy-")]
    if left:
        raise AssertionError(f"files left in TMPDIR: {left}")
    return 0


def chief(cluster):
    d = cluster.argv[1]
    strategy = pasco.ParameterServerStrategy(cluster)
    try:
        rv = run(d, strategy)
    except AssertionError as e:
        print(f"exact_epochs: FAILED: {e}", flush=True)
        return 1
    print("exact_epochs: OK", flush=True)
    return rv


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
