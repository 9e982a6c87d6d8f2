"""TensorFlow's names in Pasco (docs/tensorflow-port.md,
python/pasco/{_tf,keras,nn,distribute}.py) on a launched cluster, every
value against numpy:

- the tutorial's model written with TF's names: pasco.keras.layers.Input
  of pasco.int64, pasco.keras.layers.Embedding (Keras's sequence output),
  pasco.reduce_mean(..., axis=1) on the functional tensor (the model's
  config has a GlobalAveragePooling1D for it), Dense with
  pasco.keras.regularizers.L2(1e-4), pasco.keras.Model({"features": x},
  y); its forward pass in a traced step equals numpy's from its weights;
- in that step (strategy.run of a replica function, on a dict element):
  BinaryCrossentropy(reduction=Reduction.NONE) per example, "sum", the
  default's mean; nn.compute_average_loss (default and
  global_batch_size=64); nn.scale_regularization_loss(add_n(model.losses));
  strategy.reduce SUM/MEAN with axis None and 0; cast(greater(p, 0.5),
  int64) against numpy's;
- Binary/Categorical/SparseCategoricalCrossentropy (and from_logits) and
  MeanSquaredError with Reduction.NONE, compute_average_loss with
  sample_weight, strategy.reduce MEAN, on tensor arguments;
- compile with a Reduction.SUM and a Reduction.NONE loss: evaluate on one
  batch gives numpy's sum and mean;
- ops between [batch, width] layers (pasco.tanh, pasco.multiply): Custom
  layers in the config, predictions against numpy, saved and loaded;
- save and load_model: the op's layer comes back, the same predictions;
- misuse, word for word: reduce with an unknown op, compute_average_loss
  of a scalar (on the chief and in a traced step), add_n of mismatched
  shapes, an unknown reduction; result() has .numpy() and formats with %f.
Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 tf_names.py DIR
Prints "tf_names: OK" or "tf_names: FAILED: why" (exit 1)."""

import os
import sys

import numpy as np

import pasco

N, B = 64, 16


def fail(msg):
    print(f"tf_names: FAILED: {msg}", flush=True)
    return 1


def close(what, got, want, tol=1e-5):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape or not np.allclose(got, want, rtol=tol,
                                                  atol=tol):
        raise AssertionError(f"{what}: got {got.ravel()[:6]} (shape "
                             f"{got.shape}), numpy {want.ravel()[:6]} "
                             f"(shape {want.shape})")


def raises(what, fn, exc, message):
    try:
        fn()
    except exc as e:
        if str(e) != message:
            raise AssertionError(f"{what}: message {str(e)!r}, expected "
                                 f"{message!r}")
        return
    raise AssertionError(f"{what}: no {exc.__name__}")


def bce(y, p):
    p = np.clip(p, 1e-7, 1 - 1e-7)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def forward(weights, ids):
    emb, kernel, bias = weights
    return 1 / (1 + np.exp(-(emb[ids].mean(axis=1) @ kernel + bias)))


def tutorial_model(regularizer):
    model_input = pasco.keras.layers.Input(shape=(3,), dtype=pasco.int64,
                                           name="model_input")
    emb_layer = pasco.keras.layers.Embedding(input_dim=8, output_dim=4)
    emb_output = pasco.reduce_mean(emb_layer(model_input), axis=1)
    dense_output = pasco.keras.layers.Dense(
        units=1, activation="sigmoid", kernel_regularizer=regularizer,
        bias_initializer="ones")(emb_output)
    return pasco.keras.Model({"features": model_input}, dense_output)


def chief_checks():
    """What needs no cluster: names, messages, results."""
    raises("reduce MAX", lambda: pasco.distribute.reduce("MAX", 1.0),
           ValueError, "strategy.reduce: reduce_op must be pasco.distribute"
           ".ReduceOp.SUM or ReduceOp.MEAN (or 'SUM', 'MEAN'), got 'MAX'")
    raises("compute_average_loss of a scalar",
           lambda: pasco.nn.compute_average_loss(np.float32(2.0)),
           ValueError, "compute_average_loss: per_example_loss has shape "
           "(): expected one loss per example, [batch] or [batch, ...] (a "
           "Loss with reduction=pasco.losses.Reduction.NONE gives them; a "
           "loss already averaged needs no compute_average_loss)")
    raises("reduction", lambda: pasco.keras.losses.BinaryCrossentropy(
        reduction="max"), ValueError, "reduction: expected one of 'none' "
        "(or None), 'sum', 'sum_over_batch_size', 'auto' "
        "(pasco.losses.Reduction), got 'max'")
    raises("add_n", lambda: pasco.add_n([np.ones(2), np.ones(3)]),
           ValueError, "add_n: inputs[1] has shape (3,), inputs[0] (2,): "
           "add_n adds tensors of one shape")
    raises("add_n []", lambda: pasco.add_n([]), ValueError,
           "add_n: inputs: expected a non-empty list of tensors of one "
           "shape, got []")
    close("compute_average_loss", pasco.nn.compute_average_loss(
        np.array([1.0, 2.0, 6.0])), 3.0)
    close("global_batch_size", pasco.nn.compute_average_loss(
        np.array([[1.0, 2.0], [3.0, 6.0]]), global_batch_size=6), 2.0)
    close("scale_regularization_loss",
          pasco.nn.scale_regularization_loss([np.float32(1.5), 2.5]), 4.0)
    close("add_n", pasco.add_n([np.ones(2), 2 * np.ones(2)]), [3.0, 3.0])
    assert pasco.int64 == "int64" and pasco.string.name == "string"
    assert pasco.keras.optimizers.legacy.RMSprop is pasco.optimizers.RMSprop
    assert pasco.distribute.coordinator.ClusterCoordinator is \
        pasco.ClusterCoordinator
    assert "%f" % pasco.metrics.Result(0.25) == "0.250000"
    assert type(pasco.metrics.Result(0.25).numpy()) is np.float64


def per_example_losses(strategy, coordinator):
    """Each Loss class's reduction NONE, compute_average_loss with
    sample_weight and strategy.reduce MEAN, on values given as tensor
    arguments, against numpy."""
    rng = np.random.default_rng(9)
    yb = (rng.random((6, 1)) < 0.5).astype(np.float32)
    pb = rng.uniform(0.01, 0.99, (6, 1)).astype(np.float32)
    xb = rng.normal(0, 2, (6, 1)).astype(np.float32)
    yc = rng.integers(0, 4, 6).astype(np.int64)
    pc = rng.dirichlet(np.ones(4), 6).astype(np.float32)
    xc = rng.normal(0, 2, (6, 4)).astype(np.float32)
    w = rng.uniform(0, 2, 6).astype(np.float32)
    L, R = pasco.keras.losses, pasco.keras.losses.Reduction.NONE

    @pasco.function
    def each(yb, pb, xb, yc, pc, xc, w):
        bce_ = L.BinaryCrossentropy(reduction=R)(yb, pb)
        return {"bce": bce_,
                "bce_logits": L.BinaryCrossentropy(
                    from_logits=True, reduction=R)(yb, xb),
                "cce": L.CategoricalCrossentropy(reduction=R)(
                    pasco.one_hot(yc, 4), pc),
                "cce_logits": L.CategoricalCrossentropy(
                    from_logits=True, reduction=R)(pasco.one_hot(yc, 4), xc),
                "scce": L.SparseCategoricalCrossentropy(reduction=R)(yc, pc),
                "mse": L.MeanSquaredError(reduction=R)(pc, xc),
                "weighted": pasco.nn.compute_average_loss(
                    bce_, sample_weight=w),
                "mean_all": strategy.reduce(
                    pasco.distribute.ReduceOp.MEAN, bce_, axis=None),
                "mean_rows": strategy.reduce("MEAN", xc, axis=1)}
    o = coordinator.schedule(each, args=(yb, pb, xb, yc, pc, xc, w)).fetch()
    onehot = np.eye(4)[yc]
    logp = xc - np.log(np.exp(xc).sum(axis=1, keepdims=True))
    want_bce = bce(yb, pb)[:, 0]
    close("bce NONE", o["bce"], want_bce)
    close("bce logits NONE", o["bce_logits"], (np.maximum(xb, 0) - xb * yb +
                                               np.log1p(np.exp(-abs(xb))))[:, 0])
    close("cce NONE", o["cce"], -(onehot * np.log(np.clip(
        pc / pc.sum(1, keepdims=True), 1e-7, 1 - 1e-7))).sum(1))
    close("cce logits NONE", o["cce_logits"], -(onehot * logp).sum(1))
    close("scce NONE", o["scce"], -np.log(np.clip(pc[np.arange(6), yc],
                                                  1e-7, 1 - 1e-7)))
    close("mse NONE", o["mse"], ((pc - xc) ** 2).mean(1))
    close("compute_average_loss(sample_weight)", o["weighted"],
          (want_bce * w).sum() / 6)
    close("reduce MEAN, axis None", o["mean_all"], want_bce)
    close("reduce MEAN, axis 1", o["mean_rows"], xc.mean(1))


def op_layers(strategy, d):
    """Ops between layers that are not a sequence's mean: Lambda layers
    (Custom in the config), their predictions against numpy, saved and
    loaded."""
    with strategy.scope():
        x = pasco.keras.Input(shape=(4,), name="x")
        h = pasco.keras.layers.Dense(3)(x)
        out = pasco.keras.layers.Dense(1)(pasco.multiply(pasco.tanh(h),
                                                         2.0))
        model = pasco.keras.Model(x, out)
    kinds = [l["class_name"] for l in model.get_config()["config"]["layers"]]
    if kinds != ["Dense", "Custom", "Custom", "Dense"]:
        raise AssertionError(f"op layers: the config's layers are {kinds}")
    model.compile(optimizer="sgd", loss="mse")
    xs = np.random.default_rng(2).normal(size=(8, 4)).astype(np.float32)
    got = model.predict(xs, batch_size=8)
    k1, b1, k2, b2 = model.get_weights()
    close("op layers' predict", got, (2 * np.tanh(xs @ k1 + b1)) @ k2 + b2)
    model.save(os.path.join(d, "ops.keras"))
    loaded = pasco.keras.models.load_model(os.path.join(d, "ops.keras"))
    if not np.array_equal(loaded.predict(xs, batch_size=8), got):
        raise AssertionError("op layers: the loaded model predicts "
                             "otherwise")


def chief(cluster):
    d = cluster.argv[1]
    try:
        chief_checks()
    except AssertionError as e:
        return fail(e)
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 8, size=(N, 3)).astype(np.int64)
    labels = (ids.min(axis=1) < 3).astype(np.float32)
    path = os.path.join(d, "tf_names.tfrecord")
    pasco.data.write_tfrecord(path, {"features": ids, "label": labels})
    data = pasco.data.tfrecord(path, {"features": pasco.data.Feature(
        "int64", 3)}, label="label", label_type="float", batch_size=B,
        repeat=-1, shard="none")

    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    coordinator = pasco.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        model = tutorial_model(pasco.keras.regularizers.L2(1e-4))
        acc, auc = pasco.keras.metrics.Accuracy(), pasco.keras.metrics.AUC()
    acc.update_state([1, 0, 1, 1], [1, 1, 1, 0])
    auc.update_state([0, 1, 1, 0], [0.1, 0.8, 0.4, 0.6])
    for m, want in ((acc, 0.5), (auc, 0.75)):
        r = m.result()
        if "%f" % r != "%f" % want or type(r.numpy()) is not np.float64 or \
                abs(r.numpy() - want) > 1e-3:
            return fail(f"{m.name}.result(): {r!r}, numpy() "
                        f"{getattr(r, 'numpy', None)}; expected {want}")
    layers = [l["class_name"] for l in
              model.get_config()["config"]["layers"]]
    if layers != ["Embedding", "GlobalAveragePooling1D", "Dense"]:
        return fail(f"the model's layers are {layers}")
    Reduction = pasco.keras.losses.Reduction

    @pasco.function
    def check(iterator):
        def replica_fn(batch_data, labels):
            pred = model(batch_data, training=False)
            per_example = pasco.keras.losses.BinaryCrossentropy(
                reduction=Reduction.NONE)(labels, pred)
            return {
                "pred": pred, "per_example": per_example,
                "sum": pasco.keras.losses.BinaryCrossentropy(
                    reduction=Reduction.SUM)(labels, pred),
                "mean": pasco.keras.losses.BinaryCrossentropy()(labels,
                                                                pred),
                "average": pasco.nn.compute_average_loss(per_example),
                "average64": pasco.nn.compute_average_loss(
                    per_example, global_batch_size=64),
                "reg": pasco.nn.scale_regularization_loss(
                    pasco.add_n(model.losses)),
                "actual": pasco.cast(pasco.greater(pred, 0.5), pasco.int64),
                "ids": batch_data["features"], "labels": labels}
        batch_data, labels = next(iterator)
        out = strategy.run(replica_fn, args=(batch_data, labels))
        out["reduced_sum"] = strategy.reduce(
            pasco.distribute.ReduceOp.SUM, out["per_example"], axis=0)
        out["reduced_mean"] = strategy.reduce("mean", out["per_example"],
                                              axis=0)
        out["same"] = strategy.reduce(pasco.distribute.ReduceOp.SUM,
                                      out["average"], axis=None)
        return out

    it = iter(coordinator.create_per_worker_dataset(data))
    rvs = [coordinator.schedule(check, args=(it,)) for _ in range(4)]
    coordinator.join()
    w = model.get_weights()
    try:
        for rv in rvs:
            o = rv.fetch()
            p = forward(w, o["ids"])
            each = bce(o["labels"], p[:, 0])
            close("pred", o["pred"], p)
            close("per_example", o["per_example"], each)
            close("sum", o["sum"], each.sum(), 1e-4)
            close("mean", o["mean"], each.mean())
            close("average", o["average"], each.mean())
            close("average64", o["average64"], each.sum() / 64)
            close("reg", o["reg"], 1e-4 * (w[1] ** 2).sum(), 1e-6)
            close("actual", o["actual"], (p > 0.5).astype(np.int64))
            close("reduced_sum", o["reduced_sum"], each.sum(), 1e-4)
            close("reduced_mean", o["reduced_mean"], each.mean())
            close("same", o["same"], each.mean())
            if o["actual"].dtype != np.int64:
                return fail(f"cast to pasco.int64 gave {o['actual'].dtype}")
    except AssertionError as e:
        return fail(e)

    # per-example losses of given values (tensor arguments) on a worker
    try:
        per_example_losses(strategy, coordinator)
        op_layers(strategy, d)
    except AssertionError as e:
        return fail(e)

    # misuse inside a traced step: raised by schedule
    @pasco.function
    def scalar(iterator):
        x, y = next(iterator)
        return pasco.nn.compute_average_loss(
            pasco.losses.binary_crossentropy(y, model(x)))
    try:
        raises("traced compute_average_loss", lambda: coordinator.schedule(
            scalar, args=(it,)), ValueError,
            "compute_average_loss: per_example_loss has shape (): expected "
            "one loss per example, [batch] or [batch, ...] (a Loss with "
            "reduction=pasco.losses.Reduction.NONE gives them; a loss "
            "already averaged needs no compute_average_loss)")
    except AssertionError as e:
        return fail(e)

    # compiled losses with a reduction, on one batch of every example
    with strategy.scope():
        plain = tutorial_model(None)
    x = {"features": ids}
    for red, agg, smooth in ((Reduction.SUM, np.sum, 0.0),
                             (Reduction.NONE, np.mean, 0.0),
                             (None, np.mean, 0.1)):
        plain.compile(optimizer=pasco.keras.optimizers.legacy.RMSprop(0.1),
                      loss=pasco.keras.losses.BinaryCrossentropy(
                          reduction=red, label_smoothing=smooth))
        got = plain.evaluate(x, labels, batch_size=N, shards=1)
        want = agg(bce(labels * (1 - smooth) + smooth / 2,
                       forward(plain.get_weights(), ids)[:, 0]))
        try:
            close(f"evaluate, reduction {red!r}", got, want, 1e-4)
        except AssertionError as e:
            return fail(e)

    # save and load: the op's layer, the same predictions
    model.compile(optimizer="rmsprop", loss="binary_crossentropy")
    before = model.predict(x, batch_size=B)
    model.save(os.path.join(d, "tf_names.keras"))
    loaded = pasco.keras.models.load_model(os.path.join(d,
                                                        "tf_names.keras"))
    kinds = [l["class_name"] for l in
             loaded.get_config()["config"]["layers"]]
    after = loaded.predict(x, batch_size=B)
    if kinds != layers or not np.array_equal(before, after):
        return fail(f"loaded: layers {kinds}, predictions equal: "
                    f"{np.array_equal(before, after)}")
    try:
        close("predict", before, forward(w, ids))
    except AssertionError as e:
        return fail(e)
    print("tf_names: OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(pasco.main(chief))
