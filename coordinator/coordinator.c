/*
 * The coordinator's public API: create / destroy, pasco_schedule (capturing
 * a closure's arguments) / join / done, and the error accessors. Sending
 * and completing closures is the dispatch engine's (dispatch.c); this file
 * only puts closures on the queue and waits on it.
 *
 * Threads: user threads call these functions, any number at once; the
 * queue serialises them. Error messages are kept per thread. Locks, in order:
 * strategy mu > coordinator mu > queue mu; remote value and iterator locks are
 * leaves.
 */
#include <stdlib.h>
#include <string.h>

#include "coordinator_impl.h"
#include "prom_source.h"
#include "util.h"
#include "variable_impl.h"

/* The message of the error last returned to this thread by schedule /
 * join / done, and the coordinator that returned it: each thread has its
 * own, so no thread overwrites the message another is reading. */
static _Thread_local struct {
	const pasco_coordinator *c;
	char                     msg[1024];
} last_error;

static void
set_error(pasco_coordinator *c, const char *msg)
{
	last_error.c = c;
	pasci_fmt(last_error.msg, sizeof(last_error.msg), "%s", msg);
	pasci_error_note(msg);
}

void
pasci_coordinator_set_error(pasco_coordinator *c, const char *msg)
{
	set_error(c, msg);
}

const char *
pasco_coordinator_error(const pasco_coordinator *c)
{
	return c != NULL && last_error.c == c ? last_error.msg : "";
}

uint64_t
pasco_coordinator_watchdog_count(const pasco_coordinator *c)
{
	return __atomic_load_n(&c->watchdog_count, __ATOMIC_RELAXED);
}

int
pasco_coordinator_create(pasco_coordinator **out, pasco_strategy *s,
    const pasco_coordinator_options *opts)
{
	pasco_coordinator *c;
	uint32_t window = opts != NULL && opts->window > 0 ? opts->window : 4;
	uint32_t cap =
	    opts != NULL && opts->queue_size > 0 ? opts->queue_size : 262144;
	*out = NULL;
	if (s == NULL || (c = pasci_calloc(1, sizeof(*c))) == NULL) {
		return s == NULL ? PASCO_EINVAL : PASCO_ENOMEM;
	}
	c->s              = s;
	c->nworkers       = s->nworkers;
	c->watchdog_ms    = opts != NULL && opts->watchdog_timeout_ms > 0
	                        ? opts->watchdog_timeout_ms
	                        : 0;
	c->last_finish_ms = pasci_now_ms();
	c->max_batch =
	    opts != NULL && opts->max_batch > 0 ? opts->max_batch : 32;
	c->fetches = pasci_counter_new(); /* NULL: fetches are not counted */
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->watchdog_cv, NULL);
	if ((c->dispatchers = pasci_calloc(c->nworkers, sizeof(pthread_t))) ==
	        NULL ||
	    (c->parked = pasci_calloc(c->nworkers, sizeof(closure *))) ==
	        NULL ||
	    (c->linked = pasci_calloc(c->nworkers, sizeof(bool))) == NULL ||
	    (c->faults = pasci_link_faults_new(c->nworkers, s->nps)) == NULL ||
	    pasci_queue_init(&c->q, cap, c->nworkers, window) != 0) {
		pasci_link_faults_free(c->faults);
		free(c->dispatchers);
		free(c->parked);
		free(c->linked);
		pthread_cond_destroy(&c->watchdog_cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return PASCO_ENOMEM;
	}
	pasci_cancel_install(c);
	pthread_mutex_lock(&s->mu);
	if (s->coord != NULL) {
		pasci_error_fmt(s->error, sizeof(s->error),
		    "this strategy already "
		    "has a coordinator (there is one per strategy)");
		pthread_mutex_unlock(&s->mu);
		pasci_queue_fini(&c->q);
		pasci_counter_release(c->fetches);
		pasci_link_faults_free(c->faults);
		free(c->dispatchers);
		free(c->parked);
		free(c->linked);
		pthread_cond_destroy(&c->watchdog_cv);
		pthread_mutex_destroy(&c->mu);
		free(c);
		return PASCO_EEXIST;
	}
	s->coord = c;
	for (size_t w = 0; w < c->nworkers; w++) {
		pasci_queue_set_worker_up(
		    &c->q, w, pasci_rpc_client_is_up(s->workers[w]));
	}
	pthread_mutex_unlock(&s->mu);
	if (pasci_dispatch_start(c) != 0) {
		pasco_coordinator_destroy(c);
		return PASCO_ENOMEM;
	}
	(void) pasci_metrics_source_attach(c, pasci_prom_coordinator_read);
	*out = c;
	return PASCO_OK;
}

void
pasco_coordinator_destroy(pasco_coordinator *c)
{
	if (c == NULL) {
		return;
	}
	pthread_mutex_lock(&c->s->mu);
	c->s->coord = NULL; /* no more connection callbacks */
	pthread_mutex_unlock(&c->s->mu);
	pasci_dispatch_stop(c);
	pasci_metrics_source_detach(c);
	pasci_metrics_log(c, PASCI_LOG_INFO, "at shutdown");
	pasci_counter_release(c->fetches);
	/* Iterators the user did not free: nothing else refers to them. */
	while (c->iterators != NULL) {
		pasco_per_worker_iterator *it = c->iterators;
		c->iterators                  = it->next;
		pasci_iterator_free(it, c->nworkers);
	}
	pasci_queue_fini(&c->q);
	for (size_t w = 0; w < c->nworkers; w++) {
		while (c->parked[w] != NULL) {
			closure *cl  = c->parked[w];
			c->parked[w] = cl->next;
			pasci_closure_free(cl);
		}
	}
	free(c->parked);
	free(c->linked);
	pasci_link_faults_free(c->faults);
	free(c->dispatchers);
	for (size_t i = 0; i < c->nbig_results; i++) {
		free(c->big_results[i]);
	}
	free(c->big_results);
	pthread_cond_destroy(&c->watchdog_cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static int
capture_arg(pasco_coordinator *c, closure_arg *dst, const pasco_arg *a,
    size_t i, char *err, size_t len)
{
	dst->kind = a->kind;
	switch (a->kind) {
	case PASCO_ARG_TENSOR:
		if (a->u.tensor == NULL) {
			break;
		}
		dst->tensor = pasco_tensor_hold((pasco_tensor *) a->u.tensor);
		return PASCO_OK;
	case PASCO_ARG_VARIABLE:
		if (a->u.variable == NULL ||
		    pasci_variable_clone(&dst->variable, a->u.variable) != 0) {
			break;
		}
		return PASCO_OK;
	case PASCO_ARG_ITERATOR:
	case PASCO_ARG_PER_WORKER_VARIABLE: /* an iterator, to the queue */
		dst->kind     = PASCO_ARG_ITERATOR;
		dst->iterator = a->kind == PASCO_ARG_ITERATOR
		                    ? a->u.iterator
		                    : (a->u.per_worker_variable != NULL
		                              ? a->u.per_worker_variable->it
		                              : NULL);
		if (dst->iterator == NULL || dst->iterator->coord != c) {
			dst->iterator = NULL;
			break;
		}
		pasci_iterator_hold(dst->iterator);
		return PASCO_OK;
	}
	pasci_fmt(err, len,
	    "argument %zu is NULL, of unknown kind %d, or an "
	    "iterator or per-worker variable of another coordinator",
	    i, (int) a->kind);
	return PASCO_EINVAL;
}

static int
closure_capture(pasco_coordinator *c, closure **out, const char *fn,
    const pasco_arg *args, size_t nargs, char *err, size_t len)
{
	closure *cl = pasci_calloc(1, sizeof(*cl));
	int      rv = PASCO_OK;

	*out = NULL;
	if (cl == NULL || (cl->name = pasci_strdup(fn)) == NULL ||
	    (cl->args = pasci_calloc(nargs + 1, sizeof(*cl->args))) == NULL) {
		pasci_closure_free(cl);
		pasci_fmt(err, len, "out of memory");
		return PASCO_ENOMEM;
	}
	cl->kind = CLOSURE_RUN;
	cl->id   = pasci_coordinator_next_id(c);
	for (size_t i = 0; i < nargs && rv == 0; i++) {
		rv = capture_arg(c, &cl->args[i], &args[i], i, err, len);
		cl->nargs = i + 1;
	}
	if (rv != 0) {
		pasci_closure_free(cl);
		return rv;
	}
	*out = cl;
	return PASCO_OK;
}

int
pasco_schedule(pasco_coordinator *c, const char *fn, const pasco_arg *args,
    size_t nargs, pasco_remote_value **rvp)
{
	return pasco_schedule_with(c, fn, args, nargs, NULL, rvp);
}

int
pasco_schedule_with(pasco_coordinator *c, const char *fn,
    const pasco_arg *args, size_t nargs, const pasco_schedule_options *opts,
    pasco_remote_value **rvp)
{
	closure            *cl;
	pasco_remote_value *rv = NULL;
	char                msg[1024];
	int                 err;

	if (rvp != NULL) {
		*rvp = NULL;
	}
	if (fn == NULL || *fn == 0 || (nargs > 0 && args == NULL)) {
		set_error(c, "pasco_schedule needs a function name (and args "
		             "when nargs > 0)");
		return PASCO_EINVAL;
	}
	if ((err = closure_capture(
	         c, &cl, fn, args, nargs, msg, sizeof(msg))) != 0) {
		set_error(c, msg);
		return err;
	}
	cl->repeat = opts != NULL && opts->repeat > 1 ? opts->repeat : 1;
	cl->small  = pasci_dispatch_may_ride(c, cl);
	/* the result: the sum of the calls', then their count */
	cl->sum_results = opts != NULL && opts->sum_results;
	if (rvp != NULL) {
		if ((rv = pasci_remote_value_new()) == NULL) {
			pasci_closure_free(cl);
			set_error(c, "out of memory");
			return PASCO_ENOMEM;
		}
		pasci_remote_value_count_fetches(rv, c->fetches);
		pasci_remote_value_hold(rv);
		cl->rv = rv;
	}
	if ((err = pasci_queue_put(&c->q, cl, msg, sizeof(msg))) != 0) {
		set_error(c, msg);
		pasci_closure_free(cl);
		pasco_remote_value_free(rv);
		return err;
	}
	if (rvp != NULL) {
		*rvp = rv;
	}
	return PASCO_OK;
}

int
pasco_join(pasco_coordinator *c)
{
	char msg[1024] = "";
	int  err       = pasci_queue_wait(&c->q, msg, sizeof(msg));
	set_error(c, err != 0 ? msg : "");
	pasci_metrics_log(c, PASCI_LOG_DEBUG, "after join");
	return err;
}

int
pasco_done(pasco_coordinator *c, bool *done)
{
	char msg[1024] = "";
	int  err       = pasci_queue_done(&c->q, done, msg, sizeof(msg));
	set_error(c, err != 0 ? msg : "");
	return err;
}

int
pasco_schedule_shards(pasco_coordinator *c, const char *fn,
    const pasco_arg *args, size_t nargs, int32_t num_shards,
    pasco_value **results)
{
	pasco_remote_value **rvs =
	    pasci_calloc((size_t) num_shards + 1, sizeof(*rvs));
	pasco_arg    *all   = pasci_calloc(nargs + 2, sizeof(*all));
	pasco_tensor *count = NULL;
	int           rv    = rvs && all ? PASCO_OK : PASCO_ENOMEM;

	if (rv == 0 && (num_shards < 1 || (nargs > 0 && args == NULL))) {
		rv = PASCO_EINVAL;
	}
	if (rv == 0) {
		if (nargs > 0) {
			memcpy(all, args, sizeof(*args) * nargs);
		}
		rv = pasco_tensor_scalar(&count, PASCO_I64, num_shards);
	}
	for (int32_t k = 0; rv == 0 && k < num_shards; k++) {
		pasco_tensor *index;
		results[k] = NULL;
		if ((rv = pasco_tensor_scalar(&index, PASCO_I64, k)) != 0) {
			break;
		}
		all[nargs]     = pasco_arg_tensor(index);
		all[nargs + 1] = pasco_arg_tensor(count);
		rv = pasco_schedule(c, fn, all, nargs + 2, &rvs[k]);
		pasco_tensor_release(index); /* the closure holds its own */
	}
	if (rv == 0) {
		rv = pasco_join(c);
	}
	for (int32_t k = 0; rv == 0 && k < num_shards; k++) {
		const pasco_value *v;
		if ((rv = pasco_remote_value_fetch(rvs[k], &v)) == 0 &&
		    (results[k] = pasco_value_clone(v)) == NULL) {
			rv = PASCO_ENOMEM;
		}
	}
	for (int32_t k = 0; rvs != NULL && k < num_shards; k++) {
		pasco_remote_value_free(rvs[k]);
		if (rv != 0 && results != NULL) {
			pasco_value_free(results[k]);
			results[k] = NULL;
		}
	}
	pasco_tensor_release(count);
	free(rvs);
	free(all);
	return rv;
}
