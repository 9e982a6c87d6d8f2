/*
 * A dynamic table's state in and out (what a checkpoint holds: rows most
 * recent first, their slots, steps and pending counts), and the set of a
 * ps's tables by name. See dyn_table.h.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dyn_table_impl.h"
#include "util.h"

/* --- checkpoints --- */

void
pasci_dyn_state_fini(pasci_dyn_state *s)
{
	pasco_tensor_release(s->keys);
	pasco_tensor_release(s->values);
	pasco_tensor_release(s->last_step);
	pasco_tensor_release(s->pending_keys);
	pasco_tensor_release(s->pending_counts);
	for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
		pasco_tensor_release(s->slot[k]);
	}
	memset(s, 0, sizeof(*s));
}

static int
export_alloc(const pasci_dyn_table *t, pasci_dyn_state *s)
{
	int64_t n = t->st.rows, p = (int64_t) t->pending.n;
	int64_t two[2] = {n, t->c.dim};
	bool    any    = false;
	int     rv     = pasco_tensor_alloc(&s->keys, PASCO_I64, 1, &n);
	rv = rv != 0 ? rv : pasco_tensor_alloc(&s->values, PASCO_F32, 2, two);
	rv =
	    rv != 0 ? rv : pasco_tensor_alloc(&s->last_step, PASCO_I64, 1, &n);
	rv = rv != 0 ? rv
	             : pasco_tensor_alloc(&s->pending_keys, PASCO_I64, 1, &p);
	rv = rv != 0
	         ? rv
	         : pasco_tensor_alloc(&s->pending_counts, PASCO_I64, 1, &p);
	for (int k = 0; k < t->nslots && rv == 0; k++) {
		any = false;
		for (size_t c = 0; c < t->nchunks && !any; c++) {
			any = t->chunks[c]->slots.slot[k] != NULL;
		}
		if (any) {
			rv =
			    pasco_tensor_alloc(&s->slot[k], PASCO_F32, 2, two);
		}
	}
	return rv;
}

int
pasci_dyn_export(pasci_dyn_table *t, pasci_dyn_state *s)
{
	int64_t i = 0, dim;
	int     rv;
	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&t->mu);
	dim = t->c.dim;
	pasci_dyn_all_current(t); /* AdamW's lazy decay (dyn_decay.c) */
	if ((rv = export_alloc(t, s)) != 0) {
		pthread_mutex_unlock(&t->mu);
		pasci_dyn_state_fini(s);
		return rv;
	}
	for (uint32_t r = t->head; r != NO_ROW; r = LINK(t, r, next), i++) {
		dyn_chunk *c = chunk_of(t, r);
		((int64_t *) s->keys->data)[i] =
		    (int64_t) c->key[r % t->crows];
		((int64_t *) s->last_step->data)[i] = c->last[r % t->crows];
		memcpy((float *) s->values->data + i * dim, row_data(t, r),
		    sizeof(float) * (size_t) dim);
		for (int k = 0; k < t->nslots; k++) {
			float *dst;
			if (s->slot[k] == NULL) {
				continue;
			}
			dst = (float *) s->slot[k]->data + i * dim;
			if (c->slots.slot[k] != NULL) {
				memcpy(dst,
				    (float *) c->slots.slot[k]->data +
				        (size_t) (r % t->crows) * (size_t) dim,
				    sizeof(float) * (size_t) dim);
			} else {
				for (int64_t j = 0; j < dim; j++) {
					dst[j] = (float) t->slot_init[k];
				}
			}
		}
	}
	i = 0;
	for (size_t e = 0; e < t->pending.cap; e++) {
		if (t->pending.e[e].val != NO_ROW) {
			((int64_t *) s->pending_keys->data)[i] =
			    (int64_t) t->pending.e[e].key;
			((int64_t *) s->pending_counts->data)[i++] =
			    t->pending.e[e].val;
		}
	}
	s->kind    = t->kind;
	s->nslots  = t->nslots;
	s->applies = t->applies;
	memcpy(s->slot_init, t->slot_init, sizeof(s->slot_init));
	t->st.pending = (int64_t) t->pending.n;
	s->stats      = t->st;
	pthread_mutex_unlock(&t->mu);
	return PASCO_OK;
}

static bool
is_spec(const pasco_tensor *x, pasco_dtype dt, int32_t rank, int64_t n0,
    int64_t n1)
{
	return x != NULL && x->dtype == dt && x->rank == rank &&
	       x->shape[0] == n0 && (rank < 2 || x->shape[1] == n1);
}

/* The index of the first element of x (f32) that is not a finite
 * number, or -1. */
static int64_t
first_not_finite(const pasco_tensor *x)
{
	const float *f = x->data;
	for (int64_t i = 0; i < x->count; i++) {
		if (!isfinite(f[i])) {
			return i;
		}
	}
	return -1;
}

/* Values, slots and slot starts must be finite numbers: a NaN imported
 * would spread through every update of its row. */
static int
finite_check(const pasci_dyn_state *s, const pasci_opt_desc *d, char *err,
    size_t errlen)
{
	int64_t at = first_not_finite(s->values);
	if (at >= 0) {
		pasci_fmt(err, errlen,
		    "the row of key %lld has a value that is not a finite "
		    "number (%g)",
		    (long long) ((const int64_t *)
		                     s->keys->data)[at / s->values->shape[1]],
		    (double) ((const float *) s->values->data)[at]);
		return PASCO_EINVAL;
	}
	for (int k = 0; d != NULL && k < d->nslots; k++) {
		if ((s->slot[k] != NULL &&
		        first_not_finite(s->slot[k]) >= 0) ||
		    !isfinite(s->slot_init[k])) {
			pasci_fmt(err, errlen,
			    "its %s slot %s holds a value that is not a "
			    "finite number",
			    d->title, d->slots[k]);
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

static int
import_check(const pasci_dyn_table *t, const pasci_dyn_state *s, char *err,
    size_t errlen)
{
	int64_t n =
	    s->keys != NULL && s->keys->rank == 1 ? s->keys->shape[0] : -1;
	int64_t p = s->pending_keys != NULL && s->pending_keys->rank == 1
	                ? s->pending_keys->shape[0]
	                : -1;
	bool ok   = n >= 0 && p >= 0 && is_spec(s->keys, PASCO_I64, 1, n, 0) &&
	          is_spec(s->values, PASCO_F32, 2, n, t->c.dim) &&
	          is_spec(s->last_step, PASCO_I64, 1, n, 0) &&
	          is_spec(s->pending_keys, PASCO_I64, 1, p, 0) &&
	          is_spec(s->pending_counts, PASCO_I64, 1, p, 0);
	const pasci_opt_desc *d = pasci_opt_desc_of((int) s->kind);
	for (int k = 0; ok && k < PASCI_OPT_MAX_SLOTS; k++) {
		ok = s->slot[k] == NULL ||
		     (s->kind != 0 && d != NULL && k < d->nslots &&
		         is_spec(s->slot[k], PASCO_F32, 2, n, t->c.dim));
	}
	if (!ok) {
		pasci_fmt(err, errlen,
		    "a dynamic table's state must have i64 keys [n], f32 "
		    "values and slots [n, %lld], i64 steps [n] and i64 "
		    "pending "
		    "keys and counts [p]",
		    (long long) t->c.dim);
		return PASCO_EINVAL;
	}
	if (s->kind != 0 && d == NULL) {
		pasci_fmt(err, errlen,
		    "the state's slots are of unknown optimizer kind %d",
		    (int) s->kind);
		return PASCO_EINVAL;
	}
	if (s->kind != 0 && t->kind != 0 && s->kind != t->kind) {
		pasci_fmt(err, errlen,
		    "the table has %s slots; the state has %s slots",
		    pasci_opt_desc_of((int) t->kind)->title, d->title);
		return PASCO_EINVAL;
	}
	return finite_check(s, d, err, errlen);
}

/* Row r's slots set from row i of the state (slots made for its chunk
 * when the state has them). */
static int
import_slots(pasci_dyn_table *t, const pasci_dyn_state *s, uint32_t r,
    int64_t i, char *err, size_t errlen)
{
	dyn_chunk *c   = chunk_of(t, r);
	size_t     off = (size_t) (r % t->crows) * (size_t) t->c.dim;
	for (int k = 0; k < t->nslots; k++) {
		if (s->slot[k] == NULL) {
			continue;
		}
		if (c->slots.slot[k] == NULL) {
			float *f;
			if (pasci_dyn_charge(t, c->value->nbytes) != 0) {
				pasci_budget_explain(t->budget,
				    c->value->nbytes, err, errlen,
				    "a slot of a chunk of %u rows", t->crows);
				return PASCO_ENOMEM;
			}
			if (pasco_tensor_alloc(&c->slots.slot[k], PASCO_F32, 2,
			        (int64_t[]){t->crows, t->c.dim}) != 0) {
				pasci_dyn_uncharge(t, c->value->nbytes);
				pasci_fmt(err, errlen,
				    "out of memory making a slot of a chunk "
				    "of %u rows",
				    t->crows);
				return PASCO_ENOMEM;
			}
			f = c->slots.slot[k]->data;
			for (int64_t j = 0; j < t->crows * t->c.dim; j++) {
				f[j] = (float) t->slot_init[k];
			}
			c->slots.kind   = t->kind;
			c->slots.nslots = t->nslots;
		}
		memcpy((float *) c->slots.slot[k]->data + off,
		    (const float *) s->slot[k]->data + i * t->c.dim,
		    sizeof(float) * (size_t) t->c.dim);
	}
	c->slots.step = t->applies;
	return PASCO_OK;
}

/* *to += n, held at the int64 limits: a state's totals are as sent (a
 * fuzzed import's overflowed; fuzz/regressions/ps_handler). */
static void
add_count(int64_t *to, int64_t n)
{
	if (__builtin_add_overflow(*to, n, to)) {
		*to = n > 0 ? INT64_MAX : INT64_MIN;
	}
}

/* The state's pending counts of the keys kept, into t's map: at most
 * PENDING_MAX keys (as admit keeps), and none past the budget (a key
 * left out counts again from its next lookup: nothing is lost). */
static void
import_pending(pasci_dyn_table *t, const pasci_dyn_state *s,
    bool (*keep)(void *arg, uint64_t key), void          *arg)
{
	for (int64_t i = 0; i < s->pending_keys->shape[0]; i++) {
		uint64_t key =
		    (uint64_t) ((const int64_t *) s->pending_keys->data)[i];
		int64_t cnt = ((const int64_t *) s->pending_counts->data)[i];
		if (key == PAD_KEY || (keep != NULL && !keep(arg, key)) ||
		    cnt <= 0 || pasci_dyn_map_get(&t->rows, key) != NO_ROW) {
			continue;
		}
		if ((t->pending.n >= PENDING_MAX &&
		        pasci_dyn_map_get(&t->pending, key) == NO_ROW) ||
		    pasci_dyn_map_set(t, &t->pending, key,
		        cnt >= (int64_t) 1 << 31 ? (uint32_t) 1 << 31
		                                 : (uint32_t) cnt) != 0) {
			return;
		}
	}
}

int
pasci_dyn_import(pasci_dyn_table *t, const pasci_dyn_state *s,
    bool (*keep)(void *arg, uint64_t key), void *arg, bool replace, char *err,
    size_t errlen)
{
	char    why[512] = "";
	int64_t n, i;
	int     rv;
	pthread_mutex_lock(&t->mu);
	if ((rv = import_check(t, s, err, errlen)) != 0) {
		pthread_mutex_unlock(&t->mu);
		return rv;
	}
	if (replace) { /* only once the state is known to be good */
		pasci_dyn_table_empty(t);
	}
	if (s->kind != 0 && t->kind == 0) {
		t->kind   = s->kind;
		t->nslots = s->nslots;
		memcpy(t->slot_init, s->slot_init, sizeof(t->slot_init));
	}
	t->applies = s->applies > t->applies ? s->applies : t->applies;
	t->st.step = s->stats.step > t->st.step ? s->stats.step : t->st.step;
	n          = s->keys->shape[0];
	/* the state lists rows most recent first: imported in reverse, so
	 * the recency order survives */
	for (i = n - 1; i >= 0 && rv == 0; i--) {
		uint64_t key = (uint64_t) ((const int64_t *) s->keys->data)[i];
		uint32_t r;
		if (key == PAD_KEY || (keep != NULL && !keep(arg, key))) {
			continue;
		}
		if ((r = pasci_dyn_map_get(&t->rows, key)) == NO_ROW) {
			if ((rv = pasci_dyn_row_make(
			         t, key, &r, why, sizeof(why))) != 0) {
				break;
			}
			if (keep == NULL) { /* counted in the state's totals */
				t->st.created--;
			}
		} else {
			pasci_dyn_touch(t, r);
		}
		memcpy(row_data(t, r),
		    (const float *) s->values->data + i * t->c.dim,
		    sizeof(float) * (size_t) t->c.dim);
		LINK(t, r, last) = ((const int64_t *) s->last_step->data)[i];
		rv               = import_slots(t, s, r, i, why, sizeof(why));
	}
	if (rv == 0) {
		import_pending(t, s, keep, arg);
	}
	if (keep == NULL) {
		add_count(&t->st.created, s->stats.created);
		add_count(&t->st.evicted_age, s->stats.evicted_age);
		add_count(&t->st.evicted_cap, s->stats.evicted_cap);
		add_count(&t->st.refused, s->stats.refused);
	}
	t->st.pending = (int64_t) t->pending.n;
	pthread_mutex_unlock(&t->mu);
	if (rv != 0) {
		pasci_fmt(err, errlen, "restoring its rows: %s", why);
	}
	return rv;
}

/* --- the set of tables --- */

#define SET_BUCKETS 64

typedef struct set_entry {
	char             *name;
	pasci_dyn_table  *t;
	struct set_entry *next;
} set_entry;

struct pasci_dyn_set {
	pthread_rwlock_t lock;
	set_entry       *buckets[SET_BUCKETS];
	pasci_budget    *budget;        /* the ps's, or own (immutable) */
	pasci_budget     own;           /* the budget of a set given none */
	size_t           max_var_bytes; /* a table's rows at most */
};

/* The bytes a table named name is charged before its rows. */
static size_t
table_cost(const char *name)
{
	return sizeof(set_entry) + sizeof(pasci_dyn_table) +
	       2 * (strlen(name) + 1);
}

static size_t
name_bucket(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	while (*s) {
		h = (h ^ (uint8_t) *s++) * 1099511628211ULL;
	}
	return (size_t) (h % SET_BUCKETS);
}

int
pasci_dyn_set_create_with(
    pasci_dyn_set **out, pasci_budget *budget, size_t max_var_bytes)
{
	pasci_dyn_set *s = pasci_calloc(1, sizeof(*s));
	*out             = s;
	if (s == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_rwlock_init(&s->lock, NULL);
	pasci_budget_init(&s->own, SIZE_MAX);
	s->budget        = budget != NULL ? budget : &s->own;
	s->max_var_bytes = max_var_bytes;
	return PASCO_OK;
}

int
pasci_dyn_set_create(pasci_dyn_set **out)
{
	return pasci_dyn_set_create_with(out, NULL, SIZE_MAX);
}

void
pasci_dyn_set_destroy(pasci_dyn_set *s)
{
	if (s == NULL) {
		return;
	}
	for (int i = 0; i < SET_BUCKETS; i++) {
		for (set_entry *e = s->buckets[i], *next; e != NULL;
		     e            = next) {
			next = e->next;
			pasci_dyn_table_free(e->t); /* its rows given back */
			pasci_budget_release(s->budget, table_cost(e->name));
			free(e->name);
			free(e);
		}
	}
	pthread_rwlock_destroy(&s->lock);
	free(s);
}

static set_entry *
find_locked(pasci_dyn_set *s, const char *name)
{
	set_entry *e = s->buckets[name_bucket(name)];
	while (e != NULL && strcmp(e->name, name) != 0) {
		e = e->next;
	}
	return e;
}

pasci_dyn_table *
pasci_dyn_find(pasci_dyn_set *s, const char *name)
{
	set_entry *e;
	pthread_rwlock_rdlock(&s->lock);
	e = find_locked(s, name);
	pthread_rwlock_unlock(&s->lock);
	return e != NULL ? e->t : NULL;
}

static bool
same_config(const pasci_dyn_config *a, const pasci_dyn_config *b)
{
	return a->dim == b->dim && a->min_count == b->min_count &&
	       a->evict_after == b->evict_after &&
	       a->max_rows == b->max_rows &&
	       a->default_zeros == b->default_zeros &&
	       memcmp(&a->init, &b->init, sizeof(a->init)) == 0;
}

int
pasci_dyn_add(pasci_dyn_set *s, const char *name, const pasci_dyn_config *c,
    char *err, size_t errlen)
{
	set_entry *e;
	int        rv = pasci_dyn_config_check(c, err, errlen);
	if (rv != 0) {
		return rv;
	}
	pthread_rwlock_wrlock(&s->lock);
	if ((e = find_locked(s, name)) != NULL) {
		rv = same_config(&e->t->c, c) ? PASCO_OK : PASCO_EEXIST;
		if (rv != 0) {
			pasci_fmt(err, errlen,
			    "dynamic table '%s' exists with dim %lld, "
			    "min_count %lld, evict_after %lld, max_rows %lld; "
			    "asked for dim %lld, %lld, %lld, %lld (or another "
			    "initializer or default)",
			    name, (long long) e->t->c.dim,
			    (long long) e->t->c.min_count,
			    (long long) e->t->c.evict_after,
			    (long long) e->t->c.max_rows, (long long) c->dim,
			    (long long) c->min_count,
			    (long long) c->evict_after,
			    (long long) c->max_rows);
		}
	} else if (pasci_budget_charge(s->budget, table_cost(name)) != 0) {
		pasci_budget_explain(s->budget, table_cost(name), err, errlen,
		    "create dynamic table '%s'", name);
		rv = PASCO_ENOMEM;
	} else if ((e = pasci_calloc(1, sizeof(*e))) == NULL ||
	           (e->name = strdup(name)) == NULL ||
	           pasci_dyn_table_new(
	               &e->t, name, c, s->budget, s->max_var_bytes) != 0) {
		if (e != NULL) {
			free(e->name);
			free(e);
		}
		pasci_budget_release(s->budget, table_cost(name));
		pasci_fmt(err, errlen,
		    "out of memory creating dynamic table "
		    "'%s'",
		    name);
		rv = PASCO_ENOMEM;
	} else {
		size_t b      = name_bucket(name);
		e->next       = s->buckets[b];
		s->buckets[b] = e;
	}
	pthread_rwlock_unlock(&s->lock);
	return rv;
}

int
pasci_dyn_each(pasci_dyn_set *s,
    int (*fn)(void *arg, const char *name, pasci_dyn_table *t), void *arg)
{
	int rv = 0;
	pthread_rwlock_rdlock(&s->lock);
	for (int i = 0; i < SET_BUCKETS && rv == 0; i++) {
		for (set_entry *e = s->buckets[i]; e != NULL && rv == 0;
		     e            = e->next) {
			rv = fn(arg, e->name, e->t);
		}
	}
	pthread_rwlock_unlock(&s->lock);
	return rv;
}
