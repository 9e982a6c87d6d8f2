"""Keras 3's shape and merge layers (issue 33), re-exported by
pasco.layers: Flatten, Reshape, Add, Multiply, Average, Dot,
GlobalAveragePooling1D (each a C layer kind, model/layers/) and Lambda
(a function of pasco.ops, traced into a "Custom" layer).

Shapes per example: a layer's output is [batch, ...] with up to 3
dimensions per example. Model inputs are [batch, width]; an
``Embedding(..., mask_zero=True)`` (or ``combiner=None``) gives Keras's
sequence [batch, steps, output_dim]; Flatten, Reshape and
GlobalAveragePooling1D change the shape. Dense, Concatenate,
Normalization and your own layers take [batch, width] inputs: put a
Flatten or a GlobalAveragePooling1D before them. Masks (an Embedding's
mask_zero: id 0 is padding) pass through Dropout, Activation and the
merge layers, and GlobalAveragePooling1D averages over the steps they
keep::

    ids = pasco.Input(shape=(20,), dtype="int64", name="words")
    x = pasco.layers.Embedding(1000, 16, mask_zero=True)(ids)
    x = pasco.layers.GlobalAveragePooling1D()(x)
    out = pasco.layers.Dense(1, activation="sigmoid")(x)
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .layers import Layer, _auto_name

__all__ = ["Flatten", "Reshape", "Add", "Multiply", "Average", "Dot",
           "GlobalAveragePooling1D", "Lambda"]

Shape = Tuple[int, ...]


def _data_format(v: Optional[str]) -> str:
    if v is None:
        return "channels_last"
    if v not in ("channels_last", "channels_first"):
        raise ValueError(f"data_format: expected 'channels_last', "
                         f"'channels_first' or None, got {v!r}")
    return v


def _fmt(shape: Shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + \
        ("," if len(shape) == 1 else "") + ")"


class Flatten(Layer):
    """Flatten(data_format=None): [batch, d0, d1, ...] into [batch, d0 *
    d1 * ...]; "channels_first" moves the first axis per example last
    first, as Keras does."""

    class_name = "Flatten"

    def __init__(self, data_format: Optional[str] = None,
                 name: Optional[str] = None) -> None:
        self.data_format = _data_format(data_format)
        super().__init__(name)

    def _config(self) -> Dict[str, Any]:
        return {"data_format": self.data_format}

    def _output_shape(self, shapes: List[Shape]) -> Shape:
        return (math.prod(shapes[0]),)


class Reshape(Layer):
    """Reshape(target_shape): each example's values in target_shape (a
    tuple of 1 to 3 sizes, one of them -1, inferred), the batch kept. A
    target of another size is refused naming the layer and both
    shapes."""

    class_name = "Reshape"

    def __init__(self, target_shape: Sequence[int],
                 name: Optional[str] = None) -> None:
        t = tuple(target_shape) if isinstance(target_shape, (tuple, list)) \
            else None
        if not t or len(t) > 3 or any(
                isinstance(d, bool) or not isinstance(d, int) or
                d == 0 or d < -1 for d in t) or t.count(-1) > 1:
            raise ValueError(f"target_shape: expected a tuple of 1 to 3 "
                             f"positive sizes, one of them at most -1, got "
                             f"{target_shape!r}")
        self.target_shape = t
        super().__init__(name)

    def _config(self) -> Dict[str, Any]:
        return {"target_shape": list(self.target_shape)}

    def _output_shape(self, shapes: List[Shape]) -> Shape:
        count = math.prod(shapes[0])
        known = math.prod(d for d in self.target_shape if d != -1)
        out = tuple(count // known if d == -1 and count % known == 0 else d
                    for d in self.target_shape)
        if math.prod(out) != count or -1 in out:
            raise ValueError(f"{self.name}: cannot reshape an input of "
                             f"shape {_fmt(shapes[0])} ({count} values per "
                             f"example) to target_shape "
                             f"{_fmt(self.target_shape)}")
        return out


class _Merge(Layer):
    """A merge layer: called on a list of 2 or more tensors of one
    shape."""

    def __init__(self, name: Optional[str] = None) -> None:
        super().__init__(name)

    def _output_shape(self, shapes: List[Shape]) -> Shape:
        if len(shapes) < 2:
            raise ValueError(f"{self.name}: an {self.class_name} is called "
                             f"on a list of 2 or more tensors")
        for j, s in enumerate(shapes[1:], 1):
            if s != shapes[0]:
                raise ValueError(f"{self.name}: inputs 0 and {j} are "
                                 f"{_fmt(shapes[0])} and {_fmt(s)} per "
                                 f"example; an {self.class_name} takes "
                                 f"inputs of one shape")
        return shapes[0]


class Add(_Merge):
    """Add(): the sum of its inputs ([x1, x2, ...], one shape)."""

    class_name = "Add"


class Multiply(_Merge):
    """Multiply(): the elementwise product of its inputs (one shape)."""

    class_name = "Multiply"


class Average(_Merge):
    """Average(): the mean of its inputs (one shape)."""

    class_name = "Average"


class Dot(Layer):
    """Dot(axes, normalize=False): of two inputs [batch, d], the dot
    product of each pair of rows, [batch, 1]; axes 1 or -1 (or a pair of
    them). normalize: each row l2-normalized first (cosine proximity),
    Keras's x / sqrt(max(sum x^2, 1e-14))."""

    class_name = "Dot"

    def __init__(self, axes: Any, normalize: bool = False,
                 name: Optional[str] = None) -> None:
        pair = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)
        if len(pair) not in (1, 2) or any(
                isinstance(a, bool) or a not in (1, -1) for a in pair):
            raise ValueError(f"axes: inputs [batch, d] are dotted along "
                             f"axis 1 (or -1): expected 1, -1 or a pair of "
                             f"them, got {axes!r}")
        self.axes = axes if len(pair) == 1 else list(pair)
        self.normalize = bool(normalize)
        super().__init__(name)

    def _config(self) -> Dict[str, Any]:
        return {"axes": self.axes, "normalize": self.normalize}

    def _output_shape(self, shapes: List[Shape]) -> Shape:
        if len(shapes) != 2 or len(shapes[0]) != 1 or shapes[0] != shapes[1]:
            raise ValueError(f"{self.name}: inputs are "
                             f"{', '.join(_fmt(s) for s in shapes)} per "
                             f"example; a Dot takes two [batch, d] of one d")
        return (1,)


class GlobalAveragePooling1D(Layer):
    """GlobalAveragePooling1D(data_format=None, keepdims=False): a
    sequence [batch, steps, features] averaged over its steps into
    [batch, features] ([batch, 1, features] with keepdims;
    "channels_first": [batch, features, steps]). After an
    Embedding(mask_zero=True): the mean over the steps whose id is not 0
    (Keras's); a sequence of padding only gives zeros (Keras: NaN)."""

    class_name = "GlobalAveragePooling1D"

    def __init__(self, data_format: Optional[str] = None,
                 keepdims: bool = False, name: Optional[str] = None) -> None:
        self.data_format = _data_format(data_format)
        self.keepdims = bool(keepdims)
        super().__init__(name or _auto_name("global_average_pooling1d"))

    def _config(self) -> Dict[str, Any]:
        return {"data_format": self.data_format, "keepdims": self.keepdims}

    def _output_shape(self, shapes: List[Shape]) -> Shape:
        s = shapes[0]
        if len(s) != 2:
            raise ValueError(f"{self.name}: its input is {_fmt(s)} per "
                             f"example; a GlobalAveragePooling1D takes a "
                             f"sequence (steps, features), as an "
                             f"Embedding(mask_zero=True) or "
                             f"Embedding(combiner=None) gives")
        first = self.data_format == "channels_first"
        d = s[0] if first else s[1]
        if not self.keepdims:
            return (d,)
        return (d, 1) if first else (1, d)


class Lambda(Layer):
    """Lambda(function, output_shape=None, mask=None, arguments=None):
    ``function(inputs, **arguments)`` written with :mod:`pasco.ops`,
    traced on the chief into a "Custom" layer (docs/GRAPHS.md) that the
    workers run, as your own Layer subclass is: its config is the traced
    graph, so it is serialized as Custom (a model saved and read back
    has a Custom layer in its place). Its inputs are [batch, width]
    tensors (a list of them when called on a list); it returns one
    [batch, width] float32. output_shape, if given, is checked against
    the traced one; mask: None only. In C, the same is
    pasco_layer_graph or pasco_layer_function (include/pasco/graph.h)::

        scaled = pasco.layers.Lambda(lambda x: ops.tanh(x) * 2.0)(h)
    """

    class_name = "Lambda"
    serialized_as = "Custom"

    def __init__(self, function: Callable[..., Any],
                 output_shape: Any = None, mask: Any = None,
                 arguments: Optional[Dict[str, Any]] = None,
                 name: Optional[str] = None) -> None:
        if not callable(function):
            raise TypeError(f"function: expected a callable of pasco.ops, "
                            f"got {type(function).__name__}")
        if mask is not None:
            raise ValueError("mask: only None (a Lambda's output carries no "
                             "mask)")
        if arguments is not None and not isinstance(arguments, dict):
            raise TypeError(f"arguments: expected a dict, got "
                            f"{type(arguments).__name__}")
        self.function = function
        self.output_shape = output_shape
        self.mask = mask
        self.arguments = dict(arguments or {})
        super().__init__(name or _auto_name("lambda"))

    def call(self, inputs: Any, training: bool = False) -> Any:
        import inspect

        kwargs = dict(self.arguments)
        try:
            params = inspect.signature(self.function).parameters
        except (TypeError, ValueError):
            params = {}
        if "training" in params:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def _json_layer(self, widths: List[Any], dtypes: List[str]
                    ) -> Tuple[Dict[str, Any], Any]:
        j, width = super()._json_layer(widths, dtypes)
        want = self.output_shape
        if want is not None:
            want = tuple(want) if isinstance(want, (tuple, list)) else (want,)
            if want[-1:] != (width,) or len(want) not in (1, 2) or \
                    (len(want) == 2 and want[0] is not None):
                raise ValueError(f"{self.name}: output_shape {want!r}; the "
                                 f"function gives ({width},) per example")
        return j, width
