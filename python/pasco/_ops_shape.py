"""The pasco.ops whose result shape is more than broadcasting: products,
reductions, reshaping and indexing, and the losses as ops. Part of
:mod:`pasco.ops` (which re-exports every function here); each records a
node into the graph being traced and checks its operands' shapes, raising
ValueError '<layer>: ops.<op>: <shapes and what is wrong>'."""

from __future__ import annotations

import builtins as _b
from typing import Any, List, Optional, Sequence, Union

from .ops import (FLOATS, INTS, Graph, Tensor, _axis, _float_dtype, _fmt,
                  _lift, _lift_all, _same, cast, current_graph)

Axis = Union[int, Sequence[int], None]


def _dim(a: Optional[int], b: Optional[int]) -> Optional[int]:
    return a if a is not None else b


# ---- products --------------------------------------------------------------

def matmul(x1: Any, x2: Any) -> Tensor:
    """The matrix product: [n, m] @ [m, k] is [n, k]; rank 3 operands
    multiply batch by batch ([b, n, m] @ [b, m, k]); [b, n, m] @ [m, k]
    multiplies each of the b matrices."""
    g = current_graph()
    a, b = _lift_all(g, "matmul", [x1, x2])
    dtype = _float_dtype(g, "matmul", [a, b])
    pair = f"shapes {_fmt(a.shape)} and {_fmt(b.shape)}"
    if a.ndim == 3 and b.ndim == 2:
        if a.shape[1] is None or a.shape[2] is None:
            raise g.fail("matmul", f"{pair}: a rank 3 @ rank 2 product "
                         f"needs the first operand's last two dimensions")
        flat = reshape(a, (-1, a.shape[2]))
        return reshape(matmul(flat, b), (-1, a.shape[1], b.shape[1]))
    if (a.ndim, b.ndim) not in ((2, 2), (3, 3)):
        raise g.fail("matmul", f"{pair}: matmul takes two rank 2 or two "
                     f"rank 3 operands (or rank 3 @ rank 2)")
    if not _same(a.shape[-1], b.shape[-2]):
        raise g.fail("matmul", f"{pair}: inner dimensions {a.shape[-1]} "
                     f"and {b.shape[-2]} differ")
    if a.ndim == 3 and not _same(a.shape[0], b.shape[0]):
        raise g.fail("matmul", f"{pair}: batch dimensions {a.shape[0]} and "
                     f"{b.shape[0]} differ")
    shape = a.shape[:-1] + (b.shape[-1],)
    if a.ndim == 3:
        shape = (_dim(a.shape[0], b.shape[0]),) + shape[1:]
    return g.node("matmul", [a, b], shape, dtype, transpose_a=False,
                  transpose_b=False)


def dot(x1: Any, x2: Any) -> Tensor:
    """numpy's dot of rank 1 and 2 operands: [m]·[m] is a scalar,
    [n, m]·[m] is [n], [m]·[m, k] is [k], [n, m]·[m, k] is [n, k]."""
    g = current_graph()
    a, b = _lift_all(g, "dot", [x1, x2])
    dtype = _float_dtype(g, "dot", [a, b])
    pair = f"shapes {_fmt(a.shape)} and {_fmt(b.shape)}"
    if a.ndim not in (1, 2) or b.ndim not in (1, 2):
        raise g.fail("dot", f"{pair}: dot takes rank 1 or 2 operands "
                     f"(ops.matmul or ops.batch_dot for more)")
    inner = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if not _same(a.shape[-1], inner):
        raise g.fail("dot", f"{pair}: inner dimensions {a.shape[-1]} and "
                     f"{inner} differ")
    return g.node("dot", [a, b], a.shape[:-1] + b.shape[1:], dtype)


def batch_dot(x: Any, y: Any, axes: Union[int, Sequence[int], None] = None
              ) -> Tensor:
    """Keras's batch_dot of rank 2 or 3 operands, example by example:
    [b, n]·[b, n] (axes 1) is [b, 1]; [b, n, m]·[b, m, k] (axes (2, 1))
    is [b, n, k]. axes default: the last of x against y's last (rank 2) or
    its second (rank 3)."""
    g = current_graph()
    a, b = _lift_all(g, "batch_dot", [x, y])
    dtype = _float_dtype(g, "batch_dot", [a, b])
    pair = f"shapes {_fmt(a.shape)} and {_fmt(b.shape)}"
    if a.ndim not in (2, 3) or b.ndim not in (2, 3):
        raise g.fail("batch_dot", f"{pair}: batch_dot takes rank 2 or 3 "
                     f"operands")
    if axes is None:
        axes = [a.ndim - 1, b.ndim - 1 if b.ndim == 2 else b.ndim - 2]
    elif isinstance(axes, int) and not isinstance(axes, bool):
        axes = [axes, axes]
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise g.fail("batch_dot", f"axes must be an integer or two, got "
                     f"{axes!r}")
    i = _axis(g, "batch_dot", axes[0], a.ndim, a.shape)
    j = _axis(g, "batch_dot", axes[1], b.ndim, b.shape)
    if i == 0 or j == 0:
        raise g.fail("batch_dot", f"{pair}: axes {list(axes)} take the "
                     f"batch axis (0), which batch_dot keeps")
    if not _same(a.shape[0], b.shape[0]):
        raise g.fail("batch_dot", f"{pair}: batch dimensions {a.shape[0]} "
                     f"and {b.shape[0]} differ")
    if not _same(a.shape[i], b.shape[j]):
        raise g.fail("batch_dot", f"{pair}: axes {i} and {j} have sizes "
                     f"{a.shape[i]} and {b.shape[j]}")
    shape = ((_dim(a.shape[0], b.shape[0]),) + a.shape[1:i] + a.shape[i + 1:]
             + b.shape[1:j] + b.shape[j + 1:])
    if len(shape) == 1:
        shape += (1,)
    return g.node("batch_dot", [a, b], shape, dtype, axes=[i, j])


# ---- reductions ----------------------------------------------------------

def _reduce(op: str, x: Any, axis: Axis, keepdims: bool) -> Tensor:
    g = current_graph()
    t = _lift(g, op, x)
    if t.dtype in INTS:
        t = cast(t, "float32")
    if axis is None:
        axes: List[int] = list(range(t.ndim))
        attr: Any = None
    elif isinstance(axis, (list, tuple)):
        axes = [_axis(g, op, a, t.ndim, t.shape) for a in axis]
        attr = axes
    else:
        axes = [_axis(g, op, axis, t.ndim, t.shape)]
        attr = axes[0]
    if len(set(axes)) != len(axes):
        raise g.fail(op, f"axis {axis!r} names an axis twice")
    if keepdims:
        shape = tuple(1 if k in axes else d for k, d in enumerate(t.shape))
    else:
        shape = tuple(d for k, d in enumerate(t.shape) if k not in axes)
    return g.node(op, [t], shape, t.dtype, axis=attr,
                  keepdims=bool(keepdims))


def sum(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The sum over axis (an int, a list, or None: every axis)."""
    return _reduce("reduce_sum", x, axis, keepdims)


def mean(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """The mean over axis (an int, a list, or None: every axis)."""
    return _reduce("reduce_mean", x, axis, keepdims)


def max(x: Any, axis: Axis = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The maximum over axis (the gradient to the first maximum)."""
    return _reduce("reduce_max", x, axis, keepdims)


reduce_sum, reduce_mean, reduce_max = sum, mean, max


# ---- shapes ---------------------------------------------------------------

def concatenate(xs: Sequence[Any], axis: int = 0) -> Tensor:
    """xs (1 to 64 tensors of one rank) joined along axis; the other
    dimensions must agree."""
    g = current_graph()
    if not isinstance(xs, (list, tuple)) or not 1 <= len(xs) <= 64:
        raise g.fail("concatenate", f"expected a list of 1 to 64 tensors, "
                     f"got {xs!r}")
    ts = _lift_all(g, "concatenate", list(xs))
    dtype = _float_dtype(g, "concatenate", ts)
    shapes = " and ".join(_fmt(t.shape) for t in ts)
    if len({t.ndim for t in ts}) != 1:
        raise g.fail("concatenate", f"shapes {shapes}: ranks differ")
    ax = _axis(g, "concatenate", axis, ts[0].ndim, ts[0].shape)
    out: List[Optional[int]] = []
    for k in range(ts[0].ndim):
        dims = [t.shape[k] for t in ts]
        if k == ax:
            out.append(None if None in dims else _b.sum(dims))
            continue
        known = list(dict.fromkeys(d for d in dims if d is not None))
        if len(known) > 1:
            raise g.fail("concatenate", f"shapes {shapes}: axis {k} differs "
                         f"({' against '.join(map(str, known))}) "
                         f"and only axis {ax} may")
        out.append(known[0] if known else None)
    return g.node("concat", ts, tuple(out), dtype, axis=ax)


def reshape(x: Any, newshape: Union[int, Sequence[int]]) -> Tensor:
    """x with newshape (the same count of elements); one entry may be -1
    (inferred), and the batch, unknown when tracing, must be that -1:
    ops.reshape(x, (-1, 4, 2))."""
    g = current_graph()
    t = _lift(g, "reshape", x)
    shape = [newshape] if isinstance(newshape, int) else list(newshape)
    shape = [-1 if d is None else d for d in shape]
    if not all(isinstance(d, int) and not isinstance(d, bool) and
               (d > 0 or d == -1) for d in shape) or shape.count(-1) > 1:
        raise g.fail("reshape", f"shape {tuple(newshape)!r}: positive "
                     f"sizes and at most one -1")
    others = 1
    for d in shape:
        others *= d if d != -1 else 1
    known = None not in t.shape
    total = 1
    for d in t.shape:
        total *= d if d is not None else 1
    where = f"shape {_fmt(t.shape)} to {tuple(shape)!r}"
    if -1 not in shape and not known:
        raise g.fail("reshape", f"{where}: the input's batch is unknown "
                     f"when tracing: write the batch dimension -1")
    if known and (total % others if -1 in shape else total != others):
        raise g.fail("reshape", f"{where}: {total} elements do not fit")
    out = tuple((total // others if known else None) if d == -1 else d
                for d in shape)
    return g.node("reshape", [t], out, t.dtype, shape=shape)


def transpose(x: Any, axes: Optional[Sequence[int]] = None) -> Tensor:
    """x with its axes permuted (default: reversed)."""
    g = current_graph()
    t = _lift(g, "transpose", x)
    perm = list(range(t.ndim))[::-1] if axes is None else list(axes)
    if sorted(perm) != list(range(t.ndim)):
        raise g.fail("transpose", f"axes {axes!r} are no permutation of "
                     f"shape {_fmt(t.shape)}'s {t.ndim} axes")
    return g.node("transpose", [t], tuple(t.shape[p] for p in perm),
                  t.dtype, perm=perm)


def expand_dims(x: Any, axis: int) -> Tensor:
    """x with a new axis of size 1 at axis."""
    g = current_graph()
    t = _lift(g, "expand_dims", x)
    ax = _axis(g, "expand_dims", axis, t.ndim + 1, t.shape)
    return g.node("expand_dims", [t], t.shape[:ax] + (1,) + t.shape[ax:],
                  t.dtype, axis=ax)


def squeeze(x: Any, axis: Union[int, Sequence[int], None] = None) -> Tensor:
    """x without the axis (or axes) of size 1; None: every axis of size
    1 when tracing."""
    g = current_graph()
    t = _lift(g, "squeeze", x)
    if axis is None:
        axes = [k for k, d in enumerate(t.shape) if d == 1]
    else:
        axes = [_axis(g, "squeeze", a, t.ndim, t.shape)
                for a in (axis if isinstance(axis, (list, tuple))
                          else [axis])]
    for k in axes:
        if t.shape[k] not in (1, None):
            raise g.fail("squeeze", f"shape {_fmt(t.shape)}: axis {k} has "
                         f"size {t.shape[k]}, not 1")
    for k in sorted(set(axes), reverse=True):
        t = g.node("squeeze", [t], t.shape[:k] + t.shape[k + 1:], t.dtype,
                   axis=k)
    return t


def slice(inputs: Any, start_indices: Sequence[int],  # noqa: A001
          shape: Sequence[int]) -> Tensor:
    """The block of inputs from start_indices, of shape (a size -1: to
    the end of that axis)."""
    g = current_graph()
    t = _lift(g, "slice", inputs)
    begin, size = list(start_indices), list(shape)
    if len(begin) != t.ndim or len(size) != t.ndim or \
            not all(isinstance(v, int) and v >= 0 for v in begin) or \
            not all(isinstance(v, int) and (v > 0 or v == -1) for v in size):
        raise g.fail("slice", f"shape {_fmt(t.shape)}: start_indices "
                     f"{begin} and shape {size} need {t.ndim} entries each, "
                     f"starts >= 0 and sizes > 0 or -1")
    out: List[Optional[int]] = []
    for k, (d, b0, n) in enumerate(zip(t.shape, begin, size)):
        if d is not None and (b0 >= d or (n != -1 and b0 + n > d)):
            raise g.fail("slice", f"shape {_fmt(t.shape)}: axis {k}'s "
                         f"[{b0}, {'end' if n == -1 else b0 + n}) is out of "
                         f"its {d}")
        out.append(n if n != -1 else (None if d is None else d - b0))
    return g.node("slice", [t], tuple(out), t.dtype, begin=begin, size=size)


def _index(g: Graph, d: Optional[int], i: int) -> int:
    if i < 0 and d is None:
        raise g.fail("slice", "an index from the end of an axis of unknown "
                     "size (the batch)")
    i = i + d if i < 0 and d is not None else i
    if i < 0 or (d is not None and i > d):
        raise g.fail("slice", f"index {i} is out of an axis of size {d}")
    return i


def _getitem(t: Tensor, key: Any) -> Tensor:
    """t[key]: ints, slices with steps of 1 and one Ellipsis."""
    g = current_graph()
    keys = list(key) if isinstance(key, tuple) else [key]
    if keys.count(Ellipsis) > 1:
        raise g.fail("slice", "an index with more than one Ellipsis")
    if Ellipsis in keys:
        k = keys.index(Ellipsis)
        keys[k:k + 1] = [_b.slice(None)] * (t.ndim - len(keys) + 1)
    if len(keys) > t.ndim:
        raise g.fail("slice", f"{len(keys)} indices for shape "
                     f"{_fmt(t.shape)}")
    keys += [_b.slice(None)] * (t.ndim - len(keys))
    begin, size, drop = [], [], []
    for k, (d, s) in enumerate(zip(t.shape, keys)):
        if isinstance(s, int) and not isinstance(s, bool):
            i = _index(g, d, s)
            if d is not None and i >= d:
                raise g.fail("slice", f"index {s} is out of axis {k} of "
                             f"shape {_fmt(t.shape)}")
            begin.append(i)
            size.append(1)
            drop.append(k)
        elif isinstance(s, _b.slice):
            if s.step not in (None, 1):
                raise g.fail("slice", f"step {s.step}: only slices with "
                             f"steps of 1 can be traced")
            b0 = _index(g, d, s.start or 0)
            if s.stop is None:
                n = -1
            else:
                stop = _index(g, d, s.stop) if s.stop < 0 else \
                    (s.stop if d is None else _b.min(s.stop, d))
                n = stop - b0
                if n <= 0:
                    raise g.fail("slice", f"axis {k} of shape "
                                 f"{_fmt(t.shape)}: the slice [{s.start}:"
                                 f"{s.stop}] is empty")
            begin.append(b0)
            size.append(n)
        else:
            raise g.fail("slice", f"index {s!r}: only ints, slices and "
                         f"... can be traced (ops.take gathers by indices)")
    if any(begin) or any(n != -1 for n in size):
        t = slice(t, begin, size)
    return squeeze(t, drop) if drop else t


def _indices(g: Graph, op: str, indices: Any) -> Tensor:
    i = _lift(g, op, indices, "int64")
    if i.dtype not in INTS:
        raise g.fail(op, f"indices of dtype {i.dtype}: integers expected "
                     f"(ops.cast(indices, 'int64'))")
    return i


def gather(x: Any, indices: Any, axis: int = 0) -> Tensor:
    """The slices of x at indices (integers of any shape) along axis:
    shape x.shape[:axis] + indices.shape + x.shape[axis + 1:]."""
    g = current_graph()
    t = _lift(g, "gather", x)
    _float_dtype(g, "gather", [t])
    i = _indices(g, "gather", indices)
    ax = _axis(g, "gather", axis, t.ndim, t.shape)
    return g.node("gather", [t, i], t.shape[:ax] + i.shape + t.shape[ax + 1:],
                  t.dtype, axis=ax)


def take(x: Any, indices: Any, axis: Optional[int] = None) -> Tensor:
    """Keras's take: gather along axis; None: from x flattened."""
    if axis is None:
        return gather(reshape(x, (-1,)), indices, 0)
    return gather(x, indices, axis)


def one_hot(x: Any, num_classes: int, axis: int = -1,
            dtype: Optional[str] = None) -> Tensor:
    """Integer x as one-hot float32 rows: shape x.shape + (num_classes,)."""
    g = current_graph()
    t = _lift(g, "one_hot", x, "int64")
    if t.dtype not in INTS:
        raise g.fail("one_hot", f"x of dtype {t.dtype}: integer class ids "
                     f"expected (ops.cast(x, 'int64'))")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or \
            num_classes < 1 or axis != -1 or dtype not in (None, "float32"):
        raise g.fail("one_hot", f"num_classes must be a positive integer "
                     f"(got {num_classes!r}), axis -1 and dtype float32")
    return g.node("one_hot", [t], t.shape + (num_classes,), "float32",
                  depth=num_classes)


def argmax(x: Any, axis: Optional[int] = None,
           keepdims: bool = False) -> Tensor:
    """The index of the largest value along axis (None: of x flattened),
    int64."""
    g = current_graph()
    t = _lift(g, "argmax", x)
    if keepdims:
        raise g.fail("argmax", "keepdims=True is not supported")
    if axis is None:
        t, axis = reshape(t, (-1,)), 0
    ax = _axis(g, "argmax", axis, t.ndim, t.shape)
    return g.node("argmax", [t], t.shape[:ax] + t.shape[ax + 1:], "int64",
                  axis=ax)


def arange_like(x: Any, axis: int = 0) -> Tensor:
    """[0, 1, ..., x.shape[axis] - 1] as int64 (labels of in-batch
    negatives: row i's positive is column i)."""
    g = current_graph()
    t = _lift(g, "arange_like", x)
    ax = _axis(g, "arange_like", axis, t.ndim, t.shape)
    return g.node("arange_like", [t], (t.shape[ax],), "int64", axis=ax)


# ---- losses as ops ---------------------------------------------------------

def _pred(g: Graph, op: str, y_pred: Any) -> Tensor:
    p = _lift(g, op, y_pred)
    if p.dtype not in FLOATS:
        raise g.fail(op, f"y_pred of dtype {p.dtype}: a float tensor "
                     f"expected")
    return p


def _target(g: Graph, op: str, y_true: Any, p: Tensor) -> Tensor:
    """y_true as p's dtype and shape: a trailing axis of 1 added or
    dropped (Keras's squeeze_or_expand_to_same_rank)."""
    y = _lift(g, op, y_true, p.dtype)
    if y.dtype != p.dtype:
        y = cast(y, p.dtype)
    if y.ndim == p.ndim - 1 and p.shape[-1] == 1:
        y = expand_dims(y, -1)
    elif y.ndim == p.ndim + 1 and y.shape[-1] == 1:
        y = squeeze(y, -1)
    if y.ndim != p.ndim or not all(_same(a, b)
                                   for a, b in zip(y.shape, p.shape)):
        raise g.fail(op, f"y_true of shape {_fmt(y.shape)} does not match "
                     f"y_pred of shape {_fmt(p.shape)}")
    return y


def _loss(op: str, y: Tensor, p: Tensor, **attrs: Any) -> Tensor:
    return p.graph.node(op, [y, p], (), p.dtype, **attrs)  # type: ignore


def sparse_categorical_crossentropy(target: Any, output: Any,
                                    from_logits: bool = False,
                                    axis: int = -1) -> Tensor:
    """The batch mean of -log(output[label]): target integer class ids
    [batch] (or [batch, 1]), output [batch, classes] probabilities (or
    logits with from_logits=True). A scalar."""
    op = "sparse_categorical_crossentropy"
    g = current_graph()
    p = _pred(g, op, output)
    y = _lift(g, op, target, "int64")
    if p.ndim != 2 or axis not in (-1, 1):
        raise g.fail(op, f"y_pred of shape {_fmt(p.shape)}: [batch, "
                     f"classes] expected (axis -1)")
    if y.dtype in FLOATS:
        y = cast(y, "int64")
    if y.ndim == 2 and y.shape[1] == 1:
        y = reshape(y, (-1,))
    if y.ndim != 1 or not _same(y.shape[0], p.shape[0]):
        raise g.fail(op, f"y_true of shape {_fmt(y.shape)} does not match "
                     f"y_pred of shape {_fmt(p.shape)}: class ids [batch] "
                     f"expected")
    return _loss(op, y, p, from_logits=bool(from_logits))


def categorical_crossentropy(target: Any, output: Any,
                             from_logits: bool = False,
                             axis: int = -1) -> Tensor:
    """The batch mean of -sum(target * log(output)): one-hot target and
    output [batch, classes]. A scalar."""
    op = "categorical_crossentropy"
    g = current_graph()
    p = _pred(g, op, output)
    if p.ndim != 2 or axis not in (-1, 1):
        raise g.fail(op, f"y_pred of shape {_fmt(p.shape)}: [batch, "
                     f"classes] expected (axis -1)")
    return _loss(op, _target(g, op, target, p), p,
                 from_logits=bool(from_logits))


def binary_crossentropy(target: Any, output: Any,
                        from_logits: bool = False) -> Tensor:
    """The batch mean of the binary cross-entropy of 0/1 targets and
    probabilities (or logits) of the same shape. A scalar."""
    op = "binary_crossentropy"
    g = current_graph()
    p = _pred(g, op, output)
    return _loss(op, _target(g, op, target, p), p,
                 from_logits=bool(from_logits))


def mean_squared_error(y_true: Any, y_pred: Any) -> Tensor:
    """The mean of (y_true - y_pred) ** 2 over every element. A scalar."""
    op = "mean_squared_error"
    g = current_graph()
    p = _pred(g, op, y_pred)
    return _loss(op, _target(g, op, y_true, p), p)
