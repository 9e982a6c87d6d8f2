/*
 * Keras 3's element-wise losses on the tape (pasco_t_loss: mae, mape,
 * huber, log_cosh, hinge, squared_hinge, kl_divergence, poisson,
 * binary_focal_crossentropy) and cosine_similarity, row by row over the
 * last axis. Each is Keras's per-example mean (a sum for kl_divergence
 * and cosine_similarity) over the last axis, then the mean over the
 * examples ("sum_over_batch_size"; with sample weights, each example's
 * loss times its weight before that mean, as Keras's
 * reduce_weighted_values). The labels are copied into the arena,
 * converted as Keras converts them (hinge's 0/1 to -1/1, the focal loss's
 * label smoothing), so the caller's tensor may go at once. Where Keras
 * clips (kl_divergence, the focal loss's bce) no gradient passes outside
 * the range, as its clip passes none. Any thread, one tape each.
 */
#include <math.h>
#include <string.h>

#include "model_impl.h"
#include "tape_impl.h"

#define LOSS_EPSILON 1e-7 /* Keras's backend.epsilon() */

/* What a loss node's backward reads (its aux). */
typedef struct loss_aux {
	pasco_loss loss;
	int64_t    width; /* the last axis */
	double     scale; /* 1 / the divisor of the sum */
	/* each element's sample weight (its row's), or NULL: unweighted */
	const double *w;
	double        y[]; /* the labels as the loss reads them */
} loss_aux;

static double
sign(double x)
{
	return (double) (x > 0) - (double) (x < 0);
}

static double
softplus(double x)
{
	return fmax(x, 0) + log1p(exp(-fabs(x)));
}

/* The focal loss of probability p (from_logits: of logit p) and label y,
 * and *dp its derivative. */
static double
focal(const pasco_loss *l, double p, double y, double *dp)
{
	double s   = l->from_logits ? 1 / (1 + exp(-p)) : p;
	double c   = fmin(fmax(s, LOSS_EPSILON), 1 - LOSS_EPSILON);
	double b   = -(y * log(c) + (1 - y) * log(1 - c));
	double db  = c == s ? -y / s + (1 - y) / (1 - s) : 0;
	double q   = 1 - (y * s + (1 - y) * (1 - s)); /* 1 - p_t */
	double ff  = pow(q, l->gamma);
	double dq  = -(2 * y - 1); /* d(1 - p_t) / ds */
	double dff = l->gamma == 0 ? 0
	             : q > 0       ? l->gamma * pow(q, l->gamma - 1) * dq
	                           : 0;
	double w   = l->apply_class_balancing
	                 ? y * l->alpha + (1 - y) * (1 - l->alpha)
	                 : 1;
	*dp = w * (dff * b + ff * db) * (l->from_logits ? s * (1 - s) : 1);
	return w * ff * b;
}

/* The loss of one element and *dp, its derivative in p. */
static double
elem_loss(const pasco_loss *l, double p, double y, double *dp)
{
	double e = p - y, m;
	switch (l->kind) {
	case PASCO_LOSS_MAE:
		*dp = sign(e);
		return fabs(e);
	case PASCO_LOSS_MAPE:
		m   = fmax(fabs(y), LOSS_EPSILON);
		*dp = 100 * sign(e) / m;
		return 100 * fabs(e) / m;
	case PASCO_LOSS_HUBER:
		if (fabs(e) <= l->delta) {
			*dp = e;
			return 0.5 * e * e;
		}
		*dp = l->delta * sign(e);
		return l->delta * fabs(e) - 0.5 * l->delta * l->delta;
	case PASCO_LOSS_LOG_COSH:
		*dp = tanh(e);
		return e + softplus(-2 * e) - log(2.0);
	case PASCO_LOSS_HINGE:
		m   = fmax(1 - y * p, 0);
		*dp = m > 0 ? -y : 0;
		return m;
	case PASCO_LOSS_SQUARED_HINGE:
		m   = fmax(1 - y * p, 0);
		*dp = -2 * m * y;
		return m * m;
	case PASCO_LOSS_KL_DIVERGENCE:
		y   = fmin(fmax(y, LOSS_EPSILON), 1);
		m   = fmin(fmax(p, LOSS_EPSILON), 1);
		*dp = m == p ? -y / p : 0;
		return y * log(y / m);
	case PASCO_LOSS_POISSON:
		*dp = 1 - y / (p + LOSS_EPSILON);
		return p - y * log(p + LOSS_EPSILON);
	default:
		return focal(l, p, y, dp);
	}
}

/* The cosine loss of the row of x at off (w values), -(y . p) / |p|
 * with y normalized; with g not 0, g times its derivative goes into dx
 * (x's dtype; set when fresh, else added). */
static double
cosine_row(const pasco_tnode *x, int64_t off, const double *y, int64_t w,
    double g, void *dx, bool fresh)
{
	double yy = 0, pp = 0, yp = 0, iy, ip;
	for (int64_t j = 0; j < w; j++) {
		double p = pasci_val(x, off + j);
		yy += y[j] * y[j];
		pp += p * p;
		yp += y[j] * p;
	}
	iy = 1 / sqrt(fmax(yy, 1e-14));
	ip = 1 / sqrt(fmax(pp, 1e-14));
	if (dx == NULL) {
		return -yp * iy * ip;
	}
	PASCI_TYPED(x->value.dtype, T, {
		T *dt = (T *) dx + off;
		/* past the clamp the norm is a constant */
		PASCI_SET_OR_ADD(fresh, w, j, dt,
		    (T) (g * (-y[j] * iy * ip +
		                 (pp > 1e-14 ? yp * iy * ip * ip * ip *
		                                   pasci_val(x, off + j)
		                             : 0))));
	});
	return -yp * iy * ip;
}

static void
loss_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode    *x = n->in[0];
	const loss_aux *a = n->aux;
	double          g = pasci_ld(n->value.dtype, n->grad, 0) * a->scale;
	int64_t         count = x->value.count, w = a->width;
	bool            fresh;
	void           *dx = pasci_tape_grad_out(tp, x, &fresh);
	if (dx == NULL) {
		return;
	}
	if (a->loss.kind == PASCO_LOSS_COSINE_SIMILARITY) {
		for (int64_t r = 0; r < count / w; r++) {
			cosine_row(x, r * w, a->y + r * w, w,
			    g * (a->w != NULL ? a->w[r * w] : 1), dx, fresh);
		}
		return;
	}
	PASCI_TYPED(x->value.dtype, T, {
		T *dt = dx;
		for (int64_t i = 0; i < count; i++) {
			double d;
			elem_loss(&a->loss, pasci_val(x, i), a->y[i], &d);
			d     = g * d * (a->w != NULL ? a->w[i] : 1);
			dt[i] = fresh ? (T) d : (T) (dt[i] + (T) d);
		}
	});
}

static const pasci_tape_op loss_op = {"keras_loss", loss_backward};

/* Keras's checks of l's parameters; the message, or NULL. */
static const char *
params_bad(const pasco_loss *l)
{
	if (l->kind == PASCO_LOSS_HUBER &&
	    !(l->delta > 0 && isfinite(l->delta))) {
		return "huber: delta must be a number > 0";
	}
	if (!(l->label_smoothing >= 0 && l->label_smoothing <= 1)) {
		return "label_smoothing must be in [0, 1]";
	}
	if (l->kind == PASCO_LOSS_BINARY_FOCAL_CROSSENTROPY &&
	    (!(l->gamma >= 0 && isfinite(l->gamma)) || !isfinite(l->alpha))) {
		return "binary_focal_crossentropy: gamma must be a number >= "
		       "0 "
		       "and alpha a number";
	}
	return NULL;
}

/* The labels as l reads them: hinge's 0/1 as -1/1 (when every label is
 * 0 or 1), the focal loss's smoothed. */
static void
read_labels(const pasco_loss *l, const pasco_tensor *labels, double *y)
{
	bool binary = true;
	for (int64_t i = 0; i < labels->count; i++) {
		y[i]   = pasco_tensor_get(labels, i);
		binary = binary && (y[i] == 0 || y[i] == 1);
		if (l->kind == PASCO_LOSS_BINARY_FOCAL_CROSSENTROPY) {
			y[i] = y[i] * (1 - l->label_smoothing) +
			       0.5 * l->label_smoothing;
		}
	}
	if (binary && (l->kind == PASCO_LOSS_HINGE ||
	                  l->kind == PASCO_LOSS_SQUARED_HINGE)) {
		for (int64_t i = 0; i < labels->count; i++) {
			y[i] = 2 * y[i] - 1;
		}
	}
}

static bool
loss_args_ok(pasco_tape *tp, const pasco_loss *l, pasco_tnode *x,
    const pasco_tensor *labels)
{
	const char *bad = params_bad(l);
	if (bad != NULL) {
		pasci_tape_fail(tp, PASCO_EINVAL, "loss: %s", bad);
		return false;
	}
	if (l->kind == PASCO_LOSS_COSINE_SIMILARITY && l->axis != -1 &&
	    l->axis != x->value.rank - 1) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "cosine_similarity: axis %d of %s: only the last axis "
		    "(-1) is taken",
		    (int) l->axis, PASCI_SPEC(x));
		return false;
	}
	if (labels == NULL || labels->count != x->value.count ||
	    x->value.count == 0) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "loss: %s against labels %s: want as many labels as "
		    "predictions (at least one)",
		    PASCI_SPEC(x), labels ? PASCI_TSPEC(labels) : "NULL");
		return false;
	}
	return true;
}

/* The element-wise losses and cosine_similarity. */
static pasco_tnode *
keras_loss(pasco_tape *tp, const pasco_loss *loss, pasco_tnode *x,
    const pasco_tensor *labels, const pasco_tensor *sw)
{
	pasco_tnode  *n;
	loss_aux     *a;
	int64_t       count, w;
	double        sum = 0, d;
	const double *ws;
	if (!pasci_tape_check(tp, "loss", 1, &x) ||
	    !loss_args_ok(tp, loss, x, labels) ||
	    pasci_loss_weights(tp, "loss", x, sw, &ws) != 0) {
		return NULL;
	}
	count = x->value.count;
	w     = x->value.rank > 0 ? x->value.shape[x->value.rank - 1] : 1;
	if ((n = pasci_tape_node_raw(
	         tp, &loss_op, x->value.dtype, 0, NULL, 1, &x)) == NULL ||
	    (a = pasci_tape_mem_raw(
	         tp, sizeof(*a) + (size_t) count * sizeof(double))) == NULL) {
		return NULL;
	}
	a->loss  = *loss;
	a->width = w;
	a->w     = ws;
	a->scale = loss->kind == PASCO_LOSS_KL_DIVERGENCE ||
	                   loss->kind == PASCO_LOSS_COSINE_SIMILARITY
	               ? 1 / (double) (count / w)
	               : 1 / (double) count;
	read_labels(loss, labels, a->y);
	for (int64_t i = 0; i < count; i += w) {
		sum += loss->kind == PASCO_LOSS_COSINE_SIMILARITY
		           ? cosine_row(x, i, a->y + i, w, 0, NULL, false) *
		                 (ws != NULL ? ws[i] : 1)
		           : 0;
	}
	for (int64_t i = 0;
	     loss->kind != PASCO_LOSS_COSINE_SIMILARITY && i < count; i++) {
		sum += elem_loss(loss, pasci_val(x, i), a->y[i], &d) *
		       (ws != NULL ? ws[i] : 1);
	}
	n->aux = a;
	pasci_st(n->value.dtype, n->value.data, 0, sum * a->scale);
	return n;
}

/* Keras's categorical crossentropy of probabilities: the softmax
 * crossentropy of log(clip(p / sum p, 1e-7, 1 - 1e-7)). */
static pasco_tnode *
categorical(pasco_tape *tp, const pasco_loss *loss, pasco_tnode *p,
    const pasco_tensor *labels, const pasco_tensor *sw)
{
	int32_t last = -1;
	if (!loss->from_logits) {
		p = pasco_t_div(
		    tp, p, pasco_t_reduce_sum_axes(tp, p, 1, &last, true));
		p = pasco_t_log(
		    tp, pasco_t_clip(tp, p, LOSS_EPSILON, 1 - LOSS_EPSILON));
	}
	if (p != NULL && loss->kind == PASCO_LOSS_CATEGORICAL_CROSSENTROPY &&
	    (labels == NULL ||
	        (labels->dtype != PASCO_F32 && labels->dtype != PASCO_F64))) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "categorical_crossentropy: labels must be one-hot f32 or "
		    "f64 [batch, classes], got %s (class ids take "
		    "sparse_categorical_crossentropy)",
		    labels != NULL ? pasco_dtype_name(labels->dtype) : "none");
	}
	return pasci_t_softmax_crossentropy_w(tp, p, labels, sw);
}

static pasco_tnode *
loss_of(pasco_tape *tp, const pasco_loss *loss, pasco_tnode *pred,
    const pasco_tensor *labels, const pasco_tensor *sw)
{
	switch (loss->kind) {
	case PASCO_LOSS_MSE:
	case PASCO_LOSS_BINARY_CROSSENTROPY:
		return pasci_t_elem_loss(
		    tp, loss->kind, loss->from_logits, pred, labels, sw);
	case PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY:
	case PASCO_LOSS_CATEGORICAL_CROSSENTROPY:
		return categorical(tp, loss, pred, labels, sw);
	default:
		return keras_loss(tp, loss, pred, labels, sw);
	}
}

pasco_tnode *
pasco_t_loss(pasco_tape *tp, const pasco_loss *loss, pasco_tnode *pred,
    const pasco_tensor *labels)
{
	return pasco_t_loss_weighted(tp, loss, pred, labels, NULL);
}

pasco_tnode *
pasco_t_loss_weighted(pasco_tape *tp, const pasco_loss *loss,
    pasco_tnode *pred, const pasco_tensor *labels,
    const pasco_tensor *sample_weight)
{
	pasco_tensor *smooth = NULL; /* labels label-smoothed */
	pasco_tnode  *l;
	if (loss == NULL || loss->kind < PASCO_LOSS_MSE ||
	    loss->kind > PASCO_LOSS_BINARY_FOCAL_CROSSENTROPY ||
	    loss->kind == PASCO_LOSS_GRAPH) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "loss: kind %d is no Keras loss of pasco_t_loss",
		    loss != NULL ? (int) loss->kind : -1);
	}
	if (pred != NULL && labels != NULL &&
	    pasci_loss_smooth_labels(loss, labels,
	        pred->value.rank > 0 ? pred->value.shape[pred->value.rank - 1]
	                             : 1,
	        &smooth) != 0) {
		return pasci_tape_fail(
		    tp, PASCO_ENOMEM, "loss: out of memory");
	}
	l = loss_of(
	    tp, loss, pred, smooth != NULL ? smooth : labels, sample_weight);
	pasco_tensor_release(smooth);
	return l;
}
