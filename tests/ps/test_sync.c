/*
 * Consistency on the ps (ps/sync.c through ps/store.c): a counter's
 * fetch-add and step admission under ASP, SSP and BSP; a BSP round of
 * sparse gradients whose ids overlap applied once as their average; a
 * flush of partial rounds; Adam's t taken from the request.
 */
#include "helpers.h"

#include <string.h>

#include "store.h"

TestSuite(ps_sync, .timeout = 30);

static ps_store *
store_with(const char *name, pasco_tensor *init)
{
	ps_store *s;
	char      err[256];
	PASCO_PASS(pasci_store_create(&s));
	PASCO_PASS(pasci_store_var_create(s, name, init, err, sizeof(err)));
	pasco_tensor_release(init);
	return s;
}

typedef struct elem_arg {
	int64_t k;
	double  got;
} elem_arg;

static int
elem_of(void *arg, const pasco_tensor *value)
{
	elem_arg *e = arg;
	e->got      = pasco_tensor_get(value, e->k);
	return PASCO_OK;
}

/* Element k of name's value. */
static double
value_at(ps_store *s, const char *name, int64_t k)
{
	elem_arg e = {k, 0};
	char     err[256];
	PASCO_PASS(
	    pasci_store_var_with(s, name, elem_of, &e, err, sizeof(err)));
	return e.got;
}

static int64_t
step(ps_store *s, int64_t delta, const pasci_wire_sync *sync, bool *dropped,
    char *err)
{
	int64_t out = -1;
	PASCO_PASS(pasci_store_var_fetch_add(
	    s, "c", delta, sync, &out, dropped, err, 256));
	return out;
}

Test(ps_sync, counter_admission_under_each_mode)
{
	ps_store       *s        = store_with("c", test_scalar(PASCO_I64, 0));
	char            err[256] = "";
	bool            dropped;
	pasci_wire_sync ssp = {.mode = PASCO_SSP, .staleness = 1};
	pasci_wire_sync bsp = {.mode = PASCO_BSP, .replicas = 2};

	cr_assert_eq(step(s, 5, NULL, &dropped, err), 5); /* plain */
	cr_assert_eq(step(s, -5, NULL, &dropped, err), 0);
	ssp.version = 0;
	cr_assert_eq(step(s, 1, &ssp, &dropped, err), 1);
	cr_assert(!dropped);
	cr_assert_eq(step(s, 1, &ssp, &dropped, err), 2); /* 1 old: ok */
	cr_assert_eq(step(s, 1, &ssp, &dropped, err), 2); /* 2 old */
	cr_assert(dropped);
	ssp.version = 100; /* read before the counter was set back */
	step(s, 1, &ssp, &dropped, err);
	cr_assert(dropped);
	ssp.version = -1;
	int64_t out;
	PASCO_FAIL(pasci_store_var_fetch_add(
	               s, "c", 1, &ssp, &out, &dropped, err, sizeof(err)),
	    PASCO_EPRECONDITION);
	cr_assert(strstr(err, "read the global step") != NULL, "%s", err);
	PASCO_FAIL(pasci_store_var_fetch_add(s, "c", INT64_MAX, NULL, &out,
	               &dropped, err, sizeof(err)),
	    PASCO_EOUTOFRANGE);
	cr_assert(strstr(err, "overflows") != NULL, "%s", err);

	/* BSP round 2: two members join, a third is dropped; the counter
	 * moves once both have reported done */
	bsp.version = 2;
	cr_assert_eq(step(s, 1, &bsp, &dropped, err), 2);
	cr_assert(!dropped);
	cr_assert_eq(step(s, 1, &bsp, &dropped, err), 2);
	cr_assert(!dropped);
	step(s, 1, &bsp, &dropped, err);
	cr_assert(dropped);
	bsp.done = true;
	cr_assert_eq(step(s, 0, &bsp, &dropped, err), 2);
	cr_assert_eq(step(s, 0, &bsp, &dropped, err), 3);
	bsp.done    = false;
	bsp.version = 2; /* stale now */
	step(s, 1, &bsp, &dropped, err);
	cr_assert(dropped);
	/* a flush closes a round with members */
	bsp.version = 3;
	cr_assert_eq(step(s, 1, &bsp, &dropped, err), 3);
	int64_t n;
	PASCO_PASS(pasci_store_sync_flush(s, &n, err, sizeof(err)));
	cr_assert_eq(n, 1);
	cr_assert_eq(value_at(s, "c", 0), 4);
	pasci_store_destroy(s);
}

Test(ps_sync, only_integer_scalars_count)
{
	pasco_tensor *t;
	ps_store     *s;
	char          err[256] = "";
	int64_t       out;
	bool          dropped;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, (int64_t[]){2}));
	s = store_with("c", t);
	PASCO_FAIL(pasci_store_var_fetch_add(
	               s, "c", 1, NULL, &out, &dropped, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "i64 or i32 scalar") != NULL, "%s", err);
	pasci_store_destroy(s);
}

static pasco_tensor *
i64s(int64_t n, const int64_t *x)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I64, 1, &n, x, sizeof(int64_t) * (size_t) n));
	return t;
}

static pasco_tensor *
rows_of(int64_t n, const float *x)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_from(&t, PASCO_F32, 2, (int64_t[]){n, 2}, x,
	    sizeof(float) * 2 * (size_t) n));
	return t;
}

Test(ps_sync, a_bsp_round_of_sparse_gradients_is_applied_once_averaged)
{
	pasco_tensor   *t;
	ps_store       *s;
	char            err[256] = "";
	pasco_optimizer sgd      = pasco_sgd(1.0, 0, false);
	pasci_wire_sync bsp      = {.mode = PASCO_BSP, .replicas = 3};
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 2, (int64_t[]){4, 2}));
	s                     = store_with("e", t);
	pasco_tensor *ids[3]  = {i64s(2, (int64_t[]){1, 3}),
	     i64s(1, (int64_t[]){1}), i64s(0, NULL)};
	pasco_tensor *rows[3] = {rows_of(2, (float[]){1, 2, 3, 4}),
	    rows_of(1, (float[]){5, 6}), rows_of(0, NULL)};
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(pasci_store_var_apply_sparse_at(
		    s, "e", &sgd, ids[i], rows[i], 1, &bsp, err, sizeof(err)));
		if (i < 2) {
			cr_assert_eq(value_at(s, "e", 2), 0); /* waiting */
		}
	}
	/* row 1: -(1 + 5) / 3, -(2 + 6) / 3; row 3: -3 / 3, -4 / 3 */
	cr_assert_float_eq(value_at(s, "e", 2), -2.0, 1e-6);
	cr_assert_float_eq(value_at(s, "e", 3), -8.0 / 3, 1e-6);
	cr_assert_float_eq(value_at(s, "e", 6), -1.0, 1e-6);
	cr_assert_float_eq(value_at(s, "e", 7), -4.0 / 3, 1e-6);
	cr_assert_eq(value_at(s, "e", 0), 0);
	/* a partial round, then a flush: the average of the one */
	PASCO_PASS(pasci_store_var_apply_sparse_at(
	    s, "e", &sgd, ids[1], rows[1], 2, &bsp, err, sizeof(err)));
	cr_assert_float_eq(value_at(s, "e", 2), -2.0, 1e-6);
	int64_t n;
	PASCO_PASS(pasci_store_sync_flush(s, &n, err, sizeof(err)));
	cr_assert_eq(n, 1);
	cr_assert_float_eq(value_at(s, "e", 2), -7.0, 1e-6);
	/* a dense gradient cannot join a sparse round */
	PASCO_PASS(pasci_store_var_apply_sparse_at(
	    s, "e", &sgd, ids[1], rows[1], 3, &bsp, err, sizeof(err)));
	pasco_tensor *dense;
	PASCO_PASS(
	    pasco_tensor_alloc(&dense, PASCO_F32, 2, (int64_t[]){4, 2}));
	PASCO_FAIL(pasci_store_var_apply_at(
	               s, "e", &sgd, dense, 3, &bsp, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "mixes dense and sparse") != NULL, "%s", err);
	pasco_tensor_release(dense);
	for (int i = 0; i < 3; i++) {
		pasco_tensor_release(ids[i]);
		pasco_tensor_release(rows[i]);
	}
	pasci_store_destroy(s);
}

Test(ps_sync, adam_takes_t_from_the_request)
{
	pasco_tensor   *a, *b, *g;
	ps_store       *s;
	char            err[256] = "";
	pasco_optimizer adam     = pasco_adam(0.1, false);
	PASCO_PASS(pasco_tensor_alloc(&a, PASCO_F32, 1, (int64_t[]){1}));
	PASCO_PASS(pasco_tensor_alloc(&b, PASCO_F32, 1, (int64_t[]){1}));
	s = store_with("a", a);
	PASCO_PASS(pasci_store_var_create(s, "b", b, err, sizeof(err)));
	pasco_tensor_release(b);
	PASCO_PASS(pasco_tensor_from(
	    &g, PASCO_F32, 1, (int64_t[]){1}, (float[]){0.5f}, sizeof(float)));
	/* "a" is told t = 5 on its first apply; "b" counts its own (1) */
	PASCO_PASS(pasci_store_var_apply_at(
	    s, "a", &adam, g, 5, NULL, err, sizeof(err)));
	PASCO_PASS(pasci_store_var_apply(s, "b", &adam, g, err, sizeof(err)));
	/* t = 1: alpha = lr * sqrt(1 - b2) / (1 - b1); m = 0.05, v = 0.00025
	 * -> step lr exactly; at t = 5 the bias correction differs */
	cr_assert_float_eq(value_at(s, "b", 0), -0.1, 1e-5);
	cr_assert(
	    value_at(s, "a", 0) > -0.1 + 1e-3, "%g", value_at(s, "a", 0));
	pasco_tensor_release(g);
	pasci_store_destroy(s);
}
