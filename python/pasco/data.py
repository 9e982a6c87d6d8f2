"""Datasets declared from files, built on every worker by the library.

A worker runs no Python: the chief sends a dataset's description (a JSON
spec in its name, ``"pasco.files:{...}"``, include/pasco/dataset.h) and
each worker builds its share in C. ::

    train = pasco.data.csv("/data/train-*.csv", label="label",
                           batch_size=32, shuffle=1000)
    ev = pasco.data.tfrecord("/data/eval.tfrecord",
                             features={"words": pasco.data.Feature("hashed", 3),
                                       "price": "float"},
                             label="clicked", batch_size=256)

Or as tf.data builds one, from arrays held on the chief, with a map traced
once and run on the workers (docs/datasets.md)::

    ds = pasco.data.Dataset.from_tensor_slices(
        {"words": [["a", "b", "c"], ...], "label": [["yes"], ...]})
    ds = ds.map(lambda x: (lookup(x["words"]), label_lookup(x["label"])))
    ds = ds.shuffle(200).batch(32).repeat()

Paths are made absolute on the chief; every worker must see the files at
the same path (shared storage, or one host). ``repeat=None`` (the default)
repeats forever in ``fit`` and reads once in ``evaluate`` and ``predict``.
Sharding: each worker reads whole files (``shard="files"``) or every
num_workers-th record of every file (``"records"``); ``"auto"`` chooses
files when there are at least as many as workers.
"""

from __future__ import annotations

import csv as _csv
import glob
import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

__all__ = ["AUTOTUNE", "Dataset", "Feature", "csv", "tfrecord",
           "write_tfrecord"]

_SPEC_MAX = 4000
AUTOTUNE = -1  # tf.data.AUTOTUNE: prefetch(AUTOTUNE) reads 2 ahead
_SHARDS = ("auto", "files", "records", "none")


class Feature:
    """A tf.train.Example feature (or a csv column, width 1) read as a
    model input: ``type`` "float" (features, f32 [batch, width]), "int64"
    (ids for an Embedding, padded with -1 to width), "string" (strings as
    their 64-bit fingerprints, for an Input of dtype "string": a
    StringLookup's, a Hashing's) or "hashed" (strings hashed into 64-bit
    keys, for a dynamic Embedding; ``num_buckets`` > 0 folds them into
    buckets); ``default`` for a missing float feature."""

    def __init__(self, type: str = "float", width: int = 1,
                 default: Optional[float] = None,
                 num_buckets: int = 0) -> None:
        if type not in ("float", "int64", "hashed", "string"):
            raise ValueError(f"type: expected 'float', 'int64', 'hashed' or "
                             f"'string', got {type!r}")
        if type == "string" and num_buckets:
            raise ValueError("num_buckets: a 'string' feature is its "
                             "fingerprint; num_buckets is for 'hashed'")
        _positive_int("width", width)
        if not isinstance(num_buckets, int) or num_buckets < 0:
            raise ValueError(f"num_buckets: expected an integer >= 0, got "
                             f"{num_buckets!r}")
        if default is not None and not isinstance(default, (int, float)):
            raise TypeError(f"default: expected a number, got "
                            f"{default.__class__.__name__}")
        self.type, self.width = type, width
        self.default, self.num_buckets = default, num_buckets

    def spec(self) -> dict:
        out: dict = {"type": self.type, "width": self.width}
        if self.default is not None:
            out["default"] = float(self.default)
        if self.num_buckets:
            out["num_buckets"] = self.num_buckets
        return out

    def __repr__(self) -> str:
        return f"Feature({self.type!r}, {self.width})"


class Dataset:
    """A dataset described by its spec (``.spec``, a dict), which names
    it to the workers. Built by :func:`csv` and :func:`tfrecord`, or as
    tf.data builds one: ``Dataset.from_tensor_slices(x)`` then ``.map``,
    ``.shuffle``, ``.batch``, ``.repeat``, ``.prefetch`` and ``.take``,
    each returning a new Dataset (docs/datasets.md)::

        ds = pasco.data.Dataset.from_tensor_slices(
            {"features": [["a", "b", "c"], ...], "label": [["yes"], ...]})
        ds = ds.map(lambda x: ({"features": stage(x["features"])},
                               label_stage(x["label"])))
        ds = ds.shuffle(200).batch(32).repeat()

    No Python runs on the workers: ``map``'s function is traced once, on
    the chief, into an op graph the workers run in C on each batch they
    read (see :meth:`map`)."""

    def __init__(self, spec: dict, _src: Any = None,
                 _trace: Any = None, _state: Optional[dict] = None) -> None:
        self.spec = dict(spec)
        self._src = _src      # from_tensor_slices: its files (Files)
        self._trace = _trace  # the element after the read (_dataset_map)
        self._state = dict(_state or {})  # the chain so far
        name = self.name(-1)
        if len(name) > _SPEC_MAX:
            raise ValueError(f"files: the dataset's description is "
                             f"{len(name)} bytes, over {_SPEC_MAX}: name "
                             f"fewer files (use a pattern)")

    def name(self, default_repeat: int = 1) -> str:
        """The dataset name the workers build it from; repeat None in
        the spec becomes default_repeat."""
        spec = dict(self.spec)
        if spec.get("repeat") is None:
            spec["repeat"] = default_repeat
        if self._trace is not None and not self._trace.identity():
            spec["map"] = self._trace.spec()
            name = "pasco.files:" + json.dumps(spec, separators=(",", ":"))
            if len(name) <= _SPEC_MAX:
                return name
            spec["map_file"] = self._map_file(spec.pop("map"))
        return "pasco.files:" + json.dumps(spec, separators=(",", ":"))

    def _map_file(self, m: dict) -> str:
        """m written beside the data (a map too large for the name)."""
        from ._dataset_slices import Files
        if self._src is None:
            self._src = Files()
        text = json.dumps(m, separators=(",", ":"))
        import hashlib
        path = self._src.path("map-" + hashlib.sha256(
            text.encode()).hexdigest()[:16] + ".json")
        if not os.path.exists(path):
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
        return path

    # ---- tf.data's methods ----------------------------------------------

    @staticmethod
    def from_tensor_slices(x: Any) -> "Dataset":
        """tf.data.Dataset.from_tensor_slices: x a dict of arrays (lists
        or numpy arrays of strings, integers or floats; the first axis is
        the examples: [["a", "b", "c"], ...] is a string feature of width
        3, [["yes"], ...] of width 1, [1, 2, ...] a [batch] value), a
        tuple (features, labels) of such dicts or arrays, or one array.
        The chief writes the examples once as a TFRecord file in a
        temporary directory (tempfile: TMPDIR, or /tmp) that every worker
        reads at the same path: one host, or TMPDIR on storage every host
        shares. It is removed when the datasets over it are freed or a
        strategy that built one of them closes. Every worker reads every
        example (TensorFlow's, without a shard). Batch it (``.batch``)
        before giving it to a coordinator."""
        from ._dataset_map import Trace
        from ._dataset_slices import Files, slices
        struct, leaves, cols = slices(x)
        files = Files()
        path = files.path("data.tfrecord")
        write_tfrecord(path, cols)
        feats = {l.name: {"type": l.kind, "width": l.width} for l in leaves}
        spec = {"format": "tfrecord", "files": [path], "features": feats,
                "label": None, "label_type": "int64", "gzip": False,
                "batch_size": 1, "shuffle": 0, "seed": 0, "repeat": 1,
                "shard": "none", "drop_remainder": False, "prefetch": 0}

        def element(node: Any) -> Any:
            def walk(s: Any) -> Any:
                if isinstance(s, tuple):
                    return tuple(walk(v) for v in s)
                if isinstance(s, dict):
                    return {k: walk(v) for k, v in s.items()}
                return node([leaves[s].name], leaves[s].shape,
                            leaves[s].dtype)
            return walk(struct)
        trace = Trace.of_element(
            element, lambda p: feats[p[0]]["type"] == "string")
        return Dataset(spec, files, trace, {"sliced": True})

    @staticmethod
    def range(*args: int) -> "Dataset":
        """tf.data.Dataset.range(stop) or range(start, stop[, step]):
        those int64 values as one array's from_tensor_slices (a [batch]
        int64 tensor once batched)."""
        import numpy as np
        if not 1 <= len(args) <= 3 or any(
                not isinstance(a, int) or isinstance(a, bool) for a in args):
            raise TypeError(f"Dataset.range: expected stop, or start, stop"
                            f" and an optional step, as integers, got "
                            f"{args!r}")
        if len(args) == 3 and args[2] == 0:
            raise ValueError("Dataset.range: step must not be 0")
        values = np.arange(*args, dtype=np.int64)
        if values.size == 0:
            raise ValueError(f"Dataset.range{args}: no value (an empty "
                             f"dataset has nothing for the workers to read)")
        return Dataset.from_tensor_slices(values)

    def _chain(self, method: str) -> None:
        if not self._state.get("sliced"):
            raise ValueError(
                f"Dataset.{method}: a pasco.data.csv or tfrecord dataset "
                f"is batched, shuffled and repeated by its arguments "
                f"(batch_size=, shuffle=, repeat=); {method} chains on "
                f"Dataset.from_tensor_slices")

    def _with(self, spec: dict, **state: Any) -> "Dataset":
        return Dataset(spec, self._src, self._trace,
                       {**self._state, **state})

    def map(self, map_func: Any, num_parallel_calls: Any = None,
            deterministic: Any = None) -> "Dataset":
        """tf.data's map: map_func is traced ONCE, here, over symbolic
        tensors of the element (a tuple element is passed as arguments,
        as TensorFlow does) and runs on the workers, in C, on each batch
        they read: no Python runs there. It may use pasco.ops, and call
        pasco.Model objects made of preprocessing layers (StringLookup,
        IntegerLookup, Hashing, Discretization, CategoryEncoding,
        HashedCrossing) on the element's tensors; it returns a tensor, or
        a tuple or dict of them (nested). Strings are read as their
        fingerprints, so a string feature becomes ids only through a
        StringLookup or Hashing model.

        The tensors it sees have the batch axis first ([None, width]) in
        any position of the chain (before or after batch): the function
        must be per-example. An op that reduces or mixes over that axis
        (a reduce over axis 0 or all axes, a loss, concat along axis 0, a
        reshape that merges it, a product of two batched matrices) is
        refused now, naming the op. num_parallel_calls and deterministic
        are accepted and ignored (a worker maps its batches in order)."""
        from ._dataset_map import trace_map
        if self._trace is None:
            from ._dataset_map import Trace
            from .function import _element
            if self.spec.get("sample_weight") or \
                    self.spec.get("class_weight"):
                raise ValueError("Dataset.map: a dataset with sample_weight"
                                 " or class_weight cannot be mapped")
            feats = self.spec.get("features") or {}
            trace = Trace.of_element(
                lambda node: _element(self, node),
                lambda p: isinstance(p[-1], str) and
                feats.get(p[-1], {}).get("type") == "string")
        else:
            trace = self._trace
        if not callable(map_func):
            raise TypeError(f"Dataset.map: expected a function, got "
                            f"{type(map_func).__name__}")
        what = f"Dataset.map({getattr(map_func, '__name__', 'fn')})"
        out = trace_map(trace, map_func, what)
        return Dataset(self.spec, self._src, out, self._state)

    def shuffle(self, buffer_size: int, seed: Optional[int] = None,
                reshuffle_each_iteration: Any = None) -> "Dataset":
        """tf.data's shuffle of examples, on each worker, from a buffer
        of buffer_size; before batch and repeat only (after batch it
        would shuffle whole batches, after repeat mix epochs: refused).
        seed None: drawn by each worker."""
        self._chain("shuffle")
        if self._state.get("batched"):
            raise ValueError("Dataset.shuffle: after batch it would "
                             "shuffle whole batches; the workers shuffle "
                             "examples: call shuffle before batch")
        if self._state.get("repeated"):
            raise ValueError("Dataset.shuffle: after repeat it would mix "
                             "the epochs; call shuffle before repeat")
        if self._state.get("shuffled"):
            raise ValueError("Dataset.shuffle: the dataset is already "
                             "shuffled")
        _positive_int("Dataset.shuffle: buffer_size", buffer_size)
        if seed is not None and (not isinstance(seed, int) or seed < 0):
            raise ValueError(f"Dataset.shuffle: seed: expected None or an "
                             f"integer >= 0, got {seed!r}")
        return self._with({**self.spec, "shuffle": buffer_size,
                           "seed": seed or 0}, shuffled=True)

    def batch(self, batch_size: int, drop_remainder: bool = False,
              num_parallel_calls: Any = None,
              deterministic: Any = None) -> "Dataset":
        """tf.data's batch: batch_size consecutive examples stacked, the
        last short batch of an epoch kept unless drop_remainder. Once."""
        self._chain("batch")
        if self._state.get("batched"):
            raise ValueError("Dataset.batch: the dataset is already "
                             "batched (the workers batch once)")
        _positive_int("Dataset.batch: batch_size", batch_size)
        return self._with({**self.spec, "batch_size": batch_size,
                           "drop_remainder": bool(drop_remainder)},
                          batched=True)

    def repeat(self, count: Optional[int] = None) -> "Dataset":
        """tf.data's repeat: count times, None or -1 forever. Before
        batch, batches run across the epochs' ends; after batch, each
        epoch ends with its own short batch, as TensorFlow's. On a
        pasco.data.csv or tfrecord dataset: a copy repeated count times
        (before its batching)."""
        if count is None:
            count = -1
        if not isinstance(count, int) or isinstance(count, bool) or \
                count < -1 or count == 0:
            raise ValueError(f"count: expected None, -1 or a positive "
                             f"integer, got {count!r}")
        if not self._state.get("sliced"):
            return Dataset({**self.spec, "repeat": count}, self._src,
                           self._trace, self._state)
        if self._state.get("repeated"):
            raise ValueError("Dataset.repeat: the dataset is already "
                             "repeated")
        spec = {**self.spec, "repeat": count}
        if self._state.get("batched"):
            spec["repeat_batches"] = True
        return self._with(spec, repeated=True)

    def prefetch(self, buffer_size: int) -> "Dataset":
        """tf.data's prefetch: each worker reads buffer_size batches
        ahead on a thread of its own (AUTOTUNE, -1: 2), wherever it is
        called in the chain."""
        if buffer_size == AUTOTUNE:
            buffer_size = 2
        if not isinstance(buffer_size, int) or buffer_size < 0:
            raise ValueError(f"Dataset.prefetch: buffer_size: expected an "
                             f"integer >= 0 or AUTOTUNE, got "
                             f"{buffer_size!r}")
        return self._with({**self.spec, "prefetch": buffer_size})

    def take(self, count: int) -> "Dataset":
        """tf.data's take: the first count examples; only right after
        from_tensor_slices or map (before shuffle, batch and repeat)."""
        self._chain("take")
        if any(self._state.get(k) for k in ("shuffled", "batched",
                                            "repeated", "taken")):
            raise ValueError("Dataset.take: only before shuffle, batch and"
                             " repeat (the workers take examples as they "
                             "read them)")
        _positive_int("Dataset.take: count", count)
        return self._with({**self.spec, "take": count}, taken=True)

    @property
    def element_spec(self) -> Any:
        """The element's structure: (shape, dtype) at each leaf, the
        batch axis None (strings as int64: their fingerprints)."""
        if self._trace is None:
            from .function import _element
            return _element(self, lambda p, s, d: (s, d))
        return self._trace.element(lambda p, s, d: (s, d))

    def files(self) -> List[str]:
        """The files the patterns match now, in order."""
        out: List[str] = []
        for p in self.spec["files"]:
            out.extend(sorted(glob.glob(p)))
        return out

    def input_spec(self) -> Dict[str, dict]:
        """The model inputs this dataset yields, name -> {"width", "ids"}:
        a tfrecord's features; for a csv, its one input, named after
        features_name or "input", whose width is the number of feature
        columns (read from the first file's header); a mapped or sliced
        dataset's, the inputs of its element's x."""
        if self._trace is not None:
            from ._dataset_map import struct_of
            return struct_of(self._trace)
        if self.spec["format"] == "tfrecord" or "features" in self.spec:
            return {n: {"width": f["width"], "ids": f["type"] != "float"}
                    for n, f in self.spec["features"].items()
                    if n != self.spec.get("sample_weight")}
        cols = self.spec.get("columns")
        if cols is None:
            files = self.files()
            if not files:
                raise FileNotFoundError(
                    f"files: no file matches {self.spec['files']}")
            with open(files[0], newline="") as f:
                header = next(_csv.reader(f), [])
            if self.spec["label"] not in header:
                raise ValueError(f"label: {self.spec['label']!r} is not a "
                                 f"column of {files[0]} ({', '.join(header)})")
            cols = [c for c in header if c != self.spec["label"]]
        return {self.spec.get("features_name") or "input":
                {"width": len(cols), "ids": False}}

    def __iter__(self) -> Any:
        raise ValueError(
            "iter() of a pasco.data dataset: its examples are read by the "
            "workers, not on the chief: give it to "
            "coordinator.create_per_worker_dataset and pass "
            "iter(per_worker_dataset) to coordinator.schedule, or give it "
            "to model.fit")

    def __repr__(self) -> str:
        return f"pasco.data.Dataset({self.spec!r})"


def _positive_int(name: str, v: object) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{name}: expected a positive integer, got {v!r}")
    return v


def _patterns(files: Union[str, Sequence[str]]) -> List[str]:
    if isinstance(files, (str, os.PathLike)):
        files = [files]  # type: ignore[list-item]
    if not isinstance(files, (list, tuple)) or not files:
        raise TypeError("files: expected a file pattern or a non-empty list "
                        "of them")
    out = []
    for f in files:
        if not isinstance(f, (str, os.PathLike)) or not str(f):
            raise TypeError(f"files: expected file patterns, got {f!r}")
        out.append(os.path.abspath(os.fspath(f)))
    return out


def _common(batch_size: int, shuffle: Union[bool, int], seed: int,
            repeat: Optional[int], shard: str, drop_remainder: bool,
            prefetch: int) -> dict:
    _positive_int("batch_size", batch_size)
    if isinstance(shuffle, bool):
        shuffle = 1000 if shuffle else 0
    if not isinstance(shuffle, int) or shuffle < 0:
        raise ValueError(f"shuffle: expected a buffer size >= 0 or a bool, "
                         f"got {shuffle!r}")
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected an integer >= 0, got {seed!r}")
    if repeat is not None and (not isinstance(repeat, int) or repeat < -1
                               or repeat == 0):
        raise ValueError(f"repeat: expected None, -1 or a positive integer, "
                         f"got {repeat!r}")
    if shard not in _SHARDS:
        raise ValueError(f"shard: expected one of {', '.join(_SHARDS)}, got "
                         f"{shard!r}")
    if not isinstance(prefetch, int) or prefetch < 0:
        raise ValueError(f"prefetch: expected an integer >= 0, got "
                         f"{prefetch!r}")
    return {"batch_size": batch_size, "shuffle": shuffle, "seed": seed,
            "repeat": repeat, "shard": shard,
            "drop_remainder": bool(drop_remainder), "prefetch": prefetch}


def _features(features: Mapping[str, Union[str, Feature, dict]]
              ) -> Dict[str, dict]:
    if not isinstance(features, Mapping) or not features:
        raise TypeError("features: expected a non-empty dict of feature "
                        "name -> type or pasco.data.Feature")
    feats: Dict[str, dict] = {}
    for name, f in features.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"features: {name!r} is not a feature name")
        if isinstance(f, str):
            f = Feature(f)
        elif isinstance(f, Mapping):
            f = Feature(**f)
        if not isinstance(f, Feature):
            raise TypeError(f"features[{name!r}]: expected a type name or a "
                            f"pasco.data.Feature, got {type(f).__name__}")
        feats[name] = f.spec()
    return feats


def csv(files: Union[str, Sequence[str]], label: str, batch_size: int = 32,
        shuffle: Union[bool, int] = 0, columns: Optional[Sequence[str]] = None,
        features_name: Optional[str] = None, label_type: Optional[str] = None,
        seed: int = 0, repeat: Optional[int] = None, shard: str = "auto",
        drop_remainder: bool = False, prefetch: int = 0,
        features: Optional[Mapping[str, Union[str, Feature, dict]]] = None,
        sample_weight: Optional[str] = None) -> Dataset:
    """CSV files with a header (tf.data.experimental.make_csv_dataset):
    each batch is (x, y), x the f32 [batch, width] of the feature columns
    (``columns``, default every column but the label; the dict
    {features_name: x} when features_name is set), y the ``label`` column
    (int64 class ids, or float with label_type="float"). ``shuffle``: a
    buffer size (True: 1000).

    ``features`` (column name -> "float", "int64", "string", a
    :class:`Feature` of width 1) reads each of those columns as its own
    model input instead: x is the dict {column: [batch, 1]}, a "string"
    column as its strings' fingerprints (for an Input of dtype "string"
    and a StringLookup or Hashing layer)::

        pasco.data.csv("t.csv", label="y",
                       features={"city": "string", "age": "float"})

    ``sample_weight``: one of ``features``, each example's weight (Keras's
    sample_weight, docs/sample-weights.md): taken out of x, each batch is
    (x, y, sample_weight)."""
    if not isinstance(label, str) or not label:
        raise TypeError(f"label: expected a column name, got {label!r}")
    spec = {"format": "csv", "files": _patterns(files), "label": label}
    if columns is not None:
        if isinstance(columns, str) or not all(
                isinstance(c, str) and c for c in columns):
            raise TypeError("columns: expected a list of column names")
        spec["columns"] = list(columns)
    if features_name is not None:
        if not isinstance(features_name, str) or not features_name:
            raise TypeError("features_name: expected a name")
        spec["features_name"] = features_name
    if label_type is not None:
        if label_type not in ("int64", "float"):
            raise ValueError(f"label_type: expected 'int64' or 'float', got "
                             f"{label_type!r}")
        spec["label_type"] = label_type
    if features is not None:
        if columns is not None or features_name is not None:
            raise ValueError("features: name each input's column; columns "
                             "and features_name are for one float x")
        spec["features"] = _features(features)
        bad = [n for n, f in spec["features"].items() if f["width"] != 1]
        if bad:
            raise ValueError(f"features[{bad[0]!r}]: a csv feature is one "
                             f"column: width 1")
    spec.update(_common(batch_size, shuffle, seed, repeat, shard,
                        drop_remainder, prefetch))
    return _weighted(spec, sample_weight)


def tfrecord(files: Union[str, Sequence[str]],
             features: Mapping[str, Union[str, Feature, dict]],
             label: Optional[str] = None, batch_size: int = 32,
             label_type: str = "int64", shuffle: Union[bool, int] = 0,
             seed: int = 0, repeat: Optional[int] = None,
             shard: str = "auto", gzip: bool = False,
             drop_remainder: bool = False, prefetch: int = 0,
             sample_weight: Optional[str] = None,
             label_shape: Optional[Sequence[int]] = None) -> Dataset:
    """TFRecord files of tf.train.Example records: each batch is (x, y), x
    the dict {feature name: tensor} of ``features`` (name -> "float",
    "int64", "hashed", a :class:`Feature`, or a dict of its fields), y the
    ``label`` feature (int64, or float with label_type="float"); without a
    label, x alone (for predict). ``label_shape``: each example's label
    shape, () (one value, y [batch]: the default), (T,) or (T, D): the
    label feature holds T (T * D) values, row-major, and y is [batch, T]
    (a sequence's class ids per step) or [batch, T, D] (its targets per
    step), what a sequence-output model trains on (docs/sequences.md).
    ``sample_weight``: one of ``features`` (a float of width 1), each
    example's weight (Keras's sample_weight, docs/sample-weights.md):
    taken out of x, each batch is (x, y, sample_weight). With a
    ``label_shape`` (T,) or (T, D) it may be of width T instead: one
    weight per step, sample_weight [batch, T] (Keras's per-timestep
    weights, docs/sequences.md)."""
    if not isinstance(features, Mapping) or not features:
        raise TypeError("features: expected a non-empty dict of feature "
                        "name -> type or pasco.data.Feature")
    feats: Dict[str, dict] = {}
    for name, f in features.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"features: {name!r} is not a feature name")
        if isinstance(f, str):
            f = Feature(f)
        elif isinstance(f, Mapping):
            f = Feature(**f)
        if not isinstance(f, Feature):
            raise TypeError(f"features[{name!r}]: expected a type name or a "
                            f"pasco.data.Feature, got {type(f).__name__}")
        feats[name] = f.spec()
    if label is not None and (not isinstance(label, str) or not label):
        raise TypeError(f"label: expected a feature name, got {label!r}")
    if label_type not in ("int64", "float"):
        raise ValueError(f"label_type: expected 'int64' or 'float', got "
                         f"{label_type!r}")
    spec = {"format": "tfrecord", "files": _patterns(files),
            "features": feats, "label": label, "label_type": label_type,
            "gzip": bool(gzip)}
    shape = _label_shape(label_shape, label)
    if shape:
        spec["label_shape"] = shape
    spec.update(_common(batch_size, shuffle, seed, repeat, shard,
                        drop_remainder, prefetch))
    return _weighted(spec, sample_weight)


def _label_shape(shape: Optional[Sequence[int]],
                 label: Optional[str]) -> List[int]:
    """tfrecord's label_shape checked: [], [T] or [T, D]."""
    if shape is None:
        return []
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, Sequence) or len(shape) > 2 or any(
            not isinstance(d, int) or isinstance(d, bool) or d < 1
            for d in shape):
        raise ValueError(f"label_shape: expected (), (T,) or (T, D) of "
                         f"integers >= 1, got {shape!r}")
    if shape and label is None:
        raise ValueError("label_shape: the dataset has no label")
    return [int(d) for d in shape]


def _weighted(spec: dict, sample_weight: Optional[str]) -> Dataset:
    """spec's dataset, its feature sample_weight (if any) the weights:
    width 1 (one per example) or a label_shape's T (one per step)."""
    if sample_weight is not None:
        f = spec.get("features", {}).get(sample_weight)
        steps = (spec.get("label_shape") or [1])[0]
        if f is None or f["width"] not in (1, steps) or f["type"] != "float":
            each = (f" (or {steps}, one per step of label_shape)"
                    if steps != 1 else "")
            raise ValueError(f"sample_weight: {sample_weight!r} must be one "
                             f"of features, a float of width 1{each}")
        if spec.get("label") is None:
            raise ValueError("sample_weight: the dataset needs a label")
        spec["sample_weight"] = sample_weight
    return Dataset(spec)


def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1  # negative int64s as two's complement, as protobuf
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:  # length-delimited
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _example(row: Mapping[str, "tuple[str, list]"]) -> bytes:
    """A tf.train.Example of {name: ("int64" | "float" | "bytes",
    values)}."""
    import struct
    feats = b""
    for name, (kind, values) in row.items():
        if kind == "bytes":  # bytes_list: each value its own field
            packed = b"".join(_field(1, v.encode() if isinstance(v, str)
                                     else bytes(v)) for v in values)
            feature = _field(1, packed)
        elif kind == "int64":
            packed = b"".join(_varint(int(v)) for v in values)
            feature = _field(3, _field(1, packed))  # int64_list
        else:
            packed = struct.pack(f"<{len(values)}f", *values)
            feature = _field(2, _field(1, packed))  # float_list
        feats += _field(1, _field(1, name.encode()) + _field(2, feature))
    return _field(1, feats)


def write_tfrecord(path: str, columns: Mapping[str, object],
                   gzip: bool = False) -> int:
    """Writes one tf.train.Example per row of ``columns`` (name -> an array
    of rows: [n] or [n, width], or [n, T, D] written row-major as
    [n, T * D], what tfrecord's label_shape=(T, D) reads back; integer
    arrays become int64 features, arrays of strings bytes features (read
    back as Feature("string"), or "hashed"), the others float) into the
    TFRecord file ``path`` (through the library's writer: the file appears
    whole when done). Returns n. Read it back with :func:`tfrecord`."""
    import ctypes

    import numpy as np

    from ._lib import lib
    from .errors import error_for
    if not isinstance(columns, Mapping) or not columns:
        raise TypeError("columns: expected a dict of feature name -> array")
    cols = {}
    n = None
    for name, a in columns.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"columns: {name!r} is not a feature name")
        arr = np.asarray(a)
        if arr.ndim == 1:
            arr = arr.reshape(-1, 1)
        elif arr.ndim == 3:
            arr = arr.reshape(arr.shape[0], -1)
        if arr.ndim != 2:
            raise ValueError(f"columns[{name!r}]: expected [n], "
                             f"[n, width] or [n, T, D], got shape "
                             f"{arr.shape}")
        if n is not None and arr.shape[0] != n:
            raise ValueError(f"columns[{name!r}]: {arr.shape[0]} rows, "
                             f"the others have {n}")
        n = arr.shape[0]
        kind = ("int64" if np.issubdtype(arr.dtype, np.integer) else
                "bytes" if arr.dtype.kind in "USO" else "float")
        cols[name] = (kind, arr.tolist())
    w = ctypes.c_void_p()
    opener = (lib.pasco_tfrecord_writer_open_gzip if gzip
              else lib.pasco_tfrecord_writer_open)
    rv = opener(ctypes.byref(w), os.fspath(path).encode())
    if rv != 0:
        raise error_for(rv, f"{path}: "
                        + lib.pasco_tfrecord_last_error().decode())
    try:
        for i in range(n or 0):
            rec = _example({k: (kind, v[i]) for k, (kind, v)
                            in cols.items()})
            rv = lib.pasco_tfrecord_write(w, rec, len(rec))
            if rv != 0:
                raise error_for(rv, f"{path}: "
                                + lib.pasco_tfrecord_last_error().decode())
    except BaseException:
        lib.pasco_tfrecord_writer_discard(w)
        raise
    rv = lib.pasco_tfrecord_writer_close(w)
    if rv != 0:
        raise error_for(rv, f"{path}: "
                        + lib.pasco_tfrecord_last_error().decode())
    return n or 0


def _read_varint(b: bytes, i: int) -> "tuple[int, int]":
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def _fields(b: bytes) -> "list[tuple[int, int, object]]":
    """The (number, wire type, value) of a protobuf message's fields:
    varints as ints, length-delimited as bytes, fixed32 as 4 bytes."""
    out, i = [], 0
    while i < len(b):
        key, i = _read_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _read_varint(b, i)
        elif wt == 2:
            n, i = _read_varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        else:
            raise ValueError(f"a tf.train.Example with wire type {wt}")
        out.append((num, wt, v))
    return out


def _feature_values(feature: bytes) -> list:
    """The values of a tf.train.Feature: strings, floats or int64s."""
    import struct
    out: list = []
    for num, _, lst in _fields(feature):
        for _, wt, v in _fields(lst):  # each list's field 1
            if num == 1:
                out.append(bytes(v).decode("utf-8"))  # type: ignore
            elif num == 2:
                data = bytes(v)  # type: ignore
                out.extend(struct.unpack(f"<{len(data) // 4}f", data))
            elif wt == 0:
                v = int(v)  # type: ignore[call-overload]
                out.append(v - (1 << 64) if v >= 1 << 63 else v)
            else:
                j = 0
                while j < len(v):  # type: ignore
                    n, j = _read_varint(v, j)  # type: ignore
                    out.append(n - (1 << 64) if n >= 1 << 63 else n)
    return out


def read_column(dataset: "Dataset", name: str) -> list:
    """Every value of feature (tfrecord) or column (csv) ``name`` of the
    dataset's files, read here whole, in file order (strings as str):
    what a preprocessing layer's adapt reads on the chief."""
    import gzip as _gzip
    import struct
    out: list = []
    for path in dataset.files():
        if dataset.spec["format"] == "csv":
            with open(path, newline="") as f:
                for row in _csv.DictReader(f):
                    if name not in row:
                        raise ValueError(f"{path} has no column {name!r}")
                    out.append(row[name])
            continue
        opener = _gzip.open if dataset.spec.get("gzip") else open
        with opener(path, "rb") as f:
            data = f.read()
        i = 0
        while i + 12 <= len(data):
            (n,) = struct.unpack_from("<Q", data, i)
            rec = data[i + 12:i + 12 + n]
            i += 16 + n
            for _, _, feats in _fields(rec):          # Example.features
                for _, _, entry in _fields(feats):    # Features.feature
                    kv = {k: v for k, _, v in _fields(entry)}
                    if bytes(kv.get(1, b"")).decode() == name:
                        out.extend(_feature_values(kv.get(2, b"")))
    return out
