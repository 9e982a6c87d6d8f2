"""DLRM on the click data: a bottom MLP on the dense features (3 -> 16
ReLU -> 8, its last layer linear: a ReLU there left some runs with dead
units in the dot products and AUCs 0.03 apart), the dot interaction of
its output with the 8 field embeddings (a dynamic Embedding of 8 per
hashed string field, concatenated) as a custom layer (stacked into
[batch, 9, 8], a batched matmul with its own transpose, the 36 pairs
above the diagonal, concatenated after the bottom MLP's output), and a
top MLP (44 -> 32 -> 1, sigmoid). Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 examples/zoo/dlrm.py DIR
(DIR from examples/zoo/make_data.py; from a checkout, not installed:
PYTHONPATH=python build/pasco launch ...)"""
import numpy as np

import pasco
import zoo
from pasco import ops


class DotInteraction(pasco.layers.Layer):
    """[bottom [batch, k], the n field embeddings concatenated [batch,
    n k]] -> [bottom, <a, b> for each pair of the n + 1 vectors]:
    [batch, k + (n + 1) n / 2]."""

    def call(self, inputs, training=False):
        bottom, fields = inputs
        k = bottom.shape[1]
        n = 1 + fields.shape[1] // k
        z = ops.concatenate([ops.expand_dims(bottom, 1),
                             ops.reshape(fields, (-1, n - 1, k))], axis=1)
        g = ops.reshape(ops.matmul(z, ops.transpose(z, (0, 2, 1))),
                        (-1, n * n))
        i, j = np.triu_indices(n, 1)
        upper = ops.take(g, (i * n + j).astype(np.int64), axis=1)
        return ops.concatenate([bottom, upper], axis=1)


def make():
    ins = zoo.click_inputs()
    b = pasco.layers.Dense(16, activation="relu",
                           name="bottom_1")(ins["dense"])
    b = pasco.layers.Dense(8, name="bottom_2")(b)  # no ReLU: see above
    fields = pasco.layers.Concatenate()(zoo.field_embeddings(ins, 8))
    x = DotInteraction(name="interaction")([b, fields])
    x = pasco.layers.Dense(32, activation="relu", name="top_1")(x)
    out = pasco.layers.Dense(1, activation="sigmoid", name="out")(x)
    inputs = [ins[f"f{i}"] for i in range(zoo.FIELDS)] + [ins["dense"]]
    return pasco.Model(inputs=inputs, outputs=out), "binary_crossentropy"


def chief(cluster):
    return zoo.run(cluster, __doc__, make, zoo.click_data, zoo.auc_score)


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
