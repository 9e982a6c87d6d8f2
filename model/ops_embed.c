/*
 * Embedding lookup on the tape: ids [batch, k] resolved against a sparse
 * source (a whole table, or the rows gathered for a step), k rows per
 * example combined by sum or mean. Its backward does not touch a dense
 * buffer of the table's size: it appends one gradient row per id looked
 * up to the source's list of parts, which pasco_tape_gradient sorts and
 * sums by id into a sparse gradient (model/tape.c).
 */
#include "tape_impl.h"

/* The row of source s holding table id, or -1 (with the tape's error). */
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
	return s->pos[lo];
}

/* n->ids: the table id of each (example, slot), -1 for padding; n->pos:
 * its row in the source; n->i[0]: k; n->flag[0]: mean. */
static void
lookup_backward(pasco_tape *tp, pasco_tnode *n)
{
	pasco_tnode       *s  = n->in[0];
	pasco_dtype        dt = n->value.dtype;
	int64_t            b = n->value.shape[0], dim = n->value.shape[1];
	int64_t            k = n->i[0], present = 0, w = 0;
	pasci_sparse_part *part;
	for (int64_t i = 0; i < b * k; i++) {
		present += n->ids[i] >= 0;
	}
	if ((part = pasci_tape_mem(tp, sizeof(*part))) == NULL ||
	    (part->ids = pasci_tape_mem(tp, (size_t) present * 8 + 1)) ==
	        NULL ||
	    (part->rows = pasci_tape_mem(
	         tp, (size_t) (present * dim) * pasco_dtype_size(dt) + 1)) ==
	        NULL) {
		return;
	}
	for (int64_t r = 0; r < b; r++) {
		int64_t cnt = 0;
		for (int64_t j = 0; j < k; j++) {
			cnt += n->ids[r * k + j] >= 0;
		}
		for (int64_t j = 0; j < k; j++) {
			double scale = n->flag[0] ? 1.0 / (double) cnt : 1.0;
			if (n->ids[r * k + j] < 0) {
				continue;
			}
			part->ids[w] = n->ids[r * k + j];
			for (int64_t d = 0; d < dim; d++) {
				pasci_st(dt, part->rows, w * dim + d,
				    scale *
				        pasci_ld(dt, n->grad, r * dim + d));
			}
			w++;
		}
	}
	part->count = present;
	part->next  = s->parts;
	s->parts    = part;
}

static const pasci_tape_op lookup_op = {"embedding_lookup", lookup_backward};

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
	if ((n = pasci_tape_node(tp, &lookup_op, s->value.dtype, 2,
	         (int64_t[]){b, dim}, 1, &s)) == NULL ||
	    (n->ids = pasci_tape_mem(tp, (size_t) total * 8 + 1)) == NULL ||
	    (n->pos = pasci_tape_mem(tp, (size_t) total * 8 + 1)) == NULL) {
		return NULL;
	}
	n->i[0]    = k;
	n->flag[0] = c == PASCO_COMBINE_MEAN;
	for (int64_t r = 0; r < b; r++) {
		int64_t cnt = 0;
		for (int64_t j = 0; j < k; j++) {
			int64_t id        = pasci_id_at(ids, r * k + j);
			n->ids[r * k + j] = id < 0 ? -1 : id;
			if (id >= 0 &&
			    (n->pos[r * k + j] = resolve(tp, s, id)) < 0) {
				return NULL;
			}
			cnt += id >= 0;
		}
		for (int64_t j = 0; j < k; j++) {
			double scale = n->flag[0] ? 1.0 / (double) cnt : 1.0;
			if (n->ids[r * k + j] < 0) {
				continue;
			}
			for (int64_t d = 0; d < dim; d++) {
				pasci_acc(n->value.dtype, n->value.data,
				    r * dim + d,
				    scale * pasci_val(s,
				                n->pos[r * k + j] * dim + d));
			}
		}
	}
	return n;
}
