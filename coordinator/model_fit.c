/*
 * fit, evaluate and predict of a compiled model on the chief (model.h):
 * the library's step functions (worker/model_steps.c) scheduled through
 * pasco_fit and pasco_schedule_shards. Training metrics are counts that
 * each training step returns with its loss, totalled per epoch by
 * pasco_fit from the closures' results (each closure's once: a step run
 * again after a lost worker or ps counts its batch once); evaluation
 * returns each shard's counts, summed here. No metric state lives on a
 * ps, so a ps restored from a checkpoint cannot bring back counts of an
 * earlier point. Runs on the calling thread.
 */
#include "callbacks_impl.h"
#include "coordinator_impl.h"
#include "model_impl.h"
#include "pasco/checkpoint.h"
#include "pasco/fit.h"
#include "pasco/metrics.h"
#include "recovery.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ARGS(m) (pasco_model_num_args(m) + 4)
#define PASCI_STEP_NAME_MAX 4096 /* a step's dataset name, NUL included */

static int
string_tensor(const char *s, pasco_tensor **out)
{
	size_t n = strlen(s);
	return pasco_tensor_from(
	    out, PASCO_U8, 1, (int64_t[]){(int64_t) n}, s, n);
}

/* logs["<prefix>loss"] and logs["<prefix><metric>"] from summed
 * evaluation results ([loss sum, examples, counts...]) or, with sums NULL,
 * the metrics from counts alone. */
static int
set_logs(const pasco_model *m, const char *prefix, const double *sums,
    const double *counts, pasco_logs *logs)
{
	char name[PASCO_LOG_NAME_MAX];
	int  rv = PASCO_OK;
	if (sums != NULL) {
		pasci_fmt(name, sizeof(name), "%sloss", prefix);
		rv = pasco_logs_set(logs, name, sums[0] / sums[1]);
	}
	for (size_t k = 0; rv == 0 && k < m->compile.nmetrics; k++) {
		pasci_fmt(name, sizeof(name), "%s%s", prefix,
		    m->compile.metric_names[k]);
		rv = pasco_logs_set(
		    logs, name, pasci_metric_result(m, k, counts));
	}
	return rv != 0 ? pasci_model_fail(rv, "logs: no room for %s", name)
	               : PASCO_OK;
}

static int
check_model(pasco_coordinator *c, pasco_model *m, const char *dataset,
    const char *what)
{
	if (c == NULL || m == NULL || dataset == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: needs a coordinator, a model and a dataset factory "
		    "name",
		    what);
	}
	if (!m->compile.compiled) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: the model is not compiled (pasco_model_compile)",
		    what);
	}
	if (m->nvars > 0 && m->vars[0].handle == NULL) {
		return pasco_model_create_variables(m, c->s);
	}
	return PASCO_OK;
}

/* Schedules fn once per shard with the model's args then extra; results
 * into res[shards] (the caller frees them). */
static int
run_shards(pasco_coordinator *c, pasco_model *m, const char *fn,
    pasco_tensor *const *extra, size_t nextra, int32_t shards,
    pasco_value **res)
{
	pasco_arg *a = pasci_calloc(MAX_ARGS(m), sizeof(*a));
	size_t     n = 0;
	int        rv;
	if (a == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	if ((rv = pasco_model_args(m, a, MAX_ARGS(m), &n)) == 0) {
		for (size_t i = 0; i < nextra; i++) {
			a[n++] = pasco_arg_tensor(extra[i]);
		}
		if ((rv = pasco_schedule_shards(c, fn, a, n, shards, res)) !=
		    0) {
			pasci_model_fail(rv, "%s: %s", fn,
			    pasco_coordinator_error(c)[0]
			        ? pasco_coordinator_error(c)
			        : pasco_strerror(rv));
		}
	}
	free(a);
	return rv;
}

static int32_t
shards_of(pasco_coordinator *c, int32_t shards)
{
	return shards > 0 ? shards
	                  : (int32_t) pasco_strategy_num_workers(c->s);
}

/* fit's validation data, checked at its start as Keras does (a missing
 * file was reported after the first epoch's training): each shard's
 * dataset built on a worker, and freed. */
static int
check_validation(pasco_coordinator *c, const pasco_model_fit_options *o)
{
	int32_t       shards = shards_of(c, o->validation_shards);
	pasco_value **res    = pasci_calloc((size_t) shards, sizeof(*res));
	pasco_tensor *name   = NULL;
	pasco_arg     arg;
	int           rv;
	if (res == NULL || string_tensor(o->validation_dataset, &name) != 0) {
		free(res);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	arg = pasco_arg_tensor(name);
	if ((rv = pasco_schedule_shards(
	         c, "pasco.dataset_check", &arg, 1, shards, res)) != 0) {
		pasci_model_fail(rv, "fit: validation_dataset: %s",
		    pasco_coordinator_error(c));
	}
	for (int32_t k = 0; k < shards; k++) {
		pasco_value_free(res[k]);
	}
	free(res);
	pasco_tensor_release(name);
	return rv;
}

/* Exactly-once evaluation: the shards' results summed into a new
 * vector (2 + state_len: loss sum, examples, counts). */
static int
evaluate_sums(pasco_coordinator *c, pasco_model *m, const char *dataset,
    int32_t shards, double **out)
{
	size_t        want = 2 + m->compile.state_len;
	pasco_value **res  = pasci_calloc((size_t) shards, sizeof(*res));
	double       *sums = pasci_calloc(want, sizeof(*sums));
	pasco_tensor *name = NULL;
	int           rv   = PASCO_ENOMEM;

	*out = NULL;
	if (res != NULL && sums != NULL &&
	    string_tensor(dataset, &name) == 0) {
		rv = run_shards(
		    c, m, "pasco.model_evaluate", &name, 1, shards, res);
	} else {
		pasci_model_fail(rv, "out of memory");
	}
	for (int32_t k = 0; rv == 0 && k < shards; k++) {
		const pasco_tensor *t = pasco_value_as_tensor(res[k]);
		if (t == NULL || t->count != (int64_t) want) {
			rv = pasci_model_fail(PASCO_EINTERNAL,
			    "evaluate: shard %d returned no counts", (int) k);
		}
		for (size_t i = 0; rv == 0 && i < want; i++) {
			sums[i] += pasco_tensor_get(t, (int64_t) i);
		}
	}
	if (rv == 0 && !(sums[1] > 0)) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "evaluate: dataset '%s' gave no examples over %d shards",
		    dataset, (int) shards);
	}
	for (int32_t k = 0; res != NULL && k < shards; k++) {
		pasco_value_free(res[k]);
	}
	free(res);
	pasco_tensor_release(name);
	if (rv != 0) {
		free(sums);
		return rv;
	}
	*out = sums;
	return PASCO_OK;
}

int
pasco_model_evaluate(pasco_coordinator *c, pasco_model *m,
    const pasco_model_evaluate_options *o, pasco_logs *logs)
{
	double *sums;
	int     rv;
	memset(logs, 0, sizeof(*logs));
	if ((rv = check_model(
	         c, m, o != NULL ? o->dataset : NULL, "evaluate")) != 0 ||
	    (rv = evaluate_sums(
	         c, m, o->dataset, shards_of(c, o->shards), &sums)) != 0) {
		return rv;
	}
	rv = set_logs(m, "", sums, sums + 2, logs);
	free(sums);
	return rv;
}

int
pasco_model_predict(pasco_coordinator *c, pasco_model *m,
    const pasco_model_predict_options *o, int64_t *rows)
{
	int32_t       shards;
	pasco_value **res   = NULL;
	pasco_tensor *ex[3] = {NULL, NULL, NULL};
	int64_t       total = 0, format;
	int           rv;

	if ((rv = check_model(
	         c, m, o != NULL ? o->dataset : NULL, "predict")) != 0) {
		return rv;
	}
	if (o->dir == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "predict: no output directory");
	}
	if (o->format != PASCO_PREDICT_CSV &&
	    o->format != PASCO_PREDICT_TFRECORD) {
		return pasci_model_fail(PASCO_EINVAL,
		    "predict: format %d is neither PASCO_PREDICT_CSV nor "
		    "PASCO_PREDICT_TFRECORD",
		    (int) o->format);
	}
	format = o->format;
	shards = shards_of(c, o->shards);
	if ((res = pasci_calloc((size_t) shards, sizeof(*res))) == NULL ||
	    string_tensor(o->dataset, &ex[0]) != 0 ||
	    string_tensor(o->dir, &ex[1]) != 0 ||
	    pasco_tensor_from(
	        &ex[2], PASCO_I64, 0, NULL, &format, sizeof(format)) != 0) {
		rv = pasci_model_fail(PASCO_ENOMEM, "out of memory");
	} else {
		rv = run_shards(
		    c, m, "pasco.model_predict", ex, 3, shards, res);
	}
	for (int32_t k = 0; res != NULL && k < shards; k++) {
		total += rv == 0 ? (int64_t) pasco_value_scalar(res[k]) : 0;
		pasco_value_free(res[k]);
	}
	free(res);
	for (size_t i = 0; i < 3; i++) {
		pasco_tensor_release(ex[i]);
	}
	if (rows != NULL) {
		*rows = rv == 0 ? total : 0;
	}
	return rv;
}

/* What fit's hooks need. */
typedef struct fit_run {
	pasco_coordinator             *c;
	pasco_model                   *m;
	const pasco_model_fit_options *o;
	pasco_arg *args; /* the steps', the model's first */
	size_t     cap;
	/* the optimizer's start on the global step (model_base.c) */
	pasco_variable *base;
} fit_run;

/* Each dynamic table's counts into logs ("<layer>/rows", "/created",
 * "/evicted", "/refused"): what TensorBoard and verbose show per epoch. */
static int
dynamic_logs(const pasco_model *m, pasco_logs *logs)
{
	for (size_t k = 0; k < m->nvars; k++) {
		pasco_variable     *v = m->vars[k].handle;
		pasco_dynamic_stats st;
		const char         *layer = m->layers[m->vars[k].layer].name;
		char                name[PASCO_LOG_NAME_MAX];
		int                 rv;
		if (v == NULL || !pasco_variable_is_dynamic(v)) {
			continue;
		}
		if ((rv = pasco_variable_dynamic_stats(v, &st)) != 0) {
			return pasci_model_fail(rv,
			    "%s: its table's counts: %s", layer,
			    pasco_variable_error(v));
		}
		const struct {
			const char *what;
			int64_t     n;
		} counts[] = {{"rows", st.rows}, {"created", st.created},
		    {"evicted", st.evicted_age + st.evicted_cap},
		    {"refused", st.refused}};
		for (size_t i = 0; i < 4; i++) {
			pasci_fmt(name, sizeof(name), "%s/%s", layer,
			    counts[i].what);
			pasco_logs_set(logs, name, (double) counts[i].n);
		}
	}
	return PASCO_OK;
}

/* The epoch's metrics from the totals of its steps' counts. */
static int
fit_epoch_logs(
    void *user, int32_t epoch, const double *counts, pasco_logs *logs)
{
	fit_run *r = user;
	double  *sums;
	int      rv = PASCO_OK;
	(void) epoch;
	if (counts != NULL) {
		rv = set_logs(r->m, "", NULL, counts, logs);
	}
	if (rv == 0) {
		rv = dynamic_logs(r->m, logs);
	}
	if (rv == 0 && r->o->validation_dataset != NULL &&
	    (rv = evaluate_sums(r->c, r->m, r->o->validation_dataset,
	         shards_of(r->c, r->o->validation_shards), &sums)) == 0) {
		rv = set_logs(r->m, "val_", sums, sums + 2, logs);
		free(sums);
	}
	return rv != 0 ? pasco_fit_fail(rv, "%s", pasco_model_last_error())
	               : PASCO_OK;
}

/* The running logs of a progress call: the metrics from the counts of
 * the epoch's closures finished so far. */
static int
fit_batch_logs(void *user, const double *counts, pasco_logs *logs)
{
	fit_run *r  = user;
	int      rv = set_logs(r->m, "", NULL, counts, logs);
	return rv != 0 ? pasco_fit_fail(rv, "%s", pasco_model_last_error())
	               : PASCO_OK;
}

/* A callback set the learning rate: the compiled optimizer's rate
 * changes, and with it the config the steps get (args[0]), so the steps
 * scheduled from now on apply their updates at lr (each worker parses the
 * new config once: its model cache keys configs by their bytes). */
static int
fit_set_learning_rate(void *user, double lr)
{
	fit_run *r = user;
	size_t   n = 0;
	int      rv;
	r->m->compile.opt.learning_rate = lr;
	pasco_tensor_release(r->m->config); /* closures hold their own */
	r->m->config = NULL;
	if ((rv = pasco_model_args(r->m, r->args, r->cap, &n)) != 0) {
		return pasco_fit_fail(rv,
		    "setting the learning rate to %g: %s", lr,
		    pasco_model_last_error());
	}
	pasci_log(PASCI_LOG_DEBUG, "fit: learning rate %g from now on", lr);
	return PASCO_OK;
}

/* The user's own list run from the shorthands' list (after them): each
 * call forwarded, a stop it asks for and the learning rate it sets passed
 * back. */
static void
user_in(const pasco_fit_context *ctx, pasco_callbacks *user)
{
	pasco_fit_context *in = pasci_callbacks_ctx(user);
	in->learning_rate     = ctx->learning_rate;
	in->batch_logs        = ctx->batch_logs;
}

static int
user_out(int rv, pasco_fit_context *ctx, pasco_callbacks *user)
{
	pasco_fit_context *in = pasci_callbacks_ctx(user);
	ctx->learning_rate    = in->learning_rate;
	ctx->log_learning_rate |= in->log_learning_rate;
	in->batch_logs = NULL;
	return rv;
}

static int
user_begin(void *user, pasco_fit_context *ctx)
{
	user_in(ctx, user);
	return user_out(pasco_callbacks_begin(user, ctx->epochs,
	                    ctx->steps_per_epoch, &ctx->initial_epoch),
	    ctx, user);
}

static int
user_epoch_begin(void *user, pasco_fit_context *ctx)
{
	user_in(ctx, user);
	return user_out(
	    pasco_callbacks_epoch_begin(user, ctx->epoch), ctx, user);
}

static int
user_progress(void *user, pasco_fit_context *ctx, double loss)
{
	user_in(ctx, user);
	return user_out(
	    pasco_callbacks_progress(user, ctx->steps_done, loss), ctx, user);
}

static int
user_epoch_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	user_in(ctx, user);
	int rv = user_out(
	    pasco_callbacks_epoch_end(user, ctx->epoch, logs), ctx, user);
	if (rv == 0 && pasco_callbacks_stop_requested(user)) {
		ctx->stop_training = true;
		pasci_fmt(ctx->stop_reason, sizeof(ctx->stop_reason), "%s",
		    pasco_callbacks_context(user)->stop_reason);
	}
	return rv;
}

static int
user_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	(void) ctx;
	return pasco_callbacks_end(user, logs);
}

/* Adds cb to cbs when rv is 0 (a cb made by a failed call is not). */
static int
add_callback(int rv, pasco_callbacks *cbs, pasco_callback cb)
{
	return rv != 0 ? rv : pasco_callbacks_add(cbs, cb);
}

/* The callbacks of o's shorthands (checkpoint_dir, logdir, verbose), then
 * o->callbacks, into *out; NULL when there are no shorthands (o->callbacks
 * is used as it is). */
static int
shorthand_callbacks(const fit_run *r, pasco_callbacks **out)
{
	const pasco_model_fit_options *o = r->o;
	pasco_callback                 cb;
	int                            rv;
	*out = NULL;
	if (o->checkpoint_dir == NULL && o->logdir == NULL && !o->verbose) {
		return PASCO_OK;
	}
	if ((rv = pasco_callbacks_create(out)) == 0 &&
	    o->checkpoint_dir != NULL) {
		rv = add_callback(
		    pasco_callback_checkpoint(&cb,
		        &(pasco_checkpoint_callback_options){
		            .strategy = r->c->s,
		            .dir      = o->checkpoint_dir,
		            .keep = o->checkpoint_keep > 0 ? o->checkpoint_keep
		                    : o->checkpoint_keep < 0 ? 0 /* all */
		                                             : 5}),
		    *out, cb);
	}
	if (rv == 0 && o->logdir != NULL) {
		/* the schedule's JSON, read by the callback as it is made */
		char *sched =
		    pasci_lr_schedule_json(&r->m->compile.opt.schedule);
		rv = add_callback(
		    pasco_callback_tensorboard(&cb,
		        &(pasco_tensorboard_options){.logdir = o->logdir,
		            .learning_rate = r->m->compile.opt.learning_rate,
		            .learning_rate_schedule = sched}),
		    *out, cb);
		free(sched);
	}
	if (rv == 0 && o->verbose) {
		rv = add_callback(
		    pasco_callback_progress(&cb,
		        &(pasco_progress_options){.style = o->progress_style}),
		    *out, cb);
	}
	if (rv == 0 && o->callbacks != NULL) {
		rv = pasco_callbacks_add(*out,
		    (pasco_callback){.name = "the callbacks of the options",
		        .begin             = user_begin,
		        .epoch_begin       = user_epoch_begin,
		        .progress          = user_progress,
		        .epoch_end         = user_epoch_end,
		        .end               = user_end,
		        .user              = o->callbacks});
	}
	if (rv != 0) {
		pasco_callbacks_free(*out);
		*out = NULL;
		return pasci_model_fail(rv, "fit: %s",
		    pasco_fit_error()[0] != 0 ? pasco_fit_error()
		                              : "out of memory");
	}
	return PASCO_OK;
}

/* o->resume: the newest intact checkpoint of o->checkpoint_dir restored,
 * *initial_epoch moved to its epoch when that is later. */
static int
resume(const fit_run *r, int32_t *initial_epoch)
{
	const pasco_model_fit_options *o = r->o;
	int64_t                        step;
	int                            rv;
	if (o->checkpoint_dir == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "fit: resume needs checkpoint_dir (where to resume from)");
	}
	rv =
	    pasco_checkpoint_restore_latest(r->c->s, o->checkpoint_dir, &step);
	if (rv == PASCO_ENOTFOUND) {
		return PASCO_OK;
	}
	if (rv != 0) {
		return pasci_model_fail(rv, "fit: resuming from %s: %s",
		    o->checkpoint_dir, pasco_strategy_error(r->c->s));
	}
	if (step / o->steps_per_epoch > *initial_epoch) {
		*initial_epoch = (int32_t) (step / o->steps_per_epoch);
	}
	if (o->verbose) {
		printf("Restored step %lld from %s\n", (long long) step,
		    o->checkpoint_dir);
		fflush(stdout);
	}
	return PASCO_OK;
}

/* verbose: where each variable split in shards lives, one line a shard
 * ("embedding/embeddings/part_1: rows [4, 8) on ps 1"). */
static void
print_layout(const pasco_model *m)
{
	for (size_t k = 0; k < pasco_model_num_variables(m); k++) {
		pasco_variable *v = pasco_model_variable(m, k);
		for (int32_t i = 0, task; pasco_variable_num_shards(v) > 1 &&
		                          i < pasco_variable_num_shards(v);
		     i++) {
			int64_t off, rows;
			pasco_variable_shard(v, i, &task, &off, &rows);
			printf("%s/part_%d: rows [%lld, %lld) on ps %d\n",
			    pasco_variable_name(v), (int) i, (long long) off,
			    (long long) (off + rows), (int) task);
		}
	}
	fflush(stdout);
}

/* The error a lost ps left pending on c's queue (what the next schedule
 * or join would raise: it did not come back, or could not be restored),
 * into buf; false when there is none. */
static bool
pending_ps_error(pasco_coordinator *c, int *err, char *buf, size_t len)
{
	bool has;
	pthread_mutex_lock(&c->q.mu);
	has = c->q.error != 0 && c->q.error_source >= 0;
	if (has) {
		*err = c->q.error;
		pasci_fmt(buf, len, "%s", c->q.error_msg);
	}
	pthread_mutex_unlock(&c->q.mu);
	return has;
}

/* Whether a task refused this chief in its own words (a newer
 * incarnation of this chief replaced it), into buf. */
static bool
refused_by_a_task(pasco_strategy *s, char *buf, size_t len)
{
	for (size_t i = 0; i < s->nps + s->nworkers; i++) {
		if (pasci_rpc_client_refused(
		        i < s->nps ? s->ps[i] : s->workers[i - s->nps], buf,
		        len)) {
			return true;
		}
	}
	return false;
}

/* fit's failure rv: a ps lost for good, or this chief replaced by a newer
 * one, is named first, as the cause; what failed then (a checkpoint's
 * save, the metrics' reset) follows. It used to end fit blaming the save,
 * or a ps that "did not answer", alone. */
static int
fit_failed(fit_run *r, int rv)
{
	char cause[1024], refusal[1024];
	int  err     = PASCO_EUNAVAILABLE;
	bool lost    = pending_ps_error(r->c, &err, cause, sizeof(cause));
	bool refused = false;
	/* a connection lost may be this chief's replacement: its tasks close
	 * an old chief's connections, and refuse it when it dials again; that
	 * refusal, which names the cause, is awaited a moment (1 s) */
	for (int i = 0; (lost || rv == PASCO_EUNAVAILABLE) && i < 10; i++) {
		if ((refused = refused_by_a_task(
		         r->c->s, refusal, sizeof(refusal)))) {
			break;
		}
		nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
	}
	refused =
	    refused || refused_by_a_task(r->c->s, refusal, sizeof(refusal));
	if (refused || lost) {
		return pasci_model_fail(refused ? PASCO_EUNAVAILABLE : err,
		    "%s (fit stopped at: %s)", refused ? refusal : cause,
		    pasco_fit_error());
	}
	return pasci_model_fail(rv, "%s", pasco_fit_error());
}

/* Exact epochs: closure k of epoch's batches, one per step, as
 * o->step_dataset names them: step k * steps_per_execution + j of the
 * epoch for j below *steps, the names joined by newlines (the worker's
 * pasco.model_train_batch reads line r on its call r of the closure).
 * The data running out (PASCO_EOUTOFRANGE) after j > 0 names cuts the
 * closure to j steps; at the closure's first step, ends the epoch. */
static int
fit_closure_tensor(
    void *user, int32_t epoch, int64_t k, uint32_t *steps, pasco_tensor **out)
{
	fit_run *r   = user;
	int64_t  spx = r->o->steps_per_execution > 1
	                   ? (int64_t) r->o->steps_per_execution
	                   : 1;
	size_t   cap = (size_t) *steps * PASCI_STEP_NAME_MAX, len = 0;
	char    *names = malloc(cap);
	int      rv    = PASCO_OK;
	if (names == NULL) {
		return pasco_fit_fail(PASCO_ENOMEM, "out of memory");
	}
	for (uint32_t j = 0; rv == PASCO_OK && j < *steps; j++) {
		int64_t step = k * spx + j;
		char   *name = names + len + (j > 0);
		name[0]      = 0;
		rv           = r->o->step_dataset(
		              r->o->step_user, epoch, step, name, PASCI_STEP_NAME_MAX);
		if (rv == PASCO_EOUTOFRANGE) { /* the data ran out: Keras's */
			*steps = j;
			rv     = j > 0 ? PASCO_OK : PASCO_EOUTOFRANGE;
			break;
		}
		if (rv != PASCO_OK) {
			rv = pasco_fit_fail(rv,
			    "fit: step_dataset failed for step %lld of epoch "
			    "%d",
			    (long long) step, (int) epoch);
		} else if (memchr(name, 0, PASCI_STEP_NAME_MAX) == NULL ||
		           name[0] == 0 || strchr(name, '\n') != NULL) {
			rv = pasco_fit_fail(PASCO_EINVAL,
			    "fit: step_dataset gave no name (at most %d "
			    "bytes, "
			    "one line) for step %lld of epoch %d",
			    PASCI_STEP_NAME_MAX - 1, (long long) step,
			    (int) epoch);
		} else {
			if (j > 0) {
				names[len] = '\n';
			}
			len += (j > 0) + strlen(name);
		}
	}
	if (rv == PASCO_OK) {
		names[len] = 0;
		if (string_tensor(names, out) != 0) {
			rv = pasco_fit_fail(PASCO_ENOMEM, "out of memory");
		}
	}
	free(names);
	return rv;
}

static int
fit_schedule(fit_run *r, pasco_arg *args, size_t n, pasco_history *h)
{
	const pasco_model_fit_options *o       = r->o;
	pasco_callbacks               *cbs     = NULL;
	int32_t                        initial = o->initial_epoch;
	uint32_t                       window;
	int                            rv = shorthand_callbacks(r, &cbs);
	if (rv == 0 && o->verbose) {
		print_layout(r->m);
	}
	if (rv == 0 && o->resume && o->steps_per_epoch > 0) {
		bool   changed = false;
		size_t k       = 0;
		rv             = resume(r, &initial);
		/* the restore may bring the optimizer's start back: then the
		 * model's config (its first argument) is made again */
		if (rv == 0 &&
		    (rv = pasci_fit_base_read(r->m, r->base, &changed)) == 0 &&
		    changed) {
			rv = pasco_model_args(r->m, r->args, r->cap, &k);
		}
	}
	if (rv != 0) {
		pasco_callbacks_free(cbs);
		return rv;
	}
	bool scheduled = r->m->compile.opt.schedule.kind != PASCO_LR_CONSTANT;
	pasco_fit_options fo = {.epochs = o->epochs,
	    .steps_per_epoch            = o->steps_per_epoch,
	    .initial_epoch              = initial,
	    .step_function              = o->step_dataset != NULL
	                                      ? "pasco.model_train_batch"
	                                      : "pasco.model_train",
	    .args                       = args,
	    .nargs                      = n,
	    .steps_per_execution        = o->steps_per_execution,
	    .callbacks                  = cbs != NULL ? cbs : o->callbacks,
	    .ncounts                    = r->m->compile.state_len,
	    .epoch_logs                 = fit_epoch_logs,
	    .hooks_user                 = r,
	    /* a schedule's rate is the ps's, from the global step: not
	     * settable, as Keras's is not */
	    .learning_rate = scheduled ? 0 : r->m->compile.opt.learning_rate,
	    .set_learning_rate = scheduled ? NULL : fit_set_learning_rate,
	    .batch_logs        = fit_batch_logs,
	    .closure_arg       = pasco_model_num_args(r->m),
	    .closure_tensor =
	        o->step_dataset != NULL ? fit_closure_tensor : NULL};
	/* fit's own window for its steps, the coordinator's set back after */
	window = pasci_queue_set_window(
	    &r->c->q, o->window > 0 ? o->window : PASCO_FIT_DEFAULT_WINDOW);
	rv = pasco_fit(r->c, &fo, h);
	pasci_queue_set_window(&r->c->q, window);
	pasco_callbacks_free(cbs);
	return rv != 0 ? fit_failed(r, rv) : PASCO_OK;
}

int
pasco_model_fit(pasco_coordinator *c, pasco_model *m,
    const pasco_model_fit_options *o, pasco_history *history)
{
	fit_run                    r  = {c, m, o, NULL, 0, NULL};
	pasco_variable            *gs = NULL;
	pasco_per_worker_dataset  *ds = NULL;
	pasco_per_worker_iterator *it = NULL;
	pasco_arg                 *args;
	size_t                     n = 0;
	int                        rv;

	if (history != NULL) {
		memset(history, 0, sizeof(*history));
	}
	if ((rv = check_model(c, m,
	         o != NULL && (o->dataset != NULL || o->step_dataset != NULL)
	             ? "fit"
	             : NULL,
	         "fit")) != 0 ||
	    (o->validation_dataset != NULL &&
	        (rv = check_validation(c, o)) != 0)) {
		return rv;
	}
	if (m->compile.global_step &&
	    (rv = pasco_strategy_global_step(c->s, &gs)) != 0) {
		return pasci_model_fail(rv, "fit: the global step: %s",
		    pasco_strategy_error(c->s));
	}
	if ((rv = pasci_fit_base_var(c->s, m, gs, &r.base)) != 0) {
		pasco_variable_free(gs);
		return rv;
	}
	if ((args = pasci_calloc(MAX_ARGS(m), sizeof(*args))) == NULL) {
		rv = pasci_model_fail(PASCO_ENOMEM, "out of memory");
	} else if (o->step_dataset == NULL &&
	           ((rv = pasco_per_worker_dataset_create(
	                 &ds, c, o->dataset)) != 0 ||
	               (rv = pasco_per_worker_iterator_create(&it, ds)) !=
	                   0)) {
		pasci_model_fail(rv, "fit: dataset '%s': %s", o->dataset,
		    pasco_coordinator_error(c));
	} else if ((rv = pasco_model_args(m, args, MAX_ARGS(m), &n)) == 0) {
		/* exact epochs: each step's batch name, set per closure */
		args[n++] = it != NULL ? pasco_arg_iterator(it)
		                       : pasco_arg_tensor(NULL);
		if (gs != NULL) {
			args[n++] = pasco_arg_variable(gs);
		}
		r.args = args;
		r.cap  = MAX_ARGS(m);
		rv     = fit_schedule(&r, args, n, history);
	}
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(ds);
	free(args);
	pasco_variable_free(gs);
	pasco_variable_free(r.base);
	return rv;
}
