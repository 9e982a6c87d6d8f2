"""Keras 3's preprocessing layers that run inside the model on the worker:
Hashing, StringLookup, IntegerLookup, CategoryEncoding, Discretization and
HashedCrossing (the C kinds of model/layers/, include/pasco/layers.h
"Preprocessing"), re-exported by :mod:`pasco.layers`.

Strings travel as their 64-bit fingerprints (XXH64 of the UTF-8 bytes,
pasco_hash_key): a string input (``pasco.Input(shape=(1,),
dtype="string")``, read from a ``pasco.data.Feature("string")`` of a CSV
or TFRecord dataset) holds fingerprints, and StringLookup matches its
vocabulary by fingerprint, giving exactly Keras's indices (the mask token
first if set, then the OOV indices, then the vocabulary in order). A
vocabulary with a token twice, or two tokens of one fingerprint, is
refused when the model is made. Hashing and HashedCrossing hash the
fingerprints: deterministic and uniform, but not Keras's FarmHash bins.

::

    city = pasco.Input(shape=(1,), name="city", dtype="string")
    ids = pasco.layers.StringLookup(vocabulary=["paris", "rome"])(city)
    x = pasco.layers.Embedding(3, 8)(ids)       # OOV 0, paris 1, rome 2

``adapt`` (StringLookup, IntegerLookup, Discretization) runs here, on the
chief, at once, as Keras's does: the vocabulary (by frequency, ties by
the token, both descending) or the bin boundaries go into the layer's
config, which the workers receive.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Union

from .layers import KerasTensor, Layer, _positive

__all__ = ["Hashing", "StringLookup", "IntegerLookup", "CategoryEncoding",
           "Discretization", "HashedCrossing"]

_MODES = ("int", "one_hot", "multi_hot", "count")


def _mode(layer: str, v: Any, allowed: Sequence[str] = _MODES) -> str:
    if v not in allowed:
        raise ValueError(f"{layer}: output_mode: expected one of "
                         f"{', '.join(repr(m) for m in allowed)}, got {v!r}")
    return v


def _only_default(layer: str, arg: str, v: Any, default: Any) -> None:
    if v != default or type(v) is not type(default):
        raise ValueError(f"{layer}: {arg}={v!r} is not supported (only "
                         f"Keras's default, {default!r})")


def _int_or_none(layer: str, arg: str, v: Any) -> Optional[int]:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"{layer}: {arg}: expected None or an integer, got "
                         f"{v!r}")
    return v


def _values(layer: str, data: Any, input_name: Optional[str]) -> List[Any]:
    """The values adapt reads: an array-like (any shape, flattened), or a
    pasco.data dataset (csv or tfrecord) read here whole: its column or
    feature of the layer's input's name, or its one feature."""
    from .data import Dataset, read_column

    if isinstance(data, Dataset):
        feats = list((data.spec.get("features") or {}).keys())
        col = input_name if input_name is not None else (
            feats[0] if len(feats) == 1 else None)
        if col is None:
            raise ValueError(f"{layer}: adapt: call the layer on its input "
                             f"first (its name is the column to read), or "
                             f"give a dataset of one feature")
        try:
            out = read_column(data, col)
        except ValueError as e:
            raise ValueError(f"{layer}: adapt: {e}") from None
        if not out:
            raise ValueError(f"{layer}: adapt: no values of {col!r} in "
                             f"{data.spec['files']}")
        return out
    import numpy as np

    a = np.asarray(data)
    if a.size == 0:
        raise ValueError(f"{layer}: adapt: no data")
    return [v.item() if hasattr(v, "item") else v for v in a.reshape(-1)]


class _Preprocessing(Layer):
    """What the preprocessing layers share: their inputs' names (adapt
    reads that column of a csv dataset) and their output width."""

    _input_names: List[str] = []
    _preprocessing = True  # a Sequential model of one is a chain

    def __call__(self, inputs: Any) -> KerasTensor:
        from ._dataset_map import call_layer, in_map
        if in_map(inputs):  # in a Dataset.map: a node the workers run
            return call_layer(self, inputs)
        out = super().__call__(inputs)
        self._input_names = [t.name for t in out.inbound]
        return out

    def _depth(self) -> int:
        raise NotImplementedError

    def _output_width(self, widths: List[int]) -> int:
        mode = getattr(self, "output_mode", "int")
        if mode == "one_hot" and widths[0] != 1:
            raise ValueError(f"{self.name}: output_mode 'one_hot' takes one "
                             f"value per example, got width {widths[0]} "
                             f"(use 'multi_hot')")
        return widths[0] if mode == "int" else self._depth()


class Hashing(_Preprocessing):
    """Hashing(num_bins, mask_value=None, salt=None, output_mode="int"):
    a bin of [0, num_bins) for each value: strings by their fingerprint,
    integers by their decimal text's fingerprint (floats cast to integers
    first), as unsigned modulo num_bins, or XXH64 of the fingerprint
    seeded with ``salt``. With mask_value, the mask goes to bin 0 and the
    others into [1, num_bins). Deterministic and uniform, but not Keras's
    FarmHash bins. output_mode "one_hot", "multi_hot" or "count" encodes
    the bins as float32 [batch, num_bins]."""

    class_name = "Hashing"

    def __init__(self, num_bins: int, mask_value: Union[str, int, None] = None,
                 salt: Optional[int] = None, output_mode: str = "int",
                 sparse: bool = False, name: Optional[str] = None) -> None:
        super().__init__(name)
        if not isinstance(num_bins, int) or isinstance(num_bins, bool) or \
                num_bins < 1:
            raise ValueError(f"{self.name}: num_bins must be >= 1, got "
                             f"{num_bins!r}")
        if mask_value is not None and (isinstance(mask_value, bool) or
                                       not isinstance(mask_value, (str, int))):
            raise ValueError(f"{self.name}: mask_value: expected None, a "
                             f"string or an integer, got {mask_value!r}")
        if salt is not None and (isinstance(salt, bool) or
                                 not isinstance(salt, int) or
                                 not 0 <= salt <= 2 ** 53):
            raise ValueError(f"{self.name}: salt: expected None or an "
                             f"integer in [0, 2**53], got {salt!r}")
        _only_default(self.name, "sparse", sparse, False)
        self.num_bins, self.mask_value, self.salt = num_bins, mask_value, salt
        self.output_mode = _mode(self.name, output_mode)
        self.sparse = False

    def _depth(self) -> int:
        return self.num_bins

    def _config(self) -> Dict[str, Any]:
        return {"num_bins": self.num_bins, "mask_value": self.mask_value,
                "salt": self.salt, "output_mode": self.output_mode,
                "sparse": False}


class _Lookup(_Preprocessing):
    """StringLookup's and IntegerLookup's common part."""

    _strings = True

    def _setup(self, max_tokens: Optional[int], num_oov_indices: int,
               mask_token: Any, oov_token: Any, vocabulary: Any,
               idf_weights: Any, invert: bool, output_mode: str,
               pad_to_max_tokens: bool, sparse: bool, salt: Any) -> None:
        n = self.name
        self.max_tokens = _int_or_none(n, "max_tokens", max_tokens)
        if self.max_tokens is not None and self.max_tokens <= 1:
            raise ValueError(f"{n}: max_tokens must be None or greater than "
                             f"1, got {max_tokens!r}")
        if isinstance(num_oov_indices, bool) or \
                not isinstance(num_oov_indices, int) or num_oov_indices < 0:
            raise ValueError(f"{n}: num_oov_indices must be an integer >= 0, "
                             f"got {num_oov_indices!r}")
        self.num_oov_indices = num_oov_indices
        kind = str if self._strings else int
        what = "a string" if self._strings else "an integer"
        for arg, v in (("mask_token", mask_token), ("oov_token", oov_token)):
            if v is not None and (isinstance(v, bool) or
                                  not isinstance(v, kind)):
                raise ValueError(f"{n}: {arg}: expected None or {what}, "
                                 f"got {v!r}")
        self.mask_token, self.oov_token = mask_token, oov_token
        _only_default(n, "sparse", sparse, False)
        _only_default(n, "salt", salt, None)
        self.invert = bool(invert)
        self.output_mode = _mode(
            n, "tf_idf" if output_mode == "tf-idf" else output_mode,
            _MODES + ("tf_idf",))
        if idf_weights is not None and self.output_mode != "tf_idf":
            raise ValueError(f"{n}: idf_weights are only for output_mode "
                             f"'tf_idf', got {self.output_mode!r}")
        if vocabulary is not None and self.output_mode == "tf_idf" and \
                idf_weights is None:
            raise ValueError(f"{n}: output_mode 'tf_idf' with a vocabulary "
                             f"needs idf_weights, one per token (or adapt "
                             f"the layer)")
        if self.invert and self.output_mode != "int":
            raise ValueError(f"{n}: invert=True needs output_mode 'int', got "
                             f"{self.output_mode!r}")
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        if self.pad_to_max_tokens and self.max_tokens is None:
            raise ValueError(f"{n}: pad_to_max_tokens needs max_tokens")
        self.vocabulary: Optional[List[Any]] = None
        self.idf_weights: Optional[List[float]] = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    def __call__(self, inputs: Any) -> Any:
        """On a model input or layer output: the layer in the model. On
        values (a list or array of tokens, on the chief): Keras's eager
        call, the indices as int64 of their shape (output_mode "int")."""
        from ._dataset_map import in_map
        ins = inputs if isinstance(inputs, (list, tuple)) else [inputs]
        if in_map(inputs) or (ins and all(isinstance(t, KerasTensor)
                                          for t in ins)):
            return super().__call__(inputs)
        return self._lookup_now(inputs)

    def _lookup_now(self, data: Any) -> Any:
        import numpy as np

        n = self.name
        if self.vocabulary is None:
            raise ValueError(f"{n}: no vocabulary: give vocabulary (a list "
                             f"or a file) or adapt the layer")
        if self.output_mode != "int" or self.invert:
            raise ValueError(f"{n}: called on values, the layer gives "
                             f"indices (output_mode 'int', not inverted); "
                             f"in a model it gives every mode")
        index = {t: self._token_start() + i
                 for i, t in enumerate(self.vocabulary)}
        oov = int(self.mask_token is not None)

        def one(v: Any) -> int:
            v = v.decode() if isinstance(v, bytes) else v
            v = str(v) if self._strings else int(v)
            if self.mask_token is not None and v == self.mask_token:
                return 0
            if v in index:
                return index[v]
            if self.num_oov_indices == 0:
                raise ValueError(f"{n}: {v!r} is not in the vocabulary and "
                                 f"num_oov_indices is 0")
            if self.num_oov_indices == 1:
                return oov
            if not self._strings:
                return oov + v % self.num_oov_indices  # floormod
            raise ValueError(f"{n}: {v!r} is out of the vocabulary and "
                             f"has {self.num_oov_indices} OOV indices, "
                             f"chosen by its fingerprint: look it up in a "
                             f"model")

        a = np.asarray(data, dtype=object)
        out = np.zeros(a.shape, dtype=np.int64)
        for i, v in np.ndenumerate(a):
            out[i] = one(v)
        return out

    def _token_start(self) -> int:
        mask = self.mask_token is not None and self.output_mode == "int"
        return int(mask) + self.num_oov_indices

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Keras's set_vocabulary: a list of tokens, or a file path (one
        token per line), read here; no duplicates, no mask or OOV token,
        at most max_tokens indices in all. idf_weights (output_mode
        'tf_idf' only, where it is required): one number per token."""
        n = self.name
        if (idf_weights is None) != (self.output_mode != "tf_idf"):
            raise ValueError(f"{n}: idf_weights must be given with "
                             f"output_mode 'tf_idf', and only then "
                             f"(output_mode is {self.output_mode!r})")
        if isinstance(vocabulary, (str, os.PathLike)):
            with open(vocabulary, encoding="utf-8") as f:
                lines = f.read().splitlines()
            while lines and lines[-1] == "":
                lines.pop()
            vocabulary = lines if self._strings else [int(t) for t in lines]
        if hasattr(vocabulary, "tolist"):
            vocabulary = vocabulary.tolist()
        vocab = list(vocabulary)
        kind = str if self._strings else int
        what = "a string" if self._strings else "an integer"
        for i, t in enumerate(vocab):
            if isinstance(t, bool) or not isinstance(t, kind):
                raise ValueError(f"{n}: vocabulary[{i}] is {t!r}, not "
                                 f"{what}")
        seen: Dict[Any, int] = {}
        for i, t in enumerate(vocab):
            if t in seen:
                raise ValueError(f"{n}: vocabulary: {t!r} at index {i} "
                                 f"repeats {t!r} at index {seen[t]}: a "
                                 f"vocabulary holds each token once")
            seen[t] = i
        for arg, t in (("mask", self.mask_token), ("OOV", self.oov_token)):
            if t is not None and t in seen and (arg == "mask" or self.invert):
                raise ValueError(f"{n}: vocabulary holds the {arg} token "
                                 f"{t!r} at index {seen[t]}: leave the mask "
                                 f"and OOV tokens out of the vocabulary")
        if self.max_tokens is not None and \
                len(vocab) + self._token_start() > self.max_tokens:
            raise ValueError(f"{n}: a vocabulary of {len(vocab)} tokens and "
                             f"{self._token_start()} special indices is "
                             f"larger than max_tokens {self.max_tokens}")
        if idf_weights is not None:
            if hasattr(idf_weights, "tolist"):
                idf_weights = idf_weights.tolist()
            idf = list(idf_weights)
            if len(idf) != len(vocab) or any(
                    isinstance(w, bool) or not isinstance(w, (int, float))
                    for w in idf):
                raise ValueError(f"{n}: idf_weights must be {len(vocab)} "
                                 f"numbers, one per vocabulary token, got "
                                 f"{idf_weights!r}")
            self.idf_weights = [float(w) for w in idf]
        self.vocabulary = vocab

    def adapt(self, data: Any, steps: Optional[int] = None) -> None:
        """Keras's adapt, here on the chief: the vocabulary of data (a
        list or array of tokens, any shape; or a pasco.data csv dataset,
        whose column of this layer's input is read whole), most frequent
        first, ties by the token, descending (Keras's order), without the
        mask and OOV tokens, cut to max_tokens. In output_mode 'tf_idf'
        it also computes Keras's idf weights: log(1 + documents / (1 +
        the documents holding the token)), a document being a row of a
        2-D array, the whole of a 1-D one, or one value of a csv
        column."""
        docs = self._documents(data)

        def token(v: Any) -> Any:
            if not self._strings:
                return int(v)
            return v.decode() if isinstance(v, bytes) else str(v)

        docs = [[token(v) for v in d] for d in docs]
        counts = Counter(v for d in docs for v in d)
        for t in (self.mask_token, self.oov_token):
            counts.pop(t, None)
        order = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]),
                       reverse=True)
        if self.max_tokens is not None:
            order = order[:max(self.max_tokens - self._token_start(), 0)]
        vocab = [t for t, _ in order]
        idf = None
        if self.output_mode == "tf_idf":
            import math
            df = Counter(v for d in docs for v in set(d))
            idf = [math.log(1 + len(docs) / (1 + df[t])) for t in vocab]
        self.vocabulary = None
        self.set_vocabulary(vocab, idf)

    def _documents(self, data: Any) -> List[List[Any]]:
        """adapt's data as documents (tf_idf counts in how many each
        token is): a csv column's values one each, an array's rows."""
        from .data import Dataset
        name = (self._input_names or [None])[0]
        if isinstance(data, Dataset):
            if self.output_mode == "tf_idf" and \
                    data.spec.get("format") != "csv":
                raise ValueError(f"{self.name}: adapt in output_mode "
                                 f"'tf_idf' reads documents from a csv "
                                 f"column or an array, not a "
                                 f"{data.spec.get('format')} dataset")
            return [[v] for v in _values(self.name, data, name)]
        import numpy as np
        a = np.asarray(data, dtype=object)
        values = _values(self.name, data, name)
        if a.ndim <= 1:
            return [values]  # Keras's: a 1-D tensor is one document
        per = len(values) // a.shape[0]
        return [values[i * per:(i + 1) * per] for i in range(a.shape[0])]

    def vocabulary_size(self) -> int:
        """The indices in all, mask and OOV included."""
        return self._token_start() + len(self.vocabulary or [])

    def get_vocabulary(self, include_special_tokens: bool = True) -> List[Any]:
        """The token of each index (Keras's)."""
        vocab = list(self.vocabulary or [])
        if not include_special_tokens:
            return vocab
        head = [self.mask_token] if self.mask_token is not None and \
            self.output_mode == "int" else []
        return head + [self.oov_token] * self.num_oov_indices + vocab

    def _depth(self) -> int:
        if self.pad_to_max_tokens:
            return int(self.max_tokens)  # type: ignore[arg-type]
        return self.vocabulary_size()

    def _json_layer(self, widths: List[int], dtypes: List[str]) -> Any:
        if self.vocabulary is None:
            raise ValueError(f"{self.name}: no vocabulary: give vocabulary "
                             f"(a list or a file) or adapt the layer")
        return super()._json_layer(widths, dtypes)

    def _config(self) -> Dict[str, Any]:
        return {"max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices,
                "mask_token": self.mask_token, "oov_token": self.oov_token,
                "vocabulary": self.vocabulary,
                "idf_weights": self.idf_weights,
                "invert": self.invert, "output_mode": self.output_mode,
                "pad_to_max_tokens": self.pad_to_max_tokens,
                "sparse": False, "salt": None}


class StringLookup(_Lookup):
    """StringLookup(max_tokens=None, num_oov_indices=1, mask_token=None,
    oov_token="[UNK]", vocabulary=None, idf_weights=None, invert=False,
    output_mode="int", ...): strings to Keras's indices: the mask token's
    0 if set, then num_oov_indices OOV indices, then the vocabulary (a
    list or a file of one token per line) in order. An OOV string goes to
    OOV index fingerprint % num_oov_indices (not Keras's FarmHash bucket
    when there are several). Its input is a string input (dtype
    "string"). invert=True maps indices back to the tokens' fingerprints.
    output_mode "one_hot", "multi_hot", "count", "tf_idf": float32
    [batch, vocabulary_size()]; "tf_idf" is "count" times each index's
    idf weight (idf_weights, one per vocabulary token, required with a
    vocabulary, computed by adapt as Keras's log(1 + documents / (1 +
    documents holding the token)); the OOV indices get their mean).
    sparse and a salt are not supported; encoding is "utf-8"."""

    class_name = "StringLookup"
    _strings = True

    def __init__(self, max_tokens: Optional[int] = None,
                 num_oov_indices: int = 1, mask_token: Optional[str] = None,
                 oov_token: str = "[UNK]", vocabulary: Any = None,
                 idf_weights: Any = None, invert: bool = False,
                 output_mode: str = "int", pad_to_max_tokens: bool = False,
                 sparse: bool = False, encoding: str = "utf-8",
                 name: Optional[str] = None, salt: Any = None) -> None:
        super().__init__(name)
        _only_default(self.name, "encoding", encoding, "utf-8")
        self._setup(max_tokens, num_oov_indices, mask_token, oov_token,
                    vocabulary, idf_weights, invert, output_mode,
                    pad_to_max_tokens, sparse, salt)

    def _config(self) -> Dict[str, Any]:
        return {**super()._config(), "encoding": "utf-8"}


class IntegerLookup(_Lookup):
    """IntegerLookup(max_tokens=None, num_oov_indices=1, mask_token=None,
    oov_token=-1, vocabulary=None, vocabulary_dtype="int64", ...):
    integers to Keras's indices (the layout of StringLookup); an OOV value
    goes to OOV index value floormod num_oov_indices (Keras's "floormod").
    invert=True maps indices back to the values. output_mode and
    idf_weights as StringLookup's."""

    class_name = "IntegerLookup"
    _strings = False

    def __init__(self, max_tokens: Optional[int] = None,
                 num_oov_indices: int = 1, mask_token: Optional[int] = None,
                 oov_token: int = -1, vocabulary: Any = None,
                 vocabulary_dtype: str = "int64", idf_weights: Any = None,
                 invert: bool = False, output_mode: str = "int",
                 sparse: bool = False, pad_to_max_tokens: bool = False,
                 oov_method: str = "floormod", salt: Any = None,
                 name: Optional[str] = None) -> None:
        super().__init__(name)
        _only_default(self.name, "vocabulary_dtype", vocabulary_dtype,
                      "int64")
        _only_default(self.name, "oov_method", oov_method, "floormod")
        self._setup(max_tokens, num_oov_indices, mask_token, oov_token,
                    vocabulary, idf_weights, invert, output_mode,
                    pad_to_max_tokens, sparse, salt)

    def _config(self) -> Dict[str, Any]:
        return {**super()._config(), "vocabulary_dtype": "int64",
                "oov_method": "floormod"}


class CategoryEncoding(_Preprocessing):
    """CategoryEncoding(num_tokens=None, output_mode="multi_hot"):
    integers in [0, num_tokens) into float32 [batch, num_tokens]:
    "one_hot" (one value per example), "multi_hot" or "count". A value
    outside fails the step naming the layer and the value."""

    class_name = "CategoryEncoding"

    def __init__(self, num_tokens: Optional[int] = None,
                 output_mode: str = "multi_hot", sparse: bool = False,
                 name: Optional[str] = None) -> None:
        super().__init__(name)
        if num_tokens is None or isinstance(num_tokens, bool) or \
                not isinstance(num_tokens, int) or num_tokens < 1:
            raise ValueError(f"{self.name}: num_tokens must be an integer "
                             f">= 1, got {num_tokens!r}")
        _only_default(self.name, "sparse", sparse, False)
        self.num_tokens = num_tokens
        self.output_mode = _mode(self.name, output_mode, _MODES[1:])

    def _depth(self) -> int:
        return self.num_tokens

    def _config(self) -> Dict[str, Any]:
        return {"num_tokens": self.num_tokens,
                "output_mode": self.output_mode, "sparse": False}


def _summarize(values: Any, epsilon: float) -> Any:
    """Keras's discretization summary of values (keras/src/layers/
    preprocessing/discretization.py: summarize)."""
    import numpy as np

    values = np.sort(np.reshape(values, [-1]))
    step = max(np.size(values) / (1.0 / epsilon), 1)
    bounds = values[int(step - 1)::int(step)]
    return np.stack([bounds, np.ones_like(bounds) * step])


def _compress(summary: Any, epsilon: float) -> Any:
    """Keras's compress_summary: bins interpolated from the cumulative
    weights."""
    import numpy as np

    if summary.shape[1] * epsilon < 1:
        return summary
    percents = epsilon + np.arange(0.0, 1.0, epsilon)
    cum = summary[1].cumsum()
    cum_pct = cum / cum[-1]
    bins = np.interp(percents, cum_pct, summary[0])
    cum = np.interp(percents, cum_pct, cum)
    weights = cum - np.concatenate((np.array([0]), cum[:-1]))
    return np.stack((bins, weights)).astype("float32")


class Discretization(_Preprocessing):
    """Discretization(bin_boundaries=None, num_bins=None, epsilon=0.01,
    output_mode="int"): the bin of each value, right-open ([b[i-1], b[i])
    is bin i, numpy's digitize); adapt(data) finds num_bins - 1
    boundaries at the data's quantiles, within epsilon, as Keras does."""

    class_name = "Discretization"

    def __init__(self, bin_boundaries: Optional[Sequence[float]] = None,
                 num_bins: Optional[int] = None, epsilon: float = 0.01,
                 output_mode: str = "int", sparse: bool = False,
                 dtype: Any = None, name: Optional[str] = None) -> None:
        super().__init__(name)
        n = self.name
        if num_bins is not None and (isinstance(num_bins, bool) or
                                     not isinstance(num_bins, int) or
                                     num_bins < 0):
            raise ValueError(f"{n}: num_bins must be >= 0, got {num_bins!r}")
        if num_bins is not None and bin_boundaries is not None:
            raise ValueError(f"{n}: give num_bins or bin_boundaries, not "
                             f"both (num_bins={num_bins}, bin_boundaries="
                             f"{bin_boundaries})")
        if num_bins is None and bin_boundaries is None:
            raise ValueError(f"{n}: set either num_bins or bin_boundaries")
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) \
                or not 0 < epsilon <= 1:
            raise ValueError(f"{n}: epsilon must be in (0, 1], got "
                             f"{epsilon!r}")
        _only_default(n, "sparse", sparse, False)
        self.bin_boundaries: Optional[List[float]] = None
        if bin_boundaries is not None:
            b = [float(v) for v in bin_boundaries]
            if any(y < x for x, y in zip(b, b[1:])):
                raise ValueError(f"{n}: bin_boundaries must be ascending, "
                                 f"got {b}")
            self.bin_boundaries = b
        self.num_bins, self.epsilon = num_bins, float(epsilon)
        self.output_mode = _mode(n, output_mode)

    def adapt(self, data: Any, steps: Optional[int] = None) -> None:
        """Keras's adapt, here on the chief: num_bins - 1 boundaries at
        the quantiles of data (an array-like, or a pasco.data csv
        dataset's column of this layer's input), within epsilon."""
        import numpy as np

        if self.num_bins is None:
            raise ValueError(f"{self.name}: adapt needs num_bins (the layer "
                             f"was given bin_boundaries)")
        v = np.asarray([float(x) for x in _values(
            self.name, data, (self._input_names or [None])[0])], "float32")
        summary = _compress(_summarize(v, self.epsilon), self.epsilon)
        self.bin_boundaries = [float(b) for b in
                               _compress(summary, 1.0 / self.num_bins)[0, :-1]]

    def _depth(self) -> int:
        return len(self.bin_boundaries or []) + 1

    def _json_layer(self, widths: List[int], dtypes: List[str]) -> Any:
        if self.bin_boundaries is None:
            raise ValueError(f"{self.name}: no bin_boundaries: adapt the "
                             f"layer first")
        return super()._json_layer(widths, dtypes)

    def _config(self) -> Dict[str, Any]:
        return {"bin_boundaries": self.bin_boundaries,
                "num_bins": self.num_bins, "epsilon": self.epsilon,
                "output_mode": self.output_mode, "sparse": False}


class HashedCrossing(_Preprocessing):
    """HashedCrossing(num_bins, output_mode="int"): two inputs (strings
    or integers, one width) crossed element by element into a bin of
    [0, num_bins): XXH64 of the two keys (as Hashing takes them) modulo
    num_bins; not Keras's FarmHash bins. "one_hot": float32 [batch,
    num_bins]."""

    class_name = "HashedCrossing"

    def __init__(self, num_bins: int, output_mode: str = "int",
                 sparse: bool = False, name: Optional[str] = None,
                 dtype: Any = None) -> None:
        super().__init__(name)
        _positive(f"{self.name}: num_bins", num_bins)
        _only_default(self.name, "sparse", sparse, False)
        self.num_bins = num_bins
        self.output_mode = _mode(self.name, output_mode, ("int", "one_hot"))

    def __call__(self, inputs: Any) -> KerasTensor:
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"{self.name}: HashedCrossing is called on a "
                             f"list of two inputs, got {inputs!r}")
        return super().__call__(inputs)

    def _depth(self) -> int:
        return self.num_bins

    def _output_width(self, widths: List[int]) -> int:
        if len(widths) != 2 or widths[0] != widths[1]:
            raise ValueError(f"{self.name}: its two inputs must have one "
                             f"width, got {widths}")
        return super()._output_width(widths)

    def _config(self) -> Dict[str, Any]:
        return {"num_bins": self.num_bins, "output_mode": self.output_mode,
                "sparse": False}
