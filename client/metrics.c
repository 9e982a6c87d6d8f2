/*
 * Metrics accumulated on the ps (see metrics.h): a batch's counts are
 * computed where the batch is, then added to the state with one
 * assign_add; the result is computed from the state when read.
 */
#include <math.h>
#include <string.h>

#include "metrics_impl.h"
#include "pasco/metrics.h"
#include "util.h"

void
pasco_metric_state_shape(pasco_metric_kind kind, int32_t *rank, int64_t *shape)
{
	if (kind == PASCO_METRIC_AUC) {
		*rank    = 2;
		shape[0] = 4;
		shape[1] = PASCO_AUC_THRESHOLDS;
	} else {
		*rank    = 1;
		shape[0] = 2;
	}
}

/* Keras's AUC thresholds: just below 0, (i + 1) / (n - 1), just above 1. */
static double
auc_threshold(int i)
{
	const double eps = 1e-7;
	if (i == 0) {
		return -eps;
	}
	if (i == PASCO_AUC_THRESHOLDS - 1) {
		return 1 + eps;
	}
	return (double) i / (PASCO_AUC_THRESHOLDS - 1);
}

void
pasci_auc_add(double *s, double p, bool y)
{
	for (int t = 0; t < PASCO_AUC_THRESHOLDS; t++) {
		bool positive = p > auc_threshold(t);
		int  row      = positive ? (y ? 0 : 1) : (y ? 3 : 2);
		s[row * PASCO_AUC_THRESHOLDS + t] += 1;
	}
}

static void
batch_counts(pasco_metric_kind kind, const pasco_tensor *pred,
    const pasco_tensor *labels, pasco_tensor *delta)
{
	double *d = delta->data;
	for (int64_t i = 0; i < pred->count; i++) {
		double p = pasco_tensor_get(pred, i);
		bool   y = labels != NULL && pasco_tensor_get(labels, i) > 0.5;
		if (kind == PASCO_METRIC_MEAN || kind == PASCO_METRIC_SUM) {
			d[0] += p;
			d[1] += 1;
		} else if (kind == PASCO_METRIC_ACCURACY) {
			d[0] += (p > 0.5) == y;
			d[1] += 1;
		} else {
			pasci_auc_add(d, p, y);
		}
	}
}

int
pasco_metric_update(pasco_variable *state, pasco_metric_kind kind,
    const pasco_tensor *pred, const pasco_tensor *labels)
{
	pasco_tensor *delta;
	int32_t       rank;
	int64_t       shape[2];
	int           rv;

	if (pred == NULL || kind < PASCO_METRIC_MEAN ||
	    kind > PASCO_METRIC_SUM ||
	    (kind != PASCO_METRIC_MEAN && kind != PASCO_METRIC_SUM &&
	        (labels == NULL || labels->count != pred->count))) {
		return PASCO_EINVAL;
	}
	pasco_metric_state_shape(kind, &rank, shape);
	if ((rv = pasco_tensor_alloc(&delta, PASCO_F64, rank, shape)) != 0) {
		return rv;
	}
	batch_counts(kind, pred, labels, delta);
	rv = pasco_variable_assign_add(state, delta);
	pasco_tensor_release(delta);
	return rv;
}

double
pasci_auc_of(const double *s)
{
	const double *tp = s, *fp = s + PASCO_AUC_THRESHOLDS;
	const double *tn  = s + 2 * PASCO_AUC_THRESHOLDS;
	const double *fn  = s + 3 * PASCO_AUC_THRESHOLDS;
	double        auc = 0;
	for (int t = 0; t + 1 < PASCO_AUC_THRESHOLDS; t++) {
		double tpr0 = tp[t] / fmax(tp[t] + fn[t], 1e-12);
		double tpr1 = tp[t + 1] / fmax(tp[t + 1] + fn[t + 1], 1e-12);
		double fpr0 = fp[t] / fmax(fp[t] + tn[t], 1e-12);
		double fpr1 = fp[t + 1] / fmax(fp[t + 1] + tn[t + 1], 1e-12);
		auc += (fpr0 - fpr1) * (tpr0 + tpr1) / 2;
	}
	return auc;
}

int
pasco_metric_result(pasco_variable *state, pasco_metric_kind kind, double *out)
{
	pasco_tensor *t;
	int           rv;
	*out = NAN;
	if ((rv = pasco_variable_read(state, &t)) != 0) {
		return rv;
	}
	if (t->dtype != PASCO_F64 ||
	    t->count !=
	        (kind == PASCO_METRIC_AUC ? 4 * PASCO_AUC_THRESHOLDS : 2)) {
		rv = PASCO_EINVAL;
	} else if (kind == PASCO_METRIC_AUC) {
		*out = pasci_auc_of(t->data);
	} else if (kind == PASCO_METRIC_SUM) {
		*out = ((double *) t->data)[0]; /* Keras's Sum: 0 when empty */
	} else if (((double *) t->data)[1] > 0) {
		*out = ((double *) t->data)[0] / ((double *) t->data)[1];
	}
	pasco_tensor_release(t);
	return rv;
}

int
pasco_metric_reset(pasco_variable *state)
{
	pasco_tensor *zero;
	int rv = pasco_tensor_alloc(&zero, pasco_variable_dtype(state),
	    pasco_variable_rank(state), pasco_variable_shape(state));
	if (rv == 0) {
		rv = pasco_variable_assign(state, zero);
		pasco_tensor_release(zero);
	}
	return rv;
}
