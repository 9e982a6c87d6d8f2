"""TensorFlow's top-level names at pasco's top level, and ops on a
functional model's tensors.

``pasco.cast``, ``pasco.greater``, ``pasco.reduce_mean``, ``pasco.add_n``,
... are ``tf.cast``, ``tf.greater``, ... with TensorFlow's arguments
(``reduce_mean(input_tensor, axis=None, keepdims=False)``,
``concat(values, axis)``, ``one_hot(indices, depth)``, ...), recorded as
:mod:`pasco.ops` records them; ``pasco.ops`` keeps Keras 3's names.
``pasco.string``, ``pasco.int64``, ``pasco.int32``, ``pasco.float32`` and
``pasco.float64`` are dtypes: strings equal to "string", "int64", ...
(with TensorFlow's ``.name``), so they go wherever a dtype string goes.

Called on a functional model's tensors (``pasco.Input`` or a layer's
output), these and the ``pasco.ops`` functions make a layer, as Keras 3
wraps an op on a KerasTensor::

    emb_output = pasco.reduce_mean(emb_layer(model_input), axis=1)

The mean over axis 1 of a sequence [batch, steps, dim] (an
``Embedding(combiner=None)``'s output) is the built-in
GlobalAveragePooling1D; any other op is a Lambda of it, traced into a
Custom layer (inputs and output [batch, width]). Either is in the
model's JSON config, so a saved model loads with that layer in the op's
place.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import ops
from ._layers_merge import GlobalAveragePooling1D, Lambda
from .layers import KerasTensor, _auto_name


class DType(str):
    """A dtype name (tf.int64 ...): equal to its string, with .name."""

    @property
    def name(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"pasco.{self}"


string = DType("string")
int32 = DType("int32")
int64 = DType("int64")
float32 = DType("float32")
float64 = DType("float64")

DTYPES = {"string": string, "int32": int32, "int64": int64,
          "float32": float32, "float64": float64}


# ---- ops on a functional model's tensors ----------------------------------

def _keras_tensors(args: Sequence[Any], kwargs: Dict[str, Any]
                   ) -> List[KerasTensor]:
    out: List[KerasTensor] = []
    for a in list(args) + list(kwargs.values()):
        for b in (a if isinstance(a, (list, tuple)) else [a]):
            if isinstance(b, KerasTensor) and b not in out:
                out.append(b)
    return out


class _OpLayer(Lambda):
    """An op called on a functional model's tensors: a Lambda of it,
    but the mean over the steps of a sequence is GlobalAveragePooling1D."""

    def __init__(self, fn: Callable[..., Any], op: str, args: Sequence[Any],
                 kwargs: Dict[str, Any], ins: List[KerasTensor]) -> None:
        self._fn, self._op = fn, op
        self._args, self._kwargs, self._ins = list(args), dict(kwargs), ins
        super().__init__(self._apply, name=_auto_name(op))

    def _apply(self, inputs: Any) -> Any:
        ts = inputs if self._called_on_list else [inputs]
        sub = {id(k): t for k, t in zip(self._ins, ts)}

        def put(a: Any) -> Any:
            if isinstance(a, (list, tuple)):
                return type(a)(put(b) for b in a)
            return sub.get(id(a), a)
        return self._fn(*[put(a) for a in self._args],
                        **{k: put(v) for k, v in self._kwargs.items()})

    def _pooling(self, shapes: List[Tuple[int, ...]]) -> bool:
        """Whether this is the mean over a sequence's steps."""
        if self._op not in ("reduce_mean", "mean") or len(shapes) != 1 or \
                len(shapes[0]) != 2:
            return False
        kw = dict(zip(("x", "axis", "keepdims"), self._args))
        kw.update({"x" if k == "input_tensor" else k: v
                   for k, v in self._kwargs.items()})
        return kw.get("axis") in (1, -2, (1,), [1], (-2,), [-2]) and \
            not kw.get("keepdims", False)

    def _json_layer(self, widths: List[Any], dtypes: List[str]
                    ) -> Tuple[Dict[str, Any], Any]:
        shapes = [tuple(w) if isinstance(w, (tuple, list)) else (w,)
                  for w in widths]
        if self._pooling(shapes):
            pool = GlobalAveragePooling1D(name=self.name)
            return pool._json_layer(widths, dtypes)
        return super()._json_layer(widths, dtypes)


def symbolic(fn: Callable[..., Any], op: Optional[str] = None
             ) -> Callable[..., Any]:
    """fn, which on a functional model's tensors makes an op layer."""
    name = op or fn.__name__

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        ins = _keras_tensors(args, kwargs)
        if not ins:
            return fn(*args, **kwargs)
        layer = _OpLayer(fn, name, args, kwargs, ins)
        return layer(ins if len(ins) > 1 else ins[0])
    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


# pasco.ops's functions that take a functional model's tensors too
_OPS = ("add", "subtract", "multiply", "divide", "maximum", "minimum",
        "greater", "greater_equal", "less", "less_equal", "equal",
        "not_equal", "where", "exp", "log", "sqrt", "square", "abs",
        "absolute", "negative", "sigmoid", "relu", "tanh", "clip",
        "softmax", "log_softmax", "l2_normalize", "normalize", "cast",
        "matmul", "dot", "batch_dot", "sum", "mean", "max", "reduce_sum",
        "reduce_mean", "reduce_max", "concatenate", "reshape", "transpose",
        "expand_dims", "squeeze", "gather", "take", "one_hot", "argmax",
        "stop_gradient")


def wrap_ops() -> None:
    """Makes pasco.ops's functions take a functional model's tensors."""
    for n in _OPS:
        f = getattr(ops, n)
        if not hasattr(f, "__wrapped__"):
            setattr(ops, n, symbolic(f, n))


# ---- TensorFlow's names ----------------------------------------------------

def add_n(inputs: Sequence[Any]) -> Any:
    """tf.add_n: the sum of a list of tensors of one shape."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise ValueError(f"add_n: inputs: expected a non-empty list of "
                         f"tensors of one shape, got {inputs!r}")
    shapes = [tuple(t.shape) if isinstance(t, ops.Tensor) else np.shape(t)
              for t in inputs]
    for k, s in enumerate(shapes[1:], 1):
        if len(s) != len(shapes[0]) or any(
                a is not None and b is not None and a != b
                for a, b in zip(s, shapes[0])):
            raise ValueError(f"add_n: inputs[{k}] has shape {s}, inputs[0] "
                             f"{shapes[0]}: add_n adds tensors of one shape")
    if not any(isinstance(t, ops.Tensor) for t in inputs):
        return np.sum([np.asarray(t) for t in inputs], axis=0)
    out = inputs[0]
    for t in inputs[1:]:
        out = ops.add(out, t)
    return out


def _tf(fn: Callable[..., Any], name: str, doc: str) -> Callable[..., Any]:
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return symbolic(fn, name)


def _reduce(op: str) -> Callable[..., Any]:
    def f(input_tensor: Any, axis: Any = None, keepdims: bool = False,
          name: Optional[str] = None) -> Any:
        return getattr(ops, op)(input_tensor, axis=axis, keepdims=keepdims)
    return _tf(f, "reduce_" + op, f"tf.reduce_{op}(input_tensor, axis=None, "
               f"keepdims=False): pasco.ops.{op}.")


reduce_sum = _reduce("sum")
reduce_mean = _reduce("mean")
reduce_max = _reduce("max")
concat = _tf(lambda values, axis, name=None: ops.concatenate(values, axis),
             "concat", "tf.concat(values, axis): pasco.ops.concatenate.")
transpose = _tf(lambda a, perm=None, name=None: ops.transpose(a, perm),
                "transpose", "tf.transpose(a, perm=None).")
one_hot = _tf(lambda indices, depth, name=None: ops.one_hot(indices, depth),
              "one_hot", "tf.one_hot(indices, depth): float32 rows.")
argmax = _tf(lambda input, axis=None, name=None: ops.argmax(
    input, 0 if axis is None else axis), "argmax",
    "tf.argmax(input, axis=None): the index of the largest value along "
    "axis (default 0, TensorFlow's), int64.")
gather = _tf(lambda params, indices, axis=None, name=None: ops.gather(
    params, indices, 0 if axis is None else axis), "gather",
    "tf.gather(params, indices, axis=None): along axis (default 0).")
clip_by_value = _tf(lambda t, clip_value_min, clip_value_max, name=None:
                    ops.clip(t, clip_value_min, clip_value_max),
                    "clip_by_value", "tf.clip_by_value: pasco.ops.clip.")
reshape = _tf(lambda tensor, shape, name=None: ops.reshape(tensor, shape),
              "reshape", "tf.reshape(tensor, shape).")
expand_dims = _tf(lambda input, axis, name=None: ops.expand_dims(input,
                                                                  axis),
                  "expand_dims", "tf.expand_dims(input, axis).")
squeeze = _tf(lambda input, axis=None, name=None: ops.squeeze(input, axis),
              "squeeze", "tf.squeeze(input, axis=None).")


def _same(op: str) -> Callable[..., Any]:
    """tf.<op>: pasco.ops.<op>, the name argument taken and ignored."""
    f = getattr(ops, op)
    base = getattr(f, "__wrapped__", f)

    def g(*args: Any, name: Optional[str] = None, **kwargs: Any) -> Any:
        return base(*args, **kwargs)
    return _tf(g, op, f"tf.{op}: pasco.ops.{op}.")


_SAME = ("add", "subtract", "multiply", "divide", "maximum", "minimum",
         "greater", "greater_equal", "less", "less_equal", "equal",
         "not_equal", "where", "exp", "log", "sqrt", "square", "abs",
         "negative", "sigmoid", "tanh", "cast", "matmul", "stop_gradient")
globals().update({n: _same(n) for n in _SAME})

__all__ = ["string", "int32", "int64", "float32", "float64", "add_n",
           "reduce_sum", "reduce_mean", "reduce_max", "concat",
           "transpose", "one_hot", "argmax", "gather", "clip_by_value",
           "reshape", "expand_dims", "squeeze"] + list(_SAME)
