/*
 * Dynamic embedding tables (dyn_table.h).
 *
 * Rows live in chunks of CHUNK_ROWS: each chunk is a small fixed variable
 * (a [CHUNK_ROWS, dim] tensor with its own ps_slots, so the optimizers'
 * row kernels run on it unchanged) plus each row's key, last step and
 * links in the table's recency list. Row r is row r % CHUNK_ROWS of chunk
 * r / CHUNK_ROWS; a row freed by eviction is reused before a new chunk is
 * made, so memory follows the peak row count, not the keys ever seen.
 *
 * Keys find rows through an open-addressing map (linear probing, deletion
 * by backward shift: no tombstones), kept at most 70% full. Keys waiting
 * for admission are counted in a second map of the same kind; when it
 * reaches PENDING_MAX entries it is cleared (every waiting key starts
 * counting again), so counting rare keys cannot grow without bound.
 */
#include "dyn_table.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define CHUNK_ROWS 1024
#define NO_ROW UINT32_MAX
#define PENDING_MAX ((size_t) 1 << 22)
#define MAX_DIM ((int64_t) 1 << 20)

typedef struct map_entry {
	uint64_t key;
	uint32_t val; /* NO_ROW: empty */
	uint32_t pad;
} map_entry;

typedef struct key_map {
	map_entry *e;
	size_t     cap, n; /* cap: a power of two, or 0 */
} key_map;

typedef struct dyn_chunk {
	pasco_tensor *value; /* [CHUNK_ROWS, dim] */
	ps_slots      slots;
	int64_t       stamp; /* the apply that last prepared its slots */
	uint64_t      key[CHUNK_ROWS];
	int64_t       last[CHUNK_ROWS];
	uint32_t      prev[CHUNK_ROWS], next[CHUNK_ROWS];
} dyn_chunk;

struct pasci_dyn_table {
	pthread_mutex_t  mu;
	pasci_dyn_config c;
	key_map          rows, pending;
	dyn_chunk      **chunks;
	size_t           nchunks, chunk_cap;
	uint32_t nrows_made; /* rows ever handed out (< nchunks * CHUNK) */
	uint32_t free_head;  /* freed rows, linked by next */
	uint32_t head, tail; /* recency: head most recent */
	pasco_optimizer_kind kind;
	int                  nslots;
	double               slot_init[PASCI_OPT_MAX_SLOTS];
	int64_t              applies;
	pasci_dyn_stats      st;
};

/* --- the key maps --- */

static size_t
map_slot(const key_map *m, uint64_t key)
{
	return (size_t) pasci_mix64(key) & (m->cap - 1);
}

static uint32_t
map_get(const key_map *m, uint64_t key)
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

static int
map_set(key_map *m, uint64_t key, uint32_t val)
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

static dyn_chunk *
chunk_of(const pasci_dyn_table *t, uint32_t r)
{
	return t->chunks[r / CHUNK_ROWS];
}

static float *
row_data(const pasci_dyn_table *t, uint32_t r)
{
	return (float *) chunk_of(t, r)->value->data +
	       (size_t) (r % CHUNK_ROWS) * (size_t) t->c.dim;
}

#define LINK(t, r, f) (chunk_of(t, r)->f[(r) % CHUNK_ROWS])

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

static void
touch(pasci_dyn_table *t, uint32_t r)
{
	LINK(t, r, last) = t->st.step;
	if (t->head != r) {
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
	        (int64_t[]){CHUNK_ROWS, t->c.dim}) != 0) {
		free(c);
		return PASCO_ENOMEM;
	}
	c->stamp                = -1;
	t->chunks[t->nchunks++] = c;
	return PASCO_OK;
}

/* A row for key: a freed one, else a new one (evicting the least recent
 * at the cap); its values from the initializer, its slots at their start. */
static int
row_make(pasci_dyn_table *t, uint64_t key, uint32_t *out)
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
		if (t->nrows_made == t->nchunks * CHUNK_ROWS &&
		    (rv = chunk_add(t)) != 0) {
			return rv;
		}
		r = t->nrows_made++;
	}
	c                      = chunk_of(t, r);
	c->key[r % CHUNK_ROWS] = key;
	pasci_initializer_fill_key(&t->c.init, key, row_data(t, r), t->c.dim);
	for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
		if (c->slots.slot[k] != NULL) {
			float *s =
			    (float *) c->slots.slot[k]->data +
			    (size_t) (r % CHUNK_ROWS) * (size_t) t->c.dim;
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
	n = map_get(&t->pending, key);
	n = n == NO_ROW ? 1 : n + 1;
	if ((int64_t) n >= t->c.min_count) {
		map_del(&t->pending, key);
		return true;
	}
	if (t->pending.n >= PENDING_MAX &&
	    map_get(&t->pending, key) == NO_ROW) {
		map_clear(&t->pending);
	}
	if (map_set(&t->pending, key, n) != 0) {
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
	    c->max_rows >= (int64_t) NO_ROW) {
		pasci_fmt(err, errlen,
		    "a dynamic table's min_count, evict_after and max_rows "
		    "must "
		    "be >= 0 (max_rows below 2^32 - 1), got %lld, %lld, %lld",
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

static int
table_new(pasci_dyn_table **out, const pasci_dyn_config *c)
{
	pasci_dyn_table *t = calloc(1, sizeof(*t));
	*out               = t;
	if (t == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_mutex_init(&t->mu, NULL);
	t->c         = *c;
	t->free_head = t->head = t->tail = NO_ROW;
	return PASCO_OK;
}

static void
table_free(pasci_dyn_table *t)
{
	for (size_t i = 0; i < t->nchunks; i++) {
		pasco_tensor_release(t->chunks[i]->value);
		pasci_slots_fini(&t->chunks[i]->slots);
		free(t->chunks[i]);
	}
	free(t->chunks);
	map_clear(&t->rows);
	map_clear(&t->pending);
	pthread_mutex_destroy(&t->mu);
	free(t);
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
		uint32_t r   = map_get(&t->rows, key);
		if (r != NO_ROW && insert) {
			touch(t, r);
		} else if (r == NO_ROW && insert && admit(t, key)) {
			if ((rv = row_make(t, key, &r)) != 0) {
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
		uint32_t   r = map_get(&t->rows, (uint64_t) keys[i]);
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
	t->applies++;
	t->st.step = step > 0 ? (step > t->st.step ? step : t->st.step)
	                      : t->st.step + 1;
	rv         = prepare_chunks(
	            t, opt, keys, n, step > 0 ? step : t->applies, err, errlen);
	if (rv == 0 && t->kind == 0) {
		t->kind   = opt->kind;
		t->nslots = pasci_opt_desc_of((int) opt->kind)->nslots;
		for (int k = 0; k < t->nslots; k++) {
			t->slot_init[k] = pasci_slot_init_value(opt, k);
		}
	}
	for (int64_t i = 0; i < n && rv == 0; i++) {
		uint32_t r = map_get(&t->rows, (uint64_t) keys[i]);
		if (r != NO_ROW) {
			dyn_chunk *c = chunk_of(t, r);
			pasci_optimizer_apply_row(opt, &c->slots, c->value,
			    r % CHUNK_ROWS, t->c.dim, grad, i);
			touch(t, r);
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
	if ((rv = export_alloc(t, s)) != 0) {
		pthread_mutex_unlock(&t->mu);
		pasci_dyn_state_fini(s);
		return rv;
	}
	for (uint32_t r = t->head; r != NO_ROW; r = LINK(t, r, next), i++) {
		dyn_chunk *c = chunk_of(t, r);
		((int64_t *) s->keys->data)[i] =
		    (int64_t) c->key[r % CHUNK_ROWS];
		((int64_t *) s->last_step->data)[i] = c->last[r % CHUNK_ROWS];
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
				        (size_t) (r % CHUNK_ROWS) *
				            (size_t) dim,
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
	if (s->kind != 0 && t->kind != 0 && s->kind != t->kind) {
		pasci_fmt(err, errlen,
		    "the table has %s slots; the state has %s slots",
		    pasci_opt_desc_of((int) t->kind)->title, d->title);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

/* Row r's slots set from row i of the state (slots made for its chunk
 * when the state has them). */
static int
import_slots(
    pasci_dyn_table *t, const pasci_dyn_state *s, uint32_t r, int64_t i)
{
	dyn_chunk *c   = chunk_of(t, r);
	size_t     off = (size_t) (r % CHUNK_ROWS) * (size_t) t->c.dim;
	for (int k = 0; k < t->nslots; k++) {
		if (s->slot[k] == NULL) {
			continue;
		}
		if (c->slots.slot[k] == NULL) {
			float *f;
			if (pasco_tensor_alloc(&c->slots.slot[k], PASCO_F32, 2,
			        (int64_t[]){CHUNK_ROWS, t->c.dim}) != 0) {
				return PASCO_ENOMEM;
			}
			f = c->slots.slot[k]->data;
			for (int64_t j = 0; j < CHUNK_ROWS * t->c.dim; j++) {
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

int
pasci_dyn_import(pasci_dyn_table *t, const pasci_dyn_state *s,
    bool (*keep)(void *arg, uint64_t key), void *arg, char *err, size_t errlen)
{
	int64_t n, i;
	int     rv;
	pthread_mutex_lock(&t->mu);
	if ((rv = import_check(t, s, err, errlen)) != 0) {
		pthread_mutex_unlock(&t->mu);
		return rv;
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
		if (keep != NULL && !keep(arg, key)) {
			continue;
		}
		if ((r = map_get(&t->rows, key)) == NO_ROW) {
			if ((rv = row_make(t, key, &r)) != 0) {
				break;
			}
			if (keep == NULL) { /* counted in the state's totals */
				t->st.created--;
			}
		} else {
			touch(t, r);
		}
		memcpy(row_data(t, r),
		    (const float *) s->values->data + i * t->c.dim,
		    sizeof(float) * (size_t) t->c.dim);
		LINK(t, r, last) = ((const int64_t *) s->last_step->data)[i];
		rv               = import_slots(t, s, r, i);
	}
	for (i = 0; rv == 0 && i < s->pending_keys->shape[0]; i++) {
		uint64_t key =
		    (uint64_t) ((const int64_t *) s->pending_keys->data)[i];
		int64_t cnt = ((const int64_t *) s->pending_counts->data)[i];
		if ((keep == NULL || keep(arg, key)) && cnt > 0 &&
		    map_get(&t->rows, key) == NO_ROW) {
			rv = map_set(&t->pending, key,
			    cnt >= (int64_t) NO_ROW ? NO_ROW - 1
			                            : (uint32_t) cnt);
		}
	}
	if (keep == NULL) {
		t->st.created += s->stats.created;
		t->st.evicted_age += s->stats.evicted_age;
		t->st.evicted_cap += s->stats.evicted_cap;
		t->st.refused += s->stats.refused;
	}
	t->st.pending = (int64_t) t->pending.n;
	pthread_mutex_unlock(&t->mu);
	if (rv != 0) {
		pasci_fmt(
		    err, errlen, "out of memory restoring a dynamic table");
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
};

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
pasci_dyn_set_create(pasci_dyn_set **out)
{
	pasci_dyn_set *s = calloc(1, sizeof(*s));
	*out             = s;
	if (s == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_rwlock_init(&s->lock, NULL);
	return PASCO_OK;
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
			table_free(e->t);
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
	} else if ((e = calloc(1, sizeof(*e))) == NULL ||
	           (e->name = strdup(name)) == NULL ||
	           table_new(&e->t, c) != 0) {
		if (e != NULL) {
			free(e->t);
			free(e->name);
			free(e);
		}
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
