"""pasco.Variable: a variable on the ps (a model's, or the global step),
read and assigned from the chief; the tensor conversions models.py
shares."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int64, c_void_p
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _lib
from ._lib import lib
from .cluster import ParameterServerStrategy
from .errors import check, error_for

if TYPE_CHECKING:
    from .models import Model

_DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 4: np.int64,
           5: np.uint8}
_CODES = {np.dtype(v): k for k, v in _DTYPES.items()}


def _tensor_to_numpy(t: Any) -> np.ndarray:
    shape = tuple(t.shape[i] for i in range(t.rank))
    raw = ctypes.string_at(t.data, t.nbytes) if t.nbytes else b""
    return np.frombuffer(raw, dtype=_DTYPES[t.dtype]).reshape(shape).copy()


def _numpy_to_tensor(a: np.ndarray) -> Any:
    a = np.asarray(a, order="C")  # a scalar stays rank 0
    code = _CODES.get(a.dtype)
    if code is None:
        raise TypeError(f"dtype {a.dtype} is not one of float32, float64, "
                        f"int32, int64, uint8")
    out = POINTER(_lib.Tensor)()
    shape = (c_int64 * max(a.ndim, 1))(*a.shape)
    check(lib.pasco_tensor_from(ctypes.byref(out), code, a.ndim, shape,
                                a.ctypes.data_as(c_void_p), a.nbytes),
          "making a tensor")
    return out



class Variable:
    """A variable on the ps: one of a model's (``model.variables``, e.g.
    "dense/kernel") or the global step (``strategy.global_step_variable()``):
    ``name``, ``shape``, ``numpy()`` reads it, ``assign(value)`` writes it;
    an argument of ``ClusterCoordinator.schedule``."""

    def __init__(self, model: "Model", index: int) -> None:
        self._model, self._index = model, index
        self._own = c_void_p()
        self._dtype = np.float32
        self.name = lib.pasco_model_variable_name(model._native,
                                                  index).decode()
        sp = POINTER(c_int64)()
        rank = lib.pasco_model_variable_shape(model._native, index,
                                              ctypes.byref(sp))
        self.shape = tuple(sp[i] for i in range(rank))

    @classmethod
    def _of_handle(cls, strategy: ParameterServerStrategy, handle: c_void_p,
                   name: str, shape: tuple, dtype: str) -> "Variable":
        v = cls.__new__(cls)
        v._model, v._index, v._strategy = None, -1, strategy
        v._own, v._dtype = handle, np.dtype(dtype).type
        v.name, v.shape = name, shape
        return v

    def _handle(self) -> int:
        if self._model is None:
            if not self._own:
                raise RuntimeError(f"{self.name}: its strategy is closed")
            return self._own.value
        h = lib.pasco_model_variable(self._model._native_checked(),
                                     self._index)
        if not h:
            raise RuntimeError(f"{self.name}: the variable is not created "
                               f"yet (fit the model, or call build())")
        return h

    def _release(self) -> None:
        if self._own:
            lib.pasco_variable_free(self._own)
            self._own = c_void_p()

    def __del__(self) -> None:
        s = getattr(self, "_strategy", None)
        if getattr(self, "_own", None) and s is not None and s._strategy:
            self._release()

    def numpy(self) -> np.ndarray:
        h = self._handle()
        t = POINTER(_lib.Tensor)()
        rv = lib.pasco_variable_read(h, ctypes.byref(t))
        if rv != 0:
            raise error_for(rv, f"reading {self.name}: "
                            + lib.pasco_variable_error(h).decode())
        try:
            return _tensor_to_numpy(t.contents)
        finally:
            lib.pasco_tensor_release(t)

    def read_value(self) -> Any:
        """TensorFlow's read_value: in a @pasco.function step being
        traced, the variable's value in the step (a symbolic tensor of its
        dtype, one read per step: the global step an int64 scalar, which
        ``ops.cast`` brings into float arithmetic); elsewhere numpy()."""
        from .function import _tracing
        st = _tracing()
        if st is not None:
            return st.read(self, f"{self.name}.read_value()")
        return self.numpy()

    def assign(self, value: Any) -> None:
        h = self._handle()
        a = np.asarray(value, dtype=self._dtype)
        if a.shape != self.shape:
            raise ValueError(f"value: {self.name} has shape {self.shape}, "
                             f"got {a.shape}")
        t = _numpy_to_tensor(a)
        try:
            rv = lib.pasco_variable_assign(h, t)
            if rv != 0:
                raise error_for(rv, f"assigning {self.name}: "
                                + lib.pasco_variable_error(h).decode())
        finally:
            lib.pasco_tensor_release(t)

    def __repr__(self) -> str:
        return f"<pasco.Variable {self.name} shape={self.shape}>"
