/*
 * The closure queue (see queue.h). Threads: the user's (put, wait, done),
 * one dispatcher per worker (get), RPC completion threads (mark_finished,
 * mark_failed, put_back, tagged_done) and connection callbacks
 * (set_worker_up). One mutex guards all state; closures to cancel are
 * collected under it and cancelled after it is dropped, because cancelling
 * frees closures, and freeing can enqueue resource releases.
 *
 * Wake-ups are aimed: a change that only worker w can use (its window
 * freed, a resource closure for it) wakes w's dispatcher; a new global
 * closure wakes one sleeping dispatcher that can take it; only rare
 * changes (a worker up or down, an error cleared, stop) wake them all.
 */
#include "queue.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

int
pasci_queue_init(
    closure_queue *q, size_t cap, size_t nworkers, uint32_t window)
{
	memset(q, 0, sizeof(*q));
	if ((q->workers = pasci_calloc(nworkers + 1, sizeof(*q->workers))) ==
	    NULL) {
		return PASCO_ENOMEM;
	}
	q->cap      = cap;
	q->nworkers = nworkers;
	q->window   = window;
	pthread_mutex_init(&q->put_wait_mu, NULL);
	pthread_mutex_init(&q->mu, NULL);
	for (size_t w = 0; w < nworkers; w++) {
		pthread_cond_init(&q->workers[w].cv, NULL);
	}
	pthread_cond_init(&q->free_slot, NULL);
	pthread_cond_init(&q->settled, NULL);
	return PASCO_OK;
}

void
pasci_queue_fini(closure_queue *q)
{
	pthread_cond_destroy(&q->settled);
	pthread_cond_destroy(&q->free_slot);
	for (size_t w = 0; w < q->nworkers; w++) {
		pthread_cond_destroy(&q->workers[w].cv);
	}
	pthread_mutex_destroy(&q->mu);
	pthread_mutex_destroy(&q->put_wait_mu);
	free(q->workers);
}

static void
cancel_list(closure *list)
{
	while (list != NULL) {
		closure *next = list->next;
		pasci_closure_cancel(list);
		list = next;
	}
}

static void
push_locked(closure **head, closure **tail, closure *c)
{
	c->next = NULL;
	if (*tail != NULL) {
		(*tail)->next = c;
	} else {
		*head = c;
	}
	*tail = c;
}

static closure *
pop_locked(closure **head, closure **tail)
{
	closure *c = *head;
	if (c != NULL) {
		*head = c->next;
		if (*head == NULL) {
			*tail = NULL;
		}
		c->next = NULL;
	}
	return c;
}

/* Marks worker w open and idle, or not, from its state now (see
 * queue_worker): after every change of that state. */
static void
refresh_locked(closure_queue *q, size_t w)
{
	queue_worker *qw   = &q->workers[w];
	bool          open = qw->up && qw->inflight < q->window &&
	            qw->benched_until_ms == 0 && !qw->refill_pending;
	bool idle = open && qw->asleep && qw->tagged_head == NULL &&
	            !qw->tagged_inflight;
	if (open != qw->open) {
		q->nopen = open ? q->nopen + 1 : q->nopen - 1;
		qw->open = open;
	}
	if (idle && !qw->idle) { /* to the tail */
		qw->idle_prev                           = q->idle_tail;
		qw->idle_next                           = NULL;
		*(q->idle_tail != NULL ? &q->idle_tail->idle_next
		                       : &q->idle_head) = qw;
		q->idle_tail                            = qw;
	} else if (!idle && qw->idle) {
		*(qw->idle_prev != NULL ? &qw->idle_prev->idle_next
		                        : &q->idle_head) = qw->idle_next;
		*(qw->idle_next != NULL ? &qw->idle_next->idle_prev
		                        : &q->idle_tail) = qw->idle_prev;
	}
	qw->idle = idle;
}

static void
refresh_all_locked(closure_queue *q)
{
	for (size_t w = 0; w < q->nworkers; w++) {
		refresh_locked(q, w);
	}
}

static void
wake_locked(closure_queue *q, size_t w)
{
	if (q->workers[w].asleep) {
		q->stats.wakes++;
		q->workers[w].asleep = false;
		refresh_locked(q, w);
		pthread_cond_signal(&q->workers[w].cv);
	}
}

static void
wake_all_locked(closure_queue *q)
{
	for (size_t w = 0; w < q->nworkers; w++) {
		wake_locked(q, w);
	}
}

/* A global closure was queued: wakes the dispatcher asleep longest among
 * those whose worker may take it, so the work spreads. If none sleeps, a
 * busy dispatcher takes it when it asks next. */
static void
wake_one_locked(closure_queue *q)
{
	if (q->idle_head != NULL) {
		wake_locked(q, (size_t) (q->idle_head - q->workers));
	}
}

/* Takes the whole global queue (to cancel). */
static closure *
drain_locked(closure_queue *q)
{
	closure *all = q->head;
	q->stats.cancelled += q->len;
	q->head = q->tail = NULL;
	q->len            = 0;
	pthread_cond_broadcast(&q->free_slot);
	return all;
}

/* If an error is pending: drain the queue, wait for in-flight closures,
 * then return the error once and clear it. */
static int
raise_locked(closure_queue *q, closure **cancelled, char *msg, size_t len)
{
	int err;
	if (q->error == 0) {
		return PASCO_OK;
	}
	*cancelled = drain_locked(q);
	if (q->inflight > 0 && q->cancel_inflight != NULL) {
		/* what is running is asked to stop, as TensorFlow aborts it */
		pthread_mutex_unlock(&q->mu);
		q->cancel_inflight(q->cancel_arg);
		pthread_mutex_lock(&q->mu);
	}
	while (q->inflight > 0) {
		pthread_cond_wait(&q->settled, &q->mu);
	}
	err = q->error;
	pasci_fmt(msg, len, "%s", q->error_msg);
	wake_all_locked(q); /* they took nothing while it was pending */
	q->error        = 0;
	q->error_msg[0] = 0;
	return err;
}

/* The CLOCK_REALTIME time ms from now, for pthread_cond_timedwait. */
static void
deadline_ts(struct timespec *ts, int64_t ms)
{
	ms = ms > 0 ? ms : 1;
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Whether w is benched now (pasci_queue_bench); an expired bench is
 * lifted here. */
static bool
benched_locked(closure_queue *q, size_t w)
{
	queue_worker *qw = &q->workers[w];
	if (qw->benched_until_ms != 0 &&
	    pasci_now_ms() >= qw->benched_until_ms) {
		qw->benched_until_ms = 0;
		refresh_locked(q, w);
	}
	return qw->benched_until_ms != 0;
}

int
pasci_queue_put(closure_queue *q, closure *c, char *msg, size_t msglen)
{
	closure *cancelled = NULL;
	int      rv;

	pthread_mutex_lock(&q->put_wait_mu);
	pthread_mutex_lock(&q->mu);
	while (q->len >= q->cap && q->error == 0 && !q->stopped) {
		pthread_cond_wait(&q->free_slot, &q->mu);
	}
	rv = raise_locked(q, &cancelled, msg, msglen);
	if (rv == 0 && q->stopped) {
		pasci_fmt(msg, msglen, "the coordinator is shutting down");
		rv = PASCO_ECLOSED;
	}
	if (rv == 0) {
		if (q->ids != NULL) {
			c->id =
			    __atomic_add_fetch(q->ids, 1, __ATOMIC_RELAXED);
		}
		c->queued_ns = pasci_now_ns();
		push_locked(&q->head, &q->tail, c);
		q->len++;
		q->stats.put++;
		wake_one_locked(q);
	}
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_unlock(&q->put_wait_mu);
	cancel_list(cancelled);
	return rv;
}

void
pasci_queue_put_tagged(closure_queue *q, closure *c, size_t w)
{
	pthread_mutex_lock(&q->mu);
	if (q->stopped) {
		pthread_mutex_unlock(&q->mu);
		pasci_closure_cancel(c);
		return;
	}
	push_locked(&q->workers[w].tagged_head, &q->workers[w].tagged_tail, c);
	refresh_locked(q, w);
	wake_locked(q, w);
	pthread_mutex_unlock(&q->mu);
}

/* Pops the head of the global queue, counting how long it waited. */
static closure *
pop_global_locked(closure_queue *q)
{
	closure *c    = pop_locked(&q->head, &q->tail);
	int64_t  wait = pasci_now_ns() - c->queued_ns;
	uint64_t ns   = c->queued_ns > 0 && wait > 0 ? (uint64_t) wait : 0;
	q->len--;
	q->inflight++;
	q->stats.taken++;
	q->stats.wait_ns_total += ns;
	if (ns > q->stats.wait_ns_max) {
		q->stats.wait_ns_max = ns;
	}
	return c;
}

static closure *
take_locked(closure_queue *q, size_t w, bool *tagged)
{
	queue_worker *qw = &q->workers[w];
	if (!qw->up) {
		return NULL;
	}
	if (qw->tagged_head != NULL && !qw->tagged_inflight) {
		closure *c = pop_locked(&qw->tagged_head, &qw->tagged_tail);
		qw->tagged_inflight = true;
		*tagged             = true;
		refresh_locked(q, w);
		return c;
	}
	/* Unlike TensorFlow, no global closure starts while an error is
	 * pending: they would be cancelled at the next API call anyway. */
	if (q->head != NULL && qw->inflight < q->window && q->error == 0 &&
	    !q->paused && qw->tagged_head == NULL && !qw->tagged_inflight &&
	    !benched_locked(q, w)) {
		qw->inflight++;
		refresh_locked(q, w);
		*tagged = false;
		pthread_cond_signal(&q->free_slot);
		return pop_global_locked(q);
	}
	return NULL;
}

/* Could a worker other than w take a global closure now, or once its
 * resource operations are done? (A bench that has expired counts once a
 * call on its worker lifts it: its dispatcher's own wait ends then.) */
static bool
other_has_room_locked(closure_queue *q, size_t w)
{
	return q->nopen > (q->workers[w].open ? 1u : 0u);
}

size_t
pasci_queue_take_riders(closure_queue *q, size_t w, closure **out, size_t max)
{
	queue_worker *qw = &q->workers[w];
	size_t        n  = 0;
	pthread_mutex_lock(&q->mu);
	if (qw->up && q->error == 0 && !q->stopped && !q->paused &&
	    qw->tagged_head == NULL && !qw->tagged_inflight &&
	    !benched_locked(q, w) && qw->inflight >= q->window &&
	    !other_has_room_locked(q, w)) {
		while (n < max && q->head != NULL && q->head->small) {
			out[n++] = pop_global_locked(q);
			qw->riders++;
		}
		if (n > 0) {
			pthread_cond_broadcast(&q->free_slot);
		}
	}
	pthread_mutex_unlock(&q->mu);
	return n;
}

closure *
pasci_queue_try_get(closure_queue *q, size_t w, bool *tagged)
{
	closure *c;
	pthread_mutex_lock(&q->mu);
	if (q->workers[w].refill_pending) {
		q->workers[w].refill_pending = false;
		refresh_locked(q, w);
	}
	c = q->stopped ? NULL : take_locked(q, w, tagged);
	pthread_mutex_unlock(&q->mu);
	return c;
}

closure *
pasci_queue_get(closure_queue *q, size_t w, bool *tagged)
{
	closure *c = NULL;
	pthread_mutex_lock(&q->mu);
	while (!q->stopped && (c = take_locked(q, w, tagged)) == NULL) {
		q->workers[w].asleep = true;
		refresh_locked(q, w);
		if (q->workers[w].benched_until_ms != 0) {
			/* nothing wakes it when its bench ends */
			struct timespec ts;
			deadline_ts(&ts,
			    q->workers[w].benched_until_ms - pasci_now_ms());
			pthread_cond_timedwait(&q->workers[w].cv, &q->mu, &ts);
		} else {
			pthread_cond_wait(&q->workers[w].cv, &q->mu);
		}
	}
	q->workers[w].asleep = false;
	refresh_locked(q, w);
	pthread_mutex_unlock(&q->mu);
	return c;
}

/* The worker whose window this thread refills after landing (none: q
 * NULL or w SIZE_MAX). */
static _Thread_local struct {
	const closure_queue *q;
	size_t               w;
} refiller = {NULL, SIZE_MAX};

size_t
pasci_queue_refiller(closure_queue *q, size_t w)
{
	size_t was = refiller.q == q ? refiller.w : SIZE_MAX;
	refiller.q = w != SIZE_MAX ? q : NULL;
	refiller.w = w;
	return was;
}

/* One global closure of w left flight. */
static void
landed_locked(closure_queue *q, size_t w, bool rider)
{
	uint32_t *count =
	    rider ? &q->workers[w].riders : &q->workers[w].inflight;
	PASCO_ASSERT(q->inflight > 0 && *count > 0);
	q->inflight--;
	(*count)--;
	refresh_locked(q, w);
	/* a join or a stop waits for nothing in flight (or an error): woken
	 * at every landing, the joining thread woke and slept again for
	 * each closure, two thread switches for nothing */
	if (q->inflight == 0 || q->error != 0) {
		pthread_cond_broadcast(&q->settled);
	}
	/* its window has room again: its dispatcher wakes if there is
	 * something to take (a put wakes it otherwise), unless this thread
	 * takes it next (pasci_queue_refiller) */
	if (refiller.q == q && refiller.w == w &&
	    q->workers[w].benched_until_ms == 0) {
		/* its slot is this thread's to fill: not open to others (who
		 * would not batch) nor to a put's wake-up until then */
		q->workers[w].refill_pending = true;
		refresh_locked(q, w);
	} else if (q->head != NULL || q->workers[w].tagged_head != NULL) {
		wake_locked(q, w);
	}
}

static void
mark_done(closure_queue *q, size_t w, bool rider, int err, const char *msg)
{
	closure *cancelled = NULL;
	pthread_mutex_lock(&q->mu);
	if (err == PASCO_ECANCELLED) { /* stopped by a cancel */
		q->stats.cancelled++;
	} else if (err != 0) {
		q->stats.failed++;
	} else {
		q->stats.finished++;
	}
	if (err != 0 && q->error == 0) {
		q->error        = err;
		q->error_source = -1; /* a closure's */
		pasci_fmt(q->error_msg, sizeof(q->error_msg), "%s", msg);
		/* Nothing queued starts while it is pending, and the next
		 * schedule, join or done would cancel it: cancelled now, so a
		 * remote value fetched meanwhile is not waited for forever
		 * (TensorFlow's workers would still run it). A put blocked on
		 * a full queue is woken by the drain, and raises it. */
		cancelled = drain_locked(q);
	}
	landed_locked(q, w, rider);
	pthread_mutex_unlock(&q->mu);
	cancel_list(cancelled);
}

void
pasci_queue_mark_finished(closure_queue *q, size_t w)
{
	mark_done(q, w, false, 0, NULL);
}

void
pasci_queue_mark_failed(closure_queue *q, size_t w, int err, const char *msg)
{
	mark_done(q, w, false, err, msg);
}

void
pasci_queue_rider_done(closure_queue *q, size_t w, int err, const char *msg)
{
	mark_done(q, w, true, err, msg);
}

void
pasci_queue_record_error(closure_queue *q, int err, const char *msg)
{
	pasci_queue_record_error_from(q, err, msg, -1);
}

void
pasci_queue_record_error_from(
    closure_queue *q, int err, const char *msg, int source)
{
	closure *cancelled = NULL;
	pthread_mutex_lock(&q->mu);
	if (q->error == 0 || (source >= 0 && q->error_source == source)) {
		q->error        = err;
		q->error_source = source;
		pasci_fmt(q->error_msg, sizeof(q->error_msg), "%s", msg);
		cancelled = drain_locked(q); /* as mark_done does */
	}
	pthread_cond_broadcast(&q->settled);
	pthread_cond_broadcast(&q->free_slot);
	pthread_mutex_unlock(&q->mu);
	cancel_list(cancelled);
}

static void
put_back(closure_queue *q, size_t w, closure *c, bool rider)
{
	bool cancel;
	pthread_mutex_lock(&q->mu);
	cancel = q->error != 0 || q->stopped;
	if (!cancel) {
		/* Over the bound if need be: a completion must not block. */
		c->queued_ns = pasci_now_ns();
		push_locked(&q->head, &q->tail, c);
		q->len++;
		q->stats.put_back++;
		wake_one_locked(q);
	} else {
		q->stats.cancelled++;
	}
	landed_locked(q, w, rider);
	pthread_mutex_unlock(&q->mu);
	if (cancel) {
		pasci_closure_cancel(c);
	}
}

void
pasci_queue_put_back(closure_queue *q, size_t w, closure *c)
{
	put_back(q, w, c, false);
}

void
pasci_queue_rider_put_back(closure_queue *q, size_t w, closure *c)
{
	put_back(q, w, c, true);
}

void
pasci_queue_set_paused(closure_queue *q, bool paused)
{
	pthread_mutex_lock(&q->mu);
	q->paused = paused;
	wake_all_locked(q);
	pthread_mutex_unlock(&q->mu);
}

uint32_t
pasci_queue_set_window(closure_queue *q, uint32_t window)
{
	uint32_t old;
	pthread_mutex_lock(&q->mu);
	old       = q->window;
	q->window = window;
	refresh_all_locked(q);
	wake_all_locked(q);
	pthread_mutex_unlock(&q->mu);
	return old;
}

void
pasci_queue_tagged_done(closure_queue *q, size_t w)
{
	pthread_mutex_lock(&q->mu);
	q->workers[w].tagged_inflight = false;
	refresh_locked(q, w);
	wake_locked(q, w);
	pthread_cond_broadcast(&q->settled);
	pthread_mutex_unlock(&q->mu);
}

bool
pasci_queue_bench(closure_queue *q, size_t w, int64_t until_ms)
{
	bool was;
	pthread_mutex_lock(&q->mu);
	was = benched_locked(q, w);
	if (until_ms == 0 || until_ms > q->workers[w].benched_until_ms) {
		q->workers[w].benched_until_ms = until_ms; /* never shorter */
	}
	refresh_locked(q, w);
	if (until_ms == 0) {
		wake_locked(q, w);
	} else if (q->head != NULL) {
		wake_one_locked(q); /* another may take what w leaves */
	}
	pthread_mutex_unlock(&q->mu);
	return was;
}

bool
pasci_queue_other_can_run(closure_queue *q, size_t w)
{
	bool any = false;
	pthread_mutex_lock(&q->mu);
	for (size_t v = 0; v < q->nworkers && !any; v++) {
		any = v != w && q->workers[v].up && !benched_locked(q, v);
	}
	pthread_mutex_unlock(&q->mu);
	return any;
}

bool
pasci_queue_set_worker_up(closure_queue *q, size_t w, bool up)
{
	bool was, any = false;
	pthread_mutex_lock(&q->mu);
	was              = q->workers[w].up;
	q->workers[w].up = up;
	if (up) {
		q->workers[w].benched_until_ms = 0; /* a new connection */
	}
	refresh_locked(q, w);
	for (size_t k = 0; k < q->nworkers; k++) {
		any = any || q->workers[k].up;
	}
	wake_all_locked(q); /* others may now batch, or not */
	pthread_mutex_unlock(&q->mu);
	return was && !any;
}

int
pasci_queue_wait(closure_queue *q, char *msg, size_t msglen)
{
	closure *cancelled = NULL;
	int      rv;

	pthread_mutex_lock(&q->put_wait_mu);
	pthread_mutex_lock(&q->mu);
	while (q->error == 0 && (q->len > 0 || q->inflight > 0)) {
		pthread_cond_wait(&q->settled, &q->mu);
		q->stats.join_wakes++;
	}
	rv = raise_locked(q, &cancelled, msg, msglen);
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_unlock(&q->put_wait_mu);
	cancel_list(cancelled);
	return rv;
}

int
pasci_queue_done(closure_queue *q, bool *done, char *msg, size_t msglen)
{
	closure *cancelled = NULL;
	int      rv;

	pthread_mutex_lock(&q->mu);
	rv    = raise_locked(q, &cancelled, msg, msglen);
	*done = q->len == 0 && q->inflight == 0;
	pthread_mutex_unlock(&q->mu);
	cancel_list(cancelled);
	return rv;
}

static bool
any_flight_locked(closure_queue *q)
{
	for (size_t w = 0; w < q->nworkers; w++) {
		if (q->workers[w].inflight > 0 || q->workers[w].riders > 0 ||
		    q->workers[w].tagged_inflight) {
			return true;
		}
	}
	return false;
}

void
pasci_queue_stop(closure_queue *q, void (*nudge)(void *), void *arg)
{
	closure *cancelled;
	pthread_mutex_lock(&q->mu);
	q->stopped = true;
	cancelled  = drain_locked(q);
	for (size_t w = 0; w < q->nworkers; w++) {
		closure *t                = q->workers[w].tagged_head;
		q->workers[w].tagged_head = q->workers[w].tagged_tail = NULL;
		refresh_locked(q, w);
		while (t != NULL) {
			closure *next = t->next;
			t->next       = cancelled;
			cancelled     = t;
			t             = next;
		}
	}
	wake_all_locked(q);
	pthread_cond_broadcast(&q->free_slot);
	pthread_mutex_unlock(&q->mu);
	cancel_list(cancelled);
	pthread_mutex_lock(&q->mu);
	while (any_flight_locked(q)) {
		struct timespec ts;
		if (nudge != NULL) {
			pthread_mutex_unlock(&q->mu);
			nudge(arg);
			pthread_mutex_lock(&q->mu);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&q->settled, &q->mu, &ts);
	}
	pthread_mutex_unlock(&q->mu);
}

bool
pasci_queue_describe(closure_queue *q, char *buf, size_t len)
{
	size_t n;
	bool   busy;
	pthread_mutex_lock(&q->mu);
	busy = q->len > 0 || any_flight_locked(q);
	n    = (size_t) snprintf(
	       buf, len, "%zu queued, %zu in flight", q->len, q->inflight);
	for (size_t w = 0; w < q->nworkers && n < len; w++) {
		n += (size_t) snprintf(buf + n, len - n,
		    "; worker %zu %s, %u in "
		    "flight",
		    w,
		    !q->workers[w].up      ? "down"
		    : benched_locked(q, w) ? "benched"
		                           : "up",
		    q->workers[w].inflight);
	}
	pthread_mutex_unlock(&q->mu);
	return busy;
}

void
pasci_queue_stats(closure_queue *q, queue_stats *out)
{
	pthread_mutex_lock(&q->mu);
	*out          = q->stats;
	out->len      = q->len;
	out->inflight = q->inflight;
	pthread_mutex_unlock(&q->mu);
}

size_t
pasci_queue_worker_inflight(closure_queue *q, size_t w)
{
	size_t n;
	pthread_mutex_lock(&q->mu);
	n = q->workers[w].inflight + q->workers[w].riders;
	pthread_mutex_unlock(&q->mu);
	return n;
}

size_t
pasci_queue_inflight(closure_queue *q)
{
	size_t n;
	pthread_mutex_lock(&q->mu);
	n = q->inflight;
	pthread_mutex_unlock(&q->mu);
	return n;
}

size_t
pasci_queue_length(closure_queue *q)
{
	size_t n;
	pthread_mutex_lock(&q->mu);
	n = q->len;
	pthread_mutex_unlock(&q->mu);
	return n;
}
