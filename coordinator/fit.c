/*
 * The fit loop (include/pasco/fit.h): Keras's Model.fit under
 * ParameterServerStrategy, on the coordinator's public API. Each epoch
 * schedules its closures at once (the queue is the buffer), then fetches
 * their results in order as they finish, reporting progress after each.
 * Each closure returns the sums of its steps' loss and metrics and the
 * number of its steps (pasco_schedule_options.sum_results), so the
 * epoch's loss and metrics are means over every step, as Keras reports
 * them, however the steps are packed (a short last closure weighs what
 * its steps weigh). Counts a step returns after them (ncounts) are
 * totalled over the epoch's closures, each closure's result once.
 * Validation runs once per epoch through pasco_schedule_shards, so every
 * shard of the validation data counts exactly once. Callbacks see epoch
 * boundaries, plus the progress calls that built-in callbacks use.
 * Runs entirely on the calling thread.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "callbacks_impl.h"
#include "coordinator_impl.h"
#include "metrics_registry.h"
#include "pasco/fit.h"
#include "util.h"

/* loss, each metric, their val_ forms and steps_per_second fit in the
 * logs with room for callbacks' own entries */
#define MAX_METRICS 12
#define MAX_COUNTS 65536

/* The want numbers of a step's or validation's result: a scalar (want
 * 1), a 1-D tensor of want elements, or a list of want scalars. */
static int
result_values(const pasco_value *v, double *out, size_t want, const char *fn)
{
	const pasco_tensor *t = pasco_value_as_tensor(v);
	if (t != NULL && t->count == (int64_t) want) {
		for (size_t i = 0; i < want; i++) {
			out[i] = pasco_tensor_get(t, (int64_t) i);
		}
		return PASCO_OK;
	}
	if (pasco_value_kind_of(v) == PASCO_VALUE_LIST &&
	    pasco_value_size(v) == want) {
		for (size_t i = 0; i < want; i++) {
			const pasco_tensor *x =
			    pasco_value_as_tensor(pasco_value_item(v, i));
			if (x == NULL || x->count != 1) {
				return pasco_fit_fail(PASCO_EINVAL,
				    "%s returned a list whose item %zu is not "
				    "a scalar",
				    fn, i);
			}
			out[i] = pasco_tensor_get(x, 0);
		}
		return PASCO_OK;
	}
	return pasco_fit_fail(PASCO_EINVAL,
	    "%s returned %s; want %zu number%s (a scalar, a list of scalars "
	    "or a 1-D tensor)",
	    fn,
	    t != NULL ? "a tensor of another size"
	    : pasco_value_kind_of(v) == PASCO_VALUE_LIST
	        ? "a list of another size"
	        : "no numbers",
	    want, want == 1 ? "" : "s");
}

static int
check_options(const pasco_fit_options *o)
{
	if (o == NULL || o->step_function == NULL) {
		return pasco_fit_fail(
		    PASCO_EINVAL, "pasco_fit: no step function given");
	}
	if (o->steps_per_epoch <= 0) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "pasco_fit: steps_per_epoch is required with a "
		    "parameter-server strategy (per-worker datasets have no "
		    "end, so an epoch is a number of steps); got %lld",
		    (long long) o->steps_per_epoch);
	}
	if (o->epochs < 0 || o->initial_epoch < 0) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "pasco_fit: epochs (%d) and initial_epoch (%d) must be "
		    ">= 0",
		    (int) o->epochs, (int) o->initial_epoch);
	}
	if (o->nmetrics > MAX_METRICS ||
	    (o->nmetrics > 0 && o->metric_names == NULL)) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "pasco_fit: up to %d metrics, each with a name",
		    MAX_METRICS);
	}
	for (size_t i = 0; i < o->nmetrics; i++) {
		const char *m = o->metric_names[i];
		if (m == NULL || m[0] == 0 ||
		    strlen(m) + 4 >= PASCO_LOG_NAME_MAX ||
		    strcmp(m, "loss") == 0) {
			return pasco_fit_fail(PASCO_EINVAL,
			    "pasco_fit: metric %zu needs a name of 1 to %d "
			    "bytes other than \"loss\"",
			    i, PASCO_LOG_NAME_MAX - 5);
		}
	}
	if (o->ncounts > MAX_COUNTS) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "pasco_fit: up to %d counts, got %zu", MAX_COUNTS,
		    o->ncounts);
	}
	if (!(o->learning_rate >= 0) || !isfinite(o->learning_rate) ||
	    (o->learning_rate > 0) != (o->set_learning_rate != NULL)) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "pasco_fit: learning_rate (%g) must be finite, > 0 with "
		    "set_learning_rate and 0 without it",
		    o->learning_rate);
	}
	if (o->closure_tensor != NULL && o->closure_arg >= o->nargs) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "pasco_fit: closure_tensor needs closure_arg below nargs "
		    "(%zu of %zu)",
		    o->closure_arg, o->nargs);
	}
	if (o->validation_shards < 0) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "pasco_fit: validation_shards must be >= 0, got %d",
		    (int) o->validation_shards);
	}
	return PASCO_OK;
}

/* Why a step failed, with err from a coordinator call (rv NULL: the
 * message is pasco_coordinator_error) or from fetching rv. The message is
 * copied before joining: a join that returns PASCO_OK clears the
 * coordinator's message (the error was raised once, by the call that
 * failed). The join waits for the rest of the epoch; if it raises an
 * earlier error, that one is the first and is reported. */
static int
step_failed(
    pasco_coordinator *c, pasco_remote_value *rv, int err, const char *fn)
{
	char why[1024];
	int  jr;
	pasci_fmt(why, sizeof(why), "%s",
	    rv != NULL ? pasco_remote_value_error(rv)
	               : pasco_coordinator_error(c));
	if ((jr = pasco_join(c)) != PASCO_OK) {
		err = jr;
		if (pasco_coordinator_error(c)[0] != 0) {
			pasci_fmt(why, sizeof(why), "%s",
			    pasco_coordinator_error(c));
		}
	}
	return pasco_fit_fail(err, "step function %s: %s", fn,
	    why[0] != 0 ? why : pasco_strerror(err));
}

/* Closure k of epoch's arguments into args (o->nargs): o's, with the
 * closure's own tensor (*made, released by the caller) when o makes one,
 * which may lower its *steps; PASCO_EOUTOFRANGE: its data ran out. */
static int
closure_args(const pasco_fit_options *o, int32_t epoch, int64_t k,
    pasco_arg *args, uint32_t *steps, pasco_tensor **made)
{
	uint32_t want = *steps;
	int      rv;
	*made = NULL;
	if (o->closure_tensor == NULL) {
		return PASCO_OK;
	}
	memcpy(args, o->args, o->nargs * sizeof(*args));
	if ((rv = o->closure_tensor(o->hooks_user, epoch, k, steps, made)) !=
	    0) {
		return rv;
	}
	if (*steps < 1 || *steps > want) {
		pasco_tensor_release(*made);
		*made = NULL;
		return pasco_fit_fail(PASCO_EINVAL,
		    "pasco_fit: closure_tensor gave closure %lld of epoch %d "
		    "%u steps; 1 to %u",
		    (long long) k, (int) epoch, (unsigned) *steps,
		    (unsigned) want);
	}
	args[o->closure_arg] = pasco_arg_tensor(*made);
	return PASCO_OK;
}

/* Schedules the epoch's closures; *n gets how many were scheduled. */
static int
schedule_epoch(pasco_coordinator *c, const pasco_fit_options *o, uint32_t spe,
    int32_t epoch, pasco_remote_value **rvs, int64_t nclosures, int64_t *n)
{
	pasco_arg *args = o->closure_tensor != NULL
	                      ? pasci_calloc(o->nargs, sizeof(*args))
	                      : NULL;
	int        rv   = PASCO_OK;
	if (o->closure_tensor != NULL && args == NULL) {
		return pasco_fit_fail(PASCO_ENOMEM, "out of memory");
	}
	for (*n = 0; rv == PASCO_OK && *n < nclosures; (*n)++) {
		/* closure_tensor's closures are whole executions, as Keras
		 * runs them (it may cut one where the data runs out); other
		 * epochs stop at steps_per_epoch */
		int64_t                left = o->closure_tensor != NULL
		                                  ? spe
		                                  : o->steps_per_epoch - *n * spe;
		pasco_tensor          *made;
		pasco_schedule_options so = {
		    .repeat      = (uint32_t) (left < spe ? left : spe),
		    .sum_results = true};
		if ((rv = closure_args(
		         o, epoch, *n, args, &so.repeat, &made)) != 0) {
			if (rv == PASCO_EOUTOFRANGE && *n > 0) {
				rv = PASCO_OK; /* the data ran out: Keras's */
			} else if (rv == PASCO_EOUTOFRANGE) {
				rv = pasco_fit_fail(PASCO_EINVAL,
				    "pasco_fit: epoch %d has no data "
				    "(closure_tensor: out of range at its "
				    "first closure)",
				    (int) epoch);
			}
			break;
		}
		rv = pasco_schedule_with(c, o->step_function,
		    args != NULL ? args : o->args, o->nargs, &so, &rvs[*n]);
		pasco_tensor_release(made);
		if (rv != PASCO_OK) {
			rv = step_failed(c, NULL, rv, o->step_function);
			break;
		}
	}
	free(args);
	return rv;
}

/* A closure's sums (loss, then metrics, then ncounts counts: want
 * numbers) into vals and its number of steps into *steps. */
static int
closure_sums(const pasco_value *v, double *vals, size_t want, size_t ncounts,
    int64_t *steps, const char *fn)
{
	const pasco_tensor *t = pasco_value_as_tensor(v);
	if (t == NULL || t->rank != 1 || t->count < 2) {
		return pasco_fit_fail(PASCO_EINTERNAL,
		    "%s: a closure's result is not its sums and count", fn);
	}
	if ((size_t) t->count - 1 != want) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "%s returned %lld number%s; want %zu (the loss, then "
		    "each metric%s)",
		    fn, (long long) t->count - 1, t->count == 2 ? "" : "s",
		    want, ncounts > 0 ? ", then the counts" : "");
	}
	for (size_t k = 0; k < want; k++) {
		vals[k] = pasco_tensor_get(t, (int64_t) k);
	}
	*steps = (int64_t) pasco_tensor_get(t, t->count - 1);
	return PASCO_OK;
}

/* The epoch's running logs after *steps steps (ctx->batch_logs of a
 * progress call): the mean loss, then the metrics, means of the steps'
 * or, with the batch_logs hook, from the counts' totals so far. */
static int
running_logs(const pasco_fit_options *o, const double *sums, int64_t steps,
    pasco_logs *logs)
{
	int rv;
	memset(logs, 0, sizeof(*logs));
	rv = pasco_logs_set(logs, "loss", sums[0] / (double) steps);
	if (rv == PASCO_OK && o->batch_logs != NULL) {
		return o->batch_logs(
		    o->hooks_user, sums + 1 + o->nmetrics, logs);
	}
	for (size_t k = 0; rv == PASCO_OK && k < o->nmetrics; k++) {
		rv = pasco_logs_set(
		    logs, o->metric_names[k], sums[1 + k] / (double) steps);
	}
	return rv;
}

/* Fetches the closures' results in order, adding them into sums (loss,
 * metrics, counts: want numbers) and their steps into *steps, reporting
 * progress (the mean loss so far, the running logs) after each. vals:
 * room for want. */
static int
fetch_epoch(pasco_coordinator *c, const pasco_fit_options *o,
    pasco_remote_value **rvs, int64_t n, pasco_callbacks *cbs, double *sums,
    double *vals, size_t want, int64_t *steps)
{
	pasco_fit_context *ctx = pasci_callbacks_ctx(cbs);
	pasco_logs         running;
	*steps = 0;
	for (int64_t i = 0; i < n; i++) {
		const pasco_value *v;
		int64_t            k  = 0;
		int                rv = pasco_remote_value_fetch(rvs[i], &v);
		if (rv != PASCO_OK) {
			return step_failed(c, rvs[i], rv, o->step_function);
		}
		if ((rv = closure_sums(v, vals, want, o->ncounts, &k,
		         o->step_function)) != PASCO_OK) {
			return rv;
		}
		for (size_t m = 0; m < want; m++) {
			sums[m] += vals[m];
		}
		*steps += k;
		pasci_metric_add(PASCI_M_STEPS, (uint64_t) k);
		if ((rv = running_logs(o, sums, *steps, &running)) !=
		    PASCO_OK) {
			return rv;
		}
		ctx->batch_logs = &running;
		rv              = pasco_callbacks_progress(
		                 cbs, *steps, sums[0] / (double) *steps);
		ctx->batch_logs = NULL;
		if (rv != PASCO_OK) {
			return rv;
		}
	}
	return PASCO_OK;
}

/* One epoch of training steps; its loss, metrics and steps/s into logs,
 * the totals of its counts into counts (o->ncounts). */
static int
train_epoch(pasco_coordinator *c, const pasco_fit_options *o,
    pasco_callbacks *cbs, pasco_logs *logs, double *counts)
{
	uint32_t spe = o->steps_per_execution ? o->steps_per_execution : 1;
	int64_t  nclosures = (o->steps_per_epoch + spe - 1) / spe, n = 0;
	int64_t  steps = 0;
	size_t   want  = 1 + o->nmetrics + o->ncounts;
	int64_t  start = pasci_now_ns();
	pasco_remote_value **rvs =
	    pasci_calloc((size_t) nclosures, sizeof(*rvs));
	double *sums = pasci_calloc(2 * want, sizeof(*sums));
	int     rv;

	if (rvs == NULL || sums == NULL) {
		free(rvs);
		free(sums);
		return pasco_fit_fail(PASCO_ENOMEM,
		    "no memory for %lld remote values", (long long) nclosures);
	}
	rv = schedule_epoch(
	    c, o, spe, pasci_callbacks_ctx(cbs)->epoch, rvs, nclosures, &n);
	if (rv == PASCO_OK) {
		rv = fetch_epoch(
		    c, o, rvs, n, cbs, sums, sums + want, want, &steps);
	}
	if (rv == PASCO_OK && (rv = pasco_join(c)) != PASCO_OK) {
		rv = step_failed(c, NULL, rv, o->step_function);
	} else if (rv != PASCO_OK) {
		(void) pasco_join(c); /* the rest of the epoch, or its error */
	}
	for (int64_t i = 0; i < n; i++) {
		pasco_remote_value_free(rvs[i]);
	}
	free(rvs);
	if (rv == PASCO_OK && o->ncounts > 0) {
		memcpy(counts, sums + 1 + o->nmetrics,
		    o->ncounts * sizeof(*counts));
	}
	if (rv != PASCO_OK) {
		free(sums);
		return rv;
	}
	double secs = (double) (pasci_now_ns() - start) * 1e-9;
	rv          = pasco_logs_set(logs, "loss", sums[0] / (double) steps);
	for (size_t k = 0; rv == PASCO_OK && k < o->nmetrics; k++) {
		rv = pasco_logs_set(
		    logs, o->metric_names[k], sums[1 + k] / (double) steps);
	}
	if (rv == PASCO_OK) {
		rv = pasco_logs_set(logs, "steps_per_second",
		    (double) steps / (secs > 0 ? secs : 1e-9));
	}
	free(sums);
	return rv;
}

/* Exactly-once validation: val_loss and val_<metric> into logs. */
static int
validate(pasco_coordinator *c, const pasco_fit_options *o, pasco_logs *logs)
{
	int32_t       shards                = o->validation_shards > 0
	                                          ? o->validation_shards
	                                          : (int32_t) pasco_strategy_num_workers(c->s);
	size_t        want                  = 2 + o->nmetrics;
	double        sums[2 + MAX_METRICS] = {0};
	pasco_value **res = pasci_calloc((size_t) shards, sizeof(*res));
	int           rv;
	char          name[PASCO_LOG_NAME_MAX];

	if (res == NULL) {
		return pasco_fit_fail(PASCO_ENOMEM, "no memory for results");
	}
	rv = pasco_schedule_shards(c, o->validation_function,
	    o->validation_args, o->nvalidation_args, shards, res);
	if (rv != PASCO_OK) {
		pasco_fit_fail(rv, "validation function %s: %s",
		    o->validation_function,
		    pasco_coordinator_error(c)[0] ? pasco_coordinator_error(c)
		                                  : pasco_strerror(rv));
	}
	for (int32_t k = 0; rv == PASCO_OK && k < shards; k++) {
		double vals[2 + MAX_METRICS];
		rv = result_values(res[k], vals, want, o->validation_function);
		for (size_t i = 0; rv == PASCO_OK && i < want; i++) {
			sums[i] += vals[i];
		}
	}
	for (int32_t k = 0; k < shards; k++) {
		pasco_value_free(res[k]);
	}
	free(res);
	double count = sums[want - 1];
	if (rv == PASCO_OK && !(count > 0)) {
		rv = pasco_fit_fail(PASCO_EINVAL,
		    "validation function %s counted %g examples over %d "
		    "shards (the last number of its result is the count)",
		    o->validation_function, count, (int) shards);
	}
	if (rv == PASCO_OK) {
		rv = pasco_logs_set(logs, "val_loss", sums[0] / count);
	}
	for (size_t k = 0; rv == PASCO_OK && k < o->nmetrics; k++) {
		pasci_fmt(name, sizeof(name), "val_%s", o->metric_names[k]);
		rv = pasco_logs_set(logs, name, sums[1 + k] / count);
	}
	return rv;
}

static int
history_add(pasco_history *h, const pasco_logs *logs)
{
	pasco_logs *p;
	if (h == NULL) {
		return PASCO_OK;
	}
	if ((p = realloc(h->epochs, (size_t) (h->count + 1) * sizeof(*p))) ==
	    NULL) {
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for the history");
	}
	h->epochs             = p;
	h->epochs[h->count++] = *logs;
	return PASCO_OK;
}

/* The learning rate a callback set (ctx->learning_rate) sent with the
 * steps scheduled next, when it is not the one they use (*lr). */
static int
apply_learning_rate(
    const pasco_fit_options *o, const pasco_fit_context *ctx, double *lr)
{
	int rv;
	if (o->set_learning_rate == NULL || ctx->learning_rate == *lr) {
		return PASCO_OK;
	}
	if ((rv = o->set_learning_rate(o->hooks_user, ctx->learning_rate)) !=
	    PASCO_OK) {
		return rv;
	}
	*lr = ctx->learning_rate;
	return PASCO_OK;
}

static int
fit_epochs(pasco_coordinator *c, const pasco_fit_options *o,
    pasco_callbacks *cbs, pasco_history *h, pasco_logs *logs)
{
	int32_t            epochs = o->epochs > 0 ? o->epochs : 1;
	int32_t            first  = o->initial_epoch;
	double            *counts = NULL;
	double             lr     = o->learning_rate; /* the steps' */
	pasco_fit_context *ctx    = pasci_callbacks_ctx(cbs);
	int                rv;
	if (o->ncounts > 0 &&
	    (counts = pasci_calloc(o->ncounts, sizeof(*counts))) == NULL) {
		return pasco_fit_fail(PASCO_ENOMEM, "no memory for counts");
	}
	ctx->learning_rate = lr;
	rv = pasco_callbacks_begin(cbs, epochs, o->steps_per_epoch, &first);
	if (h != NULL) {
		h->initial_epoch = first;
	}
	for (int32_t e = first; rv == PASCO_OK && e < epochs; e++) {
		memset(logs, 0, sizeof(*logs));
		if ((rv = pasco_callbacks_epoch_begin(cbs, e)) != PASCO_OK ||
		    (o->epoch_start != NULL &&
		        (rv = o->epoch_start(o->hooks_user, e)) != PASCO_OK) ||
		    (rv = apply_learning_rate(o, ctx, &lr)) != PASCO_OK ||
		    (rv = train_epoch(c, o, cbs, logs, counts)) != PASCO_OK ||
		    (o->epoch_logs != NULL &&
		        (rv = o->epoch_logs(o->hooks_user, e, counts, logs)) !=
		            PASCO_OK) ||
		    (o->validation_function != NULL &&
		        (rv = validate(c, o, logs)) != PASCO_OK) ||
		    (ctx->log_learning_rate &&
		        (rv = pasco_logs_set(logs, "learning_rate", lr)) !=
		            PASCO_OK) ||
		    (rv = history_add(h, logs)) != PASCO_OK ||
		    (rv = pasco_callbacks_epoch_end(cbs, e, logs)) !=
		        PASCO_OK) {
			break;
		}
		if (pasco_callbacks_stop_requested(cbs)) {
			if (h != NULL) {
				h->stopped_early = true;
			}
			break;
		}
	}
	free(counts);
	if (rv == PASCO_OK) { /* the rate the callbacks left, kept */
		rv = apply_learning_rate(o, ctx, &lr);
	}
	return rv == PASCO_OK ? pasco_callbacks_end(cbs, logs) : rv;
}

int
pasco_fit(pasco_coordinator *c, const pasco_fit_options *opts,
    pasco_history *history)
{
	pasco_callbacks *own  = NULL, *cbs;
	pasco_logs       logs = {0};
	int              rv;

	if (history != NULL) {
		memset(history, 0, sizeof(*history));
	}
	if (c == NULL) {
		return pasco_fit_fail(
		    PASCO_EINVAL, "pasco_fit: no coordinator");
	}
	if ((rv = check_options(opts)) != PASCO_OK) {
		return rv;
	}
	if ((cbs = opts->callbacks) == NULL &&
	    (rv = pasco_callbacks_create(&own)) != PASCO_OK) {
		return rv;
	}
	rv = fit_epochs(c, opts, cbs != NULL ? cbs : own, history, &logs);
	pasco_callbacks_free(own);
	return rv;
}

void
pasco_history_fini(pasco_history *h)
{
	if (h != NULL) {
		free(h->epochs);
		memset(h, 0, sizeof(*h));
	}
}
