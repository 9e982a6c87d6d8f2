"""Keras's saving: ``model.save`` / ``pasco.models.load_model`` (a
``.keras`` zip of config.json, metadata.json and
model.weights.safetensors) and ``save_weights`` / ``load_weights`` (a
``.weights.safetensors`` file). The C library does the work
(``pasco_model_save`` and the others, include/pasco/model.h "Saving"):
the ps tasks write their shards and optimizer slots into a staging
directory beside the file (it must be under their PASCO_CHECKPOINT_DIR, on
storage they reach), the chief merges them into one safetensors file of
whole variables, slots and the global step; loading assigns them as the
strategy now places and partitions them, whatever its ps count.

Keras 3 writes its weights as HDF5 (``.weights.h5``); Pasco writes
safetensors (``.weights.safetensors``): its checkpoints already are
safetensors checked by CRC-32C, numpy reads them without h5py, and the
format is a JSON header and raw bytes that can be checked before use."""

from __future__ import annotations

import ctypes
import json
import os
import zipfile
from ctypes import POINTER, c_char_p, c_int, c_void_p
from typing import Any, Optional

from ._lib import lib
from .errors import error_for

__all__ = ["load_model"]

WEIGHTS_SUFFIX = ".weights.safetensors"

lib.pasco_model_save.argtypes = [c_void_p, c_void_p, c_char_p]
lib.pasco_model_save.restype = c_int
lib.pasco_model_load.argtypes = [POINTER(c_void_p), c_void_p, c_char_p]
lib.pasco_model_load.restype = c_int
lib.pasco_model_save_weights.argtypes = [c_void_p, c_void_p, c_char_p]
lib.pasco_model_save_weights.restype = c_int
lib.pasco_model_load_weights.argtypes = [c_void_p, c_void_p, c_char_p]
lib.pasco_model_load_weights.restype = c_int


def _failed(rv: int, what: str) -> Exception:
    msg = lib.pasco_model_last_error().decode()
    return error_for(rv, msg or what)


def _check_overwrite(path: str, overwrite: bool) -> None:
    if not isinstance(overwrite, bool):
        raise TypeError(f"overwrite: expected a bool, got {overwrite!r}")
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"filepath={path} exists and overwrite=False "
                              f"(Keras would ask; Pasco does not)")


def save_model(model: Any, filepath: Any, overwrite: bool = True,
               zipped: Optional[bool] = None, **kwargs: Any) -> None:
    """Keras's model.save: a ``.keras`` zip file (config.json with the
    compile config, metadata.json, model.weights.safetensors with the
    variables, optimizer slots and iterations)."""
    path = os.fspath(filepath)
    if kwargs:
        raise ValueError(f"Invalid keyword arguments: {kwargs}")
    if zipped is False:
        raise ValueError("zipped=False: Pasco saves a zipped .keras file "
                         "only")
    if not str(path).endswith(".keras"):
        raise ValueError(
            "Invalid filepath extension for saving. Please add a `.keras` "
            "extension for the native format (Pasco writes no `.h5`). "
            f"Received: filepath={path}.")
    _check_overwrite(path, overwrite)
    model.build()
    s = model._strategy_checked()
    rv = lib.pasco_model_save(s._strategy, model._native_checked(),
                              path.encode())
    if rv != 0:
        raise _failed(rv, f"saving {path}")


def save_weights(model: Any, filepath: Any, overwrite: bool = True,
                 max_shard_size: Optional[float] = None) -> None:
    """Keras's save_weights, as one ``.weights.safetensors`` file."""
    path = os.fspath(filepath)
    if max_shard_size is not None:
        raise ValueError("max_shard_size: Pasco writes one weights file "
                         "(safetensors has no size bound); leave it None")
    if not str(path).endswith(WEIGHTS_SUFFIX):
        raise ValueError(f"The filename must end in `{WEIGHTS_SUFFIX}`. "
                         f"Received: filepath={path}")
    _check_overwrite(path, overwrite)
    model.build()
    s = model._strategy_checked()
    rv = lib.pasco_model_save_weights(s._strategy, model._native_checked(),
                                      path.encode())
    if rv != 0:
        raise _failed(rv, f"saving weights to {path}")


def load_weights(model: Any, filepath: Any, skip_mismatch: bool = False,
                 **kwargs: Any) -> None:
    """Keras's load_weights from a ``.weights.safetensors`` or ``.keras``
    file: every variable, its optimizer slots and the iterations."""
    path = os.fspath(filepath)
    if kwargs:
        raise ValueError(f"Invalid keyword arguments: {kwargs}")
    if skip_mismatch:
        raise ValueError("skip_mismatch=True: Pasco loads every variable "
                         "or none (a mismatch is an error naming it)")
    if not str(path).endswith((".keras", WEIGHTS_SUFFIX)):
        raise ValueError(
            f"File format not supported: filepath={path}. Pasco loads "
            f"`.keras` files and `{WEIGHTS_SUFFIX}` files.")
    model.build()
    s = model._strategy_checked()
    rv = lib.pasco_model_load_weights(s._strategy, model._native_checked(),
                                      path.encode())
    if rv != 0:
        raise _failed(rv, f"loading weights from {path}")


def load_model(filepath: Any, custom_objects: Optional[dict] = None,
               compile: bool = True, safe_mode: bool = True,
               strategy: Any = None) -> Any:
    """Keras's load_model of a ``.keras`` file saved by model.save: the
    model made from its config (compiled as it was), its variables
    created on the strategy's ps tasks (``strategy``, default the one in
    scope) and loaded: the same predictions on any ps count, and a fit
    that goes on where the saved one stopped (optimizer slots and
    iterations included). custom_objects and safe_mode are Keras's and
    have nothing to do here (a custom layer's or loss's graph is in the
    config)."""
    from .cluster import get_strategy
    path = os.fspath(filepath)
    if not str(path).endswith(".keras") or not zipfile.is_zipfile(path):
        if str(path).endswith(".keras"):
            raise ValueError(f"File not found: filepath={path}. Please "
                             f"ensure the file is an accessible `.keras` "
                             f"zip file.")
        raise ValueError(f"File format not supported: filepath={path}. "
                         f"Pasco loads `.keras` files (model.save's).")
    with zipfile.ZipFile(path) as z:
        config = json.loads(z.read("config.json"))
    s = strategy if strategy is not None else get_strategy()
    native = c_void_p()
    rv = lib.pasco_model_load(ctypes.byref(native), s._strategy,
                              path.encode())
    if rv != 0:
        raise _failed(rv, f"loading {path}")
    m = _LoadedModel(config, s, bool(compile))
    m._native, m._built_json = native, m.to_json()
    if m not in s._models:
        s._models.append(m)
    return m


def _loaded_class() -> type:
    from . import optimizers
    from .models import Model

    class LoadedModel(Model):
        """A model made from a saved config: its layers are the config's
        (``get_config()``); fit, evaluate, predict, save and summary work
        as on the model that was saved."""

        def __init__(self, config: dict, strategy: Any,
                     compiled: bool) -> None:
            c = config.get("config", {})
            super().__init__(name=c.get("name"), seed=c.get("seed", 42),
                             strategy=strategy)
            self._saved = {k: v for k, v in config.items()
                           if k != "compile_config"}
            self.layers = []
            cc = config.get("compile_config") if compiled else None
            if cc is not None:
                self.compile_config = cc
                loss = cc.get("loss")
                self.compiled_loss = loss if isinstance(loss, str) else \
                    (loss or {}).get("config", {}).get("name")
                o = cc.get("optimizer") or {}
                cls = optimizers._BY_NAME.get(
                    str(o.get("class_name", "")).lower())
                if cls is not None:
                    try:
                        self.optimizer = cls(**o.get("config", {}))
                    except (TypeError, ValueError):
                        self.optimizer = None

        def _model_config(self, data: Any) -> dict:
            return json.loads(json.dumps(self._saved))

    return LoadedModel


class _Lazy:
    cls: Optional[type] = None


def _LoadedModel(config: dict, strategy: Any, compiled: bool) -> Any:
    if _Lazy.cls is None:
        _Lazy.cls = _loaded_class()
    return _Lazy.cls(config, strategy, compiled)
