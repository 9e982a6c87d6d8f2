"""What the zoo's models share: their inputs (examples/zoo/make_data.py's
files read by pasco.data, strings hashed into dynamic embeddings), the
command line, and the two ways a script runs:

    pasco launch --ps 2 --workers 2 -- python3 examples/zoo/deepfm.py DIR
        fit with Adam, then predict the evaluation file on the workers and
        score it on the chief (AUC, or recall@k for the two-tower model);
        --save FILE writes the initial weights, the predictions and the
        score (tests/python/zoo_torch.py compares them with PyTorch's);
    pasco launch --ps 2 --workers 1 -- python3 examples/zoo/deepfm.py DIR \\
            --check FILE
        the first --check-steps (20) steps of plain SGD, one at a time on
        the one worker, the files in order: FILE gets the initial weights
        and each step's loss.

Dynamic embeddings (a table per field, rows made on the ps at a key's
first lookup) are given an initializer with a seed of its own: a row's
initial values are a function of that seed, the table's name and the key
(ps/initializer_fill.c), so a check can know them without reading them.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Callable, Dict, List, Tuple

import numpy as np

import pasco

FIELDS = 8
DENSE = 3


def uniform(seed: int, scale: float = 0.05) -> dict:
    """Keras's default Embedding initializer, seeded."""
    return {"class_name": "RandomUniform",
            "config": {"minval": -scale, "maxval": scale, "seed": seed}}


def click_inputs() -> Dict[str, pasco.Input]:
    """f0..f7 (a hashed string each), fields (all 8, for a linear part)
    and dense (3 floats)."""
    ins = {f"f{i}": pasco.Input(shape=(1,), name=f"f{i}", dtype="int64")
           for i in range(FIELDS)}
    ins["fields"] = pasco.Input(shape=(FIELDS,), name="fields",
                                dtype="int64")
    ins["dense"] = pasco.Input(shape=(DENSE,), name="dense")
    return ins


def field_embeddings(ins: Dict[str, pasco.Input], dim: int,
                     seed: int = 100) -> List[pasco.layers.KerasTensor]:
    """One dynamic Embedding of width dim per field, [batch, dim] each."""
    return [pasco.layers.Embedding(
        dim, dynamic=True, embeddings_initializer=uniform(seed + i),
        name=f"emb_f{i}")(ins[f"f{i}"]) for i in range(FIELDS)]


def linear_part(ins: Dict[str, pasco.Input]) -> pasco.layers.KerasTensor:
    """A weight per string of any field, summed: [batch, 1]."""
    return pasco.layers.Embedding(
        1, dynamic=True, combiner="sum", embeddings_initializer=uniform(99),
        name="linear")(ins["fields"])


def click_data(d: str, split: str, batch_size: int,
               shuffle: int = 0) -> pasco.data.Dataset:
    feats = {f"f{i}": pasco.data.Feature("hashed", 1) for i in range(FIELDS)}
    feats["fields"] = pasco.data.Feature("hashed", FIELDS)
    feats["dense"] = pasco.data.Feature("float", DENSE)
    files = (f"{d}/clicks/train-*.tfrecord" if split == "train"
             else f"{d}/clicks/eval.tfrecord")
    return pasco.data.tfrecord(files, features=feats, label="label",
                               label_type="float", batch_size=batch_size,
                               shuffle=shuffle)


def pair_data(d: str, split: str, batch_size: int,
              shuffle: int = 0) -> pasco.data.Dataset:
    feats = {k: pasco.data.Feature("hashed", 1)
             for k in ("user", "user_group", "item", "item_category")}
    files = (f"{d}/pairs/train-*.tfrecord" if split == "train"
             else f"{d}/pairs/eval.tfrecord")
    return pasco.data.tfrecord(files, features=feats, label="label",
                               label_type="float", batch_size=batch_size,
                               shuffle=shuffle, drop_remainder=True)


def auc(y: np.ndarray, p: np.ndarray) -> float:
    """The area under the ROC curve (ties share their mean rank)."""
    y = np.asarray(y).reshape(-1)
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    order = np.argsort(p, kind="mergesort")
    ranks = np.empty(len(p))
    sp = p[order]
    i = 0
    while i < len(sp):
        j = i
        while j + 1 < len(sp) and sp[j + 1] == sp[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    pos = y > 0.5
    npos, nneg = pos.sum(), (~pos).sum()
    if npos == 0 or nneg == 0:
        return float("nan")
    return float((ranks[pos].sum() - npos * (npos + 1) / 2) / (npos * nneg))


def recall_at_k(u: np.ndarray, v: np.ndarray, items: np.ndarray,
                k: int = 10) -> float:
    """Each row's user vector u scored against every distinct item of
    the rows (its vector v): how often the row's own item is in the top
    k."""
    names, first = np.unique(items, return_index=True)
    cand = v[first]
    scores = u @ cand.T
    own = scores[np.arange(len(u)), np.searchsorted(names, items)]
    return float(((scores > own[:, None]).sum(1) < k).mean())


def parse(argv: List[str], doc: str, epochs: int, steps: int,
          batch: int, lr: float) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("dir", help="examples/zoo/make_data.py's directory")
    ap.add_argument("--epochs", type=int, default=epochs)
    ap.add_argument("--steps", type=int, default=steps,
                    help="steps per epoch")
    ap.add_argument("--batch", type=int, default=batch)
    ap.add_argument("--lr", type=float, default=lr, help="Adam's rate")
    ap.add_argument("--save", help="write the initial weights, "
                    "predictions and score to this .npz")
    ap.add_argument("--check", help="the first --check-steps SGD steps "
                    "on one worker, in file order; their losses and the "
                    "initial weights to this .npz")
    ap.add_argument("--check-steps", type=int, default=20)
    ap.add_argument("--check-lr", type=float, default=0.1)
    return ap.parse_args(argv)


def dynamic_tables(model: pasco.Model) -> Dict[str, dict]:
    """Each dynamic Embedding's variable name -> its width and initializer
    (the check computes the rows the ps makes from them)."""
    out = {}
    for layer in model.layers:
        if isinstance(layer, pasco.layers.Embedding) and \
                layer.dynamic is not None:
            out[f"{layer.name}/embeddings"] = {
                "dim": layer.output_dim,
                "initializer": layer.embeddings_initializer}
    return out


def initial_weights(model: pasco.Model) -> Dict[str, np.ndarray]:
    """Every variable's value but the dynamic tables' (they have no
    whole value), by name."""
    dyn = dynamic_tables(model)
    return {"w:" + v.name: v.numpy() for v in model.variables
            if v.name not in dyn}


def run(cluster: pasco.Cluster, doc: str,
        make: Callable[[], Tuple[pasco.Model, object]], data: Callable,
        score: Callable[[argparse.Namespace, np.ndarray], Tuple[str, float]],
        epochs: int = 4, steps: int = 500, batch: int = 256,
        lr: float = 2e-3, metrics: Tuple[str, ...] = ()) -> int:
    """The chief of a zoo script: make() gives (model, loss) under the
    strategy's scope; data(dir, split, batch, shuffle) its datasets;
    score(args, predictions) the evaluation's (name, value)."""
    a = parse(cluster.argv[1:], doc, epochs, steps, batch, lr)
    strategy = pasco.ParameterServerStrategy(
        cluster, window=1 if a.check else 4)
    with strategy.scope():
        model, loss = make()
    t0 = time.perf_counter()
    model.to_json()  # traces the custom layers
    t1 = time.perf_counter()
    model.compile(optimizer=pasco.optimizers.SGD(a.check_lr) if a.check
                  else pasco.optimizers.Adam(a.lr), loss=loss,
                  metrics=[] if a.check else list(metrics))
    t2 = time.perf_counter()
    print(f"traced in {(t2 - t0) * 1e3:.1f} ms (the model's config with "
          f"its custom layers {(t1 - t0) * 1e3:.1f} ms, compile with its "
          f"loss {(t2 - t1) * 1e3:.1f} ms)", flush=True)
    if a.check:
        return check(a, strategy, model, data)
    train = data(a.dir, "train", a.batch, 2000)
    model.build(train)
    init = initial_weights(model)
    meta = json.dumps({"dynamic": dynamic_tables(model)})
    t0 = time.perf_counter()
    model.fit(train, epochs=a.epochs, steps_per_epoch=a.steps, verbose=1)
    dt = time.perf_counter() - t0
    print(f"trained {a.epochs * a.steps} steps of {a.batch} in {dt:.2f} s: "
          f"{a.epochs * a.steps / dt:.1f} steps/s", flush=True)
    pred = model.predict(data(a.dir, "eval", 1000))
    name, value = score(a, pred)
    print(f"{name} = {value:.4f}", flush=True)
    if a.save:
        np.savez(a.save, pred=pred, score=value, meta=meta, **init)
    return 0


def check(a: argparse.Namespace, strategy: pasco.ParameterServerStrategy,
          model: pasco.Model, data: Callable) -> int:
    train = data(a.dir, "train", a.batch, 0)
    model.build(train)
    init = initial_weights(model)
    coordinator = pasco.ClusterCoordinator(strategy)
    it = iter(coordinator.create_per_worker_dataset(train))
    step = strategy.global_step_variable()
    rvs = [coordinator.schedule("pasco.model_train", args=(model, it, step))
           for _ in range(a.check_steps)]
    coordinator.join()
    losses = np.array([float(rv.fetch()[0]) for rv in rvs])
    print("check losses:", " ".join(f"{x:.6f}" for x in losses), flush=True)
    np.savez(a.check, losses=losses,
             meta=json.dumps({"dynamic": dynamic_tables(model)}), **init)
    return 0 if np.all(np.isfinite(losses)) else 1


def recall_score(a: argparse.Namespace, pred: np.ndarray,
                 k: int = 10) -> Tuple[str, float]:
    """The two-tower model's recall@k on DIR/pairs' evaluation rows (its
    prediction is [u, v]; the rows' items from DIR/pairs/data.npz)."""
    d = np.load(os.path.join(a.dir, "pairs", "data.npz"))
    items = d["item"][int(d["train_rows"]):][:len(pred)]
    half = pred.shape[1] // 2
    return f"recall@{k}", recall_at_k(pred[:, :half], pred[:, half:],
                                      items, k)


def auc_score(a: argparse.Namespace, pred: np.ndarray) -> Tuple[str, float]:
    """The AUC of the predictions on DIR/clicks' evaluation rows."""
    d = np.load(os.path.join(a.dir, "clicks", "data.npz"))
    y = d["label"][int(d["train_rows"]):]
    return "auc", auc(y, pred[:, 0])
