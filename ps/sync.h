/*
 * Consistency modes on the ps (include/pasco/optimizer.h): a counter's
 * step admission (the global step under ASP, SSP and BSP) and a shard's
 * BSP accumulator, which sums the gradients of a round until it has N.
 * Every function runs under the variable's lock (the store's); none
 * blocks.
 */
#ifndef PASCO_PS_SYNC_H
#define PASCO_PS_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pasco/optimizer.h"
#include "wire.h"

/* A variable's BSP state: as a shard, the gradients of the open round; as
 * a counter, how many gradients joined its round and how many pushed. */
typedef struct ps_accum {
	int32_t         count;       /* gradients in the round so far */
	pasco_optimizer opt;         /* the round's (its first gradient's) */
	int64_t         step;        /* the round's t */
	pasco_tensor   *sum;         /* dense: the sum of the gradients */
	pasco_tensor  **ids, **rows; /* sparse: the parts (held) */
	size_t          nparts, cap;
	int64_t         admitted, done; /* counter */
} ps_accum;

/* Checks a request's mode and its parameters. */
int pasci_sync_check(const pasci_wire_sync *sync, char *err, size_t errlen);

/* A counter's step (VAR_FETCH_ADD): value (an i64 or i32 scalar) +=
 * delta without sync or under ASP; under SSP and BSP the admission of a
 * gradient (or a BSP round member's done). *out gets the value after (for
 * a BSP admission, the round), *dropped whether the gradient is dropped. */
int pasci_counter_step(pasco_tensor *value, ps_accum *a, int64_t delta,
    const pasci_wire_sync *sync, int64_t *out, bool *dropped, char *err,
    size_t errlen);

/* Closes a counter's open BSP round (a flush): true if it had members. */
bool pasci_counter_flush(pasco_tensor *value, ps_accum *a);

/* Adds a dense gradient (like value) or sparse parts (ids i64 1-D, rows
 * one per id) to the round; opt and step are the round's if it is the
 * first. PASCO_EINVAL when the round holds the other kind, or another
 * optimizer. */
int pasci_accum_add_dense(ps_accum *a, const pasco_optimizer *opt,
    int64_t step, const pasco_tensor *grad, char *err, size_t errlen);
int pasci_accum_add_sparse(ps_accum *a, const pasco_optimizer *opt,
    int64_t step, const pasco_tensor *ids, const pasco_tensor *rows, char *err,
    size_t errlen);

/* The average of the round's gradients: dense (*avg, like the sum) or
 * sparse (*ids sorted and distinct, *rows their averaged rows; row_elems
 * elements a row). New tensors owned by the caller. */
int pasci_accum_average_dense(ps_accum *a, pasco_tensor **avg);
int pasci_accum_average_sparse(
    ps_accum *a, int64_t row_elems, pasco_tensor **ids, pasco_tensor **rows);

/* Empties the round (the counter fields are kept). */
void pasci_accum_reset(ps_accum *a);

#endif
