/*
 * Error reporting, the reference's section 4.C (ErrorReportingTest, 3
 * workers), each scenario run twice as TensorFlow does: with the default
 * queue, and with a queue of 2 closures (LimitedClosureQueueErrorTest),
 * where pasco_schedule blocks while 2 wait. Also: a closure already in
 * flight when the first error comes keeps its own outcome (its own error,
 * or its value), and what happens to a closure that is running when an
 * error is raised: it is not aborted; join waits for it, and its remote
 * value gets its result (docs/TF_SCENARIOS.md says why).
 */
#include "helpers.h"

#include "coordinator_impl.h"
#include "util.h"

#include <pthread.h>
#include <string.h>

TestSuite(errors, .timeout = 60);

static test_cluster       tc;
static pasco_strategy    *strategy;
static pasco_coordinator *coord;

static void
start(uint32_t queue_size)
{
	/* one closure in flight per worker and no batching, as in
	 * TensorFlow: which closure runs when is then predictable */
	pasco_coordinator_options o = {
	    .queue_size = queue_size, .window = 1, .max_batch = 1};
	test_cluster_start(&tc, 1, 3);
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

/* args: f32 x, optional f32 ms. Sleeps ms, then fails when x > 0 (TF's
 * assert_non_positive) with a message naming x, else returns x. */
/* e_check calls started so far (the workers are in this process). */
static int e_started;

PASCO_FUNCTION(e_check)
{
	const pasco_tensor *x, *ms;
	int                 rv;
	if ((rv = pasco_call_tensor(call, 0, &x)) != 0) {
		return rv;
	}
	__atomic_add_fetch(&e_started, 1, __ATOMIC_SEQ_CST);
	if (pasco_call_arg_count(call) > 1 &&
	    pasco_call_tensor(call, 1, &ms) == 0) {
		usleep((useconds_t) (pasco_tensor_get(ms, 0) * 1000));
	}
	if (pasco_tensor_get(x, 0) > 0) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "x must be <= 0, got %g", pasco_tensor_get(x, 0));
	}
	pasco_call_return(call, pasco_value_tensor(test_scalar(
	                            PASCO_F32, pasco_tensor_get(x, 0))));
	return PASCO_OK;
}

/* Schedules e_check(x) after ms milliseconds of work. */
static int
check(double x, double ms, pasco_remote_value **rv)
{
	pasco_tensor *tx = test_scalar(PASCO_F32, x),
	             *tm = test_scalar(PASCO_F32, ms);
	pasco_arg args[] = {pasco_arg_tensor(tx), pasco_arg_tensor(tm)};
	int       err    = pasco_schedule(coord, "e_check", args, 2, rv);
	pasco_tensor_release(tx);
	pasco_tensor_release(tm);
	return err;
}

static void
assert_error_names(double x)
{
	char want[64];
	snprintf(want, sizeof(want), "x must be <= 0, got %g", x);
	cr_assert(strstr(pasco_coordinator_error(coord), want) != NULL,
	    "want '%s', got '%s'", want, pasco_coordinator_error(coord));
}

/* 29: 3 normal + 1 error fn -> join raises. */
static void
join_raises(uint32_t queue)
{
	start(queue);
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(check(-1, 0, NULL));
	}
	PASCO_PASS(check(1, 0, NULL));
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	assert_error_names(1);
	stop();
}

/* 30 and 31: after an error fn, schedule raises once (normal fns, or
 * more error fns); the next join raises nothing. */
static void
schedule_raises(uint32_t queue, double then)
{
	int rv = PASCO_OK;
	start(queue);
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(check(-1, 0, NULL));
	}
	PASCO_PASS(check(1, 0, NULL));
	for (int i = 0; i < 1000 && rv == PASCO_OK; i++) {
		rv = check(then, 1, NULL);
		usleep(1000);
	}
	cr_assert_eq(rv, PASCO_EINVAL, "schedule never raised");
	assert_error_names(1);
	PASCO_PASS(pasco_join(coord)); /* raised once; the rest cancelled */
	stop();
}

/* 32: the error is cleared: a fresh one is raised the next time. */
static void
error_is_cleared(uint32_t queue)
{
	start(queue);
	PASCO_PASS(check(1, 0, NULL));
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	assert_error_names(1);
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(check(-1, 0, NULL));
	}
	PASCO_PASS(check(2, 0, NULL));
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	assert_error_names(2);
	PASCO_PASS(pasco_join(coord));
	stop();
}

/* 33: the error fn's remote value raises its error; join raises too. */
static void
remote_value_returns_error(uint32_t queue)
{
	pasco_remote_value *rv;
	const pasco_value  *out;
	start(queue);
	PASCO_PASS(check(3, 0, &rv));
	PASCO_FAIL(pasco_remote_value_fetch(rv, &out), PASCO_EINVAL);
	cr_assert(strstr(pasco_remote_value_error(rv), "got 3") != NULL);
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	pasco_remote_value_free(rv);
	stop();
}

PASCO_DATASET(e_broken)
{
	(void) ctx;
	(void) out;
	return pasco_dataset_fail(PASCO_EIO, "no shard file");
}

PASCO_DATASET(e_ones)
{
	pasco_dataset *ds;
	int            rv = pasco_dataset_range(&ds, 1, 2, 1);
	(void) ctx;
	return rv != 0 ? rv : pasco_dataset_repeat(out, ds, -1);
}

/* args: iterator. Returns next(iterator). */
PASCO_FUNCTION(e_next)
{
	pasco_dataset *it;
	pasco_value   *e;
	int            rv;
	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = pasco_dataset_next(it, &e)) != 0) {
		return rv;
	}
	pasco_call_return(call, e);
	return PASCO_OK;
}

/* 34 and 35: a closure whose per-worker input failed raises (join and
 * fetch); one that uses only the good input does not. */
static void
input_errors(uint32_t queue)
{
	pasco_per_worker_dataset  *bad, *good;
	pasco_per_worker_iterator *bad_it, *good_it;
	pasco_remote_value        *rv;
	const pasco_value         *out;
	start(queue);
	PASCO_PASS(pasco_per_worker_dataset_create(&bad, coord, "e_broken"));
	PASCO_PASS(pasco_per_worker_dataset_create(&good, coord, "e_ones"));
	PASCO_PASS(pasco_per_worker_iterator_create(&bad_it, bad));
	PASCO_PASS(pasco_per_worker_iterator_create(&good_it, good));
	pasco_arg use_bad  = pasco_arg_iterator(bad_it);
	pasco_arg use_good = pasco_arg_iterator(good_it);
	PASCO_PASS(pasco_schedule(coord, "e_next", &use_bad, 1, &rv));
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	cr_assert(strstr(pasco_coordinator_error(coord), "no shard file"),
	    "%s", pasco_coordinator_error(coord));
	PASCO_FAIL(pasco_remote_value_fetch(rv, &out), PASCO_EINVAL);
	pasco_remote_value_free(rv);
	PASCO_PASS(pasco_schedule(coord, "e_next", &use_good, 1, &rv));
	PASCO_PASS(pasco_join(coord));
	PASCO_PASS(pasco_remote_value_fetch(rv, &out));
	cr_assert_eq(pasco_value_scalar(out), 1);
	pasco_remote_value_free(rv);
	pasco_per_worker_iterator_free(bad_it);
	pasco_per_worker_iterator_free(good_it);
	pasco_per_worker_dataset_free(bad);
	pasco_per_worker_dataset_free(good);
	stop();
}

/* 36 and 37: 3 normal + a long one + an error fn, then a queue of more:
 * join raises; the queued ones are cancelled; the long one, running when
 * the error came, finishes and keeps its value; an iterator and the
 * coordinator are usable afterwards. */
static void
cancellation(uint32_t queue)
{
	pasco_per_worker_dataset  *d;
	pasco_per_worker_iterator *it;
	pasco_remote_value        *lng, *rvs[2];
	const pasco_value         *out;
	int64_t                    t0;
	start(queue);
	PASCO_PASS(pasco_per_worker_dataset_create(&d, coord, "e_ones"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, d));
	pasco_arg use_it = pasco_arg_iterator(it);
	PASCO_PASS(pasco_schedule(coord, "e_next", &use_it, 1, NULL));
	PASCO_PASS(pasco_join(coord));
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(check(-1, 0, NULL));
	}
	t0 = pasci_now_ms();
	PASCO_PASS(check(-7, 1000, &lng));
	PASCO_PASS(check(1, 100, NULL));
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	/* join waited for the running long closure (TF aborts it), and no
	 * longer than it ran (10 s: a loaded machine) */
	cr_assert_geq(pasci_now_ms() - t0, 1000);
	cr_assert_lt(pasci_now_ms() - t0, 10000);
	cr_assert(pasco_remote_value_is_ready(lng));
	PASCO_PASS(pasco_remote_value_fetch(lng, &out));
	cr_assert_eq(pasco_value_scalar(out), -7);
	pasco_remote_value_free(lng);
	/* closures queued behind the error are cancelled: every worker busy,
	 * the error fn next (it fails on the first worker free), then more
	 * (one with a queue of 2, which the error fn and it fill) */
	size_t after = queue == 2 ? 1 : 2;
	PASCO_PASS(check(-1, 300, NULL));
	PASCO_PASS(check(-1, 1000, NULL));
	PASCO_PASS(check(-1, 1000, NULL));
	PASCO_PASS(check(1, 0, NULL));
	for (size_t i = 0; i < after; i++) {
		PASCO_PASS(check(-1, 0, &rvs[i]));
	}
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	for (size_t i = 0; i < after; i++) {
		PASCO_FAIL(
		    pasco_remote_value_fetch(rvs[i], &out), PASCO_ECANCELLED);
		cr_assert(strstr(pasco_remote_value_error(rvs[i]),
		              "cancelled") != NULL);
		pasco_remote_value_free(rvs[i]);
	}
	/* the same iterator and the coordinator work on */
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(pasco_schedule(coord, "e_next", &use_it, 1, NULL));
	}
	PASCO_PASS(pasco_join(coord));
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	stop();
}

/* TF's testWaitRaiseErrorAfterCancelClosure at the coordinator: a closure
 * already running when the first error lands later fails with its own
 * error, which its remote value keeps; join raises only the first; the
 * coordinator works on. */
static void
later_failure_keeps_its_own_error(uint32_t queue)
{
	pasco_remote_value *first, *later;
	const pasco_value  *out;
	int                 started;
	start(queue);
	started = __atomic_load_n(&e_started, __ATOMIC_SEQ_CST);
	PASCO_PASS(check(5, 300, &later)); /* running, fails after 300 ms */
	/* running before the first error lands (at most 10 s) */
	for (int i = 0; i < 10000 && __atomic_load_n(&e_started,
	                                 __ATOMIC_SEQ_CST) == started;
	     i++) {
		usleep(1000);
	}
	cr_assert_neq(__atomic_load_n(&e_started, __ATOMIC_SEQ_CST), started,
	    "the later closure did not start within 10 s");
	PASCO_PASS(check(4, 0, &first)); /* fails at once: the first */
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	assert_error_names(4);
	cr_assert(pasco_remote_value_is_ready(later),
	    "join returned before the running closure finished");
	PASCO_FAIL(pasco_remote_value_fetch(later, &out), PASCO_EINVAL);
	cr_assert(strstr(pasco_remote_value_error(later), "got 5") != NULL,
	    "%s", pasco_remote_value_error(later));
	PASCO_FAIL(pasco_remote_value_fetch(first, &out), PASCO_EINVAL);
	cr_assert(strstr(pasco_remote_value_error(first), "got 4") != NULL);
	PASCO_PASS(pasco_join(coord)); /* the later error is not raised */
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(check(-1, 0, NULL));
	}
	PASCO_PASS(pasco_join(coord));
	pasco_remote_value_free(first);
	pasco_remote_value_free(later);
	stop();
}

/* A long function that checks for cancellation every 10 ms (at most
 * 20 s): TF's long closure, made abortable. */
PASCO_FUNCTION(e_cooperative)
{
	for (int i = 0; i < 2000; i++) {
		if (pasco_call_is_cancelled(call)) {
			return pasco_call_fail(
			    call, PASCO_ECANCELLED, "stopped at step %d", i);
		}
		usleep(10 * 1000);
	}
	pasco_call_return(call, pasco_value_tensor(test_scalar(PASCO_F32, 1)));
	return PASCO_OK;
}

/* TF's testCancellation with its long closure aborted: a running function
 * that checks pasco_call_is_cancelled stops soon after the error, its
 * remote value reports cancelled, and join does not wait its 20 s; a
 * packed closure stops between its calls. */
static void
running_closures_are_cancelled(uint32_t queue)
{
	pasco_remote_value *coop, *packed;
	const pasco_value  *out;
	pasco_tensor       *x    = test_scalar(PASCO_F32, -1),
	             *ms         = test_scalar(PASCO_F32, 10);
	pasco_arg args[]         = {pasco_arg_tensor(x), pasco_arg_tensor(ms)};
	pasco_schedule_options k = {.repeat = 1000}; /* 10 s of calls */
	int64_t                t0;
	start(queue);
	t0 = pasci_now_ms();
	PASCO_PASS(pasco_schedule(coord, "e_cooperative", NULL, 0, &coop));
	PASCO_PASS(
	    pasco_schedule_with(coord, "e_check", args, 2, &k, &packed));
	PASCO_PASS(check(8, 300, NULL)); /* fails once both run */
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	assert_error_names(8);
	cr_assert_lt(pasci_now_ms() - t0, 5000,
	    "join waited %lld ms for closures it had cancelled",
	    (long long) (pasci_now_ms() - t0));
	PASCO_FAIL(pasco_remote_value_fetch(coop, &out), PASCO_ECANCELLED);
	cr_assert(
	    strstr(pasco_remote_value_error(coop), "stopped at step") != NULL,
	    "%s", pasco_remote_value_error(coop));
	PASCO_FAIL(pasco_remote_value_fetch(packed, &out), PASCO_ECANCELLED);
	cr_assert(strstr(pasco_remote_value_error(packed),
	              "cancelled by the coordinator (an earlier closure "
	              "failed) before call") != NULL,
	    "%s", pasco_remote_value_error(packed));
	pasco_coordinator_metrics m;
	pasco_coordinator_metrics_read(coord, &m);
	cr_assert_eq(m.failed, 1);
	cr_assert_eq(m.cancelled, 2);
	/* closures scheduled after the error are not cancelled */
	pasco_remote_value_free(coop);
	PASCO_PASS(pasco_schedule(coord, "e_cooperative", NULL, 0, &coop));
	PASCO_PASS(check(-1, 0, NULL));
	usleep(100 * 1000);
	cr_assert(!pasco_remote_value_is_ready(coop));
	pasco_remote_value_free(coop);
	pasco_remote_value_free(packed);
	pasco_tensor_release(x);
	pasco_tensor_release(ms);
	stop(); /* abandons the 20 s closure */
}

#define BOTH_QUEUES(name, call)                                               \
	Test(errors, name)                                                    \
	{                                                                     \
		call(0);                                                      \
	}                                                                     \
	Test(errors, name##_with_a_queue_of_2)                                \
	{                                                                     \
		call(2);                                                      \
	}

BOTH_QUEUES(join_raises_the_error, join_raises)                    /* 29 */
BOTH_QUEUES(error_is_cleared_after_it_is_raised, error_is_cleared) /* 32 */
BOTH_QUEUES(a_failed_closures_remote_value_raises_its_error,
    remote_value_returns_error)                                   /* 33 */
BOTH_QUEUES(a_failed_input_fails_only_its_closures, input_errors) /* 34, 35 */
BOTH_QUEUES(running_closures_finish_queued_ones_are_cancelled,
    cancellation) /* 36, 37 */
BOTH_QUEUES(running_closures_that_check_are_cancelled,
    running_closures_are_cancelled) /* 36 */
BOTH_QUEUES(a_later_failure_keeps_its_own_error,
    later_failure_keeps_its_own_error) /* 8, 9 */

/* A closure still queued when another fails never starts: its remote
 * value, fetched before any schedule, join or done, says it was
 * cancelled (it used to wait for one of those forever: a training loop
 * fetching its epoch's value hung once a ps could not be restored). The
 * error is still raised by the next join, once. */
static void
fetch_of_a_queued_closure_after_an_error(uint32_t queue)
{
	pasco_remote_value *rv[10] = {0};
	const pasco_value  *v;
	int                 n = queue == 0 ? 10 : 4;
	start(queue);
	/* 3 workers, a window of 1: the first 3 run 300 ms, the failing one
	 * is next, then closures of 200 ms: two of them start as the failing
	 * one does, the others are still queued when it fails */
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(check(-1, 300, &rv[i]));
	}
	PASCO_PASS(check(1, 0, &rv[3]));
	for (int i = 4; i < n; i++) {
		PASCO_PASS(check(-1, 200, &rv[i]));
	}
	PASCO_FAIL(pasco_remote_value_fetch(rv[3], &v), PASCO_EINVAL);
	if (n > 4) {
		PASCO_FAIL(
		    pasco_remote_value_fetch(rv[n - 1], &v), PASCO_ECANCELLED);
	}
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	assert_error_names(1);
	PASCO_PASS(pasco_join(coord));
	for (int i = 0; i < n; i++) {
		pasco_remote_value_free(rv[i]);
	}
	stop();
}

BOTH_QUEUES(a_queued_closures_value_is_cancelled_when_another_fails,
    fetch_of_a_queued_closure_after_an_error)

static void
schedule_raises_then_normal(uint32_t queue)
{
	schedule_raises(queue, -1);
}

static void
schedule_raises_then_errors(uint32_t queue)
{
	schedule_raises(queue, 1);
}

BOTH_QUEUES(schedule_raises_the_error, schedule_raises_then_normal) /* 30 */
BOTH_QUEUES(schedule_raises_once_among_many_failures,
    schedule_raises_then_errors) /* 31 */

typedef struct blocked_put {
	int rv;
	int returned; /* atomic */
} blocked_put;

static void *
schedule_one(void *arg)
{
	blocked_put *b = arg;
	b->rv          = check(-1, 0, NULL);
	__atomic_store_n(&b->returned, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* LimitedClosureQueueErrorTest's point: a schedule blocked on a full queue
 * when a closure fails is woken and raises the error (no closure is taken
 * from the queue while an error is pending, so nothing else frees it). */
Test(errors, a_schedule_blocked_on_a_full_queue_raises_a_new_error)
{
	blocked_put b = {0};
	pthread_t   th;
	int64_t     t0 = pasci_now_ms();
	start(2);
	/* one in flight on each worker: the first fails after 300 ms, the
	 * others run 2 s; then the queue is filled */
	PASCO_PASS(check(6, 300, NULL));
	PASCO_PASS(check(-1, 2000, NULL));
	PASCO_PASS(check(-1, 2000, NULL));
	PASCO_PASS(check(-1, 0, NULL));
	PASCO_PASS(check(-1, 0, NULL));
	pthread_create(&th, NULL, schedule_one, &b);
	for (int i = 0;
	     i < 500 && !__atomic_load_n(&b.returned, __ATOMIC_SEQ_CST); i++) {
		usleep(10 * 1000);
	}
	cr_assert(__atomic_load_n(&b.returned, __ATOMIC_SEQ_CST),
	    "schedule is still blocked 5 s after the error");
	/* raised once the closures running when it came have finished */
	cr_assert_geq(pasci_now_ms() - t0, 2000);
	pthread_join(th, NULL);
	cr_assert_eq(b.rv, PASCO_EINVAL, "%s", pasco_errname(b.rv));
	PASCO_PASS(pasco_join(coord));
	stop();
}
