"""Keras's callbacks for ``model.fit``, at epoch granularity (as under
TensorFlow's ParameterServerStrategy).

Built in (run by the library): :class:`ModelCheckpoint`,
:class:`BackupAndRestore`, :class:`TensorBoard`, :class:`EarlyStopping`.
Your own: subclass :class:`Callback` and define any of
``on_train_begin(logs)``, ``on_epoch_begin(epoch, logs)``,
``on_epoch_end(epoch, logs)``, ``on_train_end(logs)``; ``logs`` is a dict
(``{"loss": ..., "accuracy": ..., "val_loss": ...}``); setting
``self.model.stop_training = True`` ends training after the epoch. An
exception raised in a callback ends ``fit`` and is raised from it. Ctrl-C
(SIGINT) stops ``fit`` at its next step's result and raises
KeyboardInterrupt from it.
"""

from __future__ import annotations

import ctypes
import json
import signal
import threading
from typing import Any, Dict, List, Optional

from . import _lib
from ._lib import lib
from .errors import check

__all__ = ["Callback", "ModelCheckpoint", "BackupAndRestore", "TensorBoard",
           "EarlyStopping", "History"]


class Callback:
    """A Python callback. ``self.model`` is the model being fit."""

    model: Any = None

    def set_model(self, model: Any) -> None:
        self.model = model

    def on_train_begin(self, logs: Optional[Dict[str, float]] = None) -> None:
        pass

    def on_epoch_begin(self, epoch: int,
                       logs: Optional[Dict[str, float]] = None) -> None:
        pass

    def on_epoch_end(self, epoch: int,
                     logs: Optional[Dict[str, float]] = None) -> None:
        pass

    def on_train_end(self, logs: Optional[Dict[str, float]] = None) -> None:
        pass

    # The C callback (pasco_callback) calling the methods above; the
    # function objects are kept on the instance while fit runs.
    def _make(self, strategy: Any, errors: List[BaseException]
              ) -> _lib.Callback:
        def guard(fn: Any) -> int:
            try:
                fn()
                return 0
            except BaseException as e:  # raised again by fit
                errors.append(e)
                msg = f"{type(self).__name__}: {type(e).__name__}: {e}"
                return lib.pasco_fit_fail(7, b"%s", msg.encode())

        def stop(ctx: Any) -> None:
            if self.model is not None and getattr(self.model,
                                                  "stop_training", False):
                ctx.contents.stop_training = True
                ctx.contents.stop_reason = (
                    type(self).__name__ + " set stop_training").encode()[:159]
                self.model.stop_training = False

        def begin(user: Any, ctx: Any) -> int:
            return guard(lambda: self.on_train_begin({}))

        def epoch_begin(user: Any, ctx: Any) -> int:
            return guard(lambda: self.on_epoch_begin(ctx.contents.epoch, {}))

        def epoch_end(user: Any, ctx: Any, logs: Any) -> int:
            def run() -> None:
                self.on_epoch_end(ctx.contents.epoch, logs.contents.to_dict())
                stop(ctx)
            return guard(run)

        def end(user: Any, ctx: Any, logs: Any) -> int:
            return guard(lambda: self.on_train_end(
                logs.contents.to_dict() if logs else {}))

        self._c_funcs = (_lib.CB_CTX(begin), _lib.CB_CTX(epoch_begin),
                         _lib.CB_LOGS(epoch_end), _lib.CB_LOGS(end))
        cb = _lib.Callback()
        cb.name = type(self).__name__.encode()
        self._c_name = cb.name
        cb.begin, cb.epoch_begin, cb.epoch_end, cb.end = self._c_funcs
        return cb


class _InterruptWatch:
    """SIGINT during fit, raised as KeyboardInterrupt once fit has stopped.
    Python runs a signal's handler only between bytecodes of the main
    thread: never inside a C fit without Python callbacks (Ctrl-C did
    nothing), and a KeyboardInterrupt raised as a ctypes callback begins
    is swallowed, the callback returning garbage (fit then failed with
    "unknown error code"). So while fit runs (``with watch:``), SIGINT is
    only recorded, and the callback of ``make`` stops fit at its next step
    result or epoch (CANCELLED, "interrupted"). Only in the main thread,
    and only where SIGINT raises KeyboardInterrupt as by default."""

    def __init__(self) -> None:
        self.interrupted = False
        self._old: Any = None

    def __enter__(self) -> "_InterruptWatch":
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            self._old = signal.signal(signal.SIGINT, self._record)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
            self._old = None

    def _record(self, signum: int, frame: Any) -> None:
        self.interrupted = True

    def _stop(self) -> int:
        if not self.interrupted:
            return 0
        return lib.pasco_fit_fail(6, b"%s", b"interrupted (SIGINT)")

    def make(self) -> _lib.Callback:
        """The C callback that ends fit once SIGINT came."""
        self._c_funcs = (
            _lib.CB_CTX(lambda user, ctx: self._stop()),
            _lib.CB_PROGRESS(lambda user, ctx, loss: self._stop()),
            _lib.CB_LOGS(lambda user, ctx, logs: self._stop()))
        cb = _lib.Callback()
        cb.name = b"KeyboardInterrupt"
        cb.epoch_begin, cb.progress, cb.epoch_end = self._c_funcs
        return cb


class ModelCheckpoint(Callback):
    """A checkpoint of every variable in ``filepath``/ckpt-<step> at each
    epoch's end (or every ``save_freq`` steps when it is an int), keeping
    the newest ``keep`` (0: all). The directory is written by the ps
    tasks."""

    def __init__(self, filepath: str, save_freq: Any = "epoch",
                 keep: int = 5) -> None:
        if not isinstance(filepath, str) or not filepath:
            raise ValueError("filepath: expected a directory")
        if save_freq != "epoch" and (not isinstance(save_freq, int) or
                                     save_freq < 1):
            raise ValueError(f"save_freq: expected 'epoch' or a number of "
                             f"steps, got {save_freq!r}")
        if not isinstance(keep, int) or keep < 0:
            raise ValueError(f"keep: expected an integer >= 0, got {keep!r}")
        self.filepath, self.save_freq, self.keep = filepath, save_freq, keep

    def _make(self, strategy: Any, errors: List[BaseException]
              ) -> _lib.Callback:
        self._path = self.filepath.encode()
        o = _lib.CheckpointCallbackOptions(
            strategy._strategy, self._path,
            0 if self.save_freq == "epoch" else self.save_freq, self.keep)
        cb = _lib.Callback()
        check(lib.pasco_callback_checkpoint(ctypes.byref(cb), ctypes.byref(o)),
              "ModelCheckpoint")
        return cb


class BackupAndRestore(Callback):
    """Keras's BackupAndRestore: a backup in ``backup_dir`` at each
    epoch's end; a fit started again resumes from it (the epoch and the
    variables); deleted when training completes."""

    def __init__(self, backup_dir: str) -> None:
        if not isinstance(backup_dir, str) or not backup_dir:
            raise ValueError("backup_dir: expected a directory")
        self.backup_dir = backup_dir

    def _make(self, strategy: Any, errors: List[BaseException]
              ) -> _lib.Callback:
        cb = _lib.Callback()
        check(lib.pasco_callback_backup_restore(
            ctypes.byref(cb), strategy._strategy, self.backup_dir.encode()),
            "BackupAndRestore")
        return cb


class TensorBoard(Callback):
    """TensorBoard event files: each epoch's logs as epoch_<name> in
    ``log_dir``/train and (validation) ``log_dir``/eval."""

    def __init__(self, log_dir: str = "logs") -> None:
        if not isinstance(log_dir, str) or not log_dir:
            raise ValueError("log_dir: expected a directory")
        self.log_dir = log_dir

    def _make(self, strategy: Any, errors: List[BaseException]
              ) -> _lib.Callback:
        self._path = self.log_dir.encode()
        lr, self._schedule = 0.0, None
        if self.model is not None and self.model.optimizer is not None:
            lr = self.model.optimizer.learning_rate
        if hasattr(lr, "_serialized"):  # a schedule: its value each epoch
            self._schedule = json.dumps(lr._serialized()).encode()
            lr = 0.0
        o = _lib.TensorBoardOptions(self._path, lr, self._schedule)
        cb = _lib.Callback()
        check(lib.pasco_callback_tensorboard(ctypes.byref(cb),
                                             ctypes.byref(o)), "TensorBoard")
        return cb


class EarlyStopping(Callback):
    """Stops training when ``monitor`` has not improved by more than
    ``min_delta`` for ``patience`` epochs; mode "auto" (max for names with
    "acc"), "min" or "max"."""

    _MODES = {"auto": 0, "min": 1, "max": 2}

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0,
                 patience: int = 0, mode: str = "auto") -> None:
        if not isinstance(monitor, str) or not monitor:
            raise ValueError("monitor: expected a log name")
        if not isinstance(patience, int) or patience < 0:
            raise ValueError(f"patience: expected an integer >= 0, got "
                             f"{patience!r}")
        if mode not in self._MODES:
            raise ValueError(f"mode: expected 'auto', 'min' or 'max', got "
                             f"{mode!r}")
        self.monitor, self.min_delta = monitor, float(min_delta)
        self.patience, self.mode = patience, mode

    def _make(self, strategy: Any, errors: List[BaseException]
              ) -> _lib.Callback:
        self._monitor = self.monitor.encode()
        o = _lib.EarlyStoppingOptions(self._monitor, self.min_delta,
                                      self.patience, self._MODES[self.mode])
        cb = _lib.Callback()
        check(lib.pasco_callback_early_stopping(ctypes.byref(cb),
                                                ctypes.byref(o)),
              "EarlyStopping")
        return cb


class History:
    """Keras's History: ``history`` maps each log name to its values per
    epoch; ``epoch`` lists the epochs run; ``stopped_early``."""

    def __init__(self) -> None:
        self.history: Dict[str, List[float]] = {}
        self.epoch: List[int] = []
        self.stopped_early = False
        self.params: Dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<pasco.callbacks.History epochs {self.epoch}>"
