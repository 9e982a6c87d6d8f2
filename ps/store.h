/*
 * The ps variable store: named dense tensors, each with its own lock.
 * Every update is checked against the variable's dtype and shape before
 * anything is written, so a bad request changes nothing.
 *
 * Variables are never removed: a name, once created, keeps its dtype and
 * shape until pasci_store_destroy, which the caller runs only after every
 * other call has returned. A create, or an apply that makes slots, past
 * the ps's memory budget (budget.h) is refused, PASCO_ENOMEM, err naming
 * the variable and the budget. Every function here but pasci_store_create and
 * pasci_store_destroy is thread-safe.
 */
#ifndef PASCO_PS_STORE_H
#define PASCO_PS_STORE_H

#include <stdbool.h>
#include <stddef.h>

#include "budget.h"
#include "optimizer_apply.h"
#include "pasco/constraint.h"
#include "pasco/optimizer.h"
#include "pasco/tensor.h"
#include "wire.h"

typedef struct ps_store ps_store;

typedef enum ps_update {
	PS_ASSIGN,
	PS_ASSIGN_ADD,
} ps_update;

/* A store whose variables and slots are charged to budget (the ps's,
 * which must outlive it); pasci_store_create's has no limit. */
int  pasci_store_create_with(ps_store **out, pasci_budget *budget);
int  pasci_store_create(ps_store **out);
void pasci_store_destroy(ps_store *s);

/* The bytes a variable named name with a value of value_bytes is charged:
 * the value and its bookkeeping. */
size_t pasci_store_cost(const char *name, size_t value_bytes);

/* Charges that cost before the value is allocated (a create computed on
 * the ps): PASCO_ENOMEM, err naming the budget, when it does not fit.
 * Hand the charge on with pasci_store_var_adopt_charged. */
int pasci_store_charge(ps_store *s, const char *name, size_t value_bytes,
    char *err, size_t errlen);

/* Creates name with a copy of init; an existing name with the same spec is
 * left alone (PASCO_OK); another spec is PASCO_EEXIST. err gets detail. */
int pasci_store_var_create(ps_store *s, const char *name,
    const pasco_tensor *init, char *err, size_t errlen);

/* The same, keeping a reference to init instead of a copy (init must not
 * be a view into a message, nor be written by the caller afterwards). */
int pasci_store_var_adopt(ps_store *s, const char *name, pasco_tensor *init,
    char *err, size_t errlen);

/* pasci_store_var_adopt for a value whose cost pasci_store_charge has
 * charged: the variable holds it, or it is given back when none is made
 * (the name exists, or out of memory). */
int pasci_store_var_adopt_charged(ps_store *s, const char *name,
    pasco_tensor *init, char *err, size_t errlen);

/* pasci_store_var_adopt_charged, the variable made (not one that
 * existed) given the constraint c, applied after each of its optimizer
 * updates (its create from an initializer). */
int pasci_store_var_adopt_constrained(ps_store *s, const char *name,
    pasco_tensor *init, const pasco_constraint *c, char *err, size_t errlen);

/* Whether name exists (*exists), before a create spends memory on it:
 * PASCO_OK when it does not, or does with this spec (a create would change
 * nothing); PASCO_EEXIST (err names both specs) when it has another. */
int pasci_store_var_exists(ps_store *s, const char *name, pasco_dtype dtype,
    int32_t rank, const int64_t *shape, bool *exists, char *err,
    size_t errlen);

/* The bytes of one row (along the first axis) of name; 0 for a scalar or
 * a name the store does not hold. */
size_t pasci_store_var_row_bytes(ps_store *s, const char *name);

/* Calls fn(arg, value) with the variable's lock held (for encoding a
 * read without an extra copy). PASCO_ENOTFOUND. */
int pasci_store_var_with(ps_store *s, const char          *name,
    int (*fn)(void *arg, const pasco_tensor *value), void *arg, char *err,
    size_t errlen);

/* Applies an update with t. PASCO_ENOTFOUND, PASCO_EINVAL for a
 * dtype/shape mismatch. */
int pasci_store_var_update(ps_store *s, const char *name, ps_update op,
    const pasco_tensor *t, char *err, size_t errlen);

/* Applies the gradient grad with opt (slots created on first use).
 * PASCO_EINVAL for a mismatch, a non-float variable, bad hyperparameters or
 * slots of another optimizer; nothing changes then. */
int pasci_store_var_apply(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *grad, char *err,
    size_t errlen);

/* The same for gradient rows of ids (i64, 1-D); only those rows and their
 * slots change. */
int pasci_store_var_apply_sparse(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *ids,
    const pasco_tensor *rows, char *err, size_t errlen);

/* The same two with a consistency (include/pasco/optimizer.h): step > 0
 * is the global step t of the apply (Adam's t; 0: the shard counts its
 * own); sync (NULL: ASP) under BSP adds the gradient to the variable's
 * round instead, and applies the round's average, with its first
 * gradient's optimizer and step, once it has sync->replicas gradients.
 * PASCO_EINVAL for a bad sync, or a round that mixes dense and sparse
 * gradients or optimizers. */
int pasci_store_var_apply_at(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *grad, int64_t step,
    const pasci_wire_sync *sync, char *err, size_t errlen);
int pasci_store_var_apply_sparse_at(ps_store *s, const char *name,
    const pasco_optimizer *opt, const pasco_tensor *ids,
    const pasco_tensor *rows, int64_t step, const pasci_wire_sync *sync,
    char *err, size_t errlen);

/* A counter's step (ps/sync.h, pasci_counter_step) on name, an i64 or i32
 * scalar (PASCO_EINVAL otherwise), atomic under its lock. */
int pasci_store_var_fetch_add(ps_store *s, const char *name, int64_t delta,
    const pasci_wire_sync *sync, int64_t *out, bool *dropped, char *err,
    size_t errlen);

/* Applies every partial BSP round (the average of what it has) and closes
 * every counter's open round; *napplied counts both. The first failure
 * is returned (the others still run). */
int pasci_store_sync_flush(
    ps_store *s, int64_t *napplied, char *err, size_t errlen);

/* Rows ids (i64, 1-D, each in [0, rows)) of name, copied into a new
 * tensor [n, ...] handed to fn with the lock held. */
int pasci_store_var_gather(ps_store *s, const char *name,
    const pasco_tensor *ids, int (*fn)(void *arg, const pasco_tensor *rows),
    void *arg, char *err, size_t errlen);

/* name[ids[k]] += scale * rows[k]; checked first, so a bad request
 * changes nothing. */
int pasci_store_var_scatter_add(ps_store *s, const char *name,
    const pasco_tensor *ids, const pasco_tensor *rows, double scale, char *err,
    size_t errlen);

/* Called by pasci_store_var_each with the table's read lock and the
 * variable's lock held: it must not call back into the store. */
typedef int (*pasci_store_visit_fn)(void *arg, const char *name,
    const pasco_tensor *value, const ps_slots *slots);

/* Calls fn for every variable, one at a time, stopping at the first
 * nonzero return, which it returns. No variable is created meanwhile.
 * Thread-safe. */
int pasci_store_var_each(ps_store *s, pasci_store_visit_fn fn, void *arg);

/* Replaces name's optimizer slots (kind, step, and tensors shaped like the
 * variable). */
int pasci_store_set_slots(ps_store *s, const char *name,
    pasco_optimizer_kind kind, int64_t step, pasco_tensor *const *slots,
    size_t n, char *err, size_t errlen);

#endif
