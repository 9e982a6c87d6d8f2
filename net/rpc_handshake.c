/*
 * The rpc client's handshake on every new connection (see rpc.h and
 * auth.h): HELLO learns the server's incarnation and advert; with a key,
 * the HELLO reply's nonce is answered by an AUTH and the link is up only
 * once the server's proof checks out. A chief's HELLO and AUTH carry its
 * identity (chief.h): a server that serves another chief refuses it, and
 * its reason is kept for the calls' errors (pasci_rpc_client_why_down).
 * Runs on nng's pipe-event and receive threads; never blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "key.h"
#include "rpc_client_impl.h"
#include "util.h"

/* Sends msg (taken over; NULL: out of memory) as a handshake call (an
 * AUTH when auth, with the handshake's nonces) on pipe, if it is still the
 * connection being set up; on failure the connection is closed. */
static void
handshake_send(pasci_rpc_client *c, nng_pipe pipe, nng_msg *msg, bool auth,
    const uint8_t *nonces)
{
	rpc_call *call = msg != NULL ? pasci_calloc(1, sizeof(*call)) : NULL;
	uint32_t  id;

	pthread_mutex_lock(&c->mu);
	if (call == NULL || c->pipe != (uint32_t) nng_pipe_id(pipe) ||
	    c->link != LINK_HELLO) {
		pthread_mutex_unlock(&c->mu);
		nng_msg_free(msg);
		free(call);
		pasci_rpc_client_close_pipe_later(
		    c, (uint32_t) nng_pipe_id(pipe));
		return;
	}
	if (nonces != NULL) {
		memcpy(c->auth_nonces, nonces, sizeof(c->auth_nonces));
	}
	call->id          = pasci_rpc_calls_next_id(&c->calls);
	id                = call->id; /* call is not ours once unlocked */
	call->pipe        = c->pipe;
	call->hello       = true;
	call->auth        = auth;
	call->deadline_ms = pasci_now_ms() + HELLO_TIMEOUT_MS;
	rpc_call_insert_locked(c, call);
	pthread_mutex_unlock(&c->mu);
	nng_msg_header_append_u32(msg, id | 0x80000000u);
	if (nng_sendmsg(c->sock, msg, NNG_FLAG_NONBLOCK) != 0) {
		nng_msg_free(msg);
		pasci_rpc_client_close_pipe_later(
		    c, (uint32_t) nng_pipe_id(pipe));
	}
}

void
pasci_rpc_client_pipe_added(nng_pipe pipe, nng_pipe_ev ev, void *arg)
{
	pasci_rpc_client  *c = arg;
	pasci_wire_builder b;
	nng_msg           *msg = NULL;

	(void) ev;
	pasci_wire_builder_init(&b, PASCI_METHOD_HELLO);
	b.hdr.chief             = c->chief.name; /* "": not a chief */
	b.hdr.chief_incarnation = c->chief.incarnation;
	if (pasci_wire_encode(&b, &msg) != 0) {
		msg = NULL;
	}
	pasci_wire_builder_fini(&b);
	pthread_mutex_lock(&c->mu);
	c->pipe          = (uint32_t) nng_pipe_id(pipe);
	c->link          = LINK_HELLO;
	c->dial_event_ms = pasci_now_ms();
	pthread_mutex_unlock(&c->mu);
	handshake_send(c, pipe, msg, false, NULL);
}

/* Redials after a refusal come once a second, not every 20 ms: a refused
 * client (a second chief, a wrong key) does not hammer the server, and
 * its connections do not churn (nng 1.5's nng_close could hang on a
 * socket closed amid that churn). Back to the usual pace once up. */
static void
slow_redials(pasci_rpc_client *c, bool slow)
{
	nng_dialer d;
	bool       has;
	pthread_mutex_lock(&c->mu);
	c->slow = slow; /* for a dialer that replaces this one */
	d       = c->dialer;
	has     = c->has_dialer;
	pthread_mutex_unlock(&c->mu);
	if (has) { /* closed meanwhile: nng refuses the id, no harm */
		nng_dialer_set_ms(d, NNG_OPT_RECONNMINT, slow ? 1000 : 20);
		nng_dialer_set_ms(d, NNG_OPT_RECONNMAXT, slow ? 1000 : 500);
	}
}

/* The handshake on call->pipe is done: the link is up. */
static void
client_link_up(pasci_rpc_client *c, const rpc_call *call)
{
	bool               up = false;
	pasci_rpc_state_fn state_fn;
	uint64_t           inc;
	pthread_mutex_lock(&c->mu);
	state_fn = c->state_fn;
	inc      = c->incarnation;
	if (c->pipe == call->pipe && c->link == LINK_HELLO) {
		c->link           = LINK_UP;
		c->ever_up        = true;
		c->auth_error[0]  = 0;
		c->server_refused = false;
		up                = true;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	if (up) {
		slow_redials(c, false);
		pasci_log(PASCI_LOG_DEBUG,
		    "connected to %s (incarnation %016llx)", c->url,
		    (unsigned long long) inc);
		if (state_fn != NULL) {
			state_fn(c->state_arg, true, inc);
		}
	}
}

void
pasci_rpc_client_refuse(
    pasci_rpc_client *c, const rpc_call *call, const char *why)
{
	nng_pipe p   = {.id = call->pipe};
	bool     log = false;
	pthread_mutex_lock(&c->mu);
	pasci_fmt(c->auth_error, sizeof(c->auth_error), "%s", why);
	if (pasci_now_ms() - c->auth_logged_ms >= 10000) {
		c->auth_logged_ms = pasci_now_ms();
		log               = true;
	}
	pthread_mutex_unlock(&c->mu);
	pasci_log(
	    log ? PASCI_LOG_ERROR : PASCI_LOG_DEBUG, "%s: %s", c->url, why);
	pasci_rpc_client_close_pipe_later(c, p.id);
}

/* The server refused us in its own words (why): kept apart from our own
 * reasons, for pasci_rpc_client_refused. */
static void
server_refused(pasci_rpc_client *c, const rpc_call *call, const char *why)
{
	pthread_mutex_lock(&c->mu);
	c->server_refused = true;
	pthread_mutex_unlock(&c->mu);
	slow_redials(c, true);
	pasci_rpc_client_refuse(c, call, why);
}

bool
pasci_rpc_client_refused(pasci_rpc_client *c, char *buf, size_t len)
{
	bool refused;
	pthread_mutex_lock(&c->mu);
	refused = c->server_refused && c->link != LINK_UP;
	pasci_fmt(buf, len, "%s", refused ? c->auth_error : "");
	pthread_mutex_unlock(&c->mu);
	return refused;
}

void
pasci_rpc_client_hello_done(
    pasci_rpc_client *c, rpc_call *call, pasci_wire_msg *m)
{
	const uint8_t *sn = pasci_auth_hello_nonce(m);
	bool           current, refused, warn = false;
	pthread_mutex_lock(&c->mu);
	current = c->pipe == call->pipe && c->link == LINK_HELLO;
	refused = current && m->hdr->status != 0;
	current = current && !refused;
	if (current) {
		c->incarnation = m->incarnation;
		pasci_fmt(c->advert, sizeof(c->advert), "%s",
		    m->hdr->name != NULL ? m->hdr->name : "");
		c->advert_hold_until_ms = 0; /* a new connection: try it */
		c->advert_failures      = 0;
		warn = sn != NULL && !c->has_key && !c->warned_no_key;
		c->warned_no_key |= warn;
	}
	pthread_mutex_unlock(&c->mu);
	if (refused) { /* e.g. it serves another chief (chief.h) */
		server_refused(c, call, m->hdr->error);
	} else if (!current) {
	} else if (c->has_key && sn != NULL) {
		uint8_t  nonces[2 * PASCI_AUTH_NONCE];
		nng_msg *msg = NULL;
		nng_pipe p   = {.id = call->pipe};
		if (pasci_auth_request_as(&c->key, sn, c->chief.name,
		        c->chief.incarnation, nonces, &msg) != 0) {
			msg = NULL;
		}
		handshake_send(c, p, msg, true, nonces);
	} else if (c->has_key) {
		pasci_rpc_client_refuse(c, call,
		    "the server does not ask for the cluster key, so it "
		    "cannot "
		    "prove it holds it; refusing it (is it started with "
		    "--key-file or PASCO_KEY_FILE?)");
	} else {
		if (warn) { /* its replies will say "unauthenticated" */
			pasci_log(PASCI_LOG_WARN,
			    "%s requires the cluster key, and this process "
			    "has none (--key-file or PASCO_KEY_FILE)",
			    c->url);
		}
		client_link_up(c, call);
	}
	pasci_wire_msg_fini(m);
	free(call);
}

/* Where c's key came from, for a refusal: the process's cluster key's
 * source when c holds that key, else a key given to this client alone. */
static const char *
key_source(const pasci_rpc_client *c, char *buf, size_t len)
{
	const pasci_key *k;
	if (pasci_cluster_key(&k, NULL, 0) == 0 && k != NULL &&
	    k->len == c->key.len &&
	    memcmp(k->bytes, c->key.bytes, k->len) == 0) {
		return pasci_cluster_key_source(buf, len);
	}
	return pasci_fmt(buf, len, "a key given to this client");
}

void
pasci_rpc_client_auth_done(
    pasci_rpc_client *c, rpc_call *call, pasci_wire_msg *m)
{
	uint8_t nonces[2 * PASCI_AUTH_NONCE];
	pthread_mutex_lock(&c->mu);
	memcpy(nonces, c->auth_nonces, sizeof(nonces));
	pthread_mutex_unlock(&c->mu);
	if (pasci_auth_reply_ok(&c->key, nonces, m)) {
		client_link_up(c, call);
	} else if (m->hdr->status != 0 &&
	           strcmp(m->hdr->error, PASCI_AUTH_FAILED) != 0) {
		/* the key is right, and the server refuses us for another
		 * reason (chief.h): its words */
		server_refused(c, call, m->hdr->error);
	} else if (m->hdr->status != 0) {
		/* a wrong key stays wrong: the waits for first contact end
		 * now (pasci_rpc_client_refused), not at their deadline */
		char why[400], src[300];
		pasci_fmt(why, sizeof(why),
		    "the server refused this process's cluster key, from "
		    "%s: the servers hold another key; give every task the "
		    "same key file",
		    key_source(c, src, sizeof(src)));
		server_refused(c, call, why);
	} else {
		slow_redials(c, true);
		pasci_rpc_client_refuse(c, call,
		    "the server failed to prove the cluster key; refusing it");
	}
	pasci_wire_msg_fini(m);
	free(call);
}
