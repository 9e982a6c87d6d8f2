/*
 * Linear regression, y = 0.8 x + 1, trained asynchronously: the model of
 * the Estimator seed, in Pasco. Two variables (w and b) live on ps tasks;
 * each worker draws its own stream of examples; the chief schedules epochs
 * of training steps, joins at each epoch's end and prints the loss.
 *
 *     pasco launch --ps 2 --workers 2 -- build/examples/linear_regression
 *
 * Options (after the program name): --epochs N (20), --steps N (100 per
 * epoch), --lr X (0.05). The learning rate is kept small because updates
 * are asynchronous: with 2 workers x 4 closures in flight, gradients are up
 * to ~8 steps stale.
 *
 * With --checkpoint-dir DIR the chief saves a checkpoint at the end of
 * every epoch (step = epochs done x steps), and an evaluator task, if the
 * cluster has one, is a sidecar evaluator (pasco/evaluator.h): it
 * evaluates each checkpoint on 4096 held-out examples, exactly once over
 * 4 shards, prints one JSON line per checkpoint (loss = mean squared
 * error, mae) and ends after the last epoch's checkpoint, or after
 * --eval-timeout seconds (300) without a new one. --logdir DIR adds eval
 * scalars for TensorBoard under DIR/eval. The ps tasks write the
 * checkpoint files, so DIR must be under their --checkpoint-root:
 *
 *     pasco launch --evaluator --checkpoint-root /tmp/lr -- \
 *         build/examples/linear_regression --checkpoint-dir /tmp/lr/ckpt
 */
#include <math.h>
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

#define BATCH 32
#define EVAL_EXAMPLES 4096
#define EVAL_SHARDS 4

/* Each worker's examples: x uniform in [0, 1), y = 0.8 x + 1. */
typedef struct stream {
	uint64_t seed, counter;
} stream;

static double
uniform(stream *s)
{
	uint64_t z = s->seed + 0x9e3779b97f4a7c15ULL * ++s->counter;
	z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z          = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (double) ((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static int
next_example(void *arg, pasco_value **out)
{
	pasco_tensor *x, *y;
	double        v = uniform(arg);
	int           rv;
	*out = NULL;
	if ((rv = pasco_tensor_scalar(&x, PASCO_F32, v)) != 0) {
		return rv;
	}
	if ((rv = pasco_tensor_scalar(&y, PASCO_F32, 0.8 * v + 1.0)) != 0) {
		pasco_tensor_release(x);
		return rv;
	}
	/* the list takes x and y over, even when it fails */
	*out =
	    pasco_value_list(2, pasco_value_tensor(x), pasco_value_tensor(y));
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

PASCO_DATASET(regression_data)
{
	stream        *s = calloc(1, sizeof(*s));
	pasco_dataset *ds;
	int            rv;
	if (s == NULL) {
		return PASCO_ENOMEM;
	}
	s->seed = 1000 + (uint64_t) ctx->worker_index;
	if ((rv = pasco_dataset_from_generator(
	         &ds, next_example, NULL, free, s)) != 0) {
		free(s);
		return rv;
	}
	return pasco_dataset_batch(out, ds, BATCH, true);
}

/* args: iterator, w, b, learning rate. Returns the batch's mean squared
 * error before the update. */
PASCO_FUNCTION(train_step)
{
	pasco_dataset      *it;
	pasco_variable     *wv, *bv;
	const pasco_tensor *lr;
	pasco_value        *batch;
	pasco_tensor       *w = NULL, *b = NULL, *dw = NULL, *db = NULL,
	             *loss = NULL;
	int rv;

	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &wv)) != 0 ||
	    (rv = pasco_call_variable(call, 2, &bv)) != 0 ||
	    (rv = pasco_call_tensor(call, 3, &lr)) != 0) {
		return rv;
	}
	if ((rv = pasco_dataset_next(it, &batch)) != 0) {
		return pasco_call_fail(
		    call, rv, "no training data: %s", pasco_strerror(rv));
	}
	if ((rv = pasco_variable_read(wv, &w)) != 0 ||
	    (rv = pasco_variable_read(bv, &b)) != 0) {
		pasco_call_fail(call, rv, "%s",
		    pasco_variable_error(rv != 0 && w != NULL ? bv : wv));
		goto out;
	}
	{
		const pasco_tensor *x =
		    pasco_value_as_tensor(pasco_value_item(batch, 0));
		const pasco_tensor *y =
		    pasco_value_as_tensor(pasco_value_item(batch, 1));
		const float *xs = x->data, *ys = y->data;
		float        wf = *(float *) w->data, bf = *(float *) b->data;
		double       gw = 0, gb = 0, l = 0;
		for (int64_t i = 0; i < x->count; i++) {
			double e = wf * xs[i] + bf - ys[i];
			l += e * e;
			gw += 2 * e * xs[i];
			gb += 2 * e;
		}
		if ((rv = pasco_tensor_scalar(
		         &dw, PASCO_F32, gw / (double) x->count)) != 0 ||
		    (rv = pasco_tensor_scalar(
		         &db, PASCO_F32, gb / (double) x->count)) != 0 ||
		    (rv = pasco_tensor_scalar(
		         &loss, PASCO_F32, l / (double) x->count)) != 0) {
			pasco_call_fail(
			    call, rv, "gradients: %s", pasco_strerror(rv));
			goto out;
		}
	}
	if ((rv = pasco_variable_apply_sgd(wv, pasco_tensor_get(lr, 0), dw)) !=
	    0) {
		pasco_call_fail(call, rv, "%s", pasco_variable_error(wv));
		goto out;
	}
	if ((rv = pasco_variable_apply_sgd(bv, pasco_tensor_get(lr, 0), db)) !=
	    0) {
		pasco_call_fail(call, rv, "%s", pasco_variable_error(bv));
		goto out;
	}
	pasco_call_return(call, pasco_value_tensor(loss));
	loss = NULL; /* the result owns it now */
out:
	pasco_value_free(batch);
	pasco_tensor_release(w);
	pasco_tensor_release(b);
	pasco_tensor_release(dw);
	pasco_tensor_release(db);
	pasco_tensor_release(loss);
	return rv;
}

/* args: w, b, k, K. The held-out examples (their own stream, the same on
 * every task) with index i % K == k; returns [sum of squared errors, sum
 * of absolute errors, count], as the sidecar evaluator reduces them. */
PASCO_FUNCTION(eval_shard)
{
	pasco_variable     *wv, *bv;
	const pasco_tensor *k, *nk;
	pasco_tensor       *w = NULL, *b = NULL, *out = NULL;
	int64_t             three = 3;
	int                 rv;

	if ((rv = pasco_call_variable(call, 0, &wv)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &bv)) != 0 ||
	    (rv = pasco_call_tensor(call, 2, &k)) != 0 ||
	    (rv = pasco_call_tensor(call, 3, &nk)) != 0) {
		return rv;
	}
	if ((rv = pasco_variable_read(wv, &w)) != 0 ||
	    (rv = pasco_variable_read(bv, &b)) != 0) {
		pasco_call_fail(call, rv, "%s",
		    w == NULL ? pasco_variable_error(wv)
		              : pasco_variable_error(bv));
		goto out;
	}
	if ((rv = pasco_tensor_alloc(&out, PASCO_F64, 1, &three)) != 0) {
		pasco_call_fail(
		    call, rv, "the result: %s", pasco_strerror(rv));
		goto out;
	}
	double *sums = out->data, wf = pasco_tensor_get(w, 0),
	       bf = pasco_tensor_get(b, 0);
	for (int64_t i = (int64_t) pasco_tensor_get(k, 0); i < EVAL_EXAMPLES;
	     i += (int64_t) pasco_tensor_get(nk, 0)) {
		stream held_out = {.seed = 7, .counter = (uint64_t) i};
		double x        = uniform(&held_out),
		       e        = wf * x + bf - (0.8 * x + 1.0);
		sums[0] += e * e;
		sums[1] += fabs(e);
		sums[2] += 1;
	}
	pasco_call_return(call, pasco_value_tensor(out));
	out = NULL;
out:
	pasco_tensor_release(w);
	pasco_tensor_release(b);
	pasco_tensor_release(out);
	return rv;
}

static double
read_scalar(pasco_variable *v)
{
	pasco_tensor *t;
	double        value;
	if (pasco_variable_read(v, &t) != 0) {
		fprintf(stderr, "reading %s: %s\n", pasco_variable_name(v),
		    pasco_variable_error(v));
		return NAN;
	}
	value = pasco_tensor_get(t, 0);
	pasco_tensor_release(t);
	return value;
}

/* One epoch of steps; prints the last step's loss. */
static int
train_epoch(pasco_coordinator *c, pasco_arg *args, int epoch, int steps)
{
	double loss;
	int    rv = run_epoch(c, "train_step", args, 4, steps, &loss);
	if (rv == 0) {
		printf("epoch %d: loss = %.6g\n", epoch + 1, loss);
		fflush(stdout);
	}
	return rv;
}

/* What the chief trains and the evaluator evaluates. */
typedef struct config {
	int         epochs, steps, eval_timeout_s;
	double      lr;
	const char *ckpt_dir, *logdir;
} config;

static int
train(pasco_strategy *s, pasco_coordinator *c, pasco_variable *w,
    pasco_variable *b, const config *cfg)
{
	pasco_per_worker_dataset  *data = NULL;
	pasco_per_worker_iterator *it   = NULL;
	pasco_tensor              *rate = NULL;
	int                        rv;

	if ((rv = pasco_tensor_scalar(&rate, PASCO_F32, cfg->lr)) != 0) {
		report(rv, "making the learning rate", NULL);
		goto out;
	}
	if ((rv = pasco_per_worker_dataset_create(
	         &data, c, "regression_data")) != 0 ||
	    (rv = pasco_per_worker_iterator_create(&it, data)) != 0) {
		report(rv, "creating the training iterator", NULL);
		goto out;
	}
	pasco_arg args[4] = {pasco_arg_iterator(it), pasco_arg_variable(w),
	    pasco_arg_variable(b), pasco_arg_tensor(rate)};
	for (int epoch = 0; epoch < cfg->epochs && rv == 0; epoch++) {
		rv = train_epoch(c, args, epoch, cfg->steps);
		/* the step of a checkpoint: steps done when it was taken */
		if (rv == 0 && cfg->ckpt_dir != NULL &&
		    (rv = pasco_checkpoint_save(s, cfg->ckpt_dir,
		         (int64_t) (epoch + 1) * cfg->steps, 0)) != 0) {
			report(rv, "saving a checkpoint",
			    pasco_strategy_error(s));
		}
	}
out:
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(data);
	pasco_tensor_release(rate);
	return rv;
}

/* The model's variables, created by the chief on the ps tasks and by the
 * evaluator on its own: the same names, dtypes and shapes. */
static int
create_model(pasco_strategy *s, pasco_variable **w, pasco_variable **b)
{
	pasco_tensor *zero = NULL;
	int           rv;
	if ((rv = pasco_tensor_scalar(&zero, PASCO_F32, 0.0)) != 0) {
		return report(rv, "making the initial value", NULL);
	}
	if ((rv = pasco_variable_create(w, s, "w", zero)) != 0 ||
	    (rv = pasco_variable_create(b, s, "b", zero)) != 0) {
		report(rv, "creating the variables", pasco_strategy_error(s));
	}
	pasco_tensor_release(zero);
	return rv;
}

/* The evaluator task: a sidecar evaluator of the chief's checkpoints. */
static int
evaluate(const config *cfg)
{
	static const char *const metrics[] = {"mae"};
	pasco_evaluator         *e         = NULL;
	pasco_variable          *w = NULL, *b = NULL;
	pasco_evaluator_options  o = {.checkpoint_dir = cfg->ckpt_dir,
	     .eval_fn                                 = "eval_shard",
	     .num_shards                              = EVAL_SHARDS,
	     .metric_names                            = metrics,
	     .num_metrics                             = 1,
	     .logdir                                  = cfg->logdir,
	     .final_step = (int64_t) cfg->epochs * cfg->steps,
	     .timeout_ms = (int64_t) cfg->eval_timeout_s * 1000};
	int                      rv;

	if (cfg->ckpt_dir == NULL) {
		printf("evaluator: nothing to evaluate without "
		       "--checkpoint-dir\n");
		return 0;
	}
	if ((rv = pasco_evaluator_create(&e, &o)) != 0) {
		report(
		    rv, "starting the evaluator", pasco_evaluator_error(NULL));
		return 1;
	}
	if ((rv = create_model(pasco_evaluator_strategy(e), &w, &b)) == 0) {
		pasco_arg args[2] = {
		    pasco_arg_variable(w), pasco_arg_variable(b)};
		if ((rv = pasco_evaluator_run(e, args, 2)) != 0) {
			report(rv, "evaluation", pasco_evaluator_error(e));
		} else {
			printf("evaluator: evaluated %lld checkpoints, the "
			       "last at "
			       "step %lld\n",
			    (long long) pasco_evaluator_count(e),
			    (long long) pasco_evaluator_last_step(e));
		}
	}
	pasco_variable_free(w);
	pasco_variable_free(b);
	pasco_evaluator_destroy(e);
	return rv == 0 ? 0 : 1;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	config cfg = {
	    .epochs = 20, .steps = 100, .eval_timeout_s = 300, .lr = 0.05};
	double             wv = NAN, bv = NAN;
	pasco_strategy    *s = NULL;
	pasco_coordinator *c = NULL;
	pasco_variable    *w = NULL, *b = NULL;
	int                rv;
	example_option     opts[] = {
	        {"epochs", OPTION_INT, &cfg.epochs, 1, 1e7, "N  epochs (20)"},
	        {"steps", OPTION_INT, &cfg.steps, 1, 1e7,
	            "N  steps per epoch (100)"},
	        {"lr", OPTION_DOUBLE, &cfg.lr, 0, 1e3, "X  learning rate (0.05)"},
	        {"checkpoint-dir", OPTION_PATH, &cfg.ckpt_dir, 0, 0,
	            "DIR  a checkpoint each epoch; the evaluator watches it"},
	        {"logdir", OPTION_PATH, &cfg.logdir, 0, 0,
	            "DIR  eval scalars for TensorBoard under DIR/eval"},
	        {"eval-timeout", OPTION_INT, &cfg.eval_timeout_s, 0, 1e7,
	            "S  the evaluator ends after S s without a new "
	                "checkpoint (300; 0: never)"},
	        {NULL}};

	if ((rv = parse_options(argc, argv,
	         "pasco launch --ps N --workers M [--evaluator] -- "
	         "linear_regression [OPTIONS]",
	         opts)) >= 0) {
		return rv;
	}
	if (pasco_cluster_task_role(cluster) == PASCO_ROLE_EVALUATOR) {
		return evaluate(&cfg);
	}
	if ((rv = pasco_strategy_create(&s, cluster, NULL)) != 0) {
		report(rv, "cannot reach the cluster",
		    pasco_strategy_error(NULL));
		goto out;
	}
	if ((rv = create_model(s, &w, &b)) != 0) {
		goto out;
	}
	printf("w on ps %d, b on ps %d; %zu workers\n",
	    pasco_variable_ps_task(w), pasco_variable_ps_task(b),
	    pasco_strategy_num_workers(s));
	if ((rv = pasco_coordinator_create(&c, s, NULL)) != 0) {
		report(rv, "creating the coordinator", NULL);
		goto out;
	}
	/* the final values are printed even when training failed midway */
	rv = train(s, c, w, b, &cfg);
	wv = read_scalar(w);
	bv = read_scalar(b);
	printf("w = %.4f\nb = %.4f\n", wv, bv);
	if (rv == 0 && !(fabs(wv - 0.8) < 0.01 && fabs(bv - 1.0) < 0.01)) {
		fprintf(stderr, "w and b are not within 0.01 of 0.8 and 1\n");
	}
out:
	pasco_coordinator_destroy(c);
	pasco_variable_free(w);
	pasco_variable_free(b);
	pasco_strategy_destroy(s);
	return rv == 0 && fabs(wv - 0.8) < 0.01 && fabs(bv - 1.0) < 0.01 ? 0
	                                                                 : 1;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
