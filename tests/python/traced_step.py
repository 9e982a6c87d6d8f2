"""@pasco.function steps on a launched cluster (python/pasco/function.py,
worker/graph_step.c), over make_table's DIR/train.csv. Two parts, each a
launch of its own (tests/python/run_test.py, case traced_step):

equal (1 worker, one step at a time): a traced train step (GradientTape,
  Adam's apply_gradients, the loss returned) on a model gives the same
  losses, step by step, and the same final weights as the library's
  "pasco.model_train" on a model of the same layers and seed, over the
  same batches from the global step 0 (to float32 rounding). Then a
  step reads the global step (an int64 variable: an argument, and
  read_value() of the captured variable), returns it and casts it into
  float arithmetic, and a train step scaled by it reads each count
  before its apply adds one; and one model is called on two batches in
  one step, the loss the sum, with a static Embedding and a dynamic one:
  the losses and the weights (and the dynamic rows, as the model reads
  them) after 3 SGD steps are numpy's.
metrics (2 workers): metric objects updated by a traced step on both
  workers (SparseCategoricalAccuracy with sample weights,
  CategoricalAccuracy, Mean of the loss, Sum of the labels) hold on the
  ps exactly the counts numpy computes from the same batches (each step
  returns its labels and predictions: a dict, fetched as numpy);
  reset_state() zeroes them; an update from the chief with numpy arrays
  adds Keras's counts; a tensor argument of a new shape traces
  again and both traces run; trace-time errors (control flow on a
  value, apply_gradients of gradients and variables in different
  orders, a gradient of a variable the loss does not use: None, and
  none at all) are raised by schedule, naming what is wrong, before
  anything is scheduled.
Run on every task:
    pasco launch --ps 2 --workers 1 -- python3 traced_step.py DIR equal
    pasco launch --ps 2 --workers 2 -- python3 traced_step.py DIR metrics
Prints "traced_step: OK <part>" or "traced_step: FAILED: why" (exit 1)."""

import numpy as np

import pasco
from pasco import ops

STEPS = 30


def fail(msg):
    print(f"traced_step: FAILED: {msg}", flush=True)
    return 1


def mlp(seed, out="softmax"):
    return pasco.Sequential([pasco.layers.Dense(16, activation="relu"),
                             pasco.layers.Dense(10, activation=out)],
                            seed=seed)


def equal(strategy, coordinator, d):
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32)
    with strategy.scope():
        builtin, traced = mlp(7, None), mlp(7, None)  # logits
    builtin.compile(optimizer=pasco.optimizers.Adam(1e-2),
                    loss="sparse_categorical_crossentropy", from_logits=True)
    builtin.build(train)
    step = strategy.global_step_variable()
    it = iter(coordinator.create_per_worker_dataset(train))
    want = [coordinator.schedule("pasco.model_train",
                                 args=(builtin, it, step))
            for _ in range(STEPS)]
    coordinator.join()
    want = [float(rv.fetch()[0]) for rv in want]

    step.assign(0)  # Adam's bias correction counts from the global step
    optimizer = pasco.optimizers.Adam(1e-2)

    @pasco.function
    def train_step(iterator):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            pred = traced(x, training=True)
            loss = pasco.losses.sparse_categorical_crossentropy(
                y, pred, from_logits=True)
        grads = tape.gradient(loss, traced.trainable_variables)
        optimizer.apply_gradients(zip(grads, traced.trainable_variables))
        return loss

    it2 = iter(coordinator.create_per_worker_dataset(train))
    got = [coordinator.schedule(train_step, args=(it2,))
           for _ in range(STEPS)]
    coordinator.join()
    got = [rv.fetch() for rv in got]
    if not all(isinstance(g, np.float32) for g in got):
        return fail(f"the traced step's loss is not a float32 scalar: "
                    f"{got[:3]}")
    print(f"losses: model_train {want[0]:.6f} .. {want[-1]:.6f}, traced "
          f"{got[0]:.6f} .. {got[-1]:.6f}, largest difference "
          f"{np.max(np.abs(np.asarray(got, np.float64) - want)):.3g}",
          flush=True)
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        k = int(np.argmax(np.abs(np.asarray(got) - want)))
        return fail(f"step {k}: the traced loss {got[k]} differs from "
                    f"model_train's {want[k]}")
    if strategy.global_step() != STEPS:
        return fail(f"global step {strategy.global_step()} after {STEPS} "
                    f"traced steps from 0")
    wdiff = max(float(np.max(np.abs(a - b))) for a, b in zip(
        builtin.get_weights(), traced.get_weights()))
    print(f"final weights: largest difference {wdiff:.3g}", flush=True)
    for a, b in zip(builtin.get_weights(), traced.get_weights()):
        if not np.allclose(a, b, rtol=1e-5, atol=1e-6):
            return fail(f"final weights differ by up to "
                        f"{np.max(np.abs(a - b))}")
    if not want[-1] < want[0]:
        return fail(f"the loss did not decrease: {want[0]} -> {want[-1]}")
    rv = global_step_reads(strategy, coordinator, traced, train) or \
        twice(strategy, coordinator, False) or \
        twice(strategy, coordinator, True)
    if rv:
        return rv
    print("traced_step: OK equal", flush=True)
    return 0


def global_step_reads(strategy, coordinator, model, train):
    """A step that reads the global step (an int64 variable), as its
    argument and by read_value() of the captured variable, returns it and
    casts it into float arithmetic, and a train step whose loss is scaled
    by it: each reads the count before its apply adds one."""
    gs = strategy.global_step_variable()
    g0 = strategy.global_step()

    @pasco.function
    def show(step):
        f = ops.cast(gs.read_value(), "float32")
        return step, f * 2.0 + 0.5

    got = coordinator.schedule(show, args=(gs,)).fetch()
    print(f"global step read in a step: {got}", flush=True)
    if not isinstance(got[0], np.int64) or got[0] != g0 or \
            got[1] != np.float32(2 * g0 + 0.5):
        return fail(f"a step reading the global step {g0} returned {got}")
    adam = pasco.optimizers.Adam(1e-3)  # the model has Adam's slots

    @pasco.function
    def scaled(iterator, step):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            loss = pasco.losses.sparse_categorical_crossentropy(
                y, model(x, training=True), from_logits=True)
            scaled = loss / (1.0 + ops.cast(step, "float32"))
        vs = model.trainable_variables
        grads = tape.gradient(scaled, vs + [gs])
        if grads[-1] is not None:
            raise AssertionError("a gradient of the int64 global step")
        adam.apply_gradients(zip(grads[:-1], vs))
        return step, loss, scaled

    it = iter(coordinator.create_per_worker_dataset(train))
    rvs = [coordinator.schedule(scaled, args=(it, gs)) for _ in range(3)]
    coordinator.join()
    outs = [rv.fetch() for rv in rvs]
    print(f"scaled steps: {[(int(s), float(l), float(c)) for s, l, c in outs]}",
          flush=True)
    for k, (s, l, c) in enumerate(outs):
        if s != g0 + k or not np.isclose(c, l / (1.0 + s), rtol=1e-6):
            return fail(f"scaled step {k}: read the global step {s} (want "
                        f"{g0 + k}), loss {l}, scaled {c}")
    if strategy.global_step() != g0 + 3:
        return fail(f"global step {strategy.global_step()} after 3 applies "
                    f"from {g0}")
    return 0


def twice_batches(dynamic):
    """6 batches of 8 (3 steps of 2 calls): 3 ids each, repeated within
    and across the two calls of a step; keys far from 0 for a dynamic
    table."""
    rng = np.random.default_rng(11)
    ids = rng.integers(0, 12, size=(48, 3)).astype(np.int64)
    if dynamic:
        ids = ids * 7919 + 10 ** 12
    y = rng.normal(size=(48, 1)).astype(np.float32)
    return ids, y


def twice_reference(table, w, b, ids, y, lr):
    """The same 3 steps in numpy: per step, the model (mean of the rows,
    then Dense(1)) on two batches with the weights before the step, the
    loss the sum of both MSEs, every gradient the sum of both calls';
    SGD. table: id -> row (a dict, rows made at first use as zeros for a
    dynamic table). Returns the losses."""
    losses = []
    for s in range(3):
        gw, gb, grows, loss = np.zeros_like(w), np.zeros_like(b), {}, 0.0
        for c in range(2):
            sl = slice((2 * s + c) * 8, (2 * s + c + 1) * 8)
            i, t = ids[sl], y[sl].astype(np.float64)
            e = np.stack([np.mean([table[k] for k in row], 0) for row in i])
            r = e @ w + b - t
            loss += float(np.mean(r ** 2))
            dy = 2 * r / len(r)
            gw += e.T @ dy
            gb += dy.sum(0)
            de = dy @ w.T / i.shape[1]
            for n, row in enumerate(i):
                for k in row:
                    grows[k] = grows.get(k, 0) + de[n]
        losses.append(loss)
        w, b = w - lr * gw, b - lr * gb
        for k, g in grows.items():
            table[k] = table[k] - lr * g
    return losses, table, w, b


def twice(strategy, coordinator, dynamic):
    """One model called on two batches in one traced step (a static
    Embedding, then a dynamic one), the loss the sum: the losses and the
    weights after 3 SGD steps are numpy's (twice_reference)."""
    what = "dynamic" if dynamic else "static"
    ids, y = twice_batches(dynamic)
    emb = pasco.layers.Embedding(output_dim=4, dynamic=True,
                                 embeddings_initializer="zeros") \
        if dynamic else pasco.layers.Embedding(12, 4)
    with strategy.scope():
        model = pasco.Sequential([emb, pasco.layers.Dense(1)], seed=3)
    ds = pasco.data.Dataset.from_tensor_slices((ids, y)).batch(8)
    sgd = pasco.optimizers.SGD(0.5)

    @pasco.function
    def step(iterator):
        x1, y1 = next(iterator)
        x2, y2 = next(iterator)
        with pasco.GradientTape() as tape:
            l1 = ops.mean(ops.square(model(x1, training=True) - y1))
            l2 = ops.mean(ops.square(model(x2, training=True) - y2))
            loss = l1 + l2
        grads = tape.gradient(loss, model.trainable_variables)
        sgd.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    @pasco.function
    def predict(x):
        return model(x)

    model.build(ds)
    dense = [v for v in model.variables if not v.name.startswith(emb.name)]
    w, b = (v.numpy().astype(np.float64) for v in dense)
    table = {k: np.zeros(4) for k in np.unique(ids)} if dynamic else \
        dict(enumerate(model.variables[0].numpy().astype(np.float64)))
    want, table, w, b = twice_reference(table, w, b, ids, y, 0.5)
    it = iter(coordinator.create_per_worker_dataset(ds))
    rvs = [coordinator.schedule(step, args=(it,)) for _ in range(3)]
    coordinator.join()
    got = [float(rv.fetch()) for rv in rvs]
    print(f"twice ({what}): losses {got}, numpy {want}", flush=True)
    if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
        return fail(f"twice ({what}): losses {got}, numpy's {want}")
    gw, gb = (v.numpy() for v in dense)
    keys = np.unique(ids)
    rows = np.stack([table[k] for k in keys])
    # the rows as the model reads them after training: each key alone
    pred = coordinator.schedule(predict, args=(np.stack(
        [keys] * 3, 1),)).fetch()
    diffs = [np.max(np.abs(gw - w)), np.max(np.abs(gb - b)),
             np.max(np.abs(pred - (rows @ w + b)))]
    if not dynamic:
        diffs.append(np.max(np.abs(model.variables[0].numpy()[keys] - rows)))
    print(f"twice ({what}): weights' largest differences from numpy "
          f"{[float(d) for d in diffs]}", flush=True)
    if max(diffs) > 1e-5 or np.max(np.abs(rows)) == 0:
        return fail(f"twice ({what}): the weights after 3 steps differ from "
                    f"numpy's by {diffs}")
    return 0


def numpy_counts(outs):
    """The metrics' [total, count] computed here from the steps'
    returned labels and predictions, as Keras defines each."""
    y = np.concatenate([o["y"] for o in outs]).astype(np.int64)
    pred = np.concatenate([o["pred"] for o in outs])
    hit = (np.argmax(pred, -1) == y).astype(np.float64)
    w = (y > 4).astype(np.float64) + 0.5
    losses = np.asarray([o["loss"] for o in outs], np.float64)
    return {"sparse": [np.sum(hit * w), np.sum(w)],
            "categorical": [np.sum(hit), float(len(y))],
            "mean_loss": [np.sum(losses), float(len(losses))],
            "label_sum": [float(np.sum(y))]}


def metrics(strategy, coordinator, d):
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32,
                           shuffle=1000)
    with strategy.scope():
        model = mlp(3)
        sparse = pasco.metrics.SparseCategoricalAccuracy()
        categorical = pasco.metrics.CategoricalAccuracy()
        mean_loss = pasco.metrics.Mean(name="loss")
        label_sum = pasco.metrics.Sum(name="label_sum")
    optimizer = pasco.optimizers.SGD(0.05)

    @pasco.function
    def step(iterator):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            pred = model(x, training=True)
            loss = pasco.losses.sparse_categorical_crossentropy(y, pred)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        sparse.update_state(y, pred, sample_weight=ops.cast(
            ops.greater(y, 4), "float32") + 0.5)
        categorical.update_state(ops.one_hot(y, 10), pred)
        mean_loss.update_state(loss)
        label_sum.update_state(ops.cast(y, "float32"))
        return {"y": y, "pred": pred, "loss": loss}

    it = iter(coordinator.create_per_worker_dataset(train))
    rvs = [coordinator.schedule(step, args=(it,)) for _ in range(STEPS)]
    coordinator.join()
    outs = [rv.fetch() for rv in rvs]
    if not all(set(o) == {"y", "pred", "loss"} and o["pred"].shape[1:] ==
               (10,) and o["y"].shape == o["pred"].shape[:1]
               for o in outs):
        return fail(f"the returned dict is not y, pred, loss: {outs[0]}")
    want = numpy_counts(outs)
    for name, m in (("sparse", sparse), ("categorical", categorical),
                    ("mean_loss", mean_loss), ("label_sum", label_sum)):
        got = m.state.numpy()
        print(f"{m.name}: ps state {got.tolist()}, numpy {want[name]}, "
              f"result {m.result():.4f}", flush=True)
        if not np.allclose(got, want[name], rtol=1e-6, atol=0):
            return fail(f"{m.name}: the ps holds {got.tolist()}, numpy "
                        f"counts {want[name]} on the same batches")
    sparse.reset_state()
    if sparse.result() != 0.0 or sparse.state.numpy().tolist() != [0, 0]:
        return fail(f"reset_state left {sparse.state.numpy()}")

    @pasco.function
    def scale(x, k):
        return x * ops.cast(k, "float32"), ops.sum(x)

    a = coordinator.schedule(scale, args=(np.arange(3, dtype=np.float32),
                                          2))
    b = coordinator.schedule(scale, args=(np.ones((2, 2), np.float32), 3))
    ra, rb = a.fetch(), b.fetch()
    print(f"scale: {ra}, {rb}, {scale.traces} traces", flush=True)
    if scale.traces != 2 or not isinstance(ra, tuple) or \
            ra[0].tolist() != [0, 2, 4] or ra[1] != 3 or \
            rb[0].tolist() != [[3, 3], [3, 3]] or rb[1] != 4:
        return fail(f"retrace on a new shape: {ra}, {rb}, "
                    f"{scale.traces} traces")

    chief_side = pasco.metrics.BinaryAccuracy()  # numpy counts, from here
    chief_side.update_state([[1], [1], [0], [0]], [[0.98], [1], [0], [0.6]])
    chief_side.update_state([1, 0], [[0.2], [0.1]], sample_weight=[2, 1])
    if chief_side.state.numpy().tolist() != [4, 7]:
        return fail(f"BinaryAccuracy updated from the chief holds "
                    f"{chief_side.state.numpy()}, Keras's counts are [4, 7]")

    @pasco.function
    def nothing(iterator):  # TensorFlow's eval step returns None
        next(iterator)

    if coordinator.schedule(nothing, args=(it,)).fetch() is not None:
        return fail("a step that returns nothing fetched something")
    return errors(coordinator, model, it)


def expect(exc, what, f):
    try:
        f()
    except exc as e:
        print(f"{what}: {type(e).__name__}: {e}", flush=True)
        return str(e)
    except Exception as e:  # noqa: BLE001 - reported as a failure
        print(f"{what}: unexpected {type(e).__name__}: {e}", flush=True)
        return None
    print(f"{what}: nothing raised", flush=True)
    return None


def errors(coordinator, model, it):
    sgd = pasco.optimizers.SGD(0.1)
    with coordinator.strategy.scope():
        other = mlp(5)

    @pasco.function
    def branch(iterator):
        x, y = next(iterator)
        if ops.mean(model(x)) > 0.5:
            return x
        return y

    msg = expect(TypeError, "control flow",
                 lambda: coordinator.schedule(branch, args=(it,)))
    if msg != ("branch: control flow on a tensor's value (if, while, "
               "and/or, bool()) cannot be traced: the graph is built "
               "once, without values; use ops.where(condition, x, y) "
               "instead"):
        return fail(f"control flow: {msg}")

    @pasco.function
    def swapped(iterator):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            loss = pasco.losses.sparse_categorical_crossentropy(y, model(x))
        vs = model.trainable_variables
        sgd.apply_gradients(zip(tape.gradient(loss, vs), vs[::-1]))

    msg = expect(ValueError, "swapped",
                 lambda: coordinator.schedule(swapped, args=(it,)))
    if msg is None or not msg.startswith(
            "SGD.apply_gradients: item 0: the gradient has shape (64, 16), "
            "the variable dense_") or "different orders" not in msg:
        return fail(f"apply of mismatched lists: {msg}")

    seen = []

    @pasco.function
    def unused(iterator):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            loss = pasco.losses.sparse_categorical_crossentropy(y, model(x))
        vs = other.trainable_variables
        grads = tape.gradient(loss, vs)
        seen.extend(grads)
        sgd.apply_gradients(zip(grads, vs))

    msg = expect(ValueError, "unused",
                 lambda: coordinator.schedule(unused, args=(it,)))
    if len(seen) != 4 or any(g is not None for g in seen) or msg != (
            "SGD.apply_gradients: no gradients provided for any variable "
            "(every gradient is None: the loss uses none of them)"):
        return fail(f"a gradient of an unused variable: {seen}, {msg}")
    if not coordinator.done():
        return fail("a step that failed to trace was scheduled")
    print("traced_step: OK metrics", flush=True)
    return 0


def chief(cluster):
    if cluster is None or len(cluster.argv) != 3 or \
            cluster.argv[2] not in ("equal", "metrics"):
        print("usage: pasco launch ... -- python3 traced_step.py DIR "
              "equal|metrics")
        return 2
    d, part = cluster.argv[1:]
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    coordinator = pasco.ClusterCoordinator(strategy)
    return (equal if part == "equal" else metrics)(strategy, coordinator, d)


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
