/*
 * Sparse operations on variables: gather rows by id, and add rows by id
 * (scatter-add, sparse SGD). Ids are routed to shards with the div formula;
 * the requests to different shards go out in parallel and results are
 * stitched back in id order. Duplicate ids in one update are summed first,
 * so each row gets one update. Thread-safe as variable.c.
 */
#include <stdlib.h>
#include <string.h>

#include "optimizer_desc.h"
#include "pasco/optimizer.h"
#include "pasco/partitioner.h"
#include "tensor_impl.h"
#include "util.h"
#include "variable_impl.h"

typedef struct id_pos {
	int64_t id, pos;
} id_pos;

/* Ids are ordered as unsigned 64-bit numbers: a dynamic table's keys use
 * all 64 bits; a fixed table's ids (>= 0) keep their order. */
#define UID(x) ((uint64_t) (x))

#define RADIX_BITS 11
#define RADIX_SIZE (1 << RADIX_BITS)

/* Sorts a[0..n) by id (as unsigned), stably (equal ids keep their order).
 * Small arrays by insertion, others by LSD radix passes of RADIX_BITS over
 * the bits the largest id has (two passes for a million-row table): a
 * batch of 1,024 ids sorts in a few microseconds, where qsort took tens. */
static int
sort_by_id(id_pos *a, int64_t n)
{
	uint64_t max = 0;
	id_pos  *tmp, *from = a, *to;
	size_t  *count;
	if (n < 64) {
		for (int64_t i = 1; i < n; i++) {
			id_pos  x = a[i];
			int64_t j = i;
			for (; j > 0 && UID(a[j - 1].id) > UID(x.id); j--) {
				a[j] = a[j - 1];
			}
			a[j] = x;
		}
		return PASCO_OK;
	}
	tmp   = malloc(sizeof(*tmp) * (size_t) n);
	count = malloc(sizeof(*count) * RADIX_SIZE);
	if (tmp == NULL || count == NULL) {
		free(tmp);
		free(count);
		return PASCO_ENOMEM;
	}
	for (int64_t i = 0; i < n; i++) {
		max = UID(a[i].id) > max ? UID(a[i].id) : max;
	}
	to = tmp;
	for (int shift = 0; shift == 0 || (shift < 64 && (max >> shift) != 0);
	     shift += RADIX_BITS) {
		size_t sum = 0;
		memset(count, 0, sizeof(*count) * RADIX_SIZE);
		for (int64_t i = 0; i < n; i++) {
			count[(UID(from[i].id) >> shift) & (RADIX_SIZE - 1)]++;
		}
		for (int d = 0; d < RADIX_SIZE; d++) {
			size_t c = count[d];
			count[d] = sum;
			sum += c;
		}
		for (int64_t i = 0; i < n; i++) {
			to[count[(UID(from[i].id) >> shift) &
			         (RADIX_SIZE - 1)]++] = from[i];
		}
		id_pos *t = from;
		from      = to;
		to        = t;
	}
	if (from != a) {
		memcpy(a, from, sizeof(*a) * (size_t) n);
	}
	free(tmp);
	free(count);
	return PASCO_OK;
}

/* The positions of ids[0..n) sorted by id (stably), or NULL when out of
 * memory. */
static id_pos *
sorted_order(const int64_t *ids, int64_t n)
{
	id_pos *order = malloc(sizeof(*order) * (size_t) (n + 1));
	if (order == NULL) {
		return NULL;
	}
	for (int64_t i = 0; i < n; i++) {
		order[i] = (id_pos){ids[i], i};
	}
	if (sort_by_id(order, n) != 0) {
		free(order);
		return NULL;
	}
	return order;
}

/* The distinct ids of ids[0..n), sorted, and for each position the index
 * of its id among them. */
static int
unique_ids(const int64_t *ids, int64_t n, int64_t **uniq, int64_t *nu,
    int64_t **inverse)
{
	id_pos *order = sorted_order(ids, n);
	int64_t k     = -1;
	*uniq         = malloc(sizeof(int64_t) * (size_t) (n + 1));
	*inverse      = malloc(sizeof(int64_t) * (size_t) (n + 1));
	if (order == NULL || *uniq == NULL || *inverse == NULL) {
		free(order);
		free(*uniq);
		free(*inverse);
		*uniq = *inverse = NULL;
		return PASCO_ENOMEM;
	}
	for (int64_t i = 0; i < n; i++) {
		if (k < 0 || (*uniq)[k] != order[i].id) {
			(*uniq)[++k] = order[i].id;
		}
		(*inverse)[order[i].pos] = k;
	}
	*nu = k + 1;
	free(order);
	return PASCO_OK;
}

/* ids as int64 (i32 or i64 accepted), checked against the row count. */
static int
read_ids(
    pasco_variable *v, const pasco_tensor *ids, const char *op, int64_t **out)
{
	int64_t rows = v->rank > 0 ? v->shape[0] : 0;
	*out         = NULL;
	if (v->dynamic && ids != NULL && ids->dtype != PASCO_I64) {
		return pasci_variable_fail(v, PASCO_EINVAL,
		    "%s on '%s': a dynamic table's keys must be an i64 tensor "
		    "(a key's 64 bits; u64 keys as the same bits), got %s",
		    op, v->name, pasco_dtype_name(ids->dtype));
	}
	if (v->rank == 0) {
		return pasci_variable_fail(v, PASCO_EINVAL,
		    "%s on '%s': a scalar "
		    "has no rows",
		    op, v->name);
	}
	if (ids == NULL ||
	    (ids->dtype != PASCO_I64 && ids->dtype != PASCO_I32)) {
		return pasci_variable_fail(v, PASCO_EINVAL,
		    "%s on '%s': ids must "
		    "be an i32 or i64 tensor",
		    op, v->name);
	}
	if ((*out = malloc(sizeof(int64_t) * (size_t) (ids->count + 1))) ==
	    NULL) {
		return PASCO_ENOMEM;
	}
	for (int64_t i = 0; i < ids->count; i++) {
		int64_t id = ids->dtype == PASCO_I64
		                 ? ((const int64_t *) ids->data)[i]
		                 : ((const int32_t *) ids->data)[i];
		if (!v->dynamic && (id < 0 || id >= rows)) {
			free(*out);
			*out = NULL;
			return pasci_variable_fail(v, PASCO_EINVAL,
			    "%s on '%s': id "
			    "%lld is out of range [0, %lld)",
			    op, v->name, (long long) id, (long long) rows);
		}
		(*out)[i] = id;
	}
	return PASCO_OK;
}

/* Per-shard lists of local row ids, as i64 tensors; pos[k] is where the
 * k-th id of shard s came from, listed shard by shard. */
typedef struct routed {
	pasco_tensor **local; /* one per shard, NULL when empty */
	int64_t       *pos;   /* n entries, grouped by shard */
	int64_t       *start; /* nshards + 1 */
} routed;

static void
routed_free(const pasco_variable *v, routed *r)
{
	for (int32_t s = 0; r->local != NULL && s < v->nshards; s++) {
		pasco_tensor_release(r->local[s]);
	}
	free(r->local);
	free(r->pos);
	free(r->start);
}

static int
route(const pasco_variable *v, const int64_t *ids, int64_t n, routed *r)
{
	int64_t *shard_of = malloc(sizeof(int64_t) * (size_t) (n + 1));
	int64_t *fill = pasci_calloc((size_t) v->nshards + 1, sizeof(int64_t));
	int      rv   = PASCO_OK;

	r->local = pasci_calloc((size_t) v->nshards, sizeof(*r->local));
	r->pos   = malloc(sizeof(int64_t) * (size_t) (n + 1));
	r->start = pasci_calloc((size_t) v->nshards + 1, sizeof(int64_t));
	if (shard_of == NULL || fill == NULL || r->local == NULL ||
	    r->pos == NULL || r->start == NULL) {
		rv = PASCO_ENOMEM;
		goto out;
	}
	for (int64_t i = 0; i < n; i++) {
		int64_t local;
		if (v->dynamic) {
			shard_of[i] =
			    pasci_dyn_shard((uint64_t) ids[i], v->nshards);
		} else {
			pasco_shard_route(v->shape[0], v->nshards, ids[i],
			    &shard_of[i], &local);
		}
		r->start[shard_of[i] + 1]++;
	}
	for (int32_t s = 0; s < v->nshards; s++) {
		int64_t k = r->start[s + 1];
		r->start[s + 1] += r->start[s];
		if (k > 0 && (rv = pasco_tensor_alloc(
		                  &r->local[s], PASCO_I64, 1, &k)) != 0) {
			goto out;
		}
	}
	for (int64_t i = 0; i < n; i++) {
		int64_t s = shard_of[i], k = fill[s]++;
		r->pos[r->start[s] + k] = i;
		((int64_t *) r->local[s]->data)[k] =
		    v->dynamic ? ids[i] : ids[i] - v->shards[s].offset;
	}
out:
	free(shard_of);
	free(fill);
	return rv;
}

int32_t
pasci_dyn_shard(uint64_t key, int32_t nshards)
{
	return (int32_t) (pasci_mix64(key ^ 0x243f6a8885a308d3ULL) %
	                  (uint64_t) nshards);
}

/* A gather in flight: the distinct ids asked of each shard. */
struct pasci_gather {
	int64_t    *flat, *uniq, *inverse, nu;
	routed      r;
	shard_call *calls;
	int64_t     shape[PASCO_MAX_RANK];
	int32_t     rank;
};

void
pasci_gather_free(const pasco_variable *v, pasci_gather *g)
{
	if (g == NULL) {
		return;
	}
	pasci_shard_calls_free(v, g->calls);
	routed_free(v, &g->r);
	free(g->uniq);
	free(g->inverse);
	free(g->flat);
	free(g);
}

shard_call *
pasci_gather_calls(pasci_gather *g)
{
	return g->calls;
}

int
pasci_gather_prepare(
    pasco_variable *v, const pasco_tensor *ids, pasci_gather **out)
{
	pasci_gather *g = pasci_calloc(1, sizeof(*g));
	int           rv;
	*out = NULL;
	if (g == NULL) {
		return PASCO_ENOMEM;
	}
	if ((rv = read_ids(v, ids, "gather", &g->flat)) != 0) {
		goto fail;
	}
	if (ids->rank + v->rank - 1 > PASCO_MAX_RANK) {
		rv = pasci_variable_fail(v, PASCO_EINVAL,
		    "gather on '%s': the "
		    "result would have rank > %d",
		    v->name, PASCO_MAX_RANK);
		goto fail;
	}
	g->rank = ids->rank + v->rank - 1;
	memcpy(g->shape, ids->shape, sizeof(int64_t) * (size_t) ids->rank);
	memcpy(g->shape + ids->rank, v->shape + 1,
	    sizeof(int64_t) * (size_t) (v->rank - 1));
	/* Repeated ids (common in embedding lookups) are fetched once. */
	if ((rv = unique_ids(
	         g->flat, ids->count, &g->uniq, &g->nu, &g->inverse)) != 0 ||
	    (rv = route(v, g->uniq, g->nu, &g->r)) != 0) {
		goto fail;
	}
	if ((g->calls = pasci_shard_calls_new(v, PASCI_METHOD_VAR_GATHER)) ==
	    NULL) {
		rv = PASCO_ENOMEM;
		goto fail;
	}
	for (int32_t s = 0; s < v->nshards; s++) {
		if (g->r.local[s] != NULL) {
			g->calls[s].used            = true;
			g->calls[s].b.hdr.find_only = v->find_only;
			pasci_wire_add_tensor(
			    &g->calls[s].b, g->r.local[s], NULL);
		}
	}
	*out = g;
	return PASCO_OK;
fail:
	pasci_gather_free(v, g);
	return rv;
}

/* Stitches the shards' rows of the distinct ids into urows [nu, ...]. */
static int
gather_stitch(pasco_variable *v, pasci_gather *g, char *urows)
{
	size_t row = pasci_variable_row_bytes(v);
	for (int32_t s = 0; s < v->nshards; s++) {
		int64_t             k = g->r.start[s + 1] - g->r.start[s];
		const pasco_tensor *rows;
		if (!g->calls[s].used) {
			continue;
		}
		rows = g->calls[s].reply.ntensors == 1
		           ? g->calls[s].reply.tensors[0]
		           : NULL;
		if (rows == NULL || rows->nbytes != (size_t) k * row) {
			return pasci_variable_fail(v, PASCO_EPROTO,
			    "gather on '%s': %s "
			    "answered the wrong number of rows",
			    v->name, v->shards[s].name);
		}
		for (int64_t j = 0; j < k; j++) {
			memcpy(
			    urows + (size_t) g->r.pos[g->r.start[s] + j] * row,
			    (const char *) rows->data + (size_t) j * row, row);
		}
	}
	return PASCO_OK;
}

int
pasci_gather_finish(pasco_variable *v, pasci_gather *g, pasco_tensor **out)
{
	size_t  row   = pasci_variable_row_bytes(v);
	char   *urows = malloc(row * (size_t) g->nu + 1);
	int64_t count = 1;
	int     rv;
	*out = NULL;
	if (urows == NULL) {
		return PASCO_ENOMEM;
	}
	if ((rv = gather_stitch(v, g, urows)) != 0 ||
	    (rv = pasco_tensor_alloc(out, v->dtype, g->rank, g->shape)) != 0) {
		free(urows);
		return rv;
	}
	count = row > 0 ? (int64_t) ((*out)->nbytes / row) : 0;
	for (int64_t i = 0; i < count; i++) {
		memcpy((char *) (*out)->data + (size_t) i * row,
		    urows + (size_t) g->inverse[i] * row, row);
	}
	free(urows);
	return PASCO_OK;
}

int
pasco_variable_gather(
    pasco_variable *v, const pasco_tensor *ids, pasco_tensor **out)
{
	pasci_gather *g;
	int           rv;
	*out = NULL;
	if ((rv = pasci_gather_prepare(v, ids, &g)) != 0) {
		return rv;
	}
	if ((rv = pasci_shard_calls_run(v, g->calls)) == 0) {
		rv = pasci_gather_finish(v, g, out);
	}
	pasci_gather_free(v, g);
	return rv;
}

/* dst += src over n elements of dtype. */
static void
add_elems(pasco_dtype dtype, void *dst, const void *src, int64_t n)
{
#define ADD_AS(type)                                                          \
	for (int64_t i = 0; i < n; i++) {                                     \
		((type *) dst)[i] += ((const type *) src)[i];                 \
	}                                                                     \
	break
	switch (dtype) {
	case PASCO_F32:
		ADD_AS(float);
	case PASCO_F64:
		ADD_AS(double);
	case PASCO_I32:
		ADD_AS(int32_t);
	case PASCO_I64:
		ADD_AS(int64_t);
	case PASCO_U8:
		ADD_AS(uint8_t);
	}
#undef ADD_AS
}

/* Sums rows with the same id: *uids (n_unique) and *urows (n_unique rows). */
static int
dedupe(const pasco_variable *v, const int64_t *ids, int64_t n,
    const pasco_tensor *rows, int64_t **uids, pasco_tensor **urows,
    int64_t *nu)
{
	id_pos *order = sorted_order(ids, n);
	size_t  row   = pasci_variable_row_bytes(v);
	int64_t shape[PASCO_MAX_RANK], k = -1;
	int     rv;

	*uids = malloc(sizeof(int64_t) * (size_t) (n + 1));
	if (order == NULL || *uids == NULL) {
		free(order);
		free(*uids);
		return PASCO_ENOMEM;
	}
	memcpy(shape, v->shape, sizeof(shape));
	shape[0] = n;
	if ((rv = pasco_tensor_alloc(urows, v->dtype, v->rank, shape)) != 0) {
		free(order);
		free(*uids);
		return rv;
	}
	for (int64_t i = 0; i < n; i++) {
		const char *src =
		    (const char *) rows->data + (size_t) order[i].pos * row;
		if (k < 0 || (*uids)[k] != order[i].id) {
			(*uids)[++k] = order[i].id;
			memcpy((char *) (*urows)->data + (size_t) k * row, src,
			    row);
		} else {
			add_elems(v->dtype,
			    (char *) (*urows)->data + (size_t) k * row, src,
			    (int64_t) (row / pasco_dtype_size(v->dtype)));
		}
	}
	*nu                = k + 1;
	(*urows)->shape[0] = k + 1;
	(*urows)->count =
	    (k + 1) * (int64_t) (row / pasco_dtype_size(v->dtype));
	(*urows)->nbytes = (size_t) (k + 1) * row;
	free(order);
	return PASCO_OK;
}

/* Copies rows ri[start..end) of all into one tensor for a shard. */
static int
gather_rows(const pasco_variable *v, const pasco_tensor *all,
    const int64_t *which, int64_t k, pasco_tensor **out)
{
	size_t  row = pasci_variable_row_bytes(v);
	int64_t shape[PASCO_MAX_RANK];
	int     rv;
	memcpy(shape, v->shape, sizeof(shape));
	shape[0] = k;
	if ((rv = pasco_tensor_alloc(out, v->dtype, v->rank, shape)) != 0) {
		return rv;
	}
	for (int64_t j = 0; j < k; j++) {
		memcpy((char *) (*out)->data + (size_t) j * row,
		    (const char *) all->data + (size_t) which[j] * row, row);
	}
	return PASCO_OK;
}

static int
check_rows(pasco_variable *v, const pasco_tensor *ids,
    const pasco_tensor *rows, const char *op)
{
	int64_t want = ids->count;
	bool    ok   = rows != NULL && rows->dtype == v->dtype;
	for (int32_t i = 1; ok && i < v->rank; i++) {
		want *= v->shape[i];
	}
	ok = ok && rows->count == want && rows->rank >= 1 &&
	     rows->rank == ids->rank + v->rank - 1;
	if (!ok) {
		char want_spec[64];
		return pasci_variable_fail(v, PASCO_EINVAL,
		    "%s on '%s': %lld ids "
		    "need rows of %s, shape [n, ...] with n = %lld",
		    op, v->name, (long long) ids->count,
		    pasco_tensor_spec_string(v->dtype, v->rank - 1,
		        v->shape + 1, want_spec, sizeof(want_spec)),
		    (long long) ids->count);
	}
	return PASCO_OK;
}

/* The part of shard s: its local ids and rows, or when every shard takes
 * each apply (under BSP every shard counts the round; AdamW decays every
 * row, pasci_opt_decays) empty ones for a shard with no ids. */
static int
shard_part(const pasco_variable *v, const routed *r, const pasco_tensor *urows,
    int32_t s, bool every, pasco_tensor **ids, pasco_tensor **rows)
{
	int64_t zero = 0;
	int     rv;
	*ids = *rows = NULL;
	if (r->local[s] == NULL && !every) {
		return PASCO_OK;
	}
	if (r->local[s] != NULL) {
		*ids = pasco_tensor_hold(r->local[s]);
	} else if ((rv = pasco_tensor_alloc(ids, PASCO_I64, 1, &zero)) != 0) {
		return rv;
	}
	rv = gather_rows(v, urows, r->pos + r->start[s],
	    r->start[s + 1] - r->start[s], rows);
	if (rv != 0) {
		pasco_tensor_release(*ids);
		*ids = NULL;
	}
	return rv;
}

int
pasci_sparse_calls(pasco_variable *v, const pasco_tensor *ids,
    const pasco_tensor *rows, double scale, const pasco_optimizer *opt,
    const char *op, shard_call **out)
{
	int64_t      *flat = NULL, *uids = NULL, nu = 0;
	pasco_tensor *urows = NULL;
	routed        r     = {0};
	shard_call   *calls = NULL;
	bool          every = pasci_step_is_bsp(opt) || pasci_opt_decays(opt);
	int           rv;

	*out = NULL;
	if ((rv = read_ids(v, ids, op, &flat)) != 0 ||
	    (rv = check_rows(v, ids, rows, op)) != 0 ||
	    (rv = dedupe(v, flat, ids->count, rows, &uids, &urows, &nu)) !=
	        0 ||
	    (rv = route(v, uids, nu, &r)) != 0) {
		goto out;
	}
	calls = pasci_shard_calls_new(v, opt != NULL
	                                     ? PASCI_METHOD_VAR_APPLY_SPARSE
	                                     : PASCI_METHOD_VAR_SCATTER_ADD);
	if (calls == NULL) {
		rv = PASCO_ENOMEM;
		goto out;
	}
	for (int32_t s = 0; s < v->nshards && rv == 0; s++) {
		pasco_tensor *local, *part;
		rv = shard_part(v, &r, urows, s, every, &local, &part);
		if (rv == 0 && local != NULL) {
			calls[s].used        = true;
			calls[s].b.hdr.scale = scale;
			calls[s].b.hdr.opt   = opt;
			pasci_wire_add_tensor(&calls[s].b, local, NULL);
			pasci_wire_add_tensor(&calls[s].b, part, NULL);
			pasco_tensor_release(local);
			pasco_tensor_release(part);
		}
	}
out:
	if (rv != 0) {
		pasci_shard_calls_free(v, calls);
		calls = NULL;
	}
	*out = calls;
	routed_free(v, &r);
	pasco_tensor_release(urows);
	free(uids);
	free(flat);
	return rv;
}

/* Sends each shard its (deduplicated) rows: a VAR_SCATTER_ADD with scale,
 * or a VAR_APPLY_SPARSE with opt (one global step: optimizer.h). */
static int
scatter(pasco_variable *v, const pasco_tensor *ids, const pasco_tensor *rows,
    double scale, const pasco_optimizer *opt, const char *op)
{
	shard_call *calls = NULL;
	pasci_step  st    = {0};
	int rv = pasci_sparse_calls(v, ids, rows, scale, opt, op, &calls);
	if (rv == 0 && (rv = pasci_step_begin(v, opt, &st)) == 0 &&
	    !st.dropped) {
		pasci_step_stamp(&st, v, calls);
		rv = pasci_shard_calls_run(v, calls);
	}
	pasci_step_end(&st);
	pasci_shard_calls_free(v, calls);
	return rv;
}

int
pasco_variable_scatter_add(
    pasco_variable *v, const pasco_tensor *ids, const pasco_tensor *rows)
{
	return scatter(v, ids, rows, 1.0, NULL, "scatter_add");
}

int
pasco_variable_apply_sgd_sparse(pasco_variable *v, double learning_rate,
    const pasco_tensor *ids, const pasco_tensor *grads)
{
	pasco_optimizer sgd = pasco_sgd(learning_rate, 0, false);
	return scatter(v, ids, grads, 0, &sgd, "apply_sgd_sparse");
}

int
pasco_variable_apply_gradient_sparse(pasco_variable *v,
    const pasco_optimizer *opt, const pasco_tensor *ids,
    const pasco_tensor *grads)
{
	if (opt == NULL) {
		return pasci_variable_fail(v, PASCO_EINVAL,
		    "apply_gradient_sparse "
		    "to '%s': no optimizer",
		    v->name);
	}
	return scatter(v, ids, grads, 0, opt, "apply_gradient_sparse");
}
