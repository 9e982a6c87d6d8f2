/*
 * Initializers, run on the ps when a variable is created. Seeded and
 * partition-aware: element g of the whole variable (row-major index) gets a
 * value that depends only on the initializer, its seed and g, so a variable
 * has the same values however it is sharded. The generator is counter-based
 * (a hash of seed and g), not TensorFlow's Philox stream: the same seed does
 * not give TensorFlow's numbers, but the same distributions.
 */
#ifndef PASCO_INITIALIZER_H
#define PASCO_INITIALIZER_H

#include <stdint.h>

#include "error.h"
#include "tensor.h"

typedef enum pasco_init_kind {
	PASCO_INIT_ZEROS    = 1,
	PASCO_INIT_ONES     = 2,
	PASCO_INIT_CONSTANT = 3,
	PASCO_INIT_UNIFORM  = 4, /* [minval, maxval) */
	PASCO_INIT_NORMAL   = 5, /* mean, stddev */
	PASCO_INIT_TRUNCATED_NORMAL =
	    6, /* redrawn beyond 2 stddev, as Keras */
	PASCO_INIT_GLOROT_UNIFORM =
	    7, /* U(-l, l), l = sqrt(6 / (fan_in + fan_out)) */
} pasco_init_kind;

typedef struct pasco_initializer {
	pasco_init_kind kind;
	double          value;          /* CONSTANT */
	double          minval, maxval; /* UNIFORM */
	double          mean, stddev;   /* NORMAL, TRUNCATED_NORMAL */
	uint64_t        seed;
} pasco_initializer;

pasco_initializer pasco_init_zeros(void);
pasco_initializer pasco_init_ones(void);
pasco_initializer pasco_init_constant(double value);
pasco_initializer pasco_init_uniform(
    double minval, double maxval, uint64_t seed);
pasco_initializer pasco_init_normal(double mean, double stddev, uint64_t seed);
pasco_initializer pasco_init_truncated_normal(
    double mean, double stddev, uint64_t seed);
pasco_initializer pasco_init_glorot_uniform(uint64_t seed);

/* Fills t, which holds rows [row_offset, row_offset + t->shape[0]) of a
 * variable of shape full_shape (t's other dimensions must match it; a
 * scalar is its own whole). Fans for Glorot come from full_shape, as
 * Keras computes them. PASCO_EINVAL for a bad kind or a t that does not fit
 * in the whole. Thread-safe. */
int pasco_initializer_fill(const pasco_initializer *init, pasco_tensor *t,
    int32_t full_rank, const int64_t *full_shape, int64_t row_offset);

#endif
