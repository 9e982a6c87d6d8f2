"""pasco.ops tracing, on the chief alone (no cluster): the shape and
dtype each op infers, numpy's broadcasting, the trace-time errors word
for word (a shape mismatch names the layer, the op and the shapes;
control flow on a value names ops.where), the op names against
docs/GRAPHS.md's table, the JSON a custom layer and a custom loss give,
and docs/python.md's custom-layer block and docs/GRAPHS.md's "From Python"
example run as written.

Usage: ops_trace.py SOURCE_ROOT [SANITIZE] (PYTHONPATH=python,
PASCO_LIBRARY set). Exit 77 (skipped) without numpy or in a sanitized
build (python3 cannot load its libpasco)."""

import io
import json
import os
import re
import sys
from contextlib import redirect_stdout

if len(sys.argv) > 2 and sys.argv[2] != "none":
    print(f"SKIP: this build uses -fsanitize={sys.argv[2]}: python3 cannot "
          f"load its libpasco")
    sys.exit(77)
try:
    import numpy  # noqa: F401 (pasco needs it)
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable}")
    sys.exit(77)

import pasco
from pasco import losses, ops

root = sys.argv[1]
failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def raises(exc, message, fn, *args):
    """fn(*args) raises exc with exactly message."""
    try:
        fn(*args)
    except exc as e:
        check(f"{exc.__name__} message", str(e), message)
        return
    except Exception as e:  # the wrong kind
        failures.append(f"expected {exc.__name__} '{message}', got "
                        f"{type(e).__name__}: {e}")
        return
    failures.append(f"expected {exc.__name__} '{message}', nothing raised")


def graph_ops(table_of):
    """The op names of docs/GRAPHS.md's table under heading table_of."""
    with open(os.path.join(root, "docs", "GRAPHS.md")) as f:
        text = f.read()
    part = text.split(f"## {table_of}\n", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in part.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([a-z_0-9]+)`",
                                    line.split("|")[1]))
    return names


# ---- each op: its shape, dtype and node --------------------------------

def each_op():
    g = ops.Graph("layer 'probe' (Probe)")
    with ops.trace(g):
        x = g.input((None, 8))
        m = g.input((8, 4))
        c = g.input((None, 3, 8))
        d = g.input((None, 8, 5))
        v = g.input((8,))
        ids = g.input((None,), "int64")
        f64 = g.input((None, 8), "float64")
        cases = [
            ("add", ops.add(x, 1.0), (None, 8)),
            ("subtract", ops.subtract(2, x), (None, 8)),
            ("multiply", x * v, (None, 8)),
            ("divide", x / 2, (None, 8)),
            ("maximum", ops.maximum(x, 0.0), (None, 8)),
            ("minimum", ops.minimum(x, v), (None, 8)),
            ("matmul", x @ m, (None, 4)),
            ("matmul", ops.matmul(c, d), (None, 3, 5)),
            ("dot", ops.dot(m[:, 0], m[:, 1]), ()),
            ("dot", ops.dot(x, v), (None,)),
            ("batch_dot", ops.batch_dot(x, x), (None, 1)),
            ("batch_dot", ops.batch_dot(c, d, axes=(2, 1)), (None, 3, 5)),
            ("reduce_sum", ops.sum(x, axis=1), (None,)),
            ("reduce_mean", ops.mean(c, axis=[1, 2], keepdims=True),
             (None, 1, 1)),
            ("reduce_max", ops.max(x), ()),
            ("reduce_sum", ops.reduce_sum(c, -1), (None, 3)),
            ("concat", ops.concatenate([x, x[:, :2]], axis=1), (None, 10)),
            ("reshape", ops.reshape(x, (-1, 2, 4)), (None, 2, 4)),
            ("transpose", ops.transpose(c, (0, 2, 1)), (None, 8, 3)),
            ("expand_dims", ops.expand_dims(x, 1), (None, 1, 8)),
            ("squeeze", ops.squeeze(ops.sum(x, 1, keepdims=True), 1),
             (None,)),
            ("slice", ops.slice(c, [0, 1, 2], [-1, 2, 3]), (None, 2, 3)),
            ("gather", ops.take(m, ids, axis=0), (None, 4)),
            ("gather", ops.gather(m, [[0, 1]], axis=1), (8, 1, 2)),
            ("one_hot", ops.one_hot(ids, 5), (None, 5)),
            ("exp", ops.exp(x), (None, 8)),
            ("log", ops.log(x), (None, 8)),
            ("sqrt", ops.sqrt(x), (None, 8)),
            ("square", ops.square(x), (None, 8)),
            ("abs", ops.abs(x), (None, 8)),
            ("negative", -x, (None, 8)),
            ("clip", ops.clip(x, 0, 1), (None, 8)),
            ("where", ops.where(x > 0, x, 0.0), (None, 8)),
            ("greater", x > v, (None, 8)),
            ("greater_equal", x >= 1, (None, 8)),
            ("less", x < 1, (None, 8)),
            ("less_equal", x <= 1, (None, 8)),
            ("equal", ops.equal(ids, ops.argmax(x, axis=1)), (None,)),
            ("not_equal", x != 0, (None, 8)),
            ("argmax", ops.argmax(c, axis=-1), (None, 3)),
            ("sigmoid", ops.sigmoid(x), (None, 8)),
            ("relu", ops.relu(x), (None, 8)),
            ("tanh", ops.tanh(x), (None, 8)),
            ("softmax", ops.softmax(x), (None, 8)),
            ("log_softmax", ops.log_softmax(x, axis=1), (None, 8)),
            ("l2_normalize", ops.normalize(x), (None, 8)),
            ("stop_gradient", ops.stop_gradient(x), (None, 8)),
            ("cast", ops.cast(x, "float64"), (None, 8)),
            ("dropout", ops.dropout(x, 0.5), (None, 8)),
            ("arange_like", ops.arange_like(x), (None,)),
            ("sparse_categorical_crossentropy",
             ops.sparse_categorical_crossentropy(ids, x), ()),
            ("categorical_crossentropy",
             ops.categorical_crossentropy(ops.one_hot(ids, 8), x,
                                          from_logits=True), ()),
            ("binary_crossentropy", ops.binary_crossentropy(ids, x[:, :1]),
             ()),
            ("mean_squared_error", ops.mean_squared_error(x, x * 2), ()),
            ("add", f64 + 1, (None, 8)),
        ]
        # per-example crossentropies: their logit and log_probs nodes
        losses.BinaryCrossentropy(reduction="none")(ids, x[:, :1])
        losses.CategoricalCrossentropy(reduction="none")(
            ops.one_hot(ids, 8), x)
    for op, t, shape in cases:
        check(f"ops.{op}'s shape", t.shape, shape)
        check(f"ops.{op}'s node", g.nodes[t.index]["op"], op)
        check(f"ops.{op}'s JSON shape", g.nodes[t.index]["shape"],
              [-1 if d is None else d for d in shape])
    dtypes = {"argmax": "int64", "arange_like": "int64", "cast": "float64"}
    for op, t, _ in cases[:-1]:
        check(f"ops.{op}'s dtype", t.dtype, dtypes.get(op, "float32"))
    check("float64 + 1's dtype", cases[-1][1].dtype, "float64")
    check("1 + float64's constant",
          g.nodes[g.nodes[cases[-1][1].index]["in"][1]],
          {"op": "constant", "value": 1.0, "shape": [], "dtype": "float64"})
    emitted = {n["op"] for n in g.nodes} - {"input", "weight", "constant"}
    table = graph_ops("Ops")
    check("the ops traced here against docs/GRAPHS.md's Ops table",
          sorted(emitted ^ table), [])
    check("ops.OP_NAMES against docs/GRAPHS.md's Ops table",
          sorted(set(ops.OP_NAMES) ^ table), [])
    check("the leaves of docs/GRAPHS.md", graph_ops("Leaves"),
          {"input", "weight", "constant"})


def broadcasting():
    g = ops.Graph("layer 'b' (B)")
    with ops.trace(g):
        a = g.input((None, 1, 4))
        for other, want in [((3, 1), (None, 3, 4)), ((4,), (None, 1, 4)),
                            ((), (None, 1, 4)), ((5, 1, 1), (5, 1, 4)),
                            ((None, 3, 1), (None, 3, 4))]:
            check(f"(None, 1, 4) + {other}", (a + g.input(other)).shape,
                  want)
        x = g.input((None, 3))
        check("x[1:, -1]", x[1:, -1].shape, (None,))
        check("x[..., 1:3]", x[..., 1:3].shape, (None, 2))
        check("x[:, :]", x[:, :] is x, True)
        check("x[:, 1:] attributes", g.nodes[x[:, 1:].index]["begin"],
              [0, 1])


# ---- errors, word for word ---------------------------------------------

class Mismatched(pasco.layers.Layer):
    def build(self, input_shape):
        self.k = self.add_weight(name="k", shape=(8, 4))

    def call(self, inputs):
        return ops.matmul(inputs, self.k)


class Branchy(pasco.layers.Layer):
    def call(self, inputs, training=False):
        if ops.sum(inputs) > 0:
            return inputs
        return -inputs


def errors():
    x = pasco.Input(shape=(16,), name="x")
    m = pasco.Model(inputs=x, outputs=Mismatched(name="bad")(x))
    raises(ValueError, "layer 'bad' (Mismatched): ops.matmul: shapes "
           "(None, 16) and (8, 4): inner dimensions 16 and 8 differ",
           m.get_config)
    m = pasco.Model(inputs=x, outputs=Branchy()(x))
    raises(TypeError, "layer 'branchy' (Branchy): control flow on a "
           "tensor's value (if, while, and/or, bool()) cannot be traced: "
           "the graph is built once, without values; use ops.where("
           "condition, x, y) instead", m.get_config)
    g = ops.Graph("layer 'e' (E)")
    with ops.trace(g):
        a, b = g.input((None, 8)), g.input((None, 3))
        raises(ValueError, "layer 'e' (E): ops.add: shapes (None, 8) and "
               "(None, 3) cannot be broadcast (axis -1: 8 against 3)",
               ops.add, a, b)
        raises(ValueError, "layer 'e' (E): ops.reshape: shape (None, 8) to "
               "(2, 4): the input's batch is unknown when tracing: write "
               "the batch dimension -1", ops.reshape, a, (2, 4))
        raises(ValueError, "layer 'e' (E): ops.slice: step 2: only slices "
               "with steps of 1 can be traced", lambda: a[:, ::2])
        raises(ValueError, "layer 'e' (E): ops.concatenate: shapes "
               "(None, 8) and (None, 3): axis 1 differs (8 against 3) and "
               "only axis 0 may", ops.concatenate, [a, b])
        raises(ValueError, "layer 'e' (E): ops.add: float32 and float64 "
               "operands ((None, 8) float32, (None, 8) float64): cast one "
               "with ops.cast", ops.add, a, g.input((None, 8), "float64"))
        raises(ValueError, "layer 'e' (E): ops.sparse_categorical_"
               "crossentropy: y_true of shape (None, 3) does not match "
               "y_pred of shape (None, 8): class ids [batch] expected",
               ops.sparse_categorical_crossentropy,
               g.input((None, 3), "int64"), a)
    raises(RuntimeError, "pasco.ops: no trace in progress: ops are "
           "symbolic and run only inside a traced call (a Layer's call, a "
           "loss given to compile, a @pasco.function)", ops.relu, 1.0)

    def bad_loss(y_true, y_pred):
        return ops.mean(ops.square(y_true[:, :2] - y_pred))

    seq = pasco.Sequential([pasco.Input(shape=(4,)), pasco.layers.Dense(3)])
    seq.compile(optimizer="sgd", loss=bad_loss)
    raises(ValueError, "loss 'bad_loss': ops.subtract: shapes (None, 2) "
           "and (None, 3) cannot be broadcast (axis -1: 2 against 3)",
           seq.get_config)
    raises(TypeError, "loss: got the class MeanSquaredError; give an "
           "instance (MeanSquaredError())", seq.compile, "sgd",
           pasco.losses.MeanSquaredError)
    layer = Mismatched(name="twice")
    layer.add_weight(name="w", shape=(2,))
    raises(ValueError, "twice: add_weight: the layer has a weight 'w' "
           "already", layer.add_weight, "w", (3,))
    raises(ValueError, "twice: add_weight('r'): regularizer: expected None, "
           "pasco.regularizers.L1, L2 or L1L2, or a dict {'class_name': "
           "'L2', 'config': {'l2': 0.01}}, got 0.01",
           lambda: layer.add_weight("r", (2,), regularizer=0.01))


# ---- the JSON of a custom layer and of a custom loss --------------------

class Scaled(pasco.layers.Layer):
    """x * s + b, dropout in training only: inference_graph differs."""

    def build(self, input_shape):
        self.s = self.add_weight(name="s", shape=(input_shape[-1],),
                                 initializer="ones",
                                 regularizer=pasco.regularizers.L2(0.5))
        self.b = self.add_weight(name="b", shape=(1,), initializer="zeros",
                                 trainable=False)

    def call(self, inputs, training=False):
        y = inputs * self.s
        if training:
            y = ops.dropout(y, 0.25)
        return ops.sum(y, axis=1, keepdims=True) + self.b


class Pair(pasco.layers.Layer):
    """Two inputs: build gets a list of shapes, call a list."""

    def build(self, input_shape):
        self.seen = input_shape

    def call(self, inputs):
        a, b = inputs
        return ops.concatenate([a, ops.cast(b, "float32")], axis=-1)


def custom_json():
    pasco.layers.reset_names()
    x = pasco.Input(shape=(3,), name="x")
    out = Scaled()(x)
    model = pasco.Model(inputs=x, outputs=out)
    layer = model.get_config()["config"]["layers"][0]
    weights = [{"name": "s", "shape": [3], "dtype": "float32",
                "initializer": {"class_name": "Ones", "config": {}},
                "regularizer": {"class_name": "L2", "config": {"l2": 0.5}},
                "trainable": True},
               {"name": "b", "shape": [1], "dtype": "float32",
                "initializer": {"class_name": "Zeros", "config": {}},
                "regularizer": None, "trainable": False}]

    def node(op, shape, ins=None, **attrs):
        n = {"op": op}
        if ins is not None:
            n["in"] = ins
        return {**n, **attrs, "shape": shape, "dtype": "float32"}

    head = [node("input", [-1, 3], index=0), node("weight", [3], index=0),
            node("multiply", [-1, 3], [0, 1])]
    tail = [node("weight", [1], index=1), node("add", [-1, 1], None)]
    train = head + [node("dropout", [-1, 3], [2], rate=0.25),
                    node("reduce_sum", [-1, 1], [3], axis=1, keepdims=True)]
    train += [tail[0], {**tail[1], "in": [4, 5]}]
    infer = head + [node("reduce_sum", [-1, 1], [2], axis=1,
                         keepdims=True), tail[0], {**tail[1], "in": [3, 4]}]
    inputs = [{"shape": [-1, 3], "dtype": "float32"}]
    want = {"class_name": "Custom",
            "config": {"name": "scaled", "class": "Scaled",
                       "input_widths": [3], "output_width": 1,
                       "graph": {"inputs": inputs, "weights": weights,
                                 "nodes": train, "outputs": [6]},
                       "inference_graph": {"inputs": inputs,
                                           "weights": weights,
                                           "nodes": infer, "outputs": [5]}},
            "inbound_nodes": ["x"]}
    check("Scaled's layer JSON", json.dumps(layer, sort_keys=True),
          json.dumps(want, sort_keys=True))
    # names, several inputs, an integer input, no inference_graph when
    # training changes nothing
    ids = pasco.Input(shape=(2,), name="ids", dtype="int64")
    pair = Pair()
    mixed = pasco.Model(inputs=[x, ids], outputs=pasco.layers.Dense(1)(
        pair([x, ids])))
    c = mixed.get_config()["config"]["layers"][0]["config"]
    check("Pair's build argument", pair.seen, [(None, 3), (None, 2)])
    check("Pair's inputs", c["graph"]["inputs"],
          [{"shape": [-1, 3], "dtype": "float32"},
           {"shape": [-1, 2], "dtype": "int64"}])
    check("Pair's widths", (c["input_widths"], c["output_width"]),
          ([3, 2], 5))
    check("Pair without inference_graph", "inference_graph" in c, False)

    class FMLayer(Pair):
        pass

    check("automatic names", [Scaled().name, Scaled().name, FMLayer().name],
          ["scaled_1", "scaled_2", "fm_layer"])


def custom_loss_json():
    def my_mse(y_true, y_pred):
        return ops.mean(ops.square(y_true - y_pred))

    seq = pasco.Sequential([pasco.Input(shape=(4,)), pasco.layers.Dense(1)])
    seq.compile(optimizer="sgd", loss=my_mse)
    data = pasco.data.csv("/nonexistent/*.csv", label="y",
                          label_type="float", columns=["a", "b", "c", "d"])
    loss = seq.get_config(data)["compile_config"]["loss"]
    f = "float32"
    check("my_mse's loss JSON", loss, {
        "class_name": "Graph", "config": {"name": "my_mse", "graph": {
            "inputs": [{"shape": [-1], "dtype": f},
                       {"shape": [-1, 1], "dtype": f}],
            "nodes": [
                {"op": "input", "index": 0, "shape": [-1], "dtype": f},
                {"op": "input", "index": 1, "shape": [-1, 1], "dtype": f},
                {"op": "expand_dims", "in": [0], "axis": 1,
                 "shape": [-1, 1], "dtype": f},
                {"op": "subtract", "in": [2, 1], "shape": [-1, 1],
                 "dtype": f},
                {"op": "square", "in": [3], "shape": [-1, 1], "dtype": f},
                {"op": "reduce_mean", "in": [4], "axis": None,
                 "keepdims": False, "shape": [], "dtype": f}],
            "outputs": [5]}}})

    class Scce(pasco.losses.Loss):
        def call(self, y_true, y_pred):
            return pasco.losses.sparse_categorical_crossentropy(
                y_true, y_pred, from_logits=True)

    seq.compile(optimizer="sgd", loss=Scce())
    g = seq.get_config(pasco.data.csv("/x/*.csv", label="y", columns=list("abcd")))[
        "compile_config"]["loss"]["config"]
    check("Scce's name", g["name"], "scce")
    check("Scce's y_true", g["graph"]["inputs"][0],
          {"shape": [-1], "dtype": "int64"})
    check("Scce's op", g["graph"]["nodes"][-1]["op"],
          "sparse_categorical_crossentropy")
    for given, want in [(pasco.losses.mean_squared_error,
                         ("mean_squared_error", False)),
                        (pasco.losses.BinaryCrossentropy(from_logits=True),
                         ("binary_crossentropy", True))]:
        seq.compile(optimizer="sgd", loss=given)
        c = seq.get_config()["compile_config"]
        check(f"compile({given!r})", (c["loss"], c["from_logits"]), want)


def readme_block():
    """docs/python.md's block after '<!-- ops_trace.py runs this block -->'
    (the README's until the manual moved to docs/), run as written: it
    prints the start of the model's JSON."""
    with open(os.path.join(root, "docs", "python.md")) as f:
        text = f.read()
    marker = "<!-- ops_trace.py runs this block -->\n```python\n"
    if marker not in text:
        failures.append("docs/python.md has no block after '<!-- ops_trace.py "
                        "runs this block -->'")
        return
    block = text.split(marker, 1)[1].split("\n```\n", 1)[0]
    out = io.StringIO()
    with redirect_stdout(out):
        exec(compile(block, "docs/python.md", "exec"), {"__name__": "readme"})
    config = json.loads(out.getvalue())
    kinds = [layer["class_name"] for layer in config["config"]["layers"]]
    check("docs/python.md's block's layers", kinds, ["Custom", "Dense"])
    check("docs/python.md's block's loss",
          config["compile_config"]["loss"]["class_name"], "Graph")


def graphs_md_example():
    """docs/GRAPHS.md's "From Python" example (the API the tracer gives)
    traces: a FactorizationMachine in a functional model, a loss
    function."""
    with open(os.path.join(root, "docs", "GRAPHS.md")) as f:
        text = f.read()
    part = text.split("## From Python", 1)[1]
    block = part.split("```python\n", 1)[1].split("\n```\n", 1)[0]
    scope = {"__name__": "graphs_md"}
    exec(compile(block, "docs/GRAPHS.md", "exec"), scope)
    config = scope["model"].get_config()
    fm = config["config"]["layers"][0]
    check("GRAPHS.md's FactorizationMachine",
          (fm["class_name"], fm["config"]["class"],
           fm["config"]["input_widths"], fm["config"]["output_width"],
           [w["shape"] for w in fm["config"]["graph"]["weights"]]),
          ("Custom", "FactorizationMachine", [16], 1, [[16, 8]]))
    check("GRAPHS.md's loss", config["compile_config"]["loss"]["config"][
        "name"], "focal")


for fn in (each_op, broadcasting, errors, custom_json, custom_loss_json,
           readme_block, graphs_md_example):
    try:
        fn()
    except Exception as e:  # one part's crash is reported, not fatal
        failures.append(f"{fn.__name__}: {type(e).__name__}: {e}")
for f in failures:
    print("FAIL:", f)
print("ops_trace:", "OK" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
