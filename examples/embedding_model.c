/*
 * The tutorial model of examples/embedding_classifier, the part its workers
 * run: the vocabulary and the examples, the per-worker datasets, the
 * forward and backward passes, and the step functions (training, the fit
 * path's step, exactly-once validation of a shard, evaluation with a
 * metric on a ps). embedding_classifier.c is the coordinator's program.
 */
#include <math.h>
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embedding_model.h"
static const char *vocabulary[VOCAB] = {"avenger", "ironman", "batman", "hulk",
    "spiderman", "kingkong", "wonder_woman"};

/* StringLookup: 1 + the word's index, 0 when unknown. */
static int64_t
lookup(const char *word)
{
	for (int i = 0; i < VOCAB; i++) {
		if (strcmp(word, vocabulary[i]) == 0) {
			return i + 1;
		}
	}
	return 0;
}

static uint64_t
next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
	z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z          = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* n examples: word ids [n, 3] (i64) and labels [n] (f32), as the
 * tutorial's feature_and_label_gen then the lookup layers. */
pasco_value *
make_examples(int64_t n, uint64_t seed)
{
	pasco_tensor *ids, *labels;
	if (pasco_tensor_alloc(&ids, PASCO_I64, 2, (int64_t[]){n, WORDS}) !=
	    0) {
		return NULL;
	}
	if (pasco_tensor_alloc(&labels, PASCO_F32, 1, &n) != 0) {
		pasco_tensor_release(ids);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++) {
		int  picked[VOCAB] = {0};
		bool avenger       = false;
		for (int j = 0; j < WORDS; j++) {
			int w;
			do { /* random.sample: distinct words */
				w = (int) (next_random(&seed) % VOCAB);
			} while (picked[w]);
			picked[w] = 1;
			avenger =
			    avenger || strcmp(vocabulary[w], "avenger") == 0;
			((int64_t *) ids->data)[i * WORDS + j] =
			    lookup(vocabulary[w]);
		}
		((float *) labels->data)[i] = avenger ? 1.0f : 0.0f;
	}
	return pasco_value_list(
	    2, pasco_value_tensor(ids), pasco_value_tensor(labels));
}

/* from_tensor_slices(examples).shuffle(n).batch(batch).repeat() */
static int
example_dataset(pasco_dataset **out, int64_t n, uint64_t data_seed,
    uint64_t shuffle_seed, int64_t batch)
{
	pasco_value   *examples = make_examples(n, data_seed);
	pasco_dataset *ds;
	int            rv;
	if (examples == NULL) {
		return PASCO_ENOMEM;
	}
	rv = pasco_dataset_from_tensors(&ds, examples);
	pasco_value_free(examples);
	if (rv == 0) {
		rv = pasco_dataset_shuffle(&ds, ds, n, shuffle_seed);
	}
	if (rv == 0) {
		rv = pasco_dataset_batch(&ds, ds, batch, false);
	}
	return rv == 0 ? pasco_dataset_repeat(out, ds, -1) : rv;
}

/* The same 200 training examples on every worker, shuffled per worker. */
PASCO_DATASET(train_data)
{
	return example_dataset(
	    out, 200, 1, 100 + (uint64_t) ctx->worker_index, 32);
}

PASCO_DATASET(eval_data)
{
	return example_dataset(
	    out, 64, 2, 200 + (uint64_t) ctx->worker_index, 8);
}

/* Forward pass: logits [batch, 1] and pred = sigmoid(logits), and the
 * averaged embeddings [batch, DIM] and the kernel, kept for the backward
 * pass. (logits may be NULL when not wanted.) */
int
forward(model *m, const pasco_tensor *ids, pasco_tensor **logits,
    pasco_tensor **pred, pasco_tensor **avg, pasco_tensor **kernel)
{
	pasco_tensor *rows = NULL, *bias = NULL, *z = NULL, *zb = NULL;
	int           rv;
	*pred = *avg = *kernel = NULL;
	if ((rv = pasco_variable_gather(m->emb, ids, &rows)) == 0 &&
	    (rv = pasco_embedding_combine(rows, PASCO_COMBINE_MEAN, avg)) ==
	        0 &&
	    (rv = pasco_variable_read(m->kernel, kernel)) == 0 &&
	    (rv = pasco_variable_read(m->bias, &bias)) == 0 &&
	    (rv = pasco_matmul(*avg, false, *kernel, false, &z)) == 0 &&
	    (rv = pasco_bias_add(z, bias, &zb)) == 0) {
		rv = pasco_activate(PASCO_SIGMOID, zb, pred);
	}
	if (logits != NULL) {
		*logits = zb;
		zb      = NULL;
	}
	pasco_tensor_release(rows);
	pasco_tensor_release(bias);
	pasco_tensor_release(z);
	pasco_tensor_release(zb);
	return rv;
}

static int
model_from_call(pasco_call *call, size_t first, model *m)
{
	int rv;
	if ((rv = pasco_call_variable(call, first, &m->emb)) != 0 ||
	    (rv = pasco_call_variable(call, first + 1, &m->kernel)) != 0 ||
	    (rv = pasco_call_variable(call, first + 2, &m->bias)) != 0) {
		return rv;
	}
	return PASCO_OK;
}

/* Backward pass from dz, the loss gradient of the logits, and the three
 * updates. */
static int
backward(model *m, const pasco_tensor *ids, const pasco_tensor *avg,
    const pasco_tensor *kernel, const pasco_tensor *dz,
    const pasco_optimizer *opt)
{
	pasco_tensor *dkernel = NULL, *dbias = NULL, *davg = NULL;
	pasco_tensor *drows = NULL;
	int           rv;
	if ((rv = pasco_matmul(avg, true, dz, false, &dkernel)) != 0 ||
	    (rv = pasco_bias_add_grad(dz, &dbias)) != 0 ||
	    (rv = pasco_matmul(dz, false, kernel, true, &davg)) != 0 ||
	    (rv = pasco_embedding_combine_grad(
	         davg, WORDS, PASCO_COMBINE_MEAN, &drows)) != 0) {
		goto out;
	}
	pasco_l2_penalty(kernel, L2, dkernel);
	/* One apply for the three, every request in flight together (and
	 * one global step, had opt one): the table's gradient is sparse, its
	 * rows one per (example, word), ids [b, 3] with rows [b, 3, DIM]. */
	{
		pasco_variable     *vars[]   = {m->emb, m->kernel, m->bias};
		const pasco_tensor *rowids[] = {ids, NULL, NULL};
		pasco_tensor       *grads[]  = {drows, dkernel, dbias};
		rv = pasco_variable_apply_gradients_mixed(
		    3, vars, opt, rowids, grads);
	}
out:
	pasco_tensor_release(dkernel);
	pasco_tensor_release(dbias);
	pasco_tensor_release(davg);
	pasco_tensor_release(drows);
	return rv;
}

static int
fail_with(pasco_call *call, model *m, int rv)
{
	const char *why = pasco_variable_error(m->emb)[0]
	                      ? pasco_variable_error(m->emb)
	                  : pasco_variable_error(m->kernel)[0]
	                      ? pasco_variable_error(m->kernel)
	                      : pasco_variable_error(m->bias);
	return pasco_call_fail(
	    call, rv, "%s", why[0] ? why : pasco_strerror(rv));
}

/* Why pasco_dataset_next failed: the source's message, or the code's. */
static const char *
data_error(int rv)
{
	const char *why = pasco_dataset_last_error();
	return why[0] != 0 ? why : pasco_strerror(rv);
}

/* The fraction of pred (probabilities) on the side of 0.5 of labels. */
static double
batch_accuracy(const pasco_tensor *pred, const pasco_tensor *labels)
{
	int64_t correct = 0;
	for (int64_t i = 0; i < pred->count; i++) {
		correct += (pasco_tensor_get(pred, i) > 0.5) ==
		           (pasco_tensor_get(labels, i) > 0.5);
	}
	return pred->count > 0 ? (double) correct / (double) pred->count : 0;
}

/* One training step. args: iterator, emb, kernel, bias, accuracy state.
 * The batch's loss and accuracy into *loss and *accuracy. */
static int
train_once(pasco_call *call, double *loss, double *accuracy)
{
	pasco_dataset  *it;
	pasco_variable *acc;
	model           m;
	pasco_value    *batch;
	pasco_tensor *logits = NULL, *pred = NULL, *avg = NULL, *kernel = NULL;
	pasco_tensor *dz    = NULL;
	pasco_optimizer opt = pasco_rmsprop(0.1, 0.9, 0, false);
	int             rv;

	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = model_from_call(call, 1, &m)) != 0 ||
	    (rv = pasco_call_variable(call, 4, &acc)) != 0) {
		return rv;
	}
	if ((rv = pasco_dataset_next(it, &batch)) != 0) {
		return pasco_call_fail(call, rv, "no training data: %s",
		    pasco_dataset_last_error());
	}
	const pasco_tensor *ids =
	    pasco_value_as_tensor(pasco_value_item(batch, 0));
	const pasco_tensor *labels =
	    pasco_value_as_tensor(pasco_value_item(batch, 1));
	/* Keras computes the cross-entropy of a sigmoid output from its
	 * logits, so saturated outputs still get a gradient: so do we. */
	if ((rv = forward(&m, ids, &logits, &pred, &avg, &kernel)) == 0 &&
	    (rv = pasco_binary_crossentropy_logits(
	         logits, labels, loss, &dz)) == 0 &&
	    (rv = backward(&m, ids, avg, kernel, dz, &opt)) == 0) {
		*loss += pasco_l2_penalty(kernel, L2, NULL);
		*accuracy = batch_accuracy(pred, labels);
		rv        = pasco_metric_update(
		           acc, PASCO_METRIC_ACCURACY, pred, labels);
	}
	pasco_tensor_release(logits);
	pasco_tensor_release(pred);
	pasco_tensor_release(avg);
	pasco_tensor_release(kernel);
	pasco_tensor_release(dz);
	pasco_value_free(batch);
	return rv != 0 ? fail_with(call, &m, rv) : PASCO_OK;
}

/* args: iterator, emb, kernel, bias, accuracy state. Returns the loss. */
PASCO_FUNCTION(train_step)
{
	double        loss, accuracy;
	pasco_tensor *loss_t;
	int           rv = train_once(call, &loss, &accuracy);
	if (rv == 0 && pasco_tensor_scalar(&loss_t, PASCO_F32, loss) == 0) {
		pasco_call_return(call, pasco_value_tensor(loss_t));
	}
	return rv;
}

/* The step of the fit path: as train_step, returning [loss, accuracy]
 * (the batch's), the loss and metric pasco_fit averages per epoch. */
PASCO_FUNCTION(fit_step)
{
	double        loss, accuracy;
	pasco_tensor *out;
	int           rv = train_once(call, &loss, &accuracy);
	if (rv == 0 &&
	    pasco_tensor_alloc(&out, PASCO_F64, 1, (int64_t[]){2}) == 0) {
		pasco_tensor_set(out, 0, loss);
		pasco_tensor_set(out, 1, accuracy);
		pasco_call_return(call, pasco_value_tensor(out));
	}
	return rv;
}

/* Rows i of src ([n, ...]) with i % shards == shard. */
static int
shard_rows(
    const pasco_tensor *src, int64_t shard, int64_t shards, pasco_tensor **out)
{
	int64_t shape[PASCO_MAX_RANK], rows = 0;
	size_t  row_bytes = src->nbytes / (size_t) src->shape[0];
	memcpy(shape, src->shape, sizeof(shape));
	shape[0] = (src->shape[0] - shard + shards - 1) / shards;
	int rv   = pasco_tensor_alloc(out, src->dtype, src->rank, shape);
	for (int64_t i = shard; rv == 0 && i < src->shape[0]; i += shards) {
		memcpy((char *) (*out)->data + (size_t) rows++ * row_bytes,
		    (const char *) src->data + (size_t) i * row_bytes,
		    row_bytes);
	}
	return rv;
}

/* Validation of the fit path, exactly once per example (pasco_fit's
 * convention): args emb, kernel, bias, then shard and shards; returns the
 * shard's [sum of losses, correct predictions, examples] over the 64
 * held-out examples of evaluate_on_coordinator. */
PASCO_FUNCTION(eval_shard)
{
	model               m;
	const pasco_tensor *k, *n;
	pasco_value        *ex = make_examples(64, 3);
	pasco_tensor *ids = NULL, *labels = NULL, *logits = NULL, *pred = NULL;
	pasco_tensor *avg = NULL, *kernel = NULL, *dz = NULL, *out = NULL;
	double        loss = 0;
	int           rv;

	if ((rv = model_from_call(call, 0, &m)) != 0) {
		pasco_value_free(ex);
		return rv;
	}
	if (ex == NULL) {
		return pasco_call_fail(call, PASCO_ENOMEM, "no memory");
	}
	if ((rv = pasco_call_tensor(call, 3, &k)) == 0 &&
	    (rv = pasco_call_tensor(call, 4, &n)) == 0 &&
	    (rv = shard_rows(pasco_value_as_tensor(pasco_value_item(ex, 0)),
	         (int64_t) pasco_tensor_get(k, 0),
	         (int64_t) pasco_tensor_get(n, 0), &ids)) == 0 &&
	    (rv = shard_rows(pasco_value_as_tensor(pasco_value_item(ex, 1)),
	         (int64_t) pasco_tensor_get(k, 0),
	         (int64_t) pasco_tensor_get(n, 0), &labels)) == 0 &&
	    ids->shape[0] > 0 &&
	    (rv = forward(&m, ids, &logits, &pred, &avg, &kernel)) == 0 &&
	    (rv = pasco_binary_crossentropy_logits(
	         logits, labels, &loss, &dz)) == 0) {
		loss += pasco_l2_penalty(kernel, L2, NULL);
	}
	if (rv == 0 && (rv = pasco_tensor_alloc(
	                    &out, PASCO_F64, 1, (int64_t[]){3})) == 0) {
		double count = ids != NULL ? (double) ids->shape[0] : 0;
		pasco_tensor_set(out, 0, loss * count);
		pasco_tensor_set(out, 1,
		    pred != NULL ? batch_accuracy(pred, labels) * count : 0);
		pasco_tensor_set(out, 2, count);
		pasco_call_return(call, pasco_value_tensor(out));
	}
	pasco_tensor_release(ids);
	pasco_tensor_release(labels);
	pasco_tensor_release(logits);
	pasco_tensor_release(pred);
	pasco_tensor_release(avg);
	pasco_tensor_release(kernel);
	pasco_tensor_release(dz);
	pasco_value_free(ex);
	return rv != 0 ? fail_with(call, &m, rv) : PASCO_OK;
}

/* args: iterator, emb, kernel, bias, eval accuracy state. */
PASCO_FUNCTION(eval_step)
{
	pasco_dataset  *it;
	pasco_variable *acc;
	model           m;
	pasco_value    *batch;
	pasco_tensor   *pred, *avg, *kernel;
	int             rv;

	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = model_from_call(call, 1, &m)) != 0 ||
	    (rv = pasco_call_variable(call, 4, &acc)) != 0) {
		return rv;
	}
	if ((rv = pasco_dataset_next(it, &batch)) != 0) {
		return pasco_call_fail(
		    call, rv, "no evaluation data: %s", data_error(rv));
	}
	rv = forward(&m, pasco_value_as_tensor(pasco_value_item(batch, 0)),
	    NULL, &pred, &avg, &kernel);
	if (rv == 0) {
		rv = pasco_metric_update(acc, PASCO_METRIC_ACCURACY, pred,
		    pasco_value_as_tensor(pasco_value_item(batch, 1)));
	}
	pasco_tensor_release(pred);
	pasco_tensor_release(avg);
	pasco_tensor_release(kernel);
	pasco_value_free(batch);
	return rv != 0 ? fail_with(call, &m, rv) : PASCO_OK;
}
