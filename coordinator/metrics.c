/*
 * The coordinator's metrics (TensorFlow's metric_utils: closures queued,
 * run, failed, retried, fetches, time in queue): read by
 * pasco_coordinator_metrics_read and logged at each pasco_join (debug level)
 * and when the coordinator is destroyed (info level). The counts are kept
 * where the events happen: the queue's (queue.c, under its lock), and a shared
 * fetch counter that remote values hold, since they may outlive their
 * coordinator. Thread-safe.
 */
#include <stdlib.h>

#include "coordinator_impl.h"
#include "util.h"

pasci_counter *
pasci_counter_new(void)
{
	pasci_counter *n = pasci_calloc(1, sizeof(*n));
	if (n != NULL) {
		n->refs = 1;
	}
	return n;
}

void
pasci_counter_hold(pasci_counter *n)
{
	if (n != NULL) {
		__atomic_add_fetch(&n->refs, 1, __ATOMIC_RELAXED);
	}
}

void
pasci_counter_release(pasci_counter *n)
{
	if (n != NULL &&
	    __atomic_sub_fetch(&n->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(n);
	}
}

void
pasci_counter_add(pasci_counter *n, uint64_t k)
{
	__atomic_add_fetch(&n->n, k, __ATOMIC_RELAXED);
}

uint64_t
pasci_counter_get(pasci_counter *n)
{
	return n != NULL ? __atomic_load_n(&n->n, __ATOMIC_RELAXED) : 0;
}

void
pasco_coordinator_metrics_read(
    pasco_coordinator *c, pasco_coordinator_metrics *out)
{
	queue_stats st;
	pasci_queue_stats(&c->q, &st);
	*out = (pasco_coordinator_metrics){
	    .scheduled           = st.put,
	    .dispatched          = st.taken,
	    .succeeded           = st.finished,
	    .failed              = st.failed,
	    .retried             = st.put_back,
	    .cancelled           = st.cancelled,
	    .fetches             = pasci_counter_get(c->fetches),
	    .queued              = st.len,
	    .inflight            = st.inflight,
	    .queue_time_us_total = st.wait_ns_total / 1000,
	    .queue_time_us_max   = st.wait_ns_max / 1000,
	    .watchdog_reports    = pasco_coordinator_watchdog_count(c),
	};
}

void
pasci_metrics_log(pasco_coordinator *c, int level, const char *what)
{
	pasco_coordinator_metrics m;
	if (!pasci_log_enabled(level)) {
		return;
	}
	pasco_coordinator_metrics_read(c, &m);
	pasci_log(level,
	    "coordinator metrics %s: %llu scheduled, %llu dispatched, %llu "
	    "succeeded, %llu failed, %llu retried, %llu cancelled, %llu "
	    "fetched; %llu queued, %llu in flight; time in queue %.3f ms "
	    "mean, %.3f ms max; %llu watchdog reports",
	    what, (unsigned long long) m.scheduled,
	    (unsigned long long) m.dispatched,
	    (unsigned long long) m.succeeded, (unsigned long long) m.failed,
	    (unsigned long long) m.retried, (unsigned long long) m.cancelled,
	    (unsigned long long) m.fetches, (unsigned long long) m.queued,
	    (unsigned long long) m.inflight,
	    m.dispatched > 0 ? (double) m.queue_time_us_total / 1000.0 /
	                           (double) m.dispatched
	                     : 0.0,
	    (double) m.queue_time_us_max / 1000.0,
	    (unsigned long long) m.watchdog_reports);
}
