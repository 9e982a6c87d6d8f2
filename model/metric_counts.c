/*
 * A compiled model's metrics over a batch, as counts that add up: one
 * vector of f64 (m->compile.state_len), each metric's at its offset, so
 * the sums of batches, shards and workers are the counts of all their
 * examples and one result is computed from them on the chief. Keras 3's
 * definitions (keras/src/metrics):
 *   accuracies, mae, mse, rmse, binary crossentropy, top-k accuracies:
 *     [sum of values, values counted] (rmse: sqrt of the mean);
 *   precision: [true positives, false positives] per threshold; recall:
 *     [true positives, false negatives] per threshold;
 *   auc: [true positives, false positives, true negatives, false
 *     negatives] per threshold (a prediction above the threshold, as a
 *     float32, is positive; a label not 0 is positive).
 * A weighted metric (compile's weighted_metrics) adds each example's
 * values times its sample weight and counts the weight for the example
 * (Keras's update_state with sample_weight: a mean's total and count, the
 * confusion counts' sums of weights).
 * A sequence output [batch, steps, ..., dim] is counted as its rows
 * [batch * steps..., dim] against labels [batch, steps...] (class ids) or
 * [batch, steps..., dim]: each step counts as Keras's mean of per-example
 * means counts it (all examples have the same steps). With a mask (an
 * Embedding's mask_zero, one per step) the metrics Keras wraps in
 * MeanMetricWrapper (the accuracies, mae, mse, binary crossentropy)
 * count the unmasked steps only, each example's weight times its mask as
 * Keras's apply_mask(reduction="sum"); AUC, precision, recall and rmse
 * count every step, masked or not, as Keras's do. Weights per step
 * ([batch, steps...], Keras's per-timestep sample_weight) weigh each step
 * by its own weight in place of its example's.
 * A metric given by name sees the output through the loss's sigmoid or
 * softmax when the loss takes logits; a metric object sees the raw output
 * (AUC and BinaryCrossentropy take their own from_logits). Stateless: any
 * thread.
 */
#include "model_impl.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KERAS_EPSILON 1e-7
#define NEG_INF (-1e10) /* metrics_utils.NEG_INF: what top_k filters out */

/* A batch's output and targets, and the metric they are counted for. */
typedef struct batch {
	const pasco_model       *m;
	const pasci_metric_spec *s;
	const pasco_tensor      *pred, *y;
	const double            *rw;   /* each row's weight; NULL: each 1 */
	int64_t                  n, w; /* rows, width */
} batch;

/* The weight of row i. */
static double
weight(const batch *b, int64_t i)
{
	return b->rw != NULL ? b->rw[i] : 1;
}

/* The value j of row i the metric sees: a name's through the loss's
 * sigmoid or softmax when the loss takes logits, an object's raw. */
static double
value(const batch *b, int64_t i, int64_t j)
{
	double z = pasco_tensor_get(b->pred, i * b->w + j);
	if (b->s->object || !b->m->compile.loss.from_logits) {
		return z;
	}
	if (b->w == 1) {
		return 1 / (1 + exp(-z));
	}
	double mx = -HUGE_VAL, sum = 0;
	for (int64_t k = 0; k < b->w; k++) {
		mx = fmax(mx, pasco_tensor_get(b->pred, i * b->w + k));
	}
	for (int64_t k = 0; k < b->w; k++) {
		sum += exp(pasco_tensor_get(b->pred, i * b->w + k) - mx);
	}
	return exp(z - mx) / sum;
}

static double
label(const batch *b, int64_t i, int64_t j)
{
	return pasco_tensor_get(b->y, i * b->w + j);
}

static int64_t
argmax_row(const pasco_tensor *t, int64_t i, int64_t w)
{
	int64_t best = 0;
	for (int64_t j = 1; j < w; j++) {
		if (pasco_tensor_get(t, i * w + j) >
		    pasco_tensor_get(t, i * w + best)) {
			best = j;
		}
	}
	return best;
}

/* Keras's in_top_k: class t of row i is in the top k when fewer than k
 * classes score strictly more (ties at the boundary are in). Ranked on
 * the raw output: a name's softmax keeps the order. */
static bool
in_top_k(const batch *b, int64_t i, int64_t t, int32_t k)
{
	int64_t above = 0;
	double  at;
	if (t < 0 || t >= b->w ||
	    isnan(at = pasco_tensor_get(b->pred, i * b->w + t))) {
		return false;
	}
	for (int64_t j = 0; j < b->w && above < k; j++) {
		above += pasco_tensor_get(b->pred, i * b->w + j) > at;
	}
	return above < k;
}

typedef struct ranked {
	double  v;
	int64_t j;
} ranked;

/* Larger first; of equal values, the lower index first (top_k's order). */
static int
cmp_ranked(const void *a, const void *b)
{
	const ranked *x = a, *y = b;
	if (x->v != y->v) {
		return x->v > y->v ? -1 : 1;
	}
	return (x->j > y->j) - (x->j < y->j);
}

/* Keras's _filter_top_k on row i into out (width values): the top_k
 * values kept, the rest NEG_INF. r: room for width entries. */
static void
top_k_row(const batch *b, int64_t i, ranked *r, double *out)
{
	int64_t k = b->s->top_k;
	for (int64_t j = 0; j < b->w; j++) {
		out[j] = value(b, i, j);
		r[j]   = (ranked){isnan(out[j]) ? -HUGE_VAL : out[j], j};
	}
	if (k == 0 || k >= b->w) {
		return;
	}
	qsort(r, (size_t) b->w, sizeof(*r), cmp_ranked);
	for (int64_t q = k; q < b->w; q++) {
		out[r[q].j] = NEG_INF;
	}
}

/* Threshold t of a precision, recall or AUC, as Keras compares it: a
 * float32. */
static double
threshold(const pasci_metric_spec *s, pasci_metric_kind kind, int32_t t)
{
	double v;
	if (kind != PASCI_METRIC_AUC) {
		v = s->ngiven > 0 ? s->given[0] : s->top_k > 0 ? NEG_INF : 0.5;
	} else if (t == 0) {
		v = -KERAS_EPSILON;
	} else if (t == s->nthresholds - 1) {
		v = 1 + KERAS_EPSILON;
	} else {
		v = s->ngiven > 0 ? s->given[t - 1]
		                  : (double) t / (s->nthresholds - 1);
	}
	return (float) v;
}

/* How many of AUC's thresholds (ascending) p is above. */
static int32_t
thresholds_below(const pasci_metric_spec *s, double p)
{
	int32_t lo = 0, hi = s->nthresholds; /* p > thr[t] for t < lo */
	while (lo < hi) {
		int32_t mid = lo + (hi - lo) / 2;
		if (p > threshold(s, PASCI_METRIC_AUC, mid)) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

/* AUC's counts: each prediction into the bucket of how many thresholds
 * it is above (O(log T)), then the counts at each threshold from the
 * buckets' sums, as Keras's evenly-spaced path does. */
static int
count_auc(const batch *b, double *s)
{
	const pasci_metric_spec *sp = b->s;
	int32_t                  T = sp->nthresholds, L = sp->nlabels;
	size_t                   rows = (size_t) T * (size_t) L;
	/* [bucket][positive, negative][label] */
	double *hist =
	    pasci_calloc(2 * ((size_t) T + 1) * (size_t) L, sizeof(double));
	if (hist == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (int64_t i = 0; i < b->n; i++) {
		for (int64_t j = 0; j < b->w; j++) {
			double p   = value(b, i, j);
			bool   pos = label(b, i, j) != 0;
			double w   = (!sp->multi_label && sp->nweights > 0
			                     ? sp->label_weights[j]
			                     : 1) *
			           weight(b, i);
			if (sp->object && sp->from_logits) {
				p = 1 / (1 + exp(-p));
			}
			if (sp->evenly) { /* Keras's evenly-spaced path */
				p = fmin(fmax(p, 0), 1);
			}
			int64_t c = thresholds_below(sp, p);
			hist[(2 * c + !pos) * L + (L > 1 ? j : 0)] += w;
		}
	}
	for (int32_t l = 0; l < L; l++) {
		double above[2] = {0, 0}, all[2] = {0, 0};
		for (int32_t c = 0; c <= T; c++) {
			all[0] += hist[2 * c * L + l];
			all[1] += hist[(2 * c + 1) * L + l];
		}
		for (int32_t t = T - 1; t >= 0; t--) { /* buckets > t */
			size_t at = (size_t) t * L + l;
			above[0] += hist[2 * (t + 1) * L + l];
			above[1] += hist[(2 * (t + 1) + 1) * L + l];
			s[at] += above[0];        /* true positives */
			s[rows + at] += above[1]; /* false positives */
			s[2 * rows + at] +=
			    all[1] - above[1]; /* true negatives */
			s[3 * rows + at] +=
			    all[0] - above[0]; /* false negatives */
		}
	}
	free(hist);
	return PASCO_OK;
}

/* Precision ([tp, fp]) or recall ([tp, fn]) of one threshold. */
static int
count_precision(const batch *b, pasci_metric_kind kind, double *s)
{
	double  thr = threshold(b->s, kind, 0);
	int64_t j0  = b->s->class_id >= 0 ? b->s->class_id : 0;
	int64_t j1  = b->s->class_id >= 0 ? j0 + 1 : b->w;
	ranked *r   = malloc((size_t) b->w * sizeof(*r));
	double *row = malloc((size_t) b->w * sizeof(*row));
	if (r == NULL || row == NULL) {
		free(r);
		free(row);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (int64_t i = 0; i < b->n; i++) {
		double w = weight(b, i);
		top_k_row(b, i, r, row);
		for (int64_t j = j0; j < j1; j++) {
			bool above = row[j] > thr;
			bool pos   = label(b, i, j) != 0;
			s[0] += w * (above && pos);
			s[1] += w * (kind == PASCI_METRIC_PRECISION
			                    ? above && !pos
			                    : !above && pos);
		}
	}
	free(r);
	free(row);
	return PASCO_OK;
}

/* Keras's binary_crossentropy of one element (label smoothed). */
static double
bce(const pasci_metric_spec *s, double y, double p)
{
	y = y * (1 - s->label_smoothing) + 0.5 * s->label_smoothing;
	if (s->from_logits) { /* -y log sigmoid(p) - (1-y) log sigmoid(-p) */
		double softplus_neg = fmax(-p, 0) + log1p(exp(-fabs(p)));
		return y * softplus_neg + (1 - y) * (softplus_neg + p);
	}
	/* clipped as Keras clips, in float32 */
	p = fmin(fmax(p, (float) KERAS_EPSILON), (float) (1 - KERAS_EPSILON));
	return -(y * log(p) + (1 - y) * log(1 - p));
}

/* [sum, count] of a per-element value (errors, crossentropy, binary
 * accuracy): each row's elements weigh alike, so the mean over them is
 * Keras's mean of per-example means. */
static void
count_elements(const batch *b, pasci_metric_kind kind, double *s)
{
	for (int64_t i = 0; i < b->n; i++) {
		double w = weight(b, i);
		for (int64_t j = 0; j < b->w; j++) {
			double p = value(b, i, j), t = label(b, i, j), v;
			switch (kind) {
			case PASCI_METRIC_BINARY_ACCURACY:
				v = b->s->object
				        ? t == (p > b->s->threshold ? 1 : 0)
				        : (p > 0.5) == (t > 0.5);
				break;
			case PASCI_METRIC_MAE:
				v = fabs(p - t);
				break;
			case PASCI_METRIC_BCE:
				v = bce(b->s, t, p);
				break;
			default: /* squared errors */
				v = (p - t) * (p - t);
				break;
			}
			s[0] += w * v;
			s[1] += w;
		}
	}
}

/* [hits, rows] of the row-wise accuracies. */
static void
count_rows(const batch *b, pasci_metric_kind kind, double *s)
{
	for (int64_t i = 0; i < b->n; i++) {
		int64_t t   = kind == PASCI_METRIC_SPARSE_CAT_ACCURACY ||
                                    kind == PASCI_METRIC_SPARSE_TOP_K
		                  ? (int64_t) pasco_tensor_get(b->y, i)
		                  : argmax_row(b->y, i, b->w);
		double  w   = weight(b, i);
		bool    hit = false;
		if (kind == PASCI_METRIC_SPARSE_TOP_K &&
		    b->s->from_sorted_ids) {
			for (int64_t j = 0; j < b->w && j < b->s->k; j++) {
				hit = hit || pasco_tensor_get(b->pred,
				                 i * b->w + j) == (double) t;
			}
		} else if (kind == PASCI_METRIC_TOP_K ||
		           kind == PASCI_METRIC_SPARSE_TOP_K) {
			hit = in_top_k(b, i, t, b->s->k);
		} else {
			hit = argmax_row(b->pred, i, b->w) == t;
		}
		s[0] += w * hit;
		s[1] += w;
	}
}

static bool
sparse_labels(pasci_metric_kind kind)
{
	return kind == PASCI_METRIC_SPARSE_CAT_ACCURACY ||
	       kind == PASCI_METRIC_SPARSE_TOP_K;
}

int
pasci_metric_counts(const pasco_model *m, const pasco_tensor *pred,
    const pasco_tensor *y, double *state)
{
	return pasci_metric_counts_weighted(m, pred, y, NULL, state);
}

int
pasci_metric_counts_weighted(const pasco_model *m, const pasco_tensor *pred,
    const pasco_tensor *y, const pasco_tensor *sw, double *state)
{
	return pasci_metric_counts_masked(m, pred, y, sw, NULL, state);
}

/* Whether Keras masks kind's values (a MeanMetricWrapper's). */
static bool
masked_kind(pasci_metric_kind kind)
{
	return kind != PASCI_METRIC_AUC && kind != PASCI_METRIC_PRECISION &&
	       kind != PASCI_METRIC_RECALL && kind != PASCI_METRIC_RMSE;
}

/* A sequence's output and labels as rows (views into pred and y's data):
 * pred [rows, dim]; y [rows] for sparse labels, else [rows, dim]. Other
 * outputs as they are. */
static void
as_rows(const pasco_tensor *pred, const pasco_tensor *y, bool sparse,
    pasco_tensor *pv, pasco_tensor *yv)
{
	*pv = *pred;
	if (y != NULL) {
		*yv = *y;
	}
	if (pred->rank <= 2 || pred->shape[pred->rank - 1] < 1) {
		return;
	}
	pv->rank     = 2;
	pv->shape[1] = pred->shape[pred->rank - 1];
	pv->shape[0] = pred->count / pv->shape[1];
	if (y != NULL && y->count == (sparse ? pv->shape[0] : pred->count)) {
		yv->rank     = sparse ? 1 : 2;
		yv->shape[0] = pv->shape[0];
		yv->shape[1] = pv->shape[1];
	}
}

/* Each row's weight for metric k into rw (rows of them): its example's
 * sample weight when the metric is weighted (sw[r / per]: per 1 for
 * weights per step), times the row's mask when Keras masks the metric.
 * false when every row weighs 1. */
static bool
row_weights(const pasci_compile *c, size_t k, const pasco_tensor *sw,
    const pasco_tensor *mask, int64_t rows, int64_t per, double *rw)
{
	bool weighted = c->metric_weighted[k] && sw != NULL;
	bool masked   = mask != NULL && masked_kind(c->metric_kinds[k]);
	for (int64_t r = 0; (weighted || masked) && r < rows; r++) {
		rw[r] = (weighted ? pasco_tensor_get(sw, r / per) : 1) *
		        (masked ? pasco_tensor_get(mask, r) != 0 : 1);
	}
	return weighted || masked;
}

int
pasci_metric_counts_masked(const pasco_model *m, const pasco_tensor *pred,
    const pasco_tensor *y, const pasco_tensor *sw, const pasco_tensor *mask,
    double *state)
{
	const pasci_compile *c = &m->compile;
	int64_t              rows, per;
	double              *rw;
	int                  rv = PASCO_OK;
	bool steps = sw != NULL && pasci_loss_step_weights(sw, pred);
	if (sw != NULL && pred->rank >= 1 && !steps &&
	    (sw->count != pred->shape[0] || sw->rank > 2 ||
	        (sw->rank == 2 && sw->shape[1] != 1))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "metrics: sample weights %s%s against the output %s: want "
		    "one number per example, or one per step of a sequence",
		    pasco_dtype_name(sw->dtype),
		    PASCI_SHAPE(sw->rank, sw->shape),
		    PASCI_SHAPE(pred->rank, pred->shape));
	}
	rows = pred->rank >= 2 && pred->shape[pred->rank - 1] > 0
	           ? pred->count / pred->shape[pred->rank - 1]
	           : pred->count;
	per =
	    pred->rank >= 1 && pred->shape[0] > 0 ? rows / pred->shape[0] : 1;
	if (mask != NULL && mask->count != rows) {
		return pasci_model_fail(PASCO_EINVAL,
		    "metrics: the output's mask %s does not fit the output %s "
		    "(want one per step: %lld)",
		    PASCI_SHAPE(mask->rank, mask->shape),
		    PASCI_SHAPE(pred->rank, pred->shape), (long long) rows);
	}
	if ((rw = malloc(((size_t) rows + 1) * sizeof(*rw))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; rv == PASCO_OK && k < c->nmetrics; k++) {
		pasci_metric_kind kind = c->metric_kinds[k];
		double           *s    = state + c->metric_off[k];
		pasco_tensor      pv, yv;
		as_rows(pred, y, sparse_labels(kind), &pv, &yv);
		int64_t want = sparse_labels(kind) && pv.rank == 2
		                   ? pv.shape[0]
		                   : pv.count;
		if (pv.rank != 2 || y == NULL || yv.count != want) {
			rv = pasci_model_fail(PASCO_EINVAL,
			    "%s: targets %s%s do not fit the output %s (want "
			    "%lld values)",
			    c->metric_names[k],
			    y != NULL ? pasco_dtype_name(y->dtype) : "none",
			    y != NULL ? PASCI_SHAPE(y->rank, y->shape) : "",
			    PASCI_SHAPE(pred->rank, pred->shape),
			    (long long) want);
			break;
		}
		batch b = {m, &c->metric_specs[k], &pv, &yv,
		    row_weights(c, k, sw, mask, rows, steps ? 1 : per, rw)
		        ? rw
		        : NULL,
		    pv.shape[0], pv.shape[0] > 0 ? pv.count / pv.shape[0] : 0};
		if (b.n == 0) {
			continue;
		} else if (kind == PASCI_METRIC_AUC) {
			rv = count_auc(&b, s);
		} else if (kind == PASCI_METRIC_PRECISION ||
		           kind == PASCI_METRIC_RECALL) {
			rv = count_precision(&b, kind, s);
		} else if (kind == PASCI_METRIC_SPARSE_CAT_ACCURACY ||
		           kind == PASCI_METRIC_CATEGORICAL_ACCURACY ||
		           kind == PASCI_METRIC_TOP_K || sparse_labels(kind)) {
			count_rows(&b, kind, s);
		} else {
			count_elements(&b, kind, s);
		}
	}
	free(rw);
	return rv;
}

static double
divide_no_nan(double a, double b)
{
	return b == 0 ? 0 : a / b;
}

/* Keras's interpolate_pr_auc (Davis & Goadrich): precision interpolated
 * linearly in the predicted positives between thresholds. */
static double
pr_auc_interpolated(const double *s, int32_t T, int32_t l, int32_t L)
{
	const double *tp = s + l, *fp = tp + T * L, *fn = tp + 3 * T * L;
	double        auc = 0;
	for (int32_t t = 0; t + 1 < T; t++) {
		size_t a = (size_t) t * L, b = a + L;
		double p0 = tp[a] + fp[a], p1 = tp[b] + fp[b];
		double dtp   = tp[a] - tp[b];
		double slope = divide_no_nan(dtp, fmax(p0 - p1, 0));
		double icept = tp[b] - slope * p1;
		double ratio =
		    p0 > 0 && p1 > 0 ? divide_no_nan(p0, fmax(p1, 0)) : 1;
		auc += divide_no_nan(slope * (dtp + icept * log(ratio)),
		    fmax(tp[b] + fn[b], 0));
	}
	return auc;
}

/* A point (x, y) of AUC's curve at one threshold: ROC (the false
 * positive rate, recall), PR (recall, precision) or PRGAIN (recall gain,
 * precision gain, as Keras's AUC.result computes them). */
static void
curve_point(pasci_auc_curve curve, double tp, double fp, double tn, double fn,
    double *x, double *y)
{
	double scale, rgain, pgain;
	switch (curve) {
	case PASCI_AUC_ROC:
		*x = divide_no_nan(fp, fp + tn);
		*y = divide_no_nan(tp, tp + fn);
		return;
	case PASCI_AUC_PR:
		*x = divide_no_nan(tp, tp + fn);
		*y = divide_no_nan(tp, tp + fp);
		return;
	default:
		scale = divide_no_nan(tp + fn, tn + fp);
		rgain = tp == 0 ? 0 : 1 - scale * divide_no_nan(fn, tp);
		pgain = tp == 0 ? 1 : 1 - scale * divide_no_nan(fp, tp);
		*x    = fmax(rgain, 0);
		*y    = pgain;
	}
}

/* Label l's AUC (Keras's AUC.result): a Riemann sum of the ROC (recall over
 * the false positive rate), PR (precision over recall) or PRGAIN curve. */
static double
auc_of_label(const pasci_metric_spec *sp, const double *s, int32_t l)
{
	int32_t       T = sp->nthresholds, L = sp->nlabels;
	size_t        rows = (size_t) T * L;
	const double *tp = s + l, *fp = tp + rows, *tn = tp + 2 * rows;
	const double *fn  = tp + 3 * rows;
	double        auc = 0;
	if (sp->curve == PASCI_AUC_PR &&
	    sp->summation == PASCI_AUC_INTERPOLATION) {
		return pr_auc_interpolated(s, T, l, L);
	}
	for (int32_t t = 0; t + 1 < T; t++) {
		double x[2], y[2], h;
		for (int q = 0; q < 2; q++) {
			size_t at = (size_t) (t + q) * L;
			curve_point(sp->curve, tp[at], fp[at], tn[at], fn[at],
			    &x[q], &y[q]);
		}
		h = sp->summation == PASCI_AUC_INTERPOLATION
		        ? (y[0] + y[1]) / 2
		    : sp->summation == PASCI_AUC_MINORING ? fmin(y[0], y[1])
		                                          : fmax(y[0], y[1]);
		auc += (x[0] - x[1]) * h;
	}
	return auc;
}

/* The AUC; multi_label: each label's, averaged (weighted by
 * label_weights when given, as Keras's divide_no_nan of the sums). */
static double
auc_result(const pasci_metric_spec *sp, const double *s)
{
	double sum = 0, weights = 0;
	if (!sp->multi_label) {
		return auc_of_label(sp, s, 0);
	}
	for (int32_t l = 0; l < sp->nlabels; l++) {
		double w = sp->nweights > 0 ? sp->label_weights[l] : 1;
		sum += w * auc_of_label(sp, s, l);
		weights += w;
	}
	return divide_no_nan(sum, weights);
}

double
pasci_metric_result(const pasco_model *m, size_t k, const double *state)
{
	const double *s = state + m->compile.metric_off[k];
	switch (m->compile.metric_kinds[k]) {
	case PASCI_METRIC_AUC:
		return auc_result(&m->compile.metric_specs[k], s);
	case PASCI_METRIC_PRECISION:
	case PASCI_METRIC_RECALL:
		return divide_no_nan(s[0], s[0] + s[1]);
	case PASCI_METRIC_RMSE:
		return s[1] > 0 ? sqrt(s[0] / s[1]) : NAN;
	default:
		return s[1] > 0 ? s[0] / s[1] : NAN;
	}
}
