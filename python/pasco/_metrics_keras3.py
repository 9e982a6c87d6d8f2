"""Keras 3's confusion, top-k, regression and crossentropy metrics
(pasco.metrics re-exports them): AUC, Precision, Recall,
TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, MeanSquaredError,
RootMeanSquaredError, MeanAbsoluteError, BinaryCrossentropy.

Each works where Keras's does:

- in ``model.compile(metrics=[...])``: the object goes to the workers as
  Keras serializes it ({"class_name": "AUC", "config": {...}}) and the
  library's train and evaluate steps count it in C (model/metric_counts.c),
  logged under its name (``auc``, ``auc_1``, ... as Keras names them);
- in a ``@pasco.function`` step, ``update_state`` records its counts as
  ops, added once per step to its state on a ps; ``result()`` on the chief
  (or from the chief with numpy arrays, as the other metrics).

States (float64): AUC [4, num_thresholds] (true positives, false
positives, true negatives, false negatives per threshold); Precision [2,
thresholds] (true and false positives); Recall [2, thresholds] (true
positives, false negatives); the others [total, count]. Predictions are
compared with each threshold in float32, as Keras compares them; a label
that is not 0 is positive.
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, Optional, Sequence, Union

import numpy as np

from .metrics import (Metric, _MeanOf, _dtype, _rank, _same_rank,
                      Accuracy, BinaryAccuracy, CategoricalAccuracy, Mean,
                      SparseCategoricalAccuracy, Sum)

NEG_INF = -1e10  # Keras's metrics_utils.NEG_INF
EPSILON = 1e-7  # Keras's backend.epsilon()
# The largest AUC num_thresholds (compile's counts must fit a step's).
MAX_AUC_THRESHOLDS = 2048


def _number(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name}: expected a number, got {v!r}")
    return float(v)


def _int_or_none(name: str, v: Any, lo: int) -> Optional[int]:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo:
        raise ValueError(f"{name}: expected None or an integer >= {lo}, "
                         f"got {v!r}")
    return int(v)


def _thresholds(v: Any) -> list:
    """Keras's parse_init_thresholds's check: numbers in [0, 1]."""
    vals = list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]
    if not vals or not all(0 <= _number("thresholds", t) <= 1
                           for t in vals):
        raise ValueError(f"thresholds: expected numbers in [0, 1], got "
                         f"{v!r}")
    return [float(t) for t in vals]


def _evenly(thresholds: Sequence[float]) -> bool:
    """Keras's is_evenly_distributed_thresholds."""
    n = len(thresholds)
    return n >= 3 and bool(np.allclose(
        thresholds, np.arange(n, dtype=np.float32) / (n - 1),
        atol=EPSILON))


def _flat_weights(B: Any, sample_weight: Any, p: Any,
                  label_weights: Any = None) -> Any:
    """sample_weight ([batch] or [batch, 1]) per element of p, times
    label_weights (one per column of p) when given, as a float64 column
    [elements, 1]; 1.0 without either."""
    if sample_weight is None and label_weights is None:
        return 1.0
    w = B.ones_like(B.cast(p, "float32"))
    if sample_weight is not None:
        sw = B.cast(sample_weight, "float32")  # Keras: the variables' dtype
        if _rank(sw) == 1 and _rank(p) > 1:
            sw = B.reshape(sw, (-1, 1))
        w = w * sw
    if label_weights is not None:
        w = w * np.asarray(label_weights, np.float32)
    return B.cast(B.reshape(w, (-1, 1)), "float64")


def _confusion(B: Any, y: Any, p: Any, thresholds: Any, w: Any) -> tuple:
    """(tp, fp, tn, fn), each [thresholds], of predictions p and labels y
    (flattened) against the float32 thresholds."""
    thr = np.asarray(thresholds, np.float32).reshape(1, -1)
    above = B.cast(B.greater(B.reshape(p, (-1, 1)), thr), "float64")
    pos = B.cast(B.not_equal(B.reshape(y, (-1, 1)), 0), "float64")
    pw, nw = pos * w, (1.0 - pos) * w
    return (B.sum(pw * above, 0), B.sum(nw * above, 0),
            B.sum(nw * (1.0 - above), 0), B.sum(pw * (1.0 - above), 0))


def _divide_no_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return np.divide(a, b, out=np.zeros_like(a), where=b != 0)


class AUC(Metric):
    """Keras's AUC: the area under the ROC curve (recall over the false
    positive rate), the PR curve (precision over recall) or the PRGAIN
    curve (precision gain over recall gain), a Riemann sum
    over num_thresholds thresholds: interpolation (PR: Davis and
    Goadrich's, as Keras's interpolate_pr_auc), minoring or majoring.
    thresholds: the inner ones, instead of num_thresholds evenly spaced.
    from_logits: y_pred goes through a sigmoid first. multi_label: one
    AUC per column of y_pred [batch, labels] (num_labels, or the first
    update's width), averaged, weighted by label_weights when given;
    without multi_label, every output counts as one label and
    label_weights weigh each column's counts."""

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC",
                 summation_method: str = "interpolation",
                 name: Optional[str] = None, dtype: Optional[str] = None,
                 thresholds: Optional[Sequence[float]] = None,
                 multi_label: bool = False, num_labels: Optional[int] = None,
                 label_weights: Any = None,
                 from_logits: bool = False) -> None:
        # Keras's from_str spellings; get_config gives the first
        curves = {"ROC": "ROC", "roc": "ROC", "PR": "PR", "pr": "PR",
                  "PRGAIN": "PRGAIN", "prgain": "PRGAIN"}
        sums = {m: m.lower() for m in ("interpolation", "Interpolation",
                                       "minoring", "Minoring", "majoring",
                                       "Majoring")}
        if curve not in curves:
            raise ValueError(f"curve: expected 'ROC', 'PR' or 'PRGAIN', got "
                             f"{curve!r}")
        if summation_method not in sums:
            raise ValueError(f"summation_method: expected 'interpolation', "
                             f"'minoring' or 'majoring', got "
                             f"{summation_method!r}")
        curve, summation_method = curves[curve], sums[summation_method]
        if num_labels is not None and not multi_label:
            raise ValueError("num_labels: needed only when multi_label is "
                             "True")
        num_labels = _int_or_none("num_labels", num_labels, 1)
        if label_weights is not None:
            label_weights = [_number("label_weights", w)
                             for w in np.asarray(label_weights).ravel()]
            if any(w < 0 for w in label_weights):
                raise ValueError(f"label_weights: expected numbers >= 0, "
                                 f"got {label_weights}")
        self._init_from_thresholds = thresholds is not None
        if thresholds is not None:
            inner = sorted(_thresholds(thresholds))
            num_thresholds = len(inner) + 2
            self._evenly = _evenly([0.0] + inner + [1.0])
        else:
            if isinstance(num_thresholds, bool) or not isinstance(
                    num_thresholds, numbers.Integral) or num_thresholds < 2:
                raise ValueError(f"num_thresholds: expected an integer > 1, "
                                 f"got {num_thresholds!r}")
            inner = [(i + 1) / (num_thresholds - 1)
                     for i in range(num_thresholds - 2)]
            self._evenly = True
        if num_thresholds > MAX_AUC_THRESHOLDS:
            raise ValueError(f"num_thresholds: at most {MAX_AUC_THRESHOLDS}, "
                             f"got {num_thresholds}")
        self.num_thresholds = int(num_thresholds)
        self._thresholds = [0.0 - EPSILON] + inner + [1.0 + EPSILON]
        self.curve, self.summation_method = curve, summation_method
        self.multi_label, self.num_labels = bool(multi_label), num_labels
        self.label_weights, self.from_logits = label_weights, \
            bool(from_logits)
        self._state_shape = (4, self.num_thresholds) + (
            (num_labels or 1,) if self.multi_label else ())
        self._built = not self.multi_label or num_labels is not None
        super().__init__(name, dtype)

    @property
    def thresholds(self) -> list:
        """The thresholds, with Keras's two ends (-1e-7 and 1 + 1e-7)."""
        return list(self._thresholds)

    def get_config(self) -> Dict[str, Any]:
        config = {**super().get_config(),
                  "num_thresholds": self.num_thresholds,
                  "curve": self.curve,
                  "summation_method": self.summation_method,
                  "multi_label": self.multi_label,
                  "num_labels": self.num_labels,
                  "label_weights": self.label_weights,
                  "from_logits": self.from_logits}
        if self._init_from_thresholds:
            config["thresholds"] = self._thresholds[1:-1]
        return config

    def _delta(self, B: Any, y_true: Any, y_pred: Any,
               sample_weight: Any = None) -> Any:
        p, y = _same_rank(B, B.cast(y_pred, "float32"),
                          B.cast(y_true, "float32"))
        if self.from_logits:
            p = B.unary("sigmoid", p)
        if self._evenly:  # Keras's evenly-spaced path clips
            p = B.clip(p, 0.0, 1.0)
        if self.multi_label:
            return self._delta_by_label(B, y, p, sample_weight)
        return B.stack(_confusion(B, y, p, self._thresholds, _flat_weights(
            B, sample_weight, p, self.label_weights)))

    def _delta_by_label(self, B: Any, y: Any, p: Any,
                        sample_weight: Any) -> Any:
        """[4, thresholds, labels]: the counts of each column."""
        width = p.shape[-1] if _rank(p) == 2 else None
        if width is None or (self.label_weights is not None and
                             len(self.label_weights) != width):
            raise ValueError(f"{self.name}: multi_label takes y_pred of "
                             f"shape (batch, labels) with labels known "
                             f"(and as many label_weights), got "
                             f"{p.shape}")
        if not self._built:  # Keras builds from the first y_pred
            if self.state._own:
                raise ValueError(f"{self.name}: built already")
            self._state_shape = (4, self.num_thresholds, width)
            self.state.shape, self._built = self._state_shape, True
        elif self._state_shape[2] != width:
            raise ValueError(f"{self.name}: {self._state_shape[2]} labels, "
                             f"y_pred has {width}")
        thr = np.asarray(self._thresholds, np.float32).reshape(1, -1, 1)
        above = B.cast(B.greater(B.expand_dims(p, 1), thr), "float64")
        pos = B.cast(B.not_equal(B.expand_dims(y, 1), 0), "float64")
        w: Any = 1.0
        if sample_weight is not None:
            w = B.cast(B.reshape(B.cast(sample_weight, "float32"),
                                 (-1, 1, 1)), "float64")
        pw, nw = pos * w, (1.0 - pos) * w
        return B.stack([B.sum(pw * above, 0), B.sum(nw * above, 0),
                        B.sum(nw * (1.0 - above), 0),
                        B.sum(pw * (1.0 - above), 0)])

    def result(self) -> np.float64:
        by_label = self._by_label(*self.state.numpy())
        if not self.multi_label:
            return np.float64(by_label)
        if self.label_weights is None:
            return np.float64(np.mean(by_label))
        w = np.asarray(self.label_weights, np.float64)
        return np.float64(_divide_no_nan(np.sum(by_label * w), np.sum(w)))

    def _by_label(self, tp: np.ndarray, fp: np.ndarray, tn: np.ndarray,
                  fn: np.ndarray) -> np.ndarray:
        """The AUC of counts [thresholds] or [thresholds, labels]."""
        if self.curve == "PR" and self.summation_method == "interpolation":
            dtp = tp[:-1] - tp[1:]
            p = tp + fp
            slope = _divide_no_nan(dtp, np.maximum(p[:-1] - p[1:], 0))
            intercept = tp[1:] - slope * p[1:]
            both = (p[:-1] > 0) & (p[1:] > 0)
            ratio = np.where(both, _divide_no_nan(
                p[:-1], np.maximum(p[1:], 0)), 1.0)
            return np.sum(_divide_no_nan(
                slope * (dtp + intercept * np.log(ratio)),
                np.maximum(tp[1:] + fn[1:], 0)), axis=0)
        recall = _divide_no_nan(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _divide_no_nan(fp, fp + tn), recall
        elif self.curve == "PR":
            x, y = recall, _divide_no_nan(tp, tp + fp)
        else:  # PRGAIN: recall gain, precision gain
            scale = _divide_no_nan(tp + fn, tn + fp)
            x = np.maximum(np.where(tp == 0, 0.0, 1 - scale *
                                    _divide_no_nan(fn, tp)), 0)
            y = np.where(tp == 0, 1.0, 1 - scale * _divide_no_nan(fp, tp))
        heights = {"interpolation": (y[:-1] + y[1:]) / 2,
                   "minoring": np.minimum(y[:-1], y[1:]),
                   "majoring": np.maximum(y[:-1], y[1:])}
        return np.sum((x[:-1] - x[1:]) * heights[self.summation_method],
                      axis=0)


class _PrecisionRecall(Metric):
    """Precision and Recall: counts per threshold of y_pred (after top_k's
    filter, at class_id's column) against y_true of the same shape."""

    def __init__(self, thresholds: Union[None, float, Sequence[float]] = None,
                 top_k: Optional[int] = None, class_id: Optional[int] = None,
                 name: Optional[str] = None,
                 dtype: Optional[str] = None) -> None:
        self.init_thresholds = thresholds
        self.top_k = _int_or_none("top_k", top_k, 1)
        self.class_id = _int_or_none("class_id", class_id, 0)
        self.thresholds = (_thresholds(thresholds) if thresholds is not None
                           else [0.5 if top_k is None else NEG_INF])
        self._state_shape = (2, len(self.thresholds))
        super().__init__(name, dtype)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "thresholds": self.init_thresholds,
                "top_k": self.top_k, "class_id": self.class_id}

    def _filter_top_k(self, B: Any, x: Any) -> Any:
        """Keras's _filter_top_k: the top_k values of each row kept (ties
        to the lower index, as top_k orders them), the rest NEG_INF."""
        c = x.shape[-1]
        if c is None or self.top_k >= c:
            return x
        later = np.tril(np.ones((c, c), np.float32), -1)  # [j, q]: q < j
        a, b = B.expand_dims(x, -2), B.expand_dims(x, -1)
        ahead = B.sum(B.cast(B.greater(a, b), "float32") +
                      B.cast(B.equal(a, b), "float32") * later, -1)
        return B.where(B.less(ahead, float(self.top_k)), x, NEG_INF)

    def _counts(self, B: Any, y_true: Any, y_pred: Any,
                sample_weight: Any) -> tuple:
        p, y = _same_rank(B, B.cast(y_pred, "float32"),
                          B.cast(y_true, "float32"))
        if self.top_k is not None:
            p = self._filter_top_k(B, p)
        if self.class_id is not None:
            if _rank(p) < 2 or (p.shape[-1] is not None and
                                self.class_id >= p.shape[-1]):
                raise ValueError(f"{self.name}: class_id {self.class_id} "
                                 f"needs y_pred of shape (batch, classes) "
                                 f"with more classes, got {p.shape}")
            j = self.class_id
            p, y = p[..., j:j + 1], y[..., j:j + 1]
        return _confusion(B, y, p, self.thresholds,
                          _flat_weights(B, sample_weight, p))

    def result(self) -> Union[np.float64, np.ndarray]:
        tp, other = self.state.numpy()
        r = _divide_no_nan(tp, tp + other)
        return np.float64(r[0]) if len(self.thresholds) == 1 else r


class Precision(_PrecisionRecall):
    """Keras's Precision: true positives / predicted positives, per
    threshold (default 0.5; with top_k, the top_k predictions of each row
    are positive); class_id: that column only. One threshold: a number;
    several: an array (in compile, one threshold only: a log is one
    number)."""

    def _delta(self, B: Any, y_true: Any, y_pred: Any,
               sample_weight: Any = None) -> Any:
        tp, fp, _, _ = self._counts(B, y_true, y_pred, sample_weight)
        return B.stack([tp, fp])


class Recall(_PrecisionRecall):
    """Keras's Recall: true positives / actual positives, with
    Precision's thresholds, top_k and class_id."""

    def _delta(self, B: Any, y_true: Any, y_pred: Any,
               sample_weight: Any = None) -> Any:
        tp, _, _, fn = self._counts(B, y_true, y_pred, sample_weight)
        return B.stack([tp, fn])


def _in_top_k(B: Any, ids: Any, y_pred: Any, k: int) -> Any:
    """Keras's in_top_k: 1 where the class id scores among the top k of
    its row (fewer than k classes score strictly more: ties are in)."""
    c = y_pred.shape[-1]
    at = B.sum(B.one_hot(ids, c) * y_pred, -1)
    above = B.sum(B.cast(B.greater(y_pred, B.expand_dims(at, -1)),
                         "float32"), -1)
    return B.cast(B.less(above, float(k)), "float32")


def _k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k: expected an integer >= 1, got {k!r}")
    return int(k)


class TopKCategoricalAccuracy(_MeanOf):
    """Keras's TopKCategoricalAccuracy(k=5): how often the class of the
    one-hot y_true (its argmax) is among the top k of y_pred."""

    def __init__(self, k: int = 5, name: str = "top_k_categorical_accuracy",
                 dtype: Optional[str] = None) -> None:
        self.k = _k(k)
        super().__init__(name, dtype)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "k": self.k}

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        p = B.cast(y_pred, "float32")
        return _in_top_k(B, B.argmax(y_true, -1), p, self.k)


class SparseTopKCategoricalAccuracy(_MeanOf):
    """Keras's SparseTopKCategoricalAccuracy(k=5): how often the class id
    y_true ([batch] or [batch, 1]) is among the top k of y_pred;
    from_sorted_ids: y_pred holds class ids, best first."""

    def __init__(self, k: int = 5,
                 name: str = "sparse_top_k_categorical_accuracy",
                 dtype: Optional[str] = None,
                 from_sorted_ids: bool = False) -> None:
        self.k, self.from_sorted_ids = _k(k), bool(from_sorted_ids)
        super().__init__(name, dtype)

    def get_config(self) -> Dict[str, Any]:
        config = {**super().get_config(), "k": self.k}
        if self.from_sorted_ids:
            config["from_sorted_ids"] = True
        return config

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        if _rank(y_true) == _rank(y_pred) and y_true.shape[-1] == 1:
            y_true = B.squeeze(y_true, -1)
        if self.from_sorted_ids:
            first = y_pred[:, :self.k]
            hits = B.equal(B.expand_dims(B.cast(y_true, _dtype(y_pred)),
                                         1), first)
            return B.cast(B.greater(B.sum(B.cast(hits, "float32"), -1),
                                    0.0), "float32")
        return _in_top_k(B, B.cast(y_true, "int64"),
                         B.cast(y_pred, "float32"), self.k)


def _pair(B: Any, y_true: Any, y_pred: Any) -> tuple:
    """y_true cast to y_pred's dtype, both at one rank (Keras's
    squeeze_or_expand_to_same_rank)."""
    p = y_pred if _dtype(y_pred) in ("float32", "float64") else \
        B.cast(y_pred, "float32")
    return _same_rank(B, B.cast(y_true, _dtype(p)), p)


class MeanSquaredError(_MeanOf):
    """Keras's MeanSquaredError: the mean of (y_true - y_pred)^2."""

    def __init__(self, name: str = "mean_squared_error",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, dtype)

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        y, p = _pair(B, y_true, y_pred)
        return (y - p) * (y - p)


class MeanAbsoluteError(_MeanOf):
    """Keras's MeanAbsoluteError: the mean of |y_true - y_pred|."""

    def __init__(self, name: str = "mean_absolute_error",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, dtype)

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        y, p = _pair(B, y_true, y_pred)
        return B.unary("abs", y - p)


class RootMeanSquaredError(MeanSquaredError):
    """Keras's RootMeanSquaredError: the square root of the mean of
    (y_true - y_pred)^2 over everything added."""

    def __init__(self, name: str = "root_mean_squared_error",
                 dtype: Optional[str] = None) -> None:
        super().__init__(name, dtype)

    def result(self) -> np.float64:
        return np.float64(np.sqrt(super().result()))


class BinaryCrossentropy(_MeanOf):
    """Keras's BinaryCrossentropy metric: the mean binary crossentropy,
    y_true smoothed to y * (1 - label_smoothing) + label_smoothing / 2;
    y_pred clipped to [1e-7, 1 - 1e-7], or logits (from_logits)."""

    def __init__(self, name: str = "binary_crossentropy",
                 dtype: Optional[str] = None, from_logits: bool = False,
                 label_smoothing: float = 0) -> None:
        ls = _number("label_smoothing", label_smoothing)
        if not 0 <= ls <= 1:
            raise ValueError(f"label_smoothing: expected a number in "
                             f"[0, 1], got {label_smoothing!r}")
        self.from_logits, self.label_smoothing = bool(from_logits), \
            label_smoothing
        super().__init__(name, dtype)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "from_logits": self.from_logits,
                "label_smoothing": self.label_smoothing}

    def _matches(self, B: Any, y_true: Any, y_pred: Any) -> Any:
        y, p = _pair(B, y_true, y_pred)
        ls = float(self.label_smoothing)
        if ls:
            y = y * (1.0 - ls) + 0.5 * ls
        if self.from_logits:  # y softplus(-z) + (1 - y) softplus(z)
            sp = B.maximum(-p, 0.0) + B.unary("log", 1.0 + B.unary(
                "exp", -B.unary("abs", p)))
            return y * sp + (1.0 - y) * (sp + p)
        p = B.clip(p, EPSILON, 1.0 - EPSILON)
        return -(y * B.unary("log", p) +
                 (1.0 - y) * B.unary("log", 1.0 - p))


# The metric objects model.compile computes in C (model/metric_spec.c).
_COMPILED = (AUC, Precision, Recall, TopKCategoricalAccuracy,
             SparseTopKCategoricalAccuracy, MeanSquaredError,
             RootMeanSquaredError, MeanAbsoluteError, BinaryCrossentropy,
             BinaryAccuracy, SparseCategoricalAccuracy, CategoricalAccuracy)


def compile_entry(m: Metric) -> Dict[str, Any]:
    """A metric object as compile's config carries it, Keras's
    serialization: {"class_name": ..., "config": get_config()}."""
    if type(m) not in _COMPILED:
        raise ValueError(f"metrics: {type(m).__name__} ({m.name}) cannot be "
                         f"compiled: "
                         + ("it takes values, not (y_true, y_pred): update "
                            "it in a @pasco.function step" if isinstance(
                                m, Metric) and type(m).__name__ in (
                                    "Mean", "Sum") else
                            "compile computes " + ", ".join(
                                c.__name__ for c in _COMPILED)))
    if isinstance(m, _PrecisionRecall) and len(m.thresholds) != 1:
        raise ValueError(f"metrics: {m.name}: a compiled metric logs one "
                         f"number: give one threshold ({len(m.thresholds)} "
                         f"given; a @pasco.function step takes several)")
    return {"class_name": type(m).__name__, "config": m.get_config()}


def serialize(m: Metric) -> Dict[str, Any]:
    """Keras's serialize: {"module", "class_name", "config",
    "registered_name"} of a metric object."""
    if not isinstance(m, Metric):
        raise TypeError(f"serialize: expected a pasco.metrics object, got "
                        f"{m!r}")
    return {"module": "keras.metrics", "class_name": type(m).__name__,
            "config": m.get_config(), "registered_name": None}


def deserialize(config: Dict[str, Any]) -> Metric:
    """Keras's deserialize: the metric object of {"class_name": ...,
    "config": {...}} (as serialize, model.compile's config or Keras
    write it)."""
    classes = {c.__name__: c for c in _COMPILED + (Mean, Sum, Accuracy)}
    cls = config.get("class_name") if isinstance(config, dict) else None
    if cls not in classes:
        raise ValueError(f"deserialize: unknown metric class {cls!r} "
                         f"(expected one of {', '.join(sorted(classes))})")
    return classes[cls].from_config(dict(config.get("config") or {}))
