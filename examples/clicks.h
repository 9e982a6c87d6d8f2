/* The synthetic click data of examples/sparse_logreg (seed 004): shared by
 * the generator (make_clicks) and the trainer. */
#ifndef PASCO_EXAMPLES_CLICKS_H
#define PASCO_EXAMPLES_CLICKS_H

#include <math.h>
#include <stdint.h>

#define CLICK_FEATURES 1000000 /* rows of the weight table */
#define CLICK_IDS 10           /* ids per example */

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

/* The true weight of feature id: a fixed pseudo-random draw in [-1.5, 1.5]. */
static inline double
click_true_weight(int64_t id)
{
	return 3.0 * click_unit((uint64_t) id * 7919 + 17) - 1.5;
}

#define CLICK_VOCAB 20000 /* distinct raw features */

/* Feature ids of click data are skewed (a few raw features are frequent,
 * most rare) and hashed into the table, as a hashed feature column is: the
 * table is mostly empty rows. */
static inline int64_t
click_id(uint64_t z)
{
	double   u   = click_unit(z);
	uint64_t raw = (uint64_t) ((double) CLICK_VOCAB * u * u);
	return (int64_t) (click_mix(raw * 31 + 7) % CLICK_FEATURES);
}

#endif
