"""model.save / pasco.models.load_model / save_weights / load_weights on
launched clusters (run_test.py's saving case), every task
`python3 saving.py DIR PHASE`, one worker, one step in flight (window 1):

save (2 ps): a functional model (features and ids, an Embedding split
in 2 shards, Dense layers, Adam) fit 2 epochs of 4 steps, saved
(DIR/model.keras) and its weights saved (DIR/model.weights.safetensors);
the zip's entries read by zipfile and json, the weights file's header by
the reader below (no Pasco code): every variable whole, Adam's m and v,
the global step 8, the values equal to get_weights(); predictions of the
evaluation data kept (DIR/pred.npy); then 2 more epochs, their losses
kept (DIR/losses.json): the uninterrupted curve. Each epoch is the same
4 batches (64 rows, batch 16, no shuffle), so the curve depends only on
the weights and slots.

load (1 or 3 ps): load_model gives predictions equal bit for bit to the
saved model's, a fit of epochs 3 and 4 gives the saved run's losses, and
load_weights into a model built from scratch predicts the same; bad
suffixes and a damaged file are refused with Keras's and Pasco's
messages.
Prints "saving: OK PHASE" or "saving: FAILED: why" (exit 1)."""

import json
import os
import struct
import sys
import zipfile

import numpy as np

import pasco


def fail(msg):
    print(f"saving: FAILED: {msg}", flush=True)
    return 1


def safetensors_read(buf):
    """{name: array} of a safetensors file's bytes, and its metadata."""
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", {})
    types = {"F32": np.float32, "F64": np.float64, "I64": np.int64,
             "I32": np.int32, "U8": np.uint8}
    out = {}
    for name, t in header.items():
        b, e = t["data_offsets"]
        out[name] = np.frombuffer(buf[8 + n + b:8 + n + e],
                                  dtype=types[t["dtype"]]).reshape(t["shape"])
    return out, meta


def write_data(d):
    rng = np.random.default_rng(7)
    for name, n in (("train", 64), ("eval", 24)):
        x = rng.normal(size=(n, 4)).astype(np.float32)
        ids = rng.integers(0, 20, size=(n, 2)).astype(np.int64)
        y = ((x[:, 0] + (ids[:, 0] < 10)) > 0.5).astype(np.int64)
        pasco.data.write_tfrecord(os.path.join(d, f"{name}.tfrecord"),
                                  {"x": x, "ids": ids, "label": y})


def datasets(d):
    feats = {"x": pasco.data.Feature("float", 4),
             "ids": pasco.data.Feature("int64", 2)}
    train = pasco.data.tfrecord(f"{d}/train.tfrecord", feats, label="label",
                                batch_size=16, shard="none")
    ev = pasco.data.tfrecord(f"{d}/eval.tfrecord", feats, label="label",
                             batch_size=8, shard="records")
    return train, ev


def make_model():
    x = pasco.Input(shape=(4,), name="x")
    ids = pasco.Input(shape=(2,), name="ids", dtype="int64")
    e = pasco.layers.Embedding(20, 3, num_shards=2)(ids)
    h = pasco.layers.Concatenate()([x, e])
    h = pasco.layers.Dense(8, activation="relu")(h)
    out = pasco.layers.Dense(2, activation="softmax")(h)
    m = pasco.Model(inputs=[x, ids], outputs=out, seed=3)
    m.compile(optimizer=pasco.optimizers.Adam(0.05),
              loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def expect_error(what, fn, text):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (any error naming it)
        if text not in str(e):
            raise AssertionError(f"{what}: the error {e!r} does not say "
                                 f"{text!r}")
        print(f"{what}: {type(e).__name__}: {e}", flush=True)
        return
    raise AssertionError(f"{what}: no error")


def check_summary(model):
    """model.summary()'s text on 2 ps: Keras's table, the totals from the
    variables' shapes (numpy), and where each variable lives."""
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    print(text, flush=True)
    total = sum(int(np.prod(v.shape)) for v in model.variables)
    rows = {"x (InputLayer)": ("(None, 4)", "0", "-"),
            "ids (InputLayer)": ("(None, 2)", "0", "-"),
            "embedding (Embedding)": ("(None, 3)", "60", "ids[0][0]"),
            "concatenate (Concatenate)": ("(None, 7)", "0",
                                          "x[0][0], embedding[0][0]"),
            "dense (Dense)": ("(None, 8)", "64", "concatenate[0][0]"),
            "dense_1 (Dense)": ("(None, 2)", "18", "dense[0][0]")}
    for name, cells in rows.items():
        line = [ln for ln in lines if ln.startswith(f"│ {name} ")]
        got = [c.strip() for c in line[0].split("│")[2:5]] if line else []
        if got != list(cells):
            raise AssertionError(f"summary: the row of {name} is {got}, "
                                 f"expected {list(cells)}")
    want = [lines[0] == 'Model: "model"',
            "┃ Layer (type)" in lines[2] and "Output Shape" in lines[2]
            and "Param #" in lines[2] and "Connected to" in lines[2],
            f" Total params: {total} ({total * 4:.2f} B)" in lines,
            f" Trainable params: {total} ({total * 4:.2f} B)" in lines,
            " Non-trainable params: 0 (0.00 B)" in lines]
    places = {"embedding/embeddings": "(20, 3)         part_0 rows [0, 10) "
              "on ps 0, part_1 rows [10, 20) on ps 1",
              "dense/kernel": "(7, 8)          ps 0",
              "dense/bias": "(8,)            ps 1",
              "dense_1/kernel": "(8, 2)          ps 0",
              "dense_1/bias": "(2,)            ps 1"}
    for name, where in places.items():
        want.append(any(ln.split() == [name] + where.split()
                        for ln in lines))
    if not all(want) or total != 142:
        raise AssertionError(f"summary: {want}, {total} parameters")


def save_phase(d, strategy):
    write_data(d)
    train, ev = datasets(d)
    with strategy.scope():
        model = make_model()
    model.fit(train, epochs=2, steps_per_epoch=4, verbose=0, window=1)
    check_summary(model)
    path = os.path.join(d, "model.keras")
    model.save(path)
    model.save_weights(os.path.join(d, "model.weights.safetensors"))
    weights = {v.name: v.numpy() for v in model.variables}
    with zipfile.ZipFile(path) as z:
        names = sorted(z.namelist())
        if names != ["config.json", "metadata.json",
                     "model.weights.safetensors"]:
            return fail(f"the zip holds {names}")
        config = json.loads(z.read("config.json"))
        meta = json.loads(z.read("metadata.json"))
        tensors, smeta = safetensors_read(z.read("model.weights.safetensors"))
    if config["class_name"] != "Functional" or \
            config["compile_config"]["optimizer"]["class_name"] != "Adam":
        return fail(f"config.json: {config}")
    if meta.get("ps_tasks") != 2 or "date_saved" not in meta:
        return fail(f"metadata.json: {meta}")
    if smeta.get("format") != "pasco-weights-1" or "manifest" not in smeta:
        return fail(f"the weights' metadata: {smeta}")
    for name, w in weights.items():
        for t in (name, name + "/m", name + "/v"):
            if t not in tensors:
                return fail(f"the weights file lacks {t}: {sorted(tensors)}")
        if not np.array_equal(tensors[name], w):
            return fail(f"{name} in the file differs from the model's")
    if tensors["embedding/embeddings"].shape != (20, 3):
        return fail("the embedding is not whole in the file")
    if int(tensors["global_step"].reshape(-1)[0]) != 8:
        return fail(f"global_step {tensors['global_step']}, expected 8")
    np.save(os.path.join(d, "pred.npy"), model.predict(ev))
    h = model.fit(train, epochs=4, initial_epoch=2, steps_per_epoch=4,
                  verbose=0, window=1)
    with open(os.path.join(d, "losses.json"), "w") as f:
        json.dump(h.history["loss"], f)
    print(f"uninterrupted losses of epochs 3 and 4: {h.history['loss']}",
          flush=True)
    expect_error("save .h5", lambda: model.save(os.path.join(d, "m.h5")),
                 "Invalid filepath extension for saving")
    expect_error("save_weights .weights.h5",
                 lambda: model.save_weights(os.path.join(d, "w.weights.h5")),
                 "The filename must end in `.weights.safetensors`")
    return 0


def load_phase(d, strategy):
    train, ev = datasets(d)
    want = np.load(os.path.join(d, "pred.npy"))
    with open(os.path.join(d, "losses.json")) as f:
        losses = json.load(f)
    with strategy.scope():
        model = pasco.models.load_model(os.path.join(d, "model.keras"))
    got = model.predict(ev)
    if not np.array_equal(got, want):
        return fail(f"load_model's predictions on {strategy.num_ps} ps "
                    f"differ: max |diff| {np.abs(got - want).max()}")
    h = model.fit(train, epochs=4, initial_epoch=2, steps_per_epoch=4,
                  verbose=0, window=1)
    print(f"resumed losses on {strategy.num_ps} ps: {h.history['loss']}",
          flush=True)
    if h.history["loss"] != losses:
        return fail(f"the resumed losses {h.history['loss']} are not the "
                    f"uninterrupted run's {losses}")
    with strategy.scope():  # the same names: the loaded model's variables,
        fresh = make_model()  # fit past the saved values since
    fresh.load_weights(os.path.join(d, "model.weights.safetensors"))
    if not np.array_equal(fresh.predict(ev), want):
        return fail("load_weights' predictions differ")
    bad = os.path.join(d, f"bad-{strategy.num_ps}.keras")
    with open(os.path.join(d, "model.keras"), "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    with open(bad, "wb") as f:
        f.write(data)
    expect_error("a damaged .keras", lambda: pasco.models.load_model(bad),
                 "CRC")
    expect_error("load_model .h5",
                 lambda: pasco.models.load_model(os.path.join(d, "m.h5")),
                 "File format not supported")
    return 0


def chief(cluster):
    d, phase = cluster.argv[1], cluster.argv[2]
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    try:
        rv = save_phase(d, strategy) if phase == "save" else \
            load_phase(d, strategy)
    except AssertionError as e:
        rv = fail(str(e))
    if rv == 0:
        print(f"saving: OK {phase} on {strategy.num_ps} ps", flush=True)
    return rv


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
