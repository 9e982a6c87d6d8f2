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
 *
 * Memory: every variable's value (with its bookkeeping, pasci_store_cost)
 * and every slot is charged to the ps's budget (budget.h) before it is
 * allocated, and a create or an apply that would pass the budget is
 * refused with nothing changed. Variables are never removed, so only
 * replaced slots and failed creates give bytes back.
 *
 * Optimizer applies, BSP rounds, counters and slots are in store_apply.c.
 */
#include "store.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer_apply.h"
#include "store_impl.h"
#include "tensor_impl.h"
#include "util.h"

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
pasci_store_create_with(ps_store **out, pasci_budget *budget)
{
	ps_store *s = pasci_calloc(1, sizeof(*s));
	*out        = s;
	if (s == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_rwlock_init(&s->lock, NULL);
	pasci_budget_init(&s->own, SIZE_MAX);
	s->budget = budget != NULL ? budget : &s->own;
	return PASCO_OK;
}

int
pasci_store_create(ps_store **out)
{
	return pasci_store_create_with(out, NULL);
}

size_t
pasci_store_cost(const char *name, size_t value_bytes)
{
	return value_bytes + sizeof(ps_var) + sizeof(pasco_tensor) +
	       (name != NULL ? strlen(name) : 0) + 1;
}

int
pasci_store_charge(ps_store *s, const char *name, size_t value_bytes,
    char *err, size_t errlen)
{
	size_t cost = pasci_store_cost(name, value_bytes);
	if (pasci_budget_charge(s->budget, cost) != 0) {
		pasci_budget_explain(s->budget, cost, err, errlen,
		    "create '%s' (%zu bytes)", name, value_bytes);
		return PASCO_ENOMEM;
	}
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
ps_var *
pasci_store_find(ps_store *s, const char *name, char *err, size_t errlen)
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

/* Creates name from init (adopted or copied). charged: its cost is
 * charged to the budget already (given back if no variable is made). */
static int
var_create(ps_store *s, const char *name, const pasco_tensor *init, bool adopt,
    bool charged, char *err, size_t errlen)
{
	ps_var *v;
	int     rv;

	if (name == NULL || *name == 0) {
		pasci_fmt(err, errlen, "a variable needs a non-empty name");
		rv = PASCO_EINVAL;
		goto refused;
	}
	pthread_rwlock_wrlock(&s->lock);
	if ((v = find_locked(s, name)) != NULL) {
		rv = existing_check(
		    v, init->dtype, init->rank, init->shape, err, errlen);
		pthread_rwlock_unlock(&s->lock);
		goto refused;
	}
	if (!charged && (rv = pasci_store_charge(
	                     s, name, init->nbytes, err, errlen)) != 0) {
		pthread_rwlock_unlock(&s->lock);
		return rv;
	}
	charged = true;
	if ((v = pasci_calloc(1, sizeof(*v))) == NULL ||
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
		rv = PASCO_ENOMEM;
		goto refused;
	}
	pthread_mutex_init(&v->mu, NULL);
	/* Linked at the head: no existing variable moves (the invariant
	 * store_find's callers rely on). */
	v->next = s->buckets[hash_name(name) % STORE_BUCKETS];
	s->buckets[hash_name(name) % STORE_BUCKETS] = v;
	pthread_rwlock_unlock(&s->lock);
	return PASCO_OK;
refused:
	if (charged) {
		pasci_budget_release(
		    s->budget, pasci_store_cost(name, init->nbytes));
	}
	return rv;
}

int
pasci_store_var_create(ps_store *s, const char *name, const pasco_tensor *init,
    char *err, size_t errlen)
{
	return var_create(s, name, init, false, false, err, errlen);
}

int
pasci_store_var_adopt(ps_store *s, const char *name, pasco_tensor *init,
    char *err, size_t errlen)
{
	return var_create(s, name, init, true, false, err, errlen);
}

int
pasci_store_var_adopt_charged(ps_store *s, const char *name,
    pasco_tensor *init, char *err, size_t errlen)
{
	return var_create(s, name, init, true, true, err, errlen);
}

int
pasci_store_var_adopt_constrained(ps_store *s, const char *name,
    pasco_tensor *init, const pasco_constraint *c, char *err, size_t errlen)
{
	int     rv = var_create(s, name, init, true, true, err, errlen);
	ps_var *v  = rv == 0 ? pasci_store_find(s, name, err, errlen) : NULL;
	if (v != NULL &&
	    v->value == init) { /* this create's, not an old one */
		pthread_mutex_lock(&v->mu);
		v->constraint = *c;
		pthread_mutex_unlock(&v->mu);
	}
	return rv;
}

int
pasci_store_var_with(ps_store *s, const char              *name,
    int (*fn)(void *arg, const pasco_tensor *value), void *arg, char *err,
    size_t errlen)
{
	ps_var *v = pasci_store_find(s, name, err, errlen);
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
int
pasci_store_value_own(ps_var *v, char *err, size_t errlen)
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
	ps_var *v = pasci_store_find(s, name, err, errlen);
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
	if ((rv = pasci_store_value_own(v, err, errlen)) == 0) {
		axpy(v->value, 1.0, t, op != PS_ASSIGN);
	}
	pthread_mutex_unlock(&v->mu);
	return rv;
}

/* Checks ids: i64, 1-D, each in [0, rows). */
int
pasci_store_check_ids(
    const ps_var *v, const pasco_tensor *ids, char *err, size_t errlen)
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
int64_t
pasci_store_row_elems(const ps_var *v)
{
	return v->value->shape[0] > 0 ? v->value->count / v->value->shape[0]
	                              : 0;
}

/* Checks that rows holds one row of v's dtype per id; what names the
 * operation in the message ("scatter_add to 'name': ..."). */
int
pasci_store_check_rows(const ps_var *v, const pasco_tensor *ids,
    const pasco_tensor *rows, const char *what, const char *name, char *err,
    size_t errlen)
{
	int64_t need = ids->count * pasci_store_row_elems(v);
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

size_t
pasci_store_var_row_bytes(ps_store *s, const char *name)
{
	ps_var *v;
	pthread_rwlock_rdlock(&s->lock);
	v = find_locked(s, name);
	pthread_rwlock_unlock(&s->lock);
	/* the spec never changes (the top of the file) */
	return v != NULL && v->value->rank > 0 ? row_bytes(v->value) : 0;
}

/* Rows of a big table are cache misses: gather asks for the row
 * PREFETCH_ROWS ahead while it copies this one. */
#define PREFETCH_ROWS 12

int
pasci_store_var_gather(ps_store *s, const char *name, const pasco_tensor *ids,
    int (*fn)(void *arg, const pasco_tensor *rows), void *arg, char *err,
    size_t errlen)
{
	ps_var       *v = pasci_store_find(s, name, err, errlen);
	pasco_tensor *out;
	int64_t       shape[PASCO_MAX_RANK];
	int           rv;

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if ((rv = pasci_store_check_ids(v, ids, err, errlen)) != 0) {
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
	int64_t        row_elems = pasci_store_row_elems(v);
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
	ps_var *v = pasci_store_find(s, name, err, errlen);
	int64_t row_elems;
	int     rv;

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	if ((rv = pasci_store_check_ids(v, ids, err, errlen)) != 0) {
		return rv;
	}
	if ((rv = pasci_store_check_rows(
	         v, ids, rows, "scatter_add to", name, err, errlen)) != 0) {
		return rv;
	}
	row_elems = pasci_store_row_elems(v);
	pthread_mutex_lock(&v->mu);
	if ((rv = pasci_store_value_own(v, err, errlen)) != 0) {
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
