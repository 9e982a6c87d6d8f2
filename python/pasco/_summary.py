"""Keras's model.summary() (pasco_model_summary, include/pasco/model.h):
the table of layers, output shapes and parameters, the totals, and where
each variable lives (its shards, their rows and ps tasks)."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int, c_void_p
from typing import Any, Callable, Optional

from ._lib import lib, libc
from .errors import error_for

lib.pasco_model_summary.argtypes = [c_void_p, POINTER(c_void_p)]
lib.pasco_model_summary.restype = c_int


def summary(model: Any, print_fn: Optional[Callable[..., Any]]) -> None:
    model.build()
    out = c_void_p()
    rv = lib.pasco_model_summary(model._native_checked(), ctypes.byref(out))
    if rv != 0:
        raise error_for(rv, lib.pasco_model_last_error().decode())
    try:
        text = ctypes.string_at(out).decode()
    finally:
        libc.free(out)
    for line in text.rstrip("\n").split("\n"):
        (print_fn or print)(line)
