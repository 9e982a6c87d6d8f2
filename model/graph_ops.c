/*
 * The op table of graphs (model/graph_ops.h, docs/GRAPHS.md's "Ops"): one
 * row per op name with its arity, its attribute keys, a parse that reads
 * the attributes from the node's JSON once (when the graph is read) and a
 * run that calls the tape ops (include/pasco/tape.h). Values are nodes or
 * integer tensors (pasci_gval): an integer given where a float is wanted
 * becomes a constant node of the float's dtype, as numpy promotes, and a
 * node whose dtype is an integer one gets its value truncated into an
 * integer tensor. Constant tables, no state: any thread.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph_attrs.h"
#include "graph_ops.h"
#include "model_impl.h"
#include "tape_ops_impl.h"

/* ---- values: nodes and integer tensors ---- */

static bool
is_int(pasco_dtype dt)
{
	return dt == PASCO_I32 || dt == PASCO_I64;
}

/* The float dtype an op on in[0..n) runs in: its first node's, else the
 * node's own when a float one, else f64. */
static pasco_dtype
float_dtype(size_t n, const pasci_gval *in, const pasci_graph_attrs *a)
{
	for (size_t k = 0; k < n; k++) {
		if (in[k].node != NULL) {
			return pasco_tnode_value(in[k].node)->dtype;
		}
	}
	return a->dtype == PASCO_F32 ? PASCO_F32 : PASCO_F64;
}

/* v as a node of dt: an integer tensor becomes a constant node. */
static pasco_tnode *
as_node(pasco_tape *tp, const pasci_gval *v, pasco_dtype dt)
{
	const pasco_tensor *t = v->ints;
	pasco_tnode        *n;
	if (v->node != NULL || pasco_tape_error(tp) != PASCO_OK) {
		return v->node;
	}
	if (t == NULL || !is_int(t->dtype)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "graph: a value is neither a node nor an i32 or i64 "
		    "tensor");
	}
	n = pasci_t_fill(tp, dt, t->rank, t->shape, 0);
	for (int64_t i = 0; n != NULL && i < t->count; i++) {
		pasci_st(dt, n->value.data, i, (double) pasci_id_at(t, i));
	}
	return n;
}

/* v's value as a tensor (a node's, or the integers). */
static const pasco_tensor *
value_of(const pasci_gval *v)
{
	return v->node != NULL ? pasco_tnode_value(v->node) : v->ints;
}

/* v as an integer tensor of dt: a node's values truncated. */
static const pasco_tensor *
as_ints(pasco_tape *tp, const pasci_gval *v, pasco_dtype dt)
{
	const pasco_tensor *src = value_of(v);
	pasco_tensor       *t;
	if (src == NULL ||
	    (t = pasci_graph_ints(tp, dt, src->rank, src->shape)) == NULL) {
		return NULL;
	}
	for (int64_t i = 0; i < t->count; i++) {
		double x = pasco_tensor_get(src, i);
		if (dt == PASCO_I64) {
			((int64_t *) t->data)[i] = (int64_t) trunc(x);
		} else {
			((int32_t *) t->data)[i] = (int32_t) trunc(x);
		}
	}
	return t;
}

/* *out = n, or n's values truncated to integers when the node's dtype is
 * an integer one. */
static bool
put(pasco_tape *tp, pasco_tnode *n, const pasci_graph_attrs *a,
    pasci_gval *out)
{
	*out = (pasci_gval){0};
	if (n == NULL) {
		return false;
	}
	if (is_int(a->dtype)) {
		out->ints = as_ints(tp, &(pasci_gval){.node = n}, a->dtype);
		return out->ints != NULL;
	}
	out->node = n;
	return true;
}

static bool
put_ints(const pasco_tensor *t, pasci_gval *out)
{
	*out = (pasci_gval){.ints = t};
	return t != NULL;
}

/* ---- runs ---- */

#define RUN_ARGS                                                              \
	pasco_tape *tp, size_t n, const pasci_gval *in,                       \
	    const pasci_graph_attrs *a, pasci_gval *out

typedef pasco_tnode *(*bin_fn)(pasco_tape *, pasco_tnode *, pasco_tnode *);
typedef pasco_tnode *(*un_fn)(pasco_tape *, pasco_tnode *);

static bool
run_bin(pasco_tape *tp, bin_fn f, const pasci_gval *in,
    const pasci_graph_attrs *a, pasci_gval *out)
{
	pasco_dtype dt = float_dtype(2, in, a);
	return put(tp, f(tp, as_node(tp, &in[0], dt), as_node(tp, &in[1], dt)),
	    a, out);
}

static bool
run_un(pasco_tape *tp, un_fn f, const pasci_gval *in,
    const pasci_graph_attrs *a, pasci_gval *out)
{
	return put(
	    tp, f(tp, as_node(tp, &in[0], float_dtype(1, in, a))), a, out);
}

#define BIN(op, fn)                                                           \
	static bool run_##op(RUN_ARGS)                                        \
	{                                                                     \
		(void) n;                                                     \
		return run_bin(tp, fn, in, a, out);                           \
	}
#define UN(op, fn)                                                            \
	static bool run_##op(RUN_ARGS)                                        \
	{                                                                     \
		(void) n;                                                     \
		return run_un(tp, fn, in, a, out);                            \
	}

BIN(add, pasco_t_add)
BIN(subtract, pasco_t_sub)
BIN(multiply, pasco_t_mul)
BIN(divide, pasco_t_div)
BIN(maximum, pasco_t_maximum)
BIN(minimum, pasco_t_minimum)
BIN(greater, pasco_t_greater)
BIN(greater_equal, pasco_t_greater_equal)
BIN(less, pasco_t_less)
BIN(less_equal, pasco_t_less_equal)
BIN(equal, pasco_t_equal)
BIN(not_equal, pasco_t_not_equal)
BIN(dot, pasco_t_dot)
UN(exp, pasco_t_exp)
UN(log, pasco_t_log)
UN(sqrt, pasco_t_sqrt)
UN(square, pasco_t_square)
UN(abs, pasco_t_abs)
UN(negative, pasco_t_negative)
UN(sigmoid, pasco_t_sigmoid)
UN(relu, pasco_t_relu)
UN(tanh, pasco_t_tanh)
UN(stop_gradient, pasco_t_stop_gradient)

/* in[0] as a float node (every run of one input starts so). */
#define X0 as_node(tp, &in[0], float_dtype(1, in, a))

static bool
run_matmul(RUN_ARGS)
{
	pasco_dtype dt = float_dtype(2, in, a);
	(void) n;
	return put(tp,
	    pasco_t_matmul(tp, as_node(tp, &in[0], dt),
	        as_node(tp, &in[1], dt), a->b[0], a->b[1]),
	    a, out);
}

static bool
run_batch_dot(RUN_ARGS)
{
	pasco_dtype dt = float_dtype(2, in, a);
	(void) n;
	return put(tp,
	    pasco_t_batch_dot(tp, as_node(tp, &in[0], dt),
	        as_node(tp, &in[1], dt), (int32_t) a->list2[0],
	        (int32_t) a->list2[1]),
	    a, out);
}

typedef pasco_tnode *(*red_fn)(
    pasco_tape *, pasco_tnode *, size_t, const int32_t *, bool);

static bool
run_red(pasco_tape *tp, red_fn f, const pasci_gval *in,
    const pasci_graph_attrs *a, pasci_gval *out)
{
	int32_t axes[PASCI_GRAPH_MAX_LIST];
	for (size_t k = 0; k < a->nlist; k++) {
		axes[k] = (int32_t) a->list[k];
	}
	return put(
	    tp, f(tp, X0, a->nlist, a->all ? NULL : axes, a->b[0]), a, out);
}

static bool
run_reduce_sum(RUN_ARGS)
{
	(void) n;
	return run_red(tp, pasco_t_reduce_sum_axes, in, a, out);
}

static bool
run_reduce_mean(RUN_ARGS)
{
	(void) n;
	return run_red(tp, pasco_t_reduce_mean_axes, in, a, out);
}

static bool
run_reduce_max(RUN_ARGS)
{
	(void) n;
	return run_red(tp, pasco_t_reduce_max, in, a, out);
}

static bool
run_concat(RUN_ARGS)
{
	pasco_tnode *xs[64];
	pasco_dtype  dt = float_dtype(n, in, a);
	if (n > 64) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		           "concat: %zu inputs: at most 64", n) != NULL;
	}
	for (size_t k = 0; k < n; k++) {
		xs[k] = as_node(tp, &in[k], dt);
	}
	return put(tp, pasco_t_concat(tp, n, xs, (int32_t) a->axis), a, out);
}

static bool
run_reshape(RUN_ARGS)
{
	(void) n;
	return put(
	    tp, pasco_t_reshape(tp, X0, (int32_t) a->nlist, a->list), a, out);
}

/* The list's length against x's rank (transpose, slice). */
static bool
rank_fits(pasco_tape *tp, const char *op, const char *what, pasco_tnode *x,
    size_t len)
{
	if (x != NULL && (size_t) pasco_tnode_value(x)->rank != len) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: %s has %zu entries for %s", op, what, len,
		    PASCI_SPEC(x));
		return false;
	}
	return x != NULL;
}

static bool
run_transpose(RUN_ARGS)
{
	int32_t      perm[PASCI_GRAPH_MAX_LIST];
	pasco_tnode *x = X0;
	(void) n;
	if (!a->all && !rank_fits(tp, "transpose", "perm", x, a->nlist)) {
		return false;
	}
	for (size_t k = 0; k < a->nlist; k++) {
		perm[k] = (int32_t) a->list[k];
	}
	return put(tp, pasco_t_transpose(tp, x, a->all ? NULL : perm), a, out);
}

static bool
run_expand_dims(RUN_ARGS)
{
	(void) n;
	return put(tp, pasco_t_expand_dims(tp, X0, (int32_t) a->axis), a, out);
}

static bool
run_squeeze(RUN_ARGS)
{
	(void) n;
	return put(tp, pasco_t_squeeze(tp, X0, (int32_t) a->axis), a, out);
}

static bool
run_slice(RUN_ARGS)
{
	pasco_tnode *x = X0;
	(void) n;
	return rank_fits(tp, "slice", "begin", x, a->nlist) &&
	       put(tp, pasco_t_slice(tp, x, a->list, a->list2), a, out);
}

static bool
run_gather(RUN_ARGS)
{
	pasco_tnode *x = X0;
	(void) n;
	if (in[1].ints == NULL) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		           "gather: the indices (in[1]) are %s: want i32 or "
		           "i64",
		           in[1].node ? PASCI_SPEC(in[1].node) : "missing") !=
		       NULL;
	}
	return put(
	    tp, pasco_t_gather(tp, x, in[1].ints, (int32_t) a->axis), a, out);
}

static bool
run_one_hot(RUN_ARGS)
{
	pasco_dtype dt =
	    is_int(a->dtype) || a->dtype == 0 ? PASCO_F32 : a->dtype;
	(void) n;
	if (in[0].ints == NULL) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		           "one_hot: in[0] is %s: want i32 or i64 indices",
		           in[0].node ? PASCI_SPEC(in[0].node) : "missing") !=
		       NULL;
	}
	return put(tp, pasco_t_one_hot(tp, in[0].ints, a->axis, dt), a, out);
}

static bool
run_clip(RUN_ARGS)
{
	(void) n;
	return put(tp, pasco_t_clip(tp, X0, a->f[0], a->f[1]), a, out);
}

static bool
run_where(RUN_ARGS)
{
	pasco_dtype dt = float_dtype(2, in + 1, a);
	(void) n;
	if (value_of(&in[0]) == NULL) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		           "where: the condition has no value") != NULL;
	}
	return put(tp,
	    pasco_t_where(tp, value_of(&in[0]), as_node(tp, &in[1], dt),
	        as_node(tp, &in[2], dt)),
	    a, out);
}

static bool
run_argmax(RUN_ARGS)
{
	const pasco_tensor *t = pasco_t_argmax(tp, X0, (int32_t) a->axis);
	(void) n;
	if (t != NULL && a->dtype == PASCO_I32) {
		t = as_ints(tp, &(pasci_gval){.ints = t}, PASCO_I32);
	}
	return put_ints(t, out);
}

static bool
run_softmax(RUN_ARGS)
{
	(void) n;
	return put(
	    tp, pasco_t_softmax_axis(tp, X0, (int32_t) a->axis), a, out);
}

static bool
run_log_softmax(RUN_ARGS)
{
	(void) n;
	return put(tp, pasco_t_log_softmax(tp, X0, (int32_t) a->axis), a, out);
}

static bool
run_l2_normalize(RUN_ARGS)
{
	(void) n;
	return put(tp,
	    pasco_t_l2_normalize(tp, X0, (int32_t) a->axis, a->f[0]), a, out);
}

/* To the node's dtype: float to float on the tape (the gradient cast
 * back), to an integer truncating toward zero, integers converted. */
static bool
run_cast(RUN_ARGS)
{
	(void) n;
	if (is_int(a->dtype)) {
		return put_ints(as_ints(tp, &in[0], a->dtype), out);
	}
	if (a->dtype != PASCO_F32 && a->dtype != PASCO_F64) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		           "cast: dtype %d is not float32, float64, int32 or "
		           "int64",
		           (int) a->dtype) != NULL;
	}
	if (in[0].node == NULL) {
		return put(tp, as_node(tp, &in[0], a->dtype), a, out);
	}
	return put(tp, pasco_t_cast(tp, in[0].node, a->dtype), a, out);
}

static bool
run_dropout(RUN_ARGS)
{
	(void) n;
	return put(tp, pasco_t_dropout(tp, X0, a->f[0]), a, out);
}

static bool
run_arange_like(RUN_ARGS)
{
	const pasco_tensor *v = value_of(&in[0]);
	pasco_tensor       *t;
	int64_t             axis = a->axis, len;
	(void) n;
	if (v == NULL || pasco_tape_error(tp) != PASCO_OK) {
		return false;
	}
	axis += axis < 0 ? v->rank : 0;
	if (axis < 0 || axis >= v->rank) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		           "arange_like: %s: axis %lld is outside [-%d, %d)",
		           PASCI_TSPEC(v), (long long) a->axis, (int) v->rank,
		           (int) v->rank) != NULL;
	}
	len = v->shape[axis];
	if ((t = pasci_graph_ints(tp, PASCO_I64, 1, &len)) == NULL) {
		return false;
	}
	for (int64_t i = 0; i < len; i++) {
		((int64_t *) t->data)[i] = i;
	}
	return put_ints(t, out);
}

/* ---- losses (Keras's argument order: y_true, y_pred) ---- */

#define LOSS_EPSILON 1e-7 /* Keras's backend epsilon */

/* The input of p when p is op (softmax over its last axis, sigmoid):
 * Keras computes a cross-entropy of probabilities from their logits. */
static pasco_tnode *
logits_of(pasco_tnode *p, const char *op)
{
	/* softmax over the last axis: ops_act.c's (i[1] 0) or an inner
	 * size of 1 (ops_math.c's) */
	if (p != NULL && p->op != NULL && strcmp(p->op->name, op) == 0 &&
	    p->nin == 1 && (strcmp(op, "softmax") != 0 || p->i[1] <= 1)) {
		return p->in[0];
	}
	return NULL;
}

/* Keras's logits of probabilities, which its binary cross-entropy of one
 * loss per example is taken through: the sigmoid's input when p is a
 * sigmoid's output (no saturation, no clipped gradient), else
 * log(c) - log(1 - c) of c = clip(p, eps, 1 - eps). */
static bool
run_logit(RUN_ARGS)
{
	pasco_tnode        *p = X0;
	pasco_tnode        *z = logits_of(p, "sigmoid");
	pasco_tnode        *c, *one;
	const pasco_tensor *v;
	(void) n;
	if (z != NULL) {
		return put(tp, z, a, out);
	}
	c = pasco_t_clip(tp, p, LOSS_EPSILON, 1 - LOSS_EPSILON);
	if (c == NULL || (v = pasco_tnode_value(c)) == NULL) {
		return put(tp, NULL, a, out);
	}
	one = pasci_t_fill(tp, v->dtype, v->rank, v->shape, 1.0);
	return put(tp,
	    pasco_t_sub(tp, pasco_t_log(tp, c),
	        pasco_t_log(tp, pasco_t_sub(tp, one, c))),
	    a, out);
}

/* Keras's log-probabilities over the last axis, which its categorical
 * cross-entropy of one loss per example is taken from: log_softmax of
 * the softmax's input when p is a softmax's output, else log(clip(p /
 * sum(p))). */
static bool
run_log_probs(RUN_ARGS)
{
	pasco_tnode *p    = X0;
	pasco_tnode *z    = logits_of(p, "softmax");
	int32_t      last = -1;
	pasco_tnode *q;
	(void) n;
	if (z != NULL) {
		return put(tp, pasco_t_log_softmax(tp, z, -1), a, out);
	}
	q = pasco_t_div(tp, p, pasco_t_reduce_sum_axes(tp, p, 1, &last, true));
	return put(tp,
	    pasco_t_log(
	        tp, pasco_t_clip(tp, q, LOSS_EPSILON, 1 - LOSS_EPSILON)),
	    a, out);
}

static bool
run_sparse_categorical_crossentropy(RUN_ARGS)
{
	pasco_tnode        *p = as_node(tp, &in[1], float_dtype(1, in + 1, a));
	pasco_tnode        *z = a->b[0] ? p : logits_of(p, "softmax");
	const pasco_tensor *y = in[0].ints;
	(void) n;
	if (y == NULL && in[0].node != NULL) { /* Keras casts the labels */
		y = as_ints(tp, &in[0], PASCO_I64);
	}
	if (z == NULL && p != NULL) { /* log(clip(p)): Keras's own logits */
		z = pasco_t_log(
		    tp, pasco_t_clip(tp, p, LOSS_EPSILON, 1 - LOSS_EPSILON));
	}
	return put(tp, pasco_t_softmax_crossentropy(tp, z, y), a, out);
}

/* -sum(y log(clip(p / sum p))) over the last axis, the batch's mean. */
static pasco_tnode *
cce_probs(pasco_tape *tp, pasco_tnode *y, pasco_tnode *p)
{
	int32_t      last = -1;
	pasco_tnode *q =
	    pasco_t_div(tp, p, pasco_t_reduce_sum_axes(tp, p, 1, &last, true));
	pasco_tnode *c = pasco_t_clip(tp, q, LOSS_EPSILON, 1 - LOSS_EPSILON);
	pasco_tnode *s = pasco_t_reduce_sum_axes(
	    tp, pasco_t_mul(tp, y, pasco_t_log(tp, c)), 1, &last, false);
	return pasco_t_reduce_mean_axes(
	    tp, pasco_t_negative(tp, s), 0, NULL, false);
}

static bool
run_categorical_crossentropy(RUN_ARGS)
{
	pasco_dtype  dt = float_dtype(1, in + 1, a);
	pasco_tnode *p  = as_node(tp, &in[1], dt);
	pasco_tnode *y  = as_node(tp, &in[0], dt);
	pasco_tnode *z  = a->b[0] ? p : logits_of(p, "softmax");
	(void) n;
	if (z == NULL) {
		return put(tp, cce_probs(tp, y, p), a, out);
	}
	return put(tp,
	    pasco_t_softmax_crossentropy(tp, z, pasco_tnode_value(y)), a, out);
}

static bool
run_binary_crossentropy(RUN_ARGS)
{
	pasco_tnode        *p = as_node(tp, &in[1], float_dtype(1, in + 1, a));
	pasco_tnode        *z = a->b[0] ? p : logits_of(p, "sigmoid");
	const pasco_tensor *y = value_of(&in[0]);
	(void) n;
	if (z != NULL) {
		return put(
		    tp, pasco_t_binary_crossentropy_logits(tp, z, y), a, out);
	}
	return put(tp, pasco_t_binary_crossentropy(tp, p, y), a, out);
}

/* mean((y_pred - y_true)^2); through the tape's subtraction when y_true
 * is differentiated too (a target computed from weights). */
static bool
run_mean_squared_error(RUN_ARGS)
{
	pasco_dtype  dt = float_dtype(1, in + 1, a);
	pasco_tnode *p  = as_node(tp, &in[1], dt);
	(void) n;
	if (in[0].node != NULL && in[0].node->needs_grad) {
		return put(tp,
		    pasco_t_reduce_mean_axes(tp,
		        pasco_t_square(tp, pasco_t_sub(tp, p, in[0].node)), 0,
		        NULL, false),
		    a, out);
	}
	return put(tp, pasco_t_mse(tp, p, value_of(&in[0])), a, out);
}

/* ---- the table ---- */

/* clang-format off */
#define ROW(op, lo, hi, rd, ...)                                              \
	{.name = #op, .min_in = lo, .max_in = hi, .keys = {__VA_ARGS__},      \
	    .parse = rd, .run = run_##op}
/* clang-format on */

static const pasci_graph_op rows[] = {
    ROW(add, 2, 2, NULL, NULL),
    ROW(subtract, 2, 2, NULL, NULL),
    ROW(multiply, 2, 2, NULL, NULL),
    ROW(divide, 2, 2, NULL, NULL),
    ROW(maximum, 2, 2, NULL, NULL),
    ROW(minimum, 2, 2, NULL, NULL),
    ROW(matmul, 2, 2, pasci_graph_parse_matmul, "transpose_a", "transpose_b",
        NULL),
    ROW(dot, 2, 2, NULL, NULL),
    ROW(batch_dot, 2, 2, pasci_graph_parse_batch_dot, "axes", NULL),
    ROW(reduce_sum, 1, 1, pasci_graph_parse_reduce, "axis", "keepdims", NULL),
    ROW(reduce_mean, 1, 1, pasci_graph_parse_reduce, "axis", "keepdims", NULL),
    ROW(reduce_max, 1, 1, pasci_graph_parse_reduce, "axis", "keepdims", NULL),
    ROW(concat, 1, 64, pasci_graph_parse_axis_last, "axis", NULL),
    ROW(reshape, 1, 1, pasci_graph_parse_reshape, "shape", NULL),
    ROW(transpose, 1, 1, pasci_graph_parse_transpose, "perm", NULL),
    ROW(expand_dims, 1, 1, pasci_graph_parse_axis, "axis", NULL),
    ROW(squeeze, 1, 1, pasci_graph_parse_axis, "axis", NULL),
    ROW(slice, 1, 1, pasci_graph_parse_slice, "begin", "size", NULL),
    ROW(gather, 2, 2, pasci_graph_parse_gather, "axis", NULL),
    ROW(one_hot, 1, 1, pasci_graph_parse_one_hot, "depth", NULL),
    ROW(exp, 1, 1, NULL, NULL),
    ROW(log, 1, 1, NULL, NULL),
    ROW(sqrt, 1, 1, NULL, NULL),
    ROW(square, 1, 1, NULL, NULL),
    ROW(abs, 1, 1, NULL, NULL),
    ROW(negative, 1, 1, NULL, NULL),
    ROW(clip, 1, 1, pasci_graph_parse_clip, "min", "max", NULL),
    ROW(where, 3, 3, NULL, NULL),
    ROW(greater, 2, 2, NULL, NULL),
    ROW(greater_equal, 2, 2, NULL, NULL),
    ROW(less, 2, 2, NULL, NULL),
    ROW(less_equal, 2, 2, NULL, NULL),
    ROW(equal, 2, 2, NULL, NULL),
    ROW(not_equal, 2, 2, NULL, NULL),
    ROW(argmax, 1, 1, pasci_graph_parse_axis, "axis", NULL),
    ROW(sigmoid, 1, 1, NULL, NULL),
    ROW(relu, 1, 1, NULL, NULL),
    ROW(tanh, 1, 1, NULL, NULL),
    ROW(softmax, 1, 1, pasci_graph_parse_axis_last, "axis", NULL),
    ROW(log_softmax, 1, 1, pasci_graph_parse_axis_last, "axis", NULL),
    ROW(l2_normalize, 1, 1, pasci_graph_parse_l2_normalize, "axis", "epsilon",
        NULL),
    ROW(stop_gradient, 1, 1, NULL, NULL),
    ROW(cast, 1, 1, NULL, NULL),
    ROW(dropout, 1, 1, pasci_graph_parse_dropout, "rate", NULL),
    ROW(arange_like, 1, 1, pasci_graph_parse_axis, "axis", NULL),
    ROW(sparse_categorical_crossentropy, 2, 2, pasci_graph_parse_logits,
        "from_logits", NULL),
    ROW(categorical_crossentropy, 2, 2, pasci_graph_parse_logits,
        "from_logits", NULL),
    ROW(binary_crossentropy, 2, 2, pasci_graph_parse_logits, "from_logits",
        NULL),
    ROW(mean_squared_error, 2, 2, NULL, NULL),
    ROW(logit, 1, 1, NULL, NULL),
    ROW(log_probs, 1, 1, NULL, NULL),
};

const pasci_graph_op *
pasci_graph_op_named(const char *name)
{
	for (size_t k = 0; name != NULL && k < sizeof(rows) / sizeof(rows[0]);
	     k++) {
		if (strcmp(rows[k].name, name) == 0) {
			return &rows[k];
		}
	}
	return NULL;
}

const char *
pasci_graph_op_list(char *buf, size_t len)
{
	size_t used = 0;
	if (len == 0) {
		return buf;
	}
	buf[0] = '\0';
	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		int w = snprintf(buf + used, len - used, "%s%s", k ? ", " : "",
		    rows[k].name);
		if (w < 0 || (size_t) w >= len - used) {
			break; /* truncated: the names that fit */
		}
		used += (size_t) w;
	}
	return buf;
}

pasco_tensor *
pasci_graph_ints(
    pasco_tape *tp, pasco_dtype dtype, int32_t rank, const int64_t *shape)
{
	return pasci_tape_ints(tp, dtype, rank, shape);
}
