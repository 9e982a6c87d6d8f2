/*
 * A model as a step's argument, on the worker side (pasco_model_from_call,
 * include/pasco/model.h): its config (JSON as a u8 tensor) rebuilt into a
 * model and bound to the call's variable handles. Parsed models are kept
 * per process, by their config's bytes, so a step parses a config once:
 * later calls copy the cached model (a few small allocations) and bind
 * the copy, which is the call's own. The cache is a short list under one
 * mutex, touched by the worker's handler threads; nothing is parsed or
 * bound under it.
 */
#include "model_impl.h"
#include "pasco/function.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_MAX 16 /* models kept; the oldest is dropped past it */

typedef struct cached {
	uint64_t       hash;
	size_t         len;
	char          *bytes;
	pasco_model   *model; /* unbound, never handed out */
	struct cached *next;
} cached;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cached         *cache; /* newest first; protected by cache_mu */

static uint64_t
fnv1a(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h = (h ^ (uint8_t) p[i]) * 1099511628211ull;
	}
	return h;
}

/* A copy of the cached model of these bytes into *out; false when none. */
static bool
cache_copy(
    uint64_t h, const char *bytes, size_t len, pasco_model **out, int *rv)
{
	bool found = false;
	pthread_mutex_lock(&cache_mu);
	for (cached *c = cache; c != NULL && !found; c = c->next) {
		if (c->hash == h && c->len == len &&
		    memcmp(c->bytes, bytes, len) == 0) {
			found = true;
			*rv   = pasci_model_clone(c->model, out);
		}
	}
	pthread_mutex_unlock(&cache_mu);
	return found;
}

/* Keeps m (taken over) for these bytes, dropping the oldest past
 * CACHE_MAX; without memory m is simply freed. */
static void
cache_keep(uint64_t h, const char *bytes, size_t len, pasco_model *m)
{
	cached *c = calloc(1, sizeof(*c)), *drop = NULL;
	size_t  n = 0;
	if (c == NULL || (c->bytes = malloc(len)) == NULL) {
		free(c);
		pasco_model_free(m);
		return;
	}
	memcpy(c->bytes, bytes, len);
	c->hash  = h;
	c->len   = len;
	c->model = m;
	pthread_mutex_lock(&cache_mu);
	c->next = cache;
	cache   = c;
	for (cached *p = cache; p != NULL; p = p->next) {
		if (++n == CACHE_MAX && p->next != NULL) {
			drop    = p->next;
			p->next = NULL;
		}
	}
	pthread_mutex_unlock(&cache_mu);
	while (drop != NULL) {
		cached *next = drop->next;
		pasco_model_free(drop->model);
		free(drop->bytes);
		free(drop);
		drop = next;
	}
}

/* The unbound model of a config argument, the call's own copy. */
static int
model_of_config(pasco_call *call, const pasco_tensor *t, pasco_model **out)
{
	uint64_t     h = fnv1a(t->data, (size_t) t->count);
	pasco_model *parsed, *copy;
	char        *json;
	int          rv = PASCO_OK;

	if (cache_copy(h, t->data, (size_t) t->count, out, &rv)) {
		return rv != 0 ? pasco_call_fail(
		                     call, rv, "%s", pasco_model_last_error())
		               : PASCO_OK;
	}
	if ((json = malloc((size_t) t->count + 1)) == NULL) {
		return pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
	}
	memcpy(json, t->data, (size_t) t->count);
	json[t->count] = 0;
	rv             = pasco_model_from_json(json, &parsed);
	free(json);
	if (rv == 0 && (rv = pasci_model_clone(parsed, &copy)) != 0) {
		pasco_model_free(parsed);
	}
	if (rv != 0) {
		return pasco_call_fail(call, rv, "the model's config: %s",
		    pasco_model_last_error());
	}
	cache_keep(h, t->data, (size_t) t->count, parsed);
	*out = copy;
	return PASCO_OK;
}

int
pasco_model_from_call(pasco_call *call, size_t first, pasco_model **out)
{
	const pasco_tensor *t;
	pasco_variable    **vars;
	pasco_model        *m;
	int                 rv;

	*out = NULL;
	if ((rv = pasco_call_tensor(call, first, &t)) != 0) {
		return rv;
	}
	if (t->dtype != PASCO_U8 || t->rank != 1) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "argument %zu is %s%s, not a model's config (u8 JSON: "
		    "pasco_model_args)",
		    first, pasco_dtype_name(t->dtype),
		    PASCI_SHAPE(t->rank, t->shape));
	}
	if ((rv = model_of_config(call, t, &m)) != 0) {
		return rv;
	}
	if ((vars = calloc(m->nvars + 1, sizeof(*vars))) == NULL) {
		pasco_model_free(m);
		return pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < m->nvars && rv == 0; k++) {
		rv = pasco_call_variable(call, first + 1 + k, &vars[k]);
	}
	if (rv == 0 && (rv = pasco_model_bind(m, m->nvars, vars)) != 0) {
		pasco_call_fail(call, rv, "%s", pasco_model_last_error());
	}
	free(vars);
	if (rv != 0) {
		pasco_model_free(m);
		return rv;
	}
	*out = m;
	return PASCO_OK;
}
