/*
 * The worker's parsed models (model_cache.h), kept by their config's
 * bytes: an entry holds the config (to compare a lookup's bytes in full,
 * not trusting a hash) and the unbound model parsed from it. The cache is
 * bounded in entries and in bytes (PASCO_MODEL_CACHE_ENTRIES, 16;
 * PASCO_MODEL_CACHE_MB, 64), counting each entry's config, its model's
 * arrays and the entry itself, and drops the least recently used first:
 * configs padded to 60 MB each used to keep 16 of them, a worker at
 * 500 MB while idle. A list in use order under one mutex, touched by the
 * worker's handler threads. An entry is held (refs) while a thread copies
 * its model outside the lock; an entry evicted meanwhile is freed by its
 * last holder.
 */
#include "model_cache.h"

#include "model_impl.h"
#include "pasco/hash.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct cached {
	uint64_t       hash;
	size_t         len, cost;
	char          *bytes;
	pasco_model   *model;   /* unbound, never handed out */
	int            refs;    /* threads copying the model; under cache_mu */
	bool           evicted; /* out of the list; the last holder frees */
	struct cached *prev, *next;
} cached;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
/* Protected by cache_mu: the list, most recently used first, its count
 * and bytes, and the bounds (read from the environment once). */
static cached     *head, *tail;
static size_t      nentries, nbytes;
static size_t      max_entries, max_bytes;
static bool        bounds_set;
static atomic_bool warned_big; /* a config over the bound: said once */

/* A non-negative whole number from the environment, else fallback (a
 * malformed value is warned about). */
static size_t
env_size(const char *name, size_t fallback, size_t most)
{
	const char *v   = getenv(name);
	char       *end = NULL;
	long long   n   = v != NULL && *v != 0 ? strtoll(v, &end, 10) : -1;
	if (v == NULL || *v == 0) {
		return fallback;
	}
	if (*end != 0 || n < 0 || (unsigned long long) n > most) {
		pasci_log(PASCI_LOG_WARN,
		    "%s='%s' is not a whole number from 0 to %zu; using %zu",
		    name, v, most, fallback);
		return fallback;
	}
	return (size_t) n;
}

static void
cache_bounds_locked(void)
{
	if (!bounds_set) {
		max_entries = env_size("PASCO_MODEL_CACHE_ENTRIES",
		    PASCI_MODEL_CACHE_ENTRIES, 1 << 20);
		max_bytes   = env_size("PASCO_MODEL_CACHE_MB",
		                  PASCI_MODEL_CACHE_MB, 1 << 20)
		            << 20;
		bounds_set = true;
	}
}

static void
cached_free(cached *c)
{
	if (c != NULL) {
		pasco_model_free(c->model);
		free(c->bytes);
		free(c);
	}
}

static void
cache_unlink_locked(cached *c)
{
	*(c->prev != NULL ? &c->prev->next : &head) = c->next;
	*(c->next != NULL ? &c->next->prev : &tail) = c->prev;
	c->prev = c->next = NULL;
	nentries--;
	nbytes -= c->cost;
}

static void
cache_push_front_locked(cached *c)
{
	c->prev                               = NULL;
	c->next                               = head;
	*(head != NULL ? &head->prev : &tail) = c;
	head                                  = c;
	nentries++;
	nbytes += c->cost;
}

/* The entry of these bytes, or NULL. */
static cached *
cache_find_locked(uint64_t h, const void *bytes, size_t len)
{
	for (cached *c = head; c != NULL; c = c->next) {
		if (c->hash == h && c->len == len &&
		    memcmp(c->bytes, bytes, len) == 0) {
			return c;
		}
	}
	return NULL;
}

/* Unlinks least recently used entries until the cache is within its
 * bounds; those no thread holds are chained on *drop for the caller to
 * free after unlocking. */
static void
cache_evict_locked(cached **drop)
{
	while (
	    tail != NULL && (nentries > max_entries || nbytes > max_bytes)) {
		cached *c = tail;
		cache_unlink_locked(c);
		c->evicted = true;
		if (c->refs == 0) {
			c->next = *drop;
			*drop   = c;
		}
	}
}

static void
cache_free_chain(cached *c)
{
	while (c != NULL) {
		cached *next = c->next;
		cached_free(c);
		c = next;
	}
}

/* A copy of the kept model of these bytes into *out, which then is the
 * most recently used; false when none is kept. */
static bool
cache_copy(
    uint64_t h, const void *bytes, size_t len, pasco_model **out, int *rv)
{
	cached *c;
	bool    last;
	pthread_mutex_lock(&cache_mu);
	if ((c = cache_find_locked(h, bytes, len)) != NULL) {
		cache_unlink_locked(c);
		cache_push_front_locked(c);
		c->refs++;
	}
	pthread_mutex_unlock(&cache_mu);
	if (c == NULL) {
		return false;
	}
	*rv = pasci_model_clone(c->model, out);
	pthread_mutex_lock(&cache_mu);
	last = --c->refs == 0 && c->evicted;
	pthread_mutex_unlock(&cache_mu);
	if (last) {
		cached_free(c);
	}
	return true;
}

/* Keeps m (taken over) for these bytes, unless it alone is over the
 * bound, the same bytes are kept already (another thread parsed them
 * too) or memory is short: then m is freed. */
static void
cache_keep(uint64_t h, const void *bytes, size_t len, pasco_model *m)
{
	cached *c = pasci_calloc(1, sizeof(*c)), *drop = NULL;
	char   *copy = malloc(len);
	size_t  cost = sizeof(*c) + len + pasci_model_bytes(m);
	bool    kept = false;
	if (c == NULL || copy == NULL) {
		free(c);
		free(copy);
		pasco_model_free(m);
		return;
	}
	memcpy(copy, bytes, len);
	*c = (cached){
	    .hash = h, .len = len, .cost = cost, .bytes = copy, .model = m};
	pthread_mutex_lock(&cache_mu);
	cache_bounds_locked();
	if (cost <= max_bytes && max_entries > 0 &&
	    cache_find_locked(h, bytes, len) == NULL) {
		cache_push_front_locked(c);
		cache_evict_locked(&drop);
		kept = true;
	}
	pthread_mutex_unlock(&cache_mu);
	if (!kept && cost > max_bytes && max_bytes > 0 && max_entries > 0 &&
	    !atomic_exchange(&warned_big, true)) {
		pasci_log(PASCI_LOG_WARN,
		    "a model config of %zu bytes (%zu with its model) is over "
		    "the model cache's %zu MB (PASCO_MODEL_CACHE_MB): it is "
		    "parsed at every call",
		    len, cost, max_bytes >> 20);
	}
	if (!kept) {
		cached_free(c);
	}
	cache_free_chain(drop);
}

int
pasci_model_cache_get(const void *bytes, size_t len, pasco_model **out)
{
	uint64_t     h = pasco_hash64(bytes, len, 0);
	pasco_model *parsed;
	char        *json;
	int          rv = PASCO_OK;

	*out = NULL;
	if (cache_copy(h, bytes, len, out, &rv)) {
		return rv;
	}
	if ((json = malloc(len + 1)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	memcpy(json, bytes, len);
	json[len] = 0;
	rv        = pasco_model_from_json(json, &parsed);
	free(json);
	if (rv != 0) {
		return rv;
	}
	if ((rv = pasci_model_clone(parsed, out)) != 0) {
		pasco_model_free(parsed);
		return rv;
	}
	cache_keep(h, bytes, len, parsed);
	return PASCO_OK;
}

void
pasci_model_cache_stats_get(pasci_model_cache_stats *st)
{
	pthread_mutex_lock(&cache_mu);
	cache_bounds_locked();
	*st = (pasci_model_cache_stats){.entries = nentries,
	    .bytes                               = nbytes,
	    .max_entries                         = max_entries,
	    .max_bytes                           = max_bytes};
	pthread_mutex_unlock(&cache_mu);
}

bool
pasci_model_cache_holds(const void *bytes, size_t len)
{
	uint64_t h = pasco_hash64(bytes, len, 0);
	bool     held;
	pthread_mutex_lock(&cache_mu);
	held = cache_find_locked(h, bytes, len) != NULL;
	pthread_mutex_unlock(&cache_mu);
	return held;
}

void
pasci_model_cache_reset(size_t entries, size_t bytes)
{
	cached *drop = NULL;
	pthread_mutex_lock(&cache_mu);
	max_entries = 0;
	cache_evict_locked(&drop);
	max_entries = entries;
	max_bytes   = bytes;
	bounds_set  = true;
	pthread_mutex_unlock(&cache_mu);
	cache_free_chain(drop);
}
