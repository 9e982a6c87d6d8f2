"""DCN-v2 on the click data: x0 the field embeddings (a dynamic
Embedding of 8 per hashed string field) and the dense features (67
wide); two cross layers x_{l+1} = x0 * (x_l W + b) + x_l, each a custom
layer (pasco.layers.Layer with its own weights, traced into an op graph
the workers run), stacked; beside them a deep part (67 -> 64 -> 32); a
sigmoid Dense over both. Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 examples/zoo/dcn_v2.py DIR
(DIR from examples/zoo/make_data.py; from a checkout, not installed:
PYTHONPATH=python build/pasco launch ...)"""
import pasco
import zoo
from pasco import ops


class Cross(pasco.layers.Layer):
    """DCN-v2's cross layer on [x0, x]: x0 * (x @ kernel + bias) + x."""

    def build(self, input_shape):
        width = input_shape[0][-1]
        self.kernel = self.add_weight(name="kernel", shape=(width, width),
                                      initializer="glorot_uniform")
        self.bias = self.add_weight(name="bias", shape=(width,),
                                    initializer="zeros")

    def call(self, inputs, training=False):
        x0, x = inputs
        return x0 * (ops.matmul(x, self.kernel) + self.bias) + x


def make():
    ins = zoo.click_inputs()
    fields = pasco.layers.Concatenate()(zoo.field_embeddings(ins, 8))
    x0 = pasco.layers.Concatenate()([fields, ins["dense"]])
    x = Cross(name="cross_1")([x0, x0])
    x = Cross(name="cross_2")([x0, x])
    deep = pasco.layers.Dense(64, activation="relu", name="deep_1")(x0)
    deep = pasco.layers.Dense(32, activation="relu", name="deep_2")(deep)
    x = pasco.layers.Concatenate()([x, deep])
    out = pasco.layers.Dense(1, activation="sigmoid", name="out")(x)
    inputs = [ins[f"f{i}"] for i in range(zoo.FIELDS)] + [ins["dense"]]
    return pasco.Model(inputs=inputs, outputs=out), "binary_crossentropy"


def chief(cluster):
    return zoo.run(cluster, __doc__, make, zoo.click_data, zoo.auc_score)


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
