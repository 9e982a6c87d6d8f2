/*
 * Partitioners decide how many shards a variable is split into, along axis
 * 0, with TensorFlow's math (sharded_variable.py and
 * partitioned_variables.py):
 *
 *   fixed:    shards = min(num_shards, rows)
 *   min size: shards = max(1, min(rows, max_shards, ceil(bytes /
 * min_shard_bytes))) (ceil: shards may be smaller than min_shard_bytes, as in
 * TF) max size: per_shard = max(1, floor(max_shard_bytes / bytes_per_row));
 *             shards = ceil(rows / per_shard), capped by max_shards if set
 *
 * where bytes counts every element at its dtype's size (bytes_per_string for
 * string elements, when a caller passes element size 0). Shards use the div
 * layout: the first rows % shards shards get one row more, and ids are
 * routed to shards with the div formula. Rank-0 variables are never split.
 */
#ifndef PASCO_PARTITIONER_H
#define PASCO_PARTITIONER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "tensor.h"

typedef enum pasco_partitioner_kind {
	PASCO_PARTITION_FIXED    = 1,
	PASCO_PARTITION_MIN_SIZE = 2,
	PASCO_PARTITION_MAX_SIZE = 3,
	PASCO_PARTITION_CUSTOM   = 4,
} pasco_partitioner_kind;

/* A custom partitioner writes one entry per dimension of shape into
 * result and stores how many it wrote in *result_len (at most
 * PASCO_MAX_RANK). Pasco then checks, as TensorFlow does, that the result
 * is [n, 1, 1, ...] with n >= 1. */
typedef int (*pasco_partition_fn)(void *arg, pasco_dtype dtype, int32_t rank,
    const int64_t *shape, int64_t *result, int32_t *result_len);

typedef struct pasco_partitioner {
	pasco_partitioner_kind kind;
	int64_t                num_shards;      /* FIXED */
	int64_t                min_shard_bytes; /* MIN_SIZE (TF: 256 KiB) */
	int64_t                max_shard_bytes; /* MAX_SIZE */
	int64_t max_shards;       /* MIN_SIZE (TF: 1), MAX_SIZE (0: none) */
	int64_t bytes_per_string; /* TF: 16 */
	pasco_partition_fn fn;    /* CUSTOM */
	void              *arg;
} pasco_partitioner;

/* Constructors with TensorFlow's parameter names (and defaults where the
 * argument is 0 for min_shard_bytes, bytes_per_string and, for min size,
 * max_shards). */
pasco_partitioner pasco_fixed_shards_partitioner(int64_t num_shards);
pasco_partitioner pasco_min_size_partitioner(
    int64_t min_shard_bytes, int64_t max_shards, int64_t bytes_per_string);
pasco_partitioner pasco_max_size_partitioner(
    int64_t max_shard_bytes, int64_t max_shards, int64_t bytes_per_string);
pasco_partitioner pasco_custom_partitioner(pasco_partition_fn fn, void *arg);

/* The number of shards of a variable of dtype and shape (element size 0 in
 * elem_bytes means strings: bytes_per_string each; otherwise pass
 * pasco_dtype_size). PASCO_EINVAL, with a message in err, for invalid
 * parameters or a custom result that is not [n >= 1, 1, ...].
 * Thread-safe. */
int pasco_partition(const pasco_partitioner *p, pasco_dtype dtype,
    size_t elem_bytes, int32_t rank, const int64_t *shape, int64_t *shards,
    char *err, size_t errlen);

/* The div layout of rows over shards (shards <= rows): sizes[i] and
 * offsets[i] for i < shards, offsets[shards] = rows. */
void pasco_shard_layout(
    int64_t rows, int64_t shards, int64_t *sizes, int64_t *offsets);

/* Div routing (TF embedding_lookup "div") of id among rows split in
 * shards: the shard and the row within it. id must be in [0, rows). */
void pasco_shard_route(
    int64_t rows, int64_t shards, int64_t id, int64_t *shard, int64_t *local);

#endif
