"""DeepFM on the click data: a dynamic Embedding of 8 per field (hashed
strings, rows made on the ps as training meets them), the factorization
machine's pairwise interactions of the field embeddings as a custom
layer (pasco.layers.Layer, traced into an op graph the workers run), a
linear part (a weight per string) and a deep part (67 -> 64 -> 32 -> 1),
combined by a sigmoid Dense. Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 examples/zoo/deepfm.py DIR
(DIR from examples/zoo/make_data.py; from a checkout, not installed:
PYTHONPATH=python build/pasco launch ...)"""
import pasco
import zoo
from pasco import ops


class FactorizationMachine(pasco.layers.Layer):
    """sum over pairs i < j of <v_i, v_j>, for field embeddings v_i
    [batch, k]: 0.5 * sum_k ((sum_i v_i)^2 - sum_i v_i^2). [batch, 1]."""

    def call(self, inputs, training=False):
        v = ops.concatenate([ops.expand_dims(x, 1) for x in inputs],
                            axis=1)
        s = ops.sum(v, axis=1)
        return 0.5 * ops.sum(
            ops.square(s) - ops.sum(ops.square(v), axis=1),
            axis=1, keepdims=True)


def make():
    ins = zoo.click_inputs()
    emb = zoo.field_embeddings(ins, 8)
    fm = FactorizationMachine(name="fm")(emb)
    x = pasco.layers.Concatenate()([pasco.layers.Concatenate()(emb),
                                    ins["dense"]])
    x = pasco.layers.Dense(64, activation="relu", name="deep_1")(x)
    x = pasco.layers.Dense(32, activation="relu", name="deep_2")(x)
    deep = pasco.layers.Dense(1, name="deep_out")(x)
    x = pasco.layers.Concatenate()([zoo.linear_part(ins), fm, deep])
    out = pasco.layers.Dense(1, activation="sigmoid", name="out")(x)
    return pasco.Model(inputs=list(ins.values()), outputs=out), \
        "binary_crossentropy"


def chief(cluster):
    return zoo.run(cluster, __doc__, make, zoo.click_data, zoo.auc_score)


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
