/*
 * The process's metrics registry (metrics_registry.h) and its rendering
 * in Prometheus's text format 0.0.4. Any thread adds to the counters
 * (relaxed atomics: a scrape may see one counter a moment ahead of
 * another, never a torn value); the scrape thread renders. The sources
 * list (coordinators) is under mu, held while a scrape reads them.
 */
#include "metrics_registry.h"

#include <dirent.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define MAX_SOURCES 16

_Atomic uint64_t pasci_metric_values[PASCI_M_COUNT];
_Atomic uint64_t pasci_metric_family_values[PASCI_MF_COUNT][PASCI_MF_LABELS];

/* Upper bounds of the histograms' buckets, in seconds: 100 us to 10 s. */
static const double bounds[PASCI_MH_BUCKETS] = {0.0001, 0.00025, 0.0005, 0.001,
    0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

/* Each bucket counts the observations above the bound before it (not
 * cumulative: one add per observe); the +Inf bucket is the last. */
static struct {
	_Atomic uint64_t bucket[PASCI_MH_BUCKETS + 1];
	_Atomic uint64_t count;
	_Atomic uint64_t sum_ns;
} hists[PASCI_MH_COUNT];

static const struct {
	const char *name, *help;
} hist_meta[PASCI_MH_COUNT] = {
    [PASCI_MH_REQUEST]  = {"pasco_request_duration_seconds",
         "Round trip of a request this task sent to a ps or worker over a "
          "bulk connection (a worker's variable requests, the chief's "
          "closures)"},
    [PASCI_MH_HANDLING] = {"pasco_request_handling_seconds",
        "Time this task took to handle a request it served over a bulk "
        "connection, from its arrival to its reply sent"},
};

static const struct {
	const char *name, *help, *label;
} family_meta[PASCI_MF_COUNT] = {
    [PASCI_MF_REQUESTS] = {"pasco_requests_total",
        "Requests this task served, by method (a ps's VAR_MULTI counts "
        "once; its parts are in pasco_request_parts_total)",
        "method"},
    [PASCI_MF_PARTS]    = {"pasco_request_parts_total",
           "Parts of VAR_MULTI requests this ps served, by method", "method"},
};

static const char *(*_Atomic namers[PASCI_MF_COUNT])(int);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void                 *arg;
	pasci_metrics_read_fn read;
} sources[MAX_SOURCES];                     /* under mu */
static uint64_t retired[PASCI_MS_COUNTERS]; /* under mu */

void
pasci_metric_observe(pasci_metric_hist h, double seconds)
{
	int b = 0;
	while (b < PASCI_MH_BUCKETS && seconds > bounds[b]) {
		b++;
	}
	atomic_fetch_add_explicit(
	    &hists[h].bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hists[h].count, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&hists[h].sum_ns,
	    seconds > 0 ? (uint64_t) (seconds * 1e9) : 0,
	    memory_order_relaxed);
}

void
pasci_metric_observe_since(pasci_metric_hist h, int64_t start_ns)
{
	pasci_metric_observe(h, (double) (pasci_now_ns() - start_ns) * 1e-9);
}

void
pasci_metric_worker_back(void)
{
	_Atomic uint64_t *back =
	    &pasci_metric_values[PASCI_M_WORKER_RECOVERIES];
	uint64_t r = atomic_load(back);
	while (r < pasci_metric_get(PASCI_M_WORKER_LOSSES) &&
	       !atomic_compare_exchange_weak(back, &r, r + 1)) {
	}
}

uint64_t
pasci_metric_get(pasci_metric m)
{
	return atomic_load_explicit(
	    &pasci_metric_values[m], memory_order_relaxed);
}

void
pasci_metrics_set_namer(pasci_metric_family f, const char *(*name)(int) )
{
	atomic_store(&namers[f], name);
}

int
pasci_metrics_source_attach(void *arg, pasci_metrics_read_fn read)
{
	int rv = -1;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_SOURCES && rv != 0; i++) {
		if (sources[i].arg == NULL) {
			sources[i].arg  = arg;
			sources[i].read = read;
			rv              = 0;
		}
	}
	pthread_mutex_unlock(&mu);
	return rv;
}

void
pasci_metrics_source_detach(void *arg)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX_SOURCES; i++) {
		if (sources[i].arg == arg && arg != NULL) {
			uint64_t v[PASCI_MS_COUNT] = {0};
			sources[i].read(arg, v);
			for (int k = 0; k < PASCI_MS_COUNTERS; k++) {
				retired[k] += v[k];
			}
			sources[i].arg = NULL;
		}
	}
	pthread_mutex_unlock(&mu);
}

/* A growing text buffer; oom set once an allocation failed. */
typedef struct text {
	char  *s;
	size_t len, cap;
	bool   oom;
} text;

__attribute__((format(printf, 2, 3))) static void
put(text *t, const char *fmt, ...)
{
	va_list ap;
	int     n;
	if (t->oom) {
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t) n >= t->cap - t->len) {
		size_t cap = (t->cap + (size_t) n) * 2;
		char  *s   = realloc(t->s, cap);
		if (s == NULL) {
			t->oom = true;
			return;
		}
		t->s   = s;
		t->cap = cap;
		va_start(ap, fmt);
		n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
	}
	t->len += n > 0 ? (size_t) n : 0;
}

static void
head(text *t, const char *name, const char *type, const char *help)
{
	put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
render_scalars(text *t, const char *task)
{
#define PASCI_METRIC_RENDER(id, name, type, help)                             \
	head(t, name, type, help);                                            \
	put(t, "%s{task=\"%s\"} %lld\n", name, task,                          \
	    (long long) pasci_metric_get(PASCI_M_##id));
	PASCI_METRICS_SCALARS(PASCI_METRIC_RENDER)
#undef PASCI_METRIC_RENDER
}

static void
render_families(text *t, const char *task)
{
	for (int f = 0; f < PASCI_MF_COUNT; f++) {
		const char *(*name)(int) = atomic_load(&namers[f]);
		head(t, family_meta[f].name, "counter", family_meta[f].help);
		for (int k = 0; k < PASCI_MF_LABELS && name != NULL; k++) {
			uint64_t v = atomic_load_explicit(
			    &pasci_metric_family_values[f][k],
			    memory_order_relaxed);
			if (v > 0 && name(k) != NULL) {
				put(t, "%s{task=\"%s\",%s=\"%s\"} %llu\n",
				    family_meta[f].name, task,
				    family_meta[f].label, name(k),
				    (unsigned long long) v);
			}
		}
	}
}

static void
render_hists(text *t, const char *task)
{
	for (int h = 0; h < PASCI_MH_COUNT; h++) {
		const char *name = hist_meta[h].name;
		uint64_t    cum  = 0;
		head(t, name, "histogram", hist_meta[h].help);
		for (int b = 0; b <= PASCI_MH_BUCKETS; b++) {
			char le[32];
			cum += atomic_load_explicit(
			    &hists[h].bucket[b], memory_order_relaxed);
			if (b < PASCI_MH_BUCKETS) {
				pasci_fmt(le, sizeof(le), "%g", bounds[b]);
			}
			put(t, "%s_bucket{task=\"%s\",le=\"%s\"} %llu\n", name,
			    task, b < PASCI_MH_BUCKETS ? le : "+Inf",
			    (unsigned long long) cum);
		}
		/* the count is the +Inf bucket's, so the two always agree */
		put(t,
		    "%s_sum{task=\"%s\"} %.9f\n%s_count{task=\"%s\"} %llu\n",
		    name, task,
		    (double) atomic_load_explicit(
		        &hists[h].sum_ns, memory_order_relaxed) *
		        1e-9,
		    name, task, (unsigned long long) cum);
	}
}

static void
render_sources(text *t, const char *task)
{
	static const struct {
		const char *name, *type, *help;
	} meta[PASCI_MS_COUNT] = {
	    {"pasco_closures_scheduled_total", "counter",
	        "Closures accepted by pasco_schedule (chief)"},
	    {"pasco_closures_dispatched_total", "counter",
	        "Closures sent to a worker, each retry again (chief)"},
	    {"pasco_closures_completed_total", "counter",
	        "Closures that finished without an error (chief)"},
	    {"pasco_closures_failed_total", "counter",
	        "Closures that finished with an error (chief)"},
	    {"pasco_closures_retried_total", "counter",
	        "Closures put back after their worker failed or a ps they "
	        "used was recovered (chief)"},
	    {"pasco_closures_cancelled_total", "counter",
	        "Closures cancelled by an earlier error or a stop (chief)"},
	    {"pasco_closures_queued", "gauge",
	        "Closures waiting in the coordinator's queue (chief)"},
	    {"pasco_closures_in_flight", "gauge",
	        "Closures sent to workers and not yet finished (chief)"},
	};
	uint64_t sum[PASCI_MS_COUNT] = {0};
	pthread_mutex_lock(&mu);
	memcpy(sum, retired, sizeof(retired));
	for (int i = 0; i < MAX_SOURCES; i++) {
		uint64_t v[PASCI_MS_COUNT] = {0};
		if (sources[i].arg != NULL) {
			sources[i].read(sources[i].arg, v);
			for (int k = 0; k < PASCI_MS_COUNT; k++) {
				sum[k] += v[k];
			}
		}
	}
	pthread_mutex_unlock(&mu);
	for (int k = 0; k < PASCI_MS_COUNT; k++) {
		head(t, meta[k].name, meta[k].type, meta[k].help);
		put(t, "%s{task=\"%s\"} %llu\n", meta[k].name, task,
		    (unsigned long long) sum[k]);
	}
}

/* Open file descriptors: entries of /proc/self/fd (-1 if unreadable). */
static long
open_fds(void)
{
	DIR           *d = opendir("/proc/self/fd");
	struct dirent *e;
	long           n = 0;
	if (d == NULL) {
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		n += e->d_name[0] != '.';
	}
	closedir(d);
	return n - 1; /* the directory's own */
}

/* Linux's /proc/self/stat: CPU seconds, threads, sizes, start time. */
static void
render_process(text *t, const char *task)
{
	char               buf[1024], *p;
	unsigned long long ut = 0, st = 0, start = 0, vsize = 0;
	long               threads = 0, rss = 0;
	double             tick = (double) sysconf(_SC_CLK_TCK), btime = 0;
	FILE              *f = fopen("/proc/self/stat", "r");
	size_t n = f != NULL ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f != NULL) {
		fclose(f);
	}
	buf[n] = 0;
	/* after the command's name, which may hold spaces and parentheses */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2,
	        "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d "
	        "%*d "
	        "%*d %*d %ld %*d %llu %llu %ld",
	        &ut, &st, &threads, &start, &vsize, &rss) != 6) {
		return;
	}
	if ((f = fopen("/proc/stat", "r")) != NULL) {
		while (fgets(buf, sizeof(buf), f) != NULL &&
		       sscanf(buf, "btime %lf", &btime) != 1) {
		}
		fclose(f);
	}
	head(t, "process_cpu_seconds_total", "counter",
	    "User and system CPU time this process spent, in seconds");
	put(t, "process_cpu_seconds_total{task=\"%s\"} %.2f\n", task,
	    (double) (ut + st) / tick);
	head(t, "process_resident_memory_bytes", "gauge",
	    "Resident memory size in bytes");
	put(t, "process_resident_memory_bytes{task=\"%s\"} %lld\n", task,
	    (long long) rss * sysconf(_SC_PAGESIZE));
	head(t, "process_virtual_memory_bytes", "gauge",
	    "Virtual memory size in bytes");
	put(t, "process_virtual_memory_bytes{task=\"%s\"} %llu\n", task,
	    vsize);
	head(t, "process_threads", "gauge", "Threads of this process");
	put(t, "process_threads{task=\"%s\"} %ld\n", task, threads);
	head(t, "process_open_fds", "gauge", "Open file descriptors");
	put(t, "process_open_fds{task=\"%s\"} %ld\n", task, open_fds());
	head(t, "process_start_time_seconds", "gauge",
	    "Start time of the process since the Unix epoch, in seconds");
	put(t, "process_start_time_seconds{task=\"%s\"} %.2f\n", task,
	    btime + (double) start / tick);
}

char *
pasci_metrics_render(const char *task, size_t *len)
{
	text t = {.cap = 16384};
	if ((t.s = malloc(t.cap)) == NULL) {
		return NULL;
	}
	render_scalars(&t, task);
	render_sources(&t, task);
	render_families(&t, task);
	render_hists(&t, task);
	render_process(&t, task);
	if (t.oom) {
		free(t.s);
		return NULL;
	}
	*len = t.len;
	return t.s;
}
