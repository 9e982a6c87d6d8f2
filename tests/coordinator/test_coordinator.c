/*
 * The coordinator over an in-process cluster (inproc:// transport): the
 * schedule / join / done / fetch contract and the reference's coordinator
 * scenarios (section 4.B and 4.C; numbers in comments).
 */
#include "helpers.h"

#include "coordinator_impl.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

TestSuite(coordinator, .timeout = 60);

static test_cluster       tc;
static pasco_strategy    *strategy;
static pasco_coordinator *coord;

static void
start(int nps, int nworkers, uint32_t window)
{
	pasco_coordinator_options o = {.window = window};
	test_cluster_start(&tc, nps, nworkers);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, NULL));
	PASCO_PASS(pasco_coordinator_create(&coord, strategy, &o));
}

static void
stop(void)
{
	pasco_coordinator_destroy(coord);
	pasco_strategy_destroy(strategy);
	test_cluster_stop(&tc);
}

static pasco_variable *
make_var(const char *name, double value)
{
	return test_scalar_var(strategy, name, PASCO_F32, value);
}

/* args: variable, f32 tensor. v += tensor. */
PASCO_FUNCTION(add_to_var)
{
	pasco_variable     *v;
	const pasco_tensor *d;
	int                 rv;
	if ((rv = pasco_call_variable(call, 0, &v)) != 0 ||
	    (rv = pasco_call_tensor(call, 1, &d)) != 0) {
		return rv;
	}
	if ((rv = pasco_variable_assign_add(v, d)) != 0) {
		return pasco_call_fail(
		    call, rv, "%s", pasco_variable_error(v));
	}
	return PASCO_OK;
}

static pasco_tensor *
f32(double x)
{
	return test_scalar(PASCO_F32, x);
}

/* (x+1, (x+2, x+3), [x+4], {"v": x}) */
PASCO_FUNCTION(nested)
{
	const pasco_tensor *t;
	double              x;
	int                 rv;
	if ((rv = pasco_call_tensor(call, 0, &t)) != 0) {
		return rv;
	}
	x = pasco_tensor_get(t, 0);
	pasco_call_return(
	    call, pasco_value_list(4, pasco_value_tensor(f32(x + 1)),
	              pasco_value_list(2, pasco_value_tensor(f32(x + 2)),
	                  pasco_value_tensor(f32(x + 3))),
	              pasco_value_list(1, pasco_value_tensor(f32(x + 4))),
	              pasco_value_dict(1, "v", pasco_value_tensor(f32(x)))));
	return PASCO_OK;
}

Test(coordinator, basic_variable_assignment) /* 39 */
{
	pasco_variable *v1, *v2;
	start(1, 1, 0);
	v1               = make_var("v1", 0.0);
	v2               = make_var("v2", 1.0);
	pasco_tensor *up = f32(0.1), *down = f32(-0.2);
	pasco_arg     a1[] = {pasco_arg_variable(v1), pasco_arg_tensor(up)};
	pasco_arg     a2[] = {pasco_arg_variable(v2), pasco_arg_tensor(down)};
	PASCO_PASS(pasco_schedule(coord, "add_to_var", a1, 2, NULL));
	PASCO_PASS(pasco_schedule(coord, "add_to_var", a2, 2, NULL));
	PASCO_PASS(pasco_join(coord));
	cr_assert_float_eq(test_read_scalar(v1), 0.1, 1e-6);
	cr_assert_float_eq(test_read_scalar(v2), 0.8, 1e-6);
	pasco_tensor_release(up);
	pasco_tensor_release(down);
	pasco_variable_free(v1);
	pasco_variable_free(v2);
	stop();
}

Test(coordinator, variables_are_placed_round_robin_in_creation_order) /* 85 */
{
	pasco_variable *v[4];
	start(3, 1, 0);
	for (int i = 0; i < 4; i++) {
		char name[8];
		snprintf(name, sizeof(name), "v%d", i + 2);
		v[i] = make_var(name, 0);
	}
	cr_assert_eq(pasco_variable_ps_task(v[0]), 0);
	cr_assert_eq(pasco_variable_ps_task(v[1]), 1);
	cr_assert_eq(pasco_variable_ps_task(v[2]), 2);
	cr_assert_eq(pasco_variable_ps_task(v[3]), 0);
	for (int i = 0; i < 4; i++) {
		pasco_variable_free(v[i]);
	}
	stop();
}

Test(coordinator, recreating_a_variable_is_idempotent_unless_the_spec_differs)
{
	pasco_variable *a, *b, *c;
	pasco_tensor   *wrong;
	start(2, 1, 0);
	a = make_var("w", 3.0);
	b = make_var("w", 9.0); /* same spec: same variable, value kept */
	cr_assert_eq(pasco_variable_ps_task(a), pasco_variable_ps_task(b));
	cr_assert_eq(test_read_scalar(b), 3.0);
	PASCO_PASS(pasco_tensor_alloc(&wrong, PASCO_F32, 1, (int64_t[]){2}));
	PASCO_FAIL(
	    pasco_variable_create(&c, strategy, "w", wrong), PASCO_EEXIST);
	cr_assert(strstr(pasco_strategy_error(strategy), "f32[2]") != NULL,
	    "%s", pasco_strategy_error(strategy));
	/* the next new variable still takes the next ps in turn */
	c = make_var("u", 0);
	cr_assert_eq(pasco_variable_ps_task(c), 1);
	pasco_tensor_release(wrong);
	pasco_variable_free(a);
	pasco_variable_free(b);
	pasco_variable_free(c);
	stop();
}

Test(coordinator, a_mismatched_update_is_rejected_and_changes_nothing)
{
	pasco_variable *v;
	pasco_tensor   *wrong;
	start(1, 1, 0);
	v = make_var("v", 5.0);
	PASCO_PASS(pasco_tensor_alloc(&wrong, PASCO_F64, 0, NULL));
	PASCO_FAIL(pasco_variable_assign(v, wrong), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_variable_error(v), "dtype and shape must match"),
	    "%s", pasco_variable_error(v));
	cr_assert_eq(test_read_scalar(v), 5.0);
	/* from a step function, the same error reaches join */
	pasco_arg args[] = {pasco_arg_variable(v), pasco_arg_tensor(wrong)};
	PASCO_PASS(pasco_schedule(coord, "add_to_var", args, 2, NULL));
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	cr_assert(strstr(pasco_coordinator_error(coord), "add_to_var"), "%s",
	    pasco_coordinator_error(coord));
	cr_assert_eq(test_read_scalar(v), 5.0);
	pasco_tensor_release(wrong);
	pasco_variable_free(v);
	stop();
}

Test(coordinator, fetch_returns_nested_values) /* 15 */
{
	pasco_remote_value *rv;
	const pasco_value  *v;
	pasco_tensor       *x   = f32(1);
	pasco_arg           arg = pasco_arg_tensor(x);
	start(1, 2, 0);
	PASCO_PASS(pasco_schedule(coord, "nested", &arg, 1, &rv));
	PASCO_PASS(pasco_remote_value_fetch(rv, &v));
	cr_assert(pasco_remote_value_is_ready(rv));
	cr_assert_eq(pasco_value_scalar(pasco_value_item(v, 0)), 2);
	cr_assert_eq(
	    pasco_value_scalar(pasco_value_item(pasco_value_item(v, 1), 0)),
	    3);
	cr_assert_eq(
	    pasco_value_scalar(pasco_value_item(pasco_value_item(v, 1), 1)),
	    4);
	cr_assert_eq(pasco_value_scalar(pasco_value_item(v, 2)), 5);
	cr_assert_eq(
	    pasco_value_scalar(pasco_value_get(pasco_value_item(v, 3), "v")),
	    1);
	PASCO_PASS(pasco_join(coord));
	pasco_remote_value_free(rv);
	pasco_tensor_release(x);
	stop();
}

Test(coordinator, unknown_function_is_an_error_from_join)
{
	pasco_remote_value *rv;
	const pasco_value  *v;
	start(1, 1, 0);
	PASCO_PASS(pasco_schedule(coord, "no_such_function", NULL, 0, &rv));
	PASCO_FAIL(pasco_join(coord), PASCO_ENOTFOUND);
	cr_assert(strstr(pasco_coordinator_error(coord),
	              "function 'no_such_function' is not registered"),
	    "%s", pasco_coordinator_error(coord));
	PASCO_FAIL(pasco_remote_value_fetch(rv, &v), PASCO_ENOTFOUND);
	pasco_remote_value_free(rv);
	stop();
}

static void *
join_elsewhere(void *arg)
{
	(void) arg;
	PASCO_PASS(pasco_join(coord));
	cr_assert_str_eq(pasco_coordinator_error(coord), "");
	return NULL;
}

Test(coordinator, another_threads_call_does_not_overwrite_the_error_message)
{
	pthread_t th;
	start(1, 1, 0);
	PASCO_PASS(pasco_schedule(coord, "no_such_function", NULL, 0, NULL));
	PASCO_FAIL(pasco_join(coord), PASCO_ENOTFOUND);
	pthread_create(&th, NULL, join_elsewhere, NULL);
	pthread_join(th, NULL);
	cr_assert(strstr(pasco_coordinator_error(coord), "no_such_function"),
	    "%s", pasco_coordinator_error(coord));
	stop();
}

Test(coordinator, bad_schedule_arguments_are_rejected)
{
	pasco_arg null_tensor = pasco_arg_tensor(NULL);
	start(1, 1, 0);
	PASCO_FAIL(pasco_schedule(coord, "", NULL, 0, NULL), PASCO_EINVAL);
	PASCO_FAIL(pasco_schedule(coord, "nested", &null_tensor, 1, NULL),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_coordinator_error(coord), "argument 0"), "%s",
	    pasco_coordinator_error(coord));
	stop();
}

PASCO_DATASET(range_shard)
{
	pasco_dataset *ds;
	int            rv = pasco_dataset_range(&ds, 0, 10, 1);
	return rv != 0 ? rv
	               : pasco_dataset_shard(
	                     out, ds, ctx->num_workers, ctx->worker_index);
}

/* args: iterator, i64 n. Sums the whole shard, meets the barrier. */
PASCO_FUNCTION(sum_shard)
{
	pasco_dataset      *it;
	const pasco_tensor *n;
	pasco_value        *e;
	double              sum = 0;
	int                 rv;
	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = pasco_call_tensor(call, 1, &n)) != 0) {
		return rv;
	}
	while ((rv = pasco_dataset_next(it, &e)) == 0) {
		sum += pasco_value_scalar(e);
		pasco_value_free(e);
	}
	if (!test_barrier_wait((int) pasco_tensor_get(n, 0))) {
		return pasco_call_fail(
		    call, PASCO_ETIMEDOUT, "barrier timed out");
	}
	pasco_call_return(
	    call, pasco_value_list(2,
	              pasco_value_tensor(f32(pasco_call_worker_index(call))),
	              pasco_value_tensor(f32(sum))));
	return PASCO_OK;
}

Test(coordinator, each_worker_iterates_its_own_shard) /* 13 */
{
	pasco_per_worker_dataset  *d;
	pasco_per_worker_iterator *it;
	pasco_remote_value        *rv[5];
	double                     by_worker[5] = {0};
	pasco_tensor              *n            = test_scalar(PASCO_I64, 5);
	start(1, 5, 1);
	PASCO_PASS(pasco_per_worker_dataset_create(&d, coord, "range_shard"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, d));
	pasco_arg args[] = {pasco_arg_iterator(it), pasco_arg_tensor(n)};
	for (int i = 0; i < 5; i++) {
		PASCO_PASS(
		    pasco_schedule(coord, "sum_shard", args, 2, &rv[i]));
	}
	PASCO_PASS(pasco_join(coord));
	for (int i = 0; i < 5; i++) {
		const pasco_value *v;
		PASCO_PASS(pasco_remote_value_fetch(rv[i], &v));
		by_worker[(int) pasco_value_scalar(pasco_value_item(v, 0))] =
		    pasco_value_scalar(pasco_value_item(v, 1));
		pasco_remote_value_free(rv[i]);
	}
	/* worker i holds i and i + 5 */
	for (int w = 0; w < 5; w++) {
		cr_assert_eq(by_worker[w], 5 + 2 * w, "worker %d summed %g", w,
		    by_worker[w]);
	}
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	pasco_tensor_release(n);
	stop();
}

PASCO_DATASET(just_one)
{
	(void) ctx;
	return pasco_dataset_range(out, 1, 2, 1);
}

/* args: iterator, variable. v += next(it); returns the element. */
PASCO_FUNCTION(add_next)
{
	pasco_dataset  *it;
	pasco_variable *v;
	pasco_value    *e;
	pasco_tensor   *x;
	int             rv;
	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &v)) != 0) {
		return rv;
	}
	if ((rv = pasco_dataset_next(it, &e)) != 0) {
		return pasco_call_fail(call, rv, "the iterator is exhausted");
	}
	x = f32(pasco_value_scalar(e));
	pasco_value_free(e);
	rv = pasco_variable_assign_add(v, x);
	pasco_call_return(call, pasco_value_list(1, pasco_value_tensor(x)));
	return rv;
}

Test(coordinator, each_new_iterator_starts_from_the_beginning) /* 17 */
{
	pasco_per_worker_dataset *d;
	pasco_variable           *v;
	start(1, 2, 0);
	v = make_var("v", 0);
	PASCO_PASS(pasco_per_worker_dataset_create(&d, coord, "just_one"));
	for (int i = 0; i < 2; i++) {
		pasco_per_worker_iterator *it;
		pasco_remote_value        *rv;
		const pasco_value         *out;
		PASCO_PASS(pasco_per_worker_iterator_create(&it, d));
		pasco_arg args[] = {
		    pasco_arg_iterator(it), pasco_arg_variable(v)};
		PASCO_PASS(pasco_schedule(coord, "add_next", args, 2, &rv));
		PASCO_PASS(pasco_remote_value_fetch(rv, &out));
		cr_assert_eq(pasco_value_scalar(out), 1.0);
		pasco_remote_value_free(rv);
		pasco_per_worker_iterator_free(it);
	}
	PASCO_PASS(pasco_join(coord));
	cr_assert_eq(test_read_scalar(v), 2.0);
	pasco_per_worker_dataset_free(d);
	pasco_variable_free(v);
	stop();
}

/* End of data is a status of its own: the step function that finds its
 * iterator exhausted returns PASCO_EOUTOFRANGE, its remote value and the
 * next join report it as such (TensorFlow's OutOfRangeError), and the
 * closure is not retried. */
Test(coordinator, end_of_data_reaches_the_coordinator_as_out_of_range)
{
	pasco_per_worker_dataset  *d;
	pasco_per_worker_iterator *it;
	pasco_variable            *v;
	pasco_remote_value        *first, *second;
	const pasco_value         *out;
	start(1, 1, 1);
	v = make_var("v", 0);
	PASCO_PASS(pasco_per_worker_dataset_create(&d, coord, "just_one"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, d));
	pasco_arg args[] = {pasco_arg_iterator(it), pasco_arg_variable(v)};
	PASCO_PASS(pasco_schedule(coord, "add_next", args, 2, &first));
	PASCO_PASS(pasco_remote_value_fetch(first, &out));
	cr_assert_eq(pasco_value_scalar(out), 1.0);
	PASCO_PASS(pasco_schedule(coord, "add_next", args, 2, &second));
	PASCO_FAIL(pasco_join(coord), PASCO_EOUTOFRANGE);
	cr_assert(strstr(pasco_coordinator_error(coord),
	              "the iterator is exhausted"),
	    "%s", pasco_coordinator_error(coord));
	PASCO_FAIL(pasco_remote_value_fetch(second, &out), PASCO_EOUTOFRANGE);
	PASCO_PASS(pasco_join(coord)); /* raised once */
	cr_assert_eq(
	    test_read_scalar(v), 1.0); /* the failed step changed nothing */
	pasco_remote_value_free(first);
	pasco_remote_value_free(second);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	pasco_variable_free(v);
	stop();
}

PASCO_DATASET(ten_twos)
{
	pasco_tensor *t;
	pasco_value  *v;
	int           rv;
	(void) ctx;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_I64, 1, (int64_t[]){10}));
	for (int i = 0; i < 10; i++) {
		pasco_tensor_set(t, i, 2);
	}
	v  = pasco_value_tensor(t);
	rv = pasco_dataset_from_tensors(out, v);
	pasco_value_free(v);
	return rv;
}

Test(coordinator, async_schedule_and_join) /* 18 */
{
	pasco_per_worker_dataset  *d;
	pasco_per_worker_iterator *it;
	pasco_variable            *v;
	bool                       done = false;
	start(1, 2, 0);
	v = make_var("v", 0);
	PASCO_PASS(pasco_per_worker_dataset_create(&d, coord, "ten_twos"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, d));
	PASCO_PASS(pasco_join(coord)); /* nothing scheduled: no hang */
	cr_assert_eq(test_read_scalar(v), 0);
	pasco_arg args[] = {pasco_arg_iterator(it), pasco_arg_variable(v)};
	for (int i = 0; i < 5; i++) {
		PASCO_PASS(pasco_schedule(coord, "add_next", args, 2, NULL));
	}
	PASCO_PASS(pasco_join(coord));
	cr_assert_eq(test_read_scalar(v), 10);
	for (int i = 0; i < 5; i++) {
		PASCO_PASS(pasco_schedule(coord, "add_next", args, 2, NULL));
	}
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(pasco_join(coord));
	}
	PASCO_PASS(pasco_done(coord, &done));
	cr_assert(done);
	cr_assert_eq(test_read_scalar(v), 20);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	pasco_variable_free(v);
	stop();
}

/* args: f32 x. Fails when x > 0 (TensorFlow's assert_non_positive). */
PASCO_FUNCTION(fail_if_positive)
{
	const pasco_tensor *x;
	int                 rv;
	if ((rv = pasco_call_tensor(call, 0, &x)) != 0) {
		return rv;
	}
	if (pasco_tensor_get(x, 0) > 0) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "x must be <= 0, got %g", pasco_tensor_get(x, 0));
	}
	return PASCO_OK;
}

Test(coordinator, join_raises_a_closure_error_once_then_recovers) /* 29, 32 */
{
	pasco_tensor *pos = f32(1), *neg = f32(-1);
	pasco_arg bad = pasco_arg_tensor(pos), good = pasco_arg_tensor(neg);
	start(1, 3, 0);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 3; i++) {
			PASCO_PASS(pasco_schedule(
			    coord, "fail_if_positive", &good, 1, NULL));
		}
		PASCO_PASS(
		    pasco_schedule(coord, "fail_if_positive", &bad, 1, NULL));
		PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
		cr_assert(strstr(pasco_coordinator_error(coord),
		              "x must be <= 0, got 1"),
		    "%s", pasco_coordinator_error(coord));
		PASCO_PASS(pasco_join(coord)); /* raised once */
	}
	pasco_tensor_release(pos);
	pasco_tensor_release(neg);
	stop();
}

Test(coordinator, schedule_raises_a_pending_error) /* 30, 31 */
{
	pasco_tensor *pos = f32(1);
	pasco_arg     bad = pasco_arg_tensor(pos);
	int           rv  = PASCO_OK;
	start(1, 2, 0);
	PASCO_PASS(pasco_schedule(coord, "fail_if_positive", &bad, 1, NULL));
	for (int i = 0; i < 1000 && rv == PASCO_OK; i++) {
		rv = pasco_schedule(coord, "fail_if_positive", &bad, 1, NULL);
		usleep(1000);
	}
	cr_assert_eq(rv, PASCO_EINVAL, "schedule never raised the error");
	PASCO_PASS(
	    pasco_join(coord)); /* the cancelled ones' errors never surface */
	pasco_tensor_release(pos);
	stop();
}

/* A gate that holds closures until the test opens it. */
static volatile int gate_open;

/* args: f32 x, then fails if x > 0, after the gate opens. */
PASCO_FUNCTION(gated)
{
	const pasco_tensor *x;
	int                 rv;
	for (int i = 0;
	     i < 1000 && !__atomic_load_n(&gate_open, __ATOMIC_SEQ_CST); i++) {
		usleep(5000);
	}
	if ((rv = pasco_call_tensor(call, 0, &x)) != 0) {
		return rv;
	}
	if (pasco_tensor_get(x, 0) > 0) {
		return pasco_call_fail(call, PASCO_EINVAL, "gated failure");
	}
	usleep(200 * 1000); /* the failing one lands first */
	pasco_call_return(call, pasco_value_tensor(f32(7)));
	return PASCO_OK;
}

static void *
open_gate_later(void *arg)
{
	(void) arg;
	usleep(100 * 1000);
	__atomic_store_n(&gate_open, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

Test(coordinator,
    an_error_cancels_queued_closures_and_waits_for_running_ones) /* 36, 37 */
{
	pasco_per_worker_dataset  *d;
	pasco_per_worker_iterator *it;
	pasco_variable            *v;
	pasco_remote_value        *slow, *queued[3];
	const pasco_value         *out;
	pasco_tensor              *pos = f32(1), *neg = f32(-1);
	pasco_arg bad = pasco_arg_tensor(pos), ok = pasco_arg_tensor(neg);
	pthread_t th;

	start(1, 1, 2);
	v = make_var("v", 0);
	PASCO_PASS(pasco_per_worker_dataset_create(&d, coord, "ten_twos"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, d));
	pasco_arg with_it[] = {pasco_arg_iterator(it), pasco_arg_variable(v)};
	PASCO_PASS(pasco_schedule(coord, "add_next", with_it, 2, NULL));
	PASCO_PASS(pasco_join(coord));
	/* two in flight (the window), three queued behind them */
	PASCO_PASS(pasco_schedule(coord, "gated", &ok, 1, &slow));
	PASCO_PASS(pasco_schedule(coord, "gated", &bad, 1, NULL));
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(pasco_schedule(coord, "gated", &ok, 1, &queued[i]));
	}
	pthread_create(&th, NULL, open_gate_later, NULL);
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	pthread_join(th, NULL);
	PASCO_PASS(pasco_remote_value_fetch(slow, &out)); /* it was running */
	cr_assert_eq(pasco_value_scalar(out), 7);
	for (int i = 0; i < 3; i++) {
		PASCO_FAIL(pasco_remote_value_fetch(queued[i], &out),
		    PASCO_ECANCELLED);
		cr_assert(
		    strstr(pasco_remote_value_error(queued[i]), "cancelled"));
		pasco_remote_value_free(queued[i]);
	}
	/* the coordinator and the iterator are still usable */
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(
		    pasco_schedule(coord, "add_next", with_it, 2, NULL));
	}
	PASCO_PASS(pasco_join(coord));
	cr_assert_eq(test_read_scalar(v), 8);
	pasco_remote_value_free(slow);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	pasco_variable_free(v);
	pasco_tensor_release(pos);
	pasco_tensor_release(neg);
	stop();
}

PASCO_DATASET(broken_factory)
{
	(void) ctx;
	(void) out;
	return PASCO_EIO;
}

Test(
    coordinator, a_failed_iterator_fails_the_closures_that_use_it) /* 34, 35 */
{
	pasco_per_worker_dataset  *bad, *good;
	pasco_per_worker_iterator *bad_it, *good_it;
	pasco_variable            *v;
	pasco_remote_value        *rv;
	const pasco_value         *out;
	start(1, 1, 0);
	v = make_var("v", 0);
	PASCO_PASS(
	    pasco_per_worker_dataset_create(&bad, coord, "broken_factory"));
	PASCO_PASS(pasco_per_worker_dataset_create(&good, coord, "just_one"));
	PASCO_PASS(pasco_per_worker_iterator_create(&bad_it, bad));
	PASCO_PASS(pasco_per_worker_iterator_create(&good_it, good));
	pasco_arg use_good[] = {
	    pasco_arg_iterator(good_it), pasco_arg_variable(v)};
	PASCO_PASS(pasco_schedule(coord, "add_next", use_good, 2, &rv));
	PASCO_PASS(pasco_join(coord));
	PASCO_PASS(pasco_remote_value_fetch(rv, &out));
	pasco_remote_value_free(rv);
	pasco_arg use_bad[] = {
	    pasco_arg_iterator(bad_it), pasco_arg_variable(v)};
	PASCO_PASS(pasco_schedule(coord, "add_next", use_bad, 2, &rv));
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	cr_assert(strstr(pasco_coordinator_error(coord), "broken_factory"),
	    "%s", pasco_coordinator_error(coord));
	PASCO_FAIL(pasco_remote_value_fetch(rv, &out), PASCO_EINVAL);
	pasco_remote_value_free(rv);
	pasco_per_worker_iterator_free(bad_it);
	pasco_per_worker_iterator_free(good_it);
	pasco_per_worker_dataset_free(bad);
	pasco_per_worker_dataset_free(good);
	pasco_variable_free(v);
	stop();
}

/* args: variable. Returns (v + 1, v - 1). */
PASCO_FUNCTION(plus_minus)
{
	pasco_variable *v;
	pasco_tensor   *t;
	int             rv;
	if ((rv = pasco_call_variable(call, 0, &v)) != 0 ||
	    (rv = pasco_variable_read(v, &t)) != 0) {
		return rv;
	}
	double x = pasco_tensor_get(t, 0);
	pasco_tensor_release(t);
	pasco_call_return(
	    call, pasco_value_list(2, pasco_value_tensor(f32(x + 1)),
	              pasco_value_tensor(f32(x - 1))));
	return PASCO_OK;
}

Test(coordinator, fetch_works_after_every_worker_is_gone) /* 64 */
{
	pasco_variable     *v;
	pasco_remote_value *rv;
	const pasco_value  *out;
	start(1, 2, 0);
	v             = make_var("v", 0);
	pasco_arg arg = pasco_arg_variable(v);
	PASCO_PASS(pasco_schedule(coord, "plus_minus", &arg, 1, &rv));
	PASCO_PASS(pasco_join(coord));
	for (int i = 0; i < tc.nworkers; i++) {
		pasco_server_stop(tc.workers[i]);
	}
	tc.nworkers = 0;
	PASCO_PASS(pasco_remote_value_fetch(rv, &out));
	cr_assert_eq(pasco_value_scalar(pasco_value_item(out, 0)), 1);
	cr_assert_eq(pasco_value_scalar(pasco_value_item(out, 1)), -1);
	pasco_remote_value_free(rv);
	pasco_variable_free(v);
	stop();
}

Test(coordinator, closures_of_a_stopped_worker_run_on_the_others)
{
	pasco_variable *v;
	pasco_tensor   *one = f32(1);
	start(1, 2, 0);
	v                = make_var("v", 0);
	pasco_arg args[] = {pasco_arg_variable(v), pasco_arg_tensor(one)};
	pasco_server_stop(tc.workers[0]);
	tc.workers[0] = NULL;
	for (int i = 0; i < 50; i++) {
		PASCO_PASS(pasco_schedule(coord, "add_to_var", args, 2, NULL));
	}
	PASCO_PASS(pasco_join(coord));
	cr_assert_eq(test_read_scalar(v), 50);
	pasco_tensor_release(one);
	pasco_variable_free(v);
	stop();
}

Test(coordinator, one_coordinator_per_strategy) /* 14 */
{
	pasco_coordinator *second;
	start(1, 1, 0);
	PASCO_FAIL(
	    pasco_coordinator_create(&second, strategy, NULL), PASCO_EEXIST);
	cr_assert_null(second);
	stop();
}

Test(coordinator,
    strategy_rejects_an_invalid_cluster_and_times_out_on_a_dead_one)
{
	pasco_cluster         *c;
	pasco_strategy        *s;
	char                   err[128];
	pasco_strategy_options o = {.connect_timeout_ms = 200};
	PASCO_PASS(pasco_cluster_parse_json(&c,
	    "{\"cluster\": {\"worker\": "
	    "[\"inproc://nobody-w\"]}}",
	    err, sizeof(err)));
	PASCO_FAIL(pasco_strategy_create(&s, c, NULL), PASCO_EINVAL);
	pasco_cluster_free(c);
	PASCO_PASS(pasco_cluster_parse_json(&c,
	    "{\"cluster\": {\"worker\": "
	    "[\"inproc://nobody-w\"], \"ps\": [\"inproc://nobody-ps\"]}}",
	    err, sizeof(err)));
	PASCO_FAIL(pasco_strategy_create(&s, c, &o), PASCO_ETIMEDOUT);
	cr_assert_null(s);
	pasco_cluster_free(c);
}

/* args: iterator. Returns (worker index, next element). */
PASCO_FUNCTION(where_and_next)
{
	pasco_dataset *it;
	pasco_value   *e;
	int            rv;
	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = pasco_dataset_next(it, &e)) != 0) {
		return rv;
	}
	pasco_call_return(
	    call, pasco_value_list(2,
	              pasco_value_tensor(f32(pasco_call_worker_index(call))),
	              pasco_value_tensor(f32(pasco_value_scalar(e)))));
	pasco_value_free(e);
	return PASCO_OK;
}

PASCO_DATASET(count_up)
{
	(void) ctx;
	return pasco_dataset_range(out, 0, 1000000, 1);
}

static uint64_t
incarnation_seen(int w)
{
	return pasco_server_incarnation(tc.workers[w]);
}

Test(coordinator, a_restarted_worker_gets_its_iterators_rebuilt_from_the_start)
{
	pasco_per_worker_dataset  *d;
	pasco_per_worker_iterator *it;
	uint64_t                   before;
	start(1, 1, 1);
	PASCO_PASS(pasco_per_worker_dataset_create(&d, coord, "count_up"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, d));
	pasco_arg arg = pasco_arg_iterator(it);
	for (int i = 0; i < 5; i++) {
		PASCO_PASS(
		    pasco_schedule(coord, "where_and_next", &arg, 1, NULL));
	}
	PASCO_PASS(pasco_join(coord)); /* the iterator is at 5 */
	before = incarnation_seen(0);
	pasco_server_stop(tc.workers[0]);
	PASCO_PASS(pasco_server_start(
	    &tc.workers[0], tc.cluster, PASCO_ROLE_WORKER, 0));
	cr_assert_neq(incarnation_seen(0), before);
	/* closures scheduled now wait for the worker, then see a fresh
	 * iterator */
	for (int i = 0; i < 3; i++) {
		pasco_remote_value *rv;
		const pasco_value  *out;
		PASCO_PASS(
		    pasco_schedule(coord, "where_and_next", &arg, 1, &rv));
		PASCO_PASS(pasco_remote_value_fetch(rv, &out));
		cr_assert_eq(pasco_value_scalar(pasco_value_item(out, 1)), i,
		    "element %d after the restart is %g: the iterator was not "
		    "rebuilt from the start",
		    i, pasco_value_scalar(pasco_value_item(out, 1)));
		pasco_remote_value_free(rv);
	}
	PASCO_PASS(pasco_join(coord));
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	stop();
}

/* More live iterators than the 256 a fixed array once limited the
 * rebuild to: every one of them is rebuilt from the start. */
Test(coordinator, a_restarted_worker_gets_all_of_300_iterators_rebuilt,
    .timeout = 120)
{
	enum { N = 300 };
	pasco_per_worker_dataset  *d;
	pasco_per_worker_iterator *its[N];
	pasco_remote_value        *rvs[N];
	start(1, 1, 0);
	PASCO_PASS(pasco_per_worker_dataset_create(&d, coord, "count_up"));
	for (int i = 0; i < N; i++) {
		PASCO_PASS(pasco_per_worker_iterator_create(&its[i], d));
		pasco_arg arg = pasco_arg_iterator(its[i]);
		PASCO_PASS(
		    pasco_schedule(coord, "where_and_next", &arg, 1, NULL));
	}
	PASCO_PASS(pasco_join(coord)); /* every iterator is at 1 */
	pasco_server_stop(tc.workers[0]);
	PASCO_PASS(pasco_server_start(
	    &tc.workers[0], tc.cluster, PASCO_ROLE_WORKER, 0));
	for (int i = 0; i < N; i++) {
		pasco_arg arg = pasco_arg_iterator(its[i]);
		PASCO_PASS(
		    pasco_schedule(coord, "where_and_next", &arg, 1, &rvs[i]));
	}
	for (int i = 0; i < N; i++) {
		const pasco_value *out;
		int                rv = pasco_remote_value_fetch(rvs[i], &out);
		cr_assert_eq(rv, PASCO_OK,
		    "iterator %d was not rebuilt on the restarted worker: %s",
		    i, pasco_remote_value_error(rvs[i]));
		cr_assert_eq(pasco_value_scalar(pasco_value_item(out, 1)), 0,
		    "iterator %d gave %g after the restart, not 0", i,
		    pasco_value_scalar(pasco_value_item(out, 1)));
		pasco_remote_value_free(rvs[i]);
		pasco_per_worker_iterator_free(its[i]);
	}
	PASCO_PASS(pasco_join(coord));
	pasco_per_worker_dataset_free(d);
	stop();
}

typedef struct blocked_put {
	pasco_coordinator *c;
	pasco_arg          arg;
	volatile int       returned;
} blocked_put;

static void *
schedule_one(void *p)
{
	blocked_put *b = p;
	PASCO_PASS(pasco_schedule(b->c, "gated", &b->arg, 1, NULL));
	__atomic_store_n(&b->returned, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

Test(coordinator, schedule_blocks_while_the_queue_is_full) /* item 5 */
{
	/* batching off: queued closures would ride with the one in flight */
	pasco_coordinator_options o = {
	    .window = 1, .queue_size = 2, .max_batch = 1};
	pasco_tensor *neg = f32(-1);
	blocked_put   b;
	pthread_t     th;
	test_cluster_start(&tc, 1, 1);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, NULL));
	PASCO_PASS(pasco_coordinator_create(&coord, strategy, &o));
	b = (blocked_put){coord, pasco_arg_tensor(neg), 0};
	for (int i = 0; i < 3; i++) { /* 1 in flight (held by the gate) + 2 */
		PASCO_PASS(pasco_schedule(coord, "gated", &b.arg, 1, NULL));
	}
	for (int i = 0; i < 200 && pasci_queue_inflight(&coord->q) == 0; i++) {
		usleep(5000);
	}
	cr_assert_eq(pasci_queue_length(&coord->q), 2);
	pthread_create(&th, NULL, schedule_one, &b);
	usleep(200 * 1000);
	cr_assert_eq(b.returned, 0, "schedule returned with the queue full");
	__atomic_store_n(&gate_open, 1, __ATOMIC_SEQ_CST);
	pthread_join(th, NULL);
	cr_assert_eq(b.returned, 1);
	PASCO_PASS(pasco_join(coord));
	pasco_tensor_release(neg);
	stop();
}

Test(coordinator,
    the_watchdog_reports_a_stall_and_stays_quiet_when_idle) /* 82 */
{
	pasco_coordinator_options o = {
	    .window = 1, .watchdog_timeout_ms = 100};
	pasco_tensor *neg = f32(-1);
	pasco_arg     arg = pasco_arg_tensor(neg);
	uint64_t      fired;
	test_cluster_start(&tc, 1, 1);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, NULL));
	PASCO_PASS(pasco_coordinator_create(&coord, strategy, &o));
	PASCO_PASS(pasco_schedule(coord, "gated", &arg, 1, NULL));
	for (int i = 0; i < 300 && pasco_coordinator_watchdog_count(coord) < 2;
	     i++) {
		usleep(10 * 1000);
	}
	cr_assert_geq(pasco_coordinator_watchdog_count(coord), 2,
	    "a 100 ms watchdog did not fire twice during a 3 s stall");
	__atomic_store_n(&gate_open, 1, __ATOMIC_SEQ_CST);
	PASCO_PASS(pasco_join(coord));
	/* a report decided just before the closure landed may still be
	 * counted: let one watchdog tick (10 ms) pass before sampling */
	usleep(50 * 1000);
	fired = pasco_coordinator_watchdog_count(coord);
	usleep(400 * 1000); /* idle: nothing queued, nothing in flight */
	cr_assert_eq(pasco_coordinator_watchdog_count(coord), fired);
	pasco_tensor_release(neg);
	stop();
}

/* Threads of this process whose name starts with prefix. */
static int
threads_named(const char *prefix)
{
	char cmd[256], line[64];
	int  n = 0;
	snprintf(cmd, sizeof(cmd), "cat /proc/%d/task/*/comm", (int) getpid());
	FILE *p = popen(cmd, "r");
	while (p != NULL && fgets(line, sizeof(line), p) != NULL) {
		n += strncmp(line, prefix, strlen(prefix)) == 0;
	}
	if (p != NULL) {
		pclose(p);
	}
	return n;
}

Test(coordinator, no_coordinator_thread_is_left_after_destroy) /* 52 */
{
	start(1, 2, 0);
	cr_assert_eq(threads_named("pasco-disp"), 2);
	cr_assert_eq(threads_named("pasco-heartbeat"), 1);
	stop(); /* the servers too */
	cr_assert_eq(threads_named("pasco-disp"), 0);
	cr_assert_eq(threads_named("pasco-heartbeat"), 0);
	cr_assert_eq(threads_named("pasco-rpc"), 0);
}

PASCO_DATASET(missing_files)
{
	(void) out;
	return pasco_dataset_fail(PASCO_ENOTFOUND,
	    "no train-*.tfrecord file in /data/w%d", (int) ctx->worker_index);
}

Test(coordinator, a_failing_factory_says_why_to_the_chief)
{
	pasco_per_worker_dataset  *d;
	pasco_per_worker_iterator *it;
	start(1, 1, 1);
	PASCO_PASS(
	    pasco_per_worker_dataset_create(&d, coord, "missing_files"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, d));
	pasco_arg args[] = {pasco_arg_iterator(it)};
	PASCO_PASS(pasco_schedule(coord, "add_next", args, 1, NULL));
	/* the closure's input failed (EINVAL); the reason is the factory's */
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_coordinator_error(coord),
	        "dataset factory 'missing_files' failed on worker 0: "
	        "not found: no train-*.tfrecord file in /data/w0") != NULL,
	    "%s", pasco_coordinator_error(coord));
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	stop();
}
