/*
 * Frame I/O for bulk connections (bulk.h), shared by the bulk server and
 * the client pool: a frame is a u64 big-endian length, then a wire body.
 * Sockets are non-blocking; every function waits with poll() against an
 * absolute deadline (PASCI_BULK_NO_DEADLINE: none). Each call touches only
 * its link: one thread per connection at a time.
 *
 * Local links. A connection over a Unix socket (a client and a ps on one
 * host, bulk.h) carries a body of PASCI_BULK_SHM_MIN bytes or more through
 * shared memory: each end writes its frames into a region of its own, a
 * sealed memfd of PASCI_BULK_REGION bytes mapped read-write, whose fd it
 * passes (SCM_RIGHTS) with its first such frame; the peer maps it
 * read-only. Such a frame's length word has bit 63 set and nothing
 * follows it on the socket when the body fits the region; a longer body
 * goes in halves of the region, alternately, each after the first
 * announced by one byte, and the receiver answers each half it has copied
 * out with one byte while the sender still needs that half. Requests and
 * replies alternate on a connection, so a region is free again by the
 * time its owner sends its next frame. The receiver copies a body out
 * before it decodes anything, so a peer writing its region meanwhile can
 * only spoil the values it sends; it maps only a memfd sealed against
 * shrinking (a shrunk mapping would fault) of exactly the region's size.
 */
#ifndef PASCI_BULK_FRAME_H
#define PASCI_BULK_FRAME_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "key.h"
#include "wire.h"

#define PASCI_BULK_NO_DEADLINE INT64_MAX

#define PASCI_BULK_REGION (4u << 20) /* bytes, a local link's region */
#define PASCI_BULK_SHM_MIN 16384     /* a shorter body goes inline */

/* One end of a bulk connection. */
typedef struct pasci_bulk_link {
	int            fd;
	bool           local;   /* a Unix socket: big bodies by region */
	int            tx_fd;   /* this end's region until passed, or -1 */
	uint8_t       *tx;      /* this end's region, or NULL: none yet */
	bool           tx_sent; /* the peer has it */
	const uint8_t *rx;      /* the peer's region, or NULL: none yet */
	bool           spin;    /* a client's: a reply wait spins first */
} pasci_bulk_link;

/* A link over connected socket fd (local: a Unix socket), which it owns
 * from now on. */
void pasci_bulk_link_init(pasci_bulk_link *l, int fd, bool local);

/* Closes its socket and unmaps its regions. */
void pasci_bulk_link_fini(pasci_bulk_link *l);

/* Waits until fd is ready for events (poll's) or the deadline passes:
 * PASCO_ETIMEDOUT, PASCO_EUNAVAILABLE on a poll error. */
int pasci_bulk_wait_fd(int fd, short events, int64_t deadline_ms);

/* Sends a frame from builder b stamped with incarnation: its head, then
 * each tensor from its own memory. b is not changed. Returns
 * PASCO_EUNAVAILABLE (connection lost), PASCO_ETIMEDOUT or
 * PASCO_ENOMEM. */
int pasci_bulk_send_builder(pasci_bulk_link *l, pasci_wire_builder *b,
    uint64_t incarnation, int64_t deadline_ms);

/* Sends a frame whose body is msg's (a complete wire body). msg stays the
 * caller's. Errors as pasci_bulk_send_builder. */
int pasci_bulk_send_msg(pasci_bulk_link *l, nng_msg *msg, int64_t deadline_ms);

/* Held sends, for a batch (bulk_client.c, pasci_bulk_batch_start): while
 * this thread holds, a frame that takes one small write is not written but
 * kept, its bytes copied: a frame under PASCI_BULK_SHM_MIN bytes (its
 * length word and body), or a local link's frame in its region after the
 * first (its length word; the body is in the region already). A bigger
 * frame, or one past PASCI_BULK_HELD_MAX kept, is sent as it comes. */
#define PASCI_BULK_HELD_MAX 16

typedef struct pasci_bulk_held {
	pasci_bulk_link *l;
	uint8_t         *bytes; /* what the socket is to carry, malloc'd */
	size_t           len;
	const uint8_t   *body; /* the frame's body: in bytes, or l's region */
	size_t           body_len;
	int              err; /* set by whoever writes it */
} pasci_bulk_held;

/* Starts holding this thread's sends. */
void pasci_bulk_hold_start(void);

/* Stops holding; the frames kept since the start, in the order they came,
 * into out (PASCI_BULK_HELD_MAX at most): their bytes are the caller's to
 * write and free. Returns their count. */
size_t pasci_bulk_hold_stop(pasci_bulk_held *out);

/* Writes each of h[0..n) (PASCI_BULK_HELD_MAX at most) on its link's
 * socket with one io_uring submission on this thread's ring (bulk_ring.c),
 * never waiting (a full socket answers -EAGAIN): what each got written
 * into done[] (bytes, or -errno), for the caller to write the rest. false
 * when this thread has no ring (no io_uring here): nothing written. */
bool pasci_bulk_ring_send(pasci_bulk_held *h, size_t n, ssize_t *done);

/* Waits until each of fds[0..n) (PASCI_BULK_HELD_MAX at most) is
 * readable, or the deadline passes, through this thread's ring where it
 * defers its wake-ups (Linux 6.1+): one wake-up for all of them, not one
 * per socket as they become ready. 0 once none is waited for any more,
 * ready or not; -1 when this thread has no such ring (nothing waited). */
int pasci_bulk_ring_wait_all(const int *fds, size_t n, int64_t deadline_ms);

/* Whether this thread's ring defers its wake-ups (wait_all wakes once). */
bool pasci_bulk_ring_defers(void);

/* Spinning before a reply wait sleeps (bulk_spin.c): polls fds[0..n)
 * (PASCI_BULK_HELD_MAX at most) without sleeping for up to
 * PASCO_BULK_SPIN_US microseconds (default 60, 0: never) until every one
 * is readable. true when they all are; false when the spin ran out, or
 * did not run: the thread may run on one CPU only, or it is backing off
 * after spins that ended asleep. The caller then waits as it would have.
 * Never blocks. Thread-safe: its state is the calling thread's. */
bool pasci_bulk_spin_ready(const int *fds, size_t n);

/* The microseconds a spin lasts (PASCO_BULK_SPIN_US, read once). */
int pasci_bulk_spin_us(void);

/* Sets them for this process (tests, benchmarks); -1: the environment's
 * again. */
void pasci_bulk_spin_set_us(int us);

/* The calling thread's spins: seen ready, run out, not run (backing off,
 * one CPU). */
typedef struct pasci_spin_stats {
	uint64_t hits, misses, skipped, one_cpu;
} pasci_spin_stats;
pasci_spin_stats pasci_bulk_spin_stats(void);

/* Writes len bytes of buf on l's socket before the deadline (nothing
 * else: no length word). PASCO_EUNAVAILABLE or PASCO_ETIMEDOUT. */
int pasci_bulk_send_bytes(
    pasci_bulk_link *l, const void *buf, size_t len, int64_t deadline_ms);

/* Sends a frame whose body is body[0..len). Errors as
 * pasci_bulk_send_builder. */
int pasci_bulk_send_body(
    pasci_bulk_link *l, const void *body, size_t len, int64_t deadline_ms);

/* Receives one frame and decodes it into m; its tensors view the frame,
 * held in a pasci_bufcache buffer when cached, else in malloc's memory,
 * and freed by pasci_wire_msg_fini. Returns PASCO_EUNAVAILABLE,
 * PASCO_ETIMEDOUT, PASCO_EPROTO (a bad frame) or PASCO_ENOMEM, with detail
 * (len bytes) saying which; m is then empty. */
int pasci_bulk_recv_frame(pasci_bulk_link *l, pasci_wire_msg *m,
    int64_t deadline_ms, bool cached, char *detail, size_t len);

/* The cluster-key handshake (auth.h) that opens a bulk connection when
 * the server has a key, before any frame: the server sends
 * PASCI_BULK_AUTH_MAGIC and its nonce, the client its nonce and proof, the
 * server its proof. accept is the server's side, connect the client's.
 * Returns PASCO_EPRECONDITION (a wrong proof, or not this protocol),
 * PASCO_EUNAVAILABLE or PASCO_ETIMEDOUT, with detail saying which; the
 * caller then closes the connection. */
#define PASCI_BULK_AUTH_MAGIC "PASCOAU1"
int pasci_bulk_auth_accept(int fd, const pasci_key *key, int64_t deadline_ms,
    char *detail, size_t len);
int pasci_bulk_auth_connect(int fd, const pasci_key *key, int64_t deadline_ms,
    char *detail, size_t len);

#endif
