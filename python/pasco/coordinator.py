"""The coordinator from Python: schedule the library's step functions on
the workers yourself (TensorFlow's
``tf.distribute.experimental.coordinator.ClusterCoordinator``)::

    coordinator = pasco.ClusterCoordinator(strategy)
    it = iter(coordinator.create_per_worker_dataset(train))
    step = strategy.global_step_variable()
    losses = [coordinator.schedule("pasco.model_train",
                                   args=(model, it, step))
              for _ in range(100)]
    coordinator.join()
    print([rv.fetch() for rv in losses])

``schedule`` enqueues and returns a :class:`RemoteValue` at once; a step
runs at least once, on whichever worker is free. Arguments: a compiled,
built :class:`pasco.Model` (its step arguments: its config and variables,
``pasco_model_args``), a :class:`pasco.Variable` (``model.variables``' or
``strategy.global_step_variable()``), a :class:`PerWorkerIterator` (each
worker uses its own), a numpy array or a Python number (an int is an int64
scalar, a float a float64 scalar) or a str (a uint8 string, as the
library's steps take dataset names). The step functions are the library's
(``worker/model_steps.c``): ``"pasco.model_train"`` takes (model,
iterator[, global step]) and returns [loss] (compiled with metrics,
[loss, the batch's metric counts...]);
``"pasco.model_evaluate"`` (model, dataset name, shard, shards) returns
[loss sum, examples, metric counts...]; or a ``PASCO_FUNCTION`` of a C
worker program, by name.

Errors follow TensorFlow's: the first error of a step is raised (as the
:class:`pasco.PascoError` subclass of its code, with the worker's
message) once, by the next ``schedule``, ``join`` or ``done``, which
cancel the steps not yet run; ``fetch()`` of a failed step raises its
error, of a cancelled one :class:`pasco.CancelledError`.
"""

from __future__ import annotations

import ctypes
import numbers
from ctypes import POINTER, c_bool, c_size_t, c_void_p
from typing import Any, List, Sequence

import numpy as np

from . import _lib
from ._lib import lib
from .cluster import ParameterServerStrategy
from .data import Dataset
from .errors import error_for

__all__ = ["ClusterCoordinator", "RemoteValue", "PerWorkerDataset",
           "PerWorkerIterator"]

_DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.int64,
           5: np.uint8}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}
_MAX_REPEAT = 1 << 20


def _tensor_to_numpy(t: Any) -> np.ndarray:
    shape = tuple(t.shape[i] for i in range(t.rank))
    raw = ctypes.string_at(t.data, t.nbytes) if t.nbytes else b""
    return np.frombuffer(raw, dtype=_DTYPES[t.dtype]).reshape(shape).copy()


def _value_to_python(v: int) -> Any:
    """A pasco_value as Python: a tensor as a numpy array (a scalar as a
    numpy scalar), a list as a list, a dict as a dict, none as None."""
    kind = lib.pasco_value_kind_of(v)
    if kind == 1:
        a = _tensor_to_numpy(lib.pasco_value_as_tensor(v).contents)
        return a[()] if a.ndim == 0 else a
    if kind == 2:
        return [_value_to_python(lib.pasco_value_item(v, i))
                for i in range(lib.pasco_value_size(v))]
    if kind == 3:
        return {lib.pasco_value_key(v, i).decode():
                _value_to_python(lib.pasco_value_item(v, i))
                for i in range(lib.pasco_value_size(v))}
    return None


def _tensor_of(i: int, a: Any) -> Any:
    """A new pasco_tensor (the caller releases it) of argument i."""
    if isinstance(a, str):
        a = np.frombuffer(a.encode(), dtype=np.uint8)
    elif isinstance(a, bool):
        raise TypeError(f"args[{i}]: a bool is not an argument (give 0 or 1)")
    elif isinstance(a, numbers.Integral):
        a = np.asarray(int(a), dtype=np.int64)
    elif isinstance(a, numbers.Real):
        a = np.asarray(float(a), dtype=np.float64)
    elif not isinstance(a, np.ndarray):
        raise TypeError(
            f"args[{i}]: expected a numpy array, a number, a str, a "
            f"pasco.Model, a pasco.Variable or a per-worker iterator, got "
            f"{type(a).__name__}")
    a = np.asarray(a, order="C")  # a scalar stays rank 0
    code = _CODES.get(a.dtype)
    if code is None:
        raise TypeError(f"args[{i}]: dtype {a.dtype} is not one of float32, "
                        f"float64, int32, int64, uint8")
    if a.ndim > _lib.MAX_RANK:
        raise ValueError(f"args[{i}]: rank {a.ndim} is over {_lib.MAX_RANK}")
    out = POINTER(_lib.Tensor)()
    shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
    rv = lib.pasco_tensor_from(ctypes.byref(out), code, a.ndim, shape,
                               a.ctypes.data_as(c_void_p), a.nbytes)
    if rv != 0:
        raise error_for(rv, f"args[{i}]: making a tensor")
    return out


class RemoteValue:
    """The result of a scheduled step (``pasco_remote_value``):
    ``fetch()`` waits for it and returns it as Python (a tensor as a numpy
    array, a scalar as a numpy scalar, lists and dicts as such) or raises
    the step's error; ``is_ready()`` says whether fetch would not wait;
    ``error()`` is the message of a failed or cancelled step ("" else)."""

    def __init__(self, handle: c_void_p, fn: str,
                 restore: Any = None) -> None:
        self._rv = handle
        self._fn = fn
        self._restore = restore  # a traced step's: its return structure

    def fetch(self) -> Any:
        if not self._rv:
            raise RuntimeError("the remote value is freed")
        out = c_void_p()
        rv = lib.pasco_remote_value_fetch(self._rv, ctypes.byref(out))
        if rv != 0:
            raise error_for(rv, f"{self._fn}: " + lib.pasco_remote_value_error(
                self._rv).decode())
        value = _value_to_python(out.value) if out.value else None
        return self._restore(value) if self._restore else value

    def is_ready(self) -> bool:
        return bool(self._rv) and bool(
            lib.pasco_remote_value_is_ready(self._rv))

    def error(self) -> str:
        return lib.pasco_remote_value_error(self._rv).decode() \
            if self._rv else ""

    def __del__(self) -> None:
        if getattr(self, "_rv", None):
            lib.pasco_remote_value_free(self._rv)
            self._rv = c_void_p()

    def __repr__(self) -> str:
        state = "ready" if self.is_ready() else "pending"
        return f"<pasco.RemoteValue of {self._fn}: {state}>"


class PerWorkerIterator:
    """Each worker's own iterator of a per-worker dataset, built there
    from the start (again on a worker that restarts); an argument of
    ``schedule``."""

    def __init__(self, dataset: "PerWorkerDataset") -> None:
        self._dataset = dataset
        self._it = c_void_p()
        s = dataset._coordinator._strategy
        s._check_open()
        rv = lib.pasco_per_worker_iterator_create(ctypes.byref(self._it),
                                                  dataset._ds)
        if rv != 0:
            raise error_for(rv, f"iterator of {dataset.name[:96]}: "
                            + lib.pasco_coordinator_error(
                                s._coord).decode())
        s._resources.add(self)

    def __iter__(self) -> "PerWorkerIterator":
        return self

    def __next__(self) -> Any:
        raise TypeError("a per-worker iterator is read on the workers: pass "
                        "it to ClusterCoordinator.schedule as an argument")

    def _release(self) -> None:
        if self._it:
            lib.pasco_per_worker_iterator_free(self._it)
            self._it = c_void_p()

    def __del__(self) -> None:
        s = self._dataset._coordinator._strategy
        if getattr(self, "_it", None) and s._coord:
            self._release()  # after close the coordinator freed it


class PerWorkerDataset:
    """A dataset built on every worker (``pasco_per_worker_dataset``):
    ``iter(d)`` gives a :class:`PerWorkerIterator`."""

    def __init__(self, coordinator: "ClusterCoordinator", name: str,
                 dataset: Any = None) -> None:
        self._coordinator = coordinator
        self.name = name
        # the pasco.data dataset (None for a factory's name): its spec
        # gives a traced step's next(iterator) its element's structure
        self.dataset = dataset
        self._ds = c_void_p()
        s = coordinator._strategy
        rv = lib.pasco_per_worker_dataset_create(ctypes.byref(self._ds),
                                                 s._coord, name.encode())
        if rv != 0:
            raise error_for(rv, f"per-worker dataset {name[:96]}")

    def __iter__(self) -> PerWorkerIterator:
        return PerWorkerIterator(self)

    @property
    def element_spec(self) -> Any:
        """The element_spec of the pasco.data dataset each worker builds
        (TensorFlow's per-worker dataset's); TypeError for a factory's
        name, which has no spec on the chief."""
        if self.dataset is None:
            raise TypeError(f"element_spec: the per-worker dataset is the "
                            f"factory {self.name[:64]!r}, whose element is "
                            f"known only to the workers")
        return self.dataset.element_spec

    def __del__(self) -> None:
        if getattr(self, "_ds", None):
            lib.pasco_per_worker_dataset_free(self._ds)
            self._ds = c_void_p()


class ClusterCoordinator:
    """TensorFlow's ClusterCoordinator over a :class:`ParameterServerStrategy`
    (its coordinator: ``fit`` and ``schedule`` share the workers)."""

    def __init__(self, strategy: ParameterServerStrategy) -> None:
        if not isinstance(strategy, ParameterServerStrategy):
            raise TypeError(f"strategy: expected a pasco."
                            f"ParameterServerStrategy, got "
                            f"{type(strategy).__name__}")
        strategy._check_open()
        self._strategy = strategy

    @property
    def strategy(self) -> ParameterServerStrategy:
        return self._strategy

    def _raise(self, rv: int, what: str) -> None:
        raise error_for(rv, f"{what}: " + lib.pasco_coordinator_error(
            self._strategy._coord).decode())

    def create_per_worker_dataset(self, dataset: Any) -> PerWorkerDataset:
        """dataset: a pasco.data dataset (repeated forever unless it says
        otherwise, as fit repeats it), a registered factory's name, or a
        function of no arguments that returns a pasco.data dataset
        (TensorFlow's dataset_fn; a @pasco.function one too, called here
        once: the dataset it describes is built by every worker)."""
        self._strategy._check_open()
        if callable(dataset) and not isinstance(dataset, (Dataset, str)):
            fn = getattr(dataset, "_fn", dataset)  # a @pasco.function's
            made = fn()
            if not isinstance(made, Dataset):
                raise TypeError(f"dataset: the function "
                                f"{getattr(fn, '__name__', fn)!r} returned"
                                f" {type(made).__name__}: expected a "
                                f"pasco.data dataset")
            dataset = made
        if isinstance(dataset, Dataset):
            if dataset._state.get("sliced") and \
                    not dataset._state.get("batched"):
                raise ValueError("create_per_worker_dataset: the dataset is"
                                 " not batched: the workers read batches "
                                 "(call .batch(batch_size))")
            if dataset._src is not None:  # its files go when s closes
                self._strategy._resources.add(dataset._src)
            return PerWorkerDataset(self, dataset.name(-1), dataset)
        if not isinstance(dataset, str) or not dataset:
            raise TypeError(f"dataset: expected a pasco.data dataset or a "
                            f"dataset factory's name, got "
                            f"{type(dataset).__name__}")
        return PerWorkerDataset(self, dataset)

    def _args(self, args: Sequence[Any], keep: List[Any]) -> List[Any]:
        from .models import Model, Variable

        out: List[Any] = []
        for i, a in enumerate(args):
            if isinstance(a, Model):
                native = a._native_checked()
                n = lib.pasco_model_num_args(native)
                buf = (_lib.Arg * n)()
                used = c_size_t(0)
                rv = lib.pasco_model_args(native, buf, n, ctypes.byref(used))
                if rv != 0:
                    msg = lib.pasco_model_last_error().decode()
                    raise error_for(rv, f"args[{i}]: the model's arguments: "
                                    f"{msg}")
                out.extend(buf[k] for k in range(used.value))
            elif isinstance(a, Variable):
                out.append(_lib.Arg(_lib.ARG_VARIABLE, a._handle()))
            elif isinstance(a, PerWorkerIterator):
                if a._dataset._coordinator._strategy is not self._strategy:
                    raise ValueError(f"args[{i}]: the iterator is of "
                                     f"another strategy's coordinator")
                if not a._it:
                    raise RuntimeError(f"args[{i}]: the iterator is freed")
                out.append(_lib.Arg(_lib.ARG_ITERATOR, a._it))
            else:
                t = _tensor_of(i, a)
                keep.append(t)
                out.append(_lib.Arg(_lib.ARG_TENSOR,
                                    ctypes.cast(t, c_void_p)))
        return out

    def schedule(self, fn: Any, args: Sequence[Any] = (),
                 repeat: int = 1) -> RemoteValue:
        """Enqueues a call of the step function ``fn`` with ``args`` on a
        worker and returns its :class:`RemoteValue` at once (blocking only
        while the queue is full). ``fn``: a step function's name, or a
        ``@pasco.function`` (traced here on its first schedule with these
        arguments' kinds and shapes, then run as "pasco.graph_step"; its
        remote value fetches what it returns). ``repeat``: the worker
        calls fn this many times back to back in one closure
        (steps_per_execution); the remote value gets the last call's
        result. Raises the pending error of an earlier step (nothing is
        scheduled then). A RemoteValue is not an argument (ValueError, as
        TensorFlow's): fetch() it and pass its value."""
        s = self._strategy
        s._check_open()
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"args: expected a tuple or list, got "
                            f"{type(args).__name__}")
        for i, a in enumerate(args):
            if isinstance(a, RemoteValue):  # TensorFlow's ValueError
                raise ValueError(f"args[{i}]: a RemoteValue is not an "
                                 f"argument of schedule: fetch() it and "
                                 f"pass its value")
        if not isinstance(fn, str):
            return self._schedule_traced(fn, args, repeat)
        if not fn:
            raise TypeError("fn: expected a step function's name, got ''")
        if not isinstance(repeat, int) or isinstance(repeat, bool) or \
                not 1 <= repeat <= _MAX_REPEAT:
            raise ValueError(f"repeat: expected an integer from 1 to "
                             f"{_MAX_REPEAT}, got {repeat!r}")
        keep: List[Any] = []
        try:
            arr = self._args(args, keep)
            cargs = (_lib.Arg * max(len(arr), 1))(*arr)
            opts = _lib.ScheduleOptions(repeat, False)
            h = c_void_p()
            rv = lib.pasco_schedule_with(s._coord, fn.encode(), cargs,
                                         len(arr), ctypes.byref(opts),
                                         ctypes.byref(h))
        finally:
            for t in keep:  # the coordinator holds its own references
                lib.pasco_tensor_release(t)
        if rv != 0:
            self._raise(rv, f"schedule {fn}")
        return RemoteValue(h, fn)

    def _schedule_traced(self, fn: Any, args: Sequence[Any],
                         repeat: int) -> RemoteValue:
        """schedule of a @pasco.function: its trace for args, run as
        "pasco.graph_step" (the step's JSON, then its arguments)."""
        from .function import Function
        if not isinstance(fn, Function):
            raise TypeError(f"fn: expected a step function's name or a "
                            f"@pasco.function, got {fn!r}")
        step, full = fn._schedule_args(self, args)
        rv = self.schedule("pasco.graph_step", full, repeat)
        rv._fn = f"pasco.graph_step ({step.name})"
        rv._restore = step.restore
        return rv

    def join(self) -> None:
        """Waits until every scheduled step has finished; raises the first
        error of a step since the last one raised."""
        self._strategy._check_open()
        rv = lib.pasco_join(self._strategy._coord)
        if rv != 0:
            self._raise(rv, "join")

    def done(self) -> bool:
        """True when nothing is queued or running. Does not wait, but
        raises a pending error as join does."""
        self._strategy._check_open()
        d = c_bool(False)
        rv = lib.pasco_done(self._strategy._coord, ctypes.byref(d))
        if rv != 0:
            self._raise(rv, "done")
        return bool(d.value)

    def fetch(self, values: Any) -> Any:
        """fetch() of a RemoteValue, or of each in a list or tuple (as
        TensorFlow's coordinator.fetch); anything else as it is."""
        if isinstance(values, RemoteValue):
            return values.fetch()
        if isinstance(values, (list, tuple)):
            return type(values)(self.fetch(v) for v in values)
        return values

    def __repr__(self) -> str:
        return f"<pasco.ClusterCoordinator of {self._strategy!r}>"

