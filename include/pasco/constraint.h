/*
 * Keras's weight constraints (keras/src/constraints): a projection a ps
 * applies to a variable after every optimizer update of it, as Keras
 * applies a variable's constraint after apply_gradients. Given to a
 * variable when it is created (pasco_variable_create_constrained; a
 * layer's kernel_constraint, bias_constraint, embeddings_constraint).
 *
 *   MaxNorm(max_value, axis): w * clip(n, 0, max_value) / (1e-7 + n), n
 *     the L2 norm of w over axis (kept), Keras's defaults 2 and 0: each
 *     column of a Dense kernel [in, units] held to norm max_value.
 *   NonNeg: w * (w >= 0).
 *
 * A constraint that reduces over the first axis (MaxNorm of axis 0, or of
 * a rank-1 variable) needs the whole variable on one ps: it is refused on
 * a variable split in shards.
 */
#ifndef PASCO_CONSTRAINT_H
#define PASCO_CONSTRAINT_H

#include <stdint.h>

typedef enum pasco_constraint_kind {
	PASCO_CONSTRAINT_NONE     = 0,
	PASCO_CONSTRAINT_MAX_NORM = 1,
	PASCO_CONSTRAINT_NON_NEG  = 2,
} pasco_constraint_kind;

typedef struct pasco_constraint {
	pasco_constraint_kind kind;
	double                max_value; /* MAX_NORM: > 0 */
	int32_t               axis;      /* MAX_NORM: negative from the end */
} pasco_constraint;

/* Keras's MaxNorm(max_value, axis) and NonNeg(). Thread-safe. */
static inline pasco_constraint
pasco_constraint_max_norm(double max_value, int32_t axis)
{
	return (pasco_constraint){.kind = PASCO_CONSTRAINT_MAX_NORM,
	    .max_value                  = max_value,
	    .axis                       = axis};
}

static inline pasco_constraint
pasco_constraint_non_neg(void)
{
	return (pasco_constraint){.kind = PASCO_CONSTRAINT_NON_NEG};
}

#endif
