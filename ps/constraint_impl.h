/*
 * Keras's weight constraints applied by a ps (ps/constraint.c), called by
 * the store after each optimizer update of a variable.
 */
#ifndef PASCI_CONSTRAINT_IMPL_H
#define PASCI_CONSTRAINT_IMPL_H

#include "pasco/constraint.h"
#include "pasco/tensor.h"

/* c's axis from the front for a variable of rank. */
int32_t pasci_constraint_axis(const pasco_constraint *c, int32_t rank);

/* What is wrong with c for a variable of rank, or NULL. */
const char *pasci_constraint_check(const pasco_constraint *c, int32_t rank);

/* t (a shard's value, f32 or f64) projected by c in place. */
void pasci_constraint_apply(const pasco_constraint *c, pasco_tensor *t);

#endif
