/*
 * The wire codec: a protobuf-c Header (schemas/wire.proto) plus raw tensor
 * bytes in one nng message. The only module that touches generated code.
 *
 * Body layout: u64 incarnation | u32 header length | header | pad to 8 |
 * tensor bytes, each padded to 8. Received tensors are views into the
 * message (no copy) that keep it alive by reference.
 */
#ifndef PASCI_WIRE_H
#define PASCI_WIRE_H

#include <nng/nng.h>
#include <stdbool.h>
#include <stdint.h>

#include "pasco/constraint.h"
#include "pasco/initializer.h"
#include "pasco/optimizer.h"
#include "pasco/tensor.h"
#include "pasco/value.h"

#define PASCI_WIRE_PREFIX 12 /* incarnation + header length */
#define PASCI_PAD8(n) (((n) + 7u) & ~(size_t) 7u)

/* Pasco's message model. The codec turns these plain structs into the
 * protobuf Header of schemas/wire.proto and back; no other module sees the
 * generated types. Method numbers are the schema's: wire.c ties
 * each kind to the schema's at compile time (a kind added here, there or
 * in its table alone does not compile, or fails tests/net/test_wire.c). */
typedef enum pasci_method {
	PASCI_METHOD_NONE       = 0,
	PASCI_METHOD_HELLO      = 1, /* the reply carries the incarnation */
	PASCI_METHOD_VAR_CREATE = 2, /* ps: name, tensors[0] or init+spec */
	PASCI_METHOD_VAR_READ   = 3, /* ps: name -> tensors[0] */
	PASCI_METHOD_VAR_ASSIGN = 4, /* ps: name, tensors[0] */
	PASCI_METHOD_VAR_ASSIGN_ADD   = 5, /* ps: name, tensors[0] */
	PASCI_METHOD_RUN              = 7, /* worker: function name, args */
	PASCI_METHOD_RESOURCE_CREATE  = 8, /* worker: dataset name, resource */
	PASCI_METHOD_RESOURCE_RELEASE = 9, /* worker: resource */
	PASCI_METHOD_VAR_GATHER       = 10, /* ps: name, ids -> rows */
	PASCI_METHOD_VAR_SCATTER_ADD  = 11, /* ps: name, ids, rows, scale */
	PASCI_METHOD_VAR_APPLY        = 12, /* ps: name, opt, gradient */
	PASCI_METHOD_VAR_APPLY_SPARSE = 13, /* ps: name, opt, ids, rows */
	PASCI_METHOD_CKPT_SAVE        = 14, /* ps: file name -> json */
	PASCI_METHOD_VAR_SET_SLOTS = 15, /* ps: name, opt kind, step, slots */
	PASCI_METHOD_RUN_BATCH     = 16, /* worker: whole RUN messages */
	PASCI_METHOD_SHUTDOWN      = 17, /* any server: the chief is done */
	PASCI_METHOD_AUTH = 18, /* proof of the cluster key (auth.h) */
	PASCI_METHOD_VAR_FETCH_ADD = 19, /* ps: name, step, sync -> step */
	PASCI_METHOD_SYNC_FLUSH    = 20, /* ps: partial BSP rounds -> step */
	PASCI_METHOD_RESOURCE_READ = 21, /* worker: resource -> its value */
	PASCI_METHOD_CANCEL = 22, /* worker: closures resource..closure_id */
	PASCI_METHOD_VAR_MULTI  = 23, /* ps: parts run in order -> replies */
	PASCI_METHOD_DYN_IMPORT = 24, /* ps: a dynamic table's rows in */
	PASCI_METHOD_DYN_STATS  = 25, /* ps: a dynamic table's counts */
} pasci_method;

/* One more than the last method number: the length of every table indexed
 * by method (raise it with a new last kind). */
#define PASCI_METHOD_COUNT (PASCI_METHOD_DYN_STATS + 1)

/* Who answers a request kind. */
typedef enum pasci_served_by {
	PASCI_SERVED_BY_NOBODY = 0, /* NONE, and numbers no kind has */
	PASCI_SERVED_BY_RPC,        /* the RPC layer (rpc_server.c) */
	PASCI_SERVED_BY_PS,         /* ps/ps_server.c */
	PASCI_SERVED_BY_WORKER,     /* worker/worker_server.c */
} pasci_served_by;

/* m's name in the schema ("VAR_CREATE"), or NULL for a number no kind
 * has (any int: a request's number is not range-checked). Thread-safe. */
const char *pasci_method_name(int m);

/* Who answers m (PASCI_SERVED_BY_NOBODY for a number no kind has).
 * Thread-safe. */
pasci_served_by pasci_method_served_by(int m);

/* The most parts a VAR_MULTI request may have. */
#define PASCI_WIRE_MAX_PARTS 4096

/* A consistency mode and a step's place in it (schemas/wire.proto, Sync). */
typedef struct pasci_wire_sync {
	int32_t mode; /* pasco_consistency */
	int32_t replicas, staleness;
	int64_t version;
	bool    dropped, done;
} pasci_wire_sync;

/* A tensor's dtype and shape, as a message describes one. */
typedef struct pasci_wire_spec {
	pasco_dtype dtype;
	int32_t     rank;
	int64_t     shape[PASCO_MAX_RANK];
} pasci_wire_spec;

/* One shard of a variable: rows [offset, offset + rows) of the whole, held
 * on ps_task under name. */
typedef struct pasci_wire_shard {
	const char *name;
	int32_t     ps_task;
	int64_t     offset, rows;
} pasci_wire_shard;

/* A variable passed to a function: the whole variable and its shards. */
typedef struct pasci_wire_var {
	const char       *name;
	pasci_wire_spec   spec;
	size_t            nshards;
	pasci_wire_shard *shards;
	pasci_wire_sync sync; /* mode, replicas, staleness: all 0 if absent */
	bool            dynamic; /* keys routed by hash, a shard per ps */
} pasci_wire_var;

typedef enum pasci_arg_kind {
	PASCI_ARG_TENSOR   = 0,
	PASCI_ARG_VARIABLE = 1,
	PASCI_ARG_RESOURCE = 2,
} pasci_arg_kind;

/* One argument of a RUN. */
typedef struct pasci_wire_arg {
	pasci_arg_kind kind;
	uint32_t       tensor;   /* TENSOR: index into the tensors */
	pasci_wire_var variable; /* VARIABLE */
	uint64_t       resource; /* RESOURCE: the worker's resource id */
} pasci_wire_arg;

/* How a ps fills a new shard: rows [row_offset, ...) of a variable of
 * full_shape initialised by init. */
typedef struct pasci_wire_init {
	pasco_initializer init;
	pasco_constraint  constraint; /* applied after each update */
	int32_t           full_rank;
	int64_t           full_shape[PASCO_MAX_RANK];
	int64_t           row_offset;
} pasci_wire_init;

/* A dynamic embedding table's options (VAR_CREATE; ps/dyn_table.h). */
typedef struct pasci_wire_dynamic {
	int64_t dim, min_count, evict_after, max_rows;
	bool    default_zeros;
} pasci_wire_dynamic;

/* Everything a message says besides its tensors. Strings are never NULL
 * in a decoded message ("" when absent); optional parts are NULL when
 * absent. In a builder, what the fields point to is borrowed until the
 * builder is encoded. */
typedef struct pasci_wire_header {
	pasci_method           method;
	int32_t                status; /* pasco_err; replies only */
	const char            *error;  /* detail for a non-zero status */
	const char            *name;   /* variable, function or dataset */
	size_t                 nargs; /* RUN; builders: pasci_wire_add_arg_* */
	pasci_wire_arg        *args;
	uint64_t               resource;
	double                 learning_rate;
	bool                   want_result;
	int32_t                worker_index, num_workers;
	uint64_t               closure_id;
	bool                   stale_incarnation; /* the request did not run */
	const pasci_wire_init *init;        /* VAR_CREATE without a tensor */
	const pasci_wire_spec *spec;        /* VAR_CREATE with init */
	double                 scale;       /* VAR_SCATTER_ADD */
	const pasco_optimizer *opt;         /* VAR_APPLY*, VAR_SET_SLOTS */
	const char            *json;        /* CKPT_SAVE reply */
	int64_t                step;        /* SET_SLOTS, APPLY*, FETCH_ADD */
	uint32_t               repeat;      /* RUN: times to call (0: 1) */
	bool                   not_run;     /* RUN reply in a batch: skipped */
	bool                   sum_results; /* RUN: summed calls' numbers */
	const pasci_wire_sync *sync;        /* VAR_APPLY*, VAR_FETCH_ADD */
	const char            *chief;       /* HELLO, AUTH from a chief */
	uint64_t               chief_incarnation;
	/* VAR_MULTI request, decoded: how many parts (pasci_wire_msg_part);
	 * in a builder, pasci_wire_add_part sets it */
	size_t                    nparts;
	const pasci_wire_dynamic *dynamic; /* VAR_CREATE of a dynamic table */
	bool find_only;                    /* VAR_GATHER, dynamic: no insert */
} pasci_wire_header;

/* A decoded message. */
typedef struct pasci_wire_msg {
	const pasci_wire_header *hdr;
	pasco_tensor           **tensors; /* one reference each */
	size_t                   ntensors;
	uint64_t                 incarnation;
	void                    *priv; /* the codec's: what hdr points into */
	void *arena; /* the codec's: the memory of priv and hdr, or NULL */
} pasci_wire_msg;

/* Decodes msg, taking it over whatever the outcome. On failure (PASCO_EPROTO
 * with a message in err) out is left empty. */
int pasci_wire_decode(
    pasci_wire_msg *out, nng_msg *msg, char *err, size_t errlen);

void pasci_wire_msg_fini(pasci_wire_msg *m);

/* Batches (RUN_BATCH) carry whole messages as u8 tensors. These decode one
 * such part in place (its tensors view the part, no copy), and turn a
 * message into a u8 tensor viewing it (taking msg over, no copy). */
int pasci_wire_decode_part(
    pasci_wire_msg *m, const pasco_tensor *part, char *err, size_t errlen);
int pasci_wire_msg_view(nng_msg *msg, pasco_tensor **out);

/* Part k of a decoded VAR_MULTI request m (k < m->hdr->nparts) as a
 * message of its own in *out: its header, and its tensors (references to
 * m's). *out points into m: fini it (pasci_wire_msg_fini) before m.
 * PASCO_EPROTO (err says why) for a part whose header does not decode. */
int pasci_wire_msg_part(const pasci_wire_msg *m, size_t k, pasci_wire_msg *out,
    char *err, size_t errlen);

/* Reads or writes the incarnation prefix of an encoded message. */
uint64_t pasci_wire_get_incarnation(nng_msg *msg);
void     pasci_wire_set_incarnation(nng_msg *msg, uint64_t incarnation);

/* Builds a message. The header fields are set directly on b->hdr; the
 * tensors, the arguments and the result through the functions below. */
struct pasci_wire_node;
typedef struct pasci_wire_builder {
	pasci_wire_header           hdr;
	pasco_tensor              **tensors; /* references held until fini */
	size_t                      ntensors, tensor_cap;
	struct pasci_wire_node     *nodes; /* the result, in pre-order */
	size_t                      nnodes, node_cap;
	size_t                      arg_cap; /* of hdr.args, owned */
	void                      **allocs;  /* freed with the builder */
	size_t                      nallocs, alloc_cap;
	struct pasci_wire_builder **parts; /* VAR_MULTI: borrowed */
	size_t                      part_cap;
	/* Joined tensors (pasci_wire_add_joined), when there are any: per
	 * tensor, what follows it (held; NULL: nothing) and its whole length
	 * as the message declares it. tensor_cap entries each. */
	pasco_tensor **tails;
	int64_t       *joined;
	size_t         tail_cap;
	bool           oom;
} pasci_wire_builder;

void pasci_wire_builder_init(pasci_wire_builder *b, pasci_method m);
void pasci_wire_builder_fini(pasci_wire_builder *b);

/* Appends a tensor (holding a reference); *index gets its position. */
void pasci_wire_add_tensor(
    pasci_wire_builder *b, const pasco_tensor *t, uint32_t *index);

/* Appends a u8 tensor whose bytes are head's (a multiple of 8 bytes),
 * then tail's, then zeros to a multiple of 8: one whole message sent from
 * two buffers, as a VAR_MULTI reply's read part is sent from the header
 * built for it and the variable's own memory. References held. */
void pasci_wire_add_joined(
    pasci_wire_builder *b, const pasco_tensor *head, const pasco_tensor *tail);

/* The bytes tensor i of b takes in the message (unpadded), and its tail
 * (NULL for a plain tensor). */
size_t pasci_wire_tensor_bytes(const pasci_wire_builder *b, size_t i);
const pasco_tensor *pasci_wire_tensor_tail(
    const pasci_wire_builder *b, size_t i);

/* Appends part (a request of its own, its method and fields set; borrowed
 * until b is encoded) to b, a VAR_MULTI request: its header goes into
 * b's parts and its tensors after b's (references held). part must have
 * no parts, results or arguments of its own. */
void pasci_wire_add_part(pasci_wire_builder *b, pasci_wire_builder *part);

/* Appends v in pre-order to the result nodes, its tensors to the tensors. */
void pasci_wire_add_value(pasci_wire_builder *b, const pasco_value *v);

/* Appends a RUN argument. */
void pasci_wire_add_arg_tensor(pasci_wire_builder *b, const pasco_tensor *t);
/* Appends a VARIABLE argument: the whole variable's name and spec, with
 * nshards shards that pasci_wire_set_arg_shard then describes (k from 0).
 * name, shape and the shard names are borrowed until the builder is
 * encoded. */
void pasci_wire_add_arg_variable(pasci_wire_builder *b, const char *name,
    pasco_dtype dtype, int32_t rank, const int64_t *shape, int32_t nshards);
void pasci_wire_set_arg_shard(pasci_wire_builder *b, int32_t k,
    const char *name, int32_t ps_task, int64_t offset, int64_t rows);
/* Sets the consistency carried by the last VARIABLE argument. */
void pasci_wire_set_arg_sync(
    pasci_wire_builder *b, const pasci_wire_sync *sync);
void pasci_wire_add_arg_resource(pasci_wire_builder *b, uint64_t resource);

/* Encodes into a new message (incarnation prefix 0). PASCO_ENOMEM. */
int pasci_wire_encode(pasci_wire_builder *b, nng_msg **out);

/* For writers that send the tensors from their own memory
 * (bulk_frame.c): the body up to its first tensor (prefix with
 * incarnation, header, padding) in a new buffer *head (free()), and the
 * whole body's size. The tensors
 * follow, each padded to 8: b->tensors[i]->data, nbytes. */
int pasci_wire_encode_head(pasci_wire_builder *b, uint64_t incarnation,
    uint8_t **head, size_t *head_len, size_t *total);

/* Decodes a body held in a buffer of the caller's, taking it over (its
 * tensors view it; free_fn(body) runs with the last). */
int pasci_wire_decode_owned(pasci_wire_msg *m, void *body, size_t len,
    void (*free_fn)(void *), char *err, size_t errlen);

/* The reply to a request stamped for incarnation `got` that reached
 * incarnation `own`: EABORTED, stale_incarnation set (it did not run).
 * NULL on no memory. */
nng_msg *pasci_wire_stale_reply(uint64_t got, uint64_t own);

/* A reply carrying only a status and message. NULL on no memory. */
nng_msg *pasci_wire_status_reply(int status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Rebuilds the result value of a reply; *out is owned by the caller. */
int pasci_wire_get_value(
    const pasci_wire_msg *m, pasco_value **out, char *err, size_t errlen);

/* PASCO_OK when spec (not NULL) names a valid dtype and shape, else
 * PASCO_EINVAL. */
int pasci_wire_spec_check(const pasci_wire_spec *spec);

#endif
