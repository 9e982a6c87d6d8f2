/*
 * Variable handles: a variable is one or more shards (row ranges) on ps
 * tasks. Handles are made by the strategy (coordinator) or from a RUN
 * argument (worker); the RPC clients belong to whoever made the handle and
 * must outlive it.
 */
#ifndef PASCI_VARIABLE_IMPL_H
#define PASCI_VARIABLE_IMPL_H

#include <pthread.h>

#include "pasco/variable.h"
#include "rpc.h"

typedef struct var_shard {
	char             *name; /* "<name>/part_<i>", or the name if unsplit */
	int32_t           ps_task;
	int64_t           offset, rows;
	pasci_rpc_client *client; /* borrowed */
} var_shard;

struct pasco_variable {
	char       *name;
	pasco_dtype dtype;
	int32_t     rank;
	int64_t     shape[PASCO_MAX_RANK]; /* the whole variable */
	int32_t     nshards;
	var_shard  *shards;
	int64_t     timeout_ms;
	/* As a counter (a global step): the consistency its applies use
	 * (mode, replicas, staleness), the value it last read (the version of
	 * a step's parameters; -1 before any) and the gradients dropped. */
	pasci_wire_sync sync;
	/* A dynamic embedding table (coordinator.h): shape [0, dim], one
	 * shard per ps, keys routed by pasci_dyn_shard; find_only: its
	 * lookups insert nothing (evaluation). */
	bool            dynamic, find_only;
	int64_t         seen;    /* atomic */
	int64_t         dropped; /* atomic */
	pthread_mutex_t mu;
	char            error[512]; /* protected by mu */
};

/* The most shards a variable may have. */
#define PASCI_MAX_SHARDS 1024

/* A handle with no shards yet. */
int pasci_variable_new(pasco_variable **out, const char *name,
    pasco_dtype dtype, int32_t rank, const int64_t *shape, int64_t timeout_ms);

/* Appends a shard (names are copied). */
int pasci_variable_add_shard(pasco_variable *v, const char *shard_name,
    int32_t ps_task, int64_t offset, int64_t rows, pasci_rpc_client *client);

/* Whether v's shards tile it exactly, in order: a scalar has one shard of
 * 0 rows at 0; otherwise shard i starts where shard i-1 ends, none has
 * negative rows, and they end at shape[0]. A handle built from a request
 * (a worker's) is checked before any of its geometry is used to touch
 * memory. PASCO_EPROTO with a message naming the shard otherwise. */
int pasci_variable_check_layout(
    const pasco_variable *v, char *err, size_t errlen);

/* The shard of a dynamic table's key among nshards: a hash of the key's
 * 64 bits, the same in every process and run (checkpoints restore into
 * another shard count by it). */
int32_t pasci_dyn_shard(uint64_t key, int32_t nshards);

/* A copy of the handle (same clients), without its last error. */
int pasci_variable_clone(pasco_variable **out, const pasco_variable *v);

/* Records a printf-style message as v's last error and returns err. */
int pasci_variable_fail(pasco_variable *v, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One request per shard, sent in parallel. */
typedef struct shard_call {
	bool               used; /* set by the caller: send b to this shard */
	pasci_wire_builder b; /* the request; the shard's name is filled in */
	int                err;
	char               detail[512];
	bool               has_reply;
	pasci_wire_msg     reply; /* when has_reply: owned by the call */
	void              *fan;   /* private */
	bool lost; /* err is the transport's: the ps never answered */
} shard_call;

/* A cut link, seen from a worker (docs/guide.md, "When processes fail"): the
 * ps that a variable request made on this thread could not reach since the
 * last take, or -1; *err says how: PASCO_ETIMEDOUT, no answer within its
 * deadline (or no connection made in that time), or PASCO_EUNAVAILABLE,
 * its connection lost; why gets the transport's detail. Clears it. A ps
 * that answered with an error is not such a failure. Thread-local. */
int32_t pasci_ps_unreachable_take(int *err, char *why, size_t len);

/* How a worker's closure that failed so begins its error, and the
 * coordinator's reading of it: true when msg begins so, with the ps and
 * the worker. */
#define PASCI_PS_UNREACHABLE_FMT "ps %d unreachable from worker %d"
bool pasci_ps_unreachable_parse(const char *msg, int32_t *ps, int32_t *worker);

/* Allocates nshards calls with builders of method m, none used. */
shard_call *pasci_shard_calls_new(const pasco_variable *v, int method);

/* Sends every used call, waits for all, records the first failure on v and
 * returns it; replies stay in calls. */
int pasci_shard_calls_run(pasco_variable *v, shard_call *calls);

void pasci_shard_calls_free(const pasco_variable *v, shard_call *calls);

/* Runs the calls of n variables together (every request in flight at
 * once); the first failure is returned, recorded on its variable. */
int pasci_shard_calls_run_many(
    size_t n, pasco_variable *const *vars, shard_call **calls);

/* The read calls of v, one per shard; and v's value (*out, owned by the
 * caller) from them once answered. */
shard_call *pasci_read_calls(pasco_variable *v);
int         pasci_read_assemble(
            pasco_variable *v, shard_call *calls, pasco_tensor **out);

/* A gather of v's rows by ids in three steps (variable_sparse.c), so the
 * calls of several can be run together: prepare checks and routes the
 * distinct ids (the failure recorded on v); the calls, once run, are
 * turned by finish into the rows (ids.shape + v.shape[1:], owned by the
 * caller); free accepts NULL. */
typedef struct pasci_gather pasci_gather;
int                         pasci_gather_prepare(
                            pasco_variable *v, const pasco_tensor *ids, pasci_gather **out);
shard_call *pasci_gather_calls(pasci_gather *g);
int         pasci_gather_finish(
            pasco_variable *v, pasci_gather *g, pasco_tensor **out);
void pasci_gather_free(const pasco_variable *v, pasci_gather *g);

/* The shard calls of a sparse update of v (variable_sparse.c): ids
 * checked, repeats summed, routed; a VAR_APPLY_SPARSE with opt, or with
 * opt NULL a VAR_SCATTER_ADD of scale x rows. Not stamped with a step.
 * *out is freed with pasci_shard_calls_free. */
int pasci_sparse_calls(pasco_variable *v, const pasco_tensor *ids,
    const pasco_tensor *rows, double scale, const pasco_optimizer *opt,
    const char *op, shard_call **out);

/* Appends v to b as a RUN argument (v is borrowed until b is encoded). */
void pasci_variable_add_arg(pasci_wire_builder *b, const pasco_variable *v);

/* Row bytes of the whole variable (product of shape[1:] times the dtype
 * size). */
size_t pasci_variable_row_bytes(const pasco_variable *v);

/* One apply's place in its optimizer's consistency (client/sync.c;
 * include/pasco/optimizer.h): taken before the shards are sent, ended
 * after. */
typedef struct pasci_step {
	pasco_variable *counter; /* opt->iterations; NULL: none */
	bool            dropped; /* send nothing: the gradient is stale */
	bool            bsp;     /* every shard takes part in the round */
	int64_t         t;       /* the global step of the apply (0: none) */
	pasci_wire_sync sync;    /* what the shards get under BSP */
} pasci_step;

/* Whether counter (an optimizer's iterations) may be fetch-added with a
 * step's reads: an unsplit integer scalar under ASP. */
bool pasci_step_can_prefetch(const pasco_variable *counter);

/* pasco_variable_read_mixed for evaluation: lookups of dynamic tables
 * insert nothing (keys without a row read the default). */
int pasci_variable_read_mixed_find(size_t n, pasco_variable *const *vars,
    const pasco_tensor *const *ids, pasco_tensor **outs);

/* pasco_variable_read_mixed, and counter's fetch-add of 1 in the same
 * requests: *t gets the value after, the step of an apply made with
 * pasci_apply_mixed_adds. PASCO_EINVAL unless
 * pasci_step_can_prefetch(counter). */
int pasci_variable_read_mixed_step(size_t n, pasco_variable *const *vars,
    const pasco_tensor *const *ids, pasco_tensor **outs,
    pasco_variable *counter, int64_t *t);

/* pasco_variable_apply_gradients_mixed, and adds[k] gets deltas[k]
 * (whole, of its dtype and shape) added in the same requests: a step's
 * non-gradient updates (BatchNormalization's moving statistics). The
 * adds are not stamped with the step (under BSP no round averages or
 * waits for them); a step dropped as stale sends nothing. t: the step
 * already taken (pasci_variable_read_mixed_step: no fetch-add before
 * it), or NULL: admitted here. A failure is recorded on its variable. */
int pasci_apply_mixed_adds(size_t n, pasco_variable *const *vars,
    const pasco_optimizer *opt, const pasco_tensor *const *ids,
    const pasco_tensor *const *grads, size_t nadd, pasco_variable *const *adds,
    const pasco_tensor *const *deltas, const int64_t *t);

/* The step an apply of opt sends the ps (Adam's t) at global step step:
 * the optimizer's own count, step - opt->iterations_base, or step itself
 * when that is below 1 (the global step set back by hand). */
int64_t pasci_step_count(const pasco_optimizer *opt, int64_t step);

/* Admits one apply of opt through opt->iterations (nothing without it).
 * A failure is recorded on the counter and on v. */
int pasci_step_begin(
    pasco_variable *v, const pasco_optimizer *opt, pasci_step *st);

/* Whether an apply with opt takes part in a BSP round (every shard of
 * every variable it updates must then get a request). */
bool pasci_step_is_bsp(const pasco_optimizer *opt);

/* Stamps v's used calls with the step (t, and the round under BSP). */
void pasci_step_stamp(
    const pasci_step *st, const pasco_variable *v, shard_call *calls);

/* Ends the step: under BSP, tells the counter this member has pushed
 * (whatever the pushes' outcome, so the round does not wait for it). */
void pasci_step_end(pasci_step *st);

#endif
