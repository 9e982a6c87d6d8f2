/*
 * The rpc client's insides (rpc.h has the contract), shared by
 * rpc_client.c (calls, replies, deadlines, the socket) and rpc_handshake.c
 * (HELLO, AUTH and the chief's identity on every new connection). The
 * threads and locks are described at the top of rpc_client.c.
 */
#ifndef PASCI_RPC_CLIENT_IMPL_H
#define PASCI_RPC_CLIENT_IMPL_H

#include <pthread.h>

#include "auth.h"
#include "chief.h"
#include "resolve.h"
#include "rpc.h"
#include "rpc_calls.h"

#define HELLO_TIMEOUT_MS 5000

enum { LINK_DOWN, LINK_HELLO, LINK_UP };

struct pasci_rpc_client {
	nng_socket         sock;
	nng_aio           *recv_aio;
	char              *url;
	pasci_rpc_state_fn state_fn;
	void              *state_arg;
	bool               has_key; /* set at open, then read only */
	pasci_key          key;
	pasci_chief        chief; /* name "" when not a chief; read only */

	pthread_t       timer;
	pthread_mutex_t mu;
	pthread_cond_t  cv;         /* link became UP */
	pthread_cond_t  timer_cv;   /* a deadline was added, or closing */
	bool            timer_idle; /* the timer waits with no tick */
	/* Protected by mu. */
	int      link;
	uint32_t pipe;
	uint64_t incarnation;
	bool    ever_up; /* connected once: later outages fail calls at once */
	int64_t opened_ms; /* set at open, then read only */
	pasci_rpc_calls calls;
	bool            closing;
	/* From the last HELLO reply; "" if none, or forgotten. */
	char advert[PASCI_RPC_ADVERT_MAX];
	/* Until this time (pasci_now_ms) the advert is not given out: what it
	 * names failed (pasci_rpc_client_forget_advert); 0: given out. */
	int64_t advert_hold_until_ms;
	/* How many times in a row the advert failed since the last HELLO
	 * (each hold twice as long as the last; the first is said). */
	int advert_failures;
	/* The handshake's sn || cn while its AUTH is out (auth.h). */
	uint8_t auth_nonces[2 * PASCI_AUTH_NONCE];
	/* Why the last handshake was refused; "" once up. */
	char auth_error[512];
	bool server_refused; /* auth_error is the server's refusal */
	/* Connections to close, closed by the timer thread: never from
	 * inside nng's callbacks (a pipe closed while nng starts an
	 * operation on it can leave a task that nng's reaper then waits for
	 * forever: nanomsg/nng#1543, nng 1.5) */
	uint32_t close_pipes[8];
	int      nclose_pipes;
	/* connections closed by the timer thread whose removal nng has not
	 * yet reported: the socket's close waits for them (a socket closed
	 * while one of its connections is being torn down is where nng 1.5's
	 * close hangs); signalled on cv */
	uint32_t closing_pipes[8];
	int      nclosing_pipes;
	int64_t  auth_logged_ms;
	bool     warned_no_key;
	/* The dialer (rpc_redial.c): replaced by the timer thread only, read
	 * under mu by nng's callbacks (slow_redials). */
	nng_dialer dialer;
	bool       has_dialer;
	char       dial_url[160]; /* what it dials */
	/* its start, or the last connection's arrival or loss */
	int64_t dial_event_ms;
	bool    slow; /* redials once a second (rpc_handshake.c) */
	/* Why the name does not lead anywhere (a lookup failed); "" none. */
	char dial_error[320];
	/* A URL naming a host: looked up here, not by nng (set at open, then
	 * read only). */
	bool resolves;
	char host[256];
	char port[16];
	/* The lookup under way, when it began, and the next one's time (under
	 * mu: the timer thread's, but a lost connection starts afresh). */
	pasci_lookup *lookup;
	int64_t       lookup_ms;
	int64_t       next_lookup_ms;
	int64_t       lookup_logged_ms;
	/* pasci_rpc_client_attach's object, and how it stops */
	void *attached;
	void (*attached_stop)(void *it);
};

/* Closes connection id from the timer thread, soon (see close_pipes). */
void pasci_rpc_client_close_pipe_later(pasci_rpc_client *c, uint32_t id);

/* Inserts call; wakes the timer only when it waits with no tick: a
 * ticking timer finds the deadline at its next tick. (Waking it for every
 * first deadline cost a thread wake-up per call on a client with one call
 * in flight at a time.) */
static inline void
rpc_call_insert_locked(pasci_rpc_client *c, rpc_call *call)
{
	if (pasci_rpc_calls_insert(&c->calls, call) && c->timer_idle) {
		c->timer_idle = false;
		pthread_cond_signal(&c->timer_cv); /* the first deadline */
	}
}

/* --- rpc_redial.c --- */

/* Sets c->resolves, host and port from c->url (at open). */
void pasci_rpc_redial_init(pasci_rpc_client *c);

/* Starts a dialer of url for c (c->url's TLS settings): an nng error, or
 * PASCO_EIO with *tls_rv the TLS setup's error. mu not held. */
int pasci_rpc_dialer_start(pasci_rpc_client *c, const char *url, int *tls_rv);

/* Closes c's dialer, if any. mu not held. */
void pasci_rpc_dialer_close(pasci_rpc_client *c);

/* While the link is down: looks the name up again and replaces the dialer
 * when the address changed or it is stuck. Timer thread, mu held (dropped
 * around nng's calls). */
void pasci_rpc_redial_tick_locked(pasci_rpc_client *c);

/* How long the timer may wait before the next tick; -1: no tick needed. */
int64_t pasci_rpc_redial_wait_ms_locked(const pasci_rpc_client *c);

/* The link was lost: the name is looked up afresh at once (a lookup
 * under way is dropped). mu held; never blocks (nng's callbacks). */
void pasci_rpc_redial_now_locked(pasci_rpc_client *c);

/* Abandons a lookup under way (at close, the timer thread stopped). */
void pasci_rpc_redial_fini(pasci_rpc_client *c);

/* --- rpc_handshake.c --- */

/* The pipe-added callback: sends the HELLO on the new connection. */
void pasci_rpc_client_pipe_added(nng_pipe pipe, nng_pipe_ev ev, void *arg);

/* A handshake call's reply m (HELLO, or AUTH) arrived: goes on with the
 * handshake, or brings the link up, or refuses the server. Frees call and
 * m. */
void pasci_rpc_client_hello_done(
    pasci_rpc_client *c, rpc_call *call, pasci_wire_msg *m);
void pasci_rpc_client_auth_done(
    pasci_rpc_client *c, rpc_call *call, pasci_wire_msg *m);

/* Refuses the server on call->pipe (why says how it failed the
 * handshake): logged as an error at most every 10 s, kept for the calls'
 * errors, and the connection closed. */
void pasci_rpc_client_refuse(
    pasci_rpc_client *c, const rpc_call *call, const char *why);

#endif
