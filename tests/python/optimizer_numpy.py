"""Issue 33's optimizers, clipping and learning-rate schedules against
numpy implementations of Keras 3's formulas written here (keras/src/
optimizers: sgd.py, adam.py, adamw.py, nadam.py, base_optimizer.py's
_clip_gradients and _apply_weight_decay; schedules/
learning_rate_schedule.py), on a launched cluster (tests/python/
run_test.py, case optimizer_numpy):

    pasco launch --ps 2 --workers 1 -- python3 optimizer_numpy.py

Each configuration trains fresh variables: a Dense layer's kernel and bias
(dense gradients) and an Embedding table split over both ps (sparse
gradients, a duplicate id in most batches), all applied in one
apply_gradients of a traced step, so one global step per step, from 0.
After every step the variables read from the ps must equal the numpy
reference's to float32 rounding: the optimizer step at the global step,
with the learning rate of the schedule at the step before it (Keras's
schedule(optimizer.iterations)); a sparse apply moves only its rows and
their slots, except AdamW's weight decay, which Keras applies to the whole
variable on every apply (rows of both shards that the batch does not
reach decay too). The Python schedules'
values are checked against the numpy ones over 0..300 too.
Prints "optimizer_numpy: OK" or "optimizer_numpy: FAILED: why" (exit 1).
"""

import math
import tempfile

import numpy as np

import pasco
from pasco import ops
from pasco.optimizers import schedules

STEPS = 10
B, IN, OUT, V, K, D = 6, 5, 3, 9, 2, 4


# --- numpy references (Keras 3's definitions) ---

def np_schedule(cfg, step):
    """The learning rate of a serialized schedule (or a number) at step."""
    if not isinstance(cfg, dict):
        return cfg
    c, cls, t = cfg["config"], cfg["class_name"], np.float64(step)
    if cls == "ExponentialDecay":
        p = t / c["decay_steps"]
        p = np.floor(p) if c["staircase"] else p
        return c["initial_learning_rate"] * np.power(c["decay_rate"], p)
    if cls == "InverseTimeDecay":
        p = t / c["decay_steps"]
        p = np.floor(p) if c["staircase"] else p
        return c["initial_learning_rate"] / (1 + c["decay_rate"] * p)
    if cls == "PolynomialDecay":
        ds = np.float64(c["decay_steps"])
        if c["cycle"]:
            ds = ds * (1.0 if t == 0 else np.ceil(t / c["decay_steps"]))
        else:
            t = np.minimum(t, ds)
        return (c["initial_learning_rate"] - c["end_learning_rate"]) * \
            np.power(1 - t / ds, c["power"]) + c["end_learning_rate"]
    if cls == "CosineDecay":
        ds, lr0 = np.float64(c["decay_steps"]), c["initial_learning_rate"]

        def decayed(s, start):
            cos = 0.5 * (1.0 + np.cos(np.pi * (s / ds)))
            return start * ((1 - c["alpha"]) * cos + c["alpha"])
        if c["warmup_target"] is None:
            return decayed(np.minimum(t, ds), lr0)
        ws = np.float64(c["warmup_steps"])
        t = np.minimum(t, ds + ws)
        if t < ws:
            return (c["warmup_target"] - lr0) * (t / ws) + lr0
        return decayed(t - ws, c["warmup_target"])
    if cls == "PiecewiseConstantDecay":
        b, v = c["boundaries"], c["values"]
        out = (t <= b[0]) * v[0] + (t > b[-1]) * v[-1]
        for lo, hi, x in zip(b[:-1], b[1:], v[1:-1]):
            out += ((t > lo) & (t <= hi)) * x
        return out
    raise AssertionError(cls)


def np_clip(cfg, grads):
    """Keras's _clip_gradients over one apply's (dense) gradients."""
    if cfg.get("clipnorm"):
        c = cfg["clipnorm"]
        return [g * c / max(np.sqrt(np.sum(g * g)), c) for g in grads]
    if cfg.get("global_clipnorm"):
        c = cfg["global_clipnorm"]
        norm = np.sqrt(sum(np.sum(g * g) for g in grads))
        return [g * (c * min(1.0 / norm, 1.0 / c)) for g in grads]
    if cfg.get("clipvalue"):
        c = cfg["clipvalue"]
        return [np.clip(g, -c, c) for g in grads]
    return grads


class NpOptimizer:
    """One variable's Keras 3 update, in float64."""

    def __init__(self, cls, cfg, w):
        self.cls, self.cfg = cls, cfg
        self.m, self.v, self.vh = (np.zeros_like(w) for _ in range(3))
        self.u_product = 1.0

    def step(self, w, g, t, lr, rows=None):
        """w updated by g at global step t (1, 2, ...); rows: only those
        (a sparse apply) move, and only their slots; AdamW decays all of
        w first (base_optimizer.py's _apply_weight_decay)."""
        sel = slice(None) if rows is None else rows
        c = self.cfg
        w = w.copy()
        if self.cls == "AdamW":
            w = w - w * c["weight_decay"] * lr
        wr, g = w[sel], g[sel]
        m, v, vh = self.m[sel], self.v[sel], self.vh[sel]
        if self.cls == "SGD":
            if c["momentum"] == 0:
                wr = wr - lr * g
            else:
                m = c["momentum"] * m - lr * g
                wr = wr + (c["momentum"] * m - lr * g if c["nesterov"]
                           else m)
        elif self.cls in ("Adam", "AdamW"):
            b1, b2 = c["beta_1"], c["beta_2"]
            alpha = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
            m = m + (g - m) * (1 - b1)
            v = v + (g * g - v) * (1 - b2)
            use = v
            if c["amsgrad"]:
                vh = np.maximum(vh, v)
                use = vh
            wr = wr - alpha * m / (np.sqrt(use) + c["epsilon"])
        elif self.cls == "Nadam":
            b1, b2 = c["beta_1"], c["beta_2"]
            u_t = b1 * (1 - 0.5 * 0.96 ** t)
            u_t1 = b1 * (1 - 0.5 * 0.96 ** (t + 1))
            u_prod = self.u_product * u_t  # Keras's _u_product this step
            m = m + (g - m) * (1 - b1)
            v = v + (g * g - v) * (1 - b2)
            m_hat = u_t1 * m / (1 - u_prod * u_t1) + \
                (1 - u_t) * g / (1 - u_prod)
            v_hat = v / (1 - b2 ** t)
            wr = wr - m_hat * lr / (np.sqrt(v_hat) + c["epsilon"])
        else:
            raise AssertionError(self.cls)
        w[sel] = wr
        self.m[sel], self.v[sel], self.vh[sel] = m, v, vh
        return w

    def end_step(self, t):
        if self.cls == "Nadam":
            self.u_product *= self.cfg["beta_1"] * (1 - 0.5 * 0.96 ** t)


# --- the run ---

problems = []


def run(strategy, coordinator, n, name, opt, data):
    with strategy.scope():
        xi = pasco.Input(shape=(IN,), name="x")
        ii = pasco.Input(shape=(K,), name="ids", dtype="int64")
        dense = pasco.Model(inputs=xi, outputs=pasco.layers.Dense(
            OUT, name=f"dense_{n}")(xi), name=f"d{n}")
        table = pasco.Model(inputs=ii, outputs=pasco.layers.Embedding(
            V, D, combiner="sum", num_shards=2, name=f"table_{n}")(ii),
            name=f"t{n}")
    dense.build()
    table.build()
    variables = dense.trainable_variables + table.trainable_variables

    @pasco.function
    def train_step(iterator):
        f, _ = next(iterator)
        with pasco.GradientTape() as tape:
            loss = ops.add(
                ops.reduce_sum(ops.multiply(dense(f["x"]), f["c1"])),
                ops.reduce_sum(ops.multiply(table(f["ids"]), f["c2"])))
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return {"x": f["x"], "c1": f["c1"], "ids": f["ids"], "c2": f["c2"]}

    cfg = opt.get_config()["config"]
    ws = [np.asarray(w, np.float64) for w in
          dense.get_weights() + table.get_weights()]
    refs = [NpOptimizer(opt.class_name, cfg, w) for w in ws]
    strategy.global_step_variable().assign(0)
    it = iter(coordinator.create_per_worker_dataset(data))
    worst = 0.0
    for t in range(1, STEPS + 1):
        rv = coordinator.schedule(train_step, args=(it,))
        coordinator.join()
        b = {k: np.asarray(v, np.float64) for k, v in rv.fetch().items()}
        ids = b["ids"].astype(np.int64)
        gk = b["x"].T @ b["c1"]
        gb = b["c1"].sum(0)
        ge = np.zeros((V, D))
        np.add.at(ge, ids.reshape(-1), np.repeat(b["c2"], K, axis=0))
        grads = np_clip(cfg, [gk, gb, ge])
        lr = float(np_schedule(cfg["learning_rate"], t - 1))
        rows = np.unique(ids)
        ws = [r.step(w, g, t, lr, rows=rows if i == 2 else None)
              for i, (r, w, g) in enumerate(zip(refs, ws, grads))]
        for r in refs:
            r.end_step(t)
        got = dense.get_weights() + table.get_weights()
        for what, a, want in zip(("kernel", "bias", "table"), got, ws):
            err = float(np.max(np.abs(a - want) / (1e-3 + np.abs(want))))
            worst = max(worst, err)
            if not np.allclose(a, want, rtol=2e-5, atol=2e-6):
                problems.append(f"{name}: step {t}: {what} off by "
                                f"{np.max(np.abs(a - want)):.3g} "
                                f"(lr {lr:.6g})")
                return
    if strategy.global_step() != STEPS:
        problems.append(f"{name}: global step {strategy.global_step()}")
    print(f"{name}: {STEPS} steps as numpy's Keras 3 (worst relative "
          f"difference {worst:.2g})", flush=True)


def dataset(d, rng):
    """STEPS batches of B rows: x, the losses' weights c1 and c2, and ids
    with a duplicate in every batch."""
    n = STEPS * B
    ids = rng.integers(0, V, size=(n, K))
    ids[::B, 1] = ids[1::B, 0]
    pasco.data.write_tfrecord(f"{d}/opt.tfrecord", {
        "x": rng.normal(size=(n, IN)).astype(np.float32),
        "c1": rng.normal(size=(n, OUT)).astype(np.float32),
        "ids": ids.astype(np.int64),
        "c2": rng.normal(size=(n, D)).astype(np.float32),
        "y": np.zeros(n, np.int64)})
    F = pasco.data.Feature
    return pasco.data.tfrecord(
        f"{d}/opt.tfrecord", label="y", batch_size=B,
        features={"x": F("float", IN), "c1": F("float", OUT),
                  "ids": F("int64", K), "c2": F("float", D)})


def check_python_schedules(configs):
    for s in configs:
        cfg = s._serialized()
        for step in range(301):
            a, b = s(step), float(np_schedule(cfg, step))
            if not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15):
                problems.append(f"{cfg['class_name']}({cfg['config']})"
                                f"({step}) = {a}, numpy {b}")
                break


def chief(cluster):
    strategy = pasco.ParameterServerStrategy(cluster, window=1)
    coordinator = pasco.ClusterCoordinator(strategy)
    rng = np.random.default_rng(33)
    O, S = pasco.optimizers, schedules
    scheds = [
        S.ExponentialDecay(0.05, 3, 0.5, staircase=True),
        S.ExponentialDecay(0.05, 4, 0.7),
        S.InverseTimeDecay(0.1, 2, 0.5),
        S.InverseTimeDecay(0.1, 2, 0.5, staircase=True),
        S.PolynomialDecay(0.05, 4, power=2.0, cycle=True),
        S.PolynomialDecay(0.05, 7),
        S.CosineDecay(0.01, 5, alpha=0.1, warmup_target=0.05,
                      warmup_steps=3),
        S.CosineDecay(0.05, 8),
        S.PiecewiseConstantDecay([2, 5], [0.1, 0.05, 0.01]),
    ]
    check_python_schedules(scheds)
    configs = [
        ("AdamW", O.AdamW()),
        ("AdamW amsgrad, weight_decay 0.1, CosineDecay warmup",
         O.AdamW(scheds[6], weight_decay=0.1, amsgrad=True)),
        ("Nadam", O.Nadam(0.01)),
        ("Nadam, ExponentialDecay staircase, clipnorm 1",
         O.Nadam(scheds[0], clipnorm=1.0)),
        ("SGD nesterov, PiecewiseConstantDecay",
         O.SGD(scheds[8], momentum=0.9, nesterov=True)),
        ("SGD momentum, InverseTimeDecay, global_clipnorm 2",
         O.SGD(scheds[2], momentum=0.5, global_clipnorm=2.0)),
        ("Adam, PolynomialDecay cycle, clipvalue 0.5",
         O.Adam(scheds[4], clipvalue=0.5)),
        ("SGD, CosineDecay", O.SGD(scheds[7])),
        ("Adam, ExponentialDecay", O.Adam(scheds[1])),
        ("SGD, PolynomialDecay", O.SGD(scheds[5])),
        ("SGD, InverseTimeDecay staircase", O.SGD(scheds[3])),
    ]
    with tempfile.TemporaryDirectory(prefix="pasco-opt-") as d:
        data = dataset(d, rng)
        for n, (name, opt) in enumerate(configs):
            run(strategy, coordinator, n, name, opt, data)
            if problems:
                break
    if problems:
        print(f"optimizer_numpy: FAILED: {'; '.join(problems)}", flush=True)
        return 1
    print("optimizer_numpy: OK", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(pasco.main(chief))
