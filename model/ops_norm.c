/*
 * Keras's Normalization on the tape: y = (x - mean) / max(sqrt(variance),
 * 1e-7) over the last axis, mean and variance read as constants (they are
 * state adapted from data, never differentiated). One pass forward, one
 * backward; the per-column reciprocal is kept in the arena.
 */
#include <math.h>

#include "tape_impl.h"

/* Keras's backend.epsilon(), the floor of the denominator. */
#define NORM_EPSILON 1e-7

static void
normalize_backward(pasco_tape *tp, pasco_tnode *n)
{
	void         *dx   = pasci_tape_grad_of(tp, n->in[0]);
	const double *inv  = n->aux;
	int64_t       cols = n->i[0];
	pasco_dtype   dt   = n->value.dtype;
	for (int64_t i = 0; dx != NULL && i < n->value.count; i++) {
		pasci_acc(dt, dx, i, pasci_ld(dt, n->grad, i) * inv[i % cols]);
	}
}

static const pasci_tape_op normalize_op = {"normalize", normalize_backward};

static bool
stats_fit(const pasco_tensor *s, int64_t cols)
{
	return s != NULL && (s->dtype == PASCO_F32 || s->dtype == PASCO_F64) &&
	       s->count == cols;
}

pasco_tnode *
pasco_t_normalize(pasco_tape *tp, pasco_tnode *x, const pasco_tensor *mean,
    const pasco_tensor *variance)
{
	pasco_tnode *n;
	double      *inv, *mu;
	int64_t      cols;
	if (!pasci_tape_check(tp, "normalize", 1, &x)) {
		return NULL;
	}
	cols = x->value.rank > 0 ? x->value.shape[x->value.rank - 1] : 1;
	if (!stats_fit(mean, cols) || !stats_fit(variance, cols)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "normalize: input %s: mean %s and variance %s are not f32 "
		    "or f64 of its last dimension %lld",
		    PASCI_SPEC(x), mean ? PASCI_TSPEC(mean) : "(null)",
		    variance ? PASCI_TSPEC(variance) : "(null)",
		    (long long) cols);
	}
	if ((n = pasci_tape_node(tp, &normalize_op, x->value.dtype,
	         x->value.rank, x->value.shape, 1, &x)) == NULL ||
	    (inv = pasci_tape_mem(tp, 2 * sizeof(double) * (size_t) cols)) ==
	        NULL) {
		return NULL;
	}
	mu = inv + cols;
	for (int64_t j = 0; j < cols; j++) {
		double s = sqrt(pasco_tensor_get(variance, j));
		inv[j]   = 1.0 / (s > NORM_EPSILON ? s : NORM_EPSILON);
		mu[j]    = pasco_tensor_get(mean, j);
	}
	n->aux  = inv;
	n->i[0] = cols;
	for (int64_t i = 0; i < n->value.count; i++) {
		int64_t j = i % cols;
		pasci_st(n->value.dtype, n->value.data, i,
		    (pasci_val(x, i) - mu[j]) * inv[j]);
	}
	return n;
}
