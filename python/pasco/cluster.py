"""The cluster, ``pasco.main`` and the strategy.

One script for every role, as in TensorFlow::

    def chief(cluster):
        strategy = pasco.ParameterServerStrategy(cluster)
        ...

    if __name__ == "__main__":
        raise SystemExit(pasco.main(chief))

``pasco.main`` hands the process to the library's ``pasco_main``: it reads
the cluster (``TF_CONFIG``, or the flags of ``pasco_cluster_from_args``)
and, on the chief (and the evaluator), calls ``chief(cluster)`` in Python;
on a ps or a worker it serves in C in this process until the chief is
done, running the library's own train, evaluate and predict steps and
building ``pasco.data`` datasets: no Python runs there after start-up.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import traceback
import weakref
from ctypes import c_char_p, c_void_p
from typing import Any, Callable, Iterator, List, Optional, Sequence

from . import _lib
from ._lib import lib
from .errors import check, error_for

__all__ = ["Cluster", "main", "ParameterServerStrategy", "get_strategy"]

_ROLES = {0: "none", 1: "chief", 2: "worker", 3: "ps", 4: "evaluator"}


class Cluster:
    """This process's view of the cluster (``pasco_cluster``): its task
    (``task_type``: "chief", "worker", "ps", "evaluator"; ``task_index``),
    the tasks (``num_ps``, ``num_workers``, ``worker_urls``, ...) and
    ``argv``, the program's own arguments (sys.argv without the cluster
    flags and pasco's options). Valid while the chief function runs."""

    def __init__(self, ptr: int, argv: Sequence[str] = (),
                 owned: bool = False) -> None:
        self._ptr = ptr
        self._owned = owned
        self.argv: List[str] = list(argv)

    @classmethod
    def from_tf_config(cls, tf_config: Optional[str] = None) -> "Cluster":
        """The cluster of a TF_CONFIG text (default: the environment's).
        Raises InvalidArgumentError naming what is malformed."""
        text = tf_config if tf_config is not None else os.environ.get(
            "TF_CONFIG")
        if not text:
            raise ValueError("tf_config: no TF_CONFIG given and none in the "
                             "environment")
        out = c_void_p()
        err = ctypes.create_string_buffer(512)
        check(lib.pasco_cluster_parse_json(ctypes.byref(out), text.encode(),
                                           err, len(err)),
              err.value.decode())
        return cls(out.value or 0, sys.argv, owned=True)

    def __del__(self) -> None:
        if getattr(self, "_owned", False) and self._ptr:
            lib.pasco_cluster_free(self._ptr)
            self._ptr = 0

    @property
    def task_type(self) -> str:
        return _ROLES.get(lib.pasco_cluster_task_role(self._ptr), "none")

    @property
    def task_index(self) -> int:
        return int(lib.pasco_cluster_task_index(self._ptr))

    def _count(self, role: int) -> int:
        return int(lib.pasco_cluster_count(self._ptr, role))

    @property
    def num_ps(self) -> int:
        return self._count(3)

    @property
    def num_workers(self) -> int:
        return self._count(2)

    def urls(self, task_type: str) -> List[str]:
        """The addresses of the tasks of task_type."""
        role = {v: k for k, v in _ROLES.items()}.get(task_type)
        if role is None or role == 0:
            raise ValueError(f"task_type: expected chief, worker, ps or "
                             f"evaluator, got {task_type!r}")
        return [lib.pasco_cluster_url(self._ptr, role, i).decode()
                for i in range(self._count(role))]

    def __repr__(self) -> str:
        return (f"<pasco.Cluster {self.task_type} {self.task_index}: "
                f"{self.num_ps} ps, {self.num_workers} workers>")


def main(chief_fn: Callable[[Optional[Cluster]], Optional[int]],
         argv: Optional[Sequence[str]] = None) -> int:
    """Runs this process's role; returns the exit status.

    On the chief and the evaluator, ``chief_fn(cluster)`` runs (its return
    value, None meaning 0, is the status; an exception is printed and
    gives 1; ``cluster`` is None when the program was started without a
    cluster and with --help). On a ps or worker, the C server runs until
    the chief is done (status 0), times out (138) or a signal ends it.
    ``argv`` defaults to sys.argv. Use: ``raise SystemExit(pasco.main(f))``.
    """
    if not callable(chief_fn):
        raise TypeError(f"chief_fn: expected a function of the cluster, got "
                        f"{type(chief_fn).__name__}")
    args = [str(a) for a in (sys.argv if argv is None else argv)] or ["python"]
    raw = [a.encode() for a in args]
    arr = (c_char_p * (len(raw) + 1))(*raw, None)

    def run(cluster_ptr: Optional[int], argc: int, argvp: Any) -> int:
        try:
            rest = [argvp[i].decode() for i in range(argc)]
            cluster = Cluster(cluster_ptr, rest) if cluster_ptr else None
            rv = chief_fn(cluster)
            return int(rv) if rv is not None else 0
        except SystemExit as e:
            code = e.code
            return code if isinstance(code, int) else (0 if code is None
                                                       else 1)
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            return 1
        finally:
            _close_all()  # strategies end before the cluster is freed

    cb = _lib.CHIEF_FN(run)  # referenced until pasco_main returns
    sys.stdout.flush()
    return int(lib.pasco_main(len(raw), arr, cb))


_strategies: List["ParameterServerStrategy"] = []
_scopes: List["ParameterServerStrategy"] = []


def _close_all() -> None:
    for s in list(_strategies):
        s.close()


def get_strategy() -> "ParameterServerStrategy":
    """The strategy of the innermost ``strategy.scope()``, else the one
    created last. RuntimeError when there is none."""
    if _scopes:
        return _scopes[-1]
    live = [s for s in _strategies if s._strategy]
    if not live:
        raise RuntimeError("no ParameterServerStrategy: create one (in the "
                           "chief function) before using a model")
    return live[-1]


class ParameterServerStrategy:
    """Keras's ``tf.distribute.ParameterServerStrategy`` and its
    ``ClusterCoordinator``: connects to every ps and worker of ``cluster``
    (a :class:`Cluster`; None reads TF_CONFIG) and schedules the library's
    steps there. Models made inside ``with strategy.scope():`` keep their
    variables on its ps tasks. ``close()`` (or the end of the chief
    function) disconnects.

    connect_timeout: seconds to wait for every task (default: the
    library's, 60 s or PASCO_CONNECT_TIMEOUT). window: steps in flight per
    worker (default 4; TensorFlow's is 1, which a fast optimizer on a small
    model may need to stay fresh); max_batch: closures sent to a worker in
    one message when the windows are full (default 32; 1: off). These are
    pasco_strategy_options and pasco_coordinator_options
    (include/pasco/coordinator.h).
    """

    def __init__(self, cluster: Optional[Cluster] = None,
                 connect_timeout: Optional[float] = None,
                 window: Optional[int] = None,
                 max_batch: Optional[int] = None) -> None:
        if cluster is None:
            cluster = Cluster.from_tf_config()
        if not isinstance(cluster, Cluster):
            raise TypeError(f"cluster: expected a pasco.Cluster, got "
                            f"{type(cluster).__name__}")
        self._strategy = c_void_p()
        self._coord = c_void_p()
        self._models: List[Any] = []
        # per-worker iterators and variable handles, freed by close()
        self._resources: "weakref.WeakSet[Any]" = weakref.WeakSet()
        opts = _lib.StrategyOptions()
        if connect_timeout is not None:
            if not isinstance(connect_timeout, (int, float)) or \
                    isinstance(connect_timeout, bool) or connect_timeout <= 0:
                raise ValueError(f"connect_timeout: expected seconds > 0, "
                                 f"got {connect_timeout!r}")
            opts.connect_timeout_ms = max(1, int(connect_timeout * 1000))
        copts = _lib.CoordinatorOptions()
        for arg, v in (("window", window), ("max_batch", max_batch)):
            if v is None:
                continue
            if not isinstance(v, int) or isinstance(v, bool) or \
                    not 1 <= v <= 1 << 16:
                raise ValueError(f"{arg}: expected an integer from 1 to "
                                 f"65536, got {v!r}")
            setattr(copts, arg, v)
        rv = lib.pasco_strategy_create(ctypes.byref(self._strategy),
                                       cluster._ptr, ctypes.byref(opts))
        if rv != 0:
            raise error_for(rv, lib.pasco_strategy_error(None).decode())
        rv = lib.pasco_coordinator_create(ctypes.byref(self._coord),
                                          self._strategy, ctypes.byref(copts))
        if rv != 0:
            lib.pasco_strategy_destroy(self._strategy)
            self._strategy = c_void_p()
            raise error_for(rv, "creating the coordinator")
        self.num_ps = int(lib.pasco_strategy_num_ps(self._strategy))
        self.num_workers = int(lib.pasco_strategy_num_workers(self._strategy))
        _strategies.append(self)

    def distribute_datasets_from_function(self, dataset_fn: Any,
                                          options: Any = None) -> Any:
        """TensorFlow's: dataset_fn(pasco.distribute.InputContext) must
        return a pasco.data dataset, returned as it is (give it, or a
        function returning this, to create_per_worker_dataset). One
        context: the dataset is described once here and built by every
        worker, each reading the whole data set unless the dataset shards
        it (docs/datasets.md). options: accepted, unused."""
        from ._dataset_context import InputContext
        from .data import Dataset
        if not callable(dataset_fn):
            raise TypeError(f"dataset_fn: expected a function of an "
                            f"InputContext, got {type(dataset_fn).__name__}")
        ds = dataset_fn(InputContext())
        if not isinstance(ds, Dataset):
            raise TypeError(f"dataset_fn: "
                            f"{getattr(dataset_fn, '__name__', 'it')} "
                            f"returned {type(ds).__name__}: expected a "
                            f"pasco.data dataset")
        return ds

    def experimental_distribute_dataset(self, dataset: Any,
                                        options: Any = None) -> Any:
        """TensorFlow's: the pasco.data dataset itself, built by every
        worker from its description (one replica per worker: nothing to
        split per replica). Give it, or a function returning it, to
        create_per_worker_dataset; iter() of it on the chief raises
        ValueError, as TensorFlow's. options: accepted, unused."""
        from .data import Dataset
        if not isinstance(dataset, Dataset):
            raise TypeError(f"experimental_distribute_dataset: expected a "
                            f"pasco.data dataset, got "
                            f"{type(dataset).__name__}")
        return dataset

    def experimental_local_results(self, value: Any) -> tuple:
        """TensorFlow's: the replicas' values of value as a tuple, here
        (value,): one replica per worker."""
        return (value,)

    @contextlib.contextmanager
    def scope(self) -> Iterator["ParameterServerStrategy"]:
        """Models made inside use this strategy."""
        _scopes.append(self)
        try:
            yield self
        finally:
            _scopes.pop()

    # tf.distribute's replica API on one replica per worker
    # (python/pasco/distribute.py)
    num_replicas_in_sync = 1

    def run(self, fn: Callable[..., Any], args: Sequence[Any] = (),
            kwargs: Optional[dict] = None, options: Any = None) -> Any:
        """TensorFlow's strategy.run: fn(*args, **kwargs) on the one
        replica of the worker running the step (pasco.distribute.run)."""
        from .distribute import run
        return run(fn, args, kwargs, options)

    def reduce(self, reduce_op: Any, value: Any,
               axis: Optional[int] = None) -> Any:
        """TensorFlow's strategy.reduce over one replica: value (axis
        None), or its sum or mean along axis (pasco.distribute.reduce)."""
        from .distribute import reduce
        return reduce(reduce_op, value, axis)

    def join(self) -> None:
        """Waits for every scheduled step (the coordinator's join)."""
        self._check_open()
        rv = lib.pasco_join(self._coord)
        if rv != 0:
            raise error_for(rv, lib.pasco_coordinator_error(
                self._coord).decode())

    def global_step(self) -> int:
        """The global step (Keras's ``optimizer.iterations``): the train
        steps applied on the ps so far, read from its variable
        "global_step" (created at 0 when there is none yet)."""
        self._check_open()
        h = c_void_p()
        rv = lib.pasco_strategy_global_step(self._strategy, ctypes.byref(h))
        if rv != 0:
            raise error_for(rv, self._error())
        t = ctypes.POINTER(_lib.Tensor)()
        try:
            rv = lib.pasco_variable_read(h, ctypes.byref(t))
            if rv != 0:
                raise error_for(rv, "reading the global step: "
                                + lib.pasco_variable_error(h).decode())
            try:
                return int(ctypes.cast(t.contents.data,
                                       ctypes.POINTER(ctypes.c_int64))[0])
            finally:
                lib.pasco_tensor_release(t)
        finally:
            lib.pasco_variable_free(h)

    def global_step_variable(self) -> Any:
        """The global step as a :class:`pasco.Variable` (an int64 scalar,
        created at 0 when there is none yet): the argument of
        "pasco.model_train" after the iterator (ClusterCoordinator)."""
        self._check_open()
        from .models import Variable

        h = c_void_p()
        rv = lib.pasco_strategy_global_step(self._strategy, ctypes.byref(h))
        if rv != 0:
            raise error_for(rv, self._error())
        v = Variable._of_handle(self, h, "global_step", (), "int64")
        self._resources.add(v)
        return v

    def save_checkpoint(self, directory: str, step: int, keep: int = 5) -> None:
        """Saves every variable into directory/ckpt-<step> (on the ps
        tasks: the directory must be theirs to write), keeping the newest
        keep (0: all)."""
        self._check_open()
        if not isinstance(directory, str) or not directory:
            raise ValueError("directory: expected a path")
        if not isinstance(step, int) or step < 0:
            raise ValueError(f"step: expected an integer >= 0, got {step!r}")
        rv = lib.pasco_checkpoint_save(self._strategy, directory.encode(),
                                       step, keep)
        if rv != 0:
            raise error_for(rv, self._error())

    def restore_checkpoint(self, path: str, latest: bool = False) -> int:
        """Restores the checkpoint at path (latest=True: the newest intact
        one of the directory path) into the variables; returns its step."""
        self._check_open()
        if not isinstance(path, str) or not path:
            raise ValueError("path: expected a checkpoint path")
        step = ctypes.c_int64()
        f = (lib.pasco_checkpoint_restore_latest if latest
             else lib.pasco_checkpoint_restore)
        rv = f(self._strategy, path.encode(), ctypes.byref(step))
        if rv != 0:
            raise error_for(rv, self._error())
        return int(step.value)

    def _error(self) -> str:
        return lib.pasco_strategy_error(self._strategy).decode()

    def _check_open(self) -> None:
        if not self._strategy:
            raise RuntimeError("the strategy is closed")

    def close(self) -> None:
        """Frees the models' handles, the coordinator and the connections.
        Models of this strategy cannot be used afterwards."""
        for m in self._models:
            m._release()
        self._models.clear()
        for r in list(self._resources):
            r._release()
        self._resources.clear()
        if self._coord:
            lib.pasco_coordinator_destroy(self._coord)
            self._coord = c_void_p()
        if self._strategy:
            lib.pasco_strategy_destroy(self._strategy)
            self._strategy = c_void_p()
        if self in _strategies:
            _strategies.remove(self)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return (f"<pasco.ParameterServerStrategy {self.num_ps} ps, "
                f"{self.num_workers} workers>")

