"""A linear model on the click data, the zoo's baseline: a weight per
hashed string of any field (a dynamic Embedding of width 1, summed) and
one per dense feature, into a sigmoid. The click label is mostly
interactions of fields, which this model cannot express: DeepFM, DCN-v2
and DLRM beat its AUC. Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 examples/zoo/linear.py DIR
(DIR from examples/zoo/make_data.py; from a checkout, not installed:
PYTHONPATH=python build/pasco launch ...)"""
import pasco
import zoo


def make():
    ins = zoo.click_inputs()
    x = pasco.layers.Concatenate()([zoo.linear_part(ins), ins["dense"]])
    out = pasco.layers.Dense(1, activation="sigmoid", name="out")(x)
    return pasco.Model(inputs=[ins["fields"], ins["dense"]], outputs=out), \
        "binary_crossentropy"


def chief(cluster):
    return zoo.run(cluster, __doc__, make, zoo.click_data, zoo.auc_score)


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
