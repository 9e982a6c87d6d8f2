/*
 * RPC over nng. A server is a rep0 socket with one context per handler
 * thread; a client is a raw req0 socket (no protocol-level resend) dialing
 * one server, with its own call ids, so many calls can be outstanding on one
 * connection. Calls have deadlines. A client learns the server's incarnation
 * by a HELLO after every (re)connect and stamps it into each request; the
 * server rejects requests stamped for another incarnation, so nothing sent
 * to a dead server ever runs on its successor. The transport never resends.
 * Calls may also be carried by another transport (a bulk link, bulk.h's
 * pasci_rpc_call_fast) and registered here, so that they fail as the
 * client's own do (pasci_rpc_call_register).
 *
 * Opened with a cluster key (base/key.h), a server serves nothing but
 * HELLO and AUTH on a connection until the client has proved the key, and
 * a client refuses a server that cannot prove it too (auth.h); the link is
 * up only then. The key is the opener's to find: this layer reads no
 * environment.
 */
#ifndef PASCI_RPC_H
#define PASCI_RPC_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stdint.h>

#include "chief.h"
#include "key.h"
#include "wire.h"

/* The size of an advert's buffer, its terminating NUL included. */
#define PASCI_RPC_ADVERT_MAX 300

typedef struct pasci_rpc_client pasci_rpc_client;
typedef struct pasci_rpc_server pasci_rpc_server;

/* Completion of a call, run exactly once, on an internal thread (or on the
 * caller's thread when the call fails at once); must not block. err is 0
 * when the server answered: reply is then the decoded answer, owned by the
 * callback (reply->hdr->status is the server's status). Otherwise reply is
 * NULL and err is PASCO_EUNAVAILABLE (not connected, or the connection was
 * lost), PASCO_ETIMEDOUT (deadline passed), PASCO_EABORTED (the server is
 * a new incarnation; the request did not run), PASCO_EPROTO (malformed
 * reply) or PASCO_ECLOSED (client closing); detail says more. */
typedef void (*pasci_rpc_done_fn)(
    void *arg, int err, pasci_wire_msg *reply, const char *detail);

/* Connection changes: up with the server's incarnation, or down. Called on
 * an internal thread; must not block. */
typedef void (*pasci_rpc_state_fn)(void *arg, bool up, uint64_t incarnation);

/* Opens a client that dials url and keeps redialing. state_fn may be NULL.
 * Returns at once. A tcp:// url naming a host is looked up by the client
 * (with a deadline), and again every second while the link is down, so a
 * server back at a new address under that name is followed
 * (rpc_redial.c). */
int pasci_rpc_client_open(pasci_rpc_client **out, const char *url,
    pasci_rpc_state_fn state_fn, void *state_arg);

/* The same, proving key (copied; NULL: none) on every connection and
 * requiring the server to prove it back. Without a key, a server that asks
 * for one refuses every call with PASCO_EPRECONDITION ("unauthenticated");
 * with a key, a server that does not prove it is never up, and the calls'
 * errors say why. */
int pasci_rpc_client_open_with(pasci_rpc_client **out, const char *url,
    pasci_rpc_state_fn state_fn, void *state_arg, const pasci_key *key);

/* The same, as the chief chief (chief.h; NULL: not a chief): its identity
 * rides in every handshake, and a server that serves another chief
 * refuses the connection; why (pasci_rpc_client_why_down, the calls'
 * errors) names the chief it serves. */
int pasci_rpc_client_open_as(pasci_rpc_client **out, const char *url,
    pasci_rpc_state_fn state_fn, void *state_arg, const pasci_key *key,
    const pasci_chief *chief);

/* Why c's last handshake was refused ("" when up, or none was), into buf.
 * Thread-safe. */
void pasci_rpc_client_why_down(pasci_rpc_client *c, char *buf, size_t len);

/* Whether the server refused c's last handshake in its own words (it
 * serves another chief, chief.h), with those words in buf; false once up.
 * Unlike a network failure, waiting will not change it while that chief
 * stays. Thread-safe. */
bool pasci_rpc_client_refused(pasci_rpc_client *c, char *buf, size_t len);

/* The key c was opened with, or NULL: for the bulk calls to its server.
 * Thread-safe. */
const pasci_key *pasci_rpc_client_key(const pasci_rpc_client *c);

/* Fails outstanding calls with PASCO_ECLOSED, then frees. NULL is a no-op. */
void pasci_rpc_client_close(pasci_rpc_client *c);

const char *pasci_rpc_client_url(const pasci_rpc_client *c);

/* Waits up to timeout_ms for the first connection (PASCO_ETIMEDOUT); once
 * the server was connected, a lost connection is PASCO_EUNAVAILABLE at
 * once, as TensorFlow fails fast on a lost task. */
int pasci_rpc_client_wait_up(pasci_rpc_client *c, int64_t timeout_ms);

/* The same before a call: a server never reached is waited for until 15 s
 * after the client opened, and after that for at most 2 s per call; a
 * server lost is waited for at most 2 s too (it may be back, at its address
 * or at a new one under its name: the client redials within about a
 * second), then PASCO_EUNAVAILABLE. */
int pasci_rpc_client_wait_for_call(pasci_rpc_client *c, int64_t timeout_ms);

/* Changes those 15 s and 2 s (for tests; not thread-safe with calls). */
void pasci_rpc_set_contact_waits(int64_t first_ms, int64_t retry_ms);

/* The advert of the server c is connected to: the opaque string its
 * opener gave pasci_rpc_server_open_with, as its last HELLO reply carried
 * it ("" when none, or after pasci_rpc_client_forget_advert), copied into
 * buf (len bytes), with the server's incarnation. PASCO_EUNAVAILABLE when
 * the link is not up. Thread-safe. */
int pasci_rpc_client_advert(
    pasci_rpc_client *c, char *buf, size_t len, uint64_t *incarnation);

/* What a caller needs to reach the server c is connected to through a
 * side channel (its bulk port): the advert and incarnation as
 * pasci_rpc_client_advert gives them, the URL c dials and c's cluster key
 * (NULL: none; both live as long as c), in one look under c's lock.
 * PASCO_EUNAVAILABLE when the link is not up (url still set). */
typedef struct pasci_rpc_peer {
	char             advert[PASCI_RPC_ADVERT_MAX];
	uint64_t         incarnation;
	const char      *url;
	const pasci_key *key;
} pasci_rpc_peer;

int pasci_rpc_client_peer(pasci_rpc_client *c, pasci_rpc_peer *peer);

/* How long a failed advert is not given out before it is tried again. */
#define PASCI_ADVERT_RETRY_MS 10000

/* Holds the advert back (pasci_rpc_client_advert gives "") for
 * PASCI_ADVERT_RETRY_MS, twice as long after each failure in a row (at
 * most 32 times), then gives it again: for a caller that found
 * what server incarnation `incarnation` advertised unusable (a bulk port
 * blocked, or not up yet). Nothing if the client knows another
 * incarnation by now: a server restarted meanwhile (a new bulk port)
 * keeps the advert its HELLO gave. True the first time for that
 * incarnation (to say it once). Thread-safe. */
bool pasci_rpc_client_forget_advert(pasci_rpc_client *c, uint64_t incarnation);

bool pasci_rpc_client_is_up(pasci_rpc_client *c);

/* Completes every outstanding call (but the handshake) with err and why,
 * now; their replies, if they come, are dropped. */
void pasci_rpc_client_abandon(pasci_rpc_client *c, int err, const char *why);

/* Drops the current connection (calls sent on it fail with
 * PASCO_EUNAVAILABLE) and lets the dialer reconnect: for a peer that is
 * connected but no longer answers. */
void     pasci_rpc_client_drop(pasci_rpc_client *c, const char *why);
uint64_t pasci_rpc_client_incarnation(pasci_rpc_client *c);

/* Sends req (taken over) if the connection is up, else fails at once;
 * done runs when the reply arrives, the deadline (timeout_ms > 0) passes or
 * the connection drops. */
void pasci_rpc_call_async(pasci_rpc_client *c, nng_msg *req,
    int64_t timeout_ms, pasci_rpc_done_fn done, void *arg);

/* Calls carried by something else (a bulk link: bulk_async.c) and
 * completed as c's own are: registered, such a call belongs to the
 * connection up now, and c fails it with PASCO_EUNAVAILABLE when that
 * connection is lost, PASCO_ETIMEDOUT at its deadline (timeout_ms > 0),
 * err at pasci_rpc_client_abandon and PASCO_ECLOSED at close, exactly
 * once, as its own calls. register gives its id and the server's
 * incarnation, or PASCO_EUNAVAILABLE when c is not up (done is not
 * called). complete hands it the reply (taken over; NULL with err) unless
 * it was completed already (false: the reply is freed); a reply stamped
 * for another incarnation completes it with PASCO_EABORTED. forget drops
 * it without completing it (false: it was completed already). pending
 * says whether it is still outstanding. Thread-safe. */
int  pasci_rpc_call_register(pasci_rpc_client *c, int64_t timeout_ms,
     pasci_rpc_done_fn done, void *arg, uint32_t *id, uint64_t *incarnation);
bool pasci_rpc_call_complete(pasci_rpc_client *c, uint32_t id, int err,
    pasci_wire_msg *reply, const char *detail);
bool pasci_rpc_call_forget(pasci_rpc_client *c, uint32_t id);
bool pasci_rpc_call_pending(pasci_rpc_client *c, uint32_t id);

/* An object that lives as long as c (bulk_async.c's reactor): made by
 * make(c) at the first call, stopped by stop(it) when c closes, after its
 * calls had their chance to be answered and before those left fail. NULL
 * when c is closing or make failed. Thread-safe. */
void *pasci_rpc_client_attach(pasci_rpc_client *c,
    void *(*make)(pasci_rpc_client *c), void (*stop)(void *it));

/* Encodes b, waits (within timeout_ms) for the connection, sends, waits for
 * the reply. Returns a transport error, or the reply's status; on a non-zero
 * return err holds a message. On PASCO_OK, *reply (if not NULL) is filled
 * and owned by the caller. */
int pasci_rpc_call(pasci_rpc_client *c, pasci_wire_builder *b,
    int64_t timeout_ms, pasci_wire_msg *reply, char *err, size_t errlen);

/* A handler answers one request: it returns the encoded reply (status
 * inside), or NULL for "out of memory". It may block; it runs on one of the
 * server's threads. It does not own req. */
typedef nng_msg *(*pasci_rpc_handler)(void *arg, const pasci_wire_msg *req);

/* Listens on url with nthreads handler threads named name. */
int pasci_rpc_server_open(pasci_rpc_server **out, const char *url,
    int nthreads, const char *name, pasci_rpc_handler handler, void *arg);

/* The same with a given incarnation (0: random), an advert: an opaque
 * string (shorter than PASCI_RPC_ADVERT_MAX; NULL: none) sent in every
 * HELLO reply for clients to read with pasci_rpc_client_advert (the rpc
 * layer gives it no meaning; its opener and the clients' callers agree on
 * one), and a cluster key (copied; NULL: none, anyone is served) every
 * connection must prove before its requests run. PASCO_EINVAL when the
 * advert is too long. */
int pasci_rpc_server_open_with(pasci_rpc_server **out, const char *url,
    int nthreads, const char *name, pasci_rpc_handler handler, void *arg,
    uint64_t incarnation, const char *hello_name, const pasci_key *key);

uint64_t pasci_rpc_server_incarnation(const pasci_rpc_server *s);

/* Whether a request that came another way (a bulk link) naming the chief
 * of incarnation chief_inc (0: none) may be served: as
 * pasci_chief_seat_admits for the chief this server seats. */
bool pasci_rpc_server_admits(
    pasci_rpc_server *s, uint64_t chief_inc, char *why, size_t len);

/* Milliseconds since the server last received a request of any kind
 * from a member (since it opened, if none), here or on this process's
 * bulk port (pasci_bulk_last_request_ms): a ps's variable traffic. */
int64_t pasci_rpc_server_idle_ms(const pasci_rpc_server *s);

/* Milliseconds since the server last received any message at all, a
 * stranger's included (since it opened, if none), or since a bulk server
 * of this process last did (bulk.h), whichever is later. */
int64_t pasci_rpc_server_quiet_ms(const pasci_rpc_server *s);

/* The connections the server holds now; and closing those that have sent
 * nothing since they opened, for PASCO_IDLE_TIMEOUT (conns.h: also done
 * whenever a connection opens). Returns how many it closed. */
int pasci_rpc_server_connections(const pasci_rpc_server *s);
int pasci_rpc_server_sweep(const pasci_rpc_server *s);

/* Whether a SHUTDOWN request came: the chief is done with this task. */
bool pasci_rpc_server_shutdown_requested(const pasci_rpc_server *s);

/* Stops listening, waits for running handlers, frees. NULL is a no-op. */
void pasci_rpc_server_close(pasci_rpc_server *s);

#endif
