/*
 * Elementwise ops of two or three inputs with numpy broadcasting: shapes
 * aligned from the right, a dimension of 1 (or a missing one) repeating.
 * divide, maximum, minimum, the comparisons (0/1 of the inputs' dtype, no
 * gradient), where, and add / sub / mul when neither shape is the other's
 * trailing dimensions (model/ops_dense.c keeps that fast path). A plan
 * gives each input's stride per output dimension (0 where it repeats);
 * the loops walk the output row by row (its last dimension), so the inner
 * loop is a strided one the compiler can vectorise. The backward sums a
 * repeated input's gradient over its repeats.
 */
#include <math.h>
#include <string.h>

#include "tape_ops_impl.h"

/* where's saved state: the plan and the condition as a byte mask. */
typedef struct bc_where {
	pasci_bc_plan  p;
	unsigned char *mask;
} bc_where;

static const char *const bc_names[PASCI_BC_KINDS] = {
    [PASCI_BC_ADD] = "add",
    [PASCI_BC_SUB] = "sub",
    [PASCI_BC_MUL] = "mul",
    [PASCI_BC_DIV] = "divide",
    [PASCI_BC_MAX] = "maximum",
    [PASCI_BC_MIN] = "minimum",
    [PASCI_BC_GT]  = "greater",
    [PASCI_BC_GE]  = "greater_equal",
    [PASCI_BC_LT]  = "less",
    [PASCI_BC_LE]  = "less_equal",
    [PASCI_BC_EQ]  = "equal",
    [PASCI_BC_NE]  = "not_equal",
};

/* The size of ts's dimension d of an output of rank rank (1 if missing). */
static int64_t
bc_size(const pasco_tensor *t, int32_t rank, int32_t d)
{
	int32_t e = d - (rank - t->rank);
	return e < 0 ? 1 : t->shape[e];
}

bool
pasci_bc_plan_of(pasci_bc_plan *p, size_t n, const pasco_tensor *const *ts)
{
	memset(p, 0, sizeof(*p));
	p->rank = 1;
	for (size_t k = 0; k < n; k++) {
		p->rank = ts[k]->rank > p->rank ? ts[k]->rank : p->rank;
	}
	for (int32_t d = 0; d < p->rank; d++) {
		p->dim[d] = 1;
		for (size_t k = 0; k < n; k++) {
			int64_t sz = bc_size(ts[k], p->rank, d);
			if (sz != 1 && p->dim[d] != 1 && p->dim[d] != sz) {
				return false;
			}
			p->dim[d] = sz != 1 ? sz : p->dim[d];
		}
	}
	for (size_t k = 0; k < n; k++) {
		int64_t s = 1;
		for (int32_t d = p->rank - 1; d >= 0; d--) {
			int64_t sz  = bc_size(ts[k], p->rank, d);
			p->st[k][d] = sz == 1 ? 0 : s;
			s *= sz;
		}
	}
	p->len  = p->dim[p->rank - 1];
	p->rows = 1;
	for (int32_t d = 0; d + 1 < p->rank; d++) {
		p->rows *= p->dim[d];
	}
	return true;
}

void
pasci_bc_next(const pasci_bc_plan *p, size_t n, int64_t *idx, int64_t *off)
{
	for (int32_t d = p->rank - 2; d >= 0; d--) {
		for (size_t k = 0; k < n; k++) {
			off[k] += p->st[k][d];
		}
		if (++idx[d] < p->dim[d]) {
			return;
		}
		idx[d] = 0;
		for (size_t k = 0; k < n; k++) {
			off[k] -= p->st[k][d] * p->dim[d];
		}
	}
}

/* Allocates the output node (rank: the largest input rank) with plan p. */
static pasco_tnode *
bc_node(pasco_tape *tp, const pasci_tape_op *op, pasco_dtype dt,
    const pasci_bc_plan *p, int32_t rank, size_t nin, pasco_tnode *const *in)
{
	const int64_t *shape = p->dim + (p->rank - rank);
	return pasci_tape_node_raw(tp, op, dt, rank, shape, nin, in);
}

static void
bc_forward(const pasci_bc_plan *p, int kind, pasco_dtype dt, const void *x,
    const void *y, void *z)
{
	int64_t idx[PASCO_MAX_RANK] = {0}, off[2] = {0};
	int64_t sx = p->st[0][p->rank - 1], sy = p->st[1][p->rank - 1];
	int64_t len = p->len;
	PASCI_TYPED(dt, T, {
		for (int64_t r = 0; r < p->rows; r++) {
			const T *u = (const T *) x + off[0];
			const T *v = (const T *) y + off[1];
			T       *w = (T *) z + r * len;
			for (int64_t j = 0; j < len; j++) {
				T a = u[j * sx], b = v[j * sy];
				switch (kind) {
				case PASCI_BC_ADD:
					w[j] = a + b;
					break;
				case PASCI_BC_SUB:
					w[j] = a - b;
					break;
				case PASCI_BC_MUL:
					w[j] = a * b;
					break;
				case PASCI_BC_DIV:
					w[j] = a / b;
					break;
				case PASCI_BC_MAX:
					w[j] = a >= b ? a : b;
					break;
				case PASCI_BC_MIN:
					w[j] = a <= b ? a : b;
					break;
				case PASCI_BC_GT:
					w[j] = (T) (a > b);
					break;
				case PASCI_BC_GE:
					w[j] = (T) (a >= b);
					break;
				case PASCI_BC_LT:
					w[j] = (T) (a < b);
					break;
				case PASCI_BC_LE:
					w[j] = (T) (a <= b);
					break;
				case PASCI_BC_EQ:
					w[j] = (T) (a == b);
					break;
				default:
					w[j] = (T) (a != b);
					break;
				}
			}
			pasci_bc_next(p, 2, idx, off);
		}
	});
}

/* The factor d out / d side of one element: side 0 is a, 1 is b. Ties
 * of maximum and minimum go to a. */
static double
bc_factor(int kind, int side, double a, double b)
{
	switch (kind) {
	case PASCI_BC_ADD:
		return 1;
	case PASCI_BC_SUB:
		return side == 0 ? 1 : -1;
	case PASCI_BC_MUL:
		return side == 0 ? b : a;
	case PASCI_BC_DIV:
		return side == 0 ? 1 / b : -a / (b * b);
	case PASCI_BC_MAX:
		return side == 0 ? a >= b : b > a;
	default:
		return side == 0 ? a <= b : b < a; /* minimum */
	}
}

/* d (side's gradient, fresh or not) += g * the factor, summed over the
 * side's repeats. */
static void
bc_side(const pasci_bc_plan *p, int kind, int side, pasco_dtype dt,
    const pasco_tnode *n, void *d, bool fresh)
{
	const pasco_tnode *a = n->in[0], *b = n->in[1];
	int64_t            idx[PASCO_MAX_RANK] = {0}, off[2] = {0};
	int64_t sa = p->st[0][p->rank - 1], sb = p->st[1][p->rank - 1];
	int64_t len = p->len;
	if (fresh) {
		memset(d, 0, n->in[side]->value.nbytes);
	}
	PASCI_TYPED(dt, T, {
		const T *g  = n->grad;
		T       *ds = d;
		for (int64_t r = 0; r < p->rows; r++) {
			const T *u  = (const T *) a->value.data + off[0];
			const T *v  = (const T *) b->value.data + off[1];
			T       *dd = ds + off[side];
			int64_t  s  = side == 0 ? sa : sb;
			for (int64_t j = 0; j < len; j++) {
				dd[j * s] += (T) ((double) g[r * len + j] *
				                  bc_factor(kind, side,
				                      (double) u[j * sa],
				                      (double) v[j * sb]));
			}
			pasci_bc_next(p, 2, idx, off);
		}
	});
}

static void
bc_backward(pasco_tape *tp, pasco_tnode *n)
{
	const pasci_bc_plan *p = n->aux;
	for (int side = 0; side < 2; side++) {
		bool  fresh;
		void *d = pasci_tape_grad_out(tp, n->in[side], &fresh);
		if (d != NULL) {
			bc_side(p, (int) n->i[0], side, n->value.dtype, n, d,
			    fresh);
		}
	}
}

static const pasci_tape_op bc_ops[PASCI_BC_KINDS] = {
    [PASCI_BC_ADD] = {"add", bc_backward},
    [PASCI_BC_SUB] = {"sub", bc_backward},
    [PASCI_BC_MUL] = {"mul", bc_backward},
    [PASCI_BC_DIV] = {"divide", bc_backward},
    [PASCI_BC_MAX] = {"maximum", bc_backward},
    [PASCI_BC_MIN] = {"minimum", bc_backward},
    [PASCI_BC_GT]  = {"greater", NULL},
    [PASCI_BC_GE]  = {"greater_equal", NULL},
    [PASCI_BC_LT]  = {"less", NULL},
    [PASCI_BC_LE]  = {"less_equal", NULL},
    [PASCI_BC_EQ]  = {"equal", NULL},
    [PASCI_BC_NE]  = {"not_equal", NULL},
};

pasco_tnode *
pasci_t_broadcast(
    pasco_tape *tp, pasci_bc_kind kind, pasco_tnode *a, pasco_tnode *b)
{
	const char    *name = bc_names[kind];
	bool           cmp  = kind >= PASCI_BC_GT;
	pasci_bc_plan *p;
	pasco_tnode   *n;
	if (!pasci_tape_check(tp, name, 2, (pasco_tnode *[]){a, b}) ||
	    !pasci_tape_same_dtype(tp, name, a, b) ||
	    (p = pasci_tape_mem(tp, sizeof(*p))) == NULL) {
		return NULL;
	}
	if (!pasci_bc_plan_of(
	        p, 2, (const pasco_tensor *[]){&a->value, &b->value})) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: %s and %s: shapes do not broadcast", name,
		    PASCI_SPEC(a), PASCI_SPEC(b));
	}
	/* a comparison has no inputs on the tape: nothing flows back */
	n = bc_node(tp, &bc_ops[kind], a->value.dtype, p,
	    a->value.rank > b->value.rank ? a->value.rank : b->value.rank,
	    cmp ? 0 : 2, (pasco_tnode *[]){a, b});
	if (n == NULL) {
		return NULL;
	}
	n->i[0] = kind;
	n->aux  = p;
	bc_forward(p, kind, a->value.dtype, a->value.data, b->value.data,
	    n->value.data);
	return n;
}

pasco_tnode *
pasco_t_div(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return pasci_t_broadcast(tp, PASCI_BC_DIV, a, b);
}

pasco_tnode *
pasco_t_maximum(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return pasci_t_broadcast(tp, PASCI_BC_MAX, a, b);
}

pasco_tnode *
pasco_t_minimum(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return pasci_t_broadcast(tp, PASCI_BC_MIN, a, b);
}

pasco_tnode *
pasco_t_greater(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return pasci_t_broadcast(tp, PASCI_BC_GT, a, b);
}

pasco_tnode *
pasco_t_greater_equal(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return pasci_t_broadcast(tp, PASCI_BC_GE, a, b);
}

pasco_tnode *
pasco_t_less(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return pasci_t_broadcast(tp, PASCI_BC_LT, a, b);
}

pasco_tnode *
pasco_t_less_equal(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return pasci_t_broadcast(tp, PASCI_BC_LE, a, b);
}

pasco_tnode *
pasco_t_equal(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return pasci_t_broadcast(tp, PASCI_BC_EQ, a, b);
}

pasco_tnode *
pasco_t_not_equal(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	return pasci_t_broadcast(tp, PASCI_BC_NE, a, b);
}

/* ---- where ---- */

/* in[0] (x) gets g where the mask is set, in[1] (y) where it is not. */
static void
where_backward(pasco_tape *tp, pasco_tnode *n)
{
	const bc_where      *w    = n->aux;
	const pasci_bc_plan *p    = &w->p;
	int64_t              last = p->rank - 1, len = p->len;
	for (int side = 0; side < 2; side++) {
		int64_t idx[PASCO_MAX_RANK] = {0}, off[3] = {0};
		int64_t sm = p->st[0][last], s = p->st[1 + side][last];
		bool    fresh;
		void   *d = pasci_tape_grad_out(tp, n->in[side], &fresh);
		if (d == NULL) {
			continue;
		}
		if (fresh) {
			memset(d, 0, n->in[side]->value.nbytes);
		}
		PASCI_TYPED(n->value.dtype, T, {
			const T *g = n->grad;
			for (int64_t r = 0; r < p->rows; r++) {
				const unsigned char *m = w->mask + off[0];
				T *dd = (T *) d + off[1 + side];
				for (int64_t j = 0; j < len; j++) {
					if ((m[j * sm] != 0) == (side == 0)) {
						dd[j * s] += g[r * len + j];
					}
				}
				pasci_bc_next(p, 3, idx, off);
			}
		});
	}
}

static const pasci_tape_op where_op = {"where", where_backward};

static bool
is_nonzero(const pasco_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case PASCO_I32:
		return ((const int32_t *) t->data)[i] != 0;
	case PASCO_I64:
		return ((const int64_t *) t->data)[i] != 0;
	case PASCO_U8:
		return ((const uint8_t *) t->data)[i] != 0;
	case PASCO_F32:
		return ((const float *) t->data)[i] != 0;
	default:
		return ((const double *) t->data)[i] != 0;
	}
}

pasco_tnode *
pasco_t_where(
    pasco_tape *tp, const pasco_tensor *cond, pasco_tnode *x, pasco_tnode *y)
{
	bc_where    *w;
	pasco_tnode *n;
	int32_t      rank;
	if (!pasci_tape_check(tp, "where", 2, (pasco_tnode *[]){x, y}) ||
	    !pasci_tape_same_dtype(tp, "where", x, y)) {
		return NULL;
	}
	if (cond == NULL) {
		return pasci_tape_fail(
		    tp, PASCO_EINVAL, "where: the condition is NULL");
	}
	if ((w = pasci_tape_mem(tp, sizeof(*w))) == NULL ||
	    (w->mask = pasci_tape_mem_raw(tp, (size_t) cond->count + 1)) ==
	        NULL) {
		return NULL;
	}
	if (!pasci_bc_plan_of(&w->p, 3,
	        (const pasco_tensor *[]){cond, &x->value, &y->value})) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "where: condition %s, %s and %s: shapes do not broadcast",
		    PASCI_TSPEC(cond), PASCI_SPEC(x), PASCI_SPEC(y));
	}
	for (int64_t i = 0; i < cond->count; i++) {
		w->mask[i] = is_nonzero(cond, i);
	}
	rank = cond->rank > x->value.rank ? cond->rank : x->value.rank;
	rank = y->value.rank > rank ? y->value.rank : rank;
	n    = bc_node(tp, &where_op, x->value.dtype, &w->p, rank, 2,
	       (pasco_tnode *[]){x, y});
	if (n == NULL) {
		return NULL;
	}
	n->aux = w;
	{
		const pasci_bc_plan *p                   = &w->p;
		int64_t              idx[PASCO_MAX_RANK] = {0}, off[3] = {0};
		int64_t              last = p->rank - 1, len = p->len;
		int64_t              sm = p->st[0][last], sx = p->st[1][last];
		int64_t              sy = p->st[2][last];
		PASCI_TYPED(n->value.dtype, T, {
			T *z = n->value.data;
			for (int64_t r = 0; r < p->rows; r++) {
				const unsigned char *m = w->mask + off[0];
				const T             *u =
				    (const T *) x->value.data + off[1];
				const T *v =
				    (const T *) y->value.data + off[2];
				for (int64_t j = 0; j < len; j++) {
					z[r * len + j] =
					    m[j * sm] ? u[j * sx] : v[j * sy];
				}
				pasci_bc_next(p, 3, idx, off);
			}
		});
	}
	return n;
}

/* ---- constants of the composed ops ---- */

static const pasci_tape_op fill_op = {"fill", NULL};

pasco_tnode *
pasci_t_fill(pasco_tape *tp, pasco_dtype dtype, int32_t rank,
    const int64_t *shape, double v)
{
	pasco_tnode *n =
	    pasci_tape_node_raw(tp, &fill_op, dtype, rank, shape, 0, NULL);
	if (n == NULL) {
		return NULL;
	}
	for (int64_t i = 0; i < n->value.count; i++) {
		pasci_st(dtype, n->value.data, i, v);
	}
	return n;
}

pasco_tensor *
pasci_tape_ints(
    pasco_tape *tp, pasco_dtype dtype, int32_t rank, const int64_t *shape)
{
	pasco_tensor *t;
	int64_t       count = 1;
	if (tp == NULL || pasco_tape_error(tp) != PASCO_OK) {
		return NULL;
	}
	if ((dtype != PASCO_I32 && dtype != PASCO_I64) || rank < 0 ||
	    rank > PASCO_MAX_RANK) {
		return (pasco_tensor *) pasci_tape_fail(tp, PASCO_EINVAL,
		    "ints: dtype %d rank %d: want i32 or i64 of rank [0, %d]",
		    (int) dtype, (int) rank, PASCO_MAX_RANK);
	}
	if ((t = pasci_tape_mem(tp, sizeof(*t))) == NULL) {
		return NULL;
	}
	for (int32_t d = 0; d < rank; d++) {
		t->shape[d] = shape[d];
		count *= shape[d];
	}
	t->dtype  = dtype;
	t->rank   = rank;
	t->count  = count;
	t->nbytes = (size_t) count * pasco_dtype_size(dtype);
	/* the arena owns it: a hold and a release (a leaf's, say) never
	 * reach zero and free it */
	t->refs = INT32_MAX / 2;
	if ((t->data = pasci_tape_mem(tp, t->nbytes + 1)) == NULL) {
		return NULL;
	}
	return t;
}
