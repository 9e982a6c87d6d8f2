"""Dataset.map: the function traced once on the chief into an op graph
that every worker runs in C on each batch it reads (docs/datasets.md).

A trace (:class:`Trace`) is what the workers do after reading: the
graph's inputs (paths into the element the files give), its nodes (the
ops of docs/GRAPHS.md, and "model" nodes: a preprocessing model, by its
index in ``models``), and the element's structure, whose leaves are
graph nodes. ``Trace.spec()`` is the spec's "map" (include/pasco/
dataset.h); worker/dataset_map.c reads and runs it.

The function sees symbolic tensors with the batch axis first ([None,
...]): it is vectorised, so it must treat each example alone. Ops that
reduce or mix over that axis are refused while tracing, naming the op.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from . import ops

__all__ = ["Trace", "trace_map", "mapping", "in_map", "call_model",
           "call_layer", "element"]

# ops that reduce a batch to one number
_LOSSES = frozenset(("sparse_categorical_crossentropy",
                     "categorical_crossentropy", "binary_crossentropy",
                     "mean_squared_error"))
# ops whose "axis" must not be the example axis
_AXIS_OPS = frozenset(("reduce_sum", "reduce_mean", "reduce_max", "concat",
                       "softmax", "log_softmax", "l2_normalize", "argmax",
                       "arange_like", "squeeze", "expand_dims"))
_NOT_IN_MAP = frozenset(("next", "arg", "read", "gradient", "global_step",
                         "weight", "dropout"))


class Trace:
    """What the workers do to each batch: graph inputs (paths into the
    read element, with their declared shapes and dtypes), nodes, the
    preprocessing models "model" nodes run, which nodes hold strings'
    fingerprints, and the element's structure (leaves: node indices)."""

    def __init__(self, paths: List[list], inputs: List[dict],
                 nodes: List[dict], models: List[Any], strings: Set[int],
                 struct: Any) -> None:
        self.paths, self.inputs, self.nodes = paths, inputs, nodes
        self.models, self.strings, self.struct = models, strings, struct

    @classmethod
    def of_element(cls, element: Any, strings: Callable[[list], bool]
                   ) -> "Trace":
        """The identity over the element that element(node) builds (node
        called with (path, shape, dtype) for each leaf); strings(path):
        whether that leaf holds strings' fingerprints."""
        g = ops.Graph("dataset")
        paths: List[list] = []
        marked: Set[int] = set()

        def node(path: list, shape: tuple, dtype: str) -> Any:
            t = g.input(shape, dtype)
            paths.append(list(path))
            if strings(path):
                marked.add(t.index)
            return t
        struct = element(node)
        return cls(paths, g.inputs, g.nodes, [], marked,
                   _leaves(struct, lambda t: (t.index, t.shape, t.dtype)))

    def rebuild(self, name: str) -> Tuple[ops.Graph, Any]:
        """A graph of these nodes to trace more on, and the element's
        structure as its tensors."""
        g = ops.Graph(name)
        g.inputs = [dict(i) for i in self.inputs]
        g.nodes = [dict(n) for n in self.nodes]
        return g, _leaves(self.struct, lambda s: ops.Tensor(
            g, s[0], s[1], s[2], g.nodes[s[0]]["op"]))

    def identity(self) -> bool:
        """Whether the workers' element is already this one: a dict of
        the read features, as read (no map needed)."""
        s = self.struct
        return isinstance(s, dict) and not self.models and \
            len(self.nodes) == len(self.inputs) and all(
                len(p) == 1 and isinstance(p[0], str)
                for p in self.paths) and [
                v[0] for v in s.values()] == list(range(len(s))) and \
            list(s) == [p[0] for p in self.paths] and all(
                len(v[1]) == 2 for v in s.values())

    def spec(self) -> dict:
        """The spec's "map" (include/pasco/dataset.h)."""
        outputs: List[int] = []

        def out(s: Tuple[int, tuple, str]) -> int:
            outputs.append(s[0])
            return len(outputs) - 1
        element = _leaves(self.struct, out, tuple_as=list)
        return {"inputs": self.paths,
                "graph": {"inputs": self.inputs, "nodes": self.nodes,
                          "outputs": outputs},
                "models": [json.loads(m.to_json()) for m in self.models],
                "element": element}

    def element(self, node: Callable[..., Any]) -> Any:
        """The element with node(path, shape, dtype) at each leaf (a
        traced step's next(iterator))."""
        def walk(s: Any, path: list) -> Any:
            if isinstance(s, tuple) and not _is_leaf(s):
                return tuple(walk(v, path + [i]) for i, v in enumerate(s))
            if isinstance(s, dict):
                return {k: walk(v, path + [k]) for k, v in s.items()}
            return node(path, s[1], s[2])
        return walk(self.struct, [])


def _is_leaf(s: Any) -> bool:
    return isinstance(s, tuple) and len(s) == 3 and isinstance(s[0], int) \
        and isinstance(s[1], tuple)


def _leaves(struct: Any, f: Callable[[Any], Any], tuple_as: Any = tuple
            ) -> Any:
    """struct with f applied to each leaf (a tensor, or a stored leaf)."""
    if isinstance(struct, ops.Tensor) or _is_leaf(struct):
        return f(struct)
    if isinstance(struct, (tuple, list)):
        return tuple_as(_leaves(v, f, tuple_as) for v in struct)
    if isinstance(struct, dict):
        return {k: _leaves(v, f, tuple_as) for k, v in struct.items()}
    raise TypeError(f"{type(struct).__name__}")


# ---- tracing ------------------------------------------------------------------

class _Active:
    def __init__(self, graph: ops.Graph, what: str, models: List[Any],
                 strings: Set[int]) -> None:
        self.graph, self.what = graph, what
        self.models, self.strings = models, strings
        self.wrappers: Dict[tuple, Any] = {}  # a layer's one-layer model


_active: List[_Active] = []


def mapping() -> bool:
    """Whether a Dataset.map function is being traced (a model called in
    it is a "model" node of the map, not of a step)."""
    return bool(_active)


def in_map(inputs: Any) -> bool:
    """Whether a layer called on inputs is called in a Dataset.map
    function on its symbolic tensors."""
    ins = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    return mapping() and any(isinstance(t, ops.Tensor) for t in ins)


def trace_map(prev: Trace, fn: Callable[..., Any], what: str) -> Trace:
    """prev followed by fn, traced once; what names it in errors
    ("Dataset.map(parse)")."""
    g, struct = prev.rebuild(what)
    start = len(g.nodes)
    act = _Active(g, what, list(prev.models), set(prev.strings))
    _active.append(act)
    try:
        with ops.trace(g):
            value = fn(*struct) if isinstance(struct, tuple) else fn(struct)
    finally:
        _active.pop()
    _check_vectorised(g, start, what)
    try:
        out = _leaves(value, lambda t: _output(g, t, what))
    except TypeError as e:
        raise TypeError(f"{what}: the function returns {e}: expected a "
                        f"symbolic tensor, a tuple or a dict of them (or "
                        f"of tuples and dicts)") from None
    return Trace(prev.paths, g.inputs, g.nodes, act.models,
                 {i for i in act.strings if i < len(g.nodes)}, out)


def _output(g: ops.Graph, t: Any, what: str) -> Tuple[int, tuple, str]:
    if not isinstance(t, ops.Tensor):
        raise TypeError(type(t).__name__)
    if t.graph is not g:
        raise ValueError(f"{what}: a returned tensor is not of this map's "
                         f"trace")
    if not t.shape or t.shape[0] is not None:
        raise ValueError(f"{what}: an output of shape {ops._fmt(t.shape)} "
                         f"has no example axis first: a map gives each "
                         f"example's values, [batch, ...]")
    return (t.index, tuple(t.shape), t.dtype)


def _check_vectorised(g: ops.Graph, start: int, what: str) -> None:
    """Refuses an op of nodes[start:] that reduces or mixes over the
    example axis (axis 0 of a batched input)."""
    nodes = g.nodes
    for i in range(start, len(nodes)):
        n = nodes[i]
        op = n["op"]
        ins = [nodes[j] for j in n.get("in", [])]
        batched = [j for j in ins if j["shape"][:1] == [-1]]

        def fail(why: str) -> ValueError:
            return ValueError(
                f"{what}: ops.{op} {why}: a map function is traced once "
                f"over the batches the workers read ([batch, ...]) and "
                f"must treat each example alone; do this in the step "
                f"instead")
        if op in _NOT_IN_MAP:
            raise ValueError(f"{what}: ops.{op} is not an op of a map "
                             f"(a map has no variables, no iterator and "
                             f"no training)")
        if op in ("input", "constant", "model") or not batched:
            continue
        rank = len(ins[0]["shape"])
        if op in _LOSSES:
            raise fail("reduces the batch to one number")
        if op in _AXIS_OPS:
            axis = n.get("axis")
            r = rank + 1 if op == "expand_dims" else rank
            axes = [axis] if isinstance(axis, int) else axis
            if axes is None:
                raise fail("reduces over every axis, the example axis "
                           "(0) among them")
            if any(a % max(r, 1) == 0 for a in axes):
                raise fail("works along the example axis (axis 0)")
        if op == "gather" and ins[0]["shape"][:1] == [-1] and \
                n.get("axis", 0) % max(rank, 1) == 0:
            raise fail("gathers along the example axis (axis 0)")
        if op == "transpose" and n.get("perm", [0])[0] != 0:
            raise fail("moves the example axis")
        if op == "slice" and (n["begin"][0] != 0 or n["size"][0] != -1):
            raise fail("slices the example axis")
        if op in ("matmul", "dot") and len(batched) == 2 and \
                len(ins[0]["shape"]) == 2 and len(ins[1]["shape"]) == 2:
            raise fail("multiplies examples with each other")
        shape = n["shape"]
        if shape[:1] != [-1]:
            raise fail(f"gives shape {ops._fmt(tuple(shape))}, without "
                       f"the example axis first")
        if op == "reshape" and _size(shape[1:]) != _size(
                ins[0]["shape"][1:]):
            raise fail("mixes the example axis into the others")


def _size(dims: List[int]) -> Optional[int]:
    out = 1
    for d in dims:
        if d < 0:
            return None
        out *= d
    return out


# ---- models in a map ------------------------------------------------------------

def call_model(model: Any, inputs: Any, training: bool) -> Any:
    """model(x) in a map: a "model" node, the model made of preprocessing
    layers only (they run on the workers in C, model/prep.c)."""

    from ._lib import lib
    from ._layers_prep import _Preprocessing
    from .function import _model_inputs, _parsed
    act = _active[-1]
    who = f"{act.what}: {model.name or 'model'}"
    bad = [l for l in model.layers if not isinstance(l, _Preprocessing)]
    if bad or not model.layers:
        raise ValueError(
            f"{who}: layer {bad[0].name} ({type(bad[0]).__name__}) is not "
            f"a preprocessing layer: a map runs preprocessing layers "
            f"(StringLookup, IntegerLookup, Hashing, ...) and pasco.ops; "
            f"call a model with variables in the step" if bad else
            f"{who}: the model has no layer")
    last = model.layers[-1]
    if getattr(last, "invert", False):
        raise ValueError(f"{who}: {last.name} has invert=True: its "
                         f"output is strings, which a map cannot give")
    _parsed(model, None)
    names = _model_inputs(model)
    if isinstance(inputs, dict):
        if len(names) == 1 and len(inputs) == 1 and names[0] not in inputs:
            ins = list(inputs.values())
        else:
            missing = [n for n in names if n not in inputs]
            if missing:
                raise ValueError(f"{who}: the inputs have no "
                                 f"{missing[0]!r} (got {', '.join(inputs)};"
                                 f" the model's inputs are "
                                 f"{', '.join(names)})")
            ins = [inputs[n] for n in names]
    else:
        ins = list(inputs) if isinstance(inputs, (list, tuple)) \
            else [inputs]
    if len(ins) != len(names):
        raise ValueError(f"{who}: {len(ins)} inputs given, the model has "
                         f"{len(names)} ({', '.join(names)})")
    # by the names _model_inputs gives (a dict-input model's keys)
    specs = dict(zip(names, getattr(model, "_inputs", []))) or \
        ({model._input.name: model._input}
         if getattr(model, "_input", None) is not None else {})
    for name, t in zip(names, ins):
        if not isinstance(t, ops.Tensor) or t.graph is not act.graph:
            raise TypeError(f"{who}: input {name!r}: expected a tensor of "
                            f"the map's element, got {type(t).__name__}")
        want = getattr(specs.get(name), "dtype", None)
        if (want == "string") != (t.index in act.strings):
            raise TypeError(
                f"{who}: input {name!r} takes {want or 'numbers'}; the "
                f"tensor given holds "
                f"{'strings' if t.index in act.strings else t.dtype}")
        width = getattr(specs.get(name), "width", None)
        got = t.shape[1] if len(t.shape) == 2 else 1
        if width is not None and (len(t.shape) > 2 or got != width):
            raise ValueError(f"{who}: input {name!r} takes [batch, "
                             f"{width}]; the tensor given is "
                             f"{ops._fmt(t.shape)}")
        if t.dtype not in ("int64", "int32") and want in (
                "string", "int64", "int32"):
            raise TypeError(f"{who}: input {name!r} takes {want}; the "
                            f"tensor given is {t.dtype}")
    width = int(lib.pasco_model_output_width(model._native))
    if getattr(last, "output_mode", "int") == "int":
        shape: tuple = (None,) if all(len(t.shape) == 1 for t in ins) \
            else (None, width)
        dtype = "int64"
    else:
        shape, dtype = (None, width), "float32"
    k = next((j for j, m in enumerate(act.models) if m is model), None)
    if k is None:
        act.models.append(model)
        k = len(act.models) - 1
    return act.graph.node("model", ins, shape, dtype, arg=k)


def call_layer(layer: Any, inputs: Any) -> Any:
    """layer(x) in a map: a "model" node of a model of that one layer
    (made once per layer and input kinds), as call_model."""
    from .layers import Input
    from .models import Model
    act = _active[-1]
    ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    for k, t in enumerate(ins):
        if not isinstance(t, ops.Tensor) or t.graph is not act.graph:
            raise TypeError(f"{act.what}: {layer.name}: input {k}: "
                            f"expected a tensor of the map's element, got "
                            f"{type(t).__name__}")
        if len(t.shape) > 2:
            raise ValueError(f"{act.what}: {layer.name}: input {k} has "
                             f"shape {ops._fmt(t.shape)}: a preprocessing "
                             f"layer takes [batch] or [batch, width]")
    sig = (id(layer), isinstance(inputs, (list, tuple))) + tuple(
        (t.shape, t.dtype, t.index in act.strings) for t in ins)
    m = act.wrappers.get(sig)
    if m is None:
        kin = [Input(shape=(t.shape[1] if len(t.shape) == 2 else 1,),
                     dtype="string" if t.index in act.strings else t.dtype)
               for t in ins]
        names = getattr(layer, "_input_names", None)
        out = layer(kin if isinstance(inputs, (list, tuple)) else kin[0])
        if names is not None:  # adapt's columns stay the user's
            layer._input_names = names
        m = Model(kin if len(kin) > 1 else kin[0], out)
        m.name = m.name or layer.name
        act.wrappers[sig] = m
    return call_model(m, ins if len(ins) > 1 else ins[0], False)


def element(ds: Any, node: Callable[..., Any]) -> Any:
    """A traced step's next(iterator) over a mapped or sliced dataset."""
    return ds._trace.element(node)


def struct_of(trace: Trace) -> Dict[str, Any]:
    """The first part of the element (x) as model inputs: name ->
    {"width", "ids"} (Dataset.input_spec)."""
    s = trace.struct
    x = s[0] if isinstance(s, tuple) and not _is_leaf(s) else s
    if _is_leaf(x):
        x = {"input": x}
    if not isinstance(x, dict):
        return {}
    return {k: {"width": v[1][1] if len(v[1]) > 1 else 1,
                "ids": v[2] != "float32"}
            for k, v in x.items() if _is_leaf(v)}
