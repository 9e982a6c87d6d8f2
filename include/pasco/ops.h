/*
 * Kernels for step functions: the forward pass and the gradient of each,
 * on f32 tensors (the dtype models train in). Dense math goes through
 * OpenBLAS. Every function allocates its outputs (owned by the caller) and
 * returns PASCO_EINVAL, without output, when shapes or dtypes do not fit,
 * with a message naming the op and what it got (pasco_ops_last_error):
 *     matmul: [32, 64] x [10, 64]: inner dimensions 64 and 10 differ
 * A step function that returns such an error as it is fails its closure
 * with that message, which the coordinator reports. Losses are means over
 * the batch, as Keras computes them, and their gradients are of that
 * mean. Thread-safe.
 */
#ifndef PASCO_OPS_H
#define PASCO_OPS_H

#include <stdbool.h>

#include "error.h"
#include "tensor.h"

/* out = op(a) op(b), op transposing when asked; a and b of rank 2. */
int pasco_matmul(const pasco_tensor *a, bool transpose_a,
    const pasco_tensor *b, bool transpose_b, pasco_tensor **out);

/* out[i, j] = x[i, j] + bias[j]; and the bias gradient, dy summed over
 * rows. */
int pasco_bias_add(
    const pasco_tensor *x, const pasco_tensor *bias, pasco_tensor **out);
int pasco_bias_add_grad(const pasco_tensor *dy, pasco_tensor **dbias);

typedef enum pasco_activation {
	PASCO_RELU    = 1,
	PASCO_SIGMOID = 2,
	PASCO_TANH    = 3,
} pasco_activation;

/* y = f(x), elementwise; and dx from the output y and dy. */
int pasco_activate(
    pasco_activation f, const pasco_tensor *x, pasco_tensor **y);
int pasco_activate_grad(pasco_activation f, const pasco_tensor *y,
    const pasco_tensor *dy, pasco_tensor **dx);

typedef enum pasco_combiner {
	PASCO_COMBINE_SUM  = 1,
	PASCO_COMBINE_MEAN = 2,
} pasco_combiner;

/* Combines embedding rows [batch, k, dim] (a gather of ids [batch, k])
 * into [batch, dim]; and the gradient back to the rows. */
int pasco_embedding_combine(
    const pasco_tensor *rows, pasco_combiner c, pasco_tensor **out);
int pasco_embedding_combine_grad(const pasco_tensor *dout, int64_t k,
    pasco_combiner c, pasco_tensor **drows);

/* The message of the last op that failed on this thread ("" if none):
 * the op's name, then the shapes and dtypes it was given and what was
 * wrong. Thread-safe (each thread has its own). */
const char *pasco_ops_last_error(void);

/* The losses take predictions (or logits) as f32 and labels as f32, f64,
 * i32 or i64, so the labels the data layer gives (an int64 Example feature
 * or CSV column is i64, a float one f32) go in as they are; u8 tensors,
 * which hold bytes, are refused. Labels and predictions need the same
 * element count (their shapes may differ: [batch] against [batch, 1]). */

/* Mean squared error of pred (f32) against target (f32, f64, i32 or i64,
 * the same element count). */
int pasco_mse(const pasco_tensor *pred, const pasco_tensor *target,
    double *loss, pasco_tensor **dpred);

/* Binary cross-entropy of probabilities (f32, clipped to [1e-7, 1 - 1e-7]
 * as Keras does) or of logits (f32), against labels in {0, 1} (f32, f64,
 * i32 or i64) of the same count. As Keras's clip, the clip passes no
 * gradient: a probability outside [1e-7, 1 - 1e-7] gets 0 in *dprob (the
 * loss is flat there, at -log(1e-7) = 16.118 for a wrong label). */
int pasco_binary_crossentropy(const pasco_tensor *prob,
    const pasco_tensor *labels, double *loss, pasco_tensor **dprob);
int pasco_binary_crossentropy_logits(const pasco_tensor *logits,
    const pasco_tensor *labels, double *loss, pasco_tensor **dlogits);

/* Softmax cross-entropy of logits (f32 [batch, classes]) against class
 * ids (i32 or i64, batch of them, each in [0, classes)). */
int pasco_softmax_crossentropy(const pasco_tensor *logits,
    const pasco_tensor *labels, double *loss, pasco_tensor **dlogits);

/* L2 regularisation (Keras's l2 * sum(w^2)): returns the penalty and, when
 * grad is not NULL (w's shape), adds 2 * l2 * w to it. */
double pasco_l2_penalty(const pasco_tensor *w, double l2, pasco_tensor *grad);

#endif
