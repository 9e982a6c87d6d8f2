/*
 * The dispatch engine when the coordinator runs out of memory. The program
 * is linked with -Wl,--wrap=malloc,--wrap=nng_msg_alloc (tests/meson.build),
 * so the library's own allocations go through the wrappers below, which
 * fail the next N of them made on a dispatcher thread ("pasco-disp-*")
 * while every other thread (the in-process servers, the test) allocates as
 * usual. It is linked with --wrap=pasci_rpc_call_fast too: while `gone`
 * is set, a closure sent to a worker fails at once as a send on a lost
 * connection does (pasci_rpc_call_async: "not connected"), counted.
 */
#include "helpers.h"

#include <nng/nng.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bulk.h"
#include "coordinator_impl.h"

TestSuite(dispatch, .timeout = 30);

void *__real_malloc(size_t size);
int   __real_nng_msg_alloc(nng_msg **m, size_t size);

static int fail_mallocs;  /* atomic: dispatcher mallocs still to fail */
static int fail_messages; /* atomic: dispatcher messages still to fail */

static bool
on_dispatcher_taking(int *budget)
{
	char name[16] = "";
	if (__atomic_load_n(budget, __ATOMIC_SEQ_CST) <= 0 ||
	    pthread_getname_np(pthread_self(), name, sizeof(name)) != 0 ||
	    strncmp(name, "pasco-disp", 10) != 0) {
		return false;
	}
	return __atomic_sub_fetch(budget, 1, __ATOMIC_SEQ_CST) >= 0;
}

void *
__wrap_malloc(size_t size)
{
	return on_dispatcher_taking(&fail_mallocs) ? NULL
	                                           : __real_malloc(size);
}

int
__wrap_nng_msg_alloc(nng_msg **m, size_t size)
{
	if (on_dispatcher_taking(&fail_messages)) {
		*m = NULL;
		return NNG_ENOMEM;
	}
	return __real_nng_msg_alloc(m, size);
}

void __real_pasci_rpc_call_fast(pasci_rpc_client *c, nng_msg *req,
    int64_t timeout_ms, pasci_rpc_done_fn done, void *arg);

static int gone;  /* atomic: sends fail as on a lost connection */
static int sends; /* atomic: sends made while gone */

void
__wrap_pasci_rpc_call_fast(pasci_rpc_client *c, nng_msg *req,
    int64_t timeout_ms, pasci_rpc_done_fn done, void *arg)
{
	if (!__atomic_load_n(&gone, __ATOMIC_SEQ_CST)) {
		__real_pasci_rpc_call_fast(c, req, timeout_ms, done, arg);
		return;
	}
	__atomic_add_fetch(&sends, 1, __ATOMIC_SEQ_CST);
	nng_msg_free(req);
	done(arg, PASCO_EUNAVAILABLE, NULL, "not connected");
}

PASCO_FUNCTION(nothing)
{
	(void) call;
	return PASCO_OK;
}

static test_cluster       tc;
static pasco_strategy    *strategy;
static pasco_coordinator *coord;

static void
start(void)
{
	pasco_coordinator_options o = {.window = 1};
	test_cluster_start(&tc, 1, 1);
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

/* Schedules one closure while the dispatcher's next n allocations fail:
 * join returns PASCO_ENOMEM, so does the remote value (with the reason,
 * when there was memory to copy it), and the coordinator runs the next
 * closure. */
static void
check_unsent_closure_fails(int *budget, int n)
{
	pasco_remote_value *rv;
	const pasco_value  *out;
	start();
	__atomic_store_n(budget, n, __ATOMIC_SEQ_CST);
	PASCO_PASS(pasco_schedule(coord, "nothing", NULL, 0, &rv));
	PASCO_FAIL(pasco_join(coord), PASCO_ENOMEM);
	cr_assert(strstr(pasco_coordinator_error(coord),
	              "out of memory sending closure"),
	    "%s", pasco_coordinator_error(coord));
	PASCO_FAIL(pasco_remote_value_fetch(rv, &out), PASCO_ENOMEM);
	cr_assert(n > 1 || strstr(pasco_remote_value_error(rv), "'nothing'"),
	    "%s", pasco_remote_value_error(rv));
	pasco_remote_value_free(rv);
	__atomic_store_n(budget, 0, __ATOMIC_SEQ_CST);
	PASCO_PASS(pasco_schedule(coord, "nothing", NULL, 0, &rv));
	PASCO_PASS(pasco_join(coord));
	PASCO_PASS(pasco_remote_value_fetch(rv, &out));
	pasco_remote_value_free(rv);
	stop();
}

Test(dispatch, a_closure_without_memory_for_its_flight_fails_and_join_returns)
{
	check_unsent_closure_fails(&fail_mallocs, 1);
}

/* The closure was lost when the flight to report the failure could not
 * be allocated either: join never returned. */
Test(dispatch, a_closure_is_not_lost_when_allocations_keep_failing,
    .timeout = 10)
{
	check_unsent_closure_fails(&fail_mallocs, 2);
}

Test(dispatch, a_closure_whose_message_cannot_be_allocated_fails_once)
{
	check_unsent_closure_fails(&fail_messages, 1);
}

/* Issue 31's item 10: a closure sent to a worker whose connection is gone
 * (its state change not yet seen) was sent again in a tight loop, 191
 * times in 2 ms, each logged. Now the worker backs off (50 ms, doubling)
 * and it is said once; the closure runs once the connection is back. */
Test(dispatch, a_closure_to_a_lost_connection_backs_off_and_is_said_once)
{
	pasco_remote_value *rv;
	const pasco_value  *out;
	double              t0;
	int                 saved, n;
	setenv("PASCO_LOG", "info", 1);
	saved = test_stderr_capture();
	start();
	/* one closure over the real connection first: a connection coming
	 * up resets what was said, so a first send racing it would be said
	 * twice */
	PASCO_PASS(pasco_schedule(coord, "nothing", NULL, 0, &rv));
	PASCO_PASS(pasco_join(coord));
	pasco_remote_value_free(rv);
	__atomic_store_n(&gone, 1, __ATOMIC_SEQ_CST);
	PASCO_PASS(pasco_schedule(coord, "nothing", NULL, 0, &rv));
	t0 = pasco_test_now();
	while (__atomic_load_n(&sends, __ATOMIC_SEQ_CST) < 3 &&
	       pasco_test_now() - t0 < 5) {
		usleep(1000);
	}
	n = __atomic_load_n(&sends, __ATOMIC_SEQ_CST);
	/* 3 sends take 50 + 100 ms of backoff: not a tight loop */
	cr_assert_geq(pasco_test_now() - t0, 0.14, "%d sends", n);
	__atomic_store_n(&gone, 0, __ATOMIC_SEQ_CST);
	PASCO_PASS(pasco_join(coord));
	PASCO_PASS(pasco_remote_value_fetch(rv, &out));
	pasco_remote_value_free(rv);
	char *text = test_stderr_take(saved);
	int   said = 0;
	for (const char *p = text; (p = strstr(p, "is retried")) != NULL;
	     p++) {
		said++;
	}
	cr_assert_eq(said, 1, "said once: %s", text);
	free(text);
	stop();
}

/* Dispatcher wake-ups per closure through a coordinator of `workers`
 * in-process workers at window 1, for n closures queued while the queue
 * was paused (each put then wakes an idle dispatcher, which finds nothing
 * to take: not counted), from its resumption (a wake-up per worker) to
 * the join. */
static double
wakes_per_closure(int workers, int n)
{
	pasco_coordinator_options o = {.window = 1};
	queue_stats               before, after;
	test_cluster_start(&tc, 1, workers);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, NULL));
	PASCO_PASS(pasco_coordinator_create(&coord, strategy, &o));
	pasci_queue_set_paused(&coord->q, true);
	for (int i = 0; i < n; i++) {
		PASCO_PASS(pasco_schedule(coord, "nothing", NULL, 0, NULL));
	}
	pasci_queue_stats(&coord->q, &before);
	pasci_queue_set_paused(&coord->q, false);
	PASCO_PASS(pasco_join(coord));
	pasci_queue_stats(&coord->q, &after);
	stop();
	return (double) (after.wakes - before.wakes) / n;
}

/* Issue 35: a reply's thread completes its closure and sends the worker's
 * next one, and the worker's dispatcher stays asleep, with 1 worker as
 * with 4 (counted, not timed: none in 1000 closures here, at most one per
 * worker when the queue resumes). Before, each landing woke the
 * dispatcher, asleep or not yet, to find its window refilled: 0.10
 * wake-ups per closure with 1 worker, 0.04 with 4. */
Test(dispatch, a_refilled_window_wakes_no_dispatcher_whatever_the_workers)
{
	double one  = wakes_per_closure(1, 1000);
	double four = wakes_per_closure(4, 1000);
	cr_expect_lt(one, 0.01, "1 worker: %.3f wake-ups per closure", one);
	cr_expect_lt(four, 0.01, "4 workers: %.3f wake-ups per closure", four);
}
