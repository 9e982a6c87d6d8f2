"""tf.data-style datasets on a launched cluster (python/pasco/data.py,
_dataset_map.py, worker/dataset_map.c; run_test.py's tf_data case, 2
workers):

train: TensorFlow's parameter-server tutorial's input pipeline as it is
  written there: from_tensor_slices of the words and labels, a map of a
  StringLookup model on the features and one on the labels (traced on
  the chief, run on the workers), .shuffle(200).batch(32).repeat(), made
  through strategy.distribute_datasets_from_function from a
  @pasco.function per_worker_dataset_fn; a traced step trains a model
  whose input is int64 ids to accuracy >= 0.9.
ids: a step that returns its batch: the ids the workers computed equal
  the chief's own lookup of the same examples (an "id" feature names each
  row), with .shuffle(16).repeat().batch(8), with map after batch (and
  prefetch), and with the lookup layers called directly in the map (the
  [batch] id through an IntegerLookup and an op).
once (a launch of its own, 1 worker, so that every step is that
  worker's): .batch(8).repeat(1) without shuffle reads every example
  exactly once, then the steps fail out of range.
shapes: a tuple (features, labels) of numbers: a [n] label is [batch], a
  float feature scaled by ops in the map; a pasco.data.tfrecord dataset's
  (x, y) mapped through a StringLookup; one array, take(4).batch(8): one
  batch of its first 4 values.
big map: a map over the name's 4000 bytes goes in a file beside the
  data; a dataset's files go when it is freed, and the per-worker
  datasets' when the strategy closes.
errors: bad chains and bad maps, word for word, raised on the chief.
Run on every task:
    pasco launch --ps 1 --workers 2 -- python3 tf_data.py
    pasco launch --ps 1 --workers 1 -- python3 tf_data.py once
Prints "tf_data: OK" or "tf_data: FAILED: why" (exit 1)."""

import random

import numpy as np

import pasco
from pasco import ops

VOCAB = ["avenger", "ironman", "batman", "hulk", "spiderman", "kingkong",
         "wonder_woman"]


def fail(msg):
    print(f"tf_data: FAILED: {msg}", flush=True)
    return 1


def examples(n, seed):
    rng = random.Random(seed)
    out = {"features": [], "label": []}
    for _ in range(n):
        f = rng.sample(VOCAB, 3)
        out["features"].append(f)
        out["label"].append(["yes"] if "avenger" in f else ["no"])
    return out


def stages():
    feature_lookup = pasco.layers.StringLookup(vocabulary=VOCAB,
                                               mask_token=None)
    label_lookup = pasco.layers.StringLookup(vocabulary=["yes", "no"],
                                             num_oov_indices=0,
                                             mask_token=None)
    raw = pasco.layers.Input(shape=(3,), dtype="string", name="features")
    feature_stage = pasco.Model(raw, feature_lookup(raw))
    raw_label = pasco.layers.Input(shape=(1,), dtype="string", name="label")
    label_stage = pasco.Model(raw_label, label_lookup(raw_label))
    return feature_stage, label_stage


def expect(kind, fn):
    try:
        fn()
    except kind as e:
        return str(e)
    return None


def train(strategy, coordinator, feature_stage, label_stage):
    data = examples(200, 3)

    def dataset_fn(_):
        raw_dataset = pasco.data.Dataset.from_tensor_slices(data)
        return raw_dataset.map(
            lambda x: (
                {"features": feature_stage(x["features"])},
                label_stage(x["label"])
            )).shuffle(200).batch(32).repeat()

    @pasco.function
    def per_worker_dataset_fn():
        return strategy.distribute_datasets_from_function(dataset_fn)

    with strategy.scope():
        model_input = pasco.layers.Input(shape=(3,), dtype="int64",
                                         name="features")
        emb = pasco.layers.Embedding(input_dim=len(VOCAB) + 1,
                                     output_dim=16)(model_input)
        out = pasco.layers.Dense(1, activation="sigmoid")(emb)
        model = pasco.Model(model_input, out)
        optimizer = pasco.optimizers.RMSprop(learning_rate=0.1)
        accuracy = pasco.metrics.Accuracy()

    @pasco.function
    def step_fn(iterator):
        batch_data, labels = next(iterator)
        with pasco.GradientTape() as tape:
            pred = model(batch_data, training=True)
            loss = pasco.losses.binary_crossentropy(labels, pred)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        accuracy.update_state(labels, ops.cast(ops.greater(pred, 0.5),
                                               "int64"))
        return loss

    it = iter(coordinator.create_per_worker_dataset(per_worker_dataset_fn))
    for _ in range(4):
        accuracy.reset_states()
        for _ in range(5):
            coordinator.schedule(step_fn, args=(it,))
        coordinator.join()
    acc = float(accuracy.result())
    print(f"tf_data: train accuracy {acc:.3f}", flush=True)
    return None if acc >= 0.9 else f"train accuracy {acc} < 0.9"


def lookup(data, ids):
    """The chief's lookup of examples ids: feature ids and label ids."""
    f = np.array([[VOCAB.index(w) + 1 for w in data["features"][i]]
                  for i in ids], np.int64)
    y = np.array([[0 if data["label"][i] == ["yes"] else 1] for i in ids],
                 np.int64)
    return f, y


def ids(coordinator, feature_stage, label_stage):
    data = examples(40, 5)
    data["id"] = np.arange(40)

    def mapped(x):
        return ({"features": feature_stage(x["features"]), "id": x["id"]},
                label_stage(x["label"]))

    @pasco.function
    def show(iterator):
        x, y = next(iterator)
        return x["id"], x["features"], y

    feature_lookup = pasco.layers.StringLookup(vocabulary=VOCAB,
                                               mask_token=None)
    label_lookup = pasco.layers.StringLookup(vocabulary=["yes", "no"],
                                             num_oov_indices=0,
                                             mask_token=None)
    id_lookup = pasco.layers.IntegerLookup(vocabulary=list(range(40)),
                                           mask_token=None)

    def by_layers(x):  # layers called directly; a [batch] id through one
        return ({"features": feature_lookup(x["features"]),
                 "id": ops.subtract(ops.cast(id_lookup(x["id"]), "float32"),
                                    1.0)},
                label_lookup(x["label"]))

    raw = pasco.data.Dataset.from_tensor_slices(data)
    for name, ds in (
            ("shuffle(16).repeat().batch(8)",
             raw.map(mapped).shuffle(16).repeat().batch(8)),
            ("batch(8).map", raw.batch(8).map(mapped).repeat().prefetch(2)),
            ("layers", raw.map(by_layers).shuffle(40).batch(8).repeat())):
        it = iter(coordinator.create_per_worker_dataset(ds))
        rvs = [coordinator.schedule(show, args=(it,)) for _ in range(8)]
        seen = 0
        for rv in rvs:
            rid, f, y = rv.fetch()
            if rid.ndim != 1:
                return f"{name}: the ids have shape {rid.shape}"
            rid = rid.astype(np.int64)
            want_f, want_y = lookup(data, rid)
            if f.dtype != np.int64 or not np.array_equal(f, want_f) or \
                    not np.array_equal(y, want_y):
                return (f"{name}: ids {rid}: the workers' {f.tolist()} "
                        f"{y.tolist()}, the chief's {want_f.tolist()} "
                        f"{want_y.tolist()}")
            seen += len(rid)
        if seen != 64:
            return f"{name}: {seen} examples in 8 batches of 8"
    return None


def once(coordinator, workers):
    data = examples(24, 7)
    data["id"] = np.arange(24)

    @pasco.function
    def show(iterator):
        x = next(iterator)
        return x["id"]

    ds = pasco.data.Dataset.from_tensor_slices(data).batch(8).repeat(1)
    it = iter(coordinator.create_per_worker_dataset(ds))
    counts = np.zeros(24, np.int64)
    ended = 0
    for _ in range(3 * workers + 4):
        rv = coordinator.schedule(show, args=(it,))
        try:
            counts[rv.fetch().reshape(-1)] += 1
        except pasco.OutOfRangeError:
            ended += 1
            try:
                coordinator.join()  # the same error, raised once
            except pasco.OutOfRangeError:
                pass
    if not np.all(counts == workers) or ended != 4:
        return (f"repeat(1): each example read {counts.tolist()} times "
                f"over {workers} workers, {ended} steps out of range "
                f"(want 4)")
    return None


def shapes(coordinator):
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    y = np.arange(6, dtype=np.int64) * 10
    ds = pasco.data.Dataset.from_tensor_slices((x, y)).map(
        lambda f, l: (ops.multiply(f, 2.0), l)).batch(3).repeat()

    @pasco.function
    def show(iterator):
        f, l = next(iterator)
        return f, l

    it = iter(coordinator.create_per_worker_dataset(ds))
    f, l = coordinator.schedule(show, args=(it,)).fetch()
    if f.shape != (3, 2) or l.shape != (3,) or \
            not np.array_equal(f, 2 * x[l // 10]):
        return f"tuple element: {f.tolist()} {l.tolist()}"
    # a tfrecord dataset's (x, y) mapped: a string feature looked up
    import atexit
    import os
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="tf_data-")
    atexit.register(shutil.rmtree, d, True)
    path = os.path.join(d, "w.tfrecord")
    pasco.data.write_tfrecord(path, {"w": np.array([["b", "a"], ["c", "x"]]),
                                     "y": np.array([5, 6])})
    look = pasco.layers.StringLookup(vocabulary=["a", "b", "c"],
                                     mask_token=None)
    tf = pasco.data.tfrecord(path, {"w": pasco.data.Feature("string", 2)},
                             label="y", batch_size=2, repeat=-1,
                             shard="none").map(lambda x, y: (look(x["w"]), y))
    it = iter(coordinator.create_per_worker_dataset(tf))
    w, l = coordinator.schedule(show, args=(it,)).fetch()
    if w.tolist() != [[2, 1], [3, 0]] or l.tolist() != [5, 6]:
        return f"a mapped tfrecord dataset: {w.tolist()} {l.tolist()}"
    ds = pasco.data.Dataset.from_tensor_slices(np.arange(10) * 3).take(
        4).batch(8).repeat()

    @pasco.function
    def first(iterator):
        return next(iterator)

    it = iter(coordinator.create_per_worker_dataset(ds))
    got = coordinator.schedule(first, args=(it,)).fetch()
    if got.tolist() != [0, 3, 6, 9]:
        return f"take(4).batch(8) of one array: {got.tolist()}"
    return None


def big_map(coordinator):
    """A map whose JSON is over the name's 4000 bytes (a 400-token
    vocabulary) travels as a file beside the data; the files go when the
    dataset is freed."""
    import gc
    import os
    vocab = [f"token{i:04d}" for i in range(400)]
    lookup = pasco.layers.StringLookup(vocabulary=vocab, mask_token=None)
    words = [[vocab[(7 * i) % 400], vocab[(7 * i + 1) % 400]]
             for i in range(20)]
    ds = pasco.data.Dataset.from_tensor_slices({"w": words}).map(
        lambda x: lookup(x["w"])).batch(20).repeat()
    name = ds.name(-1)
    if '"map_file":' not in name or len(name) > 4000:
        return f"a {len(name)}-byte name without a map_file"

    @pasco.function
    def first(iterator):
        return next(iterator)

    it = iter(coordinator.create_per_worker_dataset(ds))
    got = coordinator.schedule(first, args=(it,)).fetch()
    want = [[(7 * i) % 400 + 1, (7 * i + 1) % 400 + 1] for i in range(20)]
    if got.tolist() != want:
        return f"map_file: {got.tolist()}"
    free = pasco.data.Dataset.from_tensor_slices({"w": words})
    d = free._src.dir
    del free
    gc.collect()
    if os.path.exists(d):
        return f"{d} is left after its dataset was freed"
    return None


ERRORS = [
    ("shuffle after batch",
     lambda d, fs, ls: d.batch(4).shuffle(8),
     "Dataset.shuffle: after batch it would shuffle whole batches; the "
     "workers shuffle examples: call shuffle before batch"),
    ("shuffle after repeat",
     lambda d, fs, ls: d.repeat().shuffle(8),
     "Dataset.shuffle: after repeat it would mix the epochs; call shuffle "
     "before repeat"),
    ("batch twice",
     lambda d, fs, ls: d.batch(4).batch(2),
     "Dataset.batch: the dataset is already batched (the workers batch "
     "once)"),
    ("reduce over the batch",
     lambda d, fs, ls: d.map(lambda x: ops.reduce_sum(
         fs(x["features"]), axis=0, keepdims=True)),
     "Dataset.map(<lambda>): ops.reduce_sum works along the example axis "
     "(axis 0): a map function is traced once over the batches the "
     "workers read ([batch, ...]) and must treat each example alone; do "
     "this in the step instead"),
    ("reduce over every axis",
     lambda d, fs, ls: d.map(lambda x: ops.reduce_mean(
         ops.cast(fs(x["features"]), "float32"))),
     "Dataset.map(<lambda>): ops.reduce_mean reduces over every axis, the "
     "example axis (0) among them: a map function is traced once over "
     "the batches the workers read ([batch, ...]) and must treat each "
     "example alone; do this in the step instead"),
    ("a feature of another width",
     lambda d, fs, ls: d.map(lambda x: ls(x["features"])),
     "Dataset.map(<lambda>): model: input 'label' takes [batch, 1]; the "
     "tensor given is (None, 3)"),
]


def errors(coordinator, feature_stage, label_stage):
    d = pasco.data.Dataset.from_tensor_slices(examples(8, 1))
    for name, fn, want in ERRORS:
        got = expect((ValueError, TypeError),
                     lambda: fn(d, feature_stage, label_stage))
        if got != want:
            return f"{name}: got {got!r}, want {want!r}"
    got = expect(ValueError, lambda: coordinator.create_per_worker_dataset(
        d.map(lambda x: feature_stage(x["features"]))))
    if got != ("create_per_worker_dataset: the dataset is not batched: the "
               "workers read batches (call .batch(batch_size))"):
        return f"unbatched: {got!r}"
    with_dense = pasco.layers.Input(shape=(3,), dtype="int64", name="ids")
    dense = pasco.Model(with_dense, pasco.layers.Dense(2)(with_dense))
    got = expect(ValueError, lambda: d.map(
        lambda x: dense(feature_stage(x["features"]))))
    if got is None or "is not a preprocessing layer: a map runs " \
            "preprocessing layers" not in got:
        return f"a Dense in a map: {got!r}"
    from pasco._numpy_data import with_weights
    got = expect(ValueError, lambda: with_weights(
        pasco.data.tfrecord(d.spec["files"][0], {"label": "float"},
                            label="label").map(lambda x, y: (x, y)),
        None, {0: 2.0}))
    if got != ("class_weight: not with a from_tensor_slices or mapped "
               "dataset (the workers weigh the labels as they read them, "
               "before the map)"):
        return f"class_weight of a mapped dataset: {got!r}"
    tf = pasco.data.tfrecord(d.spec["files"][0], {"label": "float"})
    got = expect(ValueError, lambda: tf.shuffle(3))
    if got != ("Dataset.shuffle: a pasco.data.csv or tfrecord dataset is "
               "batched, shuffled and repeated by its arguments "
               "(batch_size=, shuffle=, repeat=); shuffle chains on "
               "Dataset.from_tensor_slices"):
        return f"shuffle of a tfrecord dataset: {got!r}"
    return None


def chief(cluster):
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    coordinator = pasco.ClusterCoordinator(strategy)
    feature_stage, label_stage = stages()
    if cluster.argv[1:] == ["once"]:  # 1 worker: every step is its own
        parts = [lambda: once(coordinator, cluster.num_workers)]
    else:
        parts = [lambda: errors(coordinator, feature_stage, label_stage),
                 lambda: shapes(coordinator),
                 lambda: big_map(coordinator),
                 lambda: ids(coordinator, feature_stage, label_stage),
                 lambda: train(strategy, coordinator, feature_stage,
                               label_stage)]
    for part in parts:
        why = part()
        if why is not None:
            return fail(why)
    import os
    kept = pasco.data.Dataset.from_tensor_slices([1, 2, 3]).batch(2)
    per_worker = coordinator.create_per_worker_dataset(kept)
    if not os.path.isdir(kept._src.dir):
        return fail(f"{kept._src.dir} is gone while its dataset is used")
    strategy.close()  # the per-worker datasets' files go with it
    if per_worker.dataset is not kept or os.path.exists(kept._src.dir):
        return fail(f"after close: {kept._src.dir} is left")
    print("tf_data: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
