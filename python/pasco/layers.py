"""Keras's layers, as data: each is its class name and config, the JSON
that ``pasco_model_from_json`` reads (model/config.c), so the model a
worker rebuilds is exactly the chief's.

Sequential::

    pasco.Sequential([pasco.layers.Dense(64, activation="relu"),
                      pasco.layers.Dense(10, activation="softmax")])

Each class mirrors one row of the C layer table (model/layers/): the same
Keras class name, config fields and defaults (a constructor argument named
differently from its config field says so in ``_config_args``);
tests/python/layer_table.py checks them against the table.

Functional (named inputs, layers called on tensors)::

    words = pasco.Input(shape=(3,), name="words", dtype="int64")
    x = pasco.layers.Embedding(8, 16)(words)
    out = pasco.layers.Dense(1, activation="sigmoid")(x)
    model = pasco.Model(inputs=words, outputs=out)
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

try:
    from . import constraints as _constraints
    from . import initializers as _initializers
except ImportError:  # layers.py alone (tests/python/kind_table.py): by path
    import importlib.util as _util
    import os as _os

    def _sibling(name: str) -> Any:
        spec = _util.spec_from_file_location("pasco_" + name, _os.path.join(
            _os.path.dirname(_os.path.abspath(__file__)), name + ".py"))
        mod = _util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
        return mod
    _constraints = _sibling("constraints")
    _initializers = _sibling("initializers")

__all__ = ["Layer", "Dense", "Embedding", "Dropout", "Activation",
           "Concatenate", "Normalization", "Input", "KerasTensor", "Custom"]

_ACTIVATIONS = ("linear", "relu", "sigmoid", "tanh", "softmax")
_names: Dict[str, int] = {}


def _auto_name(prefix: str) -> str:
    k = _names.get(prefix, 0)
    _names[prefix] = k + 1
    return prefix if k == 0 else f"{prefix}_{k}"


def reset_names() -> None:
    """Starts Keras's automatic names again (keras.backend.clear_session)."""
    _names.clear()


def _snake(name: str) -> str:
    """Keras's automatic name of a class: FactorizationMachine ->
    factorization_machine, FMLayer -> fm_layer."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def _activation(arg: str, v: Optional[str]) -> str:
    v = "linear" if v is None else v
    if v not in _ACTIVATIONS:
        raise ValueError(f"{arg}: expected one of {', '.join(_ACTIVATIONS)} "
                         f"or None, got {v!r}")
    return v


def _initializer(arg: str, v: Any) -> Optional[dict]:
    """None, a name ("he_normal"), a pasco.initializers object or a dict
    {"class_name", "config"} (checked by the library), as a dict."""
    if v is None:
        return None
    if isinstance(v, dict) and "class_name" in v:
        return {"class_name": v["class_name"],
                "config": dict(v.get("config", {}))}
    if isinstance(v, (str, _initializers.Initializer)):
        try:
            return _initializers.get(v).to_dict()  # type: ignore[union-attr]
        except ValueError as e:
            raise ValueError(f"{arg}: {e}") from None
    raise TypeError(f"{arg}: expected an initializer name, a "
                    f"pasco.initializers object or a dict, got {v!r}")


def _constraint(arg: str, v: Any) -> Optional[dict]:
    """None, a pasco.constraints object, its name or its config dict, as
    a dict."""
    try:
        c = _constraints.get(v)
    except ValueError as e:
        raise ValueError(f"{arg}: {e}") from None
    return None if c is None else c.to_dict()


# Keras's regularizers: their factors and defaults
_REGULARIZERS = {"L1": {"l1": 0.01}, "L2": {"l2": 0.01},
                 "L1L2": {"l1": 0.0, "l2": 0.0}}


def _regularizer(arg: str, v: Any) -> Optional[dict]:
    """None, a pasco.regularizers object or its {"class_name": "L1" |
    "L2" | "L1L2", "config": {"l1": f, "l2": f}} dict, as a dict."""
    if v is None:
        return None
    if hasattr(v, "get_config") and hasattr(v, "class_name"):
        v = {"class_name": v.class_name, "config": v.get_config()}
    if not isinstance(v, dict) or v.get("class_name") not in _REGULARIZERS:
        raise ValueError(f"{arg}: expected None, pasco.regularizers.L1, L2 "
                         f"or L1L2, or a dict {{'class_name': 'L2', "
                         f"'config': {{'l2': 0.01}}}}, got {v!r}")
    keys = _REGULARIZERS[v["class_name"]]
    config = {**keys, **v.get("config", {})}
    bad = [k for k in config if k not in keys] + [
        k for k in keys if isinstance(config[k], bool) or
        not isinstance(config[k], (int, float)) or config[k] < 0]
    if bad:
        raise ValueError(f"{arg}: {v['class_name']} takes factors >= 0 "
                         f"named {', '.join(keys)}; {bad[0]!r} is wrong in "
                         f"{v!r}")
    return {"class_name": v["class_name"],
            "config": {k: float(config[k]) for k in keys}}


def _dense_regularizer(arg: str, v: Any) -> Optional[dict]:
    """A Dense's regularizer: None, a pasco.regularizers object, its dict,
    Keras's names "l1", "l2", "l1_l2" (their defaults), or a number: an
    L2 factor (Pasco's older form); a zero factor is none."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not v >= 0:
            raise ValueError(f"{arg}: expected an L2 factor >= 0, got {v!r}")
        v = {"class_name": "L2", "config": {"l2": float(v)}} if v else None
    if isinstance(v, str):
        names = {"l1": "L1", "l2": "L2", "l1_l2": "L1L2", "L1": "L1",
                 "L2": "L2", "L1L2": "L1L2"}
        if v not in names:
            raise ValueError(f"{arg}: expected 'l1', 'l2', 'l1_l2', a "
                             f"pasco.regularizers object or None, got {v!r}")
        v = {"class_name": names[v], "config": {}}
    r = _regularizer(arg, v)
    if r is None or not any(r["config"].values()):
        return None
    # as the library writes it: the factors that are not 0
    return {"class_name": r["class_name"],
            "config": {k: f for k, f in r["config"].items() if f}}


def _positive(arg: str, v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{arg}: expected a positive integer, got {v!r}")
    return v


class KerasTensor:
    """A symbolic tensor of a functional model: a model input or a
    layer's output (``layer(tensor)``)."""

    def __init__(self, source: Union["Input", "Layer"],
                 inbound: Sequence["KerasTensor"] = ()) -> None:
        self.source = source
        self.inbound = list(inbound)

    @property
    def name(self) -> str:
        return self.source.name


class Input(KerasTensor):
    """A model input: ``shape=(width,)``; ``dtype`` "float32" for
    features, "int32"/"int64" for ids (an Embedding's input), "string"
    for strings (their 64-bit fingerprints: a StringLookup's or a
    Hashing's input; pasco.data.Feature("string")). The name matches a
    dataset's feature (tfrecord, or csv with features) or features_name
    (csv)."""

    def __init__(self, shape: Union[int, Tuple[int, ...]],
                 name: Optional[str] = None, dtype: str = "float32") -> None:
        if isinstance(shape, int):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or len(shape) != 1:
            raise ValueError(f"shape: expected (width,), got {shape!r}")
        self.width = _positive("shape", shape[0])
        if dtype not in ("float32", "float64", "int32", "int64", "string"):
            raise ValueError(f"dtype: expected float32, float64, int32, "
                             f"int64 or string, got {dtype!r}")
        self.ids = dtype.startswith("int") or dtype == "string"
        self.dtype = dtype
        self._name = name or _auto_name("input")
        super().__init__(self)

    @property
    def name(self) -> str:
        return self._name

    def get_config(self) -> dict:
        c = {"name": self.name, "width": self.width, "ids": self.ids}
        if self.dtype == "string":
            c["dtype"] = "string"
        return c


class Layer:
    """A layer. The built-in ones (Dense, Embedding, ...) are their Keras
    class name and config, which the C library runs.

    Your own layer is a subclass written with :mod:`pasco.ops`, as in
    Keras::

        from pasco import ops

        class MyDense(pasco.layers.Layer):
            def __init__(self, units, **kwargs):
                super().__init__(**kwargs)       # name=..., trainable=...
                self.units = units

            def build(self, input_shape):        # (None, width), once
                self.w = self.add_weight(name="w",
                                         shape=(input_shape[-1], self.units),
                                         initializer="glorot_uniform")
                self.b = self.add_weight(name="b", shape=(self.units,),
                                         initializer="zeros")

            def call(self, inputs, training=False):
                return ops.relu(ops.matmul(inputs, self.w) + self.b)

    It is named like Keras's layers (``my_dense``, ``my_dense_1``, ...)
    unless given ``name=``, and used like them, in a Sequential model or
    called on ``pasco.Input`` and layer outputs (a list of them: ``call``
    gets a list and ``build`` a list of shapes). When the model's config
    is made (fit, evaluate, predict, build, to_json), ``build`` runs once
    with the input shapes and ``call`` is *traced*: run on symbolic
    tensors (:class:`pasco.ops.Tensor`), with ``training=True`` and then
    ``False``, into the op graphs the workers run (the "Custom" layer of
    docs/GRAPHS.md). ``call`` returns one tensor [batch, width] of
    float32. Weights are the layer's variables on the ps,
    "<layer name>/<weight name>". What ``call`` does must be ops: an
    ``if`` on a tensor's value raises TypeError (use ``ops.where``), a
    shape mismatch raises ValueError naming the layer, the op and the
    shapes, both before anything is scheduled. Your fields need no
    ``get_config``: the traced graph is what travels.
    """

    class_name = ""
    # constructor arguments named otherwise in the config: argument -> field
    _config_args: Dict[str, str] = {}

    def __init__(self, name: Optional[str] = None,
                 input_shape: Optional[Tuple[int, ...]] = None,
                 input_dtype: str = "float32", **kwargs: Any) -> None:
        trainable = kwargs.pop("trainable", True)
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unknown keyword "
                            f"argument {sorted(kwargs)[0]!r} (a Layer "
                            f"takes name, trainable, dtype, input_shape)")
        if name is not None and (not isinstance(name, str) or not name):
            raise ValueError(f"name: expected a non-empty string, got "
                             f"{name!r}")
        if dtype not in (None, "float32"):
            raise ValueError(f"dtype: expected 'float32' (a model's "
                             f"variables are float32), got {dtype!r}")
        self.name = name or _auto_name(_snake(self.class_name or
                                              type(self).__name__))
        self.input_shape = input_shape
        self._input_dtype = input_dtype
        self.trainable = bool(trainable)
        self.dtype = dtype or "float32"
        self.built = False
        self._weights: List[Any] = []
        self._built_shape: Any = None
        self._called_on_list = False

    # ---- your layer's methods (Keras's) ---------------------------------

    def build(self, input_shape: Any) -> None:
        """Makes the weights (add_weight) for input_shape: (None, width),
        or a list of them for a layer called on several inputs. Called
        once, before the first trace of call."""

    def call(self, inputs: Any, training: bool = False) -> Any:
        """The layer's computation out of pasco.ops: inputs is a symbolic
        tensor [batch, width] (a list of them for several inputs);
        returns one. Traced, not run: see the class's docstring."""
        raise NotImplementedError(f"{type(self).__name__}: a Layer "
                                  f"subclass defines call(inputs, "
                                  f"training=False) out of pasco.ops")

    def add_weight(self, name: Optional[str] = None,
                   shape: Optional[Sequence[int]] = None,
                   initializer: Union[str, dict, None] = None,
                   regularizer: Any = None, trainable: bool = True,
                   dtype: Optional[str] = None) -> Any:
        """A weight of the layer, a variable "<layer>/<name>" on the ps,
        used in call like a tensor. shape: a tuple of sizes; initializer:
        a name ("glorot_uniform", the default, "zeros", "ones",
        "random_normal", ...) or a {"class_name", "config"} dict, as the
        built-in layers take; regularizer: None, a pasco.regularizers
        object (L1, L2, L1L2) or its {"class_name": "L2", "config":
        {"l2": 0.01}} dict, its penalty added to the training loss;
        trainable False: read, never trained. dtype: float32 (a model's
        variables are)."""
        from .ops import Weight

        if shape is None and isinstance(name, (tuple, list)):
            name, shape = None, name  # Keras 3's add_weight(shape, ...)
        mine = self._weights_checked()
        if name is None:
            name = "variable" if not mine else f"variable_{len(mine)}"
        where = f"{self.name}: add_weight"
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"{where}: name must be a non-empty string "
                             f"without '/', got {name!r}")
        if any(w.name == name for w in mine):
            raise ValueError(f"{where}: the layer has a weight {name!r} "
                             f"already")
        shape = () if shape is None else tuple(shape)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0
                   for d in shape):
            raise ValueError(f"{where}({name!r}): shape must be positive "
                             f"sizes, got {shape!r}")
        dtype = dtype or self.dtype
        if dtype != "float32":
            raise ValueError(f"{where}({name!r}): dtype must be 'float32' "
                             f"(a model's variables are float32), got "
                             f"{dtype!r}")
        init = _initializer(f"{where}({name!r}): initializer",
                            "glorot_uniform" if initializer is None
                            else initializer)
        w = Weight(self.name, name, shape, dtype, init,
                   _regularizer(f"{where}({name!r}): regularizer",
                                regularizer),
                   bool(trainable) and self.trainable)
        mine.append(w)
        return w

    @property
    def weights(self) -> List[Any]:
        """The weights add_weight made, in order."""
        return list(self._weights_checked())

    # ---- config ----------------------------------------------------------

    def _weights_checked(self) -> List[Any]:
        if "_weights" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super()."
                               f"__init__(**kwargs) in __init__ first")
        return self._weights

    def _is_custom(self) -> bool:
        return type(self).call is not Layer.call

    def _config(self) -> Dict[str, Any]:
        return {}

    def get_config(self) -> Dict[str, Any]:
        return {"name": self.name, **self._config()}

    def to_json_layer(self) -> Dict[str, Any]:
        if self._is_custom():
            raise ValueError(f"{self.name}: a custom layer's config is "
                             f"traced when its model's config is made (it "
                             f"needs the input widths)")
        return {"class_name": self.class_name, "config": self.get_config()}

    def _output_width(self, widths: List[int]) -> int:
        return widths[0]  # Dropout, Activation, Normalization

    # the output has the input's shape per example, any rank (Dropout)
    _keeps_shape = False

    def _output_shape(self, shapes: List[Tuple[int, ...]]
                      ) -> Tuple[int, ...]:
        """The output's shape per example from the inputs' (issue 33):
        by default [batch, width] inputs only, giving _output_width's."""
        if self._keeps_shape:
            return shapes[0]
        for j, s in enumerate(shapes):
            if len(s) != 1:
                kind = self.class_name or type(self).__name__
                raise ValueError(f"{self.name}: a {kind} takes [batch, "
                                 f"width] inputs; input {j} is {s} per "
                                 f"example (put a Flatten or a "
                                 f"GlobalAveragePooling1D before it)")
        return (self._output_width([s[0] for s in shapes]),)

    def _json_layer(self, widths: List[Any], dtypes: List[str]
                    ) -> Tuple[Dict[str, Any], Any]:
        """The layer's JSON for inputs of these widths and dtypes, and its
        output's width: a custom layer traced (training, then not). A
        "width" is an int for [batch, width], or the shape per example
        (a tuple) of a layer whose output has more dimensions."""
        shapes = [tuple(w) if isinstance(w, (tuple, list)) else (w,)
                  for w in widths]
        if not self._is_custom():
            out = self._output_shape(shapes)
            return self.to_json_layer(), out[0] if len(out) == 1 else out
        self._output_shape_of_custom(shapes)
        return _trace_custom(self, widths, dtypes)

    def _output_shape_of_custom(self, shapes: List[Tuple[int, ...]]) -> None:
        for j, s in enumerate(shapes):
            if len(s) != 1:
                raise ValueError(f"{self.name}: a custom layer (or a Lambda)"
                                 f" takes [batch, width] inputs; input {j} "
                                 f"is {s} per example (put a Flatten or a "
                                 f"GlobalAveragePooling1D before it)")

    def __call__(self, inputs: Union[KerasTensor, Sequence[KerasTensor]]
                 ) -> KerasTensor:
        ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        for t in ins:
            if not isinstance(t, KerasTensor):
                raise TypeError(f"{self.name}: expected pasco.Input or a "
                                f"layer's output, got {type(t).__name__}"
                                + (" (calling a layer inside another "
                                   "layer's call is not supported: use "
                                   "its ops)" if type(t).__name__ in
                                   ("Tensor", "Weight") else ""))
        self._called_on_list = isinstance(inputs, (list, tuple))
        return KerasTensor(self, ins)

    def __repr__(self) -> str:
        return (f"<pasco.layers.{self.class_name or type(self).__name__} "
                f"{self.name}>")


def _trace_custom(layer: Layer, widths: List[int], dtypes: List[str]
                  ) -> Tuple[Dict[str, Any], int]:
    """A custom layer's "Custom" JSON (docs/GRAPHS.md) for inputs of
    these widths and dtypes, and its output's width: built once, then
    call traced with training True and False (inference_graph only when
    the two differ)."""
    shapes = [(None, w) for w in widths]
    shape: Any = shapes if layer._called_on_list else shapes[0]
    if not layer.built:
        layer.build(list(shape) if layer._called_on_list else shape)
        layer.built, layer._built_shape = True, shape
    elif layer._built_shape is not None and layer._built_shape != shape:
        raise ValueError(f"{layer.name}: built for input shape "
                         f"{layer._built_shape}, now given {shape} (a "
                         f"layer is built once)")
    graph, width = _trace_call(layer, shapes, dtypes, True)
    inference, _ = _trace_call(layer, shapes, dtypes, False)
    config: Dict[str, Any] = {"name": layer.name,
                              "class": type(layer).__name__,
                              "input_widths": list(widths),
                              "output_width": width, "graph": graph}
    if inference != graph:
        config["inference_graph"] = inference
    return {"class_name": "Custom", "config": config}, width


def _trace_call(layer: Layer, shapes: List[Tuple[Any, int]],
                dtypes: List[str], training: bool) -> Tuple[dict, int]:
    import inspect

    from . import ops

    g = ops.Graph(f"layer {layer.name!r} ({type(layer).__name__})")
    for w in layer._weights_checked():
        g.declare_weight(w)
    with ops.trace(g):
        ins = [g.input(s, d) for s, d in zip(shapes, dtypes)]
        arg: Any = ins if layer._called_on_list else ins[0]
        params = inspect.signature(layer.call).parameters
        out = layer.call(arg, training=training) if "training" in params \
            else layer.call(arg)
        if isinstance(out, ops.Weight):
            out = g.weight(out)
    if not isinstance(out, ops.Tensor):
        raise TypeError(f"{g.name}: call returned {type(out).__name__}; a "
                        f"layer's call returns one pasco.ops tensor")
    if out.ndim != 2 or out.shape[1] is None or out.dtype != "float32":
        raise ValueError(f"{g.name}: call returned shape {out.shape} of "
                         f"{out.dtype}; a layer's output is [batch, width] "
                         f"of float32 (ops.reshape, ops.cast)")
    return g.to_json([out]), out.shape[1]


# Dense, Embedding, Dropout, Activation, Concatenate, Normalization,
# Custom: python/pasco/_layers_core.py (named in __all__ above)
from ._layers_core import (Activation, Concatenate, Custom,  # noqa: E402
                           Dense, Dropout, Embedding, Normalization)
# issue 33's shape and merge layers (python/pasco/_layers_merge.py)
from ._layers_merge import *  # noqa: E402,F401,F403
from ._layers_merge import __all__ as _merge_all  # noqa: E402
__all__ += _merge_all
# BatchNormalization, LayerNormalization (issue 33): python/pasco/_layers_norm.py
from ._layers_norm import *  # noqa: E402,F401,F403
from ._layers_norm import __all__ as _norm_all  # noqa: E402
__all__ += _norm_all
# issue 33's preprocessing layers (python/pasco/_layers_prep.py)
from ._layers_prep import *  # noqa: E402,F401,F403
from ._layers_prep import __all__ as _prep_all  # noqa: E402
__all__ += _prep_all
