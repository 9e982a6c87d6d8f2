/*
 * The dispatch engine: one dispatcher thread per worker takes closures from
 * the queue and sends them (up to the window in flight; when every window
 * is full, small queued closures ride along in one RUN_BATCH message), and
 * completes them from RPC replies: results and errors go to remote values,
 * a closure whose worker failed, or that a failure before it in its batch
 * kept from running, goes back to the queue, and the freed
 * window slot is refilled from the reply's thread. It also follows worker
 * connections (a returning worker gets its iterators rebuilt before any
 * other closure) and runs the watchdog.
 *
 * Threads: dispatcher i only takes work for worker i; completions run on
 * the worker's RPC receive thread and only take short locks; connection
 * changes arrive from the strategy, under its lock. Locks, in order:
 * strategy mu > coordinator mu > queue mu; remote value and iterator locks
 * are leaves. Every closure taken from the queue is handed back to it
 * exactly once (landed as finished or failed, put back, or for a tagged
 * closure marked done), also when memory runs out: a closure that cannot
 * be sent fails with PASCO_ENOMEM.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bulk.h"
#include "coordinator_impl.h"
#include "metrics_registry.h"
#include "recovery.h"
#include "util.h"
#include "variable_impl.h"
#include "wire.h"

#define RESOURCE_TIMEOUT_MS 60000

typedef struct dispatcher_arg {
	pasco_coordinator *c;
	size_t             w;
	closure          **riders; /* room for max_batch closures */
} dispatcher_arg;

/* One message in flight to worker w: a closure (tagged or not), or with
 * automatic batching that closure (NULL if its input failed) followed by
 * riders. */
typedef struct flight {
	pasco_coordinator *c;
	size_t             w;
	closure           *cl;
	bool               tagged;
	size_t             nriders;
	closure          **riders;
} flight;

/* Closures whose tensor arguments total at most this may ride in a batch,
 * unless their function returned more than SMALL_RESULT_BYTES before (a
 * batch's reply comes back whole, after its last closure). */
#define SMALL_CLOSURE_BYTES 16384
#define SMALL_RESULT_BYTES 65536

static bool
has_big_results(pasco_coordinator *c, const char *fn)
{
	bool big = false;
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->nbig_results && !big; i++) {
		big = strcmp(c->big_results[i], fn) == 0;
	}
	pthread_mutex_unlock(&c->mu);
	return big;
}

/* Remembers fn when its reply carried more than SMALL_RESULT_BYTES. */
static void
note_result_size(pasco_coordinator *c, const char *fn, const pasci_wire_msg *m)
{
	size_t bytes = 0;
	char **grown;
	for (size_t i = 0; i < m->ntensors; i++) {
		bytes += m->tensors[i]->nbytes;
	}
	if (bytes <= SMALL_RESULT_BYTES || has_big_results(c, fn)) {
		return;
	}
	pthread_mutex_lock(&c->mu);
	grown = realloc(
	    c->big_results, (c->nbig_results + 1) * sizeof(*c->big_results));
	if (grown != NULL) {
		c->big_results = grown;
		if ((grown[c->nbig_results] = pasci_strdup(fn)) != NULL) {
			c->nbig_results++;
		}
	}
	pthread_mutex_unlock(&c->mu);
}

bool
pasci_dispatch_may_ride(pasco_coordinator *c, const closure *cl)
{
	size_t bytes = 0;
	for (size_t i = 0; i < cl->nargs; i++) {
		bytes += cl->args[i].tensor != NULL
		             ? cl->args[i].tensor->nbytes
		             : 0;
	}
	return bytes <= SMALL_CLOSURE_BYTES && !has_big_results(c, cl->name);
}

void
pasci_coordinator_worker_state(
    pasco_coordinator *c, size_t w, bool up, uint64_t incarnation)
{
	if (!up) {
		pasci_log(PASCI_LOG_WARN, "worker %zu is unavailable", w);
		pasci_metric_add(PASCI_M_WORKER_LOSSES, 1);
		pthread_mutex_lock(&c->mu);
		c->linked[w] = false;
		pthread_mutex_unlock(&c->mu);
		if (pasci_queue_set_worker_up(&c->q, w, false)) {
			/* why schedule and join may now wait */
			pasci_log(PASCI_LOG_WARN,
			    "no worker is available: closures wait until one "
			    "is back (a worker started again at its address "
			    "rejoins, as `pasco launch --restart` does; "
			    "TensorFlow waits the same way)");
		}
		return;
	}
	pasci_log(PASCI_LOG_INFO, "worker %zu is up (incarnation %016llx)", w,
	    (unsigned long long) incarnation);
	pasci_metric_worker_back();
	/* Release what was freed while it was away, and rebuild its
	 * iterators first: tagged closures are queued before the worker is
	 * marked up, so none of its training closures can overtake them. */
	pthread_mutex_lock(&c->mu);
	closure *parked = c->parked[w];
	c->parked[w]    = NULL;
	c->linked[w]    = true;
	pthread_mutex_unlock(&c->mu);
	pasci_link_fault_worker_up(c, w);
	while (parked != NULL) {
		closure *cl = parked;
		parked      = cl->next;
		cl->next    = NULL;
		pasci_queue_put_tagged(&c->q, cl, w);
	}
	pasci_iterators_rebuild(c, w);
	pasci_queue_set_worker_up(&c->q, w, true);
}

/* A closure could not run because an input iterator failed on worker w. */
static bool
closure_input_failed(closure *cl, size_t w, char *msg, size_t len)
{
	for (size_t i = 0; i < cl->nargs; i++) {
		char why[700];
		int  err;
		if (cl->args[i].iterator == NULL ||
		    (err = pasci_iterator_status(
		         cl->args[i].iterator, w, why, sizeof(why))) == 0) {
			continue;
		}
		pasci_fmt(msg, len,
		    "input of '%s' failed: argument %zu, a per-worker %s, "
		    "could not be built on worker %zu: %s",
		    cl->name, i,
		    cl->args[i].iterator->is_value ? "variable" : "iterator",
		    w, why);
		return true;
	}
	return false;
}

static void
encode_run(pasci_wire_builder *b, closure *cl)
{
	b->hdr.name        = cl->name;
	b->hdr.want_result = cl->rv != NULL;
	b->hdr.closure_id  = cl->id;
	b->hdr.repeat      = cl->repeat;
	b->hdr.sum_results = cl->sum_results;
	for (size_t i = 0; i < cl->nargs; i++) {
		closure_arg *a = &cl->args[i];
		if (a->kind == PASCO_ARG_TENSOR) {
			pasci_wire_add_arg_tensor(b, a->tensor);
		} else if (a->kind == PASCO_ARG_VARIABLE) {
			pasci_variable_add_arg(b, a->variable);
		} else {
			pasci_wire_add_arg_resource(b, a->iterator->id);
		}
	}
}

static nng_msg *
encode_closure(pasco_coordinator *c, size_t w, closure *cl)
{
	static const pasci_method methods[] = {
	    [CLOSURE_RUN]              = PASCI_METHOD_RUN,
	    [CLOSURE_RESOURCE_CREATE]  = PASCI_METHOD_RESOURCE_CREATE,
	    [CLOSURE_RESOURCE_RELEASE] = PASCI_METHOD_RESOURCE_RELEASE,
	    [CLOSURE_RESOURCE_READ]    = PASCI_METHOD_RESOURCE_READ};
	pasci_wire_builder b;
	nng_msg           *msg;

	pasci_wire_builder_init(&b, methods[cl->kind]);
	/* over a bulk link, the worker checks it is from its chief */
	b.hdr.chief_incarnation = pasci_chief_self_incarnation();
	if (cl->kind == CLOSURE_RUN) {
		cl->ps_epoch = pasci_recovery_epoch(c->s);
		pasci_link_fault_sent(c, w, cl);
		encode_run(&b, cl);
	} else {
		b.hdr.name     = cl->name != NULL ? cl->name : (char *) "";
		b.hdr.resource = cl->resource;
		/* a per-worker variable: the function's result, no dataset */
		b.hdr.want_result =
		    cl->iterator != NULL && cl->iterator->is_value;
		b.hdr.worker_index = (int32_t) w;
		b.hdr.num_workers  = (int32_t) c->nworkers;
	}
	if (pasci_wire_encode(&b, &msg) != 0) {
		msg = NULL;
	}
	pasci_wire_builder_fini(&b);
	return msg;
}

static void
note_finish(pasco_coordinator *c)
{
	__atomic_store_n(&c->last_finish_ms, pasci_now_ms(), __ATOMIC_RELAXED);
}

static void
complete_tagged(flight *f, int err, pasci_wire_msg *reply, const char *detail)
{
	closure *cl = f->cl;
	if (cl->kind == CLOSURE_RESOURCE_READ) {
		pasci_per_worker_read_done(cl, f->w, err, reply, detail);
	} else if (cl->kind == CLOSURE_RESOURCE_CREATE && err == 0) {
		pasci_iterator_set_status(
		    cl->iterator, f->w, reply->hdr->status, reply->hdr->error);
	} else if (cl->kind == CLOSURE_RESOURCE_CREATE &&
	           err == PASCO_ENOMEM) {
		/* the coordinator's failure, not the worker's: nothing will
		 * rebuild it, so the closures using it say why */
		pasci_iterator_set_status(cl->iterator, f->w, err, detail);
	} else if (cl->kind == CLOSURE_RESOURCE_RELEASE && err != 0) {
		/* Its worker is down: parked, and sent again when it is back,
		 * which may be the same process, still holding the resource
		 * (a new one has none: the release is then a no-op). If it is
		 * back already (this failure came after its return), the
		 * release goes again now: nothing else would send it. */
		bool back;
		pthread_mutex_lock(&f->c->mu);
		if (!(back = f->c->linked[f->w])) {
			cl->next           = f->c->parked[f->w];
			f->c->parked[f->w] = cl;
		}
		pthread_mutex_unlock(&f->c->mu);
		pasci_queue_tagged_done(&f->c->q, f->w);
		if (back) {
			pasci_queue_put_tagged(&f->c->q, cl, f->w);
		}
		return;
	} else if (err != 0) {
		/* Dropped: the worker is going down, and every live iterator
		 * is rebuilt when it is back. */
		pasci_log(PASCI_LOG_DEBUG,
		    "resource operation on worker %zu "
		    "lost: %s",
		    f->w, detail);
	}
	pasci_closure_free(cl);
	pasci_queue_tagged_done(&f->c->q, f->w);
}

/* A closure of worker w (a rider of a batch, or one holding a window
 * slot) finished: err 0, or its error. */
static void
landed(closure_queue *q, size_t w, bool rider, int err, const char *msg)
{
	if (rider) {
		pasci_queue_rider_done(q, w, err, msg);
	} else if (err != 0) {
		pasci_queue_mark_failed(q, w, err, msg);
	} else {
		pasci_queue_mark_finished(q, w);
	}
}

/* A closure of worker w could not run there: back to the queue. */
static void
put_back(closure_queue *q, size_t w, closure *cl, bool rider)
{
	if (rider) {
		pasci_queue_rider_put_back(q, w, cl);
	} else {
		pasci_queue_put_back(q, w, cl);
	}
}

/* Closure cl of worker w (a rider or not) failed with err: its remote
 * value reports msg, cl is freed (before the queue lets join return), and
 * the queue keeps the error and frees the closure's place. */
static void
fail_closure(closure_queue *q, size_t w, closure *cl, bool rider, int err,
    const char *msg)
{
	if (cl->rv != NULL) {
		pasci_remote_value_fail(cl->rv, err, msg);
	}
	pasci_closure_free(cl);
	landed(q, w, rider, err, msg);
}

/* Closure cl (a rider or not) came back from worker w with err (the
 * transport's) or reply. */
static void
complete_run(pasco_coordinator *c, size_t w, closure *cl, bool rider, int err,
    pasci_wire_msg *reply, const char *detail)
{
	closure_queue *q     = &c->q;
	pasco_value   *value = NULL;
	char           msg[1024];
	int            status;

	if (err != 0) {
		/* The worker failed, not the function: run it elsewhere, and
		 * back off from w (its connection may be gone already: a
		 * send fails at once, and was made again in a tight loop) */
		pasci_link_fault_lost_send(c, w, cl, detail);
		put_back(q, w, cl, rider);
		return;
	}
	note_result_size(c, cl->name, reply);
	if (reply->hdr->not_run) {
		/* An earlier closure of its batch failed, so this one never
		 * started: like a lost worker's, it goes back to the queue.
		 * That earlier one's fate decides this one's: its error (now
		 * pending) cancels it there, as it cancels everything queued;
		 * a retry (a ps lost and being restored) runs it again. */
		pasci_log(PASCI_LOG_DEBUG,
		    "closure %llu ('%s') did not run: an earlier closure of "
		    "its batch failed",
		    (unsigned long long) cl->id, cl->name);
		put_back(q, w, cl, rider);
		return;
	}
	status = reply->hdr->status;
	if (status == 0 && cl->rv != NULL) {
		status = pasci_wire_get_value(reply, &value, msg, sizeof(msg));
	} else {
		pasci_fmt(msg, sizeof(msg), "%s", reply->hdr->error);
	}
	if (status != 0 && pasci_link_fault_on_failure(
	                       c, w, cl, status, msg) == PASCI_LINK_RETRY) {
		put_back(q, w, cl, rider); /* a ps unreachable from w */
		return;
	}
	if (status != 0) {
		/* with ps recovery, a ps lost under it: run it again */
		switch (
		    pasci_recovery_on_failure(c, w, cl, rider, status, msg)) {
		case PASCI_RECOVERY_RETRY:
			put_back(q, w, cl, rider);
			break;
		case PASCI_RECOVERY_HELD:
			break;
		default:
			fail_closure(q, w, cl, rider, status, msg);
		}
		return;
	}
	if (cl->rv != NULL) {
		pasci_remote_value_set(cl->rv, value);
	}
	pasci_closure_free(cl);
	pasci_link_fault_success(c, w);
	landed(q, w, rider, 0, NULL);
}

/* Sub-reply i of a batch reply, decoded in place. */
static int
batch_part(const pasci_wire_msg *reply, size_t i, pasci_wire_msg *part,
    char *why, size_t len)
{
	if (reply->hdr->status != 0 || i >= reply->ntensors) {
		pasci_fmt(why, len,
		    "the worker answered a batch without part %zu: %s", i,
		    reply->hdr->error);
		return PASCO_EPROTO;
	}
	return pasci_wire_decode_part(part, reply->tensors[i], why, len);
}

/* Completes the closures of a batch from its reply (or transport error). */
static void
complete_batch(flight *f, int err, pasci_wire_msg *reply, const char *detail)
{
	size_t k = 0;
	for (size_t i = 0; i <= f->nriders; i++) {
		closure       *cl   = i == 0 ? f->cl : f->riders[i - 1];
		pasci_wire_msg part = {0};
		char           why[1024];
		int            perr = err;
		if (cl == NULL) {
			continue; /* its input failed: completed at dispatch */
		}
		if (err == 0 && (perr = batch_part(reply, k++, &part, why,
		                     sizeof(why))) != 0) {
			/* a malformed reply: the closure's error, not retried
			 */
			fail_closure(&f->c->q, f->w, cl, i > 0, perr, why);
			continue;
		}
		complete_run(
		    f->c, f->w, cl, i > 0, perr, err ? NULL : &part, detail);
		pasci_wire_msg_fini(&part);
	}
	free(f->riders);
}

static void send_taken(pasco_coordinator *c, size_t w, closure *cl,
    bool tagged, closure **riders);

/* Set while this thread refills a window: a send that fails at once
 * completes its flight inside the refill, which does not refill again. */
static _Thread_local bool refilling;

/* The window slot a flight held is free: fill it from the reply's thread
 * rather than wake the dispatcher for it (one thread hop less per
 * closure; the landing did not wake it: pasci_queue_refiller). */
static void
refill(pasco_coordinator *c, size_t w)
{
	closure *room[32], **riders = room, *next;
	bool     tagged;
	if ((next = pasci_queue_try_get(&c->q, w, &tagged)) == NULL) {
		return;
	}
	refilling = true;
	/* no allocation per closure unless max_batch is raised past 33 */
	if (c->max_batch > 33) {
		riders = pasci_calloc(c->max_batch, sizeof(*riders));
	}
	send_taken(c, w, next, tagged, riders);
	if (riders != room) {
		free(riders);
	}
	refilling = false;
}

/* The RPC callback of a flight (arg, freed here). */
static void
flight_done(void *arg, int err, pasci_wire_msg *reply, const char *detail)
{
	flight f       = *(flight *) arg;
	bool   refills = err == 0 && !f.tagged && !refilling;
	size_t was;
	free(arg);
	/* destroy waits for this to drop to 0: we use f.c after the last
	 * closure has landed */
	__atomic_add_fetch(&f.c->completing, 1, __ATOMIC_SEQ_CST);
	note_finish(f.c);
	pasci_link_fault_progress(f.c, f.w);
	/* landing these closures leaves w's dispatcher asleep when this
	 * thread refills w's window after */
	was = pasci_queue_refiller(&f.c->q, refills ? f.w : SIZE_MAX);
	if (f.tagged) {
		complete_tagged(&f, err, reply, detail);
	} else if (f.riders != NULL) {
		complete_batch(&f, err, reply, detail);
	} else {
		complete_run(f.c, f.w, f.cl, false, err, reply, detail);
	}
	if (reply != NULL) {
		pasci_wire_msg_fini(reply);
	}
	if (refills) {
		refill(f.c, f.w);
	}
	pasci_queue_refiller(&f.c->q, was);
	__atomic_sub_fetch(&f.c->completing, 1, __ATOMIC_SEQ_CST);
}

/* Closure cl, taken for worker w, cannot be sent: no memory for its
 * flight or its message. It is completed here, without allocating: a
 * global closure fails with PASCO_ENOMEM (join raises it; put back, a
 * closure whose message can never be allocated would be retried
 * forever), a tagged one is dropped, and an iterator it would have built
 * reports the error to the closures that use it on w. */
static void
fail_unsent(pasco_coordinator *c, size_t w, closure *cl, bool tagged)
{
	char msg[256];
	pasci_fmt(msg, sizeof(msg),
	    "out of memory sending closure %llu ('%s') to worker %zu",
	    (unsigned long long) cl->id, cl->name != NULL ? cl->name : "", w);
	pasci_log(PASCI_LOG_WARN, "%s", msg);
	note_finish(c);
	if (!tagged) {
		fail_closure(&c->q, w, cl, false, PASCO_ENOMEM, msg);
		return;
	}
	if (cl->kind == CLOSURE_RESOURCE_CREATE) {
		pasci_iterator_set_status(cl->iterator, w, PASCO_ENOMEM, msg);
	}
	pasci_closure_free(cl);
	pasci_queue_tagged_done(&c->q, w);
}

static void
dispatch(pasco_coordinator *c, size_t w, closure *cl, bool tagged)
{
	flight  *f = malloc(sizeof(*f));
	nng_msg *msg;
	char     why[1024];

	if (!tagged && closure_input_failed(cl, w, why, sizeof(why))) {
		free(f);
		fail_closure(&c->q, w, cl, false, PASCO_EINVAL, why);
		return;
	}
	if (f == NULL || (msg = encode_closure(c, w, cl)) == NULL) {
		/* not through flight_done: that needs a flight, which may be
		 * what could not be allocated (the closure was then lost) */
		free(f);
		fail_unsent(c, w, cl, tagged);
		return;
	}
	*f = (flight){c, w, cl, tagged, 0, NULL};
	pasci_rpc_call_fast(c->s->workers[w], msg,
	    tagged ? RESOURCE_TIMEOUT_MS : 0, flight_done, f);
}

/* Adds closure cl, encoded whole, as the next part of batch b. */
static bool
batch_add(pasci_wire_builder *b, pasco_coordinator *c, size_t w, closure *cl)
{
	nng_msg      *m = encode_closure(c, w, cl);
	pasco_tensor *t = NULL;
	if (m == NULL || pasci_wire_msg_view(m, &t) != 0) {
		return false;
	}
	pasci_wire_add_tensor(b, t, NULL);
	pasco_tensor_release(t);
	return true;
}

/* Sends cl and the riders taken with it as one RUN_BATCH message; the
 * worker runs them in order and answers each. */
static void
dispatch_batch(pasco_coordinator *c, size_t w, closure *cl, closure **riders,
    size_t nriders)
{
	flight            *f    = malloc(sizeof(*f));
	closure          **kept = malloc(nriders * sizeof(*kept));
	pasci_wire_builder b;
	nng_msg           *msg = NULL;
	bool               ok  = true;
	char               why[1024];

	if (f == NULL || kept == NULL) {
		/* no memory to track them: every one goes back to the queue */
		for (size_t i = 0; i < nriders; i++) {
			put_back(&c->q, w, riders[i], true);
		}
		put_back(&c->q, w, cl, false);
		free(f);
		free(kept);
		return;
	}
	pasci_wire_builder_init(&b, PASCI_METHOD_RUN_BATCH);
	b.hdr.chief_incarnation = pasci_chief_self_incarnation();
	for (size_t i = 0; i <= nriders; i++) {
		closure *x = i == 0 ? cl : riders[i - 1];
		if (closure_input_failed(x, w, why, sizeof(why))) {
			fail_closure(&c->q, w, x, i > 0, PASCO_EINVAL, why);
			x = NULL;
		} else if (ok) {
			ok = batch_add(&b, c, w, x);
		}
		if (i == 0) {
			cl = x;
		} else {
			kept[i - 1] = x;
		}
	}
	if (!ok || pasci_wire_encode(&b, &msg) != 0) {
		msg = NULL;
	}
	pasci_wire_builder_fini(&b);
	*f = (flight){c, w, cl, false, nriders, kept};
	__atomic_add_fetch(&c->riders_sent, nriders, __ATOMIC_RELAXED);
	if (msg == NULL) {
		flight_done(f, PASCO_EUNAVAILABLE, NULL, "out of memory");
		return;
	}
	pasci_rpc_call_fast(c->s->workers[w], msg, 0, flight_done, f);
}

/* Sends what was taken for worker w: alone, or with riders (riders is
 * room for max_batch - 1 of them, or NULL). */
static void
send_taken(
    pasco_coordinator *c, size_t w, closure *cl, bool tagged, closure **riders)
{
	size_t n =
	    !tagged && riders != NULL && c->max_batch > 1
	        ? pasci_queue_take_riders(&c->q, w, riders, c->max_batch - 1)
	        : 0;
	if (n > 0) {
		dispatch_batch(c, w, cl, riders, n);
	} else {
		dispatch(c, w, cl, tagged);
	}
}

static void *
dispatcher_main(void *arg)
{
	dispatcher_arg *d = arg;
	char            name[16];
	bool            tagged;
	closure        *cl;

	pasci_fmt(name, sizeof(name), "pasco-disp-%zu", d->w);
	pasci_thread_name(name);
	while ((cl = pasci_queue_get(&d->c->q, d->w, &tagged)) != NULL) {
		send_taken(d->c, d->w, cl, tagged, d->riders);
	}
	free(d->riders);
	free(d);
	return NULL;
}

/* TensorFlow's watchdog: when nothing finished for watchdog_ms while
 * something is queued or in flight, say what the queue and workers are
 * doing, then wait another period. */
static void *
watchdog_main(void *arg)
{
	pasco_coordinator *c = arg;
	pasci_thread_name("pasco-watchdog");
	pthread_mutex_lock(&c->mu);
	while (!c->stopping) {
		struct timespec ts;
		int64_t         tick =
                    c->watchdog_ms / 10 > 0 ? c->watchdog_ms / 10 : 1;
		char state[1024];
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += tick / 1000;
		ts.tv_nsec += (tick % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->watchdog_cv, &c->mu, &ts);
		if (c->stopping) {
			break;
		}
		pthread_mutex_unlock(&c->mu);
		if (pasci_now_ms() - __atomic_load_n(&c->last_finish_ms,
		                         __ATOMIC_RELAXED) >=
		        c->watchdog_ms &&
		    pasci_queue_describe(&c->q, state, sizeof(state))) {
			pasci_log(PASCI_LOG_WARN,
			    "watchdog: no closure finished for %lld "
			    "ms: %s",
			    (long long) c->watchdog_ms, state);
			__atomic_add_fetch(
			    &c->watchdog_count, 1, __ATOMIC_RELAXED);
			pasci_metrics_log(
			    c, PASCI_LOG_WARN, "at the watchdog");
			note_finish(
			    c); /* the next report after another period */
		}
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static int
start_dispatchers(pasco_coordinator *c)
{
	for (size_t w = 0; w < c->nworkers; w++) {
		/* what the dispatcher needs, allocated here: a failure fails
		 * the coordinator's creation, not the thread */
		dispatcher_arg *d = malloc(sizeof(*d));
		closure **riders = pasci_calloc(c->max_batch, sizeof(*riders));
		if (d == NULL || riders == NULL) {
			free(d);
			free(riders);
			return PASCO_ENOMEM;
		}
		*d = (dispatcher_arg){c, w, riders};
		if (pthread_create(
		        &c->dispatchers[w], NULL, dispatcher_main, d) != 0) {
			free(d);
			free(riders);
			return PASCO_ENOMEM;
		}
		c->ndispatchers++;
	}
	return PASCO_OK;
}

int
pasci_dispatch_start(pasco_coordinator *c)
{
	if (start_dispatchers(c) != 0) {
		return PASCO_ENOMEM;
	}
	/* the watchdog only logs: the coordinator works without it */
	if (c->watchdog_ms > 0 &&
	    pthread_create(&c->watchdog, NULL, watchdog_main, c) == 0) {
		c->watchdog_started = true;
	}
	return PASCO_OK;
}

/* Abandons the calls in flight to workers: a coordinator going away does
 * not wait for their results (TensorFlow does not either). */
static void
abandon_flights(void *arg)
{
	pasco_coordinator *c = arg;
	c->q.cancel_inflight(c->q.cancel_arg); /* workers stop them too */
	pasci_recovery_flush(c); /* cancelled: the queue is stopped */
	for (size_t w = 0; w < c->nworkers; w++) {
		pasci_rpc_client_abandon(c->s->workers[w], PASCO_ECANCELLED,
		    "the coordinator is shutting down");
	}
}

void
pasci_dispatch_stop(pasco_coordinator *c)
{
	if (c->watchdog_started) {
		pthread_mutex_lock(&c->mu);
		c->stopping = true;
		pthread_cond_signal(&c->watchdog_cv);
		pthread_mutex_unlock(&c->mu);
		pthread_join(c->watchdog, NULL);
		c->watchdog_started = false;
	}
	pasci_queue_stop(&c->q, abandon_flights, c);
	/* a closure the recovery thread was putting back as the queue
	 * stopped (no longer a flight, so nothing above waited for it) */
	pasci_recovery_flush(c);
	for (size_t w = 0; w < c->ndispatchers; w++) {
		pthread_join(c->dispatchers[w], NULL);
	}
	c->ndispatchers = 0;
	while (__atomic_load_n(&c->completing, __ATOMIC_SEQ_CST) > 0) {
		sched_yield(); /* a completion is finishing its refill */
	}
}
