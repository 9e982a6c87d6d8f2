/*
 * Step packing (pasco_schedule_with, repeat: K calls of a step function in
 * one closure) and automatic batching (closures queued behind a full
 * window sent in one message), over an in-process cluster.
 */
#include "helpers.h"

#include "coordinator_impl.h"

#include <string.h>
#include <unistd.h>

TestSuite(packing, .timeout = 60);

static test_cluster       tc;
static pasco_strategy    *strategy;
static pasco_coordinator *coord;

static void
start(int nworkers)
{
	test_cluster_start(&tc, 1, nworkers);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, NULL));
	PASCO_PASS(pasco_coordinator_create(&coord, strategy, NULL));
}

static void
stop(void)
{
	pasco_coordinator_destroy(coord);
	pasco_strategy_destroy(strategy);
	test_cluster_stop(&tc);
}

/* args: variable v, f32 fail_at. v += 1, then returns this call's
 * repetition index; fails instead when the index equals fail_at. */
PASCO_FUNCTION(count_call)
{
	pasco_variable     *v;
	const pasco_tensor *fail_at;
	pasco_tensor       *one;
	uint32_t            k = pasco_call_repetition(call);
	int                 rv;
	if ((rv = pasco_call_variable(call, 0, &v)) != 0 ||
	    (rv = pasco_call_tensor(call, 1, &fail_at)) != 0) {
		return rv;
	}
	if ((double) k == pasco_tensor_get(fail_at, 0)) {
		return pasco_call_fail(call, PASCO_EINVAL, "failing at %u", k);
	}
	one = test_scalar(PASCO_F32, 1);
	rv  = pasco_variable_assign_add(v, one);
	pasco_tensor_release(one);
	if (rv != 0) {
		return rv;
	}
	pasco_call_return(
	    call, pasco_value_tensor(test_scalar(PASCO_F32, (double) k)));
	return PASCO_OK;
}

static pasco_variable *
zero_var(const char *name)
{
	return test_scalar_var(strategy, name, PASCO_F32, 0);
}

Test(packing, a_packed_closure_calls_the_function_k_times)
{
	pasco_remote_value    *rv[3];
	const pasco_value     *out;
	pasco_schedule_options o = {.repeat = 5};
	start(2);
	pasco_variable *v     = zero_var("v");
	pasco_tensor   *never = test_scalar(PASCO_F32, -1);
	pasco_arg args[] = {pasco_arg_variable(v), pasco_arg_tensor(never)};
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(pasco_schedule_with(
		    coord, "count_call", args, 2, &o, &rv[i]));
	}
	PASCO_PASS(pasco_join(coord));
	cr_assert_eq(test_read_scalar(v), 15);
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(pasco_remote_value_fetch(rv[i], &out));
		cr_assert_eq(pasco_value_scalar(out), 4); /* the last call's */
		pasco_remote_value_free(rv[i]);
	}
	/* repeat 0 and NULL options: once */
	o.repeat = 0;
	PASCO_PASS(
	    pasco_schedule_with(coord, "count_call", args, 2, &o, NULL));
	PASCO_PASS(
	    pasco_schedule_with(coord, "count_call", args, 2, NULL, &rv[0]));
	PASCO_PASS(pasco_join(coord));
	cr_assert_eq(test_read_scalar(v), 17);
	PASCO_PASS(pasco_remote_value_fetch(rv[0], &out));
	cr_assert_eq(pasco_value_scalar(out), 0);
	pasco_remote_value_free(rv[0]);
	pasco_tensor_release(never);
	pasco_variable_free(v);
	stop();
}

Test(packing, the_first_failing_call_ends_the_closure_and_is_named)
{
	pasco_remote_value    *rv;
	const pasco_value     *out;
	pasco_schedule_options o = {.repeat = 5};
	start(1);
	pasco_variable *v      = zero_var("v");
	pasco_tensor   *at_two = test_scalar(PASCO_F32, 2);
	pasco_arg args[] = {pasco_arg_variable(v), pasco_arg_tensor(at_two)};
	PASCO_PASS(pasco_schedule_with(coord, "count_call", args, 2, &o, &rv));
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	cr_assert(strstr(pasco_coordinator_error(coord),
	              "(call 3 of 5 in its closure): failing at 2"),
	    "%s", pasco_coordinator_error(coord));
	PASCO_FAIL(pasco_remote_value_fetch(rv, &out), PASCO_EINVAL);
	cr_assert_eq(test_read_scalar(v), 2); /* calls 1 and 2 ran, no more */
	pasco_remote_value_free(rv);
	pasco_tensor_release(at_two);
	pasco_variable_free(v);
	stop();
}

/* args: f32 n. Returns [k, k * k] for call k, or, from its call n on, a
 * single number (a result of another size). */
PASCO_FUNCTION(pair_call)
{
	const pasco_tensor *n;
	pasco_tensor       *t;
	double              k = pasco_call_repetition(call);
	int                 rv;
	if ((rv = pasco_call_tensor(call, 0, &n)) != 0) {
		return rv;
	}
	if (k >= pasco_tensor_get(n, 0)) {
		pasco_call_return(
		    call, pasco_value_tensor(test_scalar(PASCO_F32, k)));
		return PASCO_OK;
	}
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, (int64_t[]){2}));
	pasco_tensor_set(t, 0, k);
	pasco_tensor_set(t, 1, k * k);
	pasco_call_return(call, pasco_value_tensor(t));
	return PASCO_OK;
}

Test(packing, a_closure_that_sums_returns_the_sums_and_its_calls)
{
	pasco_remote_value    *rv;
	const pasco_value     *out;
	pasco_schedule_options o = {.repeat = 4, .sum_results = true};
	start(1);
	pasco_tensor *never = test_scalar(PASCO_F32, 100);
	pasco_arg     arg   = pasco_arg_tensor(never);
	PASCO_PASS(pasco_schedule_with(coord, "pair_call", &arg, 1, &o, &rv));
	PASCO_PASS(pasco_remote_value_fetch(rv, &out));
	const pasco_tensor *t = pasco_value_as_tensor(out);
	cr_assert(t != NULL && t->dtype == PASCO_F64 && t->count == 3);
	cr_assert_eq(pasco_tensor_get(t, 0), 0 + 1 + 2 + 3);
	cr_assert_eq(pasco_tensor_get(t, 1), 0 + 1 + 4 + 9);
	cr_assert_eq(pasco_tensor_get(t, 2), 4); /* calls */
	pasco_remote_value_free(rv);
	/* once (repeat 0): that call's numbers and 1 */
	o.repeat = 0;
	PASCO_PASS(pasco_schedule_with(coord, "pair_call", &arg, 1, &o, &rv));
	PASCO_PASS(pasco_remote_value_fetch(rv, &out));
	t = pasco_value_as_tensor(out);
	cr_assert(t != NULL && t->count == 3 && pasco_tensor_get(t, 2) == 1);
	pasco_remote_value_free(rv);
	pasco_tensor_release(never);
	/* a call that returns another count of numbers fails the closure */
	pasco_tensor *at_two = test_scalar(PASCO_F32, 2);
	arg                  = pasco_arg_tensor(at_two);
	o.repeat             = 4;
	PASCO_PASS(pasco_schedule_with(coord, "pair_call", &arg, 1, &o, &rv));
	PASCO_FAIL(pasco_remote_value_fetch(rv, &out), PASCO_EINVAL);
	cr_assert(strstr(pasco_remote_value_error(rv),
	              "(call 3 of 4 in its closure): it returned 1 number (a "
	              "tensor)") != NULL,
	    "%s", pasco_remote_value_error(rv));
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	pasco_remote_value_free(rv);
	pasco_tensor_release(at_two);
	stop();
}

/* Automatic batching: with the window full and closures queued, they go
 * to the worker together; each keeps its own result, error and
 * cancellation. */

static int gate_open;

/* args: f32 x. Waits for the gate when x < 0; fails when x == 999;
 * returns x + 1. */
PASCO_FUNCTION(plus_one)
{
	const pasco_tensor *t;
	double              x;
	int                 rv;
	if ((rv = pasco_call_tensor(call, 0, &t)) != 0) {
		return rv;
	}
	x = pasco_tensor_get(t, 0);
	for (int i = 0; x < 0 && i < 2000 &&
	                !__atomic_load_n(&gate_open, __ATOMIC_SEQ_CST);
	     i++) {
		usleep(5000);
	}
	if (x == 999) {
		return pasco_call_fail(call, PASCO_EINVAL, "x is 999");
	}
	pasco_call_return(
	    call, pasco_value_tensor(test_scalar(PASCO_F32, x + 1)));
	return PASCO_OK;
}

/* ps recovery is on when set: the strategy's checkpoint_dir */
static const char *recovery_dir;

/* One gated closure in flight (window 1), then values[] queued behind it;
 * the gate opens once they are all queued. */
static void
run_behind_gate(uint32_t max_batch, const double *values, int n,
    pasco_remote_value **rv, int *join_err)
{
	pasco_coordinator_options o  = {.window = 1, .max_batch = max_batch};
	pasco_strategy_options    so = {.checkpoint_dir = recovery_dir};
	pasco_remote_value       *first;
	pasco_tensor             *t = test_scalar(PASCO_F32, -1);
	pasco_arg                 a = pasco_arg_tensor(t);
	test_cluster_start(&tc, 1, 1);
	PASCO_PASS(pasco_strategy_create(
	    &strategy, tc.cluster, recovery_dir != NULL ? &so : NULL));
	PASCO_PASS(pasco_coordinator_create(&coord, strategy, &o));
	__atomic_store_n(&gate_open, 0, __ATOMIC_SEQ_CST);
	PASCO_PASS(pasco_schedule(coord, "plus_one", &a, 1, &first));
	for (int i = 0; i < 400 && pasci_queue_inflight(&coord->q) == 0; i++) {
		usleep(5000);
	}
	pasco_tensor_release(t);
	for (int i = 0; i < n; i++) {
		t = test_scalar(PASCO_F32, values[i]);
		a = pasco_arg_tensor(t);
		PASCO_PASS(pasco_schedule(coord, "plus_one", &a, 1, &rv[i]));
		pasco_tensor_release(t);
	}
	__atomic_store_n(&gate_open, 1, __ATOMIC_SEQ_CST);
	*join_err = pasco_join(coord);
	pasco_remote_value_free(first);
}

Test(packing, queued_closures_ride_together_and_keep_their_results)
{
	double              values[40];
	pasco_remote_value *rv[40];
	const pasco_value  *out;
	int                 err;
	for (int i = 0; i < 40; i++) {
		values[i] = i;
	}
	run_behind_gate(0, values, 40, rv, &err);
	PASCO_PASS(err);
	cr_assert_gt(coord->riders_sent, 0, "nothing was batched");
	for (int i = 0; i < 40; i++) {
		PASCO_PASS(pasco_remote_value_fetch(rv[i], &out));
		cr_assert_eq(pasco_value_scalar(out), i + 1);
		pasco_remote_value_free(rv[i]);
	}
	stop();
	/* max_batch 1: one closure per message */
	run_behind_gate(1, values, 40, rv, &err);
	PASCO_PASS(err);
	cr_assert_eq(coord->riders_sent, 0);
	for (int i = 0; i < 40; i++) {
		pasco_remote_value_free(rv[i]);
	}
	stop();
}

static void
check_a_failure_cancels_the_closures_after_it(void)
{
	double              values[] = {1, 2, 999, 4, 5, 6};
	pasco_remote_value *rv[6];
	const pasco_value  *out;
	int                 err;
	run_behind_gate(0, values, 6, rv, &err);
	PASCO_FAIL(err, PASCO_EINVAL);
	cr_assert(strstr(pasco_coordinator_error(coord), "x is 999"), "%s",
	    pasco_coordinator_error(coord));
	cr_assert_gt(coord->riders_sent, 0, "nothing was batched");
	for (int i = 0; i < 2; i++) {
		PASCO_PASS(pasco_remote_value_fetch(rv[i], &out));
		cr_assert_eq(pasco_value_scalar(out), values[i] + 1);
	}
	PASCO_FAIL(pasco_remote_value_fetch(rv[2], &out), PASCO_EINVAL);
	for (int i = 3; i < 6; i++) {
		PASCO_FAIL(
		    pasco_remote_value_fetch(rv[i], &out), PASCO_ECANCELLED);
	}
	for (int i = 0; i < 6; i++) {
		pasco_remote_value_free(rv[i]);
	}
	PASCO_PASS(pasco_join(coord)); /* raised once; usable again */
	stop();
}

Test(packing, a_failure_in_a_batch_cancels_the_closures_after_it)
{
	check_a_failure_cancels_the_closures_after_it();
}

/* A batch's closures after a failed one go back to the queue, to run again
 * when that one is retried (a ps lost and restored); an application error
 * is not retried, so they are cancelled as without recovery. */
Test(packing,
    with_ps_recovery_an_error_in_a_batch_still_cancels_the_closures_after_it)
{
	char dir[] = "/tmp/pasco-packing-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	recovery_dir = dir;
	check_a_failure_cancels_the_closures_after_it();
	recovery_dir = NULL;
	cr_assert_eq(rmdir(dir), 0);
}
