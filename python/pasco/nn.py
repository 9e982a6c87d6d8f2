"""pasco.nn: the tf.nn functions of a custom training loop.

``compute_average_loss(per_example_loss, sample_weight=None,
global_batch_size=None)`` is TensorFlow's: the sum of the per-example
losses (times sample_weight, broadcast, when given) divided by the global
batch size. That defaults to the replica's batch (the loss's first
axis, known when the step runs) times the replicas in sync, 1 on a
Pasco worker as in TensorFlow's ParameterServerStrategy without GPUs: so
the mean over the batch of each example's loss (summed over any further
axes). per_example_loss must have a batch axis (rank 1 or more):
``pasco.keras.losses.BinaryCrossentropy(reduction="none")(y, p)`` gives
one. ``scale_regularization_loss(loss)`` is the sum of loss divided by
the replicas in sync (1). Both take symbolic tensors in a
``@pasco.function`` step, and numbers or numpy arrays elsewhere.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from . import ops
from .distribute import NUM_REPLICAS_IN_SYNC

__all__ = ["compute_average_loss", "scale_regularization_loss", "relu",
           "sigmoid", "softmax", "log_softmax", "l2_normalize", "tanh"]


def _rank_checked(what: str, x: Any) -> Any:
    shape = x.shape if isinstance(x, ops.Tensor) else np.shape(x)
    if len(shape) == 0:
        raise ValueError(f"{what}: per_example_loss has shape (): expected "
                         f"one loss per example, [batch] or [batch, ...] "
                         f"(a Loss with reduction=pasco.losses.Reduction."
                         f"NONE gives them; a loss already averaged needs "
                         f"no compute_average_loss)")
    return x


def compute_average_loss(per_example_loss: Any, sample_weight: Any = None,
                         global_batch_size: Optional[Any] = None) -> Any:
    """tf.nn.compute_average_loss: sum(per_example_loss * sample_weight)
    / global_batch_size (default: the batch times 1 replica)."""
    what = "compute_average_loss"
    x = _rank_checked(what, per_example_loss)
    symbolic = isinstance(x, ops.Tensor) or \
        isinstance(sample_weight, ops.Tensor) or \
        isinstance(global_batch_size, ops.Tensor)
    if not symbolic:
        x = np.asarray(x, dtype=np.float64 if np.asarray(x).dtype ==
                       np.float64 else np.float32)
    if sample_weight is not None:
        x = x * (ops.cast(sample_weight, x.dtype)
                 if isinstance(sample_weight, ops.Tensor) else
                 np.asarray(sample_weight, dtype=x.dtype))
    if global_batch_size is None:
        # sum / (batch * replicas): the mean over the batch of each
        # example's sum, the batch being known only when the step runs
        n = x.ndim if symbolic else np.ndim(x)
        rest = tuple(range(1, n))
        if symbolic:
            each = ops.sum(x, axis=rest) if rest else x
            out = ops.mean(each)
        else:
            each = x.sum(axis=rest) if rest else x
            out = each.mean() if each.size else x.dtype.type(0)
        return out / NUM_REPLICAS_IN_SYNC if NUM_REPLICAS_IN_SYNC != 1 \
            else out
    if isinstance(global_batch_size, ops.Tensor):
        if global_batch_size.dtype not in ops.INTS or \
                global_batch_size.ndim != 0:
            raise TypeError(f"{what}: global_batch_size: expected an "
                            f"integer scalar, got a {global_batch_size.dtype}"
                            f" tensor of shape {global_batch_size.shape}")
        return ops.sum(x) / ops.cast(global_batch_size, x.dtype)
    if isinstance(global_batch_size, bool) or not isinstance(
            global_batch_size, (int, np.integer)) or global_batch_size < 1:
        raise TypeError(f"{what}: global_batch_size: expected a positive "
                        f"integer, got {global_batch_size!r}")
    total = ops.sum(x) if symbolic else x.sum()
    return total / float(global_batch_size)


def scale_regularization_loss(regularization_loss: Any) -> Any:
    """tf.nn.scale_regularization_loss: the sum of regularization_loss
    (a tensor, or a list of them as model.losses) divided by the
    replicas in sync (1)."""
    r = regularization_loss
    if isinstance(r, (list, tuple)):
        if not r:
            raise ValueError("scale_regularization_loss: an empty list of "
                             "losses (model.losses is empty: leave the "
                             "term out)")
        from ._tf import add_n
        r = add_n(list(r))
    total = ops.sum(r) if isinstance(r, ops.Tensor) else np.sum(r)
    return total / NUM_REPLICAS_IN_SYNC if NUM_REPLICAS_IN_SYNC != 1 \
        else total


# tf.nn's activations (pasco.ops's)
relu = ops.relu
sigmoid = ops.sigmoid
tanh = ops.tanh
softmax = ops.softmax
log_softmax = ops.log_softmax
l2_normalize = ops.l2_normalize
