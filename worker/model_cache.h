/*
 * The worker's parsed models, kept by their config's bytes
 * (worker/model_cache.c), so a step function's model is parsed once per
 * process and copied at each call. Bounded in entries and bytes, least
 * recently used first out.
 */
#ifndef PASCI_MODEL_CACHE_H
#define PASCI_MODEL_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "pasco/layers.h"

/* The defaults of PASCO_MODEL_CACHE_ENTRIES and PASCO_MODEL_CACHE_MB. */
#define PASCI_MODEL_CACHE_ENTRIES 16
#define PASCI_MODEL_CACHE_MB 64

/* The unbound model of the config bytes[0..len) (JSON, not 0-terminated),
 * the caller's own copy, into *out: copied from the cache, or parsed and
 * then kept (evicting the least recently used past the bounds; a config
 * that alone is over the byte bound is parsed at each call and not kept).
 * On failure *out is NULL and pasco_model_last_error says why
 * (PASCO_EINVAL: the config; PASCO_ENOMEM). Nothing is parsed or copied
 * under the cache's lock. Thread-safe. */
int pasci_model_cache_get(const void *bytes, size_t len, pasco_model **out);

/* What the cache holds now: entries, and bytes (each entry's config, its
 * parsed model and bookkeeping); and its bounds. Thread-safe. */
typedef struct pasci_model_cache_stats {
	size_t entries, bytes;
	size_t max_entries, max_bytes;
} pasci_model_cache_stats;

void pasci_model_cache_stats_get(pasci_model_cache_stats *st);

/* Whether the config bytes[0..len) is kept (its place in the order is
 * unchanged). Thread-safe. */
bool pasci_model_cache_holds(const void *bytes, size_t len);

/* Empties the cache and sets its bounds (otherwise read once from the
 * environment): for tests. Thread-safe. */
void pasci_model_cache_reset(size_t max_entries, size_t max_bytes);

#endif
