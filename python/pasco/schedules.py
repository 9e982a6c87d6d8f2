"""Keras 3's learning-rate schedules, evaluated on the ps from the global
step: ``pasco.optimizers.Adam(learning_rate=
pasco.optimizers.schedules.ExponentialDecay(0.1, 1000, 0.96))``.

Each applied step uses ``schedule(step)`` with ``step`` the global step
before it (Keras's ``optimizer.iterations``: 0 for the first). A schedule
is serialized as Keras does, ``{"class_name": "ExponentialDecay",
"config": {...}}``, in the optimizer's config; the C library
(base/lr_schedule.c, include/pasco/optimizer.h) evaluates it, and
``schedule(step)`` here gives the same values (tests/python/
optimizer_numpy.py checks both against numpy).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Sequence

__all__ = ["LearningRateSchedule", "ExponentialDecay",
           "PiecewiseConstantDecay", "PolynomialDecay", "CosineDecay",
           "InverseTimeDecay"]


def _positive_steps(decay_steps: Any) -> float:
    if isinstance(decay_steps, bool) or not isinstance(
            decay_steps, (int, float)) or not decay_steps > 0:
        raise ValueError("Argument `decay_steps` must be > 0. "
                         f"Received: decay_steps={decay_steps}")
    return decay_steps


def _number(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or \
            not math.isfinite(v):
        raise ValueError(f"{name}: expected a finite number, got {v!r}")
    return v


class LearningRateSchedule:
    """A schedule: ``schedule(step)`` is the learning rate at ``step``."""

    name = ""

    def __call__(self, step: int) -> float:
        raise NotImplementedError

    def get_config(self) -> Dict[str, Any]:
        raise NotImplementedError

    def _serialized(self) -> Dict[str, Any]:
        """As Keras serializes it in an optimizer's config."""
        return {"class_name": type(self).__name__,
                "config": self.get_config()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"pasco.optimizers.schedules.{type(self).__name__}({args})"


class _RateDecay(LearningRateSchedule):
    """What ExponentialDecay and InverseTimeDecay share: their arguments,
    their config and the progress ``step / decay_steps`` (floored when
    ``staircase``)."""

    def _init(self, initial_learning_rate: float, decay_steps: float,
              decay_rate: float, staircase: bool, name: str) -> None:
        self.initial_learning_rate = _number("initial_learning_rate",
                                             initial_learning_rate)
        self.decay_steps = _positive_steps(decay_steps)
        self.decay_rate = _number("decay_rate", decay_rate)
        self.staircase, self.name = bool(staircase), name

    def _progress(self, step: int) -> float:
        p = step / self.decay_steps
        return math.floor(p) if self.staircase else p

    def get_config(self) -> Dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase,
                "name": self.name}


class ExponentialDecay(_RateDecay):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``
    (the exponent floored when ``staircase``)."""

    def __init__(self, initial_learning_rate: float, decay_steps: float,
                 decay_rate: float, staircase: bool = False,
                 name: str = "ExponentialDecay") -> None:
        self._init(initial_learning_rate, decay_steps, decay_rate,
                   staircase, name)

    def __call__(self, step: int) -> float:
        return self.initial_learning_rate * \
            self.decay_rate ** self._progress(step)


class InverseTimeDecay(_RateDecay):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)``
    (the ratio floored when ``staircase``)."""

    def __init__(self, initial_learning_rate: float, decay_steps: float,
                 decay_rate: float, staircase: bool = False,
                 name: str = "InverseTimeDecay") -> None:
        self._init(initial_learning_rate, decay_steps, decay_rate,
                   staircase, name)

    def __call__(self, step: int) -> float:
        return self.initial_learning_rate / \
            (1 + self.decay_rate * self._progress(step))


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` over
    ``decay_steps`` as ``(1 - step / decay_steps) ** power``; ``cycle``
    restarts it at each multiple of ``decay_steps``."""

    def __init__(self, initial_learning_rate: float, decay_steps: float,
                 end_learning_rate: float = 0.0001, power: float = 1.0,
                 cycle: bool = False, name: str = "PolynomialDecay") -> None:
        self.initial_learning_rate = _number("initial_learning_rate",
                                             initial_learning_rate)
        self.decay_steps = _positive_steps(decay_steps)
        self.end_learning_rate = _number("end_learning_rate",
                                         end_learning_rate)
        self.power = _number("power", power)
        self.cycle, self.name = bool(cycle), name

    def __call__(self, step: int) -> float:
        d = self.decay_steps
        if self.cycle:
            d *= 1.0 if step == 0 else math.ceil(step / self.decay_steps)
        else:
            step = min(step, d)
        return (self.initial_learning_rate - self.end_learning_rate) * \
            (1 - step / d) ** self.power + self.end_learning_rate

    def get_config(self) -> Dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Cosine decay to ``alpha`` times the start over ``decay_steps``,
    after an optional linear warmup from ``initial_learning_rate`` to
    ``warmup_target`` over ``warmup_steps``."""

    def __init__(self, initial_learning_rate: float, decay_steps: float,
                 alpha: float = 0.0, name: str = "CosineDecay",
                 warmup_target: Optional[float] = None,
                 warmup_steps: float = 0) -> None:
        self.initial_learning_rate = _number("initial_learning_rate",
                                             initial_learning_rate)
        self.decay_steps = _positive_steps(decay_steps)
        self.alpha = _number("alpha", alpha)
        self.warmup_target = None if warmup_target is None else \
            _number("warmup_target", warmup_target)
        self.warmup_steps = _number("warmup_steps", warmup_steps)
        if self.warmup_target is not None and not self.warmup_steps > 0:
            raise ValueError("CosineDecay with a warmup_target needs "
                             f"warmup_steps > 0, got {warmup_steps!r}")
        self.name = name

    def _decay(self, step: float, start: float) -> float:
        c = 0.5 * (1.0 + math.cos(math.pi * (step / self.decay_steps)))
        return start * ((1 - self.alpha) * c + self.alpha)

    def __call__(self, step: int) -> float:
        lr0 = self.initial_learning_rate
        if self.warmup_target is None:
            return self._decay(min(step, self.decay_steps), lr0)
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            return (self.warmup_target - lr0) * (step / self.warmup_steps) \
                + lr0
        return self._decay(step - self.warmup_steps, self.warmup_target)

    def get_config(self) -> Dict[str, Any]:
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha,
                "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` while ``step <= boundaries[0]``, ``values[i]`` while
    ``step <= boundaries[i]``, then ``values[-1]`` (at most 32
    boundaries)."""

    def __init__(self, boundaries: Sequence[float], values: Sequence[float],
                 name: str = "PiecewiseConstant") -> None:
        if len(boundaries) != len(values) - 1:
            raise ValueError(
                "The length of boundaries should be 1 less than the length "
                f"of values. Received: boundaries={boundaries} of length "
                f"{len(boundaries)}, and values={values} of length "
                f"{len(values)}.")
        if not 1 <= len(boundaries) <= 32:
            raise ValueError(f"boundaries: expected 1 to 32, got "
                             f"{len(boundaries)}")
        self.boundaries = [_number("boundaries", b) for b in boundaries]
        self.values = [_number("values", v) for v in values]
        self.name = name

    def __call__(self, step: int) -> float:
        b, v = self.boundaries, self.values
        out = (step <= b[0]) * v[0] + (step > b[-1]) * v[-1]
        for i in range(1, len(b)):
            out += (b[i - 1] < step <= b[i]) * v[i]
        return out

    def get_config(self) -> Dict[str, Any]:
        return {"boundaries": list(self.boundaries),
                "values": list(self.values), "name": self.name}
