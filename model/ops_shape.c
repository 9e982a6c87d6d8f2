/*
 * Shape ops on the tape: transpose, slice and gather (each output element
 * a copy of one input element: the op saves that map, and its backward
 * adds the output's gradient back through it, so gather's repeated
 * indices scatter-add), expand_dims and squeeze (reshapes), the batched
 * matmul of rank 3 (pasco_t_matmul's), numpy's dot and Keras's
 * batch_dot, composed of matmul and reshape.
 */
#include <string.h>

#include "tape_ops_impl.h"

/* n's value[o] = x's value[map[o]]; n->aux = map. dx[map[o]] += dy[o]. */
static void
map_backward(pasco_tape *tp, pasco_tnode *n)
{
	const int64_t *map = n->aux;
	bool           fresh;
	void          *dx = pasci_tape_grad_out(tp, n->in[0], &fresh);
	if (dx == NULL) {
		return;
	}
	if (fresh) {
		memset(dx, 0, n->in[0]->value.nbytes);
	}
	PASCI_TYPED(n->value.dtype, T, {
		const T *g = n->grad;
		T       *d = dx;
		for (int64_t o = 0; o < n->value.count; o++) {
			d[map[o]] += g[o];
		}
	});
}

static const pasci_tape_op map_ops[] = {
    {"transpose", map_backward},
    {"slice", map_backward},
    {"gather", map_backward},
};

enum { M_TRANSPOSE, M_SLICE, M_GATHER };

/* The node of op kind with shape, its map (count entries) to fill. */
static pasco_tnode *
map_node(pasco_tape *tp, int kind, pasco_tnode *x, int32_t rank,
    const int64_t *shape, int64_t **map)
{
	pasco_tnode *n = pasci_tape_node_raw(
	    tp, &map_ops[kind], x->value.dtype, rank, shape, 1, &x);
	if (n == NULL ||
	    (*map = pasci_tape_mem_raw(
	         tp, (size_t) n->value.count * sizeof(int64_t) + 8)) == NULL) {
		return NULL;
	}
	n->aux = *map;
	return n;
}

/* Copies the mapped elements into n's value. */
static pasco_tnode *
map_fill(pasco_tnode *n, const pasco_tnode *x, const int64_t *map)
{
	PASCI_TYPED(n->value.dtype, T, {
		const T *xs = x->value.data;
		T       *y  = n->value.data;
		for (int64_t o = 0; o < n->value.count; o++) {
			y[o] = xs[map[o]];
		}
	});
	return n;
}

/* map[o] = base + sum_d idx_d(o) st[d] over out's shape (rank, shape). */
static void
map_strided(int64_t *map, int32_t rank, const int64_t *shape,
    const int64_t *st, int64_t base, int64_t count)
{
	int64_t idx[PASCO_MAX_RANK] = {0}, off = base;
	for (int64_t o = 0; o < count; o++) {
		map[o] = off;
		for (int32_t d = rank - 1; d >= 0; d--) {
			off += st[d];
			if (++idx[d] < shape[d]) {
				break;
			}
			off -= st[d] * shape[d];
			idx[d] = 0;
		}
	}
}

/* x's row-major strides. */
static void
strides_of(const pasco_tensor *t, int64_t *st)
{
	int64_t s = 1;
	for (int32_t d = t->rank - 1; d >= 0; d--) {
		st[d] = s;
		s *= t->shape[d];
	}
}

pasco_tnode *
pasco_t_transpose(pasco_tape *tp, pasco_tnode *x, const int32_t *perm)
{
	int64_t      xst[PASCO_MAX_RANK], st[PASCO_MAX_RANK];
	int64_t      shape[PASCO_MAX_RANK], *map;
	bool         seen[PASCO_MAX_RANK] = {false};
	int32_t      rank;
	pasco_tnode *n;
	if (!pasci_tape_check(tp, "transpose", 1, &x)) {
		return NULL;
	}
	rank = x->value.rank;
	strides_of(&x->value, xst);
	for (int32_t d = 0; d < rank; d++) {
		int32_t p = perm == NULL ? rank - 1 - d : perm[d];
		if (p < 0 || p >= rank || seen[p]) {
			return pasci_tape_fail(tp, PASCO_EINVAL,
			    "transpose: %s: perm[%d] = %d: want a permutation "
			    "of [0, %d)",
			    PASCI_SPEC(x), (int) d, (int) p, (int) rank);
		}
		seen[p]  = true;
		shape[d] = x->value.shape[p];
		st[d]    = xst[p];
	}
	if ((n = map_node(tp, M_TRANSPOSE, x, rank, shape, &map)) == NULL) {
		return NULL;
	}
	map_strided(map, rank, shape, st, 0, n->value.count);
	return map_fill(n, x, map);
}

pasco_tnode *
pasco_t_slice(
    pasco_tape *tp, pasco_tnode *x, const int64_t *begin, const int64_t *size)
{
	int64_t      st[PASCO_MAX_RANK], shape[PASCO_MAX_RANK], *map;
	int64_t      base = 0;
	pasco_tnode *n;
	if (!pasci_tape_check(tp, "slice", 1, &x)) {
		return NULL;
	}
	if (x->value.rank > 0 && (begin == NULL || size == NULL)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "slice: %s: begin or size is NULL", PASCI_SPEC(x));
	}
	strides_of(&x->value, st);
	for (int32_t d = 0; d < x->value.rank; d++) {
		int64_t dim = x->value.shape[d], b = begin[d];
		int64_t sz = size[d] == -1 ? dim - b : size[d];
		if (b < 0 || b > dim || sz < 0 || b + sz > dim) {
			return pasci_tape_fail(tp, PASCO_EINVAL,
			    "slice: %s: dimension %d: begin %lld size %lld "
			    "is outside [0, %lld]",
			    PASCI_SPEC(x), (int) d, (long long) b,
			    (long long) size[d], (long long) dim);
		}
		shape[d] = sz;
		base += b * st[d];
	}
	n = map_node(tp, M_SLICE, x, x->value.rank, shape, &map);
	if (n == NULL) {
		return NULL;
	}
	map_strided(map, x->value.rank, shape, st, base, n->value.count);
	return map_fill(n, x, map);
}

pasco_tnode *
pasco_t_gather(pasco_tape *tp, pasco_tnode *params,
    const pasco_tensor *indices, int32_t axis)
{
	int64_t      shape[PASCO_MAX_RANK], *map, outer = 1, inner = 1, len;
	int32_t      rank = 0;
	pasco_tnode *n;
	if (!pasci_tape_check(tp, "gather", 1, &params) ||
	    (axis = pasci_tape_axis(tp, "gather", params, axis)) < 0) {
		return NULL;
	}
	if (indices == NULL ||
	    (indices->dtype != PASCO_I32 && indices->dtype != PASCO_I64) ||
	    params->value.rank - 1 + indices->rank > PASCO_MAX_RANK) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "gather: %s by indices %s: want i32 or i64 indices, the "
		    "result's rank at most %d",
		    PASCI_SPEC(params),
		    indices == NULL ? "NULL" : PASCI_TSPEC(indices),
		    PASCO_MAX_RANK);
	}
	len = params->value.shape[axis];
	for (int32_t d = 0; d < params->value.rank; d++) {
		if (d == axis) {
			for (int32_t e = 0; e < indices->rank; e++) {
				shape[rank++] = indices->shape[e];
			}
			continue;
		}
		shape[rank++] = params->value.shape[d];
		*(d < axis ? &outer : &inner) *= params->value.shape[d];
	}
	for (int64_t i = 0; i < indices->count; i++) {
		int64_t id = pasci_id_at(indices, i);
		if (id < 0 || id >= len) {
			return pasci_tape_fail(tp, PASCO_EINVAL,
			    "gather: index %lld (element %lld of %s) is "
			    "outside "
			    "[0, %lld) of %s along axis %d",
			    (long long) id, (long long) i,
			    PASCI_TSPEC(indices), (long long) len,
			    PASCI_SPEC(params), (int) axis);
		}
	}
	if ((n = map_node(tp, M_GATHER, params, rank, shape, &map)) == NULL) {
		return NULL;
	}
	for (int64_t o = 0, a = 0; a < outer; a++) {
		for (int64_t i = 0; i < indices->count; i++) {
			int64_t src =
			    (a * len + pasci_id_at(indices, i)) * inner;
			for (int64_t c = 0; c < inner; c++) {
				map[o++] = src + c;
			}
		}
	}
	return map_fill(n, params, map);
}

pasco_tnode *
pasco_t_expand_dims(pasco_tape *tp, pasco_tnode *x, int32_t axis)
{
	int64_t shape[PASCO_MAX_RANK];
	int32_t rank;
	if (!pasci_tape_check(tp, "expand_dims", 1, &x)) {
		return NULL;
	}
	rank = x->value.rank;
	if (axis < 0) {
		axis += rank + 1;
	}
	if (axis < 0 || axis > rank || rank >= PASCO_MAX_RANK) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "expand_dims: %s: axis %d is outside [%d, %d] (or the "
		    "rank would pass %d)",
		    PASCI_SPEC(x), (int) axis, (int) -rank - 1, (int) rank,
		    PASCO_MAX_RANK);
	}
	for (int32_t d = 0, e = 0; d <= rank; d++) {
		shape[d] = d == axis ? 1 : x->value.shape[e++];
	}
	return pasco_t_reshape(tp, x, rank + 1, shape);
}

pasco_tnode *
pasco_t_squeeze(pasco_tape *tp, pasco_tnode *x, int32_t axis)
{
	int64_t shape[PASCO_MAX_RANK];
	int32_t a;
	if (!pasci_tape_check(tp, "squeeze", 1, &x) ||
	    (a = pasci_tape_axis(tp, "squeeze", x, axis)) < 0) {
		return NULL;
	}
	if (x->value.shape[a] != 1) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "squeeze: %s: dimension %d is %lld, not 1", PASCI_SPEC(x),
		    (int) axis, (long long) x->value.shape[a]);
	}
	for (int32_t d = 0, e = 0; d < x->value.rank; d++) {
		if (d != a) {
			shape[e++] = x->value.shape[d];
		}
	}
	return pasco_t_reshape(tp, x, x->value.rank - 1, shape);
}

/* ---- batched matmul, dot, batch_dot ---- */

/* One batch's matmul_backward (model/ops_dense.c), on slices. */
static void
bmm_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode *a = n->in[0], *b = n->in[1];
	bool         ta = n->flag[0], tb = n->flag[1], fa, fb;
	int64_t      nb = n->value.shape[0], m = n->value.shape[1];
	int64_t      cols = n->value.shape[2];
	int64_t      k    = ta ? a->value.shape[1] : a->value.shape[2];
	int64_t      lda = a->value.shape[2], ldb = b->value.shape[2];
	int64_t      sa = a->value.shape[1] * a->value.shape[2];
	int64_t      sb = b->value.shape[1] * b->value.shape[2];
	pasco_dtype  dt = n->value.dtype;
	size_t       es = pasco_dtype_size(dt);
	char        *da = pasci_tape_grad_out(tp, a, &fa);
	char        *db = pasci_tape_grad_out(tp, b, &fb);
	for (int64_t i = 0; i < nb; i++) {
		const char *g =
		    (const char *) n->grad + (size_t) (i * m * cols) * es;
		const char *av =
		    (const char *) a->value.data + (size_t) (i * sa) * es;
		const char *bv =
		    (const char *) b->value.data + (size_t) (i * sb) * es;
		char *dai = da == NULL ? NULL : da + (size_t) (i * sa) * es;
		char *dbi = db == NULL ? NULL : db + (size_t) (i * sb) * es;
		if (da != NULL && !ta) {
			pasci_gemm(dt, false, !tb, m, k, cols, g, cols, bv,
			    ldb, !fa, dai, k, (size_t) sa * es);
		} else if (da != NULL) {
			pasci_gemm(dt, tb, true, k, m, cols, bv, ldb, g, cols,
			    !fa, dai, m, (size_t) sa * es);
		}
		if (db != NULL && !tb) {
			pasci_gemm(dt, !ta, false, k, cols, m, av, lda, g,
			    cols, !fb, dbi, cols, (size_t) sb * es);
		} else if (db != NULL) {
			pasci_gemm(dt, true, ta, cols, k, m, g, cols, av, lda,
			    !fb, dbi, k, (size_t) sb * es);
		}
	}
}

static const pasci_tape_op bmm_op = {"matmul", bmm_backward};

pasco_tnode *
pasci_t_batch_matmul(
    pasco_tape *tp, pasco_tnode *a, pasco_tnode *b, bool ta, bool tb)
{
	const int64_t *as, *bs;
	int64_t        nb, m, k, k2, cols;
	size_t         es;
	pasco_tnode   *n;
	if (!pasci_tape_check(tp, "matmul", 2, (pasco_tnode *[]){a, b}) ||
	    !pasci_tape_same_dtype(tp, "matmul", a, b)) {
		return NULL;
	}
	as   = a->value.shape;
	bs   = b->value.shape;
	nb   = as[0];
	m    = ta ? as[2] : as[1];
	k    = ta ? as[1] : as[2];
	k2   = tb ? bs[2] : bs[1];
	cols = tb ? bs[1] : bs[2];
	es   = pasco_dtype_size(a->value.dtype);
	if (a->value.rank != 3 || b->value.rank != 3 || bs[0] != nb ||
	    k != k2) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "matmul: %s%s x %s%s: batch dimensions %lld and %lld, "
		    "inner dimensions %lld and %lld: both must agree",
		    PASCI_SPEC(a), ta ? "^T" : "", PASCI_SPEC(b),
		    tb ? "^T" : "", (long long) nb, (long long) bs[0],
		    (long long) k, (long long) k2);
	}
	n = pasci_tape_node_raw(tp, &bmm_op, a->value.dtype, 3,
	    (int64_t[]){nb, m, cols}, 2, (pasco_tnode *[]){a, b});
	if (n == NULL) {
		return NULL;
	}
	n->flag[0] = ta;
	n->flag[1] = tb;
	for (int64_t i = 0; i < nb; i++) {
		pasci_gemm(a->value.dtype, ta, tb, m, cols, k,
		    (const char *) a->value.data +
		        (size_t) (i * as[1] * as[2]) * es,
		    as[2],
		    (const char *) b->value.data +
		        (size_t) (i * bs[1] * bs[2]) * es,
		    bs[2], 0,
		    (char *) n->value.data + (size_t) (i * m * cols) * es,
		    cols, (size_t) (m * cols) * es);
	}
	return n;
}

pasco_tnode *
pasco_t_dot(pasco_tape *tp, pasco_tnode *a, pasco_tnode *b)
{
	int32_t ra, rb;
	int64_t out[2];
	int32_t rank = 0;
	if (!pasci_tape_check(tp, "dot", 2, (pasco_tnode *[]){a, b})) {
		return NULL;
	}
	ra = a->value.rank;
	rb = b->value.rank;
	if (ra < 1 || ra > 2 || rb < 1 || rb > 2) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "dot: %s . %s: ranks 1 and 2 only", PASCI_SPEC(a),
		    PASCI_SPEC(b));
	}
	if (ra == 2 && rb == 2) {
		return pasco_t_matmul(tp, a, b, false, false);
	}
	if (ra == 2) {
		out[rank++] = a->value.shape[0];
	}
	if (rb == 2) {
		out[rank++] = b->value.shape[1];
	}
	if (ra == 1) {
		a = pasco_t_reshape(
		    tp, a, 2, (int64_t[]){1, a->value.shape[0]});
	}
	if (rb == 1) {
		b = pasco_t_reshape(
		    tp, b, 2, (int64_t[]){b->value.shape[0], 1});
	}
	return pasco_t_reshape(
	    tp, pasco_t_matmul(tp, a, b, false, false), rank, out);
}

pasco_tnode *
pasco_t_batch_dot(pasco_tape *tp, pasco_tnode *x, pasco_tnode *y,
    int32_t axis_x, int32_t axis_y)
{
	int64_t out[PASCO_MAX_RANK];
	int32_t rx, ry, ax, ay, rank = 1;
	if (!pasci_tape_check(tp, "batch_dot", 2, (pasco_tnode *[]){x, y})) {
		return NULL;
	}
	rx = x->value.rank;
	ry = y->value.rank;
	ax = axis_x < 0 ? axis_x + rx : axis_x;
	ay = axis_y < 0 ? axis_y + ry : axis_y;
	if (rx < 2 || rx > 3 || ry < 2 || ry > 3 || ax < 1 || ax >= rx ||
	    ay < 1 || ay >= ry || x->value.shape[0] != y->value.shape[0] ||
	    x->value.shape[ax] != y->value.shape[ay]) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "batch_dot: %s . %s axes [%d, %d]: want ranks 2 or 3, "
		    "one batch, and equal sizes on axes past the batch",
		    PASCI_SPEC(x), PASCI_SPEC(y), (int) axis_x, (int) axis_y);
	}
	out[0] = x->value.shape[0];
	for (int32_t d = 1; d < rx; d++) {
		out[rank] = x->value.shape[d];
		rank += d != ax;
	}
	for (int32_t d = 1; d < ry; d++) {
		out[rank] = y->value.shape[d];
		rank += d != ay;
	}
	if (rank == 1) { /* Keras: [b] becomes [b, 1] */
		out[rank++] = 1;
	}
	if (rx == 2) {
		x  = pasco_t_reshape(tp, x, 3,
		     (int64_t[]){x->value.shape[0], 1, x->value.shape[1]});
		ax = 2;
	}
	if (ry == 2) {
		y  = pasco_t_reshape(tp, y, 3,
		     (int64_t[]){y->value.shape[0], y->value.shape[1], 1});
		ay = 1;
	}
	return pasco_t_reshape(
	    tp, pasci_t_batch_matmul(tp, x, y, ax == 1, ay == 2), rank, out);
}
