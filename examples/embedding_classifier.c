/* TensorFlow's "Parameter server training" tutorial with Model.fit:
 *     pasco launch --ps 2 --workers 2 -- build/examples/embedding_classifier
 * (examples/custom_loop trains its data and model with the tape.) */
#include "options.h"

/* n <= 200 examples of seed; eval: shard k of m in 8s, else shuffled 32s */
static int
tutorial_data(const pasco_dataset_context *ctx, pasco_dataset **out, int64_t n,
    unsigned seed, bool eval)
{
	int64_t x[200][3], used;
	float   y[200];
	for (int64_t i = 0, k = used = 0; i < n; i++, k = used = 0) {
		while (k < 3) { /* random.sample: 3 distinct words of 1..7 */
			int64_t w = 1 + rand_r(&seed) % 7;
			used |= (used & 1 << w) ? 0 : (x[i][k++] = w, 1 << w);
		}
		y[i] = (used & 2) != 0; /* 1 iff "avenger" is one of them */
	}
	pasco_tensor *xt = NULL, *yt = NULL;
	pasco_tensor_from(&xt, PASCO_I64, 2, (int64_t[]){n, 3}, x, n * 24);
	pasco_tensor_from(&yt, PASCO_F32, 1, &n, y, n * 4);
	pasco_value *v = pasco_value_list(
	    2, pasco_value_tensor(xt), pasco_value_tensor(yt));
	int rv = pasco_dataset_from_tensors(out, v);
	pasco_value_free(v);
	rv = rv     ? rv
	     : eval ? pasco_dataset_shard(
	                  out, *out, ctx->num_workers, ctx->worker_index)
	            : pasco_dataset_shuffle(
	                  out, *out, n, 100 + (uint64_t) ctx->worker_index);
	rv = rv ? rv : pasco_dataset_batch(out, *out, eval ? 8 : 32, false);
	return rv || eval ? rv : pasco_dataset_repeat(out, *out, -1);
}

PASCO_DATASET(train_data)
{
	return tutorial_data(ctx, out, 200, 1, false);
}
PASCO_DATASET(eval_data)
{
	return tutorial_data(ctx, out, 64, 3, true);
}

/* Embedding split over 2 ps, mean of the words, sigmoid Dense, L2(1e-4) */
static pasco_model *
tutorial_model(void)
{
	pasco_layer  l[] = {pasco_layer_embedding(8, 16384),
	     pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	pasco_model *m   = NULL;
	l[1].kernel_l2   = 1e-4;
	if (pasco_model_sequential(&m, 3, 2, l, 1) != 0 ||
	    pasco_model_compile(
	        m, &(pasco_compile_options){.loss = "binary_crossentropy",
	               .optimizer = pasco_rmsprop(0.1, 0.9, 0, false),
	               .metrics   = (const char *[]){"accuracy"},
	               .nmetrics  = 1}) != 0) {
		pasco_model_free(m);
		return NULL;
	}
	return m;
}

#ifndef TUTORIAL_PARTS_ONLY
static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	int                epochs = 5, steps = 20, rv;
	const char        *ckpt = NULL, *logdir = NULL;
	double             acc    = NAN;
	pasco_partitioner  two    = pasco_fixed_shards_partitioner(2);
	pasco_strategy    *s      = NULL;
	pasco_coordinator *c      = NULL;
	pasco_model       *m      = NULL;
	example_option     opts[] = {
	        {"epochs", OPTION_INT, &epochs, 1, 1e7, "N  epochs (5)"},
	        {"steps", OPTION_INT, &steps, 1, 1e7, "N  steps per epoch (20)"},
	        {"checkpoint-dir", OPTION_PATH, &ckpt, 0, 0, "DIR  checkpoints"},
	        {"logdir", OPTION_PATH, &logdir, 0, 0, "DIR  TensorBoard"},
	        {.name = NULL}};
	if ((rv = parse_options(argc, argv, NULL, opts)) >= 0 ||
	    (m = tutorial_model()) == NULL ||
	    (rv = evaluator_task(cluster, m, "eval_data", ckpt, logdir,
	         epochs * steps, 300)) >= 0) {
		return rv >= 0 ? rv : report(1, "", pasco_model_last_error());
	}
	/* One step per worker at a time (TF's): RMSprop 0.1 hates staleness */
	if ((rv = pasco_strategy_create(&s, cluster,
	         &(pasco_strategy_options){.partitioner = &two})) ||
	    (rv = pasco_model_create_variables(m, s)) ||
	    (rv = pasco_coordinator_create(
	         &c, s, &(pasco_coordinator_options){.window = 1})) ||
	    (rv = pasco_model_fit(c, m,
	         &(pasco_model_fit_options){.dataset = "train_data",
	             .epochs                         = epochs,
	             .steps_per_epoch                = steps,
	             .validation_dataset             = "eval_data",
	             .checkpoint_dir                 = ckpt,
	             .resume                         = ckpt != NULL,
	             .logdir                         = logdir,
	             .verbose                        = true},
	         NULL)) ||
	    (rv = evaluate_accuracy(c, m, "eval_data", 0, &acc))) {
		report_failure(rv, s);
	}
	pasco_coordinator_destroy(c);
	pasco_model_free(m);
	pasco_strategy_destroy(s);
	if (rv == 0 && !(acc >= 0.95)) { /* trained, but not far enough */
		fprintf(stderr,
		    "embedding_classifier: accuracy %.4f is under 0.95 after %d "
		    "steps (asynchronous RMSprop 0.1 needs about 100)\n",
		    acc, epochs * steps);
		return 3;
	}
	return rv == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
#endif
