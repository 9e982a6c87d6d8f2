/*
 * The model API against hand-written steps: steps/s and CPU per step of
 * three models, each written two or three ways, trained in the same run
 * on the same cluster (issue 20: the layers and the tape should cost no
 * more CPU per step than the hand-written step; issue 32: custom layers,
 * op graphs run by the graph runner, no more than built-in layers or
 * hand-written C; goal: ratio >= 0.95).
 *
 *   tutorial  examples/embedding_classifier's model: Embedding(8, 16384,
 *             mean of 3 ids) -> Dense(1, sigmoid) with l2 1e-4 on the
 *             kernel, binary cross-entropy (of the logits), RMSprop 0.1,
 *             batch 32: hand-written, layers;
 *   mlp       bench/train's MLP 784-256-10 (ReLU, softmax cross-entropy),
 *             SGD 0.05, its synthetic batch of 64: hand-written, layers,
 *             and its Dense layers as op-graph layers (model_custom.h);
 *   deepfm    a DeepFM whose factorization-machine interaction is a C
 *             layer written by hand on the tape, or an op-graph layer
 *             (model_custom.h).
 *
 * Hand-written: the kernels of ops.h as the examples and bench/train call
 * them, every variable read in one round trip and every gradient applied
 * in one. Layers: the same model made with pasco_layer_* and trained with
 * pasco_model_train_step (one read, one mixed apply), the model made and
 * bound in every step as a worker's step function does. Both start from
 * the same values (the layers' initializers) on the same batches.
 *
 * Figures (best of --rounds, 2 by default, the variants alternating in
 * each round, every other round in reverse order):
 *   - in one process, no network: the forward and backward pass only
 *     (the tape against the kernels), steps/s;
 *   - through the coordinator on the launch's ps and its first worker:
 *     steps/s, and the worker process's CPU per step (the difference of
 *     its CLOCK_PROCESS_CPUTIME_ID, asked of it before and after).
 * The ratio of each figure is the first variant's CPU / the variant's
 * (or its steps/s / the first's): 1 is the same cost, above 1 cheaper.
 * Besides the best of each, the median over the rounds of each round's
 * own ratio (the variants of one round run back to back, so load that
 * comes and goes on a shared machine moves both): the quieter figure.
 *
 *     pasco launch --ps 2 --workers 1 -- build/bench/model [--steps N]
 *         [--rounds R] [--model NAME] [--in-process]
 *
 * --model runs only the models whose name holds NAME ("MLP", "DeepFM",
 * "tutorial"); --in-process only the first table, which needs no ps or
 * worker running (for a profiler):
 *
 *     build/bench/model --chief-hosts localhost:1 --ps-hosts localhost:2
 *         --worker-hosts localhost:3 --task-type chief --task-index 0
 *         --in-process --model MLP
 */
#include <math.h>

#include "train.h"

#define T_BATCH 32
#define T_ROWS 8
#define T_DIM 16384
#define T_WORDS 3
#define T_L2 1e-4

/* ---- the two models, as layers ---- */

static pasco_model *
tutorial_model(void)
{
	pasco_model *m;
	pasco_layer  l[] = {pasco_layer_embedding(T_ROWS, T_DIM),
	     pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	l[1].kernel_l2   = T_L2;
	return pasco_model_sequential(&m, T_WORDS, 2, l, 1) == 0 ? m : NULL;
}

static pasco_model *
mlp_model(void)
{
	pasco_model *m;
	pasco_layer  l[] = {pasco_layer_dense(HIDDEN, PASCO_ACT_RELU),
	     pasco_layer_dense(CLASSES, PASCO_ACT_SOFTMAX)};
	return pasco_model_sequential(&m, INPUTS, 2, l, 1) == 0 ? m : NULL;
}

/* The tutorial's batch: 3 distinct words of 1..7 per example (0 is the
 * out-of-vocabulary row), label 1 iff word 1 is among them. */
static void
tutorial_batch(pasco_tensor **ids, pasco_tensor **labels)
{
	uint64_t state = 7;
	pasco_tensor_alloc(ids, PASCO_I64, 2, (int64_t[]){T_BATCH, T_WORDS});
	pasco_tensor_alloc(labels, PASCO_F32, 1, (int64_t[]){T_BATCH});
	for (int64_t i = 0; i < T_BATCH; i++) {
		int64_t *row   = (int64_t *) (*ids)->data + i * T_WORDS;
		bool     label = false;
		for (int j = 0; j < T_WORDS; j++) {
			bool again;
			do {
				state  = state * 6364136223846793005u + 1;
				row[j] = 1 + (int64_t) ((state >> 33) % 7);
				again  = false;
				for (int p = 0; p < j; p++) {
					again = again || row[p] == row[j];
				}
			} while (again);
			label = label || row[j] == 1;
		}
		((float *) (*labels)->data)[i] = label ? 1.0f : 0.0f;
	}
}

typedef struct inputs {
	pasco_tensor *x, *y;
} inputs;

static pthread_once_t inputs_once = PTHREAD_ONCE_INIT;
static inputs         mlp_in, tut_in;

static void
inputs_init(void)
{
	mlp_in.x = make_batch(&mlp_in.y);
	tutorial_batch(&tut_in.x, &tut_in.y);
}

/* ---- hand-written gradients (ops.h) ---- */

/* The tutorial's gradients from the rows [b, 3, dim] gathered for ids:
 * g[0] the rows' gradient [b, 3, dim], g[1] the kernel's, g[2] the
 * bias's. */
static int
tutorial_gradients(pasco_tensor *const *p, const pasco_tensor *rows,
    const pasco_tensor *labels, pasco_tensor **g, double *loss)
{
	pasco_tensor *avg = NULL, *z = NULL, *zb = NULL, *dz = NULL;
	pasco_tensor *davg = NULL;
	int           err;
	err = pasco_embedding_combine(rows, PASCO_COMBINE_MEAN, &avg) ||
	      pasco_matmul(avg, false, p[1], false, &z) ||
	      pasco_bias_add(z, p[2], &zb) ||
	      pasco_binary_crossentropy_logits(zb, labels, loss, &dz) ||
	      pasco_matmul(avg, true, dz, false, &g[1]) ||
	      pasco_bias_add_grad(dz, &g[2]) ||
	      pasco_matmul(dz, false, p[1], true, &davg) ||
	      pasco_embedding_combine_grad(
	          davg, T_WORDS, PASCO_COMBINE_MEAN, &g[0]);
	if (!err) {
		*loss += pasco_l2_penalty(p[1], T_L2, g[1]);
	}
	pasco_tensor *tmp[] = {avg, z, zb, dz, davg};
	release_all(tmp, 5);
	return err ? PASCO_EINVAL : PASCO_OK;
}

/* ---- the steps on a worker ---- */

static int
call_vars(pasco_call *call, size_t n, pasco_variable **v)
{
	int rv = PASCO_OK;
	for (size_t i = 0; i < n && rv == PASCO_OK; i++) {
		rv = pasco_call_variable(call, i, &v[i]);
	}
	return rv;
}

/* The tutorial, hand-written: args the table, the kernel, the bias. */
PASCO_FUNCTION(tutorial_hand)
{
	pasco_variable *v[3];
	pasco_tensor   *p[3] = {0}, *g[3] = {0};
	double          loss;
	pasco_optimizer opt = pasco_rmsprop(0.1, 0.9, 0, false);
	int             rv;
	pthread_once(&inputs_once, inputs_init);
	if ((rv = call_vars(call, 3, v)) != 0) {
		return rv;
	}
	const pasco_tensor *ids[] = {tut_in.x, NULL, NULL};
	rv                        = pasco_variable_read_mixed(3, v, ids, p);
	rv = rv ? rv : tutorial_gradients(p, p[0], tut_in.y, g, &loss);
	rv =
	    rv ? rv : pasco_variable_apply_gradients_mixed(3, v, &opt, ids, g);
	release_all(p, 3);
	release_all(g, 3);
	return rv ? pasco_call_fail(call, rv, "tutorial_hand failed") : 0;
}

/* A step with the layers: args the model's variables. */
static int
layers_step(pasco_call *call, pasco_model *(*make)(void), size_t nvars,
    const inputs *in, pasco_loss loss, pasco_optimizer opt)
{
	pasco_variable *v[4];
	pasco_model    *m = make();
	pasco_tape     *tp;
	int             rv;
	pthread_once(&inputs_once, inputs_init);
	if (m == NULL || (rv = call_vars(call, nvars, v)) != 0 ||
	    (rv = pasco_model_bind(m, nvars, v)) != 0) {
		pasco_model_free(m);
		return pasco_call_fail(
		    call, PASCO_EINVAL, "%s", pasco_model_last_error());
	}
	if ((rv = pasco_tape_alloc(&tp, true, 1)) == 0) {
		rv = pasco_model_train_step(
		    m, tp, (pasco_tensor *[]){in->x}, in->y, loss, &opt, NULL);
		if (rv != 0) {
			rv = pasco_call_fail(
			    call, rv, "%s", pasco_tape_message(tp));
		}
	}
	pasco_tape_free(tp);
	pasco_model_free(m);
	return rv;
}

PASCO_FUNCTION(tutorial_layers)
{
	return layers_step(call, tutorial_model, 3, &tut_in,
	    (pasco_loss){
	        .kind = PASCO_LOSS_BINARY_CROSSENTROPY, .from_logits = false},
	    pasco_rmsprop(0.1, 0.9, 0, false));
}

PASCO_FUNCTION(mlp_layers)
{
	return layers_step(call, mlp_model, 4, &mlp_in,
	    (pasco_loss){.kind = PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
	        .from_logits   = false},
	    pasco_sgd(LR, 0, false));
}

/* The worker process's CPU seconds so far (all threads). */
PASCO_FUNCTION(process_cpu)
{
	struct timespec ts;
	pasco_tensor   *t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	if (pasco_tensor_scalar(&t, PASCO_F64,
	        (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9) != 0) {
		return pasco_call_fail(call, PASCO_ENOMEM, "no memory");
	}
	pasco_call_return(call, pasco_value_tensor(t));
	return PASCO_OK;
}

#include "model_custom.h"

/* ---- the models and their variants ---- */

typedef enum bench_kind { K_TUTORIAL, K_MLP, K_DEEPFM } bench_kind;

/* One way of writing a model: make NULL is the hand-written kernels. */
typedef struct variant {
	const char *label;
	pasco_model *(*make)(void);
	const char *step; /* its step function on a worker */
} variant;

typedef struct bench_model {
	const char *name;
	bench_kind  kind;
	size_t      nvariants; /* the first is the others' reference */
	variant     v[3];
} bench_model;

static const bench_model BENCH_MODELS[] = {
    {"tutorial (embedding 8x16384 + dense 1)", K_TUTORIAL, 2,
        {{"hand", NULL, "tutorial_hand"},
            {"layers", tutorial_model, "tutorial_layers"}}},
    {"MLP 784-256-10", K_MLP, 3,
        {{"hand", NULL, "mlp_step"}, {"layers", mlp_model, "mlp_layers"},
            {"graph", mlp_graph_model, "mlp_graph"}}},
    {"DeepFM 8 fields x 8, FM as a layer", K_DEEPFM, 2,
        {{"C layer", deepfm_c_model, "deepfm_c"},
            {"graph", deepfm_graph_model, "deepfm_graph"}}},
};

/* The model's batch, labels and loss. */
static void
kind_batch(bench_kind k, pasco_tensor *const **x, const pasco_tensor **y,
    pasco_loss *loss)
{
	static pasco_tensor *one[1];
	pthread_once(&inputs_once, inputs_init);
	pthread_once(&fm_once, fm_batch_init);
	*loss = (pasco_loss){
	    .kind = k == K_MLP ? PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY
	                       : PASCO_LOSS_BINARY_CROSSENTROPY};
	if (k == K_DEEPFM) {
		*x = fm_ids;
		*y = fm_labels;
		return;
	}
	one[0] = k == K_MLP ? mlp_in.x : tut_in.x;
	*x     = one;
	*y     = k == K_MLP ? mlp_in.y : tut_in.y;
}

/* ---- in one process: the forward and backward pass only ---- */

typedef struct run_result {
	double rate;   /* steps/s */
	double cpu_us; /* CPU per step */
	double loss;   /* the first step's loss (in one process) */
} run_result;

/* CPU seconds of the calling thread (with one OpenBLAS thread, all the
 * pass's work: the figure holds on a loaded machine). */
static double
thread_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

#define MAX_VARS 32

/* The model's variables as local tensors, from its initializers. */
static void
local_params(const pasco_model *m, pasco_tensor **p)
{
	for (size_t k = 0; k < pasco_model_num_variables(m); k++) {
		const int64_t *shape;
		int32_t        rank = pasco_model_variable_shape(m, k, &shape);
		pasco_initializer init = pasco_model_variable_init(m, k);
		pasco_tensor_alloc(&p[k], PASCO_F32, rank, shape);
		pasco_initializer_fill(&init, p[k], rank, shape, 0);
	}
}

/* The rows of table for ids (any shape): [ids..., dim]. */
static pasco_tensor *
local_gather(const pasco_tensor *table, const pasco_tensor *ids)
{
	pasco_tensor *rows;
	int64_t       shape[PASCO_MAX_RANK], dim = table->shape[1];
	memcpy(shape, ids->shape, sizeof(int64_t) * (size_t) ids->rank);
	shape[ids->rank] = dim;
	pasco_tensor_alloc(&rows, PASCO_F32, ids->rank + 1, shape);
	for (int64_t i = 0; i < ids->count; i++) {
		memcpy((float *) rows->data + i * dim,
		    (const float *) table->data +
		        (int64_t) pasco_tensor_get(ids, i) * dim,
		    sizeof(float) * (size_t) dim);
	}
	return rows;
}

/* The distinct ids of ids, ascending, as pasco_tape_read gathers them. */
static pasco_tensor *
distinct(const pasco_tensor *ids)
{
	pasco_tensor *out;
	int64_t       v[T_ROWS], n = 0;
	for (int64_t id = 0; id < T_ROWS; id++) {
		for (int64_t i = 0; i < ids->count; i++) {
			if ((int64_t) pasco_tensor_get(ids, i) == id) {
				v[n++] = id;
				break;
			}
		}
	}
	pasco_tensor_from(&out, PASCO_I64, 1, &n, v, (size_t) n * 8);
	return out;
}

/* One forward and backward pass on a tape, the sources as a step's read
 * leaves them: watched whole, the tutorial's table as the rows of the
 * distinct ids (uids, urows), other tables whole. */
static int
tape_pass(const pasco_model *m, pasco_tensor **p, bench_kind kind,
    pasco_tensor *uids, pasco_tensor *urows, double *loss_value)
{
	pasco_tape          *tp;
	pasco_tnode         *nodes[MAX_VARS], *l;
	pasco_tape_grad      g[MAX_VARS];
	pasco_tensor *const *x;
	const pasco_tensor  *y;
	pasco_loss           loss;
	size_t               n = pasco_model_num_variables(m);
	int                  rv;
	kind_batch(kind, &x, &y, &loss);
	if ((rv = pasco_tape_alloc(&tp, true, 1)) != 0) {
		return rv;
	}
	for (size_t k = 0; k < n; k++) {
		bool table = strstr(pasco_model_variable_name(m, k),
		                 "/embeddings") != NULL;
		nodes[k]   = table && uids != NULL
		                 ? pasco_tape_watch_rows(tp, uids, urows)
		             : table ? pasco_tape_watch_table(tp, p[k])
		                     : pasco_tape_watch(tp, p[k]);
	}
	l  = pasco_model_loss(m, tp, x, y, loss, nodes);
	rv = pasco_tape_gradient(tp, l, n, nodes, g);
	if (rv == 0) {
		*loss_value = pasco_tensor_get(pasco_tnode_value(l), 0);
		pasco_tape_grad_fini(g, n);
	} else {
		fprintf(stderr, "model: %s\n", pasco_tape_message(tp));
	}
	pasco_tape_free(tp);
	return rv;
}

/* Steps/s and CPU per step of variant v's pass; rate -1 on failure. */
static run_result
pass_rate(const bench_model *bm, const variant *v, long steps)
{
	pasco_model  *m           = v->make != NULL          ? v->make()
	                            : bm->kind == K_TUTORIAL ? tutorial_model()
	                                                     : mlp_model();
	pasco_tensor *p[MAX_VARS] = {0}, *g[4] = {0}, *rows = NULL;
	pasco_tensor *uids = NULL, *urows = NULL;
	double        loss, start, cpu;
	int           rv = m == NULL ? PASCO_EINVAL : 0;
	run_result    r  = {-1, -1, 0};
	if (rv != 0) {
		fprintf(stderr, "model: %s: %s\n", v->label,
		    custom_err[0] ? custom_err : pasco_model_last_error());
		return r;
	}
	local_params(m, p);
	if (bm->kind == K_TUTORIAL) {
		rows  = local_gather(p[0], tut_in.x);
		uids  = distinct(tut_in.x);
		urows = local_gather(p[0], uids);
	}
	start = bench_now();
	cpu   = thread_cpu();
	for (long s = 0; s < steps && rv == 0; s++) {
		if (v->make != NULL) {
			rv = tape_pass(m, p, bm->kind, uids, urows, &loss);
		} else if (bm->kind == K_TUTORIAL) {
			rv = tutorial_gradients(p, rows, tut_in.y, g, &loss);
		} else {
			rv = gradients(4, p, mlp_in.x, mlp_in.y, g, &loss);
		}
		r.loss = s == 0 ? loss : r.loss;
		release_all(g, 4);
	}
	if (rv == 0) {
		r.rate   = (double) steps / (bench_now() - start);
		r.cpu_us = (thread_cpu() - cpu) / (double) steps * 1e6;
	}
	release_all(p, MAX_VARS);
	pasco_tensor *tmp[] = {rows, uids, urows};
	release_all(tmp, 3);
	pasco_model_free(m);
	return r;
}

/* ---- through the coordinator ---- */

static double
worker_cpu(pasco_coordinator *coord)
{
	pasco_remote_value *rv;
	const pasco_value  *v;
	double              cpu = -1;
	if (pasco_schedule(coord, "process_cpu", NULL, 0, &rv) != 0) {
		return -1;
	}
	if (pasco_remote_value_fetch(rv, &v) == 0) {
		cpu = pasco_tensor_get(pasco_value_as_tensor(v), 0);
	}
	pasco_remote_value_free(rv);
	return cpu;
}

/* steps of fn with args on coord's one worker. */
static run_result
timed_steps(pasco_coordinator *coord, const char *fn, const pasco_arg *args,
    size_t nargs, long steps)
{
	run_result r  = {-1, -1, 0};
	double     c0 = worker_cpu(coord), start = bench_now(), c1;
	for (long i = 0; i < steps; i++) {
		if (pasco_schedule(coord, fn, args, nargs, NULL) != 0) {
			return r;
		}
	}
	if (pasco_join(coord) != 0) {
		fprintf(stderr, "model: %s: %s\n", fn,
		    pasco_coordinator_error(coord));
		return r;
	}
	r.rate = (double) steps / (bench_now() - start);
	c1     = worker_cpu(coord);
	if (c0 >= 0 && c1 >= 0) {
		r.cpu_us = (c1 - c0) / (double) steps * 1e6;
	}
	return r;
}

/* The hand-written step's variables: the model's shapes and initializers
 * (the same starting values), under other names. */
static int
hand_variables(pasco_strategy *s, const pasco_model *m, pasco_variable **v)
{
	int rv = PASCO_OK;
	for (size_t k = 0; k < pasco_model_num_variables(m) && rv == 0; k++) {
		const int64_t *shape;
		int32_t        rank = pasco_model_variable_shape(m, k, &shape);
		pasco_initializer init = pasco_model_variable_init(m, k);
		char              name[128];
		snprintf(name, sizeof(name), "hand/%s",
		    pasco_model_variable_name(m, k));
		rv = pasco_variable_create_init(
		    &v[k], s, name, PASCO_F32, rank, shape, &init);
	}
	return rv;
}

/* Rounds of each figure (--rounds), at most MAX_ROUNDS. */
#define MAX_ROUNDS 64
static int rounds = TRAIN_REPEATS;

static int
by_value(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;
	return (x > y) - (x < y);
}

/* The median of each round's ratio of variant i to variant b (rate: its
 * steps/s over b's; else b's CPU over its). */
static double
paired_median(run_result (*rr)[3], size_t i, size_t b, bool rate)
{
	double q[MAX_ROUNDS];
	for (int r = 0; r < rounds; r++) {
		q[r] = rate ? rr[r][i].rate / rr[r][b].rate
		            : rr[r][b].cpu_us / rr[r][i].cpu_us;
	}
	qsort(q, (size_t) rounds, sizeof(*q), by_value);
	return rounds % 2 ? q[rounds / 2]
	                  : (q[rounds / 2 - 1] + q[rounds / 2]) / 2;
}

/* The paired medians' line of a comparison: each variant against the
 * first, and the third (graph layers) against the second (built-in
 * layers) too. */
static void
report_paired(const bench_model *bm, run_result (*rr)[3], bool cpu_only)
{
	printf("  %-26s", "median of paired rounds");
	for (size_t k = 1; k < bm->nvariants + (bm->nvariants == 3); k++) {
		size_t i = k < bm->nvariants ? k : 2,
		       b = k < bm->nvariants ? 0 : 1;
		char label[64];
		snprintf(label, sizeof(label), "%s%s%s", bm->v[i].label,
		    b > 0 ? "/" : "", b > 0 ? bm->v[b].label : "");
		if (cpu_only) {
			printf("  %s CPU %.2fx", label,
			    paired_median(rr, i, b, false));
		} else {
			printf("  %s steps/s %.2fx CPU %.2fx", label,
			    paired_median(rr, i, b, true),
			    paired_median(rr, i, b, false));
		}
	}
	printf("  (%d rounds)\n", rounds);
}

/* Keeps the best of r in best (the highest rate, the lowest CPU). */
static void
keep_best(run_result *best, run_result r)
{
	best->rate   = r.rate > best->rate ? r.rate : best->rate;
	best->cpu_us = r.cpu_us < best->cpu_us ? r.cpu_us : best->cpu_us;
	best->loss   = r.loss;
}

/* The table lines and JSON figures of one comparison: steps/s, and CPU
 * per step as steps per CPU second, so that every ratio is a variant's
 * speed against the first variant's (above 1: faster). */
static void
report(const bench_model *bm, const char *where, const char *whose,
    const run_result *best)
{
	char label[200];
	printf(
	    "  %-26s steps/s  %s %8.1f", where, bm->v[0].label, best[0].rate);
	for (size_t i = 1; i < bm->nvariants; i++) {
		printf("  %s %8.1f %.2fx", bm->v[i].label, best[i].rate,
		    best[i].rate / best[0].rate);
	}
	printf("\n  %-26s us/step  %s %8.1f", whose, bm->v[0].label,
	    best[0].cpu_us);
	for (size_t i = 1; i < bm->nvariants; i++) {
		printf("  %s %8.1f %.2fx", bm->v[i].label, best[i].cpu_us,
		    best[0].cpu_us / best[i].cpu_us);
	}
	printf("\n");
	for (size_t i = 1; i < bm->nvariants; i++) {
		snprintf(label, sizeof(label), "%s, %s, %s", bm->name,
		    bm->v[i].label, where);
		bench_json(
		    "model", label, best[i].rate, "steps/s", best[0].rate);
		snprintf(label, sizeof(label), "%s, %s, %s, %s", bm->name,
		    bm->v[i].label, where, whose);
		bench_json("model", label, 1e6 / best[i].cpu_us, "steps/CPU s",
		    1e6 / best[0].cpu_us);
	}
}

/* The variant that runs j-th in round r: every other round in reverse,
 * so that none always runs first or last (load that rises or falls
 * through a round would favour one in each round's ratio). */
static size_t
variant_at(const bench_model *bm, int r, size_t j)
{
	return r % 2 != 0 ? bm->nvariants - 1 - j : j;
}

/* The in-process figures of model bm: its variants alternating, best of
 * rounds each. */
static int
in_process_figures(const bench_model *bm, long steps)
{
	static run_result rr[MAX_ROUNDS][3];
	run_result        best[3] = {
	           {0, INFINITY, 0}, {0, INFINITY, 0}, {0, INFINITY, 0}};
	for (int r = 0; r < rounds; r++) {
		for (size_t j = 0; j < bm->nvariants; j++) {
			size_t     i = variant_at(bm, r, j);
			run_result x = pass_rate(bm, &bm->v[i], steps);
			if (x.rate < 0) {
				fprintf(stderr,
				    "model: %s, %s: the pass failed\n",
				    bm->name, bm->v[i].label);
				return 1;
			}
			keep_best(&best[i], x);
			rr[r][i] = x;
		}
	}
	report(bm, "forward + backward", "CPU", best);
	report_paired(bm, rr, true);
	/* the variants compute one model: the same loss from the same
	 * starting values (the hand-written tutorial's, of the logits, too) */
	printf("  %-26s loss     %s %8.6f", "the first step's", bm->v[0].label,
	    best[0].loss);
	for (size_t i = 1; i < bm->nvariants; i++) {
		printf("  %s %8.6f", bm->v[i].label, best[i].loss);
	}
	printf("\n");
	return 0;
}

/* Variant v's step arguments in a (its model's variables, created; the
 * hand-written step's: variables of the layers' model's shapes). */
static int
variant_args(pasco_strategy *s, const bench_model *bm, const variant *v,
    pasco_model **m, pasco_variable **hv, pasco_arg *a, size_t *n)
{
	int rv;
	*m = v->make != NULL ? v->make() : bm->v[1].make();
	if (*m == NULL) {
		fprintf(stderr, "model: %s, %s: %s\n", bm->name, v->label,
		    custom_err[0] ? custom_err : pasco_model_last_error());
		return PASCO_EINVAL;
	}
	*n = pasco_model_num_variables(*m);
	rv = v->make != NULL ? pasco_model_create_variables(*m, s)
	                     : hand_variables(s, *m, hv);
	if (rv != 0) {
		fprintf(stderr, "model: %s, %s: %s\n", bm->name, v->label,
		    pasco_model_last_error());
	}
	for (size_t k = 0; k < *n && rv == 0; k++) {
		a[k] = pasco_arg_variable(
		    v->make != NULL ? pasco_model_variable(*m, k) : hv[k]);
	}
	return rv;
}

/* The distributed figures of model bm: its variants alternating, best of
 * rounds each, after a warm-up of each. */
static int
distributed_figures(pasco_coordinator *coord, pasco_strategy *s,
    const bench_model *bm, long steps)
{
	pasco_model    *m[3]         = {0};
	pasco_variable *hv[MAX_VARS] = {0};
	pasco_arg       a[3][MAX_VARS];
	size_t          n[3]    = {0};
	run_result      best[3] = {
	         {0, INFINITY, 0}, {0, INFINITY, 0}, {0, INFINITY, 0}};
	static run_result rr[MAX_ROUNDS][3];
	int               rv = 0;
	for (size_t i = 0; i < bm->nvariants && rv == 0; i++) {
		rv = variant_args(s, bm, &bm->v[i], &m[i], hv, a[i], &n[i]);
	}
	for (int r = -1; r < rounds && rv == 0; r++) {
		for (size_t j = 0; j < bm->nvariants && rv == 0; j++) {
			size_t     i = variant_at(bm, r, j);
			run_result x = timed_steps(coord, bm->v[i].step, a[i],
			    n[i], r < 0 ? steps / 10 + 1 : steps);
			rv = x.rate < 0 || x.cpu_us < 0 ? PASCO_EINVAL : 0;
			if (r >= 0) {
				keep_best(&best[i], x);
				rr[r][i] = x;
			}
		}
	}
	if (rv == 0) {
		report(bm, "1 worker", "worker CPU", best);
		report_paired(bm, rr, false);
	}
	for (size_t k = 0; k < MAX_VARS; k++) {
		pasco_variable_free(hv[k]);
	}
	for (size_t i = 0; i < 3; i++) {
		pasco_model_free(m[i]);
	}
	return rv;
}

#define NMODELS (sizeof(BENCH_MODELS) / sizeof(*BENCH_MODELS))

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	long               steps = 500;
	bool               local = false;
	const char        *only  = NULL;
	pasco_cluster     *sub   = bench_sub_cluster(cluster, 1);
	pasco_strategy    *s     = NULL;
	pasco_coordinator *coord = NULL;
	int                rv    = 0;
	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--steps") == 0) {
			steps = atol(argv[i + 1]);
		} else if (strcmp(argv[i], "--rounds") == 0) {
			rounds = atoi(argv[i + 1]);
		} else if (strcmp(argv[i], "--model") == 0) {
			only = argv[i + 1];
		}
	}
	for (int i = 1; i < argc; i++) {
		local = local || strcmp(argv[i], "--in-process") == 0;
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || steps < 1) {
		fprintf(stderr,
		    "model: --rounds must be 1 to %d and --steps >= 1\n",
		    MAX_ROUNDS);
		return 2;
	}
	pthread_once(&inputs_once, inputs_init);
	openblas_set_num_threads(1);
	printf("model benchmark: the layers + tape against the hand-written "
	       "step, and custom layers (op graphs) against both, %ld steps "
	       "per figure, best of %d\n",
	    steps, rounds);
	/* the coordinator first: its heartbeats keep the ps and the worker
	 * waiting through the in-process figures, which took past their
	 * chief timeout (120 s) on a loaded 2-core machine */
	if (!local &&
	    (sub == NULL || pasco_strategy_create(&s, sub, NULL) != 0 ||
	        pasco_coordinator_create(&coord, s, NULL) != 0)) {
		rv = 1;
	}
	for (size_t k = 0; k < NMODELS && rv == 0; k++) {
		if (only == NULL ||
		    strstr(BENCH_MODELS[k].name, only) != NULL) {
			printf("%s, in one process\n", BENCH_MODELS[k].name);
			rv = in_process_figures(&BENCH_MODELS[k], steps);
		}
	}
	for (size_t k = 0; k < NMODELS && rv == 0 && !local; k++) {
		if (only != NULL &&
		    strstr(BENCH_MODELS[k].name, only) == NULL) {
			continue;
		}
		printf("%s, through the coordinator\n", BENCH_MODELS[k].name);
		rv = distributed_figures(coord, s, &BENCH_MODELS[k], steps);
	}
	pasco_coordinator_destroy(coord);
	pasco_strategy_destroy(s);
	pasco_cluster_free(sub);
	return rv == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
