/*
 * Initializer fill, run by a ps when it creates a shard. Element g's value
 * comes from a counter-based generator keyed by (seed, g), so any shard
 * computes exactly the values the whole variable would have. Pure;
 * thread-safe.
 */
#include "pasco/initializer.h"

#include "initializer_impl.h"

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

double
pasci_init_std_normal(uint64_t seed, uint64_t g, uint64_t k)
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

/* Keras's truncated normal (stddev 1) cut at 2, drawn again beyond. */
static double
truncated(uint64_t seed, uint64_t g)
{
	for (uint64_t k = 0; k < 63; k++) {
		double z = pasci_init_std_normal(seed, g, k);
		if (fabs(z) <= 2.0) {
			return z;
		}
	}
	return 0; /* 63 misses in a row: p < 1e-80 */
}

/* A VarianceScaling kind's (scale, mode, distribution). */
static pasco_initializer
scaling_of(const pasco_initializer *in)
{
	pasco_initializer v = *in;
	switch (in->kind) {
	case PASCO_INIT_GLOROT_NORMAL:
		v.scale        = 1;
		v.mode         = PASCO_FAN_AVG;
		v.distribution = PASCO_DIST_TRUNCATED_NORMAL;
		return v;
	case PASCO_INIT_HE_NORMAL:
	case PASCO_INIT_HE_UNIFORM:
		v.scale = 2;
		break;
	case PASCO_INIT_LECUN_NORMAL:
	case PASCO_INIT_LECUN_UNIFORM:
		v.scale = 1;
		break;
	default:
		return v;
	}
	v.mode         = PASCO_FAN_IN;
	v.distribution = in->kind == PASCO_INIT_HE_UNIFORM ||
	                         in->kind == PASCO_INIT_LECUN_UNIFORM
	                     ? PASCO_DIST_UNIFORM
	                     : PASCO_DIST_TRUNCATED_NORMAL;
	return v;
}

/* VarianceScaling's draw of element g: width is its stddev, or the
 * uniform's limit. */
static double
scaled(const pasco_initializer *v, uint64_t g, double width)
{
	switch (v->distribution) {
	case PASCO_DIST_TRUNCATED_NORMAL:
		return width * truncated(v->seed, g);
	case PASCO_DIST_UNTRUNCATED_NORMAL:
		return width * pasci_init_std_normal(v->seed, g, 0);
	default:
		return -width + 2 * width * unit(v->seed, g);
	}
}

/* VarianceScaling's width from the fans: stddev sqrt(s) (corrected for
 * the truncation by Keras's 0.87962566103423978), or limit sqrt(3 s), s =
 * scale / max(1, n). */
static double
scaled_width(const pasco_initializer *v, double fan_in, double fan_out)
{
	double n = v->mode == PASCO_FAN_IN    ? fan_in
	           : v->mode == PASCO_FAN_OUT ? fan_out
	                                      : (fan_in + fan_out) / 2;
	double s = v->scale / fmax(1.0, n);
	return v->distribution == PASCO_DIST_TRUNCATED_NORMAL
	           ? sqrt(s) / 0.87962566103423978
	       : v->distribution == PASCO_DIST_UNTRUNCATED_NORMAL
	           ? sqrt(s)
	           : sqrt(3 * s);
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
		return in->mean +
		       in->stddev * pasci_init_std_normal(in->seed, g, 0);
	case PASCO_INIT_TRUNCATED_NORMAL:
		return in->mean + in->stddev * truncated(in->seed, g);
	case PASCO_INIT_GLOROT_UNIFORM:
		return -limit + 2 * limit * unit(in->seed, g);
	default: /* VarianceScaling's: limit is its width */
		return scaled(in, g, limit);
	}
}

int
pasco_initializer_fill(const pasco_initializer *init, pasco_tensor *t,
    int32_t full_rank, const int64_t *full_shape, int64_t row_offset)
{
	double   fan_in, fan_out, limit;
	uint64_t row_elems = 1; /* unsigned: a crafted shape wraps, no UB */

	pasco_initializer v;
	if (!pasco_initializer_is_valid(init) || full_rank != t->rank ||
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
	if (init->kind == PASCO_INIT_ORTHOGONAL) {
		return pasci_init_orthogonal(
		    init, t, full_rank, full_shape, row_offset);
	}
	fans(full_rank, full_shape, &fan_in, &fan_out);
	v     = scaling_of(init);
	limit = init->kind >= PASCO_INIT_GLOROT_NORMAL
	            ? scaled_width(&v, fan_in, fan_out)
	            : sqrt(6.0 / (fan_in + fan_out));
	for (int64_t i = 0; i < t->count; i++) {
		uint64_t g = (uint64_t) row_offset * row_elems + (uint64_t) i;
		pasco_tensor_set(t, i, value_at(&v, g, limit));
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
