/*
 * Losses on the tape, with the values and gradients of the kernels in
 * kit/ops/loss.c (means over every element; binary cross-entropy clips
 * probabilities to [1e-7, 1 - 1e-7] and, as the kernel and Keras's
 * clip_by_value, passes no gradient to a probability outside that range),
 * and L2 regularisation. Labels are copied into
 * the arena at the call: the caller's tensor may go at once.
 */
#include <math.h>
#include <string.h>

#include "tape_impl.h"

#define BCE_EPSILON 1e-7

enum { L_MSE, L_BCE, L_BCE_LOGITS };

static double
sigmoid(double x)
{
	return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

/* The loss of one element, and its derivative in p, for kind. */
static double
elem_loss(int kind, double p, double y, double *dp)
{
	switch (kind) {
	case L_MSE:
		*dp = 2 * (p - y);
		return (p - y) * (p - y);
	case L_BCE: /* flat where clipped: Keras's clip passes no gradient */
		*dp = p < BCE_EPSILON || p > 1 - BCE_EPSILON
		          ? 0
		          : -y / p + (1 - y) / (1 - p);
		p   = fmin(fmax(p, BCE_EPSILON), 1 - BCE_EPSILON);
		return -(y * log(p) + (1 - y) * log(1 - p));
	default:
		*dp = sigmoid(p) - y;
		return fmax(p, 0) - p * y + log1p(exp(-fabs(p)));
	}
}

/* aux: the labels as doubles. */
static void
elem_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode  *x     = n->in[0];
	const double *y     = n->aux;
	double        g     = pasci_ld(n->value.dtype, n->grad, 0);
	int64_t       count = x->value.count;
	bool          fresh;
	void         *dx = pasci_tape_grad_out(tp, x, &fresh);
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(x->value.dtype, T, {
		const T *p = x->value.data;
		T       *d = dx;
		for (int64_t i = 0; i < count; i++) {
			double e;
			elem_loss((int) n->i[0], (double) p[i], y[i], &e);
			e    = g * e / (double) count;
			d[i] = fresh ? (T) e : (T) (d[i] + (T) e);
		}
	});
}

static const pasci_tape_op elem_ops[] = {
    [L_MSE]        = {"mse", elem_backward},
    [L_BCE]        = {"binary_crossentropy", elem_backward},
    [L_BCE_LOGITS] = {"binary_crossentropy_logits", elem_backward},
};

static pasco_tnode *
elem(pasco_tape *tp, int kind, pasco_tnode *x, const pasco_tensor *labels)
{
	const char  *name = elem_ops[kind].name;
	pasco_tnode *n;
	double      *y, sum = 0, d;
	if (!pasci_tape_check(tp, name, 1, &x)) {
		return NULL;
	}
	if (labels == NULL || labels->count != x->value.count ||
	    x->value.count == 0) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: %s against %s: want as many labels as predictions "
		    "(at least one)",
		    name, PASCI_SPEC(x),
		    labels ? PASCI_TSPEC(labels) : "NULL");
	}
	if ((n = pasci_tape_node_raw(tp, &elem_ops[kind], x->value.dtype, 0,
	         NULL, 1, &x)) == NULL ||
	    (y = pasci_tape_mem_raw(
	         tp, (size_t) x->value.count * sizeof(*y))) == NULL) {
		return NULL;
	}
	for (int64_t i = 0; i < x->value.count; i++) {
		y[i] = pasco_tensor_get(labels, i);
		sum += elem_loss(kind, pasci_val(x, i), y[i], &d);
	}
	n->aux  = y;
	n->i[0] = kind;
	pasci_st(
	    n->value.dtype, n->value.data, 0, sum / (double) x->value.count);
	return n;
}

pasco_tnode *
pasco_t_mse(pasco_tape *tp, pasco_tnode *pred, const pasco_tensor *target)
{
	return elem(tp, L_MSE, pred, target);
}

pasco_tnode *
pasco_t_binary_crossentropy(
    pasco_tape *tp, pasco_tnode *prob, const pasco_tensor *labels)
{
	/* Keras's: a sigmoid's output is taken through its logits, which
	 * neither saturate nor clip the gradient away */
	if (prob != NULL && prob->op != NULL && prob->in[0] != NULL &&
	    strcmp(prob->op->name, "sigmoid") == 0) {
		return elem(tp, L_BCE_LOGITS, prob->in[0], labels);
	}
	return elem(tp, L_BCE, prob, labels);
}

pasco_tnode *
pasco_t_binary_crossentropy_logits(
    pasco_tape *tp, pasco_tnode *logits, const pasco_tensor *labels)
{
	return elem(tp, L_BCE_LOGITS, logits, labels);
}

/* ---- softmax cross-entropy ---- */

/* aux: the softmax [batch, classes] as doubles; ids: the labels, or
 * NULL for dense labels (categorical_crossentropy), which follow the
 * softmax in aux as doubles [batch, classes], then each row's sum [batch]. */
static void
sce_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode  *x = n->in[0];
	int64_t       b = x->value.shape[0], c = x->value.shape[1];
	const double *p = n->aux;
	double        g = pasci_ld(n->value.dtype, n->grad, 0) / (double) b;
	bool          fresh;
	void         *dx = pasci_tape_grad_out(tp, x, &fresh);
	if (dx == NULL) {
		return;
	}
	if (n->ids == NULL) { /* dense labels y after p: p * sum(y) - y */
		const double *y = p + b * c;
		PASCI_TYPED(x->value.dtype, T, {
			T *d = dx;
			PASCI_SET_OR_ADD(fresh, b * c, i, d,
			    (T) (g * (p[i] * y[b * c + i / c] - y[i])));
		});
		return;
	}
	PASCI_TYPED(x->value.dtype, T, {
		T *d = dx;
		PASCI_SET_OR_ADD(fresh, b * c, i, d,
		    (T) (g * (p[i] - (double) (i % c == n->ids[i / c]))));
	});
}

static const pasci_tape_op sce_op = {"softmax_crossentropy", sce_backward};

static bool
sce_labels_ok(pasco_tape *tp, pasco_tnode *x, const pasco_tensor *labels)
{
	int64_t b     = x->value.rank == 2 ? x->value.shape[0] : -1;
	bool    dense = labels != NULL && (labels->dtype == PASCO_F32 ||
                                           labels->dtype == PASCO_F64);
	if (x->value.rank != 2 || b < 1 || x->value.shape[1] < 1 ||
	    labels == NULL ||
	    (dense ? labels->count != x->value.count
	           : (labels->dtype != PASCO_I32 &&
	                 labels->dtype != PASCO_I64) ||
	                 labels->count != b)) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "softmax_crossentropy: logits %s, labels %s: want logits "
		    "[batch, classes] and i32 or i64 class ids [batch], or "
		    "f32 or f64 class probabilities (one-hot) [batch, "
		    "classes]",
		    PASCI_SPEC(x), labels ? PASCI_TSPEC(labels) : "NULL");
		return false;
	}
	if (dense) {
		return true;
	}
	for (int64_t r = 0; r < b; r++) {
		int64_t id = pasci_id_at(labels, r);
		if (id < 0 || id >= x->value.shape[1]) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "softmax_crossentropy: label %lld of example %lld "
			    "(of %lld in the batch) is outside [0, %lld): the "
			    "logits have %lld classes",
			    (long long) id, (long long) r, (long long) b,
			    (long long) x->value.shape[1],
			    (long long) x->value.shape[1]);
			return false;
		}
	}
	return true;
}

pasco_tnode *
pasco_t_softmax_crossentropy(
    pasco_tape *tp, pasco_tnode *x, const pasco_tensor *labels)
{
	pasco_tnode *n;
	int64_t      b, c;
	double      *p, *y, sum = 0;
	bool         dense;
	if (!pasci_tape_check(tp, "softmax_crossentropy", 1, &x) ||
	    !sce_labels_ok(tp, x, labels)) {
		return NULL;
	}
	b     = x->value.shape[0];
	c     = x->value.shape[1];
	dense = labels->dtype == PASCO_F32 || labels->dtype == PASCO_F64;
	if ((n = pasci_tape_node_raw(
	         tp, &sce_op, x->value.dtype, 0, NULL, 1, &x)) == NULL ||
	    (p = pasci_tape_mem_raw(
	         tp, (size_t) (dense ? 2 * b * c + b : b * c) * sizeof(*p))) ==
	        NULL ||
	    (!dense && (n->ids = pasci_tape_mem_raw(
	                    tp, (size_t) b * sizeof(int64_t))) == NULL)) {
		return NULL;
	}
	y = dense ? p + b * c : NULL;
	PASCI_TYPED(x->value.dtype, T, {
		for (int64_t r = 0; r < b; r++) {
			const T *xs  = (const T *) x->value.data + r * c;
			double  *pr  = p + r * c;
			double   max = -INFINITY, z = 0;
			for (int64_t j = 0; j < c; j++) {
				max = fmax(max, (double) xs[j]);
			}
			for (int64_t j = 0; j < c; j++) {
				z += (pr[j] = exp((double) xs[j] - max));
			}
			for (int64_t j = 0; j < c; j++) {
				pr[j] /= z;
			}
			if (!dense) {
				n->ids[r] = pasci_id_at(labels, r);
				sum += log(z) + max - (double) xs[n->ids[r]];
				continue;
			}
			/* -sum_j y_j log p_j = sum(y) (log z + max) - y . x */
			double ys = 0, yx = 0;
			for (int64_t j = 0; j < c; j++) {
				double yj =
				    pasco_tensor_get(labels, r * c + j);
				y[r * c + j] = yj;
				ys += yj;
				yx += yj * (double) xs[j];
			}
			y[b * c + r] = ys;
			sum += ys * (log(z) + max) - yx;
		}
	});
	n->aux = p;
	pasci_st(n->value.dtype, n->value.data, 0, sum / (double) b);
	return n;
}

/* ---- L2 ---- */

static void
l2_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode *w = n->in[0];
	double       g = pasci_ld(n->value.dtype, n->grad, 0) * 2 * n->f;
	bool         fresh;
	void        *dw = pasci_tape_grad_out(tp, w, &fresh);
	if (dw == NULL) {
		return;
	}
	PASCI_TYPED(w->value.dtype, T, {
		const T *ws = w->value.data;
		T       *d  = dw;
		for (int64_t i = 0; i < w->value.count; i++) {
			double e = g * (double) ws[i];
			d[i]     = fresh ? (T) e : (T) ((double) d[i] + e);
		}
	});
}

static const pasci_tape_op l2_op = {"l2", l2_backward};

pasco_tnode *
pasco_t_l2(pasco_tape *tp, pasco_tnode *w, double l2)
{
	pasco_tnode *n;
	double       sum = 0;
	if (!pasci_tape_check(tp, "l2", 1, &w) ||
	    (n = pasci_tape_node_raw(
	         tp, &l2_op, w->value.dtype, 0, NULL, 1, &w)) == NULL) {
		return NULL;
	}
	PASCI_TYPED(w->value.dtype, T, {
		const T *ws = w->value.data;
		for (int64_t i = 0; i < w->value.count; i++) {
			sum += (double) ws[i] * (double) ws[i];
		}
	});
	n->f = l2;
	pasci_st(n->value.dtype, n->value.data, 0, l2 * sum);
	return n;
}
