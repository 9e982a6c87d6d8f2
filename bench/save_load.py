"""model.save and pasco.models.load_model timed on a launched cluster:
an Embedding of ROWS x 16 split over the ps (Adam: its m and v as large
again) and a Dense layer, trained 4 steps, saved, loaded back (into the
same strategy: its variables reused, every value assigned). Every task:
    PASCO_CHECKPOINT_DIR=DIR pasco launch --ps 2 --workers 1 -- \
        python3 bench/save_load.py DIR [ROWS]
Prints the file's size and each time (best of 3)."""

import os
import sys
import time

import numpy as np

import pasco


def chief(cluster):
    d = cluster.argv[1]
    rows = int(cluster.argv[2]) if len(cluster.argv) > 2 else 1_000_000
    rng = np.random.default_rng(1)
    pasco.data.write_tfrecord(os.path.join(d, "t.tfrecord"), {
        "ids": rng.integers(0, rows, size=(256, 4)).astype(np.int64),
        "label": rng.integers(0, 2, size=256).astype(np.float32)})
    data = pasco.data.tfrecord(os.path.join(d, "t.tfrecord"),
                               {"ids": pasco.data.Feature("int64", 4)},
                               label="label", label_type="float",
                               batch_size=64)
    strategy = pasco.ParameterServerStrategy(cluster)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.Input(shape=(4,), name="ids", dtype="int64"),
            pasco.layers.Embedding(rows, 16, num_shards=strategy.num_ps),
            pasco.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer="adam", loss="binary_crossentropy")
    model.fit(data, epochs=1, steps_per_epoch=4, verbose=0)
    path = os.path.join(d, "bench.keras")
    saves, loads = [], []
    for _ in range(3):
        t = time.perf_counter()
        model.save(path)
        saves.append(time.perf_counter() - t)
        t = time.perf_counter()
        with strategy.scope():
            pasco.models.load_model(path)
        loads.append(time.perf_counter() - t)
    mb = os.path.getsize(path) / 2**20
    print(f"save_load: {rows} x 16 embedding, {strategy.num_ps} ps: "
          f"{mb:.1f} MiB file, save {min(saves):.2f} s, load "
          f"{min(loads):.2f} s (best of 3)", flush=True)
    os.remove(path)
    return 0


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
