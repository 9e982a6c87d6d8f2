/*
 * Activations on the tape (relu, sigmoid, tanh elementwise; softmax over
 * the last axis) and dropout, each with its backward. The activations'
 * backward needs only their output; dropout keeps its mask, drawn from
 * the tape's seed and the op's position, so a step replayed with the same
 * seed drops the same elements.
 */
#include <math.h>

#include "tape_impl.h"

enum { ACT_RELU, ACT_SIGMOID, ACT_TANH };

static double
act(int f, double x)
{
	switch (f) {
	case ACT_RELU:
		return x > 0 ? x : 0;
	case ACT_SIGMOID:
		return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
	default:
		return tanh(x);
	}
}

/* The derivative from the output y. */
static double
act_grad(int f, double y)
{
	switch (f) {
	case ACT_RELU:
		return y > 0 ? 1 : 0;
	case ACT_SIGMOID:
		return y * (1 - y);
	default:
		return 1 - y * y;
	}
}

/* relu and its gradient as restrict kernels (PASCI_EACH8): a select the
 * compiler vectorises, where the plain loop's branch on each element's
 * sign mispredicts half the time (a relu pass over [64, 256] took as
 * long as its matmul's copy-in). The same values: y = x > 0 ? x : 0, and
 * d = (or +=) y > 0 ? g : 0. */
#define RELU_KERNELS(T, sfx)                                                  \
	static void relu_##sfx(int64_t n, const T *restrict x, T *restrict y) \
	{                                                                     \
		PASCI_EACH8(n, i, {                                           \
			T v  = x[i];                                          \
			y[i] = v > 0 ? v : (T) 0;                             \
		});                                                           \
	}                                                                     \
	static void relu_grad_##sfx(int64_t n, bool fresh,                    \
	    const T *restrict g, const T *restrict y, T *restrict d)          \
	{                                                                     \
		if (fresh) {                                                  \
			PASCI_EACH8(n, i, {                                   \
				T v  = g[i];                                  \
				d[i] = y[i] > 0 ? v : (T) 0;                  \
			});                                                   \
		} else {                                                      \
			PASCI_EACH8(n, i, {                                   \
				T v = g[i];                                   \
				d[i] += y[i] > 0 ? v : (T) 0;                 \
			});                                                   \
		}                                                             \
	}
RELU_KERNELS(float, f32)
RELU_KERNELS(double, f64)

/* dx += dy * f'(y), one loop per activation. */
static void
act_backward(pasco_tape *tp, pasco_tnode *n)
{
	int64_t count = n->value.count;
	bool    fresh;
	void   *dx = pasci_tape_grad_out(tp, n->in[0], &fresh);
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		const T *g = n->grad, *y = n->value.data;
		T       *d = dx;
		switch (n->i[0]) {
		case ACT_RELU:
			if (n->value.dtype == PASCO_F32) {
				relu_grad_f32(
				    count, fresh, n->grad, n->value.data, dx);
			} else {
				relu_grad_f64(
				    count, fresh, n->grad, n->value.data, dx);
			}
			break;
		case ACT_SIGMOID:
			PASCI_SET_OR_ADD(fresh, count, i, d,
			    (T) ((double) g[i] * act_grad(ACT_SIGMOID, y[i])));
			break;
		default:
			PASCI_SET_OR_ADD(fresh, count, i, d,
			    (T) ((double) g[i] * act_grad(ACT_TANH, y[i])));
		}
	});
}

static const pasci_tape_op act_ops[] = {
    [ACT_RELU]    = {"relu", act_backward},
    [ACT_SIGMOID] = {"sigmoid", act_backward},
    [ACT_TANH]    = {"tanh", act_backward},
};

static pasco_tnode *
activate(pasco_tape *tp, int f, pasco_tnode *x)
{
	pasco_tnode *n;
	if (!pasci_tape_check(tp, act_ops[f].name, 1, &x) ||
	    (n = pasci_tape_node_raw(tp, &act_ops[f], x->value.dtype,
	         x->value.rank, x->value.shape, 1, &x)) == NULL) {
		return NULL;
	}
	n->i[0] = f;
	PASCI_TYPED(n->value.dtype, T, {
		const T *xs = x->value.data;
		T       *y  = n->value.data;
		if (f == ACT_RELU) {
			if (n->value.dtype == PASCO_F32) {
				relu_f32(n->value.count, x->value.data,
				    n->value.data);
			} else {
				relu_f64(n->value.count, x->value.data,
				    n->value.data);
			}
		} else {
			for (int64_t i = 0; i < n->value.count; i++) {
				y[i] = (T) act(f, (double) xs[i]);
			}
		}
	});
	return n;
}

pasco_tnode *
pasco_t_relu(pasco_tape *tp, pasco_tnode *x)
{
	return activate(tp, ACT_RELU, x);
}

pasco_tnode *
pasco_t_sigmoid(pasco_tape *tp, pasco_tnode *x)
{
	return activate(tp, ACT_SIGMOID, x);
}

pasco_tnode *
pasco_t_tanh(pasco_tape *tp, pasco_tnode *x)
{
	return activate(tp, ACT_TANH, x);
}

/* dx = y * (dy - sum(dy * y)) per row. */
static void
softmax_backward(pasco_tape *tp, pasco_tnode *n)
{
	int64_t cols = n->value.shape[n->value.rank - 1];
	int64_t rows = cols ? n->value.count / cols : 0;
	bool    fresh;
	void   *dx = pasci_tape_grad_out(tp, n->in[0], &fresh);
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		for (int64_t r = 0; r < rows; r++) {
			const T *g = (const T *) n->grad + r * cols;
			const T *y = (const T *) n->value.data + r * cols;
			T       *d = (T *) dx + r * cols;
			double   dot = 0;
			for (int64_t j = 0; j < cols; j++) {
				dot += (double) g[j] * (double) y[j];
			}
			PASCI_SET_OR_ADD(fresh, cols, j, d,
			    (T) ((double) y[j] * ((double) g[j] - dot)));
		}
	});
}

static const pasci_tape_op softmax_op = {"softmax", softmax_backward};

pasco_tnode *
pasco_t_softmax(pasco_tape *tp, pasco_tnode *x)
{
	pasco_tnode *n;
	int64_t      cols, rows;
	if (!pasci_tape_check(tp, "softmax", 1, &x)) {
		return NULL;
	}
	if (x->value.rank < 1) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "softmax: %s: needs rank 1 or more (over the last axis)",
		    PASCI_SPEC(x));
	}
	n = pasci_tape_node_raw(tp, &softmax_op, x->value.dtype,
	    x->value.rank, x->value.shape, 1, &x);
	if (n == NULL) {
		return NULL;
	}
	cols = x->value.shape[x->value.rank - 1];
	rows = cols ? x->value.count / cols : 0;
	PASCI_TYPED(n->value.dtype, T, {
		for (int64_t r = 0; r < rows; r++) {
			const T *xs  = (const T *) x->value.data + r * cols;
			T       *y   = (T *) n->value.data + r * cols;
			double   max = -INFINITY, z = 0;
			for (int64_t j = 0; j < cols; j++) {
				max = fmax(max, (double) xs[j]);
			}
			for (int64_t j = 0; j < cols; j++) {
				z += exp((double) xs[j] - max);
			}
			for (int64_t j = 0; j < cols; j++) {
				y[j] = (T) (exp((double) xs[j] - max) / z);
			}
		}
	});
	return n;
}

/* ---- dropout ---- */

static uint64_t
splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z          = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* n->aux: one byte per element, 1 where kept (NULL: the identity); n->f:
 * the scale of kept elements. */
static void
dropout_backward(pasco_tape *tp, pasco_tnode *n)
{
	const unsigned char *keep = n->aux;
	bool                 fresh;
	void                *dx = pasci_tape_grad_out(tp, n->in[0], &fresh);
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		const T *g = n->grad;
		T       *d = dx;
		PASCI_SET_OR_ADD(fresh, n->value.count, i, d,
		    keep == NULL || keep[i] ? (T) (n->f * (double) g[i])
		                            : (T) 0);
	});
}

static const pasci_tape_op dropout_op = {"dropout", dropout_backward};

pasco_tnode *
pasco_t_dropout(pasco_tape *tp, pasco_tnode *x, double rate)
{
	pasco_tnode   *n;
	unsigned char *keep = NULL;
	uint64_t       state;
	if (!pasci_tape_check(tp, "dropout", 1, &x)) {
		return NULL;
	}
	if (!(rate >= 0 && rate < 1)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "dropout: %s: rate %g is outside [0, 1)", PASCI_SPEC(x),
		    rate);
	}
	n = pasci_tape_node_raw(tp, &dropout_op, x->value.dtype,
	    x->value.rank, x->value.shape, 1, &x);
	if (n == NULL) {
		return NULL;
	}
	n->f = 1;
	if (pasci_tape_training(tp) && rate > 0) {
		if ((keep = pasci_tape_mem_raw(
		         tp, (size_t) x->value.count + 1)) ==
		    NULL) {
			return NULL;
		}
		n->f  = 1 / (1 - rate);
		state = pasci_tape_seed(tp, n->index);
		for (int64_t i = 0; i < x->value.count; i++) {
			/* 53 random bits: a uniform double in [0, 1) */
			double u =
			    (double) (splitmix64(&state) >> 11) * 0x1p-53;
			keep[i] = u >= rate;
		}
	}
	n->aux = keep;
	PASCI_TYPED(n->value.dtype, T, {
		const T *xs = x->value.data;
		T       *y  = n->value.data;
		for (int64_t i = 0; i < n->value.count; i++) {
			y[i] = keep == NULL || keep[i]
			           ? (T) (n->f * (double) xs[i])
			           : (T) 0;
		}
	});
	return n;
}
