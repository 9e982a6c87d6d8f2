/*
 * Losses on the tape, with the values and gradients of the kernels in
 * kit/ops/loss.c (means over every element; binary cross-entropy clips
 * probabilities to [1e-7, 1 - 1e-7] and, as the kernel and Keras's
 * clip_by_value, passes no gradient to a probability outside that range),
 * and L2 regularisation. Labels are copied into
 * the arena at the call: the caller's tensor may go at once. The weighted
 * forms (pasci_t_elem_loss, pasci_t_softmax_crossentropy_w) multiply each
 * example's loss by its sample weight before the mean, Keras's
 * "sum_over_batch_size": sum(w_i * loss_i) / the batch's elements.
 */
#include <math.h>
#include <string.h>

#include "model_impl.h"
#include "tape_impl.h"

#define BCE_EPSILON 1e-7

enum { L_MSE, L_BCE, L_BCE_LOGITS };

int
pasci_loss_weights(pasco_tape *tp, const char *name, const pasco_tnode *x,
    const pasco_tensor *sw, const double **out)
{
	int64_t rows, per;
	double *w;
	*out = NULL;
	if (sw == NULL) {
		return PASCO_OK;
	}
	rows = x->value.rank > 0 ? x->value.shape[0] : 1;
	if (sw->count != rows || sw->rank > 2 ||
	    (sw->rank == 2 && sw->shape[1] != 1) ||
	    (sw->dtype != PASCO_F32 && sw->dtype != PASCO_F64 &&
	        sw->dtype != PASCO_I32 && sw->dtype != PASCO_I64)) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: sample weights %s against the output %s: want one "
		    "number per example ([%lld] or [%lld, 1])",
		    name, PASCI_TSPEC(sw), PASCI_SPEC(x), (long long) rows,
		    (long long) rows);
		return PASCO_EINVAL;
	}
	if ((w = pasci_tape_mem_raw(
	         tp, (size_t) x->value.count * sizeof(*w))) == NULL) {
		return pasco_tape_error(tp);
	}
	per = rows > 0 ? x->value.count / rows : 0;
	for (int64_t i = 0; i < x->value.count; i++) {
		w[i] = pasco_tensor_get(sw, i / per);
	}
	*out = w;
	return PASCO_OK;
}

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

/* aux: the labels as doubles, then (i[1]) each element's weight. */
static void
elem_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode  *x     = n->in[0];
	const double *y     = n->aux;
	double        g     = pasci_ld(n->value.dtype, n->grad, 0);
	int64_t       count = x->value.count;
	const double *w     = n->i[1] ? y + count : NULL;
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
			e    = g * (w != NULL ? w[i] : 1) * e / (double) count;
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
elem(pasco_tape *tp, int kind, pasco_tnode *x, const pasco_tensor *labels,
    const pasco_tensor *sw)
{
	const char   *name = elem_ops[kind].name;
	pasco_tnode  *n;
	double       *y, sum = 0, d;
	const double *w;
	if (!pasci_tape_check(tp, name, 1, &x) ||
	    pasci_loss_weights(tp, name, x, sw, &w) != 0) {
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
	    (y = pasci_tape_mem_raw(tp, (size_t) x->value.count *
	                                    (w != NULL ? 2 : 1) *
	                                    sizeof(*y))) == NULL) {
		return NULL;
	}
	for (int64_t i = 0; i < x->value.count; i++) {
		y[i] = pasco_tensor_get(labels, i);
		sum += elem_loss(kind, pasci_val(x, i), y[i], &d) *
		       (w != NULL ? w[i] : 1);
	}
	if (w != NULL) {
		memcpy(y + x->value.count, w,
		    (size_t) x->value.count * sizeof(*w));
	}
	n->aux  = y;
	n->i[0] = kind;
	n->i[1] = w != NULL;
	pasci_st(
	    n->value.dtype, n->value.data, 0, sum / (double) x->value.count);
	return n;
}

pasco_tnode *
pasco_t_mse(pasco_tape *tp, pasco_tnode *pred, const pasco_tensor *target)
{
	return elem(tp, L_MSE, pred, target, NULL);
}

pasco_tnode *
pasci_t_elem_loss(pasco_tape *tp, pasco_loss_kind kind, bool from_logits,
    pasco_tnode *pred, const pasco_tensor *labels, const pasco_tensor *sw)
{
	if (kind == PASCO_LOSS_MSE) {
		return elem(tp, L_MSE, pred, labels, sw);
	}
	/* Keras's: a sigmoid's output is taken through its logits, which
	 * neither saturate nor clip the gradient away */
	if (!from_logits && pred != NULL && pred->op != NULL &&
	    pred->in[0] != NULL && strcmp(pred->op->name, "sigmoid") == 0) {
		return elem(tp, L_BCE_LOGITS, pred->in[0], labels, sw);
	}
	return elem(tp, from_logits ? L_BCE_LOGITS : L_BCE, pred, labels, sw);
}

pasco_tnode *
pasco_t_binary_crossentropy(
    pasco_tape *tp, pasco_tnode *prob, const pasco_tensor *labels)
{
	return pasci_t_elem_loss(
	    tp, PASCO_LOSS_BINARY_CROSSENTROPY, false, prob, labels, NULL);
}

pasco_tnode *
pasco_t_binary_crossentropy_logits(
    pasco_tape *tp, pasco_tnode *logits, const pasco_tensor *labels)
{
	return elem(tp, L_BCE_LOGITS, logits, labels, NULL);
}

/* ---- softmax cross-entropy ---- */

/* aux: the softmax [batch, classes] as doubles; ids: the labels, or
 * NULL for dense labels (categorical_crossentropy), which follow the
 * softmax in aux as doubles [batch, classes], then each row's sum [batch];
 * f: 1 unweighted, or 0 with each row's weight [batch] at the end. */
static void
sce_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode  *x = n->in[0];
	int64_t       b = x->value.shape[0], c = x->value.shape[1];
	const double *p = n->aux;
	double        g = pasci_ld(n->value.dtype, n->grad, 0) / (double) b;
	const double *w =
	    n->f == 0 ? p + (n->ids == NULL ? 2 * b * c + b : b * c) : NULL;
	bool  fresh;
	void *dx = pasci_tape_grad_out(tp, x, &fresh);
	if (dx == NULL) {
		return;
	}
	if (n->ids == NULL) { /* dense labels y after p: p * sum(y) - y */
		const double *y = p + b * c;
		PASCI_TYPED(x->value.dtype, T, {
			T *d = dx;
			PASCI_SET_OR_ADD(fresh, b * c, i, d,
			    (T) (g * (w != NULL ? w[i / c] : 1) *
			         (p[i] * y[b * c + i / c] - y[i])));
		});
		return;
	}
	PASCI_TYPED(x->value.dtype, T, {
		T *d = dx;
		PASCI_SET_OR_ADD(fresh, b * c, i, d,
		    (T) (g * (w != NULL ? w[i / c] : 1) *
		         (p[i] - (double) (i % c == n->ids[i / c]))));
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
	return pasci_t_softmax_crossentropy_w(tp, x, labels, NULL);
}

pasco_tnode *
pasci_t_softmax_crossentropy_w(pasco_tape *tp, pasco_tnode *x,
    const pasco_tensor *labels, const pasco_tensor *sw)
{
	pasco_tnode  *n;
	int64_t       b, c, len;
	double       *p, *y, sum = 0;
	const double *w;
	bool          dense;
	if (!pasci_tape_check(tp, "softmax_crossentropy", 1, &x) ||
	    !sce_labels_ok(tp, x, labels) ||
	    pasci_loss_weights(tp, "softmax_crossentropy", x, sw, &w) != 0) {
		return NULL;
	}
	b     = x->value.shape[0];
	c     = x->value.shape[1];
	dense = labels->dtype == PASCO_F32 || labels->dtype == PASCO_F64;
	len   = (dense ? 2 * b * c + b : b * c) + (w != NULL ? b : 0);
	if ((n = pasci_tape_node_raw(
	         tp, &sce_op, x->value.dtype, 0, NULL, 1, &x)) == NULL ||
	    (p = pasci_tape_mem_raw(tp, (size_t) len * sizeof(*p))) == NULL ||
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
			double wr = w != NULL ? w[r * c] : 1;
			if (!dense) {
				n->ids[r] = pasci_id_at(labels, r);
				sum += wr *
				       (log(z) + max - (double) xs[n->ids[r]]);
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
			sum += wr * (ys * (log(z) + max) - yx);
		}
	});
	for (int64_t r = 0; w != NULL && r < b; r++) {
		p[len - b + r] = w[r * c];
	}
	n->f   = w != NULL ? 0 : 1;
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
