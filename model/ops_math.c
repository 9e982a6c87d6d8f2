/*
 * Elementwise math on the tape (exp, log, sqrt, square, abs, negative,
 * clip), softmax and log_softmax over any axis, l2_normalize (composed of
 * the others), and the ops that stop gradients: stop_gradient, one_hot
 * and the casts between f32 and f64 (whose gradient is cast back). Each
 * unary op's backward multiplies the incoming gradient by its
 * derivative, computed from the input or the saved output.
 */
#include <math.h>
#include <string.h>

#include "tape_ops_impl.h"

enum { U_EXP, U_LOG, U_SQRT, U_SQUARE, U_ABS, U_NEG, U_CLIP, U_KINDS };

static double
un_value(int f, double x, double lo, double hi)
{
	switch (f) {
	case U_EXP:
		return exp(x);
	case U_LOG:
		return log(x);
	case U_SQRT:
		return sqrt(x);
	case U_SQUARE:
		return x * x;
	case U_ABS:
		return fabs(x);
	case U_NEG:
		return -x;
	default:
		return x < lo ? lo : x > hi ? hi : x;
	}
}

/* d y / d x from the input x and the output y; clip passes the gradient
 * on [lo, hi] only, as TensorFlow's clip_by_value. */
static double
un_grad(int f, double x, double y, double lo, double hi)
{
	switch (f) {
	case U_EXP:
		return y;
	case U_LOG:
		return 1 / x;
	case U_SQRT:
		return 0.5 / y;
	case U_SQUARE:
		return 2 * x;
	case U_ABS:
		return x > 0 ? 1 : x < 0 ? -1 : 0;
	case U_NEG:
		return -1;
	default:
		return x >= lo && x <= hi;
	}
}

/* n->f and *n->aux: clip's lo and hi. */
static void
un_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode *x  = n->in[0];
	int          f  = (int) n->i[0];
	double       lo = n->f, hi = *(const double *) n->aux;
	bool         fresh;
	void        *dx = pasci_tape_grad_out(tp, x, &fresh);
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		const T *g = n->grad, *xs = x->value.data, *y = n->value.data;
		T       *d = dx;
		PASCI_SET_OR_ADD(fresh, n->value.count, i, d,
		    (T) ((double) g[i] *
		         un_grad(f, (double) xs[i], (double) y[i], lo, hi)));
	});
}

static const pasci_tape_op un_ops[U_KINDS] = {
    [U_EXP]    = {"exp", un_backward},
    [U_LOG]    = {"log", un_backward},
    [U_SQRT]   = {"sqrt", un_backward},
    [U_SQUARE] = {"square", un_backward},
    [U_ABS]    = {"abs", un_backward},
    [U_NEG]    = {"negative", un_backward},
    [U_CLIP]   = {"clip", un_backward},
};

static pasco_tnode *
unary(pasco_tape *tp, int f, pasco_tnode *x, double lo, double hi)
{
	pasco_tnode *n;
	if (!pasci_tape_check(tp, un_ops[f].name, 1, &x)) {
		return NULL;
	}
	if (f == U_CLIP && !(lo <= hi)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "clip: %s: min %g is above max %g", PASCI_SPEC(x), lo, hi);
	}
	n = pasci_tape_node_raw(tp, &un_ops[f], x->value.dtype, x->value.rank,
	    x->value.shape, 1, &x);
	if (n == NULL) {
		return NULL;
	}
	n->i[0] = f;
	n->f    = lo;
	n->aux  = pasci_tape_mem(tp, sizeof(double));
	if (n->aux == NULL) {
		return NULL;
	}
	*(double *) n->aux = hi;
	PASCI_TYPED(n->value.dtype, T, {
		const T *xs = x->value.data;
		T       *y  = n->value.data;
		for (int64_t i = 0; i < n->value.count; i++) {
			y[i] = (T) un_value(f, (double) xs[i], lo, hi);
		}
	});
	return n;
}

pasco_tnode *
pasco_t_exp(pasco_tape *tp, pasco_tnode *x)
{
	return unary(tp, U_EXP, x, 0, 0);
}

pasco_tnode *
pasco_t_log(pasco_tape *tp, pasco_tnode *x)
{
	return unary(tp, U_LOG, x, 0, 0);
}

pasco_tnode *
pasco_t_sqrt(pasco_tape *tp, pasco_tnode *x)
{
	return unary(tp, U_SQRT, x, 0, 0);
}

pasco_tnode *
pasco_t_square(pasco_tape *tp, pasco_tnode *x)
{
	return unary(tp, U_SQUARE, x, 0, 0);
}

pasco_tnode *
pasco_t_abs(pasco_tape *tp, pasco_tnode *x)
{
	return unary(tp, U_ABS, x, 0, 0);
}

pasco_tnode *
pasco_t_negative(pasco_tape *tp, pasco_tnode *x)
{
	return unary(tp, U_NEG, x, 0, 0);
}

pasco_tnode *
pasco_t_clip(pasco_tape *tp, pasco_tnode *x, double min, double max)
{
	return unary(tp, U_CLIP, x, min, max);
}

/* ---- softmax and log_softmax over an axis ---- */

/* x viewed as [outer, len, inner]: n->i[0] = len, n->i[1] = inner;
 * n->flag[0]: log_softmax. softmax: dx = y (g - sum g y); log_softmax:
 * dx = g - exp(y) sum g. */
static void
smax_backward(pasco_tape *tp, pasco_tnode *n)
{
	int64_t len = n->i[0], inner = n->i[1];
	int64_t outer = len * inner != 0 ? n->value.count / (len * inner) : 0;
	bool    lg    = n->flag[0], fresh;
	void   *dx    = pasci_tape_grad_out(tp, n->in[0], &fresh);
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		for (int64_t o = 0; o < outer; o++) {
			for (int64_t c = 0; c < inner; c++) {
				int64_t  base = o * len * inner + c;
				const T *g    = (const T *) n->grad + base;
				const T *y = (const T *) n->value.data + base;
				T       *d = (T *) dx + base;
				double   s = 0;
				for (int64_t j = 0; j < len; j++) {
					s += lg ? (double) g[j * inner]
					        : (double) g[j * inner] *
					              (double) y[j * inner];
				}
				for (int64_t j = 0; j < len; j++) {
					double gj = g[j * inner];
					double yj = y[j * inner];
					double v  = lg ? gj - exp(yj) * s
					               : yj * (gj - s);
					d[j * inner] =
					    (T) (fresh ? v : d[j * inner] + v);
				}
			}
		}
	});
}

static const pasci_tape_op smax_ops[] = {
    {"softmax", smax_backward},
    {"log_softmax", smax_backward},
};

static pasco_tnode *
smax(pasco_tape *tp, bool lg, pasco_tnode *x, int32_t axis)
{
	const char  *name = smax_ops[lg].name;
	int64_t      len, inner = 1, outer;
	pasco_tnode *n;
	if (!pasci_tape_check(tp, name, 1, &x) ||
	    (axis = pasci_tape_axis(tp, name, x, axis)) < 0 ||
	    (n = pasci_tape_node_raw(tp, &smax_ops[lg], x->value.dtype,
	         x->value.rank, x->value.shape, 1, &x)) == NULL) {
		return NULL;
	}
	len = x->value.shape[axis];
	for (int32_t d = axis + 1; d < x->value.rank; d++) {
		inner *= x->value.shape[d];
	}
	outer      = len * inner != 0 ? x->value.count / (len * inner) : 0;
	n->i[0]    = len;
	n->i[1]    = inner;
	n->flag[0] = lg;
	PASCI_TYPED(n->value.dtype, T, {
		for (int64_t o = 0; o < outer; o++) {
			for (int64_t c = 0; c < inner; c++) {
				int64_t  base = o * len * inner + c;
				const T *xs = (const T *) x->value.data + base;
				T       *y  = (T *) n->value.data + base;
				double   max = -INFINITY, z = 0;
				for (int64_t j = 0; j < len; j++) {
					max =
					    fmax(max, (double) xs[j * inner]);
				}
				for (int64_t j = 0; j < len; j++) {
					z += exp((double) xs[j * inner] - max);
				}
				for (int64_t j = 0; j < len; j++) {
					double v =
					    (double) xs[j * inner] - max;
					y[j * inner] =
					    (T) (lg ? v - log(z) : exp(v) / z);
				}
			}
		}
	});
	return n;
}

pasco_tnode *
pasco_t_softmax_axis(pasco_tape *tp, pasco_tnode *x, int32_t axis)
{
	return smax(tp, false, x, axis);
}

pasco_tnode *
pasco_t_log_softmax(pasco_tape *tp, pasco_tnode *x, int32_t axis)
{
	return smax(tp, true, x, axis);
}

pasco_tnode *
pasco_t_l2_normalize(
    pasco_tape *tp, pasco_tnode *x, int32_t axis, double epsilon)
{
	pasco_tnode *s, *e;
	if (!pasci_tape_check(tp, "l2_normalize", 1, &x)) {
		return NULL;
	}
	if (!(epsilon >= 0)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "l2_normalize: %s: epsilon %g is negative", PASCI_SPEC(x),
		    epsilon);
	}
	s = pasco_t_reduce_sum_axes(tp, pasco_t_square(tp, x), 1, &axis, true);
	e = pasci_t_fill(tp, x->value.dtype, 0, NULL, epsilon);
	return pasco_t_div(tp, x, pasco_t_sqrt(tp, pasco_t_maximum(tp, s, e)));
}

/* ---- what stops or converts gradients ---- */

static const pasci_tape_op stop_op = {"stop_gradient", NULL};

pasco_tnode *
pasco_t_stop_gradient(pasco_tape *tp, pasco_tnode *x)
{
	pasco_tnode *n;
	if (!pasci_tape_check(tp, "stop_gradient", 1, &x) ||
	    (n = pasci_tape_node_raw(tp, &stop_op, x->value.dtype,
	         x->value.rank, x->value.shape, 0, NULL)) == NULL) {
		return NULL;
	}
	memcpy(n->value.data, x->value.data, n->value.nbytes);
	return n;
}

/* dx (x's dtype) += dy (n's), converted. */
static void
cast_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode *x = n->in[0];
	bool         fresh;
	void        *dx = pasci_tape_grad_out(tp, x, &fresh);
	for (int64_t i = 0; dx != NULL && i < n->value.count; i++) {
		double g = pasci_ld(n->value.dtype, n->grad, i);
		if (fresh) {
			pasci_st(x->value.dtype, dx, i, g);
		} else {
			pasci_acc(x->value.dtype, dx, i, g);
		}
	}
}

static const pasci_tape_op cast_op = {"cast", cast_backward};

pasco_tnode *
pasco_t_cast(pasco_tape *tp, pasco_tnode *x, pasco_dtype dtype)
{
	pasco_tnode *n;
	if (!pasci_tape_check(tp, "cast", 1, &x)) {
		return NULL;
	}
	if (dtype != PASCO_F32 && dtype != PASCO_F64) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "cast: %s to dtype %d: a node is f32 or f64 (integers "
		    "are tensors: no gradient reaches them)",
		    PASCI_SPEC(x), (int) dtype);
	}
	n = pasci_tape_node_raw(
	    tp, &cast_op, dtype, x->value.rank, x->value.shape, 1, &x);
	for (int64_t i = 0; n != NULL && i < n->value.count; i++) {
		pasci_st(dtype, n->value.data, i, pasci_val(x, i));
	}
	return n;
}

static const pasci_tape_op one_hot_op = {"one_hot", NULL};

pasco_tnode *
pasco_t_one_hot(pasco_tape *tp, const pasco_tensor *indices, int64_t depth,
    pasco_dtype dtype)
{
	int64_t      shape[PASCO_MAX_RANK];
	pasco_tnode *n;
	if (tp == NULL || pasco_tape_error(tp) != PASCO_OK) {
		return NULL;
	}
	if (indices == NULL ||
	    (indices->dtype != PASCO_I32 && indices->dtype != PASCO_I64)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "one_hot: indices %s: want i32 or i64",
		    indices == NULL ? "NULL" : PASCI_TSPEC(indices));
	}
	if (depth < 0 || indices->rank >= PASCO_MAX_RANK ||
	    (dtype != PASCO_F32 && dtype != PASCO_F64)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "one_hot: indices %s, depth %lld, dtype %d: want a depth "
		    "of 0 or more, a rank below %d and f32 or f64",
		    PASCI_TSPEC(indices), (long long) depth, (int) dtype,
		    PASCO_MAX_RANK);
	}
	memcpy(
	    shape, indices->shape, sizeof(int64_t) * (size_t) indices->rank);
	shape[indices->rank] = depth;
	n = pasci_tape_node(tp, &one_hot_op, dtype, indices->rank + 1, shape,
	    0, NULL);
	for (int64_t i = 0; n != NULL && i < indices->count; i++) {
		int64_t id = pasci_id_at(indices, i);
		if (id >= 0 && id < depth) { /* else a row of zeros, as TF */
			pasci_st(dtype, n->value.data, i * depth + id, 1);
		}
	}
	return n;
}
