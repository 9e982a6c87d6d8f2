/*
 * Initializer fill, run by a ps when it creates a shard. Element g's value
 * comes from a counter-based generator keyed by (seed, g), so any shard
 * computes exactly the values the whole variable would have. Pure;
 * thread-safe.
 */
#include "pasco/initializer.h"

#include <math.h>

#include "dyn_table.h"
#include "util.h"

/* A uniform double in (0, 1) from (seed, counter). */
static double
unit(uint64_t seed, uint64_t counter)
{
	uint64_t z = pasci_mix64(seed ^ pasci_mix64(counter));
	return ((double) (z >> 11) + 0.5) * 0x1p-53;
}

/* Standard normal draw number k of element g (Box-Muller). */
static double
std_normal(uint64_t seed, uint64_t g, uint64_t k)
{
	uint64_t c  = g * 128 + 2 * k;
	double   u1 = unit(seed, c), u2 = unit(seed, c + 1);
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Keras's fans: rank 2 [in, out]; rank > 2: receptive field times the
 * last two; rank 1: both the size; rank 0: 1. */
static void
fans(int32_t rank, const int64_t *shape, double *fan_in, double *fan_out)
{
	double receptive = 1;
	if (rank < 1) {
		*fan_in = *fan_out = 1;
		return;
	}
	if (rank == 1) {
		*fan_in = *fan_out = (double) shape[0];
		return;
	}
	for (int32_t i = 0; i < rank - 2; i++) {
		receptive *= (double) shape[i];
	}
	*fan_in  = (double) shape[rank - 2] * receptive;
	*fan_out = (double) shape[rank - 1] * receptive;
}

static double
value_at(const pasco_initializer *in, uint64_t g, double limit)
{
	switch (in->kind) {
	case PASCO_INIT_ZEROS:
		return 0;
	case PASCO_INIT_ONES:
		return 1;
	case PASCO_INIT_CONSTANT:
		return in->value;
	case PASCO_INIT_UNIFORM:
		return in->minval +
		       (in->maxval - in->minval) * unit(in->seed, g);
	case PASCO_INIT_NORMAL:
		return in->mean + in->stddev * std_normal(in->seed, g, 0);
	case PASCO_INIT_TRUNCATED_NORMAL:
		for (uint64_t k = 0; k < 63; k++) {
			double z = std_normal(in->seed, g, k);
			if (fabs(z) <= 2.0) {
				return in->mean + in->stddev * z;
			}
		}
		return in->mean; /* 63 misses in a row: p < 1e-80 */
	case PASCO_INIT_GLOROT_UNIFORM:
		return -limit + 2 * limit * unit(in->seed, g);
	}
	return NAN;
}

int
pasco_initializer_fill(const pasco_initializer *init, pasco_tensor *t,
    int32_t full_rank, const int64_t *full_shape, int64_t row_offset)
{
	double   fan_in, fan_out, limit;
	uint64_t row_elems = 1; /* unsigned: a crafted shape wraps, no UB */

	if (init == NULL || init->kind < PASCO_INIT_ZEROS ||
	    init->kind > PASCO_INIT_GLOROT_UNIFORM || full_rank != t->rank ||
	    row_offset < 0 || (full_rank == 0 && row_offset != 0) ||
	    (full_rank > 0 && (t->shape[0] > full_shape[0] ||
	                          row_offset > full_shape[0] - t->shape[0]))) {
		return PASCO_EINVAL;
	}
	for (int32_t i = 1; i < full_rank; i++) {
		if (t->shape[i] != full_shape[i]) {
			return PASCO_EINVAL;
		}
		row_elems *= (uint64_t) full_shape[i];
	}
	fans(full_rank, full_shape, &fan_in, &fan_out);
	limit = sqrt(6.0 / (fan_in + fan_out));
	for (int64_t i = 0; i < t->count; i++) {
		uint64_t g = (uint64_t) row_offset * row_elems + (uint64_t) i;
		pasco_tensor_set(t, i, value_at(init, g, limit));
	}
	return PASCO_OK;
}

int
pasci_initializer_fill_key(const pasco_initializer *init, uint64_t table_seed,
    uint64_t key, float *row, int64_t dim)
{
	uint64_t base =
	    pasci_mix64(key ^ pasci_mix64(table_seed ^ 0x6a09e667f3bcc909ULL));
	if (init == NULL || init->kind < PASCO_INIT_ZEROS ||
	    init->kind >= PASCO_INIT_GLOROT_UNIFORM) {
		return PASCO_EINVAL;
	}
	for (int64_t j = 0; j < dim; j++) {
		row[j] = (float) value_at(init, base + (uint64_t) j, 0);
	}
	return PASCO_OK;
}
