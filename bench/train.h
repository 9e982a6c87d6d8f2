/*
 * The training step shared by bench/train, bench/scale and bench/step_cost:
 * the two models of the PyTorch peer (bench/peers/torch_rpc.py) on a fixed
 * synthetic batch of 64, SGD 0.05, every parameter on ps 0. A step (one
 * closure) reads the parameters (pasco_variable_read_all), computes the
 * gradients and applies them on the ps (pasco_variable_apply_gradients,
 * SGD); in_process() runs the same step on local tensors (the compute
 * ceiling) and distributed() through the coordinator (over a train_session,
 * which a caller may hold to measure around the steps alone). Include it
 * from one file of a program only (it registers the step functions).
 */
#ifndef PASCO_BENCH_TRAIN_H
#define PASCO_BENCH_TRAIN_H

#include <cblas.h>
#include <pasco.h>
#include <pthread.h>
#include <stdlib.h>

#include "bench.h"

#define BATCH 64
#define INPUTS 784
#define HIDDEN 256
#define CLASSES 10
#define LR 0.05
#define TRAIN_REPEATS 2

typedef struct model {
	const char *name;  /* figure label */
	const char *step;  /* its step function */
	int         nvars; /* 4 (mlp) or 2 (softmax) */
} model;

static const model MODELS[] = {
    {"MLP 784-256-10", "mlp_step", 4},
    {"softmax 784-10", "softmax_step", 2},
};

/* The synthetic batch: x uniform in [0, 1), labels from a fixed formula. */
static pasco_tensor *
make_batch(pasco_tensor **labels)
{
	pasco_tensor *x;
	uint64_t      state = 0x9e3779b97f4a7c15u;
	pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){BATCH, INPUTS});
	pasco_tensor_alloc(labels, PASCO_I32, 1, (int64_t[]){BATCH});
	for (int64_t i = 0; i < x->count; i++) {
		state = state * 6364136223846793005u + 1442695040888963407u;
		((float *) x->data)[i] =
		    (float) (state >> 40) / (float) (1 << 24);
	}
	for (int64_t i = 0; i < BATCH; i++) {
		((int32_t *) (*labels)->data)[i] = (int32_t) (i * 7 % CLASSES);
	}
	return x;
}

static void
release_all(pasco_tensor **t, int n)
{
	for (int i = 0; i < n; i++) {
		pasco_tensor_release(t[i]);
		t[i] = NULL;
	}
}

/* Gradients of the mean loss for params (w1, b1, w2, b2) or (w, b). */
static int
gradients(int nvars, pasco_tensor *const *p, const pasco_tensor *x,
    const pasco_tensor *labels, pasco_tensor **g, double *loss)
{
	pasco_tensor *z = NULL, *h = NULL, *zb = NULL, *logits = NULL;
	pasco_tensor *dlogits = NULL, *dh = NULL, *dz = NULL;
	int           err;
	if (nvars == 2) {
		err = pasco_matmul(x, false, p[0], false, &z) ||
		      pasco_bias_add(z, p[1], &logits) ||
		      pasco_softmax_crossentropy(
		          logits, labels, loss, &dlogits) ||
		      pasco_matmul(x, true, dlogits, false, &g[0]) ||
		      pasco_bias_add_grad(dlogits, &g[1]);
	} else {
		err = pasco_matmul(x, false, p[0], false, &z) ||
		      pasco_bias_add(z, p[1], &zb) ||
		      pasco_activate(PASCO_RELU, zb, &h) ||
		      pasco_matmul(h, false, p[2], false, &dz) ||
		      pasco_bias_add(dz, p[3], &logits) ||
		      pasco_softmax_crossentropy(
		          logits, labels, loss, &dlogits) ||
		      pasco_matmul(h, true, dlogits, false, &g[2]) ||
		      pasco_bias_add_grad(dlogits, &g[3]) ||
		      pasco_matmul(dlogits, false, p[2], true, &dh);
		pasco_tensor_release(dz);
		dz  = NULL;
		err = err || pasco_activate_grad(PASCO_RELU, h, dh, &dz) ||
		      pasco_matmul(x, true, dz, false, &g[0]) ||
		      pasco_bias_add_grad(dz, &g[1]);
	}
	pasco_tensor *tmp[] = {z, h, zb, logits, dlogits, dh, dz};
	release_all(tmp, 7);
	return err ? PASCO_EINVAL : PASCO_OK;
}

/* This worker's batch, made once. */
static pthread_once_t batch_once = PTHREAD_ONCE_INIT;
static pasco_tensor  *batch_x, *batch_labels;

static void
batch_init(void)
{
	batch_x = make_batch(&batch_labels);
}

static int
train_step(pasco_call *call, int nvars)
{
	pasco_variable *v[4];
	pasco_tensor   *p[4] = {0}, *g[4] = {0};
	double          loss = 0;
	int             err  = PASCO_OK;
	pasco_optimizer sgd  = pasco_sgd(LR, 0, false);

	pthread_once(&batch_once, batch_init);
	for (int i = 0; i < nvars && err == PASCO_OK; i++) {
		err = pasco_call_variable(call, (size_t) i, &v[i]);
	}
	/* one round trip each way: every parameter read, then every
	 * gradient applied, with all requests in flight together */
	err = err ? err : pasco_variable_read_all((size_t) nvars, v, p);
	err = err ? err : gradients(nvars, p, batch_x, batch_labels, g, &loss);
	err = err ? err
	          : pasco_variable_apply_gradients((size_t) nvars, v, &sgd, g);
	release_all(p, nvars);
	release_all(g, nvars);
	if (err != PASCO_OK) {
		return pasco_call_fail(call, err, "training step failed");
	}
	return PASCO_OK;
}

PASCO_FUNCTION(mlp_step)
{
	return train_step(call, 4);
}

PASCO_FUNCTION(softmax_step)
{
	return train_step(call, 2);
}

static void
init_params(int nvars, pasco_tensor **p)
{
	int64_t  shapes[4][2] = {{INPUTS, nvars == 4 ? HIDDEN : CLASSES},
	     {nvars == 4 ? HIDDEN : CLASSES, 0}, {HIDDEN, CLASSES},
	     {CLASSES, 0}};
	uint64_t state        = 12345;
	for (int i = 0; i < nvars; i++) {
		pasco_tensor_alloc(
		    &p[i], PASCO_F32, shapes[i][1] ? 2 : 1, shapes[i]);
		for (int64_t k = 0; k < p[i]->count; k++) {
			state = state * 6364136223846793005u + 1;
			((float *) p[i]->data)[k] =
			    ((float) (state >> 40) / (float) (1 << 24) -
			        0.5f) *
			    0.1f;
		}
	}
}

/* Steps/s of the step on local tensors: the ceiling of one worker's
 * closure. One OpenBLAS thread, as a worker's closure gets from pasco_main
 * whatever the core count (with OpenBLAS's default of a thread per core,
 * its threads spin against each other on these small matrices and the
 * "ceiling" fell below one worker on 16 cores). */
/* (inline: a program may not use it) */
static inline double
in_process(int nvars, long steps)
{
	pasco_tensor *p[4], *g[4] = {0}, *labels, *x = make_batch(&labels);
	double        loss, best = 0;
	int           threads = openblas_get_num_threads();
	openblas_set_num_threads(1);
	init_params(nvars, p);
	for (int r = 0; r < TRAIN_REPEATS; r++) {
		double start = bench_now();
		for (long s = 0; s < steps; s++) {
			gradients(nvars, p, x, labels, g, &loss);
			for (int i = 0; i < nvars; i++) {
				float *w = p[i]->data, *d = g[i]->data;
				for (int64_t k = 0; k < p[i]->count; k++) {
					w[k] -= (float) LR * d[k];
				}
			}
			release_all(g, nvars);
		}
		double rate = (double) steps / (bench_now() - start);
		best        = rate > best ? rate : best;
	}
	release_all(p, nvars);
	pasco_tensor_release(x);
	pasco_tensor_release(labels);
	openblas_set_num_threads(threads);
	return best;
}

/* A model's variables and a coordinator over a sub-cluster, kept between
 * runs of steps so a caller can measure around the steps alone. */
typedef struct train_session {
	const model       *m;
	pasco_cluster     *sub;
	pasco_strategy    *s;
	pasco_coordinator *coord;
	pasco_variable    *v[4];
	pasco_tensor      *p[4];
	pasco_arg          args[4];
} train_session;

/* Creates m's variables on the first `ps` ps tasks of c, every variable
 * split in `ps` shards (fixed shards; 1: not split, every variable on ps
 * 0), and a coordinator over the first `workers` workers. 0, or -1;
 * train_session_fini frees ts either way. */
static int train_session_init_with(train_session *ts, const pasco_cluster *c,
    const model *m, size_t ps, size_t workers,
    const pasco_coordinator_options *opts);

static inline int
train_session_init(train_session *ts, const pasco_cluster *c, const model *m,
    size_t ps, size_t workers)
{
	return train_session_init_with(ts, c, m, ps, workers, NULL);
}

/* train_session_init with the coordinator's options opts (NULL: its
 * defaults). */
static int
train_session_init_with(train_session *ts, const pasco_cluster *c,
    const model *m, size_t ps, size_t workers,
    const pasco_coordinator_options *opts)
{
	static int        round;
	pasco_partitioner part = pasco_fixed_shards_partitioner((int64_t) ps);
	pasco_strategy_options so = {.partitioner = ps > 1 ? &part : NULL};
	char                   name[64];

	*ts = (train_session){
	    .m = m, .sub = bench_sub_cluster_ps(c, ps, workers)};
	if (ts->sub == NULL ||
	    pasco_strategy_create(&ts->s, ts->sub, &so) != 0) {
		return -1;
	}
	init_params(m->nvars, ts->p);
	round++;
	for (int i = 0; i < m->nvars; i++) {
		snprintf(name, sizeof(name), "%s/%d/p%d", m->step, round, i);
		if (pasco_variable_create(&ts->v[i], ts->s, name, ts->p[i]) !=
		    0) {
			return -1;
		}
		ts->args[i] = pasco_arg_variable(ts->v[i]);
	}
	return pasco_coordinator_create(&ts->coord, ts->s, opts) == 0 ? 0 : -1;
}

/* Schedules `steps` steps and waits for them: steps/s, or -1 (the
 * coordinator's message on stderr). */
static double
train_session_run(train_session *ts, long steps)
{
	double start = bench_now();
	for (long i = 0; i < steps; i++) {
		if (pasco_schedule(ts->coord, ts->m->step, ts->args,
		        (size_t) ts->m->nvars, NULL) != 0) {
			return -1;
		}
	}
	if (pasco_join(ts->coord) != 0) {
		fprintf(
		    stderr, "train: %s\n", pasco_coordinator_error(ts->coord));
		return -1;
	}
	return (double) steps / (bench_now() - start);
}

static void
train_session_fini(train_session *ts)
{
	pasco_coordinator_destroy(ts->coord);
	for (int i = 0; i < ts->m->nvars; i++) {
		pasco_variable_free(ts->v[i]);
	}
	release_all(ts->p, ts->m->nvars);
	pasco_strategy_destroy(ts->s);
	pasco_cluster_free(ts->sub);
}

/* Steps/s through the coordinator with the first `ps` ps tasks and the
 * first `workers` workers (train_session_init), best of TRAIN_REPEATS
 * runs; -1 if any failed. */
static double
distributed_on(const pasco_cluster *c, const model *m, size_t ps,
    size_t workers, long steps)
{
	train_session ts;
	double        best = -1;

	if (train_session_init(&ts, c, m, ps, workers) == 0) {
		for (int r = 0; r < TRAIN_REPEATS; r++) {
			double rate = train_session_run(&ts, steps);
			if (rate < 0) {
				best = -1;
				break;
			}
			best = rate > best ? rate : best;
		}
	}
	train_session_fini(&ts);
	return best;
}

/* Steps/s with the first `workers` workers, parameters on ps 0. */
static inline double
distributed(const pasco_cluster *c, const model *m, size_t workers, long steps)
{
	return distributed_on(c, m, 1, workers, steps);
}

#endif
