"""pasco.ops: the ops custom layers, losses and steps are written in.

A custom layer's ``call``, a loss given to ``compile`` or a
``@pasco.function`` step is not run on values: it is *traced* once, on the
chief, with symbolic tensors (:class:`Tensor`: a static shape, None for
the batch, and a dtype). Each function here records one node of an op
graph (docs/GRAPHS.md) and returns the node's symbolic result; the graph
travels to the workers as JSON and the C gradient tape runs it there (no
Python runs on a worker)::

    from pasco import ops

    class Scale(pasco.layers.Layer):
        def build(self, input_shape):          # (None, width)
            self.w = self.add_weight(name="w", shape=(input_shape[-1],),
                                     initializer="ones")
        def call(self, x):
            return ops.relu(x * self.w + 1.0)  # operators are ops too

The names and arguments are Keras 3's (``keras.ops``): ``ops.matmul``,
``ops.sum(x, axis=None, keepdims=False)``, ``ops.concatenate(xs,
axis=0)``, ... Python numbers and numpy arrays become constants. Shapes
follow numpy's broadcasting and are checked as each op is traced: a
mismatch raises ValueError naming the layer (or loss) being traced, the
op and the shapes, before anything runs on the cluster. A Python ``if``
or ``while`` on a tensor's value cannot be traced (there is no value
yet): it raises TypeError; ``ops.where(condition, x, y)`` computes both
branches and picks element by element.

dtypes: "float32" and "float64" values (differentiable) and "int32" /
"int64" integer tensors (ids, labels; never differentiated). Arithmetic
runs on floats: an integer operand takes the float operand's dtype.

The tracer itself (for pasco.layers, pasco.losses and @pasco.function):
a :class:`Graph` is one graph being built; ``with trace(graph):`` makes it
the graph the ops record into (a stack: a trace inside a trace records
into the innermost); ``current_graph()`` is it. ``Graph.node`` appends any
node (a step's own nodes: next, read, gradient, ...), ``Graph.to_json``
writes the graph with its outputs.
"""

from __future__ import annotations

import builtins as _b
import contextlib
import numbers
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

Shape = tuple  # of int or None (unknown: the batch)

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")
DTYPES = FLOATS + INTS


def _fmt(shape: Sequence[Optional[int]]) -> str:
    return repr(tuple(shape))


class Graph:
    """One op graph being traced (docs/GRAPHS.md, "A graph").

    ``name`` is what errors name: "fm (FactorizationMachine)" for a layer,
    "loss focal" for a loss. ``inputs`` and ``weights`` are the graph's
    declared inputs and weights (their JSON specs), ``nodes`` its nodes,
    each a dict as the JSON writes it, in topological order (a node's
    ``in`` indexes earlier nodes only)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.inputs: List[dict] = []
        self.weights: List[dict] = []
        self.nodes: List[dict] = []
        self._weight_index: Dict[int, int] = {}   # id(Weight) -> index
        self._weight_node: Dict[int, Tensor] = {}  # id(Weight) -> its node

    def fail(self, op: str, message: str) -> ValueError:
        """The ValueError of an op traced wrongly: '<graph>: ops.<op>:
        <message>'."""
        return ValueError(f"{self.name}: ops.{op}: {message}")

    def node(self, op: str, ins: Sequence["Tensor"], shape: Shape,
             dtype: str, /, **attrs: Any) -> "Tensor":
        """Appends node op(ins) of static shape and dtype with attributes
        attrs (JSON values); returns its tensor. ins must be tensors of
        this graph."""
        for t in ins:
            if not isinstance(t, Tensor) or t.graph is not self:
                raise self.fail(op, f"an input {t!r} is not a tensor of "
                                f"this trace")
        n: Dict[str, Any] = {"op": op}
        if ins:
            n["in"] = [t.index for t in ins]
        n.update(attrs)
        n["shape"] = [-1 if d is None else int(d) for d in shape]
        n["dtype"] = dtype
        self.nodes.append(n)
        return Tensor(self, len(self.nodes) - 1, tuple(shape), dtype, op)

    def input(self, shape: Shape, dtype: str = "float32") -> "Tensor":
        """Declares the graph's next input; its "input" node."""
        k = len(self.inputs)
        self.inputs.append({"shape": [-1 if d is None else int(d)
                                      for d in shape], "dtype": dtype})
        return self.node("input", [], shape, dtype, index=k)

    def declare_weight(self, w: "Weight") -> None:
        """Adds w to the graph's weights (a layer's, in add_weight's
        order); its node is made when an op first uses it."""
        self._weight_index[id(w)] = len(self.weights)
        self.weights.append(w.spec())

    def weight(self, w: "Weight") -> "Tensor":
        """The "weight" node of w (one per graph)."""
        if id(w) not in self._weight_index:
            raise ValueError(f"{self.name}: weight {w.path!r} is not one of "
                             f"this trace's (a weight of another layer?)")
        if id(w) not in self._weight_node:
            self._weight_node[id(w)] = self.node(
                "weight", [], w.shape, w.dtype,
                index=self._weight_index[id(w)])
        return self._weight_node[id(w)]

    def constant(self, value: Any, shape: Shape, dtype: str) -> "Tensor":
        """A "constant" node: value a number or nested lists of shape."""
        return self.node("constant", [], shape, dtype, value=value)

    def to_json(self, outputs: Sequence["Tensor"]) -> dict:
        """The graph's JSON with these outputs (docs/GRAPHS.md): inputs
        and weights only where declared."""
        for t in outputs:
            if not isinstance(t, Tensor) or t.graph is not self:
                raise ValueError(f"{self.name}: an output {t!r} is not a "
                                 f"tensor of this trace")
        out: Dict[str, Any] = {}
        if self.inputs:
            out["inputs"] = [dict(i) for i in self.inputs]
        if self.weights:
            out["weights"] = [dict(w) for w in self.weights]
        out["nodes"] = [dict(n) for n in self.nodes]
        out["outputs"] = [t.index for t in outputs]
        return out


_stack: List[Graph] = []


@contextlib.contextmanager
def trace(graph: Graph) -> Iterator[Graph]:
    """Makes graph the one ops record into, until the block ends."""
    _stack.append(graph)
    try:
        yield graph
    finally:
        _stack.pop()


def current_graph() -> Graph:
    """The graph being traced (the innermost trace); RuntimeError when
    none is."""
    if not _stack:
        raise RuntimeError("pasco.ops: no trace in progress: ops are "
                           "symbolic and run only inside a traced call (a "
                           "Layer's call, a loss given to compile, a "
                           "@pasco.function)")
    return _stack[-1]


class Tensor:
    """A symbolic tensor: a node of the graph being traced. ``shape`` is
    a tuple (None: not known when tracing, the batch), ``dtype`` one of
    float32, float64, int32, int64. The operators + - * / @, unary -,
    < <= > >= == != and [...] slicing (steps of 1) are the ops of the same
    names; ``bool()`` (an if or while on a value) raises TypeError."""

    __array_ufunc__ = None  # numpy defers: array + tensor is our add

    def __init__(self, graph: Optional[Graph], index: int, shape: Shape,
                 dtype: str, op: str = "") -> None:
        self.graph, self.index = graph, index
        self.shape, self.dtype, self.op = tuple(shape), dtype, op

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return (f"<pasco.ops.Tensor {self.op} shape={_fmt(self.shape)} "
                f"dtype={self.dtype}>")

    def __bool__(self) -> bool:
        where = _stack[-1].name + ": " if _stack else ""
        raise TypeError(f"{where}control flow on a tensor's value (if, "
                        f"while, and/or, bool()) cannot be traced: the "
                        f"graph is built once, without values; use "
                        f"ops.where(condition, x, y) instead")

    def __iter__(self) -> Iterator[Any]:
        raise TypeError(f"iterating over a symbolic tensor of shape "
                        f"{_fmt(self.shape)} cannot be traced: index it "
                        f"(x[:, 0]) or use ops.slice")

    __hash__ = object.__hash__

    def __add__(self, o: Any) -> "Tensor": return add(self, o)
    def __radd__(self, o: Any) -> "Tensor": return add(o, self)
    def __sub__(self, o: Any) -> "Tensor": return subtract(self, o)
    def __rsub__(self, o: Any) -> "Tensor": return subtract(o, self)
    def __mul__(self, o: Any) -> "Tensor": return multiply(self, o)
    def __rmul__(self, o: Any) -> "Tensor": return multiply(o, self)
    def __truediv__(self, o: Any) -> "Tensor": return divide(self, o)
    def __rtruediv__(self, o: Any) -> "Tensor": return divide(o, self)
    def __matmul__(self, o: Any) -> "Tensor": return matmul(self, o)
    def __rmatmul__(self, o: Any) -> "Tensor": return matmul(o, self)
    def __neg__(self) -> "Tensor": return negative(self)
    def __pos__(self) -> "Tensor": return self
    def __abs__(self) -> "Tensor": return abs(self)
    def __lt__(self, o: Any) -> "Tensor": return less(self, o)
    def __le__(self, o: Any) -> "Tensor": return less_equal(self, o)
    def __gt__(self, o: Any) -> "Tensor": return greater(self, o)
    def __ge__(self, o: Any) -> "Tensor": return greater_equal(self, o)
    def __eq__(self, o: Any) -> "Tensor": return equal(self, o)  # type: ignore[override]
    def __ne__(self, o: Any) -> "Tensor": return not_equal(self, o)  # type: ignore[override]

    def __getitem__(self, key: Any) -> "Tensor":
        return _getitem(self, key)


class Weight(Tensor):
    """A layer's weight (``Layer.add_weight``): used in ops like a
    tensor; each trace of the layer reads it through its "weight" node.
    ``path`` is its variable's name, "<layer>/<name>"."""

    def __init__(self, layer_name: str, name: str, shape: Shape, dtype: str,
                 initializer: dict, regularizer: Optional[dict],
                 trainable: bool) -> None:
        super().__init__(None, -1, shape, dtype, "weight")
        self.name, self.path = name, f"{layer_name}/{name}"
        self.initializer, self.regularizer = initializer, regularizer
        self.trainable = trainable

    def spec(self) -> dict:
        return {"name": self.name, "shape": list(self.shape),
                "dtype": self.dtype, "initializer": self.initializer,
                "regularizer": self.regularizer, "trainable": self.trainable}

    def __repr__(self) -> str:
        return (f"<pasco.ops.Weight {self.path} shape={_fmt(self.shape)} "
                f"dtype={self.dtype}>")


# ---- lifting values into the graph ---------------------------------------

def _const_shape(v: Any) -> tuple:
    if isinstance(v, (list, tuple)):
        inner = {_const_shape(x) for x in v}
        if len(inner) > 1:
            raise ValueError(f"a constant's nested lists are ragged: {v!r}")
        return (len(v),) + (inner.pop() if inner else ())
    return ()


def _lift(g: Graph, op: str, x: Any, like: Optional[str] = None) -> Tensor:
    """x as a tensor of g: a tensor of g, a weight, or a constant (a
    number, nested lists or a numpy array) of like's dtype where like is
    a float dtype, else float32 (int64 for integers)."""
    if isinstance(x, Weight):
        return g.weight(x)
    if isinstance(x, Tensor):
        if x.graph is not g:
            raise g.fail(op, f"{x!r} belongs to another trace "
                         f"({x.graph.name if x.graph else 'none'}): a "
                         f"tensor is used in the trace that made it only")
        return x
    if hasattr(x, "tolist") and hasattr(x, "dtype"):  # numpy
        kind = getattr(x.dtype, "kind", "f")
        x, is_int = x.tolist(), kind in "iub"
    elif isinstance(x, bool) or not isinstance(x, (numbers.Real, list,
                                                   tuple)):
        raise TypeError(f"{g.name}: ops.{op}: expected a tensor, a number "
                        f"or a list of numbers, got {type(x).__name__}")
    else:
        flat = _flatten(x)
        if not all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                   for v in flat):
            raise TypeError(f"{g.name}: ops.{op}: a constant must be "
                            f"numbers, got {x!r}")
        is_int = all(isinstance(v, numbers.Integral) for v in flat)
    shape = _const_shape(x)
    if like in FLOATS:
        dtype = like
    elif is_int and like in INTS:
        dtype = like
    else:
        dtype = "int64" if is_int and like is not None else "float32"
    if dtype in FLOATS:
        x = _map(float, x)
    return g.constant(x, shape, dtype)


def _flatten(v: Any) -> list:
    if isinstance(v, (list, tuple)):
        return [y for x in v for y in _flatten(x)]
    return [v]


def _map(f: Callable[[Any], Any], v: Any) -> Any:
    return [_map(f, x) for x in v] if isinstance(v, (list, tuple)) else f(v)


def _lift_all(g: Graph, op: str, xs: Sequence[Any]) -> List[Tensor]:
    """Tensors first, then constants of the first float tensor's dtype
    (weakly typed numbers, as Keras and numpy treat Python scalars)."""
    like = next((x.dtype for x in xs if isinstance(x, Tensor) and
                 x.dtype in FLOATS), None)
    if like is None:
        like = next((x.dtype for x in xs if isinstance(x, Tensor)), None)
    return [_lift(g, op, x, like) for x in xs]


def _float_dtype(g: Graph, op: str, ts: Sequence[Tensor]) -> str:
    """The float dtype of an arithmetic op on ts: their float dtype
    (integers convert to it); mixed float32 and float64 are refused."""
    fl = {t.dtype for t in ts if t.dtype in FLOATS}
    if len(fl) > 1:
        raise g.fail(op, f"float32 and float64 operands "
                     f"({', '.join(_fmt(t.shape) + ' ' + t.dtype for t in ts)})"
                     f": cast one with ops.cast")
    if not fl:
        raise g.fail(op, f"integer operands only "
                     f"({', '.join(t.dtype for t in ts)}): arithmetic runs on "
                     f"floats; cast one with ops.cast(x, 'float32')")
    return fl.pop()


def _axis(g: Graph, op: str, axis: Any, rank: int, shape: Shape) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise g.fail(op, f"axis must be an integer, got {axis!r}")
    if not -rank <= axis < rank:
        raise g.fail(op, f"axis {axis} is out of range for shape "
                     f"{_fmt(shape)}")
    return axis % rank


def _broadcast(g: Graph, op: str, *shapes: Shape) -> Shape:
    """numpy's broadcast of shapes; None (unknown) against n > 1 is n,
    against 1 or None stays None."""
    rank = _b.max(len(s) for s in shapes)
    out: List[Optional[int]] = []
    for i in range(rank):
        dims = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        known = list(dict.fromkeys(d for d in dims
                                   if d is not None and d != 1))
        if len(known) > 1:
            raise g.fail(op, f"shapes {' and '.join(_fmt(s) for s in shapes)}"
                         f" cannot be broadcast (axis {i - rank}: "
                         f"{' against '.join(str(d) for d in known)})")
        if known:
            out.append(known[0])
        else:
            out.append(None if None in dims else 1)
    return tuple(out)


def _same(a: Optional[int], b: Optional[int]) -> bool:
    return a is None or b is None or a == b


# ---- elementwise -----------------------------------------------------------

def _binary(op: str, x1: Any, x2: Any) -> Tensor:
    g = current_graph()
    a, b = _lift_all(g, op, [x1, x2])
    dtype = _float_dtype(g, op, [a, b])
    return g.node(op, [a, b], _broadcast(g, op, a.shape, b.shape), dtype)


def add(x1: Any, x2: Any) -> Tensor:
    """x1 + x2, broadcasting."""
    return _binary("add", x1, x2)


def subtract(x1: Any, x2: Any) -> Tensor:
    """x1 - x2, broadcasting."""
    return _binary("subtract", x1, x2)


def multiply(x1: Any, x2: Any) -> Tensor:
    """x1 * x2, broadcasting."""
    return _binary("multiply", x1, x2)


def divide(x1: Any, x2: Any) -> Tensor:
    """x1 / x2, broadcasting."""
    return _binary("divide", x1, x2)


def maximum(x1: Any, x2: Any) -> Tensor:
    """The larger of x1 and x2, element by element (the gradient goes to
    the first on ties)."""
    return _binary("maximum", x1, x2)


def minimum(x1: Any, x2: Any) -> Tensor:
    """The smaller of x1 and x2, element by element."""
    return _binary("minimum", x1, x2)


def _compare(op: str, x1: Any, x2: Any) -> Tensor:
    g = current_graph()
    a, b = _lift_all(g, op, [x1, x2])
    fl = [t.dtype for t in (a, b) if t.dtype in FLOATS]
    if len(set(fl)) > 1:
        _float_dtype(g, op, [a, b])  # raises, naming both
    return g.node(op, [a, b], _broadcast(g, op, a.shape, b.shape),
                  fl[0] if fl else "float32")


def greater(x1: Any, x2: Any) -> Tensor:
    """1.0 where x1 > x2, else 0.0 (no gradient)."""
    return _compare("greater", x1, x2)


def greater_equal(x1: Any, x2: Any) -> Tensor:
    """1.0 where x1 >= x2, else 0.0."""
    return _compare("greater_equal", x1, x2)


def less(x1: Any, x2: Any) -> Tensor:
    """1.0 where x1 < x2, else 0.0."""
    return _compare("less", x1, x2)


def less_equal(x1: Any, x2: Any) -> Tensor:
    """1.0 where x1 <= x2, else 0.0."""
    return _compare("less_equal", x1, x2)


def equal(x1: Any, x2: Any) -> Tensor:
    """1.0 where x1 == x2, else 0.0."""
    return _compare("equal", x1, x2)


def not_equal(x1: Any, x2: Any) -> Tensor:
    """1.0 where x1 != x2, else 0.0."""
    return _compare("not_equal", x1, x2)


def where(condition: Any, x1: Any, x2: Any) -> Tensor:
    """x1 where condition is nonzero, else x2 (both computed),
    broadcasting the three."""
    g = current_graph()
    c = _lift(g, "where", condition, "float32")
    a, b = _lift_all(g, "where", [x1, x2])
    dtype = _float_dtype(g, "where", [a, b])
    return g.node("where", [c, a, b],
                  _broadcast(g, "where", c.shape, a.shape, b.shape), dtype)


def _unary(op: str, x: Any, **attrs: Any) -> Tensor:
    g = current_graph()
    t = _lift(g, op, x)
    if t.dtype in INTS:
        t = g.node("cast", [t], t.shape, "float32")
    return g.node(op, [t], t.shape, t.dtype, **attrs)


def exp(x: Any) -> Tensor:
    """e ** x."""
    return _unary("exp", x)


def log(x: Any) -> Tensor:
    """The natural logarithm."""
    return _unary("log", x)


def sqrt(x: Any) -> Tensor:
    """The square root."""
    return _unary("sqrt", x)


def square(x: Any) -> Tensor:
    """x * x."""
    return _unary("square", x)


def abs(x: Any) -> Tensor:  # noqa: A001 (Keras's name)
    """|x|."""
    return _unary("abs", x)


absolute = abs


def negative(x: Any) -> Tensor:
    """-x."""
    return _unary("negative", x)


def sigmoid(x: Any) -> Tensor:
    """1 / (1 + exp(-x))."""
    return _unary("sigmoid", x)


def relu(x: Any) -> Tensor:
    """max(x, 0)."""
    return _unary("relu", x)


def tanh(x: Any) -> Tensor:
    """The hyperbolic tangent."""
    return _unary("tanh", x)


def stop_gradient(variable: Any) -> Tensor:
    """variable, through which no gradient flows."""
    g = current_graph()
    t = _lift(g, "stop_gradient", variable)
    return g.node("stop_gradient", [t], t.shape, t.dtype)


def _number(g: Graph, op: str, arg: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise g.fail(op, f"{arg} must be a number, got {v!r}")
    return float(v)


def clip(x: Any, x_min: float, x_max: float) -> Tensor:
    """x limited to [x_min, x_max] (numbers); no gradient outside."""
    g = current_graph()
    lo = _number(g, "clip", "x_min", x_min)
    hi = _number(g, "clip", "x_max", x_max)
    if lo > hi:
        raise g.fail("clip", f"x_min {lo} is above x_max {hi}")
    return _unary("clip", x, min=lo, max=hi)


def softmax(x: Any, axis: int = -1) -> Tensor:
    """exp(x) / sum(exp(x)) along axis."""
    g = current_graph()
    t = _lift(g, "softmax", x)
    _axis(g, "softmax", axis, t.ndim, t.shape)
    return _unary("softmax", t, axis=axis)


def log_softmax(x: Any, axis: int = -1) -> Tensor:
    """log(softmax(x)) along axis, computed stably."""
    g = current_graph()
    t = _lift(g, "log_softmax", x)
    _axis(g, "log_softmax", axis, t.ndim, t.shape)
    return _unary("log_softmax", t, axis=axis)


def l2_normalize(x: Any, axis: int = -1, epsilon: float = 1e-12) -> Tensor:
    """x / sqrt(max(sum(x ** 2, axis), epsilon)) (TensorFlow's)."""
    g = current_graph()
    t = _lift(g, "l2_normalize", x)
    _axis(g, "l2_normalize", axis, t.ndim, t.shape)
    eps = _number(g, "l2_normalize", "epsilon", epsilon)
    return _unary("l2_normalize", t, axis=axis, epsilon=eps)


def normalize(x: Any, axis: int = -1, order: int = 2,
              epsilon: Optional[float] = None) -> Tensor:
    """Keras's ops.normalize: the L2 norm only (order 2)."""
    if order != 2:
        raise current_graph().fail("normalize", f"order {order!r}: only 2 "
                                   f"(l2_normalize) is supported")
    return l2_normalize(x, axis, 1e-12 if epsilon is None else epsilon)


def dropout(x: Any, rate: float, noise_shape: Any = None,
            seed: Optional[int] = None) -> Tensor:
    """Keras's dropout: on a training tape, zeroes a rate of x and scales
    the rest by 1 / (1 - rate); the identity otherwise."""
    g = current_graph()
    r = _number(g, "dropout", "rate", rate)
    if not 0 <= r < 1 or noise_shape is not None or seed is not None:
        raise g.fail("dropout", f"rate must be in [0, 1) (got {rate!r}); "
                     f"noise_shape and seed are not supported")
    return _unary("dropout", x, rate=r)


def cast(x: Any, dtype: str) -> Tensor:
    """x converted to dtype (float to int truncates toward zero)."""
    g = current_graph()
    if dtype not in DTYPES:
        raise g.fail("cast", f"dtype must be one of {', '.join(DTYPES)}, "
                     f"got {dtype!r}")
    t = _lift(g, "cast", x)
    return t if t.dtype == dtype else g.node("cast", [t], t.shape, dtype)


from ._ops_shape import (  # noqa: E402 (they use the tracer above)
    arange_like, argmax, batch_dot, binary_crossentropy,
    categorical_crossentropy, concatenate, dot, expand_dims, gather, matmul,
    max, mean, mean_squared_error, one_hot, reduce_max, reduce_mean,
    reduce_sum, reshape, slice, sparse_categorical_crossentropy, squeeze,
    sum, take, transpose, _getitem)

# The graph ops this module emits (docs/GRAPHS.md's Ops table; the leaves
# input, weight and constant aside).
OP_NAMES = frozenset("""add subtract multiply divide maximum minimum matmul
dot batch_dot reduce_sum reduce_mean reduce_max concat reshape transpose
expand_dims squeeze slice gather one_hot exp log sqrt square abs negative
clip where greater greater_equal less less_equal equal not_equal argmax
sigmoid relu tanh softmax log_softmax l2_normalize stop_gradient cast
dropout arange_like sparse_categorical_crossentropy categorical_crossentropy
binary_crossentropy mean_squared_error logit log_probs""".split())

__all__ = ["Tensor", "Weight", "Graph", "trace", "current_graph",
           "OP_NAMES", "add", "subtract", "multiply", "divide", "maximum",
           "minimum", "greater", "greater_equal", "less", "less_equal",
           "equal", "not_equal", "where", "exp", "log", "sqrt", "square",
           "abs", "absolute", "negative", "sigmoid", "relu", "tanh",
           "stop_gradient", "clip", "softmax", "log_softmax",
           "l2_normalize", "normalize", "dropout", "cast", "matmul", "dot",
           "batch_dot", "sum", "mean", "max", "reduce_sum", "reduce_mean",
           "reduce_max", "concatenate", "reshape", "transpose",
           "expand_dims", "squeeze", "slice", "take", "gather", "one_hot",
           "argmax", "arange_like", "sparse_categorical_crossentropy",
           "categorical_crossentropy", "binary_crossentropy",
           "mean_squared_error"]
