/*
 * The worker and ps program of the model tests (test_model_fit.c): no
 * model code and no step function, only dataset factories. The model
 * arrives as step arguments and the library's own steps train, evaluate
 * and predict it.
 */
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>

#include "model_data.h"

typedef struct stream {
	uint64_t seed, next;
	int      width; /* 0: keyed examples */
} stream;

static int
stream_next(void *arg, pasco_value **out)
{
	stream *s = arg;
	*out      = s->width > 0
	                ? md_batch(s->seed, s->next, 1, MD_BATCH, s->width)
	                : md_keys_batch(s->seed, s->next, 1, MD_BATCH, false);
	s->next += MD_BATCH;
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

static int
train_stream(const pasco_dataset_context *ctx, int width, pasco_dataset **out)
{
	stream *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		return PASCO_ENOMEM;
	}
	s->seed  = 1000 + (uint64_t) ctx->worker_index;
	s->width = width;
	return pasco_dataset_from_generator(out, stream_next, NULL, free, s);
}

/* Endless (x, y) batches of 32, each worker its own stream. */
PASCO_DATASET(md_train)
{
	return train_stream(ctx, MD_FEATURES, out);
}

/* The same with 3 features: the model's first Dense refuses them. */
PASCO_DATASET(md_bad_width)
{
	return train_stream(ctx, MD_FEATURES - 1, out);
}

/* Shard worker_index of num_workers of the MD_EVAL evaluation examples
 * (seed 7): examples i % num_workers == worker_index, in batches of
 * MD_EVAL_BATCH, then the end. */
PASCO_DATASET(md_eval)
{
	int64_t k = ctx->worker_index, n = ctx->num_workers;
	return md_eval_batches(md_batch(7, (uint64_t) k, (uint64_t) n,
	                           (MD_EVAL - k + n - 1) / n, MD_FEATURES),
	    out);
}

/* md_eval's shard repeated forever: evaluate and predict refuse it. */
PASCO_DATASET(md_eval_forever)
{
	pasco_dataset *ds;
	int            rv = md_eval(ctx, &ds);
	return rv != 0 ? rv : pasco_dataset_repeat(out, ds, -1);
}

/* Endless keyed batches (a dynamic Embedding's), each worker its own. */
PASCO_DATASET(md_keys)
{
	return train_stream(ctx, 0, out);
}

/* 200 keyed examples (seed 7) whose last word is new, in this worker's
 * share, batches of MD_EVAL_BATCH. */
PASCO_DATASET(md_keys_eval)
{
	return md_keys_eval_dataset(ctx, out);
}

static int
no_chief(const pasco_cluster *cluster, int argc, char **argv)
{
	(void) cluster;
	(void) argc;
	fprintf(stderr, "%s runs as a worker or a ps only\n", argv[0]);
	return 2;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, no_chief);
}
