/*
 * A closure's call on a worker: its arguments bound to this worker's
 * resources and ps clients (call.c); run by worker_server.c.
 */
#ifndef PASCI_WORKER_CALL_H
#define PASCI_WORKER_CALL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "pasco/function.h"
#include "resources.h"
#include "rpc.h"
#include "wire.h"

/* The closures the coordinator asked to cancel: ids lo to hi (one
 * coordinator's range; a CANCEL from another replaces it). 0, 0: none. */
typedef struct pasci_cancel_mark {
	pthread_mutex_t mu;
	uint64_t        lo, hi; /* protected by mu */
} pasci_cancel_mark;

void pasci_cancel_mark_init(pasci_cancel_mark *m);
void pasci_cancel_mark_fini(pasci_cancel_mark *m);
void pasci_cancel_mark_set(pasci_cancel_mark *m, uint64_t lo, uint64_t hi);
/* Whether closure id (0: none) is to be cancelled. NULL m: never. */
bool pasci_cancel_mark_covers(pasci_cancel_mark *m, uint64_t id);

/* What every call on a worker sees; owned by the worker server, read only
 * while it serves. */
typedef struct pasci_call_env {
	resource_table    *resources;
	pasci_rpc_client **ps; /* one client per ps task */
	size_t             nps;
	int32_t            index;
	int32_t            num_workers;
	pasci_cancel_mark *cancel; /* may be NULL */
} pasci_call_env;

typedef struct call_arg {
	pasci_arg_kind      kind;
	const pasco_tensor *tensor;
	pasco_variable     *variable;
	resource           *res;
} call_arg;

struct pasco_call {
	const pasci_call_env *env;
	const char           *fn_name;
	size_t                nargs;
	call_arg             *args;
	pasco_value          *result;
	uint32_t              repetition; /* in a packed closure */
	uint64_t              closure_id; /* the coordinator's; 0: none */
	char                  error[1024];
};

/* Binds req's arguments into call (call->env and fn_name set by the
 * caller). On failure call->error says which argument and why; the caller
 * still runs pasci_call_fini. */
int pasci_call_bind(pasco_call *call, const pasci_wire_msg *req);

/* Releases the bound arguments and the result. */
void pasci_call_fini(pasco_call *call);

#endif
