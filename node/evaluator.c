/*
 * The sidecar evaluator (evaluator.h): a ps and a worker server inside
 * this process on inproc:// addresses, a strategy and a coordinator over
 * them, and a loop that lists the checkpoint directory, restores each new
 * checkpoint into the local variables, evaluates it with
 * pasco_schedule_shards and reports it (JSON line, event file, callback).
 * Everything runs on the thread that calls pasco_evaluator_run, apart
 * from the servers' and coordinator's own threads; reports are made in
 * step order.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "pasco/checkpoint.h"
#include "pasco/evaluator.h"
#include "pasco/server.h"
#include "pasco/summary.h"
#include "util.h"

#define MAX_METRICS 32
#define MAX_PENDING 4096
#define MANIFEST "manifest.json" /* checkpoint.h: written last */

struct pasco_evaluator {
	pasco_evaluator_options opts;    /* strings below are copies */
	char                   *dir;     /* opts.checkpoint_dir */
	char                   *eval_fn; /* opts.eval_fn */
	char                  **names;   /* opts.metric_names */
	pasco_cluster          *cluster; /* the local one */
	pasco_server           *ps, *worker;
	pasco_strategy         *strategy;
	pasco_coordinator      *coord;
	pasco_summary_writer   *events; /* NULL without a logdir */
	int64_t                 seen;   /* newest step evaluated or skipped */
	/* the run (manifests' "run") whose checkpoints are followed, and
	 * those followed before: a new run saving into the same directory
	 * starts its steps again, and its checkpoints are evaluated from its
	 * first; an earlier run's are never taken up again */
	char run[40];
	bool following; /* run is chosen */
	char (*old_runs)[40];
	size_t  nold_runs;
	int64_t last;  /* newest step evaluated, or -1 */
	int64_t count; /* checkpoints evaluated */
	char    err[1024];
};

static _Thread_local char create_err[1024];

/* Records why e (or create, with e NULL) failed; returns rv. */
static int fail(pasco_evaluator *e, int rv, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(pasco_evaluator *e, int rv, const char *fmt, ...)
{
	char   *buf = e != NULL ? e->err : create_err;
	size_t  len = e != NULL ? sizeof(e->err) : sizeof(create_err);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	pasci_error_note(buf);
	return rv;
}

/* Names the JSON line already uses, or a repeated or empty one. */
static int
check_names(const pasco_evaluator_options *o)
{
	static const char *taken[] = {
	    "checkpoint", "step", "loss", "examples"};
	if (o->num_metrics > MAX_METRICS ||
	    (o->num_metrics > 0 && o->metric_names == NULL)) {
		return fail(NULL, PASCO_EINVAL,
		    "at most %d metric names, given as metric_names",
		    MAX_METRICS);
	}
	for (size_t i = 0; i < o->num_metrics; i++) {
		const char *n = o->metric_names[i];
		if (n == NULL || n[0] == 0) {
			return fail(
			    NULL, PASCO_EINVAL, "metric name %zu is empty", i);
		}
		for (size_t k = 0; k < sizeof(taken) / sizeof(taken[0]); k++) {
			if (strcmp(n, taken[k]) == 0) {
				return fail(NULL, PASCO_EINVAL,
				    "the metric name '%s' is taken by the "
				    "JSON line",
				    n);
			}
		}
		for (size_t k = 0; k < i; k++) {
			if (strcmp(n, o->metric_names[k]) == 0) {
				return fail(NULL, PASCO_EINVAL,
				    "the metric name '%s' is given twice", n);
			}
		}
	}
	return PASCO_OK;
}

static int
check_options(const pasco_evaluator_options *o)
{
	if (o == NULL || o->checkpoint_dir == NULL ||
	    o->checkpoint_dir[0] == 0) {
		return fail(NULL, PASCO_EINVAL,
		    "the evaluator needs a checkpoint_dir to watch");
	}
	if (o->eval_fn == NULL || o->eval_fn[0] == 0) {
		return fail(NULL, PASCO_EINVAL,
		    "the evaluator needs an eval_fn (a registered function)");
	}
	if (o->num_shards < 0 || o->final_step < 0 ||
	    o->poll_interval_ms < 0 || o->timeout_ms < 0) {
		return fail(NULL, PASCO_EINVAL,
		    "num_shards, final_step, poll_interval_ms and timeout_ms "
		    "may not be negative");
	}
	return check_names(o);
}

/* The local cluster: one ps and one worker on addresses no other
 * evaluator of this process uses. */
static int
start_cluster(pasco_evaluator *e)
{
	static atomic_int generation;
	int               gen = atomic_fetch_add(&generation, 1);
	int               pid = (int) getpid();
	char              json[512], err[256];
	int               rv;

	pasci_fmt(json, sizeof(json),
	    "{\"cluster\":{\"chief\":[\"inproc://pasco-eval-%d-%d-chief\"],"
	    "\"ps\":[\"inproc://pasco-eval-%d-%d-ps\"],"
	    "\"worker\":[\"inproc://pasco-eval-%d-%d-worker\"]}}",
	    pid, gen, pid, gen, pid, gen);
	if ((rv = pasco_cluster_parse_json(
	         &e->cluster, json, err, sizeof(err))) != 0) {
		return fail(NULL, rv, "the evaluator's cluster: %s", err);
	}
	if ((rv = pasco_server_start(&e->ps, e->cluster, PASCO_ROLE_PS, 0)) !=
	        0 ||
	    (rv = pasco_server_start(
	         &e->worker, e->cluster, PASCO_ROLE_WORKER, 0)) != 0) {
		return fail(NULL, rv, "starting the evaluator's %s: %s",
		    e->ps == NULL ? "ps" : "worker", pasco_strerror(rv));
	}
	pasco_strategy_options so = {.connect_timeout_ms = 30000};
	if ((rv = pasco_strategy_create(&e->strategy, e->cluster, &so)) != 0) {
		return fail(NULL, rv, "the evaluator's strategy: %s",
		    pasco_strategy_error(NULL));
	}
	if ((rv = pasco_coordinator_create(&e->coord, e->strategy, NULL)) !=
	    0) {
		return fail(NULL, rv, "the evaluator's coordinator: %s",
		    pasco_strerror(rv));
	}
	return PASCO_OK;
}

static int
open_events(pasco_evaluator *e, const char *logdir)
{
	char dir[4096];
	int  rv;
	pasci_fmt(dir, sizeof(dir), "%s/eval", logdir);
	if ((rv = pasco_summary_writer_open(&e->events, dir)) != 0) {
		return fail(NULL, rv, "cannot open an event file in %s: %s",
		    dir, pasco_summary_last_error());
	}
	return PASCO_OK;
}

static int
copy_options(pasco_evaluator *e, const pasco_evaluator_options *o)
{
	e->opts    = *o;
	e->dir     = pasci_strdup(o->checkpoint_dir);
	e->eval_fn = pasci_strdup(o->eval_fn);
	e->names   = pasci_calloc(o->num_metrics + 1, sizeof(char *));
	if (e->dir == NULL || e->eval_fn == NULL || e->names == NULL) {
		return fail(NULL, PASCO_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < o->num_metrics; i++) {
		if ((e->names[i] = pasci_strdup(o->metric_names[i])) == NULL) {
			return fail(NULL, PASCO_ENOMEM, "out of memory");
		}
	}
	e->opts.checkpoint_dir = e->dir;
	e->opts.eval_fn        = e->eval_fn;
	e->opts.metric_names   = (const char *const *) e->names;
	e->opts.logdir         = NULL; /* used by create only */
	e->opts.num_shards     = o->num_shards > 0 ? o->num_shards : 1;
	e->opts.poll_interval_ms =
	    o->poll_interval_ms > 0 ? o->poll_interval_ms : 500;
	e->seen = -1;
	e->last = -1;
	return PASCO_OK;
}

int
pasco_evaluator_create(
    pasco_evaluator **out, const pasco_evaluator_options *opts)
{
	pasco_evaluator *e;
	int              rv;

	*out          = NULL;
	create_err[0] = 0;
	if ((rv = check_options(opts)) != 0) {
		return rv;
	}
	if ((e = pasci_calloc(1, sizeof(*e))) == NULL) {
		return fail(NULL, PASCO_ENOMEM, "out of memory");
	}
	if (pasci_log_task()[0] == 0) { /* else our servers name it "ps 0" */
		pasci_log_set_task("evaluator");
	}
	if ((rv = copy_options(e, opts)) != 0 ||
	    (opts->logdir != NULL &&
	        (rv = open_events(e, opts->logdir)) != 0) ||
	    (rv = start_cluster(e)) != 0) {
		pasco_evaluator_destroy(e);
		return rv;
	}
	*out = e;
	return PASCO_OK;
}

pasco_strategy *
pasco_evaluator_strategy(pasco_evaluator *e)
{
	return e->strategy;
}

pasco_coordinator *
pasco_evaluator_coordinator(pasco_evaluator *e)
{
	return e->coord;
}

int64_t
pasco_evaluator_last_step(const pasco_evaluator *e)
{
	return e->last;
}

int64_t
pasco_evaluator_count(const pasco_evaluator *e)
{
	return e->count;
}

const char *
pasco_evaluator_error(const pasco_evaluator *e)
{
	return e != NULL ? e->err : create_err;
}

void
pasco_evaluator_destroy(pasco_evaluator *e)
{
	if (e == NULL) {
		return;
	}
	pasco_coordinator_destroy(e->coord);
	pasco_strategy_destroy(e->strategy);
	pasco_server_stop(e->worker);
	pasco_server_stop(e->ps);
	pasco_cluster_free(e->cluster);
	pasco_summary_writer_close(e->events);
	for (size_t i = 0; e->names != NULL && i < e->opts.num_metrics; i++) {
		free(e->names[i]);
	}
	free(e->names);
	free(e->old_runs);
	free(e->dir);
	free(e->eval_fn);
	free(e);
}

/* Adds step to steps (n of them, ascending, at most max): when full, the
 * newest is dropped for an older one, which a later round takes. */
static size_t
insert_step(int64_t *steps, size_t n, size_t max, int64_t step)
{
	size_t i;
	if (n == max && steps[n - 1] < step) {
		return n;
	}
	i = n < max ? n++ : n - 1;
	for (; i > 0 && steps[i - 1] > step; i--) {
		steps[i] = steps[i - 1];
	}
	steps[i] = step;
	return n;
}

/* The run id in checkpoint dir/name's manifest into run ("" when it has
 * none: saved before runs were noted); false when it cannot be read. */
static bool
manifest_run(const char *dir, const char *name, char *run, size_t len)
{
	char        path[4200], err[256];
	void       *text;
	size_t      n;
	cJSON      *m;
	const char *its;
	pasci_fmt(path, sizeof(path), "%s/%s/" MANIFEST, dir, name);
	if (pasci_file_read(path, &text, &n, err, sizeof(err)) != 0) {
		return false;
	}
	m = cJSON_ParseWithLength(text, n);
	free(text);
	if (m == NULL) {
		return false;
	}
	its = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "run"));
	pasci_fmt(run, len, "%s", its != NULL ? its : "");
	cJSON_Delete(m);
	return true;
}

static bool
is_old_run(const pasco_evaluator *e, const char *run)
{
	for (size_t i = 0; i < e->nold_runs; i++) {
		if (strcmp(e->old_runs[i], run) == 0) {
			return true;
		}
	}
	return false;
}

/* Follows run from now on: the one followed so far is an old one. */
/* Adds run to the runs never taken up again. */
static void
retire_run(pasco_evaluator *e, const char *run)
{
	char(*grown)[40];
	if (is_old_run(e, run) ||
	    (grown = realloc(e->old_runs,
	         (e->nold_runs + 1) * sizeof(*e->old_runs))) == NULL) {
		return;
	}
	e->old_runs = grown;
	pasci_fmt(e->old_runs[e->nold_runs++], sizeof(*grown), "%s", run);
}

/* Follows run from now on: the one followed so far is an old one. */
static void
follow_run(pasco_evaluator *e, const char *run)
{
	if (e->following) {
		retire_run(e, e->run);
		pasci_log(PASCI_LOG_INFO,
		    "%s: checkpoints of a new run (%s) after step %lld of "
		    "the earlier one; evaluating the new run's from its first",
		    e->dir, run[0] != 0 ? run : "unnamed",
		    (long long) e->seen);
	}
	pasci_fmt(e->run, sizeof(e->run), "%s", run);
	e->following = true;
	e->seen      = -1;
}

/* At the start: the run of dir's most recently saved checkpoint (the
 * checkpoint manager keeps its manifest the newest) is followed, and
 * every other run there is an earlier one. False when none is complete. */
static bool
choose_run(pasco_evaluator *e, DIR *d)
{
	struct dirent  *ent;
	struct timespec best = {0, 0};
	char            newest_run[40];
	bool            found = false;
	while ((ent = readdir(d)) != NULL) {
		char        run[40], path[4200];
		struct stat st;
		pasci_fmt(path, sizeof(path), "%s/%s/" MANIFEST, e->dir,
		    ent->d_name);
		if (strncmp(ent->d_name, "ckpt-", 5) != 0 ||
		    stat(path, &st) != 0 ||
		    !manifest_run(e->dir, ent->d_name, run, sizeof(run))) {
			continue;
		}
		if (found) {
			bool later = st.st_mtim.tv_sec > best.tv_sec ||
			             (st.st_mtim.tv_sec == best.tv_sec &&
			                 st.st_mtim.tv_nsec > best.tv_nsec);
			if (strcmp(run, newest_run) != 0) {
				retire_run(e, later ? newest_run : run);
			}
			if (!later) {
				continue;
			}
		}
		best  = st.st_mtim;
		found = true;
		pasci_fmt(newest_run, sizeof(newest_run), "%s", run);
	}
	rewinddir(d);
	if (found) {
		follow_run(e, newest_run);
	}
	return found;
}

/* Steps of the complete checkpoints in e's directory not yet evaluated,
 * the oldest max of them, ascending, and in *newest the newest of all
 * (or e->seen): those of the followed run after e->seen, or, when a new
 * run has saved any, that run's (which is followed from then on); -1 when
 * the directory cannot be read (it does not exist yet). */
static int
list_pending(pasco_evaluator *e, int64_t *steps, size_t max, int64_t *newest)
{
	DIR           *d;
	struct dirent *ent;
	size_t         n         = 0;
	char           fresh[40] = "";
	bool           again;
	do {
		again   = false;
		n       = 0;
		*newest = e->seen;
		if ((d = opendir(e->dir)) == NULL) {
			return -1;
		}
		if (!e->following && !choose_run(e, d)) {
			closedir(d);
			return 0;
		}
		while ((ent = readdir(d)) != NULL) {
			char     *end, run[40];
			long long step;
			if (strncmp(ent->d_name, "ckpt-", 5) != 0) {
				continue;
			}
			errno = 0;
			step  = strtoll(ent->d_name + 5, &end, 10);
			if (*end != 0 || errno != 0 ||
			    end == ent->d_name + 5 ||
			    !manifest_run(
			        e->dir, ent->d_name, run, sizeof(run)) ||
			    is_old_run(e, run)) {
				continue; /* not a complete checkpoint */
			}
			if (strcmp(run, e->run) != 0) {
				/* a new run's: followed from now on */
				pasci_fmt(fresh, sizeof(fresh), "%s", run);
				again = true;
				break;
			}
			if (step <= e->seen) {
				continue;
			}
			n       = insert_step(steps, n, max, step);
			*newest = step > *newest ? step : *newest;
		}
		closedir(d);
		if (again) {
			follow_run(e, fresh);
		}
	} while (again);
	return (int) n;
}

/* The default reduction (evaluator.h): sums over the shards, divided by
 * the total count. */
static int
reduce_sums(void *arg, pasco_value *const *results, int32_t num_shards,
    double *loss, double *metrics, size_t num_metrics, int64_t *examples,
    char *err, size_t errlen)
{
	double sums[MAX_METRICS + 2] = {0};
	size_t want                  = num_metrics + 2;
	(void) arg;
	for (int32_t k = 0; k < num_shards; k++) {
		const pasco_tensor *t = pasco_value_as_tensor(results[k]);
		if (t == NULL || t->rank > 1 || t->count != (int64_t) want) {
			pasci_fmt(err, errlen,
			    "shard %d returned %s, not one tensor of %zu "
			    "numbers [sum of the loss, sum of each of the %zu "
			    "metrics, number of examples]",
			    k,
			    t == NULL ? "no tensor"
			              : "a tensor of another size",
			    want, num_metrics);
			return PASCO_EINVAL;
		}
		for (size_t i = 0; i < want; i++) {
			sums[i] += pasco_tensor_get(t, (int64_t) i);
		}
	}
	*examples = (int64_t) sums[want - 1];
	*loss     = sums[0] / sums[want - 1];
	for (size_t i = 0; i < num_metrics; i++) {
		metrics[i] = sums[i + 1] / sums[want - 1];
	}
	return PASCO_OK;
}

/* The JSON line of ev, written and flushed. */
static int
write_json(pasco_evaluator *e, const pasco_evaluation *ev)
{
	FILE  *out  = e->opts.json_out != NULL ? e->opts.json_out : stdout;
	cJSON *line = cJSON_CreateObject();
	char  *text = NULL;
	bool   ok =
	    line != NULL &&
	    cJSON_AddStringToObject(line, "checkpoint", ev->checkpoint) &&
	    cJSON_AddNumberToObject(line, "step", (double) ev->step) &&
	    cJSON_AddNumberToObject(line, "loss", ev->loss);
	for (size_t i = 0; ok && i < ev->num_metrics; i++) {
		ok = cJSON_AddNumberToObject(
		         line, e->names[i], ev->metrics[i]) != NULL;
	}
	if (ok && ev->examples >= 0) {
		ok = cJSON_AddNumberToObject(
		         line, "examples", (double) ev->examples) != NULL;
	}
	text = ok ? cJSON_PrintUnformatted(line) : NULL;
	ok =
	    text != NULL && fprintf(out, "%s\n", text) > 0 && fflush(out) == 0;
	free(text);
	cJSON_Delete(line);
	return ok ? PASCO_OK
	          : fail(e, PASCO_EIO, "cannot write the JSON line of %s",
	                ev->checkpoint);
}

/* Eval scalars at the checkpoint's step: "loss" and each metric. */
static int
write_events(pasco_evaluator *e, const pasco_evaluation *ev)
{
	int rv;
	if (e->events == NULL) {
		return PASCO_OK;
	}
	rv = pasco_summary_scalar(e->events, "loss", ev->step, ev->loss);
	for (size_t i = 0; rv == 0 && i < ev->num_metrics; i++) {
		rv = pasco_summary_scalar(
		    e->events, e->names[i], ev->step, ev->metrics[i]);
	}
	if (rv == 0) {
		rv = pasco_summary_flush(e->events);
	}
	return rv == 0 ? PASCO_OK
	               : fail(e, rv, "cannot write eval scalars to %s: %s",
	                     pasco_summary_writer_path(e->events),
	                     pasco_summary_last_error());
}

static int
report(pasco_evaluator *e, const pasco_evaluation *ev)
{
	int rv;
	if ((rv = write_json(e, ev)) != 0 || (rv = write_events(e, ev)) != 0) {
		return rv;
	}
	e->last = ev->step;
	e->count++;
	if (e->opts.on_evaluated != NULL &&
	    (rv = e->opts.on_evaluated(e->opts.callback_arg, ev)) != 0) {
		return fail(e, rv,
		    "the callback stopped the evaluator after %s",
		    ev->checkpoint);
	}
	return PASCO_OK;
}

/* Runs the shards on the restored variables, reduces and reports. */
static int
evaluate(pasco_evaluator *e, const char *path, int64_t step,
    const pasco_arg *args, size_t nargs)
{
	int32_t          n       = e->opts.num_shards;
	pasco_value    **results = pasci_calloc((size_t) n, sizeof(*results));
	double           metrics[MAX_METRICS + 1];
	char             err[512] = "";
	pasco_evaluation ev       = {.checkpoint = path,
	          .step                          = step,
	          .metrics                       = metrics,
	          .num_metrics                   = e->opts.num_metrics};
	pasco_evaluator_reduce_fn reduce =
	    e->opts.reduce != NULL ? e->opts.reduce : reduce_sums;
	int rv;

	if (results == NULL) {
		return fail(e, PASCO_ENOMEM, "out of memory");
	}
	rv = pasco_schedule_shards(
	    e->coord, e->eval_fn, args, nargs, n, results);
	if (rv != 0) {
		fail(e, rv, "evaluating %s with %s: %s", path, e->eval_fn,
		    pasco_coordinator_error(e->coord));
	} else if ((rv = reduce(e->opts.reduce_arg, results, n, &ev.loss,
	                metrics, e->opts.num_metrics, &ev.examples, err,
	                sizeof(err))) != 0) {
		fail(e, rv, "reducing the results of %s: %s", path,
		    err[0] != 0 ? err : pasco_strerror(rv));
	}
	for (int32_t k = 0; k < n; k++) {
		pasco_value_free(results[k]);
	}
	free(results);
	return rv == 0 ? report(e, &ev) : rv;
}

/* Restores and evaluates checkpoint step; a checkpoint that cannot be
 * restored is skipped (PASCO_OK, nothing reported). */
static int
evaluate_step(
    pasco_evaluator *e, int64_t step, const pasco_arg *args, size_t nargs)
{
	char path[4096], manifest[4200];
	int  rv;

	pasci_fmt(
	    path, sizeof(path), "%s/ckpt-%lld", e->dir, (long long) step);
	pasci_fmt(manifest, sizeof(manifest), "%s/" MANIFEST, path);
	e->seen = step;
	if ((rv = pasco_checkpoint_restore(e->strategy, path, NULL)) != 0) {
		if (access(manifest, F_OK) != 0) {
			pasci_log(PASCI_LOG_WARN,
			    "checkpoint %s was removed before it could be "
			    "evaluated; skipped",
			    path);
		} else {
			pasci_log(PASCI_LOG_ERROR,
			    "checkpoint %s cannot be restored (%s); skipped",
			    path, pasco_strategy_error(e->strategy));
		}
		return PASCO_OK;
	}
	pasci_log(PASCI_LOG_INFO, "evaluating checkpoint %s", path);
	return evaluate(e, path, step, args, nargs);
}

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t) (ms / 1000),
	    .tv_nsec                  = (long) (ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

static int
timed_out(pasco_evaluator *e, bool dir_seen)
{
	char last[64] = "none";
	if (e->last >= 0) {
		pasci_fmt(
		    last, sizeof(last), "step %lld", (long long) e->last);
	}
	return fail(e, PASCO_ETIMEDOUT,
	    "no new checkpoint in %s for %lld ms%s (last evaluated: %s; "
	    "final step %lld): did the chief stop?",
	    e->dir, (long long) e->opts.timeout_ms,
	    dir_seen ? "" : " (the directory never appeared)", last,
	    (long long) e->opts.final_step);
}

/* The loop of run (evaluator.h); steps has room for MAX_PENDING. */
static int
watch(pasco_evaluator *e, int64_t *steps, const pasco_arg *args, size_t nargs)
{
	int64_t since    = pasci_now_ms();
	bool    dir_seen = false, said = false;

	for (;;) {
		int64_t newest;
		int     n = list_pending(e, steps, MAX_PENDING, &newest);
		if (n < 0 && !said) {
			pasci_log(PASCI_LOG_WARN,
			    "checkpoint directory %s does not exist yet; "
			    "waiting for the chief's first checkpoint",
			    e->dir);
			said = true;
		}
		dir_seen = dir_seen || n >= 0;
		if (e->opts.latest_only && n > 1) {
			steps[0] = newest;
			n        = 1;
		}
		for (int i = 0; i < n; i++) {
			int rv = evaluate_step(e, steps[i], args, nargs);
			since  = pasci_now_ms();
			if (rv != 0) {
				return rv;
			}
			if (e->opts.final_step > 0 && e->last == steps[i] &&
			    steps[i] >= e->opts.final_step) {
				pasci_log(PASCI_LOG_INFO,
				    "evaluated the final checkpoint (step "
				    "%lld); done",
				    (long long) steps[i]);
				return PASCO_OK;
			}
		}
		if (n > 0) {
			continue; /* more may have come meanwhile */
		}
		int64_t left =
		    e->opts.timeout_ms > 0
		        ? since + e->opts.timeout_ms - pasci_now_ms()
		        : e->opts.poll_interval_ms;
		if (left <= 0) {
			return timed_out(e, dir_seen);
		}
		sleep_ms(left < e->opts.poll_interval_ms
		             ? left
		             : e->opts.poll_interval_ms);
	}
}

int
pasco_evaluator_run(pasco_evaluator *e, const pasco_arg *args, size_t nargs)
{
	int64_t *steps = malloc(MAX_PENDING * sizeof(*steps));
	int      rv    = steps != NULL ? PASCO_OK : PASCO_ENOMEM;

	e->err[0] = 0;
	if (rv == 0) {
		rv = watch(e, steps, args, nargs);
	}
	free(steps);
	return rv != PASCO_ENOMEM || e->err[0] != 0
	           ? rv
	           : fail(e, rv, "out of memory");
}
