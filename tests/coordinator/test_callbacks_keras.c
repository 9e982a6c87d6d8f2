/*
 * Keras's ReduceLROnPlateau, LearningRateScheduler, CSVLogger and
 * TerminateOnNaN (coordinator/callbacks_keras.c) in pasco_fit over an
 * in-process cluster (1 ps, 2 workers): a step returns the value of a
 * variable a callback sets each epoch, so each epoch's logs are scripted;
 * the loop's set_learning_rate hook records what the steps were given.
 * That the ps then applies the new rate is tested on a launched cluster
 * (tests/python/callbacks.py).
 */
#include "helpers.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

TestSuite(callbacks_keras, .timeout = 60);

/* args: score (a variable). Returns [score, score]: the loss and the
 * metric "score" are what the test scripts for the epoch. */
PASCO_FUNCTION(score_step)
{
	pasco_variable *v;
	pasco_tensor   *t, *u;
	int             rv;
	if ((rv = pasco_call_variable(call, 0, &v)) != 0 ||
	    (rv = pasco_variable_read(v, &t)) != 0) {
		return rv;
	}
	u = test_scalar(PASCO_F32, pasco_tensor_get(t, 0));
	pasco_call_return(call,
	    pasco_value_list(2, pasco_value_tensor(t), pasco_value_tensor(u)));
	return PASCO_OK;
}

static struct {
	char               dir[64];
	test_cluster       tc;
	pasco_strategy    *s;
	pasco_coordinator *c;
	pasco_variable    *score;
	pasco_arg          arg;
	const double      *script; /* the score of each epoch */
	/* what set_learning_rate was called with, and before which epoch */
	int    nset;
	double set_lr[16];
	int    set_epoch[16];
	int    epoch;
} F;

static void
fixture_start(void)
{
	strcpy(F.dir, "/tmp/pasco-cbk-XXXXXX");
	cr_assert_not_null(mkdtemp(F.dir));
	test_cluster_start(&F.tc, 1, 2);
	PASCO_PASS(pasco_strategy_create(&F.s, F.tc.cluster, NULL));
	F.score = test_scalar_var(F.s, "score", PASCO_F32, 0);
	F.arg   = pasco_arg_variable(F.score);
	PASCO_PASS(pasco_coordinator_create(&F.c, F.s, NULL));
	F.nset = 0;
}

static void
fixture_stop(void)
{
	char cmd[128];
	pasco_coordinator_destroy(F.c);
	pasco_variable_free(F.score);
	pasco_strategy_destroy(F.s);
	test_cluster_stop(&F.tc);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", F.dir);
	cr_assert_eq(system(cmd), 0);
}

static int
script_epoch_begin(void *user, pasco_fit_context *ctx)
{
	(void) user;
	F.epoch          = ctx->epoch;
	pasco_tensor *t  = test_scalar(PASCO_F32, F.script[ctx->epoch]);
	int           rv = pasco_variable_assign(F.score, t);
	pasco_tensor_release(t);
	return rv;
}

static int
record_set_lr(void *user, double lr)
{
	(void) user;
	cr_assert(F.nset < 16);
	F.set_epoch[F.nset] = F.epoch;
	F.set_lr[F.nset++]  = lr;
	return PASCO_OK;
}

static const char *names[] = {"score"};

/* epochs of 2 steps scripted by script, then cb, with a learning rate of
 * 1 and the recording hook. */
static pasco_fit_options
scripted(int32_t epochs, const double *script, pasco_callbacks **cbs,
    pasco_callback cb)
{
	F.script = script;
	PASCO_PASS(pasco_callbacks_create(cbs));
	PASCO_PASS(
	    pasco_callbacks_add(*cbs, (pasco_callback){.name = "script",
	                                  .epoch_begin = script_epoch_begin}));
	PASCO_PASS(pasco_callbacks_add(*cbs, cb));
	return (pasco_fit_options){.epochs = epochs,
	    .steps_per_epoch               = 2,
	    .step_function                 = "score_step",
	    .args                          = &F.arg,
	    .nargs                         = 1,
	    .metric_names                  = names,
	    .nmetrics                      = 1,
	    .callbacks                     = *cbs,
	    .learning_rate                 = 1,
	    .set_learning_rate             = record_set_lr};
}

static double
log_of(const pasco_logs *logs, const char *name)
{
	double v = NAN;
	cr_assert(pasco_logs_get(logs, name, &v), "no %s in the logs", name);
	return v;
}

/* Keras's rule worked by hand (factor 0.5, patience 2, cooldown 1,
 * min_delta 0.05, min_lr 0.3): 5 is the first best; 4.97 and 4.96 do not
 * beat it by 0.05, so after epoch 2 the rate halves; epoch 3 is the
 * cooldown (4.9 is a new best); 4.89, 4.88 wait 2: 0.25, raised to
 * min_lr 0.3, after epoch 5; then it is at min_lr (compared as float32:
 * 0.3 is not above float32(0.3)) and never falls again. */
Test(callbacks_keras, reduce_lr_on_plateau_reduces_at_the_right_epochs,
    .init = fixture_start, .fini = fixture_stop)
{
	static const double script[] = {
	    5, 4.97, 4.96, 4.9, 4.89, 4.88, 4.87, 4.86, 4.85};
	static const double want_lr[] = {
	    1, 1, 1, 0.5, 0.5, 0.5, 0.3, 0.3, 0.3};
	pasco_callbacks *cbs;
	pasco_callback   cb;
	pasco_history    h;
	PASCO_PASS(pasco_callback_reduce_lr_on_plateau(
	    &cb, &(pasco_reduce_lr_options){.monitor = "score",
	             .factor                         = 0.5,
	             .patience                       = 2,
	             .min_delta                      = 0.05,
	             .cooldown                       = 1,
	             .min_lr                         = 0.3}));
	pasco_fit_options o = scripted(9, script, &cbs, cb);
	PASCO_PASS(pasco_fit(F.c, &o, &h));
	cr_assert_eq(h.count, 9);
	for (int e = 0; e < 9; e++) {
		cr_assert_float_eq(log_of(&h.epochs[e], "learning_rate"),
		    want_lr[e], 1e-12, "epoch %d", e);
		cr_assert_float_eq(
		    log_of(&h.epochs[e], "score"), script[e], 1e-6);
	}
	cr_assert_eq(F.nset, 2);
	cr_assert_eq(F.set_epoch[0], 3);
	cr_assert_float_eq(F.set_lr[0], 0.5, 1e-12);
	cr_assert_eq(F.set_epoch[1], 6);
	cr_assert_float_eq(F.set_lr[1], 0.3, 1e-12);
	cr_assert_float_eq(
	    pasco_callbacks_context(cbs)->learning_rate, 0.3, 1e-12);
	pasco_history_fini(&h);
	pasco_callbacks_free(cbs);
}

/* mode max (auto for a name with "acc"): a rise is an improvement. */
Test(callbacks_keras, reduce_lr_on_plateau_maximizes_accuracies,
    .init = fixture_start, .fini = fixture_stop)
{
	static const double script[] = {0.5, 0.6, 0.6, 0.59, 0.7};
	pasco_callbacks    *cbs;
	pasco_callback      cb;
	pasco_history       h;
	const char         *acc[] = {"accuracy"};
	PASCO_PASS(pasco_callback_reduce_lr_on_plateau(&cb,
	    &(pasco_reduce_lr_options){.monitor = "accuracy", .patience = 2}));
	pasco_fit_options o = scripted(5, script, &cbs, cb);
	o.metric_names      = acc;
	PASCO_PASS(pasco_fit(F.c, &o, &h));
	/* 0.6 twice without a rise: factor 0.1 (0 means Keras's 0.1) */
	cr_assert_float_eq(log_of(&h.epochs[3], "learning_rate"), 1, 1e-12);
	cr_assert_float_eq(log_of(&h.epochs[4], "learning_rate"), 0.1, 1e-12);
	pasco_history_fini(&h);
	pasco_callbacks_free(cbs);
}

static double
keras_doc_schedule(void *user, int32_t epoch, double lr)
{
	(void) user;
	return epoch < 2 ? lr : lr * exp(-0.1);
}

Test(callbacks_keras, lr_scheduler_sets_each_epochs_rate,
    .init = fixture_start, .fini = fixture_stop)
{
	static const double script[] = {1, 1, 1, 1};
	pasco_callbacks    *cbs;
	pasco_callback      cb;
	pasco_history       h;
	PASCO_PASS(
	    pasco_callback_lr_scheduler(&cb, keras_doc_schedule, NULL, false));
	pasco_fit_options o = scripted(4, script, &cbs, cb);
	PASCO_PASS(pasco_fit(F.c, &o, &h));
	for (int e = 0; e < 4; e++) {
		double want = exp(-0.1 * (e < 2 ? 0 : e - 1));
		cr_assert_float_eq(log_of(&h.epochs[e], "learning_rate"), want,
		    1e-12, "epoch %d", e);
	}
	cr_assert_eq(F.nset, 2); /* epochs 0 and 1 kept the rate */
	cr_assert_eq(F.set_epoch[0], 2);
	cr_assert_float_eq(F.set_lr[1], exp(-0.2), 1e-12);
	pasco_history_fini(&h);
	pasco_callbacks_free(cbs);
}

static double
bad_schedule(void *user, int32_t epoch, double lr)
{
	(void) user;
	(void) lr;
	return epoch == 1 ? NAN : 0.5;
}

Test(callbacks_keras, a_learning_rate_is_refused_without_a_rate_or_when_bad,
    .init = fixture_start, .fini = fixture_stop)
{
	static const double script[] = {1, 1, 1};
	pasco_callbacks    *cbs;
	pasco_callback      cb;
	pasco_fit_context   ctx = {0};
	PASCO_FAIL(pasco_fit_set_learning_rate(&ctx, 0.1), PASCO_EINVAL);
	cr_assert(strstr(pasco_fit_error(), "no learning rate to set"), "%s",
	    pasco_fit_error());
	ctx.learning_rate = 1;
	PASCO_FAIL(pasco_fit_set_learning_rate(&ctx, -1), PASCO_EINVAL);
	cr_assert(strstr(pasco_fit_error(), "-1 is not a finite number > 0"),
	    "%s", pasco_fit_error());
	PASCO_FAIL(pasco_fit_set_learning_rate(&ctx, INFINITY), PASCO_EINVAL);

	/* a loop with no learning rate: refused at begin, naming it */
	PASCO_PASS(pasco_callback_reduce_lr_on_plateau(
	    &cb, &(pasco_reduce_lr_options){.patience = 1}));
	pasco_fit_options o = scripted(2, script, &cbs, cb);
	o.learning_rate     = 0;
	o.set_learning_rate = NULL;
	PASCO_FAIL(pasco_fit(F.c, &o, NULL), PASCO_EINVAL);
	cr_assert(strstr(pasco_fit_error(),
	              "ReduceLROnPlateau (begin): ReduceLROnPlateau: this fit "
	              "has no learning rate to reduce"),
	    "%s", pasco_fit_error());
	pasco_callbacks_free(cbs);

	/* a schedule's NaN fails fit naming the epoch */
	PASCO_PASS(
	    pasco_callback_lr_scheduler(&cb, bad_schedule, NULL, false));
	o = scripted(3, script, &cbs, cb);
	PASCO_FAIL(pasco_fit(F.c, &o, NULL), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_fit_error(), "the schedule gave nan for epoch 1"),
	    "%s", pasco_fit_error());
	pasco_callbacks_free(cbs);

	PASCO_FAIL(pasco_callback_reduce_lr_on_plateau(
	               &cb, &(pasco_reduce_lr_options){.factor = 1.5}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_fit_error(), "0 < factor < 1 (got 1.5)"), "%s",
	    pasco_fit_error());
	o.learning_rate     = 0.1; /* the hook is required with a rate */
	o.set_learning_rate = NULL;
	PASCO_FAIL(pasco_fit(F.c, &o, NULL), PASCO_EINVAL);
}

static char *
slurp(const char *path)
{
	static char buf[8192];
	FILE       *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n]   = 0;
	fclose(f);
	return buf;
}

/* the row of epoch e after its loss and score fields */
static void
assert_row(const char *line, int e, const char *num, char sep)
{
	char want[128];
	snprintf(
	    want, sizeof(want), "%d%c%s%c%s%c", e, sep, num, sep, num, sep);
	cr_assert(strncmp(line, want, strlen(want)) == 0, "want %s in %s",
	    want, line);
	snprintf(want, sizeof(want), "%cNA%cNA%cNA\r\n", sep, sep, sep);
	cr_assert(strstr(line, want) != NULL, "%s", line);
}

Test(callbacks_keras, csv_logger_writes_a_header_and_a_row_per_epoch,
    .init = fixture_start, .fini = fixture_stop)
{
	static const double script[] = {3, 0.5, 0.125, 1.5};
	pasco_callbacks    *cbs;
	pasco_callback      cb;
	char                path[128];
	snprintf(path, sizeof(path), "%s/log.csv", F.dir);
	PASCO_PASS(pasco_callback_csv_logger(&cb, path, NULL, false));
	pasco_fit_options o = scripted(2, script, &cbs, cb);
	PASCO_PASS(pasco_fit(F.c, &o, NULL));
	pasco_callbacks_free(cbs);
	char *text = slurp(path);
	/* Keras: the names sorted, then their val_ forms (no val_ log) */
	const char *header = "epoch,loss,score,steps_per_second,val_loss,"
	                     "val_score,val_steps_per_second\r\n";
	cr_assert(strncmp(text, header, strlen(header)) == 0, "%s", text);
	char *row = text + strlen(header);
	assert_row(row, 0, "3.0", ',');
	assert_row(strstr(row, "\r\n") + 2, 1, "0.5", ',');

	/* append: rows after the old ones, no second header; a fresh file
	 * with a separator of its own */
	PASCO_PASS(pasco_callback_csv_logger(&cb, path, NULL, true));
	o               = scripted(4, script, &cbs, cb);
	o.initial_epoch = 2;
	PASCO_PASS(pasco_fit(F.c, &o, NULL));
	pasco_callbacks_free(cbs);
	text = slurp(path);
	cr_assert(strstr(text + 1, "epoch,") == NULL, "%s", text);
	int lines = 0;
	for (char *p = text; (p = strstr(p, "\r\n")) != NULL; p += 2) {
		lines++;
	}
	cr_assert_eq(lines, 5, "%s", text);
	cr_assert(strstr(text, "\r\n2,0.125,0.125,") != NULL, "%s", text);
	cr_assert(strstr(text, "\r\n3,1.5,1.5,") != NULL, "%s", text);

	snprintf(path, sizeof(path), "%s/semi.csv", F.dir);
	PASCO_PASS(pasco_callback_csv_logger(&cb, path, ";", true));
	o = scripted(1, script, &cbs, cb);
	PASCO_PASS(pasco_fit(F.c, &o, NULL));
	pasco_callbacks_free(cbs);
	text = slurp(path);
	cr_assert(strncmp(text, "epoch;loss;score;", 17) == 0, "%s", text);
	assert_row(strstr(text, "\r\n") + 2, 0, "3.0", ';');

	/* a directory that is not there: the path and the reason */
	snprintf(path, sizeof(path), "%s/no/such/dir/log.csv", F.dir);
	PASCO_PASS(pasco_callback_csv_logger(&cb, path, NULL, false));
	o = scripted(1, script, &cbs, cb);
	PASCO_FAIL(pasco_fit(F.c, &o, NULL), PASCO_EIO);
	cr_assert(
	    strstr(pasco_fit_error(), "opening") &&
	        strstr(pasco_fit_error(), "no/such/dir/log.csv: No such"),
	    "%s", pasco_fit_error());
	pasco_callbacks_free(cbs);
	PASCO_FAIL(
	    pasco_callback_csv_logger(&cb, path, ";;", false), PASCO_EINVAL);
}

Test(callbacks_keras, terminate_on_nan_stops_after_the_epoch_of_a_nan_loss,
    .init = fixture_start, .fini = fixture_stop)
{
	static const double script[] = {1, 0.5, NAN, 0.25, 0.125};
	pasco_callbacks    *cbs;
	pasco_callback      cb;
	pasco_history       h;
	PASCO_PASS(pasco_callback_terminate_on_nan(&cb));
	pasco_fit_options o = scripted(5, script, &cbs, cb);
	PASCO_PASS(pasco_fit(F.c, &o, &h));
	cr_assert_eq(h.count, 3);
	cr_assert(h.stopped_early);
	cr_assert(isnan(log_of(&h.epochs[2], "loss")));
	const char *why = pasco_callbacks_context(cbs)->stop_reason;
	cr_assert(strstr(why, "TerminateOnNaN: the loss was nan at step 1 of "
	                      "epoch 3"),
	    "%s", why);
	pasco_history_fini(&h);
	pasco_callbacks_free(cbs);
}
