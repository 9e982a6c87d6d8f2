"""The tutorial model (examples/embedding_classifier.c) from a Python
chief: the same data (examples' rand_r draws: 200 training examples of
seed 1, 64 evaluation examples of seed 3; each 3 distinct words of 1..7,
label 1 iff word 1 is one of them), written by the chief to TFRecord files
(pasco.data.write_tfrecord) that the C workers read (pasco.data.tfrecord);
the same model (Embedding(8, 16384) split over 2 ps, mean, sigmoid Dense
with L2(1e-4), RMSprop(0.1), seed 1) and the same training (5 epochs of
20 steps, batch 32, one step per worker at a time, validation each
epoch). Checks what the C example reaches: accuracy 1.0 on its evaluation
data (64 examples, 8 an evaluation batch, sharded over the workers).
Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 tutorial.py DIR
Prints "tutorial: OK ..." or "tutorial: FAILED: why" (exit 1)."""

import os

import numpy as np

import pasco


def rand_r(seed):
    """glibc's rand_r on an unsigned seed: (value, next seed)."""
    nxt = seed
    nxt = (nxt * 1103515245 + 12345) & 0xFFFFFFFF
    r = (nxt >> 16) % 2048
    nxt = (nxt * 1103515245 + 12345) & 0xFFFFFFFF
    r = (r << 10) ^ ((nxt >> 16) % 1024)
    nxt = (nxt * 1103515245 + 12345) & 0xFFFFFFFF
    r = (r << 10) ^ ((nxt >> 16) % 1024)
    return r, nxt


def tutorial_data(n, seed):
    """examples/embedding_classifier.c's tutorial_data: x [n, 3] word ids,
    y [n] 1.0 iff word 1 is among them."""
    x = np.zeros((n, 3), dtype=np.int64)
    y = np.zeros(n, dtype=np.float32)
    for i in range(n):
        used, k = 0, 0
        while k < 3:  # random.sample: 3 distinct words of 1..7
            r, seed = rand_r(seed)
            w = 1 + r % 7
            if not used & 1 << w:
                used |= 1 << w
                x[i, k] = w
                k += 1
        y[i] = 1.0 if used & 2 else 0.0
    return x, y


def fail(msg):
    print(f"tutorial: FAILED: {msg}", flush=True)
    return 1


def chief(cluster):
    d = cluster.argv[1]
    for name, n, seed in (("train", 200, 1), ("eval", 64, 3)):
        x, y = tutorial_data(n, seed)
        pasco.data.write_tfrecord(os.path.join(d, f"{name}.tfrecord"),
                                  {"words": x, "label": y})
    feats = {"words": pasco.data.Feature("int64", 3)}
    train = pasco.data.tfrecord(f"{d}/train.tfrecord", feats, label="label",
                                label_type="float", batch_size=32,
                                shuffle=200, shard="none")  # as the C one
    ev = pasco.data.tfrecord(f"{d}/eval.tfrecord", feats, label="label",
                             label_type="float", batch_size=8,
                             shard="records")
    # one step per worker at a time (TF's): RMSprop 0.1 hates staleness
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.layers.Embedding(8, 16384, num_shards=2),
            pasco.layers.Dense(1, activation="sigmoid",
                               kernel_regularizer=1e-4)], seed=1)
    model.compile(optimizer=pasco.optimizers.RMSprop(0.1),
                  loss="binary_crossentropy", metrics=["accuracy"])
    history = model.fit(train, epochs=5, steps_per_epoch=20,
                        validation_data=ev, verbose=0)
    for i, acc in enumerate(history.history["val_accuracy"]):
        print(f"epoch {i}: loss {history.history['loss'][i]:.4f} "
              f"val_accuracy {acc:.4f}", flush=True)
    result = model.evaluate(ev, return_dict=True)
    print("evaluate:", result, flush=True)
    table = model.get_weights()[0]
    if table.shape != (8, 16384):
        return fail(f"embedding table of shape {table.shape}")
    if result["accuracy"] != 1.0:
        return fail(f"evaluation accuracy {result['accuracy']}, the C "
                    f"example reaches 1.0")
    print(f"tutorial: OK accuracy {result['accuracy']} loss "
          f"{result['loss']:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
