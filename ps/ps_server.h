/* The ps server, started by pasco_server_start / pasco_main. */
#ifndef PASCO_PS_SERVER_H
#define PASCO_PS_SERVER_H

#include <stdint.h>

#include "budget.h"
#include "rpc.h"

typedef struct ps_server ps_server;

/* Listens on url (where to listen: see pasci_listen_url) with nthreads
 * handler threads, serving only connections that prove key (NULL: any;
 * see net/auth.h), on its rpc and bulk ports alike. */
int pasci_ps_server_start(
    ps_server **out, const char *url, int nthreads, const pasci_key *key);
uint64_t pasci_ps_server_incarnation(const ps_server *ps);
void     pasci_ps_server_stop(ps_server *ps);
/* The RPC server it answers on (for its idle time and SHUTDOWN). */
const pasci_rpc_server *pasci_ps_server_rpc(const ps_server *ps);

/* The replies of one VAR_MULTI's parts take at most the larger of
 * PASCO_MAX_VARIABLE_MB and this (512 MB): tests lower it. */
void pasci_ps_set_multi_floor(size_t bytes);

/* For tests and fuzzing (fuzz/): a ps with its store and no endpoints, to
 * be freed with pasci_ps_server_stop, and one decoded request answered as
 * the RPC server would (the reply is the caller's; NULL only when encoding
 * it failed). Thread-safe as the RPC handlers are. */
int      pasci_ps_server_create_local(ps_server **out);
nng_msg *pasci_ps_server_handle(ps_server *ps, const pasci_wire_msg *req);

/* The ps's memory budget (PASCO_MAX_PS_MB, read when it started): what
 * its variables, slots and dynamic tables hold, and the most they held. */
const pasci_budget *pasci_ps_server_budget(const ps_server *ps);

#endif
