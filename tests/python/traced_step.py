"""@pasco.function steps on a launched cluster (python/pasco/function.py,
worker/graph_step.c), over make_table's DIR/train.csv. Two parts, each a
launch of its own (tests/python/run_test.py, case traced_step):

equal (1 worker, one step at a time): a traced train step (GradientTape,
  Adam's apply_gradients, the loss returned) on a model gives the same
  losses, step by step, and the same final weights as the library's
  "pasco.model_train" on a model of the same layers and seed, over the
  same batches from the global step 0 (to float32 rounding).
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
    print("traced_step: OK equal", flush=True)
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
