/*
 * The connections an nng server holds, against a stranger who opens many
 * and says nothing, or says HELLO and nothing more. A connection is a
 * stranger until it proves itself (with a cluster key: its AUTH checks
 * out; without one: it sends any message), then a member. Each kind has
 * its own cap, PASCO_MAX_CONNECTIONS (256) at once, so strangers never
 * take a member's place:
 *   - a stranger over the cap makes room by closing the oldest stranger
 *     (so a member's new connection always gets its handshake, however
 *     many strangers wait);
 *   - a stranger is closed when it has not proved itself within its
 *     deadline: PASCO_IDLE_TIMEOUT seconds (120) of opening without a
 *     key; with one, a handshake deadline of 10 s (or the idle timeout,
 *     when shorter), as on the bulk port;
 *   - a member over the cap is refused with a message that says so.
 * Both numbers are read from the environment when the table is made. A
 * member stays however quiet it is: a worker's link to a ps may rightly
 * be quiet for long.
 */
#ifndef PASCI_CONNS_H
#define PASCI_CONNS_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct pasci_conns pasci_conns;

/* The handshake deadline of a stranger on a server with a cluster key. */
#define PASCI_CONNS_HANDSHAKE_MS 10000

/* The operator's connection limits, for every port (nng here, bulk in
 * bulk_server.c): PASCO_MAX_CONNECTIONS (256) and PASCO_IDLE_TIMEOUT in
 * seconds (120; 0: none), as *max and *idle_ms. A malformed value is
 * warned about and the default used. */
void pasci_conn_limits(int *max, int64_t *idle_ms);

/* what names the server in log lines ("tcp://0.0.0.0:2222"), copied;
 * keyed: the server requires the cluster key (strangers then get the
 * handshake deadline). */
int  pasci_conns_create(pasci_conns **out, const char *what, bool keyed);
void pasci_conns_destroy(pasci_conns *c);

/* A connection opened, as a stranger; when strangers are at the cap the
 * oldest one is closed (logged at most every 10 s). Thread-safe, like
 * the rest. */
void pasci_conns_add(pasci_conns *c, nng_pipe p);

/* p proved itself: a member from now on (a cheap no-op once it is).
 * false when the members are at the cap: why then says so, naming the
 * cap, and the caller refuses p with it and closes it. */
bool pasci_conns_admit(pasci_conns *c, nng_pipe p, char *why, size_t len);

void pasci_conns_remove(pasci_conns *c, nng_pipe p);

/* Closes the strangers past their deadline; returns how many. */
int pasci_conns_sweep(pasci_conns *c);

/* Connections held now, strangers and members. */
int pasci_conns_count(pasci_conns *c);

#endif
