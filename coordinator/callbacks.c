/*
 * Callbacks of the fit loop (see include/pasco/fit.h): logs, the callback
 * list that pasco_fit and custom loops drive, and the built-in TensorBoard
 * and early stopping callbacks (checkpoints and backups: backup.c; the
 * progress display: progress.c). Everything here runs on the thread that
 * drives the list; nothing is shared, so nothing is locked. Messages are
 * kept per thread (pasco_fit_error).
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "callbacks_impl.h"
#include "model_impl.h"
#include "pasco/fit.h"
#include "pasco/summary.h"
#include "util.h"

static _Thread_local char fit_error[1024];

int
pasco_fit_fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(fit_error, sizeof(fit_error), fmt, ap);
	va_end(ap);
	pasci_error_note(fit_error);
	return err;
}

const char *
pasco_fit_error(void)
{
	return fit_error;
}

int
pasco_logs_set(pasco_logs *logs, const char *name, double value)
{
	size_t len = name != NULL ? strlen(name) : 0;
	if (len == 0 || len >= PASCO_LOG_NAME_MAX) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "a log name must have 1 to %d bytes: \"%s\"",
		    PASCO_LOG_NAME_MAX - 1, name != NULL ? name : "(null)");
	}
	for (size_t i = 0; i < logs->count; i++) {
		if (strcmp(logs->entries[i].name, name) == 0) {
			logs->entries[i].value = value;
			return PASCO_OK;
		}
	}
	if (logs->count == PASCO_LOGS_MAX) {
		return pasco_fit_fail(PASCO_EOUTOFRANGE,
		    "logs are full (%d names): no room for %s", PASCO_LOGS_MAX,
		    name);
	}
	memcpy(logs->entries[logs->count].name, name, len + 1);
	logs->entries[logs->count++].value = value;
	return PASCO_OK;
}

bool
pasco_logs_get(const pasco_logs *logs, const char *name, double *value)
{
	for (size_t i = 0; logs != NULL && name != NULL && i < logs->count;
	     i++) {
		if (strcmp(logs->entries[i].name, name) == 0) {
			if (value != NULL) {
				*value = logs->entries[i].value;
			}
			return true;
		}
	}
	return false;
}

/* The callback list. */

struct pasco_callbacks {
	pasco_callback   *cbs;
	size_t            n, cap;
	pasco_fit_context ctx;
};

/* The one place the training step is counted. It comes from the epoch
 * and the steps finished in it; a global-step variable on a ps can take
 * its place here. */
static void
update_global_step(pasco_fit_context *ctx)
{
	ctx->global_step =
	    (int64_t) ctx->epoch * ctx->steps_per_epoch + ctx->steps_done;
}

int
pasco_callbacks_create(pasco_callbacks **out)
{
	if ((*out = pasci_calloc(1, sizeof(**out))) == NULL) {
		return pasco_fit_fail(PASCO_ENOMEM, "no memory for callbacks");
	}
	return PASCO_OK;
}

int
pasco_callbacks_add(pasco_callbacks *cbs, pasco_callback cb)
{
	if (cbs->n == cbs->cap) {
		size_t          cap = cbs->cap ? 2 * cbs->cap : 8;
		pasco_callback *p   = realloc(cbs->cbs, cap * sizeof(*p));
		if (p == NULL) {
			if (cb.free != NULL) {
				cb.free(cb.user);
			}
			return pasco_fit_fail(
			    PASCO_ENOMEM, "no memory for a callback");
		}
		cbs->cbs = p;
		cbs->cap = cap;
	}
	cbs->cbs[cbs->n++] = cb;
	return PASCO_OK;
}

void
pasco_callbacks_free(pasco_callbacks *cbs)
{
	if (cbs == NULL) {
		return;
	}
	for (size_t i = 0; i < cbs->n; i++) {
		if (cbs->cbs[i].free != NULL) {
			cbs->cbs[i].free(cbs->cbs[i].user);
		}
	}
	free(cbs->cbs);
	free(cbs);
}

/* A callback's failure: its own message, named after it. */
static int
callback_failed(const pasco_callback *cb, const char *hook, int rv)
{
	char msg[sizeof(fit_error)];
	snprintf(msg, sizeof(msg), "%s", fit_error);
	return pasco_fit_fail(rv, "callback %s (%s): %s",
	    cb->name != NULL ? cb->name : "(unnamed)", hook,
	    msg[0] != 0 ? msg : pasco_strerror(rv));
}

enum hook {
	HOOK_BEGIN,
	HOOK_EPOCH_BEGIN,
	HOOK_PROGRESS,
	HOOK_EPOCH_END,
	HOOK_END
};

static int
call_each(
    pasco_callbacks *cbs, enum hook h, double loss, const pasco_logs *logs)
{
	static const char *names[] = {
	    "begin", "epoch_begin", "progress", "epoch_end", "end"};
	for (size_t i = 0; i < cbs->n; i++) {
		pasco_callback *cb = &cbs->cbs[i];
		int             rv = PASCO_OK;
		fit_error[0]       = 0;
		switch (h) {
		case HOOK_BEGIN:
			rv = cb->begin ? cb->begin(cb->user, &cbs->ctx) : 0;
			break;
		case HOOK_EPOCH_BEGIN:
			rv = cb->epoch_begin
			         ? cb->epoch_begin(cb->user, &cbs->ctx)
			         : 0;
			break;
		case HOOK_PROGRESS:
			rv = cb->progress
			         ? cb->progress(cb->user, &cbs->ctx, loss)
			         : 0;
			break;
		case HOOK_EPOCH_END:
			rv = cb->epoch_end
			         ? cb->epoch_end(cb->user, &cbs->ctx, logs)
			         : 0;
			break;
		case HOOK_END:
			rv = cb->end ? cb->end(cb->user, &cbs->ctx, logs) : 0;
			break;
		}
		if (rv != PASCO_OK) {
			return callback_failed(cb, names[h], rv);
		}
	}
	return PASCO_OK;
}

int
pasco_callbacks_begin(pasco_callbacks *cbs, int32_t epochs,
    int64_t steps_per_epoch, int32_t *initial_epoch)
{
	if (steps_per_epoch <= 0 || epochs < 0 || *initial_epoch < 0) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "callbacks: steps_per_epoch must be > 0 (got %lld), "
		    "epochs and the initial epoch >= 0",
		    (long long) steps_per_epoch);
	}
	double lr = cbs->ctx.learning_rate; /* the loop's, set before */
	memset(&cbs->ctx, 0, sizeof(cbs->ctx));
	cbs->ctx.learning_rate   = lr;
	cbs->ctx.epochs          = epochs;
	cbs->ctx.steps_per_epoch = steps_per_epoch;
	cbs->ctx.initial_epoch   = *initial_epoch;
	cbs->ctx.epoch           = *initial_epoch;
	update_global_step(&cbs->ctx);
	int rv         = call_each(cbs, HOOK_BEGIN, 0, NULL);
	*initial_epoch = cbs->ctx.initial_epoch;
	cbs->ctx.epoch = cbs->ctx.initial_epoch;
	update_global_step(&cbs->ctx);
	return rv;
}

int
pasco_callbacks_epoch_begin(pasco_callbacks *cbs, int32_t epoch)
{
	cbs->ctx.epoch      = epoch;
	cbs->ctx.steps_done = 0;
	update_global_step(&cbs->ctx);
	return call_each(cbs, HOOK_EPOCH_BEGIN, 0, NULL);
}

int
pasco_callbacks_progress(pasco_callbacks *cbs, int64_t steps_done, double loss)
{
	cbs->ctx.steps_done = steps_done;
	update_global_step(&cbs->ctx);
	return call_each(cbs, HOOK_PROGRESS, loss, NULL);
}

int
pasco_callbacks_epoch_end(
    pasco_callbacks *cbs, int32_t epoch, const pasco_logs *logs)
{
	cbs->ctx.epoch      = epoch;
	cbs->ctx.steps_done = cbs->ctx.steps_per_epoch;
	update_global_step(&cbs->ctx);
	return call_each(cbs, HOOK_EPOCH_END, 0, logs);
}

int
pasco_callbacks_end(pasco_callbacks *cbs, const pasco_logs *logs)
{
	return call_each(cbs, HOOK_END, 0, logs);
}

bool
pasco_callbacks_stop_requested(const pasco_callbacks *cbs)
{
	return cbs->ctx.stop_training;
}

int64_t
pasco_callbacks_global_step(const pasco_callbacks *cbs)
{
	return cbs->ctx.global_step;
}

const pasco_fit_context *
pasco_callbacks_context(const pasco_callbacks *cbs)
{
	return &cbs->ctx;
}

pasco_fit_context *
pasci_callbacks_ctx(pasco_callbacks *cbs)
{
	return &cbs->ctx;
}

int
pasco_fit_set_learning_rate(pasco_fit_context *ctx, double lr)
{
	if (!(ctx->learning_rate > 0)) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "set learning rate: this fit has no learning rate to set "
		    "(a step function of your own: give pasco_fit_options "
		    "learning_rate and set_learning_rate)");
	}
	if (!isfinite(lr) || !(lr > 0)) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "set learning rate: %g is not a finite number > 0", lr);
	}
	ctx->learning_rate = lr;
	return PASCO_OK;
}

/* TensorBoard. */

typedef struct tb_cb {
	char                 *logdir;
	double                learning_rate;
	pasco_lr_schedule     schedule; /* kind 0: learning_rate */
	pasco_summary_writer *train, *eval;
} tb_cb;

static int
tb_open(tb_cb *t, const char *sub, pasco_summary_writer **w)
{
	char dir[4096];
	if (*w != NULL) {
		return PASCO_OK;
	}
	pasci_fmt(dir, sizeof(dir), "%s/%s", t->logdir, sub);
	int rv = pasco_summary_writer_open(w, dir);
	return rv == PASCO_OK
	           ? rv
	           : pasco_fit_fail(rv, "%s", pasco_summary_last_error());
}

static int
tb_begin(void *user, pasco_fit_context *ctx)
{
	tb_cb *t = user;
	(void) ctx;
	return tb_open(t, "train", &t->train);
}

static int
tb_scalar(pasco_summary_writer *w, const char *name, int64_t step, double v)
{
	char tag[PASCO_LOG_NAME_MAX + 8];
	pasci_fmt(tag, sizeof(tag), "epoch_%s", name);
	int rv = pasco_summary_scalar(w, tag, step, v);
	return rv == PASCO_OK
	           ? rv
	           : pasco_fit_fail(rv, "%s", pasco_summary_last_error());
}

static int
tb_epoch_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	tb_cb *t  = user;
	int    rv = PASCO_OK;
	for (size_t i = 0; rv == PASCO_OK && i < logs->count; i++) {
		const char *name = logs->entries[i].name;
		double      v    = logs->entries[i].value;
		if (strncmp(name, "val_", 4) == 0) {
			if ((rv = tb_open(t, "eval", &t->eval)) == PASCO_OK) {
				rv = tb_scalar(
				    t->eval, name + 4, ctx->epoch, v);
			}
		} else {
			rv = tb_scalar(t->train, name, ctx->epoch, v);
		}
	}
	/* a schedule's rate at the global step; else the rate the epoch
	 * used: its log when a callback put it there (written above), else
	 * the loop's (a callback may change it later), else the option's */
	double lr =
	    ctx->learning_rate > 0 ? ctx->learning_rate : t->learning_rate;
	if (rv == PASCO_OK && t->schedule.kind != PASCO_LR_CONSTANT) {
		rv = tb_scalar(t->train, "learning_rate", ctx->epoch,
		    pasco_lr_schedule_at(
		        &t->schedule, ctx->global_step, t->learning_rate));
	} else if (rv == PASCO_OK && lr != 0 &&
	           !pasco_logs_get(logs, "learning_rate", NULL)) {
		rv = tb_scalar(t->train, "learning_rate", ctx->epoch, lr);
	}
	if (rv == PASCO_OK) {
		rv = pasco_summary_flush(t->train);
	}
	if (rv == PASCO_OK && t->eval != NULL) {
		rv = pasco_summary_flush(t->eval);
	}
	return rv;
}

static void
tb_free(void *user)
{
	tb_cb *t = user;
	if (t != NULL) {
		pasco_summary_writer_close(t->train);
		pasco_summary_writer_close(t->eval);
		free(t->logdir);
		free(t);
	}
}

int
pasco_callback_tensorboard(
    pasco_callback *out, const pasco_tensorboard_options *o)
{
	tb_cb *t;
	memset(out, 0, sizeof(*out));
	if (o == NULL || o->logdir == NULL || o->logdir[0] == 0) {
		return pasco_fit_fail(
		    PASCO_EINVAL, "tensorboard callback: no log directory");
	}
	if ((t = pasci_calloc(1, sizeof(*t))) == NULL ||
	    (t->logdir = pasci_strdup(o->logdir)) == NULL) {
		free(t);
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for a callback");
	}
	t->learning_rate = o->learning_rate;
	if (o->learning_rate_schedule != NULL &&
	    pasci_lr_schedule_from_json(
	        o->learning_rate_schedule, &t->schedule) != PASCO_OK) {
		tb_free(t);
		return pasco_fit_fail(PASCO_EINVAL, "tensorboard callback: %s",
		    pasco_model_last_error());
	}
	*out = (pasco_callback){.name = "tensorboard",
	    .begin                    = tb_begin,
	    .epoch_end                = tb_epoch_end,
	    .free                     = tb_free,
	    .user                     = t};
	return PASCO_OK;
}

/* EarlyStopping. */

typedef struct early_cb {
	char   monitor[PASCO_LOG_NAME_MAX];
	double min_delta, best;
	int    patience, wait;
	bool   maximize;
} early_cb;

static int
early_begin(void *user, pasco_fit_context *ctx)
{
	early_cb *s = user;
	(void) ctx;
	s->wait = 0;
	s->best = s->maximize ? -INFINITY : INFINITY;
	return PASCO_OK;
}

static int
early_epoch_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	early_cb *s = user;
	double    v;
	if (!pasco_logs_get(logs, s->monitor, &v)) {
		pasci_log(PASCI_LOG_WARN,
		    "early stopping: the logs of epoch %d have no %s",
		    (int) ctx->epoch, s->monitor);
		return PASCO_OK;
	}
	bool better = s->maximize ? v - s->min_delta > s->best
	                          : v + s->min_delta < s->best;
	s->wait++;
	if (better) {
		s->best = v;
		s->wait = 0;
		return PASCO_OK;
	}
	if (s->wait >= s->patience && ctx->epoch > 0) {
		ctx->stop_training = true;
		pasci_fmt(ctx->stop_reason, sizeof(ctx->stop_reason),
		    "early stopping at epoch %d: %s has not improved on %g "
		    "for %d epoch%s",
		    (int) ctx->epoch, s->monitor, s->best, s->wait,
		    s->wait == 1 ? "" : "s");
		pasci_log(PASCI_LOG_INFO, "%s", ctx->stop_reason);
	}
	return PASCO_OK;
}

int
pasco_callback_early_stopping(
    pasco_callback *out, const pasco_early_stopping_options *o)
{
	early_cb   *s;
	const char *monitor =
	    o != NULL && o->monitor ? o->monitor : "val_loss";
	memset(out, 0, sizeof(*out));
	if (o == NULL || o->patience < 0 || !(o->min_delta >= 0) ||
	    strlen(monitor) == 0 || strlen(monitor) >= PASCO_LOG_NAME_MAX ||
	    o->mode < PASCO_MONITOR_AUTO || o->mode > PASCO_MONITOR_MAX) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "early stopping: want a log name, patience >= 0, "
		    "min_delta >= 0 and a mode");
	}
	if ((s = pasci_calloc(1, sizeof(*s))) == NULL) {
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for a callback");
	}
	strcpy(s->monitor, monitor);
	s->min_delta = o->min_delta;
	s->patience  = o->patience;
	s->maximize =
	    o->mode == PASCO_MONITOR_MAX ||
	    (o->mode == PASCO_MONITOR_AUTO && strstr(monitor, "acc") != NULL);
	*out = (pasco_callback){.name = "early_stopping",
	    .begin                    = early_begin,
	    .epoch_end                = early_epoch_end,
	    .free                     = free,
	    .user                     = s};
	return PASCO_OK;
}
