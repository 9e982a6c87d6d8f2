/*
 * Linear regression, y = 0.8 x + 1: one Dense unit (w, b on the ps)
 * trained with pasco_model_fit, mean squared error and SGD, each worker
 * drawing its own examples. Each epoch prints its loss; the chief prints
 * w and b at the end.
 *
 *     pasco launch --ps 2 --workers 2 -- build/examples/linear_regression
 *
 * With --checkpoint-dir DIR (under the ps tasks' --checkpoint-root) the
 * chief saves a checkpoint each epoch, and an evaluator task is a sidecar
 * evaluator of them: the mean squared error and mae of 4096 held-out
 * examples, exactly once over 4 shards, one JSON line per checkpoint
 * (--logdir DIR: eval scalars in DIR/eval).
 */
#include "options.h"

/* (x, y) of example i of seed: x uniform in [0, 1), y = 0.8 x + 1. */
static pasco_value *
examples(uint64_t seed, int64_t first, int64_t step, int64_t n)
{
	pasco_tensor *x = NULL, *y = NULL;
	if (pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){n, 1}) ||
	    pasco_tensor_alloc(&y, PASCO_F32, 2, (int64_t[]){n, 1})) {
		pasco_tensor_release(x);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++) {
		uint64_t z = seed + 0x9e3779b97f4a7c15ULL *
		                        (uint64_t) (first + i * step + 1);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		double v =
		    (double) ((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
		pasco_tensor_set(x, i, v);
		pasco_tensor_set(y, i, 0.8 * v + 1.0);
	}
	return pasco_value_list(
	    2, pasco_value_tensor(x), pasco_value_tensor(y));
}

static int
next_batch(void *arg, pasco_value **out)
{
	int64_t *count = arg;
	*out =
	    examples(1000 + (uint64_t) count[1], (*count += 32) - 32, 1, 32);
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

/* Each worker's endless stream of batches of 32. */
PASCO_DATASET(regression_data)
{
	int64_t *count = calloc(2, sizeof(int64_t));
	if (count == NULL) {
		return PASCO_ENOMEM;
	}
	count[1] = ctx->worker_index;
	return pasco_dataset_from_generator(
	    out, next_batch, NULL, free, count);
}

/* Shard worker_index of num_workers of the 4096 held-out examples. */
PASCO_DATASET(held_out)
{
	int64_t      k = ctx->worker_index, n = ctx->num_workers;
	pasco_value *v  = examples(7, k, n, (4096 - k + n - 1) / n);
	int          rv = pasco_dataset_from_tensors(out, v);
	pasco_value_free(v);
	return rv ? rv : pasco_dataset_batch(out, *out, 512, false);
}

static int
print_epoch(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	double loss = NAN;
	(void) user;
	pasco_logs_get(logs, "loss", &loss);
	printf("epoch %d: loss = %.6g\n", ctx->epoch + 1, loss);
	return fflush(stdout);
}

/* The first element of the model's variable k into *out; a read that
 * fails is said, with why (a chief that a newer one replaced is refused
 * by its tasks), never turned into a NaN. */
static int
value_of(pasco_model *m, size_t k, double *out)
{
	pasco_variable *v = pasco_model_variable(m, k);
	pasco_tensor   *t;
	int             rv = pasco_variable_read(v, &t);
	if (rv != 0) {
		return report(rv, "cannot read the trained values",
		    pasco_variable_error(v));
	}
	*out = pasco_tensor_get(t, 0);
	pasco_tensor_release(t);
	return 0;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	int                epochs = 20, steps = 100, timeout = 300, rv;
	double             lr = 0.05, w = NAN, b = NAN;
	const char        *ckpt = NULL, *logdir = NULL;
	pasco_strategy    *s      = NULL;
	pasco_coordinator *c      = NULL;
	pasco_callbacks   *cbs    = NULL;
	pasco_model       *m      = NULL;
	pasco_layer        dense  = pasco_layer_dense(1, PASCO_ACT_LINEAR);
	example_option     opts[] = {
	        {"epochs", OPTION_INT, &epochs, 1, 1e7, "N  epochs (20)"},
	        {"steps", OPTION_INT, &steps, 1, 1e7, "N  steps per epoch (100)"},
	        {"lr", OPTION_DOUBLE, &lr, 0, 1e3, "X  learning rate (0.05)"},
	        {"checkpoint-dir", OPTION_PATH, &ckpt, 0, 0,
	            "DIR  a checkpoint each epoch; the evaluator watches it"},
	        {"logdir", OPTION_PATH, &logdir, 0, 0,
	            "DIR  eval scalars for TensorBoard under DIR/eval"},
	        {"eval-timeout", OPTION_INT, &timeout, 0, 1e7,
	            "S  the evaluator ends after S s without a new checkpoint "
	                "(300; 0: never)"},
	        {.name = NULL}};
	if ((rv = parse_options(argc, argv,
	         "pasco launch --ps N --workers M [--evaluator] -- "
	         "linear_regression [OPTIONS]",
	         opts)) >= 0) {
		return rv;
	}
	/* The learning rate is small because updates are asynchronous: with
	 * 2 workers x 4 steps in flight, gradients are up to ~8 steps stale.
	 */
	dense.kernel_initializer = pasco_init_zeros();
	if ((rv = pasco_model_sequential(&m, 1, 1, &dense, 1)) != 0 ||
	    (rv = pasco_model_compile(
	         m, &(pasco_compile_options){.loss = "mse",
	                .optimizer                 = pasco_sgd(lr, 0, false),
	                .metrics                   = (const char *[]){"mae"},
	                .nmetrics                  = 1})) != 0) {
		pasco_model_free(m);
		return report(rv, "the model", pasco_model_last_error());
	}
	if ((rv = evaluator_task(cluster, m, "held_out", ckpt, logdir,
	         (int64_t) epochs * steps, timeout)) >= 0) {
		return rv;
	}
	if ((rv = pasco_strategy_create(&s, cluster, NULL)) != 0 ||
	    (rv = pasco_model_create_variables(m, s)) != 0) {
		report(
		    rv, "cannot create the model", pasco_model_last_error());
		goto out;
	}
	printf("w on ps %d, b on ps %d; %zu workers\n",
	    pasco_variable_ps_task(pasco_model_variable(m, 0)),
	    pasco_variable_ps_task(pasco_model_variable(m, 1)),
	    pasco_strategy_num_workers(s));
	if ((rv = pasco_coordinator_create(&c, s, NULL)) != 0 ||
	    (rv = pasco_callbacks_create(&cbs)) != 0 ||
	    (rv = pasco_callbacks_add(cbs, (pasco_callback){.name = "print",
	                                       .epoch_end = print_epoch})) !=
	        0) {
		goto out;
	}
	/* every checkpoint kept: the evaluator evaluates each */
	if ((rv = pasco_model_fit(c, m,
	         &(pasco_model_fit_options){.dataset = "regression_data",
	             .epochs                         = epochs,
	             .steps_per_epoch                = steps,
	             .checkpoint_dir                 = ckpt,
	             .checkpoint_keep                = -1,
	             .callbacks                      = cbs},
	         NULL)) != 0) {
		report(rv, "training failed", pasco_model_last_error());
	}
	/* printed even when training failed midway, if they can be read */
	if (value_of(m, 0, &w) == 0 && value_of(m, 1, &b) == 0) {
		printf("w = %.4f\nb = %.4f\n", w, b);
	}
out:
	pasco_callbacks_free(cbs);
	pasco_coordinator_destroy(c);
	pasco_model_free(m);
	pasco_strategy_destroy(s);
	return rv == 0 && fabs(w - 0.8) < 0.01 && fabs(b - 1.0) < 0.01 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
