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
from ctypes import c_int64, c_void_p
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _lib, _numpy_data, _saving
from . import callbacks as _callbacks, losses as _losses
from . import optimizers as _optimizers
from ._lib import lib
from .cluster import ParameterServerStrategy, get_strategy
from .data import Dataset
from .errors import check, error_for
from .layers import Input, KerasTensor, Layer, Normalization
from ._compile import compile_metrics as _compile_metrics
from ._compile import loss_weights_config as _loss_weights
from ._variable import Variable, _numpy_to_tensor

__all__ = ["Model", "Sequential", "Variable", "load_model"]

_LOSSES = _losses.NAMES  # model/losses.c's names
DatasetLike = Union[Dataset, str]


def _model_error(rv: int, what: str) -> Exception:
    msg = lib.pasco_model_last_error().decode()
    return error_for(rv, f"{what}: {msg}" if msg else what)


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


class Model:
    """Keras's functional Model: ``Model(inputs=..., outputs=...)`` over
    pasco.Input and layer calls. Made under ``strategy.scope()`` (or with
    ``strategy=``), its variables live on that strategy's ps tasks.
    ``seed`` seeds every initializer without a seed of its own. inputs
    may be a dict {name: Input}: its keys then name the inputs (config,
    dataset features, ``model({name: t})``)."""

    def __init__(self, inputs: Union[Input, Sequence[Input],
                                     Dict[str, Input], None] = None,
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
        self._input_keys: Optional[List[str]] = None  # a dict's keys
        if isinstance(inputs, dict):
            if not all(isinstance(k, str) and k for k in inputs):
                raise TypeError("inputs: a dict's keys must be non-empty "
                                "strings (the inputs' names)")
            self._input_keys, inputs = list(inputs), list(inputs.values())
        ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not ins or not all(isinstance(i, Input) for i in ins):
            raise TypeError("inputs: expected a pasco.Input, a list of them "
                            "or a dict of them by name")
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

    def input_names(self) -> List[str]:
        """The inputs' names in order: a dict's keys, or the Inputs'."""
        return list(getattr(self, "_input_keys", None) or
                    [i.name for i in self._inputs])

    def _model_config(self, data: Optional[Dataset]) -> dict:
        names = {id(i): n for i, n in zip(self._inputs, self.input_names())}
        ins = [dict(i.get_config(), name=names[id(i)]) for i in self._inputs]
        # each tensor's (width, dtype): a custom layer is traced on them
        spec: Dict[int, tuple] = {id(i): (i.width, i.dtype)
                                  for i in self._inputs}
        layers = []
        for t in self._nodes:
            j, width = t.source._json_layer(
                [spec[id(u)][0] for u in t.inbound],
                [spec[id(u)][1] for u in t.inbound])
            j["inbound_nodes"] = [names.get(id(u), u.name)
                                  for u in t.inbound]
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
        # a sequence output: y_pred [batch, steps, dim] as it is
        out = (None,) + tuple(width) if isinstance(width, (tuple, list)) \
            else (None, width)
        y_true: tuple = ("float32", out)
        if data is not None and data.spec.get("label") is not None:
            y_true = ("float32" if data.spec.get("label_type") == "float"
                      else "int64",
                      (None,) + tuple(data.spec.get("label_shape", ())))
        return _losses.trace(self._loss_fn, y_true, ("float32", out))

    def to_json(self, data: Optional[Dataset] = None) -> str:
        return json.dumps(self.get_config(data))

    # ---- compile and build ------------------------------------------------

    def compile(self, optimizer: Union[str, _optimizers.Optimizer] = "rmsprop",
                loss: Optional[_losses.LossLike] = None,
                loss_weights: Any = None,
                metrics: Optional[Sequence[Any]] = None,
                weighted_metrics: Optional[Sequence[Any]] = None,
                from_logits: bool = False) -> None:
        """Keras's compile: optimizer (a name or pasco.optimizers.*), loss
        (a name of pasco.losses.NAMES: "mse", "mae", "huber",
        "binary_crossentropy", "sparse_categorical_crossentropy", ...; a
        pasco.losses function or object, pasco.losses.Huber(2.0), or its
        config dict {"class_name": "Huber", "config": {"delta": 2.0}},
        or your own: a function of pasco.ops (y_true, y_pred) or a
        pasco.losses.Loss subclass, traced when the model is built: see
        pasco.losses), metrics (at most 8: names, "accuracy", "auc",
        "precision", "recall", "mae", "mse", ..., or pasco.metrics
        objects with their arguments, AUC(curve="PR"), Precision(
        thresholds=0.3), ..., logged under their names), weighted_metrics
        (Keras 3's: counted with the sample weights, docs/sample-weights.md;
        logged as weighted_<name> when a metric has the name), loss_weights
        (Keras 3's, for a model's one output: a number, [number] or
        {output layer's name: number}; the loss fit trains on and reports
        is that times the loss, plus the regularizers' terms unscaled;
        docs/keras-extras.md)."""
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
        metrics = _compile_metrics(metrics)
        weighted = _compile_metrics(weighted_metrics, "weighted_metrics",
                                    len(metrics))
        layers = getattr(self, "layers", None)
        lw = _loss_weights(loss_weights, layers[-1].name if layers else None)
        self.optimizer = opt
        self.compiled_loss = loss
        self._loss_fn = loss_fn
        self.compile_config = {"loss": loss, "from_logits": bool(from_logits),
                               "optimizer": opt.get_config(),
                               "metrics": metrics,
                               **({"weighted_metrics": weighted}
                                  if weighted else {}),
                               **({"loss_weights": lw}
                                  if lw is not None else {})}
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

    def fit(self, x: Any = None, y: Any = None,
            batch_size: Optional[int] = None, epochs: int = 1,
            verbose: Union[int, str] = "auto",
            callbacks: Optional[Sequence[_callbacks.Callback]] = None,
            validation_split: float = 0.0, validation_data: Any = None,
            shuffle: bool = True, class_weight: Optional[dict] = None,
            sample_weight: Any = None, initial_epoch: int = 0,
            steps_per_epoch: Optional[int] = None,
            validation_steps: Optional[int] = None,
            validation_batch_size: Optional[int] = None,
            validation_freq: int = 1, steps_per_execution: int = 1,
            validation_shards: int = 0,
            window: int = 0) -> _callbacks.History:
        """Keras's fit under ParameterServerStrategy: ``steps_per_epoch``
        (required) steps an epoch on the workers' shares of ``x`` (a
        pasco.data dataset, repeated forever unless it says otherwise),
        validation on ``validation_data`` after each epoch (every example
        once), ``callbacks`` at each epoch. ``window``: training steps in
        flight per worker; 0 means 1, TensorFlow's (a larger window is
        faster but its gradients are staler: docs/fit.md's "fit's window"
        table). ``verbose``: 0 silent, 1 Keras 3's progress bar, 2 a line
        per epoch, "auto" (the default) the bar when stdout is a terminal
        and a line per epoch otherwise (Keras 3's "auto" is always 1; a bar
        redrawn with "\\r" only clutters a log file). Returns a History.

        On numpy arrays (Keras's x and y: an array, or a dict or list of
        them for named inputs), fit writes them as a dataset the workers
        read (python/pasco/_numpy_data.py: a temporary directory they must
        see, removed after): batch_size (None: 32), shuffle, an epoch of
        ceil(examples / batch_size) steps, each example once per epoch
        whatever the worker count, validation_split (the last fraction,
        before shuffling) or validation_data as (x_val, y_val[, weights])
        arrays, evaluated exactly once each epoch. sample_weight (arrays
        only) and class_weight weigh the loss and weighted_metrics, as
        Keras's: docs/sample-weights.md. An explicit steps_per_epoch
        takes the next batches of the current pass, an epoch ending early
        where the pass runs out, and steps_per_execution runs whole
        executions (steps_per_epoch=4, steps_per_execution=3: 6 steps), as
        Keras's EpochIterator; a fit resumed by BackupAndRestore reads the
        batches the uninterrupted run would have read there.
        validation_steps and validation_freq other than Keras's defaults
        are refused."""
        self._require_compiled("fit")
        style = _callbacks._progress_style(verbose)
        _callbacks._sync_learning_rate(self)  # a rate set since compile
        if validation_steps is not None or validation_freq != 1:
            raise ValueError("validation_steps, validation_freq: Pasco "
                             "validates on every example after every "
                             "epoch; leave them None and 1")
        if _numpy_data.is_arrays(x):
            return _numpy_data.fit(
                self, x, y, batch_size, validation_split, validation_data,
                shuffle, validation_batch_size,
                weights=(sample_weight, class_weight), epochs=epochs,
                verbose=verbose, callbacks=callbacks,
                initial_epoch=initial_epoch,
                steps_per_epoch=steps_per_epoch,
                steps_per_execution=steps_per_execution,
                validation_shards=validation_shards, window=window)
        for arg, v in (("y", y), ("batch_size", batch_size),
                       ("validation_batch_size", validation_batch_size)):
            if v is not None:
                raise ValueError(f"{arg}: only with numpy arrays x (a "
                                 f"dataset holds its targets and batches)")
        if validation_split:
            raise ValueError("validation_split: only with numpy arrays x")
        x = _numpy_data.with_weights(x, sample_weight, class_weight)
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
        rate = _callbacks._RateFollower()
        try:
            check(lib.pasco_callbacks_add(clist, watch.make()), "callbacks")
            params = {"epochs": epochs, "steps": steps_per_epoch,
                      "steps_per_execution": steps_per_execution,
                      "verbose": verbose}
            for c in cbs:
                c.set_model(self)
                c.set_params(params)
                check(lib.pasco_callbacks_add(clist, c._make(s, errors)),
                      f"adding {type(c).__name__}")
            check(lib.pasco_callbacks_add(clist, rate.make()), "callbacks")
            step_cb = _numpy_data.step_dataset_cb(
                getattr(self, "_step_dataset", None), errors)
            o = _lib.FitOptions(dataset=name, epochs=epochs,
                                steps_per_epoch=steps_per_epoch,
                                initial_epoch=initial_epoch,
                                steps_per_execution=steps_per_execution,
                                validation_dataset=vname,
                                validation_shards=validation_shards,
                                callbacks=clist, verbose=style >= 0,
                                window=window,
                                progress_style=max(style, 0),
                                step_dataset=ctypes.cast(step_cb, c_void_p)
                                if step_cb else None)
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
            if rate.rate is not None:  # what the callbacks left, as Keras
                _callbacks._keep_learning_rate(
                    self, rate.rate, x if isinstance(x, Dataset) else None)
            if watch.interrupted:
                raise KeyboardInterrupt
            if errors:
                raise errors[0]
            if rv != 0:
                raise _model_error(rv, "fit")
            return history
        finally:
            lib.pasco_callbacks_free(clist)

    def evaluate(self, x: Any = None, y: Any = None,
                 batch_size: Optional[int] = None, verbose: int = 1,
                 sample_weight: Any = None, steps: Optional[int] = None,
                 callbacks: Optional[Sequence[Any]] = None,
                 return_dict: bool = False,
                 shards: int = 0) -> Union[float, List[float],
                                           Dict[str, float]]:
        """Keras's evaluate, exactly once over ``x``'s shards (``shards``:
        0 means one per worker): the loss, or [loss, metrics...] when
        compiled with metrics, or the dict of them with return_dict.
        x may be numpy arrays with targets y (batch_size None: 32),
        written for the workers as fit writes them: every example once,
        weighted by sample_weight (arrays only) as fit's. steps (None: all
        of x) and callbacks are refused; verbose prints nothing."""
        self._require_compiled("evaluate")
        if steps is not None or callbacks:
            raise ValueError("steps, callbacks: Pasco evaluates every "
                             "example of x, without callbacks; leave them "
                             "None")
        if _numpy_data.is_arrays(x):
            return _numpy_data.evaluate(self, x, y, batch_size, return_dict,
                                        shards, sample_weight)
        if y is not None or batch_size is not None or \
                sample_weight is not None:
            raise ValueError("y, batch_size, sample_weight: only with "
                             "numpy arrays x")
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

    def predict(self, x: Any, batch_size: Optional[int] = None,
                verbose: int = 1, steps: Optional[int] = None,
                callbacks: Optional[Sequence[Any]] = None,
                dir: Optional[str] = None, format: str = "csv",
                shards: int = 0) -> Union[np.ndarray, int]:
        """Keras's predict, each example once: the workers write one file
        per shard into ``dir`` (default, for "csv" only: a temporary
        directory, removed once read, which only a one-host cluster
        shares). format "csv": returns the outputs, [examples, width] (a
        sequence's [examples, steps, dim]), in the files' order for a
        pasco.data dataset read in order (no shuffle; each shard's rows put
        back), else shard after shard (a factory's, a shuffled one's);
        "tfrecord": the number of examples (the files in ``dir`` are the
        result: ``dir`` is required). x may be numpy arrays (batch_size
        None: 32): the outputs come back in x's order, a row per example.
        steps and callbacks are refused (every example is predicted);
        verbose prints nothing."""
        self._require_compiled("predict")
        if steps is not None or callbacks:
            raise ValueError("steps, callbacks: Pasco predicts every "
                             "example of x, without callbacks; leave them "
                             "None")
        if _numpy_data.is_arrays(x):
            if dir is not None or format != "csv":
                raise ValueError("dir, format: not with numpy arrays x "
                                 "(the outputs come back as an array)")
            return _numpy_data.predict(self, x, batch_size, shards)
        if batch_size is not None:
            raise ValueError("batch_size: only with numpy arrays x")
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
        ordered = _numpy_data.in_file_order(x, parts)
        if ordered is None:
            ordered = np.concatenate(parts) if parts else \
                np.zeros((0, width), np.float32)
        shape = self._output_width  # a sequence's: [examples, steps, dim]
        return ordered.reshape((len(ordered),) + tuple(shape)) \
            if isinstance(shape, (tuple, list)) else ordered

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
        Normalization's and a BatchNormalization's moving statistics)."""
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

    # ---- saving (python/pasco/_saving.py) ------------------------------

    def save(self, filepath: Any, overwrite: bool = True,
             zipped: Optional[bool] = None, **kwargs: Any) -> None:
        """Keras's save: one ``.keras`` zip (config.json with the compile
        config, metadata.json, model.weights.safetensors: the variables,
        optimizer slots and iterations), loadable by
        pasco.models.load_model into a cluster of any ps count. The ps
        tasks stage their shards beside the file: its directory must be
        under their PASCO_CHECKPOINT_DIR."""
        _saving.save_model(self, filepath, overwrite, zipped, **kwargs)

    def save_weights(self, filepath: Any, overwrite: bool = True,
                     max_shard_size: Optional[float] = None) -> None:
        """Keras's save_weights, to a ``.weights.safetensors`` file (Keras
        3 writes ``.weights.h5``): variables, slots and iterations."""
        _saving.save_weights(self, filepath, overwrite, max_shard_size)

    def load_weights(self, filepath: Any, skip_mismatch: bool = False,
                     **kwargs: Any) -> None:
        """Keras's load_weights from a ``.weights.safetensors`` or
        ``.keras`` file."""
        _saving.load_weights(self, filepath, skip_mismatch, **kwargs)

    def summary(self, line_length: Optional[int] = None,
                positions: Optional[Sequence[float]] = None,
                print_fn: Optional[Any] = None, expand_nested: bool = False,
                show_trainable: bool = False,
                layer_range: Optional[Sequence[str]] = None) -> None:
        """Keras's summary (builds the model first): the table of layers,
        output shapes and parameters, the trainable and non-trainable
        totals, then each variable's shape and where it lives: its ps
        task, or each shard's rows and ps ("part_0 rows [0, 10) on ps
        0"), read from the strategy's placement. Each line goes to
        print_fn (default print). line_length, positions, expand_nested,
        show_trainable and layer_range are Keras's and change nothing
        here (the table fits its widest cell)."""
        from . import _summary
        _summary.summary(self, print_fn)


# Keras's Sequential: python/pasco/_models_sequential.py
from ._models_sequential import Sequential  # noqa: E402

load_model = _saving.load_model
