"""Losses: Keras's built-in ones, and your own written with pasco.ops.

The built-in losses are Keras 3's functions and classes with its
arguments and defaults: mean_squared_error, mean_absolute_error,
mean_absolute_percentage_error, huber (delta), log_cosh, hinge,
squared_hinge, kl_divergence, poisson, cosine_similarity (axis -1),
binary_crossentropy and categorical_crossentropy (from_logits,
label_smoothing), binary_focal_crossentropy (apply_class_balancing,
alpha, gamma, from_logits, label_smoothing),
sparse_categorical_crossentropy (from_logits), the aliases mse, mae,
mape, logcosh, kld, bce, and the classes (Huber(delta=1.0), ...). The
functions give one loss per example, as Keras's (the first four
crossentropies and mean_squared_error: the batch's mean). They are usable
in ``compile`` (where they run as the library's own loss, like their
names: an object's parameters travel as its Keras config, {"class_name":
"Huber", "config": {"delta": 2.0}}; reduction is "sum_over_batch_size";
sample weights are not taken)::

    model.compile(optimizer="adam",
                  loss=pasco.losses.SparseCategoricalCrossentropy(
                      from_logits=True))

and inside traced code (a custom loss, a @pasco.function step), where
each records its loss op::

    loss = pasco.losses.sparse_categorical_crossentropy(y, pred)

Your own loss is a function of ops ``(y_true, y_pred)``, or a
:class:`Loss` subclass with ``call(y_true, y_pred)``::

    def huber(y_true, y_pred, delta=1.0):
        err = ops.abs(y_true - y_pred)
        return ops.mean(ops.where(err < delta, 0.5 * ops.square(err),
                                  delta * err - 0.5 * delta ** 2))

    model.compile(optimizer="adam", loss=huber)

It is traced when the model is built (fit, evaluate, build) into the
compile config's {"class_name": "Graph", ...} loss (docs/GRAPHS.md):
y_pred is the model's output [batch, width] (float32), y_true the
dataset's targets: int64 class ids [batch] or float32 values [batch] as
its ``label_type`` says (float32 [batch, width] without a dataset). As in
Keras, a y_true one axis short of a y_pred whose last axis is 1 gets that
axis (values [batch] against [batch, 1] predictions) before your
function sees them. It returns a scalar, or per-example losses [batch]
whose mean is the loss (a tensor of more axes is averaged over them per
example first: the same mean as Keras's "sum_over_batch_size" of the
whole). Trace-time errors (shapes, control flow on values) are raised by
fit before anything is scheduled.

Sample weights (fit's and evaluate's sample_weight, class_weight, a
dataset's weights) weigh your loss as they weigh the built-in ones:
each example's loss times its weight, then the sum over the batch size,
sum(w_i * l_i) / batch (Keras's Loss.__call__ with sample_weight). So
return per-example losses to weigh them: a loss that returns a scalar is
multiplied by each weight and averaged, loss * mean(w), which is what
Keras's reduce_weighted_values does with a scalar (it broadcasts it
against the weights).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, Optional, Tuple, Union

from . import ops
from . import _ops_shape as _shape

__all__ = ["Loss", "MeanSquaredError", "MeanAbsoluteError",
           "MeanAbsolutePercentageError", "Huber", "LogCosh", "Hinge",
           "SquaredHinge", "KLDivergence", "Poisson", "CosineSimilarity",
           "BinaryCrossentropy", "BinaryFocalCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "mean_squared_error", "mean_absolute_error",
           "mean_absolute_percentage_error", "huber", "log_cosh", "hinge",
           "squared_hinge", "kl_divergence", "poisson", "cosine_similarity",
           "binary_crossentropy", "binary_focal_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy",
           "mse", "mae", "mape", "logcosh", "kld", "bce", "get", "NAMES"]

_EPSILON = 1e-7  # Keras's backend.epsilon()


def mean_squared_error(y_true: Any, y_pred: Any) -> ops.Tensor:
    """The mean of (y_true - y_pred) ** 2 (a scalar: the batch's)."""
    return ops.mean_squared_error(y_true, y_pred)


def _pair(y_true: Any, y_pred: Any) -> Tuple[ops.Tensor, ops.Tensor]:
    """y_true as y_pred's dtype and shape (a trailing axis of 1 added or
    dropped, Keras's squeeze_or_expand_to_same_rank)."""
    g = ops.current_graph()
    p = _shape._pred(g, "loss", y_pred)
    return _shape._target(g, "loss", y_true, p), p


def mean_absolute_error(y_true: Any, y_pred: Any) -> ops.Tensor:
    """Keras's: mean(abs(y_true - y_pred), axis=-1), one per example."""
    t, p = _pair(y_true, y_pred)
    return ops.mean(ops.abs(t - p), axis=-1)


def mean_absolute_percentage_error(y_true: Any, y_pred: Any) -> ops.Tensor:
    """Keras's: 100 * mean(abs((y_true - y_pred) / maximum(abs(y_true),
    1e-7)), axis=-1)."""
    t, p = _pair(y_true, y_pred)
    return 100.0 * ops.mean(
        ops.abs((t - p) / ops.maximum(ops.abs(t), _EPSILON)), axis=-1)


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> ops.Tensor:
    """Keras's: the mean over axis -1 of 0.5 * e ** 2 where |e| <= delta,
    else delta * |e| - 0.5 * delta ** 2 (e = y_pred - y_true)."""
    t, p = _pair(y_true, y_pred)
    delta = _number("huber", "delta", delta, 0.0, strict=True)
    e = p - t
    a = ops.abs(e)
    return ops.mean(ops.where(a <= delta, 0.5 * ops.square(e),
                              delta * a - 0.5 * delta * delta), axis=-1)


def _softplus(x: ops.Tensor) -> ops.Tensor:
    return ops.maximum(x, 0.0) + ops.log(1.0 + ops.exp(-ops.abs(x)))


def log_cosh(y_true: Any, y_pred: Any) -> ops.Tensor:
    """Keras's: mean(log(cosh(y_pred - y_true)), axis=-1), computed as
    x + softplus(-2 x) - log(2)."""
    t, p = _pair(y_true, y_pred)
    x = p - t
    return ops.mean(x + _softplus(-2.0 * x) - math.log(2.0), axis=-1)


def _hinge_labels(t: ops.Tensor) -> ops.Tensor:
    """Keras's convert_binary_labels_to_hinge: 0/1 labels as -1/1 when
    every label is 0 or 1."""
    other = ops.max(1.0 - (ops.equal(t, 0.0) + ops.equal(t, 1.0)))
    return ops.where(other < 0.5, 2.0 * t - 1.0, t)


def hinge(y_true: Any, y_pred: Any) -> ops.Tensor:
    """Keras's: mean(maximum(1 - y_true * y_pred, 0), axis=-1); 0/1
    labels are taken as -1/1."""
    t, p = _pair(y_true, y_pred)
    return ops.mean(ops.maximum(1.0 - _hinge_labels(t) * p, 0.0), axis=-1)


def squared_hinge(y_true: Any, y_pred: Any) -> ops.Tensor:
    """Keras's: mean(square(maximum(1 - y_true * y_pred, 0)), axis=-1)."""
    t, p = _pair(y_true, y_pred)
    return ops.mean(ops.square(ops.maximum(1.0 - _hinge_labels(t) * p,
                                           0.0)), axis=-1)


def kl_divergence(y_true: Any, y_pred: Any) -> ops.Tensor:
    """Keras's: sum(y_true * log(y_true / y_pred), axis=-1), both clipped
    to [1e-7, 1]."""
    t, p = _pair(y_true, y_pred)
    t = ops.clip(t, _EPSILON, 1.0)
    p = ops.clip(p, _EPSILON, 1.0)
    return ops.sum(t * ops.log(t / p), axis=-1)


def poisson(y_true: Any, y_pred: Any) -> ops.Tensor:
    """Keras's: mean(y_pred - y_true * log(y_pred + 1e-7), axis=-1)."""
    t, p = _pair(y_true, y_pred)
    return ops.mean(p - t * ops.log(p + _EPSILON), axis=-1)


def cosine_similarity(y_true: Any, y_pred: Any, axis: int = -1
                      ) -> ops.Tensor:
    """Keras's: -sum(l2_normalize(y_true) * l2_normalize(y_pred), axis),
    x / sqrt(max(sum(x ** 2), 1e-14))."""
    t, p = _pair(y_true, y_pred)
    return -ops.sum(ops.l2_normalize(t, axis, 1e-14) *
                    ops.l2_normalize(p, axis, 1e-14), axis=axis)


def _smooth(t: ops.Tensor, label_smoothing: float, classes: float
            ) -> ops.Tensor:
    s = _number("loss", "label_smoothing", label_smoothing, 0.0, hi=1.0)
    return t * (1.0 - s) + s / classes if s else t


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                        label_smoothing: float = 0.0,
                        axis: int = -1) -> ops.Tensor:
    """The batch mean binary cross-entropy of 0/1 targets, smoothed to
    y * (1 - label_smoothing) + label_smoothing / 2."""
    _last_axis("binary_crossentropy", axis)
    if label_smoothing:
        y_true, y_pred = _pair(y_true, y_pred)
        y_true = _smooth(y_true, label_smoothing, 2.0)
    return ops.binary_crossentropy(y_true, y_pred, from_logits)


def binary_focal_crossentropy(y_true: Any, y_pred: Any,
                              apply_class_balancing: bool = False,
                              alpha: float = 0.25, gamma: float = 2.0,
                              from_logits: bool = False,
                              label_smoothing: float = 0.0,
                              axis: int = -1) -> ops.Tensor:
    """Keras's: mean((1 - p_t) ** gamma * bce, axis=-1), p_t = y p +
    (1 - y)(1 - p), bce of p clipped to [1e-7, 1 - 1e-7], weighted by
    y alpha + (1 - y)(1 - alpha) with apply_class_balancing."""
    _last_axis("binary_focal_crossentropy", axis)
    gamma = _number("binary_focal_crossentropy", "gamma", gamma, 0.0)
    alpha = _number("binary_focal_crossentropy", "alpha", alpha, None)
    t, p = _pair(y_true, y_pred)
    t = _smooth(t, label_smoothing, 2.0)
    if from_logits:
        p = ops.sigmoid(p)
    c = ops.clip(p, _EPSILON, 1.0 - _EPSILON)
    bce = -(t * ops.log(c) + (1.0 - t) * ops.log(1.0 - c))
    q = 1.0 - (t * p + (1.0 - t) * (1.0 - p))
    if gamma == 0:
        loss = bce
    elif gamma == int(gamma) and gamma <= 8:
        focal = q
        for _ in range(int(gamma) - 1):
            focal = focal * q
        loss = focal * bce
    else:
        loss = ops.exp(gamma * ops.log(ops.maximum(q, 1e-30))) * bce
    if apply_class_balancing:
        loss = (t * alpha + (1.0 - t) * (1.0 - alpha)) * loss
    return ops.mean(loss, axis=-1)


def categorical_crossentropy(y_true: Any, y_pred: Any,
                             from_logits: bool = False,
                             label_smoothing: float = 0.0,
                             axis: int = -1) -> ops.Tensor:
    """The batch mean cross-entropy of one-hot targets, smoothed to
    y * (1 - label_smoothing) + label_smoothing / classes."""
    if label_smoothing:
        y_true, y_pred = _pair(y_true, y_pred)
        y_true = _smooth(y_true, label_smoothing, float(y_pred.shape[-1]))
    return ops.categorical_crossentropy(y_true, y_pred, from_logits, axis)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any,
                                    from_logits: bool = False,
                                    ignore_class: Optional[int] = None,
                                    axis: int = -1) -> ops.Tensor:
    """The batch mean cross-entropy of integer class ids (ignore_class:
    None only)."""
    if ignore_class is not None:
        raise ValueError(f"ignore_class: only None is supported, got "
                         f"{ignore_class!r}")
    return ops.sparse_categorical_crossentropy(y_true, y_pred, from_logits,
                                               axis)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
logcosh = log_cosh
kld = KLD = kl_divergence
bce = BCE = binary_crossentropy


def _number(fn: str, arg: str, v: Any, lo: Optional[float],
            hi: Optional[float] = None, strict: bool = False) -> float:
    """v as a float in Keras's range for arg (ValueError naming both)."""
    bad = isinstance(v, bool) or not isinstance(v, (int, float)) or \
        not math.isfinite(v) or (lo is not None and (
            v <= lo if strict else v < lo)) or (hi is not None and v > hi)
    if bad:
        rng = "" if lo is None else f" {'>' if strict else '>='} {lo}"
        rng += "" if hi is None else f" and <= {hi}"
        raise ValueError(f"{fn}: {arg}: expected a number{rng}, got {v!r}")
    return float(v)


def _last_axis(fn: str, axis: Any) -> int:
    if axis != -1:
        raise ValueError(f"{fn}: axis: only the last axis (-1) is "
                         f"supported, got {axis!r}")
    return -1


class Loss:
    """A loss: subclass it with ``call(y_true, y_pred)`` out of pasco.ops
    (traced, see the module's docstring). ``name`` defaults to the class's
    name in snake case; reduction is Keras's "sum_over_batch_size" (the
    only one taken)."""

    def __init__(self, name: Optional[str] = None,
                 reduction: str = "sum_over_batch_size",
                 dtype: Optional[str] = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"name: expected a non-empty string, got "
                             f"{name!r}")
        if reduction != "sum_over_batch_size":
            raise ValueError(f"reduction: only 'sum_over_batch_size' is "
                             f"supported, got {reduction!r}")
        if dtype not in (None, "float32"):
            raise ValueError(f"dtype: only None or 'float32', got {dtype!r}")
        self.name = name or re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(
            r"(.)([A-Z][a-z]+)", r"\1_\2", type(self).__name__)).lower()
        self.reduction = reduction
        self.dtype = dtype

    def call(self, y_true: Any, y_pred: Any) -> ops.Tensor:
        raise NotImplementedError(f"{type(self).__name__}: a Loss subclass "
                                  f"defines call(y_true, y_pred) out of "
                                  f"pasco.ops")

    def __call__(self, y_true: Any, y_pred: Any) -> ops.Tensor:
        return self.call(y_true, y_pred)

    def get_config(self) -> Dict[str, Any]:
        return {"name": self.name, "reduction": self.reduction,
                "dtype": self.dtype}


class _Builtin(Loss):
    """A built-in loss: compile runs it as the library's loss of its
    class (its config, model/losses.c); traced code records its ops and
    reduces them to the batch's mean."""

    _fn: Callable[..., Any] = staticmethod(mean_squared_error)
    _args: Tuple[str, ...] = ()

    def __init__(self, name: str, reduction: str, dtype: Optional[str],
                 **args: Any) -> None:
        super().__init__(name, reduction, dtype)
        for k, v in args.items():
            setattr(self, k, v)
        probe = {k: getattr(self, k) for k in self._args}
        if "axis" in probe and type(self) is not CosineSimilarity:
            _last_axis(type(self).__name__, probe["axis"])
        for k in ("delta", "alpha", "gamma", "label_smoothing"):
            if k in probe:
                _number(type(self).__name__, k, probe[k],
                        {"delta": 0.0, "alpha": None, "gamma": 0.0,
                         "label_smoothing": 0.0}[k],
                        1.0 if k == "label_smoothing" else None,
                        strict=k == "delta")
        self.from_logits = bool(getattr(self, "from_logits", False))

    def call(self, y_true: Any, y_pred: Any) -> ops.Tensor:
        out = type(self)._fn(y_true, y_pred,
                             **{k: getattr(self, k) for k in self._args})
        return ops.mean(out) if out.ndim > 0 else out

    def get_config(self) -> Dict[str, Any]:
        c = super().get_config()
        c.update({k: getattr(self, k) for k in self._args})
        return c


class MeanSquaredError(_Builtin):
    """mean_squared_error as an object."""

    _fn = staticmethod(mean_squared_error)

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "mean_squared_error",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype)


class MeanAbsoluteError(_Builtin):
    """mean_absolute_error as an object."""

    _fn = staticmethod(mean_absolute_error)

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "mean_absolute_error",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype)


class MeanAbsolutePercentageError(_Builtin):
    """mean_absolute_percentage_error as an object."""

    _fn = staticmethod(mean_absolute_percentage_error)

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "mean_absolute_percentage_error",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype)


class Huber(_Builtin):
    """huber(delta) as an object."""

    _fn = staticmethod(huber)
    _args = ("delta",)

    def __init__(self, delta: float = 1.0,
                 reduction: str = "sum_over_batch_size",
                 name: str = "huber_loss", dtype: Optional[str] = None
                 ) -> None:
        super().__init__(name, reduction, dtype, delta=delta)


class LogCosh(_Builtin):
    """log_cosh as an object."""

    _fn = staticmethod(log_cosh)

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "log_cosh", dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype)


class Hinge(_Builtin):
    """hinge as an object."""

    _fn = staticmethod(hinge)

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "hinge", dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype)


class SquaredHinge(_Builtin):
    """squared_hinge as an object."""

    _fn = staticmethod(squared_hinge)

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "squared_hinge",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype)


class KLDivergence(_Builtin):
    """kl_divergence as an object."""

    _fn = staticmethod(kl_divergence)

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "kl_divergence",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype)


class Poisson(_Builtin):
    """poisson as an object."""

    _fn = staticmethod(poisson)

    def __init__(self, reduction: str = "sum_over_batch_size",
                 name: str = "poisson", dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype)


class CosineSimilarity(_Builtin):
    """cosine_similarity(axis) as an object (axis -1 only)."""

    _fn = staticmethod(cosine_similarity)
    _args = ("axis",)

    def __init__(self, axis: int = -1,
                 reduction: str = "sum_over_batch_size",
                 name: str = "cosine_similarity",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype, axis=axis)
        if axis != -1:
            _last_axis("CosineSimilarity", axis)


class BinaryCrossentropy(_Builtin):
    """binary_crossentropy(from_logits, label_smoothing) as an object."""

    _fn = staticmethod(binary_crossentropy)
    _args = ("from_logits", "label_smoothing", "axis")

    def __init__(self, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = "sum_over_batch_size",
                 name: str = "binary_crossentropy",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype,
                         from_logits=bool(from_logits),
                         label_smoothing=label_smoothing, axis=axis)


class BinaryFocalCrossentropy(_Builtin):
    """binary_focal_crossentropy as an object."""

    _fn = staticmethod(binary_focal_crossentropy)
    _args = ("apply_class_balancing", "alpha", "gamma", "from_logits",
             "label_smoothing", "axis")

    def __init__(self, apply_class_balancing: bool = False,
                 alpha: float = 0.25, gamma: float = 2.0,
                 from_logits: bool = False, label_smoothing: float = 0.0,
                 axis: int = -1, reduction: str = "sum_over_batch_size",
                 name: str = "binary_focal_crossentropy",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype,
                         apply_class_balancing=bool(apply_class_balancing),
                         alpha=alpha, gamma=gamma,
                         from_logits=bool(from_logits),
                         label_smoothing=label_smoothing, axis=axis)


class CategoricalCrossentropy(_Builtin):
    """categorical_crossentropy(from_logits, label_smoothing) as an
    object."""

    _fn = staticmethod(categorical_crossentropy)
    _args = ("from_logits", "label_smoothing", "axis")

    def __init__(self, from_logits: bool = False,
                 label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = "sum_over_batch_size",
                 name: str = "categorical_crossentropy",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, reduction, dtype,
                         from_logits=bool(from_logits),
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(_Builtin):
    """sparse_categorical_crossentropy(from_logits) as an object
    (ignore_class None only)."""

    _fn = staticmethod(sparse_categorical_crossentropy)
    _args = ("from_logits", "ignore_class", "axis")

    def __init__(self, from_logits: bool = False,
                 ignore_class: Optional[int] = None,
                 reduction: str = "sum_over_batch_size", axis: int = -1,
                 name: str = "sparse_categorical_crossentropy",
                 dtype: Optional[str] = None) -> None:
        if ignore_class is not None:
            raise ValueError(f"ignore_class: only None is supported, got "
                             f"{ignore_class!r}")
        super().__init__(name, reduction, dtype,
                         from_logits=bool(from_logits),
                         ignore_class=None, axis=axis)


# The names compile takes (model/losses.c's), each the function it runs.
_NAMED = {"mse": mean_squared_error, "mean_squared_error": mean_squared_error,
          "mae": mean_absolute_error,
          "mean_absolute_error": mean_absolute_error,
          "mape": mean_absolute_percentage_error,
          "mean_absolute_percentage_error": mean_absolute_percentage_error,
          "huber": huber, "log_cosh": log_cosh, "logcosh": log_cosh,
          "hinge": hinge, "squared_hinge": squared_hinge,
          "kl_divergence": kl_divergence, "kld": kl_divergence,
          "poisson": poisson, "cosine_similarity": cosine_similarity,
          "binary_crossentropy": binary_crossentropy,
          "bce": binary_crossentropy,
          "binary_focal_crossentropy": binary_focal_crossentropy,
          "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
          "categorical_crossentropy": categorical_crossentropy}
NAMES = tuple(_NAMED)
_CLASSES = {c.__name__: c for c in (
    MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError, Huber,
    LogCosh, Hinge, SquaredHinge, KLDivergence, Poisson, CosineSimilarity,
    BinaryCrossentropy, BinaryFocalCrossentropy, CategoricalCrossentropy,
    SparseCategoricalCrossentropy)}
_BY_FUNCTION = {id(f): n for n, f in _NAMED.items()}


def get(identifier: Any) -> Any:
    """Keras's losses.get: a name (a function), a config dict
    {"class_name", "config"} (an object), or a loss as it is."""
    if isinstance(identifier, str):
        if identifier in _NAMED:
            return _NAMED[identifier]
        if identifier in _CLASSES:
            return _CLASSES[identifier]()
        raise ValueError(f"loss: unknown name {identifier!r} (one of "
                         f"{', '.join(NAMES)})")
    if isinstance(identifier, dict) and \
            identifier.get("class_name") in _CLASSES:
        c = dict(identifier.get("config") or {})
        return _CLASSES[identifier["class_name"]](**c)
    if callable(identifier):
        return identifier
    raise ValueError(f"loss: expected a name, a config dict or a loss, got "
                     f"{identifier!r}")


LossLike = Union[str, Loss, Callable[[Any, Any], Any]]


def builtin(loss: Any) -> Optional[Tuple[Union[str, dict], bool]]:
    """What compile gives the library for a built-in loss function or
    object: (its name, or its class's config {"class_name", "config"}
    for an object, from_logits); None for your own."""
    if id(loss) in _BY_FUNCTION:
        return _BY_FUNCTION[id(loss)], False
    if isinstance(loss, _Builtin) and type(loss).call is _Builtin.call:
        args = {k: getattr(loss, k) for k in loss._args}
        args.pop("from_logits", None)
        if all(v == _DEFAULTS[k] for k, v in args.items()):
            return type(loss)._fn.__name__, loss.from_logits  # its name
        return ({"class_name": type(loss).__name__,
                 "config": loss.get_config()}, loss.from_logits)
    return None


# Keras's defaults of the classes' arguments
_DEFAULTS = {"delta": 1.0, "axis": -1, "label_smoothing": 0.0,
             "apply_class_balancing": False, "alpha": 0.25, "gamma": 2.0,
             "ignore_class": None}


def loss_name(loss: Any) -> str:
    """The name a traced loss goes by: a Loss's name, a function's."""
    if isinstance(loss, Loss):
        return loss.name
    return getattr(loss, "__name__", type(loss).__name__)


def trace(loss: Any, y_true: Tuple[str, tuple], y_pred: Tuple[str, tuple]
          ) -> dict:
    """The compile config's loss for your own loss (a function or a Loss):
    {"class_name": "Graph", "config": {"name", "graph"}}, traced with
    y_true and y_pred of these (dtype, shape)."""
    name = loss_name(loss)
    g = ops.Graph(f"loss {name!r}")
    with ops.trace(g):
        t = g.input(y_true[1], y_true[0])
        p = g.input(y_pred[1], y_pred[0])
        if t.ndim == p.ndim - 1 and p.shape[-1] == 1:
            t = ops.expand_dims(t, -1)  # Keras's squeeze_or_expand
        elif p.ndim == t.ndim - 1 and t.shape[-1] == 1:
            t = ops.squeeze(t, -1)
        out = loss(t, p)
        if not isinstance(out, ops.Tensor) or isinstance(out, ops.Weight):
            raise TypeError(f"{g.name}: returned {type(out).__name__}; a "
                            f"loss returns a pasco.ops tensor")
        if out.dtype not in ops.FLOATS:
            raise ValueError(f"{g.name}: returned a tensor of {out.dtype}; "
                             f"a loss is a float")
        if out.ndim > 1:  # each example's mean: the same overall mean,
            out = ops.mean(out, axis=list(range(1, out.ndim)))  # weighable
    return {"class_name": "Graph",
            "config": {"name": name, "graph": g.to_json([out])}}
