"""Dataset.from_tensor_slices: arrays held on the chief, written as a
TFRecord file that every worker reads (pasco.data.Dataset's docstring).

The chief writes each example once, in a temporary directory
(``tempfile.mkdtemp``: TMPDIR, or /tmp) that every worker must see at the
same path: one host, or TMPDIR on storage every host shares, as numpy fit
(_numpy_data.py). The directory goes when the last dataset over it is
freed, or when a strategy that built one of them closes.

The element's structure is kept: a dict of features stays a dict, a
tuple (features, labels) a tuple, one array a tensor. Its leaves become
the file's features, named by their place ("features", "0/a", "1", "x").
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from typing import Any, Dict, List, Tuple

import numpy as np

__all__ = ["Files", "Leaf", "slices"]


class Files:
    """The temporary directory of a from_tensor_slices dataset (its data
    file and any map file): removed by close(), when no dataset holds it,
    or when a strategy that built a per-worker dataset of it closes (it
    is one of the strategy's resources)."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="pasco-slices-")
        self._fin = weakref.finalize(self, shutil.rmtree, self.dir, True)

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def close(self) -> None:
        self._fin()

    def _release(self) -> None:  # ParameterServerStrategy.close
        self.close()


class Leaf:
    """One array of the element: its feature name, width, kind ("string",
    "int64" or "float") and whether it was [examples] (rank 1 once
    batched, [batch]) rather than [examples, width]."""

    def __init__(self, name: str, width: int, kind: str,
                 rank1: bool) -> None:
        self.name, self.width, self.kind, self.rank1 = \
            name, width, kind, rank1

    @property
    def dtype(self) -> str:  # as the workers give it: strings as ids
        return "float32" if self.kind == "float" else "int64"

    @property
    def shape(self) -> Tuple[Any, ...]:
        return (None,) if self.rank1 else (None, self.width)


def _leaf(name: str, value: Any) -> Tuple[Leaf, np.ndarray]:
    what = f"Dataset.from_tensor_slices: {name}"
    if isinstance(value, (dict, tuple)):
        raise TypeError(f"{what}: a nested {type(value).__name__}: the "
                        f"element is a dict of arrays, a tuple of them "
                        f"(features, labels), or one array")
    try:
        a = np.asarray(value)
    except ValueError as e:  # ragged lists
        raise ValueError(f"{what}: the rows have different lengths "
                         f"({e}); each example's value must have one "
                         f"width") from None
    if a.ndim not in (1, 2):
        raise ValueError(f"{what}: expected [examples] or [examples, "
                         f"width] (the first axis is the examples), got "
                         f"shape {a.shape}")
    if a.shape[0] == 0 or (a.ndim == 2 and a.shape[1] == 0):
        raise ValueError(f"{what}: shape {a.shape} holds no value")
    if a.dtype.kind in "USO":
        if a.dtype.kind == "O" and not all(
                isinstance(v, (str, bytes)) for v in a.ravel().tolist()):
            raise TypeError(f"{what}: an object array that is not all "
                            f"strings")
        kind, a = "string", a.astype(str)
    elif a.dtype.kind in "iub":
        kind, a = "int64", a.astype(np.int64)
    elif a.dtype.kind == "f":
        kind, a = "float", a.astype(np.float32)
    else:
        raise TypeError(f"{what}: dtype {a.dtype}: expected strings, "
                        f"integers or floats")
    width = 1 if a.ndim == 1 else int(a.shape[1])
    return Leaf(name, width, kind, a.ndim == 1), a


def slices(x: Any) -> Tuple[Any, List[Leaf], Dict[str, np.ndarray]]:
    """x's structure (leaves as their index in the leaf list), its
    leaves, and the columns to write (name -> array)."""
    leaves: List[Leaf] = []
    cols: Dict[str, np.ndarray] = {}

    def add(name: str, value: Any) -> int:
        if not name or name in cols:
            raise ValueError(f"Dataset.from_tensor_slices: the feature "
                             f"name {name!r} is empty or taken twice")
        leaf, a = _leaf(name, value)
        leaves.append(leaf)
        cols[name] = a
        return len(leaves) - 1

    def keyed(prefix: str, d: dict) -> dict:
        if not d:
            raise ValueError("Dataset.from_tensor_slices: an empty dict")
        out = {}
        for k, v in d.items():
            if not isinstance(k, str):
                raise TypeError(f"Dataset.from_tensor_slices: the key "
                                f"{k!r} is not a str")
            out[k] = add(prefix + k, v)
        return out

    if isinstance(x, dict):
        struct: Any = keyed("", x)
    elif isinstance(x, tuple):
        if not 1 <= len(x) <= 3:
            raise ValueError(f"Dataset.from_tensor_slices: a tuple of "
                             f"{len(x)}: expected (features, labels) or "
                             f"(features, labels, sample_weights)")
        struct = tuple(keyed(f"{i}/", v) if isinstance(v, dict)
                       else add(str(i), v) for i, v in enumerate(x))
    else:
        struct = add("x", x)
    sizes = {a.shape[0] for a in cols.values()}
    if len(sizes) != 1:
        raise ValueError(f"Dataset.from_tensor_slices: the arrays have "
                         f"different numbers of examples "
                         f"({', '.join(f'{n}: {a.shape[0]}' for n, a in cols.items())})")
    return struct, leaves, cols
