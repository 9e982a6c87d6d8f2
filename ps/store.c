/*
 * Variable store of a ps task. The table is guarded by a reader-writer lock
 * (writers only when a variable is created); each variable has a mutex over
 * its value, so updates to different variables run in parallel and each
 * update is atomic with respect to reads of the same variable.
 *
 * Lookups hand out a variable's pointer after the table lock is released
 * (store_find), then take only the variable's mutex. That is safe because
 * of one invariant: a variable, once linked, is never unlinked, freed or
 * moved until pasci_store_destroy (which runs after every caller has
 * stopped). Each ps_var is its own allocation on a bucket chain, so adding
 * one never moves another; its value pointer and the value's dtype and
 * shape never change either, which is why the spec checks read them
 * without the mutex. A delete, a rehash into a new array, or replacing
 * value would break this and needs a reference count first.
 *
 * Reads without a copy: a read takes a view of the value's buffer under
 * the mutex (pasci_store_var_with's callback: pasci_tensor_view holds a
 * reference to the buffer) and the ps sends from it after the mutex is
 * released. Every write first makes the buffer the variable's own
 * (value_own, under the mutex): while a view is out, the write goes to a
 * copy and the view keeps the values it was taken with, so a read is
 * always one whole version (the snapshot the copy used to give) and no
 * send ever reads a buffer being written. Only the value's data and
 * storage move; its pointer, dtype and shape stay.
 */
#include "store.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer_apply.h"
#include "sync.h"
#include "tensor_impl.h"
#include "util.h"

#define STORE_BUCKETS 1024

/* One variable: allocated by var_create, freed only by
 * pasci_store_destroy; its address is stable for the store's life. */
typedef struct ps_var {
	char           *name; /* immutable */
	pthread_mutex_t mu;
	/* The pointer and the tensor's dtype and shape are immutable; its
	 * data is protected by mu. */
	pasco_tensor  *value;
	ps_slots       slots; /* protected by mu */
	ps_accum       accum; /* BSP round; protected by mu */
	struct ps_var *next;  /* bucket chain; protected by the table lock */
} ps_var;

struct ps_store {
	/* Protects the bucket chains (the heads and every next): write-held
	 * only to link a new variable at a chain's head. */
	pthread_rwlock_t lock;
	ps_var          *buckets[STORE_BUCKETS]; /* fixed: never rehashed */
};

static uint64_t
hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	while (*s) {
		h = (h ^ (uint8_t) *s++) * 1099511628211ULL;
	}
	return h;
}

int
pasci_store_create(ps_store **out)
{
	ps_store *s = calloc(1, sizeof(*s));
	*out        = s;
	if (s == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_rwlock_init(&s->lock, NULL);
	return PASCO_OK;
}

void
pasci_store_destroy(ps_store *s)
{
	if (s == NULL) {
		return;
	}
	for (int i = 0; i < STORE_BUCKETS; i++) {
		ps_var *v = s->buckets[i];
		while (v != NULL) {
			ps_var *next = v->next;
			pasco_tensor_release(v->value);
			pasci_slots_fini(&v->slots);
			pasci_accum_reset(&v->accum);
			pthread_mutex_destroy(&v->mu);
			free(v->name);
			free(v);
			v = next;
		}
	}
	pthread_rwlock_destroy(&s->lock);
	free(s);
}

static ps_var *
find_locked(ps_store *s, const char *name)
{
	ps_var *v = s->buckets[hash_name(name) % STORE_BUCKETS];
	while (v != NULL && strcmp(v->name, name) != 0) {
		v = v->next;
	}
	return v;
}

/* The variable named name, or NULL (err says so). The pointer outlives the
 * table lock released here: variables are never removed or moved while
 * the store lives (see the top of the file). */
static ps_var *
store_find(ps_store *s, const char *name, char *err, size_t errlen)
{
	ps_var *v;
	pthread_rwlock_rdlock(&s->lock);
	v = find_locked(s, name);
	pthread_rwlock_unlock(&s->lock);
	if (v == NULL) {
		pasci_fmt(
		    err, errlen, "no variable named '%s' on this ps", name);
	}
	return v;
}

/* Whether the existing v may stand for a create of (dtype, rank, shape):
 * PASCO_OK for the same spec (the create is a no-op), else PASCO_EEXIST
 * with err naming both. */
static int
existing_check(const ps_var *v, pasco_dtype dtype, int32_t rank,
    const int64_t *shape, char *err, size_t errlen)
{
	const pasco_tensor *have = v->value;
	char                a[64], b[64];
	bool                same = have->dtype == dtype && have->rank == rank;
	for (int32_t i = 0; same && i < rank; i++) {
		same = have->shape[i] == shape[i];
	}
	if (same) {
		return PASCO_OK;
	}
	pasci_fmt(err, errlen,
	    "variable '%s' already exists as %s; cannot create it as %s",
	    v->name,
	    pasco_tensor_spec_string(
	        have->dtype, have->rank, have->shape, a, sizeof(a)),
	    pasco_tensor_spec_string(dtype, rank, shape, b, sizeof(b)));
	return PASCO_EEXIST;
}

int
pasci_store_var_exists(ps_store *s, const char *name, pasco_dtype dtype,
    int32_t rank, const int64_t *shape, bool *exists, char *err, size_t errlen)
{
	ps_var *v;
	pthread_rwlock_rdlock(&s->lock);
	v = name != NULL ? find_locked(s, name) : NULL;
	pthread_rwlock_unlock(&s->lock);
	*exists = v != NULL;
	/* v is never freed nor its spec changed (the top of the file) */
	return v != NULL ? existing_check(v, dtype, rank, shape, err, errlen)
	                 : PASCO_OK;
}

static int
var_create(ps_store *s, const char *name, const pasco_tensor *init, bool adopt,
    char *err, size_t errlen)
{
	ps_var *v;
	int     rv;

	if (name == NULL || *name == 0) {
		pasci_fmt(err, errlen, "a variable needs a non-empty name");
		return PASCO_EINVAL;
	}
	pthread_rwlock_wrlock(&s->lock);
	if ((v = find_locked(s, name)) != NULL) {
		rv = existing_check(
		    v, init->dtype, init->rank, init->shape, err, errlen);
		pthread_rwlock_unlock(&s->lock);
		return rv;
	}
	if ((v = calloc(1, sizeof(*v))) == NULL ||
	    (v->name = pasci_strdup(name)) == NULL ||
	    (adopt ? (v->value = pasco_tensor_hold((pasco_tensor *) init)) ==
	                 NULL
	           : pasco_tensor_copy(&v->value, init) != 0)) {
		pthread_rwlock_unlock(&s->lock);
		if (v != NULL) {
			free(v->name);
		}
		free(v);
		pasci_fmt(err, errlen, "out of memory creating '%s'", name);
		return PASCO_ENOMEM;
	}
	pthread_mutex_init(&v->mu, NULL);
	/* Linked at the head: no existing variable moves (the invariant
	 * store_find's callers rely on). */
	v->next = s->buckets[hash_name(name) % STORE_BUCKETS];
	s->buckets[hash_name(name) % STORE_BUCKETS] = v;
	pthread_rwlock_unlock(&s->lock);
	return PASCO_OK;
}

int
pasci_store_var_create(ps_store *s, const char *name, const pasco_tensor *init,
    char *err, size_t errlen)
{
	return var_create(s, name, init, false, err, errlen);
}

int
pasci_store_var_adopt(ps_store *s, const char *name, pasco_tensor *init,
    char *err, size_t errlen)
{
	return var_create(s, name, init, true, err, errlen);
}

int
pasci_store_var_with(ps_store *s, const char              *name,
    int (*fn)(void *arg, const pasco_tensor *value), void *arg, char *err,
    size_t errlen)
{
	ps_var *v = store_find(s, name, err, errlen);
	int     rv;
	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	pthread_mutex_lock(&v->mu);
	rv = fn(arg, v->value);
	pthread_mutex_unlock(&v->mu);
	return rv;
}

/* dst (+)= alpha * src, elementwise, in dst's dtype. */
static void
axpy(pasco_tensor *dst, double alpha, const pasco_tensor *src, bool add)
{
	int64_t n = dst->count;
	if (!add) {
		memcpy(dst->data, src->data, dst->nbytes);
		return;
	}
	switch (dst->dtype) {
	case PASCO_F32:
		cblas_saxpy(
		    (blasint) n, (float) alpha, src->data, 1, dst->data, 1);
		break;
	case PASCO_F64:
		cblas_daxpy((blasint) n, alpha, src->data, 1, dst->data, 1);
		break;
	default:
		for (int64_t i = 0; i < n; i++) {
			pasco_tensor_set(dst, i,
			    pasco_tensor_get(dst, i) +
			        alpha * pasco_tensor_get(src, i));
		}
		break;
	}
}

/* ps_update has these two members only: optimizer applies go through
 * pasci_store_var_apply, never through an update. */
static const char *
update_name(ps_update op)
{
	return op == PS_ASSIGN ? "assign" : "assign_add";
}

/* The value's buffer made v's own before a write (the mutex held): see
 * the top of the file. PASCO_ENOMEM with err set (nothing written). */
static int
value_own(ps_var *v, char *err, size_t errlen)
{
	if (pasci_tensor_unshare(v->value) != 0) {
		pasci_fmt(err, errlen,
		    "out of memory copying '%s' (%zu bytes) while a read "
		    "sends "
		    "it",
		    v->name, v->value->nbytes);
		return PASCO_ENOMEM;
	}
	return PASCO_OK;
}

int
pasci_store_var_update(ps_store *s, const char *name, ps_update op,
    const pasco_tensor *t, char *err, size_t errlen)
{
	ps_var *v = store_find(s, name, err, errlen);
	char    have[64], got[64];
	int     rv;

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	/* dtype and shape never change after creation: check without lock */
	if (!pasco_tensor_same_spec(v->value, t)) {
		pasci_fmt(err, errlen,
		    "%s to '%s' (%s) with a %s tensor: dtype "
		    "and shape must match",
		    update_name(op), name,
		    pasco_tensor_spec_string(v->value->dtype, v->value->rank,
		        v->value->shape, have, sizeof(have)),
		    pasco_tensor_spec_string(
		        t->dtype, t->rank, t->shape, got, sizeof(got)));
		return PASCO_EINVAL;
	}
	pthread_mutex_lock(&v->mu);
	if ((rv = value_own(v, err, errlen)) == 0) {
		axpy(v->value, 1.0, t, op != PS_ASSIGN);
	}
	pthread_mutex_unlock(&v->mu);
	return rv;
}

/* Checks ids: i64, 1-D, each in [0, rows). */
static int
check_ids(const ps_var *v, const pasco_tensor *ids, char *err, size_t errlen)
{
	int64_t rows = v->value->rank > 0 ? v->value->shape[0] : 0;
	if (v->value->rank == 0 || ids->dtype != PASCO_I64 || ids->rank != 1) {
		pasci_fmt(err, errlen,
		    "'%s': row ids must be a 1-D i64 tensor "
		    "and the variable must have rows",
		    v->name);
		return PASCO_EINVAL;
	}
	for (int64_t i = 0; i < ids->count; i++) {
		int64_t id = ((const int64_t *) ids->data)[i];
		if (id < 0 || id >= rows) {
			pasci_fmt(err, errlen,
			    "'%s': row id %lld is out of range "
			    "[0, %lld)",
			    v->name, (long long) id, (long long) rows);
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

/* Elements in one row of v's value. */
static int64_t
row_elems_of(const ps_var *v)
{
	return v->value->shape[0] > 0 ? v->value->count / v->value->shape[0]
	                              : 0;
}

/* Checks that rows holds one row of v's dtype per id; what names the
 * operation in the message ("scatter_add to 'name': ..."). */
static int
check_rows(const ps_var *v, const pasco_tensor *ids, const pasco_tensor *rows,
    const char *what, const char *name, char *err, size_t errlen)
{
	int64_t need = ids->count * row_elems_of(v);
	if (rows->dtype != v->value->dtype || rows->count != need) {
		pasci_fmt(err, errlen,
		    "%s '%s': %lld ids need %lld %s elements, got %lld %s",
		    what, name, (long long) ids->count, (long long) need,
		    pasco_dtype_name(v->value->dtype), (long long) rows->count,
		    pasco_dtype_name(rows->dtype));
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

static size_t
row_bytes(const pasco_tensor *t)
{
	return t->shape[0] > 0 ? t->nbytes / (size_t) t->shape[0] : 0;
}

/* Rows of a big table are cache misses: gather asks for the row
 * PREFETCH_ROWS ahead while it copies this one. */
#define PREFETCH_ROWS 12

int
pasci_store_var_gather(ps_store *s, const char *name, const pasco_tensor *ids,
    int (*fn)(void *arg, const pasco_tensor *rows), void *arg, char *err,
    size_t errlen)
{
	ps_var       *v = store_find(s, name, err, errlen);
	pasco_tensor *out;
	int64_t       shape[PASCO_MAX_RANK];
	int           rv;

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if ((rv = check_ids(v, ids, err, errlen)) != 0) {
		return rv;
	}
	memcpy(shape, v->value->shape, sizeof(shape));
	shape[0] = ids->count;
	if ((rv = pasco_tensor_alloc(
	         &out, v->value->dtype, v->value->rank, shape)) != 0) {
		return rv;
	}
	pthread_mutex_lock(&v->mu);
	const int64_t *id        = ids->data;
	int64_t        row_elems = row_elems_of(v);
	size_t         row       = row_bytes(v->value);
	for (int64_t i = 0; i < ids->count; i++) {
		if (i + PREFETCH_ROWS < ids->count) {
			pasci_prefetch_elems(v->value,
			    id[i + PREFETCH_ROWS] * row_elems, row_elems,
			    false);
		}
		memcpy((char *) out->data + (size_t) i * row,
		    (const char *) v->value->data + (size_t) id[i] * row, row);
	}
	rv = fn(arg, out);
	pthread_mutex_unlock(&v->mu);
	pasco_tensor_release(out);
	return rv;
}

/* dst[0..n) += scale * src[0..n) in t's dtype. */
static void
row_axpy(
    pasco_dtype dtype, void *dst, const void *src, int64_t n, double scale)
{
	if (dtype == PASCO_F32) {
		cblas_saxpy((blasint) n, (float) scale, src, 1, dst, 1);
	} else if (dtype == PASCO_F64) {
		cblas_daxpy((blasint) n, scale, src, 1, dst, 1);
	} else {
		pasco_tensor d = {.dtype = dtype, .data = dst};
		pasco_tensor s = {.dtype = dtype, .data = (void *) src};
		for (int64_t i = 0; i < n; i++) {
			pasco_tensor_set(&d, i,
			    pasco_tensor_get(&d, i) +
			        scale * pasco_tensor_get(&s, i));
		}
	}
}

int
pasci_store_var_scatter_add(ps_store *s, const char *name,
    const pasco_tensor *ids, const pasco_tensor *rows, double scale, char *err,
    size_t errlen)
{
	ps_var *v = store_find(s, name, err, errlen);
	int64_t row_elems;
	int     rv;

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if ((rv = check_ids(v, ids, err, errlen)) != 0) {
		return rv;
	}
	if ((rv = check_rows(
	         v, ids, rows, "scatter_add to", name, err, errlen)) != 0) {
		return rv;
	}
	row_elems = row_elems_of(v);
	pthread_mutex_lock(&v->mu);
	if ((rv = value_own(v, err, errlen)) != 0) {
		pthread_mutex_unlock(&v->mu);
		return rv;
	}
	for (int64_t i = 0; i < ids->count; i++) {
		size_t row = row_bytes(v->value);
		row_axpy(v->value->dtype,
		    (char *) v->value->data +
		        (size_t) ((const int64_t *) ids->data)[i] * row,
		    (const char *) rows->data + (size_t) i * row, row_elems,
		    scale);
	}
	pthread_mutex_unlock(&v->mu);
	return PASCO_OK;
}

/* Checks that the variable is float and opt valid. */
static int
check_apply(
    const ps_var *v, const pasco_optimizer *opt, char *err, size_t errlen)
{
	if (v->value->dtype != PASCO_F32 && v->value->dtype != PASCO_F64) {
		pasci_fmt(err, errlen,
		    "'%s' is %s: optimizers need a float "
		    "variable",
		    v->name, pasco_dtype_name(v->value->dtype));
		return PASCO_EINVAL;
	}
	return pasci_optimizer_check(opt, err, errlen);
}

/* Applies grad (or rows of ids, when ids is not NULL) with opt under the
 * variable's lock: slots prepared, Adam's t the global step when step > 0. */
static int
apply_locked(ps_var *v, const pasco_optimizer *opt, int64_t step,
    const pasco_tensor *ids, const pasco_tensor *grad, char *err,
    size_t errlen)
{
	int64_t row_elems = ids != NULL ? row_elems_of(v) : 0;
	int     rv        = value_own(v, err, errlen);
	if (rv != 0 || (rv = pasci_slots_prepare(
	                    &v->slots, opt, v->value, err, errlen)) != 0) {
		return rv;
	}
	if (step > 0) {
		v->slots.step = step;
	}
	if (ids == NULL) {
		pasci_optimizer_apply(
		    opt, &v->slots, v->value, 0, grad, 0, grad->count);
		return PASCO_OK;
	}
	pasci_optimizer_apply_rows(
	    opt, &v->slots, v->value, ids->data, ids->count, row_elems, grad);
	return PASCO_OK;
}

/* Applies the average of v's BSP round and empties it. */
static int
apply_round(ps_var *v, char *err, size_t errlen)
{
	ps_accum     *a   = &v->accum;
	pasco_tensor *ids = NULL, *avg = NULL;
	int           rv = a->sum != NULL ? pasci_accum_average_dense(a, &avg)
	                                  : pasci_accum_average_sparse(
	                                        a, row_elems_of(v), &ids, &avg);
	if (rv == 0) {
		rv = apply_locked(v, &a->opt, a->step, ids, avg, err, errlen);
	}
	pasco_tensor_release(ids);
	pasco_tensor_release(avg);
	pasci_accum_reset(a);
	return rv;
}

/* An apply, or under BSP a gradient added to the round, whose average is
 * applied when it has sync->replicas. */
static int
apply_or_accumulate(ps_var *v, const pasco_optimizer *opt, int64_t step,
    const pasci_wire_sync *sync, const pasco_tensor *ids,
    const pasco_tensor *grad, char *err, size_t errlen)
{
	int rv;
	if (sync != NULL && (rv = pasci_sync_check(sync, err, errlen)) != 0) {
		return rv;
	}
	pthread_mutex_lock(&v->mu);
	if (sync == NULL || sync->mode != PASCO_BSP) {
		rv = apply_locked(v, opt, step, ids, grad, err, errlen);
	} else {
		rv = ids == NULL ? pasci_accum_add_dense(
		                       &v->accum, opt, step, grad, err, errlen)
		                 : pasci_accum_add_sparse(&v->accum, opt, step,
		                       ids, grad, err, errlen);
		if (rv == 0 && v->accum.count >= sync->replicas) {
			rv = apply_round(v, err, errlen);
		}
	}
	pthread_mutex_unlock(&v->mu);
	return rv;
}

int
pasci_store_var_apply(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *grad, char *err,
    size_t errlen)
{
	return pasci_store_var_apply_at(
	    s, name, opt, grad, 0, NULL, err, errlen);
}

int
pasci_store_var_apply_at(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *grad, int64_t step,
    const pasci_wire_sync *sync, char *err, size_t errlen)
{
	ps_var *v = store_find(s, name, err, errlen);
	char    have[64], got[64];
	int     rv;

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if (!pasco_tensor_same_spec(v->value, grad)) {
		pasci_fmt(err, errlen,
		    "gradient for '%s' (%s) is %s: dtype and "
		    "shape must match",
		    name,
		    pasco_tensor_spec_string(v->value->dtype, v->value->rank,
		        v->value->shape, have, sizeof(have)),
		    pasco_tensor_spec_string(grad->dtype, grad->rank,
		        grad->shape, got, sizeof(got)));
		return PASCO_EINVAL;
	}
	if ((rv = check_apply(v, opt, err, errlen)) != 0) {
		return rv;
	}
	return apply_or_accumulate(
	    v, opt, step, sync, NULL, grad, err, errlen);
}

int
pasci_store_var_apply_sparse(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *ids,
    const pasco_tensor *rows, char *err, size_t errlen)
{
	return pasci_store_var_apply_sparse_at(
	    s, name, opt, ids, rows, 0, NULL, err, errlen);
}

int
pasci_store_var_apply_sparse_at(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *ids,
    const pasco_tensor *rows, int64_t step, const pasci_wire_sync *sync,
    char *err, size_t errlen)
{
	ps_var *v = store_find(s, name, err, errlen);
	int     rv;

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if ((rv = check_ids(v, ids, err, errlen)) != 0 ||
	    (rv = check_apply(v, opt, err, errlen)) != 0) {
		return rv;
	}
	if ((rv = check_rows(v, ids, rows, "sparse gradient for", name, err,
	         errlen)) != 0) {
		return rv;
	}
	return apply_or_accumulate(v, opt, step, sync, ids, rows, err, errlen);
}

int
pasci_store_var_fetch_add(ps_store *s, const char *name, int64_t delta,
    const pasci_wire_sync *sync, int64_t *out, bool *dropped, char *err,
    size_t errlen)
{
	ps_var *v = store_find(s, name, err, errlen);
	char    have[64];
	int     rv;
	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if (v->value->rank != 0 ||
	    (v->value->dtype != PASCO_I64 && v->value->dtype != PASCO_I32)) {
		pasci_fmt(err, errlen,
		    "fetch_add on '%s' (%s): a counter is an i64 or i32 "
		    "scalar",
		    name,
		    pasco_tensor_spec_string(v->value->dtype, v->value->rank,
		        v->value->shape, have, sizeof(have)));
		return PASCO_EINVAL;
	}
	pthread_mutex_lock(&v->mu);
	rv = value_own(v, err, errlen);
	rv = rv != 0 ? rv
	             : pasci_counter_step(v->value, &v->accum, delta, sync,
	                   out, dropped, err, errlen);
	pthread_mutex_unlock(&v->mu);
	return rv;
}

int
pasci_store_sync_flush(
    ps_store *s, int64_t *napplied, char *err, size_t errlen)
{
	int rv    = PASCO_OK;
	*napplied = 0;
	pthread_rwlock_rdlock(&s->lock);
	for (int i = 0; i < STORE_BUCKETS; i++) {
		for (ps_var *v = s->buckets[i]; v != NULL; v = v->next) {
			int one = PASCO_OK;
			pthread_mutex_lock(&v->mu);
			if (v->accum.count > 0) {
				one = apply_round(v, err, errlen);
				*napplied += one == 0;
			} else if ((one = value_own(v, err, errlen)) == 0 &&
			           pasci_counter_flush(v->value, &v->accum)) {
				(*napplied)++;
			}
			pthread_mutex_unlock(&v->mu);
			rv = rv != 0 ? rv : one;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	return rv;
}

int
pasci_store_var_each(ps_store *s, pasci_store_visit_fn fn, void *arg)
{
	int rv = PASCO_OK;
	pthread_rwlock_rdlock(&s->lock);
	for (int i = 0; i < STORE_BUCKETS && rv == 0; i++) {
		for (ps_var *v = s->buckets[i]; v != NULL && rv == 0;
		     v         = v->next) {
			pthread_mutex_lock(&v->mu);
			rv = fn(arg, v->name, v->value, &v->slots);
			pthread_mutex_unlock(&v->mu);
		}
	}
	pthread_rwlock_unlock(&s->lock);
	return rv;
}

int
pasci_store_set_slots(ps_store *s, const char *name, pasco_optimizer_kind kind,
    int64_t step, pasco_tensor *const *slots, size_t n, char *err,
    size_t errlen)
{
	ps_var               *v     = store_find(s, name, err, errlen);
	ps_slots              fresh = {0};
	const pasci_opt_desc *d     = pasci_opt_desc_of((int) kind);
	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if (d == NULL || n != (size_t) d->nslots) {
		if (d == NULL) {
			pasci_fmt(err, errlen,
			    "'%s': slots of unknown optimizer kind %d", name,
			    (int) kind);
		} else {
			char list[256];
			pasci_opt_slot_list(d, list, sizeof(list));
			pasci_fmt(err, errlen,
			    "'%s': %s has %d slots (%s), %zu were sent", name,
			    d->title, d->nslots, list, n);
		}
		return PASCO_EINVAL;
	}
	for (size_t k = 0; k < n; k++) {
		if (!pasco_tensor_same_spec(slots[k], v->value)) {
			pasci_fmt(err, errlen,
			    "'%s': slot %zu does not match the "
			    "variable's dtype and shape",
			    name, k);
			return PASCO_EINVAL;
		}
	}
	fresh.kind   = kind;
	fresh.nslots = (int) n;
	fresh.step   = step;
	for (size_t k = 0; k < n; k++) {
		if (pasco_tensor_copy(&fresh.slot[k], slots[k]) != 0) {
			pasci_slots_fini(&fresh);
			return PASCO_ENOMEM;
		}
	}
	pthread_mutex_lock(&v->mu);
	pasci_slots_fini(&v->slots);
	v->slots = fresh;
	pthread_mutex_unlock(&v->mu);
	return PASCO_OK;
}
