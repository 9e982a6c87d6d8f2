/*
 * Dense ops on the tape: matmul (cblas, f32 or f64), elementwise add /
 * sub / mul (here when one shape is the other's trailing dimensions, a
 * row added to a matrix as bias_add; numpy's other broadcasts in
 * model/ops_bcast.c), scale, bias_add,
 * reshape, concat and reductions; each with its backward. Each op checks
 * its inputs and reports a mismatch on the tape, naming the op, the
 * shapes and the dtypes.
 */
#include <cblas.h>
#include <string.h>

#include "tape_ops_impl.h"

void
pasci_gemm(pasco_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
    const void *a, int64_t lda, const void *b, int64_t ldb, double beta,
    void *c, int64_t ldc, size_t cbytes)
{
	if (m == 0 || n == 0 || k == 0) {
		if (beta == 0) {
			memset(c, 0, cbytes);
		}
		return;
	}
	/* OpenBLAS zeroes c for beta 0 in a pass of its own (sgemm_beta),
	 * slower than memset, then adds op(a) op(b) into it as for beta 1:
	 * zeroing here and asking for beta 1 gives the same bits (0 + x is
	 * x, -0 included) for about 40 us less on a [784, 256] gradient */
	if (beta == 0 && ldc == n &&
	    cbytes == (size_t) (m * n) * pasco_dtype_size(dt)) {
		memset(c, 0, cbytes);
		beta = 1;
	}
	if (dt == PASCO_F32) {
		cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
		    tb ? CblasTrans : CblasNoTrans, (blasint) m, (blasint) n,
		    (blasint) k, 1.0f, a, (blasint) lda, b, (blasint) ldb,
		    (float) beta, c, (blasint) ldc);
	} else {
		cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
		    tb ? CblasTrans : CblasNoTrans, (blasint) m, (blasint) n,
		    (blasint) k, 1.0, a, (blasint) lda, b, (blasint) ldb, beta,
		    c, (blasint) ldc);
	}
}

static void
matmul_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode *a = n->in[0], *b = n->in[1];
	bool         ta = n->flag[0], tb = n->flag[1], fa, fb;
	int64_t      m = n->value.shape[0], cols = n->value.shape[1];
	int64_t      k   = ta ? a->value.shape[0] : a->value.shape[1];
	int64_t      lda = a->value.shape[1], ldb = b->value.shape[1];
	pasco_dtype  dt  = n->value.dtype;
	void        *da  = pasci_tape_grad_out(tp, a, &fa);
	void        *db  = pasci_tape_grad_out(tp, b, &fb);
	if (da != NULL && !ta) { /* dA += dC op(B)^T */
		pasci_gemm(dt, false, !tb, m, k, cols, n->grad, cols,
		    b->value.data, ldb, !fa, da, k, a->value.nbytes);
	} else if (da != NULL) { /* dA += op(B) dC^T */
		pasci_gemm(dt, tb, true, k, m, cols, b->value.data, ldb,
		    n->grad, cols, !fa, da, m, a->value.nbytes);
	}
	if (db != NULL && !tb) { /* dB += op(A)^T dC */
		pasci_gemm(dt, !ta, false, k, cols, m, a->value.data, lda,
		    n->grad, cols, !fb, db, cols, b->value.nbytes);
	} else if (db != NULL) { /* dB += dC^T op(A) */
		pasci_gemm(dt, true, ta, cols, k, m, n->grad, cols,
		    a->value.data, lda, !fb, db, k, b->value.nbytes);
	}
}

static const pasci_tape_op matmul_op = {"matmul", matmul_backward};

pasco_tnode *
pasco_t_matmul(
    pasco_tape *tp, pasco_tnode *a, pasco_tnode *b, bool ta, bool tb)
{
	pasco_tnode *n;
	int64_t      m, k, k2, cols;
	if (!pasci_tape_check(tp, "matmul", 2, (pasco_tnode *[]){a, b}) ||
	    !pasci_tape_same_dtype(tp, "matmul", a, b)) {
		return NULL;
	}
	if (a->value.rank == 3 && b->value.rank == 3) {
		return pasci_t_batch_matmul(tp, a, b, ta, tb);
	}
	if (a->value.rank != 2 || b->value.rank != 2) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "matmul: %s x %s: both must have rank 2 (or both 3)",
		    PASCI_SPEC(a), PASCI_SPEC(b));
	}
	m    = ta ? a->value.shape[1] : a->value.shape[0];
	k    = ta ? a->value.shape[0] : a->value.shape[1];
	k2   = tb ? b->value.shape[1] : b->value.shape[0];
	cols = tb ? b->value.shape[0] : b->value.shape[1];
	if (k != k2) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "matmul: %s%s x %s%s: inner dimensions %lld and %lld "
		    "differ",
		    PASCI_SPEC(a), ta ? "^T" : "", PASCI_SPEC(b),
		    tb ? "^T" : "", (long long) k, (long long) k2);
	}
	n = pasci_tape_node_raw(tp, &matmul_op, a->value.dtype, 2,
	    (int64_t[]){m, cols}, 2, (pasco_tnode *[]){a, b});
	if (n == NULL) {
		return NULL;
	}
	n->flag[0] = ta;
	n->flag[1] = tb;
	pasci_gemm(n->value.dtype, ta, tb, m, cols, k, a->value.data,
	    a->value.shape[1], b->value.data, b->value.shape[1], 0,
	    n->value.data, cols, n->value.nbytes);
	return n;
}

/* ---- elementwise, with broadcasting ---- */

/* numbered as their pasci_bc_kind, which the general case takes */
enum { EW_ADD = PASCI_BC_ADD, EW_SUB = PASCI_BC_SUB, EW_MUL = PASCI_BC_MUL };

/* x's shape is the trailing dimensions of big's. */
static bool
is_suffix(const pasco_tensor *x, const pasco_tensor *big)
{
	if (x->rank > big->rank) {
		return false;
	}
	for (int32_t d = 0; d < x->rank; d++) {
		if (x->shape[d] != big->shape[big->rank - x->rank + d]) {
			return false;
		}
	}
	return true;
}

/* row is [n] and x [..., n] with more than one row: bias_add's case. */
static bool
is_row_of(const pasco_tnode *row, const pasco_tnode *x)
{
	return row->value.rank == 1 && x->value.rank >= 2 &&
	       x->value.shape[x->value.rank - 1] == row->value.shape[0];
}

/* d[i % cd] += g[i] * (o[i % co], or 1 when o is NULL) * sign: the
 * gradient of one side of an elementwise op, the broadcast side's summed
 * over its repeats. */
static void
ew_side(pasco_dtype dt, int64_t count, const void *g, void *d, int64_t cd,
    bool fresh, const void *o, int64_t co, double sign)
{
	bool flat = cd == count && (o == NULL || co == count);
	if (fresh && !flat) {
		memset(d, 0, (size_t) cd * pasco_dtype_size(dt));
		fresh = false;
	}
	PASCI_TYPED(dt, T, {
		const T *gs = g, *os = o;
		T       *ds = d, sg = (T) sign;
		if (flat && os == NULL) {
			PASCI_SET_OR_ADD(fresh, count, i, ds, sg * gs[i]);
		} else if (flat) {
			PASCI_SET_OR_ADD(fresh, count, i, ds, gs[i] * os[i]);
		} else {
			for (int64_t i = 0; i < count; i++) {
				ds[i % cd] += (os == NULL ? sg : os[i % co]) *
				              gs[i];
			}
		}
	});
}

static void
ew_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode *a = n->in[0], *b = n->in[1];
	bool         mul = n->i[0] == EW_MUL, fa, fb;
	void        *da  = pasci_tape_grad_out(tp, a, &fa);
	void        *db  = pasci_tape_grad_out(tp, b, &fb);
	if (da != NULL) {
		ew_side(n->value.dtype, n->value.count, n->grad, da,
		    a->value.count, fa, mul ? b->value.data : NULL,
		    b->value.count, 1);
	}
	if (db != NULL) {
		ew_side(n->value.dtype, n->value.count, n->grad, db,
		    b->value.count, fb, mul ? a->value.data : NULL,
		    a->value.count, n->i[0] == EW_SUB ? -1 : 1);
	}
}

static const pasci_tape_op ew_ops[] = {
    [EW_ADD] = {"add", ew_backward},
    [EW_SUB] = {"sub", ew_backward},
    [EW_MUL] = {"mul", ew_backward},
};

static pasco_tnode *
elementwise(pasco_tape *tp, int kind, pasco_tnode *a, pasco_tnode *b)
{
	const char  *name = ew_ops[kind].name;
	pasco_tnode *n, *big;
	pasco_dtype  dt;
	int64_t      ca, cb;
	if (!pasci_tape_check(tp, name, 2, (pasco_tnode *[]){a, b}) ||
	    !pasci_tape_same_dtype(tp, name, a, b)) {
		return NULL;
	}
	big = a->value.rank >= b->value.rank ? a : b;
	if (!is_suffix(&a->value, &big->value) ||
	    !is_suffix(&b->value, &big->value)) {
		return pasci_t_broadcast(tp, (pasci_bc_kind) kind, a, b);
	}
	if (kind == EW_ADD && is_row_of(b, a)) {
		return pasco_t_bias_add(tp, a, b); /* a Dense's x W + b */
	}
	if (kind == EW_ADD && is_row_of(a, b)) {
		return pasco_t_bias_add(tp, b, a);
	}
	dt = a->value.dtype;
	n  = pasci_tape_node_raw(tp, &ew_ops[kind], dt, big->value.rank,
	     big->value.shape, 2, (pasco_tnode *[]){a, b});
	if (n == NULL) {
		return NULL;
	}
	n->i[0] = kind;
	ca      = a->value.count;
	cb      = b->value.count;
	PASCI_TYPED(dt, T, {
		const T *x = a->value.data, *y = b->value.data;
		T       *z = n->value.data;
		for (int64_t i = 0; i < n->value.count; i++) {
			T u = x[i % ca], v = y[i % cb];
			z[i] = kind == EW_ADD   ? u + v
			       : kind == EW_SUB ? u - v
			                        : u * v;
		}
	});
	return n;
}

pasco_tnode *
pasco_t_add(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return elementwise(tp, EW_ADD, a, b);
}

pasco_tnode *
pasco_t_sub(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return elementwise(tp, EW_SUB, a, b);
}

pasco_tnode *
pasco_t_mul(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return elementwise(tp, EW_MUL, a, b);
}

static void
scale_backward(pasco_tape *tp, pasco_tnode *n)
{
	bool  fresh;
	void *dx = pasci_tape_grad_out(tp, n->in[0], &fresh);
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		const T *g = n->grad;
		T       *d = dx;
		PASCI_SET_OR_ADD(fresh, n->value.count, i, d,
		    (T) (n->f * (double) g[i]));
	});
}

static const pasci_tape_op scale_op = {"scale", scale_backward};

pasco_tnode *
pasco_t_scale(pasco_tape *tp, pasco_tnode *a, double s)
{
	pasco_tnode *n;
	if (!pasci_tape_check(tp, "scale", 1, &a) ||
	    (n = pasci_tape_node_raw(tp, &scale_op, a->value.dtype,
	         a->value.rank, a->value.shape, 1, &a)) == NULL) {
		return NULL;
	}
	n->f = s;
	PASCI_TYPED(n->value.dtype, T, {
		const T *x = a->value.data;
		T       *y = n->value.data;
		for (int64_t i = 0; i < n->value.count; i++) {
			y[i] = (T) (s * (double) x[i]);
		}
	});
	return n;
}

/* dbias (fresh: written) += the rows of dy [rows, cols], row by row as the
 * kit's bias_add_grad sums them (f32: its saxpy). */
static void
sum_rows(pasco_dtype dt, int64_t rows, int64_t cols, const void *dy,
    void *db, bool fresh)
{
	size_t es = pasco_dtype_size(dt);
	if (fresh) {
		if (rows == 0) {
			memset(db, 0, (size_t) cols * es);
			return;
		}
		memcpy(db, dy, (size_t) cols * es);
	}
	for (int64_t r = fresh ? 1 : 0; r < rows; r++) {
		if (dt == PASCO_F32) {
			cblas_saxpy((blasint) cols, 1.0f,
			    (const float *) dy + r * cols, 1, db, 1);
		} else {
			cblas_daxpy((blasint) cols, 1.0,
			    (const double *) dy + r * cols, 1, db, 1);
		}
	}
}

/* dx += dy; dbias += dy summed over rows. */
static void
bias_add_backward(pasco_tape *tp, pasco_tnode *n)
{
	int64_t cols = n->in[1]->value.count;
	int64_t rows = cols ? n->value.count / cols : 0;
	bool    fx = false, fb;
	void   *dx = pasci_tape_grad_pass(n->in[0], n)
	                 ? NULL
	                 : pasci_tape_grad_out(tp, n->in[0], &fx);
	void   *db = pasci_tape_grad_out(tp, n->in[1], &fb);
	if (db != NULL) {
		sum_rows(n->value.dtype, rows, cols, n->grad, db, fb);
	}
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		const T *g = n->grad;
		T       *x = dx;
		PASCI_SET_OR_ADD(fx, n->value.count, i, x, g[i]);
	});
}

/* y = x + bias, bias added to each row of cols of x's count elements: a
 * restrict kernel (PASCI_EACH8) the compiler vectorises. */
#define BIAS_ROWS(T, sfx)                                                     \
	static void bias_rows_##sfx(int64_t count, int64_t cols,              \
	    const T *restrict x, const T *restrict b, T *restrict y)          \
	{                                                                     \
		for (int64_t r = 0; cols > 0 && r < count / cols; r++) {      \
			const T *xr = x + r * cols;                           \
			T       *yr = y + r * cols;                           \
			PASCI_EACH8(cols, j, { yr[j] = xr[j] + b[j]; });      \
		}                                                             \
	}
BIAS_ROWS(float, f32)
BIAS_ROWS(double, f64)

static const pasci_tape_op bias_add_op = {"bias_add", bias_add_backward};

pasco_tnode *
pasco_t_bias_add(pasco_tape *tp, pasco_tnode *x, pasco_tnode *bias)
{
	pasco_tnode *n;
	int64_t      cols;
	if (!pasci_tape_check(tp, "bias_add", 2, (pasco_tnode *[]){x, bias}) ||
	    !pasci_tape_same_dtype(tp, "bias_add", x, bias)) {
		return NULL;
	}
	if (x->value.rank < 1 || bias->value.rank != 1 ||
	    bias->value.shape[0] != x->value.shape[x->value.rank - 1]) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "bias_add: %s + %s: the bias must be [n] for x [..., n]",
		    PASCI_SPEC(x), PASCI_SPEC(bias));
	}
	n = pasci_tape_node_raw(tp, &bias_add_op, x->value.dtype,
	    x->value.rank, x->value.shape, 2, (pasco_tnode *[]){x, bias});
	if (n == NULL) {
		return NULL;
	}
	cols = bias->value.count;
	if (n->value.dtype == PASCO_F32) {
		bias_rows_f32(n->value.count, cols, x->value.data,
		    bias->value.data, n->value.data);
	} else {
		bias_rows_f64(n->value.count, cols, x->value.data,
		    bias->value.data, n->value.data);
	}
	return n;
}

/* ---- shapes ---- */

/* dx += dy elementwise (same element order): reshape's backward. */
static void
copy_backward(pasco_tape *tp, pasco_tnode *n)
{
	bool  fresh;
	void *dx;
	if (pasci_tape_grad_pass(n->in[0], n) ||
	    (dx = pasci_tape_grad_out(tp, n->in[0], &fresh)) == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		const T *g = n->grad;
		T       *d = dx;
		PASCI_SET_OR_ADD(fresh, n->value.count, i, d, g[i]);
	});
}

static const pasci_tape_op reshape_op = {"reshape", copy_backward};

pasco_tnode *
pasco_t_reshape(
    pasco_tape *tp, pasco_tnode *x, int32_t rank, const int64_t *shape)
{
	int64_t      dims[PASCO_MAX_RANK], known = 1;
	int32_t      infer = -1;
	pasco_tnode *n;
	char         want[80];
	if (!pasci_tape_check(tp, "reshape", 1, &x)) {
		return NULL;
	}
	if (rank < 0 || rank > PASCO_MAX_RANK || (rank > 0 && shape == NULL)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "reshape: %s: rank %d is outside [0, %d]", PASCI_SPEC(x),
		    (int) rank, PASCO_MAX_RANK);
	}
	for (int32_t d = 0; d < rank; d++) {
		dims[d] = shape[d];
		if (shape[d] == -1 && infer < 0) {
			infer = d;
		} else if (shape[d] < 0) {
			infer = -2;
			break;
		} else {
			known *= shape[d];
		}
	}
	if (infer >= 0 && known > 0 && x->value.count % known == 0) {
		dims[infer] = x->value.count / known;
		known *= dims[infer];
	}
	if (infer == -2 || known != x->value.count) {
		pasco_tensor_spec_string(
		    x->value.dtype, rank, shape, want, sizeof(want));
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "reshape: %s to %s: element counts differ (or more than "
		    "one -1)",
		    PASCI_SPEC(x), want);
	}
	n = pasci_tape_node_raw(
	    tp, &reshape_op, x->value.dtype, rank, dims, 1, &x);
	if (n != NULL) {
		memcpy(n->value.data, x->value.data, n->value.nbytes);
	}
	return n;
}

/* Each input's rows of concat: outer (the product of the dimensions before
 * the axis) rows of width[k] = its dimensions from the axis on. */
static void
concat_backward(pasco_tape *tp, pasco_tnode *n)
{
	int64_t outer = n->i[0], total = n->value.count / (outer ? outer : 1);
	int64_t off = 0;
	for (size_t k = 0; k < n->nin; k++) {
		pasco_tnode *x     = n->ins[k];
		int64_t      width = outer ? x->value.count / outer : 0;
		bool         fresh;
		void        *dx = pasci_tape_grad_out(tp, x, &fresh);
		PASCI_TYPED(n->value.dtype, T, {
			const T *g = (const T *) n->grad + off;
			T       *d = dx;
			for (int64_t r = 0; d != NULL && r < outer; r++) {
				PASCI_SET_OR_ADD(fresh, width, j,
				    d + r * width, g[r * total + j]);
			}
		});
		off += width;
	}
}

static const pasci_tape_op concat_op = {"concat", concat_backward};

static bool
concat_fits(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b, int32_t axis)
{
	bool ok = a->value.rank == b->value.rank;
	for (int32_t d = 0; ok && d < a->value.rank; d++) {
		ok = d == axis || a->value.shape[d] == b->value.shape[d];
	}
	if (!ok) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "concat: %s and %s along axis %d: the other dimensions "
		    "differ",
		    PASCI_SPEC(a), PASCI_SPEC(b), (int) axis);
	}
	return ok && pasci_tape_same_dtype(tp, "concat", a, b);
}

pasco_tnode *
pasco_t_concat(pasco_tape *tp, size_t nx, pasco_tnode *const *xs, int32_t axis)
{
	int64_t      shape[PASCO_MAX_RANK], outer = 1, off = 0, total;
	pasco_tnode *n, *x0;
	if (tp == NULL || pasco_tape_error(tp) != PASCO_OK) {
		return NULL;
	}
	if (nx == 0 || xs == NULL) {
		return pasci_tape_fail(tp, PASCO_EINVAL, "concat: no inputs");
	}
	if (!pasci_tape_check(tp, "concat", nx, xs) ||
	    (axis = pasci_tape_axis(tp, "concat", xs[0], axis)) < 0) {
		return NULL;
	}
	x0 = xs[0];
	memcpy(shape, x0->value.shape, sizeof(shape));
	for (size_t k = 1; k < nx; k++) {
		if (!concat_fits(tp, x0, xs[k], axis)) {
			return NULL;
		}
		shape[axis] += xs[k]->value.shape[axis];
	}
	for (int32_t d = 0; d < axis; d++) {
		outer *= shape[d];
	}
	n = pasci_tape_node_raw(
	    tp, &concat_op, x0->value.dtype, x0->value.rank, shape, nx, xs);
	if (n == NULL) {
		return NULL;
	}
	n->i[0] = outer;
	total   = outer ? n->value.count / outer : 0;
	for (size_t k = 0; k < nx; k++) {
		int64_t width = outer ? xs[k]->value.count / outer : 0;
		size_t  es    = pasco_dtype_size(n->value.dtype);
		for (int64_t r = 0; r < outer; r++) {
			memcpy((char *) n->value.data +
			           (size_t) (r * total + off) * es,
			    (char *) xs[k]->value.data +
			        (size_t) (r * width) * es,
			    (size_t) width * es);
		}
		off += width;
	}
	return n;
}

/* ---- reductions ---- */

/* x viewed as [outer, len, inner]; the result [outer, inner] is the sum
 * (times scale: 1, or 1 / len for a mean) over len. */
static void
reduce_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode *x   = n->in[0];
	int64_t      len = n->i[0], inner = n->i[1];
	bool         fresh;
	void        *dx = pasci_tape_grad_out(tp, x, &fresh);
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		const T *g = n->grad;
		T       *d = dx;
		PASCI_SET_OR_ADD(fresh, x->value.count, i, d,
		    (T) (n->f * (double) g[i / (len * inner) * inner +
		                            i % inner]));
	});
}

static const pasci_tape_op reduce_ops[] = {
    {"reduce_sum", reduce_backward},
    {"reduce_mean", reduce_backward},
};

static pasco_tnode *
reduce(pasco_tape *tp, bool mean, pasco_tnode *x, int32_t axis)
{
	const char  *name = reduce_ops[mean].name;
	int64_t      shape[PASCO_MAX_RANK], len, inner = 1;
	int32_t      rank = 0;
	pasco_tnode *n;
	if (!pasci_tape_check(tp, name, 1, &x)) {
		return NULL;
	}
	if (axis == PASCO_T_ALL_AXES) {
		len = x->value.count;
	} else if ((axis = pasci_tape_axis(tp, name, x, axis)) < 0) {
		return NULL;
	} else {
		len = x->value.shape[axis];
		for (int32_t d = 0; d < x->value.rank; d++) {
			if (d != axis) {
				shape[rank++] = x->value.shape[d];
			}
			if (d > axis) {
				inner *= x->value.shape[d];
			}
		}
	}
	if (mean && len == 0) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "reduce_mean: %s: the mean of no elements", PASCI_SPEC(x));
	}
	n = pasci_tape_node(
	    tp, &reduce_ops[mean], x->value.dtype, rank, shape, 1, &x);
	if (n == NULL) {
		return NULL;
	}
	n->i[0] = len;
	n->i[1] = inner;
	n->f    = mean ? 1.0 / (double) len : 1.0;
	PASCI_TYPED(n->value.dtype, T, {
		const T *xs = x->value.data;
		T       *y  = n->value.data;
		for (int64_t i = 0; i < x->value.count; i++) {
			y[i / (len * inner) * inner + i % inner] +=
			    (T) (n->f * (double) xs[i]);
		}
	});
	return n;
}

pasco_tnode *
pasco_t_reduce_sum(pasco_tape *tp, pasco_tnode *x, int32_t axis)
{
	return reduce(tp, false, x, axis);
}

pasco_tnode *
pasco_t_reduce_mean(pasco_tape *tp, pasco_tnode *x, int32_t axis)
{
	return reduce(tp, true, x, axis);
}
