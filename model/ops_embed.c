/*
 * Embedding lookup on the tape: ids [batch, k] resolved against a sparse
 * source (a whole table, or the rows gathered for a step), k rows per
 * example combined by sum or mean. Its backward never touches a dense
 * buffer of a whole table's size: for the rows gathered for a step it adds
 * into their gradient buffer (one row per distinct id); for a whole table
 * it appends one gradient row per id looked up to the source's list of
 * parts, which pasco_tape_gradient sorts and sums by id (model/tape.c).
 * f32 rows go through cblas_saxpy, as the kit's embedding_combine does.
 */
#include <cblas.h>
#include <string.h>

#include "tape_impl.h"

/* Where source s holds table id: a table's row id, or the index of id
 * among a rows source's sorted ids (its row is s->pos of that); -1 with
 * the tape's error set when it does not. */
static int64_t
resolve(pasco_tape *tp, const pasco_tnode *s, int64_t id)
{
	int64_t lo = 0, hi = s->i[0];
	if (s->leaf == PASCI_TABLE) {
		if (id >= s->value.shape[0]) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "embedding_lookup: id %lld is outside the table "
			    "%s",
			    (long long) id, PASCI_SPEC(s));
			return -1;
		}
		return id;
	}
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		if (s->ids[mid] < id) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	if (lo == s->i[0] || s->ids[lo] != id) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "embedding_lookup: id %lld is not among the %lld ids "
		    "gathered (watch_rows)",
		    (long long) id, (long long) s->i[0]);
		return -1;
	}
	return lo;
}

/* The value row of source s that resolve's result r names. */
static int64_t
source_row(const pasco_tnode *s, int64_t r)
{
	return s->leaf == PASCI_ROWS ? s->pos[r] : r;
}

/* y[0..dim) = a x (fresh) or += a x; f32 through BLAS on zeros as the
 * kit's kernels do (the same values, and vectorised). */
static void
axpy(pasco_dtype dt, int64_t dim, double a, const void *x, void *y, bool fresh)
{
	if (dt == PASCO_F32) {
		if (fresh) {
			memset(y, 0, (size_t) dim * sizeof(float));
		}
		cblas_saxpy((blasint) dim, (float) a, x, 1, y, 1);
		return;
	}
	PASCI_TYPED(dt, T, {
		const T *xs = x;
		T       *ys = y;
		T        at = (T) a;
		PASCI_SET_OR_ADD(fresh, dim, d, ys, at * xs[d]);
	});
}

/* The number of ids present (not padding) in example r. */
static int64_t
present_in(const pasco_tnode *n, int64_t r)
{
	int64_t k = n->i[0], cnt = 0;
	for (int64_t j = 0; j < k; j++) {
		cnt += n->pos[r * k + j] >= 0;
	}
	return cnt;
}

/* The backward into a rows source: each id's row of the gradient buffer
 * gets scale * the example's output gradient. */
static void
rows_backward(pasco_tape *tp, pasco_tnode *n, pasco_tnode *s)
{
	pasco_dtype    dt = n->value.dtype;
	int64_t        b = n->value.shape[0], dim = n->value.shape[1];
	int64_t        k  = n->i[0];
	size_t         es = pasco_dtype_size(dt);
	unsigned char *touched;
	char          *g = pasci_tape_rows_grad(tp, s, &touched);
	for (int64_t r = 0; g != NULL && r < b; r++) {
		int64_t cnt   = present_in(n, r);
		double  scale = n->flag[0] ? 1.0 / (double) cnt : 1.0;
		for (int64_t j = 0; j < k; j++) {
			int64_t at = n->pos[r * k + j];
			if (at < 0) {
				continue;
			}
			axpy(dt, dim, scale,
			    (const char *) n->grad + (size_t) (r * dim) * es,
			    g + (size_t) (at * dim) * es, !touched[at]);
			touched[at] = 1;
		}
	}
}

/* n->ids: the table id of each (example, slot), -1 for padding; n->pos:
 * its row in the source, -1 for padding (a dynamic table's keys may be
 * negative); n->i[0]: k; n->flag[0]: mean. */
static void
lookup_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode       *s  = n->in[0];
	pasco_dtype        dt = n->value.dtype;
	int64_t            b = n->value.shape[0], dim = n->value.shape[1];
	int64_t            k = n->i[0], present = 0, w = 0;
	size_t             es = pasco_dtype_size(dt);
	pasci_sparse_part *part;
	if (s->leaf == PASCI_ROWS) {
		rows_backward(tp, n, s);
		return;
	}
	for (int64_t i = 0; i < b * k; i++) {
		present += n->pos[i] >= 0;
	}
	if ((part = pasci_tape_mem(tp, sizeof(*part))) == NULL ||
	    (part->ids = pasci_tape_mem_raw(tp, (size_t) present * 8 + 1)) ==
	        NULL ||
	    (part->rows = pasci_tape_mem_raw(
	         tp, (size_t) (present * dim) * es + 1)) == NULL) {
		return;
	}
	for (int64_t r = 0; r < b; r++) {
		int64_t cnt   = present_in(n, r);
		double  scale = n->flag[0] ? 1.0 / (double) cnt : 1.0;
		for (int64_t j = 0; j < k; j++) {
			if (n->pos[r * k + j] < 0) {
				continue;
			}
			part->ids[w] = n->ids[r * k + j];
			axpy(dt, dim, scale,
			    (const char *) n->grad + (size_t) (r * dim) * es,
			    (char *) part->rows + (size_t) (w * dim) * es,
			    true);
			w++;
		}
	}
	part->count = present;
	part->next  = s->parts;
	s->parts    = part;
}

static const pasci_tape_op lookup_op = {"embedding_lookup", lookup_backward};

/* The lookup's value: each example's rows, scaled (mean) and summed; an
 * example without ids gets zeros. */
static void
combine(pasco_tnode *n, const pasco_tnode *s)
{
	pasco_dtype dt = n->value.dtype;
	int64_t     b = n->value.shape[0], dim = n->value.shape[1];
	int64_t     k  = n->i[0];
	size_t      es = pasco_dtype_size(dt);
	for (int64_t r = 0; r < b; r++) {
		int64_t cnt   = present_in(n, r);
		double  scale = n->flag[0] ? 1.0 / (double) cnt : 1.0;
		char   *out = (char *) n->value.data + (size_t) (r * dim) * es;
		if (cnt == 0) {
			memset(out, 0, (size_t) dim * es);
		}
		for (int64_t j = 0, first = 1; j < k; j++) {
			int64_t row;
			if (n->pos[r * k + j] < 0) {
				continue;
			}
			row = source_row(s, n->pos[r * k + j]);
			axpy(dt, dim, scale,
			    (const char *) s->value.data +
			        (size_t) (row * dim) * es,
			    out, first);
			first = 0;
		}
	}
}

static bool
lookup_args_ok(
    pasco_tape *tp, pasco_tnode *s, const pasco_tensor *ids, pasco_combiner c)
{
	if (pasco_tape_error(tp) != PASCO_OK) {
		return false;
	}
	if (s == NULL || s->tape != tp ||
	    (s->leaf != PASCI_TABLE && s->leaf != PASCI_ROWS)) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "embedding_lookup: the table %s is not a sparse source of "
		    "this tape (watch_table or watch_rows)",
		    s == NULL ? "NULL" : PASCI_SPEC(s));
		return false;
	}
	if (ids == NULL ||
	    (ids->dtype != PASCO_I32 && ids->dtype != PASCO_I64) ||
	    ids->rank < 1 || ids->rank > 2) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "embedding_lookup: ids %s: want i32 or i64 [batch] or "
		    "[batch, k]",
		    ids == NULL ? "NULL" : PASCI_TSPEC(ids));
		return false;
	}
	if (c != PASCO_COMBINE_SUM && c != PASCO_COMBINE_MEAN) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "embedding_lookup: combiner %d is neither sum (%d) nor "
		    "mean (%d)",
		    (int) c, PASCO_COMBINE_SUM, PASCO_COMBINE_MEAN);
		return false;
	}
	return true;
}

pasco_tnode *
pasco_t_embedding_lookup(
    pasco_tape *tp, pasco_tnode *s, const pasco_tensor *ids, pasco_combiner c)
{
	pasco_tnode *n;
	int64_t      b, k, dim, total;
	if (tp == NULL || !lookup_args_ok(tp, s, ids, c)) {
		return NULL;
	}
	b     = ids->shape[0];
	k     = ids->rank == 2 ? ids->shape[1] : 1;
	dim   = s->value.shape[1];
	total = b * k;
	if ((n = pasci_tape_node_raw(tp, &lookup_op, s->value.dtype, 2,
	         (int64_t[]){b, dim}, 1, &s)) == NULL ||
	    (n->ids = pasci_tape_mem_raw(tp, (size_t) total * 8 + 1)) ==
	        NULL ||
	    (n->pos = pasci_tape_mem_raw(tp, (size_t) total * 8 + 1)) ==
	        NULL) {
		return NULL;
	}
	n->i[0]    = k;
	n->flag[0] = c == PASCO_COMBINE_MEAN;
	for (int64_t r = 0; r < b; r++) {
		for (int64_t j = 0; j < k; j++) {
			int64_t id        = pasci_id_at(ids, r * k + j);
			bool    pad       = s->keys64 ? id == -1 : id < 0;
			n->ids[r * k + j] = pad ? -1 : id;
			n->pos[r * k + j] = -1;
			if (!pad &&
			    (n->pos[r * k + j] = resolve(tp, s, id)) < 0) {
				return NULL;
			}
		}
	}
	combine(n, s);
	return n;
}
