"""A Keras text classifier's shape, Embedding(mask_zero=True) over padded
id sequences, GlobalAveragePooling1D and Dense, from a Python chief on a
launched cluster (issue 33): sequences of 1 to 8 word ids in 1..19,
padded with 0 to 8, label 1 iff word 3 is among them. Trained 6 epochs
on 2 workers and 2 ps; checks the evaluation accuracy (>= 0.95) and that
the workers' evaluation loss is numpy's of the trained weights with the
padding masked (the mean over the words only: the unmasked mean's loss
differs).
Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 merge_layers.py DIR
Prints "merge_layers: OK ..." or "merge_layers: FAILED: why" (exit 1)."""

import os

import numpy as np

import pasco

STEPS = 8


def data(n, seed):
    rng = np.random.default_rng(seed)
    x = np.zeros((n, STEPS), dtype=np.int64)
    lengths = rng.integers(1, STEPS + 1, size=n)
    for i, k in enumerate(lengths):
        x[i, :k] = rng.integers(1, 20, size=k)
    y = np.any(x == 3, axis=1).astype(np.float32)
    return x, y


def bce_of_logits(z, y):
    return np.mean(np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z))))


def fail(msg):
    print(f"merge_layers: FAILED: {msg}", flush=True)
    return 1


def chief(cluster):
    d = cluster.argv[1]
    for name, n, seed in (("train", 1024, 1), ("eval", 256, 2)):
        x, y = data(n, seed)
        pasco.data.write_tfrecord(os.path.join(d, f"{name}.tfrecord"),
                                  {"words": x, "label": y})
    feats = {"words": pasco.data.Feature("int64", STEPS)}
    train = pasco.data.tfrecord(f"{d}/train.tfrecord", feats, label="label",
                                label_type="float", batch_size=32,
                                shuffle=1024, repeat=-1)
    ev = pasco.data.tfrecord(f"{d}/eval.tfrecord", feats, label="label",
                             label_type="float", batch_size=32,
                             shard="records")
    strategy = pasco.ParameterServerStrategy(cluster)
    with strategy.scope():
        words = pasco.Input(shape=(STEPS,), dtype="int64", name="words")
        h = pasco.layers.Embedding(20, 8, mask_zero=True)(words)
        h = pasco.layers.GlobalAveragePooling1D()(h)
        out = pasco.layers.Dense(1, activation="sigmoid")(h)
        model = pasco.Model(inputs=words, outputs=out, seed=3)
    model.compile(optimizer=pasco.optimizers.Adam(0.05),
                  loss="binary_crossentropy", metrics=["accuracy"])
    model.fit(train, epochs=6, steps_per_epoch=40, verbose=0)
    result = model.evaluate(ev, return_dict=True)
    print("evaluate:", result, flush=True)
    table, kernel, bias = model.get_weights()
    x, y = data(256, 2)
    rows = table[x]                                  # [n, steps, 8]
    mask = (x != 0)[..., None]
    masked = (rows * mask).sum(1) / mask.sum(1)      # Keras's masked mean
    want = bce_of_logits((masked @ kernel + bias)[:, 0], y)
    unmasked = bce_of_logits((rows.mean(1) @ kernel + bias)[:, 0], y)
    print(f"merge_layers: loss {result['loss']:.6f}, numpy's masked "
          f"{want:.6f}, unmasked {unmasked:.6f}", flush=True)
    if result["accuracy"] < 0.95:
        return fail(f"evaluation accuracy {result['accuracy']} < 0.95")
    if abs(result["loss"] - want) > 1e-3 * abs(want) + 1e-6:
        return fail(f"loss {result['loss']} is not numpy's masked "
                    f"{want}")
    if abs(unmasked - want) < 1e-3:
        return fail("the masked and unmasked losses agree: the check "
                    "cannot tell them apart")
    print(f"merge_layers: OK accuracy {result['accuracy']} loss "
          f"{result['loss']:.4f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
