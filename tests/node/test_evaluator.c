/*
 * The sidecar evaluator (evaluator.h) against a chief-like trainer in the
 * same process: the trainer trains linear regression (y = 0.8 x + 1) on
 * its own in-process cluster and saves checkpoints with
 * pasco_checkpoint_save; the evaluator, on a thread with a cluster of its
 * own, evaluates each exactly once, in step order, and ends after the
 * final step. Removed checkpoints, a directory that never appears, bad
 * options and failing evaluation functions.
 */
#include "helpers.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(evaluator, .timeout = 60);

#define EVAL_N 1000 /* evaluation examples: x = i / EVAL_N */

/* args: w, b, k, K. Returns [sum of squared errors, sum of absolute
 * errors, count] over the examples i with i % K == k. */
PASCO_FUNCTION(te_eval)
{
	pasco_variable     *wv, *bv;
	const pasco_tensor *k, *nk;
	pasco_tensor       *w = NULL, *b = NULL, *out = NULL;
	int64_t             shape[1] = {3};
	int                 rv;

	if ((rv = pasco_call_variable(call, 0, &wv)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &bv)) != 0 ||
	    (rv = pasco_call_tensor(call, 2, &k)) != 0 ||
	    (rv = pasco_call_tensor(call, 3, &nk)) != 0 ||
	    (rv = pasco_variable_read(wv, &w)) != 0 ||
	    (rv = pasco_variable_read(bv, &b)) != 0 ||
	    (rv = pasco_tensor_alloc(&out, PASCO_F64, 1, shape)) != 0) {
		pasco_tensor_release(w);
		pasco_tensor_release(b);
		return rv;
	}
	double *sums = out->data;
	for (int64_t i = (int64_t) pasco_tensor_get(k, 0); i < EVAL_N;
	     i += (int64_t) pasco_tensor_get(nk, 0)) {
		double x = (double) i / EVAL_N;
		double e = pasco_tensor_get(w, 0) * x +
		           pasco_tensor_get(b, 0) - (0.8 * x + 1.0);
		sums[0] += e * e;
		sums[1] += fabs(e);
		sums[2] += 1;
	}
	pasco_tensor_release(w);
	pasco_tensor_release(b);
	pasco_call_return(call, pasco_value_tensor(out));
	return PASCO_OK;
}

PASCO_FUNCTION(te_eval_fails)
{
	return pasco_call_fail(call, PASCO_EINVAL, "no evaluation data here");
}

/* Returns two numbers where three are expected. */
PASCO_FUNCTION(te_eval_short)
{
	pasco_tensor *t;
	int64_t       shape[1] = {2};
	int           rv       = pasco_tensor_alloc(&t, PASCO_F64, 1, shape);
	if (rv == 0) {
		pasco_call_return(call, pasco_value_tensor(t));
	}
	return rv;
}

/* The exact loss and mean absolute error of (w, b). */
static void
expected(double w, double b, double *mse, double *mae)
{
	*mse = *mae = 0;
	for (int i = 0; i < EVAL_N; i++) {
		double x = (double) i / EVAL_N,
		       e = w * x + b - (0.8 * x + 1.0);
		*mse += e * e / EVAL_N;
		*mae += fabs(e) / EVAL_N;
	}
}

/* The chief: its own cluster, w and b, full-batch gradient descent. */
typedef struct trainer {
	test_cluster    tc;
	pasco_strategy *s;
	pasco_variable *w, *b;
	char            root[64], dir[96];
	double          saved_w[8], saved_b[8];
	int             nsaved;
} trainer;

static void
trainer_start(trainer *t)
{
	memset(t, 0, sizeof(*t));
	strcpy(t->root, "/tmp/pasco-evaluator-XXXXXX");
	cr_assert(mkdtemp(t->root) != NULL);
	snprintf(t->dir, sizeof(t->dir), "%s/ckpts", t->root);
	setenv("PASCO_CHECKPOINT_DIR", t->root, 1); /* the ps writes there */
	test_cluster_start(&t->tc, 1, 1);
	PASCO_PASS(pasco_strategy_create(&t->s, t->tc.cluster, NULL));
	t->w = test_scalar_var(t->s, "w", PASCO_F32, 0.0);
	t->b = test_scalar_var(t->s, "b", PASCO_F32, 0.0);
}

/* steps of gradient descent on 64 examples, then a checkpoint at step. */
static void
trainer_train_and_save(trainer *t, int steps, int64_t step)
{
	for (int s = 0; s < steps; s++) {
		double w = test_read_scalar(t->w), b = test_read_scalar(t->b);
		double gw = 0, gb = 0;
		for (int i = 0; i < 64; i++) {
			double x = i / 64.0, e = w * x + b - (0.8 * x + 1.0);
			gw += 2 * e * x / 64;
			gb += 2 * e / 64;
		}
		pasco_tensor *dw = test_scalar(PASCO_F32, gw);
		pasco_tensor *db = test_scalar(PASCO_F32, gb);
		PASCO_PASS(pasco_variable_apply_sgd(t->w, 0.2, dw));
		PASCO_PASS(pasco_variable_apply_sgd(t->b, 0.2, db));
		pasco_tensor_release(dw);
		pasco_tensor_release(db);
	}
	t->saved_w[t->nsaved]   = test_read_scalar(t->w);
	t->saved_b[t->nsaved++] = test_read_scalar(t->b);
	PASCO_PASS(pasco_checkpoint_save(t->s, t->dir, step, 0));
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void) st;
	(void) flag;
	(void) f;
	return remove(path);
}

static void
trainer_stop(trainer *t)
{
	pasco_variable_free(t->w);
	pasco_variable_free(t->b);
	pasco_strategy_destroy(t->s);
	test_cluster_stop(&t->tc);
	nftw(t->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The evaluator of t's checkpoints, with w and b of its own. */
typedef struct sidecar {
	pasco_evaluator *e;
	pasco_variable  *w, *b;
	pasco_arg        args[2];
	char            *json;
	size_t           json_len;
	FILE            *out;
	int              rv;
	int64_t          removed_after; /* remove ckpt-<next> after this */
	const char      *dir;
} sidecar;

static const char *const metric_names[] = {"mae"};

static void
sidecar_create(sidecar *sc, pasco_evaluator_options *o)
{
	cr_assert(
	    (sc->out = open_memstream(&sc->json, &sc->json_len)) != NULL);
	o->json_out         = sc->out;
	o->eval_fn          = o->eval_fn != NULL ? o->eval_fn : "te_eval";
	o->num_shards       = 4;
	o->metric_names     = metric_names;
	o->num_metrics      = 1;
	o->poll_interval_ms = 20;
	PASCO_PASS(pasco_evaluator_create(&sc->e, o));
	sc->w = test_scalar_var(
	    pasco_evaluator_strategy(sc->e), "w", PASCO_F32, 0.0);
	sc->b = test_scalar_var(
	    pasco_evaluator_strategy(sc->e), "b", PASCO_F32, 0.0);
	sc->args[0] = pasco_arg_variable(sc->w);
	sc->args[1] = pasco_arg_variable(sc->b);
}

static void *
sidecar_main(void *arg)
{
	sidecar *sc = arg;
	sc->rv      = pasco_evaluator_run(sc->e, sc->args, 2);
	return NULL;
}

/* The JSON lines written, and the evaluator freed. */
static char *
sidecar_finish(sidecar *sc)
{
	pasco_variable_free(sc->w);
	pasco_variable_free(sc->b);
	pasco_evaluator_destroy(sc->e);
	fclose(sc->out);
	return sc->json;
}

/* Line i of text (from 0) parsed as JSON; NULL past the end. */
static cJSON *
json_line(const char *text, int i)
{
	for (; i > 0 && text != NULL; i--) {
		text = strchr(text, '\n');
		text = text != NULL ? text + 1 : NULL;
	}
	return text != NULL && *text != 0 ? cJSON_ParseWithOpts(text, NULL, 0)
	                                  : NULL;
}

static double
field(const cJSON *j, const char *name)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(j, name);
	cr_assert(cJSON_IsNumber(f), "no number '%s' in the JSON line", name);
	return f->valuedouble;
}

static size_t
count_lines(const char *text)
{
	size_t n = 0;
	for (; text != NULL && *text != 0; text++) {
		n += *text == '\n';
	}
	return n;
}

/* The eval event file under logdir/eval, read by tests/tools/
 * read_events.py (TensorFlow's formats decoded by hand, in Python). */
static cJSON *
read_eval_events(const char *logdir)
{
	const char    *reader = getenv("PASCO_READ_EVENTS");
	char           dir[160], cmd[1024] = "", out[1 << 15];
	DIR           *d;
	struct dirent *ent;
	FILE          *p;
	size_t         n;

	cr_assert(reader != NULL, "PASCO_READ_EVENTS is not set");
	snprintf(dir, sizeof(dir), "%s/eval", logdir);
	cr_assert((d = opendir(dir)) != NULL, "no %s", dir);
	while ((ent = readdir(d)) != NULL) {
		if (strncmp(ent->d_name, "events.out.tfevents.", 20) == 0) {
			cr_assert(cmd[0] == 0, "two event files in %s", dir);
			snprintf(cmd, sizeof(cmd), "python3 '%s' '%s/%s'",
			    reader, dir, ent->d_name);
		}
	}
	closedir(d);
	cr_assert(cmd[0] != 0, "no event file in %s", dir);
	cr_assert((p = popen(cmd, "r")) != NULL);
	n      = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	cr_assert_eq(pclose(p), 0, "%s failed: %s", cmd, out);
	return cJSON_Parse(out);
}

/* Waits up to 20 s for the evaluator's thread. */
static void
join_bounded(pthread_t th)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 20;
	cr_assert_eq(pthread_timedjoin_np(th, NULL, &ts), 0,
	    "the evaluator did not end after the final checkpoint");
}

Test(evaluator, evaluates_each_checkpoint_once_while_the_chief_trains)
{
	trainer   t;
	sidecar   sc = {0};
	pthread_t th;
	char      logdir[128];

	trainer_start(&t);
	snprintf(logdir, sizeof(logdir), "%s/logs", t.root);
	pasco_evaluator_options o = {.checkpoint_dir = t.dir,
	    .logdir                                  = logdir,
	    .final_step                              = 30,
	    .timeout_ms                              = 15000};
	sidecar_create(&sc, &o);
	/* the directory does not exist yet: the evaluator waits for it */
	cr_assert_eq(pthread_create(&th, NULL, sidecar_main, &sc), 0);
	trainer_train_and_save(&t, 3, 10);
	trainer_train_and_save(&t, 3, 20);
	trainer_train_and_save(&t, 3, 30);
	join_bounded(th);
	PASCO_PASS(sc.rv);
	cr_assert_eq(pasco_evaluator_count(sc.e), 3);
	cr_assert_eq(pasco_evaluator_last_step(sc.e), 30);
	char *json = sidecar_finish(&sc);
	cr_assert_eq(count_lines(json), 3, "JSON lines:\n%s", json);
	double previous = INFINITY;
	for (int i = 0; i < 3; i++) {
		cJSON *j = json_line(json, i);
		double mse, mae;
		char   path[160];
		cr_assert(j != NULL, "line %d is not JSON:\n%s", i, json);
		expected(t.saved_w[i], t.saved_b[i], &mse, &mae);
		cr_assert_eq(field(j, "step"), 10.0 * (i + 1));
		cr_assert_float_eq(field(j, "loss"), mse, 1e-9 * mse + 1e-12);
		cr_assert_float_eq(field(j, "mae"), mae, 1e-9 * mae + 1e-12);
		cr_assert_eq(field(j, "examples"), EVAL_N);
		cr_assert_lt(field(j, "loss"), previous, "the loss went up");
		previous = field(j, "loss");
		snprintf(
		    path, sizeof(path), "%s/ckpt-%d", t.dir, 10 * (i + 1));
		cr_assert_str_eq(
		    cJSON_GetStringValue(cJSON_GetObjectItem(j, "checkpoint")),
		    path);
		cJSON_Delete(j);
	}
	/* the eval event file, read back by the independent reader */
	cJSON       *events = read_eval_events(logdir), *sc_ev;
	int          seen   = 0;
	const cJSON *all    = cJSON_GetObjectItem(events, "scalars");
	cJSON_ArrayForEach(sc_ev, all)
	{
		int   i = (int) field(sc_ev, "step") / 10 - 1;
		char *tag =
		    cJSON_GetStringValue(cJSON_GetObjectItem(sc_ev, "tag"));
		double mse, mae;
		cr_assert(i >= 0 && i < 3 && tag != NULL);
		expected(t.saved_w[i], t.saved_b[i], &mse, &mae);
		double want = strcmp(tag, "loss") == 0 ? mse : mae;
		cr_assert(strcmp(tag, "loss") == 0 || strcmp(tag, "mae") == 0,
		    "tag %s", tag);
		cr_assert_float_eq(field(sc_ev, "value"), want, 1e-6 * want,
		    "%s at step %d", tag, 10 * (i + 1));
		seen++;
	}
	cr_assert_eq(seen, 6, "scalars: %d", seen);
	cJSON_Delete(events);
	free(json);
	trainer_stop(&t);
}

/* Removes ckpt-<next> once the checkpoint before it is evaluated: the
 * evaluator listed it already, and finds it gone. */
static int
remove_next(void *arg, const pasco_evaluation *ev)
{
	sidecar *sc = arg;
	char     path[160];
	if (ev->step == sc->removed_after) {
		snprintf(path, sizeof(path), "%s/ckpt-%lld", sc->dir,
		    (long long) sc->removed_after + 10);
		nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	return 0;
}

Test(evaluator, skips_a_checkpoint_removed_before_it_got_to_it)
{
	trainer t;
	sidecar sc = {.removed_after = 10};

	trainer_start(&t);
	trainer_train_and_save(&t, 2, 10);
	trainer_train_and_save(&t, 2, 20);
	trainer_train_and_save(&t, 2, 30);
	sc.dir                    = t.dir;
	pasco_evaluator_options o = {.checkpoint_dir = t.dir,
	    .final_step                              = 30,
	    .timeout_ms                              = 10000,
	    .on_evaluated                            = remove_next,
	    .callback_arg                            = &sc};
	sidecar_create(&sc, &o);
	PASCO_PASS(pasco_evaluator_run(sc.e, sc.args, 2));
	cr_assert_eq(pasco_evaluator_count(sc.e), 2);
	char *json = sidecar_finish(&sc);
	cr_assert_eq(count_lines(json), 2, "JSON lines:\n%s", json);
	cJSON *a = json_line(json, 0), *b = json_line(json, 1);
	cr_assert_eq(field(a, "step"), 10);
	cr_assert_eq(field(b, "step"), 30);
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(json);
	trainer_stop(&t);
}

/* A new chief's run in the same cluster and directory: another strategy
 * (another run id in the manifests), the same variables and values. */
static void
trainer_new_run(trainer *t)
{
	pasco_variable_free(t->w);
	pasco_variable_free(t->b);
	pasco_strategy_destroy(t->s);
	PASCO_PASS(pasco_strategy_create(&t->s, t->tc.cluster, NULL));
	t->w = test_scalar_var(t->s, "w", PASCO_F32, 0.0);
	t->b = test_scalar_var(t->s, "b", PASCO_F32, 0.0);
}

/* The steps of the JSON lines, in order, into steps (at most max). */
static int
json_steps(const char *json, int64_t *steps, int max)
{
	int    n = 0;
	cJSON *j;
	while (n < max && (j = json_line(json, n)) != NULL) {
		steps[n++] = (int64_t) field(j, "step");
		cJSON_Delete(j);
	}
	return n;
}

Test(evaluator,
    follows_a_new_run_that_starts_its_steps_again_in_the_same_directory)
{
	trainer   t;
	sidecar   sc = {0};
	pthread_t th;
	int64_t   steps[8];

	trainer_start(&t);
	pasco_evaluator_options o = {
	    .checkpoint_dir = t.dir, .final_step = 25, .timeout_ms = 15000};
	sidecar_create(&sc, &o);
	cr_assert_eq(pthread_create(&th, NULL, sidecar_main, &sc), 0);
	trainer_train_and_save(&t, 2, 10);
	trainer_train_and_save(&t, 2, 20);
	for (int i = 0; i < 1500 && pasco_evaluator_count(sc.e) < 2; i++) {
		usleep(10000);
	}
	cr_assert_eq(pasco_evaluator_count(sc.e), 2,
	    "the first run's checkpoints were not evaluated in 15 s");
	/* the chief restarts without restoring: steps from 0 again */
	trainer_new_run(&t);
	trainer_train_and_save(&t, 2, 5);
	trainer_train_and_save(&t, 2, 25);
	join_bounded(th);
	PASCO_PASS(sc.rv);
	char *json = sidecar_finish(&sc);
	cr_assert_eq(json_steps(json, steps, 8), 4, "JSON lines:\n%s", json);
	cr_assert(steps[0] == 10 && steps[1] == 20 && steps[2] == 5 &&
	              steps[3] == 25,
	    "evaluated steps %lld %lld %lld %lld, not 10 20 5 25",
	    (long long) steps[0], (long long) steps[1], (long long) steps[2],
	    (long long) steps[3]);
	free(json);
	trainer_stop(&t);
}

Test(evaluator, starts_with_the_newest_run_of_a_reused_directory)
{
	trainer t;
	sidecar sc = {0};
	int64_t steps[8];

	trainer_start(&t);
	trainer_train_and_save(&t, 1, 10);
	trainer_train_and_save(&t, 1, 20);
	trainer_new_run(&t);
	trainer_train_and_save(&t, 1, 5);
	trainer_train_and_save(&t, 1, 30);
	pasco_evaluator_options o = {
	    .checkpoint_dir = t.dir, .final_step = 30, .timeout_ms = 10000};
	sidecar_create(&sc, &o);
	PASCO_PASS(pasco_evaluator_run(sc.e, sc.args, 2));
	char *json = sidecar_finish(&sc);
	/* the earlier run's steps 10 and 20 are not this run's */
	cr_assert_eq(json_steps(json, steps, 8), 2, "JSON lines:\n%s", json);
	cr_assert(steps[0] == 5 && steps[1] == 30, "evaluated %lld, %lld",
	    (long long) steps[0], (long long) steps[1]);
	free(json);
	trainer_stop(&t);
}

Test(evaluator, latest_only_takes_the_newest_checkpoint)
{
	trainer t;
	sidecar sc = {0};

	trainer_start(&t);
	trainer_train_and_save(&t, 1, 5);
	trainer_train_and_save(&t, 1, 6);
	pasco_evaluator_options o = {.checkpoint_dir = t.dir,
	    .final_step                              = 6,
	    .latest_only                             = true,
	    .timeout_ms                              = 10000};
	sidecar_create(&sc, &o);
	PASCO_PASS(pasco_evaluator_run(sc.e, sc.args, 2));
	char  *json = sidecar_finish(&sc);
	cJSON *a    = json_line(json, 0);
	cr_assert_eq(count_lines(json), 1, "JSON lines:\n%s", json);
	cr_assert_eq(field(a, "step"), 6);
	cJSON_Delete(a);
	free(json);
	trainer_stop(&t);
}

Test(evaluator, gives_up_on_a_directory_that_never_appears)
{
	sidecar sc = {0};
	char    dir[128];
	snprintf(dir, sizeof(dir), "/tmp/pasco-evaluator-none-%d/ckpts",
	    (int) getpid());
	pasco_evaluator_options o = {
	    .checkpoint_dir = dir, .final_step = 10, .timeout_ms = 300};
	sidecar_create(&sc, &o);
	int    saved = test_stderr_capture();
	double t0    = pasco_test_now();
	PASCO_FAIL(pasco_evaluator_run(sc.e, sc.args, 2), PASCO_ETIMEDOUT);
	double waited = pasco_test_now() - t0;
	char  *log    = test_stderr_take(saved);
	cr_assert(waited >= 0.29 && waited < 5, "waited %.3f s", waited);
	cr_assert(strstr(pasco_evaluator_error(sc.e), dir) != NULL &&
	              strstr(pasco_evaluator_error(sc.e),
	                  "the directory never appeared") != NULL,
	    "message: %s", pasco_evaluator_error(sc.e));
	cr_assert(strstr(log, "does not exist yet; waiting") != NULL,
	    "log: %s", log);
	cr_assert_eq(pasco_evaluator_count(sc.e), 0);
	free(log);
	free(sidecar_finish(&sc));
}

Test(evaluator, refuses_bad_options_naming_them)
{
	pasco_evaluator         *e;
	static const char *const taken[] = {"loss"};
	pasco_evaluator_options  o       = {.eval_fn = "te_eval"};
	PASCO_FAIL(pasco_evaluator_create(&e, &o), PASCO_EINVAL);
	cr_assert(e == NULL);
	cr_assert(strstr(pasco_evaluator_error(NULL), "checkpoint_dir"));
	o.checkpoint_dir = "/tmp";
	o.metric_names   = taken;
	o.num_metrics    = 1;
	PASCO_FAIL(pasco_evaluator_create(&e, &o), PASCO_EINVAL);
	cr_assert(strstr(pasco_evaluator_error(NULL), "'loss' is taken"));
	o.num_metrics = 0;
	o.eval_fn     = NULL;
	PASCO_FAIL(pasco_evaluator_create(&e, &o), PASCO_EINVAL);
	cr_assert(strstr(pasco_evaluator_error(NULL), "eval_fn"));
}

Test(
    evaluator, reports_an_evaluation_that_fails_and_a_result_of_the_wrong_size)
{
	static const char *fns[]  = {"te_eval_fails", "te_eval_short"};
	static const char *says[] = {
	    "no evaluation data here", "not one tensor of 3 numbers"};
	trainer t;

	trainer_start(&t);
	trainer_train_and_save(&t, 1, 1);
	for (int i = 0; i < 2; i++) {
		sidecar                 sc = {0};
		pasco_evaluator_options o  = {.checkpoint_dir = t.dir,
		     .eval_fn                                 = fns[i],
		     .final_step                              = 1,
		     .timeout_ms                              = 10000};
		sidecar_create(&sc, &o);
		cr_assert_neq(pasco_evaluator_run(sc.e, sc.args, 2), PASCO_OK);
		cr_assert(strstr(pasco_evaluator_error(sc.e), says[i]) != NULL,
		    "message: %s", pasco_evaluator_error(sc.e));
		cr_assert_eq(pasco_evaluator_count(sc.e), 0);
		char *json = sidecar_finish(&sc);
		cr_assert_eq(count_lines(json), 0);
		free(json);
	}
	trainer_stop(&t);
}
