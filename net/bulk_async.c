/*
 * Calls that do not wait (see bulk.h): the request goes over a bulk link
 * from the caller's thread, the call is registered with its rpc client
 * (rpc.h), and its reply is read by the client's reactor, a thread
 * attached to the client for as long as it lives, which polls the links
 * of the calls in flight and completes each as its reply comes. The
 * client's call table makes such a call fail as the client's own do (its
 * connection to the server lost, its deadline, an abandon, the client's
 * close), exactly once, whoever comes first; a link whose call was
 * completed that way is closed at the reactor's next look (every TICK_MS
 * at most), so a link cut without a word holds nothing for long.
 *
 * Threads: callers append entries under the reactor's mu and wake it
 * through an eventfd; only the reactor removes them, so the entries it
 * polls keep their places while it waits. It reads and completes a ready
 * entry without mu held: a completion may send again (a dispatcher
 * refilling its window), which comes back here to append. Lock order:
 * the reactor's mu, then the client's.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bulk.h"
#include "util.h"

#define TICK_MS 200
#define READ_MS 60000 /* a reply that has begun to arrive: the rest */

typedef struct entry {
	pasci_bulk_pending p;
	uint32_t           id;
} entry;

typedef struct reactor {
	pasci_rpc_client *c;
	pthread_t         th;
	int               wake_fd;
	pthread_mutex_t   mu;
	/* Protected by mu. */
	entry *e;
	size_t n, cap;
	bool   stop;
} reactor;

/* Takes out the entries whose fds polled ready (fds[1 + k] for e[k]) or
 * whose calls were completed otherwise (when check), into ready and dead;
 * mu held. */
static void
take_locked(reactor *r, const struct pollfd *fds, size_t polled, bool check,
    entry *ready, size_t *nready, entry *dead, size_t *ndead)
{
	size_t keep = 0;
	for (size_t k = 0; k < r->n; k++) {
		entry *e = &r->e[k];
		if (k < polled && fds[1 + k].revents != 0) {
			ready[(*nready)++] = *e;
		} else if (check && !pasci_rpc_call_pending(r->c, e->id)) {
			dead[(*ndead)++] = *e;
		} else {
			r->e[keep++] = *e;
		}
	}
	r->n = keep;
}

static void *
reactor_main(void *arg)
{
	reactor       *r     = arg;
	struct pollfd *fds   = NULL;
	entry         *ready = NULL, *dead = NULL;
	size_t         cap   = 0;
	int64_t        check = pasci_now_ms() + TICK_MS;

	pasci_thread_name("pasco-bulk-rx");
	for (;;) {
		size_t   polled, nready = 0, ndead = 0;
		uint64_t v;
		pthread_mutex_lock(&r->mu);
		if (r->stop) {
			pthread_mutex_unlock(&r->mu);
			break;
		}
		if (fds == NULL || cap < r->cap) { /* room for them all */
			cap = r->cap;
			free(fds);
			free(ready);
			free(dead);
			fds   = malloc((cap + 1) * sizeof(*fds));
			ready = malloc((cap + 1) * sizeof(*ready));
			dead  = malloc((cap + 1) * sizeof(*dead));
			if (fds == NULL || ready == NULL || dead == NULL) {
				abort(); /* a few hundred bytes */
			}
		}
		polled = r->n;
		fds[0] = (struct pollfd){.fd = r->wake_fd, .events = POLLIN};
		for (size_t k = 0; k < polled; k++) {
			fds[1 + k] = (struct pollfd){
			    .fd = r->e[k].p.fd, .events = POLLIN};
		}
		pthread_mutex_unlock(&r->mu);
		if (poll(fds, polled + 1, TICK_MS) < 0 && errno != EINTR) {
			memset(fds, 0, (polled + 1) * sizeof(*fds));
		}
		if (fds[0].revents != 0 &&
		    read(r->wake_fd, &v, sizeof(v)) != sizeof(v)) {
			v = 0; /* woken by another: nothing to drain */
		}
		int64_t now = pasci_now_ms();
		pthread_mutex_lock(&r->mu);
		take_locked(r, fds, polled, now >= check, ready, &nready, dead,
		    &ndead);
		pthread_mutex_unlock(&r->mu);
		check = now >= check ? now + TICK_MS : check;
		for (size_t k = 0; k < ndead; k++) {
			pasci_bulk_abandon(&dead[k].p);
		}
		for (size_t k = 0; k < nready; k++) {
			pasci_wire_msg reply;
			char           detail[300];
			int            rv;
			ready[k].p.deadline = now + READ_MS;
			rv                  = pasci_bulk_finish(
			                     &ready[k].p, &reply, detail, sizeof(detail));
			pasci_rpc_call_complete(r->c, ready[k].id, rv,
			    rv == 0 ? &reply : NULL, detail);
		}
	}
	free(fds);
	free(ready);
	free(dead);
	return NULL;
}

static void
reactor_stop(void *it)
{
	reactor *r   = it;
	uint64_t one = 1;
	pthread_mutex_lock(&r->mu);
	r->stop = true;
	pthread_mutex_unlock(&r->mu);
	if (write(r->wake_fd, &one, sizeof(one)) != sizeof(one)) {
		/* the counter is full: it is awake already */
	}
	pthread_join(r->th, NULL);
	for (size_t k = 0; k < r->n; k++) { /* their calls fail at close */
		pasci_bulk_abandon(&r->e[k].p);
	}
	close(r->wake_fd);
	pthread_mutex_destroy(&r->mu);
	free(r->e);
	free(r);
}

static void *
reactor_make(pasci_rpc_client *c)
{
	reactor *r = calloc(1, sizeof(*r));
	if (r == NULL) {
		return NULL;
	}
	r->c       = c;
	r->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&r->mu, NULL);
	if (r->wake_fd < 0 ||
	    pthread_create(&r->th, NULL, reactor_main, r) != 0) {
		if (r->wake_fd >= 0) {
			close(r->wake_fd);
		}
		pthread_mutex_destroy(&r->mu);
		free(r);
		return NULL;
	}
	return r;
}

/* Hands e to r's thread; false when out of memory. */
static bool
reactor_add(reactor *r, const entry *e)
{
	uint64_t one = 1;
	bool     ok  = true;
	pthread_mutex_lock(&r->mu);
	if (r->n == r->cap) {
		size_t want  = r->cap == 0 ? 8 : 2 * r->cap;
		entry *grown = realloc(r->e, want * sizeof(*grown));
		if ((ok = grown != NULL)) {
			r->e   = grown;
			r->cap = want;
		}
	}
	if (ok) {
		r->e[r->n++] = *e;
	}
	pthread_mutex_unlock(&r->mu);
	if (ok && write(r->wake_fd, &one, sizeof(one)) != sizeof(one)) {
		/* the counter is full: it is awake already */
	}
	return ok;
}

bool
pasci_bulk_closures_enabled(void)
{
	const char *v = getenv("PASCO_BULK_CLOSURES");
	return v == NULL || strcmp(v, "0") != 0;
}

void
pasci_rpc_call_fast(pasci_rpc_client *c, nng_msg *req, int64_t timeout_ms,
    pasci_rpc_done_fn done, void *arg)
{
	reactor *r;
	entry    e;
	uint64_t incarnation;
	char     detail[300];
	int      rv;

	/* no bulk port, or over the size nng refuses (it says why) */
	if (!pasci_bulk_closures_enabled() ||
	    nng_msg_len(req) > pasci_max_message_bytes() ||
	    (r = pasci_rpc_client_attach(c, reactor_make, reactor_stop)) ==
	        NULL ||
	    pasci_rpc_call_register(
	        c, timeout_ms, done, arg, &e.id, &incarnation) != 0) {
		pasci_rpc_call_async(c, req, timeout_ms, done, arg);
		return;
	}
	rv = pasci_bulk_begin_msg(
	    c, req, incarnation, timeout_ms, &e.p, detail, sizeof(detail));
	if (rv == PASCO_ENOTFOUND) { /* nothing sent */
		if (pasci_rpc_call_forget(c, e.id)) {
			pasci_rpc_call_async(c, req, timeout_ms, done, arg);
		} else {
			nng_msg_free(req); /* done ran: its connection went */
		}
		return;
	}
	nng_msg_free(req);
	if (rv != 0) {
		pasci_rpc_call_complete(c, e.id, rv, NULL, detail);
	} else if (!reactor_add(r, &e)) {
		pasci_bulk_abandon(&e.p);
		pasci_rpc_call_complete(
		    c, e.id, PASCO_ENOMEM, NULL, "out of memory");
	}
}
