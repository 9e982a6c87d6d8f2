"""The zoo's models (examples/zoo/) written again in PyTorch, for
tests/python/zoo_torch.py: the same layers, names and initial weights
(read from the ps, and the dynamic tables' rows computed as the ps makes
them), trained on the same rows.

A dynamic table's row for key k is made on the ps at the key's first
lookup from its initializer (ps/initializer_fill.c): element j is
value_at(init, mix64(k ^ mix64(table_seed ^ 0x6a09e667f3bcc909)) + j),
where table_seed is mix64 of the table name's key (pasci_dyn_name_seed)
and a uniform initializer's value_at is minval + (maxval - minval) *
unit(seed, g), unit the top 53 bits of mix64(seed ^ mix64(g)). The
models give every dynamic Embedding a seeded RandomUniform, so the rows
are known here without reading them back (a dynamic table has no whole
value to read): a wrong guess shows as a first loss that differs.
"""

from __future__ import annotations

import ctypes
import os
from typing import Dict, List

import numpy as np
import torch


def _mix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


class Hasher:
    """pasco_hash_key from the library under test (XXH64, seed 0)."""

    def __init__(self, libpasco: str) -> None:
        self.lib = ctypes.CDLL(libpasco)
        self.lib.pasco_hash_key.restype = ctypes.c_int64
        self.lib.pasco_hash_key.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self.cache: Dict[str, int] = {}

    def key(self, s: str) -> int:
        k = self.cache.get(s)
        if k is None:
            b = s.encode()
            k = self.cache[s] = self.lib.pasco_hash_key(b, len(b))
        return k


def dynamic_rows(keys: np.ndarray, table: str, init: dict, dim: int,
                 hasher: Hasher) -> np.ndarray:
    """The rows a ps makes for keys (int64) of the dynamic table named
    table with a RandomUniform initializer."""
    if init["class_name"] != "RandomUniform":
        raise ValueError(f"{table}: only a seeded RandomUniform is known "
                         f"here, got {init}")
    c = init["config"]
    lo, hi, seed = float(c["minval"]), float(c["maxval"]), int(c["seed"])
    tseed = _mix64(np.array([hasher.key(table)], np.int64).view(np.uint64))
    tmix = _mix64(tseed ^ np.uint64(0x6A09E667F3BCC909))
    base = _mix64(keys.astype(np.int64).view(np.uint64) ^ tmix)
    with np.errstate(over="ignore"):
        g = base[:, None] + np.arange(dim, dtype=np.uint64)[None, :]
    z = _mix64(np.uint64(seed) ^ _mix64(g))
    u = ((z >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53
    return (lo + (hi - lo) * u).astype(np.float32)


class Tables(torch.nn.Module):
    """The dynamic tables: name -> an Embedding over the keys of its
    strings (every string of the data gets a row), and the rows' indices
    of each column of strings."""

    def __init__(self, meta: Dict[str, dict], strings: Dict[str, np.ndarray],
                 hasher: Hasher) -> None:
        super().__init__()
        self.emb = torch.nn.ModuleDict()
        self.index: Dict[str, np.ndarray] = {}
        for table, cols in strings.items():
            m = meta[table]
            vocab, inv = np.unique(cols, return_inverse=True)
            keys = np.array([hasher.key(s) for s in vocab], np.int64)
            rows = dynamic_rows(keys, table, m["initializer"], m["dim"],
                                hasher)
            e = torch.nn.Embedding(len(vocab), m["dim"], sparse=True)
            with torch.no_grad():
                e.weight.copy_(torch.from_numpy(rows))
            self.emb[table.replace("/", ":")] = e
            self.index[table] = inv.reshape(cols.shape)

    def lookup(self, table: str, rows: np.ndarray) -> torch.Tensor:
        """[batch, ...,  dim] rows of table for the data's rows."""
        ids = torch.from_numpy(self.index[table][rows])
        return self.emb[table.replace("/", ":")](ids)


class Dense(torch.nn.Module):
    def __init__(self, w: Dict[str, np.ndarray], name: str,
                 act: str = "linear") -> None:
        super().__init__()
        self.kernel = torch.nn.Parameter(torch.from_numpy(
            w[f"{name}/kernel"].copy()))
        self.bias = torch.nn.Parameter(torch.from_numpy(
            w[f"{name}/bias"].copy()))
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.kernel + self.bias
        return {"linear": y, "relu": torch.relu(y), "tanh": torch.tanh(y),
                "sigmoid": torch.sigmoid(y)}[self.act]


def mlp(w: Dict[str, np.ndarray], specs: List[tuple]) -> torch.nn.Sequential:
    return torch.nn.Sequential(*[Dense(w, n, a) for n, a in specs])


class ClickModel(torch.nn.Module):
    """Base of the click models: field embeddings emb_f0..7 [b, k]."""

    def __init__(self, tables: Tables) -> None:
        super().__init__()
        self.tables = tables

    def fields(self, rows: np.ndarray) -> List[torch.Tensor]:
        return [self.tables.lookup(f"emb_f{i}/embeddings", rows)[:, 0]
                for i in range(8)]

    def linear(self, rows: np.ndarray) -> torch.Tensor:
        return self.tables.lookup("linear/embeddings", rows).sum(1)[:, 0:1]


class Linear(ClickModel):
    def __init__(self, tables: Tables, w: Dict[str, np.ndarray]) -> None:
        super().__init__(tables)
        self.out = Dense(w, "out", "sigmoid")

    def forward(self, rows: np.ndarray, dense: torch.Tensor) -> torch.Tensor:
        return self.out(torch.cat([self.linear(rows), dense], 1))


class DeepFM(ClickModel):
    def __init__(self, tables: Tables, w: Dict[str, np.ndarray]) -> None:
        super().__init__(tables)
        self.deep = mlp(w, [("deep_1", "relu"), ("deep_2", "relu"),
                            ("deep_out", "linear")])
        self.out = Dense(w, "out", "sigmoid")

    def forward(self, rows: np.ndarray, dense: torch.Tensor) -> torch.Tensor:
        e = self.fields(rows)
        v = torch.stack(e, 1)
        s = v.sum(1)
        fm = 0.5 * (s * s - (v * v).sum(1)).sum(1, keepdim=True)
        deep = self.deep(torch.cat(e + [dense], 1))
        return self.out(torch.cat([self.linear(rows), fm, deep], 1))


class DCNv2(ClickModel):
    def __init__(self, tables: Tables, w: Dict[str, np.ndarray]) -> None:
        super().__init__(tables)
        self.cross = torch.nn.ParameterList()
        for n in ("cross_1", "cross_2"):
            self.cross.append(torch.nn.Parameter(torch.from_numpy(
                w[f"{n}/kernel"].copy())))
            self.cross.append(torch.nn.Parameter(torch.from_numpy(
                w[f"{n}/bias"].copy())))
        self.deep = mlp(w, [("deep_1", "relu"), ("deep_2", "relu")])
        self.out = Dense(w, "out", "sigmoid")

    def forward(self, rows: np.ndarray, dense: torch.Tensor) -> torch.Tensor:
        x0 = torch.cat(self.fields(rows) + [dense], 1)
        x = x0
        for k in range(0, len(self.cross), 2):
            x = x0 * (x @ self.cross[k] + self.cross[k + 1]) + x
        return self.out(torch.cat([x, self.deep(x0)], 1))


class DLRM(ClickModel):
    def __init__(self, tables: Tables, w: Dict[str, np.ndarray]) -> None:
        super().__init__(tables)
        self.bottom = mlp(w, [("bottom_1", "relu"), ("bottom_2", "linear")])
        self.top = mlp(w, [("top_1", "relu"), ("out", "sigmoid")])

    def forward(self, rows: np.ndarray, dense: torch.Tensor) -> torch.Tensor:
        b = self.bottom(dense)
        z = torch.stack([b] + self.fields(rows), 1)
        g = z @ z.transpose(1, 2)
        i, j = np.triu_indices(z.shape[1], 1)
        pairs = g[:, torch.from_numpy(i), torch.from_numpy(j)]
        return self.top(torch.cat([b, pairs], 1))


class TwoTower(torch.nn.Module):
    def __init__(self, tables: Tables, w: Dict[str, np.ndarray]) -> None:
        super().__init__()
        self.tables = tables
        self.user = mlp(w, [("user_1", "relu"), ("user_out", "linear")])
        self.item = mlp(w, [("item_1", "relu"), ("item_out", "linear")])

    def forward(self, rows: np.ndarray) -> torch.Tensor:
        t = self.tables.lookup
        u = self.user(torch.cat([t("emb_user/embeddings", rows)[:, 0],
                                 t("emb_user_group/embeddings", rows)[:, 0]],
                                1))
        v = self.item(torch.cat([t("emb_item/embeddings", rows)[:, 0],
                                 t("emb_item_category/embeddings",
                                   rows)[:, 0]], 1))
        return torch.cat([u, v], 1)


def bce(p: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Keras's binary cross-entropy of probabilities, as the library
    computes it (model/ops_loss.c): clipped to [1e-7, 1 - 1e-7], no
    gradient where clipped, the mean in float64."""
    q = torch.clamp(p.reshape(-1).double(), 1e-7, 1 - 1e-7)
    y = y.reshape(-1).double()
    return -(y * torch.log(q) + (1 - y) * torch.log(1 - q)).mean()


def in_batch_softmax(out: torch.Tensor) -> torch.Tensor:
    """The two-tower loss: each user's own item among the batch's."""
    half = out.shape[1] // 2
    logits = out[:, :half] @ out[:, half:].T
    labels = torch.arange(out.shape[0])
    return torch.nn.functional.cross_entropy(logits.double(), labels)


MODELS = {"linear": ("clicks", Linear), "deepfm": ("clicks", DeepFM),
          "dcn_v2": ("clicks", DCNv2), "dlrm": ("clicks", DLRM),
          "two_tower": ("pairs", TwoTower)}


class Setup:
    """One model's PyTorch twin over one data directory."""

    def __init__(self, name: str, data_dir: str, saved: dict,
                 hasher: Hasher) -> None:
        import json
        kind, cls = MODELS[name]
        self.kind = kind
        d = np.load(os.path.join(data_dir, kind, "data.npz"))
        self.train_rows = int(d["train_rows"])
        meta = json.loads(str(saved["meta"]))["dynamic"]
        w = {k[2:]: saved[k] for k in saved.files if k.startswith("w:")}
        if kind == "clicks":
            strings = {f"emb_f{i}/embeddings": d["cat"][:, i:i + 1]
                       for i in range(8)}
            strings["linear/embeddings"] = d["cat"]
            self.dense = torch.from_numpy(d["dense"])
            self.label = torch.from_numpy(d["label"].astype(np.float32))
            self.y = d["label"]
        else:
            strings = {f"emb_{k}/embeddings": d[k][:, None]
                       for k in ("user", "user_group", "item",
                                 "item_category")}
            self.items = d["item"]
        strings = {k: v for k, v in strings.items() if k in meta}
        self.tables = Tables(meta, strings, hasher)
        self.model = cls(self.tables, w)

    def forward(self, rows: np.ndarray) -> torch.Tensor:
        if self.kind == "clicks":
            return self.model(rows, self.dense[rows])
        return self.model(rows)

    def loss(self, rows: np.ndarray) -> torch.Tensor:
        out = self.forward(rows)
        if self.kind == "clicks":
            return bce(out, self.label[rows])
        return in_batch_softmax(out)

    def sgd_losses(self, steps: int, batch: int, lr: float) -> np.ndarray:
        """Each step's loss (before its update) of plain SGD on the
        training rows in order."""
        opt = torch.optim.SGD(self.model.parameters(), lr=lr)
        out = []
        for s in range(steps):
            rows = np.arange(s * batch, (s + 1) * batch) % self.train_rows
            opt.zero_grad()
            loss = self.loss(rows)
            loss.backward()
            opt.step()
            out.append(float(loss))
        return np.array(out)

    def train(self, steps: int, batch: int, lr: float,
              seed: int = 0) -> None:
        """Adam (Keras's epsilon; the tables' rows lazily, as the ps
        updates a dynamic table's rows) on shuffled training rows."""
        dense = [p for n, p in self.model.named_parameters()
                 if not n.startswith("tables.")]
        opts = [torch.optim.Adam(dense, lr=lr, eps=1e-7),
                torch.optim.SparseAdam(list(self.tables.parameters()),
                                       lr=lr, eps=1e-7)]
        rng = np.random.default_rng(seed)
        order = np.concatenate([rng.permutation(self.train_rows)
                                for _ in range(steps * batch //
                                               self.train_rows + 1)])
        for s in range(steps):
            rows = order[s * batch:(s + 1) * batch]
            for o in opts:
                o.zero_grad()
            self.loss(rows).backward()
            for o in opts:
                o.step()

    def predict(self) -> np.ndarray:
        with torch.no_grad():
            rows = np.arange(self.train_rows, len(self.y if self.kind ==
                                                  "clicks" else self.items))
            return self.forward(rows).numpy()
