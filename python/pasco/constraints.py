"""Keras's weight constraints (keras/src/constraints), for Dense's
kernel_constraint and bias_constraint and Embedding's
embeddings_constraint: a projection the ps applies to the variable after
every optimizer update of it, as Keras applies a variable's constraint
after apply_gradients (include/pasco/constraint.h).

``MaxNorm(max_value=2, axis=0)``: w * clip(n, 0, max_value) / (1e-7 + n),
n the L2 norm of w over axis (kept): each column of a Dense kernel [in,
units] held to norm max_value. A MaxNorm over axis 0 needs the whole
variable on one ps (refused on one split in shards); an Embedding's rows
take axis=1. ``NonNeg()``: w * (w >= 0). A layer takes an object, its
name ("max_norm", "non_neg") or its config dict ``{"class_name":
"MaxNorm", "config": {"max_value": 2, "axis": 0}}``."""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

__all__ = ["Constraint", "MaxNorm", "NonNeg", "get", "serialize"]


class Constraint:
    """A constraint: its Keras class name and config."""

    def get_config(self) -> Dict[str, Any]:
        return {}

    def to_dict(self) -> Dict[str, Any]:
        return {"class_name": type(self).__name__,
                "config": self.get_config()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"pasco.constraints.{type(self).__name__}({args})"


class MaxNorm(Constraint):
    """Each slice along axis held to L2 norm max_value."""

    def __init__(self, max_value: float = 2, axis: int = 0) -> None:
        if isinstance(max_value, bool) or \
                not isinstance(max_value, (int, float)) or \
                not math.isfinite(max_value) or max_value <= 0:
            raise ValueError(f"MaxNorm: max_value: expected a number > 0, "
                             f"got {max_value!r}")
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ValueError(f"MaxNorm: axis: expected an integer (one "
                             f"axis), got {axis!r}")
        self.max_value = max_value
        self.axis = axis

    def get_config(self) -> Dict[str, Any]:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Negative weights set to 0."""


_CLASSES = {"MaxNorm": MaxNorm, "NonNeg": NonNeg}
NAMES = {"max_norm": MaxNorm, "non_neg": NonNeg}


def get(identifier: Any) -> Optional[Constraint]:
    """Keras's constraints.get: None, a Constraint, a name or a config
    dict; ValueError naming what was wrong otherwise."""
    if identifier is None or isinstance(identifier, Constraint):
        return identifier
    if isinstance(identifier, str) and \
            (identifier in NAMES or identifier in _CLASSES):
        return (NAMES.get(identifier) or _CLASSES[identifier])()
    if isinstance(identifier, dict) and \
            identifier.get("class_name") in _CLASSES:
        try:
            return _CLASSES[identifier["class_name"]](
                **dict(identifier.get("config") or {}))
        except TypeError as e:
            raise ValueError(f"constraint {identifier!r}: {e}") from None
    raise ValueError(f"constraint: expected None, pasco.constraints.MaxNorm "
                     f"or NonNeg, their name or config dict, got "
                     f"{identifier!r}")


def serialize(constraint: Constraint) -> Dict[str, Any]:
    """Keras's serialize: {"class_name", "config"}."""
    return constraint.to_dict()
