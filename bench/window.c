/*
 * fit's window (issue 31, item 17): the loss after N steps and the steps/s
 * of pasco_model_fit at windows 1, 2 and 4 (training steps in flight per
 * worker, pasco_model_fit_options.window) for three models:
 *
 *   tutorial     examples/embedding_classifier's (TensorFlow's parameter
 *                server tutorial): an Embedding split over 2 ps, a
 *                sigmoid Dense, RMSprop(0.1); its 5 epochs of 20 steps
 *   mlp          examples/mlp_csv's: 64 -> 64 -> 64 -> 10, Adam(1e-3),
 *                here on synthetic rows (64 numbers in [-1, 1), the
 *                class the largest of the first 10); 3 epochs of 100
 *   wide_deep    examples/wide_deep's model and census-like CSV data
 *                (written to --data DIR, /tmp/census, when missing:
 *                40,000 rows); 3 epochs of 100
 *
 * Each run is a fresh strategy, model (new layer names, so new variables)
 * and global step, then fit; it prints each epoch's mean loss and the
 * run's steps/s (the fit's steps over its wall time).
 *
 *     pasco launch --ps 2 --workers 2 -- build/bench/window [--data DIR]
 *         [--repeats R]
 *
 * R runs of each (3 by default), then their medians ("MEDIAN" lines).
 */
#include <sys/stat.h>

#define TUTORIAL_PARTS_ONLY
#include "../examples/embedding_classifier.c"
#define WIDE_DEEP_PARTS_ONLY
#include "../examples/wide_deep.c"

#define MLP_FEATURES 64
#define MLP_CLASSES 10

/* Endless batches of 32 synthetic rows, each worker its own stream. */
static int
mlp_next(void *arg, pasco_value **out)
{
	uint64_t     *n = arg;
	pasco_tensor *x, *y;
	if (pasco_tensor_alloc(
	        &x, PASCO_F32, 2, (int64_t[]){32, MLP_FEATURES}) != 0) {
		return PASCO_ENOMEM;
	}
	if (pasco_tensor_alloc(&y, PASCO_I64, 1, (int64_t[]){32}) != 0) {
		pasco_tensor_release(x);
		return PASCO_ENOMEM;
	}
	for (int64_t i = 0; i < 32; i++, (*n)++) {
		int64_t best = 0;
		for (int64_t j = 0; j < MLP_FEATURES; j++) {
			double v =
			    2 * unit(*n * MLP_FEATURES + (uint64_t) j) - 1;
			pasco_tensor_set(x, i * MLP_FEATURES + j, v);
			if (j < MLP_CLASSES &&
			    v > pasco_tensor_get(x, i * MLP_FEATURES + best)) {
				best = j;
			}
		}
		pasco_tensor_set(y, i, (double) best);
	}
	*out =
	    pasco_value_list(2, pasco_value_tensor(x), pasco_value_tensor(y));
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

PASCO_DATASET(window_mlp_train)
{
	uint64_t *n = calloc(1, sizeof(*n));
	int       rv;
	if (n == NULL) {
		return PASCO_ENOMEM;
	}
	*n = (uint64_t) ctx->worker_index << 40;
	if ((rv = pasco_dataset_from_generator(
	         out, mlp_next, NULL, free, n)) != 0) {
		free(n);
	}
	return rv;
}

static pasco_model *
mlp_model(void)
{
	pasco_layer  l[] = {pasco_layer_dense(64, PASCO_ACT_RELU),
	     pasco_layer_dense(64, PASCO_ACT_RELU),
	     pasco_layer_dense(MLP_CLASSES, PASCO_ACT_SOFTMAX)};
	pasco_model *m   = NULL;
	if (pasco_model_sequential(&m, MLP_FEATURES, 3, l, 42) != 0 ||
	    pasco_model_compile(
	        m, &(pasco_compile_options){
	               .loss      = "sparse_categorical_crossentropy",
	               .optimizer = pasco_adam(1e-3, false),
	               .metrics   = (const char *[]){"accuracy"},
	               .nmetrics  = 1}) != 0) {
		pasco_model_free(m);
		return NULL;
	}
	return m;
}

static pasco_model *
wide_deep_model(void)
{
	pasco_model *m = NULL;
	return wide_and_deep(&m) == 0 ? m : NULL;
}

typedef struct bench_case {
	const char *name, *dataset;
	pasco_model *(*make)(void);
	bool split; /* every variable in 2 shards, as the tutorial's */
	int  epochs, steps;
} bench_case;

static const bench_case cases[] = {
    {"tutorial", "train_data", tutorial_model, true, 5, 20},
    {"mlp", "window_mlp_train", mlp_model, false, 3, 100},
    {"wide_deep", "census_train", wide_deep_model, false, 3, 100},
};

/* The global step at 0 (Adam's bias correction counts from it). */
static int
zero_global_step(pasco_strategy *s)
{
	pasco_variable *gs;
	pasco_tensor   *zero;
	int             rv = pasco_strategy_global_step(s, &gs);
	if (rv == 0 && (rv = pasco_tensor_scalar(&zero, PASCO_I64, 0)) == 0) {
		rv = pasco_variable_assign(gs, zero);
		pasco_tensor_release(zero);
	}
	pasco_variable_free(gs);
	return rv;
}

/* One fit of bc at window; prints a line; *last gets the last epoch's
 * mean loss, *worst the largest after the first epoch's, *rate the
 * steps/s. */
static int
run(const pasco_cluster *cluster, const bench_case *bc, uint32_t window,
    double *last, double *worst, double *rate)
{
	pasco_partitioner  two = pasco_fixed_shards_partitioner(2);
	pasco_strategy    *s   = NULL;
	pasco_coordinator *c   = NULL;
	pasco_model       *m   = bc->make();
	pasco_history      h   = {0};
	double             t0, secs;
	int                rv;
	if (m == NULL) {
		return report(1, bc->name, pasco_model_last_error());
	}
	if ((rv = pasco_strategy_create(&s, cluster,
	         &(pasco_strategy_options){
	             .partitioner = bc->split ? &two : NULL})) != 0 ||
	    (rv = pasco_model_create_variables(m, s)) != 0 ||
	    (rv = zero_global_step(s)) != 0 ||
	    (rv = pasco_coordinator_create(&c, s, NULL)) != 0) {
		report(rv, bc->name, pasco_model_last_error());
		goto out;
	}
	t0   = now_s();
	rv   = pasco_model_fit(c, m,
	      &(pasco_model_fit_options){.dataset = bc->dataset,
	          .epochs                         = bc->epochs,
	          .steps_per_epoch                = bc->steps,
	          .window                         = window},
	      &h);
	secs = now_s() - t0;
	if (rv != 0) {
		report(rv, bc->name, pasco_model_last_error());
		goto out;
	}
	printf("%-10s window %u:", bc->name, (unsigned) window);
	for (int32_t e = 0; e < h.count; e++) {
		*last = NAN;
		pasco_logs_get(&h.epochs[e], "loss", last);
		printf(" %.4g", *last);
		*worst = e == 1 || (e > 1 && *last > *worst) ? *last : *worst;
	}
	*rate = bc->epochs * bc->steps / secs;
	printf("  | %d steps, %.1f steps/s\n", bc->epochs * bc->steps, *rate);
	fflush(stdout);
out:
	pasco_history_fini(&h);
	pasco_coordinator_destroy(c);
	pasco_model_free(m);
	pasco_strategy_destroy(s);
	return rv;
}

static int
by_value(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;
	return x < y ? -1 : x > y;
}

/* repeats runs of bc at window, then their medians. */
static int
measure(const pasco_cluster *cluster, const bench_case *bc, uint32_t window,
    int repeats)
{
	double last[16], rate[16], worst = 0;
	for (int i = 0; i < repeats; i++) {
		double w = 0;
		if (run(cluster, bc, window, &last[i], &w, &rate[i]) != 0) {
			return 1;
		}
		worst = w > worst ? w : worst;
	}
	qsort(last, (size_t) repeats, sizeof(double), by_value);
	qsort(rate, (size_t) repeats, sizeof(double), by_value);
	printf("MEDIAN %s window %u: last epoch's loss %.4g (%.4g to %.4g) "
	       "after %d steps, worst epoch after the first %.4g, %.0f "
	       "steps/s\n",
	    bc->name, (unsigned) window, last[repeats / 2], last[0],
	    last[repeats - 1], bc->epochs * bc->steps, worst,
	    rate[repeats / 2]);
	fflush(stdout);
	return 0;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	char        path[1100];
	struct stat st;
	int         repeats = 3;
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--repeats") == 0) {
			repeats = atoi(argv[i + 1]);
		}
	}
	if (repeats < 1 || repeats > 16) {
		fprintf(stderr, "window: --repeats takes 1 to 16\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/eval.csv", data_dir);
	if (stat(path, &st) != 0 && make_data(data_dir, 40000, 1000) != 0) {
		return 1;
	}
	printf("fit at windows 1, 2, 4: each epoch's mean loss, then the "
	       "run's steps/s\n");
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		for (uint32_t w = 1; w <= 4; w *= 2) {
			if (measure(cluster, &cases[k], w, repeats) != 0) {
				return 1;
			}
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	for (int i = 1; i + 1 < argc; i++) { /* every role reads the data */
		if (strcmp(argv[i], "--data") == 0) {
			snprintf(
			    data_dir, sizeof(data_dir), "%s", argv[i + 1]);
		}
	}
	return pasco_main(argc, argv, chief);
}
