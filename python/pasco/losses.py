"""Losses: Keras's built-in ones, and your own written with pasco.ops.

The built-in losses are functions and classes, usable in ``compile``
(where they run as the library's own loss, like their names)::

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
whose mean is the loss (a tensor of more axes is averaged whole, Keras's
"sum_over_batch_size"). Trace-time errors (shapes, control flow on
values) are raised by fit before anything is scheduled.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Optional, Tuple, Union

from . import ops

__all__ = ["Loss", "MeanSquaredError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "mean_squared_error", "mse", "binary_crossentropy",
           "categorical_crossentropy", "sparse_categorical_crossentropy"]


def mean_squared_error(y_true: Any, y_pred: Any) -> ops.Tensor:
    """The mean of (y_true - y_pred) ** 2 (a scalar: the batch's)."""
    return ops.mean_squared_error(y_true, y_pred)


mse = mean_squared_error


def binary_crossentropy(y_true: Any, y_pred: Any,
                        from_logits: bool = False) -> ops.Tensor:
    """The batch mean binary cross-entropy of 0/1 targets."""
    return ops.binary_crossentropy(y_true, y_pred, from_logits)


def categorical_crossentropy(y_true: Any, y_pred: Any,
                             from_logits: bool = False) -> ops.Tensor:
    """The batch mean cross-entropy of one-hot targets."""
    return ops.categorical_crossentropy(y_true, y_pred, from_logits)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any,
                                    from_logits: bool = False) -> ops.Tensor:
    """The batch mean cross-entropy of integer class ids."""
    return ops.sparse_categorical_crossentropy(y_true, y_pred, from_logits)


class Loss:
    """A loss: subclass it with ``call(y_true, y_pred)`` out of pasco.ops
    (traced, see the module's docstring). ``name`` defaults to the class's
    name in snake case."""

    def __init__(self, name: Optional[str] = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"name: expected a non-empty string, got "
                             f"{name!r}")
        self.name = name or re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(
            r"(.)([A-Z][a-z]+)", r"\1_\2", type(self).__name__)).lower()

    def call(self, y_true: Any, y_pred: Any) -> ops.Tensor:
        raise NotImplementedError(f"{type(self).__name__}: a Loss subclass "
                                  f"defines call(y_true, y_pred) out of "
                                  f"pasco.ops")

    def __call__(self, y_true: Any, y_pred: Any) -> ops.Tensor:
        return self.call(y_true, y_pred)


class _Builtin(Loss):
    """A built-in loss: compile runs it as the library's loss of its
    name; traced code records its op."""

    loss_name = ""

    def __init__(self, from_logits: bool = False,
                 name: Optional[str] = None) -> None:
        super().__init__(name)
        self.from_logits = bool(from_logits)

    def call(self, y_true: Any, y_pred: Any) -> ops.Tensor:
        return _FUNCTIONS[self.loss_name](y_true, y_pred, self.from_logits)


class MeanSquaredError(_Builtin):
    """mean_squared_error as an object."""

    loss_name = "mean_squared_error"

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__(False, name)

    def call(self, y_true: Any, y_pred: Any) -> ops.Tensor:
        return mean_squared_error(y_true, y_pred)


class BinaryCrossentropy(_Builtin):
    """binary_crossentropy(from_logits) as an object."""

    loss_name = "binary_crossentropy"


class CategoricalCrossentropy(_Builtin):
    """categorical_crossentropy(from_logits) as an object."""

    loss_name = "categorical_crossentropy"


class SparseCategoricalCrossentropy(_Builtin):
    """sparse_categorical_crossentropy(from_logits) as an object."""

    loss_name = "sparse_categorical_crossentropy"


_FUNCTIONS = {"mean_squared_error": lambda t, p, _: mean_squared_error(t, p),
              "binary_crossentropy": binary_crossentropy,
              "categorical_crossentropy": categorical_crossentropy,
              "sparse_categorical_crossentropy":
                  sparse_categorical_crossentropy}
_BY_FUNCTION = {id(f): n for n, f in (
    ("mean_squared_error", mean_squared_error),
    ("binary_crossentropy", binary_crossentropy),
    ("categorical_crossentropy", categorical_crossentropy),
    ("sparse_categorical_crossentropy", sparse_categorical_crossentropy))}

LossLike = Union[str, Loss, Callable[[Any, Any], Any]]


def builtin(loss: Any) -> Optional[Tuple[str, bool]]:
    """(the library's loss name, from_logits) of a built-in loss function
    or object given to compile; None for your own."""
    if id(loss) in _BY_FUNCTION:
        return _BY_FUNCTION[id(loss)], False
    if isinstance(loss, _Builtin) and \
            type(loss).call in (_Builtin.call, MeanSquaredError.call):
        return loss.loss_name, loss.from_logits
    return None


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
        if out.ndim > 1:
            out = ops.mean(out)  # Keras's sum_over_batch_size
    return {"class_name": "Graph",
            "config": {"name": name, "graph": g.to_json([out])}}
