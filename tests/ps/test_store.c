/*
 * The store's concurrency contract (ps/store.c): variables created while
 * others are looked up and updated keep their addresses and values, and
 * pasci_store_var_each sees each variable once, under its lock.
 */
#include "helpers.h"

#include <pthread.h>
#include <string.h>

#include "store.h"
#include "tensor_impl.h"

TestSuite(store, .timeout = 30);

#define CREATORS 4
#define PER_CREATOR 2000 /* 8000 variables: long chains in 1024 buckets */
#define ADDS 20000

/* Threads record their first failure here (criterion's assertions abort
 * the test from its own thread only); the test asserts after the join. */
typedef struct shared {
	ps_store *s;
	int       id;
	char      failure[400]; /* "" while all is well */
} shared;

static void
fail(shared *sh, const char *what, const char *err)
{
	if (sh->failure[0] == 0) {
		snprintf(
		    sh->failure, sizeof(sh->failure), "%s: %s", what, err);
	}
}

static int
value_ptr(void *arg, const pasco_tensor *value)
{
	*(const pasco_tensor **) arg = value;
	return PASCO_OK;
}

static int
value_of(void *arg, const pasco_tensor *value)
{
	*(double *) arg = pasco_tensor_get(value, 0);
	return PASCO_OK;
}

/* Creates c<id>-<i>, each set to i, and reads back every tenth earlier one
 * of its own while the others create theirs. */
static void *
creator(void *arg)
{
	shared       *sh = arg;
	char          name[64], err[256];
	pasco_tensor *t;
	for (int i = 0; i < PER_CREATOR && sh->failure[0] == 0; i++) {
		double v = -1;
		t        = test_scalar(PASCO_F64, i);
		snprintf(name, sizeof(name), "c%d-%d", sh->id, i);
		if (pasci_store_var_create(sh->s, name, t, err, sizeof(err)) !=
		    0) {
			fail(sh, name, err);
		}
		pasco_tensor_release(t);
		snprintf(name, sizeof(name), "c%d-%d", sh->id, i - i % 10);
		if (pasci_store_var_with(
		        sh->s, name, value_of, &v, err, sizeof(err)) != 0) {
			fail(sh, name, err);
		} else if (v != i - i % 10) {
			fail(sh, name, "read another variable's value");
		}
	}
	return NULL;
}

/* Adds 1 to "counter" ADDS times while the table grows around it. */
static void *
adder(void *arg)
{
	shared       *sh  = arg;
	pasco_tensor *one = test_scalar(PASCO_F64, 1);
	char          err[256];
	for (int i = 0; i < ADDS && sh->failure[0] == 0; i++) {
		if (pasci_store_var_update(sh->s, "counter", PS_ASSIGN_ADD,
		        one, err, sizeof(err)) != 0) {
			fail(sh, "counter", err);
		}
	}
	pasco_tensor_release(one);
	return NULL;
}

Test(store, variables_keep_their_address_while_others_are_created)
{
	shared              sh[CREATORS + 1];
	pthread_t           th[CREATORS + 1];
	ps_store           *s;
	pasco_tensor       *zero   = test_scalar(PASCO_F64, 0);
	const pasco_tensor *before = NULL, *after = NULL;
	double              v = 0;
	char                err[256];

	PASCO_PASS(pasci_store_create(&s));
	PASCO_PASS(
	    pasci_store_var_create(s, "counter", zero, err, sizeof(err)));
	PASCO_PASS(pasci_store_var_with(
	    s, "counter", value_ptr, &before, err, sizeof(err)));
	for (int i = 0; i <= CREATORS; i++) {
		sh[i] = (shared){.s = s, .id = i};
		cr_assert_eq(pthread_create(&th[i], NULL,
		                 i < CREATORS ? creator : adder, &sh[i]),
		    0);
	}
	for (int i = 0; i <= CREATORS; i++) {
		pthread_join(th[i], NULL);
	}
	for (int i = 0; i <= CREATORS; i++) {
		cr_assert_eq(
		    sh[i].failure[0], 0, "thread %d: %s", i, sh[i].failure);
	}
	PASCO_PASS(pasci_store_var_with(
	    s, "counter", value_ptr, &after, err, sizeof(err)));
	cr_assert_eq(before, after, "the counter's value moved");
	PASCO_PASS(pasci_store_var_with(
	    s, "counter", value_of, &v, err, sizeof(err)));
	cr_assert_eq(v, ADDS, "lost updates: %g of %d", v, ADDS);
	PASCO_PASS(pasci_store_var_with(
	    s, "c3-1999", value_of, &v, err, sizeof(err)));
	cr_assert_eq(v, 1999);
	pasci_store_destroy(s);
	pasco_tensor_release(zero);
}

typedef struct tally {
	int    n;
	double sum;
	int    stop_after; /* 0: never */
} tally;

static int
count_var(void *arg, const char *name, const pasco_tensor *value,
    const ps_slots *slots)
{
	tally *t = arg;
	cr_assert(strncmp(name, "v", 1) == 0, "%s", name);
	cr_assert_eq(slots->kind, 0, "no optimizer was applied to %s", name);
	t->n++;
	t->sum += pasco_tensor_get(value, 0);
	return t->n == t->stop_after ? PASCO_ECANCELLED : PASCO_OK;
}

Test(store, each_visits_every_variable_once_and_stops_on_error)
{
	ps_store *s;
	tally     all = {0}, some = {.stop_after = 3};
	char      name[32], err[256];
	PASCO_PASS(pasci_store_create(&s));
	PASCO_PASS(pasci_store_var_each(s, count_var, &all));
	cr_assert_eq(all.n, 0, "an empty store has nothing to visit");
	for (int i = 1; i <= 10; i++) {
		pasco_tensor *t = test_scalar(PASCO_F32, i);
		snprintf(name, sizeof(name), "v%d", i);
		PASCO_PASS(
		    pasci_store_var_create(s, name, t, err, sizeof(err)));
		pasco_tensor_release(t);
	}
	PASCO_PASS(pasci_store_var_each(s, count_var, &all));
	cr_assert(all.n == 10 && all.sum == 55, "%d variables, sum %g", all.n,
	    all.sum);
	PASCO_FAIL(
	    pasci_store_var_each(s, count_var, &some), PASCO_ECANCELLED);
	cr_assert_eq(some.n, 3);
	pasci_store_destroy(s);
}

static int
take_view(void *arg, const pasco_tensor *value)
{
	return pasci_tensor_view((pasco_tensor **) arg, value->dtype,
	    value->rank, value->shape, value->data, value->storage);
}

/* A read is a view of the value's buffer, not a copy (the ps sends from
 * it); a write while it is out goes to a copy, so the view keeps the
 * version it was taken at, whole, and the variable has the new one. */
Test(store, a_write_while_a_read_is_out_leaves_the_read_as_it_was)
{
	ps_store       *s;
	pasco_tensor   *init, *view = NULL, *view2 = NULL, *g, *now = NULL;
	pasco_optimizer sgd = pasco_sgd(1.0, 0, false);
	char            err[256];
	cr_assert_eq(pasci_store_create(&s), 0);
	cr_assert_eq(
	    pasco_tensor_alloc(&init, PASCO_F32, 1, (int64_t[]){4}), 0);
	cr_assert_eq(pasco_tensor_alloc(&g, PASCO_F32, 1, (int64_t[]){4}), 0);
	for (int i = 0; i < 4; i++) {
		((float *) init->data)[i] = (float) i;
		((float *) g->data)[i]    = 1;
	}
	cr_assert_eq(
	    pasci_store_var_create(s, "w", init, err, sizeof(err)), 0);
	cr_assert_eq(
	    pasci_store_var_with(s, "w", take_view, &view, err, sizeof(err)),
	    0);
	cr_assert_eq(
	    pasci_store_var_with(s, "w", value_ptr, &now, err, sizeof(err)),
	    0);
	cr_assert_eq(view->data, now->data, "a read takes no copy");
	cr_assert_eq(
	    pasci_store_var_apply(s, "w", &sgd, g, err, sizeof(err)), 0);
	cr_assert_neq(view->data, now->data, "the write went to a copy");
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(((float *) view->data)[i], (float) i);
		cr_assert_eq(((float *) now->data)[i], (float) i - 1);
	}
	pasco_tensor_release(view);
	/* with no view out, writes stay in place */
	void *before = now->data;
	cr_assert_eq(
	    pasci_store_var_update(s, "w", PS_ASSIGN, init, err, sizeof(err)),
	    0);
	cr_assert_eq(now->data, before);
	/* every kind of write honours a view: assign_add, scatter_add */
	cr_assert_eq(
	    pasci_store_var_with(s, "w", take_view, &view2, err, sizeof(err)),
	    0);
	cr_assert_eq(
	    pasci_store_var_update(s, "w", PS_ASSIGN_ADD, g, err, sizeof(err)),
	    0);
	cr_assert_eq(((float *) view2->data)[3], 3.0f);
	cr_assert_eq(((float *) now->data)[3], 4.0f);
	pasco_tensor_release(view2);
	pasco_tensor_release(init);
	pasco_tensor_release(g);
	pasci_store_destroy(s);
}
