/*
 * Bulk transfers: variable requests between a process and a ps over plain
 * TCP connections beside nng, whatever their size (client/requests.c sends
 * a step's calls to one ps as one VAR_MULTI request here). nng 1.5.2
 * zero-fills every message buffer it allocates and a message must hold a
 * copy of the tensor, so a 4 MB pull over nng makes two extra passes over
 * the data, and a small call costs its client a hop through nng's threads
 * each way; here frames are written from the tensors' own memory (writev)
 * by the caller's thread and read straight into the buffer the received
 * tensors view.
 *
 * A frame is a u64 big-endian length followed by a wire body, exactly as
 * an nng message body (incarnation | header length | header | tensors).
 * One request at a time per connection; the reply comes back on it. A ps
 * gives its bulk address (pasci_bulk_server_addr) to its rpc server as the
 * advert of its HELLO replies (rpc.h), and pasci_bulk_call_server reads it
 * there, so nothing else needs configuring; where there is none (inproc)
 * callers use nng.
 *
 * TLS: bulk connections are plain TCP, so a ps whose own URL is tls+tcp
 * opens no bulk server and advertises nothing; its clients then find no
 * advert (PASCO_ENOTFOUND) and send everything over nng, which is TLS.
 * Encrypting bulk frames too would mean a TLS stack beside nng's; large
 * tensors over TLS are slower instead.
 *
 * Files: bufcache.c (big buffers, bufcache.h), bulk_frame.c (frame I/O,
 * bulk_frame.h), bulk_server.c, bulk_client.c, bulk_async.c (calls that
 * do not wait: closures to workers).
 */
#ifndef PASCI_BULK_H
#define PASCI_BULK_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "rpc.h"
#include "wire.h"

typedef struct pasci_bulk_server pasci_bulk_server;

/* Answers req: either returns a reply message (its body is sent), or
 * fills reply (its tensors are sent from their memory) and returns NULL. */
typedef nng_msg *(*pasci_bulk_handler)(
    void *arg, const pasci_wire_msg *req, pasci_wire_builder *reply);

/* Listens on host, on a port the system picks; requests stamped for
 * another incarnation are refused as rpc_server.c refuses them. With key
 * (copied; NULL: none) every connection must first prove it
 * (pasci_bulk_auth_accept); one that does not is logged with its address
 * and closed, no frame read. */
int pasci_bulk_server_open(pasci_bulk_server **out, const char *host,
    uint64_t incarnation, pasci_bulk_handler handler, void *arg,
    const pasci_key *key);

/* The same, the port fixed by environment variable port_env when it is
 * set (a ps's: PASCO_BULK_PORT, as pasci_bulk_server_open; a worker's:
 * PASCO_WORKER_BULK_PORT, so both can run on one host with one
 * environment). */
int pasci_bulk_server_open_as(pasci_bulk_server **out, const char *host,
    const char *port_env, uint64_t incarnation, pasci_bulk_handler handler,
    void *arg, const pasci_key *key);

/* "host:port" to connect to over TCP. */
const char *pasci_bulk_server_addr(const pasci_bulk_server *s);

/* The advert for the rpc server beside it: ":port" (clients reach it at
 * the host they reached the rpc server at), then " @name" when it also
 * listens on a Unix socket of that abstract name for clients on this
 * host. */
const char *pasci_bulk_server_advert(const pasci_bulk_server *s);

/* Whether this process makes local links (PASCO_BULK_LOCAL is not "0"):
 * its bulk servers listen on a Unix socket too, and its clients reach a
 * server that advertises one there when it is on this host. Read at each
 * use, so a benchmark can compare both in one process. */
static inline bool
pasci_bulk_local_enabled(void)
{
	const char *v = getenv("PASCO_BULK_LOCAL");
	return v == NULL || strcmp(v, "0") != 0;
}

/* The abstract Unix socket address of name, and its length. */
void pasci_bulk_local_addr(
    struct sockaddr_un *a, socklen_t *alen, const char *name);

/* Stops accepting, drops every connection and joins their threads. */
void pasci_bulk_server_close(pasci_bulk_server *s);

/* When a bulk server of this process last took a connection or a frame,
 * a stranger's included (pasci_now_ms; 0: never): the quiet after a burst
 * on the bulk port counts as the RPC server's does
 * (pasci_rpc_server_quiet_ms), so its memory is given back too.
 * Thread-safe. */
int64_t pasci_bulk_last_traffic_ms(void);

/* When a bulk server of this process last took a request from a member
 * (a peer that proved the key, or any peer without one), pasci_now_ms;
 * 0: never. Variable requests come here, not to the RPC server: a task's
 * idle time (its chief timeout) counts them too. Thread-safe. */
int64_t pasci_bulk_last_request_ms(void);

/* Idle connections to one server, reused by later calls. */
typedef struct pasci_bulk_pool pasci_bulk_pool;

/* A pool whose connections prove key (copied; NULL: none) when made. */
int  pasci_bulk_pool_create(pasci_bulk_pool **out, const pasci_key *key);
void pasci_bulk_pool_destroy(pasci_bulk_pool *p);

/* Sends req (stamped with incarnation) to addr and waits for the reply,
 * at most timeout_ms in all. On success *reply is decoded (its tensors
 * view the received frame). Errors: PASCO_ENOTFOUND when no connection
 * could be made within 3 s (nothing was sent), PASCO_EUNAVAILABLE
 * (connection lost), PASCO_ETIMEDOUT, PASCO_EPROTO; detail says which. */
int pasci_bulk_call(pasci_bulk_pool *p, const char *addr, uint64_t incarnation,
    pasci_wire_builder *req, int64_t timeout_ms, pasci_wire_msg *reply,
    char *detail, size_t len);

/* Sends b (stamped with the server's incarnation) over a bulk connection
 * to the server c is connected to, at the address it advertises in its
 * HELLO replies, with c's cluster key, and waits for the reply; on
 * PASCO_OK *reply is the caller's. PASCO_ENOTFOUND when it advertises none or
 * its bulk port cannot be reached (nothing was sent: use nng; after the
 * latter, c's advert is forgotten, so nng carries everything until it
 * reconnects); PASCO_EUNAVAILABLE when c is not connected; PASCO_EABORTED when
 * the server restarted (the request did not run); otherwise as
 * pasci_bulk_call. Blocks. Thread-safe. */
int pasci_bulk_call_server(pasci_rpc_client *c, pasci_wire_builder *b,
    int64_t timeout_ms, pasci_wire_msg *reply, char *detail, size_t len);

/* The same call in two halves, so that requests to several servers are in
 * flight together: begin sends b (then no longer needed) and fills p;
 * finish waits for the reply. A begin that fails (as the call would,
 * ENOTFOUND meaning nothing was sent) needs no finish; one that succeeds
 * needs exactly one. */
typedef struct pasci_bulk_pending {
	void             *server; /* private: the pool held */
	void             *link;   /* private: the connection */
	int64_t           start_ns; /* private: begun at, for metrics */
	pasci_rpc_client *client;
	int               fd; /* its socket's */
	int64_t           deadline;
	bool              reused; /* private: an idle connection taken */
	int               err; /* private: its batched send failed (finish) */
} pasci_bulk_pending;

int pasci_bulk_begin(pasci_rpc_client *c, pasci_wire_builder *b,
    int64_t timeout_ms, pasci_bulk_pending *p, char *detail, size_t len);
int pasci_bulk_finish(
    pasci_bulk_pending *p, pasci_wire_msg *reply, char *detail, size_t len);

/* begin of a whole encoded message for the server of incarnation (it is
 * stamped with it here, and stays the caller's): PASCO_EABORTED, nothing
 * sent, when c is connected to another incarnation by now (a call
 * registered for a server must never run on its successor). */
int pasci_bulk_begin_msg(pasci_rpc_client *c, nng_msg *msg,
    uint64_t incarnation, int64_t timeout_ms, pasci_bulk_pending *p,
    char *detail, size_t len);

/* Batches: between pasci_bulk_batch_start and pasci_bulk_batch_send, the
 * requests this thread begins (pasci_bulk_begin) are not written when one
 * small write carries them (a request under PASCI_BULK_SHM_MIN bytes, or
 * a local link's request in its region, bulk_frame.h), only sent on their
 * way; pasci_bulk_batch_send writes them all with one system call
 * (io_uring; one write after the other where there is none), so that the
 * servers they wake run once every request is out, not each between two
 * writes (on a busy CPU each woken server takes the sender's CPU: one
 * context switch per request instead of one per batch). p[0..n) are the
 * requests begun since the start that await their finish (others may be
 * among them). A write that fails on an idle connection taken from the
 * pool is made again on a fresh one, as begin does; any other failure is
 * the request's finish's (its wait_any returns it at once).
 * PASCO_BULK_BATCH=0 (read once) writes each request as it is begun. Not
 * thread-safe: start and send on one thread, with nothing between them
 * but begins. */
void pasci_bulk_batch_start(void);
void pasci_bulk_batch_send(pasci_bulk_pending *const *p, size_t n);

/* Instead of finish: the reply is not wanted (its call failed otherwise);
 * the connection is closed. */
void pasci_bulk_abandon(pasci_bulk_pending *p);

/* Of the n requests p[0..n) sent and not finished, the index of one whose
 * reply has begun to arrive (or whose connection failed), waiting until
 * the earliest deadline: one wake-up for the replies of several servers
 * that arrive together. After that deadline, or with n 1, 0: its finish
 * says what became of it. */
size_t pasci_bulk_wait_any(pasci_bulk_pending *const *p, size_t n);

/* Waits until every one of p[0..n) has begun to arrive (or its connection
 * failed) or the earliest deadline passes, with one wake-up for all of
 * them where this thread's io_uring ring can (bulk_ring.c); then wait_any
 * and finish take them without waiting. Returns at once where it cannot
 * (no such ring, n over 16, a request already failed, or
 * PASCO_BULK_BATCH=0): wait_any waits then, one wake-up per reply that
 * comes alone. */
void pasci_bulk_wait_all(pasci_bulk_pending *const *p, size_t n);

/* pasci_rpc_call_async, over the bulk port the server of c advertises
 * when it has one (bulk_async.c): sent from this thread, the reply read by
 * a thread attached to c, done run there, with the same contract (exactly
 * once; a lost connection to the server, the deadline, an abandon or the
 * client's close complete it as they complete c's own calls). Over nng
 * when the server advertises no bulk port (TLS, an older server), when
 * its port cannot be reached, or with PASCO_BULK_CLOSURES=0. req is taken
 * over. The coordinator sends closures this way. */
void pasci_rpc_call_fast(pasci_rpc_client *c, nng_msg *req, int64_t timeout_ms,
    pasci_rpc_done_fn done, void *arg);

/* Whether pasci_rpc_call_fast may use bulk links (PASCO_BULK_CLOSURES is
 * not "0"); read at each call. */
bool pasci_bulk_closures_enabled(void);

/* A tensor (not zero-filled) in the big-buffer cache's memory
 * (bufcache.h): for data a ps is about to send. */
int pasci_bulk_tensor(
    pasco_tensor **out, pasco_dtype dtype, int32_t rank, const int64_t *shape);

/* Calls answered over bulk connections by this process, for tests. */
uint64_t pasci_bulk_calls_done(void);

#endif
