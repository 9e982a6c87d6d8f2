#!/usr/bin/python3
"""numpy references of Keras 3's masked sequence losses, metrics and
BatchNormalization moments for tests/model/test_seq_masks.c, written from
Keras's definitions (keras/src/losses/loss.py: reduce_weighted_values and
apply_mask, sum_over_batch_size; keras/src/metrics/reduction_metrics.py:
MeanMetricWrapper with the mask as its sample weight;
keras/src/layers/normalization/batch_normalization.py: _moments with a
mask), the gradients by hand (no autodiff), all in float64.

Usage: seq_numpy.py MODE FILE ARGS...
FILE holds the inputs as float64, one after another; the answers are
printed as numbers separated by spaces. The model is
Embedding(V, D, mask_zero=True) on ids [B, T] (mask: ids != 0), then:

  sce B T V D C MASKED STEPS   ids table[V,D] kernel[D,C] bias[C] sw
      y[B,T]: Dense(C, softmax), sparse_categorical_crossentropy per
      step: loss, dtable, dkernel, dbias, then the masked accuracy, then
      the masked accuracy weighted by sw (compile's weighted_metrics)
  mse B T V D C MASKED STEPS   ids table kernel bias sw y[B,T,C]:
      Dense(C) linear, mean_squared_error per step: loss, dtable,
      dkernel, dbias, then the masked mse metric, unweighted and weighted
  (MASKED 0: Embedding(mask_zero=False), no step masked; STEPS 0: sw[B],
  one weight per example; STEPS 1: sw[B,T], one weight per step)
  bn B T V D EPS MOMENTUM   ids table gamma[D] beta[D] mm[D] mv[D]
      r[B,T,D]: BatchNormalization (axis -1) in training with the mask:
      y, dtable, dgamma, dbeta, then the moving statistics' updates
      (mean - mm) * (1 - momentum), (var - mv) * (1 - momentum). The loss
      whose gradients are given is sum(y * r).
"""
import sys

import numpy as np

KERAS_EPSILON = 1e-7


def take(a, *shapes):
    out, at = [], 0
    for s in shapes:
        s = (s,) if isinstance(s, int) else s
        k = int(np.prod(s))
        out.append(a[at:at + k].reshape(s))
        at += k
    if at != a.size:
        sys.exit(f"seq_numpy: {a.size} numbers given, {at} expected")
    return out


def loss_weights(mask, sw):
    """apply_mask(sw, mask, "sum_over_batch_size"), then sw's [B] expanded
    to [B, 1] (squeeze_or_expand_to_same_rank) against [B, T]; sw [B, T]
    multiplies step by step."""
    total = float(mask.size)
    valid = float(mask.sum())
    mask_weight = total / valid if valid != 0 else 0.0  # divide_no_nan
    return np.where(mask, mask_weight, 0.0) * (sw if sw.ndim == 2 else
                                               sw[:, None])


def reduce_loss(values, w):
    """reduce_values with sum_over_batch_size: sum(values * w) / size."""
    return float((values * w).sum() / values.size)


def masked_mean(values, mask):
    """MeanMetricWrapper with apply_mask(None, mask, "sum"): Mean's total
    sum(mean_t(values * mask)) over count sum(mean_t(mask))."""
    total = (values * mask).mean(axis=1).sum()
    count = mask.astype(np.float64).mean(axis=1).sum()
    return float(total / count) if count != 0 else 0.0


def weighted_masked_mean(values, mask, sw):
    """MeanMetricWrapper given sample_weight sw ([B] or [B, T]):
    reduce_to_samplewise_values with apply_mask(sw, mask, "sum") (sw times
    the mask, sw [B] expanded to [B, 1] by squeeze_or_expand_to_same_rank),
    then Mean's total sum(mean_t(values * w)) over count sum(mean_t(w));
    divide_no_nan."""
    w = (sw if sw.ndim == 2 else sw[:, None]) * mask  # [B] as [B, 1]
    total = (values * w).mean(axis=1).sum()
    count = w.mean(axis=1).sum()
    return float(total / count) if count != 0 else 0.0


def embed_grad(ids, dh, v):
    dtable = np.zeros((v, dh.shape[-1]))
    np.add.at(dtable, ids, dh)
    return dtable


def sce(a, b, t, v, d, c, masked, steps):
    ids, table, kernel, bias, sw, y = take(a, (b, t), (v, d), (d, c), c,
                                          (b, t) if steps else b, (b, t))
    ids, y = ids.astype(np.int64), y.astype(np.int64)
    mask = ids != 0 if masked else np.ones(ids.shape, bool)
    h = table[ids]
    z = h @ kernel + bias
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    values = -np.log(np.take_along_axis(p, y[..., None], -1)[..., 0])
    w = loss_weights(mask, sw)
    loss = reduce_loss(values, w)
    dz = (p - np.eye(c)[y]) * (w / values.size)[..., None]
    hits = (np.argmax(p, axis=-1) == y).astype(np.float64)
    return [loss, embed_grad(ids, dz @ kernel.T, v),
            np.einsum("btd,btc->dc", h, dz), dz.sum(axis=(0, 1)),
            masked_mean(hits, mask), weighted_masked_mean(hits, mask, sw)]


def mse(a, b, t, v, d, c, masked, steps):
    ids, table, kernel, bias, sw, y = take(a, (b, t), (v, d), (d, c), c,
                                          (b, t) if steps else b,
                                          (b, t, c))
    ids = ids.astype(np.int64)
    mask = ids != 0 if masked else np.ones(ids.shape, bool)
    h = table[ids]
    z = h @ kernel + bias
    values = np.square(z - y).mean(axis=-1)
    w = loss_weights(mask, sw)
    loss = reduce_loss(values, w)
    dz = 2 * (z - y) / c * (w / values.size)[..., None]
    return [loss, embed_grad(ids, dz @ kernel.T, v),
            np.einsum("btd,btc->dc", h, dz), dz.sum(axis=(0, 1)),
            masked_mean(values, mask),
            weighted_masked_mean(values, mask, sw)]


def bn_forward(x, m, gamma, beta, eps):
    """_moments(x, mask) and ops.batch_normalization, axis -1."""
    axes = (0, 1)
    mb = np.broadcast_to(m[..., None], x.shape).astype(bool)
    weights = mb.astype(np.float64).sum(axes, keepdims=True)
    mean = np.where(mb, x, 0).sum(axes, keepdims=True) / (
        weights + KERAS_EPSILON)
    diff = np.where(mb, x - mean, 0)
    var = np.square(diff).sum(axes, keepdims=True) / (
        weights + KERAS_EPSILON)
    inv = 1.0 / np.sqrt(var + eps)
    return gamma * (x - mean) * inv + beta, mean, var, weights


def bn(a, b, t, v, d, eps, momentum):
    ids, table, gamma, beta, mm, mv, r = take(a, (b, t), (v, d), d, d, d,
                                             d, (b, t, d))
    ids = ids.astype(np.int64)
    mask = (ids != 0).astype(np.float64)
    x = table[ids]
    y, mean, var, s = bn_forward(x, mask, gamma, beta, eps)
    m = mask[..., None]
    s = s + KERAS_EPSILON
    inv = 1.0 / np.sqrt(var + eps)
    xc = x - mean
    # L = sum(r y), y = gamma xc inv + beta, xc = x - mean,
    # var = sum(m xc^2) / s, mean = sum(m x) / s (sums over batch, steps)
    dvar = (r * gamma * xc).sum((0, 1), keepdims=True) * -0.5 * inv ** 3
    dxc = r * gamma * inv + dvar * 2 * m * xc / s
    dx = dxc - dxc.sum((0, 1), keepdims=True) * m / s
    # the hand gradient against central differences of the forward pass
    k = (0, 1, 0) if mask[0, 1] else (0, 0, 0)
    h = 1e-6
    xp, xm = x.copy(), x.copy()
    xp[k] += h
    xm[k] -= h
    fd = ((r * bn_forward(xp, mask, gamma, beta, eps)[0]).sum() -
          (r * bn_forward(xm, mask, gamma, beta, eps)[0]).sum()) / (2 * h)
    if abs(fd - dx[k]) > 1e-5 * max(1.0, abs(fd)):
        sys.exit(f"seq_numpy: bn's dx {dx[k]} against differences {fd}")
    return [y, embed_grad(ids, dx, v), (r * xc * inv).sum((0, 1)),
            r.sum((0, 1)), (mean.ravel() - mm) * (1 - momentum),
            (var.ravel() - mv) * (1 - momentum)]


def main():
    mode, path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    a = np.fromfile(path, np.float64)
    if mode in ("sce", "mse"):
        out = (sce if mode == "sce" else mse)(a, *(int(v) for v in args))
    elif mode == "bn":
        out = bn(a, *(int(v) for v in args[:4]), float(args[4]),
                 float(args[5]))
    else:
        sys.exit(f"seq_numpy: unknown mode {mode}")
    print(" ".join(repr(float(v)) for o in out for v in np.ravel(o)))


if __name__ == "__main__":
    main()
