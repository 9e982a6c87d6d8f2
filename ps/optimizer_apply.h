/*
 * Optimizer updates on the ps (formulas in include/pasco/optimizer.h). Each
 * variable shard keeps the slots of one optimizer kind; the caller holds
 * the shard's lock around prepare and apply.
 */
#ifndef PASCO_PS_OPTIMIZER_H
#define PASCO_PS_OPTIMIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "optimizer_desc.h"
#include "pasco/optimizer.h"

typedef struct ps_slots {
	pasco_optimizer_kind kind;   /* 0: no optimizer applied yet */
	int                  nslots; /* kind's descriptor's */
	/* shaped like the variable; NULL for a slot kind's update does not
	 * use with its configuration (it reads as 0) */
	pasco_tensor *slot[PASCI_OPT_MAX_SLOTS];
	int64_t       step; /* applies so far (Adam's t) */
} ps_slots;

/* Checks opt's hyperparameters (Keras's ValueErrors). */
int pasci_optimizer_check(
    const pasco_optimizer *opt, char *err, size_t errlen);

/* Creates the slots of opt for value on first use; PASCO_EINVAL if value
 * already has another optimizer's. Then counts one more apply. */
int pasci_slots_prepare(ps_slots *s, const pasco_optimizer *opt,
    const pasco_tensor *value, char *err, size_t errlen);

/* The bytes pasci_slots_prepare(s, opt, value) would allocate (0 when it
 * would refuse), to be charged to the ps's budget first; and the bytes
 * s's slots hold. */
size_t pasci_slots_need(
    const ps_slots *s, const pasco_optimizer *opt, const pasco_tensor *value);
size_t pasci_slots_bytes(const ps_slots *s);

/* Updates n elements of value (and slots) from element `at`, with the
 * gradient elements g[from .. from + n) of grad. */
void pasci_optimizer_apply(const pasco_optimizer *opt, ps_slots *s,
    pasco_tensor *value, int64_t at, const pasco_tensor *grad, int64_t from,
    int64_t n);

/* Updates the rows ids[0..nids) (each row_elems elements) with the
 * gradient rows grad[0..nids), in that order. An optimizer that decays
 * (AdamW) first decays every row of value, as Keras decays the whole
 * variable: O(value) per apply. */
void pasci_optimizer_apply_rows(const pasco_optimizer *opt, ps_slots *s,
    pasco_tensor *value, const int64_t *ids, int64_t nids, int64_t row_elems,
    const pasco_tensor *grad);

/* Updates row `row` of value (row_elems elements, and its slots) with row
 * grad_row of grad: one row of a dynamic table's chunk. */
void pasci_optimizer_apply_row(const pasco_optimizer *opt, ps_slots *s,
    pasco_tensor *value, int64_t row, int64_t row_elems,
    const pasco_tensor *grad, int64_t grad_row);

/* opt at the apply of step t (1, 2, ...): its learning rate the
 * schedule's at t - 1 (Keras's schedule(iterations)), if it has one. */
pasco_optimizer pasci_optimizer_at(const pasco_optimizer *opt, int64_t t);

/* That decay alone, with opt's learning rate as it is (pasci_optimizer_at
 * first), on n elements of value from `at`: in f32 as the optimizer's f32
 * kernel decays, or in double. opt must decay (pasci_opt_decays). */
void pasci_optimizer_decay_elems(
    const pasco_optimizer *opt, pasco_tensor *value, int64_t at, int64_t n);

/* The value slot k of opt starts from (Adagrad's accumulator: its
 * initial_accumulator_value; most slots: 0). */
double pasci_slot_init_value(const pasco_optimizer *opt, int k);

/* Asks the cache for elements [at, at + n) of t (a row of a big table,
 * a miss otherwise), to be written when for_write. */
void pasci_prefetch_elems(
    const pasco_tensor *t, int64_t at, int64_t n, bool for_write);

void pasci_slots_fini(ps_slots *s);

#endif
