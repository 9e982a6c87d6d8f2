"""Keras's optimizers by name and hyperparameters, applied on the ps.

``model.compile(optimizer=pasco.optimizers.Adam(0.01))``, or a name:
"sgd", "adagrad", "rmsprop", "adam", "ftrl", "adamw", "nadam" (Keras's
defaults).
Each class's fields and defaults are the C library's optimizer table's
(base/optimizers/): tests/python/optimizer_table.py checks them.

``learning_rate`` may be a schedule of ``pasco.optimizers.schedules``
(ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, CosineDecay,
InverseTimeDecay), evaluated on the ps at each step's global step.
``clipnorm``, ``clipvalue`` and ``global_clipnorm`` (at most one) clip the
gradients on the worker before they are pushed: each variable's whole
gradient, or all of a step's gradients together for global_clipnorm (a
sparse gradient's rows summed by id first).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Optional, Tuple, Union

try:  # pasco.optimizers.schedules, as Keras's keras.optimizers.schedules
    from . import schedules  # noqa: F401
except ImportError:  # loaded alone, by tests/python/optimizer_table.py
    schedules = None

__all__ = ["Optimizer", "SGD", "Adagrad", "RMSprop", "Adam", "Ftrl", "AdamW",
           "Nadam", "get"]


class Optimizer:
    """An optimizer's Keras class name and hyperparameters (its config)."""

    class_name = ""

    def __init__(self, learning_rate: float,
                 clips: Tuple[Optional[float], ...] = (None, None, None),
                 **config: Any) -> None:
        """clips: (clipnorm, clipvalue, global_clipnorm), Keras's."""
        if hasattr(learning_rate, "_serialized"):  # a schedule
            self._learning_rate = learning_rate
            self.config: Dict[str, Any] = {
                "learning_rate": learning_rate._serialized()}
        else:
            self.config = {}
            self.learning_rate = learning_rate
        for k, v in config.items():
            if isinstance(v, bool):
                self.config[k] = v
            elif isinstance(v, (int, float)):
                self.config[k] = float(v)
            else:
                raise TypeError(f"{k}: expected a number, got {v!r}")
        clipnorm, clipvalue, global_clipnorm = clips
        clips = {"clipnorm": clipnorm, "clipvalue": clipvalue,
                 "global_clipnorm": global_clipnorm}
        for k, v in clips.items():
            if v is not None and (isinstance(v, bool) or not isinstance(
                    v, (int, float)) or not 0 <= v < float("inf")):
                raise ValueError(f"{k}: expected None or a finite number "
                                 f">= 0, got {v!r}")
        if sum(v is not None for v in clips.values()) > 1:
            raise ValueError(
                "Only one of `clipnorm`, `clipvalue` and `global_clipnorm` "
                f"can be set. Received: clipnorm={clipnorm}, "
                f"clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        for k, v in clips.items():
            self.config[k] = None if v is None else float(v)

    @property
    def learning_rate(self) -> Any:
        """The learning rate: a number, or the schedule it was made
        with."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value: float) -> None:
        """Keras's ``optimizer.learning_rate = value``: the config's rate
        (the library's pasco_model_set_learning_rate sets a compiled
        model's). TypeError for an optimizer made with a schedule, as
        Keras."""
        if hasattr(getattr(self, "_learning_rate", None), "_serialized"):
            raise TypeError(
                "This optimizer was created with a `LearningRateSchedule` "
                "object as its `learning_rate` constructor argument, hence "
                "its learning rate is not settable.")
        if isinstance(value, bool) or not isinstance(
                value, (int, float)) or not 0 < value < float("inf"):
            raise ValueError(f"learning_rate: expected a number > 0 or a "
                             f"pasco.optimizers.schedules schedule, got "
                             f"{value!r}")
        self._learning_rate = float(value)
        self.config["learning_rate"] = self._learning_rate

    def get_config(self) -> dict:
        return {"class_name": self.class_name, "config": dict(self.config)}

    def apply_gradients(self, grads_and_vars: Iterable[Tuple[Any, Any]]
                        ) -> None:
        """Keras's apply_gradients, inside a ``@pasco.function`` step:
        records one apply of this optimizer to the (gradient, variable)
        pairs (``zip(tape.gradient(loss, vars), vars)``), which the worker
        runs after the step's graph through the strategy's global step
        (Keras's ``optimizer.iterations``). A None gradient is skipped, as
        Keras skips it; none at all, a gradient whose shape is not its
        variable's, or a call outside a traced step is ValueError."""
        from .function import _record_apply
        _record_apply(self, grads_and_vars)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config.items())
        return f"pasco.optimizers.{self.class_name}({args})"


class SGD(Optimizer):
    """Gradient descent with momentum (and Nesterov's)."""
    class_name = "SGD"

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.0,
                 nesterov: bool = False, clipnorm: Optional[float] = None,
                 clipvalue: Optional[float] = None,
                 global_clipnorm: Optional[float] = None) -> None:
        super().__init__(learning_rate,
                         (clipnorm, clipvalue, global_clipnorm),
                         momentum=momentum, nesterov=nesterov)


class Adagrad(Optimizer):
    class_name = "Adagrad"

    def __init__(self, learning_rate: float = 0.001,
                 initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, clipnorm: Optional[float] = None,
                 clipvalue: Optional[float] = None,
                 global_clipnorm: Optional[float] = None) -> None:
        super().__init__(learning_rate,
                         (clipnorm, clipvalue, global_clipnorm),
                         initial_accumulator_value=initial_accumulator_value,
                         epsilon=epsilon)


class RMSprop(Optimizer):
    class_name = "RMSprop"

    def __init__(self, learning_rate: float = 0.001, rho: float = 0.9,
                 momentum: float = 0.0, epsilon: float = 1e-7,
                 centered: bool = False, clipnorm: Optional[float] = None,
                 clipvalue: Optional[float] = None,
                 global_clipnorm: Optional[float] = None) -> None:
        super().__init__(learning_rate,
                         (clipnorm, clipvalue, global_clipnorm),
                         rho=rho, momentum=momentum, epsilon=epsilon,
                         centered=centered)


class Adam(Optimizer):
    class_name = "Adam"

    def __init__(self, learning_rate: float = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, clipnorm: Optional[float] = None,
                 clipvalue: Optional[float] = None,
                 global_clipnorm: Optional[float] = None) -> None:
        super().__init__(learning_rate,
                         (clipnorm, clipvalue, global_clipnorm),
                         beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         amsgrad=amsgrad)


class Ftrl(Optimizer):
    """FTRL-Proximal; l2_shrinkage_regularization_strength and beta as
    Keras's (keyword arguments there too, after its name)."""
    class_name = "Ftrl"

    def __init__(self, learning_rate: float = 0.001,
                 learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0,
                 l2_shrinkage_regularization_strength: float = 0.0,
                 beta: float = 0.0, clipnorm: Optional[float] = None,
                 clipvalue: Optional[float] = None,
                 global_clipnorm: Optional[float] = None) -> None:
        super().__init__(
            learning_rate, (clipnorm, clipvalue, global_clipnorm),
            learning_rate_power=learning_rate_power,
            initial_accumulator_value=initial_accumulator_value,
            l1_regularization_strength=l1_regularization_strength,
            l2_regularization_strength=l2_regularization_strength,
            l2_shrinkage_regularization_strength=(
                l2_shrinkage_regularization_strength),
            beta=beta)


class AdamW(Optimizer):
    """Keras 3's AdamW: Adam with decoupled weight decay, each step
    ``w -= w * weight_decay * learning_rate`` before Adam's update, on the
    whole variable, also when its gradient is sparse (an Embedding's rows
    the batch does not look up decay too; docs/optimizers.md)."""
    class_name = "AdamW"

    def __init__(self, learning_rate: float = 0.001,
                 weight_decay: float = 0.004, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, clipnorm: Optional[float] = None,
                 clipvalue: Optional[float] = None,
                 global_clipnorm: Optional[float] = None) -> None:
        super().__init__(learning_rate,
                         (clipnorm, clipvalue, global_clipnorm),
                         weight_decay=weight_decay, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, amsgrad=amsgrad)


class Nadam(Optimizer):
    """Keras 3's Nadam: Adam with Nesterov momentum and its momentum
    schedule ``u_t = beta_1 * (1 - 0.5 * 0.96**t)``."""
    class_name = "Nadam"

    def __init__(self, learning_rate: float = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7,
                 clipnorm: Optional[float] = None,
                 clipvalue: Optional[float] = None,
                 global_clipnorm: Optional[float] = None) -> None:
        super().__init__(learning_rate,
                         (clipnorm, clipvalue, global_clipnorm),
                         beta_1=beta_1, beta_2=beta_2, epsilon=epsilon)


# by Keras's lower-case names ("rmsprop"): every class of __all__
_BY_NAME = {c.class_name.lower(): c for c in map(globals().get, __all__)
            if isinstance(c, type) and issubclass(c, Optimizer)
            and c is not Optimizer}


def get(identifier: Union[str, Optimizer]) -> Optimizer:
    """An optimizer from a name ("adam") or itself."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"optimizer: expected one of {', '.join(_BY_NAME)} or a "
                     f"pasco.optimizers.Optimizer, got {identifier!r}")
