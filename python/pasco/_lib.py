"""The shared library libpasco, loaded with ctypes, and its signatures.

Where libpasco is looked for, first found wins:

1. ``PASCO_LIBRARY``: the path of the shared library (``.../libpasco.so``);
2. ``PASCO_BUILD_DIR``'s ``libpasco.so``, when that names a build folder;
3. ``libpasco.so`` inside this package (a pip install: the wheel ships it
   there, see docs/install.md);
4. a development checkout: ``build/libpasco.so`` next to this package's
   ``python/`` folder;
5. the library directory the package was installed with (``meson install``
   writes it into ``_install.py``);
6. the system's loader: ``libpasco.so.0`` (``LD_LIBRARY_PATH``, ldconfig).
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_bool, c_char,
                    c_char_p, c_double, c_int, c_int32, c_int64, c_size_t,
                    c_uint32, c_void_p)
from pathlib import Path
from typing import List

__all__ = ["lib", "library_path"]


def _candidates() -> List[str]:
    out: List[str] = []
    env = os.environ.get("PASCO_LIBRARY")
    if env:
        return [env]  # named explicitly: no silent fallback
    here = Path(__file__).resolve().parent
    build = os.environ.get("PASCO_BUILD_DIR")
    if build:
        out.append(str(Path(build) / "libpasco.so"))
    out.append(str(here / "libpasco.so"))
    out.append(str(here.parent.parent / "build" / "libpasco.so"))
    try:
        from . import _install  # type: ignore[attr-defined]

        out.append(str(Path(_install.LIBDIR) / "libpasco.so.0"))
    except ImportError:
        pass
    out.append("libpasco.so.0")
    return out


def _load() -> "tuple[ctypes.CDLL, str]":
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            return ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL), path
        except OSError as e:
            tried.append(f"{path} ({e})")
    raise ImportError(
        "pasco: cannot load libpasco; tried " + "; ".join(tried)
        + ". Set PASCO_LIBRARY to the path of libpasco.so (a build "
        "folder's, or the installed one)")


lib, library_path = _load()

# The thread pools sized by the configuration, not the core count, before
# nng starts, as pasco_main does first: a chief whose strategy comes from
# TF_CONFIG does not go through it (pasco_threads_configure, server.h).
lib.pasco_threads_configure.argtypes = [c_char_p, c_size_t]
_why = ctypes.create_string_buffer(512)
if lib.pasco_threads_configure(_why, len(_why)) != 0:
    raise ImportError("pasco: " + _why.value.decode())


# --- structures (include/pasco/*.h) -------------------------------------

LOGS_MAX = 32
LOG_NAME_MAX = 64
MAX_RANK = 8


class LogEntry(Structure):
    _fields_ = [("name", c_char * LOG_NAME_MAX), ("value", c_double)]


class Logs(Structure):  # pasco_logs (fit.h)
    _fields_ = [("count", c_size_t), ("entries", LogEntry * LOGS_MAX)]

    def to_dict(self) -> dict:
        return {self.entries[i].name.decode(): self.entries[i].value
                for i in range(self.count)}


class FitContext(Structure):  # pasco_fit_context (fit.h)
    _fields_ = [("epochs", c_int32), ("steps_per_epoch", c_int64),
                ("initial_epoch", c_int32), ("epoch", c_int32),
                ("steps_done", c_int64), ("global_step", c_int64),
                ("stop_training", c_bool), ("stop_reason", c_char * 160),
                ("learning_rate", c_double), ("log_learning_rate", c_bool),
                ("batch_logs", POINTER(Logs))]


CB_CTX = CFUNCTYPE(c_int, c_void_p, POINTER(FitContext))
CB_PROGRESS = CFUNCTYPE(c_int, c_void_p, POINTER(FitContext), c_double)
CB_LOGS = CFUNCTYPE(c_int, c_void_p, POINTER(FitContext), POINTER(Logs))
CB_FREE = CFUNCTYPE(None, c_void_p)


class Callback(Structure):  # pasco_callback (fit.h)
    _fields_ = [("name", c_char_p), ("begin", CB_CTX),
                ("epoch_begin", CB_CTX), ("progress", CB_PROGRESS),
                ("epoch_end", CB_LOGS), ("end", CB_LOGS),
                ("free", CB_FREE), ("user", c_void_p)]


class History(Structure):  # pasco_history (fit.h)
    _fields_ = [("initial_epoch", c_int32), ("count", c_int32),
                ("epochs", POINTER(Logs)), ("stopped_early", c_bool)]


class FitOptions(Structure):  # pasco_model_fit_options (model.h)
    _fields_ = [("dataset", c_char_p), ("epochs", c_int32),
                ("steps_per_epoch", c_int64), ("initial_epoch", c_int32),
                ("steps_per_execution", c_uint32),
                ("validation_dataset", c_char_p),
                ("validation_shards", c_int32), ("callbacks", c_void_p),
                ("checkpoint_dir", c_char_p), ("checkpoint_keep", c_int32),
                ("logdir", c_char_p), ("resume", c_bool),
                ("verbose", c_bool), ("window", c_uint32),
                ("progress_style", c_int), ("step_dataset", c_void_p),
                ("step_user", c_void_p)]


# pasco_model_fit_options.step_dataset: (user, epoch, step, name, len)
STEP_DATASET = CFUNCTYPE(c_int, c_void_p, c_int32, c_int64, POINTER(c_char),
                         c_size_t)


class EvaluateOptions(Structure):  # pasco_model_evaluate_options
    _fields_ = [("dataset", c_char_p), ("shards", c_int32)]


class PredictOptions(Structure):  # pasco_model_predict_options
    _fields_ = [("dataset", c_char_p), ("shards", c_int32),
                ("dir", c_char_p), ("format", c_int)]


class CheckpointCallbackOptions(Structure):
    _fields_ = [("strategy", c_void_p), ("dir", c_char_p),
                ("every_steps", c_int64), ("keep", c_int32)]


class TensorBoardOptions(Structure):
    _fields_ = [("logdir", c_char_p), ("learning_rate", c_double),
                ("learning_rate_schedule", c_char_p)]


class EarlyStoppingOptions(Structure):
    _fields_ = [("monitor", c_char_p), ("min_delta", c_double),
                ("patience", c_int32), ("mode", c_int)]


class ReduceLROptions(Structure):  # pasco_reduce_lr_options (fit.h)
    _fields_ = [("monitor", c_char_p), ("factor", c_double),
                ("patience", c_int32), ("mode", c_int),
                ("min_delta", c_double), ("cooldown", c_int32),
                ("min_lr", c_double), ("verbose", c_bool)]


class Tensor(Structure):  # pasco_tensor (tensor.h): descriptor only
    _fields_ = [("dtype", c_int), ("rank", c_int32),
                ("shape", c_int64 * MAX_RANK), ("count", c_int64),
                ("nbytes", c_size_t), ("data", c_void_p),
                ("storage", c_void_p), ("refs", c_int32)]


PARTITION_FN = CFUNCTYPE(c_int, c_void_p, c_int, c_int32, POINTER(c_int64),
                         POINTER(c_int64), POINTER(c_int32))


class Partitioner(Structure):  # pasco_partitioner (partitioner.h)
    _fields_ = [("kind", c_int), ("num_shards", c_int64),
                ("min_shard_bytes", c_int64), ("max_shard_bytes", c_int64),
                ("max_shards", c_int64), ("bytes_per_string", c_int64),
                ("fn", PARTITION_FN), ("arg", c_void_p)]


class StrategyOptions(Structure):  # pasco_strategy_options (coordinator.h)
    _fields_ = [("connect_timeout_ms", c_int64),
                ("call_timeout_ms", c_int64),
                ("partitioner", POINTER(Partitioner)),
                ("heartbeat_interval_ms", c_int64),
                ("heartbeat_misses", c_int32),
                ("consistency", c_int),  # pasco_consistency
                ("replicas_to_aggregate", c_int32),
                ("staleness", c_int32),
                ("checkpoint_dir", c_char_p),
                ("ps_recovery_timeout_ms", c_int64)]


class CoordinatorOptions(Structure):  # pasco_coordinator_options
    _fields_ = [("window", c_uint32), ("max_batch", c_uint32),
                ("queue_size", c_uint32), ("watchdog_timeout_ms", c_int64)]


CHIEF_FN = CFUNCTYPE(c_int, c_void_p, c_int, POINTER(c_char_p))


def _sig(name: str, restype, *argtypes) -> None:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


P = c_void_p
_sig("pasco_strerror", c_char_p, c_int)
_sig("pasco_errname", c_char_p, c_int)
_sig("pasco_main", c_int, c_int, POINTER(c_char_p), CHIEF_FN)
_sig("pasco_cluster_task_role", c_int, P)
_sig("pasco_cluster_task_index", c_int32, P)
_sig("pasco_cluster_count", c_size_t, P, c_int)
_sig("pasco_cluster_url", c_char_p, P, c_int, c_size_t)
_sig("pasco_cluster_parse_json", c_int, POINTER(P), c_char_p, c_char_p,
     c_size_t)
_sig("pasco_cluster_free", None, P)
_sig("pasco_strategy_create", c_int, POINTER(P), P,
     POINTER(StrategyOptions))
_sig("pasco_strategy_error", c_char_p, P)
_sig("pasco_strategy_destroy", None, P)
_sig("pasco_strategy_num_ps", c_size_t, P)
_sig("pasco_strategy_num_workers", c_size_t, P)
_sig("pasco_coordinator_create", c_int, POINTER(P), P,
     POINTER(CoordinatorOptions))
_sig("pasco_coordinator_destroy", None, P)
_sig("pasco_coordinator_error", c_char_p, P)
_sig("pasco_join", c_int, P)
_sig("pasco_model_from_json", c_int, c_char_p, POINTER(P))
_sig("pasco_model_to_json", c_int, P, POINTER(c_void_p))
_sig("pasco_model_free", None, P)
_sig("pasco_model_last_error", c_char_p)
_sig("pasco_model_create_variables", c_int, P, P)
_sig("pasco_model_adapt_tensor", c_int, P, c_size_t, POINTER(Tensor))
_sig("pasco_model_num_variables", c_size_t, P)
_sig("pasco_model_variable_name", c_char_p, P, c_size_t)
_sig("pasco_model_variable_shape", c_int32, P, c_size_t,
     POINTER(POINTER(c_int64)))
_sig("pasco_model_variable", P, P, c_size_t)
_sig("pasco_model_fit", c_int, P, P, POINTER(FitOptions), POINTER(History))
_sig("pasco_history_fini", None, POINTER(History))
_sig("pasco_model_evaluate", c_int, P, P, POINTER(EvaluateOptions),
     POINTER(Logs))
_sig("pasco_model_predict", c_int, P, P, POINTER(PredictOptions),
     POINTER(c_int64))
_sig("pasco_fit_error", c_char_p)
_sig("pasco_fit_fail", c_int, c_int, c_char_p, c_char_p)
_sig("pasco_callbacks_create", c_int, POINTER(P))
_sig("pasco_callbacks_add", c_int, P, Callback)
_sig("pasco_callbacks_free", None, P)
_sig("pasco_callback_checkpoint", c_int, POINTER(Callback),
     POINTER(CheckpointCallbackOptions))
_sig("pasco_callback_backup_restore", c_int, POINTER(Callback), P, c_char_p)
_sig("pasco_callback_tensorboard", c_int, POINTER(Callback),
     POINTER(TensorBoardOptions))
_sig("pasco_callback_early_stopping", c_int, POINTER(Callback),
     POINTER(EarlyStoppingOptions))
_sig("pasco_fit_set_learning_rate", c_int, POINTER(FitContext), c_double)
_sig("pasco_callback_reduce_lr_on_plateau", c_int, POINTER(Callback),
     POINTER(ReduceLROptions))
_sig("pasco_callback_csv_logger", c_int, POINTER(Callback), c_char_p,
     c_char_p, c_bool)
_sig("pasco_callback_terminate_on_nan", c_int, POINTER(Callback))
_sig("pasco_variable_read", c_int, P, POINTER(POINTER(Tensor)))
_sig("pasco_variable_assign", c_int, P, POINTER(Tensor))
_sig("pasco_variable_error", c_char_p, P)
_sig("pasco_variable_is_dynamic", c_bool, P)
_sig("pasco_variable_free", None, P)
_sig("pasco_strategy_global_step", c_int, P, POINTER(P))
_sig("pasco_tensor_from", c_int, POINTER(POINTER(Tensor)), c_int, c_int32,
     POINTER(c_int64), c_void_p, c_size_t)
_sig("pasco_tensor_release", None, POINTER(Tensor))
_sig("pasco_tfrecord_writer_open", c_int, POINTER(P), c_char_p)
_sig("pasco_tfrecord_writer_open_gzip", c_int, POINTER(P), c_char_p)
_sig("pasco_tfrecord_write", c_int, P, c_void_p, c_size_t)
_sig("pasco_tfrecord_writer_close", c_int, P)
_sig("pasco_tfrecord_writer_discard", None, P)
_sig("pasco_tfrecord_last_error", c_char_p)
_sig("pasco_checkpoint_save", c_int, P, c_char_p, c_int64, c_int32)
_sig("pasco_checkpoint_restore", c_int, P, c_char_p, POINTER(c_int64))
_sig("pasco_checkpoint_restore_latest", c_int, P, c_char_p,
     POINTER(c_int64))

libc = ctypes.CDLL(None)
libc.free.argtypes = [c_void_p]
libc.free.restype = None


# --- the coordinator's schedule / join / done (coordinator.h) -------------

class Arg(Structure):  # pasco_arg: a kind and a pointer (the union)
    _fields_ = [("kind", c_int), ("ptr", c_void_p)]


ARG_TENSOR, ARG_VARIABLE, ARG_ITERATOR = 0, 1, 2


class ScheduleOptions(Structure):  # pasco_schedule_options
    _fields_ = [("repeat", c_uint32), ("sum_results", c_bool)]


_sig("pasco_schedule_with", c_int, P, c_char_p, POINTER(Arg), c_size_t,
     POINTER(ScheduleOptions), POINTER(P))
_sig("pasco_done", c_int, P, POINTER(c_bool))
_sig("pasco_remote_value_fetch", c_int, P, POINTER(P))
_sig("pasco_remote_value_is_ready", c_bool, P)
_sig("pasco_remote_value_error", c_char_p, P)
_sig("pasco_remote_value_free", None, P)
_sig("pasco_per_worker_dataset_create", c_int, POINTER(P), P, c_char_p)
_sig("pasco_per_worker_dataset_free", None, P)
_sig("pasco_per_worker_iterator_create", c_int, POINTER(P), P)
_sig("pasco_per_worker_iterator_free", None, P)
_sig("pasco_model_num_args", c_size_t, P)
_sig("pasco_model_args", c_int, P, POINTER(Arg), c_size_t,
     POINTER(c_size_t))
_sig("pasco_value_kind_of", c_int, P)
_sig("pasco_value_size", c_size_t, P)
_sig("pasco_value_item", P, P, c_size_t)
_sig("pasco_value_key", c_char_p, P, c_size_t)
_sig("pasco_value_as_tensor", POINTER(Tensor), P)

# --- datasets built on the chief (dataset.h), adapt (layers.h) -----------
_sig("pasco_dataset_from_name", c_int, POINTER(P), c_char_p, c_int32,
     c_int32)
_sig("pasco_dataset_free", None, P)
_sig("pasco_dataset_last_error", c_char_p)
_sig("pasco_model_adapt", c_int, P, c_size_t, P)
