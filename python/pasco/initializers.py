"""Keras 3's initializers (keras/src/initializers), for a layer's
``*_initializer`` argument and ``Layer.add_weight(initializer=...)``: an
object (``pasco.initializers.HeNormal(seed=3)``), its string name
("he_normal") or its config dict ``{"class_name": "HeNormal", "config":
{"seed": 3}}``. They run on the ps when a variable is created
(ps/initializer_fill.c): element by element from (seed, position), so a
variable has the same values however it is sharded. The generator is
Pasco's, not TensorFlow's: the same seed gives the same distributions,
not Keras's numbers. A seed of None takes one from the model's seed.

VarianceScaling(scale, mode, distribution): with n the fan of mode
(fan_in, fan_out or their mean) and s = scale / max(1, n), a truncated
normal of stddev sqrt(s) / 0.87962566103423978 cut at 2 stddev (its
variance is s), a normal of stddev sqrt(s) ("untruncated_normal"), or
U(-sqrt(3 s), sqrt(3 s)). GlorotNormal, GlorotUniform, HeNormal,
HeUniform, LecunNormal and LecunUniform are its named cases. Orthogonal
(gain): gain times the Q of the QR decomposition of a normal matrix
(rows: the product of every dimension but the last), for a weight of
rank 2 or more. Keras's input_axes and output_axes are not taken."""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomUniform",
           "RandomNormal", "TruncatedNormal", "VarianceScaling",
           "GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform",
           "LecunNormal", "LecunUniform", "Orthogonal", "get", "serialize"]


def _seed(seed: Any) -> Optional[int]:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0 or \
            seed >= 2 ** 64:
        raise ValueError(f"seed: expected None or an integer in [0, 2^64), "
                         f"got {seed!r}")
    return seed


def _number(cls: str, arg: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or \
            not math.isfinite(v):
        raise ValueError(f"{cls}: {arg}: expected a number, got {v!r}")
    return float(v)


class Initializer:
    """An initializer: its Keras class name and config."""

    def get_config(self) -> Dict[str, Any]:
        return {}

    def to_dict(self) -> Dict[str, Any]:
        """{"class_name", "config"}, as a layer's config holds it (a seed
        of None left out: the model's seed decides)."""
        c = {k: v for k, v in self.get_config().items()
             if not (k == "seed" and v is None)}
        return {"class_name": type(self).__name__, "config": c}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"pasco.initializers.{type(self).__name__}({args})"


class Zeros(Initializer):
    """0."""


class Ones(Initializer):
    """1."""


class Constant(Initializer):
    """value."""

    def __init__(self, value: float = 0.0) -> None:
        self.value = _number("Constant", "value", value)

    def get_config(self) -> Dict[str, Any]:
        return {"value": self.value}


class _Random(Initializer):
    def __init__(self, seed: Optional[int] = None) -> None:
        self.seed = _seed(seed)

    def get_config(self) -> Dict[str, Any]:
        return {"seed": self.seed}


class RandomUniform(_Random):
    """U(minval, maxval)."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05,
                 seed: Optional[int] = None) -> None:
        super().__init__(seed)
        self.minval = _number("RandomUniform", "minval", minval)
        self.maxval = _number("RandomUniform", "maxval", maxval)

    def get_config(self) -> Dict[str, Any]:
        return {"minval": self.minval, "maxval": self.maxval,
                "seed": self.seed}


class RandomNormal(_Random):
    """N(mean, stddev^2)."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05,
                 seed: Optional[int] = None) -> None:
        super().__init__(seed)
        self.mean = _number("RandomNormal", "mean", mean)
        self.stddev = _number("RandomNormal", "stddev", stddev)
        if self.stddev < 0:
            raise ValueError(f"{type(self).__name__}: stddev: expected a "
                             f"number >= 0, got {stddev!r}")

    def get_config(self) -> Dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    """N(mean, stddev^2) drawn again beyond 2 stddev (Keras's: stddev
    not corrected)."""


class VarianceScaling(_Random):
    """Keras's VarianceScaling: see the module's docstring."""

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale: float = 1.0, mode: str = "fan_in",
                 distribution: str = "truncated_normal",
                 seed: Optional[int] = None) -> None:
        super().__init__(seed)
        self.scale = _number("VarianceScaling", "scale", scale)
        if self.scale <= 0:
            raise ValueError(f"VarianceScaling: scale: expected a number "
                             f"> 0, got {scale!r}")
        if mode not in self._MODES:
            raise ValueError(f"VarianceScaling: mode: expected one of "
                             f"{', '.join(self._MODES)}, got {mode!r}")
        dist = distribution.lower() if isinstance(distribution, str) \
            else distribution
        dist = "truncated_normal" if dist == "normal" else dist
        if dist not in self._DISTS:
            raise ValueError(f"VarianceScaling: distribution: expected one "
                             f"of {', '.join(self._DISTS)}, got "
                             f"{distribution!r}")
        self.mode = mode
        self.distribution = dist

    def get_config(self) -> Dict[str, Any]:
        return {"scale": self.scale, "mode": self.mode,
                "distribution": self.distribution, "seed": self.seed}


class _Named(_Random):
    """A named case of VarianceScaling: its config is its seed."""


class GlorotUniform(_Named):
    """VarianceScaling(1, "fan_avg", "uniform")."""


class GlorotNormal(_Named):
    """VarianceScaling(1, "fan_avg", "truncated_normal")."""


class HeNormal(_Named):
    """VarianceScaling(2, "fan_in", "truncated_normal")."""


class HeUniform(_Named):
    """VarianceScaling(2, "fan_in", "uniform")."""


class LecunNormal(_Named):
    """VarianceScaling(1, "fan_in", "truncated_normal")."""


class LecunUniform(_Named):
    """VarianceScaling(1, "fan_in", "uniform")."""


class Orthogonal(_Random):
    """gain times an orthogonal matrix (rank 2 or more): see the module's
    docstring."""

    def __init__(self, gain: float = 1.0, seed: Optional[int] = None
                 ) -> None:
        super().__init__(seed)
        self.gain = _number("Orthogonal", "gain", gain)

    def get_config(self) -> Dict[str, Any]:
        return {"gain": self.gain, "seed": self.seed}


_CLASSES = {c.__name__: c for c in (
    Zeros, Ones, Constant, RandomUniform, RandomNormal, TruncatedNormal,
    VarianceScaling, GlorotUniform, GlorotNormal, HeNormal, HeUniform,
    LecunNormal, LecunUniform, Orthogonal)}
# Keras's string names (its classes in snake case, and its aliases)
NAMES = {"zeros": Zeros, "zero": Zeros, "ones": Ones, "one": Ones,
         "constant": Constant, "random_uniform": RandomUniform,
         "uniform": RandomUniform, "random_normal": RandomNormal,
         "normal": RandomNormal, "truncated_normal": TruncatedNormal,
         "variance_scaling": VarianceScaling,
         "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
         "he_normal": HeNormal, "he_uniform": HeUniform,
         "lecun_normal": LecunNormal, "lecun_uniform": LecunUniform,
         "orthogonal": Orthogonal}


def get(identifier: Any) -> Optional[Initializer]:
    """Keras's initializers.get: None, an Initializer, a string name
    ("he_normal") or a config dict {"class_name", "config"}; ValueError
    naming what was wrong otherwise."""
    if identifier is None or isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, str):
        cls = NAMES.get(identifier) or _CLASSES.get(identifier)
        if cls is None:
            raise ValueError(f"initializer: unknown name {identifier!r} "
                             f"(one of {', '.join(NAMES)})")
        return cls()
    if isinstance(identifier, dict) and \
            identifier.get("class_name") in _CLASSES:
        try:
            return _CLASSES[identifier["class_name"]](
                **dict(identifier.get("config") or {}))
        except TypeError as e:
            raise ValueError(f"initializer {identifier!r}: {e}") from None
    raise ValueError(f"initializer: expected a name, a "
                     f"pasco.initializers object or a dict {{'class_name', "
                     f"'config'}}, got {identifier!r}")


def serialize(initializer: Initializer) -> Dict[str, Any]:
    """Keras's serialize: {"class_name", "config"}."""
    return {"class_name": type(initializer).__name__,
            "config": initializer.get_config()}
