"""Keras's weight regularizers, for ``Layer.add_weight(regularizer=...)``:
the penalty of a weight w added to the training loss, as Keras adds
``layer.losses``. ``L1(l1)``: l1 * sum(|w|); ``L2(l2)``: l2 * sum(w ** 2);
``L1L2(l1, l2)``: both. Each is its config
``{"class_name": "L2", "config": {"l2": 0.01}}`` (docs/GRAPHS.md), which
add_weight also takes as a dict."""

from __future__ import annotations

from typing import Dict

__all__ = ["Regularizer", "L1", "L2", "L1L2"]


def _factor(arg: str, v: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
        raise ValueError(f"{arg}: expected a factor >= 0, got {v!r}")
    return float(v)


class Regularizer:
    """A regularizer: its Keras class name and factors."""

    class_name = ""

    def __init__(self, **factors: float) -> None:
        self.factors = {k: _factor(k, v) for k, v in factors.items()}

    def get_config(self) -> Dict[str, float]:
        return dict(self.factors)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.factors.items())
        return f"pasco.regularizers.{self.class_name}({args})"


class L1(Regularizer):
    """l1 * sum(|w|)."""

    class_name = "L1"

    def __init__(self, l1: float = 0.01) -> None:
        super().__init__(l1=l1)


class L2(Regularizer):
    """l2 * sum(w ** 2)."""

    class_name = "L2"

    def __init__(self, l2: float = 0.01) -> None:
        super().__init__(l2=l2)


class L1L2(Regularizer):
    """l1 * sum(|w|) + l2 * sum(w ** 2)."""

    class_name = "L1L2"

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        super().__init__(l1=l1, l2=l2)
