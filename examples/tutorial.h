/*
 * The tutorial model of TensorFlow's "Parameter server training with
 * ParameterServerStrategy", shared by examples/embedding_classifier (fit)
 * and examples/custom_loop (the tape): its data and its model.
 *
 * Examples are 3 distinct words of a 7-word vocabulary as ids (0 is
 * out-of-vocabulary, as StringLookup's); the label is 1 iff "avenger" (id
 * 1) is one of them. An [8, 16384] Embedding (split over the ps by the
 * strategy's partitioner), the mean over the words, one sigmoid Dense with
 * L2(1e-4); RMSprop(0.1), binary cross-entropy, accuracy.
 */
#ifndef PASCO_EXAMPLES_TUTORIAL_H
#define PASCO_EXAMPLES_TUTORIAL_H

#include <pasco.h>
#include <stdlib.h>

/* n examples, (ids [n, 3], labels [n]), drawn from seed. */
static pasco_value *
examples(int64_t n, unsigned seed)
{
	pasco_tensor *x = NULL, *y = NULL;
	if (pasco_tensor_alloc(&x, PASCO_I64, 2, (int64_t[]){n, 3}) ||
	    pasco_tensor_alloc(&y, PASCO_F32, 1, &n)) {
		pasco_tensor_release(x);
		return NULL;
	}
	for (int64_t i = 0, k = 0, used = 0; i < n; i++, k = used = 0) {
		while (k < 3) { /* random.sample: distinct words */
			int64_t w = 1 + rand_r(&seed) % 7;
			if (!(used & 1 << w)) {
				used |= 1 << w;
				pasco_tensor_set(x, i * 3 + k++, (double) w);
			}
		}
		pasco_tensor_set(y, i, (used & 2) != 0);
	}
	return pasco_value_list(
	    2, pasco_value_tensor(x), pasco_value_tensor(y));
}

/* n examples of seed, shard worker_index of num_workers when eval (in
 * batches of 8, once), else shuffled per worker in batches of 32,
 * repeated. */
static int
tutorial_data(const pasco_dataset_context *ctx, pasco_dataset **out, int64_t n,
    unsigned seed, bool eval)
{
	pasco_value *v  = examples(n, seed);
	int          rv = pasco_dataset_from_tensors(out, v);
	pasco_value_free(v);
	if (eval) {
		rv = rv ? rv
		        : pasco_dataset_shard(
		              out, *out, ctx->num_workers, ctx->worker_index);
		return rv ? rv : pasco_dataset_batch(out, *out, 8, false);
	}
	rv = rv ? rv
	        : pasco_dataset_shuffle(
	              out, *out, n, 100 + (uint64_t) ctx->worker_index);
	rv = rv ? rv : pasco_dataset_batch(out, *out, 32, false);
	return rv ? rv : pasco_dataset_repeat(out, *out, -1);
}

/* The same 200 training examples on every worker; 64 held-out ones. */
PASCO_DATASET(train_data)
{
	return tutorial_data(ctx, out, 200, 1, false);
}

PASCO_DATASET(eval_data)
{
	return tutorial_data(ctx, out, 64, 3, true);
}

/* The model, compiled; with logits, its output is the logit, not the
 * probability (from_logits). NULL on failure (pasco_model_last_error). */
static pasco_model *
tutorial_model(bool logits)
{
	pasco_layer  l[] = {pasco_layer_embedding(8, 16384),
	     pasco_layer_dense(
	         1, logits ? PASCO_ACT_LINEAR : PASCO_ACT_SIGMOID)};
	pasco_model *m   = NULL;
	l[1].kernel_l2   = 1e-4;
	if (pasco_model_sequential(&m, 3, 2, l, 1) == 0 &&
	    pasco_model_compile(
	        m, &(pasco_compile_options){.loss = "binary_crossentropy",
	               .from_logits               = logits,
	               .optimizer = pasco_rmsprop(0.1, 0.9, 0, false),
	               .metrics   = (const char *[]){"accuracy"},
	               .nmetrics  = 1}) != 0) {
		pasco_model_free(m);
		m = NULL;
	}
	return m;
}

#endif
