"""Issue 33's metric objects (pasco.metrics: AUC, Precision, Recall, the
top-k accuracies, MeanSquaredError, RootMeanSquaredError,
MeanAbsoluteError, BinaryCrossentropy) against numpy implementations of
Keras 3's definitions written here (keras/src/metrics:
confusion_metrics.py, metrics_utils.py, accuracy_metrics.py,
regression_metrics.py, probabilistic_metrics.py), on a launched cluster
of 2 ps and 2 workers over make_table's DIR (tests/python/run_test.py,
case keras3_metrics):

compile: model.compile(metrics=[AUC(), AUC(curve="PR"), "accuracy",
  Precision(thresholds=0.3), ...]) on a binary model (label == 3 of
  make_table's classes) and SparseTopKCategoricalAccuracy on the 10-class
  one: fit logs them under Keras's names (auc, auc_1, ...); evaluate over
  1 shard and over 2 (the 2 workers' counts summed) equals numpy's value
  of the same metric over predict's outputs of the same examples.
traced: every metric updated in a @pasco.function step on both workers
  (binary views, one-hot labels, predictions quantized so that top-k has
  ties, sample weights, several thresholds, top_k, class_id, from_logits,
  label_smoothing): each result() read from its state on a ps equals
  numpy's over the outputs the steps returned; the same metrics updated
  from the chief in this one process with numpy arrays of all of them
  give the same.
Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 keras3_metrics.py DIR
Prints "keras3_metrics: OK" or "keras3_metrics: FAILED: why" (exit 1)."""

import numpy as np

import pasco
from pasco import ops

M = pasco.metrics
F32 = np.float32
STEPS = 12
LW = [1.0, 0.5, 2.0, 0.0, 1.0, 1.0, 3.0, 0.25, 1.0, 1.0]  # label_weights
failures = []


def check(ok, msg):
    if not ok:
        failures.append(msg)
        print(f"FAILED: {msg}", flush=True)


def close(got, want, what, rtol=1e-6):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    ok = got.shape == want.shape and np.allclose(got, want, rtol=rtol,
                                                 atol=1e-9)
    print(f"{what}: {np.round(got, 7).tolist()} numpy "
          f"{np.round(want, 7).tolist()}", flush=True)
    check(ok, f"{what}: got {got.tolist()}, numpy (Keras's definition) "
          f"{want.tolist()}")


# ---- numpy: Keras 3's definitions ------------------------------------------

def confusion(y, p, thresholds, w=None):
    """tp, fp, tn, fn per threshold: a prediction above the float32
    threshold is positive, a label other than 0 is positive."""
    p = np.asarray(p, F32).reshape(-1)
    pos = np.asarray(y).reshape(-1) != 0
    w = np.ones(p.shape) if w is None else np.asarray(w, np.float64)
    out = []
    for t in np.asarray(thresholds, F32):
        above = p > t
        out.append([np.sum(w[above & pos]), np.sum(w[above & ~pos]),
                    np.sum(w[~above & ~pos]), np.sum(w[~above & pos])])
    return np.asarray(out).T


def nonan(a, b):
    return np.where(b == 0, 0.0, a / np.where(b == 0, 1.0, b))


def auc(y, p, num_thresholds=200, curve="ROC", summation="interpolation",
        thresholds=None, from_logits=False, w=None):
    p = np.asarray(p, F32)
    if from_logits:
        p = (1 / (1 + np.exp(-p.astype(np.float64)))).astype(F32)
    if thresholds is None:
        n = num_thresholds
        inner = [(i + 1) / (n - 1) for i in range(n - 2)]
        p = np.clip(p, 0, 1)  # the evenly-spaced path clips
    else:
        inner = sorted(thresholds)
        n = len(inner) + 2
        if np.allclose([0] + inner + [1], np.arange(n) / (n - 1),
                       atol=1e-7):
            p = np.clip(p, 0, 1)
    tp, fp, tn, fn = confusion(y, p, [-1e-7] + inner + [1 + 1e-7], w)
    if curve == "PR" and summation == "interpolation":
        total = 0.0
        for i in range(n - 1):
            pa, pb = tp[i] + fp[i], tp[i + 1] + fp[i + 1]
            dtp = tp[i] - tp[i + 1]
            slope = dtp / (pa - pb) if pa - pb > 0 else 0.0
            icept = tp[i + 1] - slope * pb
            ratio = pa / pb if pa > 0 and pb > 0 else 1.0
            pos = tp[i + 1] + fn[i + 1]
            if pos > 0:
                total += slope * (dtp + icept * np.log(ratio)) / pos
        return total
    recall = nonan(tp, tp + fn)
    if curve == "PRGAIN":  # recall gain and precision gain
        scale = nonan(tp + fn, tn + fp)
        x = np.array([0.0 if a == 0 else max(0.0, 1 - s * b / a)
                      for a, b, s in zip(tp, fn, scale)])
        h = np.array([1.0 if a == 0 else 1 - s * b / a
                      for a, b, s in zip(tp, fp, scale)])
    else:
        x, h = (nonan(fp, fp + tn), recall) if curve == "ROC" else \
            (recall, nonan(tp, tp + fp))
    heights = {"interpolation": (h[:-1] + h[1:]) / 2,
               "minoring": np.minimum(h[:-1], h[1:]),
               "majoring": np.maximum(h[:-1], h[1:])}[summation]
    return float(np.sum((x[:-1] - x[1:]) * heights))


def auc_labels(y, p, multi_label, label_weights=None, **kw):
    """multi_label: each column's AUC, averaged (weighted by
    label_weights); else every element one label, each column's counts
    weighed by its label weight."""
    y, p = np.asarray(y), np.asarray(p, F32)
    if not multi_label:
        w = None if label_weights is None else \
            np.tile(np.asarray(label_weights, np.float64), len(y))
        return auc(y.reshape(-1), p.reshape(-1), w=w, **kw)
    by = np.array([auc(y[:, j], p[:, j], **kw) for j in range(y.shape[1])])
    if label_weights is None:
        return float(np.mean(by))
    lw = np.asarray(label_weights, np.float64)
    return float(np.sum(by * lw) / np.sum(lw))


def top_k_filter(p, k):
    """Each row's k largest kept (ties: the lower index first, as
    top_k), the rest -1e10."""
    p = np.asarray(p, F32)
    out = np.full(p.shape, -1e10, F32)
    for i, row in enumerate(p):
        keep = np.argsort(-row, kind="stable")[:k]
        out[i, keep] = row[keep]
    return out


def precision_recall(y, p, thresholds=None, top_k=None, class_id=None,
                     recall=False):
    y, p = np.asarray(y), np.asarray(p, F32)
    if thresholds is None:
        thresholds = [0.5 if top_k is None else -1e10]
    if top_k is not None:
        p = top_k_filter(p, top_k)
    if class_id is not None:
        y, p = y[:, class_id], p[:, class_id]
    tp, fp, tn, fn = confusion(y, p, np.atleast_1d(thresholds))
    r = nonan(tp, tp + (fn if recall else fp))
    return r[0] if len(r) == 1 else r


def in_top_k(ids, p, k):
    p = np.asarray(p, F32)
    at = p[np.arange(len(ids)), ids]
    return np.mean(np.sum(p > at[:, None], axis=1) < k)


def bce(y, p, from_logits=False, label_smoothing=0.0):
    y = np.asarray(y, np.float64).reshape(-1)
    p = np.asarray(p, np.float64).reshape(-1)
    y = y * (1 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        return np.mean(np.maximum(p, 0) - p * y + np.log1p(np.exp(-abs(p))))
    # Keras clips in float32: [1e-7, 1 - 1e-7] as float32 numbers
    p = np.clip(p, F32(1e-7), F32(1 - 1e-7))
    return np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p)))


# ---- compile ----------------------------------------------------------------

def binary_csv(src, dst):
    """make_table's CSV with label 1 where the class is 3, else 0."""
    with open(src) as f:
        header = f.readline().strip()
    data = np.loadtxt(src, delimiter=",", skiprows=1)
    data[:, 0] = data[:, 0] == 3
    np.savetxt(dst, data, delimiter=",", header=header, comments="",
               fmt=["%d"] + ["%.5f"] * (data.shape[1] - 1))
    return data[:, 0]


def compile_part(d):
    yb = binary_csv(f"{d}/eval.csv", f"{d}/bin_eval.csv")
    binary_csv(f"{d}/train.csv", f"{d}/bin_train.csv")
    train = pasco.data.csv(f"{d}/bin_train.csv", label="label",
                           label_type="float", batch_size=64, shuffle=500)
    val = pasco.data.csv(f"{d}/bin_eval.csv", label="label",
                         label_type="float", batch_size=100)
    model = pasco.Sequential([pasco.layers.Dense(16, activation="relu"),
                              pasco.layers.Dense(1, activation="sigmoid")],
                             seed=11)
    first = [M.AUC(), M.AUC(curve="PR"), "accuracy",
             M.Precision(thresholds=0.3), M.Recall(thresholds=0.7),
             M.BinaryCrossentropy(), M.RootMeanSquaredError(),
             M.AUC(num_thresholds=50, summation_method="majoring",
                   name="auc_major")]
    model.compile(optimizer=pasco.optimizers.SGD(0.1),
                  loss="binary_crossentropy", metrics=first)
    h = model.fit(train, epochs=1, steps_per_epoch=20, verbose=0)
    names = ["auc", "auc_1", "accuracy", "precision", "recall",
             "binary_crossentropy", "root_mean_squared_error", "auc_major"]
    print(f"fit logs: {sorted(h.history)}", flush=True)
    check(all(n in h.history for n in names),
          f"fit's logs {sorted(h.history)} lack Keras's names {names}")
    p = model.predict(val).reshape(-1)
    want = {"auc": auc(yb, p), "auc_1": auc(yb, p, curve="PR"),
            "accuracy": np.mean((p > 0.5) == (yb > 0.5)),
            "precision": precision_recall(yb, p, 0.3),
            "recall": precision_recall(yb, p, 0.7, recall=True),
            "binary_crossentropy": bce(yb, p),
            "root_mean_squared_error": np.sqrt(np.mean((yb - p) ** 2)),
            "auc_major": auc(yb, p, 50, summation="majoring")}
    for shards in (1, 2):
        ev = model.evaluate(val, return_dict=True, shards=shards)
        for n in names:
            close(ev.get(n, np.nan), want[n], f"compile {n}, {shards} "
                  f"shard{'s' if shards > 1 else ''}")
    model.compile(optimizer=pasco.optimizers.SGD(0.1),
                  loss="binary_crossentropy", metrics=[
                      M.MeanSquaredError(), M.MeanAbsoluteError(),
                      M.AUC(thresholds=[0.2, 0.5, 0.6], curve="PR",
                            summation_method="minoring"),
                      M.BinaryCrossentropy(label_smoothing=0.2, name="bce"),
                      M.Precision(name="p5"),
                      M.AUC(curve="prgain", name="gain"),
                      M.AUC(multi_label=True, name="auc_ml")])
    ev = model.evaluate(val, return_dict=True, shards=2)
    want = {"mean_squared_error": np.mean((yb - p) ** 2),
            "mean_absolute_error": np.mean(abs(yb - p)),
            "auc_2": auc(yb, p, thresholds=[0.2, 0.5, 0.6], curve="PR",
                         summation="minoring"),
            "bce": bce(yb, p, label_smoothing=0.2),
            "p5": precision_recall(yb, p),
            "gain": auc(yb, p, curve="PRGAIN"),
            "auc_ml": auc_labels(yb[:, None], p[:, None], True)}
    for n, v in want.items():
        close(ev.get(n, np.nan), v, f"compile {n}")

    y10 = np.loadtxt(f"{d}/eval.csv", delimiter=",", skiprows=1,
                     usecols=0).astype(np.int64)
    val10 = pasco.data.csv(f"{d}/eval.csv", label="label", batch_size=100)
    m10 = pasco.Sequential([pasco.layers.Dense(10, activation="softmax")],
                           seed=5)
    m10.compile(optimizer=pasco.optimizers.SGD(0.01),
                loss="sparse_categorical_crossentropy",
                metrics=[M.SparseTopKCategoricalAccuracy(k=3),
                         "sparse_top_k_categorical_accuracy", "accuracy",
                         M.SparseTopKCategoricalAccuracy(k=2, name="top2")])
    ev = m10.evaluate(val10, return_dict=True, shards=2)
    p10 = m10.predict(val10)
    want = {"sparse_top_k_categorical_accuracy": in_top_k(y10, p10, 3),
            "sparse_top_k_categorical_accuracy_1": in_top_k(y10, p10, 5),
            "accuracy": np.mean(np.argmax(p10, -1) == y10),
            "top2": in_top_k(y10, p10, 2)}
    for n, v in want.items():
        close(ev.get(n, np.nan), v, f"compile {n}")


# ---- traced steps -----------------------------------------------------------

def traced_part(strategy, coordinator, d):
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32,
                           shuffle=1000)
    with strategy.scope():
        model = pasco.Sequential([
            pasco.layers.Dense(16, activation="relu"),
            pasco.layers.Dense(10, activation="softmax")], seed=3)
        ms = {
            "auc": M.AUC(), "auc_pr": M.AUC(curve="PR"),
            "auc_w": M.AUC(num_thresholds=50, summation_method="minoring"),
            "auc_gain": M.AUC(curve="PRGAIN", num_thresholds=20),
            "auc_multi": M.AUC(multi_label=True, num_thresholds=30),
            "auc_multi_pr": M.AUC(multi_label=True, num_labels=10,
                                  curve="PR", label_weights=LW),
            "auc_label_weights": M.AUC(label_weights=LW),
            "auc_logits": M.AUC(from_logits=True, curve="PR",
                                thresholds=[0.1, 0.4, 0.5, 0.9]),
            "precision3": M.Precision(thresholds=[0.3, 0.5, 0.7]),
            "recall": M.Recall(thresholds=0.4),
            "precision_top2": M.Precision(top_k=2),
            "recall_top3_class1": M.Recall(top_k=3, class_id=1),
            "precision_class3": M.Precision(class_id=3, thresholds=0.15),
            "top3": M.TopKCategoricalAccuracy(k=3),
            "sparse_top2": M.SparseTopKCategoricalAccuracy(k=2),
            "mse": M.MeanSquaredError(), "rmse": M.RootMeanSquaredError(),
            "mae": M.MeanAbsoluteError(), "bce": M.BinaryCrossentropy(),
            "bce_logits": M.BinaryCrossentropy(from_logits=True,
                                               label_smoothing=0.1)}
    optimizer = pasco.optimizers.SGD(0.05)

    def views(B, y, pred):
        """The inputs each metric takes, from a batch: B is ops or a
        numpy namespace."""
        yb = B["cast"](B["equal"](y, 3), "float32")
        pb = B["clip"](pred[:, 3] * 6.0, 0.0, 1.0)  # spread over [0, 1]
        onehot = B["one_hot"](y, 10)
        # quantized: ties for the top-k metrics
        q = B["cast"](B["cast"](pred * 40.0, "int64"), "float32")
        w = B["cast"](B["greater"](y, 4), "float32") + 0.5
        return {"auc": (yb, pb), "auc_pr": (yb, pb),
                "auc_w": (yb, pb, w), "auc_gain": (yb, pb),
                "auc_multi": (onehot, pred), "auc_multi_pr": (onehot, pred),
                "auc_label_weights": (onehot, pred),
                "auc_logits": (yb, pb * 8.0 - 4.0),
                "precision3": (yb, pb), "recall": (yb, pb),
                "precision_top2": (onehot, q),
                "recall_top3_class1": (onehot, q),
                "precision_class3": (onehot, pred), "top3": (onehot, q),
                "sparse_top2": (y, q), "mse": (onehot, pred),
                "rmse": (onehot, pred), "mae": (onehot, pred),
                "bce": (yb, pb), "bce_logits": (yb, pb * 8.0 - 4.0)}

    sym = {"cast": ops.cast, "equal": ops.equal, "greater": ops.greater,
           "one_hot": ops.one_hot, "clip": ops.clip}

    @pasco.function
    def step(iterator):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            pred = model(x, training=True)
            loss = pasco.losses.sparse_categorical_crossentropy(y, pred)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        for k, args in views(sym, y, pred).items():
            if len(args) == 3:
                ms[k].update_state(args[0], args[1], sample_weight=args[2])
            else:
                ms[k].update_state(*args)
        return {"y": y, "pred": pred}

    it = iter(coordinator.create_per_worker_dataset(train))
    rvs = [coordinator.schedule(step, args=(it,)) for _ in range(STEPS)]
    coordinator.join()
    outs = [rv.fetch() for rv in rvs]
    y = np.concatenate([o["y"] for o in outs]).astype(np.int64)
    pred = np.concatenate([o["pred"] for o in outs]).astype(F32)
    npy = {"cast": lambda a, t: np.asarray(a).astype(t),
           "equal": lambda a, b: np.asarray(a) == b,
           "greater": lambda a, b: np.asarray(a) > b,
           "one_hot": lambda a, n: np.eye(n, dtype=F32)[a],
           "clip": lambda a, lo, hi: np.clip(a, F32(lo), F32(hi))}
    v = views(npy, y, pred)
    yb, pb = v["auc"]
    onehot = v["mse"][0]
    q = v["top3"][1]
    print(f"traced: {len(y)} examples, {int(np.sum(yb))} positive, "
          f"{len(np.unique(q))} distinct quantized values, "
          f"{int(np.sum(q == np.max(q, -1, keepdims=True)) - len(q))} "
          f"ties at a row's top", flush=True)
    want = {
        "auc": auc(yb, pb), "auc_pr": auc(yb, pb, curve="PR"),
        "auc_w": auc(yb, pb, 50, summation="minoring", w=v["auc_w"][2]),
        "auc_gain": auc(yb, pb, 20, curve="PRGAIN"),
        "auc_multi": auc_labels(onehot, pred, True, num_thresholds=30),
        "auc_multi_pr": auc_labels(onehot, pred, True, LW, curve="PR"),
        "auc_label_weights": auc_labels(onehot, pred, False, LW),
        "auc_logits": auc(yb, v["auc_logits"][1], curve="PR",
                          thresholds=[0.1, 0.4, 0.5, 0.9],
                          from_logits=True),
        "precision3": precision_recall(yb, pb, [0.3, 0.5, 0.7]),
        "recall": precision_recall(yb, pb, 0.4, recall=True),
        "precision_top2": precision_recall(*v["precision_top2"], top_k=2),
        "recall_top3_class1": precision_recall(
            *v["recall_top3_class1"], top_k=3, class_id=1, recall=True),
        "precision_class3": precision_recall(*v["precision_class3"],
                                             0.15, class_id=3),
        "top3": in_top_k(y, v["top3"][1], 3),
        "sparse_top2": in_top_k(y, v["sparse_top2"][1], 2),
        "mse": np.mean((v["mse"][0] - pred.astype(np.float64)) ** 2),
        "rmse": np.sqrt(np.mean((v["mse"][0] - pred.astype(np.float64))
                                ** 2)),
        "mae": np.mean(abs(v["mse"][0] - pred.astype(np.float64))),
        "bce": bce(yb, pb),
        "bce_logits": bce(yb, v["bce_logits"][1], True, 0.1)}
    for k, m in ms.items():
        close(m.result(), want[k], f"traced {k} ({m.name}) over 2 workers",
              rtol=1e-5 if k.startswith("bce") else 1e-6)
    with strategy.scope():  # the same from the chief, in this process
        local = {k: type(m)(**{a: b for a, b in m.get_config().items()
                               if a != "name"})
                 for k, m in ms.items()}
    for k, args in v.items():
        m = local[k]
        if len(args) == 3:
            m.update_state(args[0], args[1], sample_weight=args[2])
        else:
            m.update_state(*args)
        close(m.result(), want[k], f"chief-side {k}",
              rtol=1e-5 if k.startswith("bce") else 1e-6)


def chief(cluster):
    if cluster is None or len(cluster.argv) != 2:
        print("usage: pasco launch ... -- python3 keras3_metrics.py DIR")
        return 2
    d = cluster.argv[1]
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    coordinator = pasco.ClusterCoordinator(strategy)
    with strategy.scope():
        compile_part(d)
    traced_part(strategy, coordinator, d)
    if failures:
        print(f"keras3_metrics: FAILED: {len(failures)}: {failures[0]}",
              flush=True)
        return 1
    print("keras3_metrics: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
