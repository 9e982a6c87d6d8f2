/* The ps's requests on dynamic embedding tables (ps_dynamic.c). */
#ifndef PASCO_PS_DYNAMIC_H
#define PASCO_PS_DYNAMIC_H

#include <stddef.h>

#include "dyn_table.h"
#include "store.h"
#include "wire.h"

/* The reply to req when it is about a dynamic table of set (a create with
 * Dynamic options, DYN_IMPORT, DYN_STATS, or any method on a table's
 * name), else NULL: the request is the store's. max_bytes bounds what one
 * request may make the ps hold (PASCO_MAX_VARIABLE_MB). */
nng_msg *pasci_ps_dynamic(pasci_dyn_set *set, ps_store *store,
    const pasci_wire_msg *req, size_t max_bytes);

#endif
