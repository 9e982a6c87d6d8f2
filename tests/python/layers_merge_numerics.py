#!/usr/bin/env python3
"""Issue 33's shape and merge layers against numpy: for each model (made
with pasco.layers, its config read by the C library), the forward pass
and the gradients of sum(output * upstream) with respect to every
variable and feature input, computed by the C tape (the layer_grads
program) and by numpy: Keras's definition of each layer written here in
float64, its gradient by central differences of that definition.

Usage: layers_merge_numerics.py LAYER_GRADS SOURCE_ROOT
(PASCO_LIBRARY: the libpasco.so to import pasco with). Prints
"layers_merge_numerics: OK, N models" or each difference (exit 1).
Skipped (77) without numpy."""
import json
import os
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print(f"SKIP: numpy is not installed for {sys.executable}")
    sys.exit(77)

program, root = sys.argv[1], sys.argv[2]
if len(sys.argv) > 3 and sys.argv[3] not in ("", "none"):
    # the models are built by pasco.layers, which loads libpasco
    print(f"SKIP: this build uses -fsanitize={sys.argv[3]} (python3 cannot "
          f"load its libpasco); test_merge_layers covers the C side there")
    sys.exit(77)
sys.path.insert(0, os.path.join(root, "python"))
import pasco  # noqa: E402
from pasco import layers as L  # noqa: E402
from pasco import ops  # noqa: E402

rng = np.random.default_rng(33)
B = 4
failures = []


# ---- Keras's definitions, float64 ------------------------------------

def embed(table, ids):
    return np.where((ids >= 0)[..., None], table[np.maximum(ids, 0)], 0.0)


def gap1d(x, mask=None, channels_first=False, keepdims=False):
    axis = 2 if channels_first else 1
    if mask is None:
        return x.mean(axis=axis, keepdims=keepdims)
    m = mask[:, None, :] if channels_first else mask[:, :, None]
    # numpy's masked mean (Keras's sum / count over the kept steps); a
    # sequence of padding only gives zeros here (Keras: 0 / 0)
    masked = np.ma.masked_array(x, mask=np.broadcast_to(~m, x.shape))
    return masked.mean(axis=axis, keepdims=keepdims).filled(0.0)


def dense(x, k, b, act=None):
    y = x @ k + b
    return np.tanh(y) if act == "tanh" else y


def flatten(x, channels_first=False):
    if channels_first and x.ndim > 2:
        x = np.moveaxis(x, 1, -1)
    return x.reshape(x.shape[0], -1)


def l2n(x):
    return x / np.sqrt(np.maximum((x * x).sum(axis=1, keepdims=True), 1e-14))


def dot(a, b, normalize=False):
    if normalize:
        a, b = l2n(a), l2n(b)
    return (a * b).sum(axis=1, keepdims=True)


def multiply_masked(xs, masks):
    """Keras's Multiply with masks: a masked step counts as 1; when every
    input has a mask, 0 where none keeps the step."""
    out, keep = None, None
    for x, m in zip(xs, masks):
        if m is not None:
            x = np.where(m[..., None], x, 1.0)
        out = x if out is None else out * x
    if all(m is not None for m in masks):
        keep = np.any(np.stack(masks), axis=0)
        out = np.where(keep[..., None], out, 0.0)
    return out, keep


# ---- the check ---------------------------------------------------------

def fd_grad(f, params, k, eps=1e-6):
    """d f / d params[k] by central differences."""
    g = np.zeros_like(params[k])
    it = np.nditer(params[k], flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = params[k][i]
        params[k][i] = old + eps
        hi = f(params)
        params[k][i] = old - eps
        lo = f(params)
        params[k][i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g


def config_of(inputs, output):
    model = pasco.Model(inputs=inputs, outputs=output)
    return model._model_config(None)


def run_c(config, inputs, variables, upstream, training=False, seed=1):
    req = {"config": config, "training": training, "seed": seed,
           "inputs": [{"dtype": "i64" if a.dtype.kind == "i" else "f32",
                       "shape": list(a.shape),
                       "data": a.ravel().tolist()} for a in inputs],
           "variables": [v.ravel().tolist() for v in variables],
           "upstream": upstream.ravel().tolist()}
    p = subprocess.run([program], input=json.dumps(req), text=True,
                       capture_output=True)
    if p.returncode != 0:
        raise RuntimeError(f"layer_grads: exit {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


def check(name, inputs, output, xs, ws, reference, training=False):
    """The model inputs -> output on data xs (numpy) with variables ws
    against reference(xs, ws) (numpy's, float64)."""
    config = config_of(inputs, output)
    xs = [np.asarray(x) for x in xs]
    ws = [np.asarray(w, dtype=np.float32) for w in ws]
    want = reference([x.astype(np.float64) if x.dtype.kind == "f" else x
                      for x in xs], [w.astype(np.float64) for w in ws])
    up = rng.normal(size=want.shape)
    got = run_c(config, xs, ws, up, training)
    if "error" in got:
        failures.append(f"{name}: {got['error']}")
        return None
    y = np.array(got["output"]).reshape(got["shape"])
    if y.shape != want.shape or not np.allclose(y, want, rtol=1e-5,
                                                atol=1e-5):
        failures.append(f"{name}: output {y.shape} differs from numpy's "
                        f"{want.shape}: max |diff| "
                        f"{np.max(np.abs(y - want)) if y.shape == want.shape else 'n/a'}")
        return None
    # a batch of 0 (a worker may get one): values and gradients, no crash
    try:
        zero = run_c(config, [x[:0] for x in xs], ws,
                     np.zeros((0,) + want.shape[1:]), training)
        if "error" in zero or zero["shape"][:1] != [0]:
            failures.append(f"{name}: a batch of 0: {zero}")
    except RuntimeError as e:
        failures.append(f"{name}: a batch of 0: {e}")
    nf = len(ws)
    params = [w.astype(np.float64) for w in ws] + \
        [x.astype(np.float64) for x in xs if x.dtype.kind == "f"]

    def f(p):
        wsp, it = p[:nf], iter(p[nf:])
        xsp = [next(it) if x.dtype.kind == "f" else x for x in xs]
        return float((reference(xsp, wsp) * up).sum())

    grads = got["variables"] + [g for g, x in zip(got["inputs"], xs)
                                if x.dtype.kind == "f"]
    for k, g in enumerate(grads):
        ref = fd_grad(f, params, k)
        g = np.zeros_like(ref) if g is None else \
            np.array(g).reshape(ref.shape)
        what = f"variable {k}" if k < nf else f"input {k - nf}"
        if not np.allclose(g, ref, rtol=1e-3, atol=2e-4):
            failures.append(f"{name}: gradient of {what}: max |diff| "
                            f"{np.max(np.abs(g - ref)):.3g}")
    return y


def ids_of(shape, vocab, zeros=True):
    ids = rng.integers(1, vocab, size=shape)
    if zeros:  # padding at the end of each row, a row of padding only
        for i in range(shape[0]):
            ids[i, shape[1] - i:] = 0
    return ids.astype(np.int64)


def table(v, d):
    return rng.normal(size=(v, d))


def models():
    n = 0
    # 1. Embedding(mask_zero) -> GlobalAveragePooling1D -> Dense
    ids = pasco.Input(shape=(5,), dtype="int64", name="ids")
    h = L.GlobalAveragePooling1D()(L.Embedding(7, 3, mask_zero=True)(ids))
    out = L.Dense(2)(h)
    x = ids_of((B, 5), 7)
    check("mask_zero + gap1d + dense", [ids], out, [x],
          [table(7, 3), rng.normal(size=(3, 2)), rng.normal(size=2)],
          lambda xs, ws: dense(gap1d(embed(ws[0], xs[0]), xs[0] != 0),
                               ws[1], ws[2]))
    n += 1
    # 2. the sequence without a mask -> Flatten -> Dense(tanh)
    ids = pasco.Input(shape=(4,), dtype="int64", name="ids")
    out = L.Dense(2, activation="tanh")(
        L.Flatten()(L.Embedding(6, 3, combiner=None)(ids)))
    x = ids_of((B, 4), 6, zeros=False)
    check("sequence + flatten + dense", [ids], out, [x],
          [table(6, 3), rng.normal(size=(12, 2)) * 0.3, rng.normal(size=2)],
          lambda xs, ws: dense(flatten(embed(ws[0], xs[0])), ws[1], ws[2],
                               "tanh"))
    n += 1
    # 3. Reshape(-1) -> GAP1D(channels_first, keepdims) -> Flatten -> Dense
    f = pasco.Input(shape=(12,), name="f")
    h = L.GlobalAveragePooling1D(data_format="channels_first",
                                 keepdims=True)(L.Reshape((3, -1))(f))
    out = L.Dense(2)(L.Flatten()(h))
    check("reshape + gap1d channels_first keepdims", [f], out,
          [rng.normal(size=(B, 12))],
          [rng.normal(size=(3, 2)), rng.normal(size=2)],
          lambda xs, ws: dense(flatten(gap1d(xs[0].reshape(B, 3, 4),
                                             channels_first=True,
                                             keepdims=True)), ws[0], ws[1]))
    n += 1
    # 4. Reshape -> Flatten(channels_first) -> Dense
    f = pasco.Input(shape=(12,), name="f")
    out = L.Dense(3)(L.Flatten(data_format="channels_first")(
        L.Reshape((4, 3))(f)))
    check("reshape + flatten channels_first", [f], out,
          [rng.normal(size=(B, 12))],
          [rng.normal(size=(12, 3)), rng.normal(size=3)],
          lambda xs, ws: dense(flatten(xs[0].reshape(B, 4, 3), True),
                               ws[0], ws[1]))
    n += 1
    # 5. merges of three feature inputs (gradients to each input)
    for cls, fn in ((L.Add, lambda a: a[0] + a[1] + a[2]),
                    (L.Multiply, lambda a: a[0] * a[1] * a[2]),
                    (L.Average, lambda a: (a[0] + a[1] + a[2]) / 3)):
        ins = [pasco.Input(shape=(4,), name=f"x{k}") for k in range(3)]
        out = L.Dense(1)(cls()(ins))
        check(cls.__name__, ins, out,
              [rng.normal(size=(B, 4)) for _ in range(3)],
              [rng.normal(size=(4, 1)), rng.normal(size=1)],
              lambda xs, ws, fn=fn: dense(fn(xs), ws[0], ws[1]))
        n += 1
    # 6. Dot, plain and normalized
    for axes, norm in ((1, False), (-1, True), ([1, -1], True)):
        ins = [pasco.Input(shape=(5,), name=f"x{k}") for k in range(2)]
        out = L.Dense(1)(L.Dot(axes=axes, normalize=norm)(ins))
        check(f"Dot(axes={axes}, normalize={norm})", ins, out,
              [rng.normal(size=(B, 5)) for _ in range(2)],
              [rng.normal(size=(1, 1)), rng.normal(size=1)],
              lambda xs, ws, norm=norm: dense(dot(xs[0], xs[1], norm),
                                              ws[0], ws[1]))
        n += 1
    # 7. masked merges: two masked sequences -> merge -> GAP1D
    for cls in (L.Add, L.Average, L.Multiply):
        a = pasco.Input(shape=(5,), dtype="int64", name="a")
        b = pasco.Input(shape=(5,), dtype="int64", name="b")
        ea = L.Embedding(6, 3, mask_zero=True)(a)
        eb = L.Embedding(6, 3, mask_zero=True)(b)
        out = L.GlobalAveragePooling1D()(cls()([ea, eb]))
        xa, xb = ids_of((B, 5), 6), ids_of((B, 5), 6)
        xb[:, 0] = 0  # steps masked in one input only

        def ref(xs, ws, cls=cls):
            sa, sb = embed(ws[0], xs[0]), embed(ws[1], xs[1])
            ma, mb = xs[0] != 0, xs[1] != 0
            keep = ma | mb  # Keras's Merge.compute_mask: the OR
            if cls is L.Multiply:
                y, keep = multiply_masked([sa, sb], [ma, mb])
            else:
                y = sa + sb if cls is L.Add else (sa + sb) / 2
            return gap1d(y, keep)

        check(f"masked {cls.__name__} + gap1d", [a, b], out, [xa, xb],
              [table(6, 3), table(6, 3)], ref)
        n += 1
    # 8. Lambda over pasco.ops, on two inputs
    ins = [pasco.Input(shape=(3,), name=f"x{k}") for k in range(2)]
    lam = L.Lambda(lambda t, scale: ops.tanh(t[0]) * scale + t[1] * t[1],
                   arguments={"scale": 2.0})(ins)
    out = L.Dense(1)(lam)
    check("Lambda", ins, out, [rng.normal(size=(B, 3)) for _ in range(2)],
          [rng.normal(size=(3, 1)), rng.normal(size=1)],
          lambda xs, ws: dense(np.tanh(xs[0]) * 2.0 + xs[1] ** 2, ws[0],
                               ws[1]))
    n += 1
    # 10. Dense on a sequence (Keras's last axis) keeps its mask
    ids = pasco.Input(shape=(5,), dtype="int64", name="ids")
    h = L.Dense(2, activation="tanh")(L.Embedding(7, 3,
                                                  mask_zero=True)(ids))
    out = L.GlobalAveragePooling1D()(h)
    x = ids_of((B, 5), 7)
    check("dense on a masked sequence + gap1d", [ids], out, [x],
          [table(7, 3), rng.normal(size=(3, 2)), rng.normal(size=2)],
          lambda xs, ws: gap1d(dense(embed(ws[0], xs[0]), ws[1], ws[2],
                                     "tanh"), xs[0] != 0))
    n += 1
    # 9. Dropout off (inference) keeps a sequence and its mask
    ids = pasco.Input(shape=(5,), dtype="int64", name="ids")
    e = L.Embedding(7, 3, mask_zero=True)(ids)
    out = L.GlobalAveragePooling1D()(L.Activation("tanh")(
        L.Dropout(0.5, noise_shape=(None, 1, 3), seed=3)(e)))
    x = ids_of((B, 5), 7)
    check("dropout (inference) + activation keep the mask", [ids], out,
          [x], [table(7, 3)],
          lambda xs, ws: gap1d(np.tanh(embed(ws[0], xs[0])), xs[0] != 0))
    n += 1
    return n


def dropout_checks():
    """Dropout(noise_shape, seed) in training: the kept elements scaled
    by 1 / (1 - rate), one draw per element of noise_shape (the same
    along its axes of 1), the gradient through the same mask; a seed
    draws its own masks, the same ones for one tape seed."""
    f = pasco.Input(shape=(12,), name="f")

    def model(seed, noise=(None, 1, 3)):
        L.reset_names()
        return config_of([f], L.Flatten()(L.Dropout(
            0.5, noise_shape=noise, seed=seed)(L.Reshape((4, 3))(f))))

    x = rng.normal(size=(8, 12)).astype(np.float32) + 3  # no zeros
    up = rng.normal(size=(8, 12))
    a = run_c(model(7), [x], [], up, training=True, seed=11)
    b = run_c(model(7), [x], [], up, training=True, seed=11)
    c = run_c(model(8), [x], [], up, training=True, seed=11)
    if any("error" in r for r in (a, b, c)):
        failures.append(f"dropout: {[r.get('error') for r in (a, b, c)]}")
        return
    ratio = (np.array(a["output"]).reshape(8, 12) / x).reshape(8, 4, 3)
    g = np.array(a["inputs"][0]).reshape(8, 12) / up
    if not np.all(np.isclose(ratio, 0) | np.isclose(ratio, 2)):
        failures.append("dropout: kept values are not scaled by 1/(1-rate)")
    if not np.allclose(ratio, ratio[:, :1, :]):
        failures.append("dropout: noise_shape (None, 1, 3): the mask "
                        "differs along the axis of 1")
    if not np.allclose(g.reshape(8, 4, 3), ratio, atol=1e-5):
        failures.append("dropout: the gradient is not the same mask")
    if a["output"] != b["output"]:
        failures.append("dropout: one seed and tape seed drew two masks")
    if a["output"] == c["output"]:
        failures.append("dropout: seeds 7 and 8 drew the same mask")
    kept = np.mean(ratio[:, 0, :] > 0)
    if not 0.2 < kept < 0.8:
        failures.append(f"dropout: kept {kept:.2f} of the draws at rate "
                        f"0.5")


def errors():
    """Bad shapes are ValueErrors naming the layer and the shapes, raised
    when the model's config is made, before anything runs; and the C
    library's own check of a config says the same."""
    cases = []
    f = pasco.Input(shape=(12,), name="f")
    cases.append(("Reshape", [f], L.Reshape((5, -1), name="grid")(f),
                  ["grid", "(12,)", "(5, -1)"]))
    a, b = pasco.Input(shape=(3,), name="a"), pasco.Input(shape=(4,),
                                                          name="b")
    cases.append(("Add", [a, b], L.Add(name="ab")([a, b]),
                  ["ab", "(3,) and (4,)", "one shape"]))
    ids = pasco.Input(shape=(5,), dtype="int64", name="ids")
    seq = L.Embedding(9, 4, combiner=None)(ids)
    cases.append(("Lambda", [ids], L.Lambda(lambda t: t, name="lam")(seq),
                  ["lam", "(5, 4)", "Flatten"]))
    cases.append(("Concatenate", [ids],
                  L.Concatenate(name="cat")([seq, seq]),
                  ["cat", "(5, 4)", "Flatten"]))
    cases.append(("GlobalAveragePooling1D", [f],
                  L.GlobalAveragePooling1D(name="pool")(f),
                  ["pool", "(12,)", "sequence"]))
    for what, ins, out, words in cases:
        try:
            config_of(ins, out)
            failures.append(f"{what}: a bad shape was accepted")
        except ValueError as e:
            if not all(w in str(e) for w in words):
                failures.append(f"{what}: {e!r} does not say {words}")
    # the C library's check of a config, as a worker reads it
    config = config_of([f], L.Reshape((3, 4), name="grid")(f))
    config["config"]["layers"][0]["config"]["target_shape"] = [5, -1]
    got = run_c(config, [np.zeros((2, 12), np.float32)], [],
                np.zeros((2, 5, 2)))
    if "grid" not in got.get("error", "") or "(12,)" not in got["error"]:
        failures.append(f"C Reshape: {got.get('error')!r}")
    for bad, word in (({"rate": 0.5, "noise_shape": "x"}, "noise_shape"),
                      ({"rate": 0.5, "seed": -2}, "seed")):
        config = config_of([f], L.Dropout(0.5, name="drop")(f))
        config["config"]["layers"][0]["config"].update(bad)
        got = run_c(config, [np.zeros((2, 12), np.float32)], [],
                    np.zeros((2, 12)))
        if word not in got.get("error", "") or "drop" not in got["error"]:
            failures.append(f"C Dropout {bad}: {got.get('error')!r}")
    for bad in ({"axes": 2}, {"axes": [1, 2, 3]}, {"axes": "x"}):
        a2 = pasco.Input(shape=(3,), name="a2")
        config = config_of([a, a2], L.Dot(1, name="dot")([a, a2]))
        config["config"]["layers"][0]["config"].update(bad)
        got = run_c(config, [np.zeros((2, 3), np.float32)] * 2, [],
                    np.zeros((2, 1)))
        if "axes" not in got.get("error", "") or "dot" not in got["error"]:
            failures.append(f"C Dot {bad}: {got.get('error')!r}")


n = models()
dropout_checks()
errors()
for msg in failures:
    print("layers_merge_numerics:", msg)
if failures:
    sys.exit(1)
print(f"layers_merge_numerics: OK, {n} models and Dropout's noise_shape "
      f"and seed")
