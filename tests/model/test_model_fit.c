/*
 * compile / fit / evaluate / predict with real processes (issue 20): this
 * test is the chief; 2 ps and 2 workers are model_node processes on
 * loopback, which have dataset factories and no model code. A small MLP
 * learns separable synthetic data with pasco_model_fit; evaluate and
 * predict are checked against values computed here from the trained
 * variables; a layer's shape error comes back from a worker to the chief.
 */
#include "events_reader.h"
#include "helpers.h"
#include "model_data.h"
#include "node_spawn.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(model_fit, .timeout = 120);

typedef struct cluster {
	char               spec[512];
	pid_t              pids[4];
	pasco_cluster     *cluster;
	pasco_strategy    *s;
	pasco_coordinator *c;
} cluster;

static cluster K;

static pid_t
spawn(const char *role, int index, const char *root)
{
	return test_spawn_node("PASCO_MODEL_NODE", K.spec, role, index, root);
}

/* 2 ps, 2 workers, and this process's strategy and coordinator; root
 * (may be NULL): where the ps may write. */
static void
start(const char *root)
{
	char json[600], err[256];
	memset(&K, 0, sizeof(K));
	snprintf(K.spec, sizeof(K.spec),
	    "\"cluster\": {\"ps\": [\"127.0.0.1:%d\", \"127.0.0.1:%d\"], "
	    "\"worker\": [\"127.0.0.1:%d\", \"127.0.0.1:%d\"]}",
	    test_free_port(), test_free_port(), test_free_port(),
	    test_free_port());
	K.pids[0] = spawn("ps", 0, root);
	K.pids[1] = spawn("ps", 1, root);
	K.pids[2] = spawn("worker", 0, root);
	K.pids[3] = spawn("worker", 1, root);
	snprintf(json, sizeof(json), "{%s}", K.spec);
	PASCO_PASS(
	    pasco_cluster_parse_json(&K.cluster, json, err, sizeof(err)));
	PASCO_PASS(pasco_strategy_create(&K.s, K.cluster,
	    &(pasco_strategy_options){.connect_timeout_ms = 20000}));
	PASCO_PASS(pasco_coordinator_create(&K.c, K.s, NULL));
	pasco_layer_reset_names();
}

static void
stop(void)
{
	pasco_coordinator_destroy(K.c);
	pasco_strategy_destroy(K.s);
	for (int i = 0; i < 4; i++) {
		if (K.pids[i] > 0) {
			kill(K.pids[i], SIGKILL);
			waitpid(K.pids[i], NULL, 0);
		}
	}
	pasco_cluster_free(K.cluster);
}

static pasco_model *
mlp(void)
{
	pasco_model *m;
	pasco_layer  l[] = {pasco_layer_dense(16, PASCO_ACT_RELU),
	     pasco_layer_dense(MD_CLASSES, PASCO_ACT_SOFTMAX)};
	PASCO_PASS(pasco_model_sequential(&m, MD_FEATURES, 2, l, 42));
	PASCO_PASS(pasco_model_compile(m,
	    &(pasco_compile_options){.loss = "sparse_categorical_crossentropy",
	        .optimizer                 = pasco_adam(0.02, false),
	        .metrics                   = (const char *[]){"accuracy"},
	        .nmetrics                  = 1}));
	return m;
}

static double
log_of(const pasco_logs *logs, const char *name)
{
	double v = NAN;
	cr_assert(pasco_logs_get(logs, name, &v), "no %s in the logs", name);
	return v;
}

/* The trained model's outputs, computed here in double from its
 * variables read back from the ps: probs[MD_EVAL][MD_CLASSES] of the
 * evaluation examples; returns their mean loss, *acc their accuracy. */
static double
expected(pasco_model *m, double (*probs)[MD_CLASSES], double *acc)
{
	pasco_tensor *v[4];
	double        loss  = 0;
	int           right = 0;
	for (size_t k = 0; k < 4; k++) {
		PASCO_PASS(
		    pasco_variable_read(pasco_model_variable(m, k), &v[k]));
	}
	for (int i = 0; i < MD_EVAL; i++) {
		float   x[MD_FEATURES];
		double  h[16], z[MD_CLASSES], mx = -HUGE_VAL, sum = 0;
		int64_t y = md_example(7, (uint64_t) i, x), best = 0;
		for (int u = 0; u < 16; u++) {
			h[u] = pasco_tensor_get(v[1], u);
			for (int j = 0; j < MD_FEATURES; j++) {
				h[u] +=
				    x[j] * pasco_tensor_get(v[0], j * 16 + u);
			}
			h[u] = fmax(h[u], 0);
		}
		for (int c = 0; c < MD_CLASSES; c++) {
			z[c] = pasco_tensor_get(v[3], c);
			for (int u = 0; u < 16; u++) {
				z[c] += h[u] * pasco_tensor_get(
				                   v[2], u * MD_CLASSES + c);
			}
			mx = fmax(mx, z[c]);
		}
		for (int c = 0; c < MD_CLASSES; c++) {
			sum += exp(z[c] - mx);
		}
		for (int c = 0; c < MD_CLASSES; c++) {
			probs[i][c] = exp(z[c] - mx) / sum;
			best        = probs[i][c] > probs[i][best] ? c : best;
		}
		loss -= log(probs[i][y]) / MD_EVAL;
		right += best == y;
	}
	for (size_t k = 0; k < 4; k++) {
		pasco_tensor_release(v[k]);
	}
	*acc = (double) right / MD_EVAL;
	return loss;
}

/* Shard k of 2's predictions file: its header and one row per example
 * k, k + 2, ... in order, each the expected probabilities. */
static int
check_predictions(const char *dir, int k, double (*probs)[MD_CLASSES])
{
	char  path[256], line[256];
	int   rows = 0;
	FILE *f;
	snprintf(
	    path, sizeof(path), "%s/predictions-%05d-of-00002.csv", dir, k);
	cr_assert_not_null(f = fopen(path, "r"), "no %s", path);
	cr_assert_not_null(fgets(line, sizeof(line), f));
	cr_assert_str_eq(line, "output_0,output_1,output_2\n");
	while (fgets(line, sizeof(line), f) != NULL) {
		int    i = k + 2 * rows++;
		double p[MD_CLASSES];
		cr_assert_eq(sscanf(line, "%lf,%lf,%lf", &p[0], &p[1], &p[2]),
		    3, "%s: row %d: %s", path, rows, line);
		cr_assert_lt(i, MD_EVAL, "%s: too many rows", path);
		for (int c = 0; c < MD_CLASSES; c++) {
			cr_assert_float_eq(p[c], probs[i][c], 1e-5,
			    "%s: row %d (example %d) output %d: %g, want %g",
			    path, rows, i, c, p[c], probs[i][c]);
		}
	}
	fclose(f);
	return rows;
}

/* Shard k of 2's TFRecord predictions, read back with the library's
 * reader and Example parser: a record per example k, k + 2, ... in order,
 * its "output" the CSV file's row (as f32) and the expected
 * probabilities. */
static int
check_tfrecord_predictions(const char *dir, int k, double (*probs)[MD_CLASSES])
{
	pasco_feature_spec spec = {.name = "output",
	    .type                        = PASCO_FEATURE_FLOAT,
	    .length                      = MD_CLASSES};
	char               path[256], csv[256], line[256], err[256];
	const char        *name = path;
	pasco_dataset     *ds;
	pasco_value       *e, *ex;
	FILE              *f;
	int                rows = 0, rv;
	snprintf(path, sizeof(path), "%s/predictions-%05d-of-00002.tfrecord",
	    dir, k);
	snprintf(csv, sizeof(csv), "%s/predictions-%05d-of-00002.csv", dir, k);
	cr_assert_not_null(f = fopen(csv, "r"), "no %s", csv);
	cr_assert_not_null(fgets(line, sizeof(line), f)); /* the header */
	PASCO_PASS(pasco_dataset_tfrecord(&ds, &name, 1, NULL));
	while ((rv = pasco_dataset_next(ds, &e)) == PASCO_OK) {
		const pasco_tensor *t = pasco_value_as_tensor(e);
		int                 i = k + 2 * rows++;
		double              p[MD_CLASSES];
		cr_assert_lt(i, MD_EVAL, "%s: too many records", path);
		PASCO_PASS(pasco_example_parse(t->data, (size_t) t->count,
		    &spec, 1, &ex, err, sizeof(err)));
		t = pasco_value_as_tensor(pasco_value_get(ex, "output"));
		cr_assert_not_null(fgets(line, sizeof(line), f));
		cr_assert_eq(
		    sscanf(line, "%lf,%lf,%lf", &p[0], &p[1], &p[2]), 3);
		for (int c = 0; c < MD_CLASSES; c++) {
			float got = ((const float *) t->data)[c];
			cr_assert_eq(got, (float) p[c],
			    "%s: record %d output %d: %.9g, the CSV has %.9g",
			    path, rows, c, got, p[c]);
			cr_assert_float_eq(got, probs[i][c], 1e-5,
			    "%s: record %d (example %d) output %d: %g, want "
			    "%g",
			    path, rows, i, c, got, probs[i][c]);
		}
		pasco_value_free(ex);
		pasco_value_free(e);
	}
	cr_assert_eq(rv, PASCO_EOUTOFRANGE, "%s: %s", path,
	    pasco_tfrecord_last_error());
	cr_assert_null(fgets(line, sizeof(line), f), "%s: rows left", csv);
	fclose(f);
	pasco_dataset_free(ds);
	return rows;
}

/* The same file read by an independent reader (read_events.py
 * --examples: its own framing checks, CRC-32C and proto decoding): as
 * many records as check_tfrecord_predictions read, each its expected
 * probabilities. */
static void
cross_check_tfrecord(
    const char *dir, int k, int rows, double (*probs)[MD_CLASSES])
{
	char         path[256], err[512];
	int          status, r = 0;
	const cJSON *ex;
	snprintf(path, sizeof(path), "%s/predictions-%05d-of-00002.tfrecord",
	    dir, k);
	cJSON *doc =
	    read_records_as("--examples", path, &status, err, sizeof(err));
	cr_assert_not_null(doc, "reader failed (%d): %s", status, err);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItem(doc, "truncated_at")));
	cr_assert_eq(
	    cJSON_GetArraySize(cJSON_GetObjectItem(doc, "examples")), rows);
	cJSON_ArrayForEach(ex, cJSON_GetObjectItem(doc, "examples"))
	{
		const cJSON *out = cJSON_GetObjectItem(ex, "output");
		int          i   = k + 2 * r++;
		cr_assert_eq(cJSON_GetArraySize(out), MD_CLASSES);
		for (int c = 0; c < MD_CLASSES; c++) {
			cr_assert_float_eq(
			    cJSON_GetArrayItem(out, c)->valuedouble,
			    probs[i][c], 1e-5, "%s: record %d output %d", path,
			    r, c);
		}
	}
	cJSON_Delete(doc);
}

Test(model_fit, an_mlp_learns_with_fit_and_evaluate_and_predict_agree)
{
	static double   probs[MD_EVAL][MD_CLASSES];
	pasco_history   h;
	pasco_logs      eval;
	pasco_variable *gs;
	pasco_tensor   *step;
	char            dir[] = "/tmp/pasco-predict-XXXXXX", cmd[64];
	double          acc, loss;
	int64_t         rows;

	char             root[] = "/tmp/pasco-model-fit-XXXXXX", path[256];
	pasco_callbacks *cbs;
	pasco_callback   cb;
	int64_t          saved;

	cr_assert_not_null(mkdtemp(root));
	start(root);
	/* checkpoints and TensorBoard, as any fit has them */
	snprintf(path, sizeof(path), "%s/ckpt", root);
	PASCO_PASS(pasco_callbacks_create(&cbs));
	PASCO_PASS(pasco_callback_checkpoint(
	    &cb, &(pasco_checkpoint_callback_options){
	             .strategy = K.s, .dir = path, .keep = 2}));
	PASCO_PASS(pasco_callbacks_add(cbs, cb));
	snprintf(path, sizeof(path), "%s/tb", root);
	PASCO_PASS(pasco_callback_tensorboard(
	    &cb, &(pasco_tensorboard_options){.logdir = path}));
	PASCO_PASS(pasco_callbacks_add(cbs, cb));
	pasco_model *m  = mlp();
	int          rv = pasco_model_fit(K.c, m,
	             &(pasco_model_fit_options){.dataset = "md_train",
	                 .epochs                         = 3,
	                 .steps_per_epoch                = 40,
	                 .steps_per_execution            = 2,
	                 .validation_dataset             = "md_eval",
	                 .callbacks                      = cbs},
	             &h);
	cr_assert_eq(rv, 0, "fit: %s", pasco_model_last_error());
	cr_assert_eq(h.count, 3);
	cr_assert_lt(
	    log_of(&h.epochs[2], "loss"), log_of(&h.epochs[0], "loss"));
	cr_assert_gt(log_of(&h.epochs[2], "accuracy"), 0.9,
	    "training accuracy %g", log_of(&h.epochs[2], "accuracy"));
	cr_assert_gt(log_of(&h.epochs[2], "val_accuracy"), 0.9);
	/* one global step per training step: one mixed apply each */
	PASCO_PASS(pasco_strategy_global_step(K.s, &gs));
	PASCO_PASS(pasco_variable_read(gs, &step));
	cr_assert_eq(pasco_tensor_get(step, 0), 3 * 40);
	pasco_tensor_release(step);
	pasco_variable_free(gs);
	pasco_callbacks_free(cbs);
	snprintf(path, sizeof(path), "%s/ckpt", root);
	PASCO_PASS(pasco_checkpoint_latest(path, path, sizeof(path), &saved));
	cr_assert_eq(saved, 3 * 40);
	snprintf(path, sizeof(path),
	    "ls %s/tb/train | grep -q tfevents && ls %s/tb/eval | grep -q "
	    "tfevents",
	    root, root);
	cr_assert_eq(system(path), 0, "TensorBoard wrote no event files");

	/* evaluate, exactly once over 3 shards, against this test's math */
	loss = expected(m, probs, &acc);
	cr_assert_eq(pasco_model_evaluate(K.c, m,
	                 &(pasco_model_evaluate_options){
	                     .dataset = "md_eval", .shards = 3},
	                 &eval),
	    0, "evaluate: %s", pasco_model_last_error());
	cr_assert_float_eq(log_of(&eval, "loss"), loss, 1e-4 * (1 + loss));
	cr_assert_float_eq(
	    log_of(&eval, "accuracy"), acc, 1.0 / MD_EVAL + 1e-9);
	/* the last epoch's validation saw the same weights and examples */
	cr_assert_float_eq(
	    log_of(&h.epochs[2], "val_loss"), loss, 1e-4 * (1 + loss));
	pasco_history_fini(&h);

	/* predict: a file per shard, every example once, in order */
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(pasco_model_predict(K.c, m,
	                 &(pasco_model_predict_options){
	                     .dataset = "md_eval", .shards = 2, .dir = dir},
	                 &rows),
	    0, "predict: %s", pasco_model_last_error());
	cr_assert_eq(rows, MD_EVAL);
	cr_assert_eq(check_predictions(dir, 0, probs) +
	                 check_predictions(dir, 1, probs),
	    MD_EVAL);
	snprintf(cmd, sizeof(cmd), "test $(ls %s | wc -l) = 2", dir);
	cr_assert_eq(system(cmd), 0, "only the two files, no temporary ones");
	/* and as TFRecord files of Examples, the same rows */
	cr_assert_eq(pasco_model_predict(K.c, m,
	                 &(pasco_model_predict_options){.dataset = "md_eval",
	                     .shards                             = 2,
	                     .dir                                = dir,
	                     .format = PASCO_PREDICT_TFRECORD},
	                 &rows),
	    0, "predict: %s", pasco_model_last_error());
	cr_assert_eq(rows, MD_EVAL);
	int shard0 = check_tfrecord_predictions(dir, 0, probs);
	cr_assert_eq(
	    shard0 + check_tfrecord_predictions(dir, 1, probs), MD_EVAL);
	cross_check_tfrecord(dir, 0, shard0, probs);
	cross_check_tfrecord(dir, 1, MD_EVAL - shard0, probs);
	snprintf(cmd, sizeof(cmd), "test $(ls %s | wc -l) = 4", dir);
	cr_assert_eq(system(cmd), 0, "only four files, no temporary ones");
	cr_assert_eq(pasco_model_predict(K.c, m,
	                 &(pasco_model_predict_options){
	                     .dataset = "md_eval", .dir = dir, .format = 7},
	                 NULL),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "format 7") != NULL, "%s",
	    pasco_model_last_error());
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	pasco_model_free(m);
	stop();
	snprintf(path, sizeof(path), "rm -rf %s", root);
	cr_assert_eq(system(path), 0);
}

Test(model_fit, a_layers_shape_error_reaches_the_chief)
{
	pasco_history h;
	start(NULL);
	pasco_model *m  = mlp();
	int          rv = pasco_model_fit(K.c, m,
	             &(pasco_model_fit_options){
	                 .dataset = "md_bad_width", .steps_per_epoch = 4},
	             &h);
	cr_assert_eq(rv, PASCO_EINVAL, "%s", pasco_strerror(rv));
	cr_assert(
	    strstr(pasco_model_last_error(),
	        "dense: input [32, 3] does not match kernel [4, 16]") != NULL,
	    "%s", pasco_model_last_error());
	pasco_history_fini(&h);
	/* and evaluate names a factory the workers lack */
	pasco_logs logs;
	cr_assert_neq(
	    pasco_model_evaluate(K.c, m,
	        &(pasco_model_evaluate_options){.dataset = "nope"}, &logs),
	    0);
	cr_assert(
	    strstr(pasco_model_last_error(), "no dataset factory 'nope'"),
	    "%s", pasco_model_last_error());
	/* and refuses a dataset that never ends (it would never return) */
	cr_assert_eq(
	    pasco_model_evaluate(K.c, m,
	        &(pasco_model_evaluate_options){.dataset = "md_eval_forever"},
	        &logs),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "dataset 'md_eval_forever', shard ") &&
	              strstr(pasco_model_last_error(),
	                  ", repeats forever, and evaluate and predict read "
	                  "each shard to its end"),
	    "%s", pasco_model_last_error());
	/* a validation file that is missing is named at fit's start, before
	 * any training (it was found after the first epoch) */
	{
		pasco_variable *gs;
		pasco_tensor   *t0, *t1;
		PASCO_PASS(pasco_strategy_global_step(K.s, &gs));
		PASCO_PASS(pasco_variable_read(gs, &t0));
		rv = pasco_model_fit(K.c, m,
		    &(pasco_model_fit_options){.dataset = "md_train",
		        .steps_per_epoch                = 50,
		        .epochs                         = 2,
		        .validation_dataset =
		            "pasco.files:{\"format\": \"csv\", \"files\": "
		            "[\"/nonexistent/val-*.csv\"], \"label\": \"y\"}"},
		    NULL);
		cr_assert_neq(rv, 0);
		cr_assert(strstr(pasco_model_last_error(),
		              "fit: validation_dataset: ") &&
		              strstr(pasco_model_last_error(),
		                  "no file matches '/nonexistent/val-*.csv'"),
		    "%s", pasco_model_last_error());
		PASCO_PASS(pasco_variable_read(gs, &t1));
		cr_assert_eq(pasco_tensor_get(t1, 0), pasco_tensor_get(t0, 0),
		    "fit trained %g steps before naming the validation file",
		    pasco_tensor_get(t1, 0) - pasco_tensor_get(t0, 0));
		pasco_tensor_release(t0);
		pasco_tensor_release(t1);
		pasco_variable_free(gs);
	}
	/* the train step scheduled by hand returns its loss and the
	 * metrics' counts (fit totals them on the chief); without the global
	 * step it is told which argument that is, not "argument 5 requested
	 * as a variable" */
	{
		pasco_arg                  args[16];
		size_t                     n = 0;
		pasco_per_worker_dataset  *ds;
		pasco_per_worker_iterator *it;
		pasco_variable            *gs;
		pasco_remote_value        *r;
		const pasco_value         *v;
		PASCO_PASS(pasco_model_args(m, args, 16, &n));
		PASCO_PASS(
		    pasco_per_worker_dataset_create(&ds, K.c, "md_train"));
		PASCO_PASS(pasco_per_worker_iterator_create(&it, ds));
		PASCO_PASS(pasco_strategy_global_step(K.s, &gs));
		args[n++] = pasco_arg_iterator(it);
		PASCO_PASS(
		    pasco_schedule(K.c, "pasco.model_train", args, n, &r));
		PASCO_FAIL(pasco_remote_value_fetch(r, &v), PASCO_EINVAL);
		cr_assert(
		    strstr(pasco_remote_value_error(r),
		        "compiled with a global step, which the step "
		        "takes after the iterator") &&
		        !strstr(pasco_remote_value_error(r), "requested as"),
		    "%s", pasco_remote_value_error(r));
		pasco_remote_value_free(r);
		(void) pasco_join(K.c); /* the error, raised once */
		args[n++] = pasco_arg_variable(gs);
		PASCO_PASS(
		    pasco_schedule(K.c, "pasco.model_train", args, n, &r));
		PASCO_PASS(pasco_remote_value_fetch(r, &v));
		const pasco_tensor *t = pasco_value_as_tensor(v);
		cr_assert(t != NULL && t->count > 1,
		    "the loss and the accuracy's counts");
		cr_assert(isfinite(pasco_tensor_get(t, 0)));
		pasco_remote_value_free(r);
		pasco_variable_free(gs);
		pasco_per_worker_iterator_free(it);
		pasco_per_worker_dataset_free(ds);
	}
	/* resume needs a directory to resume from */
	rv = pasco_model_fit(K.c, m,
	    &(pasco_model_fit_options){
	        .dataset = "md_train", .steps_per_epoch = 4, .resume = true},
	    NULL);
	cr_assert_eq(rv, PASCO_EINVAL, "%s", pasco_strerror(rv));
	cr_assert(strstr(pasco_model_last_error(),
	              "resume needs checkpoint_dir") != NULL,
	    "%s", pasco_model_last_error());
	pasco_model_free(m);
	stop();
}

/* What a list of the user's own sees: where training starts, each epoch
 * ended. */
typedef struct seen {
	int32_t initial_epoch;
	int     epochs[8], n;
} seen;

static int
seen_begin(void *user, pasco_fit_context *ctx)
{
	((seen *) user)->initial_epoch = ctx->initial_epoch;
	return 0;
}

static int
seen_epoch_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	seen *s = user;
	(void) logs;
	s->epochs[s->n++ % 8] = ctx->epoch;
	return 0;
}

/* fit once (epochs, shorthands, resume, a list of the user's own); the
 * global step after it. */
static int64_t
fit_resuming(pasco_model *m, const char *root, int32_t epochs, seen *out)
{
	char             ck[256], tb[256];
	pasco_callbacks *cbs;
	pasco_variable  *gs;
	pasco_tensor    *step;
	PASCO_PASS(pasco_callbacks_create(&cbs));
	PASCO_PASS(pasco_callbacks_add(cbs, (pasco_callback){.name = "seen",
	                                        .begin     = seen_begin,
	                                        .epoch_end = seen_epoch_end,
	                                        .user      = out}));
	snprintf(ck, sizeof(ck), "%s/ck", root);
	snprintf(tb, sizeof(tb), "%s/tb", root);
	int rv = pasco_model_fit(K.c, m,
	    &(pasco_model_fit_options){.dataset = "md_train",
	        .epochs                         = epochs,
	        .steps_per_epoch                = 10,
	        .checkpoint_dir                 = ck,
	        .checkpoint_keep                = 1,
	        .logdir                         = tb,
	        .resume                         = true,
	        .callbacks                      = cbs},
	    NULL);
	cr_assert_eq(rv, 0, "fit: %s", pasco_model_last_error());
	pasco_callbacks_free(cbs);
	PASCO_PASS(pasco_strategy_global_step(K.s, &gs));
	PASCO_PASS(pasco_variable_read(gs, &step));
	int64_t v = (int64_t) pasco_tensor_get(step, 0);
	pasco_tensor_release(step);
	pasco_variable_free(gs);
	return v;
}

Test(model_fit, resumes_from_its_newest_checkpoint_with_shorthands_and_a_list)
{
	char            root[] = "/tmp/pasco-model-resume-XXXXXX", cmd[400];
	seen            first = {0}, second = {0};
	pasco_variable *gs;
	pasco_tensor   *zero;

	cr_assert_not_null(mkdtemp(root));
	start(root);
	pasco_model *m = mlp();
	/* a fresh start: nothing to resume from */
	cr_assert_eq(fit_resuming(m, root, 2, &first), 20);
	cr_assert_eq(first.initial_epoch, 0);
	cr_assert_eq(first.n, 2, "the list's epoch_end ran %d times", first.n);
	cr_assert_eq(first.epochs[1], 1);
	/* checkpoint_keep 1: only the newest; TensorBoard with the rate */
	snprintf(cmd, sizeof(cmd),
	    "test \"$(ls %s/ck)\" = ckpt-20 && "
	    "grep -qa epoch_learning_rate %s/tb/train/events.out.tfevents.*",
	    root, root);
	cr_assert_eq(system(cmd), 0, "checkpoints or event files");

	/* the global step set back here: only a restore brings it to 20 */
	PASCO_PASS(pasco_strategy_global_step(K.s, &gs));
	PASCO_PASS(pasco_tensor_scalar(&zero, PASCO_I64, 0));
	PASCO_PASS(pasco_variable_assign(gs, zero));
	pasco_tensor_release(zero);
	pasco_variable_free(gs);
	/* started again with one epoch more: epoch 2 alone, from step 20 */
	cr_assert_eq(fit_resuming(m, root, 3, &second), 30);
	cr_assert_eq(second.initial_epoch, 2);
	cr_assert_eq(second.n, 1);
	cr_assert_eq(second.epochs[0], 2);
	snprintf(cmd, sizeof(cmd), "test \"$(ls %s/ck)\" = ckpt-30", root);
	cr_assert_eq(system(cmd), 0, "the resumed run's checkpoint");
	pasco_model_free(m);
	stop();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

/* A user's progress callback that kills ps 1 once epoch 1's last step is
 * in: after epoch 0's checkpoint, before epoch 1's. */
static int
kill_ps1_after_epoch_1(void *user, pasco_fit_context *ctx, double loss)
{
	(void) user;
	(void) loss;
	if (ctx->epoch == 1 && ctx->steps_done == 20 && K.pids[1] > 0) {
		kill(K.pids[1], SIGKILL);
		waitpid(K.pids[1], NULL, 0);
		K.pids[1] = 0;
	}
	return 0;
}

/* A ps lost for good (recovery on, and it never comes back) ends fit
 * naming the ps and why, not the checkpoint's save (or the metrics' read)
 * that met it first. */
Test(model_fit, a_ps_lost_for_good_is_named_as_the_cause_of_fits_end)
{
	char             root[] = "/tmp/pasco-model-lost-XXXXXX", ck[256];
	char             cmd[300];
	pasco_callbacks *cbs;
	cr_assert_not_null(mkdtemp(root));
	snprintf(ck, sizeof(ck), "%s/ck", root);
	start(root);
	pasco_coordinator_destroy(K.c); /* again, with recovery */
	pasco_strategy_destroy(K.s);
	PASCO_PASS(pasco_strategy_create(&K.s, K.cluster,
	    &(pasco_strategy_options){.connect_timeout_ms = 20000,
	        .checkpoint_dir                           = ck,
	        .ps_recovery_timeout_ms                   = 1500}));
	PASCO_PASS(pasco_coordinator_create(&K.c, K.s, NULL));
	pasco_model *m = mlp();
	PASCO_PASS(pasco_callbacks_create(&cbs));
	PASCO_PASS(
	    pasco_callbacks_add(cbs, (pasco_callback){.name = "kill",
	                                 .progress = kill_ps1_after_epoch_1}));
	int rv = pasco_model_fit(K.c, m,
	    &(pasco_model_fit_options){.dataset = "md_train",
	        .epochs                         = 3,
	        .steps_per_epoch                = 20,
	        .checkpoint_dir                 = ck,
	        .callbacks                      = cbs},
	    NULL);
	cr_assert_eq(rv, PASCO_EUNAVAILABLE, "%s: %s", pasco_strerror(rv),
	    pasco_model_last_error());
	cr_assert(strncmp(pasco_model_last_error(), "ps 1 at ", 8) == 0 &&
	              strstr(pasco_model_last_error(),
	                  "did not come back within 1500 ms") &&
	              strstr(pasco_model_last_error(), "(fit stopped at: "),
	    "%s", pasco_model_last_error());
	pasco_callbacks_free(cbs);
	pasco_model_free(m);
	stop();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

/* The sidecar evaluator's data, in this process (its worker is here). */
PASCO_DATASET(md_keys_eval)
{
	return md_keys_eval_dataset(ctx, out);
}

/* A dynamic Embedding of hashed words: rows made by training only (the
 * evaluation's new words read their default and add none), its counts in
 * the epoch logs and TensorBoard. */
Test(model_fit, a_dynamic_embedding_learns_hashed_words)
{
	char root[] = "/tmp/pasco-model-dyn-XXXXXX", tb[256], ckpt[256];
	pasco_history       h;
	pasco_logs          eval;
	pasco_dynamic_stats before, after;
	pasco_model        *m;
	pasco_layer         l[] = {pasco_layer_dynamic_embedding(8),
	            pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	cr_assert_not_null(mkdtemp(root));
	start(root);
	l[0].dynamic_options.evict_after = 1000000;
	PASCO_PASS(pasco_model_sequential(&m, MD_KEYS, 2, l, 5));
	PASCO_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){.loss = "binary_crossentropy",
	           .optimizer                 = pasco_adam(0.05, false),
	           .metrics                   = (const char *[]){"accuracy"},
	           .nmetrics                  = 1}));
	snprintf(tb, sizeof(tb), "%s/tb", root);
	snprintf(ckpt, sizeof(ckpt), "%s/ckpt", root);
	int rv = pasco_model_fit(K.c, m,
	    &(pasco_model_fit_options){.dataset = "md_keys",
	        .epochs                         = 3,
	        .steps_per_epoch                = 40,
	        .logdir                         = tb,
	        .checkpoint_dir                 = ckpt},
	    &h);
	cr_assert_eq(rv, 0, "fit: %s", pasco_model_last_error());
	cr_assert_gt(log_of(&h.epochs[2], "accuracy"), 0.95, "accuracy %g",
	    log_of(&h.epochs[2], "accuracy"));
	/* every word seen, none made twice */
	cr_assert_eq(log_of(&h.epochs[2], "embedding/rows"), MD_WORDS);
	cr_assert_eq(log_of(&h.epochs[2], "embedding/created"), MD_WORDS);
	cr_assert_eq(log_of(&h.epochs[2], "embedding/evicted"), 0);
	pasco_history_fini(&h);
	PASCO_PASS(
	    pasco_variable_dynamic_stats(pasco_model_variable(m, 0), &before));
	cr_assert_eq(
	    pasco_model_evaluate(K.c, m,
	        &(pasco_model_evaluate_options){.dataset = "md_keys_eval"},
	        &eval),
	    0, "evaluate: %s", pasco_model_last_error());
	cr_assert_gt(log_of(&eval, "accuracy"), 0.9);
	PASCO_PASS(
	    pasco_variable_dynamic_stats(pasco_model_variable(m, 0), &after));
	cr_assert_eq(after.rows, before.rows, "evaluation made rows");
	cr_assert_eq(after.created, MD_WORDS);
	/* the counts in TensorBoard, epoch by epoch */
	snprintf(tb + strlen(tb), sizeof(tb) - strlen(tb), "/train");
	cJSON *doc = read_events_in(tb);
	cr_assert_not_null(doc);
	cr_assert_eq(events_scalar(doc, "epoch_embedding/rows", 2), MD_WORDS);
	cJSON_Delete(doc);
	/* a sidecar evaluator restores the table from the last checkpoint
	 * (2 ps to its 1) and evaluates it as the cluster did */
	{
		char         line[512] = "";
		int64_t      count = 0, last = 0;
		FILE        *out = tmpfile();
		pasco_model *em;
		pasco_layer  el[] = {pasco_layer_dynamic_embedding(8),
		     pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
		pasco_layer_reset_names();
		el[0].dynamic_options.evict_after = 1000000;
		PASCO_PASS(pasco_model_sequential(&em, MD_KEYS, 2, el, 5));
		PASCO_PASS(pasco_model_compile(
		    em, &(pasco_compile_options){.loss = "binary_crossentropy",
		            .optimizer = pasco_adam(0.05, false),
		            .metrics   = (const char *[]){"accuracy"},
		            .nmetrics  = 1}));
		rv = pasco_model_evaluator_run(em, "md_keys_eval",
		    &(pasco_evaluator_options){.checkpoint_dir = ckpt,
		        .final_step                            = 120,
		        .timeout_ms                            = 20000,
		        .json_out                              = out},
		    &count, &last);
		cr_assert_eq(rv, 0, "evaluator: %s", pasco_model_last_error());
		cr_assert_eq(last, 120);
		rewind(out);
		while (fgets(line, sizeof(line), out) != NULL) {
		}
		cJSON *j = cJSON_Parse(line);
		cr_assert_not_null(j, "%s", line);
		cr_assert_float_eq(
		    cJSON_GetObjectItem(j, "accuracy")->valuedouble,
		    log_of(&eval, "accuracy"), 1e-9, "%s", line);
		cJSON_Delete(j);
		fclose(out);
		pasco_model_free(em);
	}
	pasco_model_free(m);
	stop();
	snprintf(tb, sizeof(tb), "rm -rf %s", root);
	cr_assert_eq(system(tb), 0);
}

/* step_dataset's record of the steps it named. */
typedef struct named_steps {
	int     calls;
	int32_t epoch[16];
	int64_t step[16];
	int64_t missing; /* the step named a factory the workers lack */
	int64_t end0; /* epoch 0's data runs out here (0: never; < 0: none) */
} named_steps;

static int
name_step(void *user, int32_t epoch, int64_t step, char *name, size_t len)
{
	named_steps *n = user;
	if (n->calls < 16) {
		n->epoch[n->calls] = epoch;
		n->step[n->calls]  = step;
	}
	n->calls++;
	if (epoch == 0 && (n->end0 < 0 || (n->end0 > 0 && step >= n->end0))) {
		return PASCO_EOUTOFRANGE;
	}
	snprintf(
	    name, len, "%s", step == n->missing ? "nope_step" : "md_eval");
	return PASCO_OK;
}

Test(model_fit, step_dataset_names_each_steps_batch)
{
	pasco_history h;
	named_steps   n = {.missing = -1};
	start(NULL);
	pasco_model *m = mlp();
	/* each step trains on the first batch of the dataset named for it */
	PASCO_PASS(pasco_model_fit(K.c, m,
	    &(pasco_model_fit_options){.dataset = "md_train",
	        .epochs                         = 2,
	        .steps_per_epoch                = 3,
	        .step_dataset                   = name_step,
	        .step_user                      = &n},
	    &h));
	cr_assert_eq(n.calls, 6);
	for (int i = 0; i < 6; i++) {
		cr_assert(n.epoch[i] == i / 3 && n.step[i] == i % 3,
		    "call %d named epoch %d step %lld", i, (int) n.epoch[i],
		    (long long) n.step[i]);
	}
	cr_assert_eq(h.count, 2);
	pasco_history_fini(&h);
	/* a name the workers do not know comes back from the step */
	n = (named_steps){.missing = 1};
	cr_assert_neq(pasco_model_fit(K.c, m,
	                  &(pasco_model_fit_options){.dataset = "md_train",
	                      .steps_per_epoch                = 3,
	                      .step_dataset                   = name_step,
	                      .step_user                      = &n},
	                  &h),
	    0);
	cr_assert(
	    strstr(pasco_model_last_error(), "no dataset factory 'nope_step'"),
	    "%s", pasco_model_last_error());
	pasco_history_fini(&h);
	pasco_model_free(m);
	stop();
}

/* steps_per_execution 2: each closure's steps named in turn, its worker
 * reading step j's batch on its call j; the data running out (Keras's
 * "input ran out of data") cuts a closure and ends the epoch. */
Test(model_fit, step_dataset_names_the_steps_of_each_execution)
{
	pasco_history h;
	named_steps   n = {.missing = -1, .end0 = 3};
	double        loss;
	start(NULL);
	pasco_model *m = mlp();
	PASCO_PASS(pasco_model_fit(K.c, m,
	    &(pasco_model_fit_options){.dataset = "md_train",
	        .epochs                         = 2,
	        .steps_per_epoch                = 5,
	        .steps_per_execution            = 2,
	        .step_dataset                   = name_step,
	        .step_user                      = &n},
	    &h));
	/* epoch 0: closures [0, 1], [2, 3: out], [4: out, the end];
	 * epoch 1: [0, 1], [2, 3], [4, 5]: whole executions, as Keras runs
	 * range(0, steps_per_epoch, steps_per_execution) executions of
	 * steps_per_execution steps */
	static const int64_t want[] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5};
	cr_assert_eq(n.calls, 11, "%d steps named", n.calls);
	for (int i = 0; i < 11; i++) {
		cr_assert(n.epoch[i] == (i >= 5) && n.step[i] == want[i],
		    "call %d named epoch %d step %lld", i, (int) n.epoch[i],
		    (long long) n.step[i]);
	}
	cr_assert_eq(h.count, 2);
	cr_assert(
	    pasco_logs_get(&h.epochs[0], "loss", &loss) && isfinite(loss),
	    "the cut epoch's loss over its 3 steps");
	pasco_history_fini(&h);
	/* the second name of a closure is its second call's: a factory the
	 * workers lack there fails the step */
	n = (named_steps){.missing = 3};
	cr_assert_neq(pasco_model_fit(K.c, m,
	                  &(pasco_model_fit_options){.dataset = "md_train",
	                      .steps_per_epoch                = 4,
	                      .steps_per_execution            = 2,
	                      .step_dataset                   = name_step,
	                      .step_user                      = &n},
	                  &h),
	    0);
	cr_assert(strstr(pasco_model_last_error(), "'nope_step'") &&
	              strstr(pasco_model_last_error(), "call 2 of 2"),
	    "%s", pasco_model_last_error());
	pasco_history_fini(&h);
	/* no data at an epoch's first step: refused, naming the epoch */
	n = (named_steps){.missing = -1, .end0 = -1};
	cr_assert_eq(pasco_model_fit(K.c, m,
	                 &(pasco_model_fit_options){.dataset = "md_train",
	                     .steps_per_epoch                = 4,
	                     .step_dataset                   = name_step,
	                     .step_user                      = &n},
	                 &h),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "epoch 0 has no data"),
	    "%s", pasco_model_last_error());
	pasco_history_fini(&h);
	pasco_model_free(m);
	stop();
}

/* An epoch cut short by its data (3 of 5 steps) leaves the ps's global
 * step at the steps run (3 + 5 = 8), while the checkpoints keep the
 * epochs' step, epoch * steps_per_epoch at their ends (ckpt-5, ckpt-10):
 * resume starts after the last finished epoch (2), not at 8 / 5. */
Test(model_fit, resume_after_an_epoch_cut_short_starts_after_it)
{
	char             root[] = "/tmp/pasco-model-cut-XXXXXX", ck[300];
	char             cmd[700];
	seen             again = {0};
	pasco_history    h;
	pasco_callbacks *cbs;
	pasco_variable  *gs;
	pasco_tensor    *t;
	named_steps      n = {.missing = -1, .end0 = 3};

	cr_assert_not_null(mkdtemp(root));
	snprintf(ck, sizeof(ck), "%s/ck", root);
	start(root);
	pasco_model            *m = mlp();
	pasco_model_fit_options o = {.dataset = "md_train",
	    .epochs                           = 2,
	    .steps_per_epoch                  = 5,
	    .checkpoint_dir                   = ck,
	    .checkpoint_keep                  = -1,
	    .resume                           = true,
	    .step_dataset                     = name_step,
	    .step_user                        = &n};
	PASCO_PASS(pasco_model_fit(K.c, m, &o, &h));
	cr_assert_eq(h.count, 2);
	pasco_history_fini(&h);
	PASCO_PASS(pasco_strategy_global_step(K.s, &gs));
	PASCO_PASS(pasco_variable_read(gs, &t));
	cr_assert_eq((int64_t) pasco_tensor_get(t, 0), 8, "the steps run");
	pasco_tensor_release(t);
	pasco_variable_free(gs);
	snprintf(cmd, sizeof(cmd),
	    "test \"$(ls %s | tr '\\n' ' ')\" = "
	    "'ckpt-10 ckpt-5 '",
	    ck);
	cr_assert_eq(system(cmd), 0, "the checkpoints' steps");

	/* started again with 3 epochs: epoch 2 alone, from its step 0 */
	PASCO_PASS(pasco_callbacks_create(&cbs));
	PASCO_PASS(pasco_callbacks_add(cbs, (pasco_callback){.name = "seen",
	                                        .begin     = seen_begin,
	                                        .epoch_end = seen_epoch_end,
	                                        .user      = &again}));
	n           = (named_steps){.missing = -1};
	o.epochs    = 3;
	o.callbacks = cbs;
	PASCO_PASS(pasco_model_fit(K.c, m, &o, &h));
	cr_assert_eq(
	    h.initial_epoch, 2, "resumed at epoch %d", (int) h.initial_epoch);
	cr_assert(again.n == 1 && again.epochs[0] == 2);
	cr_assert(n.calls == 5 && n.epoch[0] == 2 && n.step[0] == 0,
	    "%d steps named, the first epoch %d step %lld", n.calls,
	    (int) n.epoch[0], (long long) n.step[0]);
	pasco_history_fini(&h);
	pasco_callbacks_free(cbs);
	pasco_model_free(m);
	stop();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

/* The largest move of m's variables since before[] over lr, every move
 * checked to be at most lr: Adam's first step moves a weight by lr times
 * |g| / (|g| + epsilon * sqrt(1 - beta_2) / ...), about lr; its 21st
 * step (m and v starting from 0 as well) by about 0.51 lr. */
static double
largest_move(pasco_model *m, pasco_tensor **before, double lr)
{
	double most = 0;
	for (size_t k = 0; k < 4; k++) {
		pasco_tensor *now;
		PASCO_PASS(
		    pasco_variable_read(pasco_model_variable(m, k), &now));
		for (int64_t i = 0; i < now->count; i++) {
			double d = fabs(pasco_tensor_get(now, i) -
			                pasco_tensor_get(before[k], i)) /
			           lr;
			cr_assert_leq(d, 1.0001,
			    "variable %zu element %lld "
			    "moved by %g lr",
			    k, (long long) i, d);
			most = fmax(most, d);
		}
		pasco_tensor_release(now);
	}
	return most;
}

static void
config_has(const pasco_model *m, const char *want)
{
	char *json;
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(strstr(json, want) != NULL, "no %s in %s", want, json);
	free(json);
}

static int64_t
global_step_now(void)
{
	pasco_variable *gs;
	pasco_tensor   *step;
	int64_t         v;
	PASCO_PASS(pasco_strategy_global_step(K.s, &gs));
	PASCO_PASS(pasco_variable_read(gs, &step));
	v = (int64_t) pasco_tensor_get(step, 0);
	pasco_tensor_release(step);
	pasco_variable_free(gs);
	return v;
}

/* Keras's optimizer.iterations belongs to the optimizer: a second model
 * compiled with a fresh Adam takes its first step as t = 1 (every weight
 * moved by about lr, as a fresh run's first step), not t = 21 where the
 * first model left the global step (about 0.51 lr, before). Its start
 * is kept on a ps, so the first model compiled again (a chief started
 * again) counts on from its own start. */
Test(model_fit, each_models_optimizer_counts_its_own_steps)
{
	pasco_tensor *before[4];
	double        most;
	start(NULL);
	pasco_model *a = mlp(), *b = mlp(), *a2;
	PASCO_PASS(pasco_model_fit(K.c, a,
	    &(pasco_model_fit_options){
	        .dataset = "md_train", .steps_per_epoch = 20},
	    NULL));
	cr_assert_eq(global_step_now(), 20);
	PASCO_PASS(pasco_model_create_variables(b, K.s));
	for (size_t k = 0; k < 4; k++) {
		PASCO_PASS(pasco_variable_read(
		    pasco_model_variable(b, k), &before[k]));
	}
	PASCO_PASS(pasco_model_fit(K.c, b,
	    &(pasco_model_fit_options){
	        .dataset = "md_train", .steps_per_epoch = 1},
	    NULL));
	most = largest_move(b, before, 0.02);
	cr_assert_geq(most, 0.99,
	    "the second model's first Adam step moved a weight by at most "
	    "%g lr: not t = 1",
	    most);
	/* the strategy's global step still counts every step */
	cr_assert_eq(global_step_now(), 21);
	config_has(a, "\"iterations_base\":0");
	config_has(b, "\"iterations_base\":20");
	/* the first model compiled afresh under its names: its start is
	 * found on the ps */
	pasco_layer_reset_names();
	a2 = mlp();
	PASCO_PASS(pasco_model_fit(K.c, a2,
	    &(pasco_model_fit_options){
	        .dataset = "md_train", .steps_per_epoch = 1},
	    NULL));
	config_has(a2, "\"iterations_base\":0");
	for (size_t k = 0; k < 4; k++) {
		pasco_tensor_release(before[k]);
	}
	pasco_model_free(a);
	pasco_model_free(b);
	pasco_model_free(a2);
	stop();
}

/* An optimizer's start is in fit's checkpoints: a new cluster (every
 * process started again) resuming a second model's fit from its
 * checkpoint counts from that model's start, 10, not from the global
 * step when its fit began (0 in the new cluster). */
Test(model_fit, an_optimizers_start_comes_back_with_fits_checkpoint)
{
	char root[] = "/tmp/pasco-model-base-XXXXXX", ck[300], cmd[400];
	pasco_model *first, *second;
	cr_assert_not_null(mkdtemp(root));
	snprintf(ck, sizeof(ck), "%s/ck", root);
	start(root);
	first  = mlp();
	second = mlp();
	PASCO_PASS(pasco_model_fit(K.c, first,
	    &(pasco_model_fit_options){
	        .dataset = "md_train", .steps_per_epoch = 10},
	    NULL));
	PASCO_PASS(pasco_model_fit(K.c, second,
	    &(pasco_model_fit_options){.dataset = "md_train",
	        .steps_per_epoch                = 10,
	        .checkpoint_dir                 = ck,
	        .checkpoint_keep                = 1},
	    NULL));
	config_has(second, "\"iterations_base\":10");
	pasco_model_free(first);
	pasco_model_free(second);
	stop();

	start(root); /* new processes: nothing on the ps */
	first  = mlp();
	second = mlp(); /* the same names, compiled afresh */
	PASCO_PASS(pasco_model_fit(K.c, second,
	    &(pasco_model_fit_options){.dataset = "md_train",
	        .epochs                         = 3,
	        .steps_per_epoch                = 10,
	        .checkpoint_dir                 = ck,
	        .checkpoint_keep                = 1,
	        .resume                         = true},
	    NULL));
	config_has(second, "\"iterations_base\":10");
	pasco_model_free(first);
	pasco_model_free(second);
	stop();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}
