"""A sequence tagger, Embedding(mask_zero=True) -> Dense(per step,
softmax), trained with model.fit from a TFRecord dataset of padded id
sequences whose labels are one class id per step (pasco.data.tfrecord's
label_shape), on a launched cluster (issue 33, docs/sequences.md):

    pasco launch --ps 2 --workers 1 -- python3 seq_tagger.py DIR replay
    pasco launch --ps 2 --workers 2 -- python3 seq_tagger.py DIR train

replay (1 worker, window 1, SGD): each step's loss and accuracy equal a
numpy replay of Keras 3's definitions to 1e-5 relative: the masked
sparse_categorical_crossentropy (keras/src/losses/loss.py: apply_mask,
sum over the unmasked steps / their count, 0 for a batch of padding
only) and the accuracy over the unmasked steps only (MeanMetricWrapper
with the mask); then fit on the same numpy arrays continues the same
curve (the numpy path writes the same label_shape). The same for a
per-step regression, Dense(2) linear with float targets [batch, T, 2]
(label_shape=(T, 2)) and mse; and label shapes that do not fit are
refused with messages that say so. Per-step sample weights [N, T] (a
TFRecord weight feature of width T, then numpy's sample_weight [N, T]):
each step's loss sum(w * ce over the unmasked steps) / their count and
its weighted accuracy equal numpy's.
train (2 workers, Adam): the tagger learns (masked accuracy >= 0.9), and
evaluate's accuracy and loss are numpy's of the trained weights, each
shard its own batch.
Prints "seq_tagger: OK ..." or "seq_tagger: FAILED: why" (exit 1)."""

import os

import numpy as np

import pasco

T, V, D, C = 6, 12, 4, 3
N, BATCH = 48, 8


def data(n, seed):
    """Ids 1..V-1 padded with 0 to T (lengths 0..T: some rows padding
    only); tag of a token its id mod C, 0 at padding."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, T), np.int64)
    for i, k in enumerate(rng.integers(0, T + 1, size=n)):
        x[i, :k] = rng.integers(1, V, size=k)
    x[0] = 0  # the first batch holds a row of padding only
    return x, np.where(x != 0, x % C, 0).astype(np.int64)


def forward(ws, x):
    table, kernel, bias = ws
    h = table[x]
    z = h @ kernel + bias
    z = z - z.max(-1, keepdims=True)
    return h, np.exp(z) / np.exp(z).sum(-1, keepdims=True)


def loss_acc(ws, x, y):
    """Keras's masked loss and the accuracy over the unmasked steps (and
    over every step, to show the mask matters)."""
    _, p = forward(ws, x)
    mask = x != 0
    ce = -np.log(np.take_along_axis(p, y[..., None], -1)[..., 0])
    valid = mask.sum()
    loss = (ce * mask).sum() / valid if valid else 0.0
    hit = np.argmax(p, -1) == y
    return loss, (hit * mask).sum() / max(valid, 1), hit.mean()


def weighted_loss_acc(ws, x, y, sw):
    """Keras's loss with per-step weights sw [batch, T] and the mask:
    sum(sw * ce over the unmasked steps) / their count (apply_mask,
    sum_over_batch_size); the weighted accuracy sum(sw * mask * hit) /
    sum(sw * mask) (0 when that is 0)."""
    _, p = forward(ws, x)
    mask = x != 0
    ce = -np.log(np.take_along_axis(p, y[..., None], -1)[..., 0])
    valid = mask.sum()
    loss = (ce * mask * sw).sum() / valid if valid else 0.0
    wm = (mask * sw).sum()
    hit = np.argmax(p, -1) == y
    return loss, (hit * mask * sw).sum() / wm if wm else 0.0


def sgd_step(ws, x, y, lr, sw=1.0):
    """One SGD step of the masked loss (each step weighing sw, a number or
    [batch, T]), the gradients by hand."""
    table, kernel, bias = ws
    h, p = forward(ws, x)
    mask = x != 0
    valid = mask.sum()
    w = mask * sw / valid if valid else np.zeros(mask.shape)
    dz = (p - np.eye(C)[y]) * w[..., None]
    dtable = np.zeros_like(table)
    np.add.at(dtable, x, dz @ kernel.T)
    return [table - lr * dtable,
            kernel - lr * np.einsum("btd,btc->dc", h, dz),
            bias - lr * dz.sum((0, 1))]


def mse_step(ws, x, y, lr, masked=True):
    """The masked per-step mse, its masked mae metric, and one SGD step
    (masked False: every step counts)."""
    table, kernel, bias = ws
    h = table[x]
    z = h @ kernel + bias
    mask = x != 0 if masked else np.ones(x.shape, bool)
    valid = mask.sum()
    w = mask / valid if valid else np.zeros(mask.shape)
    loss = (np.square(z - y).mean(-1) * w).sum()
    mae = (np.abs(z - y).mean(-1) * mask).sum() / max(valid, 1)
    dz = 2 * (z - y) / y.shape[-1] * w[..., None]
    dtable = np.zeros_like(table)
    np.add.at(dtable, x, dz @ kernel.T)
    return loss, mae, [table - lr * dtable,
                       kernel - lr * np.einsum("btd,btc->dc", h, dz),
                       bias - lr * dz.sum((0, 1))]


def regression(cluster, d, x):
    """Float targets per step and feature: label_shape (T, 2)."""
    rng = np.random.default_rng(7)
    y = rng.normal(size=(N, T, 2)).astype(np.float32)
    pasco.data.write_tfrecord(os.path.join(d, "reg.tfrecord"),
                              {"tok": x, "target": y})
    ds = pasco.data.tfrecord(f"{d}/reg.tfrecord",
                             {"tok": pasco.data.Feature("int64", T)},
                             label="target", label_type="float",
                             label_shape=(T, 2), batch_size=BATCH,
                             repeat=-1)
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    with strategy.scope():
        tok = pasco.Input(shape=(T,), dtype="int64", name="tok")
        h = pasco.layers.Embedding(V, D, mask_zero=True)(tok)
        model = pasco.Model(inputs=tok, outputs=pasco.layers.Dense(2)(h),
                            seed=9)
    model.compile(optimizer=pasco.optimizers.SGD(0.2), loss="mse",
                  metrics=["mae"])
    model.build(ds)
    ws = [w.astype(np.float64) for w in model.get_weights()]
    h = model.fit(ds, epochs=3, steps_per_epoch=1, verbose=0)
    for k in range(3):
        sl = slice(k * BATCH, (k + 1) * BATCH)
        loss, mae, ws = mse_step(ws, x[sl], y[sl].astype(np.float64), 0.2)
        close(f"regression step {k} loss", h.history["loss"][k], loss)
        close(f"regression step {k} mae", h.history["mae"][k], mae)
    traced(cluster, ds, x, y)
    try:
        model.fit(x, y[:, :, 0], epochs=1, verbose=0)
        raise AssertionError("targets [n, T] of a [T, 2] output: taken")
    except ValueError as e:
        if "its targets must be [examples, 6, 2]" not in str(e):
            raise AssertionError(f"a bad target shape says: {e}")


def traced(cluster, ds, x, y):
    """A traced loss sees y_true [batch, T, 2] (the label_shape) against
    an unmasked sequence, and a masked output's traced loss is refused, as
    are per-step weights for it."""
    def my_mse(y_true, y_pred):
        return pasco.ops.mean(pasco.ops.square(y_pred - y_true))

    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    for mask_zero in (False, True):
        with strategy.scope():
            tok = pasco.Input(shape=(T,), dtype="int64", name="tok")
            h = pasco.layers.Embedding(V, D, combiner=None,
                                       mask_zero=mask_zero)(tok)
            model = pasco.Model(inputs=tok,
                                outputs=pasco.layers.Dense(2)(h), seed=11)
        model.compile(optimizer=pasco.optimizers.SGD(0.2), loss=my_mse)
        if mask_zero:
            try:
                model.fit(ds, epochs=1, steps_per_epoch=1, verbose=0)
                raise AssertionError("a masked output's traced loss taken")
            except pasco.errors.PascoError as e:
                if "a custom (graph) loss does not take the mask" \
                        not in str(e):
                    raise AssertionError(f"traced loss of a mask: {e}")
            continue
        model.build(ds)
        ws = [w.astype(np.float64) for w in model.get_weights()]
        h = model.fit(ds, epochs=2, steps_per_epoch=1, verbose=0)
        for k in range(2):
            sl = slice(k * BATCH, (k + 1) * BATCH)
            z = ws[0][x[sl]] @ ws[1] + ws[2]
            close(f"traced loss step {k}", h.history["loss"][k],
                  float(np.square(z - y[sl]).mean()))
            ws = mse_step(ws, x[sl], y[sl].astype(np.float64), 0.2,
                          masked=False)[2]
        try:  # a traced loss takes one weight per example only
            model.fit(x, y, sample_weight=np.ones((N, T)), batch_size=BATCH,
                      epochs=1, steps_per_epoch=1, verbose=0)
            raise AssertionError("per-step weights of a traced loss taken")
        except pasco.errors.PascoError as e:
            if f"sample weights f32[{BATCH},{T}]" not in str(e):
                raise AssertionError(f"traced loss, per-step weights: {e}")


def refusals():
    feats = {"tok": pasco.data.Feature("int64", T)}
    for bad, says in (((0,), "label_shape: expected (), (T,) or (T, D)"),
                      ((2, 3, 4), "label_shape: expected (), (T,) or"),
                      ("T", "label_shape: expected")):
        try:
            pasco.data.tfrecord("x.tfrecord", feats, label="tags",
                                label_shape=bad)
            raise AssertionError(f"label_shape {bad!r} taken")
        except ValueError as e:
            if says not in str(e):
                raise AssertionError(f"label_shape {bad!r} says: {e}")
    try:
        pasco.data.tfrecord("x.tfrecord", feats, label_shape=(T,))
        raise AssertionError("label_shape without a label taken")
    except ValueError as e:
        if "the dataset has no label" not in str(e):
            raise AssertionError(f"label_shape without a label says: {e}")


def step_weights(cluster, d, x, y):
    """Per-step sample weights [N, T] (Keras's per-timestep weights), a
    row of zeros among them: 3 SGD steps from a TFRecord whose weight
    feature has width T, then 3 from numpy's fit(sample_weight=[N, T])
    continuing the batches, each step's loss and weighted accuracy equal
    to numpy's; then evaluate(sample_weight=[N, T])'s loss and weighted
    accuracy."""
    lr, n_ds, n_np = 0.5, 3, 3
    sw = np.random.default_rng(3).uniform(0, 2, (N, T)).astype(np.float32)
    sw[2] = 0  # a row of zero weights (unmasked steps among them)
    pasco.data.write_tfrecord(os.path.join(d, "weighted.tfrecord"),
                              {"tok": x, "tags": y, "w": sw})
    ds = pasco.data.tfrecord(f"{d}/weighted.tfrecord",
                             {"tok": pasco.data.Feature("int64", T),
                              "w": pasco.data.Feature("float", T)},
                             label="tags", label_shape=(T,),
                             sample_weight="w", batch_size=BATCH, repeat=-1)
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    model = build(strategy, pasco.optimizers.SGD(lr), weighted=True)
    model.build(ds)
    ws = [w.astype(np.float64) for w in model.get_weights()]
    h = model.fit(ds, epochs=n_ds, steps_per_epoch=1, verbose=0).history
    g = model.fit(x, y, sample_weight=sw, batch_size=BATCH, epochs=n_np,
                  steps_per_epoch=1, shuffle=False, verbose=0).history
    key = [k for k in h if k != "accuracy" and "accuracy" in k]
    if len(key) != 1:
        raise AssertionError(f"no weighted accuracy in {sorted(h)}")
    curve = []
    for k in range(n_ds + n_np):
        # the dataset's batches 0..2, then numpy's pass from its start
        b = k if k < n_ds else k - n_ds
        sl = slice(b * BATCH, (b + 1) * BATCH)
        loss, acc = weighted_loss_acc(ws, x[sl], y[sl], sw[sl])
        got = h if k < n_ds else g
        i = k if k < n_ds else k - n_ds
        close(f"weighted step {k} loss", got["loss"][i], loss)
        close(f"weighted step {k} accuracy", got[key[0]][i], acc)
        curve.append(loss)
        ws = sgd_step(ws, x[sl], y[sl], lr, sw[sl].astype(np.float64))
    # evaluate(sample_weight=[N, T]): one batch of all N, as numpy's
    r = model.evaluate(x, y, sample_weight=sw, batch_size=N, verbose=0,
                       return_dict=True)
    ws = [w.astype(np.float64) for w in model.get_weights()]
    loss, acc = weighted_loss_acc(ws, x, y, sw)
    close("evaluate's weighted loss", r["loss"], loss)
    close("evaluate's weighted accuracy", r[key[0]], acc)
    unweighted = loss_acc(ws, x[:BATCH], y[:BATCH])[0]
    print(f"seq_tagger: per-step weights' losses {curve} "
          f"(unweighted after: {unweighted:.4f})", flush=True)
    try:
        model.fit(x, y, sample_weight=sw[:, :T - 1], epochs=1, verbose=0)
        raise AssertionError("sample_weight [N, T - 1] taken")
    except ValueError as e:
        if f"or one per step ([{N}, {T}])" not in str(e):
            raise AssertionError(f"sample_weight [N, T - 1] says: {e}")


def fail(msg):
    print(f"seq_tagger: FAILED: {msg}", flush=True)
    return 1


def close(what, got, want, rel=1e-5):
    if abs(got - want) > rel * max(abs(want), 1e-3):
        raise AssertionError(f"{what}: {got!r}, numpy {want!r}")


def build(strategy, opt, weighted=False):
    with strategy.scope():
        tok = pasco.Input(shape=(T,), dtype="int64", name="tok")
        h = pasco.layers.Embedding(V, D, mask_zero=True)(tok)
        out = pasco.layers.Dense(C, activation="softmax")(h)
        model = pasco.Model(inputs=tok, outputs=out, seed=5)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"],
                  weighted_metrics=["accuracy"] if weighted else None)
    return model


def replay(cluster, d, x, y):
    steps, lr = 5, 0.5
    ds = pasco.data.tfrecord(f"{d}/train.tfrecord",
                             {"tok": pasco.data.Feature("int64", T)},
                             label="tags", label_shape=(T,),
                             batch_size=BATCH, repeat=-1)
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    model = build(strategy, pasco.optimizers.SGD(lr))
    model.build(ds)
    ws = [w.astype(np.float64) for w in model.get_weights()]
    h = model.fit(ds, epochs=steps, steps_per_epoch=1, verbose=0)
    masked_differs = False
    for k in range(steps):
        xb, yb = x[k * BATCH:(k + 1) * BATCH], y[k * BATCH:(k + 1) * BATCH]
        loss, acc, acc_all = loss_acc(ws, xb, yb)
        close(f"step {k} loss", h.history["loss"][k], loss)
        close(f"step {k} accuracy", h.history["accuracy"][k], acc)
        masked_differs = masked_differs or abs(acc - acc_all) > 0.05
        ws = sgd_step(ws, xb, yb, lr)
    if not masked_differs:
        raise AssertionError("the accuracies over every step and over the "
                             "unmasked ones agree: the check cannot tell")
    close("the table after the steps", float(model.get_weights()[0].sum()),
          float(ws[0].sum()))
    # numpy arrays (one epoch of N / BATCH steps, in order) continue it
    h = model.fit(x, y, batch_size=BATCH, epochs=1, shuffle=False,
                  verbose=0)
    want = []
    for k in range(N // BATCH):
        xb, yb = x[k * BATCH:(k + 1) * BATCH], y[k * BATCH:(k + 1) * BATCH]
        want.append(loss_acc(ws, xb, yb)[0])
        ws = sgd_step(ws, xb, yb, lr)
    close("numpy fit's epoch loss", h.history["loss"][0],
          float(np.mean(want)))
    try:
        model.fit(x, y, class_weight={1: 2.0}, epochs=1, verbose=0)
        raise AssertionError("class_weight of sequence targets taken")
    except ValueError as e:
        if "class_weight: a sequence's targets" not in str(e):
            raise AssertionError(f"class_weight says: {e}")
    print(f"seq_tagger: replay losses {h.history['loss']}", flush=True)
    step_weights(cluster, d, x, y)
    regression(cluster, d, x)
    refusals()
    return "replay: 5 dataset steps and a numpy epoch as numpy's"


def train(cluster, d, x, y):
    ds = pasco.data.tfrecord(f"{d}/train.tfrecord",
                             {"tok": pasco.data.Feature("int64", T)},
                             label="tags", label_shape=(T,),
                             batch_size=BATCH, shuffle=N, repeat=-1)
    ev = pasco.data.tfrecord(f"{d}/train.tfrecord",
                             {"tok": pasco.data.Feature("int64", T)},
                             label="tags", label_shape=[T],
                             batch_size=N, shard="records")
    strategy = pasco.ParameterServerStrategy(cluster)
    model = build(strategy, pasco.optimizers.Adam(0.05))
    model.fit(ds, epochs=4, steps_per_epoch=25, verbose=0)
    r = model.evaluate(ev, return_dict=True)
    ws = [w.astype(np.float64) for w in model.get_weights()]
    loss, acc, _ = loss_acc(ws, x, y)
    # evaluate: each shard (records i::2) one batch, the losses
    # weighted by the batches' sizes (Keras's loss tracker)
    shard = [loss_acc(ws, x[i::2], y[i::2])[0] for i in range(2)]
    close("evaluate's accuracy", r["accuracy"], acc)
    close("evaluate's loss", r["loss"], float(np.mean(shard)))
    if acc < 0.9:
        raise AssertionError(f"masked accuracy {acc} < 0.9")
    return f"train: accuracy {acc:.3f} loss {loss:.4f}"


def chief(cluster):
    d, mode = cluster.argv[1], cluster.argv[2]
    x, y = data(N, 1)
    pasco.data.write_tfrecord(os.path.join(d, "train.tfrecord"),
                              {"tok": x, "tags": y})
    try:
        said = (replay if mode == "replay" else train)(cluster, d, x, y)
    except AssertionError as e:
        return fail(str(e))
    print(f"seq_tagger: OK {said}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
