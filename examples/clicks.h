/* The synthetic click data of examples/sparse_logreg (seed 004): shared by
 * the generator (make_clicks) and the trainer. */
#ifndef PASCO_EXAMPLES_CLICKS_H
#define PASCO_EXAMPLES_CLICKS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#define CLICK_IDS 10 /* features per example */

static inline uint64_t
click_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static inline double
click_unit(uint64_t z)
{
	return ((double) (click_mix(z) >> 11) + 0.5) * 0x1p-53;
}

/* The true weight of raw feature f: a fixed pseudo-random draw in
 * [-1.5, 1.5]. */
static inline double
click_true_weight(uint64_t f)
{
	return 3.0 * click_unit(f * 7919 + 17) - 1.5;
}

#define CLICK_VOCAB 20000 /* distinct raw features */

/* A raw feature of click data: skewed (a few are frequent, most rare),
 * written as a string ("ad=<f>", click_name) as a log has it; the trainer
 * hashes the strings to 64-bit keys of a dynamic table. */
static inline uint64_t
click_feature(uint64_t z)
{
	double u = click_unit(z);
	return (uint64_t) ((double) CLICK_VOCAB * u * u);
}

static inline int
click_name(char *buf, size_t len, uint64_t f)
{
	return snprintf(buf, len, "ad=%llu", (unsigned long long) f);
}

#endif
