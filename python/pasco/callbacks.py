"""Keras's callbacks for ``model.fit``.

Built in (run by the library): :class:`ModelCheckpoint`,
:class:`BackupAndRestore`, :class:`TensorBoard`, :class:`EarlyStopping`,
:class:`ReduceLROnPlateau`, :class:`CSVLogger`, :class:`TerminateOnNaN`;
in Python: :class:`LearningRateScheduler`, :class:`LambdaCallback`.
Your own: subclass :class:`Callback` and define any of
``on_train_begin(logs)``, ``on_epoch_begin(epoch, logs)``,
``on_epoch_end(epoch, logs)``, ``on_train_end(logs)``,
``on_train_batch_begin(batch, logs)``, ``on_train_batch_end(batch,
logs)``; ``logs`` is a dict (``{"loss": ..., "accuracy": ...,
"val_loss": ...}``); setting ``self.model.stop_training = True`` ends
training after the epoch; ``self.model.optimizer.learning_rate = lr``
sets the rate of the steps scheduled next (from the next epoch on, or this
one in on_epoch_begin), as Keras. An exception raised in a callback ends
``fit`` and is raised from it. Ctrl-C (SIGINT) stops ``fit`` at its next
step's result and raises KeyboardInterrupt from it.

Batches under ParameterServerStrategy: an epoch's steps are scheduled on
the workers at its start, in closures of ``steps_per_execution`` steps, and
their results come back to the chief as they finish. So
``on_train_batch_begin(batch)`` is called for the first step of each
closure as the epoch's steps are scheduled (after ``on_epoch_begin``), and
``on_train_batch_end(batch, logs)`` for its last step when its result is
back, with the epoch's running logs (the loss and metrics over its steps
finished so far), as Keras 3 calls them with ``steps_per_execution``.
"""

from __future__ import annotations

import ctypes
import json
import numbers
import os
import signal
import threading
import warnings
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from . import _lib
from ._lib import lib
from .errors import check

__all__ = ["Callback", "ModelCheckpoint", "BackupAndRestore", "TensorBoard",
           "EarlyStopping", "History", "ReduceLROnPlateau",
           "LearningRateScheduler", "CSVLogger", "TerminateOnNaN",
           "LambdaCallback"]


def _rate_of(optimizer: Any, who: str) -> float:
    """The optimizer's learning rate as a float; TypeError naming who and
    the schedule when it is a LearningRateSchedule (not settable, as in
    Keras)."""
    lr = optimizer.learning_rate
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
        raise TypeError(
            f"{who}: the optimizer's learning_rate is a schedule "
            f"({type(lr).__name__}), whose rate is not settable; Keras "
            f"refuses {who} with a LearningRateSchedule too: give the "
            f"optimizer a float learning_rate, or leave {who} out")
    return float(lr)


def _set_rate(optimizer: Any, lr: float) -> None:
    optimizer.learning_rate = lr
    config = getattr(optimizer, "config", None)
    if isinstance(config, dict):
        config["learning_rate"] = lr


def _rate_in(model: Any, ctx: Any) -> Optional[float]:
    """The loop's learning rate into model.optimizer before a hook runs;
    the rate, or None when there is none to follow."""
    opt = getattr(model, "optimizer", None)
    lr = ctx.contents.learning_rate
    if opt is None or not lr > 0 or not isinstance(
            opt.learning_rate, numbers.Real):
        return None
    _set_rate(opt, lr)
    return lr


def _rate_out(model: Any, ctx: Any, before: Optional[float]) -> None:
    """A rate the hook set on model.optimizer, to the loop's steps."""
    if before is None:
        return
    opt = model.optimizer
    now = opt.learning_rate
    if now == before:
        return
    if isinstance(now, bool) or not isinstance(now, numbers.Real):
        raise TypeError(f"model.optimizer.learning_rate: expected a "
                        f"float, got {now!r}")
    if lib.pasco_fit_set_learning_rate(ctx, float(now)) != 0:
        raise ValueError("model.optimizer.learning_rate: "
                         + lib.pasco_fit_error().decode())
    _set_rate(opt, float(now))


def _progress_style(verbose: Any) -> int:
    """fit's verbose as pasco_progress_style: -1 none, 0 auto (the bar on
    a terminal, else lines), 1 the bar, 2 lines."""
    if verbose == "auto":
        return 0
    if isinstance(verbose, bool) or verbose not in (0, 1, 2):
        raise ValueError(f"verbose: expected 'auto', 0, 1 or 2, got "
                         f"{verbose!r}")
    return -1 if verbose == 0 else verbose


def _sync_learning_rate(model: Any) -> None:
    """A rate set on model.optimizer since compile (Keras's
    ``model.optimizer.learning_rate = lr``) into the compile config the
    steps get (the model is built again with it)."""
    opt, cc = model.optimizer, model.compile_config
    lr = getattr(opt, "learning_rate", None)
    if opt is None or cc is None or isinstance(lr, bool) or \
            not isinstance(lr, numbers.Real):
        return
    if cc["optimizer"]["config"].get("learning_rate") != float(lr):
        _set_rate(opt, float(lr))
        cc["optimizer"] = opt.get_config()


def _keep_learning_rate(model: Any, lr: float, data: Any) -> None:
    """After fit: the rate the callbacks left, on model.optimizer and in
    the compile config, as Keras keeps it; the library's model has it
    already (fit set it there), so it is not built again for it."""
    opt, cc = model.optimizer, model.compile_config
    if opt is None or cc is None or \
            not isinstance(opt.learning_rate, numbers.Real) or \
            cc["optimizer"]["config"].get("learning_rate") == lr:
        return
    _set_rate(opt, lr)
    cc["optimizer"] = opt.get_config()
    if model._native:
        model._built_json = model.to_json(data)


class Callback:
    """A Python callback. ``self.model`` is the model being fit;
    ``self.params`` has fit's ``epochs``, ``steps`` (per epoch) and
    ``steps_per_execution``."""

    model: Any = None
    params: Dict[str, Any] = {}
    # put "learning_rate" in each epoch's logs (LearningRateScheduler)
    _logs_learning_rate = False

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: Dict[str, Any]) -> None:
        self.params = params

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

    def on_train_batch_begin(self, batch: int,
                             logs: Optional[Dict[str, float]] = None
                             ) -> None:
        pass

    def on_train_batch_end(self, batch: int,
                           logs: Optional[Dict[str, float]] = None) -> None:
        pass

    def _defines(self, name: str) -> bool:
        """Whether this callback has its own hook `name` (a subclass's
        method, or a LambdaCallback's function)."""
        return name in self.__dict__ or \
            getattr(type(self), name) is not getattr(Callback, name)

    def _batch_begins(self, epoch: int) -> None:
        """on_train_batch_begin for the first step of each closure."""
        steps = self.params.get("steps", 0)
        k = max(self.params.get("steps_per_execution", 1), 1)
        for b in range(0, steps, k):
            self.on_train_batch_begin(b, logs={})

    # The C callback (pasco_callback) calling the methods above; the
    # function objects are kept on the instance while fit runs.
    def _make(self, strategy: Any, errors: List[BaseException]
              ) -> _lib.Callback:
        def guard(ctx: Any, fn: Any) -> int:
            try:
                before = _rate_in(self.model, ctx)
                fn()
                _rate_out(self.model, ctx, before)
                stop(ctx)
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
            if self._logs_learning_rate:
                ctx.contents.log_learning_rate = True
            return guard(ctx, lambda: self.on_train_begin({}))

        def epoch_begin(user: Any, ctx: Any) -> int:
            def run() -> None:
                self.on_epoch_begin(ctx.contents.epoch, {})
                if self._defines("on_train_batch_begin"):
                    self._batch_begins(ctx.contents.epoch)
            return guard(ctx, run)

        def progress(user: Any, ctx: Any, loss: float) -> int:
            c = ctx.contents
            logs = c.batch_logs.contents.to_dict() if c.batch_logs \
                else {"loss": loss}
            return guard(ctx, lambda: self.on_train_batch_end(
                c.steps_done - 1, logs=logs))

        def epoch_end(user: Any, ctx: Any, logs: Any) -> int:
            return guard(ctx, lambda: self.on_epoch_end(
                ctx.contents.epoch, logs.contents.to_dict()))

        def end(user: Any, ctx: Any, logs: Any) -> int:
            return guard(ctx, lambda: self.on_train_end(
                logs.contents.to_dict() if logs else {}))

        self._c_funcs = (_lib.CB_CTX(begin), _lib.CB_CTX(epoch_begin),
                         _lib.CB_PROGRESS(progress), _lib.CB_LOGS(epoch_end),
                         _lib.CB_LOGS(end))
        cb = _lib.Callback()
        cb.name = type(self).__name__.encode()
        self._c_name = cb.name
        cb.begin, cb.epoch_begin = self._c_funcs[0], self._c_funcs[1]
        if self._defines("on_train_batch_end"):  # a call per closure
            cb.progress = self._c_funcs[2]
        cb.epoch_end, cb.end = self._c_funcs[3], self._c_funcs[4]
        return cb


class _RateFollower:
    """The last callback of fit's list: the learning rate the callbacks
    left (fit then keeps it on model.optimizer, as Keras's does)."""

    def __init__(self) -> None:
        self.rate: Optional[float] = None

    def make(self) -> _lib.Callback:
        def seen(ctx: Any) -> int:
            lr = ctx.contents.learning_rate
            self.rate = lr if lr > 0 else None
            return 0
        self._c_funcs = (_lib.CB_CTX(lambda user, ctx: seen(ctx)),
                         _lib.CB_LOGS(lambda user, ctx, logs: seen(ctx)))
        cb = _lib.Callback()
        cb.name = b"learning rate"
        cb.epoch_begin = self._c_funcs[0]
        cb.epoch_end = cb.end = self._c_funcs[1]
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
    variables; on numpy arrays, with the same arguments, the batches the
    uninterrupted run would have read from that epoch on, mid-pass too);
    deleted when training completes."""

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


class ReduceLROnPlateau(Callback):
    """Keras's ReduceLROnPlateau: when ``monitor`` has not improved (by
    more than ``min_delta``) for ``patience`` epochs, the learning rate
    becomes ``max(lr * factor, min_lr)``, for the next epoch's steps: the
    ps apply their updates at it; then ``cooldown`` epochs pass before
    epochs without improvement count again. mode "auto": max for
    accuracies, AUC, precision and recall, min otherwise. Each epoch's
    logs get "learning_rate" (the rate it ran at). Run by the library
    (coordinator/callbacks_keras.c). An optimizer whose learning_rate is a
    schedule is refused (TypeError), as Keras refuses it."""

    _MODES = {"auto": 0, "min": 1, "max": 2}

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1,
                 patience: int = 10, verbose: int = 0, mode: str = "auto",
                 min_delta: float = 1e-4, cooldown: int = 0,
                 min_lr: float = 0.0) -> None:
        if not isinstance(monitor, str) or not monitor:
            raise ValueError("monitor: expected a log name")
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau does not support a factor "
                             f">= 1.0. Received factor={factor}")
        if not factor > 0:
            raise ValueError(f"factor: expected a number in (0, 1), got "
                             f"{factor!r}")
        for arg, v in (("patience", patience), ("cooldown", cooldown)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{arg}: expected an integer >= 0, got "
                                 f"{v!r}")
        if not min_lr >= 0:
            raise ValueError(f"min_lr: expected a number >= 0, got "
                             f"{min_lr!r}")
        if mode not in self._MODES:
            warnings.warn(f"ReduceLROnPlateau mode '{mode}' is unknown, "
                          f"fallback to auto mode.", stacklevel=2)
            mode = "auto"
        self.monitor, self.factor, self.patience = monitor, factor, patience
        self.verbose, self.mode, self.min_delta = verbose, mode, \
            abs(min_delta)
        self.cooldown, self.min_lr = cooldown, min_lr

    def _make(self, strategy: Any, errors: List[BaseException]
              ) -> _lib.Callback:
        _rate_of(self.model.optimizer, "ReduceLROnPlateau")
        self._monitor = self.monitor.encode()
        o = _lib.ReduceLROptions(self._monitor, float(self.factor),
                                 self.patience, self._MODES[self.mode],
                                 float(self.min_delta), self.cooldown,
                                 float(self.min_lr), bool(self.verbose))
        cb = _lib.Callback()
        check(lib.pasco_callback_reduce_lr_on_plateau(ctypes.byref(cb),
                                                      ctypes.byref(o)),
              "ReduceLROnPlateau")
        return cb


class LearningRateScheduler(Callback):
    """Keras's LearningRateScheduler: at each epoch's begin the learning
    rate becomes ``schedule(epoch, lr)`` (or ``schedule(epoch)``, Keras's
    old form, when the first call raises TypeError), a float, for that
    epoch's steps; each epoch's logs get "learning_rate"."""

    _logs_learning_rate = True

    def __init__(self, schedule: Callable[..., float],
                 verbose: int = 0) -> None:
        if not callable(schedule):
            raise TypeError(f"schedule: expected a function (epoch, lr) -> "
                            f"lr, got {schedule!r}")
        self.schedule, self.verbose = schedule, verbose

    def on_train_begin(self, logs: Optional[Dict[str, float]] = None) -> None:
        _rate_of(self.model.optimizer, "LearningRateScheduler")

    def on_epoch_begin(self, epoch: int,
                       logs: Optional[Dict[str, float]] = None) -> None:
        opt = self.model.optimizer
        try:
            lr = self.schedule(epoch, _rate_of(opt, "LearningRateScheduler"))
        except TypeError:
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, np.float32, np.float64)):
            raise ValueError(f"The output of the `schedule` function should "
                             f"be a float. Got: {lr}")
        opt.learning_rate = float(lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting "
                  f"learning rate to {float(lr)}.", flush=True)


class CSVLogger(Callback):
    """Keras's CSVLogger: each epoch's logs as a row of ``filename``
    ("epoch", then the log names sorted; when the first epoch has no val_
    log, each name's val_ form too, "NA" where absent), numbers as
    Python's repr writes them; ``append`` adds to an existing file
    (writing the header only when it is empty). Run by the library."""

    def __init__(self, filename: Any, separator: str = ",",
                 append: bool = False) -> None:
        self.filename = os.fspath(filename)
        if not isinstance(self.filename, str) or not self.filename:
            raise ValueError("filename: expected a file name")
        if not isinstance(separator, str) or len(separator) != 1:
            raise ValueError(f"separator: expected one character, got "
                             f"{separator!r}")
        self.sep, self.append = separator, bool(append)

    def _make(self, strategy: Any, errors: List[BaseException]
              ) -> _lib.Callback:
        cb = _lib.Callback()
        check(lib.pasco_callback_csv_logger(
            ctypes.byref(cb), self.filename.encode(), self.sep.encode(),
            self.append), "CSVLogger")
        return cb


class TerminateOnNaN(Callback):
    """Keras's TerminateOnNaN: a NaN or infinite loss, seen as each
    closure's result comes back, prints "Batch N: Invalid loss,
    terminating training" and stops training after that epoch (its steps
    were scheduled at its start); with ``raise_error``, fit raises
    RuntimeError at once instead."""

    def __init__(self, raise_error: bool = False) -> None:
        self.raise_error = bool(raise_error)

    def on_train_batch_end(self, batch: int,
                           logs: Optional[Dict[str, float]] = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not np.isfinite(loss):
            raise RuntimeError(f"NaN or Inf loss encountered at batch "
                               f"{batch}. Loss value: {loss}. Terminating "
                               f"training immediately.")

    def _make(self, strategy: Any, errors: List[BaseException]
              ) -> _lib.Callback:
        if self.raise_error:
            return super()._make(strategy, errors)
        cb = _lib.Callback()
        check(lib.pasco_callback_terminate_on_nan(ctypes.byref(cb)),
              "TerminateOnNaN")
        return cb


class LambdaCallback(Callback):
    """Keras's LambdaCallback: each given function is that hook
    (``on_epoch_begin(epoch, logs)``, ``on_epoch_end(epoch, logs)``,
    ``on_train_begin(logs)``, ``on_train_end(logs)``,
    ``on_train_batch_begin(batch, logs)``, ``on_train_batch_end(batch,
    logs)``); other hooks by keyword, as Keras takes them."""

    def __init__(self, on_epoch_begin: Optional[Callable] = None,
                 on_epoch_end: Optional[Callable] = None,
                 on_train_begin: Optional[Callable] = None,
                 on_train_end: Optional[Callable] = None,
                 on_train_batch_begin: Optional[Callable] = None,
                 on_train_batch_end: Optional[Callable] = None,
                 **kwargs: Any) -> None:
        self.__dict__.update(kwargs)
        for name, fn in (("on_epoch_begin", on_epoch_begin),
                         ("on_epoch_end", on_epoch_end),
                         ("on_train_begin", on_train_begin),
                         ("on_train_end", on_train_end),
                         ("on_train_batch_begin", on_train_batch_begin),
                         ("on_train_batch_end", on_train_batch_end)):
            if fn is not None:
                if not callable(fn):
                    raise TypeError(f"{name}: expected a function, got "
                                    f"{fn!r}")
                setattr(self, name, fn)


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
