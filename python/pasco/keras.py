"""pasco.keras: ``tf.keras``'s names, so that ``tf.keras.X`` becomes
``pasco.keras.X`` and nothing else changes.

``pasco.keras.layers``, ``.optimizers``, ``.metrics``, ``.losses``,
``.regularizers``, ``.initializers``, ``.constraints``, ``.callbacks``
are Pasco's modules of the same names; ``pasco.keras.Model``,
``.Sequential``, ``.Input`` and ``.models`` (``load_model``) its models.
``pasco.keras.optimizers.legacy`` holds the same optimizers under TF 2's
legacy names (``legacy.RMSprop`` is ``RMSprop``: one RMSprop).

One class differs from ``pasco.layers``' in a default, to be Keras's:
``pasco.keras.layers.Embedding`` returns Keras's sequence, [batch, ids,
output_dim] (``combiner=None``), where ``pasco.layers.Embedding``
combines the rows by their mean (``combiner="mean"``). Everything else is
the same object under two names. ``import pasco.keras.layers`` works as
well as the attribute.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Optional, Union

from . import (callbacks, constraints, initializers, layers, losses, metrics,
               models, optimizers, regularizers)

__all__ = ["layers", "optimizers", "metrics", "losses", "regularizers",
           "initializers", "constraints", "callbacks", "models", "Model",
           "Sequential", "Input"]


class Embedding(layers.Embedding):
    """tf.keras.layers.Embedding: pasco.layers.Embedding with Keras's
    output by default, the rows of the ids as a sequence [batch, ids,
    output_dim] (combiner=None); combiner="mean" or "sum" as
    pasco.layers'."""

    def __init__(self, input_dim: Optional[int] = None,
                 output_dim: Optional[int] = None,
                 combiner: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(input_dim, output_dim, combiner=combiner, **kwargs)


def _module(name: str, doc: str, source: Union[types.ModuleType, None],
            **extra: Any) -> types.ModuleType:
    """A module pasco.keras.<name>: source's public names, then extra."""
    m = types.ModuleType(f"pasco.keras.{name}", doc)
    if source is not None:
        names = getattr(source, "__all__", None) or [
            n for n in vars(source) if not n.startswith("_")]
        for n in names:
            setattr(m, n, getattr(source, n))
    for n, v in extra.items():
        setattr(m, n, v)
    sys.modules[m.__name__] = m
    return m


_optimizer_names = [n for n in vars(optimizers)
                    if isinstance(getattr(optimizers, n), type) and
                    issubclass(getattr(optimizers, n), optimizers.Optimizer)]
legacy = _module("optimizers.legacy", "tf.keras.optimizers.legacy: the "
                 "same optimizers under TF 2's legacy names.", None,
                 **{n: getattr(optimizers, n) for n in _optimizer_names})

layers = _module("layers", "tf.keras.layers (Embedding: Keras's sequence "
                 "output by default).", layers, Embedding=Embedding)
optimizers = _module("optimizers", "tf.keras.optimizers.", optimizers,
                     legacy=legacy, get=optimizers.get)
metrics = _module("metrics", "tf.keras.metrics.", metrics)
losses = _module("losses", "tf.keras.losses (Reduction: NONE, SUM, "
                 "SUM_OVER_BATCH_SIZE).", losses)
regularizers = _module("regularizers", "tf.keras.regularizers.",
                       regularizers)
initializers = _module("initializers", "tf.keras.initializers.",
                       initializers)
constraints = _module("constraints", "tf.keras.constraints.", constraints)
callbacks = _module("callbacks", "tf.keras.callbacks.", callbacks)
models = _module("models", "tf.keras.models.", None, Model=models.Model,
                 Sequential=models.Sequential, load_model=models.load_model)

Model = models.Model
Sequential = models.Sequential
Input = layers.Input
