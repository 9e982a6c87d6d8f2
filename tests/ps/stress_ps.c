/*
 * Concurrency stress for the ps's own state, without criterion so it runs
 * under ThreadSanitizer: reads that are views of a variable's buffer while
 * writers update it (ps/store.c's copy-on-write), and a dynamic table
 * looked up, updated, exported and counted from several threads at once
 * (ps/dyn_table.h). Asserts what must hold whatever the interleaving.
 */
#include <pasco.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dyn_table.h"
#include "store.h"
#include "tensor_impl.h"
#include "util.h"

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "stress_ps: %s:%d: ", __FILE__,       \
			    __LINE__);                                        \
			fprintf(stderr, __VA_ARGS__);                         \
			fprintf(stderr, "\n");                                \
			exit(1);                                              \
		}                                                             \
	} while (0)

#define ELEMS 4096
#define WRITES 3000

static ps_store   *store;
static atomic_bool writing_done;
static atomic_int  readers_in; /* readers that have taken a view */

static int
take_view(void *arg, const pasco_tensor *value)
{
	return pasci_tensor_view((pasco_tensor **) arg, value->dtype,
	    value->rank, value->shape, value->data, value->storage);
}

/* Every write adds 1 to every element: a whole version has all elements
 * equal. */
static void *
writer(void *arg)
{
	pasco_tensor *ones;
	char          err[256];
	(void) arg;
	CHECK(pasco_tensor_alloc(&ones, PASCO_F32, 1, (int64_t[]){ELEMS}) == 0,
	    "alloc");
	for (int i = 0; i < ELEMS; i++) {
		((float *) ones->data)[i] = 1;
	}
	while (atomic_load(&readers_in) < 2) { /* writes meet reads */
		sched_yield();
	}
	for (int k = 0; k < WRITES; k++) {
		CHECK(pasci_store_var_update(store, "w", PS_ASSIGN_ADD, ones,
		          err, sizeof(err)) == 0,
		    "%s", err);
	}
	pasco_tensor_release(ones);
	atomic_store(&writing_done, true);
	return NULL;
}

/* Takes views while the writer runs; each must be one whole version and
 * stay so while it is held. */
static void *
reader(void *arg)
{
	char  err[256];
	long *views = arg;
	bool  in    = false;
	while (!atomic_load(&writing_done)) {
		pasco_tensor *v = NULL;
		CHECK(pasci_store_var_with(
		          store, "w", take_view, &v, err, sizeof(err)) == 0,
		    "%s", err);
		const float *f = v->data;
		for (int pass = 0; pass < 3; pass++) {
			for (int i = 1; i < ELEMS; i++) {
				CHECK(f[i] == f[0],
				    "a read saw a torn value: element %d is "
				    "%g, "
				    "element 0 %g",
				    i, (double) f[i], (double) f[0]);
			}
		}
		pasco_tensor_release(v);
		(*views)++;
		if (!in) {
			atomic_fetch_add(&readers_in, 1);
			in = true;
		}
	}
	return NULL;
}

static void
store_stress(void)
{
	pthread_t     w, r[2];
	long          views[2] = {0, 0};
	pasco_tensor *zeros, *last = NULL;
	char          err[256];
	CHECK(pasci_store_create(&store) == 0, "store");
	CHECK(
	    pasco_tensor_alloc(&zeros, PASCO_F32, 1, (int64_t[]){ELEMS}) == 0,
	    "alloc");
	CHECK(pasci_store_var_create(store, "w", zeros, err, sizeof(err)) == 0,
	    "%s", err);
	pthread_create(&w, NULL, writer, NULL);
	for (int i = 0; i < 2; i++) {
		pthread_create(&r[i], NULL, reader, &views[i]);
	}
	pthread_join(w, NULL);
	for (int i = 0; i < 2; i++) {
		pthread_join(r[i], NULL);
	}
	CHECK(pasci_store_var_with(
	          store, "w", take_view, &last, err, sizeof(err)) == 0,
	    "%s", err);
	CHECK(((float *) last->data)[ELEMS - 1] == WRITES, "%g writes landed",
	    (double) ((float *) last->data)[ELEMS - 1]);
	pasco_tensor_release(last);
	pasco_tensor_release(zeros);
	pasci_store_destroy(store);
	printf("store: %d writes, %ld views checked whole\n", WRITES,
	    views[0] + views[1]);
}

/* ---- a dynamic table from several threads ---- */

#define DIM 8
#define KEYS 2000
#define CAP 500
#define ROUNDS 300

static pasci_dyn_table *table;
static atomic_int       lookers_done;

static void *
looker(void *arg)
{
	uint64_t x = (uint64_t) (uintptr_t) arg;
	int64_t  keys[32];
	float    rows[32 * DIM];
	char     err[256];
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < 32; i++) {
			x       = pasci_mix64(x);
			keys[i] = (int64_t) (x % KEYS) * 0x9e3779b97f4a7c15LL;
		}
		CHECK(pasci_dyn_lookup(table, keys, 32, r % 5 != 0, rows, err,
		          sizeof(err)) == 0,
		    "%s", err);
	}
	atomic_fetch_add(&lookers_done, 1);
	return NULL;
}

static void *
updater(void *arg)
{
	pasco_optimizer adam = pasco_adam(0.01, false);
	pasco_tensor   *grad;
	int64_t         keys[32];
	uint64_t        x    = 7;
	int64_t         step = 0;
	char            err[256];
	(void) arg;
	CHECK(
	    pasco_tensor_alloc(&grad, PASCO_F32, 2, (int64_t[]){32, DIM}) == 0,
	    "alloc");
	while (atomic_load(&lookers_done) < 2) {
		for (int i = 0; i < 32; i++) {
			x       = pasci_mix64(x);
			keys[i] = (int64_t) (x % KEYS) * 0x9e3779b97f4a7c15LL;
			for (int j = 0; j < DIM; j++) {
				((float *) grad->data)[i * DIM + j] = 0.01f;
			}
		}
		CHECK(pasci_dyn_apply(table, &adam, keys, 32, grad, ++step,
		          err, sizeof(err)) == 0,
		    "%s", err);
	}
	pasco_tensor_release(grad);
	return NULL;
}

static void *
exporter(void *arg)
{
	(void) arg;
	while (atomic_load(&lookers_done) < 2) {
		pasci_dyn_state s;
		pasci_dyn_stats st;
		CHECK(pasci_dyn_export(table, &s) == 0, "export");
		CHECK(s.keys->shape[0] <= CAP, "%lld rows over the cap",
		    (long long) s.keys->shape[0]);
		for (int64_t i = 1; i < s.keys->shape[0]; i++) {
			CHECK(((int64_t *) s.keys->data)[i] !=
			              ((int64_t *) s.keys->data)[0] ||
			          i == 0,
			    "a key held twice");
		}
		pasci_dyn_state_fini(&s);
		pasci_dyn_stats_of(table, &st);
		CHECK(st.rows <= CAP, "stats: %lld rows", (long long) st.rows);
	}
	return NULL;
}

static void
dyn_stress(void)
{
	pasci_dyn_config c = {.dim = DIM,
	    .init                  = pasco_init_uniform(-0.05, 0.05, 1),
	    .min_count             = 2,
	    .evict_after           = 50,
	    .max_rows              = CAP};
	pasci_dyn_set   *set;
	pasci_dyn_stats  st;
	pasci_dyn_state  s;
	pthread_t        th[4];
	char             err[256];
	CHECK(pasci_dyn_set_create(&set) == 0, "set");
	CHECK(pasci_dyn_add(set, "t", &c, err, sizeof(err)) == 0, "%s", err);
	table = pasci_dyn_find(set, "t");
	pthread_create(&th[0], NULL, looker, (void *) 1);
	pthread_create(&th[1], NULL, looker, (void *) 2);
	pthread_create(&th[2], NULL, updater, NULL);
	pthread_create(&th[3], NULL, exporter, NULL);
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
	}
	pasci_dyn_stats_of(table, &st);
	CHECK(pasci_dyn_export(table, &s) == 0, "export");
	CHECK(s.keys->shape[0] == st.rows, "export %lld rows, stats %lld",
	    (long long) s.keys->shape[0], (long long) st.rows);
	CHECK(st.created - st.evicted_age - st.evicted_cap == st.rows,
	    "created %lld - evicted %lld + %lld != rows %lld",
	    (long long) st.created, (long long) st.evicted_age,
	    (long long) st.evicted_cap, (long long) st.rows);
	pasci_dyn_state_fini(&s);
	printf(
	    "dynamic table: %lld rows, %lld made, %lld evicted by age, %lld "
	    "by the cap, %lld refused\n",
	    (long long) st.rows, (long long) st.created,
	    (long long) st.evicted_age, (long long) st.evicted_cap,
	    (long long) st.refused);
	pasci_dyn_set_destroy(set);
}

int
main(void)
{
	store_stress();
	dyn_stress();
	return 0;
}
