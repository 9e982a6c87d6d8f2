/*
 * Cluster authentication: every connection, nng and bulk alike, proves
 * that both ends hold the cluster key (base/key.h) before any request is
 * served. The secret never crosses the wire; each side contributes a fresh
 * random nonce, so a recorded exchange proves nothing on a new connection.
 *
 *   server -> client   sn: PASCI_AUTH_NONCE random bytes
 *   client -> server   cn: PASCI_AUTH_NONCE random bytes,
 *                      HMAC-SHA256(key, "pasco-auth-client" || sn || cn)
 *   server -> client   HMAC-SHA256(key, "pasco-auth-server" || sn || cn)
 *
 * The two labels differ, so neither proof can be reflected as the other.
 * Over nng, sn rides in the HELLO reply (a u8 tensor), the client's part
 * is an AUTH request (tensors cn and its proof) and the server's proof is
 * the AUTH reply's tensor; a client with the key refuses a server that
 * sends no nonce or a wrong proof. Over a bulk connection the same three
 * messages are its first bytes (bulk_frame.h). Proofs are compared in
 * constant time.
 *
 * The server side of nng keeps a gate per rpc server: which connections
 * (nng pipes) have proved the key, and the nonce each was sent. Its lock
 * is held only to read or change that table; logging, nng calls and
 * message building happen outside it.
 */
#ifndef PASCI_AUTH_H
#define PASCI_AUTH_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stdint.h>

#include "key.h"
#include "wire.h"

#define PASCI_AUTH_NONCE 32
#define PASCI_AUTH_PROOF PASCI_SHA256_BYTES

/* Requests longer than this are refused unread on a connection that has
 * not authenticated: a HELLO or an AUTH is far shorter. */
#define PASCI_AUTH_HANDSHAKE_MAX 1024

/* Fills out with random bytes from the OS. */
void pasci_auth_nonce(uint8_t out[PASCI_AUTH_NONCE]);

/* The client's proof (server false) or the server's (server true) for the
 * nonces sn and cn. */
void pasci_auth_proof(const pasci_key *key, bool server,
    const uint8_t sn[PASCI_AUTH_NONCE], const uint8_t cn[PASCI_AUTH_NONCE],
    uint8_t out[PASCI_AUTH_PROOF]);

/* "a.b.c.d:port" (or the inproc name, or "an unknown address") of the
 * peer of pipe, into buf. */
const char *pasci_auth_peer(nng_pipe pipe, char *buf, size_t len);

/* --- the server side of nng --- */

typedef struct pasci_auth_gate pasci_auth_gate;

/* A gate for key (copied; NULL: an open gate that admits everyone). */
int  pasci_auth_gate_create(pasci_auth_gate **out, const pasci_key *key);
void pasci_auth_gate_destroy(pasci_auth_gate *g);

/* Whether requests on pipe may run: the gate is open or pipe proved the
 * key. Thread-safe. */
bool pasci_auth_gate_admits(pasci_auth_gate *g, nng_pipe pipe);

/* Adds a fresh nonce for pipe to the HELLO reply b (nothing when the gate
 * is open); a later AUTH on pipe must answer it. PASCO_ENOMEM. */
int pasci_auth_gate_hello(
    pasci_auth_gate *g, nng_pipe pipe, pasci_wire_builder *b);

/* Answers the AUTH request req on pipe: the server's proof when the
 * client's is right (pipe is admitted from then on); otherwise an error
 * reply, a warning naming the peer, and *close_pipe set (the caller closes
 * pipe once the reply is sent). NULL on no memory. */
nng_msg *pasci_auth_gate_auth(pasci_auth_gate *g, nng_pipe pipe,
    const pasci_wire_msg *req, bool *close_pipe);

/* The error of the AUTH reply to a wrong proof; a refused AUTH with
 * another error proved the key and was refused for what it says. */
#define PASCI_AUTH_FAILED "authentication failed"

/* The reply to a request (method, or -1 when unread) on a pipe that has
 * not authenticated: PASCO_EPRECONDITION "unauthenticated"; the first
 * refusal on each pipe is logged with the peer's address. */
nng_msg *pasci_auth_gate_refuse(pasci_auth_gate *g, nng_pipe pipe, int method);

/* Forgets pipe (it was closed). Thread-safe. */
void pasci_auth_gate_forget(pasci_auth_gate *g, nng_pipe pipe);

/* --- the client side of nng --- */

/* The nonce a HELLO reply carries, or NULL when it carries none (the
 * server has no key). */
const uint8_t *pasci_auth_hello_nonce(const pasci_wire_msg *hello_reply);

/* Builds the AUTH request answering sn under key; nonces gets sn || cn
 * for checking the reply. PASCO_ENOMEM. */
int pasci_auth_request(const pasci_key *key, const uint8_t *sn,
    uint8_t nonces[2 * PASCI_AUTH_NONCE], nng_msg **out);

/* The same from a chief (chief.h): name ("" for none) and incarnation
 * ride along, for the server to seat it once the proof checks out. */
int pasci_auth_request_as(const pasci_key *key, const uint8_t *sn,
    const char *chief, uint64_t chief_incarnation,
    uint8_t nonces[2 * PASCI_AUTH_NONCE], nng_msg **out);

/* Whether the AUTH reply proves that the server holds key. */
bool pasci_auth_reply_ok(const pasci_key *key,
    const uint8_t nonces[2 * PASCI_AUTH_NONCE], const pasci_wire_msg *reply);

#endif
