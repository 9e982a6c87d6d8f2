/*
 * Losses (means over the batch, as Keras) with their gradients, and L2
 * regularisation. f32 predictions; labels and targets f32, f64, i32 or
 * i64 (an int64 Example feature is i64), class ids i32 or i64 for
 * softmax; double accumulation; pure functions, except that
 * pasco_l2_penalty adds into the gradient it is given. An error names the
 * loss and the shapes and dtypes it got (ops_impl.h).
 */
#include <math.h>

#include "ops_impl.h"
#include "tensor_impl.h"
#include "util.h"

#define BCE_EPSILON 1e-7

static float
fget(const pasco_tensor *t, int64_t i)
{
	return ((const float *) t->data)[i];
}

static bool
is_label_dtype(pasco_dtype d)
{
	return d == PASCO_F32 || d == PASCO_F64 || d == PASCO_I32 ||
	       d == PASCO_I64;
}

/* pred (f32) against labels (f32, f64, i32 or i64) of the same count. */
static int
check_pair(const char *op, const char *pname, const pasco_tensor *pred,
    const pasco_tensor *labels)
{
	char a[192], b[192];
	int  rv;
	if ((rv = pasci_ops_want_f32(op, pname, pred, -1)) != 0) {
		return rv;
	}
	if (labels == NULL || !is_label_dtype(labels->dtype)) {
		return pasci_ops_fail(PASCO_EINVAL,
		    "%s: the labels are %s; want f32, f64, i32 or i64%s", op,
		    pasci_ops_desc(a, sizeof(a), labels),
		    labels != NULL && labels->dtype == PASCO_U8
		        ? " (u8 tensors hold bytes)"
		        : "");
	}
	if (pred->count != labels->count || pred->count == 0) {
		return pasci_ops_fail(PASCO_EINVAL,
		    "%s: %s %s against labels %s: %s", op, pname,
		    pasci_ops_shape(a, sizeof(a), pred),
		    pasci_ops_desc(b, sizeof(b), labels),
		    pred->count == 0 ? "no elements"
		                     : "their element counts differ");
	}
	return PASCO_OK;
}

int
pasco_mse(const pasco_tensor *pred, const pasco_tensor *target, double *loss,
    pasco_tensor **dpred)
{
	double sum = 0;
	int    rv;
	*dpred = NULL;
	if ((rv = check_pair("mse", "pred", pred, target)) != 0) {
		return rv;
	}
	if ((rv = pasco_tensor_alloc(
	         dpred, PASCO_F32, pred->rank, pred->shape)) != 0) {
		return rv;
	}
	for (int64_t i = 0; i < pred->count; i++) {
		double e =
		    (double) fget(pred, i) - pasco_tensor_get(target, i);
		sum += e * e;
		((float *) (*dpred)->data)[i] =
		    (float) (2 * e / (double) pred->count);
	}
	*loss = sum / (double) pred->count;
	return PASCO_OK;
}

int
pasco_binary_crossentropy(const pasco_tensor *prob, const pasco_tensor *labels,
    double *loss, pasco_tensor **dprob)
{
	double sum = 0, n;
	int    rv;
	*dprob = NULL;
	if ((rv = check_pair("binary_crossentropy", "prob", prob, labels)) !=
	    0) {
		return rv;
	}
	if ((rv = pasco_tensor_alloc(
	         dprob, PASCO_F32, prob->rank, prob->shape)) != 0) {
		return rv;
	}
	n = (double) prob->count;
	for (int64_t i = 0; i < prob->count; i++) {
		double q = fget(prob, i), y = pasco_tensor_get(labels, i);
		double p = fmin(fmax(q, BCE_EPSILON), 1 - BCE_EPSILON);
		sum -= y * log(p) + (1 - y) * log(1 - p);
		/* Keras's clip passes no gradient where it clips: the loss is
		 * flat there */
		((float *) (*dprob)->data)[i] =
		    q < BCE_EPSILON || q > 1 - BCE_EPSILON
		        ? 0.0f
		        : (float) ((-y / p + (1 - y) / (1 - p)) / n);
	}
	*loss = sum / n;
	return PASCO_OK;
}

int
pasco_binary_crossentropy_logits(const pasco_tensor *logits,
    const pasco_tensor *labels, double *loss, pasco_tensor **dlogits)
{
	double sum = 0, n;
	int    rv;
	*dlogits = NULL;
	if ((rv = check_pair("binary_crossentropy_logits", "logits", logits,
	         labels)) != 0) {
		return rv;
	}
	if ((rv = pasco_tensor_alloc(
	         dlogits, PASCO_F32, logits->rank, logits->shape)) != 0) {
		return rv;
	}
	n = (double) logits->count;
	for (int64_t i = 0; i < logits->count; i++) {
		double x = fget(logits, i), y = pasco_tensor_get(labels, i);
		double s = x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
		sum += fmax(x, 0) - x * y + log1p(exp(-fabs(x)));
		((float *) (*dlogits)->data)[i] = (float) ((s - y) / n);
	}
	*loss = sum / n;
	return PASCO_OK;
}

static int64_t
label_at(const pasco_tensor *labels, int64_t i)
{
	return labels->dtype == PASCO_I64
	           ? ((const int64_t *) labels->data)[i]
	           : ((const int32_t *) labels->data)[i];
}

/* logits f32 [batch, classes], labels i32 or i64 [batch] in
 * [0, classes). */
static int
check_classes(const pasco_tensor *logits, const pasco_tensor *labels)
{
	const char *op = "softmax_crossentropy";
	char        a[192], b[192];
	int         rv;
	if ((rv = pasci_ops_want_f32(op, "logits", logits, 2)) != 0) {
		return rv;
	}
	if (labels == NULL ||
	    (labels->dtype != PASCO_I32 && labels->dtype != PASCO_I64)) {
		return pasci_ops_fail(PASCO_EINVAL,
		    "%s: the labels are %s; want class ids, i32 or i64", op,
		    pasci_ops_desc(a, sizeof(a), labels));
	}
	if (labels->count != logits->shape[0] || logits->shape[0] < 1) {
		return pasci_ops_fail(PASCO_EINVAL,
		    "%s: logits %s against labels %s: want one label per row "
		    "of at least one",
		    op, pasci_ops_shape(a, sizeof(a), logits),
		    pasci_ops_desc(b, sizeof(b), labels));
	}
	for (int64_t i = 0; i < labels->count; i++) {
		if (label_at(labels, i) < 0 ||
		    label_at(labels, i) >= logits->shape[1]) {
			return pasci_ops_fail(PASCO_EINVAL,
			    "%s: label %lld (row %lld) is not a class of "
			    "[0, %lld)",
			    op, (long long) label_at(labels, i), (long long) i,
			    (long long) logits->shape[1]);
		}
	}
	return PASCO_OK;
}

int
pasco_softmax_crossentropy(const pasco_tensor *logits,
    const pasco_tensor *labels, double *loss, pasco_tensor **dlogits)
{
	int64_t b, c;
	double  sum = 0;
	int     rv;
	*dlogits = NULL;
	if ((rv = check_classes(logits, labels)) != 0) {
		return rv;
	}
	b = logits->shape[0];
	c = logits->shape[1];
	/* every element written below */
	if ((rv = pasci_tensor_alloc_raw(
	         dlogits, PASCO_F32, 2, logits->shape)) != 0) {
		return rv;
	}
	for (int64_t i = 0; i < b; i++) {
		const float *x   = (const float *) logits->data + i * c;
		float       *d   = (float *) (*dlogits)->data + i * c;
		double       max = x[0], z = 0;
		for (int64_t j = 1; j < c; j++) {
			max = fmax(max, x[j]);
		}
		for (int64_t j = 0; j < c; j++) {
			z += exp(x[j] - max);
		}
		sum += log(z) + max - x[label_at(labels, i)];
		for (int64_t j = 0; j < c; j++) {
			double p = exp(x[j] - max) / z;
			d[j]     = (float) ((p - (j == label_at(labels, i))) /
                                        (double) b);
		}
	}
	*loss = sum / (double) b;
	return PASCO_OK;
}

double
pasco_l2_penalty(const pasco_tensor *w, double l2, pasco_tensor *grad)
{
	double sum = 0;
	for (int64_t i = 0; i < w->count; i++) {
		double x = pasco_tensor_get(w, i);
		sum += x * x;
		if (grad != NULL) {
			pasco_tensor_set(
			    grad, i, pasco_tensor_get(grad, i) + 2 * l2 * x);
		}
	}
	return l2 * sum;
}
