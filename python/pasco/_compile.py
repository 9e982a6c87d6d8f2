"""compile's metrics and weighted_metrics as the compile config carries
them (model.compile, python/pasco/models.py; model/compile.c reads them):
names, and metric objects as Keras serializes them (pasco.metrics)."""

from __future__ import annotations

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
