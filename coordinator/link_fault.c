/*
 * Failed links, as the dispatch engine meets them (docs/guide.md, "When
 * processes fail").
 *
 * A closure sent to a worker whose connection is gone fails at once; it
 * goes back to the queue, and the worker takes no global closure for a
 * backoff (50 ms, doubling up to 2 s; lifted when it connects again), so
 * the closure is not sent to it again in a tight loop. That is said once
 * per connection of the worker.
 *
 * A closure whose worker could not reach a ps ("ps N unreachable from
 * worker W", the worker's reply: PASCO_ETIMEDOUT when its ps requests got
 * no answer within their deadline, PASCO_EUNAVAILABLE when the connection
 * was lost) is the link's failure or the ps's. When the chief has lost
 * that ps too, or a ps was lost or recovered since the closure was sent,
 * it is the ps's: the ps paths (recovery.c, or the error). When the chief
 * reaches the ps, the request timed out and another worker can run
 * closures, it is the worker's link: the closure runs elsewhere, and the
 * worker is benched (no global closure for 5 s, doubling up to 60 s until
 * one of its closures succeeds), then tried again. Otherwise (a lost
 * connection is what a ps that just died causes, before the chief knows)
 * it counts as one of that ps's transient failures, which TensorFlow
 * ignores 3 times per ps (TF_COORDINATOR_IGNORE_TRANSIENT_PS_FAILURES),
 * putting the closure back; past that the failure is the closure's,
 * handled as before (ps recovery or the error raised to the user).
 *
 * While a worker is slow (it has closures in flight and has finished none
 * for SLOW_MS, while the other workers finish theirs), the chief warns
 * once, naming it and the ps its closures use: it may be waiting on a ps
 * it cannot reach, until its ps requests' deadline fails them.
 *
 * Threads: called from completions (RPC receive threads), dispatchers,
 * connection callbacks and the strategy's heartbeat thread (the slow
 * check, under the strategy's lock); the state is under the faults' own
 * lock, a leaf, or atomic where said.
 */
#include <stdio.h>
#include <stdlib.h>

#include "coordinator_impl.h"
#include "recovery.h"
#include "util.h"
#include "variable_impl.h"

#define LOST_SEND_FIRST_MS 50
#define LOST_SEND_MAX_MS 2000
#define PS_BENCH_FIRST_MS 5000
#define PS_BENCH_MAX_MS 60000
#define TRANSIENT_PS_FAILURES 3
#define SLOW_MS 3000

struct pasci_link_faults {
	pthread_mutex_t mu;
	size_t          nworkers, nps;
	/* Protected by mu. Per worker: */
	int64_t  *lost_ms;   /* its next backoff after a lost send */
	bool     *logged;    /* a lost send was said for this connection */
	int64_t  *bench_ms;  /* its next bench for a ps it cannot reach */
	bool     *faulty;    /* benched since its last success (atomic) */
	int64_t  *progress;  /* atomic: its last send or completion */
	uint64_t *ps_used;   /* atomic: the ps (< 64) its last closure used */
	int64_t  *warned;    /* the progress its slow warning was for */
	uint32_t *transient; /* per ps: TensorFlow's count, never reset */
};

pasci_link_faults *
pasci_link_faults_new(size_t nworkers, size_t nps)
{
	pasci_link_faults *f = pasci_calloc(1, sizeof(*f));
	if (f == NULL) {
		return NULL;
	}
	pthread_mutex_init(&f->mu, NULL);
	if ((f->lost_ms = pasci_calloc(nworkers + 1, sizeof(int64_t))) ==
	        NULL ||
	    (f->logged = pasci_calloc(nworkers + 1, sizeof(bool))) == NULL ||
	    (f->bench_ms = pasci_calloc(nworkers + 1, sizeof(int64_t))) ==
	        NULL ||
	    (f->faulty = pasci_calloc(nworkers + 1, sizeof(bool))) == NULL ||
	    (f->progress = pasci_calloc(nworkers + 1, sizeof(int64_t))) ==
	        NULL ||
	    (f->ps_used = pasci_calloc(nworkers + 1, sizeof(uint64_t))) ==
	        NULL ||
	    (f->warned = pasci_calloc(nworkers + 1, sizeof(int64_t))) ==
	        NULL ||
	    (f->transient = pasci_calloc(nps + 1, sizeof(uint32_t))) == NULL) {
		pasci_link_faults_free(f);
		return NULL;
	}
	f->nworkers = nworkers;
	f->nps      = nps;
	for (size_t w = 0; w < nworkers; w++) {
		f->lost_ms[w]  = LOST_SEND_FIRST_MS;
		f->bench_ms[w] = PS_BENCH_FIRST_MS;
	}
	return f;
}

void
pasci_link_faults_free(pasci_link_faults *f)
{
	if (f == NULL) {
		return;
	}
	pthread_mutex_destroy(&f->mu);
	free(f->lost_ms);
	free(f->logged);
	free(f->bench_ms);
	free(f->faulty);
	free(f->progress);
	free(f->ps_used);
	free(f->warned);
	free(f->transient);
	free(f);
}

void
pasci_link_fault_worker_up(pasco_coordinator *c, size_t w)
{
	pasci_link_faults *f = c->faults;
	pthread_mutex_lock(&f->mu);
	f->lost_ms[w] = LOST_SEND_FIRST_MS;
	f->logged[w]  = false;
	pthread_mutex_unlock(&f->mu);
}

void
pasci_link_fault_lost_send(
    pasco_coordinator *c, size_t w, const closure *cl, const char *detail)
{
	pasci_link_faults *f = c->faults;
	int64_t            backoff;
	bool               say;
	pthread_mutex_lock(&f->mu);
	backoff      = f->lost_ms[w];
	say          = !f->logged[w];
	f->logged[w] = true;
	pthread_mutex_unlock(&f->mu);
	pasci_log(say ? PASCI_LOG_INFO : PASCI_LOG_DEBUG,
	    "closure %llu ('%s') is retried: %s%s",
	    (unsigned long long) cl->id, cl->name, detail,
	    say ? " (the closures of this worker that follow are retried "
	          "too, and not said again until it connects again)"
	        : "");
	if (!pasci_queue_bench(&c->q, w, pasci_now_ms() + backoff)) {
		/* a first failure since the last backoff ended: the next
		 * waits longer (the others of a window fail together) */
		pthread_mutex_lock(&f->mu);
		f->lost_ms[w] = backoff * 2 < LOST_SEND_MAX_MS
		                    ? backoff * 2
		                    : LOST_SEND_MAX_MS;
		pthread_mutex_unlock(&f->mu);
	}
}

void
pasci_link_fault_success(pasco_coordinator *c, size_t w)
{
	pasci_link_faults *f = c->faults;
	if (!__atomic_load_n(&f->faulty[w], __ATOMIC_RELAXED)) {
		return; /* the common case: no lock */
	}
	pthread_mutex_lock(&f->mu);
	__atomic_store_n(&f->faulty[w], false, __ATOMIC_RELAXED);
	f->bench_ms[w] = PS_BENCH_FIRST_MS;
	pthread_mutex_unlock(&f->mu);
}

/* Worker w cannot reach ps, which the chief and another worker can:
 * benched (unless it is already), said once per bench. */
static void
bench_worker(pasco_coordinator *c, size_t w, int32_t ps, const closure *cl,
    const char *msg)
{
	pasci_link_faults *f = c->faults;
	int64_t            ms;
	pthread_mutex_lock(&f->mu);
	ms = f->bench_ms[w];
	__atomic_store_n(&f->faulty[w], true, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&f->mu);
	if (pasci_queue_bench(&c->q, w, pasci_now_ms() + ms)) {
		pasci_log(PASCI_LOG_DEBUG,
		    "closure %llu ('%s') is retried on another worker: %s",
		    (unsigned long long) cl->id, cl->name, msg);
		return;
	}
	pthread_mutex_lock(&f->mu);
	f->bench_ms[w] = ms * 2 < PS_BENCH_MAX_MS ? ms * 2 : PS_BENCH_MAX_MS;
	pthread_mutex_unlock(&f->mu);
	pasci_log(PASCI_LOG_WARN,
	    "ps %d is unreachable from worker %zu, but the chief reaches "
	    "it: worker %zu's link to it is at fault, not the ps. Closure "
	    "%llu ('%s') runs on another worker, and worker %zu gets no "
	    "closure for %lld s, then is tried again (%s)",
	    ps, w, w, (unsigned long long) cl->id, cl->name, w,
	    (long long) (ms / 1000), msg);
}

pasci_link_verdict
pasci_link_fault_on_failure(pasco_coordinator *c, size_t w, const closure *cl,
    int err, const char *msg)
{
	pasci_link_faults *f = c->faults;
	int32_t            ps, from;
	uint32_t           n;
	if ((err != PASCO_ETIMEDOUT && err != PASCO_EUNAVAILABLE) ||
	    !pasci_ps_unreachable_parse(msg, &ps, &from) ||
	    (size_t) ps >= f->nps) {
		return PASCI_LINK_NOT_MINE;
	}
	if (cl->ps_epoch != pasci_recovery_epoch(c->s) ||
	    !pasci_rpc_client_is_up(c->s->ps[ps])) {
		return PASCI_LINK_NOT_MINE; /* a ps lost (or back) meanwhile */
	}
	/* A lost connection (PASCO_EUNAVAILABLE) is what a ps that just died
	 * causes, before the chief may know: only a ps that did not answer
	 * in time is the link's failure. */
	if (err == PASCO_ETIMEDOUT && pasci_queue_other_can_run(&c->q, w)) {
		bench_worker(c, w, ps, cl, msg);
		return PASCI_LINK_RETRY;
	}
	pthread_mutex_lock(&f->mu);
	n = ++f->transient[ps];
	pthread_mutex_unlock(&f->mu);
	if (n > TRANSIENT_PS_FAILURES) {
		return PASCI_LINK_NOT_MINE;
	}
	pasci_log(PASCI_LOG_WARN,
	    "closure %llu ('%s') is retried: %s, so this counts as a "
	    "transient failure of ps %d (%u of %d, as TensorFlow ignores "
	    "them; then it is the closure's error): %s",
	    (unsigned long long) cl->id, cl->name,
	    err == PASCO_ETIMEDOUT
	        ? "no other worker can run it"
	        : "the worker's connection to the ps was lost (as when a ps "
	          "dies)",
	    ps, n, TRANSIENT_PS_FAILURES, msg);
	return PASCI_LINK_RETRY;
}

void
pasci_link_fault_sent(pasco_coordinator *c, size_t w, const closure *cl)
{
	uint64_t used = 0;
	for (size_t i = 0; i < cl->nargs; i++) {
		const pasco_variable *v = cl->args[i].variable;
		for (int32_t k = 0;
		     cl->args[i].kind == PASCO_ARG_VARIABLE && k < v->nshards;
		     k++) {
			used |= v->shards[k].ps_task < 64
			            ? (uint64_t) 1 << v->shards[k].ps_task
			            : 0;
		}
	}
	__atomic_store_n(&c->faults->ps_used[w], used, __ATOMIC_RELAXED);
	pasci_link_fault_progress(c, w);
}

void
pasci_link_fault_progress(pasco_coordinator *c, size_t w)
{
	__atomic_store_n(
	    &c->faults->progress[w], pasci_now_ms(), __ATOMIC_RELAXED);
}

/* "ps 0 and ps 2" for the ps in used, into buf. */
static void
ps_names(uint64_t used, char *buf, size_t len)
{
	size_t n = 0, k = 0, count = (size_t) __builtin_popcountll(used);
	buf[0] = 0;
	for (int ps = 0; ps < 64 && n < len; ps++) {
		if ((used >> ps & 1) == 0) {
			continue;
		}
		k++;
		n += (size_t) snprintf(buf + n, len - n, "%sps %d",
		    k == 1       ? ""
		    : k == count ? " and "
		                 : ", ",
		    ps);
	}
}

void
pasci_link_fault_check_slow(pasco_coordinator *c)
{
	pasci_link_faults *f   = c->faults;
	int64_t            now = pasci_now_ms();
	int64_t any = __atomic_load_n(&c->last_finish_ms, __ATOMIC_RELAXED);
	for (size_t w = 0; w < f->nworkers && now - any < SLOW_MS; w++) {
		int64_t p = __atomic_load_n(&f->progress[w], __ATOMIC_RELAXED);
		size_t  n = pasci_queue_worker_inflight(&c->q, w);
		char    used[256];
		bool    say;
		if (n == 0 || p == 0 || now - p < SLOW_MS) {
			continue;
		}
		pthread_mutex_lock(&f->mu);
		say          = f->warned[w] != p;
		f->warned[w] = p;
		pthread_mutex_unlock(&f->mu);
		if (!say) {
			continue; /* once per stall */
		}
		ps_names(__atomic_load_n(&f->ps_used[w], __ATOMIC_RELAXED),
		    used, sizeof(used));
		pasci_log(PASCI_LOG_WARN,
		    "worker %zu is slow: it has finished none of its %zu "
		    "closures in flight for %.1f s while the other workers "
		    "finish theirs. A long closure, or its requests to a ps "
		    "get no answer (its last closure used %s): a ps "
		    "request fails after the worker's "
		    "PASCO_PS_REQUEST_TIMEOUT (20 s by default), and the "
		    "closure then runs elsewhere",
		    w, n, (double) (now - p) / 1000,
		    used[0] != 0 ? used : "no ps");
	}
}
