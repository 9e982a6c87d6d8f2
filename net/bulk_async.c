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
 * Threads: callers add an entry (its link's fd to the reactor's epoll
 * set, the entry to its list) under the reactor's mu, without waking it:
 * epoll_wait returns when a reply arrives. Only the reactor takes entries
 * out. It reads and completes a ready entry without mu held: a
 * completion may send again (a dispatcher refilling its window), which
 * comes back here to add one. Lock order: the reactor's mu, then the
 * client's.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bulk.h"
#include "util.h"

#define TICK_MS 200
#define READ_MS 60000 /* a reply that has begun to arrive: the rest */
#define EVENTS 16

/* A call in flight: its link (p) and its id in the client's table; in
 * the reactor's list and epoll set until the reactor takes it out. */
typedef struct entry {
	pasci_bulk_pending p;
	uint32_t           id;
	struct entry      *prev, *next;
} entry;

typedef struct reactor {
	pasci_rpc_client *c;
	pthread_t         th;
	int               ep;      /* epoll: the links, and stop_fd */
	int               stop_fd; /* an eventfd, written to stop */
	pthread_mutex_t   mu;
	entry            *list; /* protected by mu */
} reactor;

/* Takes e out of r's list and epoll set; mu held. */
static void
take_locked(reactor *r, entry *e)
{
	epoll_ctl(r->ep, EPOLL_CTL_DEL, e->p.fd, NULL);
	if (e->prev != NULL) {
		e->prev->next = e->next;
	} else {
		r->list = e->next;
	}
	if (e->next != NULL) {
		e->next->prev = e->prev;
	}
}

/* Closes the links of the calls completed otherwise (their connection to
 * the server lost, a deadline, an abandon). */
static void
drop_dead(reactor *r)
{
	entry *dead = NULL;
	pthread_mutex_lock(&r->mu);
	for (entry *e = r->list, *next; e != NULL; e = next) {
		next = e->next;
		if (!pasci_rpc_call_pending(r->c, e->id)) {
			take_locked(r, e);
			e->next = dead;
			dead    = e;
		}
	}
	pthread_mutex_unlock(&r->mu);
	while (dead != NULL) {
		entry *e = dead;
		dead     = e->next;
		pasci_bulk_abandon(&e->p);
		free(e);
	}
}

/* Reads the reply on e's link and completes its call; frees e. */
static void
finish(reactor *r, entry *e)
{
	pasci_wire_msg reply;
	char           detail[300];
	int            rv;
	e->p.deadline = pasci_now_ms() + READ_MS;
	rv = pasci_bulk_finish(&e->p, &reply, detail, sizeof(detail));
	pasci_rpc_call_complete(
	    r->c, e->id, rv, rv == 0 ? &reply : NULL, detail);
	free(e);
}

static void *
reactor_main(void *arg)
{
	reactor           *r = arg;
	struct epoll_event ev[EVENTS];
	int64_t            check = pasci_now_ms() + TICK_MS;

	pasci_thread_name("pasco-bulk-rx");
	for (;;) {
		int n = epoll_wait(r->ep, ev, EVENTS, TICK_MS);
		for (int i = 0; i < n; i++) {
			entry *e = ev[i].data.ptr;
			if (e == NULL) { /* stop_fd */
				return NULL;
			}
			pthread_mutex_lock(&r->mu);
			take_locked(r, e);
			pthread_mutex_unlock(&r->mu);
			finish(r, e);
		}
		int64_t now = pasci_now_ms();
		if (now >= check) {
			drop_dead(r);
			check = now + TICK_MS;
		}
	}
}

static void
reactor_stop(void *it)
{
	reactor *r   = it;
	uint64_t one = 1;
	if (write(r->stop_fd, &one, sizeof(one)) != sizeof(one)) {
		/* the counter is full: it is stopping already */
	}
	pthread_join(r->th, NULL);
	while (r->list != NULL) { /* their calls fail at the close */
		entry *e = r->list;
		r->list  = e->next;
		pasci_bulk_abandon(&e->p);
		free(e);
	}
	close(r->stop_fd);
	close(r->ep);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static void *
reactor_make(pasci_rpc_client *c)
{
	reactor           *r    = pasci_calloc(1, sizeof(*r));
	struct epoll_event stop = {.events = EPOLLIN, .data.ptr = NULL};
	if (r == NULL) {
		return NULL;
	}
	r->c       = c;
	r->ep      = epoll_create1(EPOLL_CLOEXEC);
	r->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&r->mu, NULL);
	if (r->ep < 0 || r->stop_fd < 0 ||
	    epoll_ctl(r->ep, EPOLL_CTL_ADD, r->stop_fd, &stop) != 0 ||
	    pthread_create(&r->th, NULL, reactor_main, r) != 0) {
		if (r->ep >= 0) {
			close(r->ep);
		}
		if (r->stop_fd >= 0) {
			close(r->stop_fd);
		}
		pthread_mutex_destroy(&r->mu);
		free(r);
		return NULL;
	}
	return r;
}

/* Hands the call (id, its link p) to r's thread; false when out of
 * memory or epoll refuses it (p is then still the caller's). */
static bool
reactor_add(reactor *r, const pasci_bulk_pending *p, uint32_t id)
{
	entry             *e = malloc(sizeof(*e));
	struct epoll_event ev;
	bool               ok;
	if (e == NULL) {
		return false;
	}
	*e = (entry){.p = *p, .id = id};
	ev = (struct epoll_event){.events = EPOLLIN, .data.ptr = e};
	pthread_mutex_lock(&r->mu);
	if ((ok = epoll_ctl(r->ep, EPOLL_CTL_ADD, p->fd, &ev) == 0)) {
		e->next = r->list;
		if (r->list != NULL) {
			r->list->prev = e;
		}
		r->list = e;
	}
	pthread_mutex_unlock(&r->mu);
	if (!ok) {
		free(e);
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
	reactor           *r;
	pasci_bulk_pending p;
	uint32_t           id;
	uint64_t           incarnation;
	char               detail[300], advert[8];
	int                rv;

	/* no bulk port (TLS, inproc, none advertised, or not connected), or
	 * over the size nng refuses (it says why) */
	if (!pasci_bulk_closures_enabled() ||
	    nng_msg_len(req) > pasci_max_message_bytes() ||
	    pasci_rpc_client_advert(c, advert, sizeof(advert), &incarnation) !=
	        0 ||
	    advert[0] == 0 ||
	    (r = pasci_rpc_client_attach(c, reactor_make, reactor_stop)) ==
	        NULL ||
	    pasci_rpc_call_register(
	        c, timeout_ms, done, arg, &id, &incarnation) != 0) {
		pasci_rpc_call_async(c, req, timeout_ms, done, arg);
		return;
	}
	rv = pasci_bulk_begin_msg(
	    c, req, incarnation, timeout_ms, &p, detail, sizeof(detail));
	if (rv == PASCO_ENOTFOUND) { /* nothing sent */
		if (pasci_rpc_call_forget(c, id)) {
			pasci_rpc_call_async(c, req, timeout_ms, done, arg);
		} else {
			nng_msg_free(req); /* done ran: its connection went */
		}
		return;
	}
	nng_msg_free(req);
	if (rv != 0) {
		pasci_rpc_call_complete(c, id, rv, NULL, detail);
	} else if (!reactor_add(r, &p, id)) {
		pasci_bulk_abandon(&p);
		pasci_rpc_call_complete(
		    c, id, PASCO_ENOMEM, NULL, "out of memory");
	}
}
