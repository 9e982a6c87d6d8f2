/*
 * The progress display callback (include/pasco/fit.h), in Keras's two
 * styles. The bar (verbose=1, the default on a terminal) is Keras 3's
 * Progbar (keras/src/utils/progbar.py): "Epoch 2/5" before each epoch,
 * then one line redrawn with "\r" at most 20 times a second as the
 * epoch's closures finish: steps done and the epoch's, a bar of 20, the
 * time left, the time per step and the running logs; at the epoch's end
 * the line is drawn once more with the time the epoch took and every log.
 * The lines (verbose=2, the default elsewhere: a pipe, a file, a log
 * collector) print a plain line at each interval of an epoch that is
 * still running (none at its start) and one at its end, so an epoch
 * shorter than the interval prints one line. Runs on the thread that
 * drives the callback list.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pasco/fit.h"
#include "util.h"

#define BAR_INTERVAL_S 0.05 /* Keras's Progbar interval */
#define BAR_WIDTH 20
#define BOLD "\x1b[1m"
#define RESET "\x1b[0m"
#define BAR_DONE "\x1b[32m"     /* green */
#define BAR_LEFT "\x1b[37m"     /* white */
#define BAR_CHAR "\xe2\x94\x81" /* U+2501, one column wide */

typedef struct progress_cb {
	FILE                *out;
	bool                 bar; /* the bar; else plain lines */
	pasco_progress_style style;
	double               interval;
	double               epoch_start, last_print; /* seconds, monotonic */
	double after_first; /* when step 1 was seen; 0: not yet */
	int    prev_width;  /* columns of the bar's last line */
} progress_cb;

static double
now_s(void)
{
	return (double) pasci_now_ns() * 1e-9;
}

static int
progress_begin(void *user, pasco_fit_context *ctx)
{
	progress_cb *p = user;
	p->bar =
	    p->style == PASCO_PROGRESS_BAR ||
	    (p->style == PASCO_PROGRESS_AUTO && isatty(fileno(p->out)) == 1);
	if (ctx->initial_epoch >= ctx->epochs && ctx->epochs > 0) {
		/* a resumed run that had finished: not "epoch 31/30" */
		fprintf(p->out,
		    "Nothing to train: all %d epochs are done already (raise "
		    "epochs to train on)\n",
		    (int) ctx->epochs);
		fflush(p->out);
	} else if (ctx->initial_epoch > 0) {
		fprintf(p->out, "Starting at epoch %d/%d\n",
		    (int) ctx->initial_epoch + 1, (int) ctx->epochs);
		fflush(p->out);
	}
	return PASCO_OK;
}

static int
progress_epoch_begin(void *user, pasco_fit_context *ctx)
{
	progress_cb *p = user;
	p->epoch_start = now_s();
	p->after_first = 0;
	p->prev_width  = 0;
	/* the bar shows the first step at once; plain output waits an
	 * interval, so a short epoch is one line, not two */
	p->last_print = p->bar ? -INFINITY : p->epoch_start;
	if (p->bar && ctx->epochs > 1) {
		fprintf(p->out, "Epoch %d/%d\n", (int) ctx->epoch + 1,
		    (int) ctx->epochs);
		fflush(p->out);
	}
	return PASCO_OK;
}

/* "250 ms", "2.5 s", "12 s", "3 min 4 s" or "1 h 2 min". */
static void
format_duration(char *buf, size_t len, double s)
{
	if (!isfinite(s) || s < 0) {
		snprintf(buf, len, "?");
	} else if (s < 0.9995) {
		snprintf(buf, len, "%.0f ms", s * 1e3);
	} else if (s < 9.95) {
		snprintf(buf, len, "%.1f s", s);
	} else if (s < 60) {
		snprintf(buf, len, "%.0f s", s);
	} else if (s < 3600) {
		snprintf(buf, len, "%d min %d s", (int) (s / 60),
		    (int) fmod(s, 60));
	} else {
		snprintf(buf, len, "%d h %d min", (int) (s / 3600),
		    (int) fmod(s / 60, 60));
	}
}

/* Keras's _estimate_step_duration: the first step's time is left out
 * once there are more (when it was seen alone: steps_per_execution 1). */
static double
bar_step_time(progress_cb *p, int64_t current, double now)
{
	double t;
	if (current <= 0) {
		return 0;
	}
	t = p->after_first > 0 && current > 1
	        ? (now - p->after_first) / (double) (current - 1)
	        : (now - p->epoch_start) / (double) current;
	if (current == 1) { /* Keras's: only a first closure of one step */
		p->after_first = now;
	}
	return t;
}

/* Keras's ETA ("3s", "1:05", "1:02:03") or elapsed time ("12s"). */
static int
bar_time(char *buf, size_t len, double s, bool eta)
{
	if (eta && s > 3600) {
		return snprintf(buf, len, "%d:%02d:%02d", (int) (s / 3600),
		    (int) fmod(s, 3600) / 60, (int) fmod(s, 60));
	}
	if (eta && s > 60) {
		return snprintf(
		    buf, len, "%d:%02d", (int) (s / 60), (int) fmod(s, 60));
	}
	if (eta) {
		return snprintf(buf, len, "%ds", (int) s);
	}
	return snprintf(buf, len, "%.0fs", s);
}

/* Keras's _format_time: " 30ms/step". */
static int
bar_per_step(char *buf, size_t len, double t)
{
	if (t >= 1 || t == 0) {
		return snprintf(buf, len, " %.0fs/step", t);
	}
	if (t >= 1e-3) {
		return snprintf(buf, len, " %.0fms/step", t * 1e3);
	}
	return snprintf(buf, len, " %.0fus/step", t * 1e6);
}

/* One redraw of the bar: "\r", then what Keras's Progbar.update(current,
 * logs) draws; a final one ends the line. Logs may be NULL. */
static void
bar_draw(progress_cb *p, const pasco_fit_context *ctx, int64_t current,
    const pasco_logs *logs, bool final)
{
	double  now = now_s(), per = bar_step_time(p, current, now);
	int64_t target = ctx->steps_per_epoch;
	int     digits = (int) log10((double) target) + 1;
	int     done = (int) (BAR_WIDTH * (double) current / (double) target);
	char    t[64], info[128];
	int     width;

	width = fprintf(p->out, "\r" BOLD "%*lld/%lld" RESET " ", digits,
	            (long long) current, (long long) target) -
	        9;
	if (done > 0) {
		fputs(BAR_DONE, p->out);
	}
	for (int i = 0; i < BAR_WIDTH; i++) {
		fputs(i == done ? RESET BAR_LEFT BAR_CHAR : BAR_CHAR, p->out);
	}
	fputs(RESET, p->out);
	width += BAR_WIDTH;
	int tl = bar_time(t, sizeof(t),
	    final ? now - p->epoch_start : per * (double) (target - current),
	    !final);
	int il = bar_per_step(info, sizeof(info), per);
	fprintf(p->out, " " BOLD "%s" RESET "%s", t, info);
	width += 1 + tl + il;
	for (size_t i = 0; logs != NULL && i < logs->count; i++) {
		const char *k = logs->entries[i].name;
		double      v = logs->entries[i].value;
		if (strcmp(k, "steps_per_second") == 0) {
			continue; /* the bar shows the time per step */
		}
		width += fprintf(p->out,
		    fabs(v) > 1e-3 ? " - %s: %.4f" : " - %s: %.4e", k, v);
	}
	if (p->prev_width > width) {
		fprintf(p->out, "%*s", p->prev_width - width, "");
	}
	p->prev_width = width;
	fputs(final ? "\n" : "", p->out);
	fflush(p->out);
}

static int
progress_step(void *user, pasco_fit_context *ctx, double loss)
{
	progress_cb *p   = user;
	double       now = now_s(), elapsed = now - p->epoch_start;
	double rate = elapsed > 0 ? (double) ctx->steps_done / elapsed : 0;
	char   left[32];

	if (now - p->last_print < (p->bar ? BAR_INTERVAL_S : p->interval)) {
		if (p->bar) { /* Keras times every step it is told of */
			(void) bar_step_time(p, ctx->steps_done, now);
		}
		return PASCO_OK;
	}
	p->last_print = now;
	if (p->bar) {
		bar_draw(p, ctx, ctx->steps_done, ctx->batch_logs, false);
		return PASCO_OK;
	}
	format_duration(left, sizeof(left),
	    rate > 0 ? (double) (ctx->steps_per_epoch - ctx->steps_done) / rate
	             : NAN);
	fprintf(p->out,
	    "Epoch %d/%d: step %lld/%lld, loss %.4f, %.1f steps/s, %s left\n",
	    (int) ctx->epoch + 1, (int) ctx->epochs,
	    (long long) ctx->steps_done, (long long) ctx->steps_per_epoch,
	    loss, rate, left);
	fflush(p->out);
	return PASCO_OK;
}

static int
progress_epoch_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	progress_cb *p = user;
	char         took[32];
	if (p->bar) {
		bar_draw(p, ctx, ctx->steps_per_epoch, logs, true);
		return PASCO_OK;
	}
	format_duration(took, sizeof(took), now_s() - p->epoch_start);
	fprintf(p->out, "Epoch %d/%d: %lld/%lld steps in %s",
	    (int) ctx->epoch + 1, (int) ctx->epochs,
	    (long long) ctx->steps_per_epoch, (long long) ctx->steps_per_epoch,
	    took);
	for (size_t i = 0; i < logs->count; i++) {
		fprintf(p->out, ", %s %.4g", logs->entries[i].name,
		    logs->entries[i].value);
	}
	fputs("\n", p->out);
	fflush(p->out);
	return PASCO_OK;
}

static int
progress_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	progress_cb *p = user;
	(void) logs;
	if (ctx->stop_training && ctx->stop_reason[0] != 0) {
		fprintf(p->out, "Stopped: %s\n", ctx->stop_reason);
		fflush(p->out);
	}
	return PASCO_OK;
}

int
pasco_callback_progress(pasco_callback *out, const pasco_progress_options *o)
{
	progress_cb *p;
	memset(out, 0, sizeof(*out));
	if (o != NULL && !(o->interval_s >= 0)) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "progress: interval_s must be >= 0, got %g",
		    o->interval_s);
	}
	if ((p = pasci_calloc(1, sizeof(*p))) == NULL) {
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for a callback");
	}
	if (o != NULL && (o->style < PASCO_PROGRESS_AUTO ||
	                     o->style > PASCO_PROGRESS_LINES)) {
		free(p);
		return pasco_fit_fail(PASCO_EINVAL,
		    "progress: style %d is not PASCO_PROGRESS_AUTO, _BAR or "
		    "_LINES",
		    (int) o->style);
	}
	p->style    = o != NULL ? o->style : PASCO_PROGRESS_AUTO;
	p->out      = o != NULL && o->out != NULL ? o->out : stdout;
	p->interval = o != NULL && o->interval_s > 0 ? o->interval_s : 10;
	*out        = (pasco_callback){.name = "progress",
	           .begin                    = progress_begin,
	           .epoch_begin              = progress_epoch_begin,
	           .progress                 = progress_step,
	           .epoch_end                = progress_epoch_end,
	           .end                      = progress_end,
	           .free                     = free,
	           .user                     = p};
	return PASCO_OK;
}
