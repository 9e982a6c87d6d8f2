/*
 * The consistency modes compared (include/pasco/optimizer.h): linear
 * regression, the MLP of bench/train.h and the tutorial model
 * (examples/embedding_classifier's: an [8, 16384] embedding of 3 words of
 * a 7-word vocabulary averaged, one sigmoid unit; label: "is word 1 among
 * them"; here the 8-row table is updated densely, so a step is one apply
 * call and one global step, and with SGD instead of RMSprop, as the other
 * two models), trained through the global
 * step under ASP, BSP (replicas_to_aggregate = workers) and SSP
 * (staleness 2), each on a fresh in-process cluster of 1 ps and 2 workers
 * (inproc transport), with 1 closure in flight per worker (TensorFlow's)
 * and with 4 (Pasco's default window). A step reads its parameters with the
 * global step (pasco_variable_read_all: the version), computes its gradients
 * and applies them through the global step (SGD); BSP rounds left partial at
 * the end are flushed. Prints a Markdown table: closures run, global
 * steps, gradients dropped as stale, the final loss (linear regression:
 * MSE on a held-out batch; MLP: the loss on its fixed batch) and
 * closures/s.
 *
 *   build/bench/consistency [linear closures] [mlp closures]
 *       [tutorial closures]
 */
#include <math.h>

#include "train.h"

#define WORKERS 2
#define DIM 16
#define LIN_BATCH 32
#define LIN_LR 0.05

/* A linear regression batch: x uniform in [-1, 1), y = x.w* + 0.5 plus
 * noise of 0.01, w*_j = (j % 5 - 2) / 2. */
static void
lin_batch(uint64_t seed, pasco_tensor **x, pasco_tensor **y)
{
	uint64_t state = seed * 0x9e3779b97f4a7c15u + 1;
	pasco_tensor_alloc(x, PASCO_F32, 2, (int64_t[]){LIN_BATCH, DIM});
	pasco_tensor_alloc(y, PASCO_F32, 1, (int64_t[]){LIN_BATCH});
	for (int64_t i = 0; i < LIN_BATCH; i++) {
		double t = 0.5;
		for (int64_t j = 0; j < DIM; j++) {
			float v;
			state = state * 6364136223846793005u +
			        1442695040888963407u;
			v = (float) (state >> 40) / (float) (1 << 23) - 1.0f;
			((float *) (*x)->data)[i * DIM + j] = v;
			t += v * ((double) (j % 5) - 2) / 2;
		}
		state = state * 6364136223846793005u + 1442695040888963407u;
		((float *) (*y)->data)[i] =
		    (float) (t +
		             0.01 * ((double) (state >> 40) / (1 << 23) - 1));
	}
}

/* MSE of (w, b) on (x, y); with dw and db not NULL, its gradients. */
static double
lin_loss(const pasco_tensor *w, const pasco_tensor *b, const pasco_tensor *x,
    const pasco_tensor *y, pasco_tensor *dw, pasco_tensor *db)
{
	const float *wv = w->data, *xv = x->data, *yv = y->data;
	double       loss = 0;
	for (int64_t i = 0; i < LIN_BATCH; i++) {
		double e = ((const float *) b->data)[0] - yv[i];
		for (int64_t j = 0; j < DIM; j++) {
			e += wv[j] * xv[i * DIM + j];
		}
		loss += e * e / LIN_BATCH;
		if (dw != NULL) {
			for (int64_t j = 0; j < DIM; j++) {
				((float *) dw->data)[j] +=
				    (float) (2 * e * xv[i * DIM + j] /
				             LIN_BATCH);
			}
			((float *) db->data)[0] += (float) (2 * e / LIN_BATCH);
		}
	}
	return loss;
}

/* The closure's result: 1 if its gradient was dropped as stale. */
static int
return_dropped(pasco_call *call, pasco_variable *gs)
{
	pasco_tensor *t;
	int           rv = pasco_tensor_scalar(
	              &t, PASCO_I64, (double) pasco_variable_dropped(gs));
	if (rv == 0) {
		pasco_call_return(call, pasco_value_tensor(t));
	}
	return rv;
}

/* args: w, b, global step, seed (i64 scalar). */
PASCO_FUNCTION(consistency_linear)
{
	pasco_variable     *v[3];
	pasco_tensor       *p[3] = {0}, *x = NULL, *y = NULL, *g[2] = {0};
	const pasco_tensor *seed;
	pasco_optimizer     sgd = pasco_sgd(LIN_LR, 0, false);
	int                 rv  = PASCO_OK;
	for (int i = 0; i < 3 && rv == 0; i++) {
		rv = pasco_call_variable(call, (size_t) i, &v[i]);
	}
	if (rv != 0 || (rv = pasco_call_tensor(call, 3, &seed)) != 0 ||
	    (rv = pasco_variable_read_all(3, v, p)) != 0) {
		return rv;
	}
	lin_batch((uint64_t) pasco_tensor_get(seed, 0), &x, &y);
	pasco_tensor_alloc(&g[0], PASCO_F32, 1, (int64_t[]){DIM});
	pasco_tensor_alloc(&g[1], PASCO_F32, 1, (int64_t[]){1});
	lin_loss(p[0], p[1], x, y, g[0], g[1]);
	sgd.iterations      = v[2];
	rv                  = pasco_variable_apply_gradients(2, v, &sgd, g);
	pasco_tensor *all[] = {p[0], p[1], p[2], x, y, g[0], g[1]};
	release_all(all, 7);
	return rv != 0 ? rv : return_dropped(call, v[2]);
}

/* args: w1, b1, w2, b2, global step. */
PASCO_FUNCTION(consistency_mlp)
{
	pasco_variable *v[5];
	pasco_tensor   *p[5] = {0}, *g[4] = {0};
	pasco_optimizer sgd = pasco_sgd(LR, 0, false);
	double          loss;
	int             rv = PASCO_OK;
	pthread_once(&batch_once, batch_init);
	for (int i = 0; i < 5 && rv == 0; i++) {
		rv = pasco_call_variable(call, (size_t) i, &v[i]);
	}
	if (rv != 0 || (rv = pasco_variable_read_all(5, v, p)) != 0) {
		return rv;
	}
	rv             = gradients(4, p, batch_x, batch_labels, g, &loss);
	sgd.iterations = v[4];
	if (rv == 0) {
		rv = pasco_variable_apply_gradients(4, v, &sgd, g);
	}
	release_all(p, 5);
	release_all(g, 4);
	return rv != 0 ? rv : return_dropped(call, v[4]);
}

#define TUT_ROWS 8
#define TUT_DIM 16384
#define TUT_WORDS 3
#define TUT_BATCH 32
#define TUT_LR 0.5

/* A batch of the tutorial model: ids [TUT_BATCH, 3] of 3 distinct words
 * in 1..7 (row 0 is out-of-vocabulary, never drawn), labels 1 iff word 1
 * is one of them. */
static void
tut_batch(uint64_t seed, int64_t *ids, float *labels)
{
	uint64_t state = seed * 0x9e3779b97f4a7c15u + 7;
	for (int i = 0; i < TUT_BATCH; i++) {
		int picked[TUT_ROWS] = {0};
		labels[i]            = 0;
		for (int j = 0; j < TUT_WORDS; j++) {
			int w;
			do {
				state = state * 6364136223846793005u +
				        1442695040888963407u;
				w = 1 + (int) ((state >> 33) % (TUT_ROWS - 1));
			} while (picked[w]);
			picked[w]              = 1;
			ids[i * TUT_WORDS + j] = w;
			labels[i]              = w == 1 ? 1.0f : labels[i];
		}
	}
}

/* Mean binary cross-entropy of (emb, kernel, bias) on a batch; with g
 * not NULL (3 zeroed tensors of their shapes), adds the gradients. */
static double
tut_loss(pasco_tensor *const *p, uint64_t seed, pasco_tensor *const *g)
{
	const float *emb = p[0]->data, *k = p[1]->data;
	float        b = ((const float *) p[2]->data)[0];
	int64_t      ids[TUT_BATCH * TUT_WORDS];
	float        labels[TUT_BATCH];
	double       loss = 0;
	tut_batch(seed, ids, labels);
	for (int i = 0; i < TUT_BATCH; i++) {
		const int64_t *r = ids + i * TUT_WORDS;
		double         z = b;
		for (int64_t d = 0; d < TUT_DIM; d++) {
			float avg = (emb[r[0] * TUT_DIM + d] +
			                emb[r[1] * TUT_DIM + d] +
			                emb[r[2] * TUT_DIM + d]) /
			            3.0f;
			z += avg * k[d];
		}
		double q = 1 / (1 + exp(-z));
		loss += -(labels[i] * log(q + 1e-12) +
		          (1 - labels[i]) * log(1 - q + 1e-12));
		if (g == NULL) {
			continue;
		}
		float  dz = (float) ((q - labels[i]) / TUT_BATCH);
		float *ge = g[0]->data, *gk = g[1]->data;
		((float *) g[2]->data)[0] += dz;
		for (int64_t d = 0; d < TUT_DIM; d++) {
			float avg = (emb[r[0] * TUT_DIM + d] +
			                emb[r[1] * TUT_DIM + d] +
			                emb[r[2] * TUT_DIM + d]) /
			            3.0f;
			gk[d] += dz * avg;
			for (int j = 0; j < TUT_WORDS; j++) {
				ge[r[j] * TUT_DIM + d] += dz * k[d] / 3.0f;
			}
		}
	}
	return loss / TUT_BATCH;
}

/* Zeroed gradients of the tutorial model's emb, kernel, bias. */
static int
tut_zero_grads(pasco_tensor **g)
{
	int rv =
	    pasco_tensor_alloc(
	        &g[0], PASCO_F32, 2, (int64_t[]){TUT_ROWS, TUT_DIM}) ||
	    pasco_tensor_alloc(&g[1], PASCO_F32, 1, (int64_t[]){TUT_DIM}) ||
	    pasco_tensor_alloc(&g[2], PASCO_F32, 1, (int64_t[]){1});
	for (int i = 0; rv == 0 && i < 3; i++) {
		memset(g[i]->data, 0, g[i]->nbytes);
	}
	return rv ? PASCO_ENOMEM : PASCO_OK;
}

/* args: emb, kernel, bias, global step, seed (i64 scalar). */
PASCO_FUNCTION(consistency_tutorial)
{
	pasco_variable     *v[4];
	pasco_tensor       *p[4] = {0}, *g[3] = {0};
	const pasco_tensor *seed;
	pasco_optimizer     sgd = pasco_sgd(TUT_LR, 0, false);
	int                 rv  = PASCO_OK;
	for (int i = 0; i < 4 && rv == 0; i++) {
		rv = pasco_call_variable(call, (size_t) i, &v[i]);
	}
	if (rv != 0 || (rv = pasco_call_tensor(call, 4, &seed)) != 0 ||
	    (rv = pasco_variable_read_all(4, v, p)) != 0) {
		return rv;
	}
	if ((rv = tut_zero_grads(g)) == 0) {
		tut_loss(p, (uint64_t) pasco_tensor_get(seed, 0), g);
		sgd.iterations = v[3];
		rv             = pasco_variable_apply_gradients(3, v, &sgd, g);
	}
	release_all(p, 4);
	release_all(g, 3);
	return rv != 0 ? rv : return_dropped(call, v[3]);
}

/* The tutorial model's initial values: emb uniform in [-0.05, 0.05),
 * kernel in [-0.01, 0.01), bias 0. */
static void
tut_init(pasco_tensor **init)
{
	uint64_t state = 99;
	pasco_tensor_alloc(
	    &init[0], PASCO_F32, 2, (int64_t[]){TUT_ROWS, TUT_DIM});
	pasco_tensor_alloc(&init[1], PASCO_F32, 1, (int64_t[]){TUT_DIM});
	pasco_tensor_alloc(&init[2], PASCO_F32, 1, (int64_t[]){1});
	for (int t = 0; t < 2; t++) {
		for (int64_t i = 0; i < init[t]->count; i++) {
			state = state * 6364136223846793005u + 1;
			((float *) init[t]->data)[i] =
			    ((float) (state >> 40) / (float) (1 << 24) -
			        0.5f) *
			    (t == 0 ? 0.1f : 0.02f);
		}
	}
	((float *) init[2]->data)[0] = 0;
}

typedef struct row {
	int64_t closures, steps, dropped;
	double  loss, rate;
} row;

/* A cluster of 1 ps and WORKERS workers on inproc addresses. */
static pasco_cluster *
start_cluster(pasco_server **servers, int gen)
{
	char           json[512], err[256];
	pasco_cluster *c;
	snprintf(json, sizeof(json),
	    "{\"cluster\":{\"chief\":[\"inproc://cc-%d-%d\"],"
	    "\"ps\":[\"inproc://cp-%d-%d\"],"
	    "\"worker\":[\"inproc://cw0-%d-%d\",\"inproc://cw1-%d-%d\"]}}",
	    (int) getpid(), gen, (int) getpid(), gen, (int) getpid(), gen,
	    (int) getpid(), gen);
	if (pasco_cluster_parse_json(&c, json, err, sizeof(err)) != 0 ||
	    pasco_server_start(&servers[0], c, PASCO_ROLE_PS, 0) != 0) {
		fprintf(stderr, "consistency: cannot start the cluster: %s\n",
		    err);
		exit(1);
	}
	for (int i = 0; i < WORKERS; i++) {
		if (pasco_server_start(&servers[1 + i], c, PASCO_ROLE_WORKER,
		        (size_t) i) != 0) {
			exit(1);
		}
	}
	return c;
}

static void
check(int rv, const char *what)
{
	if (rv != 0) {
		fprintf(
		    stderr, "consistency: %s: %s\n", what, pasco_strerror(rv));
		exit(1);
	}
}

enum { LINEAR, MLP, TUTORIAL };

/* Runs n closures of model (LINEAR, MLP, TUTORIAL) under mode. */
static row
run(int model, pasco_consistency mode, uint32_t window, int64_t n)
{
	static int                gen;
	pasco_server             *servers[1 + WORKERS];
	pasco_cluster            *cl = start_cluster(servers, gen++);
	pasco_strategy_options    so = {.consistency = mode,
	       .replicas_to_aggregate                = WORKERS,
	       .staleness                            = 2};
	pasco_coordinator_options co = {.window = window};
	pasco_strategy           *s;
	pasco_coordinator        *c;
	pasco_variable           *v[5];
	pasco_tensor             *init[4] = {0}, *vals[4] = {0};
	pasco_remote_value      **rvs = calloc((size_t) n, sizeof(*rvs));
	bool                      mlp = model == MLP;
	int                       nv  = mlp ? 4 : model == TUTORIAL ? 3 : 2;
	row                       r   = {.closures = n};
	double                    t0;
	char                      name[8];

	check(pasco_strategy_create(&s, cl, &so), "strategy");
	if (mlp) {
		init_params(4, init);
	} else if (model == TUTORIAL) {
		tut_init(init);
	} else {
		pasco_tensor_alloc(&init[0], PASCO_F32, 1, (int64_t[]){DIM});
		pasco_tensor_alloc(&init[1], PASCO_F32, 1, (int64_t[]){1});
	}
	for (int i = 0; i < nv; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		check(pasco_variable_create(&v[i], s, name, init[i]), name);
	}
	check(pasco_strategy_global_step(s, &v[nv]), "global step");
	check(pasco_coordinator_create(&c, s, &co), "coordinator");
	t0 = bench_now();
	for (int64_t k = 0; k < n; k++) {
		pasco_tensor *seed;
		pasco_arg     args[6];
		pasco_tensor_scalar(&seed, PASCO_I64, (double) k);
		for (int i = 0; i <= nv; i++) {
			args[i] = pasco_arg_variable(v[i]);
		}
		args[nv + 1] = pasco_arg_tensor(seed);
		check(pasco_schedule(c,
		          mlp                 ? "consistency_mlp"
		          : model == TUTORIAL ? "consistency_tutorial"
		                              : "consistency_linear",
		          args, mlp ? 5 : (size_t) nv + 2, &rvs[k]),
		    "schedule");
		pasco_tensor_release(seed);
	}
	check(pasco_join(c), "join");
	check(pasco_strategy_sync_flush(s), "flush");
	r.rate = (double) n / (bench_now() - t0);
	for (int64_t k = 0; k < n; k++) {
		const pasco_value *out;
		check(pasco_remote_value_fetch(rvs[k], &out), "fetch");
		r.dropped +=
		    (int64_t) pasco_tensor_get(pasco_value_as_tensor(out), 0);
		pasco_remote_value_free(rvs[k]);
	}
	check(pasco_variable_read_all((size_t) nv, v, vals), "read");
	check(pasco_variable_fetch_add(v[nv], 0, &r.steps), "global step");
	if (model == TUTORIAL) {
		r.loss = 0; /* held out: seeds no closure used */
		for (uint64_t b = 0; b < 8; b++) {
			r.loss += tut_loss(vals, 0xfeed0000u + b, NULL) / 8;
		}
	} else if (mlp) {
		pasco_tensor *g[4] = {0};
		pthread_once(&batch_once, batch_init);
		gradients(4, vals, batch_x, batch_labels, g, &r.loss);
		release_all(g, 4);
	} else {
		pasco_tensor *x, *y;
		lin_batch(
		    0xdeadbeef, &x, &y); /* held out: no closure's seed */
		r.loss = lin_loss(vals[0], vals[1], x, y, NULL, NULL);
		pasco_tensor_release(x);
		pasco_tensor_release(y);
	}
	release_all(vals, nv);
	release_all(init, nv);
	for (int i = 0; i <= nv; i++) {
		pasco_variable_free(v[i]);
	}
	free(rvs);
	pasco_coordinator_destroy(c);
	pasco_strategy_destroy(s);
	for (int i = 0; i < 1 + WORKERS; i++) {
		pasco_server_stop(servers[i]);
	}
	pasco_cluster_free(cl);
	return r;
}

int
main(int argc, char **argv)
{
	int64_t n[3] = {argc > 1 ? atol(argv[1]) : 2000,
	    argc > 2 ? atol(argv[2]) : 300, argc > 3 ? atol(argv[3]) : 300};
	const char *names[3] = {
	    "linear regression 16", MODELS[0].name, "tutorial model"};
	const char *modes[3] = {"ASP", "BSP (N = 2)", "SSP (s = 2)"};
	(void) distributed; /* train.h's, not used here */
	printf("| model | mode | window | closures | global steps | dropped "
	       "as stale | final loss | closures/s |\n"
	       "|---|---|---:|---:|---:|---:|---:|---:|\n");
	for (int m = 0; m < 3; m++) {
		for (int mode = PASCO_ASP; mode <= PASCO_SSP; mode++) {
			for (uint32_t w = 1; w <= 4; w += 3) {
				row r =
				    run(m, (pasco_consistency) mode, w, n[m]);
				printf("| %s | %s | %u | %lld | %lld | %lld | "
				       "%.4g | %.0f |\n",
				    names[m], modes[mode], w,
				    (long long) r.closures,
				    (long long) r.steps, (long long) r.dropped,
				    r.loss, r.rate);
				fflush(stdout);
			}
		}
	}
	return 0;
}
