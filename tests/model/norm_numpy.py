#!/usr/bin/python3
"""numpy references of Keras 3's BatchNormalization and
LayerNormalization for tests/model/test_batch_norm.c and
test_layer_norm.c, written from Keras's definitions
(keras/src/layers/normalization/*.py, keras/src/backend/numpy/nn.py:
batch_normalization, moments, _layer_normalization), the gradients by
hand (no autodiff), all in float64.

Usage: norm_numpy.py MODE FILE ARGS...
FILE holds the inputs as float64, one after another; the answers are
printed as numbers separated by spaces.

  bn_train B W EPS MOMENTUM   x[B,W] gamma[W] beta[W] mm[W] mv[W] r[B,W]
      y, dx, dgamma, dbeta, then the moving statistics' updates
      (mean - mm) * (1 - momentum) and (var - mv) * (1 - momentum)
  bn_infer B W EPS            x gamma beta mm mv r: y, dx, dgamma, dbeta
  ln B W EPS CENTER SCALE RMS x gamma beta r: y, dx, dgamma, dbeta
  bn_nd SHAPE AXIS EPS MOMENTUM TRAIN   x[SHAPE] (comma-separated dims,
      the batch's first), gamma[n] beta[n] mm[n] mv[n] r[SHAPE], n the
      size of axis AXIS: Keras's BatchNormalization along that axis, in
      training (TRAIN 1: the statistics over every other axis) or not:
      y, dx, dgamma, dbeta, then in training the two updates as bn_train
  ln_nd SHAPE AXES EPS CENTER SCALE RMS   x[SHAPE] gamma[P] beta[P]
      r[SHAPE], AXES comma-separated (negative from the last), P the
      dimensions at the sorted AXES: Keras's LayerNormalization over
      those axes (keras/src/ops/nn.py _layer_normalization): y, dx,
      dgamma, dbeta
  bn_moving N B W MOMENTUM    N batches x[N,B,W], mm[W], mv[W]: the
      moving mean and variance after Keras's N updates
      (moving * momentum + batch * (1 - momentum), variance biased)
The loss whose gradients are given is sum(y * r).
"""
import sys

import numpy as np


def moments(x, axis):
    # Keras's numpy backend: Var = E[x^2] - E[x]^2 (biased)
    mean = np.mean(x, axis=axis, keepdims=True)
    var = np.mean(np.square(x), axis=axis, keepdims=True) - np.square(mean)
    return mean, var


def normalize(x, mean, var, gamma, beta, eps):
    # keras.ops.batch_normalization's numpy form
    inv = 1.0 / np.sqrt(var + eps) * gamma
    return x * inv + (-mean * inv + beta)


def centered_backward(x, xhat, inv, r, gamma, axis):
    """d sum(y r) / dx when mean and variance are x's own over axis (an
    axis or a tuple of them)."""
    axes = axis if isinstance(axis, tuple) else (axis,)
    n = int(np.prod([x.shape[a] for a in axes]))
    g = r * gamma
    return inv / n * (n * g - g.sum(axis, keepdims=True) -
                      xhat * (g * xhat).sum(axis, keepdims=True))


def bn_train(a, b, w, eps, momentum):
    x, gamma, beta, mm, mv, r = take(a, (b, w), w, w, w, w, (b, w))
    mean, var = moments(x, 0)
    y = normalize(x, mean, var, gamma, beta, eps)
    inv = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * inv
    dx = centered_backward(x, xhat, inv, r, gamma, 0)
    return [y, dx, (r * xhat).sum(0), r.sum(0),
            (mean.ravel() - mm) * (1 - momentum),
            (var.ravel() - mv) * (1 - momentum)]


def bn_infer(a, b, w, eps):
    x, gamma, beta, mm, mv, r = take(a, (b, w), w, w, w, w, (b, w))
    y = normalize(x, mm, mv, gamma, beta, eps)
    inv = 1.0 / np.sqrt(mv + eps)
    return [y, r * gamma * inv, (r * (x - mm) * inv).sum(0), r.sum(0)]


def ln(a, b, w, eps, center, scale, rms):
    x, gamma, beta, r = take(a, (b, w), w, w, (b, w))
    gamma = gamma if scale or rms else np.ones(w)
    beta = beta if center and not rms else np.zeros(w)
    mean, var = moments(x, 1)
    s = 1.0 / np.sqrt(var + eps)
    if rms:
        # Keras's rms_scaling: x * rsqrt(var(x) + eps) * gamma
        y = x * s * gamma
        g = r * gamma
        dx = g * s + (g * x).sum(1, keepdims=True) * (-0.5 * s ** 3) * \
            2 * (x - mean) / w
        return [y, dx, (r * x * s).sum(0), np.zeros(w)]
    y = normalize(x, mean, var, gamma, beta, eps)
    xhat = (x - mean) * s
    dx = centered_backward(x, xhat, s, r, gamma, 1)
    return [y, dx, (r * xhat).sum(0), r.sum(0)]


def bn_nd(a, shape, axis, eps, momentum, train):
    n = shape[axis]
    x, gamma, beta, mm, mv, r = take(a, shape, n, n, n, n, shape)
    axes = tuple(d for d in range(len(shape)) if d != axis)
    bshape = [1] * len(shape)
    bshape[axis] = n
    g, b = gamma.reshape(bshape), beta.reshape(bshape)
    if not train:
        m, v = mm.reshape(bshape), mv.reshape(bshape)
        inv = 1.0 / np.sqrt(v + eps)
        y = normalize(x, m, v, g, b, eps)
        return [y, r * g * inv, (r * (x - m) * inv).sum(axes), r.sum(axes)]
    mean, var = moments(x, axes)
    y = normalize(x, mean, var, g, b, eps)
    inv = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * inv
    dx = centered_backward(x, xhat, inv, r, g, axes)
    return [y, dx, (r * xhat).sum(axes), r.sum(axes),
            (mean.ravel() - mm) * (1 - momentum),
            (var.ravel() - mv) * (1 - momentum)]


def ln_nd(a, shape, axes, eps, center, scale, rms):
    axes = tuple(sorted(d % len(shape) for d in axes))  # Keras's build
    other = tuple(d for d in range(len(shape)) if d not in axes)
    p = tuple(shape[d] for d in axes)
    n = int(np.prod(p))
    x, gamma, beta, r = take(a, shape, p, p, shape)
    bshape = [1] * len(shape)
    for d in axes:
        bshape[d] = shape[d]
    g = gamma.reshape(bshape) if scale or rms else np.ones(bshape)
    b = beta.reshape(bshape) if center and not rms else np.zeros(bshape)
    mean, var = moments(x, axes)
    s = 1.0 / np.sqrt(var + eps)
    if rms:
        y = x * s * g
        gr = r * g
        dx = gr * s + (gr * x).sum(axes, keepdims=True) * \
            (-0.5 * s ** 3) * 2 * (x - mean) / n
        return [y, dx, (r * x * s).sum(other), np.zeros(p)]
    y = normalize(x, mean, var, g, b, eps)
    xhat = (x - mean) * s
    dx = centered_backward(x, xhat, s, r, g, axes)
    return [y, dx, (r * xhat).sum(other), r.sum(other)]


def bn_moving(a, n, b, w, momentum):
    xs, mm, mv = take(a, (n, b, w), w, w)
    for x in xs:
        mean, var = moments(x, 0)
        mm = mm * momentum + mean.ravel() * (1 - momentum)
        mv = mv * momentum + var.ravel() * (1 - momentum)
    return [mm, mv]


def take(a, *shapes):
    out, at = [], 0
    for s in shapes:
        s = (s,) if isinstance(s, int) else s
        k = int(np.prod(s))
        out.append(a[at:at + k].reshape(s))
        at += k
    if at != a.size:
        sys.exit(f"norm_numpy: {a.size} numbers given, {at} expected")
    return out


def main():
    mode, path, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    a = np.fromfile(path, np.float64)
    if mode == "bn_train":
        out = bn_train(a, int(args[0]), int(args[1]), float(args[2]),
                       float(args[3]))
    elif mode == "bn_infer":
        out = bn_infer(a, int(args[0]), int(args[1]), float(args[2]))
    elif mode == "ln":
        out = ln(a, int(args[0]), int(args[1]), float(args[2]),
                 *(v == "1" for v in args[3:6]))
    elif mode == "bn_nd":
        shape = tuple(int(d) for d in args[0].split(","))
        axis = int(args[1]) % len(shape)
        out = bn_nd(a, shape, axis, float(args[2]), float(args[3]),
                    args[4] == "1")
    elif mode == "ln_nd":
        out = ln_nd(a, tuple(int(d) for d in args[0].split(",")),
                    [int(d) for d in args[1].split(",")], float(args[2]),
                    *(v == "1" for v in args[3:6]))
    elif mode == "bn_moving":
        out = bn_moving(a, int(args[0]), int(args[1]), int(args[2]),
                        float(args[3]))
    else:
        sys.exit(f"norm_numpy: unknown mode {mode}")
    print(" ".join(repr(float(v)) for o in out for v in np.ravel(o)))


if __name__ == "__main__":
    main()
