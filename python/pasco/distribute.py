"""pasco.distribute: tf.distribute's names for a ParameterServerStrategy.

In TensorFlow's ParameterServerStrategy a worker is one replica (its
``num_replicas_in_sync`` is the GPUs per worker, or 1); Pasco's workers
have no GPUs, so a step scheduled on a worker is one replica, always.
What the tutorial's step writes for the general case then reduces to::

    losses = strategy.run(replica_fn, args=(batch_data, labels))
    return strategy.reduce(pasco.distribute.ReduceOp.SUM, losses, axis=None)

``strategy.run(fn, args=(), kwargs=None)`` calls ``fn(*args, **kwargs)``
(inside a ``@pasco.function`` step it is traced like the rest of the
step) and returns its value. ``strategy.reduce(op, value, axis=None)``
reduces over the replicas, of which there is one: with ``axis=None`` it
returns ``value``; with an axis, the sum (ReduceOp.SUM) or mean
(ReduceOp.MEAN) of value along that axis, as TensorFlow's does. value may
be a tensor, a number, a numpy array or a tuple, list or dict of them.
``num_replicas_in_sync`` is 1.

Called on the chief, outside a step being traced for
``coordinator.schedule``, run and reduce still work (fn runs on the
chief) and log TensorFlow's warning word for word (``NOT_SCHEDULED_WARNING``,
logger "pasco": stderr unless logging is configured otherwise), as
TensorFlow's ParameterServerStrategy does.

``pasco.distribute.coordinator.ClusterCoordinator`` (and
``experimental.coordinator``) is :class:`pasco.ClusterCoordinator`,
``pasco.distribute.ParameterServerStrategy`` the strategy,
``pasco.distribute.InputContext`` what
``strategy.distribute_datasets_from_function`` gives its dataset_fn.
"""

from __future__ import annotations

import logging
import types
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import ops
from ._dataset_context import InputContext

__all__ = ["ReduceOp", "run", "reduce", "NUM_REPLICAS_IN_SYNC",
           "ParameterServerStrategy", "get_strategy", "coordinator",
           "experimental", "InputContext"]

# replicas per worker (TensorFlow's PSS: its GPUs, or 1; Pasco's: 1)
NUM_REPLICAS_IN_SYNC = 1

# TensorFlow's warning, word for word, when run or reduce is called on the
# chief rather than in a step being traced for coordinator.schedule
NOT_SCHEDULED_WARNING = (
    "A `tf.distribute.experimental.ParameterServerStrategy` method is "
    "invoked without using `ClusterCoordinator.schedule`. If you are not "
    "tracing a tf.function, this method is possibly executed on the "
    "coordinator, which can be slow. To properly dispatch functions to "
    "run on workers, methods like `run` or `reduce` should be used within "
    "a function passed to `tf.distribute.experimental.coordinator."
    "ClusterCoordinator.schedule`.")


def _warn_if_not_traced() -> None:
    """Logs NOT_SCHEDULED_WARNING (logger "pasco", stderr by default)
    unless a @pasco.function step or a Dataset.map is being traced."""
    from ._dataset_map import mapping
    from .function import _tracing
    if _tracing() is None and not mapping():
        logging.getLogger("pasco").warning(NOT_SCHEDULED_WARNING)


class ReduceOp:
    """tf.distribute.ReduceOp: how strategy.reduce combines the
    replicas' values. ``SUM`` ("SUM") or ``MEAN`` ("MEAN"); the strings,
    in any case, are taken too, as TensorFlow takes them."""

    SUM = "SUM"
    MEAN = "MEAN"


def _reduce_op(what: str, op: Any) -> str:
    if isinstance(op, str) and op.upper() in (ReduceOp.SUM, ReduceOp.MEAN):
        return op.upper()
    raise ValueError(f"{what}: reduce_op must be pasco.distribute.ReduceOp"
                     f".SUM or ReduceOp.MEAN (or 'SUM', 'MEAN'), got "
                     f"{op!r}")


def run(fn: Callable[..., Any], args: Sequence[Any] = (),
        kwargs: Optional[dict] = None, options: Any = None) -> Any:
    """strategy.run: fn(*args, **kwargs) on the one replica of the
    worker running the step; its value."""
    what = "strategy.run"
    if not callable(fn):
        raise TypeError(f"{what}: fn: expected a function, got "
                        f"{type(fn).__name__}")
    if options is not None:
        raise ValueError(f"{what}: options: only None (a worker has one "
                         f"replica), got {options!r}")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"{what}: args: expected a tuple, got "
                        f"{type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise TypeError(f"{what}: kwargs: expected a dict, got "
                        f"{type(kwargs).__name__}")
    _warn_if_not_traced()
    return fn(*args, **(kwargs or {}))


def reduce(reduce_op: Any, value: Any, axis: Optional[int] = None) -> Any:
    """strategy.reduce over one replica: value itself (axis None), or its
    sum or mean along axis; a tuple, list or dict reduced leaf by leaf."""
    op = _reduce_op("strategy.reduce", reduce_op)
    if axis is not None and (not isinstance(axis, int) or
                             isinstance(axis, bool)):
        raise TypeError(f"strategy.reduce: axis: expected None or an int, "
                        f"got {axis!r}")
    _warn_if_not_traced()
    if axis is None:
        return value  # one replica's value, None too (TensorFlow's)
    return _reduce_leaves(op, value, axis)


def _reduce_leaves(op: str, value: Any, axis: Optional[int]) -> Any:
    if isinstance(value, dict):
        return {k: _reduce_leaves(op, v, axis) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_reduce_leaves(op, v, axis) for v in value)
    if value is None:
        raise ValueError("strategy.reduce: value is None (did the replica "
                         "function return nothing?)")
    if axis is None:
        return value
    if isinstance(value, ops.Tensor):
        return ops.sum(value, axis=axis) if op == ReduceOp.SUM else \
            ops.mean(value, axis=axis)
    a = np.asarray(value)
    return a.sum(axis=axis) if op == ReduceOp.SUM else a.mean(axis=axis)


def _coordinator_module() -> types.ModuleType:
    from .coordinator import ClusterCoordinator, RemoteValue
    m = types.ModuleType("pasco.distribute.coordinator",
                         "tf.distribute.coordinator's names")
    m.ClusterCoordinator = ClusterCoordinator  # type: ignore[attr-defined]
    m.RemoteValue = RemoteValue  # type: ignore[attr-defined]
    return m


from .cluster import ParameterServerStrategy, get_strategy  # noqa: E402

coordinator = _coordinator_module()
experimental = types.ModuleType("pasco.distribute.experimental",
                                "tf.distribute.experimental's names")
experimental.coordinator = coordinator  # type: ignore[attr-defined]
experimental.ParameterServerStrategy = \
    ParameterServerStrategy  # type: ignore[attr-defined]
