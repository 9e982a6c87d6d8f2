/*
 * The coordinator's metrics (coordinator/metrics.c) and watchdog report,
 * over an in-process cluster: the reference's scenarios 81 (TensorFlow's
 * metric_utils_test: executions and fetches counted) and 82 (the
 * watchdog's report, and that it stops with the coordinator).
 */
#include "helpers.h"

#include "coordinator_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

TestSuite(metrics, .timeout = 60);

static test_cluster       tc;
static pasco_strategy    *strategy;
static pasco_coordinator *coord;

static void
start(int nworkers, pasco_coordinator_options o)
{
	test_cluster_start(&tc, 1, nworkers);
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

static volatile int gate_open;

/* args: f32 x. Waits for the gate (at most 5 s), then returns x, or
 * fails when x > 0. */
PASCO_FUNCTION(m_gated)
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
		return pasco_call_fail(call, PASCO_EINVAL, "x must be <= 0");
	}
	pasco_call_return(call, pasco_value_tensor(test_scalar(
	                            PASCO_F32, pasco_tensor_get(x, 0))));
	return PASCO_OK;
}

static void *
open_gate_later(void *arg)
{
	usleep((useconds_t) (intptr_t) arg * 1000);
	__atomic_store_n(&gate_open, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

Test(metrics, executions_fetches_and_time_in_queue_are_counted) /* 81 */
{
	pasco_coordinator_options o = {.window = 1, .max_batch = 1};
	pasco_coordinator_metrics m;
	pasco_remote_value       *rv[2];
	const pasco_value        *out;
	pasco_tensor             *neg = test_scalar(PASCO_F32, -1);
	pasco_arg                 arg = pasco_arg_tensor(neg);
	pthread_t                 th;

	start(1, o);
	pasco_coordinator_metrics_read(coord, &m);
	cr_assert_eq(m.scheduled + m.dispatched + m.fetches, 0);
	/* the first is held by the gate for 300 ms; the second waits in the
	 * queue meanwhile (one worker, a window of one) */
	PASCO_PASS(pasco_schedule(coord, "m_gated", &arg, 1, &rv[0]));
	PASCO_PASS(pasco_schedule(coord, "m_gated", &arg, 1, &rv[1]));
	pthread_create(&th, NULL, open_gate_later, (void *) (intptr_t) 300);
	PASCO_PASS(pasco_join(coord));
	pthread_join(th, NULL);
	for (int i = 0; i < 2; i++) {
		PASCO_PASS(pasco_remote_value_fetch(rv[i], &out));
		PASCO_PASS(pasco_remote_value_fetch(rv[i], &out));
	}
	pasco_coordinator_metrics_read(coord, &m);
	cr_assert_eq(m.scheduled, 2);
	cr_assert_eq(m.dispatched, 2);
	cr_assert_eq(m.succeeded, 2);
	cr_assert_eq(m.failed + m.retried + m.cancelled, 0);
	cr_assert_eq(m.fetches, 4);
	cr_assert_eq(m.queued + m.inflight, 0);
	cr_assert_geq(m.queue_time_us_max, 200 * 1000,
	    "the second closure waited behind the first: %llu us",
	    (unsigned long long) m.queue_time_us_max);
	cr_assert_geq(m.queue_time_us_total, m.queue_time_us_max);
	/* a remote value outliving its coordinator still counts nowhere
	 * harmful: the counter is shared, not the coordinator's memory */
	stop();
	PASCO_PASS(pasco_remote_value_fetch(rv[0], &out));
	pasco_remote_value_free(rv[0]);
	pasco_remote_value_free(rv[1]);
	pasco_tensor_release(neg);
}

Test(metrics, failures_and_cancellations_are_counted)
{
	pasco_coordinator_options o = {.window = 1, .max_batch = 1};
	pasco_coordinator_metrics m;
	pasco_tensor             *pos = test_scalar(PASCO_F32, 1),
	             *neg             = test_scalar(PASCO_F32, -1);
	pasco_arg bad = pasco_arg_tensor(pos), ok = pasco_arg_tensor(neg);
	pthread_t th;

	start(1, o);
	PASCO_PASS(pasco_schedule(coord, "m_gated", &bad, 1, NULL));
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(pasco_schedule(coord, "m_gated", &ok, 1, NULL));
	}
	pthread_create(&th, NULL, open_gate_later, (void *) (intptr_t) 100);
	PASCO_FAIL(pasco_join(coord), PASCO_EINVAL);
	pthread_join(th, NULL);
	pasco_coordinator_metrics_read(coord, &m);
	cr_assert_eq(m.scheduled, 4);
	cr_assert_eq(m.dispatched, 1);
	cr_assert_eq(m.failed, 1);
	cr_assert_eq(m.cancelled, 3);
	cr_assert_eq(m.succeeded, 0);
	stop();
	pasco_tensor_release(pos);
	pasco_tensor_release(neg);
}

Test(metrics, the_metrics_are_logged_after_join_and_at_shutdown)
{
	pasco_coordinator_options o   = {.window = 1};
	pasco_tensor             *neg = test_scalar(PASCO_F32, -1);
	pasco_arg                 arg = pasco_arg_tensor(neg);
	char                     *log;
	int                       saved;

	setenv("PASCO_LOG", "debug", 1); /* read at this process's first log */
	__atomic_store_n(&gate_open, 1, __ATOMIC_SEQ_CST);
	saved = test_stderr_capture();
	start(1, o);
	PASCO_PASS(pasco_schedule(coord, "m_gated", &arg, 1, NULL));
	PASCO_PASS(pasco_join(coord));
	stop();
	log = test_stderr_take(saved);
	cr_assert(
	    strstr(log, "pasco debug: coordinator metrics after join: 1 "
	                "scheduled, 1 dispatched, 1 succeeded, 0 failed, "
	                "0 retried, 0 cancelled, 0 fetched; 0 queued, 0 "
	                "in flight") != NULL,
	    "no metrics line after join in:\n%s", log);
	cr_assert(strstr(log, "pasco info: coordinator metrics at shutdown: 1 "
	                      "scheduled") != NULL,
	    "no metrics line at shutdown in:\n%s", log);
	free(log);
	pasco_tensor_release(neg);
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

Test(metrics, the_watchdog_says_what_is_stuck_and_stops_with_the_coordinator)
/* 82 */
{
	pasco_coordinator_options o = {
	    .window = 1, .max_batch = 1, .watchdog_timeout_ms = 100};
	pasco_tensor *neg = test_scalar(PASCO_F32, -1);
	pasco_arg     arg = pasco_arg_tensor(neg);
	char         *log;
	int           saved;

	start(2, o);
	cr_assert_eq(threads_named("pasco-watchdog"), 1);
	saved = test_stderr_capture();
	for (int i = 0; i < 3; i++) { /* one per worker, one queued */
		PASCO_PASS(pasco_schedule(coord, "m_gated", &arg, 1, NULL));
	}
	for (int i = 0; i < 300 && pasco_coordinator_watchdog_count(coord) < 1;
	     i++) {
		usleep(10 * 1000);
	}
	__atomic_store_n(&gate_open, 1, __ATOMIC_SEQ_CST);
	PASCO_PASS(pasco_join(coord));
	log = test_stderr_take(saved);
	cr_assert_geq(pasco_coordinator_watchdog_count(coord), 1);
	cr_assert(strstr(log, "watchdog: no closure finished for 100 ms: 1 "
	                      "queued, 2 in flight; worker 0 up, 1 in flight; "
	                      "worker 1 up, 1 in flight") != NULL,
	    "no watchdog report in:\n%s", log);
	cr_assert(strstr(log, "coordinator metrics at the watchdog: 3 "
	                      "scheduled, 2 dispatched, 0 succeeded") != NULL,
	    "no metrics with the watchdog report in:\n%s", log);
	free(log);
	pasco_coordinator_destroy(coord);
	cr_assert_eq(threads_named("pasco-watchdog"), 0,
	    "the watchdog outlived its coordinator");
	pasco_strategy_destroy(strategy);
	test_cluster_stop(&tc);
	pasco_tensor_release(neg);
}
