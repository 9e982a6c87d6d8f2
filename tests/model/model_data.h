/*
 * The synthetic data of the model tests (test_model_fit.c and its worker
 * program model_node.c): 4 features in [-1, 1), the class the index of
 * the largest of the first 3 (linearly separable), drawn from a seed.
 */
#ifndef TESTS_MODEL_DATA_H
#define TESTS_MODEL_DATA_H

#include <pasco.h>
#include <stdint.h>

#define MD_FEATURES 4
#define MD_CLASSES 3
#define MD_BATCH 32
#define MD_EVAL 300      /* evaluation examples */
#define MD_EVAL_BATCH 25 /* per evaluation batch (the last of a shard short)  \
	                  */

static inline double
md_uniform(uint64_t seed, uint64_t i)
{
	uint64_t z = seed * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull;
	z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return 2.0 * (double) (z >> 11) / 9007199254740992.0 - 1.0;
}

/* Example i of stream seed: x[MD_FEATURES] and its class. */
static inline int64_t
md_example(uint64_t seed, uint64_t i, float *x)
{
	int64_t best = 0;
	for (int j = 0; j < MD_FEATURES; j++) {
		x[j] =
		    (float) md_uniform(seed, i * MD_FEATURES + (uint64_t) j);
	}
	for (int j = 1; j < MD_CLASSES; j++) {
		best = x[j] > x[best] ? j : best;
	}
	return best;
}

/* (x [n, width], y [n]) of examples first, first + step, ... (n of them),
 * width features of each (a wrong width for the error test). */
static inline pasco_value *
md_batch(uint64_t seed, uint64_t first, uint64_t step, int64_t n, int width)
{
	pasco_tensor *x, *y;
	float         row[MD_FEATURES];
	if (pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){n, width}) != 0) {
		return NULL;
	}
	if (pasco_tensor_alloc(&y, PASCO_I64, 1, (int64_t[]){n}) != 0) {
		pasco_tensor_release(x);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++) {
		int64_t c = md_example(seed, first + (uint64_t) i * step, row);
		for (int j = 0; j < width; j++) {
			pasco_tensor_set(x, i * width + j, row[j]);
		}
		pasco_tensor_set(y, i, (double) c);
	}
	return pasco_value_list(
	    2, pasco_value_tensor(x), pasco_value_tensor(y));
}

#endif
