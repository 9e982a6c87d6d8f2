"""A two-tower retrieval model on the user/item pairs: a user tower
(dynamic Embeddings of the hashed user id, 16, and user group, 8 ->
Dense 32 ReLU -> 16) and an item tower (item id and category, the same
shape), trained with an in-batch softmax, a custom loss traced from
pasco.ops: each user's own item against the batch's other items
(logits u @ v^T, labels 0..batch-1). The model's output is [u, v]; the
chief scores recall@10 of each evaluation pair's item among every
evaluation item. Run on every task:
    pasco launch --ps 2 --workers 2 -- python3 examples/zoo/two_tower.py DIR
(DIR from examples/zoo/make_data.py; from a checkout, not installed:
PYTHONPATH=python build/pasco launch ...)"""
import pasco
import zoo
from pasco import ops

DIM = 16


def in_batch_softmax(y_true, y_pred):
    u, v = y_pred[:, :DIM], y_pred[:, DIM:]
    logits = ops.matmul(u, ops.transpose(v))
    return ops.sparse_categorical_crossentropy(
        ops.arange_like(logits, axis=0), logits, from_logits=True)


def tower(prefix, ids, seed):
    ins = [pasco.Input(shape=(1,), name=n, dtype="int64") for n in ids]
    emb = [pasco.layers.Embedding(w, dynamic=True, name=f"emb_{n}",
                                  embeddings_initializer=zoo.uniform(seed + k)
                                  )(i)
           for k, (n, i, w) in enumerate(zip(ids, ins, (16, 8)))]
    x = pasco.layers.Concatenate()(emb)
    x = pasco.layers.Dense(32, activation="relu", name=f"{prefix}_1")(x)
    return ins, pasco.layers.Dense(DIM, name=f"{prefix}_out")(x)


def make():
    uin, u = tower("user", ("user", "user_group"), 200)
    iin, v = tower("item", ("item", "item_category"), 300)
    out = pasco.layers.Concatenate()([u, v])
    return pasco.Model(inputs=uin + iin, outputs=out), in_batch_softmax


def chief(cluster):
    return zoo.run(cluster, __doc__, make, zoo.pair_data, zoo.recall_score,
                   epochs=8, batch=128)


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
