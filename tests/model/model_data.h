/*
 * The synthetic data of the model tests (test_model_fit.c and its worker
 * program model_node.c): 4 features in [-1, 1), the class the index of
 * the largest of the first 3 (linearly separable), drawn from a seed.
 */
#ifndef TESTS_MODEL_DATA_H
#define TESTS_MODEL_DATA_H

#include <pasco.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define MD_FEATURES 4
#define MD_CLASSES 3
#define MD_BATCH 32
#define MD_EVAL 300 /* evaluation examples */
#define MD_EVAL_BATCH                                                         \
	25 /* per evaluation batch (the last of a shard short)                \
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

/* Keyed examples (a dynamic Embedding): 3 words of MD_WORDS, hashed
 * ("w<i>" by pasco_hash_key), the label 1 when most of the words' indexes
 * are even; with fresh, the first two words are of one parity, which is
 * the label, and the last is one never seen in training ("fresh<i>"). (x i64
 * [n, 3], y f32 [n]) of examples first, first + step, ... */
#define MD_WORDS 60
#define MD_KEYS 3

static inline pasco_value *
md_keys_batch(
    uint64_t seed, uint64_t first, uint64_t step, int64_t n, bool fresh)
{
	pasco_tensor *x, *y;
	char          word[32];
	if (pasco_tensor_alloc(&x, PASCO_I64, 2, (int64_t[]){n, MD_KEYS}) !=
	    0) {
		return NULL;
	}
	if (pasco_tensor_alloc(&y, PASCO_F32, 1, (int64_t[]){n}) != 0) {
		pasco_tensor_release(x);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++) {
		uint64_t e    = first + (uint64_t) i * step;
		int64_t  even = 0, w0 = 0;
		for (int j = 0; j < MD_KEYS; j++) {
			double u =
			    (md_uniform(seed, e * MD_KEYS + (uint64_t) j) +
			        1.0) /
			    2.0;
			int64_t w = (int64_t) (u * MD_WORDS) % MD_WORDS;
			if (fresh && j == 1 && w % 2 != w0 % 2) {
				w = (w + 1) % MD_WORDS; /* MD_WORDS is even */
			}
			w0 = j == 0 ? w : w0;
			int len =
			    fresh && j == MD_KEYS - 1
			        ? snprintf(word, sizeof(word), "fresh%llu",
			              (unsigned long long) e)
			        : snprintf(word, sizeof(word), "w%lld",
			              (long long) w);
			even += w % 2 == 0 && !(fresh && j == MD_KEYS - 1);
			((int64_t *) x->data)[i * MD_KEYS + j] =
			    pasco_hash_key(word, (size_t) len);
		}
		((float *) y->data)[i] =
		    (fresh ? even == 2 : 2 * even > MD_KEYS) ? 1.0f : 0.0f;
	}
	return pasco_value_list(
	    2, pasco_value_tensor(x), pasco_value_tensor(y));
}

/* A worker's share of evaluation examples (all: the batch of them,
 * taken over) as a dataset of batches of MD_EVAL_BATCH, once. */
static inline int
md_eval_batches(pasco_value *all, pasco_dataset **out)
{
	pasco_dataset *ds;
	int            rv;
	if (all == NULL) {
		return PASCO_ENOMEM;
	}
	rv = pasco_dataset_from_tensors(&ds, all);
	pasco_value_free(all);
	return rv != 0 ? rv
	               : pasco_dataset_batch(out, ds, MD_EVAL_BATCH, false);
}

/* Shard worker_index of num_workers of 200 keyed examples (seed 7) whose
 * last word is new: the md_keys_eval factory of model_node.c and of the
 * test's own sidecar evaluator. */
static inline int
md_keys_eval_dataset(const pasco_dataset_context *ctx, pasco_dataset **out)
{
	int64_t k = ctx->worker_index, n = ctx->num_workers;
	return md_eval_batches(md_keys_batch(7, (uint64_t) k, (uint64_t) n,
	                           (200 - k + n - 1) / n, true),
	    out);
}

#endif
