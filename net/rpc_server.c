/*
 * RPC server over nng (see rpc.h for the contract).
 *
 * A rep0 socket with nthreads handler threads, each owning one context, so
 * up to nthreads requests are handled at once and every reply goes back on
 * the connection its request came from; requests on one context are
 * answered in order. The server answers HELLO itself, with its incarnation
 * and the advert its opener gave (an opaque string: the rpc layer neither
 * reads nor checks it), and refuses any request stamped for another
 * incarnation without running it. It answers SHUTDOWN itself too, by
 * raising a flag its owner polls (pasci_rpc_server_shutdown_requested),
 * and notes when each request came (pasci_rpc_server_idle_ms), so a task
 * can tell that its chief is done or gone. The handler is the only call
 * out; it runs on the handler threads with no lock held.
 *
 * With a cluster key, a connection must prove it holds the key (auth.h)
 * before anything but HELLO and AUTH is read: the gate knows which pipes
 * have, requests on the others get "unauthenticated" without running, a
 * failed proof closes its pipe, and the pipe-removed callback makes the
 * gate forget a pipe.
 *
 * Closing: a flag, then every context's aio is stopped (later operations
 * fail too), the threads are joined, and only then the socket is closed:
 * nng 1.5 must not see a socket closed under contexts still receiving.
 */
#include "rpc.h"

#include <nng/protocol/reqrep0/rep.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "bulk.h"
#include "chief.h"
#include "conns.h"
#include "metrics_registry.h"
#include "sock_close.h"
#include "tls.h"
#include "util.h"

typedef struct server_thread {
	pasci_rpc_server *s;
	pthread_t         thread;
	nng_aio          *aio;
	nng_ctx           ctx;
} server_thread;

struct pasci_rpc_server {
	nng_socket        sock;
	nng_listener      listener;
	uint64_t          incarnation;
	int               nthreads;
	server_thread    *threads;
	pasci_rpc_handler handler;
	void             *arg;
	pasci_auth_gate  *gate;  /* thread-safe */
	bool              keyed; /* a cluster key: set at open */
	char              name[16];
	char         advert[PASCI_RPC_ADVERT_MAX]; /* set before serving */
	volatile int closing;    /* set before the aios are stopped */
	int64_t last_request_ms; /* atomic: a proven peer's last request */
	int64_t last_message_ms; /* atomic: anyone's last message */
	int     shutdown;        /* atomic: a SHUTDOWN came */
	pasci_conns      *conns; /* the connections held (conns.h) */
	pasci_chief_seat *seat;  /* the chief served (chief.h) */
};

/* A chief's HELLO or AUTH on pipe, which has proved the key (or the
 * server has none): NULL when the chief may be served (chief.h), else the
 * refusal naming the chief this server serves. The refused client closes
 * the connection itself: closing it here could overtake the reply, and
 * the client would not learn why. */
static nng_msg *
server_seat_chief(
    pasci_rpc_server *s, nng_pipe pipe, const pasci_wire_msg *req)
{
	char why[512];
	if (req->hdr->chief[0] == 0 ||
	    pasci_chief_seat_claim(s->seat, pipe, req->hdr->chief,
	        req->hdr->chief_incarnation, why, sizeof(why))) {
		return NULL;
	}
	return pasci_wire_status_reply(PASCO_EPRECONDITION, "%s", why);
}

static nng_msg *
server_hello(pasci_rpc_server *s, nng_pipe pipe)
{
	pasci_wire_builder b;
	nng_msg           *reply = NULL;
	pasci_wire_builder_init(&b, PASCI_METHOD_HELLO);
	b.hdr.name = s->advert; /* opaque to us; "" if none */
	if (pasci_auth_gate_hello(s->gate, pipe, &b) != 0 ||
	    pasci_wire_encode(&b, &reply) != 0) {
		reply = NULL;
	}
	pasci_wire_builder_fini(&b);
	return reply;
}

/* The AUTH req on pipe (in: it had proved the key before): once the
 * proof checks out, the connection is a member if the cap allows
 * (conns.h; else it is refused, saying so, and not admitted), and a chief
 * is seated. */
static nng_msg *
server_auth(pasci_rpc_server *s, nng_pipe pipe, const pasci_wire_msg *req,
    bool in, bool *close_pipe)
{
	nng_msg *reply = pasci_auth_gate_auth(s->gate, pipe, req, close_pipe);
	nng_msg *no    = NULL;
	char     why[512];
	if (in || !pasci_auth_gate_admits(s->gate, pipe)) {
		return reply;
	}
	if (!pasci_conns_admit(s->conns, pipe, why, sizeof(why))) {
		pasci_auth_gate_forget(s->gate, pipe);
		no = pasci_wire_status_reply(PASCO_EUNAVAILABLE, "%s", why);
	} else {
		no = server_seat_chief(s, pipe, req);
	}
	if (no != NULL) {
		nng_msg_free(reply);
		reply = no;
	}
	return reply;
}

/* The reply to msg (taken over) from pipe; *close_pipe is set when pipe
 * must be closed once the reply is sent (a failed AUTH). */
static nng_msg *
server_answer(pasci_rpc_server *s, nng_msg *msg, bool *close_pipe)
{
	uint64_t       inc  = pasci_wire_get_incarnation(msg);
	nng_pipe       pipe = nng_msg_get_pipe(msg);
	bool           in   = pasci_auth_gate_admits(s->gate, pipe);
	pasci_wire_msg req;
	nng_msg       *reply;
	char           err[256];

	/* any message, even a stranger's that does not decode, is traffic
	 * (whose memory is given back after it: pasci_rpc_server_quiet_ms),
	 * except a member's heartbeat (a small HELLO, below): a chief's
	 * heartbeat every second would keep its tasks from ever being quiet */
	int64_t now      = pasci_now_ms();
	bool    small_in = in && nng_msg_len(msg) <= 256;
	pasci_metric_add(PASCI_M_RECEIVED_BYTES, nng_msg_len(msg));
	if (!small_in) {
		__atomic_store_n(&s->last_message_ms, now, __ATOMIC_RELAXED);
	}
	/* with no key, a connection that speaks is a member (conns.h) */
	if (!s->keyed &&
	    !pasci_conns_admit(s->conns, pipe, err, sizeof(err))) {
		nng_msg_free(msg);
		return pasci_wire_status_reply(PASCO_EUNAVAILABLE, "%s", err);
	}
	if (!in && nng_msg_len(msg) > PASCI_AUTH_HANDSHAKE_MAX) {
		nng_msg_free(msg); /* not read: too long for a handshake */
		return pasci_auth_gate_refuse(s->gate, pipe, -1);
	}
	if (in && inc != 0 && inc != s->incarnation) {
		nng_msg_free(msg);
		return pasci_wire_stale_reply(inc, s->incarnation);
	}
	if (pasci_wire_decode(&req, msg, err, sizeof(err)) != 0) {
		if (small_in) {
			__atomic_store_n(
			    &s->last_message_ms, now, __ATOMIC_RELAXED);
		}
		return in ? pasci_wire_status_reply(
		                PASCO_EPROTO, "malformed request: %s", err)
		          : pasci_auth_gate_refuse(s->gate, pipe, -1);
	}
	if (in) {
		__atomic_store_n(&s->last_request_ms, now, __ATOMIC_RELAXED);
		pasci_metric_count(PASCI_MF_REQUESTS, (int) req.hdr->method);
	}
	if (small_in && req.hdr->method != PASCI_METHOD_HELLO) {
		__atomic_store_n(&s->last_message_ms, now, __ATOMIC_RELAXED);
	}
	if (req.hdr->method == PASCI_METHOD_HELLO) {
		/* a chief is seated once trusted: here with no key, at its
		 * AUTH with one */
		reply = in ? server_seat_chief(s, pipe, &req) : NULL;
		reply = reply != NULL ? reply : server_hello(s, pipe);
	} else if (req.hdr->method == PASCI_METHOD_AUTH) {
		reply = server_auth(s, pipe, &req, in, close_pipe);
	} else if (!in) {
		reply = pasci_auth_gate_refuse(
		    s->gate, pipe, (int) req.hdr->method);
	} else if (req.hdr->method == PASCI_METHOD_SHUTDOWN) {
		__atomic_store_n(&s->shutdown, 1, __ATOMIC_RELEASE);
		reply = pasci_wire_status_reply(PASCO_OK, "%s", "");
	} else {
		reply = s->handler(s->arg, &req);
	}
	pasci_wire_msg_fini(&req);
	return reply;
}

static void *
server_main(void *arg)
{
	server_thread    *t = arg;
	pasci_rpc_server *s = t->s;

	pasci_thread_name(s->name);
	for (;;) {
		nng_msg *reply;
		nng_pipe pipe;
		bool     close_pipe = false;
		nng_ctx_recv(t->ctx, t->aio);
		nng_aio_wait(t->aio);
		if (__atomic_load_n(&s->closing, __ATOMIC_ACQUIRE)) {
			break;
		}
		if (nng_aio_result(t->aio) != 0) {
			continue;
		}
		pipe = nng_msg_get_pipe(nng_aio_get_msg(t->aio));
		if ((reply = server_answer(
		         s, nng_aio_get_msg(t->aio), &close_pipe)) == NULL) {
			continue; /* out of memory: the caller's deadline fires
			           */
		}
		pasci_wire_set_incarnation(reply, s->incarnation);
		pasci_metric_add(PASCI_M_SENT_BYTES, nng_msg_len(reply));
		nng_aio_set_msg(t->aio, reply);
		nng_ctx_send(t->ctx, t->aio);
		nng_aio_wait(t->aio);
		if (nng_aio_result(t->aio) != 0) {
			nng_msg_free(nng_aio_get_msg(t->aio));
		}
		if (close_pipe) {
			nng_pipe_close(pipe);
		}
	}
	return NULL;
}

/* Stops the first n handler threads and frees their contexts; nng 1.5
 * must not see a socket closed under contexts that are still receiving. */
static void
server_stop_threads(pasci_rpc_server *s, int n)
{
	__atomic_store_n(&s->closing, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < n; i++) {
		nng_aio_stop(
		    s->threads[i].aio); /* later operations fail too */
	}
	for (int i = 0; i < n; i++) {
		pthread_join(s->threads[i].thread, NULL);
		nng_ctx_close(s->threads[i].ctx);
		nng_aio_free(s->threads[i].aio);
	}
}

static int
server_start_threads(pasci_rpc_server *s, int nthreads)
{
	for (int i = 0; i < nthreads; i++) {
		server_thread *t = &s->threads[i];
		t->s             = s;
		if (nng_aio_alloc(&t->aio, NULL, NULL) != 0) {
			server_stop_threads(s, i);
			return PASCO_ENOMEM;
		}
		if (nng_ctx_open(&t->ctx, s->sock) != 0 ||
		    pthread_create(&t->thread, NULL, server_main, t) != 0) {
			nng_aio_free(t->aio);
			server_stop_threads(s, i);
			return PASCO_ENOMEM;
		}
	}
	s->nthreads = nthreads;
	return PASCO_OK;
}

static void
server_pipe_removed(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	pasci_rpc_server *s = arg;
	(void) ev;
	pasci_auth_gate_forget(s->gate, pipe);
	pasci_chief_seat_forget(s->seat, pipe);
	pasci_conns_remove(s->conns, pipe);
}

/* A new connection, before nng adds it to the socket (so before any of
 * its messages is read): a stranger until it proves itself (conns.h: over
 * the strangers' cap the oldest is closed); each one is also the moment
 * to close the strangers past their deadline. */
static void
server_pipe_added(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	pasci_rpc_server *s = arg;
	(void) ev;
	pasci_conns_sweep(s->conns);
	pasci_conns_add(s->conns, pipe);
}

/* The seat names the server as its role and address ("worker at
 * tcp://0.0.0.0:2222"): the role from the threads' name. */
static int
server_seat_create(pasci_rpc_server *s, const char *url)
{
	char        what[200];
	const char *role =
	    strncmp(s->name, "pasco-", 6) == 0 ? s->name + 6 : s->name;
	pasci_fmt(what, sizeof(what), "%s at %s", role, url);
	return pasci_chief_seat_create(&s->seat, what);
}

int
pasci_rpc_server_sweep(const pasci_rpc_server *s)
{
	return pasci_conns_sweep(s->conns);
}

int
pasci_rpc_server_connections(const pasci_rpc_server *s)
{
	return pasci_conns_count(s->conns);
}

int
pasci_rpc_server_open(pasci_rpc_server **out, const char *url, int nthreads,
    const char *name, pasci_rpc_handler handler, void *arg)
{
	return pasci_rpc_server_open_with(
	    out, url, nthreads, name, handler, arg, 0, NULL, NULL);
}

int
pasci_rpc_server_open_with(pasci_rpc_server **out, const char *url,
    int nthreads, const char *name, pasci_rpc_handler handler, void *arg,
    uint64_t incarnation, const char *advert, const pasci_key *key)
{
	pasci_rpc_server *s;
	int               rv;

	*out = NULL;
	if (advert != NULL && strlen(advert) >= PASCI_RPC_ADVERT_MAX) {
		return PASCO_EINVAL;
	}
	if ((s = pasci_calloc(1, sizeof(*s))) == NULL ||
	    (s->threads = pasci_calloc(
	         (size_t) nthreads, sizeof(*s->threads))) == NULL ||
	    pasci_auth_gate_create(&s->gate, key) != 0) {
		if (s != NULL) {
			free(s->threads);
		}
		free(s);
		return PASCO_ENOMEM;
	}
	s->incarnation = incarnation != 0 ? incarnation : pasci_random_u64();
	s->last_request_ms = pasci_now_ms(); /* idle since it opened */
	s->last_message_ms = s->last_request_ms;
	pasci_fmt(
	    s->advert, sizeof(s->advert), "%s", advert != NULL ? advert : "");
	s->handler = handler;
	s->arg     = arg;
	pasci_fmt(s->name, sizeof(s->name), "%s", name);
	if ((rv = nng_rep0_open(&s->sock)) != 0) {
		goto fail_open;
	}
	nng_socket_set_size(
	    s->sock, NNG_OPT_RECVMAXSZ, pasci_max_message_bytes());
	s->keyed = key != NULL;
	if ((rv = pasci_conns_create(&s->conns, url, s->keyed)) != 0 ||
	    (rv = server_seat_create(s, url)) != 0) {
		nng_close(s->sock);
		goto fail_open;
	}
	nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_PRE, server_pipe_added, s);
	nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, server_pipe_removed, s);
	if ((rv = nng_listener_create(&s->listener, s->sock, url)) != 0) {
		pasci_log(PASCI_LOG_ERROR, "cannot listen on %s: %s", url,
		    nng_strerror(rv));
		goto fail_listen;
	}
	/* tls+tcp: certificates from the environment, or a named error */
	if ((rv = pasci_tls_listener_setup(s->listener, url)) != 0) {
		nng_close(s->sock);
		pasci_auth_gate_destroy(s->gate);
		pasci_conns_destroy(s->conns);
		pasci_chief_seat_destroy(s->seat);
		free(s->threads);
		free(s);
		return rv;
	}
	if ((rv = nng_listener_start(s->listener, 0)) != 0) {
		pasci_log(PASCI_LOG_ERROR, "cannot listen on %s: %s", url,
		    nng_strerror(rv));
		pasci_tls_forget_listener(s->listener);
		goto fail_listen;
	}
	if ((rv = server_start_threads(s, nthreads)) != 0) {
		pasci_tls_forget_listener(s->listener);
		nng_close(s->sock);
		pasci_auth_gate_destroy(s->gate);
		pasci_conns_destroy(s->conns);
		pasci_chief_seat_destroy(s->seat);
		free(s->threads);
		free(s);
		return rv;
	}
	*out = s;
	return PASCO_OK;
fail_listen:
	nng_close(s->sock);
fail_open:
	pasci_auth_gate_destroy(s->gate);
	pasci_conns_destroy(s->conns);
	pasci_chief_seat_destroy(s->seat);
	free(s->threads);
	free(s);
	return rv == NNG_EADDRINVAL ? PASCO_EINVAL : PASCO_EIO;
}

uint64_t
pasci_rpc_server_incarnation(const pasci_rpc_server *s)
{
	return s->incarnation;
}

bool
pasci_rpc_server_admits(
    pasci_rpc_server *s, uint64_t chief_inc, char *why, size_t len)
{
	return pasci_chief_seat_admits(s->seat, chief_inc, why, len);
}

/* What the pipe callbacks use, freed once the socket is closed. */
static void
server_free_cb(void *arg)
{
	pasci_rpc_server *s = arg;
	pasci_auth_gate_destroy(s->gate);
	pasci_conns_destroy(s->conns);
	pasci_chief_seat_destroy(s->seat);
	free(s->threads);
	free(s);
}

void
pasci_rpc_server_close(pasci_rpc_server *s)
{
	char what[64];
	if (s == NULL) {
		return;
	}
	server_stop_threads(s, s->nthreads);
	pasci_tls_forget_listener(s->listener);
	/* no pipe callback runs once the socket is closed; if its close
	 * hangs (sock_close.h), the callbacks' state is freed when it ends */
	pasci_fmt(what, sizeof(what), "the %s server", s->name);
	if (pasci_sock_close_bounded(
	        s->sock, what, PASCI_CLOSE_WAIT_MS, NULL, server_free_cb, s)) {
		server_free_cb(s);
	}
}

int64_t
pasci_rpc_server_idle_ms(const pasci_rpc_server *s)
{
	/* a member's request on the process's bulk port counts too: a
	 * ps's variable traffic all goes there */
	int64_t last = __atomic_load_n(&s->last_request_ms, __ATOMIC_RELAXED);
	int64_t bulk = pasci_bulk_last_request_ms();
	return pasci_now_ms() - (bulk > last ? bulk : last);
}

bool
pasci_rpc_server_shutdown_requested(const pasci_rpc_server *s)
{
	return __atomic_load_n(&s->shutdown, __ATOMIC_ACQUIRE) != 0;
}

int64_t
pasci_rpc_server_quiet_ms(const pasci_rpc_server *s)
{
	/* a burst on the process's bulk port is traffic too */
	int64_t last = __atomic_load_n(&s->last_message_ms, __ATOMIC_RELAXED);
	int64_t bulk = pasci_bulk_last_traffic_ms();
	return pasci_now_ms() - (bulk > last ? bulk : last);
}
