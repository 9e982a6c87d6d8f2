/*
 * RPC client over nng (see rpc.h for the contract).
 *
 * One raw req0 socket per client dialing one server and redialing forever;
 * requests carry our own call ids (the nng request header), so many calls
 * are outstanding on one connection, and calls live in a hash of buckets
 * until their reply, their deadline or their connection's loss completes
 * them, exactly once. After every (re)connect a HELLO learns the server's
 * incarnation and its advert (an opaque string kept for whoever reads it:
 * pasci_rpc_client_advert); until it is answered the link is not up and
 * calls fail at once. With a cluster key, the HELLO reply's nonce is
 * answered by an AUTH (auth.h) and the link is up only once the server's
 * proof checks out; a server with no nonce or a wrong proof has its
 * connection closed (and nng redials).
 *
 * Threads: the caller's (call_async stamps, registers and sends), the
 * receive aio's callback on nng's task threads (matches replies to calls,
 * runs completions), a timer thread per client (expires deadlines), and
 * nng's pipe-event threads (connect: send HELLO; disconnect: fail the calls
 * sent on that connection). Completions always run without the client lock
 * held, and must not block.
 *
 * Two nng 1.5 close races shape this file: an aio timeout that fires while
 * its socket closes touches freed memory, and nng_close does not always wake
 * a thread blocked in nng_recvmsg. So no nng operation here has a timeout
 * (deadlines are our own), and receiving is an aio that is stopped with
 * nng_aio_stop before the socket is closed.
 */
#include "rpc.h"

#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rpc_client_impl.h"
#include "sock_close.h"
#include "tls.h"
#include "util.h"

#define RECV_TICK_MS 20

/* How long a call waits for a server never reached (see
 * pasci_rpc_client_wait_for_call); tests shorten them. */
static int64_t first_contact_ms = 15000;
static int64_t retry_contact_ms = 2000;

void
pasci_rpc_set_contact_waits(int64_t first_ms, int64_t retry_ms)
{
	first_contact_ms = first_ms;
	retry_contact_ms = retry_ms;
}

static void
call_finish(pasci_rpc_client *c, rpc_call *call, int err, const char *detail)
{
	if (call->hello && call->auth && err != PASCO_ECLOSED) {
		pasci_rpc_client_refuse(c, call,
		    "the connection ended while the server checked this "
		    "process's cluster key: the server is shutting down, or "
		    "refused the key (is it the same key file?)");
	} else if (call->hello) {
		/* A failed handshake: drop the connection and let nng redial.
		 */
		nng_pipe p;
		p.id = call->pipe;
		if (err != PASCO_ECLOSED) {
			pasci_log(PASCI_LOG_DEBUG,
			    "handshake with %s failed: %s", c->url, detail);
			pasci_rpc_client_close_pipe_later(c, p.id);
		}
	} else {
		call->done(call->arg, err, NULL, detail);
	}
	free(call);
}

static void
fail_list(pasci_rpc_client *c, rpc_call *list, int err, const char *detail)
{
	while (list != NULL) {
		rpc_call *next = list->next;
		call_finish(c, list, err, detail);
		list = next;
	}
}

/* Connection id is gone: no longer waited for (closing_pipes). */
static void
client_pipe_gone_locked(pasci_rpc_client *c, uint32_t id)
{
	for (int i = 0; i < c->nclosing_pipes; i++) {
		if (c->closing_pipes[i] == id) {
			c->closing_pipes[i] =
			    c->closing_pipes[--c->nclosing_pipes];
			pthread_cond_broadcast(&c->cv);
			return;
		}
	}
}

static void
client_pipe_removed(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	pasci_rpc_client  *c = arg;
	rpc_call          *lost;
	bool               was_up;
	pasci_rpc_state_fn state_fn;
	char               detail[300];

	(void) ev;
	pthread_mutex_lock(&c->mu);
	client_pipe_gone_locked(c, (uint32_t) nng_pipe_id(pipe));
	state_fn = c->state_fn;
	was_up = c->link == LINK_UP && c->pipe == (uint32_t) nng_pipe_id(pipe);
	if (c->pipe == (uint32_t) nng_pipe_id(pipe)) {
		c->pipe = 0;
		c->link = LINK_DOWN;
		/* the task may be back elsewhere: look its name up now */
		pasci_rpc_redial_now_locked(c);
	}
	c->dial_event_ms = pasci_now_ms();
	lost =
	    pasci_rpc_calls_take(&c->calls, (uint32_t) nng_pipe_id(pipe), -1);
	pthread_mutex_unlock(&c->mu);
	/* The owner hears that the task is down before its calls fail: a
	 * caller that retries a failed call elsewhere (the coordinator's
	 * closures) must not pick this task again, find it not connected and
	 * retry at once, over and over, until the state arrives. */
	if (was_up && state_fn != NULL) {
		state_fn(c->state_arg, false, 0);
	}
	pasci_fmt(detail, sizeof(detail), "connection to %s lost", c->url);
	fail_list(c, lost, PASCO_EUNAVAILABLE, detail);
}

static void
client_handle_reply(pasci_rpc_client *c, nng_msg *msg)
{
	pasci_wire_msg m;
	rpc_call      *call;
	uint32_t       id;
	char           detail[300];
	int            rv;

	if (nng_msg_header_len(msg) != 4) {
		nng_msg_free(msg);
		return;
	}
	/* our call id, with the top bit req0 sets on a request id */
	id = (uint32_t) pasci_get_be(nng_msg_header(msg), 4) & 0x7fffffffu;
	pthread_mutex_lock(&c->mu);
	call = pasci_rpc_calls_remove(&c->calls, id);
	pthread_mutex_unlock(&c->mu);
	if (call == NULL) { /* late reply to a call that already failed */
		nng_msg_free(msg);
		return;
	}
	if ((rv = pasci_wire_decode(&m, msg, detail, sizeof(detail))) != 0) {
		call_finish(c, call, PASCO_EPROTO, detail);
	} else if (call->auth) {
		pasci_rpc_client_auth_done(c, call, &m);
	} else if (call->hello) {
		pasci_rpc_client_hello_done(c, call, &m);
	} else if (m.hdr->stale_incarnation) {
		pasci_fmt(detail, sizeof(detail), "%s restarted: %s", c->url,
		    m.hdr->error);
		pasci_wire_msg_fini(&m);
		call_finish(c, call, PASCO_EABORTED, detail);
	} else {
		call->done(call->arg, 0, &m, "");
		free(call);
	}
}

static void
client_expire(pasci_rpc_client *c)
{
	rpc_call *expired = NULL;
	char      detail[300];

	pthread_mutex_lock(&c->mu);
	if (c->calls.ndeadlines > 0) {
		expired = pasci_rpc_calls_take(&c->calls, 0, pasci_now_ms());
	}
	pthread_mutex_unlock(&c->mu);
	pasci_fmt(detail, sizeof(detail),
	    "no reply from %s before the "
	    "deadline",
	    c->url);
	fail_list(c, expired, PASCO_ETIMEDOUT, detail);
}

static void
client_recv_cb(void *arg)
{
	pasci_rpc_client *c  = arg;
	int               rv = nng_aio_result(c->recv_aio);

	if (rv == NNG_ECLOSED || rv == NNG_ECANCELED) {
		return; /* closing: nng_aio_stop is waiting for us */
	}
	if (rv == 0) {
		client_handle_reply(c, nng_aio_get_msg(c->recv_aio));
	}
	nng_recv_aio(c->sock, c->recv_aio);
}

void
pasci_rpc_client_close_pipe_later(pasci_rpc_client *c, uint32_t id)
{
	bool now = false;
	pthread_mutex_lock(&c->mu);
	if (c->closing) {
		now = false; /* the socket's close closes it */
	} else if (c->nclose_pipes < (int) (sizeof(c->close_pipes) /
	                                    sizeof(c->close_pipes[0]))) {
		c->close_pipes[c->nclose_pipes++] = id;
		pthread_cond_broadcast(&c->timer_cv);
	} else {
		now = true; /* never expected: 8 handshakes failing at once */
	}
	pthread_mutex_unlock(&c->mu);
	if (now) {
		nng_pipe_close((nng_pipe){.id = id});
	}
}

/* Closes the connections asked for (close_pipes), with mu held on entry
 * and exit (dropped while closing). */
static void
client_close_pipes_locked(pasci_rpc_client *c)
{
	while (c->nclose_pipes > 0) {
		uint32_t id = c->close_pipes[--c->nclose_pipes];
		int      n  = c->nclosing_pipes;
		if (n < (int) (sizeof(c->closing_pipes) /
		               sizeof(c->closing_pipes[0]))) {
			c->closing_pipes[c->nclosing_pipes++] = id;
		}
		pthread_mutex_unlock(&c->mu);
		if (nng_pipe_close((nng_pipe){.id = id}) != 0) {
			pthread_mutex_lock(&c->mu); /* gone already */
			client_pipe_gone_locked(c, id);
			continue;
		}
		pthread_mutex_lock(&c->mu);
	}
}

/* Expires deadlines every tick while any call has one, closes the
 * connections asked for, and while the link is down follows the server's
 * name (rpc_redial.c). */
static void *
client_timer_main(void *arg)
{
	pasci_rpc_client *c = arg;

	pasci_thread_name("pasco-rpc-timer");
	pthread_mutex_lock(&c->mu);
	while (!c->closing) {
		int64_t tick_ms;
		if (c->nclose_pipes > 0) {
			client_close_pipes_locked(c);
			continue;
		}
		pasci_rpc_redial_tick_locked(c);
		tick_ms = c->calls.ndeadlines > 0
		              ? RECV_TICK_MS
		              : pasci_rpc_redial_wait_ms_locked(c);
		if (c->closing || c->nclose_pipes > 0) {
			continue;
		}
		if (tick_ms < 0) {
			c->timer_idle = true;
			pthread_cond_wait(&c->timer_cv, &c->mu);
			c->timer_idle = false;
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += tick_ms * 1000000L;
		while (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&c->timer_cv, &c->mu, &ts);
		pthread_mutex_unlock(&c->mu);
		client_expire(c);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Returns an nng error, or PASCO_EIO with *tls_rv set to the TLS setup's
 * error (already logged, naming what is missing). */
static int
client_socket_open(pasci_rpc_client *c, int *tls_rv)
{
	int rv;
	if ((rv = nng_req0_open_raw(&c->sock)) != 0) {
		return rv;
	}
	if ((rv = nng_aio_alloc(&c->recv_aio, client_recv_cb, c)) != 0) {
		nng_close(c->sock);
		return rv;
	}
	nng_socket_set_size(
	    c->sock, NNG_OPT_RECVMAXSZ, pasci_max_message_bytes());
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMINT, 20);
	nng_socket_set_ms(c->sock, NNG_OPT_RECONNMAXT, 500);
	nng_socket_set_int(c->sock, NNG_OPT_SENDBUF, 1024);
	nng_socket_set_int(c->sock, NNG_OPT_RECVBUF, 1024);
	nng_pipe_notify(
	    c->sock, NNG_PIPE_EV_ADD_POST, pasci_rpc_client_pipe_added, c);
	nng_pipe_notify(c->sock, NNG_PIPE_EV_REM_POST, client_pipe_removed, c);
	/* a named host is looked up first, then dialed (rpc_redial.c) */
	if (!c->resolves &&
	    (rv = pasci_rpc_dialer_start(c, c->url, tls_rv)) != 0) {
		nng_close(c->sock);
		nng_aio_free(c->recv_aio);
		return rv;
	}
	nng_recv_aio(c->sock, c->recv_aio);
	return 0;
}

int
pasci_rpc_client_open(pasci_rpc_client **out, const char *url,
    pasci_rpc_state_fn state_fn, void *state_arg)
{
	return pasci_rpc_client_open_with(out, url, state_fn, state_arg, NULL);
}

const pasci_key *
pasci_rpc_client_key(const pasci_rpc_client *c)
{
	return c->has_key ? &c->key : NULL;
}

int
pasci_rpc_client_open_with(pasci_rpc_client **out, const char *url,
    pasci_rpc_state_fn state_fn, void *state_arg, const pasci_key *key)
{
	return pasci_rpc_client_open_as(
	    out, url, state_fn, state_arg, key, NULL);
}

int
pasci_rpc_client_open_as(pasci_rpc_client **out, const char *url,
    pasci_rpc_state_fn state_fn, void *state_arg, const pasci_key *key,
    const pasci_chief *chief)
{
	pasci_rpc_client *c;
	int               rv, tls_rv = 0;

	*out = NULL;
	if ((c = pasci_calloc(1, sizeof(*c))) == NULL ||
	    (c->url = pasci_strdup(url)) == NULL) {
		free(c);
		return PASCO_ENOMEM;
	}
	c->state_fn  = state_fn;
	c->state_arg = state_arg;
	if ((c->has_key = key != NULL)) {
		c->key = *key;
	}
	if (chief != NULL) {
		c->chief = *chief;
	}
	c->opened_ms = pasci_now_ms();
	pasci_rpc_redial_init(c);
	c->calls.next_id = (uint32_t) pasci_random_u64() & 0x7fffffu;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	pthread_cond_init(&c->timer_cv, NULL);
	if ((rv = client_socket_open(c, &tls_rv)) != 0) {
		if (tls_rv == 0) {
			pasci_log(PASCI_LOG_ERROR, "cannot dial %s: %s", url,
			    nng_strerror(rv));
		}
		goto fail;
	}
	if (pthread_create(&c->timer, NULL, client_timer_main, c) != 0) {
		nng_aio_stop(c->recv_aio);
		nng_close(c->sock);
		nng_aio_free(c->recv_aio);
		rv = NNG_ENOMEM;
		goto fail;
	}
	*out = c;
	return PASCO_OK;
fail:
	pthread_cond_destroy(&c->timer_cv);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c->url);
	free(c);
	if (tls_rv != 0) {
		return tls_rv;
	}
	return rv == NNG_EADDRINVAL || rv == NNG_ENOTSUP ? PASCO_EINVAL
	                                                 : PASCO_EIO;
}

/* What is left of c once its socket is closed: the calls still listed
 * fail (their callbacks run here), and c is freed. */
static void
client_free(pasci_rpc_client *c)
{
	rpc_call *rest;
	char      detail[300];
	nng_aio_free(c->recv_aio);
	pthread_mutex_lock(&c->mu);
	rest = pasci_rpc_calls_take(&c->calls, 0, 0);
	pthread_mutex_unlock(&c->mu);
	pasci_fmt(detail, sizeof(detail), "client of %s closed", c->url);
	fail_list(c, rest, PASCO_ECLOSED, detail);
	pthread_cond_destroy(&c->timer_cv);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c->url);
	free(c);
}

/* Waits (at most 1 s) until the connections the timer thread closed are
 * gone (closing_pipes), and until the calls in flight are answered: the
 * socket is closed with no reply on its way (nng 1.5 can leave a
 * connection's receive unfinished for good when it is closed as a
 * message arrives, and then every close in the process waits for it). */
static void
client_wait_quiet(pasci_rpc_client *c)
{
	int64_t until = pasci_now_ms() + 1000;
	pthread_mutex_lock(&c->mu);
	while (
	    (c->nclosing_pipes > 0 || pasci_rpc_calls_count(&c->calls) > 0) &&
	    pasci_now_ms() < until) {
		pthread_mutex_unlock(&c->mu);
		nanosleep(&(struct timespec){0, 5 * 1000000L}, NULL);
		pthread_mutex_lock(&c->mu);
	}
	pthread_mutex_unlock(&c->mu);
}

/* The close of c's socket did not finish in time: its calls end now, not
 * whenever nng_close returns. */
static void
client_close_timed_out(void *arg)
{
	pasci_rpc_client *c = arg;
	rpc_call         *rest;
	char              detail[300];
	pthread_mutex_lock(&c->mu);
	rest = pasci_rpc_calls_take(&c->calls, 0, 0);
	pthread_mutex_unlock(&c->mu);
	pasci_fmt(detail, sizeof(detail), "client of %s closed", c->url);
	fail_list(c, rest, PASCO_ECLOSED, detail);
}

static void
client_free_cb(void *arg)
{
	client_free(arg);
}

void
pasci_rpc_client_close(pasci_rpc_client *c)
{
	char what[300];
	if (c == NULL) {
		return;
	}
	pthread_mutex_lock(&c->mu);
	c->closing  = true;
	c->state_fn = NULL; /* the owner is going away: no more callbacks */
	pthread_cond_broadcast(&c->timer_cv);
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->timer, NULL);
	client_wait_quiet(c);
	if (c->attached != NULL) { /* no reply comes from it past here */
		c->attached_stop(c->attached);
	}
	nng_aio_stop(c->recv_aio); /* no receive callback runs past here */
	pasci_rpc_dialer_close(c); /* no redial races the socket's close */
	pasci_rpc_redial_fini(c);
	pasci_fmt(what, sizeof(what), "the connection to %s", c->url);
	if (pasci_sock_close_bounded(c->sock, what, PASCI_CLOSE_WAIT_MS,
	        client_close_timed_out, client_free_cb, c)) {
		client_free(c);
	}
}

int
pasci_rpc_client_advert(
    pasci_rpc_client *c, char *buf, size_t len, uint64_t *incarnation)
{
	int rv = PASCO_EUNAVAILABLE;
	pthread_mutex_lock(&c->mu);
	if (c->link == LINK_UP) {
		pasci_fmt(buf, len, "%s",
		    pasci_now_ms() < c->advert_hold_until_ms ? "" : c->advert);
		*incarnation = c->incarnation;
		rv           = PASCO_OK;
	}
	pthread_mutex_unlock(&c->mu);
	return rv;
}

int
pasci_rpc_client_peer(pasci_rpc_client *c, pasci_rpc_peer *peer)
{
	peer->url = c->url;
	peer->key = c->has_key ? &c->key : NULL;
	return pasci_rpc_client_advert(
	    c, peer->advert, sizeof(peer->advert), &peer->incarnation);
}

bool
pasci_rpc_client_forget_advert(pasci_rpc_client *c, uint64_t incarnation)
{
	bool first = false;
	pthread_mutex_lock(&c->mu);
	if (c->incarnation == incarnation) {
		/* the incarnation changes only at a HELLO, which resets the
		 * count */
		first = c->advert_failures++ == 0;
		c->advert_hold_until_ms =
		    pasci_now_ms() +
		    (PASCI_ADVERT_RETRY_MS
		        << (c->advert_failures < 6 ? c->advert_failures - 1
		                                   : 5));
	}
	pthread_mutex_unlock(&c->mu);
	return first;
}

const char *
pasci_rpc_client_url(const pasci_rpc_client *c)
{
	return c->url;
}

/* Waits up to timeout_ms for the link; fail_fast: not at all for a peer
 * that was connected and is lost. */
static int
client_wait_link(pasci_rpc_client *c, int64_t timeout_ms, bool fail_fast)
{
	struct timespec ts;
	int             rv = PASCO_OK;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&c->mu);
	/* Fail fast once a connected peer is lost (TensorFlow's
	 * GRPC_FAIL_FAST=use_caller for execution RPCs); wait only for the
	 * first connection. */
	if (fail_fast && c->ever_up && c->link != LINK_UP) {
		rv = PASCO_EUNAVAILABLE;
	}
	while (c->link != LINK_UP && !c->closing && rv == PASCO_OK) {
		if (pthread_cond_timedwait(&c->cv, &c->mu, &ts) != 0) {
			rv = c->link == LINK_UP ? PASCO_OK : PASCO_ETIMEDOUT;
		}
	}
	if (c->closing) {
		rv = PASCO_ECLOSED;
	}
	pthread_mutex_unlock(&c->mu);
	return rv;
}

int
pasci_rpc_client_wait_up(pasci_rpc_client *c, int64_t timeout_ms)
{
	return client_wait_link(c, timeout_ms, true);
}

int
pasci_rpc_client_wait_for_call(pasci_rpc_client *c, int64_t timeout_ms)
{
	/* A peer never reached is waited for until first_contact_ms after
	 * the client opened (start-up, in any order), then for at most
	 * retry_contact_ms per call: a ps that died before this process ever
	 * reached it must not stall every step for the full timeout. */
	bool    never_up;
	int64_t deadline;
	int     rv;

	pthread_mutex_lock(&c->mu);
	if ((never_up = !c->ever_up)) {
		int64_t left =
		    c->opened_ms + first_contact_ms - pasci_now_ms();
		left       = left > retry_contact_ms ? left : retry_contact_ms;
		timeout_ms = timeout_ms < left ? timeout_ms : left;
	}
	pthread_mutex_unlock(&c->mu);
	if (!never_up) {
		/* A peer lost is waited for a moment too (retry_contact_ms),
		 * then unavailable: a task restarting, or back at a new
		 * address under its name, is redialed within about a second
		 * (rpc_redial.c), and a chief started meanwhile, connected to
		 * it a moment before this process, must not see its first
		 * steps fail. */
		int64_t wait = timeout_ms < retry_contact_ms
		                   ? timeout_ms
		                   : retry_contact_ms;
		rv           = client_wait_link(c, wait, false);
		return rv == PASCO_ETIMEDOUT ? PASCO_EUNAVAILABLE : rv;
	}
	/* a peer never reached: say every few seconds what is awaited */
	deadline = pasci_now_ms() + timeout_ms;
	for (;;) {
		int64_t left = deadline - pasci_now_ms();
		rv = pasci_rpc_client_wait_up(c, left < 5000 ? left : 5000);
		if (rv != PASCO_ETIMEDOUT || left <= 5000) {
			return rv;
		}
		char why[200];
		pthread_mutex_lock(&c->mu);
		pasci_fmt(why, sizeof(why), "%s",
		    c->auth_error[0] != 0   ? c->auth_error
		    : c->dial_error[0] != 0 ? c->dial_error
		    : c->link == LINK_HELLO
		        ? "connected, no hello answered yet"
		        : "no connection yet");
		pthread_mutex_unlock(&c->mu);
		pasci_log(PASCI_LOG_WARN, "waiting for %s: %s", c->url, why);
	}
}

bool
pasci_rpc_client_is_up(pasci_rpc_client *c)
{
	bool up;
	pthread_mutex_lock(&c->mu);
	up = c->link == LINK_UP;
	pthread_mutex_unlock(&c->mu);
	return up;
}

void
pasci_rpc_client_abandon(pasci_rpc_client *c, int err, const char *why)
{
	rpc_call *taken = NULL;
	pthread_mutex_lock(&c->mu);
	taken = pasci_rpc_calls_take_calls(&c->calls);
	pthread_mutex_unlock(&c->mu);
	fail_list(c, taken, err, why);
}

void
pasci_rpc_client_drop(pasci_rpc_client *c, const char *why)
{
	nng_pipe p;
	pthread_mutex_lock(&c->mu);
	p.id = c->pipe;
	pthread_mutex_unlock(&c->mu);
	if (p.id != 0) {
		pasci_log(PASCI_LOG_WARN, "dropping the connection to %s: %s",
		    c->url, why);
		nng_pipe_close(
		    p); /* the pipe-removed callback does the rest */
	}
}

uint64_t
pasci_rpc_client_incarnation(pasci_rpc_client *c)
{
	uint64_t inc;
	pthread_mutex_lock(&c->mu);
	inc = c->link == LINK_UP ? c->incarnation : 0;
	pthread_mutex_unlock(&c->mu);
	return inc;
}

void
pasci_rpc_call_async(pasci_rpc_client *c, nng_msg *req, int64_t timeout_ms,
    pasci_rpc_done_fn done, void *arg)
{
	rpc_call *call = pasci_calloc(1, sizeof(*call));
	char      detail[300];
	uint32_t  id;
	int       rv;

	if (nng_msg_len(req) > pasci_max_message_bytes()) {
		/* the server would drop the connection: say why instead */
		pasci_fmt(detail, sizeof(detail),
		    "a %zu-byte request to %s is over the %zu-byte limit "
		    "(PASCO_MAX_MESSAGE_MB)",
		    nng_msg_len(req), c->url, pasci_max_message_bytes());
		nng_msg_free(req);
		free(call);
		done(arg, PASCO_EINVAL, NULL, detail);
		return;
	}
	pthread_mutex_lock(&c->mu);
	if (call == NULL || c->link != LINK_UP || c->closing) {
		bool up = c->link == LINK_UP;
		pthread_mutex_unlock(&c->mu);
		nng_msg_free(req);
		free(call);
		pasci_fmt(detail, sizeof(detail), "%s %s",
		    up ? "out of memory "
		         "calling"
		       : "not connected to",
		    c->url);
		done(
		    arg, up ? PASCO_ENOMEM : PASCO_EUNAVAILABLE, NULL, detail);
		return;
	}
	call->id          = pasci_rpc_calls_next_id(&c->calls);
	id                = call->id; /* call is not ours once unlocked */
	call->pipe        = c->pipe;
	call->deadline_ms = timeout_ms > 0 ? pasci_now_ms() + timeout_ms : 0;
	call->done        = done;
	call->arg         = arg;
	pasci_wire_set_incarnation(req, c->incarnation);
	rpc_call_insert_locked(c, call);
	pthread_mutex_unlock(&c->mu);

	nng_msg_header_append_u32(req, id | 0x80000000u);
	if ((rv = nng_sendmsg(c->sock, req, 0)) != 0) {
		nng_msg_free(req);
		pthread_mutex_lock(&c->mu);
		call = pasci_rpc_calls_remove(&c->calls, id);
		pthread_mutex_unlock(&c->mu);
		if (call != NULL) {
			pasci_fmt(detail, sizeof(detail),
			    "sending to %s failed: "
			    "%s",
			    c->url, nng_strerror(rv));
			call_finish(c, call, PASCO_EUNAVAILABLE, detail);
		}
	}
}

void
pasci_rpc_client_why_down(pasci_rpc_client *c, char *buf, size_t len)
{
	pthread_mutex_lock(&c->mu);
	pasci_fmt(buf, len, "%s",
	    c->link == LINK_UP      ? ""
	    : c->auth_error[0] != 0 ? c->auth_error
	                            : c->dial_error);
	pthread_mutex_unlock(&c->mu);
}
