/*
 * The gradient tape: automatic differentiation for step functions, with
 * tf.GradientTape's contract. Ops on a tape (pasco_t_*) compute their
 * value at once and record what their backward needs; pasco_tape_gradient
 * then walks the record backwards from a scalar to the watched sources.
 *
 *     pasco_tape *tp;
 *     pasco_tape_alloc(&tp, true, 42);              // training, seed 42
 *     pasco_tnode *x = pasco_tape_constant(tp, batch);      // [32, 64]
 *     pasco_tnode *w = pasco_tape_watch(tp, kernel);        // [80, 10]
 *     pasco_tnode *b = pasco_tape_watch(tp, bias);          // [10]
 *     pasco_tnode *e = pasco_tape_watch_rows(tp, ids, rows); // [n, 16]
 *     pasco_tnode *h = pasco_t_concat(tp, 2, (pasco_tnode *[]){
 *         x, pasco_t_embedding_lookup(tp, e, cats, PASCO_COMBINE_MEAN)}, -1);
 *     pasco_tnode *y = pasco_t_bias_add(tp, pasco_t_matmul(tp, h, w,
 *         false, false), b);
 *     pasco_tnode *loss = pasco_t_softmax_crossentropy(tp, y, labels);
 *     pasco_tape_grad g[3];
 *     if (pasco_tape_gradient(tp, loss, 3, (pasco_tnode *[]){w, b, e}, g))
 *             fprintf(stderr, "%s\n", pasco_tape_message(tp));
 *     // g[0].dense, g[1].dense: dense; g[2].ids + g[2].rows: sparse
 *     pasco_tape_grad_fini(g, 3);
 *     pasco_tape_free(tp);     // every node and value at once
 *
 * With variables on ps tasks, pasco_tape_read reads a step's variables
 * (whole, or the rows its ids look up) in one round trip and watches
 * them; pasco_tape_apply sends every gradient in one mixed apply.
 *
 * Nodes. A pasco_tnode is a value on the tape: a dense f32 or f64 tensor
 * (the dtype of its inputs; mixing the two in one op is an error). Its
 * memory belongs to the tape (one arena, freed by pasco_tape_free);
 * pasco_tnode_value gives a read-only view. Leaves are made by
 * pasco_tape_constant (not differentiated), pasco_tape_watch (a variable
 * read whole: dense gradient), pasco_tape_watch_table and
 * pasco_tape_watch_rows (an embedding table, whole or the rows gathered
 * for a step: sparse gradient, read only through
 * pasco_t_embedding_lookup). A leaf holds a reference to its tensor (not
 * copied) until the tape is freed: do not write its data meanwhile.
 *
 * Errors. Ops never abort on bad input. The first error sticks to the
 * tape: the op returns NULL, pasco_tape_error gives its code and
 * pasco_tape_message a message naming the op, the shapes and the dtypes
 * ("matmul: f32[32,64] x f32[10,64]: inner dimensions 64 and 10 differ");
 * every later op on the tape does nothing and returns NULL (a NULL input
 * is accepted for that reason), so a step checks once, at the end. A
 * tape's values take at most 16 GiB in all: an op past it fails with
 * PASCO_ENOMEM naming the op, its shape and the bound (a traced graph
 * from a stranger cannot make a worker allocate without bound).
 *
 * Broadcasting. add, sub, mul, div, maximum, minimum, where and the
 * comparisons broadcast as numpy does: shapes aligned from the right, a
 * dimension of 1 (or a missing one) repeats ([b, 1] against [b, n], a
 * row [n] against [b, n], a scalar against anything); the gradient of a
 * repeated input is summed over its repeats. A row added to a matrix
 * costs what bias_add does.
 *
 * A tape is used by one thread. Not thread-safe: call from the owning
 * thread.
 */
#ifndef PASCO_TAPE_H
#define PASCO_TAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "ops.h"
#include "optimizer.h"
#include "tensor.h"
#include "variable.h"

typedef struct pasco_tape  pasco_tape;
typedef struct pasco_tnode pasco_tnode;

/* A new, empty tape. training selects dropout's behaviour (active only in
 * training); seed makes dropout's masks reproducible: the same seed and
 * the same ops give the same masks. PASCO_ENOMEM; *out NULL on failure. */
int pasco_tape_alloc(pasco_tape **out, bool training, uint64_t seed);

/* Frees the tape, its nodes and their values, and releases the tensors
 * its leaves hold. NULL is a no-op. The arena's memory is kept for the
 * calling thread's next tapes (up to 64 MB a thread, freed when the
 * thread ends), so a step that makes and frees a tape each time allocates
 * nothing after its first. */
void pasco_tape_free(pasco_tape *tp);

/* The tape's first error (PASCO_OK if none; PASCO_EINVAL for a NULL
 * tape), and its message ("" if none). The message lives as long as the
 * tape. */
int         pasco_tape_error(const pasco_tape *tp);
const char *pasco_tape_message(const pasco_tape *tp);

/* Leaves. Each holds a reference to t until the tape is freed (a
 * reference count is not the tensor's contents: t is only read, so a
 * const tensor, pasco_value_as_tensor's say, goes in as it is).
 * constant: an input that is not differentiated (features, labels).
 * watch: a source with a dense gradient of t's shape. f32 or f64. */
pasco_tnode *pasco_tape_constant(pasco_tape *tp, const pasco_tensor *t);
pasco_tnode *pasco_tape_watch(pasco_tape *tp, const pasco_tensor *t);

/* Sparse sources, for pasco_t_embedding_lookup only. watch_table: a whole
 * table [vocab, dim]. watch_rows: the rows [n, dim] of a table gathered
 * for ids [n] (i32 or i64; rows[i] is row ids[i]; repeated ids allowed).
 * Their gradient is sparse: the ids a lookup touched and one row each. */
pasco_tnode *pasco_tape_watch_table(
    pasco_tape *tp, const pasco_tensor *table);
pasco_tnode *pasco_tape_watch_rows(
    pasco_tape *tp, const pasco_tensor *ids, const pasco_tensor *rows);

/* watch_rows for a dynamic table's rows (coordinator.h): keys [n] are
 * i64 holding any 64 bits, so a lookup treats only -1 as padding (for
 * other sources every negative id is). pasco_tape_read watches a dynamic
 * table's rows this way. */
pasco_tnode *pasco_tape_watch_keys(
    pasco_tape *tp, const pasco_tensor *keys, const pasco_tensor *rows);

/* A read-only view of a node's value, valid until the tape is freed (do
 * not hold or release it). NULL for NULL. */
const pasco_tensor *pasco_tnode_value(const pasco_tnode *n);

/* Linear algebra and arithmetic. matmul: rank 2 (or 3, below), op(a)
 * op(b), op transposing when asked. add, sub, mul: elementwise with
 * broadcasting (above). scale: a * s. bias_add: x [..., n] + bias [n]. */
pasco_tnode *pasco_t_matmul(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b,
    bool transpose_a, bool transpose_b);
pasco_tnode *pasco_t_add(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_sub(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_mul(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_scale(pasco_tape *tp, pasco_tnode *a, double s);
pasco_tnode *pasco_t_bias_add(
    pasco_tape *tp, pasco_tnode *x, pasco_tnode *bias);

/* Activations, elementwise; softmax over the last axis. */
pasco_tnode *pasco_t_relu(pasco_tape *tp, pasco_tnode *x);
pasco_tnode *pasco_t_sigmoid(pasco_tape *tp, pasco_tnode *x);
pasco_tnode *pasco_t_tanh(pasco_tape *tp, pasco_tnode *x);
pasco_tnode *pasco_t_softmax(pasco_tape *tp, pasco_tnode *x);

/* Keras's Dropout: in training, each element is zeroed with probability
 * rate and the others scaled by 1 / (1 - rate), the mask drawn from the
 * tape's seed and the op's position on the tape; otherwise (and at rate
 * 0) the identity. rate in [0, 1). Two tapes with one seed draw the same
 * masks: give each step its own seed (the global step mixed in, say). */
pasco_tnode *pasco_t_dropout(pasco_tape *tp, pasco_tnode *x, double rate);

/* Shapes. reshape: the same elements in a new shape; one dimension may be
 * -1 (inferred). concat: n tensors of one rank along axis (negative counts
 * from the end: -1 is the last), the other dimensions equal. */
pasco_tnode *pasco_t_reshape(
    pasco_tape *tp, pasco_tnode *x, int32_t rank, const int64_t *shape);
pasco_tnode *pasco_t_concat(
    pasco_tape *tp, size_t n, pasco_tnode *const *xs, int32_t axis);

/* Reductions over one axis (removed from the shape; negative counts from
 * the end), or over every axis to a scalar with PASCO_T_ALL_AXES. */
#define PASCO_T_ALL_AXES INT32_MIN
pasco_tnode *pasco_t_reduce_sum(pasco_tape *tp, pasco_tnode *x, int32_t axis);
pasco_tnode *pasco_t_reduce_mean(pasco_tape *tp, pasco_tnode *x, int32_t axis);

/* Embedding lookup from a sparse source (watch_table or watch_rows): ids
 * (i32 or i64) [batch, k] or [batch] (k = 1), several ids per example
 * combined by sum or mean into [batch, dim]. A negative id is padding
 * (no id): an example's mean is over its ids present, and an example
 * without any gets zeros. An id outside the table, or not among the
 * gathered ids, is an error. ids is only read during the call. */
pasco_tnode *pasco_t_embedding_lookup(pasco_tape *tp, pasco_tnode *table,
    const pasco_tensor *ids, pasco_combiner combiner);

/* Losses: scalars (rank 0), means over every element as the kernels in
 * ops.h compute them (labels and targets are not differentiated; they
 * are only read during the call). mse: target of pred's element count.
 * binary_crossentropy: probabilities clipped to [1e-7, 1 - 1e-7] as Keras
 * does (the output of pasco_t_sigmoid is taken through its input, the
 * logits, as Keras does too), or logits; labels of the same count.
 * softmax_crossentropy: logits [batch, classes], labels class ids (i32 or i64)
 * [batch], or class probabilities (f32 or f64 [batch, classes], one-hot for
 * Keras's categorical_crossentropy): the mean over the batch of -sum_j
 * labels_j log softmax(logits)_j. */
pasco_tnode *pasco_t_mse(
    pasco_tape *tp, pasco_tnode *pred, const pasco_tensor *target);
pasco_tnode *pasco_t_binary_crossentropy(
    pasco_tape *tp, pasco_tnode *prob, const pasco_tensor *labels);
pasco_tnode *pasco_t_binary_crossentropy_logits(
    pasco_tape *tp, pasco_tnode *logits, const pasco_tensor *labels);
pasco_tnode *pasco_t_softmax_crossentropy(
    pasco_tape *tp, pasco_tnode *logits, const pasco_tensor *labels);

/* Keras's Normalization: (x - mean) / max(sqrt(variance), 1e-7) over the
 * last axis of x, mean and variance (f32 or f64 of that axis' length)
 * being constants (only read during the call; no gradient reaches them).
 * The gradient to x is its own divided by that denominator. */
pasco_tnode *pasco_t_normalize(pasco_tape *tp, pasco_tnode *x,
    const pasco_tensor *mean, const pasco_tensor *variance);

/* Keras's l2 regulariser: l2 * sum(w^2), a scalar. */
pasco_tnode *pasco_t_l2(pasco_tape *tp, pasco_tnode *w, double l2);

/* One source's gradient. Dense (watch): dense has the source's dtype and
 * shape. Sparse (watch_table, watch_rows): ids (i64 [n], ascending, each
 * once) and rows [n, dim], the contributions of repeated ids summed; ids
 * index the table. Every field NULL when the target does not depend on
 * the source (TensorFlow's None). The tensors are owned by the caller. */
typedef struct pasco_tape_grad {
	pasco_tensor *dense;
	pasco_tensor *ids;
	pasco_tensor *rows;
} pasco_tape_grad;

/* The gradients of target (a node of one element) with respect to
 * sources[0..n) (leaves made by watch, watch_table or watch_rows), into
 * grads[0..n). May be called more than once on one tape. On failure
 * (the tape's error, or PASCO_EINVAL for a bad target or source, also
 * recorded on the tape) every field of grads is NULL. */
int pasco_tape_gradient(pasco_tape *tp, pasco_tnode *target, size_t n,
    pasco_tnode *const *sources, pasco_tape_grad *grads);

/* Releases the tensors of grads[0..n) and sets them NULL. */
void pasco_tape_grad_fini(pasco_tape_grad *grads, size_t n);

/* A variable of a step, read onto a tape by pasco_tape_read. ids NULL:
 * the variable is read whole and watched (a dense source). Otherwise ids
 * (i32 or i64, any shape, negative ids ignored as padding) are the ids the
 * step will look up: the rows of the distinct ones are gathered and
 * watched as a sparse source (pasco_tape_watch_rows), for
 * pasco_t_embedding_lookup with those ids. ids is only read during the
 * call. node is set by pasco_tape_read. */
typedef struct pasco_tape_var {
	pasco_variable     *var;
	const pasco_tensor *ids;
	pasco_tnode        *node;
} pasco_tape_var;

/* Reads vars[0..n) onto tp with every shard request in flight together
 * (pasco_variable_read_mixed): one round trip for the step. Sets each
 * vars[k].node. A dynamic table's rows are looked up as training does
 * (unseen keys get rows) only on a training tape; on another, keys
 * without a row read the table's default and nothing is inserted. On failure the tape's error is set (the variable's
 * message in it) and returned; no node is set. Blocks. */
int pasco_tape_read(pasco_tape *tp, size_t n, pasco_tape_var *vars);

/* The gradients of loss with respect to vars[0..n) (read by
 * pasco_tape_read), applied with opt in one
 * pasco_variable_apply_gradients_mixed: dense ones whole, sparse ones as
 * ids and rows, every request in flight together and, with
 * opt->iterations, one global step. A variable the loss does not depend
 * on is left out (Keras skips a None gradient); none at all is
 * PASCO_EINVAL. The updates a training forward pass recorded (a
 * BatchNormalization's moving statistics, layers.h) travel in the same
 * requests, each an assign_add of its variable, which must be among
 * vars; they are sent once (a second apply on the tape sends none), and
 * not at all when the step is dropped as stale (SSP). On failure the
 * tape's error is set and returned. Blocks. */
int pasco_tape_apply(pasco_tape *tp, pasco_tnode *loss, size_t n,
    const pasco_tape_var *vars, const pasco_optimizer *opt);

/* ---- more ops (docs/GRAPHS.md's table), each numpy's or Keras's ---- */

/* Elementwise with broadcasting (above): a / b, and the larger (smaller)
 * of a and b, whose gradient goes to that input, to a on ties. */
pasco_tnode *pasco_t_div(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_maximum(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_minimum(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);

/* Comparisons with broadcasting: 1 where a > b (>=, <, <=, ==, !=) and 0
 * elsewhere, of a's dtype; no gradient flows through them. */
pasco_tnode *pasco_t_greater(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_greater_equal(
    pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_less(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_less_equal(
    pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_equal(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_not_equal(
    pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);

/* x where cond is nonzero, else y, the three broadcast together. cond:
 * any dtype (a node's value, pasco_tnode_value, or integers), only read
 * during the call; the gradient goes to x where cond is true, to y
 * elsewhere. */
pasco_tnode *pasco_t_where(pasco_tape *tp, const pasco_tensor *cond,
    pasco_tnode *x, pasco_tnode *y);

/* Elementwise: e^x, ln x, sqrt x, x^2, |x| (gradient 0 at 0), -x. */
pasco_tnode *pasco_t_exp(pasco_tape *tp, pasco_tnode *x);
pasco_tnode *pasco_t_log(pasco_tape *tp, pasco_tnode *x);
pasco_tnode *pasco_t_sqrt(pasco_tape *tp, pasco_tnode *x);
pasco_tnode *pasco_t_square(pasco_tape *tp, pasco_tnode *x);
pasco_tnode *pasco_t_abs(pasco_tape *tp, pasco_tnode *x);
pasco_tnode *pasco_t_negative(pasco_tape *tp, pasco_tnode *x);

/* x clipped to [min, max] (min <= max), Keras's clip: the gradient passes
 * where min <= x <= max and is 0 outside. */
pasco_tnode *pasco_t_clip(
    pasco_tape *tp, pasco_tnode *x, double min, double max);

/* Reductions over axes[0..naxes) (negative from the end, each once;
 * axes NULL: every axis), the reduced axes kept as 1 with keepdims.
 * reduce_max's gradient goes to the first maximum in row-major order. A
 * mean or a maximum of no elements is an error. */
pasco_tnode *pasco_t_reduce_sum_axes(pasco_tape *tp, pasco_tnode *x,
    size_t naxes, const int32_t *axes, bool keepdims);
pasco_tnode *pasco_t_reduce_mean_axes(pasco_tape *tp, pasco_tnode *x,
    size_t naxes, const int32_t *axes, bool keepdims);
pasco_tnode *pasco_t_reduce_max(pasco_tape *tp, pasco_tnode *x,
    size_t naxes, const int32_t *axes, bool keepdims);

/* The index of the first maximum along axis: an i64 tensor of x's shape
 * without that axis, owned by the tape (valid until it is freed; do not
 * release it). NULL on error. */
const pasco_tensor *pasco_t_argmax(
    pasco_tape *tp, pasco_tnode *x, int32_t axis);

/* softmax and log_softmax over axis (negative from the end). */
pasco_tnode *pasco_t_softmax_axis(
    pasco_tape *tp, pasco_tnode *x, int32_t axis);
pasco_tnode *pasco_t_log_softmax(
    pasco_tape *tp, pasco_tnode *x, int32_t axis);

/* x / sqrt(max(sum(x^2 along axis), epsilon)), TensorFlow's. */
pasco_tnode *pasco_t_l2_normalize(
    pasco_tape *tp, pasco_tnode *x, int32_t axis, double epsilon);

/* Shapes. transpose: out.shape[d] = x.shape[perm[d]] (perm NULL: the
 * axes reversed). expand_dims: a dimension of 1 inserted at axis (in
 * [-rank - 1, rank]). squeeze: axis, of size 1, removed. slice: size[d]
 * elements from begin[d] in each dimension (-1: to the end). */
pasco_tnode *pasco_t_transpose(
    pasco_tape *tp, pasco_tnode *x, const int32_t *perm);
pasco_tnode *pasco_t_expand_dims(
    pasco_tape *tp, pasco_tnode *x, int32_t axis);
pasco_tnode *pasco_t_squeeze(pasco_tape *tp, pasco_tnode *x, int32_t axis);
pasco_tnode *pasco_t_slice(pasco_tape *tp, pasco_tnode *x,
    const int64_t *begin, const int64_t *size);

/* params' slices along axis picked by indices (i32 or i64, any shape,
 * each in [0, params.shape[axis])): the shape params.shape[:axis] +
 * indices.shape + params.shape[axis+1:], TensorFlow's gather. The
 * gradient scatter-adds (a repeated index gets the sum). indices is only
 * read during the call. */
pasco_tnode *pasco_t_gather(pasco_tape *tp, pasco_tnode *params,
    const pasco_tensor *indices, int32_t axis);

/* indices (i32 or i64, any shape) as one-hot rows of depth: a node of
 * dtype (f32 or f64) of shape indices.shape + [depth], an index outside
 * [0, depth) giving a row of zeros, as TensorFlow's. Not differentiated;
 * indices is only read during the call. */
pasco_tnode *pasco_t_one_hot(pasco_tape *tp, const pasco_tensor *indices,
    int64_t depth, pasco_dtype dtype);

/* matmul (above) also takes two rank 3 inputs: [batch, m, k] x [batch,
 * k, n], batch dimensions equal, transposes on the last two axes.
 * dot: numpy's for ranks 1 and 2 ([n].[n] a scalar, [m,n].[n] [m],
 * [n].[n,k] [k], [m,n].[n,k] [m,k]). batch_dot: Keras's, x and y of rank 2
 * or 3 with one batch, contracting axis_x of x with axis_y of y (each
 * past the batch); [b,n].[b,n] on [1, 1] gives [b, 1]. */
pasco_tnode *pasco_t_dot(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b);
pasco_tnode *pasco_t_batch_dot(pasco_tape *tp, pasco_tnode *x,
    pasco_tnode *y, int32_t axis_x, int32_t axis_y);

/* stop_gradient: x's value, with no gradient flowing back to x. cast:
 * x's value as dtype (f32 or f64), the gradient cast back. */
pasco_tnode *pasco_t_stop_gradient(pasco_tape *tp, pasco_tnode *x);
pasco_tnode *pasco_t_cast(pasco_tape *tp, pasco_tnode *x, pasco_dtype dtype);

#endif
