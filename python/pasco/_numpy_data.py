"""fit, evaluate and predict on numpy arrays (Keras's x and y).

The arrays reach the workers as a dataset the library writes: one
TFRecord file (pasco.data.write_tfrecord: a feature per model input, the
targets as "label") in a temporary directory, read by every worker as its
shard of the records (record k of m shards goes to shard k % m), and
removed when the call returns. The workers must see that path: a launched
cluster on one host shares it; on several hosts set TMPDIR (Python's
tempfile) on the chief to a directory on storage every worker mounts at
the same path.

Sample weights (fit's and evaluate's sample_weight, fit's class_weight
turned into them as Keras's class_weight_to_sample_weights does) are
written beside the inputs as the feature SAMPLE_WEIGHT, which the spec's
"sample_weight" moves out of x into each element's third item: one weight
per example, or, for a sequence's targets [n, T] or [n, T, D], [n, T]
(one per step, Keras's per-timestep weights; docs/sequences.md).

Each example counts once: evaluate and predict give each shard to one
worker, exactly once; predict's rows come back in the arrays' order. fit's
epoch is ceil(examples / batch_size) steps, Keras's count, and each step
trains on the batch the chief names for it (Batches: epoch e's batches
written as one small file each, the examples in that epoch's order, a
permutation drawn from the seed and e when shuffle=True, else the arrays'
order; pasco_model_fit_options.step_dataset names step k's file), so each
example is read exactly once per epoch whatever the worker count, and a
step run again on another worker reads the same batch. steps_per_execution
> 1 packs that many named steps into one closure (the last of a pass
perhaps fewer), whole closures as Keras runs whole executions. An
explicit steps_per_epoch reads as Keras's EpochIterator reads
arrays: the epochs take consecutive batches of one pass (ceil(examples /
batch_size) batches in one order) until it runs out, which ends that
epoch early (Keras's "Your input ran out of data"), and the next epoch
starts a new pass (a new order with shuffle); so every example is read
exactly once per pass, as in Keras (Batches).
"""

from __future__ import annotations

import csv as _csv
import ctypes
import math
import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _lib
from . import data as _data
from .data import Dataset

Arrays = Any

SAMPLE_WEIGHT = "_pasco_sample_weight"  # the weights' feature in the file


def is_arrays(x: Any) -> bool:
    """Whether x is Keras's array input (an array, or a list or dict of
    them) rather than a pasco.data dataset or a factory's name."""
    if isinstance(x, np.ndarray):
        return True
    if isinstance(x, dict):
        return len(x) > 0 and all(isinstance(v, (np.ndarray, list))
                                  for v in x.values())
    if isinstance(x, (list, tuple)):
        return len(x) > 0 and all(isinstance(v, (np.ndarray, list))
                                  or np.isscalar(v) for v in x)
    return False


def _inputs(model: Any) -> Dict[str, bool]:
    """The model's inputs: name -> whether it takes ids (integers)."""
    if hasattr(model, "_inputs"):  # by a dict's keys when made with one
        return {n: i.ids for n, i in zip(model.input_names(),
                                         model._inputs)}
    saved = getattr(model, "_saved", None)  # a loaded model's config
    if saved is not None:
        return {i["name"]: bool(i.get("ids")) for i in
                saved["config"]["inputs"]}
    if getattr(model, "_input", None) is not None:
        return {model._input.name: model._input.ids}
    from .layers import Embedding
    layers = getattr(model, "layers", [])
    return {"input": bool(layers) and isinstance(layers[0], Embedding)}


def _input_names(model: Any) -> List[str]:
    return list(_inputs(model))


def _as_columns(model: Any, x: Arrays, what: str) -> Dict[str, np.ndarray]:
    """The model's inputs by name, each [n, width]."""
    names = _input_names(model)
    if isinstance(x, dict):
        if sorted(x) != sorted(names):
            raise ValueError(f"{what}: the model's inputs are {names}; got "
                             f"the keys {sorted(x)}")
        cols = {n: x[n] for n in names}
    elif isinstance(x, (list, tuple)) and len(names) > 1:
        if len(x) != len(names):
            raise ValueError(f"{what}: the model has {len(names)} inputs "
                             f"({', '.join(names)}); got {len(x)} arrays")
        cols = dict(zip(names, x))
    elif len(names) == 1:
        cols = {names[0]: x}
    else:
        raise ValueError(f"{what}: the model has {len(names)} inputs "
                         f"({', '.join(names)}): give a dict or a list of "
                         f"arrays")
    out = {}
    for n, a in cols.items():
        a = np.asarray(a)
        if a.ndim == 1:
            a = a.reshape(-1, 1)
        if a.ndim != 2 or a.shape[0] == 0:
            raise ValueError(f"{what}: input {n!r} must be [examples] or "
                             f"[examples, width] with examples > 0; got "
                             f"shape {a.shape}")
        if not (np.issubdtype(a.dtype, np.integer) or
                np.issubdtype(a.dtype, np.floating)):
            raise TypeError(f"{what}: input {n!r} has dtype {a.dtype}; "
                            f"expected numbers")
        out[n] = a
    sizes = {a.shape[0] for a in out.values()}
    if len(sizes) != 1:
        raise ValueError(f"{what}: the inputs have different numbers of "
                         f"examples ({sorted(sizes)})")
    return out


def _sequence_labels(model: Any, a: np.ndarray, what: str
                     ) -> Optional[Tuple[int, ...]]:
    """The label shape per example of a sequence output's targets a
    ((T,) class ids for sparse_categorical_crossentropy, else (T, D)), or
    None when the model's output is no sequence."""
    w = getattr(model, "_output_width", None)
    if not isinstance(w, (tuple, list)) or len(w) < 2:
        return None
    sparse = str(model.compiled_loss or "").startswith("sparse")
    want = tuple(int(d) for d in (w[:-1] if sparse else w))
    if tuple(a.shape[1:]) != want:
        raise ValueError(f"{what}: the model's output is a sequence "
                         f"{tuple(w)} per example; its targets must be "
                         f"[examples, {', '.join(map(str, want))}] "
                         f"({'class ids per step' if sparse else 'per step'}"
                         f"); got shape {a.shape}")
    return want


def _as_labels(model: Any, y: Any, n: int, what: str) -> np.ndarray:
    a = np.asarray(y)
    seq = _sequence_labels(model, a, what) if a.ndim >= 2 else None
    if a.ndim == 2 and a.shape[1] == 1 and seq is None:
        a = a.reshape(-1)
    if a.ndim != 1 and seq is None:
        raise ValueError(f"{what}: targets must be [examples] or "
                         f"[examples, 1] (class ids, 0/1 or values); got "
                         f"shape {a.shape} (one-hot targets: give their "
                         f"argmax with sparse_categorical_crossentropy)")
    if a.shape[0] != n:
        raise ValueError(f"{what}: {a.shape[0]} targets for {n} examples")
    if str(model.compiled_loss or "").startswith("sparse"):
        if not np.all(np.equal(np.mod(a, 1), 0)):
            raise ValueError(f"{what}: sparse_categorical_crossentropy "
                             f"needs integer class ids")
        return a.astype(np.int64)
    return a.astype(np.float32)


def class_weights(class_weight: Any) -> Dict[int, float]:
    """Keras's check of class_weight: a mapping of integer class ids to
    weights."""
    if not hasattr(class_weight, "items") or \
            not hasattr(class_weight, "get"):
        raise ValueError(f"`class_weight` must be a dict-like mapping of "
                         f"class indices to weights. Received: "
                         f"class_weight={class_weight} of type "
                         f"{type(class_weight)}.")
    out = {}
    for key, val in class_weight.items():
        try:
            k = int(key)
        except (TypeError, ValueError):
            raise ValueError(f"`class_weight` must be a dictionary with "
                             f"integer keys representing class indices. "
                             f"Received an invalid key: {key!r} of type "
                             f"{type(key)}.")
        if k < 0:
            raise ValueError(f"class_weight: class id {key!r} is negative")
        out[k] = float(val)
    return out


def class_weight_to_sample_weights(y: Any, class_weight: Any) -> np.ndarray:
    """Keras's data_adapter_utils.class_weight_to_sample_weights: each
    example's weight is its class's (the label rounded, or a one-hot
    row's argmax), 1.0 for a class not named."""
    cw = class_weights(class_weight)
    a = np.asarray(y)
    if a.ndim > 1:
        a = np.argmax(a, axis=-1) if a.shape[-1] != 1 else \
            np.squeeze(a, axis=-1)
    a = np.round(a).astype(np.int64)
    return np.array([cw.get(int(c), 1.0) for c in a], np.float32)


def _as_weights(sample_weight: Any, n: int, what: str,
                steps: Optional[int] = None) -> np.ndarray:
    """sample_weight as f32 [n], or [n, steps] (Keras's per-timestep
    weights) when the targets are a sequence's with that many steps."""
    a = np.asarray(sample_weight)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a.reshape(-1)
    per_step = steps is not None and a.ndim == 2 and a.shape == (n, steps)
    if not per_step and (a.ndim != 1 or a.shape[0] != n) or not (
            np.issubdtype(a.dtype, np.integer) or
            np.issubdtype(a.dtype, np.floating)):
        each = (f", or one per step ([{n}, {steps}])" if steps is not None
                else "")
        raise ValueError(f"{what}: sample_weight must be one number per "
                         f"example ([{n}] or [{n}, 1]){each}; got shape "
                         f"{a.shape}, dtype {a.dtype}")
    return a.astype(np.float32)


def with_weights(x: Any, sample_weight: Any, class_weight: Any) -> Any:
    """fit's dataset x given sample_weight or class_weight: a pasco.data
    dataset whose elements carry class_weight's weights of their labels
    (its spec's "class_weight", applied by the workers); a dataset yields
    its own sample weights (pasco.data's sample_weight=feature)."""
    if sample_weight is not None and class_weight is not None:
        raise ValueError("You cannot `class_weight` and `sample_weight` "
                         "at the same time.")
    if sample_weight is not None:
        raise ValueError("sample_weight: only with numpy arrays x (a "
                         "dataset yields its weights: pasco.data's "
                         "sample_weight=feature)")
    if class_weight is None:
        return x
    if not isinstance(x, Dataset):
        raise ValueError("class_weight: only with numpy arrays x or a "
                         "pasco.data dataset (a factory's dataset would "
                         "yield (x, y, sample_weight) itself)")
    if getattr(x, "_trace", None) is not None:
        raise ValueError("class_weight: not with a from_tensor_slices or "
                         "mapped dataset (the workers weigh the labels as "
                         "they read them, before the map)")
    if x.spec.get("label") is None:
        raise ValueError("class_weight: the dataset has no label")
    if x.spec.get("sample_weight") is not None:
        raise ValueError("You cannot `class_weight` and `sample_weight` "
                         "at the same time.")
    return Dataset({**x.spec, "class_weight": {
        str(k): v for k, v in class_weights(class_weight).items()}})


class Written:
    """Arrays written as a TFRecord file in a temporary directory (removed
    by close), with each example's weight when sample_weight is given."""

    def __init__(self, model: Any, x: Arrays, y: Any, what: str,
                 sample_weight: Any = None) -> None:
        self.cols = _as_columns(model, x, what)
        self.n = next(iter(self.cols.values())).shape[0]
        ids = _inputs(model)
        columns: Dict[str, np.ndarray] = {}
        for k, a in self.cols.items():  # as the model's input takes it
            if ids.get(k) and not np.all(np.equal(np.mod(a, 1), 0)):
                raise ValueError(f"{what}: input {k!r} takes ids; its "
                                 f"array holds numbers that are not "
                                 f"integers")
            columns[k] = a.astype(np.int64 if ids.get(k) else np.float32)
        self.feats = {k: _data.Feature("int64" if ids.get(k) else "float",
                                       a.shape[1])
                      for k, a in self.cols.items()}
        self.columns = columns  # as written: Batches rewrites them
        self.label_type = None
        self.label_shape: Optional[Tuple[int, ...]] = None
        if y is not None:
            labels = _as_labels(model, y, self.n, what)
            # a sequence's targets: label_shape (T,) or (T, D)
            self.label_shape = tuple(labels.shape[1:]) or None
            self.label_type = "int64" if labels.dtype == np.int64 \
                else "float"
            columns["label"] = labels
        self.weighted = sample_weight is not None
        if self.weighted:
            if SAMPLE_WEIGHT in columns:
                raise ValueError(f"{what}: an input is named "
                                 f"{SAMPLE_WEIGHT!r}, the weights' name")
            w = _as_weights(sample_weight, self.n, what,
                            self.label_shape[0] if self.label_shape else None)
            columns[SAMPLE_WEIGHT] = w  # [n, T]: one per step
            self.feats[SAMPLE_WEIGHT] = _data.Feature(
                "float", w.shape[1] if w.ndim == 2 else 1)
        self.dir = tempfile.mkdtemp(prefix="pasco-numpy-")
        self.path = os.path.join(self.dir, "data.tfrecord")
        try:
            _data.write_tfrecord(self.path, columns)
        except BaseException:
            self.close()
            raise

    def dataset(self, batch_size: int, shuffle: bool = False,
                seed: int = 0, repeat: Optional[int] = 1) -> _data.Dataset:
        ds = _data.tfrecord(
            self.path, self.feats,
            label="label" if self.label_type else None,
            label_type=self.label_type or "int64", batch_size=batch_size,
            shuffle=self.n if shuffle else 0, seed=seed, repeat=repeat,
            shard="records", label_shape=self.label_shape)
        if self.weighted:
            ds.spec["sample_weight"] = SAMPLE_WEIGHT
        return ds

    def spec_of(self, files: str, batch_size: int) -> _data.Dataset:
        ds = _data.tfrecord(
            files, self.feats, label="label" if self.label_type else None,
            label_type=self.label_type or "int64", batch_size=batch_size,
            repeat=1, shard="none", label_shape=self.label_shape)
        if self.weighted:
            ds.spec["sample_weight"] = SAMPLE_WEIGHT
        return ds

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Written":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class OutOfData(Exception):
    """An epoch's data ran out before this step (Keras's "input ran out of
    data"): the step dataset callback returns PASCO_EOUTOFRANGE."""


class Batches:
    """Exact epochs, Keras's order of batches: a pass is ceil(n / b)
    batches, batch k the examples perm_p[k * b:(k + 1) * b] (perm_p a
    permutation drawn from the seed and p with shuffle, else the arrays'
    order), and each epoch's steps take the next batches of the current
    pass, as Keras's EpochIterator takes them from one iterator over the
    epochs when steps_per_epoch is given: when the pass runs out the
    epoch ends there (Keras warns "Your input ran out of data") and the
    next epoch starts a new pass. With the default steps_per_epoch (one
    pass) each epoch is one pass. An epoch runs ceil(steps_per_epoch /
    steps_per_execution) closures of steps_per_execution steps each, as
    Keras runs whole executions (range(0, steps_per_epoch,
    steps_per_execution) in its EpochIterator), the last of a pass
    perhaps fewer. The plan is replayed from fit's initial_epoch (``first``,
    where Keras starts a pass), so a fit resumed at a later epoch
    (BackupAndRestore) reads the batches the uninterrupted run read there,
    mid-pass too. A pass is named by the epoch it starts in (so pass e is
    epoch e's with the default). Its
    files are written when the chief names its first step, each the
    framed records of its batch copied from the arrays' file (TFRecord
    records are self-contained: no example is encoded again); the
    previous pass's, whose steps have all returned by then (a pass starts
    with an epoch), are removed. Without shuffle one set serves every
    pass."""

    def __init__(self, data: Written, batch_size: int, shuffle: bool,
                 seed: int, steps_per_epoch: Optional[int] = None,
                 steps_per_execution: int = 1, first: int = 0) -> None:
        self.data, self.b, self.shuffle, self.seed = \
            data, batch_size, shuffle, seed
        self.first = first  # fit's initial_epoch: a pass starts there
        self.steps = max(1, math.ceil(data.n / batch_size))
        self.per_epoch = steps_per_epoch or self.steps
        self.spx = max(1, steps_per_execution)
        self.written: Optional[int] = None  # the pass on disk
        self.plans: Dict[int, List[Tuple[int, int]]] = {}
        self.state: Optional[Tuple[int, int, int]] = None
        with open(data.path, "rb") as f:
            self.bytes = f.read()
        starts, at = [], 0
        while at < len(self.bytes):  # length (8), its CRC (4), data, CRC
            starts.append(at)
            at += 16 + int.from_bytes(self.bytes[at:at + 8], "little")
        if len(starts) != data.n or at != len(self.bytes):
            raise RuntimeError(f"{data.path}: {len(starts)} records framed "
                               f"for {data.n} examples")
        self.starts = starts + [at]

    def plan(self, epoch: int) -> List[Tuple[int, int]]:
        """Epoch's steps as (pass, batch), as Keras's EpochIterator
        (keras/src/trainers/epoch_iterator.py) gives an epoch its batches
        when steps_per_epoch is given: its executions start at range(0,
        steps_per_epoch, steps_per_execution) and each takes
        steps_per_execution batches, fewer where the pass runs out, and
        none once it has. Epochs are planned from fit's initial_epoch
        (where a pass starts), so a resumed fit's first epoch gets the
        pass and position the uninterrupted run had there."""
        if epoch in self.plans:
            return self.plans[epoch]
        if self.state is None or epoch < self.state[0]:
            e0 = self.first if epoch >= self.first else epoch
            self.state = (e0, e0, 0)  # (next epoch, pass, position)
        e, p, pos = self.state
        while e <= epoch:
            steps: List[Tuple[int, int]] = []
            for _ in range(0, self.per_epoch, self.spx):  # executions
                if pos >= self.steps:  # "Your input ran out of data"
                    break
                take = min(self.spx, self.steps - pos)
                steps += [(p, pos + j) for j in range(take)]
                pos += take
            if pos >= self.steps:  # the pass is over: a new one next
                p, pos = e + 1, 0
            self.plans = {k: v for k, v in self.plans.items() if k >= e - 1}
            self.plans[e] = steps
            e += 1
        self.state = (e, p, pos)
        return self.plans[epoch]

    def _write(self, p: int) -> None:
        d = os.path.join(self.data.dir, f"pass-{p}")
        order = np.arange(self.data.n)
        if self.shuffle:
            order = np.random.default_rng([self.seed, p]).permutation(
                self.data.n)
        os.makedirs(d, exist_ok=True)
        s, raw = self.starts, self.bytes
        for k in range(self.steps):
            rows = order[k * self.b:(k + 1) * self.b]
            with open(os.path.join(d, f"batch-{k}.tfrecord"), "wb") as f:
                f.write(b"".join(raw[s[i]:s[i + 1]] for i in rows))

    def name(self, epoch: int, step: int) -> str:
        """The dataset name of epoch's step (its batch, one element);
        OutOfData past the epoch's last step."""
        plan = self.plan(epoch)
        if step >= len(plan):
            raise OutOfData(f"epoch {epoch}: step {step} is past its "
                            f"{len(plan)} batches")
        p, k = plan[step]
        p = p if self.shuffle else 0  # one order: written once
        if p != self.written:
            if self.written is not None:
                shutil.rmtree(os.path.join(self.data.dir,
                                           f"pass-{self.written}"),
                              ignore_errors=True)
            self._write(p)
            self.written = p
        path = os.path.join(self.data.dir, f"pass-{p}",
                            f"batch-{k}.tfrecord")
        return self.data.spec_of(path, self.b).name(1)


def step_dataset_cb(name_of: Any, errors: List[BaseException]) -> Any:
    """pasco_model_fit_options.step_dataset over name_of(epoch, step)
    (the numpy fit's exact epochs, _numpy_data.Batches); None without."""
    if name_of is None:
        return None

    def cb(user: Any, epoch: int, step: int, buf: Any, n: int) -> int:
        try:
            name = name_of(epoch, step).encode()
            if len(name) >= n:
                raise ValueError(f"fit: step {step}'s dataset name is "
                                 f"{len(name)} bytes; at most {n - 1}")
            ctypes.memmove(buf, name + b"\0", len(name) + 1)
            return 0
        except OutOfData:
            return 9  # PASCO_EOUTOFRANGE: the epoch ends (Keras's)
        except BaseException as e:  # raised after fit returns
            errors.append(e)
            return 1  # PASCO_EINVAL
    return _lib.STEP_DATASET(cb)


def _batch(name: str, v: Optional[int]) -> int:
    if v is None:
        return 32
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{name}: expected an integer >= 1, got {v!r}")
    return v


def _split(x: Arrays, start: int, end: int) -> Arrays:
    if isinstance(x, dict):
        return {k: np.asarray(v)[start:end] for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not isinstance(x, np.ndarray) \
            and len(x) > 0 and not np.isscalar(x[0]):
        return [np.asarray(v)[start:end] for v in x]
    return np.asarray(x)[start:end]


def _count(x: Arrays) -> int:
    if isinstance(x, dict):
        return len(np.asarray(next(iter(x.values()))))
    if isinstance(x, (list, tuple)) and len(x) > 0 and \
            not np.isscalar(x[0]) and np.asarray(x[0]).ndim >= 1 and \
            not isinstance(x, np.ndarray):
        return len(np.asarray(x[0]))
    return len(np.asarray(x))


def validation_split_of(x: Arrays, y: Any, validation_split: float
                        ) -> Tuple[Arrays, Any, Arrays, Any]:
    """Keras's train_validation_split: the last fraction, before any
    shuffling."""
    if isinstance(validation_split, bool) or not isinstance(
            validation_split, (int, float)) or \
            not 0 <= validation_split < 1:
        raise ValueError(f"validation_split: expected a number in [0, 1), "
                         f"got {validation_split!r}")
    n = _count(x)
    split_at = int(math.floor(n * (1.0 - validation_split)))
    if split_at == 0 or split_at == n:
        raise ValueError(
            f"Training data contains {n} samples, which is not sufficient "
            f"to split it into a validation and training set as specified "
            f"by `validation_split={validation_split}`. Either provide more "
            f"data, or a different value for the `validation_split` "
            f"argument.")
    return (_split(x, 0, split_at), _split(y, 0, split_at),
            _split(x, split_at, n), _split(y, split_at, n))


def fit(model: Any, x: Arrays, y: Any, batch_size: Optional[int],
        validation_split: float, validation_data: Any, shuffle: bool,
        validation_batch_size: Optional[int], weights: Tuple[Any, Any],
        **fit_args: Any) -> Any:
    """model.fit on arrays: the training arrays (and the validation ones)
    written as datasets for the workers, fit on them, the files removed.
    weights: (sample_weight, class_weight), at most one given."""
    if y is None:
        raise ValueError("y: required with array inputs x (the targets)")
    b = _batch("batch_size", batch_size)
    vb = _batch("validation_batch_size", validation_batch_size or b)
    sw, cw = weights
    if sw is not None and cw is not None:
        raise ValueError("You cannot `class_weight` and `sample_weight` "
                         "at the same time.")
    vx = vy = vsw = None
    if validation_data is not None:
        if not isinstance(validation_data, (tuple, list)) or \
                len(validation_data) not in (2, 3):
            raise ValueError("validation_data: expected (x_val, y_val) or "
                             "(x_val, y_val, val_sample_weight) arrays, or "
                             "a pasco.data dataset")
        vx, vy = validation_data[0], validation_data[1]
        if len(validation_data) == 3:
            vsw = validation_data[2]
    elif validation_split:
        if sw is not None:  # Keras splits the weights with the arrays
            sw = np.asarray(sw)
            _, sw, _, vsw = validation_split_of(sw, sw, validation_split)
        x, y, vx, vy = validation_split_of(x, y, validation_split)
    if cw is not None:  # the training examples only, as Keras's adapter
        if _sequence_labels(model, np.asarray(y), "y") is not None and \
                np.asarray(y).ndim >= 2:
            raise ValueError("class_weight: a sequence's targets have one "
                             "label per step and class_weight weighs one "
                             "per example; give sample_weight instead")
        sw = class_weight_to_sample_weights(y, cw)
    s = model._strategy_checked()
    with Written(model, x, y, "x", sw) as train:
        exact = Batches(train, b, bool(shuffle), model.seed,
                        fit_args.pop("steps_per_epoch", None),
                        fit_args.get("steps_per_execution", 1),
                        fit_args.get("initial_epoch", 0))
        steps = exact.per_epoch
        ds = train.dataset(b, shuffle=bool(shuffle), seed=model.seed,
                           repeat=-1)  # not read: each step's is named
        model._step_dataset = exact.name
        try:
            if vx is None:
                return model.fit(ds, steps_per_epoch=steps, **fit_args)
            with Written(model, vx, vy, "validation_data", vsw) as val:
                fit_args.setdefault("validation_shards", 0)
                if not fit_args["validation_shards"]:
                    fit_args["validation_shards"] = min(s.num_workers,
                                                        val.n)
                return model.fit(ds, steps_per_epoch=steps,
                                 validation_data=val.dataset(vb),
                                 **fit_args)
        finally:
            model._step_dataset = None


def evaluate(model: Any, x: Arrays, y: Any, batch_size: Optional[int],
             return_dict: bool, shards: int, sample_weight: Any = None
             ) -> Any:
    if y is None:
        raise ValueError("y: required with array inputs x (the targets)")
    s = model._strategy_checked()
    with Written(model, x, y, "x", sample_weight) as w:
        return model.evaluate(w.dataset(_batch("batch_size", batch_size)),
                              return_dict=return_dict,
                              shards=shards or min(s.num_workers, w.n))


def predict(model: Any, x: Arrays, batch_size: Optional[int],
            shards: int) -> np.ndarray:
    s = model._strategy_checked()
    with Written(model, x, None, "x") as w:
        return model.predict(w.dataset(_batch("batch_size", batch_size)),
                             shards=shards or min(s.num_workers, w.n))


def count_records(path: str, spec: dict) -> int:
    """The examples in one file of a pasco.data spec: a CSV's rows under
    its header, a TFRecord's records (walking the length framing)."""
    if spec["format"] == "csv":
        with open(path, newline="") as f:
            return max(sum(1 for row in _csv.reader(f) if row) - 1, 0)
    import gzip
    n = 0
    with (gzip.open(path, "rb") if spec.get("gzip") else
          open(path, "rb")) as f:
        while True:
            head = f.read(12)
            if len(head) < 12:
                return n
            f.seek(int.from_bytes(head[:8], "little") + 4, os.SEEK_CUR)
            n += 1


def in_file_order(x: Any, parts: List[np.ndarray]) -> Optional[np.ndarray]:
    """predict's rows, one array per shard, put back in the files' order
    (Keras returns predictions in the dataset's order): for a pasco.data
    dataset read in order (no shuffle), each shard's rows go back where
    they came from: every m-th record when sharded by records, whole files
    when sharded by files. None when the order cannot be known (a named
    factory, a shuffle, one shard) or the counts do not add up (say,
    drop_remainder): the rows then stay shard after shard."""
    m = len(parts)
    if not isinstance(x, Dataset) or m < 2 or x.spec.get("shuffle"):
        return None
    files = x.files()
    shard = x.spec.get("shard", "auto")
    total = sum(len(p) for p in parts)
    if shard == "none":
        return None
    if shard == "records" or (shard == "auto" and len(files) < m):
        if any(len(parts[k]) != (total - k + m - 1) // m
               for k in range(m)):
            return None
        out = np.empty((total,) + parts[0].shape[1:], np.float32)
        for k in range(m):
            out[k::m] = parts[k]
        return out
    counts = [count_records(f, x.spec) for f in files]
    if any(sum(counts[j] for j in range(k, len(files), m)) != len(parts[k])
           for k in range(m)):
        return None
    taken = [0] * m
    rows = []
    for j, n in enumerate(counts):
        k = j % m
        rows.append(parts[k][taken[k]:taken[k] + n])
        taken[k] += n
    return np.concatenate(rows)
