"""Keras's metric objects, their state in a variable on a ps.

Every worker adds its batches' counts to the state (an assign_add after
its step, recorded by ``update_state`` inside a ``@pasco.function``) and
the chief reads the result::

    accuracy = pasco.metrics.SparseCategoricalAccuracy()

    @pasco.function
    def step(iterator):
        x, y = next(iterator)
        accuracy.update_state(y, model(x, training=False))

    for _ in range(10):
        coordinator.schedule(step, args=(it,))
    coordinator.join()
    print(accuracy.result())      # over every worker's batches
    accuracy.reset_state()

Each metric is Keras 3's: the per-example values (the matches of an
accuracy, the values of a Mean) are averaged over every axis but the
batch, then ``total += sum(values * sample_weight)`` and ``count +=
sum(sample_weight)`` (the batch size without weights); ``result()`` is
total / count (0 when nothing was counted). Shapes as Keras squeezes or
expands them: labels [batch] and predictions [batch, 1] are compared
example by example. ``sample_weight``: one weight per example ([batch] or
[batch, 1]).

The state is a float64 variable ``metrics/<name>`` ([total, count]; Sum:
[total]) made on the ps of the strategy whose scope the metric is made in
(else ``pasco.get_strategy()``'s) on first use and set to zeros then, so a metric object starts from zero as
Keras's does. Outside a traced step, ``update_state`` takes numpy arrays
and adds their counts from the chief.

AUC, Precision, Recall, the top-k accuracies, MeanSquaredError,
RootMeanSquaredError, MeanAbsoluteError and BinaryCrossentropy
(python/pasco/_metrics_keras3.py) also go into ``model.compile(metrics=
[...])``, as the accuracies do: there the library's steps count them in
C from their Keras config (``get_config()``), logged under ``name``.
``name=None`` (AUC, Precision, Recall) is Keras's automatic name: auc,
auc_1, ... in the order they are made.
"""

from __future__ import annotations

import ctypes
import re
from ctypes import POINTER, c_int, c_void_p
from typing import Any, Dict, Optional

import numpy as np

from . import _lib, ops
from ._lib import lib
from .errors import error_for
from .models import Variable, _numpy_to_tensor

__all__ = ["Metric", "Mean", "Sum", "Accuracy", "BinaryAccuracy",
           "SparseCategoricalAccuracy", "CategoricalAccuracy"]

_lib._sig("pasco_variable_create", c_int, POINTER(c_void_p), c_void_p,
          ctypes.c_char_p, POINTER(_lib.Tensor))
_lib._sig("pasco_variable_assign_add", c_int, c_void_p, POINTER(_lib.Tensor))

_names: Dict[str, int] = {}  # the states' variable names
_auto: Dict[str, int] = {}  # Keras's auto names (name=None)


def _snake(name: str) -> str:
    """Keras's to_snake_case: AUC -> auc, TopKAccuracy -> top_k_accuracy."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _unique(name: str, taken: Optional[Dict[str, int]] = None) -> str:
    taken = _names if taken is None else taken
    k = taken.get(name, 0)
    taken[name] = k + 1
    return name if k == 0 else f"{name}_{k}"


class _State(Variable):
    """A metric's state: a float64 variable on a ps, created (at zeros)
    when first needed: by a schedule of a step that updates it, a result
    or an update from the chief."""

    def __init__(self, name: str, shape: tuple) -> None:
        from .cluster import get_strategy
        self._model, self._index, self._strategy = None, -1, None
        self._own, self._dtype = c_void_p(), np.float64
        self.name, self.shape = name, shape
        try:  # the strategy of the scope it is made in, else the latest's
            self._home: Any = get_strategy()
        except RuntimeError:
            self._home = None  # none yet: the one there is at first use

    def _handle(self) -> int:
        if self._own and self._strategy is not None and \
                self._strategy._strategy:
            return self._own.value
        from .cluster import get_strategy
        s = self._home if self._home is not None and \
            self._home._strategy else get_strategy()
        s._check_open()
        t = _numpy_to_tensor(np.zeros(self.shape, np.float64))
        h = c_void_p()
        try:
            rv = lib.pasco_variable_create(ctypes.byref(h), s._strategy,
                                           self.name.encode(), t)
            if rv == 0:
                rv = lib.pasco_variable_assign(h, t)  # Keras's: from zero
        finally:
            lib.pasco_tensor_release(t)
        if rv != 0:
            msg = lib.pasco_strategy_error(s._strategy).decode()
            if h:
                lib.pasco_variable_free(h)
            raise error_for(rv, f"metric state {self.name}: {msg}")
        self._own, self._strategy = h, s
        s._resources.add(self)
        return h.value


class _Numpy:
    """The ops a metric uses, on numpy arrays (an update from the chief)."""

    @staticmethod
    def cast(x: Any, dtype: str) -> np.ndarray:
        return np.asarray(x).astype(dtype)

    @staticmethod
    def equal(a: Any, b: Any) -> np.ndarray:
        return (np.asarray(a) == np.asarray(b)).astype(np.float32)

    @staticmethod
    def greater(a: Any, b: Any) -> np.ndarray:
        return (np.asarray(a) > np.asarray(b)).astype(np.float32)

    @staticmethod
    def argmax(x: Any, axis: int) -> np.ndarray:
        return np.argmax(x, axis=axis).astype(np.int64)

    @staticmethod
    def squeeze(x: Any, axis: int) -> np.ndarray:
        return np.squeeze(x, axis=axis)

    @staticmethod
    def expand_dims(x: Any, axis: int) -> np.ndarray:
        return np.expand_dims(x, axis)

    @staticmethod
    def mean(x: Any, axis: Any) -> np.ndarray:
        return np.mean(x, axis=axis)

    @staticmethod
    def sum(x: Any, axis: Any = None) -> np.ndarray:
        return np.sum(x, axis=axis)

    @staticmethod
    def ones_like(x: Any) -> np.ndarray:
        return np.ones_like(x)

    @staticmethod
    def stack(xs: Any) -> np.ndarray:
        return np.asarray([np.asarray(x) for x in xs], np.float64)

    @staticmethod
    def not_equal(a: Any, b: Any) -> np.ndarray:
        return (np.asarray(a) != np.asarray(b)).astype(np.float32)

    @staticmethod
    def less(a: Any, b: Any) -> np.ndarray:
        return (np.asarray(a) < np.asarray(b)).astype(np.float32)

    @staticmethod
    def where(c: Any, a: Any, b: Any) -> np.ndarray:
        a = np.asarray(a)
        return np.where(np.asarray(c) != 0, a, np.asarray(b, a.dtype))

    @staticmethod
    def reshape(x: Any, shape: Any) -> np.ndarray:
        return np.reshape(x, shape)

    @staticmethod
    def clip(x: Any, lo: float, hi: float) -> np.ndarray:
        x = np.asarray(x)
        return np.clip(x, x.dtype.type(lo), x.dtype.type(hi))

    @staticmethod
    def one_hot(x: Any, n: int) -> np.ndarray:
        return np.eye(n, dtype=np.float32)[np.asarray(x, np.int64)]

    @staticmethod
    def unary(name: str, x: Any) -> np.ndarray:
        x = np.asarray(x)
        if name == "sigmoid":
            return (1 / (1 + np.exp(-x))).astype(x.dtype)
        return getattr(np, name)(x)

    @staticmethod
    def maximum(a: Any, b: Any) -> np.ndarray:
        a = np.asarray(a)
        return np.maximum(a, np.asarray(b, a.dtype))


class _Ops:
    """The same on symbolic tensors, recording pasco.ops nodes."""

    cast = staticmethod(ops.cast)
    equal = staticmethod(ops.equal)
    greater = staticmethod(ops.greater)
    argmax = staticmethod(ops.argmax)
    squeeze = staticmethod(ops.squeeze)
    expand_dims = staticmethod(ops.expand_dims)
    mean = staticmethod(ops.mean)
    sum = staticmethod(ops.sum)

    @staticmethod
    def ones_like(x: Any) -> Any:
        # where's branches are both 1: one per element, NaN or not
        return ops.where(ops.equal(x, x), 1.0, 1.0)

    @staticmethod
    def stack(xs: Any) -> Any:
        return ops.concatenate([ops.expand_dims(ops.cast(x, "float64"), 0)
                                for x in xs], axis=0)

    not_equal = staticmethod(ops.not_equal)
    less = staticmethod(ops.less)
    where = staticmethod(ops.where)
    reshape = staticmethod(ops.reshape)
    clip = staticmethod(ops.clip)
    one_hot = staticmethod(ops.one_hot)
    maximum = staticmethod(ops.maximum)

    @staticmethod
    def unary(name: str, x: Any) -> Any:
        return getattr(ops, name)(x)


def _rank(x: Any) -> int:
    return len(x.shape)


def _dtype(x: Any) -> str:
    """x's dtype name: a symbolic tensor's is a str, an array's a
    numpy dtype."""
    return x.dtype if isinstance(x.dtype, str) else np.dtype(x.dtype).name


def _fmt(shape: Any) -> str:
    return "(" + ", ".join("None" if d is None else str(d)
                           for d in shape) + (",)" if len(shape) == 1
                                              else ")")


def _same_rank(B: Any, a: Any, b: Any) -> Any:
    """Keras's squeeze_or_expand_to_same_rank: of two ranks one apart,
    the rank-1 one gets a last axis, else the longer loses its last axis
    of 1."""
    if _rank(a) == _rank(b) + 1 and a.shape[-1] == 1:
        return (a, B.expand_dims(b, -1)) if _rank(b) == 1 else \
            (B.squeeze(a, -1), b)
    if _rank(b) == _rank(a) + 1 and b.shape[-1] == 1:
        return (B.expand_dims(a, -1), b) if _rank(a) == 1 else \
            (a, B.squeeze(b, -1))
    return a, b


class Result(np.float64):
    """A metric's result: a numpy float64 (a float: ``"%f" % r``) with
    TensorFlow's ``.numpy()``, which gives the value as np.float64."""

    def numpy(self) -> np.float64:
        return np.float64(self)


class ResultArray(np.ndarray):
    """A metric's result of several values (an array) with ``.numpy()``,
    which gives it as a plain numpy array."""

    def numpy(self) -> np.ndarray:
        return np.asarray(self).copy()


def _result(r: Any) -> Any:
    if isinstance(r, (Result, ResultArray)):
        return r
    a = np.asarray(r)
    if a.ndim == 0 and a.dtype.kind in "fiub":
        return Result(a)
    return a.view(ResultArray) if a.dtype.kind in "fiub" else r


class Metric:
    """A metric whose state lives on a ps: ``update_state`` (in a traced
    step, or from the chief with numpy arrays), ``result()`` (a
    :class:`Result`, a float with ``.numpy()`` as TensorFlow's result
    has), ``reset_state()``."""

    _state_shape: tuple = (2,)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "result" in cls.__dict__:  # each result() gives a Result
            f = cls.__dict__["result"]

            def result(self: Any) -> Any:
                return _result(f(self))
            result.__doc__, result.__name__ = f.__doc__, "result"
            cls.result = result  # type: ignore[assignment]

    def __init__(self, name: Optional[str] = None,
                 dtype: Optional[str] = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"name: expected a non-empty str, got {name!r}")
        if dtype not in (None, "float32", "float64"):
            raise ValueError(f"dtype: expected None, 'float32' or "
                             f"'float64' (the state is float64), got "
                             f"{dtype!r}")
        if name is None:  # Keras's auto_name: auc, auc_1, ...
            name = _unique(_snake(type(self).__name__), _auto)
        self.name, self.dtype = name, dtype
        self.state = _State(f"metrics/{_unique(self.name)}",
                            self._state_shape)

    def get_config(self) -> Dict[str, Any]:
        """Keras's config: name and dtype, then the metric's own
        arguments; model.compile sends it to the workers as
        {"class_name": ..., "config": ...}."""
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Metric":
        """Keras's from_config: the metric of get_config()'s arguments."""
        return cls(**config)

    def _delta(self, B: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        """Adds a batch: in a traced step, of symbolic tensors (an
        assign_add the worker does after the step); else of numpy arrays
        (an assign_add from the chief, now)."""
        from .function import _record_update, _tracing
        what = f"{self.name}.update_state"
        symbolic = [a for a in list(args) + list(kwargs.values())
                    if isinstance(a, ops.Tensor)]
        if _tracing() is not None and symbolic:
            delta = _Ops.cast(self._delta(_Ops, *args, **kwargs), "float64")
            _record_update(self.state, delta, what)
            return
        if symbolic:
            raise ValueError(f"{what}: symbolic tensors outside a traced "
                             f"step")
        d = np.asarray(self._delta(_Numpy, *[
            None if a is None else np.asarray(a) for a in args], **{
            k: None if v is None else np.asarray(v)
            for k, v in kwargs.items()}), np.float64)
        t = _numpy_to_tensor(d.reshape(self._state_shape))
        h = self.state._handle()
        try:
            rv = lib.pasco_variable_assign_add(h, t)
        finally:
            lib.pasco_tensor_release(t)
        if rv != 0:
            raise error_for(rv, f"{what}: " +
                            lib.pasco_variable_error(h).decode())

    def result(self) -> np.float64:
        """The metric over everything added since the last reset."""
        total, count = self.state.numpy()
        return Result(total / count if count else 0.0)

    def reset_state(self) -> None:
        """Zeroes the state on the ps."""
        self.state.assign(np.zeros(self._state_shape))

    reset_states = reset_state  # TensorFlow 2's name

    def __repr__(self) -> str:
        return f"<pasco.metrics.{type(self).__name__} {self.name}>"


def _weighted(B: Any, values: Any, sample_weight: Any, what: str) -> Any:
    """Keras's reduce_to_samplewise_values with a mean, then Mean's
    update: the [total, count] of a batch of values."""
    values = B.cast(values, "float64")
    if _rank(values) > 1:
        values = B.mean(values, axis=tuple(range(1, _rank(values))))
    if sample_weight is None:
        if _rank(values) == 0:  # one value: one count
            return B.stack([values, B.ones_like(values)])
        return B.stack([B.sum(values), B.sum(B.ones_like(values))])
    w = _per_example(B, sample_weight, values, what)
    return B.stack([B.sum(values * w), B.sum(w)])


def _per_example(B: Any, sample_weight: Any, values: Any, what: str) -> Any:
    """sample_weight as one float64 weight per example of values."""
    w = B.cast(sample_weight, "float64")
    if _rank(w) == 2 and w.shape[-1] == 1:
        w = B.squeeze(w, -1)
    if _rank(w) != 1 or _rank(values) != 1:
        raise ValueError(f"{what}: sample_weight: expected one weight per "
                         f"example ([batch] or [batch, 1]), got shape "
                         f"{_fmt(sample_weight.shape)} for values of shape "
                         f"{_fmt(values.shape)}")
    return w


class Mean(Metric):
    """Keras's Mean: the (weighted) mean of the values given."""

    def __init__(self, name: str = "mean",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, dtype)

    def _delta(self, B: Any, values: Any, sample_weight: Any = None) -> Any:
        return _weighted(B, values, sample_weight, self.name)


class Sum(Metric):
    """Keras's Sum: the (weighted) sum of the values given."""

    _state_shape = (1,)

    def __init__(self, name: str = "sum",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, dtype)

    def _delta(self, B: Any, values: Any, sample_weight: Any = None) -> Any:
        values = B.cast(values, "float64")
        if sample_weight is None:
            return B.stack([B.sum(values)])
        if _rank(values) > 1:  # Keras's: summed per example, then weighted
            values = B.sum(values, axis=tuple(range(1, _rank(values))))
        return B.stack([B.sum(values * _per_example(B, sample_weight,
                                                    values, self.name))])

    def result(self) -> np.float64:
        return np.float64(self.state.numpy()[0])


class _MeanOf(Metric):
    """A MeanMetricWrapper: the mean of a per-example function."""

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        raise NotImplementedError

    def _delta(self, B: Any, y_true: Any, y_pred: Any,
               sample_weight: Any = None) -> Any:
        return _weighted(B, self._matches(B, y_true, y_pred), sample_weight,
                         self.name)


class Accuracy(_MeanOf):
    """Keras's Accuracy: how often y_pred equals y_true (y_true cast to
    y_pred's dtype)."""

    def __init__(self, name: str = "accuracy",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, dtype)

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        y_true, y_pred = _same_rank(B, B.cast(y_true, _dtype(y_pred)),
                                    y_pred)
        return B.equal(y_true, y_pred)


class BinaryAccuracy(_MeanOf):
    """Keras's BinaryAccuracy(threshold=0.5): how often y_pred >
    threshold equals y_true."""

    def __init__(self, name: str = "binary_accuracy",
                 dtype: Optional[str] = None,
                 threshold: float = 0.5) -> None:
        if isinstance(threshold, bool) or not isinstance(
                threshold, (int, float)):
            raise TypeError(f"threshold: expected a number, got "
                            f"{threshold!r}")
        self.threshold = float(threshold)
        super().__init__(name, dtype)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "threshold": self.threshold}

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        dtype = _dtype(y_pred)
        y_true, y_pred = _same_rank(B, B.cast(y_true, dtype), y_pred)
        return B.equal(y_true, B.cast(B.greater(y_pred, self.threshold),
                                      dtype))


class SparseCategoricalAccuracy(_MeanOf):
    """Keras's SparseCategoricalAccuracy: how often the argmax of y_pred
    [batch, classes] is the class id y_true ([batch] or [batch, 1]),
    compared in y_pred's dtype."""

    def __init__(self, name: str = "sparse_categorical_accuracy",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, dtype)

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        dtype = _dtype(y_pred)
        y_true = B.cast(y_true, dtype)
        if _rank(y_true) == _rank(y_pred) and y_true.shape[-1] == 1:
            y_true = B.squeeze(y_true, -1)
        return B.equal(y_true, B.cast(B.argmax(y_pred, -1), dtype))


class CategoricalAccuracy(_MeanOf):
    """Keras's CategoricalAccuracy: how often the argmax of y_pred is
    that of the one-hot y_true."""

    def __init__(self, name: str = "categorical_accuracy",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, dtype)

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        return B.equal(B.argmax(y_true, -1), B.argmax(y_pred, -1))


from ._metrics_keras3 import (  # noqa: E402,F401 (they build on the above)
    AUC, BinaryCrossentropy, MeanAbsoluteError, MeanSquaredError, Precision,
    Recall, RootMeanSquaredError, SparseTopKCategoricalAccuracy,
    TopKCategoricalAccuracy, compile_entry, deserialize, serialize)

__all__ += ["AUC", "Precision", "Recall", "TopKCategoricalAccuracy",
            "SparseTopKCategoricalAccuracy", "MeanSquaredError",
            "RootMeanSquaredError", "MeanAbsoluteError", "BinaryCrossentropy",
            "serialize", "deserialize"]
