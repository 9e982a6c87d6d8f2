/*
 * The bulk client (see bulk.h): pools of idle connections, calls over
 * them, and the call to the server behind an rpc client, which reads the
 * bulk address that server advertises in its HELLO replies.
 *
 * A call runs on its caller's thread, alone on its connection: it takes an
 * idle connection from the pool (or dials one), sends, waits for the reply
 * with poll() against its deadline, and gives the connection back. A
 * pool's idle list is under its mu, held only to take or give one. A
 * pool with a cluster key proves it on each connection it makes
 * (pasci_bulk_auth_connect) and uses none whose server fails to prove it.
 *
 * A server's address may name a Unix socket too ("host:port @name", from
 * its advert): a connection goes there first, a local link (bulk_frame.h)
 * when the server is on this host, and to TCP otherwise.
 *
 * The calls made through an rpc client share a process-wide pool per
 * advertised address (servers, under servers_mu): a server advertising
 * the same address with a new incarnation (a ps restarted on the same
 * port) gets a fresh pool, for the old connections lead nowhere, and a
 * pool unused for SERVER_FORGET_MS is closed when another is looked up.
 */
#include "bulk.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "address.h"
#include "bulk_frame.h"
#include "metrics_registry.h"
#include "resolve.h"
#include "util.h"

#define POOL_IDLE 16 /* idle connections kept per server */

static uint64_t calls_done; /* atomic */

uint64_t
pasci_bulk_calls_done(void)
{
	return __atomic_load_n(&calls_done, __ATOMIC_RELAXED);
}

struct pasci_bulk_pool {
	bool             has_key; /* set at create, then read only */
	pasci_key        key;
	pthread_mutex_t  mu;
	pasci_bulk_link *idle[POOL_IDLE];
	int              nidle;
};

static void
link_close(pasci_bulk_link *l)
{
	if (l != NULL) {
		pasci_bulk_link_fini(l);
		free(l);
	}
}

int
pasci_bulk_pool_create(pasci_bulk_pool **out, const pasci_key *key)
{
	if ((*out = pasci_calloc(1, sizeof(**out))) == NULL) {
		return PASCO_ENOMEM;
	}
	if (((*out)->has_key = key != NULL)) {
		(*out)->key = *key;
	}
	pthread_mutex_init(&(*out)->mu, NULL);
	return PASCO_OK;
}

void
pasci_bulk_pool_destroy(pasci_bulk_pool *p)
{
	if (p == NULL) {
		return;
	}
	for (int i = 0; i < p->nidle; i++) {
		link_close(p->idle[i]);
	}
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* A connected, non-blocking socket to the Unix socket of abstract name,
 * or -1: the server is not on this host (or is gone). */
static int
dial_local(const char *name)
{
	struct sockaddr_un a;
	socklen_t          alen;
	int                fd =
	    socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	pasci_bulk_local_addr(&a, &alen, name);
	if (fd >= 0 && connect(fd, (struct sockaddr *) &a, alen) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* A connected, non-blocking socket to host:port, or -1. The name is
 * looked up within the connect deadline too: a name service that does not
 * answer must not hold the call (getaddrinfo has no time limit). */
static int
dial_tcp(const char *addr, int64_t deadline_ms, char *detail, size_t len)
{
	pasci_sockaddr sa;
	char           host[256], port[16];
	int            fd = -1, one = 1, soerr = 0, rv;
	socklen_t      slen = sizeof(soerr);

	if (pasci_addr_split(addr, host, sizeof(host), port, sizeof(port)) !=
	    0) {
		pasci_fmt(detail, len, "bad bulk address '%s'", addr);
		return -1;
	}
	if ((rv = pasci_resolve(host, port, 0, deadline_ms - pasci_now_ms(),
	         &sa, detail, len)) != 0) {
		char why[256];
		pasci_fmt(why, sizeof(why), "%s", detail);
		pasci_fmt(detail, len, "bulk address %s: %s", addr, why);
		return -1;
	}
	fd = socket(
	    sa.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *) &sa.sa, sa.len) != 0 &&
	    (errno != EINPROGRESS ||
	        pasci_bulk_wait_fd(fd, POLLOUT, deadline_ms) != 0 ||
	        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) != 0 ||
	        soerr != 0)) {
		pasci_fmt(detail, len, "cannot connect to %s: %s", addr,
		    strerror(soerr != 0 ? soerr : errno));
		close(fd);
		fd = -1;
	}
	if (fd >= 0) {
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return fd;
}

/* A link to addr ("host:port", then " @name" when the server listens on a
 * Unix socket too: tried first), its key proved; NULL with detail. */
static pasci_bulk_link *
dial(const pasci_bulk_pool *p, const char *addr, int64_t deadline_ms,
    char *detail, size_t len)
{
	char             tcp[PASCI_RPC_ADVERT_MAX];
	const char      *at    = strstr(addr, " @");
	bool             local = false;
	int              fd    = -1;
	pasci_bulk_link *l;

	pasci_fmt(tcp, sizeof(tcp), "%.*s",
	    (int) (at != NULL ? (size_t) (at - addr) : strlen(addr)), addr);
	if (at != NULL && pasci_bulk_local_enabled()) {
		local = (fd = dial_local(at + 2)) >= 0;
	}
	if (fd < 0 && (fd = dial_tcp(tcp, deadline_ms, detail, len)) < 0) {
		return NULL;
	}
	if (p->has_key && pasci_bulk_auth_connect(
	                      fd, &p->key, deadline_ms, detail, len) != 0) {
		char why[256];
		pasci_fmt(why, sizeof(why), "%s", detail);
		pasci_fmt(detail, len, "bulk port %s: %s", tcp, why);
		close(fd);
		return NULL;
	}
	if ((l = malloc(sizeof(*l))) == NULL) {
		pasci_fmt(detail, len, "out of memory");
		close(fd);
		return NULL;
	}
	pasci_bulk_link_init(l, fd, local);
	l->spin = true; /* a reply is waited for: spin first */
	return l;
}

/* Connecting waits at most CONNECT_MS: a port a firewall drops must not
 * hold a call for its whole deadline. */
#define CONNECT_MS 3000

static int64_t
connect_deadline(int64_t deadline)
{
	int64_t soon = pasci_now_ms() + CONNECT_MS;
	return soon < deadline ? soon : deadline;
}

/* An idle connection of p, or NULL. */
static pasci_bulk_link *
pool_take(pasci_bulk_pool *p)
{
	pasci_bulk_link *l = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->nidle > 0) {
		l = p->idle[--p->nidle];
	}
	pthread_mutex_unlock(&p->mu);
	return l;
}

/* Whether idle connection l is still open: nothing may be readable on an
 * idle connection but its end (the server closes one idle for
 * PASCO_IDLE_TIMEOUT, or is gone). A request sent on such a connection
 * over TCP would be accepted by the kernel and lost, its call failing as
 * if the server had died. */
static bool
link_idle(const pasci_bulk_link *l)
{
	struct pollfd pfd = {.fd = l->fd, .events = POLLIN};
	return poll(&pfd, 1, 0) == 0;
}

/* A request to send: a builder, stamped as it is sent, or a whole message
 * stamped by the caller. */
typedef struct request {
	pasci_wire_builder *b;
	nng_msg            *msg;
} request;

static int
request_send(pasci_bulk_link *l, const request *r, uint64_t incarnation,
    int64_t deadline)
{
	return r->b != NULL
	           ? pasci_bulk_send_builder(l, r->b, incarnation, deadline)
	           : pasci_bulk_send_msg(l, r->msg, deadline);
}

/* Sends req to addr on an idle connection of p or a new one, *out. */
static int
call_send(pasci_bulk_pool *p, const char *addr, uint64_t incarnation,
    const request *req, int64_t deadline, pasci_bulk_link **out,
    bool *reused_out, char *detail, size_t len)
{
	pasci_bulk_link *l      = NULL;
	bool             reused = false;
	int              rv;

	*out = NULL;
	while ((l = pool_take(p)) != NULL && !link_idle(l)) {
		link_close(l); /* the server closed it while it waited */
	}
	reused = l != NULL;
	if (l == NULL && (l = dial(p, addr, connect_deadline(deadline), detail,
	                      len)) == NULL) {
		return PASCO_ENOTFOUND; /* nothing sent: the caller may use nng
		                         */
	}
	rv = request_send(l, req, incarnation, deadline);
	if (rv == PASCO_EUNAVAILABLE && reused) {
		/* an idle connection the server dropped: once more, fresh */
		link_close(l);
		if ((l = dial(p, addr, connect_deadline(deadline), detail,
		         len)) == NULL) {
			return PASCO_ENOTFOUND;
		}
		rv     = request_send(l, req, incarnation, deadline);
		reused = false;
	}
	if (rv != 0) {
		pasci_fmt(detail, len, "%s bulk request to %s",
		    rv == PASCO_ETIMEDOUT ? "timed out sending a" : "lost a",
		    addr);
		link_close(l);
		return rv;
	}
	*out = l;
	if (reused_out != NULL) {
		*reused_out = reused;
	}
	return PASCO_OK;
}

/* The reply to the request call_send sent on l; l goes back to p's idle
 * ones, or is closed after a failure. */
static int
call_recv(pasci_bulk_pool *p, pasci_bulk_link *l, int64_t deadline,
    pasci_wire_msg *reply, char *detail, size_t len)
{
	int rv = pasci_bulk_recv_frame(l, reply, deadline, true, detail, len);
	if (rv != 0) {
		link_close(l);
		return rv;
	}
	__atomic_add_fetch(&calls_done, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&p->mu);
	if (p->nidle < POOL_IDLE) {
		p->idle[p->nidle++] = l;
		l                   = NULL;
	}
	pthread_mutex_unlock(&p->mu);
	link_close(l);
	return PASCO_OK;
}

static int64_t
deadline_in(int64_t timeout_ms)
{
	return pasci_now_ms() + (timeout_ms > 0 ? timeout_ms : 60000);
}

int
pasci_bulk_call(pasci_bulk_pool *p, const char *addr, uint64_t incarnation,
    pasci_wire_builder *req, int64_t timeout_ms, pasci_wire_msg *reply,
    char *detail, size_t len)
{
	int64_t          deadline = deadline_in(timeout_ms);
	pasci_bulk_link *l;
	int              rv;
	request          r = {.b = req};
	memset(reply, 0, sizeof(*reply));
	if ((rv = call_send(p, addr, incarnation, &r, deadline, &l, NULL,
	         detail, len)) != 0) {
		return rv;
	}
	return call_recv(p, l, deadline, reply, detail, len);
}

/* The pools of the servers reached through rpc clients. */

#define SERVER_FORGET_MS 60000

typedef struct server_pool {
	char                addr[PASCI_RPC_ADVERT_MAX];
	uint64_t            incarnation;
	pasci_bulk_pool    *pool;
	int                 users;   /* calls using pool now */
	int64_t             used_ms; /* when the last one began */
	struct server_pool *next;
} server_pool;

static pthread_mutex_t servers_mu = PTHREAD_MUTEX_INITIALIZER;
static server_pool    *servers; /* protected by servers_mu */

/* Unlinks the pools no call uses that lead to addr's old incarnations or
 * were unused for SERVER_FORGET_MS; returns them. */
static server_pool *
servers_take_stale_locked(const char *addr, uint64_t inc, int64_t now)
{
	server_pool **pp = &servers, *stale = NULL;
	while (*pp != NULL) {
		server_pool *sp = *pp;
		bool         old =
		    strcmp(sp->addr, addr) == 0 && sp->incarnation != inc;
		if (sp->users == 0 &&
		    (old || now - sp->used_ms >= SERVER_FORGET_MS)) {
			*pp      = sp->next;
			sp->next = stale;
			stale    = sp;
		} else {
			pp = &sp->next;
		}
	}
	return stale;
}

/* The pool for (addr, inc), held for one call (server_release), or NULL
 * when out of memory. */
static server_pool *
server_hold(const char *addr, uint64_t inc, const pasci_key *key)
{
	server_pool *sp, *stale;
	int64_t      now = pasci_now_ms();
	pthread_mutex_lock(&servers_mu);
	stale = servers_take_stale_locked(addr, inc, now);
	for (sp = servers; sp != NULL; sp = sp->next) {
		if (sp->incarnation == inc && strcmp(sp->addr, addr) == 0) {
			break;
		}
	}
	if (sp == NULL && (sp = pasci_calloc(1, sizeof(*sp))) != NULL) {
		if (pasci_bulk_pool_create(&sp->pool, key) != 0) {
			free(sp);
			sp = NULL;
		} else {
			pasci_fmt(sp->addr, sizeof(sp->addr), "%s", addr);
			sp->incarnation = inc;
			sp->next        = servers;
			servers         = sp;
		}
	}
	if (sp != NULL) {
		sp->users++;
		sp->used_ms = now;
	}
	pthread_mutex_unlock(&servers_mu);
	while (stale != NULL) { /* closing sockets: outside the lock */
		server_pool *next = stale->next;
		pasci_bulk_pool_destroy(stale->pool);
		free(stale);
		stale = next;
	}
	return sp;
}

static void
server_release(server_pool *sp)
{
	pthread_mutex_lock(&servers_mu);
	sp->users--;
	pthread_mutex_unlock(&servers_mu);
}

/* The address to dial for peer's advert into addr: a server that listens
 * on every interface advertises its bulk port alone (":port", then maybe
 * " @name"), reached at the host this client reaches its RPC at; without
 * local links, the TCP address alone (its own pool). PASCO_ENOTFOUND with
 * detail when there is none. */
static int
dial_address(const pasci_rpc_peer *peer, char *addr, size_t len, char *detail,
    size_t dlen)
{
	char        host[256], port[16], bulk_port[16];
	const char *at = strstr(peer->advert, " @");
	pasci_fmt(addr, len, "%s", peer->advert);
	if (peer->advert[0] == 0) {
		pasci_fmt(detail, dlen, "%s has no bulk address", peer->url);
		return PASCO_ENOTFOUND;
	}
	if (peer->advert[0] == ':') {
		if (pasci_url_split(peer->url, host, sizeof(host), port,
		        sizeof(port)) != 0) {
			pasci_fmt(detail, dlen,
			    "%s advertised bulk port '%s' without a host",
			    peer->url, peer->advert);
			return PASCO_ENOTFOUND;
		}
		pasci_fmt(bulk_port, sizeof(bulk_port), "%.*s",
		    (int) (at != NULL ? (size_t) (at - peer->advert - 1)
		                      : strlen(peer->advert + 1)),
		    peer->advert + 1);
		pasci_addr_join(addr, len, host, bulk_port);
		if (at != NULL) {
			strncat(addr, at, len - strlen(addr) - 1);
		}
	}
	if (!pasci_bulk_local_enabled() && (at = strstr(addr, " @")) != NULL) {
		addr[at - addr] = 0;
	}
	return PASCO_OK;
}

/* pasci_bulk_begin of r; a message is stamped with the server's
 * incarnation here, which must be want (when not 0). */
static int
begin(pasci_rpc_client *c, const request *r, uint64_t want, int64_t timeout_ms,
    pasci_bulk_pending *p, char *detail, size_t len)
{
	char           addr[PASCI_RPC_ADVERT_MAX];
	pasci_rpc_peer peer;
	int            rv;

	memset(p, 0, sizeof(*p));
	p->fd       = -1;
	p->start_ns = pasci_now_ns();
	if ((rv = pasci_rpc_client_peer(c, &peer)) != 0) {
		pasci_fmt(detail, len, "not connected to %s", peer.url);
		return rv;
	}
	if (want != 0 && peer.incarnation != want) {
		pasci_fmt(detail, len, "%s restarted", peer.url);
		return PASCO_EABORTED; /* nothing sent */
	}
	if ((rv = dial_address(&peer, addr, sizeof(addr), detail, len)) != 0) {
		return rv;
	}
	if ((p->server = server_hold(addr, peer.incarnation, peer.key)) ==
	    NULL) {
		pasci_fmt(detail, len, "out of memory");
		return PASCO_ENOMEM;
	}
	if (r->msg != NULL) {
		pasci_wire_set_incarnation(r->msg, peer.incarnation);
	}
	p->client   = c;
	p->deadline = deadline_in(timeout_ms);
	rv          = call_send(((server_pool *) p->server)->pool, addr,
	             peer.incarnation, r, p->deadline, (pasci_bulk_link **) &p->link,
	             &p->reused, detail, len);
	if (rv == 0) {
		p->fd = ((pasci_bulk_link *) p->link)->fd;
	} else {
		server_release(p->server);
		p->server = NULL;
	}
	if (rv == PASCO_ENOTFOUND &&
	    pasci_rpc_client_forget_advert(c, peer.incarnation)) {
		/* its bulk port cannot be reached (a firewall?): nng carries
		 * everything for a while, then the port is tried again */
		pasci_log(PASCI_LOG_WARN,
		    "%s: %s; using nng for everything, and trying the bulk "
		    "port again in %d s, then less often (if the task has "
		    "stopped, its nng connection fails too)",
		    peer.url, detail, PASCI_ADVERT_RETRY_MS / 1000);
	}
	return rv;
}

int
pasci_bulk_begin(pasci_rpc_client *c, pasci_wire_builder *b,
    int64_t timeout_ms, pasci_bulk_pending *p, char *detail, size_t len)
{
	request r = {.b = b};
	return begin(c, &r, 0, timeout_ms, p, detail, len);
}

int
pasci_bulk_begin_msg(pasci_rpc_client *c, nng_msg *msg, uint64_t incarnation,
    int64_t timeout_ms, pasci_bulk_pending *p, char *detail, size_t len)
{
	request r = {.msg = msg};
	return begin(c, &r, incarnation, timeout_ms, p, detail, len);
}

void
pasci_bulk_abandon(pasci_bulk_pending *p)
{
	if (p->server != NULL) {
		link_close(p->link);
		p->link = NULL;
		server_release(p->server);
		p->server = NULL;
	}
}

int
pasci_bulk_finish(
    pasci_bulk_pending *p, pasci_wire_msg *reply, char *detail, size_t len)
{
	server_pool *sp = p->server;
	int          rv;
	memset(reply, 0, sizeof(*reply));
	if (sp == NULL) {
		pasci_fmt(detail, len, "no bulk request was sent");
		return PASCO_EINVAL;
	}
	if ((rv = p->err) != 0) { /* its batched write failed */
		pasci_fmt(detail, len, "%s bulk request to %s",
		    rv == PASCO_ETIMEDOUT ? "timed out sending a" : "lost a",
		    sp->addr);
		pasci_bulk_abandon(p);
		return rv;
	}
	rv = call_recv(sp->pool, p->link, p->deadline, reply, detail, len);
	p->link = NULL;
	server_release(sp);
	p->server = NULL;
	if (rv != 0) {
		return rv;
	}
	pasci_metric_observe_since(PASCI_MH_REQUEST, p->start_ns);
	if (reply->hdr->stale_incarnation) {
		pasci_fmt(detail, len, "%s restarted: %s",
		    pasci_rpc_client_url(p->client), reply->hdr->error);
		pasci_wire_msg_fini(reply);
		return PASCO_EABORTED;
	}
	return PASCO_OK;
}

size_t
pasci_bulk_wait_any(pasci_bulk_pending *const *p, size_t n)
{
	struct pollfd fds[16];
	int64_t       deadline = INT64_MAX;
	if (n <= 1) {
		return 0;
	}
	n = n < 16 ? n : 16; /* the rest wait their turn */
	for (size_t k = 0; k < n; k++) {
		if (p[k]->err != 0) {
			return k; /* its batched write failed: nothing to wait
			             for */
		}
		fds[k] = (struct pollfd){.fd = p[k]->fd, .events = POLLIN};
		deadline =
		    p[k]->deadline < deadline ? p[k]->deadline : deadline;
	}
	for (;;) {
		int64_t left = deadline - pasci_now_ms();
		int     got;
		if (left <= 0) {
			return 0;
		}
		got = poll(
		    fds, (nfds_t) n, left > 1000000 ? 1000000 : (int) left);
		if (got < 0 && errno != EINTR) {
			return 0;
		}
		for (size_t k = 0; got > 0 && k < n; k++) {
			if (fds[k].revents != 0) {
				return k;
			}
		}
	}
}

/* Whether batches write together and wait_all waits for all at once:
 * PASCO_BULK_BATCH=0 makes each request written as it is begun and each
 * reply waited for as it comes (read once). */
static bool
batch_enabled(void)
{
	static int on = -1; /* atomic: -1 not read yet */
	int        v  = __atomic_load_n(&on, __ATOMIC_RELAXED);
	if (v < 0) {
		const char *e = getenv("PASCO_BULK_BATCH");
		v             = e == NULL || strcmp(e, "0") != 0;
		__atomic_store_n(&on, v, __ATOMIC_RELAXED);
	}
	return v != 0;
}

void
pasci_bulk_wait_all(pasci_bulk_pending *const *p, size_t n)
{
	int     fds[PASCI_BULK_HELD_MAX];
	int64_t deadline = INT64_MAX;
	if (n <= 1 || n > PASCI_BULK_HELD_MAX || !batch_enabled()) {
		return; /* wait_any's poll waits as well for one */
	}
	for (size_t k = 0; k < n; k++) {
		if (p[k]->err != 0) {
			return; /* one is done already: no wait */
		}
		fds[k] = p[k]->fd;
		deadline =
		    p[k]->deadline < deadline ? p[k]->deadline : deadline;
	}
	if (!pasci_bulk_spin_ready(fds, n)) { /* then asleep, woken once */
		(void) pasci_bulk_ring_wait_all(fds, n, deadline);
	}
}

int
pasci_bulk_call_server(pasci_rpc_client *c, pasci_wire_builder *b,
    int64_t timeout_ms, pasci_wire_msg *reply, char *detail, size_t len)
{
	pasci_bulk_pending p;
	int rv = pasci_bulk_begin(c, b, timeout_ms, &p, detail, len);
	if (rv != 0) {
		memset(reply, 0, sizeof(*reply));
		return rv;
	}
	return pasci_bulk_finish(&p, reply, detail, len);
}

/* Batches (bulk.h): the frames kept while they were begun, written by
 * the thread's ring (bulk_ring.c) or one after the other. */

/* Writes every held frame, setting each one's err (0 when written). */
static void
held_write(pasci_bulk_held *h, size_t n, const int64_t *deadline)
{
	ssize_t done[PASCI_BULK_HELD_MAX];
	bool    ringed = n > 1 && pasci_bulk_ring_send(h, n, done);
	for (size_t i = 0; i < n; i++) {
		size_t from = 0;
		if (ringed && done[i] >= 0) {
			from = (size_t) done[i];
		} else if (ringed && done[i] != -EAGAIN && done[i] != -EINTR) {
			h[i].err = PASCO_EUNAVAILABLE; /* EPIPE, ECONNRESET */
			continue;
		}
		if (from < h[i].len) { /* the rest, as any write */
			h[i].err = pasci_bulk_send_bytes(h[i].l,
			    h[i].bytes + from, h[i].len - from, deadline[i]);
		}
	}
}

void
pasci_bulk_batch_start(void)
{
	if (batch_enabled()) {
		pasci_bulk_hold_start();
	}
}

/* Held frame h of p failed: made again on a fresh connection when p took
 * an idle one (the server closed it while it waited), else p's error. */
static void
held_failed(pasci_bulk_pending *p, const pasci_bulk_held *h)
{
	server_pool     *sp = p->server;
	pasci_bulk_link *l  = NULL;
	char             detail[256];
	int              rv = h->err;
	if (rv == PASCO_EUNAVAILABLE && p->reused &&
	    (l = dial(sp->pool, sp->addr, connect_deadline(p->deadline),
	         detail, sizeof(detail))) != NULL &&
	    (rv = pasci_bulk_send_body(
	         l, h->body, h->body_len, p->deadline)) == 0) {
		link_close(p->link); /* after: the body may be in its region */
		p->link   = l;
		p->fd     = l->fd;
		p->reused = false;
		return;
	}
	link_close(l);
	p->err = rv;
}

void
pasci_bulk_batch_send(pasci_bulk_pending *const *p, size_t n)
{
	pasci_bulk_held h[PASCI_BULK_HELD_MAX];
	int64_t         deadline[PASCI_BULK_HELD_MAX];
	size_t          nh = pasci_bulk_hold_stop(h);
	for (size_t i = 0; i < nh; i++) {
		deadline[i] = pasci_now_ms() + 60000;
		for (size_t k = 0; k < n; k++) {
			if (p[k]->link == h[i].l) {
				deadline[i] = p[k]->deadline;
			}
		}
	}
	held_write(h, nh, deadline);
	for (size_t i = 0; i < nh; i++) {
		for (size_t k = 0; h[i].err != 0 && k < n; k++) {
			if (p[k]->link == h[i].l) {
				held_failed(p[k], &h[i]);
			}
		}
		free(h[i].bytes);
	}
}
