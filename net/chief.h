/*
 * One chief per cluster: who a chief is, and the seat a ps or worker
 * keeps for the one chief it serves.
 *
 * A chief's identity is its task address in the cluster (TF_CONFIG's
 * chief, "tcp://host:port"; "host H pid P" when the cluster names no
 * chief) and an incarnation: random, chosen once per process, like a
 * server's (DESIGN.md section 5). A chief's connections send both in
 * their HELLO (and, with a cluster key, in their AUTH); other clients (a
 * worker's link to a ps) send neither and are not affected.
 *
 * A server takes the first chief that proves itself (the key, when there
 * is one) and then:
 *   - the same chief (name and incarnation) on more connections: served;
 *   - the same name with another incarnation (the chief restarted after a
 *     crash, or its launcher restarted it elsewhere under the same
 *     address): served from then on, and the old incarnation's remaining
 *     connections are closed; an incarnation replaced this way is refused
 *     if it comes back (a partitioned old chief cannot take the seat
 *     back);
 *   - another name while the chief it serves holds a connection: refused,
 *     with a message naming the chief it serves;
 *   - another name once every connection of the served chief is gone: it
 *     becomes the chief served.
 * So two chiefs started with the same TF_CONFIG are one chief restarting:
 * the later one wins.
 *
 * The seat's lock is held only to read or change it; nng calls and
 * logging happen outside it. Thread-safe.
 */
#ifndef PASCI_CHIEF_H
#define PASCI_CHIEF_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stdint.h>

#include "pasco/cluster.h"

#define PASCI_CHIEF_NAME_MAX 160

typedef struct pasci_chief {
	char     name[PASCI_CHIEF_NAME_MAX];
	uint64_t incarnation;
} pasci_chief;

/* This process as the chief of cluster (see the top). */
void pasci_chief_self(const pasco_cluster *cluster, pasci_chief *out);

/* This process's incarnation as a chief (the one pasci_chief_self
 * gives): closures it sends over bulk links carry it (chief_incarnation),
 * for such a link has no handshake of its own to name the chief. */
uint64_t pasci_chief_self_incarnation(void);

typedef struct pasci_chief_seat pasci_chief_seat;

/* what names the server in log lines and refusals ("worker at
 * tcp://0.0.0.0:2222"), copied. */
int  pasci_chief_seat_create(pasci_chief_seat **out, const char *what);
void pasci_chief_seat_destroy(pasci_chief_seat *s);

/* The chief (name, incarnation) claims the seat for pipe, which has
 * proved the key (or the server has none): true when it may be served
 * (the pipe is then the chief's); false with the reason in why when it is
 * refused (the refusal is logged, at most every 10 s). */
bool pasci_chief_seat_claim(pasci_chief_seat *s, nng_pipe pipe,
    const char *name, uint64_t incarnation, char *why, size_t len);

/* Forgets pipe (it was closed). */
void pasci_chief_seat_forget(pasci_chief_seat *s, nng_pipe pipe);

/* The chief served now, with how many connections it holds (0: none, or
 * it left). Returns false when no chief was ever served. */
bool pasci_chief_seat_current(
    pasci_chief_seat *s, pasci_chief *out, int *connections);

/* Whether a request that names the chief of incarnation inc (0: none, as
 * a client that is no chief) may be served: it names none, or the chief
 * served now. Else false, with the refusal in why. */
bool pasci_chief_seat_admits(
    pasci_chief_seat *s, uint64_t inc, char *why, size_t len);

#endif
