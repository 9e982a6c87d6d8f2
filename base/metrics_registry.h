/*
 * The process's live metrics, for Prometheus (node/metrics_http.c serves
 * them; docs/metrics.md lists them). One registry per process, which is
 * one task: every series carries the label task="<role>:<index>".
 *
 * Counters and gauges are relaxed atomic adds where the event happens (a
 * hook is one line: pasci_metric_add(PASCI_M_STEPS, k)); a histogram's
 * observe is three adds. Nothing here takes a lock on those paths. Values
 * that already live elsewhere (a coordinator's closure counts) are read
 * at scrape time from sources the owner attaches and detaches.
 */
#ifndef PASCI_METRICS_REGISTRY_H
#define PASCI_METRICS_REGISTRY_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Counters (c) and gauges (g): id, name, type, help. */
#define PASCI_METRICS_SCALARS(X)                                              \
	X(STEPS, "pasco_steps_total", "counter",                              \
	    "Training steps completed by pasco_fit and model.fit (chief)")    \
	X(WORKER_CLOSURES, "pasco_worker_closures_total", "counter",          \
	    "Closures this worker ran (RUN requests, each batched one)")      \
	X(SENT_BYTES, "pasco_sent_bytes_total", "counter",                    \
	    "Bytes of requests and replies this task sent to other tasks")    \
	X(RECEIVED_BYTES, "pasco_received_bytes_total", "counter",            \
	    "Bytes of requests and replies this task received")               \
	X(PS_RECOVERIES, "pasco_ps_recoveries_total", "counter",              \
	    "Ps tasks restored from a checkpoint after they came back as "    \
	    "new processes (chief)")                                          \
	X(WORKER_LOSSES, "pasco_worker_losses_total", "counter",              \
	    "Times a worker became unavailable to the coordinator (chief)")   \
	X(WORKER_RECOVERIES, "pasco_worker_recoveries_total", "counter",      \
	    "Times a worker came back to the coordinator after it was "       \
	    "unavailable (chief)")                                            \
	X(DYN_ROWS, "pasco_dynamic_table_rows", "gauge",                      \
	    "Rows of dynamic embedding tables held by this ps")

typedef enum pasci_metric {
#define PASCI_METRIC_ENUM(id, name, type, help) PASCI_M_##id,
	PASCI_METRICS_SCALARS(PASCI_METRIC_ENUM)
#undef PASCI_METRIC_ENUM
	    PASCI_M_COUNT
} pasci_metric;

/* Counters with one label, indexed by a small number (a wire method). */
typedef enum pasci_metric_family {
	PASCI_MF_REQUESTS, /* requests served, by method */
	PASCI_MF_PARTS,    /* parts of VAR_MULTI requests served, by method */
	PASCI_MF_COUNT
} pasci_metric_family;
#define PASCI_MF_LABELS 64 /* label numbers 0..63; others are not counted */

/* Histograms of seconds. */
typedef enum pasci_metric_hist {
	PASCI_MH_REQUEST,  /* a request's round trip, sent by this task */
	PASCI_MH_HANDLING, /* a request's handling, served by this task */
	PASCI_MH_COUNT
} pasci_metric_hist;
#define PASCI_MH_BUCKETS 16 /* finite upper bounds, then +Inf */

extern _Atomic uint64_t pasci_metric_values[PASCI_M_COUNT];
extern _Atomic uint64_t
    pasci_metric_family_values[PASCI_MF_COUNT][PASCI_MF_LABELS];

/* Adds n to counter or gauge m. Thread-safe, lock-free. */
static inline void
pasci_metric_add(pasci_metric m, uint64_t n)
{
	atomic_fetch_add_explicit(
	    &pasci_metric_values[m], n, memory_order_relaxed);
}

/* Takes n from gauge m. Thread-safe, lock-free. */
static inline void
pasci_metric_sub(pasci_metric m, uint64_t n)
{
	atomic_fetch_sub_explicit(
	    &pasci_metric_values[m], n, memory_order_relaxed);
}

/* Counts one in family f at label number k (ignored out of range).
 * Thread-safe, lock-free. */
static inline void
pasci_metric_count(pasci_metric_family f, int k)
{
	if (k >= 0 && k < PASCI_MF_LABELS) {
		atomic_fetch_add_explicit(&pasci_metric_family_values[f][k], 1,
		    memory_order_relaxed);
	}
}

/* A worker came back to the coordinator: counts a recovery when more
 * workers were lost than came back so far (a worker's first connection
 * is not one). Thread-safe, lock-free. */
void pasci_metric_worker_back(void);

/* Observes in histogram h the time since start_ns (pasci_now_ns()).
 * Thread-safe, lock-free. */
void pasci_metric_observe_since(pasci_metric_hist h, int64_t start_ns);

/* Observes seconds in histogram h. Thread-safe, lock-free. */
void pasci_metric_observe(pasci_metric_hist h, double seconds);

/* The current value of counter or gauge m. Thread-safe. */
uint64_t pasci_metric_get(pasci_metric m);

/* Names the labels of family f: name(k) is label k's value, NULL for a
 * number with none (not rendered). Set before serving. Thread-safe. */
void pasci_metrics_set_namer(pasci_metric_family f, const char *(*name)(int) );

/* A source of closure counts (a coordinator), read at each scrape:
 * read(arg, v) fills v[PASCI_MS_*]. Detaching reads it one last time and
 * keeps its counters, so totals never go back. Thread-safe: read is
 * called under the registry's lock, so detach waits for a scrape. */
enum {
	PASCI_MS_SCHEDULED,
	PASCI_MS_DISPATCHED,
	PASCI_MS_COMPLETED,
	PASCI_MS_FAILED,
	PASCI_MS_RETRIED,
	PASCI_MS_CANCELLED,
	PASCI_MS_COUNTERS, /* the gauges follow */
	PASCI_MS_QUEUED = PASCI_MS_COUNTERS,
	PASCI_MS_IN_FLIGHT,
	PASCI_MS_COUNT
};
typedef void (*pasci_metrics_read_fn)(void *arg, uint64_t *v);
int  pasci_metrics_source_attach(void *arg, pasci_metrics_read_fn read);
void pasci_metrics_source_detach(void *arg);

/* The exposition text (Prometheus text format 0.0.4) of every series,
 * labelled task="<task>", with the process's own (RSS, CPU, threads):
 * a malloc'd string the caller frees, its length in *len; NULL when out
 * of memory. Thread-safe. */
char *pasci_metrics_render(const char *task, size_t *len);

#endif
