/*
 * Dynamic embedding tables (dyn_table.h).
 *
 * Rows live in chunks of t->crows rows (about CHUNK_BYTES of values, at
 * most CHUNK_ROWS): each chunk is a small fixed variable (a [crows, dim]
 * tensor with its own ps_slots, so the optimizers' row kernels run on it
 * unchanged) plus each row's key, last step and links in the table's
 * recency list. Row r is row r % crows of chunk r / crows; a row freed by
 * eviction is reused before a new chunk is made, so memory follows the peak
 * row count, not the keys ever seen.
 *
 * Keys find rows through an open-addressing map (linear probing, deletion
 * by backward shift: no tombstones), kept at most 70% full. Keys waiting
 * for admission are counted in a second map of the same kind; when it
 * reaches PENDING_MAX entries it is cleared (every waiting key starts
 * counting again), so counting rare keys cannot grow without bound.
 *
 * Memory: chunks (values and slots), the chunk array and both maps are
 * charged to the ps's budget (budget.h) before they are allocated; only
 * emptying the table (a restore) gives them back, since a freed row stays
 * in its chunk for the next. A row that cannot be made (past the budget
 * or the limit per variable) is refused: its key reads the default, as a
 * key waiting for admission does, and the ps says so in its log.
 */
#include "dyn_table_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics_registry.h"
#include "pasco/hash.h"
#include "util.h"

size_t pasci_dyn_pending_max = (size_t) 1 << 22;

/* How often at most a table logs that it refused rows. */
#define WARN_EVERY_MS 10000

/* How far ahead a lookup asks the cache for a key's map slot. */
#define PREFETCH_KEYS 8

/* --- the key maps --- */

static size_t
map_slot(const key_map *m, uint64_t key)
{
	return (size_t) pasci_mix64(key) & (m->cap - 1);
}

uint32_t
pasci_dyn_map_get(const key_map *m, uint64_t key)
{
	if (m->cap == 0) {
		return NO_ROW;
	}
	for (size_t i = map_slot(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->e[i].val == NO_ROW) {
			return NO_ROW;
		}
		if (m->e[i].key == key) {
			return m->e[i].val;
		}
	}
}

static void
map_put_new(key_map *m, uint64_t key, uint32_t val)
{
	size_t i = map_slot(m, key);
	while (m->e[i].val != NO_ROW && m->e[i].key != key) {
		i = (i + 1) & (m->cap - 1);
	}
	m->n += m->e[i].val == NO_ROW;
	m->e[i] = (map_entry){key, val, 0};
}

int
pasci_dyn_charge(pasci_dyn_table *t, size_t bytes)
{
	if (pasci_budget_charge(t->budget, bytes) != 0) {
		return PASCO_ENOMEM;
	}
	t->charged += bytes;
	return PASCO_OK;
}

void
pasci_dyn_uncharge(pasci_dyn_table *t, size_t bytes)
{
	pasci_budget_release(t->budget, bytes);
	t->charged -= bytes;
}

/* Room for one more entry in t's map m (the map grows at 70%, charged to
 * the budget): PASCO_ENOMEM, err says why. */
static int
map_reserve(pasci_dyn_table *t, key_map *m, char *err, size_t errlen)
{
	map_entry *old  = m->e;
	size_t     ocap = m->cap, ncap, more;
	if ((m->n + 1) * 10 <= m->cap * 7) {
		return PASCO_OK;
	}
	ncap = ocap == 0 ? 64 : ocap * 2;
	more = (ncap - ocap) * sizeof(*m->e);
	if (pasci_dyn_charge(t, more) != 0) {
		pasci_budget_explain(t->budget, more, err, errlen,
		    "growing a key map to %zu entries", ncap);
		return PASCO_ENOMEM;
	}
	if ((m->e = malloc(ncap * sizeof(*m->e))) == NULL) {
		m->e = old;
		pasci_dyn_uncharge(t, more);
		pasci_fmt(err, errlen,
		    "out of memory growing a key map to %zu entries", ncap);
		return PASCO_ENOMEM;
	}
	for (size_t i = 0; i < ncap; i++) {
		m->e[i].val = NO_ROW;
	}
	m->cap = ncap;
	m->n   = 0;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].val != NO_ROW) {
			map_put_new(m, old[i].key, old[i].val);
		}
	}
	free(old);
	return PASCO_OK;
}

int
pasci_dyn_map_set(pasci_dyn_table *t, key_map *m, uint64_t key, uint32_t val)
{
	char why[256];
	int  rv = map_reserve(t, m, why, sizeof(why));
	if (rv == 0) {
		map_put_new(m, key, val);
	}
	return rv;
}

/* Removes key, shifting back the entries after it that probed past it. */
static void
map_del(key_map *m, uint64_t key)
{
	size_t i, j, mask = m->cap - 1;
	if (m->cap == 0) {
		return;
	}
	for (i = map_slot(m, key); m->e[i].key != key; i = (i + 1) & mask) {
		if (m->e[i].val == NO_ROW) {
			return;
		}
	}
	if (m->e[i].val == NO_ROW) {
		return;
	}
	for (j = (i + 1) & mask; m->e[j].val != NO_ROW; j = (j + 1) & mask) {
		size_t home = map_slot(m, m->e[j].key);
		/* e[j] may move to i unless its home lies in (i, j] */
		bool stays =
		    i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!stays) {
			m->e[i] = m->e[j];
			i       = j;
		}
	}
	m->e[i].val = NO_ROW;
	m->n--;
}

static void
map_free(key_map *m)
{
	free(m->e);
	*m = (key_map){0};
}

/* Empties t's map m, giving its bytes back. */
static void
map_clear(pasci_dyn_table *t, key_map *m)
{
	pasci_dyn_uncharge(t, m->cap * sizeof(*m->e));
	map_free(m);
}

/* --- rows and their recency list --- */

static void
lru_unlink(pasci_dyn_table *t, uint32_t r)
{
	uint32_t p = LINK(t, r, prev), n = LINK(t, r, next);
	if (p != NO_ROW) {
		LINK(t, p, next) = n;
	} else {
		t->head = n;
	}
	if (n != NO_ROW) {
		LINK(t, n, prev) = p;
	} else {
		t->tail = p;
	}
}

static void
lru_push(pasci_dyn_table *t, uint32_t r)
{
	LINK(t, r, prev) = NO_ROW;
	LINK(t, r, next) = t->head;
	if (t->head != NO_ROW) {
		LINK(t, t->head, prev) = r;
	} else {
		t->tail = r;
	}
	t->head = r;
}

void
pasci_dyn_touch(pasci_dyn_table *t, uint32_t r)
{
	LINK(t, r, last) = t->st.step;
	/* the order only matters to eviction: without a cap or an age, rows
	 * keep the order they were made in (a checkpoint's, too) */
	if (t->head != r && (t->c.max_rows > 0 || t->c.evict_after > 0)) {
		lru_unlink(t, r);
		lru_push(t, r);
	}
}

static void
row_free(pasci_dyn_table *t, uint32_t r)
{
	map_del(&t->rows, LINK(t, r, key));
	lru_unlink(t, r);
	LINK(t, r, next) = t->free_head;
	t->free_head     = r;
	t->st.rows--;
	pasci_metric_sub(PASCI_M_DYN_ROWS, 1);
}

/* Drops the rows unseen for more than evict_after steps. */
static void
evict_old(pasci_dyn_table *t)
{
	while (t->c.evict_after > 0 && t->tail != NO_ROW &&
	       t->st.step - LINK(t, t->tail, last) > t->c.evict_after) {
		row_free(t, t->tail);
		t->st.evicted_age++;
	}
}

/* Room for one more chunk in t's array, charged: PASCO_ENOMEM. */
static int
chunks_reserve(pasci_dyn_table *t, char *err, size_t errlen)
{
	size_t      ncap = t->chunk_cap == 0 ? 8 : t->chunk_cap * 2;
	size_t      more = (ncap - t->chunk_cap) * sizeof(dyn_chunk *);
	dyn_chunk **p;
	if (t->nchunks < t->chunk_cap) {
		return PASCO_OK;
	}
	if (pasci_dyn_charge(t, more) != 0) {
		pasci_budget_explain(t->budget, more, err, errlen,
		    "growing the table's chunk list");
		return PASCO_ENOMEM;
	}
	if ((p = realloc(t->chunks, ncap * sizeof(*p))) == NULL) {
		pasci_dyn_uncharge(t, more);
		pasci_fmt(err, errlen, "out of memory growing a chunk list");
		return PASCO_ENOMEM;
	}
	t->chunks    = p;
	t->chunk_cap = ncap;
	return PASCO_OK;
}

/* A new chunk of t->crows rows, with the slots of the table's optimizer
 * once it has one (so rows made after the budget is spent still train),
 * charged to the budget first: PASCO_ENOMEM, err says why. */
static int
chunk_add(pasci_dyn_table *t, char *err, size_t errlen)
{
	size_t vbytes = (size_t) t->crows * (size_t) t->c.dim * sizeof(float);
	/* pasci_slots_need reads only the value's size */
	size_t slots = t->opt.kind == 0
	                   ? 0
	                   : pasci_slots_need(&(ps_slots){0}, &t->opt,
	                         &(pasco_tensor){.nbytes = vbytes});
	size_t cost =
	    sizeof(dyn_chunk) + sizeof(pasco_tensor) + vbytes + slots;
	dyn_chunk *c;
	int        rv;
	if ((rv = chunks_reserve(t, err, errlen)) != 0) {
		return rv;
	}
	if (pasci_dyn_charge(t, cost) != 0) {
		pasci_budget_explain(t->budget, cost, err, errlen,
		    "a new chunk of %u rows%s", t->crows,
		    slots > 0 ? " with its optimizer's slots" : "");
		return PASCO_ENOMEM;
	}
	if ((c = pasci_calloc(1, sizeof(*c))) == NULL ||
	    pasco_tensor_alloc(&c->value, PASCO_F32, 2,
	        (int64_t[]){t->crows, t->c.dim}) != 0 ||
	    (slots > 0 && pasci_slots_prepare(&c->slots, &t->opt, c->value,
	                      err, errlen) != 0)) {
		if (c != NULL) {
			pasco_tensor_release(c->value);
			pasci_slots_fini(&c->slots);
		}
		free(c);
		pasci_dyn_uncharge(t, cost);
		pasci_fmt(err, errlen,
		    "out of memory making a chunk of %u rows", t->crows);
		return PASCO_ENOMEM;
	}
	c->stamp                = -1;
	t->chunks[t->nchunks++] = c;
	return PASCO_OK;
}

/* A row for key: a freed one, else a new one (evicting the least recent
 * at the cap); its values from the initializer, its slots at their start. */
int
pasci_dyn_row_make(
    pasci_dyn_table *t, uint64_t key, uint32_t *out, char *err, size_t errlen)
{
	uint32_t   r;
	dyn_chunk *c;
	int        rv;
	if (t->c.max_rows > 0 && t->st.rows >= t->c.max_rows &&
	    t->tail != NO_ROW) {
		row_free(t, t->tail);
		t->st.evicted_cap++;
	}
	if (t->st.rows >= t->row_limit) {
		pasci_fmt(err, errlen,
		    "%lld rows of %lld floats are this ps's limit per "
		    "variable (PASCO_MAX_VARIABLE_MB)",
		    (long long) t->st.rows, (long long) t->c.dim);
		return PASCO_ENOMEM;
	}
	if ((rv = map_reserve(t, &t->rows, err, errlen)) != 0) {
		return rv;
	}
	if (t->free_head != NO_ROW) {
		r            = t->free_head;
		t->free_head = LINK(t, r, next);
	} else {
		if (t->nrows_made == t->nchunks * t->crows &&
		    (rv = chunk_add(t, err, errlen)) != 0) {
			return rv;
		}
		r = t->nrows_made++;
	}
	c                    = chunk_of(t, r);
	c->key[r % t->crows] = key;
	pasci_initializer_fill_key(
	    &t->c.init, t->seed, key, row_data(t, r), t->c.dim);
	for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
		if (c->slots.slot[k] != NULL) {
			float *s = (float *) c->slots.slot[k]->data +
			           (size_t) (r % t->crows) * (size_t) t->c.dim;
			for (int64_t j = 0; j < t->c.dim; j++) {
				s[j] = (float) t->slot_init[k];
			}
		}
	}
	map_put_new(&t->rows, key, r);
	lru_push(t, r);
	LINK(t, r, last)   = t->st.step;
	LINK(t, r, dstamp) = t->decay; /* up to date: it is new */
	t->st.rows++;
	pasci_metric_add(PASCI_M_DYN_ROWS, 1);
	t->st.created++;
	*out = r;
	return PASCO_OK;
}

static void
default_row(const pasci_dyn_table *t, uint64_t key, float *out)
{
	if (t->c.default_zeros) {
		memset(out, 0, sizeof(float) * (size_t) t->c.dim);
	} else {
		pasci_initializer_fill_key(
		    &t->c.init, t->seed, key, out, t->c.dim);
	}
}

/* Counts key towards admission: whether it may have a row now. */
static bool
admit(pasci_dyn_table *t, uint64_t key)
{
	uint32_t n;
	if (t->c.min_count <= 1) {
		return true;
	}
	n = pasci_dyn_map_get(&t->pending, key);
	n = n == NO_ROW ? 1 : n + 1;
	if ((int64_t) n >= t->c.min_count) {
		map_del(&t->pending, key);
		return true;
	}
	if (t->pending.n >= PENDING_MAX &&
	    pasci_dyn_map_get(&t->pending, key) == NO_ROW) {
		map_clear(t, &t->pending);
	}
	if (pasci_dyn_map_set(t, &t->pending, key, n) != 0) {
		/* out of memory or budget: counting restarts; nothing is
		 * lost */
		map_clear(t, &t->pending);
	}
	return false;
}

/* --- the table's calls --- */

int
pasci_dyn_config_check(const pasci_dyn_config *c, char *err, size_t errlen)
{
	float probe;
	if (c->dim < 1 || c->dim > MAX_DIM) {
		pasci_fmt(err, errlen,
		    "a dynamic table's dim must be in [1, %lld], got %lld",
		    (long long) MAX_DIM, (long long) c->dim);
		return PASCO_EINVAL;
	}
	if (c->min_count < 0 || c->evict_after < 0 || c->max_rows < 0 ||
	    c->max_rows >= (int64_t) NO_ROW ||
	    c->min_count >= (int64_t) 1 << 31) {
		pasci_fmt(err, errlen,
		    "a dynamic table's min_count, evict_after and max_rows "
		    "must "
		    "be >= 0 (min_count below 2^31, max_rows below 2^32 - 1), "
		    "got %lld, %lld, %lld",
		    (long long) c->min_count, (long long) c->evict_after,
		    (long long) c->max_rows);
		return PASCO_EINVAL;
	}
	if (pasci_initializer_fill_key(&c->init, 0, 0, &probe, 1) != 0) {
		pasci_fmt(err, errlen,
		    "a dynamic table's initializer must be zeros, ones, "
		    "constant, uniform, normal or truncated normal (kind %d "
		    "is not; Glorot needs a fixed row count)",
		    (int) c->init.kind);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

uint64_t
pasci_dyn_name_seed(const char *name)
{
	return pasci_mix64((uint64_t) pasco_hash_key(name, strlen(name)));
}

int
pasci_dyn_table_new(pasci_dyn_table **out, const char *name,
    const pasci_dyn_config *c, pasci_budget *budget, size_t max_var_bytes)
{
	pasci_dyn_table *t = pasci_calloc(1, sizeof(*t));
	*out               = t;
	if (t == NULL || (t->name = pasci_strdup(name)) == NULL) {
		free(t);
		*out = NULL;
		return PASCO_ENOMEM;
	}
	pthread_mutex_init(&t->mu, NULL);
	t->c      = *c;
	t->seed   = pasci_dyn_name_seed(name);
	t->budget = budget;
	t->row_limit =
	    (int64_t) (max_var_bytes / ((size_t) c->dim * sizeof(float)));
	t->crows =
	    (uint32_t) (CHUNK_BYTES / (c->dim * (int64_t) sizeof(float)));
	t->crows     = t->crows < 1            ? 1
	               : t->crows > CHUNK_ROWS ? CHUNK_ROWS
	                                       : t->crows;
	t->free_head = t->head = t->tail = NO_ROW;
	t->decay = t->decay_next = 1;
	return PASCO_OK;
}

void
pasci_dyn_table_empty(pasci_dyn_table *t)
{
	for (size_t i = 0; i < t->nchunks; i++) {
		pasco_tensor_release(t->chunks[i]->value);
		pasci_slots_fini(&t->chunks[i]->slots);
		free(t->chunks[i]);
	}
	free(t->chunks);
	map_free(&t->rows);
	map_free(&t->pending);
	pasci_dyn_uncharge(t, t->charged);
	t->chunks  = NULL;
	t->nchunks = t->chunk_cap = 0;
	t->nrows_made             = 0;
	t->free_head = t->head = t->tail = NO_ROW;
	t->kind                          = 0;
	t->opt                           = (pasco_optimizer){0};
	t->nslots                        = 0;
	t->applies                       = 0;
	t->decay = t->decay_next = 1;
	pasci_metric_sub(PASCI_M_DYN_ROWS, (uint64_t) t->st.rows);
	memset(&t->st, 0, sizeof(t->st));
	memset(t->slot_init, 0, sizeof(t->slot_init));
}

void
pasci_dyn_table_free(pasci_dyn_table *t)
{
	pasci_dyn_table_empty(t);
	pthread_mutex_destroy(&t->mu);
	free(t->name);
	free(t);
}

void
pasci_dyn_clear(pasci_dyn_table *t)
{
	pthread_mutex_lock(&t->mu);
	pasci_dyn_table_empty(t);
	pthread_mutex_unlock(&t->mu);
}

/* Logs, at most every WARN_EVERY_MS per table, that a lookup refused
 * n new rows for why (called without the table's lock). */
static void
warn_refused(const char *name, int64_t n, int64_t total, const char *why)
{
	pasci_log(PASCI_LOG_WARN,
	    "dynamic table '%s': %lld new rows refused (%lld lookups "
	    "without a row so far): %s; their keys read the default row. "
	    "Bound the table (max_rows_per_ps, evict_after) or raise the "
	    "limit",
	    name, (long long) n, (long long) total, why);
}

int
pasci_dyn_lookup(pasci_dyn_table *t, const int64_t *keys, int64_t n,
    bool insert, float *out, char *err, size_t errlen)
{
	char    why[512] = "";
	int64_t nrefused = 0, total, now = pasci_now_ms();
	bool    warn;
	(void) err;
	(void) errlen;
	pthread_mutex_lock(&t->mu);
	for (int64_t i = 0; i < n; i++) {
		uint64_t key = (uint64_t) keys[i];
		float   *dst = out + (size_t) i * (size_t) t->c.dim;
		uint32_t r;
		if (i + PREFETCH_KEYS < n &&
		    t->rows.cap > 0) { /* a miss each */
			__builtin_prefetch(&t->rows.e[map_slot(
			    &t->rows, (uint64_t) keys[i + PREFETCH_KEYS])]);
		}
		if (key == PAD_KEY) {
			memset(dst, 0, sizeof(float) * (size_t) t->c.dim);
			continue;
		}
		r = pasci_dyn_map_get(&t->rows, key);
		if (r != NO_ROW && insert) {
			pasci_dyn_touch(t, r);
		} else if (r == NO_ROW && insert && admit(t, key) &&
		           pasci_dyn_row_make(t, key, &r, why, sizeof(why)) !=
		               0) {
			r = NO_ROW;
			nrefused++;
			t->st.refused++;
		} else if (r == NO_ROW && insert) {
			t->st.refused++;
		}
		if (r != NO_ROW) {
			pasci_dyn_row_current(t, r);
			memcpy(dst, row_data(t, r),
			    sizeof(float) * (size_t) t->c.dim);
		} else {
			default_row(t, key, dst);
		}
	}
	t->st.pending = (int64_t) t->pending.n;
	total         = t->st.refused;
	warn          = nrefused > 0 &&
	       (t->warned_ms == 0 || now - t->warned_ms >= WARN_EVERY_MS);
	if (warn) {
		t->warned_ms = now;
	}
	pthread_mutex_unlock(&t->mu);
	if (warn) {
		warn_refused(t->name, nrefused, total, why);
	}
	return PASCO_OK;
}

/* Readies the slots of every chunk the keys' rows are in, before any row
 * changes: a failure (out of memory) changes nothing. */
static int
prepare_chunks(pasci_dyn_table *t, const pasco_optimizer *opt,
    const int64_t *keys, int64_t n, int64_t adam_t, char *err, size_t errlen)
{
	for (int64_t i = 0; i < n; i++) {
		uint32_t   r = pasci_dyn_map_get(&t->rows, (uint64_t) keys[i]);
		dyn_chunk *c;
		int        rv;
		size_t     need, had;
		if (r == NO_ROW || (c = chunk_of(t, r))->stamp == t->applies) {
			continue;
		}
		need = pasci_slots_need(&c->slots, opt, c->value);
		had  = pasci_slots_bytes(&c->slots);
		if (need > 0 && pasci_dyn_charge(t, need) != 0) {
			pasci_budget_explain(t->budget, need, err, errlen,
			    "the slots of a chunk of %u rows", t->crows);
			return PASCO_ENOMEM;
		}
		rv =
		    pasci_slots_prepare(&c->slots, opt, c->value, err, errlen);
		/* what it did not allocate (all of it but on a failure) */
		pasci_dyn_uncharge(
		    t, had + need - pasci_slots_bytes(&c->slots));
		if (rv != 0) {
			return rv;
		}
		c->slots.step = adam_t;
		c->stamp      = t->applies;
	}
	return PASCO_OK;
}

int
pasci_dyn_apply(pasci_dyn_table *t, const pasco_optimizer *opt,
    const int64_t *keys, int64_t n, const pasco_tensor *grad, int64_t step,
    char *err, size_t errlen)
{
	int             rv;
	bool            decays = pasci_opt_decays(opt);
	int64_t         adam_t;
	pasco_optimizer rows_opt; /* AdamW: opt at this step (dyn_decay.c) */
	if ((rv = pasci_optimizer_check(opt, err, errlen)) != 0) {
		return rv;
	}
	if (grad->dtype != PASCO_F32 || grad->rank != 2 ||
	    grad->shape[0] != n || grad->shape[1] != t->c.dim) {
		pasci_fmt(err, errlen,
		    "a dynamic table's gradient must be f32 [%lld, %lld] for "
		    "%lld keys",
		    (long long) n, (long long) t->c.dim, (long long) n);
		return PASCO_EINVAL;
	}
	pthread_mutex_lock(&t->mu);
	if (t->kind != 0 && t->kind != opt->kind) {
		pasci_fmt(err, errlen,
		    "the table has %s slots; it cannot be updated with %s",
		    pasci_opt_desc_of((int) t->kind)->title,
		    pasci_opt_desc_of((int) opt->kind)->title);
		pthread_mutex_unlock(&t->mu);
		return PASCO_EINVAL;
	}
	t->applies += t->applies < INT64_MAX;
	t->st.step = step > 0 ? (step > t->st.step ? step : t->st.step)
	             : t->st.step < INT64_MAX ? t->st.step + 1
	                                      : INT64_MAX;
	adam_t     = step > 0 ? step : t->applies;
	rv         = prepare_chunks(t, opt, keys, n, adam_t, err, errlen);
	if (rv == 0) { /* rows made from now on start their slots as the
		        * chunks prepare_chunks made did: this optimizer's */
		t->kind           = opt->kind;
		t->opt            = *opt;
		t->opt.iterations = NULL; /* the request's: not kept */
		t->nslots         = pasci_opt_desc_of((int) opt->kind)->nslots;
		for (int k = 0; k < t->nslots; k++) {
			t->slot_init[k] = pasci_slot_init_value(opt, k);
		}
	}
	if (rv == 0 && decays) {
		pasco_optimizer at = pasci_optimizer_at(opt, adam_t);
		if (!pasci_dyn_decay_begin(t, &at, &rows_opt)) {
			/* decayed eagerly: the rows without it, at this
			 * step's rate (no schedule to evaluate again) */
			rows_opt.schedule.kind = PASCO_LR_CONSTANT;
			opt                    = &rows_opt;
		}
	}
	for (int64_t i = 0; i < n && rv == 0; i++) {
		uint32_t r = pasci_dyn_map_get(&t->rows, (uint64_t) keys[i]);
		if (r != NO_ROW) {
			dyn_chunk *c = chunk_of(t, r);
			if (decays) {
				pasci_dyn_decay_row(t, r);
			}
			pasci_optimizer_apply_row(opt, &c->slots, c->value,
			    r % t->crows, t->c.dim, grad, i);
			pasci_dyn_touch(t, r);
		}
	}
	if (rv == 0 && decays) {
		pasci_dyn_decay_end(t);
	}
	evict_old(t);
	pthread_mutex_unlock(&t->mu);
	return rv;
}

void
pasci_dyn_stats_of(pasci_dyn_table *t, pasci_dyn_stats *s)
{
	pthread_mutex_lock(&t->mu);
	t->st.pending = (int64_t) t->pending.n;
	*s            = t->st;
	pthread_mutex_unlock(&t->mu);
}

const pasci_dyn_config *
pasci_dyn_config_of(const pasci_dyn_table *t)
{
	return &t->c; /* immutable */
}
