/*
 * Dense kernels: matmul (cblas), bias add, activations, embedding combine,
 * with gradients. f32 only; pure functions of their inputs. An error
 * names the op and the shapes and dtypes it got (ops_impl.h).
 */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "ops_impl.h"
#include "tensor_impl.h"
#include "util.h"

/* "[32, 64]", with "^T" when transposed. */
static const char *
operand(char *buf, size_t len, const pasco_tensor *t, bool transposed)
{
	char shape[160];
	return pasci_fmt(buf, len, "%s%s",
	    pasci_ops_shape(shape, sizeof(shape), t), transposed ? "^T" : "");
}

static bool
is_activation(pasco_activation f)
{
	return f >= PASCO_RELU && f <= PASCO_TANH;
}

static int
bad_activation(const char *op, pasco_activation f)
{
	return pasci_ops_fail(PASCO_EINVAL,
	    "%s: unknown activation %d (PASCO_RELU, PASCO_SIGMOID or "
	    "PASCO_TANH)",
	    op, (int) f);
}

static bool
is_combiner(pasco_combiner c)
{
	return c == PASCO_COMBINE_SUM || c == PASCO_COMBINE_MEAN;
}

static int
bad_combiner(const char *op, pasco_combiner c)
{
	return pasci_ops_fail(PASCO_EINVAL,
	    "%s: unknown combiner %d (PASCO_COMBINE_SUM or "
	    "PASCO_COMBINE_MEAN)",
	    op, (int) c);
}

/* An output of t's dtype and shape, not zero-filled: the kernels that
 * use it write every element. */
static int
like(const pasco_tensor *t, pasco_tensor **out)
{
	return pasci_tensor_alloc_raw(out, t->dtype, t->rank, t->shape);
}

int
pasco_matmul(const pasco_tensor *a, bool ta, const pasco_tensor *b, bool tb,
    pasco_tensor **out)
{
	int64_t m, k, k2, n;
	int     rv;
	*out = NULL;
	if ((rv = pasci_ops_want_f32("matmul", "a", a, 2)) != 0 ||
	    (rv = pasci_ops_want_f32("matmul", "b", b, 2)) != 0) {
		return rv;
	}
	m  = ta ? a->shape[1] : a->shape[0];
	k  = ta ? a->shape[0] : a->shape[1];
	k2 = tb ? b->shape[1] : b->shape[0];
	n  = tb ? b->shape[0] : b->shape[1];
	if (k != k2) {
		char sa[192], sb[192];
		return pasci_ops_fail(PASCO_EINVAL,
		    "matmul: %s x %s: inner dimensions %lld and %lld differ",
		    operand(sa, sizeof(sa), a, ta),
		    operand(sb, sizeof(sb), b, tb), (long long) k,
		    (long long) k2);
	}
	/* sgemm with beta 0 writes every element; an empty sum is zeros */
	if ((rv = (k > 0 ? pasci_tensor_alloc_raw : pasco_tensor_alloc)(
	         out, PASCO_F32, 2, (int64_t[]){m, n})) != 0) {
		return rv;
	}
	if (m > 0 && n > 0 && k > 0) {
		cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
		    tb ? CblasTrans : CblasNoTrans, (blasint) m, (blasint) n,
		    (blasint) k, 1.0f, a->data, (blasint) a->shape[1], b->data,
		    (blasint) b->shape[1], 0.0f, (*out)->data, (blasint) n);
	}
	return PASCO_OK;
}

int
pasco_bias_add(
    const pasco_tensor *x, const pasco_tensor *bias, pasco_tensor **out)
{
	int64_t rows, cols;
	int     rv;
	*out = NULL;
	if ((rv = pasci_ops_want_f32("bias_add", "x", x, 2)) != 0 ||
	    (rv = pasci_ops_want_f32("bias_add", "bias", bias, 1)) != 0) {
		return rv;
	}
	if (bias->shape[0] != x->shape[1]) {
		char sx[160], sb[160];
		return pasci_ops_fail(PASCO_EINVAL,
		    "bias_add: x %s + bias %s: the bias has %lld elements, x "
		    "%lld columns",
		    pasci_ops_shape(sx, sizeof(sx), x),
		    pasci_ops_shape(sb, sizeof(sb), bias),
		    (long long) bias->shape[0], (long long) x->shape[1]);
	}
	if ((rv = pasco_tensor_copy(out, x)) != 0) {
		return rv;
	}
	rows = x->shape[0];
	cols = x->shape[1];
	for (int64_t i = 0; i < rows; i++) {
		cblas_saxpy((blasint) cols, 1.0f, bias->data, 1,
		    (float *) (*out)->data + i * cols, 1);
	}
	return PASCO_OK;
}

int
pasco_bias_add_grad(const pasco_tensor *dy, pasco_tensor **db)
{
	int rv;
	*db = NULL;
	if ((rv = pasci_ops_want_f32("bias_add_grad", "dy", dy, 2)) != 0) {
		return rv;
	}
	if ((rv = pasco_tensor_alloc(db, PASCO_F32, 1, dy->shape + 1)) != 0) {
		return rv;
	}
	for (int64_t i = 0; i < dy->shape[0]; i++) {
		cblas_saxpy((blasint) dy->shape[1], 1.0f,
		    (const float *) dy->data + i * dy->shape[1], 1,
		    (*db)->data, 1);
	}
	return PASCO_OK;
}

static float
act(pasco_activation f, float x)
{
	switch (f) {
	case PASCO_RELU:
		return x > 0 ? x : 0;
	case PASCO_SIGMOID:
		return x >= 0 ? 1.0f / (1.0f + expf(-x))
		              : expf(x) / (1.0f + expf(x));
	case PASCO_TANH:
		return tanhf(x);
	}
	return NAN;
}

static float
act_grad(pasco_activation f, float y)
{
	switch (f) {
	case PASCO_RELU:
		return y > 0 ? 1 : 0;
	case PASCO_SIGMOID:
		return y * (1 - y);
	case PASCO_TANH:
		return 1 - y * y;
	}
	return NAN;
}

int
pasco_activate(pasco_activation f, const pasco_tensor *x, pasco_tensor **y)
{
	int rv;
	*y = NULL;
	if ((rv = pasci_ops_want_f32("activate", "x", x, -1)) != 0) {
		return rv;
	}
	if (!is_activation(f)) {
		return bad_activation("activate", f);
	}
	if ((rv = like(x, y)) != 0) {
		return rv;
	}
	for (int64_t i = 0; i < x->count; i++) {
		((float *) (*y)->data)[i] =
		    act(f, ((const float *) x->data)[i]);
	}
	return PASCO_OK;
}

int
pasco_activate_grad(pasco_activation f, const pasco_tensor *y,
    const pasco_tensor *dy, pasco_tensor **dx)
{
	int rv;
	*dx = NULL;
	if ((rv = pasci_ops_want_f32("activate_grad", "y", y, -1)) != 0 ||
	    (rv = pasci_ops_want_f32("activate_grad", "dy", dy, -1)) != 0) {
		return rv;
	}
	if (y->count != dy->count) {
		char sy[160], sd[160];
		return pasci_ops_fail(PASCO_EINVAL,
		    "activate_grad: y %s and dy %s differ in size",
		    pasci_ops_shape(sy, sizeof(sy), y),
		    pasci_ops_shape(sd, sizeof(sd), dy));
	}
	if (!is_activation(f)) {
		return bad_activation("activate_grad", f);
	}
	if ((rv = like(y, dx)) != 0) {
		return rv;
	}
	for (int64_t i = 0; i < y->count; i++) {
		((float *) (*dx)->data)[i] =
		    ((const float *) dy->data)[i] *
		    act_grad(f, ((const float *) y->data)[i]);
	}
	return PASCO_OK;
}

int
pasco_embedding_combine(
    const pasco_tensor *rows, pasco_combiner c, pasco_tensor **out)
{
	int64_t b, k, d;
	int     rv;
	*out = NULL;
	if ((rv = pasci_ops_want_f32("embedding_combine", "rows", rows, 3)) !=
	    0) {
		return rv;
	}
	if (!is_combiner(c)) {
		return bad_combiner("embedding_combine", c);
	}
	b = rows->shape[0];
	k = rows->shape[1];
	d = rows->shape[2];
	if ((rv = pasco_tensor_alloc(out, PASCO_F32, 2, (int64_t[]){b, d})) !=
	    0) {
		return rv;
	}
	for (int64_t i = 0; i < b; i++) {
		float *o = (float *) (*out)->data + i * d;
		for (int64_t j = 0; j < k; j++) {
			cblas_saxpy((blasint) d,
			    c == PASCO_COMBINE_MEAN && k > 0 ? 1.0f / (float) k
			                                     : 1.0f,
			    (const float *) rows->data + (i * k + j) * d, 1, o,
			    1);
		}
	}
	return PASCO_OK;
}

int
pasco_embedding_combine_grad(const pasco_tensor *dout, int64_t k,
    pasco_combiner c, pasco_tensor **drows)
{
	int64_t b, d;
	float   scale =
            c == PASCO_COMBINE_MEAN && k > 0 ? 1.0f / (float) k : 1.0f;
	int rv;
	*drows = NULL;
	if ((rv = pasci_ops_want_f32(
	         "embedding_combine_grad", "dout", dout, 2)) != 0) {
		return rv;
	}
	if (k < 0) {
		return pasci_ops_fail(PASCO_EINVAL,
		    "embedding_combine_grad: k is %lld; want >= 0",
		    (long long) k);
	}
	if (!is_combiner(c)) {
		return bad_combiner("embedding_combine_grad", c);
	}
	b = dout->shape[0];
	d = dout->shape[1];
	if ((rv = pasco_tensor_alloc(
	         drows, PASCO_F32, 3, (int64_t[]){b, k, d})) != 0) {
		return rv;
	}
	for (int64_t i = 0; i < b; i++) {
		for (int64_t j = 0; j < k; j++) {
			cblas_saxpy((blasint) d, scale,
			    (const float *) dout->data + i * d, 1,
			    (float *) (*drows)->data + (i * k + j) * d, 1);
		}
	}
	return PASCO_OK;
}
