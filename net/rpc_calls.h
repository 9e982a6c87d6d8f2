/*
 * The calls an rpc client (rpc_client.c) has outstanding, by call id, until
 * their reply, their deadline or their connection's loss completes them.
 * Not locked: the client holds its lock around every function.
 */
#ifndef PASCI_RPC_CALLS_H
#define PASCI_RPC_CALLS_H

#include <stdbool.h>
#include <stdint.h>

#include "rpc.h"

#define PASCI_RPC_CALL_BUCKETS 256

typedef struct rpc_call {
	uint32_t          id;
	uint32_t          pipe;        /* the connection it was sent on */
	int64_t           deadline_ms; /* 0: none */
	bool              hello;       /* a handshake call: HELLO, or AUTH */
	bool              auth;
	pasci_rpc_done_fn done;
	void             *arg;
	struct rpc_call  *next; /* bucket chain */
} rpc_call;

typedef struct pasci_rpc_calls {
	uint32_t  next_id;
	rpc_call *buckets[PASCI_RPC_CALL_BUCKETS];
	size_t    ndeadlines; /* calls with a deadline */
} pasci_rpc_calls;

/* Adds call; true when it is the only one with a deadline (the timer must
 * wake). */
bool pasci_rpc_calls_insert(pasci_rpc_calls *t, rpc_call *call);

/* Removes and returns the call with id, or NULL. */
rpc_call *pasci_rpc_calls_remove(pasci_rpc_calls *t, uint32_t id);

/* Whether the call with id is outstanding. */
bool pasci_rpc_calls_has(const pasci_rpc_calls *t, uint32_t id);

/* Removes the calls sent on pipe (not 0), or expired by now (> 0), or all
 * (both 0), and returns them as a list. */
rpc_call *pasci_rpc_calls_take(pasci_rpc_calls *t, uint32_t pipe, int64_t now);

/* Removes every call but the handshakes, as a list. */
rpc_call *pasci_rpc_calls_take_calls(pasci_rpc_calls *t);

/* How many calls are outstanding. */
size_t pasci_rpc_calls_count(const pasci_rpc_calls *t);

/* A fresh call id (never 0, top bit clear). */
uint32_t pasci_rpc_calls_next_id(pasci_rpc_calls *t);

#endif
