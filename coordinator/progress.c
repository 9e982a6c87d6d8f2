/*
 * The progress display callback (include/pasco/fit.h). On a terminal it
 * rewrites one line in place ("\r", then erase to the end of the line)
 * at most ten times a second while an epoch runs, and ends it with the
 * epoch's logs; elsewhere (a pipe, a file, a log collector) it prints a
 * plain line at each interval of an epoch that is still running (none at
 * its start) and one at its end, so an epoch shorter than the interval
 * prints one line. Runs on the thread that drives the callback list.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pasco/fit.h"
#include "util.h"

#define TTY_INTERVAL_S 0.1

typedef struct progress_cb {
	FILE  *out;
	bool   tty;
	double interval;
	double epoch_start, last_print; /* seconds, monotonic */
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
	p->tty         = isatty(fileno(p->out)) == 1;
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
	(void) ctx;
	p->epoch_start = now_s();
	/* a terminal shows the first step at once; plain output waits an
	 * interval, so a short epoch is one line, not two */
	p->last_print = p->tty ? -INFINITY : p->epoch_start;
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

static int
progress_step(void *user, pasco_fit_context *ctx, double loss)
{
	progress_cb *p   = user;
	double       now = now_s(), elapsed = now - p->epoch_start;
	double rate = elapsed > 0 ? (double) ctx->steps_done / elapsed : 0;
	char   left[32];

	if (now - p->last_print < (p->tty ? TTY_INTERVAL_S : p->interval)) {
		return PASCO_OK;
	}
	p->last_print = now;
	format_duration(left, sizeof(left),
	    rate > 0 ? (double) (ctx->steps_per_epoch - ctx->steps_done) / rate
	             : NAN);
	fprintf(p->out,
	    p->tty ? "\rEpoch %d/%d  step %lld/%lld  loss %.4f  %.1f steps/s  "
	             "%s left\033[K"
	           : "Epoch %d/%d: step %lld/%lld, loss %.4f, %.1f steps/s, "
	             "%s left\n",
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
	format_duration(took, sizeof(took), now_s() - p->epoch_start);
	fprintf(p->out,
	    p->tty ? "\rEpoch %d/%d  %lld/%lld steps in %s"
	           : "Epoch %d/%d: "
	             "%lld/%lld steps in %s",
	    (int) ctx->epoch + 1, (int) ctx->epochs,
	    (long long) ctx->steps_per_epoch, (long long) ctx->steps_per_epoch,
	    took);
	for (size_t i = 0; i < logs->count; i++) {
		fprintf(p->out, p->tty ? "  %s %.4g" : ", %s %.4g",
		    logs->entries[i].name, logs->entries[i].value);
	}
	fputs(p->tty ? "\033[K\n" : "\n", p->out);
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
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for a callback");
	}
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
