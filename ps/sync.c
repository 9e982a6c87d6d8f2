/*
 * Consistency modes on the ps: counter admission and BSP accumulators
 * (sync.h; the semantics are documented in include/pasco/optimizer.h).
 */
#include "sync.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int
pasci_sync_check(const pasci_wire_sync *sync, char *err, size_t errlen)
{
	if (sync->mode < PASCO_ASP || sync->mode > PASCO_SSP) {
		pasci_fmt(err, errlen,
		    "unknown consistency mode %d (0 ASP, 1 BSP, 2 SSP)",
		    (int) sync->mode);
		return PASCO_EINVAL;
	}
	if (sync->mode == PASCO_BSP && sync->replicas < 1) {
		pasci_fmt(err, errlen,
		    "BSP needs replicas_to_aggregate >= 1, got %d",
		    (int) sync->replicas);
		return PASCO_EINVAL;
	}
	if (sync->mode == PASCO_SSP && sync->staleness < 0) {
		pasci_fmt(err, errlen, "SSP needs a staleness >= 0, got %d",
		    (int) sync->staleness);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

/* The BSP counter: admission to round cur, or a member's done. */
static int64_t
bsp_step(int64_t cur, ps_accum *a, const pasci_wire_sync *sync, bool *dropped)
{
	if (sync->done) {
		if (sync->version == cur && a->admitted > 0 &&
		    ++a->done >= sync->replicas) {
			a->admitted = a->done = 0;
			return cur + 1; /* every member pushed: next round */
		}
		return cur;
	}
	if (sync->version != cur || a->admitted >= sync->replicas ||
	    cur == INT64_MAX) {
		*dropped = true; /* an older round's, or the round is full */
		return cur;
	}
	a->admitted++;
	return cur;
}

int
pasci_counter_step(pasco_tensor *value, ps_accum *a, int64_t delta,
    const pasci_wire_sync *sync, int64_t *out, bool *dropped, char *err,
    size_t errlen)
{
	int64_t cur  = value->dtype == PASCO_I64 ? *(int64_t *) value->data
	                                         : *(int32_t *) value->data;
	int64_t next = cur;
	int     rv;
	*dropped = false;
	if (sync != NULL && (rv = pasci_sync_check(sync, err, errlen)) != 0) {
		return rv;
	}
	if (sync == NULL || sync->mode == PASCO_ASP) {
		if (__builtin_add_overflow(cur, delta, &next) ||
		    (value->dtype == PASCO_I32 &&
		        (next > INT32_MAX || next < INT32_MIN))) {
			pasci_fmt(err, errlen,
			    "fetch_add: %lld + %lld overflows the counter",
			    (long long) cur, (long long) delta);
			return PASCO_EOUTOFRANGE;
		}
	} else if (sync->version < 0) {
		pasci_fmt(err, errlen,
		    "under %s a gradient needs the version of its "
		    "parameters: read the global step with them",
		    sync->mode == PASCO_BSP ? "BSP" : "SSP");
		return PASCO_EPRECONDITION;
	} else if (sync->mode == PASCO_SSP) {
		/* version > cur: read before the counter was set back (a
		 * restore), from parameters that are gone: stale too */
		*dropped = sync->version > cur ||
		           cur - sync->version > sync->staleness;
		next = *dropped || cur == INT64_MAX ? cur : cur + 1;
	} else {
		next = bsp_step(cur, a, sync, dropped);
	}
	if (value->dtype == PASCO_I64) {
		*(int64_t *) value->data = next;
	} else {
		*(int32_t *) value->data = (int32_t) next;
	}
	*out = next;
	return PASCO_OK;
}

bool
pasci_counter_flush(pasco_tensor *value, ps_accum *a)
{
	if (a->admitted == 0) {
		return false;
	}
	if (value->dtype == PASCO_I64) {
		int64_t *p = value->data;
		*p += *p < INT64_MAX;
	} else {
		int32_t *p = value->data;
		*p += *p < INT32_MAX;
	}
	a->admitted = a->done = 0;
	return true;
}

/* Checks that a gradient may join the round; records opt and step for
 * the first. */
static int
accum_join(ps_accum *a, const pasco_optimizer *opt, int64_t step, bool sparse,
    char *err, size_t errlen)
{
	if (a->count == 0) {
		a->opt            = *opt;
		a->opt.iterations = NULL;
		a->step           = step;
		return PASCO_OK;
	}
	if ((a->sum != NULL) == sparse) { /* dense rounds have a sum */
		pasci_fmt(err, errlen,
		    "a BSP round mixes dense and sparse gradients");
		return PASCO_EINVAL;
	}
	if (a->opt.kind != opt->kind) {
		pasci_fmt(err, errlen,
		    "a BSP round mixes gradients of two optimizers");
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

/* dst += src over n elements (float dtypes: the store checked them). */
static void
add_elems(pasco_tensor *dst, int64_t at, const pasco_tensor *src, int64_t from,
    int64_t n, double scale)
{
	if (dst->dtype == PASCO_F32 && src->dtype == PASCO_F32) {
		float       *d = (float *) dst->data + at;
		const float *s = (const float *) src->data + from;
		for (int64_t i = 0; i < n; i++) {
			d[i] = (float) (d[i] + scale * s[i]);
		}
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		pasco_tensor_set(dst, at + i,
		    pasco_tensor_get(dst, at + i) +
		        scale * pasco_tensor_get(src, from + i));
	}
}

int
pasci_accum_add_dense(ps_accum *a, const pasco_optimizer *opt, int64_t step,
    const pasco_tensor *grad, char *err, size_t errlen)
{
	int rv;
	if ((rv = accum_join(a, opt, step, false, err, errlen)) != 0) {
		return rv;
	}
	if (a->sum == NULL) {
		if ((rv = pasco_tensor_copy(&a->sum, grad)) != 0) {
			return rv;
		}
	} else {
		add_elems(a->sum, 0, grad, 0, grad->count, 1.0);
	}
	a->count++;
	return PASCO_OK;
}

int
pasci_accum_add_sparse(ps_accum *a, const pasco_optimizer *opt, int64_t step,
    const pasco_tensor *ids, const pasco_tensor *rows, char *err,
    size_t errlen)
{
	int rv;
	if ((rv = accum_join(a, opt, step, true, err, errlen)) != 0) {
		return rv;
	}
	if (a->nparts == a->cap) {
		size_t         cap = a->cap > 0 ? 2 * a->cap : 4;
		pasco_tensor **i   = realloc(a->ids, cap * sizeof(*i));
		pasco_tensor **r;
		if (i == NULL) {
			return PASCO_ENOMEM;
		}
		a->ids = i;
		if ((r = realloc(a->rows, cap * sizeof(*r))) == NULL) {
			return PASCO_ENOMEM;
		}
		a->rows = r;
		a->cap  = cap;
	}
	a->ids[a->nparts]  = pasco_tensor_hold((pasco_tensor *) ids);
	a->rows[a->nparts] = pasco_tensor_hold((pasco_tensor *) rows);
	a->nparts++;
	a->count++;
	return PASCO_OK;
}

int
pasci_accum_average_dense(ps_accum *a, pasco_tensor **avg)
{
	int rv = pasco_tensor_alloc(
	    avg, a->sum->dtype, a->sum->rank, a->sum->shape);
	if (rv == 0) {
		add_elems(*avg, 0, a->sum, 0, a->sum->count, 1.0 / a->count);
	}
	return rv;
}

typedef struct id_at {
	int64_t id, part, row;
} id_at;

static int
by_id(const void *x, const void *y)
{
	const id_at *p = x, *q = y;
	return (p->id > q->id) - (p->id < q->id);
}

int
pasci_accum_average_sparse(
    ps_accum *a, int64_t row_elems, pasco_tensor **ids, pasco_tensor **rows)
{
	int64_t n = 0, k = -1, shape[PASCO_MAX_RANK];
	id_at  *all;
	int     rv;
	for (size_t p = 0; p < a->nparts; p++) {
		n += a->ids[p]->count;
	}
	if ((all = malloc(sizeof(*all) * (size_t) (n + 1))) == NULL) {
		return PASCO_ENOMEM;
	}
	n = 0;
	for (size_t p = 0; p < a->nparts; p++) {
		for (int64_t i = 0; i < a->ids[p]->count; i++) {
			all[n++] = (id_at){
			    ((int64_t *) a->ids[p]->data)[i], (int64_t) p, i};
		}
	}
	qsort(all, (size_t) n, sizeof(*all), by_id);
	shape[0] = n;
	shape[1] = row_elems;
	if ((rv = pasco_tensor_alloc(ids, PASCO_I64, 1, shape)) != 0 ||
	    (rv = pasco_tensor_alloc(rows,
	         a->nparts > 0 ? a->rows[0]->dtype : PASCO_F32, 2, shape)) !=
	        0) {
		pasco_tensor_release(*ids);
		*ids = NULL;
		free(all);
		return rv;
	}
	for (int64_t i = 0; i < n; i++) {
		if (k < 0 || ((int64_t *) (*ids)->data)[k] != all[i].id) {
			((int64_t *) (*ids)->data)[++k] = all[i].id;
		}
		add_elems(*rows, k * row_elems, a->rows[all[i].part],
		    all[i].row * row_elems, row_elems, 1.0 / a->count);
	}
	(*ids)->shape[0] = (*rows)->shape[0] = k + 1;
	(*ids)->count                        = k + 1;
	(*ids)->nbytes = (size_t) (k + 1) * sizeof(int64_t);
	(*rows)->count = (k + 1) * row_elems;
	(*rows)->nbytes =
	    (size_t) (*rows)->count * pasco_dtype_size((*rows)->dtype);
	free(all);
	return PASCO_OK;
}

void
pasci_accum_reset(ps_accum *a)
{
	pasco_tensor_release(a->sum);
	for (size_t p = 0; p < a->nparts; p++) {
		pasco_tensor_release(a->ids[p]);
		pasco_tensor_release(a->rows[p]);
	}
	free(a->ids);
	free(a->rows);
	a->sum = NULL;
	a->ids = a->rows = NULL;
	a->nparts = a->cap = 0;
	a->count           = 0;
}
