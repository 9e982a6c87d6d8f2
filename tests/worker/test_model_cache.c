/*
 * The worker's model cache (worker/model_cache.c): configs kept by their
 * bytes, bounded in entries and in bytes, the least recently used out
 * first; a config over the byte bound parsed but not kept; the bounds from
 * PASCO_MODEL_CACHE_ENTRIES and PASCO_MODEL_CACHE_MB; and, through
 * pasco_model_from_call as a step calls it, the heap a worker keeps after
 * many large configs stays within the bound (16 configs padded to 60 MB
 * each used to stay, a worker at 500 MB idle). Criterion runs each test in
 * a fresh process, so each starts with an empty cache.
 */
#include "helpers.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bufcache.h"
#include "call.h"
#include "model_cache.h"
#include "model_impl.h"

TestSuite(model_cache, .timeout = 30);

/* A valid Sequential config named m<k>, padded with pad spaces. */
static char *
config(int k, size_t pad)
{
	const char *fmt = "{\"class_name\":\"Sequential\",%*s\"config\":{"
	                  "\"name\":\"m%d\",\"inputs\":[{\"name\":\"x\","
	                  "\"width\":4}],\"layers\":[{\"class_name\":"
	                  "\"Activation\",\"config\":{\"activation\":"
	                  "\"relu\"}}]}}";
	size_t      n   = pad + 256;
	char       *j   = malloc(n);
	cr_assert_not_null(j);
	snprintf(j, n, fmt, (int) pad, "", k);
	return j;
}

/* Gets config j through the cache and checks the copy is model m<k>. */
static void
get(const char *j, int k)
{
	pasco_model *m;
	char         want[16];
	PASCO_PASS(pasci_model_cache_get(j, strlen(j), &m));
	snprintf(want, sizeof(want), "m%d", k);
	cr_assert_str_eq(pasco_model_name(m), want);
	pasco_model_free(m);
}

static bool
holds(const char *j)
{
	return pasci_model_cache_holds(j, strlen(j));
}

static pasci_model_cache_stats
stats(void)
{
	pasci_model_cache_stats st;
	pasci_model_cache_stats_get(&st);
	return st;
}

Test(model_cache, past_the_entry_bound_the_least_recently_used_goes)
{
	char *c[4];
	pasci_model_cache_reset(3, (size_t) 1 << 30);
	for (int k = 0; k < 4; k++) {
		c[k] = config(k, 0);
	}
	get(c[0], 0);
	get(c[1], 1);
	get(c[2], 2);
	cr_assert_eq(stats().entries, 3);
	get(c[0], 0); /* a hit: now the most recently used */
	get(c[3], 3);
	cr_assert_eq(stats().entries, 3);
	cr_assert(holds(c[0]), "the recently used config stays");
	cr_assert_not(holds(c[1]), "the least recently used one went");
	cr_assert(holds(c[2]) && holds(c[3]));
	get(c[1], 1); /* parsed again, and right */
	cr_assert_not(holds(c[2]));
	for (int k = 0; k < 4; k++) {
		free(c[k]);
	}
}

Test(model_cache, bytes_are_bounded_and_a_config_over_the_bound_is_not_kept)
{
	size_t mb = (size_t) 1 << 20, bound = 3 * mb + mb / 2;
	char  *c[5], *big                   = config(9, 4 * mb);
	pasci_model_cache_reset(16, bound);
	for (int k = 0; k < 5; k++) {
		c[k] = config(k, mb);
		get(c[k], k);
		cr_assert_leq(stats().bytes, bound);
	}
	cr_assert_eq(stats().entries, 3, "3 configs of 1 MB fit in 3.5 MB");
	cr_assert_gt(stats().bytes, 3 * mb, "each counts its config");
	cr_assert(!holds(c[0]) && !holds(c[1]) && holds(c[2]) && holds(c[3]) &&
	          holds(c[4]));
	get(big, 9); /* served, not kept, and evicting nothing */
	cr_assert_not(holds(big));
	cr_assert_eq(stats().entries, 3);
	cr_assert(holds(c[2]));
	for (int k = 0; k < 5; k++) {
		free(c[k]);
	}
	free(big);
}

Test(model_cache, a_bad_config_is_refused_and_not_kept)
{
	const char  *bad = "{\"class_name\":\"Sequential\"}";
	pasco_model *m   = (pasco_model *) 1;
	PASCO_FAIL(pasci_model_cache_get(bad, strlen(bad), &m), PASCO_EINVAL);
	cr_assert_null(m);
	cr_assert_not(holds(bad));
	cr_assert_eq(stats().entries, 0);
}

Test(model_cache, the_bounds_come_from_the_environment)
{
	cr_assert_eq(stats().max_entries, PASCI_MODEL_CACHE_ENTRIES);
	cr_assert_eq(stats().max_bytes, (size_t) PASCI_MODEL_CACHE_MB << 20);
}

Test(model_cache, the_bounds_are_set_by_the_environment)
{
	setenv("PASCO_MODEL_CACHE_ENTRIES", "5", 1);
	setenv("PASCO_MODEL_CACHE_MB", "7", 1);
	cr_assert_eq(stats().max_entries, 5);
	cr_assert_eq(stats().max_bytes, (size_t) 7 << 20);
}

Test(model_cache, a_malformed_bound_is_the_default)
{
	setenv("PASCO_MODEL_CACHE_ENTRIES", "-1", 1);
	setenv("PASCO_MODEL_CACHE_MB", "lots", 1);
	cr_assert_eq(stats().max_entries, PASCI_MODEL_CACHE_ENTRIES);
	cr_assert_eq(stats().max_bytes, (size_t) PASCI_MODEL_CACHE_MB << 20);
}

/* Handler threads share the cache while it evicts: each copy is the
 * model of its own config (an entry evicted while a thread copies it is
 * freed by that thread, after: ASan's run checks). */
static void *
getter(void *arg)
{
	char **c = arg;
	for (int i = 0; i < 300; i++) {
		get(c[i % 4], i % 4);
	}
	return NULL;
}

Test(model_cache, threads_share_the_cache_while_it_evicts)
{
	char     *c[4];
	pthread_t th[4];
	pasci_model_cache_reset(2, (size_t) 1 << 30);
	for (int k = 0; k < 4; k++) {
		c[k] = config(k, 1000);
	}
	for (int t = 0; t < 4; t++) {
		cr_assert_eq(pthread_create(&th[t], NULL, getter, c), 0);
	}
	for (int t = 0; t < 4; t++) {
		pthread_join(th[t], NULL);
	}
	cr_assert_eq(stats().entries, 2);
	for (int k = 0; k < 4; k++) {
		free(c[k]);
	}
}

/* The heap in use now: small blocks and mmapped ones, less the big
 * buffers the process's cache keeps for reuse (bufcache.h: a tensor of 1
 * MB or more, such as these configs, goes back there, bounded in all and
 * dropped after a second unused); what is left is what the models hold. */
static size_t
heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	size_t           n, cached, used = mi.uordblks + mi.hblkhd;
	pasci_bufcache_stats(&n, &cached);
	/* under a sanitizer, whose allocator glibc's figures do not see,
	 * used is about 0 */
	return used > cached ? used - cached : 0;
}

/* 17 configs padded to 4 MB each, each a step's argument: with
 * PASCO_MODEL_CACHE_MB=8 the heap kept afterwards grows by at most 8 MB
 * and some (the old cache kept 16 configs: 64 MB). */
Test(model_cache, many_large_configs_through_calls_keep_the_heap_bounded)
{
	size_t mb = (size_t) 1 << 20, before;
	setenv("PASCO_MODEL_CACHE_MB", "8", 1);
	before = heap_in_use();
	for (int k = 0; k < 17; k++) {
		char         *j = config(k, 4 * mb);
		pasco_tensor *t;
		pasco_model  *m;
		PASCO_PASS(pasco_tensor_from(&t, PASCO_U8, 1,
		    (int64_t[]){(int64_t) strlen(j)}, j, strlen(j)));
		call_arg   arg  = {.kind = PASCI_ARG_TENSOR, .tensor = t};
		pasco_call call = {
		    .fn_name = "step", .nargs = 1, .args = &arg};
		int rv = pasco_model_from_call(&call, 0, &m);
		cr_assert_eq(rv, 0, "%s", call.error);
		cr_assert_eq(pasco_model_num_layers(m), 1);
		pasco_model_free(m);
		pasco_tensor_release(t);
		free(j);
	}
	cr_assert_leq(heap_in_use(), before + 10 * mb,
	    "the heap grew by %zu MB keeping models (bound 8 MB)",
	    (heap_in_use() - before) / mb);
	cr_assert_leq(stats().bytes, 8 * mb);
	cr_assert_eq(stats().entries, 1, "one 4 MB config fits in 8 MB");
}
