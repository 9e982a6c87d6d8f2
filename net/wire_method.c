/*
 * The request kinds: pasci_method (wire.h) tied to the schema's Method
 * (schemas/wire.proto) number by number, at compile time, with each
 * kind's name in the schema and the server that answers it. The codec
 * (wire.c, wire_build.c) converts one enum into the other by its number;
 * a pair that disagrees, or a kind of either enum missing from METHODS
 * below, does not compile, and tests/net/test_wire.c checks that the
 * schema has no value this table lacks. Constant tables: any thread.
 *
 * Adding a request kind: docs/ARCHITECTURE.md, "Adding a request kind".
 */
#include "wire.h"

#include <stddef.h>

#include "wire.pb-c.h"

/* X(ours, the schema's, who answers it) for every number either enum
 * has. */
#define METHODS(X)                                                            \
	X(NONE, METHOD_NONE, NOBODY)                                          \
	X(HELLO, HELLO, RPC)                                                  \
	X(VAR_CREATE, VAR_CREATE, PS)                                         \
	X(VAR_READ, VAR_READ, PS)                                             \
	X(VAR_ASSIGN, VAR_ASSIGN, PS)                                         \
	X(VAR_ASSIGN_ADD, VAR_ASSIGN_ADD, PS)                                 \
	X(RUN, RUN, WORKER)                                                   \
	X(RESOURCE_CREATE, RESOURCE_CREATE, WORKER)                           \
	X(RESOURCE_RELEASE, RESOURCE_RELEASE, WORKER)                         \
	X(VAR_GATHER, VAR_GATHER, PS)                                         \
	X(VAR_SCATTER_ADD, VAR_SCATTER_ADD, PS)                               \
	X(VAR_APPLY, VAR_APPLY, PS)                                           \
	X(VAR_APPLY_SPARSE, VAR_APPLY_SPARSE, PS)                             \
	X(CKPT_SAVE, CKPT_SAVE, PS)                                           \
	X(VAR_SET_SLOTS, VAR_SET_SLOTS, PS)                                   \
	X(RUN_BATCH, RUN_BATCH, WORKER)                                       \
	X(SHUTDOWN, SHUTDOWN, RPC)                                            \
	X(AUTH, AUTH, RPC)                                                    \
	X(VAR_FETCH_ADD, VAR_FETCH_ADD, PS)                                   \
	X(SYNC_FLUSH, SYNC_FLUSH, PS)                                         \
	X(RESOURCE_READ, RESOURCE_READ, WORKER)                               \
	X(CANCEL, CANCEL, WORKER)                                             \
	X(VAR_MULTI, VAR_MULTI, PS)                                           \
	X(DYN_IMPORT, DYN_IMPORT, PS)                                         \
	X(DYN_STATS, DYN_STATS, PS)

/* The two enums agree, kind by kind. */
#define TIE(ours, wire, by)                                                   \
	_Static_assert(                                                       \
	    (int) PASCI_METHOD_##ours == (int) PASCO__WIRE__METHOD__##wire,   \
	    "pasci_method " #ours " is not the schema's " #wire);
METHODS(TIE)

typedef struct method_desc {
	const char     *name; /* the schema's: "VAR_CREATE" */
	pasci_served_by by;
} method_desc;

#define ROW(ours, wire, by)                                                   \
	[PASCI_METHOD_##ours] = {#wire, PASCI_SERVED_BY_##by},
static const method_desc methods[] = {METHODS(ROW)};

_Static_assert(sizeof(methods) / sizeof(methods[0]) == PASCI_METHOD_COUNT,
    "one row per request kind (PASCI_METHOD_COUNT, wire.h)");

const char *
pasci_method_name(int m)
{
	return m >= 0 && m < PASCI_METHOD_COUNT ? methods[m].name : NULL;
}

pasci_served_by
pasci_method_served_by(int m)
{
	return m >= 0 && m < PASCI_METHOD_COUNT && methods[m].name != NULL
	           ? methods[m].by
	           : PASCI_SERVED_BY_NOBODY;
}
