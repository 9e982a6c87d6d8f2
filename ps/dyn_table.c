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
 */
#include "dyn_table_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

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

/* Room for one more entry (the map grows at 70%). */
static int
map_reserve(key_map *m)
{
	map_entry *old  = m->e;
	size_t     ocap = m->cap, ncap;
	if ((m->n + 1) * 10 <= m->cap * 7) {
		return PASCO_OK;
	}
	ncap = ocap == 0 ? 64 : ocap * 2;
	if ((m->e = malloc(ncap * sizeof(*m->e))) == NULL) {
		m->e = old;
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
pasci_dyn_map_set(key_map *m, uint64_t key, uint32_t val)
{
	int rv = map_reserve(m);
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
map_clear(key_map *m)
{
	free(m->e);
	*m = (key_map){0};
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

static int
chunk_add(pasci_dyn_table *t)
{
	dyn_chunk *c;
	if (t->nchunks == t->chunk_cap) {
		size_t      ncap = t->chunk_cap == 0 ? 8 : t->chunk_cap * 2;
		dyn_chunk **p    = realloc(t->chunks, ncap * sizeof(*p));
		if (p == NULL) {
			return PASCO_ENOMEM;
		}
		t->chunks    = p;
		t->chunk_cap = ncap;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    pasco_tensor_alloc(&c->value, PASCO_F32, 2,
	        (int64_t[]){t->crows, t->c.dim}) != 0) {
		free(c);
		return PASCO_ENOMEM;
	}
	c->stamp                = -1;
	t->chunks[t->nchunks++] = c;
	return PASCO_OK;
}

/* A row for key: a freed one, else a new one (evicting the least recent
 * at the cap); its values from the initializer, its slots at their start. */
int
pasci_dyn_row_make(pasci_dyn_table *t, uint64_t key, uint32_t *out)
{
	uint32_t   r;
	dyn_chunk *c;
	int        rv;
	if (t->c.max_rows > 0 && t->st.rows >= t->c.max_rows &&
	    t->tail != NO_ROW) {
		row_free(t, t->tail);
		t->st.evicted_cap++;
	}
	if ((rv = map_reserve(&t->rows)) != 0) {
		return rv;
	}
	if (t->free_head != NO_ROW) {
		r            = t->free_head;
		t->free_head = LINK(t, r, next);
	} else {
		if (t->nrows_made == t->nchunks * t->crows &&
		    (rv = chunk_add(t)) != 0) {
			return rv;
		}
		r = t->nrows_made++;
	}
	c                    = chunk_of(t, r);
	c->key[r % t->crows] = key;
	pasci_initializer_fill_key(&t->c.init, key, row_data(t, r), t->c.dim);
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
	LINK(t, r, last) = t->st.step;
	t->st.rows++;
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
		pasci_initializer_fill_key(&t->c.init, key, out, t->c.dim);
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
		map_clear(&t->pending);
	}
	if (pasci_dyn_map_set(&t->pending, key, n) != 0) {
		map_clear(
		    &t->pending); /* counting restarts; nothing is lost */
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
	if (pasci_initializer_fill_key(&c->init, 0, &probe, 1) != 0) {
		pasci_fmt(err, errlen,
		    "a dynamic table's initializer must be zeros, ones, "
		    "constant, uniform, normal or truncated normal (kind %d "
		    "is not; Glorot needs a fixed row count)",
		    (int) c->init.kind);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

int
pasci_dyn_table_new(pasci_dyn_table **out, const pasci_dyn_config *c)
{
	pasci_dyn_table *t = calloc(1, sizeof(*t));
	*out               = t;
	if (t == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_mutex_init(&t->mu, NULL);
	t->c = *c;
	t->crows =
	    (uint32_t) (CHUNK_BYTES / (c->dim * (int64_t) sizeof(float)));
	t->crows     = t->crows < 1            ? 1
	               : t->crows > CHUNK_ROWS ? CHUNK_ROWS
	                                       : t->crows;
	t->free_head = t->head = t->tail = NO_ROW;
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
	map_clear(&t->rows);
	map_clear(&t->pending);
	t->chunks  = NULL;
	t->nchunks = t->chunk_cap = 0;
	t->nrows_made             = 0;
	t->free_head = t->head = t->tail = NO_ROW;
	t->kind                          = 0;
	t->nslots                        = 0;
	t->applies                       = 0;
	memset(&t->st, 0, sizeof(t->st));
	memset(t->slot_init, 0, sizeof(t->slot_init));
}

void
pasci_dyn_table_free(pasci_dyn_table *t)
{
	pasci_dyn_table_empty(t);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

void
pasci_dyn_clear(pasci_dyn_table *t)
{
	pthread_mutex_lock(&t->mu);
	pasci_dyn_table_empty(t);
	pthread_mutex_unlock(&t->mu);
}

int
pasci_dyn_lookup(pasci_dyn_table *t, const int64_t *keys, int64_t n,
    bool insert, float *out, char *err, size_t errlen)
{
	int rv = PASCO_OK;
	pthread_mutex_lock(&t->mu);
	for (int64_t i = 0; i < n && rv == 0; i++) {
		uint64_t key = (uint64_t) keys[i];
		float   *dst = out + (size_t) i * (size_t) t->c.dim;
		uint32_t r;
		if (i + PREFETCH_KEYS < n &&
		    t->rows.cap > 0) { /* a miss each */
			__builtin_prefetch(&t->rows.e[map_slot(
			    &t->rows, (uint64_t) keys[i + PREFETCH_KEYS])]);
		}
		r = pasci_dyn_map_get(&t->rows, key);
		if (r != NO_ROW && insert) {
			pasci_dyn_touch(t, r);
		} else if (r == NO_ROW && insert && admit(t, key)) {
			if ((rv = pasci_dyn_row_make(t, key, &r)) != 0) {
				pasci_fmt(err, errlen,
				    "out of memory making a row for key %llu "
				    "(%lld rows held)",
				    (unsigned long long) key,
				    (long long) t->st.rows);
			}
		} else if (r == NO_ROW && insert) {
			t->st.refused++;
		}
		if (rv == 0 && r != NO_ROW) {
			memcpy(dst, row_data(t, r),
			    sizeof(float) * (size_t) t->c.dim);
		} else if (rv == 0) {
			default_row(t, key, dst);
		}
	}
	t->st.pending = (int64_t) t->pending.n;
	pthread_mutex_unlock(&t->mu);
	return rv;
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
		if (r == NO_ROW || (c = chunk_of(t, r))->stamp == t->applies) {
			continue;
		}
		if ((rv = pasci_slots_prepare(
		         &c->slots, opt, c->value, err, errlen)) != 0) {
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
	int rv;
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
	rv         = prepare_chunks(
	            t, opt, keys, n, step > 0 ? step : t->applies, err, errlen);
	if (rv == 0) { /* rows made from now on start their slots as the
		        * chunks prepare_chunks made did: this optimizer's */
		t->kind   = opt->kind;
		t->nslots = pasci_opt_desc_of((int) opt->kind)->nslots;
		for (int k = 0; k < t->nslots; k++) {
			t->slot_init[k] = pasci_slot_init_value(opt, k);
		}
	}
	for (int64_t i = 0; i < n && rv == 0; i++) {
		uint32_t r = pasci_dyn_map_get(&t->rows, (uint64_t) keys[i]);
		if (r != NO_ROW) {
			dyn_chunk *c = chunk_of(t, r);
			pasci_optimizer_apply_row(opt, &c->slots, c->value,
			    r % t->crows, t->c.dim, grad, i);
			pasci_dyn_touch(t, r);
		}
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
