/*
 * The bulk server (see bulk.h): an accept thread, and one thread per
 * connection doing blocking frame I/O (bulk_frame.h), one request at a
 * time, the reply on the same connection. Requests stamped for another
 * incarnation are refused, as rpc_server.c refuses them, without running.
 *
 * Two listening sockets: TCP on the host's interfaces, and a Unix socket
 * in the abstract namespace under a random name (its advert's "@name";
 * not with PASCO_BULK_LOCAL=0) for clients on this host, whose links
 * carry big frames through shared memory (bulk_frame.h). Both serve the
 * same requests under the same rules.
 *
 * Threads: the accept thread owns the listening sockets and adds
 * connections to the list; connection threads only read their own conn
 * and set its done flag; the list is under the server's mu, and the
 * accept thread (and close) joins and frees the connections whose threads
 * have returned. Closing sets a flag, shuts the listening sockets down to
 * wake the accept thread's poll, joins it, then shuts down and joins
 * every connection.
 *
 * Hostile peers: at most max_conns members live at once (others are
 * closed as they are accepted, or, with a key, once they prove it), and a
 * connection on which no request arrives, or whose reply is not taken,
 * within idle_ms is closed; both are read from the environment at open
 * (PASCO_MAX_CONNECTIONS, PASCO_IDLE_TIMEOUT in seconds), so stalled
 * connections cost a bounded number of threads for a bounded time. With
 * a key, connections still in the handshake (AUTH_MS at most) are
 * counted apart, up to max_conns, the oldest shut down to make room: a
 * stranger's connections never keep a member out. The port is one the system
 * picks unless PASCO_BULK_PORT names one (for a firewall; a worker's:
 * PASCO_WORKER_BULK_PORT).
 *
 * With a cluster key, a connection's thread first runs the handshake
 * (pasci_bulk_auth_accept, within AUTH_MS) and reads no frame from a peer
 * that fails it: the connection is closed and the peer's address logged.
 */
#include "bulk.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "auth.h"
#include "bufcache.h"
#include "bulk_frame.h"
#include "conns.h"
#include "metrics_registry.h"
#include "resolve.h"
#include "tensor_impl.h"
#include "util.h"

typedef struct conn {
	pasci_bulk_link    link;
	char               peer[80]; /* "a.b.c.d:port" or "pid N ..." */
	pthread_t          th;
	int                done;      /* atomic: its thread has returned */
	int                member;    /* atomic: proved the key, or none */
	int64_t            opened_ms; /* set before its thread starts */
	pasci_bulk_server *s;
	struct conn       *next;
} conn;

struct pasci_bulk_server {
	int                listen_fd;
	int                local_fd; /* the Unix socket's, or -1 */
	char               addr[PASCI_RPC_ADVERT_MAX];   /* host:port */
	char               advert[PASCI_RPC_ADVERT_MAX]; /* :port [@name] */
	uint64_t           incarnation;
	pasci_bulk_handler handler;
	void              *arg;
	bool               has_key; /* set at open, then read only */
	pasci_key          key;
	pthread_t          accept_th;
	pthread_mutex_t    mu;
	conn              *conns;   /* protected by mu */
	int                nconns;  /* protected by mu */
	int                closing; /* atomic */
	int                max_conns;
	int64_t            idle_ms;           /* 0: none */
	int64_t            refused_logged_ms; /* accept thread only */
	int64_t            auth_logged_ms;    /* protected by mu */
	int64_t            full_logged_ms;    /* protected by mu */
	int64_t            bad_logged_ms;     /* protected by mu */
	unsigned           auth_unlogged;     /* protected by mu */
};

#define REFUSAL_LOG_MS 10000 /* a refused handshake's line at most */

static int64_t last_traffic_ms; /* atomic: pasci_bulk_last_traffic_ms */
static int64_t last_request_ms; /* atomic: pasci_bulk_last_request_ms */

static void
note_traffic(void)
{
	__atomic_store_n(&last_traffic_ms, pasci_now_ms(), __ATOMIC_RELAXED);
}

int64_t
pasci_bulk_last_traffic_ms(void)
{
	return __atomic_load_n(&last_traffic_ms, __ATOMIC_RELAXED);
}

int64_t
pasci_bulk_last_request_ms(void)
{
	return __atomic_load_n(&last_request_ms, __ATOMIC_RELAXED);
}

#define AUTH_MS 10000          /* for a new connection's handshake */
#define LISTEN_LOOKUP_MS 10000 /* for the listen address's name */

static int64_t
deadline_of(const pasci_bulk_server *s)
{
	return s->idle_ms > 0 ? pasci_now_ms() + s->idle_ms
	                      : PASCI_BULK_NO_DEADLINE;
}

/* The answer to one request, sent on c. */
static int
answer(pasci_bulk_server *s, pasci_bulk_link *l, const pasci_wire_msg *req)
{
	pasci_wire_builder b;
	nng_msg           *msg;
	int                rv;
	int64_t            t0 = pasci_now_ns();

	pasci_metric_count(PASCI_MF_REQUESTS, (int) req->hdr->method);
	if (req->incarnation != 0 && req->incarnation != s->incarnation) {
		/* no memory for the refusal: drop the connection instead */
		msg = pasci_wire_stale_reply(req->incarnation, s->incarnation);
		if (msg == NULL) {
			return PASCO_ENOMEM;
		}
		pasci_wire_set_incarnation(msg, s->incarnation);
		rv = pasci_bulk_send_msg(l, msg, deadline_of(s));
		nng_msg_free(msg);
		return rv;
	}
	pasci_wire_builder_init(&b, req->hdr->method);
	if ((msg = s->handler(s->arg, req, &b)) != NULL) {
		pasci_wire_set_incarnation(msg, s->incarnation);
		rv = pasci_bulk_send_msg(l, msg, deadline_of(s));
		nng_msg_free(msg);
	} else {
		rv = pasci_bulk_send_builder(
		    l, &b, s->incarnation, deadline_of(s));
	}
	pasci_wire_builder_fini(&b);
	pasci_metric_observe_since(PASCI_MH_HANDLING, t0);
	return rv;
}

/* "a.b.c.d:port" of the address a (from accept), into buf. */
static const char *
peer_name(const struct sockaddr_storage *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "an unknown address";
	if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *) a;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		return pasci_fmt(
		    buf, len, "[%s]:%d", ip, (int) ntohs(in6->sin6_port));
	}
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *) a;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		return pasci_fmt(
		    buf, len, "%s:%d", ip, (int) ntohs(in->sin_port));
	}
	return pasci_fmt(buf, len, "%s", ip);
}

/* Whether to log a refused handshake now: at most every REFUSAL_LOG_MS
 * (a stranger who opens hundreds would otherwise fill the log); more
 * gets how many were not logged since, if any. */
static bool
refusal_should_log(pasci_bulk_server *s, char *more, size_t len)
{
	bool    log;
	int64_t now = pasci_now_ms();
	pthread_mutex_lock(&s->mu);
	log = s->auth_logged_ms == 0 ||
	      now - s->auth_logged_ms >= REFUSAL_LOG_MS;
	if (log) {
		s->auth_logged_ms = now;
		if (s->auth_unlogged > 0) {
			pasci_fmt(more, len,
			    " (and %u more refused since, not logged)",
			    s->auth_unlogged);
		}
		s->auth_unlogged = 0;
	} else {
		s->auth_unlogged++;
	}
	pthread_mutex_unlock(&s->mu);
	return log;
}

/* Whether c's peer proved the cluster key (or none is needed); a failure
 * is logged with its address, at most every REFUSAL_LOG_MS. */
static bool
conn_authenticated(conn *c)
{
	char detail[256], more[64] = "";
	int  rv;
	if (!c->s->has_key) {
		return true;
	}
	rv = pasci_bulk_auth_accept(c->link.fd, &c->s->key,
	    pasci_now_ms() + AUTH_MS, detail, sizeof(detail));
	if (rv != 0 && !__atomic_load_n(&c->s->closing, __ATOMIC_ACQUIRE) &&
	    refusal_should_log(c->s, more, sizeof(more))) {
		pasci_log(PASCI_LOG_WARN,
		    "refused a bulk connection from %s on %s: %s%s", c->peer,
		    c->s->addr, detail, more);
	}
	return rv == 0;
}

/* Connections whose threads run, members and strangers apart. Called
 * with mu held. */
static void
count_locked(const pasci_bulk_server *s, int *members, int *strangers)
{
	*members = *strangers = 0;
	for (const conn *c = s->conns; c != NULL; c = c->next) {
		if (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
			bool m = __atomic_load_n(&c->member, __ATOMIC_ACQUIRE);
			*members += m;
			*strangers += !m;
		}
	}
}

/* c proved the key: it becomes a member unless max_conns members are
 * served already (then it is refused, logged at most every 10 s). */
static bool
conn_admit(conn *c)
{
	pasci_bulk_server *s = c->s;
	int                members, strangers;
	bool               ok, log = false;
	if (__atomic_load_n(&c->member, __ATOMIC_ACQUIRE)) {
		return true; /* no key: a member since accept (make_room) */
	}
	pthread_mutex_lock(&s->mu);
	count_locked(s, &members, &strangers);
	if ((ok = members < s->max_conns)) {
		__atomic_store_n(&c->member, 1, __ATOMIC_RELEASE);
	} else if (pasci_now_ms() - s->full_logged_ms >= 10000) {
		s->full_logged_ms = pasci_now_ms();
		log               = true;
	}
	pthread_mutex_unlock(&s->mu);
	if (log) {
		pasci_log(PASCI_LOG_WARN,
		    "bulk port %s: %d connections of cluster members, the "
		    "most allowed (PASCO_MAX_CONNECTIONS); refusing %s",
		    s->addr, members, c->peer);
	}
	return ok;
}

/* A connection dropped for rv: a malformed frame (PASCO_EPROTO, a bug or
 * a stranger's) is a warning naming the peer, at most one every 10 s per
 * server; an idle one closed, or the like, is information. */
static void
log_dropped(conn *c, int rv, const char *detail)
{
	bool warn = false;
	if (rv == PASCO_EPROTO) {
		pthread_mutex_lock(&c->s->mu);
		if (pasci_now_ms() - c->s->bad_logged_ms >= 10000) {
			c->s->bad_logged_ms = pasci_now_ms();
			warn                = true;
		}
		pthread_mutex_unlock(&c->s->mu);
	}
	pasci_log(warn ? PASCI_LOG_WARN : PASCI_LOG_INFO,
	    "bulk port %s: connection from %s dropped: %s", c->s->addr,
	    c->peer, detail);
}

static void *
serve_conn(void *arg)
{
	conn *c = arg;
	char  detail[256];
	bool  in;
	pasci_thread_name("pasco-bulk");
	in = conn_authenticated(c) && conn_admit(c);
	while (in) {
		pasci_wire_msg req;
		int            rv = pasci_bulk_recv_frame(&c->link, &req,
		               deadline_of(c->s), true, detail, sizeof(detail));
		if (rv != 0) {
			/* a bad frame or a gone peer: the connection ends */
			if (rv != PASCO_EUNAVAILABLE &&
			    !__atomic_load_n(
			        &c->s->closing, __ATOMIC_ACQUIRE)) {
				log_dropped(c, rv, detail);
			}
			break;
		}
		/* a member's request: the task is in use (chief timeout) */
		__atomic_store_n(
		    &last_request_ms, pasci_now_ms(), __ATOMIC_RELAXED);
		rv = answer(c->s, &c->link, &req);
		pasci_wire_msg_fini(&req);
		note_traffic(); /* its memory is freed: the quiet starts */
		if (rv != 0) {
			break;
		}
	}
	shutdown(c->link.fd, SHUT_RDWR);
	note_traffic();
	__atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Joins and frees the connections whose threads have returned (all of
 * them when every is set, after shutting them down). */
static void
reap(pasci_bulk_server *s, bool every)
{
	conn **pp = &s->conns, *dead = NULL;
	pthread_mutex_lock(&s->mu);
	while (*pp != NULL) {
		conn *c = *pp;
		if (every || __atomic_load_n(&c->done, __ATOMIC_ACQUIRE)) {
			*pp     = c->next;
			c->next = dead;
			dead    = c;
			s->nconns--;
		} else {
			pp = &c->next;
		}
	}
	pthread_mutex_unlock(&s->mu);
	while (dead != NULL) {
		conn *c = dead;
		dead    = c->next;
		shutdown(c->link.fd, SHUT_RDWR);
		pthread_join(c->th, NULL);
		pasci_bulk_link_fini(&c->link);
		free(c);
	}
}

/* Room for a new connection. With a key, a new one is a stranger until
 * it proves the key: when max_conns strangers wait, the oldest is shut
 * down (its thread then ends), so strangers never keep a member out, and
 * members are counted apart (conn_admit). Without one, every connection
 * is a member at once: false when max_conns are served. Either is said
 * at most every 10 s. */
static bool
make_room(pasci_bulk_server *s)
{
	int   members, strangers;
	conn *oldest = NULL;
	pthread_mutex_lock(&s->mu);
	count_locked(s, &members, &strangers);
	if (s->has_key && strangers >= s->max_conns) {
		for (conn *c = s->conns; c != NULL; c = c->next) {
			if (!__atomic_load_n(&c->done, __ATOMIC_ACQUIRE) &&
			    !__atomic_load_n(&c->member, __ATOMIC_ACQUIRE) &&
			    (oldest == NULL ||
			        c->opened_ms < oldest->opened_ms)) {
				oldest = c;
			}
		}
		/* its fd stays open until this thread reaps it */
		shutdown(oldest->link.fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&s->mu);
	if ((oldest != NULL || (!s->has_key && members >= s->max_conns)) &&
	    pasci_now_ms() - s->refused_logged_ms >= 10000) {
		s->refused_logged_ms = pasci_now_ms();
		pasci_log(PASCI_LOG_WARN,
		    oldest != NULL
		        ? "bulk port %s: %d connections have not proved the "
		          "key, the most allowed (PASCO_MAX_CONNECTIONS); "
		          "closing the oldest"
		        : "bulk port %s: %d connections open, the most "
		          "allowed "
		          "(PASCO_MAX_CONNECTIONS); refusing more",
		    s->addr, oldest != NULL ? strangers : members);
	}
	return s->has_key || members < s->max_conns;
}

/* The next connection on either listening socket: its fd (*local: on the
 * Unix one), -1 when closing or the sockets failed. Connections that
 * ended meanwhile are reaped once a second (their descriptors and
 * threads not kept until the next accept). */
static int
next_conn(pasci_bulk_server *s, struct sockaddr_storage *a, bool *local)
{
	struct pollfd p[2] = {{.fd = s->listen_fd, .events = POLLIN},
	    {.fd = s->local_fd, .events = POLLIN}};
	for (;;) {
		socklen_t alen = sizeof(*a);
		int       fd;
		if (__atomic_load_n(&s->closing, __ATOMIC_ACQUIRE)) {
			return -1;
		}
		int ready = poll(p, s->local_fd >= 0 ? 2 : 1, 1000);
		if (ready < 0 && errno != EINTR) {
			return -1;
		}
		if (ready <= 0) {
			reap(s, false);
			continue;
		}
		for (int i = 0; i < 2; i++) {
			if (p[i].revents == 0 || p[i].fd < 0) {
				continue;
			}
			memset(a, 0, sizeof(*a));
			fd = accept4(p[i].fd, (struct sockaddr *) a, &alen,
			    SOCK_CLOEXEC);
			if (__atomic_load_n(&s->closing, __ATOMIC_ACQUIRE)) {
				if (fd >= 0) {
					close(fd);
				}
				return -1;
			}
			if (fd >= 0) {
				*local = i == 1;
				return fd;
			}
			if (errno == EMFILE || errno == ENFILE) {
				usleep(10000);
			} else if (errno != EINTR && errno != ECONNABORTED &&
			           errno != EAGAIN) {
				return -1;
			}
		}
	}
}

/* "pid N" of a local peer, into buf. */
static void
local_peer_name(int fd, char *buf, size_t len)
{
	struct ucred cr;
	socklen_t    clen = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &clen) == 0) {
		pasci_fmt(buf, len, "pid %ld on this host", (long) cr.pid);
	} else {
		pasci_fmt(buf, len, "a process on this host");
	}
}

static void *
accept_main(void *arg)
{
	pasci_bulk_server *s = arg;
	pasci_thread_name("pasco-bulk-acc");
	for (;;) {
		int                     one   = 1, fd;
		bool                    local = false;
		conn                   *c;
		struct sockaddr_storage a;
		if ((fd = next_conn(s, &a, &local)) < 0) {
			break;
		}
		note_traffic();
		reap(s, false);
		if (!make_room(s)) {
			close(fd);
			continue;
		}
		if (!local) {
			setsockopt(
			    fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		if ((c = pasci_calloc(1, sizeof(*c))) == NULL) {
			close(fd);
			continue;
		}
		pasci_bulk_link_init(&c->link, fd, local);
		c->s         = s;
		c->opened_ms = pasci_now_ms();
		c->member    = !s->has_key;
		/* named now: once a peer hangs up, getpeername cannot */
		if (local) {
			local_peer_name(fd, c->peer, sizeof(c->peer));
		} else {
			peer_name(&a, c->peer, sizeof(c->peer));
		}
		if (pthread_create(&c->th, NULL, serve_conn, c) != 0) {
			pasci_bulk_link_fini(&c->link);
			free(c);
			continue;
		}
		pthread_mutex_lock(&s->mu);
		c->next  = s->conns;
		s->conns = c;
		s->nconns++;
		pthread_mutex_unlock(&s->mu);
	}
	return NULL;
}

/* The abstract Unix address of name, its length into *alen. */
void
pasci_bulk_local_addr(struct sockaddr_un *a, socklen_t *alen, const char *name)
{
	size_t n = strlen(name);
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (n > sizeof(a->sun_path) - 1) {
		n = sizeof(a->sun_path) - 1;
	}
	memcpy(a->sun_path + 1, name, n); /* sun_path[0] = 0: abstract */
	*alen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* Listens on a Unix socket of a random abstract name for clients on this
 * host; without one (it failed, or PASCO_BULK_LOCAL=0) they use TCP. */
static void
listen_local(pasci_bulk_server *s, char *name, size_t len)
{
	uint8_t            r[PASCI_AUTH_NONCE];
	struct sockaddr_un a;
	socklen_t          alen;
	name[0] = 0;
	if (!pasci_bulk_local_enabled()) {
		return;
	}
	pasci_auth_nonce(r);
	pasci_fmt(name, len, "pasco-bulk-%02x%02x%02x%02x%02x%02x%02x%02x",
	    r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
	pasci_bulk_local_addr(&a, &alen, name);
	if ((s->local_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) <
	        0 ||
	    bind(s->local_fd, (struct sockaddr *) &a, alen) != 0 ||
	    listen(s->local_fd, 64) != 0) {
		pasci_log(PASCI_LOG_INFO,
		    "no local bulk socket (%s): clients on this host use TCP",
		    strerror(errno));
		if (s->local_fd >= 0) {
			close(s->local_fd);
		}
		s->local_fd = -1;
		name[0]     = 0;
	}
}

int
pasci_bulk_server_open(pasci_bulk_server **out, const char *host,
    uint64_t incarnation, pasci_bulk_handler handler, void *arg,
    const pasci_key *key)
{
	return pasci_bulk_server_open_as(
	    out, host, "PASCO_BULK_PORT", incarnation, handler, arg, key);
}

int
pasci_bulk_server_open_as(pasci_bulk_server **out, const char *host,
    const char *port_env, uint64_t incarnation, pasci_bulk_handler handler,
    void *arg, const pasci_key *key)
{
	pasci_sockaddr          ai;
	pasci_bulk_server      *s;
	struct sockaddr_storage a;
	socklen_t               alen = sizeof(a);
	int                     one  = 1, port;
	const char             *bulk_port;
	char                    local[64], why[300];

	*out = NULL;
	if ((s = pasci_calloc(1, sizeof(*s))) == NULL) {
		return PASCO_ENOMEM;
	}
	s->listen_fd = -1;
	s->local_fd  = -1;
	pasci_conn_limits(&s->max_conns, &s->idle_ms);
	s->incarnation = incarnation;
	s->handler     = handler;
	s->arg         = arg;
	if ((s->has_key = key != NULL)) {
		s->key = *key;
	}
	pthread_mutex_init(&s->mu, NULL);
	/* the port the system picks, or the operator's (a firewall) */
	bulk_port = getenv(port_env);
	if (bulk_port == NULL || *bulk_port == 0 ||
	    strspn(bulk_port, "0123456789") != strlen(bulk_port)) {
		bulk_port = "0";
	}
	if (pasci_resolve(host, bulk_port, AI_PASSIVE, LISTEN_LOOKUP_MS, &ai,
	        why, sizeof(why)) != 0) {
		pasci_log(PASCI_LOG_ERROR,
		    "cannot listen for bulk transfers on %s port %s: %s", host,
		    bulk_port, why);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return PASCO_EIO;
	}
	if ((s->listen_fd = socket(ai.sa.ss_family, SOCK_STREAM, 0)) < 0 ||
	    setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one,
	        sizeof(one)) != 0 ||
	    bind(s->listen_fd, (struct sockaddr *) &ai.sa, ai.len) != 0 ||
	    listen(s->listen_fd, 64) != 0 ||
	    getsockname(s->listen_fd, (struct sockaddr *) &a, &alen) != 0) {
		pasci_log(PASCI_LOG_ERROR,
		    "cannot listen for bulk transfers on %s port %s: %s", host,
		    bulk_port, strerror(errno));
		if (s->listen_fd >= 0) {
			close(s->listen_fd);
		}
		pthread_mutex_destroy(&s->mu);
		free(s);
		return PASCO_EIO;
	}
	port = a.ss_family == AF_INET6
	           ? ntohs(((struct sockaddr_in6 *) &a)->sin6_port)
	           : ntohs(((struct sockaddr_in *) &a)->sin_port);
	pasci_fmt(s->addr, sizeof(s->addr),
	    strchr(host, ':') != NULL ? "[%s]:%d" : "%s:%d", host, port);
	listen_local(s, local, sizeof(local));
	pasci_fmt(s->advert, sizeof(s->advert), local[0] ? ":%d @%s" : ":%d",
	    port, local);
	if (pthread_create(&s->accept_th, NULL, accept_main, s) != 0) {
		close(s->listen_fd);
		if (s->local_fd >= 0) {
			close(s->local_fd);
		}
		pthread_mutex_destroy(&s->mu);
		free(s);
		return PASCO_ENOMEM;
	}
	*out = s;
	return PASCO_OK;
}

const char *
pasci_bulk_server_addr(const pasci_bulk_server *s)
{
	return s->addr;
}

const char *
pasci_bulk_server_advert(const pasci_bulk_server *s)
{
	return s->advert;
}

void
pasci_bulk_server_close(pasci_bulk_server *s)
{
	if (s == NULL) {
		return;
	}
	__atomic_store_n(&s->closing, 1, __ATOMIC_RELEASE);
	shutdown(s->listen_fd, SHUT_RDWR); /* wakes the poll */
	if (s->local_fd >= 0) {
		shutdown(s->local_fd, SHUT_RDWR);
	}
	pthread_join(s->accept_th, NULL);
	close(s->listen_fd);
	if (s->local_fd >= 0) {
		close(s->local_fd);
	}
	reap(s, true);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int
pasci_bulk_tensor(
    pasco_tensor **out, pasco_dtype dtype, int32_t rank, const int64_t *shape)
{
	int64_t        count;
	size_t         nbytes;
	void          *data;
	pasco_storage *st;
	int            rv;
	*out = NULL;
	if ((rv = pasci_tensor_check_spec(
	         dtype, rank, shape, &count, &nbytes)) != 0) {
		return rv;
	}
	if ((data = pasci_bufcache_alloc(nbytes > 0 ? nbytes : 1)) == NULL) {
		return PASCO_ENOMEM;
	}
	if ((st = pasci_storage_new(pasci_bufcache_free, data)) == NULL) {
		pasci_bufcache_free(data);
		return PASCO_ENOMEM;
	}
	rv = pasci_tensor_view(out, dtype, rank, shape, data, st);
	pasci_storage_release(st);
	return rv;
}
