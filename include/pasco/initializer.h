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

#include <stdbool.h>
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
	/* Keras's VarianceScaling and its named cases: with n the fan of
	 * mode (fan_in, fan_out or their mean; at least 1) and s = scale /
	 * n, a truncated normal of stddev sqrt(s) / 0.87962566103423978 cut
	 * at 2 stddev (Keras's correction: the variance is s), a normal of
	 * stddev sqrt(s), or U(-sqrt(3 s), sqrt(3 s)). */
	PASCO_INIT_GLOROT_NORMAL    = 8,  /* 1, fan_avg, truncated normal */
	PASCO_INIT_HE_NORMAL        = 9,  /* 2, fan_in, truncated normal */
	PASCO_INIT_HE_UNIFORM       = 10, /* 2, fan_in, uniform */
	PASCO_INIT_LECUN_NORMAL     = 11, /* 1, fan_in, truncated normal */
	PASCO_INIT_LECUN_UNIFORM    = 12, /* 1, fan_in, uniform */
	PASCO_INIT_VARIANCE_SCALING = 13, /* scale, mode, distribution */
	/* Keras's Orthogonal: gain (scale) times the Q of the QR
	 * decomposition of a normal [max(r, c), min(r, c)] matrix, its
	 * columns' signs those of R's diagonal, transposed when r < c, for
	 * r the product of every dimension but the last and c the last (rank
	 * 2 or more). Each ps computes the whole matrix and keeps its rows:
	 * max(r, c) * min(r, c)^2 at most PASCO_INIT_ORTHOGONAL_MAX (2^32: a
	 * [1024, 1024] kernel, about a second). */
	PASCO_INIT_ORTHOGONAL = 14,
} pasco_init_kind;

#define PASCO_INIT_KIND_LAST PASCO_INIT_ORTHOGONAL
#define PASCO_INIT_ORTHOGONAL_MAX 4294967296.0

typedef enum pasco_init_mode {
	PASCO_FAN_IN  = 0,
	PASCO_FAN_OUT = 1,
	PASCO_FAN_AVG = 2,
} pasco_init_mode;

typedef enum pasco_init_distribution {
	PASCO_DIST_TRUNCATED_NORMAL   = 0,
	PASCO_DIST_UNTRUNCATED_NORMAL = 1,
	PASCO_DIST_UNIFORM            = 2,
} pasco_init_distribution;

typedef struct pasco_initializer {
	pasco_init_kind kind;
	double          value;          /* CONSTANT */
	double          minval, maxval; /* UNIFORM */
	double          mean, stddev;   /* NORMAL, TRUNCATED_NORMAL */
	uint64_t        seed;
	/* VARIANCE_SCALING's scale (> 0), ORTHOGONAL's gain */
	double                  scale;
	pasco_init_mode         mode;         /* VARIANCE_SCALING */
	pasco_init_distribution distribution; /* VARIANCE_SCALING */
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
/* Keras's GlorotNormal, HeNormal, HeUniform, LecunNormal, LecunUniform,
 * VarianceScaling(scale, mode, distribution) and Orthogonal(gain). */
pasco_initializer pasco_init_glorot_normal(uint64_t seed);
pasco_initializer pasco_init_he_normal(uint64_t seed);
pasco_initializer pasco_init_he_uniform(uint64_t seed);
pasco_initializer pasco_init_lecun_normal(uint64_t seed);
pasco_initializer pasco_init_lecun_uniform(uint64_t seed);
pasco_initializer pasco_init_variance_scaling(double scale,
    pasco_init_mode mode, pasco_init_distribution distribution, uint64_t seed);
pasco_initializer pasco_init_orthogonal(double gain, uint64_t seed);

/* Whether in is an initializer a ps takes: a known kind, a finite
 * VarianceScaling scale > 0 with a known mode and distribution, a finite
 * Orthogonal gain. Thread-safe. */
static inline bool
pasco_initializer_is_valid(const pasco_initializer *in)
{
	if (in == NULL || in->kind < PASCO_INIT_ZEROS ||
	    in->kind > PASCO_INIT_KIND_LAST) {
		return false;
	}
	if (in->kind == PASCO_INIT_VARIANCE_SCALING) {
		return in->scale > 0 && in->scale < 1e300 &&
		       (unsigned) in->mode <= PASCO_FAN_AVG &&
		       (unsigned) in->distribution <= PASCO_DIST_UNIFORM;
	}
	return in->kind != PASCO_INIT_ORTHOGONAL ||
	       (in->scale > -1e300 && in->scale < 1e300);
}

/* Fills t, which holds rows [row_offset, row_offset + t->shape[0]) of a
 * variable of shape full_shape (t's other dimensions must match it; a
 * scalar is its own whole). Fans for Glorot, He, Lecun and
 * VarianceScaling come from full_shape, as Keras computes them.
 * PASCO_EINVAL for an invalid init (pasco_initializer_is_valid), a t that
 * does not fit in the whole, or an Orthogonal of rank below 2 or over
 * PASCO_INIT_ORTHOGONAL_MAX elements; PASCO_ENOMEM. Thread-safe. */
int pasco_initializer_fill(const pasco_initializer *init, pasco_tensor *t,
    int32_t full_rank, const int64_t *full_shape, int64_t row_offset);

#endif
