"""Models: Keras's Sequential and functional Model, compiled and trained
by the library on the cluster of a ParameterServerStrategy.

A model is data: its JSON config (``to_json()``) is what
``pasco_model_from_json`` reads; the workers rebuild it from the same
bytes and run the library's own train, evaluate and predict steps.
"""

from __future__ import annotations

import csv as _csv
import ctypes
import glob
import json
import os
import shutil
import tempfile
from ctypes import POINTER, c_int64, c_void_p
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _lib, callbacks as _callbacks, losses as _losses
from . import optimizers as _optimizers
from ._lib import lib
from .cluster import ParameterServerStrategy, get_strategy
from .data import Dataset
from .errors import InvalidArgumentError, check, error_for
from .layers import Embedding, Input, KerasTensor, Layer, Normalization

__all__ = ["Model", "Sequential", "Variable"]

_LOSSES = _losses.NAMES  # model/losses.c's names
# model/compile.c's metric names (its metric_names and "accuracy"/"acc")
_METRICS = ("accuracy", "acc", "binary_accuracy",
            "sparse_categorical_accuracy", "categorical_accuracy", "auc",
            "precision", "recall", "mae", "mean_absolute_error", "mse",
            "mean_squared_error")
_DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.int64,
           5: np.uint8}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}

DatasetLike = Union[Dataset, str]


def _model_error(rv: int, what: str) -> Exception:
    msg = lib.pasco_model_last_error().decode()
    return error_for(rv, f"{what}: {msg}" if msg else what)


def _tensor_to_numpy(t: Any) -> np.ndarray:
    shape = tuple(t.shape[i] for i in range(t.rank))
    raw = ctypes.string_at(t.data, t.nbytes) if t.nbytes else b""
    return np.frombuffer(raw, dtype=_DTYPES[t.dtype]).reshape(shape).copy()


def _numpy_to_tensor(a: np.ndarray) -> Any:
    a = np.asarray(a, order="C")  # a scalar stays rank 0
    code = _CODES.get(a.dtype)
    if code is None:
        raise TypeError(f"dtype {a.dtype} is not one of float32, float64, "
                        f"int32, int64, uint8")
    out = POINTER(_lib.Tensor)()
    shape = (c_int64 * max(a.ndim, 1))(*a.shape)
    check(lib.pasco_tensor_from(ctypes.byref(out), code, a.ndim, shape,
                                a.ctypes.data_as(c_void_p), a.nbytes),
          "making a tensor")
    return out


def _count_records(path: str, spec: dict) -> int:
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


def _in_file_order(x: Any, parts: List[np.ndarray]) -> Optional[np.ndarray]:
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
    counts = [_count_records(f, x.spec) for f in files]
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


def _dataset_name(arg: str, d: Any, default_repeat: int) -> bytes:
    if isinstance(d, Dataset):
        return d.name(default_repeat).encode()
    if isinstance(d, str) and d:
        return d.encode()  # a registered factory's name
    raise TypeError(f"{arg}: expected a pasco.data dataset (pasco.data.csv, "
                    f"pasco.data.tfrecord) or a dataset factory's name, got "
                    f"{type(d).__name__}")


def _adapt(native: c_void_p, k: int, layer: Normalization) -> None:
    """Adapts layer k of the native model from the layer's adapt data: an
    array, or a dataset built here whole (pasco_dataset_from_name)."""
    if layer.adapt_data is not None:
        t = _numpy_to_tensor(layer.adapt_data)
        try:
            rv = lib.pasco_model_adapt_tensor(native, k, t)
        finally:
            lib.pasco_tensor_release(t)
    elif layer.adapt_dataset is not None:
        ds = c_void_p()
        rv = lib.pasco_dataset_from_name(ctypes.byref(ds),
                                         layer.adapt_dataset.encode(), 0, 1)
        if rv != 0:
            raise error_for(rv, f"{layer.name}: adapt: " +
                            lib.pasco_dataset_last_error().decode())
        try:
            rv = lib.pasco_model_adapt(native, k, ds)
        finally:
            lib.pasco_dataset_free(ds)
    else:
        return
    if rv != 0:
        raise _model_error(rv, f"{layer.name}: adapt")


class Variable:
    """A variable on the ps: one of a model's (``model.variables``, e.g.
    "dense/kernel") or the global step (``strategy.global_step_variable()``):
    ``name``, ``shape``, ``numpy()`` reads it, ``assign(value)`` writes it;
    an argument of ``ClusterCoordinator.schedule``."""

    def __init__(self, model: "Model", index: int) -> None:
        self._model, self._index = model, index
        self._own = c_void_p()
        self._dtype = np.float32
        self.name = lib.pasco_model_variable_name(model._native,
                                                  index).decode()
        sp = POINTER(c_int64)()
        rank = lib.pasco_model_variable_shape(model._native, index,
                                              ctypes.byref(sp))
        self.shape = tuple(sp[i] for i in range(rank))

    @classmethod
    def _of_handle(cls, strategy: ParameterServerStrategy, handle: c_void_p,
                   name: str, shape: tuple, dtype: str) -> "Variable":
        v = cls.__new__(cls)
        v._model, v._index, v._strategy = None, -1, strategy
        v._own, v._dtype = handle, np.dtype(dtype).type
        v.name, v.shape = name, shape
        return v

    def _handle(self) -> int:
        if self._model is None:
            if not self._own:
                raise RuntimeError(f"{self.name}: its strategy is closed")
            return self._own.value
        h = lib.pasco_model_variable(self._model._native_checked(),
                                     self._index)
        if not h:
            raise RuntimeError(f"{self.name}: the variable is not created "
                               f"yet (fit the model, or call build())")
        return h

    def _release(self) -> None:
        if self._own:
            lib.pasco_variable_free(self._own)
            self._own = c_void_p()

    def __del__(self) -> None:
        s = getattr(self, "_strategy", None)
        if getattr(self, "_own", None) and s is not None and s._strategy:
            self._release()

    def numpy(self) -> np.ndarray:
        h = self._handle()
        t = POINTER(_lib.Tensor)()
        rv = lib.pasco_variable_read(h, ctypes.byref(t))
        if rv != 0:
            raise error_for(rv, f"reading {self.name}: "
                            + lib.pasco_variable_error(h).decode())
        try:
            return _tensor_to_numpy(t.contents)
        finally:
            lib.pasco_tensor_release(t)

    def assign(self, value: Any) -> None:
        h = self._handle()
        a = np.asarray(value, dtype=self._dtype)
        if a.shape != self.shape:
            raise ValueError(f"value: {self.name} has shape {self.shape}, "
                             f"got {a.shape}")
        t = _numpy_to_tensor(a)
        try:
            rv = lib.pasco_variable_assign(h, t)
            if rv != 0:
                raise error_for(rv, f"assigning {self.name}: "
                                + lib.pasco_variable_error(h).decode())
        finally:
            lib.pasco_tensor_release(t)

    def __repr__(self) -> str:
        return f"<pasco.Variable {self.name} shape={self.shape}>"


class Model:
    """Keras's functional Model: ``Model(inputs=..., outputs=...)`` over
    pasco.Input and layer calls. Made under ``strategy.scope()`` (or with
    ``strategy=``), its variables live on that strategy's ps tasks.
    ``seed`` seeds every initializer without a seed of its own."""

    def __init__(self, inputs: Union[Input, Sequence[Input], None] = None,
                 outputs: Optional[KerasTensor] = None,
                 name: Optional[str] = None, seed: int = 42,
                 strategy: Optional[ParameterServerStrategy] = None) -> None:
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
        self.name = name
        self.seed = seed
        self.optimizer: Optional[_optimizers.Optimizer] = None
        self.compiled_loss: Optional[Union[str, dict]] = None
        self._loss_fn: Optional[Any] = None  # your own loss, traced
        self._output_width = 0
        self.compile_config: Optional[dict] = None
        self.stop_training = False
        self._native = c_void_p()
        self._built_json: Optional[str] = None
        self._strategy = strategy
        if self._strategy is None:
            try:
                self._strategy = get_strategy()
            except RuntimeError:
                self._strategy = None  # looked up again at fit
        if type(self) is Model:
            self._init_functional(inputs, outputs)

    def _init_functional(self, inputs: Any, outputs: Any) -> None:
        ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not ins or not all(isinstance(i, Input) for i in ins):
            raise TypeError("inputs: expected a pasco.Input or a list of them")
        if not isinstance(outputs, KerasTensor) or isinstance(outputs, Input):
            raise TypeError("outputs: expected a layer's output (a layer "
                            "called on the inputs)")
        self._inputs = ins
        order: List[KerasTensor] = []
        seen: Dict[int, KerasTensor] = {}

        def visit(t: KerasTensor) -> None:
            if isinstance(t, Input):
                if t not in ins:
                    raise ValueError(f"inputs: {t.name} is used but not "
                                     f"among the model's inputs")
                return
            if id(t.source) in seen:
                if seen[id(t.source)] is not t:
                    raise ValueError(f"{t.source.name}: a layer may be "
                                     f"called once only")
                return
            for u in t.inbound:
                visit(u)
            seen[id(t.source)] = t
            order.append(t)

        visit(outputs)
        self._nodes = order
        self.layers: List[Layer] = [t.source for t in order]  # type: ignore

    # ---- config ----------------------------------------------------------

    def _model_config(self, data: Optional[Dataset]) -> dict:
        ins = [i.get_config() for i in self._inputs]
        # each tensor's (width, dtype): a custom layer is traced on them
        spec: Dict[int, tuple] = {id(i): (i.width, i.dtype)
                                  for i in self._inputs}
        layers = []
        for t in self._nodes:
            j, width = t.source._json_layer(
                [spec[id(u)][0] for u in t.inbound],
                [spec[id(u)][1] for u in t.inbound])
            j["inbound_nodes"] = [u.name for u in t.inbound]
            layers.append(j)
            spec[id(t)] = (width, "float32")
        self._output_width = spec[id(self._nodes[-1])][0]
        return {"class_name": "Functional",
                "config": {"name": self.name or "model", "seed": self.seed,
                           "inputs": ins, "layers": layers}}

    def get_config(self, data: Optional[Dataset] = None) -> dict:
        """The model's config, as pasco_model_to_json writes it (Keras's
        get_config spirit), with its compile_config once compiled."""
        c = self._model_config(data)
        if self.compile_config is not None:
            c["compile_config"] = self.compile_config
            if self._loss_fn is not None:
                c["compile_config"] = {**self.compile_config,
                                       "loss": self._traced_loss(data)}
        return c

    def _traced_loss(self, data: Optional[Dataset]) -> dict:
        """The compile config's loss graph: the loss function traced on
        y_true of the dataset's targets (int64 class ids or float32
        values [batch], as its label_type says; float32 [batch, width]
        without a dataset) and y_pred the model's output."""
        width = self._output_width
        y_true: tuple = ("float32", (None, width))
        if data is not None and data.spec.get("label") is not None:
            y_true = ("float32" if data.spec.get("label_type") == "float"
                      else "int64", (None,))
        return _losses.trace(self._loss_fn, y_true,
                             ("float32", (None, width)))

    def to_json(self, data: Optional[Dataset] = None) -> str:
        return json.dumps(self.get_config(data))

    # ---- compile and build ------------------------------------------------

    def compile(self, optimizer: Union[str, _optimizers.Optimizer] = "rmsprop",
                loss: Optional[_losses.LossLike] = None,
                metrics: Optional[Sequence[str]] = None,
                from_logits: bool = False) -> None:
        """Keras's compile: optimizer (a name or pasco.optimizers.*), loss
        (a name of pasco.losses.NAMES: "mse", "mae", "huber",
        "binary_crossentropy", "sparse_categorical_crossentropy", ...; a
        pasco.losses function or object, pasco.losses.Huber(2.0), or its
        config dict {"class_name": "Huber", "config": {"delta": 2.0}},
        or your own: a function of pasco.ops (y_true, y_pred) or a
        pasco.losses.Loss subclass, traced when the model is built: see
        pasco.losses), metrics ("accuracy", "auc", "precision",
        "recall", "mae", "mse", ...: at most 8)."""
        opt = _optimizers.get(optimizer)
        if loss is None:
            raise ValueError("loss: required (e.g. "
                             "'sparse_categorical_crossentropy')")
        loss_fn = None
        if isinstance(loss, type):
            raise TypeError(f"loss: got the class {loss.__name__}; give an "
                            f"instance ({loss.__name__}())")
        if not isinstance(loss, str) and callable(loss):
            known = _losses.builtin(loss)
            if known is None:
                loss_fn, loss = loss, _losses.loss_name(loss)
            else:
                loss, from_logits = known[0], from_logits or known[1]
        elif isinstance(loss, dict) and loss.get("class_name") in \
                _losses.__all__:  # a Keras config: the object it makes
            loss, from_logits = _losses.builtin(_losses.get(loss))
        elif not isinstance(loss, str) or loss not in _LOSSES:
            raise ValueError(f"loss: expected one of {', '.join(_LOSSES)}, "
                             f"a pasco.losses.Loss or a function of "
                             f"pasco.ops (y_true, y_pred), got {loss!r}")
        metrics = list(metrics or [])
        if len(metrics) > 8 or not all(isinstance(m, str) and m
                                       for m in metrics):
            raise ValueError(f"metrics: expected at most 8 metric names, got "
                             f"{metrics!r}")
        for m in metrics:
            if m not in _METRICS:
                raise ValueError(f"metrics: expected names from "
                                 f"{', '.join(_METRICS)}, got {m!r}")
        self.optimizer = opt
        self.compiled_loss = loss
        self._loss_fn = loss_fn
        self.compile_config = {"loss": loss, "from_logits": bool(from_logits),
                               "optimizer": opt.get_config(),
                               "metrics": metrics}
        self._built_json = None  # rebuilt (same variables) at next use

    def _strategy_checked(self) -> ParameterServerStrategy:
        if self._strategy is None:
            self._strategy = get_strategy()
        self._strategy._check_open()
        return self._strategy

    def build(self, data: Optional[Dataset] = None) -> None:
        """Makes the model in the library from its config and creates its
        variables on the ps (existing ones of the same names are reused).
        fit, evaluate and predict call it; data (a pasco.data dataset)
        gives a Sequential model its input width when no layer says it."""
        s = self._strategy_checked()
        text = self.to_json(data)
        if self._native and text == self._built_json:
            return
        native = c_void_p()
        rv = lib.pasco_model_from_json(text.encode(), ctypes.byref(native))
        if rv != 0:
            raise _model_error(rv, "model config")
        for k, layer in enumerate(self.layers):
            if isinstance(layer, Normalization):
                try:
                    _adapt(native, k, layer)
                except BaseException:
                    lib.pasco_model_free(native)
                    raise
        rv = lib.pasco_model_create_variables(native, s._strategy)
        if rv != 0:
            lib.pasco_model_free(native)
            raise _model_error(rv, "creating the variables")
        self._release()
        self._native, self._built_json = native, text
        if self not in s._models:
            s._models.append(self)

    def _native_checked(self) -> c_void_p:
        if not self._native:
            raise RuntimeError("the model is not built (fit it, or call "
                               "build()) or its strategy is closed")
        return self._native

    def _release(self) -> None:
        if self._native:
            lib.pasco_model_free(self._native)
            self._native = c_void_p()
            self._built_json = None

    def __del__(self) -> None:
        try:
            if self._strategy is not None and self._strategy._strategy:
                self._release()
        except Exception:
            pass

    def _require_compiled(self, what: str) -> None:
        if self.compile_config is None:
            raise RuntimeError(f"{what}: compile the model first "
                               f"(model.compile(optimizer, loss, metrics))")

    # ---- fit, evaluate, predict ----------------------------------------

    def fit(self, x: DatasetLike, epochs: int = 1,
            steps_per_epoch: Optional[int] = None,
            validation_data: Optional[DatasetLike] = None,
            callbacks: Optional[Sequence[_callbacks.Callback]] = None,
            initial_epoch: int = 0, steps_per_execution: int = 1,
            verbose: int = 1, validation_shards: int = 0,
            window: int = 0) -> _callbacks.History:
        """Keras's fit under ParameterServerStrategy: ``steps_per_epoch``
        (required) steps an epoch on the workers' shares of ``x`` (a
        pasco.data dataset, repeated forever unless it says otherwise),
        validation on ``validation_data`` after each epoch (every example
        once), ``callbacks`` at each epoch. ``window``: training steps in
        flight per worker; 0 means 1, TensorFlow's (a larger window is
        faster but its gradients are staler: the README's "fit's window"
        table). Returns a History."""
        self._require_compiled("fit")
        name = _dataset_name("x", x, -1)
        if steps_per_epoch is None:
            raise ValueError("steps_per_epoch: required under "
                             "ParameterServerStrategy (the data are "
                             "infinite per-worker streams)")
        for arg, v, lo in (("epochs", epochs, 1),
                           ("steps_per_epoch", steps_per_epoch, 1),
                           ("initial_epoch", initial_epoch, 0),
                           ("steps_per_execution", steps_per_execution, 1),
                           ("validation_shards", validation_shards, 0),
                           ("window", window, 0)):
            if not isinstance(v, int) or isinstance(v, bool) or v < lo:
                raise ValueError(f"{arg}: expected an integer >= {lo}, got "
                                 f"{v!r}")
        if initial_epoch >= epochs:
            raise ValueError(f"initial_epoch: {initial_epoch} is not below "
                             f"epochs ({epochs})")
        vname = (None if validation_data is None else
                 _dataset_name("validation_data", validation_data, 1))
        cbs = list(callbacks or [])
        for c in cbs:
            if not isinstance(c, _callbacks.Callback):
                raise TypeError(f"callbacks: expected pasco.callbacks."
                                f"Callback objects, got {type(c).__name__}")
        self.build(x if isinstance(x, Dataset) else None)
        s = self._strategy_checked()
        errors: List[BaseException] = []
        clist = c_void_p()
        check(lib.pasco_callbacks_create(ctypes.byref(clist)), "callbacks")
        watch = _callbacks._InterruptWatch()
        try:
            check(lib.pasco_callbacks_add(clist, watch.make()), "callbacks")
            for c in cbs:
                c.set_model(self)
                check(lib.pasco_callbacks_add(clist, c._make(s, errors)),
                      f"adding {type(c).__name__}")
            o = _lib.FitOptions(dataset=name, epochs=epochs,
                                steps_per_epoch=steps_per_epoch,
                                initial_epoch=initial_epoch,
                                steps_per_execution=steps_per_execution,
                                validation_dataset=vname,
                                validation_shards=validation_shards,
                                callbacks=clist, verbose=bool(verbose),
                                window=window)
            h = _lib.History()
            self.stop_training = False
            with watch:
                rv = lib.pasco_model_fit(s._coord, self._native,
                                         ctypes.byref(o), ctypes.byref(h))
            try:
                history = _callbacks.History()
                history.params = {"epochs": epochs,
                                  "steps": steps_per_epoch}
                for i in range(h.count):
                    history.epoch.append(h.initial_epoch + i)
                    for k, v in h.epochs[i].to_dict().items():
                        history.history.setdefault(k, []).append(v)
                history.stopped_early = bool(h.stopped_early)
            finally:
                lib.pasco_history_fini(ctypes.byref(h))
            if watch.interrupted:
                raise KeyboardInterrupt
            if errors:
                raise errors[0]
            if rv != 0:
                raise _model_error(rv, "fit")
            return history
        finally:
            lib.pasco_callbacks_free(clist)

    def evaluate(self, x: DatasetLike, return_dict: bool = False,
                 shards: int = 0) -> Union[float, List[float],
                                           Dict[str, float]]:
        """Keras's evaluate, exactly once over ``x``'s shards (``shards``:
        0 means one per worker): the loss, or [loss, metrics...] when
        compiled with metrics, or the dict of them with return_dict."""
        self._require_compiled("evaluate")
        name = _dataset_name("x", x, 1)
        if not isinstance(shards, int) or shards < 0:
            raise ValueError(f"shards: expected an integer >= 0, got "
                             f"{shards!r}")
        self.build(x if isinstance(x, Dataset) else None)
        s = self._strategy_checked()
        logs = _lib.Logs()
        o = _lib.EvaluateOptions(name, shards)
        rv = lib.pasco_model_evaluate(s._coord, self._native, ctypes.byref(o),
                                      ctypes.byref(logs))
        if rv != 0:
            raise _model_error(rv, "evaluate")
        d = logs.to_dict()
        if return_dict:
            return d
        vals = list(d.values())
        return vals[0] if len(vals) == 1 else vals

    def predict(self, x: DatasetLike, dir: Optional[str] = None,
                format: str = "csv", shards: int = 0
                ) -> Union[np.ndarray, int]:
        """Keras's predict, each example once: the workers write one file
        per shard into ``dir`` (default, for "csv" only: a temporary
        directory, removed once read, which only a one-host cluster
        shares). format "csv": returns the outputs, an array [examples,
        width], in the files' order for a pasco.data dataset read in order
        (no shuffle; each shard's rows put back where they came from), else
        shard after shard (a named factory's, a shuffled one's); "tfrecord":
        returns the number of examples (the files in ``dir`` are the
        result: ``dir`` is required)."""
        self._require_compiled("predict")
        name = _dataset_name("x", x, 1)
        if format not in ("csv", "tfrecord"):
            raise ValueError(f"format: expected 'csv' or 'tfrecord', got "
                             f"{format!r}")
        if dir is None and format != "csv":
            raise ValueError("dir: required for format 'tfrecord' (the "
                             "files written there are the result)")
        if dir is None:
            tmp = tempfile.mkdtemp(prefix="pasco-predict-")
            try:
                return self.predict(x, dir=tmp, format=format,
                                    shards=shards)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        if not isinstance(dir, str) or not os.path.isdir(dir):
            raise ValueError(f"dir: {dir!r} is not a directory")
        self.build(x if isinstance(x, Dataset) else None)
        s = self._strategy_checked()
        rows = c_int64()
        o = _lib.PredictOptions(name, shards, dir.encode(),
                                0 if format == "csv" else 1)
        rv = lib.pasco_model_predict(s._coord, self._native, ctypes.byref(o),
                                     ctypes.byref(rows))
        if rv != 0:
            raise _model_error(rv, "predict")
        if format != "csv":
            return int(rows.value)
        parts = []
        for path in sorted(glob.glob(os.path.join(dir, "predictions-*.csv"))):
            with open(path, newline="") as f:
                r = _csv.reader(f)
                next(r, None)
                parts.append(np.asarray([[float(v) for v in row]
                                         for row in r if row],
                                        dtype=np.float32))
        width = max((p.shape[1] for p in parts if p.size), default=0)
        parts = [p if p.size else np.zeros((0, width), np.float32)
                 for p in parts]
        ordered = _in_file_order(x, parts)
        if ordered is not None:
            return ordered
        return np.concatenate(parts) if parts else \
            np.zeros((0, width), np.float32)

    # ---- variables -------------------------------------------------------

    @property
    def variables(self) -> List[Variable]:
        """The model's variables, in layer order (build first)."""
        n = self._native_checked()
        return [Variable(self, k)
                for k in range(lib.pasco_model_num_variables(n))]

    # ---- in a @pasco.function step (python/pasco/function.py) ----------

    def __call__(self, inputs: Any, training: bool = False) -> Any:
        """The forward pass on symbolic inputs (of next(iterator)) in a
        traced step: a "model" node the workers run."""
        from .function import _call_model
        return _call_model(self, inputs, training)

    @property
    def trainable_variables(self) -> List[Variable]:
        """Keras's: the variables a gradient may change (all but a
        Normalization's)."""
        from .function import _trainable_variables
        return _trainable_variables(self)

    @property
    def losses(self) -> List[Any]:
        """Keras's model.losses in a traced step: each kernel
        regularizer's penalty (l2 * sum(kernel ** 2)) as a tensor."""
        from .function import _model_losses
        return _model_losses(self)

    def get_weights(self) -> List[np.ndarray]:
        """Every variable's value, read from the ps."""
        return [v.numpy() for v in self.variables]

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Assigns each variable (in get_weights' order and shapes)."""
        vs = self.variables
        if len(weights) != len(vs):
            raise ValueError(f"weights: the model has {len(vs)} variables, "
                             f"got {len(weights)} arrays")
        for i, (v, w) in enumerate(zip(vs, weights)):
            a = np.asarray(w)
            if a.shape != v.shape:
                raise ValueError(f"weights[{i}]: {v.name} has shape "
                                 f"{v.shape}, got {a.shape}")
        for v, w in zip(vs, weights):
            v.assign(w)

    def summary(self) -> str:
        """One line per variable; printed and returned."""
        lines = [f"Model {self.name or type(self).__name__.lower()}"]
        for v in self.variables:
            lines.append(f"  {v.name:32} {v.shape}")
        text = "\n".join(lines)
        print(text)
        return text


class Sequential(Model):
    """Keras's Sequential: ``Sequential([layers...])``, each layer on the
    previous one's output. The input width comes from a first
    ``pasco.Input(shape=(w,))``, a first layer's ``input_shape=(w,)``, or
    else the dataset fit, evaluate or predict is given (a csv's feature
    columns, a tfrecord's one feature); a first Embedding reads ids."""

    def __init__(self, layers: Optional[Sequence[Any]] = None,
                 name: Optional[str] = None, seed: int = 42,
                 strategy: Optional[ParameterServerStrategy] = None) -> None:
        super().__init__(name=name, seed=seed, strategy=strategy)
        self._input: Optional[Input] = None
        self._inferred: Optional[tuple] = None
        self.layers = []
        for layer in layers or []:
            self.add(layer)

    def add(self, layer: Any) -> None:
        """Appends a layer (or, first, a pasco.Input)."""
        if isinstance(layer, Input):
            if self.layers or self._input is not None:
                raise ValueError("layers: a pasco.Input may only come first")
            self._input = layer
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"layers: expected pasco.layers objects, got "
                            f"{type(layer).__name__}")
        self.layers.append(layer)
        self._built_json = None

    def _model_config(self, data: Optional[Dataset]) -> dict:
        if not self.layers:
            raise ValueError("layers: a Sequential model needs at least one "
                             "layer")
        first = self.layers[0]
        # ids: an Embedding's, or a custom layer's after an integer Input
        ids = isinstance(first, Embedding) or (
            first._is_custom() and self._input is not None and
            self._input.ids)
        name, width = "input", None
        if self._input is not None:
            name, width = self._input.name, self._input.width
        elif first.input_shape:
            width = first.input_shape[0]
        # a csv's header is needed when the width is not given; when it is,
        # the header is read if the chief can (to say a mismatch now, not
        # at a worker's first step), and not required
        if data is not None:
            try:
                spec = data.input_spec()
            except (OSError, ValueError):
                if width is None or data.spec["format"] != "csv":
                    raise
                spec = None
            if spec is not None and len(spec) != 1:
                raise ValueError(f"x: a Sequential model has one input; the "
                                 f"dataset yields {', '.join(spec)}")
            if spec is not None:
                (dname, d), = spec.items()
                if width is not None and not ids and d["width"] != width:
                    n = d["width"]
                    raise InvalidArgumentError(
                        f"x: the model's input is {width} wide; the "
                        f"dataset's rows have {n} feature"
                        f"{'' if n == 1 else 's'} (pasco.Input(shape="
                        f"({n},)) or input_shape=({n},) would match)")
                if width is None:
                    width = d["width"]
                if self._input is None:
                    name = dname
        if width is None and self._inferred is not None:
            name, width = self._inferred  # from the dataset of an earlier call
        if width is None:
            raise ValueError("input width unknown: start with "
                             "pasco.Input(shape=(width,)), give the first "
                             "layer input_shape=(width,), or fit first")
        self._inferred = (name, width)
        layers = []
        w, dtype = width, (self._input.dtype if self._input is not None
                           and ids else "int64" if ids else "float32")
        for layer in self.layers:
            j, w = layer._json_layer([w], [dtype])
            layers.append(j)
            dtype = "float32"
        self._output_width = w
        return {"class_name": "Sequential",
                "config": {"name": self.name or "sequential",
                           "seed": self.seed,
                           "inputs": [{"name": name, "width": width,
                                       "ids": ids}],
                           "layers": layers}}
