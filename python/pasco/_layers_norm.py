"""Keras 3's BatchNormalization and LayerNormalization (issue 33), as
data: each mirrors its row of the C layer table
(model/layers/batch_norm.c, layer_norm.c) and is re-exported by
pasco.layers. Both take inputs of any rank: BatchNormalization one axis,
LayerNormalization an axis or a list of them."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple, Union

from .layers import Layer, _constraint, _initializer, _regularizer

__all__ = ["BatchNormalization", "LayerNormalization"]


def _number(arg: str, v: Any, lo: float, hi: float = math.inf) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or \
            not lo <= v <= hi:
        raise ValueError(f"{arg}: expected a number in [{lo}, {hi}], got "
                         f"{v!r}")
    return float(v)


def _ln_axis(axis: Any) -> Union[int, List[int]]:
    """LayerNormalization's: an int or a list of 1 to 3 of them, none 0
    (the batch axis); Keras's TypeError for anything else."""
    axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
    if not isinstance(axis, (list, tuple, int)) or isinstance(axis, bool) \
            or any(isinstance(a, bool) or not isinstance(a, int)
                   for a in axes):
        raise TypeError(f"Expected an int or a list/tuple of ints for the "
                        f"argument 'axis', but received: {axis!r}")
    if not 1 <= len(axes) <= 3 or 0 in axes:
        raise ValueError(f"axis: 1 to 3 axes, none 0 (the batch axis), "
                         f"got {axis!r}")
    return axes if isinstance(axis, (list, tuple)) else axis


def _axis(axis: Any) -> int:
    """BatchNormalization's: one integer, not 0 (the batch axis)."""
    one = axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 \
        else axis
    if isinstance(one, bool) or not isinstance(one, int) or one == 0:
        raise ValueError(f"axis: expected one integer, not 0 (the batch "
                         f"axis): -1 (the last) or 1 ... rank - 1, got "
                         f"{axis!r} (Keras 3's BatchNormalization takes "
                         f"one axis)")
    return one


def _factors(reg: Optional[dict]) -> Optional[dict]:
    """A regularizer's dict as the library writes it: None when its
    factors are all 0, else only the factors that are not."""
    if reg is None or not any(reg["config"].values()):
        return None
    return {"class_name": reg["class_name"],
            "config": {k: f for k, f in reg["config"].items() if f}}


class _Norm(Layer):
    """What the two share: epsilon, center, scale, beta and gamma."""

    def _affine(self, epsilon: Any, center: Any, scale: Any,
                beta_initializer: Union[str, dict],
                gamma_initializer: Union[str, dict], beta_regularizer: Any,
                gamma_regularizer: Any, beta_constraint: Any,
                gamma_constraint: Any) -> None:
        self.epsilon = _number("epsilon", epsilon, 0.0)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = _initializer("beta_initializer",
                                             beta_initializer)
        self.gamma_initializer = _initializer("gamma_initializer",
                                              gamma_initializer)
        self.beta_regularizer = _factors(
            _regularizer("beta_regularizer", beta_regularizer))
        self.gamma_regularizer = _factors(
            _regularizer("gamma_regularizer", gamma_regularizer))
        self.beta_constraint = _constraint("beta_constraint",
                                           beta_constraint)
        self.gamma_constraint = _constraint("gamma_constraint",
                                            gamma_constraint)

    def _affine_config(self, axis: int = -1) -> Dict[str, Any]:
        return {"axis": axis, "epsilon": self.epsilon, "center": self.center,
                "scale": self.scale,
                "beta_initializer": self.beta_initializer,
                "gamma_initializer": self.gamma_initializer,
                "beta_regularizer": self.beta_regularizer,
                "gamma_regularizer": self.gamma_regularizer,
                "beta_constraint": self.beta_constraint,
                "gamma_constraint": self.gamma_constraint}


class BatchNormalization(_Norm):
    """BatchNormalization(axis=-1, momentum=0.99, epsilon=0.001,
    center=True, scale=True, beta_initializer="zeros",
    gamma_initializer="ones", moving_mean_initializer="zeros",
    moving_variance_initializer="ones", beta_regularizer=None,
    gamma_regularizer=None, beta_constraint=None, gamma_constraint=None,
    synchronized=False, trainable=True): Keras 3's. axis: the features'
    axis, one integer counted with the batch's (-1 the last; 1 the
    first per example, e.g. channels first on [batch, C, H, W]); the
    statistics are over every other axis. In training (fit's steps)
    each feature is normalized by the
    batch's mean and (biased) variance, then scaled by gamma and shifted
    by beta (trainable, variables <name>/gamma and <name>/beta); each
    step also moves the non-trainable <name>/moving_mean and
    <name>/moving_variance on the ps toward the batch's:
    moving += (batch - moving) * (1 - momentum), added by the worker
    with its gradients against the value it read (as TensorFlow's
    ParameterServerStrategy does: with several workers, two steps that
    read the same value both count). evaluate and predict normalize by
    the moving statistics. Regularizers: pasco.regularizers L1, L2,
    L1L2 (or their dicts), their penalty added to the loss (Keras's
    model.losses); constraints: pasco.constraints, applied by the ps
    after each update. trainable=False freezes the layer as Keras 3
    does: every step runs it in inference mode (the moving statistics,
    never updated) and gamma and beta are neither trained nor
    regularized. synchronized: False only (each worker's batch is its
    own). A masked input (an Embedding(mask_zero=True) sequence [batch,
    steps, dim]) takes Keras's masked moments in training: the mean and
    variance over the unmasked steps only (each sum divided by the
    unmasked count + 1e-7), every step normalized with them, and the
    moving statistics moved toward them (docs/sequences.md)."""

    class_name = "BatchNormalization"

    def __init__(self, axis: int = -1, momentum: float = 0.99,
                 epsilon: float = 0.001, center: bool = True,
                 scale: bool = True,
                 beta_initializer: Union[str, dict] = "zeros",
                 gamma_initializer: Union[str, dict] = "ones",
                 moving_mean_initializer: Union[str, dict] = "zeros",
                 moving_variance_initializer: Union[str, dict] = "ones",
                 beta_regularizer: Any = None, gamma_regularizer: Any = None,
                 beta_constraint: Any = None, gamma_constraint: Any = None,
                 synchronized: bool = False, name: Optional[str] = None,
                 input_shape: Optional[Tuple[int, ...]] = None,
                 trainable: bool = True) -> None:
        self.axis = _axis(axis)
        if synchronized is not False:
            raise ValueError(f"synchronized: only False (each worker "
                             f"normalizes by its own batch), got "
                             f"{synchronized!r}")
        self.momentum = _number("momentum", momentum, 0.0, 1.0)
        self._affine(epsilon, center, scale, beta_initializer,
                     gamma_initializer, beta_regularizer, gamma_regularizer,
                     beta_constraint, gamma_constraint)
        self.moving_mean_initializer = _initializer(
            "moving_mean_initializer", moving_mean_initializer)
        self.moving_variance_initializer = _initializer(
            "moving_variance_initializer", moving_variance_initializer)
        super().__init__(name, input_shape, trainable=trainable)

    def _config(self) -> Dict[str, Any]:
        c = {**self._affine_config(self.axis), "momentum": self.momentum,
             "moving_mean_initializer": self.moving_mean_initializer,
             "moving_variance_initializer": self.moving_variance_initializer,
             "synchronized": False}
        if not self.trainable:
            c["trainable"] = False
        return c

    def _output_shape(self, shapes: List[Tuple[int, ...]]
                      ) -> Tuple[int, ...]:
        rank = len(shapes[0]) + 1
        if not -rank < self.axis < rank:
            raise ValueError(f"{self.name}: axis {self.axis} is out of "
                             f"range for its input {shapes[0]} per "
                             f"example: give -{rank - 1} ... -1 or 1 ... "
                             f"{rank - 1}")
        return shapes[0]


class LayerNormalization(_Norm):
    """LayerNormalization(axis=-1, epsilon=0.001, center=True,
    scale=True, rms_scaling=False, beta_initializer="zeros",
    gamma_initializer="ones", ...): Keras 3's, on inputs of any rank:
    each example normalized by its own mean and (biased) variance over
    axis (an int or a list, counted with the batch axis, negative from
    the last: -1 the features; [1, 2] on [batch, T, D] the whole
    example; 1 its steps), then gamma * x + beta (variables <name>/gamma
    and <name>/beta of the input's dimensions at those axes, sorted as
    Keras sorts them: [T, D] for [1, 2], [T] for 1), broadcast along the
    others. An axis out of range or given twice is refused when the
    model is built. rms_scaling=True: x / sqrt(variance + epsilon) *
    gamma without centering or beta, as Keras computes it. Regularizers
    (pasco.regularizers) and constraints (pasco.constraints) as
    BatchNormalization's."""

    class_name = "LayerNormalization"

    def __init__(self, axis: int = -1, epsilon: float = 0.001,
                 center: bool = True, scale: bool = True,
                 rms_scaling: bool = False,
                 beta_initializer: Union[str, dict] = "zeros",
                 gamma_initializer: Union[str, dict] = "ones",
                 beta_regularizer: Any = None, gamma_regularizer: Any = None,
                 beta_constraint: Any = None, gamma_constraint: Any = None,
                 name: Optional[str] = None,
                 input_shape: Optional[Tuple[int, ...]] = None) -> None:
        self.axis = _ln_axis(axis)
        self._affine(epsilon, center, scale, beta_initializer,
                     gamma_initializer, beta_regularizer, gamma_regularizer,
                     beta_constraint, gamma_constraint)
        self.rms_scaling = bool(rms_scaling)
        super().__init__(name, input_shape)

    def _config(self) -> Dict[str, Any]:
        return {**self._affine_config(), "axis": self.axis,
                "rms_scaling": self.rms_scaling}

    def _output_shape(self, shapes: List[Tuple[int, ...]]
                      ) -> Tuple[int, ...]:
        rank = len(shapes[0]) + 1
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        for a in axes:
            if not -rank < a < rank:
                raise ValueError(f"{self.name}: axis {a} is out of range "
                                 f"for its input {shapes[0]} per example: "
                                 f"give -{rank - 1} ... -1 or 1 ... "
                                 f"{rank - 1}")
        if len({a % rank for a in axes}) != len(axes):
            raise ValueError(f"{self.name}: Duplicate axes are not allowed."
                             f" Received: axis={self.axis}")
        return shapes[0]
