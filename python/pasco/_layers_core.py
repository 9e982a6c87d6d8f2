"""Keras's core layers, as data, re-exported by pasco.layers: Dense,
Embedding, Dropout, Activation, Concatenate, Normalization and Custom (a
"Custom" layer's config as a model holds it). Each mirrors its row of the
C layer table (model/layers/): the same Keras class name, config fields
and defaults; tests/python/layer_table.py checks them against it. The
base class, Input and the argument checks they share are
python/pasco/layers.py's."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

from .layers import (Layer, _activation, _constraint, _dense_regularizer,
                     _initializer, _positive)

__all__ = ["Dense", "Embedding", "Dropout", "Activation", "Concatenate",
           "Normalization", "Custom"]


class Dense(Layer):
    """Dense(units, activation=None, use_bias=True,
    kernel_initializer="glorot_uniform", bias_initializer="zeros",
    kernel_regularizer=None (pasco.regularizers.L1, L2, L1L2, "l1", "l2",
    "l1_l2", or a number: an L2 factor), name=None, input_shape=None,
    kernel_constraint=None, bias_constraint=None, bias_regularizer=None:
    activation(x @ kernel + bias). Variables <name>/kernel [in, units]
    and <name>/bias [units]. Initializers: pasco.initializers objects or
    names; constraints: pasco.constraints (applied by the ps after each
    update). activity_regularizer (pasco.regularizers, or Keras's names):
    of the layer's output, divided by the batch size, added to the loss
    as Keras 3 does (fit and evaluate; not a traced step's
    model.losses)."""

    class_name = "Dense"

    def __init__(self, units: int, activation: Optional[str] = None,
                 use_bias: bool = True,
                 kernel_initializer: Union[str, dict] = "glorot_uniform",
                 bias_initializer: Union[str, dict] = "zeros",
                 kernel_regularizer: Any = None,
                 name: Optional[str] = None,
                 input_shape: Optional[Tuple[int, ...]] = None,
                 kernel_constraint: Any = None,
                 bias_constraint: Any = None,
                 bias_regularizer: Any = None,
                 activity_regularizer: Any = None) -> None:
        self.units = _positive("units", units)
        self.activity_regularizer = _dense_regularizer(
            "activity_regularizer", activity_regularizer)
        self.kernel_constraint = _constraint("kernel_constraint",
                                             kernel_constraint)
        self.bias_constraint = _constraint("bias_constraint",
                                           bias_constraint)
        self.activation = _activation("activation", activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = _initializer("kernel_initializer",
                                               kernel_initializer)
        self.bias_initializer = _initializer("bias_initializer",
                                             bias_initializer)
        self.kernel_regularizer = _dense_regularizer("kernel_regularizer",
                                                     kernel_regularizer)
        self.bias_regularizer = _dense_regularizer("bias_regularizer",
                                                   bias_regularizer)
        super().__init__(name, input_shape)

    def _config(self) -> Dict[str, Any]:
        c: Dict[str, Any] = {"units": self.units,
                             "activation": self.activation,
                             "use_bias": self.use_bias}
        if self.kernel_initializer:
            c["kernel_initializer"] = self.kernel_initializer
        if self.bias_initializer:
            c["bias_initializer"] = self.bias_initializer
        if self.kernel_regularizer:
            c["kernel_regularizer"] = self.kernel_regularizer
        if self.bias_regularizer:
            c["bias_regularizer"] = self.bias_regularizer
        if self.kernel_constraint:
            c["kernel_constraint"] = self.kernel_constraint
        if self.bias_constraint:
            c["bias_constraint"] = self.bias_constraint
        if self.activity_regularizer:
            c["activity_regularizer"] = self.activity_regularizer
        return c

    def _output_width(self, widths: List[int]) -> int:
        return self.units

    def _output_shape(self, shapes: List[Tuple[int, ...]]
                      ) -> Tuple[int, ...]:
        return shapes[0][:-1] + (self.units,)  # Keras's: the last axis


class Embedding(Layer):
    """Embedding(input_dim, output_dim, combiner="mean",
    embeddings_initializer="uniform", dynamic=False, num_shards=None,
    name=None, input_length=None, mask_zero=False,
    embeddings_constraint=None): rows of ids [batch, k] combined (mean or
    sum) into [batch, output_dim]; -1 ids are padding. combiner=None:
    Keras's own output, the sequence [batch, k, output_dim] (for Flatten,
    Reshape, GlobalAveragePooling1D); mask_zero=True: that sequence, id 0
    being padding, masked (Keras's: GlobalAveragePooling1D then averages
    the other steps only).
    dynamic=True (or a dict of min_count, evict_after, max_rows_per_ps,
    default_zeros): no input_dim, the ids are 64-bit keys (hashed strings)
    of a table that grows on the ps. num_shards splits the table over the
    ps tasks (a FixedShardsPartitioner).
    embeddings_regularizer (pasco.regularizers L1, L2, L1L2, or Keras's
    names): applied to the distinct rows each step looks up, once each,
    not to the whole table as Keras does (a step reads only those rows;
    the whole of a ps-partitioned table would be read every step): an L2
    decays a row only in the steps that use it. activity_regularizer: of
    the output, divided by the batch size (Keras 3's). Both are added to
    the loss in fit and evaluate (not to a traced step's model.losses)."""

    class_name = "Embedding"
    _config_args = {"num_shards": "partitioner"}

    def __init__(self, input_dim: Optional[int] = None,
                 output_dim: Optional[int] = None, combiner: str = "mean",
                 embeddings_initializer: Union[str, dict] = "uniform",
                 dynamic: Union[bool, Dict[str, Any]] = False,
                 num_shards: Optional[int] = None,
                 name: Optional[str] = None,
                 input_length: Optional[int] = None,
                 mask_zero: bool = False,
                 embeddings_constraint: Any = None,
                 embeddings_regularizer: Any = None,
                 activity_regularizer: Any = None) -> None:
        self.embeddings_constraint = _constraint("embeddings_constraint",
                                                 embeddings_constraint)
        self.embeddings_regularizer = _dense_regularizer(
            "embeddings_regularizer", embeddings_regularizer)
        self.activity_regularizer = _dense_regularizer(
            "activity_regularizer", activity_regularizer)
        if dynamic and output_dim is None and input_dim is not None:
            input_dim, output_dim = None, input_dim  # Embedding(16, dynamic=True)
        if output_dim is None:
            raise TypeError("output_dim: required")
        self.output_dim = _positive("output_dim", output_dim)
        if dynamic:
            if input_dim is not None:
                raise ValueError("input_dim: a dynamic Embedding has none "
                                 "(its ids are keys)")
            if dynamic is not True and not isinstance(dynamic, dict):
                raise TypeError("dynamic: expected a bool or a dict of "
                                "min_count, evict_after, max_rows_per_ps, "
                                "default_zeros")
            self.dynamic = {} if dynamic is True else dict(dynamic)
            bad = set(self.dynamic) - {"min_count", "evict_after",
                                       "max_rows_per_ps", "default_zeros"}
            if bad:
                raise ValueError(f"dynamic: unknown option {sorted(bad)[0]!r}"
                                 f" (min_count, evict_after, max_rows_per_ps,"
                                 f" default_zeros)")
            self.input_dim = None
        else:
            self.dynamic = None
            self.input_dim = _positive("input_dim", input_dim)
        if combiner not in ("mean", "sum", None):
            raise ValueError(f"combiner: expected 'mean', 'sum' or None, "
                             f"got {combiner!r}")
        if mask_zero and combiner == "sum":
            raise ValueError("mask_zero: masks the steps of Keras's "
                             "sequence output; combiner='sum' combines "
                             "them (leave combiner out)")
        self.mask_zero = bool(mask_zero)
        self.combiner = None if self.mask_zero else combiner
        self.embeddings_initializer = _initializer("embeddings_initializer",
                                                   embeddings_initializer)
        if num_shards is not None:
            _positive("num_shards", num_shards)
        self.num_shards = num_shards
        super().__init__(name, (input_length,) if input_length else None,
                         "int64")

    def _config(self) -> Dict[str, Any]:
        c: Dict[str, Any] = {"output_dim": self.output_dim,
                             "combiner": self.combiner,
                             "mask_zero": self.mask_zero}
        if self.input_dim is not None:
            c["input_dim"] = self.input_dim
        if self.embeddings_initializer:
            c["embeddings_initializer"] = self.embeddings_initializer
        if self.embeddings_constraint:
            c["embeddings_constraint"] = self.embeddings_constraint
        if self.embeddings_regularizer:
            c["embeddings_regularizer"] = self.embeddings_regularizer
        if self.activity_regularizer:
            c["activity_regularizer"] = self.activity_regularizer
        if self.dynamic is not None:
            c["dynamic"] = self.dynamic
        if self.num_shards:
            c["partitioner"] = {"class_name": "FixedShardsPartitioner",
                                "config": {"num_shards": self.num_shards}}
        return c

    def _output_width(self, widths: List[int]) -> int:
        return self.output_dim

    def _output_shape(self, shapes: List[Tuple[int, ...]]
                      ) -> Tuple[int, ...]:
        if self.combiner is None:  # Keras's sequence [batch, steps, dim]
            return (shapes[0][0], self.output_dim)
        return (self.output_dim,)


class Dropout(Layer):
    """Dropout(rate, noise_shape=None, seed=None): zeroes a rate of its
    inputs in training only (any shape; a mask passes). noise_shape:
    Keras's, the batch's first, None for the input's size, 1 to share
    one draw along that axis. seed: the layer draws its own masks from
    it and the step's seed."""

    class_name = "Dropout"
    _keeps_shape = True

    def __init__(self, rate: float, noise_shape: Any = None,
                 seed: Optional[int] = None,
                 name: Optional[str] = None) -> None:
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or \
                not 0 <= rate < 1:
            raise ValueError(f"rate: expected a number in [0, 1), got "
                             f"{rate!r}")
        if noise_shape is not None and (
                not isinstance(noise_shape, (tuple, list)) or
                not 1 <= len(noise_shape) <= 4 or any(
                    d is not None and (isinstance(d, bool) or
                                       not isinstance(d, int) or d < 1)
                    for d in noise_shape)):
            raise ValueError(f"noise_shape: expected None or a tuple of "
                             f"sizes and None, the batch's first, got "
                             f"{noise_shape!r}")
        if seed is not None and (isinstance(seed, bool) or
                                 not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed: expected None or an integer >= 0, got "
                             f"{seed!r}")
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else list(noise_shape)
        self.seed = seed
        super().__init__(name)

    def _config(self) -> Dict[str, Any]:
        return {"rate": self.rate, "noise_shape": self.noise_shape,
                "seed": self.seed}


class Activation(Layer):
    """Activation(activation): "linear", "relu", "sigmoid", "tanh",
    "softmax"."""

    class_name = "Activation"
    _keeps_shape = True

    def __init__(self, activation: str, name: Optional[str] = None) -> None:
        self.activation = _activation("activation", activation)
        super().__init__(name)

    def _config(self) -> Dict[str, Any]:
        return {"activation": self.activation}


class Custom(Layer):
    """A "Custom" layer as a model's config holds it (docs/GRAPHS.md): an
    op graph (graph, and inference_graph when not training) or a C layer
    function registered by that name on every worker (include/pasco/
    graph.h), with input_widths and output_width. A pasco.layers.Layer
    subclass traced with pasco.ops writes this config itself."""

    class_name = "Custom"
    _config_args = {"layer_class": "class"}

    def __init__(self, layer_class: Optional[str] = None,
                 input_widths: Optional[List[int]] = None,
                 output_width: Optional[int] = None,
                 graph: Optional[dict] = None,
                 inference_graph: Optional[dict] = None,
                 function: Optional[str] = None,
                 options: Optional[dict] = None,
                 name: Optional[str] = None) -> None:
        super().__init__(name=name)
        self._fields = {"class": layer_class, "input_widths": input_widths,
                        "output_width": output_width, "graph": graph,
                        "inference_graph": inference_graph,
                        "function": function, "options": options}

    def _config(self) -> Dict[str, Any]:
        return {k: v for k, v in self._fields.items() if v is not None}

    def _output_width(self, widths: List[int]) -> int:
        if self._fields["output_width"] is None:
            raise ValueError(f"{self.name}: output_width: required in a "
                             f"model (the width of the layer's output)")
        return int(self._fields["output_width"])


class Concatenate(Layer):
    """Concatenate(): its inputs along the last axis (functional)."""

    class_name = "Concatenate"

    def __init__(self, axis: int = -1, name: Optional[str] = None) -> None:
        if axis != -1:
            raise ValueError(f"axis: only -1 (the last axis), got {axis!r}")
        super().__init__(name)

    def _config(self) -> Dict[str, Any]:
        return {"axis": -1}

    def _output_width(self, widths: List[int]) -> int:
        return sum(widths)


class Normalization(Layer):
    """Normalization(): (x - mean) / sqrt(variance) per feature, the
    statistics from ``adapt(data)`` (a numpy array [n, width], or a
    pasco.data dataset read on the chief), kept on the ps as
    non-trainable variables. Keras's mean, variance and invert are
    accepted at their defaults only (None, None, False)."""

    class_name = "Normalization"

    def __init__(self, axis: int = -1, mean: Any = None, variance: Any = None,
                 invert: bool = False, name: Optional[str] = None,
                 input_shape: Optional[Tuple[int, ...]] = None) -> None:
        if axis != -1:
            raise ValueError(f"axis: only -1 (the last axis), got {axis!r}")
        if mean is not None or variance is not None:
            raise ValueError("mean, variance: must be None; the statistics "
                             "come from adapt(data)")
        if invert is not False:
            raise ValueError(f"invert: only False (not supported), got "
                             f"{invert!r}")
        self.adapt_data: Optional[Any] = None
        self.adapt_dataset: Optional[str] = None
        super().__init__(name, input_shape)

    def adapt(self, data: Any) -> None:
        """Keras's adapt: the per-feature mean and (population) variance
        of data, computed on the chief when the model is built (fit,
        evaluate, predict or build()): an array-like [n, width], or a
        pasco.data dataset (pasco.data.csv, pasco.data.tfrecord), read
        whole in the chief's process (every file, not a worker's share;
        repeat None reads it once; a dataset repeated forever is
        refused), the layer's input being its x (a tfrecord's feature of
        the model input's name)."""
        import numpy as np

        from .data import Dataset

        if isinstance(data, Dataset):
            if data.spec.get("repeat") == -1:
                raise ValueError("data: the dataset repeats forever; adapt "
                                 "reads it to its end (give repeat=None or "
                                 "a count)")
            spec = data.input_spec()
            self.adapt_data, self.adapt_dataset = None, data.name(1)
            if self.input_shape is None and len(spec) == 1:
                self.input_shape = (next(iter(spec.values()))["width"],)
            return
        a = np.asarray(data, dtype=np.float64)
        if a.ndim == 1:
            a = a.reshape(-1, 1)
        if a.ndim != 2 or a.shape[0] == 0:
            raise ValueError(f"data: expected an array [n, width] with n > 0"
                             f" or a pasco.data dataset, got shape "
                             f"{a.shape}")
        self.adapt_data, self.adapt_dataset = np.ascontiguousarray(a), None
        if self.input_shape is None:
            self.input_shape = (a.shape[1],)

    def _config(self) -> Dict[str, Any]:
        return {"axis": -1, "mean": None, "variance": None, "invert": False}
