"""Keras's Sequential model, re-exported by pasco.models (and pasco):
a Model whose layers follow one another, its config written as the C
library's "Sequential" (model/config.c), or as a "Functional" chain when
it starts with a preprocessing layer. Training, saving and the rest are
pasco.models.Model's (python/pasco/models.py)."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from .cluster import ParameterServerStrategy
from .data import Dataset
from .errors import InvalidArgumentError
from .layers import Embedding, Input, Layer
from .models import Model

__all__ = ["Sequential"]


class Sequential(Model):
    """Keras's Sequential: ``Sequential([layers...])``, each layer on the
    previous one's output. The input width comes from a first
    ``pasco.Input(shape=(w,))``, a first layer's ``input_shape=(w,)``, or
    else the dataset fit, evaluate or predict is given (a csv's feature
    columns, a tfrecord's one feature); a first Embedding reads ids."""

    def __init__(self, layers: Optional[Sequence[Any]] = None,
                 name: Optional[str] = None, seed: int = 42,
                 strategy: Optional[ParameterServerStrategy] = None) -> None:
        super().__init__(name=name, seed=seed, strategy=strategy)
        self._input: Optional[Input] = None
        self._inferred: Optional[tuple] = None
        self.layers = []
        for layer in layers or []:
            self.add(layer)

    def add(self, layer: Any) -> None:
        """Appends a layer (or, first, a pasco.Input)."""
        if isinstance(layer, Input):
            if self.layers or self._input is not None:
                raise ValueError("layers: a pasco.Input may only come first")
            self._input = layer
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"layers: expected pasco.layers objects, got "
                            f"{type(layer).__name__}")
        self.layers.append(layer)
        self._built_json = None

    def _chain_config(self) -> dict:
        """A Sequential model whose first layer is a preprocessing layer
        (StringLookup, Hashing, ...) as the functional config of its
        chain: its input (pasco.Input, of the dtype the layer takes) may
        hold strings or ids, which a Sequential config's cannot say."""
        if self._input is None:
            raise ValueError(f"{self.layers[0].name}: a Sequential model "
                             f"that starts with a preprocessing layer "
                             f"starts with pasco.Input(shape=(w,), "
                             f"dtype=...) (\"string\" for a StringLookup)")
        prev, w, dtype = self._input.name, self._input.width, \
            self._input.dtype
        layers = []
        for layer in self.layers:
            j, w = layer._json_layer([w], [dtype])
            j["inbound_nodes"] = [prev]
            layers.append(j)
            prev, dtype = layer.name, "float32"
        self._output_width = w
        return {"class_name": "Functional",
                "config": {"name": self.name or "sequential",
                           "seed": self.seed,
                           "inputs": [self._input.get_config()],
                           "layers": layers}}

    def _model_config(self, data: Optional[Dataset]) -> dict:
        if not self.layers:
            raise ValueError("layers: a Sequential model needs at least one "
                             "layer")
        first = self.layers[0]
        if getattr(first, "_preprocessing", False):
            return self._chain_config()
        # ids: an Embedding's, or a custom layer's after an integer Input
        ids = isinstance(first, Embedding) or (
            first._is_custom() and self._input is not None and
            self._input.ids)
        name, width = "input", None
        if self._input is not None:
            name, width = self._input.name, self._input.width
        elif first.input_shape:
            width = first.input_shape[0]
        # a csv's header is needed when the width is not given; when it is,
        # the header is read if the chief can (to say a mismatch now, not
        # at a worker's first step), and not required
        if data is not None:
            try:
                spec = data.input_spec()
            except (OSError, ValueError):
                if width is None or data.spec["format"] != "csv":
                    raise
                spec = None
            if spec is not None and len(spec) != 1:
                raise ValueError(f"x: a Sequential model has one input; the "
                                 f"dataset yields {', '.join(spec)}")
            if spec is not None:
                (dname, d), = spec.items()
                if width is not None and not ids and d["width"] != width:
                    n = d["width"]
                    raise InvalidArgumentError(
                        f"x: the model's input is {width} wide; the "
                        f"dataset's rows have {n} feature"
                        f"{'' if n == 1 else 's'} (pasco.Input(shape="
                        f"({n},)) or input_shape=({n},) would match)")
                if width is None:
                    width = d["width"]
                if self._input is None:
                    name = dname
        if width is None and self._inferred is not None:
            name, width = self._inferred  # from the dataset of an earlier call
        if width is None:
            raise ValueError("input width unknown: start with "
                             "pasco.Input(shape=(width,)), give the first "
                             "layer input_shape=(width,), or fit first")
        self._inferred = (name, width)
        layers = []
        w, dtype = width, (self._input.dtype if self._input is not None
                           and ids else "int64" if ids else "float32")
        for layer in self.layers:
            j, w = layer._json_layer([w], [dtype])
            layers.append(j)
            dtype = "float32"
        self._output_width = w
        return {"class_name": "Sequential",
                "config": {"name": self.name or "sequential",
                           "seed": self.seed,
                           "inputs": [{"name": name, "width": width,
                                       "ids": ids}],
                           "layers": layers}}
