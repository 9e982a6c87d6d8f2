"""Traced steps: TensorFlow's ``tf.function`` in a ClusterCoordinator loop.

A Python function of ``pasco.ops`` is traced once on the chief into the
step JSON of docs/GRAPHS.md ("A traced step") and runs on the workers as
the library's step function "pasco.graph_step": no Python runs there. ::

    accuracy = pasco.metrics.SparseCategoricalAccuracy()  # state on a ps
    optimizer = pasco.optimizers.Adam(1e-3)

    @pasco.function
    def train_step(iterator):
        x, y = next(iterator)
        with pasco.GradientTape() as tape:
            pred = model(x, training=True)
            loss = pasco.losses.sparse_categorical_crossentropy(y, pred)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        accuracy.update_state(y, pred)
        return loss

    rv = coordinator.schedule(train_step, args=(per_worker_iterator,))
    coordinator.join(); print(rv.fetch(), accuracy.result())

Arguments (of ``schedule``, given to the function while it is traced):

- a per-worker iterator of a pasco.data dataset: ``next(iterator)`` gives
  symbolic tensors of the dataset's element, ``(x, y)`` or ``x`` alone,
  x a tensor or a dict by input name, with the spec's dtypes and widths
  and None for the batch (a factory's name has no spec: TypeError);
- a :class:`pasco.Model`: ``model(x, training=...)`` is its forward pass
  on the workers; ``model.trainable_variables`` are its variables. A
  model called more than once in a step (siamese or two-tower: one
  Embedding over two id batches) reads its dense variables once and
  each call's embedding rows, and each variable's gradient sums every
  call's;
- a :class:`pasco.Variable`: comes in as its value (one read per step),
  which ``tape.gradient`` and ``apply_gradients`` take as the variable
  (a captured one's ``v.read_value()`` is the same value). An integer
  variable, such as ``strategy.global_step_variable()``, is an int64
  value read before the step's applies: return it, or bring it into
  float arithmetic with ``ops.cast(step, "float32")``; its gradient is
  None. A variable no gradient asks for is read as a constant;
- a number or a numpy array: a tensor argument (an int is an int64
  scalar, a float a float32 one, Keras's floatx).

TensorFlow's replica calls work inside, on a worker's one replica:
``strategy.run(fn, args=...)`` calls fn, ``strategy.reduce`` of axis None
is the value (:mod:`pasco.distribute`, docs/tensorflow-port.md).
A model or a metric the function uses without taking it as an argument
(TensorFlow's captures) is passed along by itself. The first schedule
traces; later ones reuse the trace while the arguments' kinds, dtypes and
shapes (and the iterator's element, the model) are the same, each passing
its own arguments (its iterator, its arrays' values), and trace again when
one differs. A Python ``if`` on a tensor's value cannot be
traced (TypeError: use ``ops.where``). The function returns a tensor, a
tuple or list, or a dict of them, or None; ``RemoteValue.fetch()`` gives
the same structure of numpy arrays.

``trace(*args)`` gives the step JSON without scheduling (a pasco.data
dataset stands for a per-worker iterator over it, and nothing is created
on the ps): tests/python/step_trace.py reads it.
"""

from __future__ import annotations

import json
import numbers
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import ops
from ._function_outputs import flatten
from .data import Dataset

__all__ = ["function", "Function", "GradientTape"]

# ops that pass no gradient to their inputs (docs/GRAPHS.md's Ops table)
_NO_GRADIENT = frozenset((
    "stop_gradient", "greater", "greater_equal", "less", "less_equal",
    "equal", "not_equal", "argmax", "arange_like", "one_hot", "next", "arg",
    "global_step", "constant", "gradient"))
_INT_DTYPES = ("int32", "int64")


# ---- the trace of one step ------------------------------------------------

class _Step:
    """One step being traced: the ops graph (pasco.ops's tracer, extended
    with the step-only nodes), the step's arguments as the JSON lists them
    and what the worker does after the graph (applies, updates)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.graph = ops.Graph(name)
        self.args: List[dict] = []      # the JSON's "args"
        self.values: List[Any] = []     # what schedule passes for each
        self.arg_src: List[Optional[int]] = []  # its call argument
        self.models: List[Any] = []     # model arguments, in arg order
        self.model_arg: Dict[int, int] = {}   # id(model) -> arg index
        self.var_args: List[Any] = []   # Variable arguments, in arg order
        self.var_keys: Dict[str, Any] = {}    # name -> Variable
        self.var_of_node: Dict[int, str] = {}  # read/gradient -> var name
        self.reads: Dict[str, Any] = {}       # name -> its read node
        self.var_of_tensor: Dict[int, str] = {}  # id(read tensor) -> name
        self.applies: List[Tuple[Any, List[Any], List[str], bool]] = []
        self.updates: List[Tuple[str, Any]] = []
        self.datasets: List[Dataset] = []

    # -- arguments --

    def add_arg(self, spec: dict, value: Any,
                src: Optional[int] = None) -> int:
        """A step argument; src: the index of the call's argument it
        is (each schedule passes that call's), None for a capture."""
        self.args.append(spec)
        self.values.append(value)
        self.arg_src.append(src)
        return len(self.args) - 1

    def model_index(self, model: Any, src: Optional[int] = None) -> int:
        """The arg index of model, passing it along when captured."""
        k = self.model_arg.get(id(model))
        if k is None:
            k = self.add_arg({"kind": "model"}, model, src)
            self.model_arg[id(model)] = k
            self.models.append(model)
        return k

    def release_call_args(self) -> None:
        """After the trace: drops the call's own iterators and their
        datasets (each schedule passes its own), so that a kept trace
        keeps no per-worker iterator, its copies on the workers or its
        dataset's files alive."""
        for k, src in enumerate(self.arg_src):
            if src is not None and self.args[k]["kind"] == "iterator":
                self.values[k] = None
        self.datasets = []

    def parsed(self, model: Any) -> Any:
        """model, its native model made (_parsed) with the step's first
        iterator's dataset (a Sequential model's input width)."""
        _parsed(model, self.datasets[0] if self.datasets else None)
        return model

    def variable_key(self, v: Any, what: str) -> str:
        """The name of variable v (a pasco.Variable, or the value an
        argument variable came in as), captured when not an argument."""
        from .models import Variable
        if isinstance(v, ops.Tensor) and id(v) in self.var_of_tensor:
            return self.var_of_tensor[id(v)]
        if not isinstance(v, Variable):
            raise TypeError(f"{what}: expected a pasco.Variable (e.g. of "
                            f"model.trainable_variables), got "
                            f"{type(v).__name__}")
        if v._model is not None:
            self.model_index(v._model)
        elif v.name not in self.var_keys:
            self.add_arg({"kind": "variable", "shape": list(v.shape),
                          "dtype": np.dtype(v._dtype).name}, v)
            self.var_args.append(v)
        self.var_keys[v.name] = v
        return v.name

    def read(self, v: Any, what: str) -> Any:
        """The value of variable v in the step: one read node per step."""
        key = self.variable_key(v, what)
        if key not in self.reads:
            var = self.var_keys[key]
            t = self.graph.node("read", [], _shape(var.shape),
                                np.dtype(var._dtype).name, var=0)
            self.var_of_node[t.index] = key
            self.var_of_tensor[id(t)] = key
            self.reads[key] = t
        return self.reads[key]

    # -- the JSON --

    def var_indices(self) -> Dict[str, int]:
        """The step's variable numbering (docs/GRAPHS.md): every model's
        variables in model order, then the variable arguments."""
        out: Dict[str, int] = {}
        for m in self.models:
            for v in self.parsed(m).variables:
                out[v.name] = len(out)
        for v in self.var_args:
            out[v.name] = len(out)
        return out

    def to_json(self, outputs: List[Any]) -> dict:
        idx = self.var_indices()
        g = self.graph.to_json(outputs)
        for i, key in self.var_of_node.items():
            g["nodes"][i]["var"] = idx[key]
        applies = []
        for opt, grads, keys, gs in self.applies:
            a = {"optimizer": opt.get_config(),
                 "grads": [t.index for t in grads],
                 "vars": [idx[k] for k in keys]}
            if gs:
                a["global_step"] = True
            applies.append(a)
        return {"name": self.name, "args": self.args,
                "graph": {"nodes": g["nodes"], "outputs": g["outputs"]},
                "applies": applies,
                "updates": [{"var": idx[k], "op": "assign_add",
                             "value": t.index} for k, t in self.updates]}


_current: List[_Step] = []


def _step(what: str) -> _Step:
    if not _current:
        raise ValueError(f"{what}: only inside a @pasco.function step "
                         f"being traced (schedule it with "
                         f"coordinator.schedule(fn, args=...))")
    return _current[-1]


def _tracing() -> Optional[_Step]:
    return _current[-1] if _current else None


def _shape(shape: Sequence[Optional[int]]) -> Tuple[Optional[int], ...]:
    return tuple(None if d is None or d < 0 else int(d) for d in shape)


# ---- models ---------------------------------------------------------------

def _parsed(model: Any, data: Optional[Dataset]) -> None:
    """Gives model a native model to read its variables' names and shapes
    and its output width from: the built one, or one parsed from its
    config without variables (a trace needs no ps; schedule builds it)."""
    import ctypes
    from ctypes import c_void_p

    from ._lib import lib
    from .models import _model_error
    if model._native:
        return
    native = c_void_p()
    rv = lib.pasco_model_from_json(model.to_json(data).encode(),
                                   ctypes.byref(native))
    if rv != 0:
        raise _model_error(rv, "model config")
    model._native = native  # build() replaces it, creating the variables


def _model_inputs(model: Any) -> List[str]:
    """The model's input names, in its inputs' order."""
    if hasattr(model, "_inputs"):
        return model.input_names()
    if model._input is not None:
        return [model._input.name]
    return [model._inferred[0] if model._inferred else "input"]


def _call_model(model: Any, inputs: Any, training: bool) -> Any:
    """model(x, training=...) in a traced step: a "model" node."""
    from ._dataset_map import call_model, mapping
    if mapping():  # in a Dataset.map function (python/pasco/_dataset_map)
        return call_model(model, inputs, training)
    from ._lib import lib
    st = _step(f"{model.name or 'model'}(x)")
    if not isinstance(training, bool):
        raise TypeError(f"training: expected a bool, got {training!r}")
    k = st.model_index(model)
    names = _model_inputs(st.parsed(model))
    if isinstance(inputs, dict):
        missing = [n for n in names if n not in inputs]
        if len(names) == 1 and len(inputs) == 1 and missing:
            ins = list(inputs.values())
        elif missing:
            raise ValueError(f"{model.name or 'model'}: the inputs have no "
                             f"{missing[0]!r} (got {', '.join(inputs)}; "
                             f"the model's inputs are {', '.join(names)})")
        else:
            ins = [inputs[n] for n in names]
    else:
        ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if len(ins) != len(names):
            raise ValueError(f"{model.name or 'model'}: {len(ins)} inputs "
                             f"given, the model has {len(names)} "
                             f"({', '.join(names)})")
    for i, t in enumerate(ins):
        if not isinstance(t, ops.Tensor):
            raise TypeError(f"{model.name or 'model'}: input {i}: expected "
                            f"a symbolic tensor (of next(iterator)), got "
                            f"{type(t).__name__}")
    width = int(lib.pasco_model_output_width(model._native))
    shape = getattr(model, "_output_width", None)
    # a sequence output: [batch, steps, dim], as the worker's model gives it
    out = (None,) + tuple(int(d) for d in shape) \
        if isinstance(shape, (tuple, list)) and len(shape) > 1 \
        else (None, width)
    return st.graph.node("model", ins, out, "float32", arg=k,
                         training=training)


def _trainable_variables(model: Any) -> List[Any]:
    """Keras's model.trainable_variables: every variable but a
    Normalization layer's mean and variance, a BatchNormalization's
    moving_mean and moving_variance, and a frozen (trainable=False)
    BatchNormalization's gamma and beta."""
    from .layers import BatchNormalization, Normalization
    st = _tracing()
    if st is not None:
        st.model_index(model)
        st.parsed(model)
    frozen = {l.name for l in model.layers if isinstance(l, Normalization)
              or (isinstance(l, BatchNormalization) and not l.trainable)}
    moving = {f"{l.name}/{s}" for l in model.layers
              if isinstance(l, BatchNormalization)
              for s in ("moving_mean", "moving_variance")}
    return [v for v in model.variables
            if v.name.split("/")[0] not in frozen and v.name not in moving]


def _model_losses(model: Any) -> List[Any]:
    """Keras's model.losses in a trace: each regularizer's penalty (a
    Dense's kernel_regularizer and bias_regularizer, L1, L2 or L1L2; a custom
    layer's weight regularizers, L1, L2 or L1L2; a BatchNormalization's
    (trainable) or a LayerNormalization's gamma_regularizer and
    beta_regularizer), its variable read in the step."""
    from .layers import BatchNormalization, Dense, LayerNormalization
    st = _step(f"{model.name or 'model'}.losses")
    st.model_index(model)
    by_name = {v.name: v for v in st.parsed(model).variables}
    regs = []
    for layer in model.layers:
        for arg in ("activity_regularizer", "embeddings_regularizer"):
            if getattr(layer, arg, None):
                raise ValueError(
                    f"{layer.name}: its {arg} is added to the loss by "
                    f"fit and evaluate, but is not in a traced step's "
                    f"model.losses (it needs the layer's output or the "
                    f"rows looked up)")
        if isinstance(layer, Dense):  # its regularizers' config dicts
            regs.extend((f"{layer.name}/{w}", r["config"]) for w, r in (
                ("kernel", layer.kernel_regularizer),
                ("bias", layer.bias_regularizer)) if r)
        elif isinstance(layer, (BatchNormalization, LayerNormalization)) \
                and layer.trainable:
            regs.extend((f"{layer.name}/{w}", r["config"]) for w, r in (
                ("gamma", layer.gamma_regularizer),
                ("beta", layer.beta_regularizer)) if r)
        elif layer._is_custom():
            regs.extend((w.path, w.regularizer["config"])
                        for w in layer.weights if w.regularizer)
    out = []
    for name, factors in regs:
        if name not in by_name:  # no bias, beta or gamma: no penalty
            continue
        w = st.read(by_name[name], f"{name}: its regularizer")
        terms = [ops.multiply(float(factors[k]), ops.sum(f(w)))
                 for k, f in (("l1", ops.abs), ("l2", ops.square))
                 if factors.get(k)]
        if terms:
            out.append(terms[0] if len(terms) == 1 else terms[0] + terms[1])
    return out


# ---- GradientTape -----------------------------------------------------------

class GradientTape:
    """tf.GradientTape in a traced step: ops recorded while it is open are
    differentiated by ``tape.gradient(target, sources)``, which returns
    one symbolic gradient per source (a "gradient" node), None for a
    source the target does not depend on through the recorded ops or of
    an integer dtype (as TensorFlow). A non-persistent tape gives one set
    of gradients."""

    def __init__(self, persistent: bool = False) -> None:
        self.persistent = bool(persistent)
        self._spans: List[Tuple[int, int]] = []
        self._start: Optional[int] = None
        self._used = False
        self._step: Optional[_Step] = None

    def __enter__(self) -> "GradientTape":
        st = _step("GradientTape")
        if self._step is not None and self._step is not st:
            raise RuntimeError("GradientTape: a tape belongs to one trace")
        self._step = st
        self._start = len(st.graph.nodes)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._step is not None and self._start is not None:
            self._spans.append((self._start, len(self._step.graph.nodes)))
        self._start = None

    def _recorded(self, i: int) -> bool:
        end = len(self._step.graph.nodes) if self._start is not None else 0
        return any(a <= i < b for a, b in self._spans) or (
            self._start is not None and self._start <= i < end)

    def _sources_reached(self, target: Any) -> set:
        """The variable names target depends on through recorded ops."""
        st = self._step
        nodes = st.graph.nodes
        seen, out, todo = set(), set(), [target.index]
        while todo:
            i = todo.pop()
            if i in seen or not self._recorded(i):
                continue
            seen.add(i)
            n = nodes[i]
            op = n["op"]
            if op == "read":
                out.add(st.var_of_node[i])
            elif op == "model":
                out.update(v.name for v in _trainable_variables(
                    st.values[n["arg"]]))
            if op in _NO_GRADIENT or n["dtype"] in _INT_DTYPES:
                continue
            todo.extend(n.get("in", []))
        return out

    def gradient(self, target: Any, sources: Any) -> Any:
        st = self._step
        if st is None or not _current or _current[-1] is not st:
            raise ValueError("GradientTape.gradient: only inside the "
                             "@pasco.function step the tape was opened in")
        if self._used and not self.persistent:
            raise RuntimeError("GradientTape.gradient: a non-persistent "
                               "tape gives one set of gradients (use "
                               "GradientTape(persistent=True))")
        self._used = True
        if not isinstance(target, ops.Tensor):
            raise TypeError(f"GradientTape.gradient: target: expected a "
                            f"symbolic tensor, got {type(target).__name__}")
        if target.dtype in _INT_DTYPES:
            raise ValueError(f"GradientTape.gradient: target is "
                             f"{target.dtype}: only a float is "
                             f"differentiated")
        if target.shape != ():
            target = ops.sum(target)  # TensorFlow's: of the sum
        single = not isinstance(sources, (list, tuple))
        srcs = [sources] if single else list(sources)
        reached = self._sources_reached(target)
        out = []
        for i, s in enumerate(srcs):
            key = st.variable_key(s, f"GradientTape.gradient: sources[{i}]")
            if key not in reached:
                out.append(None)
                continue
            v = st.var_keys[key]
            if np.dtype(v._dtype).name in _INT_DTYPES:
                out.append(None)  # TensorFlow's: an integer source has none
                continue
            g = st.graph.node("gradient", [target], _shape(v.shape),
                              np.dtype(v._dtype).name, var=0)
            st.var_of_node[g.index] = key
            out.append(g)
        return out[0] if single else out


# ---- applies and updates (optimizers.py, metrics.py) ------------------------

def _record_apply(optimizer: Any, grads_and_vars: Any) -> None:
    """optimizer.apply_gradients in a traced step: one "applies" entry."""
    what = f"{optimizer.class_name}.apply_gradients"
    st = _step(what)
    try:
        pairs = list(grads_and_vars)
    except TypeError:
        raise TypeError(f"{what}: expected (gradient, variable) pairs, "
                        f"e.g. zip(grads, model.trainable_variables)")
    grads, keys = [], []
    for i, p in enumerate(pairs):
        if not isinstance(p, (tuple, list)) or len(p) != 2:
            raise TypeError(f"{what}: item {i}: expected a (gradient, "
                            f"variable) pair, got {p!r}")
        g, v = p
        key = st.variable_key(v, f"{what}: item {i}: the variable")
        if g is None:
            continue  # Keras skips a variable without a gradient
        var = st.var_keys[key]
        if not isinstance(g, ops.Tensor):
            raise TypeError(f"{what}: item {i}: the gradient of {key}: "
                            f"expected a symbolic tensor, got "
                            f"{type(g).__name__}")
        if tuple(g.shape) != tuple(var.shape):
            raise ValueError(f"{what}: item {i}: the gradient has shape "
                             f"{_fmt(g.shape)}, the variable {key} "
                             f"{_fmt(var.shape)} (gradients and variables "
                             f"in different orders?)")
        if key in keys:
            raise ValueError(f"{what}: item {i}: {key} is applied twice")
        grads.append(g)
        keys.append(key)
    if not keys:
        raise ValueError(f"{what}: no gradients provided for any variable "
                         f"(every gradient is None: the loss uses none of "
                         f"them)")
    st.applies.append((optimizer, grads, keys, True))


def _record_update(variable: Any, value: Any, what: str) -> None:
    """variable += value after the step's graph (a metric's counts)."""
    st = _step(what)
    key = st.variable_key(variable, what)
    st.updates.append((key, value))


def _fmt(shape: Sequence[Optional[int]]) -> str:
    return "(" + ", ".join("None" if d is None else str(d)
                           for d in shape) + (",)" if len(shape) == 1
                                              else ")")


# ---- arguments ----------------------------------------------------------------

class _Iterator:
    """A per-worker iterator while a step is traced: next() gives the
    element's symbolic tensors, one "next" call per next()."""

    def __init__(self, st: _Step, arg: int, dataset: Dataset) -> None:
        self._st, self._arg, self._dataset = st, arg, dataset
        self._calls = 0

    def __iter__(self) -> "_Iterator":
        return self

    def __next__(self) -> Any:
        call = self._calls
        self._calls += 1

        def node(path: List[Any], shape: tuple, dtype: str) -> Any:
            return self._st.graph.node("next", [], shape, dtype,
                                       arg=self._arg, call=call, path=path)
        return _element(self._dataset, node)


def _element(ds: Dataset, node: Callable[..., Any]) -> Any:
    """The symbolic element of ds: (x, y) or x, as the workers build it
    (include/pasco/dataset.h, "pasco.files:")."""
    if getattr(ds, "_trace", None) is not None:  # sliced or mapped
        from ._dataset_map import element
        return element(ds, node)
    spec = ds.spec
    label = spec.get("label")
    ytype = "float32" if spec.get("label_type") == "float" else "int64"
    xpath: List[Any] = [0] if label else []
    if spec["format"] == "csv":
        (name, d), = ds.input_spec().items()
        if spec.get("features_name"):
            x: Any = {name: node(xpath + [name], (None, d["width"]),
                                 "float32")}
        else:
            x = node(xpath, (None, d["width"]), "float32")
    else:
        x = {n: node(xpath + [n], (None, f["width"]),
                     "float32" if f["type"] == "float" else "int64")
             for n, f in spec["features"].items()}
    if not label:
        return x
    return x, node([1], (None,), ytype)


def _tensor_value(a: Any) -> np.ndarray:
    if isinstance(a, bool):
        raise TypeError("a bool is not an argument (give 0 or 1)")
    if isinstance(a, numbers.Integral):
        return np.asarray(int(a), dtype=np.int64)
    if isinstance(a, numbers.Real):
        return np.asarray(float(a), dtype=np.float32)
    a = np.asarray(a)
    if a.dtype.name not in ("float32", "float64", "int32", "int64"):
        raise TypeError(f"dtype {a.dtype} is not one of float32, float64, "
                        f"int32, int64")
    return a


def _tensor_arg(i: int, a: Any) -> np.ndarray:
    """Argument i as a tensor argument's value, or TypeError naming it."""
    try:
        return _tensor_value(a)
    except TypeError as e:
        raise TypeError(f"args[{i}]: {e}: expected a per-worker iterator, "
                        f"a pasco.Model, a pasco.Variable, a number or a "
                        f"numpy array, got {type(a).__name__}") from None


def _signature(args: Sequence[Any]) -> tuple:
    """What decides a trace: each argument's kind and, for each kind,
    what the trace read of it."""
    from .coordinator import PerWorkerIterator
    from .models import Model, Variable
    sig: List[Any] = []
    for i, a in enumerate(args):
        if isinstance(a, PerWorkerIterator):
            sig.append(("iterator", a._dataset.name))  # its spec's JSON
        elif isinstance(a, Dataset):
            sig.append(("iterator", a.name(-1)))
        elif isinstance(a, Model):
            sig.append(("model", id(a), a.to_json()))
        elif isinstance(a, Variable):
            sig.append(("variable", a.name, tuple(a.shape)))
        else:
            v = _tensor_arg(i, a)
            sig.append(("tensor", v.shape, v.dtype.name))
    return tuple(sig)


def _traced_args(st: _Step, args: Sequence[Any]) -> List[Any]:
    """What the function gets for each argument while traced."""
    from .coordinator import PerWorkerIterator
    from .models import Model, Variable
    out: List[Any] = []
    for i, a in enumerate(args):
        if isinstance(a, (PerWorkerIterator, Dataset)):
            ds = a if isinstance(a, Dataset) else a._dataset.dataset
            if ds is None:
                raise TypeError(
                    f"args[{i}]: the iterator's dataset is a factory's "
                    f"name ({a._dataset.name[:64]}): a traced step needs "
                    f"a pasco.data dataset, whose spec gives next()'s "
                    f"element")
            k = st.add_arg({"kind": "iterator"}, a, i)
            st.datasets.append(ds)
            out.append(_Iterator(st, k, ds))
        elif isinstance(a, Model):
            st.model_index(a, i)
            out.append(a)
        elif isinstance(a, Variable):
            out.append(st.read(a, f"args[{i}]"))
        else:
            v = _tensor_arg(i, a)
            k = st.add_arg({"kind": "tensor", "shape": list(v.shape),
                            "dtype": v.dtype.name}, v, i)
            out.append(st.graph.node("arg", [], v.shape, v.dtype.name,
                                     arg=k))
    return out


class _Traced:
    """One trace: the step's JSON bytes, what schedule passes after it
    (the values of its args list), and how its outputs come back."""

    def __init__(self, st: _Step, outputs: List[Any],
                 build: Callable[[List[Any]], Any]) -> None:
        self.name = st.name
        self.step = st
        self.json = st.to_json(outputs)
        self.bytes = np.frombuffer(
            json.dumps(self.json, separators=(",", ":")).encode(),
            dtype=np.uint8)
        self._shapes = [t.shape for t in outputs]
        self._dtypes = [t.dtype for t in outputs]
        self._build = build

    def restore(self, value: Any) -> Any:
        """The fetched list of tensors back in the returned structure,
        each a numpy array of its traced shape (a scalar a numpy
        scalar)."""
        vals = list(value) if isinstance(value, list) else []
        if len(vals) != len(self._shapes):
            raise ValueError(f"{self.name}: the step returned "
                             f"{len(vals)} tensors, its trace "
                             f"{len(self._shapes)}")
        out = []
        for v, shape, dtype in zip(vals, self._shapes, self._dtypes):
            a = np.asarray(v, dtype=dtype)
            if None not in shape:
                a = a.reshape(shape)
            elif list(shape).count(None) == 1:
                a = a.reshape([-1 if d is None else d for d in shape])
            out.append(a[()] if a.ndim == 0 else a)
        return self._build(out)


class Function:
    """A ``@pasco.function``: call it through ``coordinator.schedule``;
    ``trace(*args)`` gives the step JSON of those arguments."""

    def __init__(self, fn: Callable[..., Any],
                 name: Optional[str] = None) -> None:
        if not callable(fn):
            raise TypeError(f"pasco.function: expected a function, got "
                            f"{type(fn).__name__}")
        self._fn = fn
        self.name = name or getattr(fn, "__name__", "step")
        self._traces: Dict[tuple, _Traced] = {}
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.name}: a traced step runs on the workers: "
                        f"schedule it (coordinator.schedule({self.name}, "
                        f"args=(...)))")

    def _trace(self, args: Sequence[Any]) -> _Traced:
        sig = _signature(args)
        t = self._traces.get(sig)
        if t is not None:
            return t
        st = _Step(self.name)
        _current.append(st)
        try:
            with ops.trace(st.graph):
                value = self._fn(*_traced_args(st, args))
                outputs, build = flatten(value)
                for t_ in outputs:
                    if t_.graph is not st.graph:
                        raise ValueError(f"{self.name}: a returned tensor "
                                         f"is of another trace")
                if st.applies:
                    st.add_arg({"kind": "global_step"}, None)
        finally:
            _current.pop()
        t = _Traced(st, outputs, build)
        st.release_call_args()
        self._traces[sig] = t
        return t

    def trace(self, *args: Any) -> dict:
        """The step JSON for these arguments (docs/GRAPHS.md), as
        schedule would send it; traces if these arguments' kinds and
        shapes were not traced yet."""
        return self._trace(args).json

    @property
    def traces(self) -> int:
        """How many traces were made (one per signature)."""
        return len(self._traces)

    def _schedule_args(self, coordinator: Any, args: Sequence[Any]
                       ) -> Tuple[_Traced, List[Any]]:
        """The trace for args, and the argument list of
        "pasco.graph_step": the step's JSON, then its args' values."""
        from .models import Model
        s = coordinator.strategy
        for a in args:
            if isinstance(a, Dataset):
                raise TypeError(f"{self.name}: a pasco.data dataset is "
                                f"traced, not scheduled: pass "
                                f"iter(coordinator.create_per_worker_"
                                f"dataset(ds))")
        t = self._trace(args)
        full: List[Any] = [t.bytes]
        # this call's first iterator's dataset (a model built here reads
        # its input widths from it)
        data = next((args[src]._dataset.dataset for spec, src in
                     zip(t.step.args, t.step.arg_src)
                     if src is not None and spec["kind"] == "iterator"), None)
        for spec, v, src in zip(t.step.args, t.step.values,
                                t.step.arg_src):
            if src is not None:  # this call's: a new iterator, new data
                v = args[src] if spec["kind"] != "tensor" else \
                    _tensor_arg(src, args[src])
            if isinstance(v, Model) and not (v._native and v._built_json):
                # built once (a parse-only native model has no variables)
                v.build(data)
            elif spec["kind"] == "global_step":
                v = self._global_step(s)
            full.append(v)
        return t, full

    def _global_step(self, s: Any) -> Any:
        """s's global step variable, its handle made once (a round trip
        to its ps) while s is open."""
        v = getattr(self, "_gs", None)
        if v is None or v._strategy is not s or not v._own:
            v = self._gs = s.global_step_variable()
        return v


def function(fn: Optional[Callable[..., Any]] = None, *,
             name: Optional[str] = None) -> Any:
    """``@pasco.function`` (or ``@pasco.function(name="train_step")``):
    TensorFlow's tf.function for ``coordinator.schedule``."""
    if fn is None:
        return lambda f: Function(f, name)
    return Function(fn, name)
