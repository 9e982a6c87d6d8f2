/*
 * Initializer configurations (see initializer.h): plain values the
 * coordinator sends with VAR_CREATE; a ps fills the shard
 * (ps/initializer_fill.c). Pure; thread-safe.
 */
#include "pasco/initializer.h"

pasco_initializer
pasco_init_zeros(void)
{
	return (pasco_initializer){.kind = PASCO_INIT_ZEROS};
}

pasco_initializer
pasco_init_ones(void)
{
	return (pasco_initializer){.kind = PASCO_INIT_ONES};
}

pasco_initializer
pasco_init_constant(double value)
{
	return (pasco_initializer){
	    .kind = PASCO_INIT_CONSTANT, .value = value};
}

pasco_initializer
pasco_init_uniform(double minval, double maxval, uint64_t seed)
{
	return (pasco_initializer){.kind = PASCO_INIT_UNIFORM,
	    .minval                      = minval,
	    .maxval                      = maxval,
	    .seed                        = seed};
}

pasco_initializer
pasco_init_normal(double mean, double stddev, uint64_t seed)
{
	return (pasco_initializer){.kind = PASCO_INIT_NORMAL,
	    .mean                        = mean,
	    .stddev                      = stddev,
	    .seed                        = seed};
}

pasco_initializer
pasco_init_truncated_normal(double mean, double stddev, uint64_t seed)
{
	return (pasco_initializer){.kind = PASCO_INIT_TRUNCATED_NORMAL,
	    .mean                        = mean,
	    .stddev                      = stddev,
	    .seed                        = seed};
}

pasco_initializer
pasco_init_glorot_uniform(uint64_t seed)
{
	return (pasco_initializer){
	    .kind = PASCO_INIT_GLOROT_UNIFORM, .seed = seed};
}

pasco_initializer
pasco_init_variance_scaling(double scale, pasco_init_mode mode,
    pasco_init_distribution distribution, uint64_t seed)
{
	return (pasco_initializer){.kind = PASCO_INIT_VARIANCE_SCALING,
	    .scale                       = scale,
	    .mode                        = mode,
	    .distribution                = distribution,
	    .seed                        = seed};
}

static pasco_initializer
named(pasco_init_kind kind, uint64_t seed)
{
	return (pasco_initializer){.kind = kind, .seed = seed};
}

pasco_initializer
pasco_init_glorot_normal(uint64_t seed)
{
	return named(PASCO_INIT_GLOROT_NORMAL, seed);
}

pasco_initializer
pasco_init_he_normal(uint64_t seed)
{
	return named(PASCO_INIT_HE_NORMAL, seed);
}

pasco_initializer
pasco_init_he_uniform(uint64_t seed)
{
	return named(PASCO_INIT_HE_UNIFORM, seed);
}

pasco_initializer
pasco_init_lecun_normal(uint64_t seed)
{
	return named(PASCO_INIT_LECUN_NORMAL, seed);
}

pasco_initializer
pasco_init_lecun_uniform(uint64_t seed)
{
	return named(PASCO_INIT_LECUN_UNIFORM, seed);
}

pasco_initializer
pasco_init_orthogonal(double gain, uint64_t seed)
{
	return (pasco_initializer){
	    .kind = PASCO_INIT_ORTHOGONAL, .scale = gain, .seed = seed};
}
