"""Keras 3's BatchNormalization and LayerNormalization (issue 33), as
data: each mirrors its row of the C layer table
(model/layers/batch_norm.c, layer_norm.c) and is re-exported by
pasco.layers. Inputs are [batch, width]; axis is the last (-1)."""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Tuple, Union

from .layers import Layer, _initializer

__all__ = ["BatchNormalization", "LayerNormalization"]


def _number(arg: str, v: Any, lo: float, hi: float = math.inf) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or \
            not lo <= v <= hi:
        raise ValueError(f"{arg}: expected a number in [{lo}, {hi}], got "
                         f"{v!r}")
    return float(v)


def _last_axis(axis: Any) -> None:
    one = axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 \
        else axis
    if isinstance(one, bool) or one not in (-1, 1):
        raise ValueError(f"axis: only -1 or 1 (the last axis of [batch, "
                         f"width] inputs), got {axis!r}")


def _none(**given: Any) -> None:
    for arg, v in given.items():
        if v is not None:
            raise ValueError(f"{arg}: only None (a regularizer or "
                             f"constraint on gamma and beta is not "
                             f"supported), got {v!r}")


class _Norm(Layer):
    """What the two share: epsilon, center, scale, beta and gamma."""

    def _affine(self, epsilon: Any, center: Any, scale: Any,
                beta_initializer: Union[str, dict],
                gamma_initializer: Union[str, dict]) -> None:
        self.epsilon = _number("epsilon", epsilon, 0.0)
        self.center = bool(center)
        self.scale = bool(scale)
        self.beta_initializer = _initializer("beta_initializer",
                                             beta_initializer)
        self.gamma_initializer = _initializer("gamma_initializer",
                                              gamma_initializer)

    def _affine_config(self) -> Dict[str, Any]:
        return {"axis": -1, "epsilon": self.epsilon, "center": self.center,
                "scale": self.scale,
                "beta_initializer": self.beta_initializer,
                "gamma_initializer": self.gamma_initializer,
                "beta_regularizer": None, "gamma_regularizer": None,
                "beta_constraint": None, "gamma_constraint": None}


class BatchNormalization(_Norm):
    """BatchNormalization(axis=-1, momentum=0.99, epsilon=0.001,
    center=True, scale=True, beta_initializer="zeros",
    gamma_initializer="ones", moving_mean_initializer="zeros",
    moving_variance_initializer="ones", ...): Keras 3's, on [batch,
    width]. In training (fit's steps) each feature is normalized by the
    batch's mean and (biased) variance, then scaled by gamma and shifted
    by beta (trainable, variables <name>/gamma and <name>/beta); each
    step also moves the non-trainable <name>/moving_mean and
    <name>/moving_variance on the ps toward the batch's:
    moving += (batch - moving) * (1 - momentum), added by the worker
    with its gradients against the value it read (as TensorFlow's
    ParameterServerStrategy does: with several workers, two steps that
    read the same value both count). evaluate and predict normalize by
    the moving statistics. Regularizers and constraints: None only;
    synchronized: False only (each worker's batch is its own)."""

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
                 input_shape: Optional[Tuple[int, ...]] = None) -> None:
        _last_axis(axis)
        _none(beta_regularizer=beta_regularizer,
              gamma_regularizer=gamma_regularizer,
              beta_constraint=beta_constraint,
              gamma_constraint=gamma_constraint)
        if synchronized is not False:
            raise ValueError(f"synchronized: only False (each worker "
                             f"normalizes by its own batch), got "
                             f"{synchronized!r}")
        self.momentum = _number("momentum", momentum, 0.0, 1.0)
        self._affine(epsilon, center, scale, beta_initializer,
                     gamma_initializer)
        self.moving_mean_initializer = _initializer(
            "moving_mean_initializer", moving_mean_initializer)
        self.moving_variance_initializer = _initializer(
            "moving_variance_initializer", moving_variance_initializer)
        super().__init__(name, input_shape)

    def _config(self) -> Dict[str, Any]:
        return {**self._affine_config(), "momentum": self.momentum,
                "moving_mean_initializer": self.moving_mean_initializer,
                "moving_variance_initializer":
                    self.moving_variance_initializer,
                "synchronized": False}


class LayerNormalization(_Norm):
    """LayerNormalization(axis=-1, epsilon=0.001, center=True,
    scale=True, rms_scaling=False, beta_initializer="zeros",
    gamma_initializer="ones", ...): Keras 3's, on [batch, width]: each
    example normalized by the mean and (biased) variance of its own
    features, then gamma * x + beta (variables <name>/gamma and
    <name>/beta). rms_scaling=True: x / sqrt(variance + epsilon) * gamma
    without centering or beta, as Keras computes it. Regularizers and
    constraints: None only."""

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
        _last_axis(axis)
        _none(beta_regularizer=beta_regularizer,
              gamma_regularizer=gamma_regularizer,
              beta_constraint=beta_constraint,
              gamma_constraint=gamma_constraint)
        self._affine(epsilon, center, scale, beta_initializer,
                     gamma_initializer)
        self.rms_scaling = bool(rms_scaling)
        super().__init__(name, input_shape)

    def _config(self) -> Dict[str, Any]:
        return {**self._affine_config(), "rms_scaling": self.rms_scaling}
