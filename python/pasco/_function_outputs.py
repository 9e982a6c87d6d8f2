"""A traced step's return value (python/pasco/function.py): the tensors
of the structure a @pasco.function returns (a tensor, a tuple or list, a
dict of them, or None) and how to rebuild that structure from their
fetched values."""

from __future__ import annotations

from typing import Any, Callable, List, Tuple

from . import ops

__all__ = ["flatten"]


def flatten(value: Any) -> Tuple[List[Any], Callable[[List[Any]], Any]]:
    """The tensors of a return value and how to rebuild its structure
    from their fetched values."""
    if value is None:
        return [], lambda vals: None
    if isinstance(value, ops.Tensor):
        return [value], lambda vals: vals[0]
    if isinstance(value, (tuple, list)):
        parts = [flatten(v) for v in value]
        kind = type(value)
        return [t for ts, _ in parts for t in ts], lambda vals: kind(
            _rebuild(parts, vals))
    if isinstance(value, dict):
        keys = list(value)
        parts = [flatten(value[k]) for k in keys]
        return [t for ts, _ in parts for t in ts], lambda vals: dict(
            zip(keys, _rebuild(parts, vals)))
    raise TypeError(f"the step returns {type(value).__name__}: expected a "
                    f"symbolic tensor, a tuple, list or dict of them, or "
                    f"None")


def _rebuild(parts: List[Tuple[List[Any], Callable]], vals: List[Any]
             ) -> List[Any]:
    out, k = [], 0
    for ts, build in parts:
        out.append(build(vals[k:k + len(ts)]))
        k += len(ts)
    return out
