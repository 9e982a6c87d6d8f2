"""compile's metrics, weighted_metrics and loss_weights as the compile
config carries them (model.compile, python/pasco/models.py;
model/compile.c reads them): names, and metric objects as Keras
serializes them (pasco.metrics); the loss's weight as a number."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

# model/compile.c's metric names (its metric_names and "accuracy"/"acc")
METRICS = ("accuracy", "acc", "binary_accuracy",
           "sparse_categorical_accuracy", "categorical_accuracy", "auc",
           "precision", "recall", "mae", "mean_absolute_error", "mse",
           "mean_squared_error", "top_k_categorical_accuracy",
           "sparse_top_k_categorical_accuracy")


def compile_metrics(metrics: Optional[Sequence[Any]],
                    arg: str = "metrics", taken: int = 0) -> list:
    """compile's metrics as its config carries them: names, and metric
    objects as Keras serializes them (pasco.metrics); taken: how many
    metrics came before (at most 8 in all)."""
    from . import metrics as _metrics
    metrics = list(metrics or [])
    if len(metrics) + taken > 8:
        raise ValueError(f"{arg}: at most 8 (with metrics), got "
                         f"{len(metrics) + taken}")
    out: list = []
    for m in metrics:
        if isinstance(m, dict):  # serialized, as a saved config has it
            m = _metrics.deserialize(m)
        if isinstance(m, _metrics.Metric):
            out.append(_metrics.compile_entry(m))
        elif isinstance(m, type) and issubclass(m, _metrics.Metric):
            raise TypeError(f"{arg}: got the class {m.__name__}; give an "
                            f"instance ({m.__name__}())")
        elif not isinstance(m, str) or m not in METRICS:
            raise ValueError(f"{arg}: expected names from "
                             f"{', '.join(METRICS)} or pasco.metrics "
                             f"objects, got {m!r}")
        else:
            out.append(m)
    return out


def loss_weights_config(loss_weights: Any, output: Optional[str]) -> Any:
    """compile's loss_weights (Keras 3's: a number, a list with one per
    output, or a dict keyed by the outputs' names) as the compile config
    carries it: None, or the weight of the model's one output (named
    output; None: not known yet, checked by the library when built)."""
    if loss_weights is None:
        return None
    one = loss_weights
    if isinstance(loss_weights, (list, tuple)):
        if len(loss_weights) != 1:
            raise ValueError(f"loss_weights: {len(loss_weights)} weights, "
                             f"but the model has 1 output"
                             f"{f' ({output!r})' if output else ''}: give "
                             f"one number")
        one = loss_weights[0]
    elif isinstance(loss_weights, dict):
        if len(loss_weights) != 1 or (
                output is not None and output not in loss_weights):
            raise ValueError(f"loss_weights: keys {list(loss_weights)}, "
                             f"but the model has 1 output"
                             f"{f' ({output!r})' if output else ''}: key "
                             f"its weight by that output's name")
        one = next(iter(loss_weights.values()))
    if isinstance(one, bool) or not isinstance(one, (int, float)) or \
            not math.isfinite(one):
        raise ValueError(f"loss_weights: expected a finite number (or a "
                         f"list or dict of one), got {loss_weights!r}")
    return float(one)
