"""Pasco from Python: the chief's program in Python, the cluster in C.

Pasco is a C library for asynchronous parameter-server training in the
style of TensorFlow's ParameterServerStrategy. This package drives it from
Python with Keras's API::

    import pasco

    def chief(cluster):
        strategy = pasco.ParameterServerStrategy(cluster)
        train = pasco.data.csv("/data/train.csv", label="label",
                               batch_size=32, shuffle=1000)
        with strategy.scope():
            model = pasco.Sequential([
                pasco.layers.Dense(64, activation="relu"),
                pasco.layers.Dense(10, activation="softmax")])
        model.compile(optimizer=pasco.optimizers.Adam(1e-3),
                      loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"])
        model.fit(train, epochs=5, steps_per_epoch=100)

    if __name__ == "__main__":
        raise SystemExit(pasco.main(chief))

Run it on a local cluster with ``pasco launch --ps 2 --workers 2 --
python3 train.py`` (or under TF_CONFIG, Slurm, a TFJob: the same script
on every task). The chief runs ``chief`` in Python; every ps and worker
serves in C inside its Python process: models are data (JSON) and the
library's own train, evaluate and predict steps run them, and the data
are declared from files (:mod:`pasco.data`), so no Python runs there.

Why ctypes: the package is pure Python over the installed shared library
(libpasco.so, the one C programs link), so it needs no compiler, no
python3-dev and no build step of its own, and C and Python users share
one library and one version. Where the library is found: see
:mod:`pasco._lib` (PASCO_LIBRARY, a checkout's build/, the install
directory, the system's loader).

Threads: importing the package sizes this process's pools as a C
program's ``pasco_main`` does (``pasco_threads_configure``), whether or not
it goes through ``pasco.main``: nng's from PASCO_NNG_THREADS (default 2:
4 task and 2 expire threads, not a pool per core), and OpenBLAS, numpy's
too when they share it, to one thread and no pool unless
OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS is set. A
malformed count makes the import fail, naming it.

The layers are also at the top: ``pasco.Dense`` is ``pasco.layers.Dense``
(``help(pasco.Dense)``).

Errors are :class:`pasco.PascoError` subclasses (``InvalidArgumentError``
for PASCO_EINVAL, ...) carrying the library's message; bad arguments are
ValueError or TypeError naming the argument, raised before any C call.
"""

from . import callbacks, data, distribute, errors, layers, optimizers
from . import losses, ops, regularizers  # custom layers and losses (issue 32)
from ._lib import library_path
from .cluster import Cluster, ParameterServerStrategy, get_strategy, main
from .coordinator import (ClusterCoordinator, PerWorkerDataset,
                          PerWorkerIterator, RemoteValue)
from .errors import (AlreadyExistsError, CancelledError,
                     DeadlineExceededError, FailedPreconditionError,
                     InvalidArgumentError, NotFoundError, OutOfRangeError,
                     PascoError, UnavailableError)
# every layer class of pasco.layers.__all__ (and Input) at the top too
from .layers import *  # noqa: F401,F403
from .models import Model, Sequential, Variable
# traced steps and metric objects (function.py, metrics.py)
from . import metrics
from .function import Function, GradientTape, function

__version__ = "0.1.0"

__all__ = ["main", "Cluster", "ParameterServerStrategy", "get_strategy",
           "ClusterCoordinator", "RemoteValue", "PerWorkerDataset",
           "PerWorkerIterator",
           "Sequential", "Model", "Variable", "layers", "data",
           "optimizers", "callbacks", "errors", "PascoError",
           "ops", "losses", "regularizers",
           "InvalidArgumentError", "NotFoundError", "AlreadyExistsError",
           "UnavailableError", "CancelledError", "DeadlineExceededError",
           "OutOfRangeError", "FailedPreconditionError", "library_path",
           "function", "Function", "GradientTape", "metrics"] + [
               n for n in layers.__all__ if n not in ("Layer", "KerasTensor")]
