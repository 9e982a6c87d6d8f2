/*
 * Per-worker datasets and iterators (and per-worker variables, which are
 * iterators whose resource is a tensor: per_worker_variable.c). An
 * iterator is a resource id; each
 * worker builds its own dataset under that id from a tagged closure, which
 * the queue runs before any later closure on that worker. Iterators are
 * reference counted (the user and every closure using one); the last
 * release asks every worker to drop it. The coordinator keeps the live
 * ones (under its mu), to rebuild them all on a worker that comes back.
 *
 * This file puts tagged closures on the queue and never calls the
 * coordinator's API or the dispatch engine; they call it. Threads: user
 * threads (create, free), completions (status, release of a closure's
 * reference) and the strategy's connection callback (rebuild).
 */
#include <stdlib.h>
#include <string.h>

#include "coordinator_impl.h"
#include "util.h"

int
pasco_per_worker_dataset_create(pasco_per_worker_dataset **out,
    pasco_coordinator *c, const char *factory_name)
{
	pasco_per_worker_dataset *d;
	*out = NULL;
	if (c == NULL || factory_name == NULL || *factory_name == 0) {
		return PASCO_EINVAL;
	}
	if ((d = pasci_calloc(1, sizeof(*d))) == NULL ||
	    (d->factory = pasci_strdup(factory_name)) == NULL) {
		free(d);
		return PASCO_ENOMEM;
	}
	d->coord = c;
	*out     = d;
	return PASCO_OK;
}

void
pasco_per_worker_dataset_free(pasco_per_worker_dataset *d)
{
	if (d != NULL) {
		free(d->factory);
		free(d);
	}
}

void
pasci_iterator_free(pasco_per_worker_iterator *it, size_t nworkers)
{
	for (size_t w = 0; it->msg != NULL && w < nworkers; w++) {
		free(it->msg[w]);
	}
	free(it->msg);
	free(it->err);
	free(it->factory);
	pthread_mutex_destroy(&it->mu);
	free(it);
}

/* A tagged closure that builds it on worker w, not yet holding it; NULL
 * when out of memory, which its status on w then says. */
static closure *
build_closure(pasco_per_worker_iterator *it, size_t w)
{
	closure *cl = pasci_calloc(1, sizeof(*cl));
	pasci_iterator_set_status(it, w, PASCO_OK, "");
	if (cl == NULL || (cl->name = pasci_strdup(it->factory)) == NULL) {
		free(cl);
		pasci_iterator_set_status(it, w, PASCO_ENOMEM,
		    "out of memory "
		    "building a per-worker iterator");
		return NULL;
	}
	cl->kind     = CLOSURE_RESOURCE_CREATE;
	cl->resource = it->id;
	cl->iterator = it;
	return cl;
}

/* Enqueues the build of it on worker w (a tagged closure holding it). */
static void
iterator_build(pasco_per_worker_iterator *it, size_t w)
{
	closure *cl = build_closure(it, w);
	if (cl != NULL) {
		pthread_mutex_lock(&it->coord->mu);
		it->builds++;
		pthread_mutex_unlock(&it->coord->mu);
		pasci_queue_put_tagged(&it->coord->q, cl, w);
	}
}

void
pasci_iterators_rebuild(pasco_coordinator *c, size_t w)
{
	closure *head = NULL, **tail = &head;

	/* Every live iterator, however many: the closures are chained under
	 * the lock (each holding its iterator, so none is freed meanwhile)
	 * and queued after it, since a put may free a closure, which takes
	 * the lock. */
	pthread_mutex_lock(&c->mu);
	for (pasco_per_worker_iterator *it = c->iterators; it != NULL;
	     it                            = it->next) {
		closure *cl = build_closure(it, w);
		if (cl != NULL) {
			it->builds++;
			*tail = cl;
			tail  = &cl->next;
		}
	}
	pthread_mutex_unlock(&c->mu);
	while (head != NULL) {
		closure *cl = head;
		head        = cl->next;
		cl->next    = NULL;
		pasci_queue_put_tagged(&c->q, cl, w);
	}
}

int
pasco_per_worker_iterator_create(
    pasco_per_worker_iterator **out, pasco_per_worker_dataset *d)
{
	return pasci_iterator_create(out, d->coord, d->factory, false);
}

int
pasci_iterator_create(pasco_per_worker_iterator **out, pasco_coordinator *c,
    const char *factory, bool is_value)
{
	pasco_per_worker_iterator *it;

	*out = NULL;
	if ((it = pasci_calloc(1, sizeof(*it))) == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_mutex_init(&it->mu, NULL);
	it->coord    = c;
	it->refs     = 1;
	it->is_value = is_value;
	it->id       = pasci_coordinator_next_id(c);
	it->factory  = pasci_strdup(factory);
	it->err      = pasci_calloc(c->nworkers, sizeof(*it->err));
	it->msg      = pasci_calloc(c->nworkers, sizeof(*it->msg));
	if (it->factory == NULL || it->err == NULL || it->msg == NULL) {
		pasci_iterator_free(it, c->nworkers);
		return PASCO_ENOMEM;
	}
	pthread_mutex_lock(&c->mu);
	it->next     = c->iterators;
	c->iterators = it;
	pthread_mutex_unlock(&c->mu);
	for (size_t w = 0; w < c->nworkers; w++) {
		iterator_build(it, w);
	}
	*out = it;
	return PASCO_OK;
}

void
pasci_iterator_hold(pasco_per_worker_iterator *it)
{
	pthread_mutex_lock(&it->coord->mu);
	it->refs++;
	pthread_mutex_unlock(&it->coord->mu);
}

static closure *
release_closure(pasco_per_worker_iterator *it)
{
	closure *cl = pasci_calloc(1, sizeof(*cl));
	if (cl != NULL) {
		cl->kind     = CLOSURE_RESOURCE_RELEASE;
		cl->resource = it->id;
	}
	return cl;
}

void
pasci_iterator_release(pasco_per_worker_iterator *it)
{
	pasco_coordinator *c = it->coord;
	bool               last;

	pthread_mutex_lock(&c->mu);
	last = --it->refs == 0;
	if (last) {
		for (pasco_per_worker_iterator **p = &c->iterators; *p != NULL;
		     p                             = &(*p)->next) {
			if (*p == it) {
				*p = it->next;
				break;
			}
		}
	}
	pthread_mutex_unlock(&c->mu);
	if (!last) {
		return;
	}
	/* now, even while a build is queued or running: the release follows
	 * it on its worker (tagged closures keep their order) */
	for (size_t w = 0; w < c->nworkers; w++) {
		closure *cl = release_closure(it);
		if (cl != NULL) {
			pasci_queue_put_tagged(&c->q, cl, w);
		}
	}
	pthread_mutex_lock(&c->mu);
	it->released = true;
	last         = it->builds == 0;
	pthread_mutex_unlock(&c->mu);
	if (last) {
		pasci_iterator_free(it, c->nworkers);
	}
}

void
pasci_iterator_build_done(pasco_per_worker_iterator *it)
{
	pasco_coordinator *c = it->coord;
	bool               gone;
	pthread_mutex_lock(&c->mu);
	gone = --it->builds == 0 && it->released;
	pthread_mutex_unlock(&c->mu);
	if (gone) {
		pasci_iterator_free(it, c->nworkers);
	}
}

void
pasco_per_worker_iterator_free(pasco_per_worker_iterator *it)
{
	if (it != NULL) {
		pasci_iterator_release(it);
	}
}

void
pasci_iterator_set_status(
    pasco_per_worker_iterator *it, size_t w, int err, const char *msg)
{
	pthread_mutex_lock(&it->mu);
	it->err[w] = err;
	free(it->msg[w]);
	it->msg[w] = err != 0 ? pasci_strdup(msg) : NULL;
	pthread_mutex_unlock(&it->mu);
}

int
pasci_iterator_status(
    pasco_per_worker_iterator *it, size_t w, char *msg, size_t len)
{
	int err;
	pthread_mutex_lock(&it->mu);
	err = it->err[w];
	if (err != 0) {
		pasci_fmt(
		    msg, len, "%s", it->msg[w] != NULL ? it->msg[w] : "");
	}
	pthread_mutex_unlock(&it->mu);
	return err;
}
