#!/usr/bin/env python3
"""@pasco.function traced without a cluster: the step JSON of
docs/GRAPHS.md ("A traced step") for the TensorFlow tutorial's step, the
retrace rules, the trace-time errors word for word, and the metric
objects' arithmetic against Keras's documented examples.

Usage: step_trace.py LIBPASCO SOURCE_ROOT [SANITIZE]
(the library only parses the model's config to learn its variables and
output width; nothing is created on a ps). Prints "step_trace: OK" or
the failures, exit 1; 77 (skipped) without numpy or in a sanitized
build (python3 cannot load a libpasco built with -fsanitize)."""

import os
import sys

lib, root = sys.argv[1:3]
if len(sys.argv) > 3 and sys.argv[3] != "none":
    print(f"SKIP: this build uses -fsanitize={sys.argv[3]}: python3 cannot "
          f"load its libpasco")
    sys.exit(77)
os.environ["PASCO_LIBRARY"] = lib
sys.path.insert(0, os.path.join(root, "python"))

try:
    import numpy as np
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable}")
    sys.exit(77)

import pasco  # noqa: E402
from pasco import ops  # noqa: E402
from pasco.metrics import _Numpy  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)


def raises(exc, f, *args):
    """The message of exc raised by f(*args), or None (a failure)."""
    try:
        f(*args)
    except exc as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 - reported
        failures.append(f"{f}: {type(e).__name__}: {e}, expected "
                        f"{exc.__name__}")
        print(f"FAIL: unexpected {type(e).__name__}: {e}", flush=True)
        return None
    failures.append(f"{f}: nothing raised, expected {exc.__name__}")
    print(f"FAIL: {f}: nothing raised", flush=True)
    return None


def tutorial_model():
    words = pasco.Input(shape=(3,), name="features", dtype="int64")
    emb = pasco.layers.Embedding(8, 16, name="emb")(words)
    out = pasco.layers.Dense(1, activation="sigmoid", name="out",
                             kernel_regularizer=1e-4)(emb)
    return pasco.Model(inputs=words, outputs=out)


def nodes_of(js, op):
    return [(i, n) for i, n in enumerate(js["graph"]["nodes"])
            if n["op"] == op]


def tutorial_step():
    """The tutorial's step (examples/ps_tutorial.py's step_fn): its JSON
    has the iterator, the captured model and metric state and the global
    step as arguments; next nodes for (x, y); the model node; one
    gradient per variable; the RMSprop apply through the global step;
    the accuracy's assign_add of a float64 [2]; the loss as output."""
    d = "/nonexistent/tutorial"
    ds = pasco.data.tfrecord(f"{d}/train.tfrecord",
                             {"features": pasco.data.Feature("int64", 3)},
                             label="label", batch_size=32)
    model = tutorial_model()
    optimizer = pasco.optimizers.RMSprop(learning_rate=0.1)
    accuracy = pasco.metrics.Accuracy()

    @pasco.function
    def step_fn(iterator):
        batch_data, labels = next(iterator)
        with pasco.GradientTape() as tape:
            pred = model(batch_data, training=True)
            loss = pasco.losses.binary_crossentropy(labels, pred)
            model_losses = model.losses
            if model_losses:
                loss += sum(model_losses)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        actual_pred = ops.cast(ops.greater(pred, 0.5), "int64")
        accuracy.update_state(labels, actual_pred)
        return loss

    js = step_fn.trace(ds)
    nodes = js["graph"]["nodes"]
    check(js["name"] == "step_fn", f"name {js['name']}")
    check([a["kind"] for a in js["args"]] ==
          ["iterator", "model", "variable", "global_step"],
          f"args {js['args']}")
    check(js["args"][2] == {"kind": "variable", "shape": [2],
                            "dtype": "float64"}, f"metric arg {js['args']}")
    nx = nodes_of(js, "next")
    check(sorted((n["path"], n["shape"], n["dtype"], n["call"], n["arg"])
                 for _, n in nx) ==
          sorted([([0, "features"], [-1, 3], "int64", 0, 0),
                  ([1], [-1], "int64", 0, 0)]), f"next nodes {nx}")
    (mi, m), = nodes_of(js, "model")
    check(m["arg"] == 1 and m["training"] is True and
          m["shape"] == [-1, 1] and m["dtype"] == "float32" and
          nodes[m["in"][0]]["path"] == [0, "features"],
          f"model node {m}")
    grads = nodes_of(js, "gradient")
    check(sorted(n["var"] for _, n in grads) == [0, 1, 2],
          f"gradient vars {grads}")
    check(all(n["shape"] == s for (_, n), s in zip(
        sorted(grads, key=lambda g: g[1]["var"]),
        ([8, 16], [16, 1], [1]))), f"gradient shapes {grads}")
    (ri, r), = nodes_of(js, "read")  # the kernel, for its L2 penalty
    check(r["var"] == 1 and r["shape"] == [16, 1], f"read node {r}")
    (a,) = js["applies"]
    check(a["optimizer"] == pasco.optimizers.RMSprop(0.1).get_config(),
          f"apply's optimizer {a['optimizer']}")
    check(a["vars"] == [0, 1, 2] and a.get("global_step") is True and
          [nodes[g]["op"] for g in a["grads"]] == ["gradient"] * 3 and
          [nodes[g]["var"] for g in a["grads"]] == [0, 1, 2],
          f"apply {a}")
    (u,) = js["updates"]
    check(u["var"] == 3 and u["op"] == "assign_add" and
          nodes[u["value"]]["shape"] == [2] and
          nodes[u["value"]]["dtype"] == "float64", f"update {u}")
    (out,) = js["graph"]["outputs"]
    check(nodes[out]["shape"] == [] and nodes[out]["dtype"] == "float32",
          f"output {nodes[out]}")
    # every node's inputs are earlier nodes (topological order)
    check(all(all(k < i for k in n.get("in", []))
              for i, n in enumerate(nodes)), "nodes out of order")
    again = step_fn.trace(ds)
    check(again is js and step_fn.traces == 1,
          "the same arguments traced again")
    print(f"tutorial step: {len(nodes)} nodes, args "
          f"{[a['kind'] for a in js['args']]}", flush=True)


def custom_losses():
    """model.losses of a custom layer's regularized weight: its read
    variable's l1 * sum(|w|) + l2 * sum(w ** 2)."""
    class Scale(pasco.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(
                name="w", shape=(input_shape[-1],), initializer="ones",
                regularizer=pasco.regularizers.L1L2(l1=0.5, l2=0.25))

        def call(self, x):
            return x * self.w

    x_in = pasco.Input(shape=(4,), name="x")
    model = pasco.Model(inputs=x_in, outputs=pasco.layers.Dense(1)(
        Scale(name="scale")(x_in)))

    @pasco.function
    def penalty():
        (loss,) = model.losses
        return loss

    js = penalty.trace()
    nodes = js["graph"]["nodes"]
    (_, r), = nodes_of(js, "read")
    ops_used = sorted(n["op"] for n in nodes)
    check(r["var"] == 0 and r["shape"] == [4] and
          ops_used.count("abs") == 1 and ops_used.count("square") == 1 and
          sorted(n["value"] for _, n in nodes_of(js, "constant")) ==
          [0.25, 0.5] and js["args"] == [{"kind": "model"}],
          f"custom layer losses: {js}")


def retrace():
    """A new shape or kind of argument traces again; the same one does
    not. A tensor argument is an "arg" node of its shape and dtype."""
    @pasco.function
    def scale(x, k):
        return x * ops.cast(k, x.dtype)

    js = scale.trace(np.zeros(3, np.float32), 2.0)
    check([a for a in js["args"]] ==
          [{"kind": "tensor", "shape": [3], "dtype": "float32"},
           {"kind": "tensor", "shape": [], "dtype": "float32"}],
          f"tensor args {js['args']}")
    scale.trace(np.ones(3, np.float32), 5.0)
    check(scale.traces == 1, f"same shapes: {scale.traces} traces")
    # each schedule passes its own call's values through the one trace
    # (they were the first trace's: frozen)
    coordinator = type("Coordinator", (), {"strategy": None})()
    for x, k in ((np.zeros(3, np.float32), 2.0),
                 (np.arange(3, dtype=np.float32), 7.0)):
        _, full = scale._schedule_args(coordinator, (x, k))
        check(len(full) == 3 and np.array_equal(full[1], x) and
              full[2] == np.float32(k),
              f"scheduled args {full[1:]} for {x}, {k}")
    check(scale.traces == 1, f"scheduled: {scale.traces} traces")
    js4 = scale.trace(np.zeros(4, np.float32), 2.0)
    check(scale.traces == 2, f"a new shape: {scale.traces} traces")
    (_, x), = [(i, n) for i, n in nodes_of(js4, "arg") if n["arg"] == 0]
    check(x["shape"] == [4], f"retraced arg node {x}")
    scale.trace(np.zeros(4, np.float64), 2.0)
    check(scale.traces == 3, f"a new dtype: {scale.traces} traces")
    scale.trace(np.zeros(4, np.float64), 2)
    check(scale.traces == 4, f"an int for a float: {scale.traces} traces")


def errors():
    """Trace-time errors, word for word."""
    model = tutorial_model()
    ds = pasco.data.tfrecord("/nonexistent/t.tfrecord",
                             {"features": pasco.data.Feature("int64", 3)},
                             label="label")
    sgd = pasco.optimizers.SGD(0.1)

    @pasco.function
    def branch(iterator):
        x, y = next(iterator)
        pred = model(x, training=True)
        if ops.mean(pred) > 0.5:
            return pred
        return y

    msg = raises(TypeError, branch.trace, ds)
    check(msg is not None and "control flow" in msg and "ops.where" in msg,
          f"control flow: {msg}")

    other = pasco.Sequential([pasco.layers.Dense(2, name="other")],
                             name="other_model")

    @pasco.function
    def unused(iterator):
        x, y = next(iterator)
        with pasco.GradientTape(persistent=True) as tape:
            loss = pasco.losses.binary_crossentropy(y, model(x))
        g = tape.gradient(loss, other.trainable_variables)
        check(len(g) == 2 and all(t is None for t in g),
              f"gradient of unused variables: {g}")
        g2 = tape.gradient(loss, model.trainable_variables)
        check(all(t is not None for t in g2), f"used variables: {g2}")
        return loss

    unused.trace(ds)

    @pasco.function
    def outside_tape(iterator):
        x, y = next(iterator)
        pred = model(x)  # not recorded: computed before the tape opens
        with pasco.GradientTape() as tape:
            loss = pasco.losses.binary_crossentropy(y, pred)
        g = tape.gradient(loss, model.trainable_variables)
        check(len(g) == 3 and all(t is None for t in g),
              f"gradient outside the tape: {g}")
        return loss

    outside_tape.trace(ds)

    @pasco.function
    def swapped(iterator):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            loss = pasco.losses.binary_crossentropy(y, model(x))
        vs = model.trainable_variables
        grads = tape.gradient(loss, vs)
        sgd.apply_gradients(zip(grads, list(reversed(vs))))
        return loss

    msg = raises(ValueError, swapped.trace, ds)
    check(msg == "SGD.apply_gradients: item 0: the gradient has shape "
                 "(8, 16), the variable out/bias (1,) (gradients and "
                 "variables in different orders?)", f"swapped: {msg}")

    @pasco.function
    def none_at_all(iterator):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            loss = pasco.losses.binary_crossentropy(y, model(x))
        vs = other.trainable_variables
        sgd.apply_gradients(zip(tape.gradient(loss, vs), vs))

    msg = raises(ValueError, none_at_all.trace, ds)
    check(msg == "SGD.apply_gradients: no gradients provided for any "
                 "variable (every gradient is None: the loss uses none of "
                 "them)", f"all None: {msg}")

    msg = raises(ValueError, sgd.apply_gradients, [])
    check(msg == "SGD.apply_gradients: only inside a @pasco.function step "
                 "being traced (schedule it with coordinator.schedule(fn, "
                 "args=...))", f"outside a trace: {msg}")
    msg = raises(TypeError, branch, ds)
    check(msg == "branch: a traced step runs on the workers: schedule it "
                 "(coordinator.schedule(branch, args=(...)))",
          f"called: {msg}")

    @pasco.function
    def twice(x):
        with pasco.GradientTape() as tape:
            y = x * 2.0
        tape.gradient(y, [])
        tape.gradient(y, [])

    msg = raises(RuntimeError, twice.trace, np.zeros(2, np.float32))
    check(msg is not None and "non-persistent" in msg, f"twice: {msg}")
    msg = raises(TypeError, branch.trace, object())
    check(msg is not None and msg.startswith("args[0]: ") and
          "got object" in msg, f"object argument: {msg}")


def keras_examples():
    """Each metric's arithmetic (numpy side) on the examples Keras's
    documentation gives, with their documented results."""
    def result(m, *args, **kw):
        d = np.asarray(m._delta(_Numpy, *map(np.asarray, args), **{
            k: np.asarray(v) for k, v in kw.items()}), np.float64)
        return d[0] if d.shape == (1,) else d[0] / d[1]

    M = pasco.metrics
    cases = [
        (M.Accuracy(), ([[1], [2], [3], [4]], [[0], [2], [3], [4]]), {},
         0.75),
        (M.Accuracy(), ([[1], [2], [3], [4]], [[0], [2], [3], [4]]),
         {"sample_weight": [1, 1, 0, 0]}, 0.5),
        (M.BinaryAccuracy(), ([[1], [1], [0], [0]],
                              [[0.98], [1], [0], [0.6]]), {}, 0.75),
        (M.BinaryAccuracy(), ([[1], [1], [0], [0]],
                              [[0.98], [1], [0], [0.6]]),
         {"sample_weight": [1, 0, 0, 1]}, 0.5),
        (M.SparseCategoricalAccuracy(), ([[2], [1]], [[0.1, 0.6, 0.3],
                                                      [0.05, 0.95, 0]]),
         {}, 0.5),
        (M.SparseCategoricalAccuracy(), ([[2], [1]], [[0.1, 0.6, 0.3],
                                                      [0.05, 0.95, 0]]),
         {"sample_weight": [0.7, 0.3]}, 0.3),
        (M.CategoricalAccuracy(), ([[0, 0, 1], [0, 1, 0]],
                                   [[0.1, 0.9, 0.8], [0.05, 0.95, 0]]),
         {}, 0.5),
        (M.CategoricalAccuracy(), ([[0, 0, 1], [0, 1, 0]],
                                   [[0.1, 0.9, 0.8], [0.05, 0.95, 0]]),
         {"sample_weight": [0.7, 0.3]}, 0.3),
        (M.Accuracy(), ([1, 2, 3, 4], [[0], [2], [3], [4]]), {}, 0.75),
        (M.Mean(), ([1, 3, 5, 7],), {}, 4.0),
        (M.Mean(), ([1, 3, 5, 7],), {"sample_weight": [1, 1, 0, 0]}, 2.0),
        (M.Sum(), ([1, 3, 5, 7],), {}, 16.0),
        (M.BinaryAccuracy(threshold=0.7), ([1, 1, 0], [[0.8], [0.6], [0.1]]),
         {}, 2 / 3),
    ]
    for m, args, kw, want in cases:
        got = result(m, *args, **kw)
        check(abs(got - want) < 1e-12,
              f"{type(m).__name__}{args} {kw}: {got}, Keras gives {want}")
    names = [M.Accuracy().state.name, M.Accuracy().state.name,
             M.Mean(name="loss").state.name]
    check(names[0] != names[1] and names[2].startswith("metrics/loss"),
          f"state names {names}")


def keras3_examples():
    """Issue 33's metric objects (numpy side, their state the batch's
    counts) on Keras 3's documented examples, their Keras names, and
    what compile refuses."""
    M = pasco.metrics
    two_labels = ([[1, 1], [0, 0], [1, 0], [0, 0]],
                  [[0.9, 0.1], [0.2, 0.8], [0.6, 0.3], [0.1, 0.7]])

    def result(m, *args, **kw):
        d = np.asarray(m._delta(_Numpy, *map(np.asarray, args), **{
            k: np.asarray(v) for k, v in kw.items()}), np.float64)
        m.state.numpy = lambda: d.reshape(m._state_shape)
        return m.result()

    cases = [
        (M.AUC(num_thresholds=3), ([0, 0, 1, 1], [0, 0.5, 0.3, 0.9]), {},
         0.75),
        (M.AUC(num_thresholds=3), ([0, 0, 1, 1], [0, 0.5, 0.3, 0.9]),
         {"sample_weight": [1, 0, 0, 1]}, 1.0),
        (M.Precision(), ([0, 1, 1, 1], [1, 0, 1, 1]), {}, 2 / 3),
        (M.Precision(), ([0, 1, 1, 1], [1, 0, 1, 1]),
         {"sample_weight": [0, 0, 1, 0]}, 1.0),
        (M.Precision(top_k=2), ([0, 0, 1, 1], [1, 1, 1, 1]), {}, 0.0),
        (M.Precision(top_k=4), ([0, 0, 1, 1], [1, 1, 1, 1]), {}, 0.5),
        (M.Recall(), ([0, 1, 1, 1], [1, 0, 1, 1]), {}, 2 / 3),
        (M.TopKCategoricalAccuracy(k=1), ([[0, 0, 1], [0, 1, 0]],
                                          [[0.1, 0.9, 0.8],
                                           [0.05, 0.95, 0]]), {}, 0.5),
        (M.SparseTopKCategoricalAccuracy(k=1), ([2, 1], [[0.1, 0.9, 0.8],
                                                         [0.05, 0.95, 0]]),
         {}, 0.5),
        (M.SparseTopKCategoricalAccuracy(k=1, from_sorted_ids=True),
         ([2, 1], [[1, 0, 3], [1, 2, 3]]), {}, 0.5),
        (M.MeanSquaredError(), ([[0, 1], [0, 0]], [[1, 1], [0, 0]]), {},
         0.25),
        (M.RootMeanSquaredError(), ([[0, 1], [0, 0]], [[1, 1], [0, 0]]),
         {}, 0.5),
        (M.MeanAbsoluteError(), ([[0, 1], [0, 0]], [[1, 1], [0, 0]]), {},
         0.25),
        (M.BinaryCrossentropy(), ([[0, 1], [0, 0]], [[0.6, 0.4],
                                                     [0.4, 0.6]]), {},
         0.81492424),
        # one column separates its labels (AUC 1), the other inverts (0)
        (M.AUC(multi_label=True), two_labels[:1] + two_labels[1:], {}, 0.5),
        (M.AUC(multi_label=True, num_labels=2, label_weights=[3, 1]),
         two_labels, {}, 0.75),
        (M.AUC(label_weights=[1, 0]), two_labels, {}, 1.0),
    ]
    for m, args, kw, want in cases:
        got = result(m, *args, **kw)
        check(abs(got - want) < 1e-6,
              f"{type(m).__name__}{args} {kw}: {got}, Keras gives {want}")
    names = [cases[0][0].name, cases[1][0].name, M.AUC().name,
             M.Recall(name="r").name, M.MeanSquaredError().name,
             M.MeanSquaredError().name]
    check(names == ["auc", "auc_1", "auc_5", "r", "mean_squared_error",
                    "mean_squared_error"], f"Keras's names: {names}")
    model = pasco.Sequential([pasco.layers.Dense(1)])
    for bad, says in ((M.Mean(), "it takes values, not (y_true, y_pred)"),
                      (M.Precision(thresholds=[0.2, 0.4]),
                       "give one threshold (2 given")):
        try:
            model.compile(loss="mse", metrics=[bad])
            check(False, f"compile took {bad}")
        except ValueError as e:
            check(says in str(e), f"compile of {bad}: {e}")
    model.compile(loss="mse", metrics=[M.AUC(curve="PR"), "mae"])
    entry = model.compile_config["metrics"][0]
    check(entry["class_name"] == "AUC" and entry["config"]["curve"] == "PR"
          and model.compile_config["metrics"][1] == "mae",
          f"compile's config: {model.compile_config['metrics']}")
    # a saved compile config compiles again to the same entries
    again = pasco.Sequential([pasco.layers.Dense(1)])
    again.compile(loss="mse", metrics=model.compile_config["metrics"])
    check(again.compile_config["metrics"] ==
          model.compile_config["metrics"], f"recompiled: "
          f"{again.compile_config['metrics']}")
    back = M.deserialize(M.serialize(M.Precision(thresholds=0.3, top_k=2)))
    check(isinstance(back, M.Precision) and back.thresholds == [0.3] and
          back.top_k == 2, f"deserialize: {back.get_config()}")


for t in (tutorial_step, retrace, errors, keras_examples, keras3_examples):
    t()
if failures:
    print(f"step_trace: FAILED: {len(failures)} failures")
    sys.exit(1)
print("step_trace: OK")
