"""Custom layers and losses written with pasco.ops, traced on a Python
chief and trained by C workers (issue 32): one worker, fit's window 1
and unshuffled data, so each run's steps are one sequence:

1. a Dense written with ops (MyDense, its kernel with an L2
   regularizer) trains exactly as the built-in Dense from the same
   initial weights: the same loss each epoch and the same final weights
   (to float32 rounding);
2. a custom loss equal to mse gives mse's loss curve; a layer of two
   inputs, features and ids (an embedding's mean by ops.take), trains as
   Embedding, Concatenate and Dense do;
3. a model with a custom FactorizationMachine layer learns the pairwise
   interactions a linear model cannot: its loss ends lower;
4. a trace-time error (a shape mismatch in a layer's call) is raised by
   fit, naming the layer, the op and the shapes, before anything is
   scheduled (the global step does not move, the model is not built).

Run on every task:
    pasco launch --ps 2 --workers 1 -- python3 custom_layer.py DIR
(DIR: examples/make_table's data). Prints "custom_layer: OK"."""

import os

import numpy as np

import pasco
from pasco import ops

# float32 rounding over a run's steps, in the loss and the weights
RTOL = 2e-5


class MyDense(pasco.layers.Layer):
    """Dense written with ops: activation(inputs @ w + b)."""

    def __init__(self, units, activation=None, kernel_regularizer=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.units, self.activation = units, activation
        self.kernel_regularizer = kernel_regularizer

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1],
                                                  self.units),
                                 regularizer=self.kernel_regularizer)
        self.b = self.add_weight(name="b", shape=(self.units,),
                                 initializer="zeros")

    def call(self, inputs, training=False):
        y = ops.matmul(inputs, self.w) + self.b
        if self.activation == "relu":
            return ops.relu(y)
        if self.activation == "softmax":
            return ops.softmax(y)
        return y


class FactorizationMachine(pasco.layers.Layer):
    """Rendle's pairwise term: 0.5 * sum((x v)^2 - x^2 v^2)."""

    def __init__(self, k=4, **kwargs):
        super().__init__(**kwargs)
        self.k = k

    def build(self, input_shape):
        self.v = self.add_weight(name="v", shape=(input_shape[-1], self.k),
                                 initializer="random_normal")

    def call(self, inputs, training=False):
        xv = ops.matmul(inputs, self.v)
        return 0.5 * ops.sum(ops.square(xv) - ops.matmul(
            ops.square(inputs), ops.square(self.v)), axis=1, keepdims=True)


class DenseOfPair(pasco.layers.Layer):
    """Two inputs, features [batch, 3] and ids [batch, 2]: the ids' mean
    embedding joined to the features, then a dense layer, as Embedding,
    Concatenate and Dense compute it."""

    def build(self, input_shape):
        (_, width), _ = input_shape
        self.table = self.add_weight(name="table", shape=(10, 4),
                                     initializer="uniform")
        self.w = self.add_weight(name="w", shape=(width + 4, 1))
        self.b = self.add_weight(name="b", shape=(1,), initializer="zeros")

    def call(self, inputs):
        x, ids = inputs
        e = ops.mean(ops.take(self.table, ids, axis=0), axis=1)
        return ops.sigmoid(ops.concatenate([x, e], axis=1) @ self.w + self.b)


class Mismatched(pasco.layers.Layer):
    def build(self, input_shape):
        self.k = self.add_weight(name="k", shape=(3, 2))

    def call(self, inputs):
        return ops.matmul(inputs, self.k)


def my_mse(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred))


problems = []


def same_curve(what, a, b):
    la, lb = a.history["loss"], b.history["loss"]
    print(f"{what}: {la} against {lb}", flush=True)
    if len(la) != len(lb) or not np.allclose(la, lb, rtol=RTOL, atol=0):
        problems.append(f"{what}: loss curves differ: {la} against {lb}")


def same_weights(what, a, b):
    wa, wb = a.get_weights(), b.get_weights()
    if [x.shape for x in wa] != [x.shape for x in wb] or not all(
            np.allclose(x, y, rtol=RTOL, atol=1e-6) for x, y in zip(wa, wb)):
        worst = max(float(np.max(np.abs(x - y))) for x, y in zip(wa, wb))
        problems.append(f"{what}: final weights differ (by {worst})")


def fit(model, data, epochs=3, steps=40):
    # each run from global step 0: Adam's bias correction counts it
    pasco.get_strategy().global_step_variable().assign(0)
    return model.fit(data, epochs=epochs, steps_per_epoch=steps, verbose=0)


def write_csv(path, x, y):
    cols = [f"f{i}" for i in range(x.shape[1])]
    with open(path, "w") as f:
        f.write(",".join(cols + ["y"]) + "\n")
        for row, t in zip(x, y):
            f.write(",".join(f"{v:.6f}" for v in row) + f",{t:.6f}\n")


def dense_against_builtin(d):
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32)
    opt = pasco.optimizers.Adam(1e-3)
    builtin = pasco.Sequential([pasco.layers.Dense(16, activation="relu"),
                                pasco.layers.Dense(10,
                                                   kernel_regularizer=0.01)])
    mine = pasco.Sequential([MyDense(16, activation="relu"), MyDense(
        10, kernel_regularizer=pasco.regularizers.L2(0.01))])
    for m in (builtin, mine):
        # logits: the library refuses probabilities it cannot see are a
        # softmax's (a custom layer's output)
        m.compile(optimizer=opt, loss="sparse_categorical_crossentropy",
                  from_logits=True)
        m.build(train)
    names = [v.name for v in mine.variables]
    if names != ["my_dense/w", "my_dense/b", "my_dense_1/w",
                 "my_dense_1/b"]:
        problems.append(f"MyDense's variables are {names}")
    mine.set_weights(builtin.get_weights())
    same_curve("MyDense against Dense", fit(builtin, train),
               fit(mine, train))
    same_weights("MyDense against Dense", builtin, mine)


def loss_against_mse(d):
    rng = np.random.default_rng(7)
    x = rng.normal(size=(512, 4)).astype(np.float32)
    y = x @ np.array([0.5, -1.0, 2.0, 0.25]) + 0.3
    write_csv(f"{d}/reg.csv", x, y)
    train = pasco.data.csv(f"{d}/reg.csv", label="y", label_type="float",
                           batch_size=32)
    models = []
    for loss in ("mse", my_mse):
        m = pasco.Sequential([pasco.layers.Dense(1)])
        m.compile(optimizer=pasco.optimizers.SGD(0.05), loss=loss)
        m.build(train)
        models.append(m)
    models[1].set_weights(models[0].get_weights())
    same_curve("my_mse against mse", fit(models[0], train),
               fit(models[1], train))
    same_weights("my_mse against mse", *models)


def fm_learns_interactions(d):
    rng = np.random.default_rng(11)
    x = rng.choice([-1.0, 1.0], size=(2048, 6)).astype(np.float32)
    y = (x[:, 0] * x[:, 1] + x[:, 2] * x[:, 3] > 0).astype(np.float32)
    write_csv(f"{d}/fm.csv", x, y)
    train = pasco.data.csv(f"{d}/fm.csv", label="y", label_type="float",
                           batch_size=64)
    inp = pasco.Input(shape=(6,), name="input")
    out = pasco.layers.Dense(1, activation="sigmoid")(
        pasco.layers.Concatenate()([inp, FactorizationMachine(k=4)(inp)]))
    fm = pasco.Model(inputs=inp, outputs=out)
    linear = pasco.Sequential([pasco.layers.Dense(1, activation="sigmoid")])
    losses = []
    for m in (linear, fm):
        m.compile(optimizer=pasco.optimizers.Adam(0.05),
                  loss="binary_crossentropy")
        losses.append(fit(m, train, epochs=4, steps=50).history["loss"])
    print(f"linear: {losses[0]}; with FactorizationMachine: {losses[1]}",
          flush=True)
    if not losses[1][-1] < losses[0][-1] - 0.1:
        problems.append(f"the FM model's loss {losses[1][-1]} is not below "
                        f"the linear model's {losses[0][-1]} - 0.1")


def two_inputs_against_builtin(d):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1024, 3)).astype(np.float32)
    ids = rng.integers(0, 10, size=(1024, 2))
    y = ((x[:, 0] + (ids[:, 0] % 3) - 1) > 0).astype(np.float32)
    pasco.data.write_tfrecord(f"{d}/pair.tfrecord",
                              {"x": x, "ids": ids, "y": y})
    train = pasco.data.tfrecord(
        f"{d}/pair.tfrecord", label="y", label_type="float", batch_size=32,
        features={"x": pasco.data.Feature("float", 3),
                  "ids": pasco.data.Feature("int64", 2)})
    models = []
    for mine in (False, True):
        xi = pasco.Input(shape=(3,), name="x")
        ii = pasco.Input(shape=(2,), name="ids", dtype="int64")
        if mine:
            out = DenseOfPair()([xi, ii])
        else:
            e = pasco.layers.Embedding(10, 4, combiner="mean")(ii)
            out = pasco.layers.Dense(1, activation="sigmoid")(
                pasco.layers.Concatenate()([xi, e]))
        m = pasco.Model(inputs=[xi, ii], outputs=out)
        m.compile(optimizer=pasco.optimizers.SGD(0.1),
                  loss="binary_crossentropy")
        m.build(train)
        models.append(m)
    # the built-in's variables: embeddings, kernel, bias; DenseOfPair's
    # in add_weight's order: table, w, b
    models[1].set_weights(models[0].get_weights())
    same_curve("DenseOfPair against Embedding + Dense",
               fit(models[0], train), fit(models[1], train))
    same_weights("DenseOfPair against Embedding + Dense", *models)


def error_before_scheduling(d, strategy):
    train = pasco.data.csv(f"{d}/train.csv", label="label", batch_size=32)
    before = strategy.global_step()
    bad = pasco.Sequential([Mismatched(name="bad"), pasco.layers.Dense(2)])
    bad.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    want = ("layer 'bad' (Mismatched): ops.matmul: shapes (None, 64) and "
            "(3, 2): inner dimensions 64 and 3 differ")
    try:
        fit(bad, train)
        problems.append("fit of a model whose layer cannot be traced ran")
    except ValueError as e:
        print(f"trace-time error: {e}", flush=True)
        if str(e) != want:
            problems.append(f"fit raised '{e}', want '{want}'")
    if strategy.global_step() != before:
        problems.append(f"the global step moved from {before} to "
                        f"{strategy.global_step()}: steps were scheduled")
    try:
        bad.variables
        problems.append("the model that failed to trace was built")
    except RuntimeError:
        pass


def chief(cluster):
    if cluster is None or len(cluster.argv) != 2:
        print("usage: pasco launch ... -- python3 custom_layer.py DIR")
        return 2
    d = cluster.argv[1]
    if not os.path.exists(f"{d}/train.csv"):
        print(f"custom_layer: FAILED: no {d}/train.csv (make_table DIR)")
        return 1
    strategy = pasco.ParameterServerStrategy(cluster)
    with strategy.scope():
        error_before_scheduling(d, strategy)
        dense_against_builtin(d)
        loss_against_mse(d)
        two_inputs_against_builtin(d)
        fm_learns_interactions(d)
    for p in problems:
        print(f"custom_layer: FAILED: {p}", flush=True)
    if problems:
        return 1
    print("custom_layer: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
