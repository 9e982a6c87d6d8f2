/*
 * Keras's built-in callbacks that steer or record a fit (fit.h):
 * ReduceLROnPlateau and LearningRateScheduler, which set the learning
 * rate of the steps scheduled next through the context
 * (pasco_fit_set_learning_rate), CSVLogger and TerminateOnNaN. Each
 * follows Keras 3's keras/src/callbacks/<name>.py. Everything runs on the
 * thread that drives the callback list; nothing is shared.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pasco/fit.h"
#include "util.h"

/* Keras's "auto" direction of a monitored name: up for accuracies, AUC,
 * precision and recall (their metrics' _direction), down otherwise
 * (losses, errors). */
static bool
monitor_maximizes(const char *monitor, pasco_monitor_mode mode)
{
	if (mode != PASCO_MONITOR_AUTO) {
		return mode == PASCO_MONITOR_MAX;
	}
	return strstr(monitor, "acc") != NULL ||
	       strstr(monitor, "auc") != NULL ||
	       strstr(monitor, "precision") != NULL ||
	       strstr(monitor, "recall") != NULL;
}

/* ReduceLROnPlateau. */

typedef struct plateau_cb {
	char   monitor[PASCO_LOG_NAME_MAX];
	double factor, min_delta, min_lr, best;
	int    patience, cooldown, wait, cooldown_counter;
	bool   maximize, has_best, verbose;
} plateau_cb;

static int
plateau_begin(void *user, pasco_fit_context *ctx)
{
	plateau_cb *p = user;
	if (!(ctx->learning_rate > 0)) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "ReduceLROnPlateau: this fit has no learning rate to "
		    "reduce (the optimizer's is a schedule, which Keras does "
		    "not reduce either, or the step function is your own)");
	}
	p->has_best            = false;
	p->wait                = 0;
	p->cooldown_counter    = 0;
	ctx->log_learning_rate = true;
	return PASCO_OK;
}

static bool
plateau_improved(const plateau_cb *p, double v)
{
	if (!p->has_best) {
		return true;
	}
	return p->maximize ? v - p->min_delta > p->best
	                   : v + p->min_delta < p->best;
}

/* The reduction of Keras's _reduce_optimizer_lr: none at min_lr (compared
 * as float32, as Keras compares np.float32(min_lr)). */
static int
plateau_reduce(plateau_cb *p, pasco_fit_context *ctx, bool *reduced)
{
	double old = ctx->learning_rate;
	*reduced   = false;
	if (!(old > (double) (float) p->min_lr)) {
		return PASCO_OK;
	}
	double lr = fmax(old * p->factor, p->min_lr);
	int    rv = pasco_fit_set_learning_rate(ctx, lr);
	if (rv != PASCO_OK) {
		return rv;
	}
	*reduced = true;
	if (p->verbose) {
		printf("\nEpoch %d: ReduceLROnPlateau reducing learning rate "
		       "to %g.\n",
		    (int) ctx->epoch + 1, lr);
		fflush(stdout);
	}
	return PASCO_OK;
}

static int
plateau_epoch_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	plateau_cb *p = user;
	double      v;
	bool        reduced;
	int         rv;
	if (!pasco_logs_get(logs, p->monitor, &v)) {
		pasci_log(PASCI_LOG_WARN,
		    "ReduceLROnPlateau: the logs of epoch %d have no %s",
		    (int) ctx->epoch, p->monitor);
		return PASCO_OK;
	}
	if (p->cooldown_counter > 0) {
		p->cooldown_counter--;
		p->wait = 0;
	}
	if (plateau_improved(p, v)) {
		p->best     = v;
		p->has_best = true;
		p->wait     = 0;
	} else if (p->cooldown_counter == 0 && ++p->wait >= p->patience) {
		if ((rv = plateau_reduce(p, ctx, &reduced)) != PASCO_OK) {
			return rv;
		}
		if (reduced) {
			p->cooldown_counter = p->cooldown;
			p->wait             = 0;
		}
	}
	return PASCO_OK;
}

int
pasco_callback_reduce_lr_on_plateau(
    pasco_callback *out, const pasco_reduce_lr_options *o)
{
	plateau_cb *p;
	const char *monitor =
	    o != NULL && o->monitor != NULL ? o->monitor : "val_loss";
	double factor = o != NULL && o->factor != 0 ? o->factor : 0.1;
	memset(out, 0, sizeof(*out));
	if (o == NULL || !(factor > 0 && factor < 1) || o->patience < 0 ||
	    o->cooldown < 0 || !(o->min_delta >= 0) || !(o->min_lr >= 0) ||
	    monitor[0] == 0 || strlen(monitor) >= PASCO_LOG_NAME_MAX ||
	    o->mode < PASCO_MONITOR_AUTO || o->mode > PASCO_MONITOR_MAX) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "ReduceLROnPlateau: want a log name, 0 < factor < 1 "
		    "(got %g), patience, cooldown, min_delta and min_lr >= 0 "
		    "and a mode",
		    factor);
	}
	if ((p = pasci_calloc(1, sizeof(*p))) == NULL) {
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for a callback");
	}
	strcpy(p->monitor, monitor);
	p->factor    = factor;
	p->min_delta = o->min_delta;
	p->min_lr    = o->min_lr;
	p->patience  = o->patience;
	p->cooldown  = o->cooldown;
	p->verbose   = o->verbose;
	p->maximize  = monitor_maximizes(monitor, o->mode);
	*out         = (pasco_callback){.name = "ReduceLROnPlateau",
	            .begin                    = plateau_begin,
	            .epoch_end                = plateau_epoch_end,
	            .free                     = free,
	            .user                     = p};
	return PASCO_OK;
}

/* LearningRateScheduler. */

typedef struct sched_cb {
	double (*schedule)(void *user, int32_t epoch, double lr);
	void *user;
	bool  verbose;
} sched_cb;

static int
sched_begin(void *user, pasco_fit_context *ctx)
{
	(void) user;
	if (!(ctx->learning_rate > 0)) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "LearningRateScheduler: this fit has no learning rate to "
		    "set (the optimizer's is a schedule, or the step function "
		    "is your own)");
	}
	ctx->log_learning_rate = true;
	return PASCO_OK;
}

static int
sched_epoch_begin(void *user, pasco_fit_context *ctx)
{
	sched_cb *s  = user;
	double    lr = s->schedule(s->user, ctx->epoch, ctx->learning_rate);
	if (!isfinite(lr) || !(lr > 0)) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "LearningRateScheduler: the schedule gave %g for epoch "
		    "%d; want a finite number > 0",
		    lr, (int) ctx->epoch);
	}
	if (s->verbose) {
		printf("\nEpoch %d: LearningRateScheduler setting learning "
		       "rate to %g.\n",
		    (int) ctx->epoch + 1, lr);
		fflush(stdout);
	}
	return pasco_fit_set_learning_rate(ctx, lr);
}

int
pasco_callback_lr_scheduler(pasco_callback *out,
    double (*schedule)(void *user, int32_t epoch, double lr), void *user,
    bool verbose)
{
	sched_cb *s;
	memset(out, 0, sizeof(*out));
	if (schedule == NULL) {
		return pasco_fit_fail(
		    PASCO_EINVAL, "LearningRateScheduler: no schedule");
	}
	if ((s = pasci_calloc(1, sizeof(*s))) == NULL) {
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for a callback");
	}
	*s   = (sched_cb){schedule, user, verbose};
	*out = (pasco_callback){.name = "LearningRateScheduler",
	    .begin                    = sched_begin,
	    .epoch_begin              = sched_epoch_begin,
	    .free                     = free,
	    .user                     = s};
	return PASCO_OK;
}

/* CSVLogger. */

typedef struct csv_cb {
	char  *path;
	char   sep;
	bool   append, header; /* header: to write before the first row */
	FILE  *f;
	size_t nkeys;
	char (*keys)[PASCO_LOG_NAME_MAX + 4];
} csv_cb;

static int
csv_io_failed(const csv_cb *c, const char *what)
{
	return pasco_fit_fail(
	    PASCO_EIO, "CSVLogger: %s %s: %s", what, c->path, strerror(errno));
}

static int
csv_begin(void *user, pasco_fit_context *ctx)
{
	csv_cb *c = user;
	(void) ctx;
	c->header = true;
	if (c->append) { /* Keras: a header unless the file has a line */
		FILE *r = fopen(c->path, "r");
		if (r != NULL) {
			c->header = fgetc(r) == EOF;
			fclose(r);
		}
	}
	if (c->f != NULL) {
		fclose(c->f);
	}
	free(c->keys);
	c->keys  = NULL;
	c->nkeys = 0;
	if ((c->f = fopen(c->path, c->append ? "a" : "w")) == NULL) {
		return csv_io_failed(c, "opening");
	}
	return PASCO_OK;
}

static int
key_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Keras's keys: the first epoch's log names, sorted; and, when none is
 * a val_ one, each name's val_ form after them. */
static int
csv_keys(csv_cb *c, const pasco_logs *logs)
{
	bool has_val = false;
	if ((c->keys = pasci_calloc(2 * logs->count + 1, sizeof(*c->keys))) ==
	    NULL) {
		return pasco_fit_fail(PASCO_ENOMEM, "CSVLogger: no memory");
	}
	for (size_t i = 0; i < logs->count; i++) {
		snprintf(c->keys[i], sizeof(c->keys[i]), "%s",
		    logs->entries[i].name);
		has_val |= strncmp(logs->entries[i].name, "val_", 4) == 0;
	}
	c->nkeys = logs->count;
	qsort(c->keys, c->nkeys, sizeof(*c->keys), key_cmp);
	for (size_t i = 0; !has_val && i < logs->count; i++) {
		char *dst = c->keys[c->nkeys + i]; /* room for "val_" */
		memcpy(dst, "val_", 4);
		strcpy(dst + 4, c->keys[i]);
	}
	c->nkeys += has_val ? 0 : logs->count;
	return PASCO_OK;
}

/* v as Python's repr of a float writes it: the shortest digits that read
 * back the same, ".0" after a whole number, "nan", "inf". */
static void
python_repr(char *buf, size_t len, double v)
{
	if (isnan(v)) {
		snprintf(buf, len, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "inf" : "-inf");
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, len, "%.*g", p, v);
		if (strtod(buf, NULL) == v) {
			break;
		}
	}
	/* repr keeps 16 digits before the exponent form (1e+16) */
	if (strchr(buf, 'e') != NULL && fabs(v) >= 1 && fabs(v) < 1e16) {
		snprintf(buf, len, "%.0f", v);
	}
	if (strpbrk(buf, ".e") == NULL) {
		strncat(buf, ".0", len - strlen(buf) - 1);
	}
}

static int
csv_epoch_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	csv_cb *c = user;
	char    num[64];
	double  v;
	int     rv;
	if (c->keys == NULL && (rv = csv_keys(c, logs)) != PASCO_OK) {
		return rv;
	}
	if (c->header) {
		fprintf(c->f, "epoch");
		for (size_t i = 0; i < c->nkeys; i++) {
			fprintf(c->f, "%c%s", c->sep, c->keys[i]);
		}
		fputs("\r\n", c->f); /* Python's csv writes excel's \r\n */
		c->header = false;
	}
	fprintf(c->f, "%d", (int) ctx->epoch);
	for (size_t i = 0; i < c->nkeys; i++) {
		if (pasco_logs_get(logs, c->keys[i], &v)) {
			python_repr(num, sizeof(num), v);
		} else {
			snprintf(num, sizeof(num), "NA");
		}
		fprintf(c->f, "%c%s", c->sep, num);
	}
	fputs("\r\n", c->f);
	if (fflush(c->f) != 0 || ferror(c->f)) {
		return csv_io_failed(c, "writing");
	}
	return PASCO_OK;
}

static int
csv_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	csv_cb *c  = user;
	int     rv = PASCO_OK;
	(void) ctx;
	(void) logs;
	if (c->f != NULL && fclose(c->f) != 0) {
		rv = csv_io_failed(c, "closing");
	}
	c->f = NULL;
	return rv;
}

static void
csv_free(void *user)
{
	csv_cb *c = user;
	if (c != NULL) {
		if (c->f != NULL) {
			fclose(c->f);
		}
		free(c->keys);
		free(c->path);
		free(c);
	}
}

int
pasco_callback_csv_logger(
    pasco_callback *out, const char *path, const char *separator, bool append)
{
	csv_cb *c;
	memset(out, 0, sizeof(*out));
	if (path == NULL || path[0] == 0 ||
	    (separator != NULL && strlen(separator) != 1)) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "CSVLogger: want a file name and a separator of one "
		    "character, got \"%s\"",
		    separator != NULL ? separator : ",");
	}
	if ((c = pasci_calloc(1, sizeof(*c))) == NULL ||
	    (c->path = pasci_strdup(path)) == NULL) {
		free(c);
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for a callback");
	}
	c->sep    = separator != NULL ? separator[0] : ',';
	c->append = append;
	*out      = (pasco_callback){.name = "CSVLogger",
	         .begin                    = csv_begin,
	         .epoch_end                = csv_epoch_end,
	         .end                      = csv_end,
	         .free                     = csv_free,
	         .user                     = c};
	return PASCO_OK;
}

/* TerminateOnNaN. */

static int
nan_progress(void *user, pasco_fit_context *ctx, double loss)
{
	(void) user;
	if (isfinite(loss) || ctx->stop_training) {
		return PASCO_OK;
	}
	printf("Batch %lld: Invalid loss, terminating training\n",
	    (long long) ctx->steps_done - 1);
	fflush(stdout);
	ctx->stop_training = true;
	pasci_fmt(ctx->stop_reason, sizeof(ctx->stop_reason),
	    "TerminateOnNaN: the loss was %g at step %lld of epoch %d", loss,
	    (long long) ctx->steps_done, (int) ctx->epoch + 1);
	return PASCO_OK;
}

int
pasco_callback_terminate_on_nan(pasco_callback *out)
{
	*out = (pasco_callback){
	    .name = "TerminateOnNaN", .progress = nan_progress};
	return PASCO_OK;
}
