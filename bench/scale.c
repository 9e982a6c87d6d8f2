/*
 * Scaling benchmark (issue 13): how dispatch and training grow with the
 * number of workers, and what one closure and one small ps request cost in
 * CPU, so a regression shows on a machine with few cores.
 *
 * Scale, for N = 1, 2, 4, ... up to the workers of the launch (and that
 * count itself when it is not a power of two):
 *   - raw nng round trips per second from this (chief) process to N echo
 *     processes, 1 in flight to each (the baseline);
 *   - no-op closures per second with N workers, window 1 unbatched, and
 *     with the defaults (window 4, automatic batching);
 *   - training steps per second of bench/train's MLP and softmax models
 *     with N workers, parameters on ps 0;
 *   - the MLP with all workers and every variable split over 1, 2, 4 ...
 *     ps (up to the ps of the launch), with its ratio to 1 ps;
 *   - one ps answering small reads (64 bytes) from 1, 2, 4, 8 client
 *     threads, each with its own strategy (its own connection, as each
 *     worker has), against one echo process answering raw nng round
 *     trips on 8 contexts, a socket per client thread.
 * Each rate is printed with its efficiency, rate / (N x the 1-worker
 * rate), and the closures with their ratio to raw nng at the same N.
 *
 * Cost, CPU time per operation measured in this run:
 *   - the chief's CPU per closure (CLOCK_PROCESS_CPUTIME_ID around K no-op
 *     closures and their join; window 1 unbatched and defaults; with 1
 *     worker and with all of them, which must cost about the same: a
 *     dispatch path that does work per worker per closure shows here)
 *     against the chief's CPU per raw nng round trip to one echo process;
 *   - a worker's CPU per no-op closure, against the echo process's CPU per
 *     raw round trip (the worker is started here, as the ps below);
 *   - a ps's CPU per small request (pasco_variable_read of a 64-byte
 *     variable, from the chief) against an echo process's CPU per raw
 *     round trip of 64 bytes; both processes are this program, started
 *     here so their pids are known, and measured from outside
 *     (/proc/<pid>/stat utime + stime, clock ticks: K is chosen so the
 *     total is many ticks);
 *   - the raw nng client's CPU and context switches per round trip on a
 *     raw-mode req0 socket, the kind Pasco's RPC client uses, against the
 *     cooked req0 baseline: what nng 1.5.2's raw mode itself costs.
 * The ratios to raw nng are the figures to read: on a loaded 2-core machine
 * the absolute microseconds move, the ratios much less.
 *
 *     pasco launch --ps P --workers W -- build/bench/scale [--n N]
 *         [--steps S] [--cost K]
 *
 * N dispatch operations per figure (default 20000, best of 3), S training
 * steps per figure (default 1000, best of 2), K operations per cost figure
 * (default 30000).
 */
#include <pasco.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "dispatch.h"
#include "train.h"

#define MAX_SIZES 8

/* Context switches of this process so far, all threads (voluntary: a
 * thread slept; involuntary: it was preempted). */
static double
switches_self(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double) ru.ru_nvcsw + (double) ru.ru_nivcsw;
}

/* CPU seconds used by this process, all threads. */
static double
cpu_self(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static void
stop_process(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* The chief's CPU microseconds per no-op closure: k closures scheduled and
 * joined with the first `workers` workers (after a warm-up), or -1; and,
 * when worker_pid > 0, that worker process's (*worker_us). */
static double
closure_cost(const pasco_cluster *c, size_t workers, uint32_t window,
    uint32_t max_batch, long k, pid_t worker_pid, double *worker_us,
    double *switches)
{
	pasco_cluster            *sub = bench_sub_cluster(c, workers);
	pasco_strategy           *s   = NULL;
	pasco_coordinator        *coord;
	pasco_coordinator_options o = {
	    .window = window, .max_batch = max_batch};
	double cost = -1, start = 0, w0 = 0, sw0 = 0;

	if (sub == NULL || pasco_strategy_create(&s, sub, NULL) != 0 ||
	    pasco_coordinator_create(&coord, s, &o) != 0) {
		pasco_strategy_destroy(s);
		pasco_cluster_free(sub);
		return -1;
	}
	for (int pass = 0; pass < 2; pass++) { /* a warm-up, then k */
		long n = pass == 0 ? k / 10 : k;
		start  = cpu_self();
		sw0    = switches_self();
		w0     = worker_pid > 0 ? bench_cpu_of(worker_pid) : 0;
		for (long i = 0; i < n; i++) {
			if (pasco_schedule(coord, "noop", NULL, 0, NULL) !=
			    0) {
				goto out;
			}
		}
		if (pasco_join(coord) != 0) {
			goto out;
		}
	}
	cost = (cpu_self() - start) / (double) k * 1e6;
	if (switches != NULL) {
		*switches = (switches_self() - sw0) / (double) k;
	}
	if (worker_pid > 0) {
		*worker_us =
		    (bench_cpu_of(worker_pid) - w0) / (double) k * 1e6;
	}
out:
	pasco_coordinator_destroy(coord);
	pasco_strategy_destroy(s);
	pasco_cluster_free(sub);
	return cost;
}

/* CPU microseconds per raw round trip of 64 bytes to the echo process
 * `peer` at url: this process's (*self_us) and the peer's (*peer_us).
 * 0 or -1. */
static int
raw_cost(const char *url, pid_t peer, long k, double *self_us, double *peer_us,
    double *switches)
{
	nng_socket s;
	double     c0, p0, sw0;
	if (bench_raw_dial(url, &s) != 0) {
		return -1;
	}
	if (bench_round_trips(s, k / 10, 0, PAYLOAD - 8) != 0) {
		nng_close(s);
		return -1;
	}
	c0  = cpu_self();
	p0  = bench_cpu_of(peer);
	sw0 = switches_self();
	if (bench_round_trips(s, k, 0, PAYLOAD - 8) != 0 || p0 < 0) {
		nng_close(s);
		return -1;
	}
	*self_us  = (cpu_self() - c0) / (double) k * 1e6;
	*peer_us  = (bench_cpu_of(peer) - p0) / (double) k * 1e6;
	*switches = (switches_self() - sw0) / (double) k;
	nng_close(s);
	return 0;
}

/* The same round trips as raw_cost's on a raw-mode req0 socket (the
 * socket Pasco's RPC client uses, to have many calls in flight on one
 * connection; raw mode passes each message through nng's socket queues,
 * where cooked req0 hands it to the connection): this process's CPU
 * microseconds and context switches per round trip. 0 or -1. */
static int
raw_mode_cost(const char *url, long k, double *self_us, double *switches)
{
	nng_socket s;
	double     c0 = 0, sw0 = 0;
	int        rv = nng_req0_open_raw(&s);
	if (rv != 0 || nng_dial(s, url, NULL, 0) != 0) {
		if (rv == 0) {
			nng_close(s);
		}
		return -1;
	}
	for (int pass = 0; pass < 2 && rv == 0; pass++) { /* warm-up, then k */
		long n = pass == 0 ? k / 10 : k;
		c0     = cpu_self();
		sw0    = switches_self();
		for (long i = 0; i < n && rv == 0; i++) {
			nng_msg *m = bench_request(0, PAYLOAD - 8);
			if (m == NULL) {
				rv = -1;
				break;
			}
			nng_msg_header_append_u32(
			    m, (uint32_t) i | 0x80000000u);
			if ((rv = nng_sendmsg(s, m, 0)) != 0) {
				nng_msg_free(m);
			} else if ((rv = nng_recvmsg(s, &m, 0)) == 0) {
				nng_msg_free(m);
			}
		}
	}
	*self_us  = (cpu_self() - c0) / (double) k * 1e6;
	*switches = (switches_self() - sw0) / (double) k;
	nng_close(s);
	return rv == 0 ? 0 : -1;
}

/* CPU microseconds per small request to a ps started here: a read of a
 * 16-float variable from this process; the ps's (*ps_us) and this
 * process's (*self_us). 0 or -1. */
static int
ps_cost(const char *self, const pasco_cluster *launch, long k, double *self_us,
    double *ps_us)
{
	pasco_cluster  *cluster;
	pasco_strategy *s = NULL;
	pasco_variable *v = NULL;
	pasco_tensor   *value, *t;
	pid_t           ps = bench_start_ps(self, launch, &cluster);
	double          c0 = 0, p0 = -1;
	int             rv     = -1;
	int64_t         floats = 16;

	if (ps < 0) {
		return -1;
	}
	if (pasco_strategy_create(&s, cluster, NULL) != 0) {
		goto out;
	}
	if (pasco_tensor_alloc(&value, PASCO_F32, 1, &floats) != 0) {
		goto out;
	}
	memset(value->data, 0, 16 * sizeof(float));
	rv = pasco_variable_create(&v, s, "cost/v", value);
	pasco_tensor_release(value);
	for (long i = 0; rv == 0 && i < k / 10 + k; i++) {
		if (i == k / 10) { /* after the warm-up */
			c0 = cpu_self();
			p0 = bench_cpu_of(ps);
		}
		if ((rv = pasco_variable_read(v, &t)) == 0) {
			pasco_tensor_release(t);
		}
	}
	if (rv == 0 && p0 >= 0) {
		*self_us = (cpu_self() - c0) / (double) k * 1e6;
		*ps_us   = (bench_cpu_of(ps) - p0) / (double) k * 1e6;
	} else {
		rv = -1;
	}
out:
	pasco_variable_free(v);
	pasco_strategy_destroy(s);
	pasco_cluster_free(cluster);
	stop_process(ps);
	return rv;
}

/* CPU microseconds per no-op closure (window 1, unbatched) of a worker
 * process started here, into *worker_us, and the chief's, into
 * *self_us. 0 or -1. */
static int
worker_cost(const char *self, const pasco_cluster *launch, long k,
    double *self_us, double *worker_us)
{
	pasco_cluster *cluster;
	pid_t          worker =
	    bench_start_task(self, launch, PASCO_ROLE_WORKER, &cluster);
	if (worker < 0) {
		return -1;
	}
	*self_us = closure_cost(cluster, 1, 1, 1, k, worker, worker_us, NULL);
	pasco_cluster_free(cluster);
	stop_process(worker);
	return *self_us > 0 ? 0 : -1;
}

#define MAX_CLIENTS 8

typedef struct reader {
	pasco_variable *v;   /* Pasco: reads of v */
	nng_socket      raw; /* raw: round trips on its own socket */
	long            n;
	int             failed;
} reader;

static void *
reader_main(void *arg)
{
	reader *r = arg;
	for (long i = 0; r->v != NULL && i < r->n && !r->failed; i++) {
		pasco_tensor *t;
		r->failed = pasco_variable_read(r->v, &t) != 0;
		pasco_tensor_release(t);
	}
	if (r->v == NULL) {
		r->failed =
		    bench_round_trips(r->raw, r->n, 0, PAYLOAD - 8) != 0;
	}
	return NULL;
}

/* Small requests per second from `clients` threads of this process, each
 * n / clients of them: reads of vs[k] (a handle each, from a strategy
 * each: its own connection to the ps, as each worker has), or with vs NULL
 * raw round trips on socks[k] (a socket each). Best of DISPATCH_REPEATS;
 * -1 on failure. */
static double
many_readers(pasco_variable **vs, nng_socket *socks, int clients, long n)
{
	double best = 0;
	for (int r = 0; r < DISPATCH_REPEATS; r++) {
		pthread_t th[MAX_CLIENTS];
		reader    rd[MAX_CLIENTS];
		int       failed = 0;
		double    start  = bench_now();
		for (int k = 0; k < clients; k++) {
			rd[k] = (reader){vs ? vs[k] : NULL,
			    vs ? (nng_socket){0} : socks[k], n / clients, 0};
			pthread_create(&th[k], NULL, reader_main, &rd[k]);
		}
		for (int k = 0; k < clients; k++) {
			pthread_join(th[k], NULL);
			failed |= rd[k].failed;
		}
		if (failed) {
			return -1;
		}
		double rate =
		    (double) (n / clients * clients) / (bench_now() - start);
		best = rate > best ? rate : best;
	}
	return best;
}

/* One ps serving 1, 2, 4, 8 client threads of small reads (64 bytes),
 * each on its own connection, against one echo process answering on
 * BENCH_ECHO_THREADS contexts, with a socket per client thread. Prints the
 * rows; 0 or -1. */
static int
ps_clients(const char *self, const pasco_cluster *launch, long n)
{
	pasco_cluster  *cluster = NULL;
	pasco_strategy *s[MAX_CLIENTS];
	pasco_variable *v[MAX_CLIENTS];
	pasco_tensor   *value = NULL;
	nng_socket      socks[MAX_CLIENTS];
	char            url[64];
	int64_t         floats = 16;
	int             rv = -1, nsock = 0, nv = 0;
	pid_t           ps = bench_start_ps(self, launch, &cluster), echo;

	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", bench_free_port());
	echo = bench_start_raw_mt(self, url);
	if (ps < 0 || echo < 0 ||
	    pasco_tensor_alloc(&value, PASCO_F32, 1, &floats) != 0) {
		goto out;
	}
	memset(value->data, 0, 16 * sizeof(float));
	/* The same variable through each strategy: the first creates it,
	 * the others find it (same name and spec). */
	for (rv = 0; rv == 0 && nv < MAX_CLIENTS; nv++) {
		if ((rv = pasco_strategy_create(&s[nv], cluster, NULL)) != 0) {
			break;
		}
		if ((rv = pasco_variable_create(
		         &v[nv], s[nv], "clients/v", value)) != 0) {
			pasco_strategy_destroy(s[nv]);
			break;
		}
	}
	for (; rv == 0 && nsock < MAX_CLIENTS; nsock++) {
		rv = bench_raw_dial(url, &socks[nsock]);
	}
	for (int c = 1; rv == 0 && c <= MAX_CLIENTS; c *= 2) {
		double raw  = many_readers(NULL, socks, c, n);
		double ours = many_readers(v, NULL, c, n);
		char   what[96];
		if (raw <= 0 || ours <= 0) {
			rv = -1;
			break;
		}
		printf("%-40s %3d %12.0f %8s %8.2fx\n",
		    "ps small reads (64 B), 1 ps", c, ours, "", ours / raw);
		snprintf(what, sizeof(what),
		    "ps small reads, %d client thread%s, vs one echo process",
		    c, c > 1 ? "s" : "");
		bench_json("scale", what, ours, "ops/s", raw);
	}
out:
	pasco_tensor_release(value);
	for (int k = 0; k < nsock; k++) {
		nng_close(socks[k]);
	}
	for (int k = 0; k < nv; k++) { /* nv: the pairs made whole */
		pasco_variable_free(v[k]);
		pasco_strategy_destroy(s[k]);
	}
	pasco_cluster_free(cluster);
	stop_process(ps);
	stop_process(echo);
	return rv == 0 ? 0 : -1;
}

/* One line of the scale table and its JSON figures: rate with N workers,
 * its efficiency against one (one1, the 1-worker rate), and its ratio to
 * raw (0: none). */
static void
scale_row(const char *what, size_t n, double rate, double one1, double raw,
    const char *unit)
{
	char   label[160];
	double eff = rate / ((double) n * one1);
	printf("%-40s %3zu %12.0f %8.2f", what, n, rate, eff);
	if (raw > 0) {
		printf(" %8.2fx", rate / raw);
	}
	printf("\n");
	snprintf(label, sizeof(label), "%s, %zu worker%s", what, n,
	    n > 1 ? "s" : "");
	bench_json("scale", label, rate, unit, raw);
	if (n > 1) {
		snprintf(label, sizeof(label), "%s, %zu workers, efficiency",
		    what, n);
		bench_json("scale", label, eff, "x", 0);
	}
}

static void
cost_row(const char *what, double us, double raw_us, const char *raw_name)
{
	printf("%-52s %8.2f us  (raw nng %s %.2f us: %.2fx)\n", what, us,
	    raw_name, raw_us, us / raw_us);
	bench_json("scale", what, us, "us", raw_us);
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	long   n = 20000, steps = 1000, k = 30000;
	size_t nw = pasco_cluster_count(cluster, PASCO_ROLE_WORKER);
	size_t sizes[MAX_SIZES], nsizes = 0;
	char   urls[DISPATCH_MAX_PEERS][64];
	pid_t  echo[DISPATCH_MAX_PEERS] = {0};
	double raw[MAX_SIZES], w1[MAX_SIZES], wd[MAX_SIZES];
	double raw_self = 0, raw_peer = 0, ps_self = 0, ps_us = 0;
	double cl_w1 = 0, cl_wd = 0, cl_wn = 0, cl_wdn = 0;
	double wk_self = 0, wk_us = 0, sw_1 = 0, sw_n = 0, sw_dn = 0;
	double raw_sw = 0, rawmode_us = 0, rawmode_sw = 0;
	size_t nps    = pasco_cluster_count(cluster, PASCO_ROLE_PS);
	int    failed = 1;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--n") == 0) {
			n = atol(argv[i + 1]);
		} else if (strcmp(argv[i], "--steps") == 0) {
			steps = atol(argv[i + 1]);
		} else if (strcmp(argv[i], "--cost") == 0) {
			k = atol(argv[i + 1]);
		}
	}
	nw = nw > DISPATCH_MAX_PEERS ? DISPATCH_MAX_PEERS : nw;
	if (nw == 0 || n < 10 || steps < 1 || k < 10) {
		fprintf(stderr, "scale: needs a worker and positive counts\n");
		return 1;
	}
	for (size_t w = 1; w <= nw && nsizes < MAX_SIZES; w *= 2) {
		sizes[nsizes++] = w;
	}
	if (sizes[nsizes - 1] != nw && nsizes < MAX_SIZES) {
		sizes[nsizes++] = nw;
	}
	for (size_t p = 0; p < nw; p++) {
		snprintf(urls[p], sizeof(urls[p]), "tcp://127.0.0.1:%d",
		    bench_free_port());
		echo[p] = bench_start_raw(argv[0], urls[p]);
		if (echo[p] < 0) {
			goto out;
		}
	}
	printf(
	    "scale benchmark: %zu workers at most, %ld no-op operations "
	    "per dispatch figure (best of %d), %ld steps per training "
	    "figure (best of %d), %ld operations per cost figure; raw = nng "
	    "req/rep to as many echo processes as workers, 1 in flight to "
	    "each\n",
	    nw, n, DISPATCH_REPEATS, steps, TRAIN_REPEATS, k);
	for (size_t i = 0; i < nsizes; i++) {
		if ((raw[i] = raw_nng(urls, (int) sizes[i], n, 1)) <= 0) {
			fprintf(stderr, "scale: raw nng failed\n");
			goto out;
		}
	}
	if (raw_cost(urls[0], echo[0], k, &raw_self, &raw_peer, &raw_sw) !=
	        0 ||
	    raw_mode_cost(urls[0], k, &rawmode_us, &rawmode_sw) != 0) {
		fprintf(stderr, "scale: raw nng cost failed\n");
		goto out;
	}
	for (size_t p = 0; p < nw; p++) { /* idle, but out of the way */
		stop_process(echo[p]);
		echo[p] = 0;
	}
	for (size_t i = 0; i < nsizes; i++) {
		w1[i] = pasco_dispatch(cluster, sizes[i], 1, 1, 1, n);
		wd[i] = pasco_dispatch(cluster, sizes[i], 0, 0, 1, n);
		if (w1[i] <= 0 || wd[i] <= 0) {
			fprintf(stderr, "scale: dispatch with %zu failed\n",
			    sizes[i]);
			goto out;
		}
	}
	printf("%-40s %3s %12s %8s %9s\n", "what (per second)", "N", "rate",
	    "effic.", "vs raw");
	for (size_t i = 0; i < nsizes; i++) {
		scale_row("raw nng, 1 in flight to each peer", sizes[i],
		    raw[i], raw[0], 0, "ops/s");
	}
	for (size_t i = 0; i < nsizes; i++) {
		scale_row("closures, window 1, unbatched", sizes[i], w1[i],
		    w1[0], raw[i], "ops/s");
	}
	for (size_t i = 0; i < nsizes; i++) {
		scale_row("closures, defaults (batching)", sizes[i], wd[i],
		    wd[0], raw[i], "ops/s");
	}
	for (size_t m = 0; m < sizeof(MODELS) / sizeof(MODELS[0]); m++) {
		double one = 0;
		char   what[64];
		snprintf(what, sizeof(what), "%s steps, 1 ps", MODELS[m].name);
		for (size_t i = 0; i < nsizes; i++) {
			double rate =
			    distributed(cluster, &MODELS[m], sizes[i], steps);
			if (rate <= 0) {
				fprintf(stderr, "scale: %s with %zu failed\n",
				    MODELS[m].name, sizes[i]);
				goto out;
			}
			one = i == 0 ? rate : one;
			scale_row(what, sizes[i], rate, one, 0, "steps/s");
		}
	}

	/* the same model with every variable split over 1, 2, 4 ... ps,
	 * all workers */
	for (size_t ps = 1, i = 0; ps <= nps; ps *= 2, i++) {
		static double one_ps;
		char          what[96];
		double        rate = distributed_on(
		           cluster, &MODELS[0], ps, sizes[nsizes - 1], steps);
		if (rate <= 0) {
			fprintf(stderr, "scale: %s on %zu ps failed\n",
			    MODELS[0].name, ps);
			goto out;
		}
		one_ps = i == 0 ? rate : one_ps;
		snprintf(what, sizeof(what),
		    "MLP steps, %zu ps, split %zu ways", ps, ps);
		printf("%-40s %3zu %12.0f %8.2f (vs 1 ps)\n", what,
		    sizes[nsizes - 1], rate, rate / one_ps);
		snprintf(what, sizeof(what), "%s steps, %zu ps, %zu workers",
		    MODELS[0].name, ps, sizes[nsizes - 1]);
		bench_json("scale", what, rate, "steps/s", i ? one_ps : 0);
	}

	if (ps_clients(argv[0], cluster, n) != 0) {
		fprintf(stderr, "scale: the ps client measurement failed\n");
		goto out;
	}

	cl_w1  = closure_cost(cluster, 1, 1, 1, k, 0, NULL, &sw_1);
	cl_wd  = closure_cost(cluster, 1, 0, 0, k, 0, NULL, NULL);
	cl_wn  = closure_cost(cluster, nw, 1, 1, k, 0, NULL, &sw_n);
	cl_wdn = closure_cost(cluster, nw, 0, 0, k, 0, NULL, &sw_dn);
	if (cl_w1 <= 0 || cl_wd <= 0 || cl_wn <= 0 || cl_wdn <= 0 ||
	    worker_cost(argv[0], cluster, k, &wk_self, &wk_us) != 0 ||
	    ps_cost(argv[0], cluster, k, &ps_self, &ps_us) != 0) {
		fprintf(stderr, "scale: a cost measurement failed\n");
		goto out;
	}
	printf("CPU per operation (%ld each; raw = one echo process, 64 "
	       "bytes, 1 in flight):\n",
	    k);
	cost_row("chief CPU per closure, window 1, unbatched", cl_w1, raw_self,
	    "client per round trip");
	cost_row("chief CPU per closure, defaults (batching)", cl_wd, raw_self,
	    "client per round trip");
	{
		char what[96];
		snprintf(what, sizeof(what),
		    "chief CPU per closure, window 1, %zu workers", nw);
		cost_row(what, cl_wn, raw_self, "client per round trip");
		snprintf(what, sizeof(what),
		    "chief CPU per closure, defaults, %zu workers", nw);
		cost_row(what, cl_wdn, raw_self, "client per round trip");
	}
	printf("chief context switches per closure, window 1: %.2f with 1 "
	       "worker, %.2f with %zu; defaults with %zu: %.3f (raw nng: %.2f "
	       "per round trip)\n",
	    sw_1, sw_n, nw, nw, sw_dn, raw_sw);
	bench_json("scale",
	    "chief context switches per closure, window 1, 1 worker", sw_1,
	    "switches", raw_sw);
	{
		char what[96];
		snprintf(what, sizeof(what),
		    "chief context switches per closure, window 1, %zu "
		    "workers",
		    nw);
		bench_json("scale", what, sw_n, "switches", raw_sw);
	}
	printf("raw-mode req0 (Pasco's RPC socket) per round trip: %.2f us, "
	       "%.2f switches (cooked req0: %.2f us, %.2f switches: %.2fx)\n",
	    rawmode_us, rawmode_sw, raw_self, raw_sw, rawmode_us / raw_self);
	bench_json("scale", "raw nng client CPU per round trip, req0 raw mode",
	    rawmode_us, "us", raw_self);
	cost_row("worker CPU per closure, window 1, unbatched", wk_us,
	    raw_peer, "echo per round trip");
	cost_row("chief CPU per small ps request (64 B read)", ps_self,
	    raw_self, "client per round trip");
	cost_row("ps CPU per small request (64 B read)", ps_us, raw_peer,
	    "echo per round trip");
	failed = 0;
out:
	for (size_t p = 0; p < nw; p++) { /* leave no peer behind */
		stop_process(echo[p]);
	}
	return failed;
}

BENCH_MAIN(chief)
