"""Seconds of fit on numpy arrays with exact epochs (each step reads the
batch the chief names for it) or streaming (each worker reads its share):
    pasco launch --ps 1 --workers 2 -- python3 bench/numpy_fit.py \
        exact|stream EXAMPLES WIDTH
Dense(64, relu) -> Dense(10, softmax), Adam, batch 32, 3 epochs, shuffled.
"stream" turns the exact epochs off as an explicit steps_per_epoch other
than ceil(examples / 32) would. Prints the time and, for exact, the part
spent naming the steps and writing their batch files on the chief."""

import sys
import time

import numpy as np

import pasco
from pasco import _numpy_data


def chief(cluster):
    mode, n, width = cluster.argv[1], int(cluster.argv[2]), \
        int(cluster.argv[3])
    spent = [0.0]
    name = _numpy_data.Batches.name

    def timed(self, epoch, step):
        t0 = time.perf_counter()
        try:
            return name(self, epoch, step)
        finally:
            spent[0] += time.perf_counter() - t0
    _numpy_data.Batches.name = timed
    if mode == "stream":
        _numpy_data.step_dataset_cb = lambda name_of, errors: None
    s = pasco.ParameterServerStrategy(cluster)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, width)).astype(np.float32)
    y = rng.integers(0, 10, n)
    with s.scope():
        m = pasco.Sequential([pasco.Input(shape=(width,)),
                              pasco.layers.Dense(64, activation="relu"),
                              pasco.layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    t = time.perf_counter()
    m.fit(x, y, batch_size=32, epochs=3, verbose=0)
    print(f"{mode}: {n} x {width}, 3 epochs: {time.perf_counter() - t:.1f} "
          f"s (naming and writing batches {spent[0]:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
