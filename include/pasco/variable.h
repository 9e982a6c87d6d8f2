/*
 * Variables live on ps tasks. A pasco_variable is a handle: the variable's
 * name, its ps task, dtype and shape, and a connection to that ps. The
 * coordinator gets handles from pasco_variable_create (coordinator.h); a
 * step function gets them from its arguments (function.h). The operations
 * below are remote calls to the ps and block until it answers.
 *
 * A ps checks every update against the variable's dtype and shape and
 * rejects a mismatch, changing nothing. When an operation fails, the ps's
 * message is kept on the handle: pasco_variable_error.
 *
 * Handles are thread-safe; the last error is per handle, so a handle shared
 * by several threads reports whichever failure came last.
 */
#ifndef PASCO_VARIABLE_H
#define PASCO_VARIABLE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "initializer.h"
#include "tensor.h"

typedef struct pasco_variable pasco_variable;

/* A dynamic embedding table's options (pasco_dynamic_variable_create in
 * coordinator.h, and an Embedding layer's dynamic_options in layers.h). */
typedef struct pasco_dynamic_options {
	int64_t dim; /* row length, >= 1 */
	/* A new row's values, computed from its key and the table's name
	 * alone (the same key starts from the same row on any ps; two tables
	 * with one initializer start it from different rows). Kind 0:
	 * uniform(-0.05, 0.05), Keras's Embedding default. Glorot is refused
	 * (no row count). */
	pasco_initializer initializer;
	/* Admission: training lookups of a key before it gets a row of its
	 * own (0 or 1: at the first); until then it reads the default. */
	int64_t min_count;
	/* Eviction: rows unseen (not looked up in training, not updated)
	 * for more than this many global steps are dropped (0: never). */
	int64_t evict_after;
	/* Rows per ps at most (0: no cap): past it the least recently used
	 * row is dropped for the new one. */
	int64_t max_rows_per_ps;
	/* What a key without a row reads (unseen in evaluation, or not yet
	 * admitted): zeros when set, else the row its initializer would give
	 * it. */
	bool default_zeros;
} pasco_dynamic_options;

/* Reads the whole value. On success *out is a new tensor owned by the
 * caller. Blocks. */
int pasco_variable_read(pasco_variable *v, pasco_tensor **out);

/* Reads n variables at once: every shard request is in flight together,
 * so a step pays one round trip, not n. outs[k] gets vars[k]'s value
 * (owned by the caller). On failure every outs[k] is NULL and the error
 * is recorded on the variable that failed (pasco_variable_error). */
int pasco_variable_read_all(
    size_t n, pasco_variable *const *vars, pasco_tensor **outs);

/* A step's reads at once (read_all with gathers among the reads): where
 * ids is NULL or ids[k] is NULL, outs[k] gets the whole value of vars[k]
 * as pasco_variable_read gives it; otherwise the rows of ids[k] as
 * pasco_variable_gather gives them. Every shard request is in flight
 * together: one round trip for the step. outs[k] is owned by the caller;
 * on failure every outs[k] is NULL and the error is recorded on the
 * variable that failed. */
int pasco_variable_read_mixed(size_t n, pasco_variable *const *vars,
    const pasco_tensor *const *ids, pasco_tensor **outs);

/* v = value. value must have v's dtype and shape. Blocks. */
int pasco_variable_assign(pasco_variable *v, const pasco_tensor *value);

/* v += delta. delta must have v's dtype and shape. Blocks. */
int pasco_variable_assign_add(pasco_variable *v, const pasco_tensor *delta);

/* v += delta atomically on its ps, for an i64 or i32 scalar (a counter
 * such as the global step); *value (may be NULL) gets the value after the
 * addition. delta 0 reads it. PASCO_EINVAL for another dtype or shape.
 * Blocks. */
int pasco_variable_fetch_add(pasco_variable *v, int64_t delta, int64_t *value);

/* v -= learning_rate * grad (plain SGD, applied on the ps). Float dtypes
 * only. Blocks. */
int pasco_variable_apply_sgd(
    pasco_variable *v, double learning_rate, const pasco_tensor *grad);

/* Rows of v by id: ids (i32 or i64, any shape) must be in [0, rows); the
 * result has shape ids.shape + v.shape[1:], owned by the caller. Ids are
 * routed to shards with the div formula and the shards are asked in
 * parallel. A dynamic table takes any i64 key; -1 is padding there (a
 * row of zeros, as on the tape). Blocks. */
int pasco_variable_gather(
    pasco_variable *v, const pasco_tensor *ids, pasco_tensor **out);

/* v[ids[k]] += rows[k]. rows has shape ids.shape + v.shape[1:] and v's
 * dtype; duplicate ids are summed. Blocks. */
int pasco_variable_scatter_add(
    pasco_variable *v, const pasco_tensor *ids, const pasco_tensor *rows);

/* v[ids[k]] -= learning_rate * grads[k] (sparse SGD; duplicate ids summed;
 * only those rows change). Float dtypes only. Blocks. */
int pasco_variable_apply_sgd_sparse(pasco_variable *v, double learning_rate,
    const pasco_tensor *ids, const pasco_tensor *grads);

/* How v is split: the number of shards, and for shard i its ps task and
 * its rows [offset, offset + rows) of the whole. */
int32_t pasco_variable_num_shards(const pasco_variable *v);
int pasco_variable_shard(const pasco_variable *v, int32_t i, int32_t *ps_task,
    int64_t *offset, int64_t *rows);

const char *pasco_variable_name(const pasco_variable *v);

/* Whether v is a dynamic embedding table (pasco_dynamic_variable_create). */
bool pasco_variable_is_dynamic(const pasco_variable *v);

/* For a dynamic table: whether lookups through this handle only find rows
 * (true: keys without a row read the table's default and nothing is
 * inserted or touched, as evaluation and prediction want) or make them
 * (false, the default: training). PASCO_EINVAL for a fixed variable. */
int pasco_variable_set_find_only(pasco_variable *v, bool find_only);

/* A dynamic table's counts, summed over its ps (step: the largest). */
typedef struct pasco_dynamic_stats {
	int64_t rows;        /* held now */
	int64_t pending;     /* keys counted towards admission */
	int64_t created;     /* rows made */
	int64_t evicted_age; /* rows dropped for being unseen */
	int64_t evicted_cap; /* rows dropped at the cap */
	int64_t refused;     /* training lookups answered without a row */
	int64_t step;        /* the table's clock (the last update's step) */
} pasco_dynamic_stats;

/* Asks every ps for its share's counts. PASCO_EINVAL for a fixed
 * variable. Blocks. */
int pasco_variable_dynamic_stats(pasco_variable *v, pasco_dynamic_stats *out);

/* The ps task of the first (or only) shard. */
int32_t        pasco_variable_ps_task(const pasco_variable *v);
pasco_dtype    pasco_variable_dtype(const pasco_variable *v);
int32_t        pasco_variable_rank(const pasco_variable *v);
const int64_t *pasco_variable_shape(const pasco_variable *v);

/* The message of the last failed operation on v, or "" if none. The pointer
 * stays valid until the next operation on v. */
const char *pasco_variable_error(const pasco_variable *v);

/* Frees the handle (the variable stays on its ps). NULL is a no-op. */
void pasco_variable_free(pasco_variable *v);

#endif
