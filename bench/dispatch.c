/*
 * Dispatch benchmark: no-op closures through schedule + join, per second,
 * with 1, 2, 4 and 8 workers (up to the launch's): window 1 and the default
 * window (4) with automatic batching off (one closure per message), the
 * defaults (window 4, closures batched when the window is full), and 16 calls
 * packed per closure (pasco_schedule_with, repeat), beside the baseline
 * measured in the same run: raw nng req/rep round trips per second from this
 * (chief) process to as many echo processes as workers, 1 request in flight to
 * each (synchronous) or 4 (pipelined), over loopback TCP. Each closure figure
 * also gives the chief's CPU time (every thread) and context switches per
 * closure: its completion and refill path should cost the same whatever the
 * worker count.
 *
 *     pasco launch --ps 1 --workers 4 -- build/bench/dispatch [--n N]
 *
 * Each figure is the best of 3 runs of N operations (default 20000).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pasco.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "dispatch.h"

#define WINDOW 4 /* the coordinator's default window */
#define PACK 16  /* calls per packed closure */

/* One row: a Pasco figure beside its raw baseline, and what the chief
 * spent per closure. */
static void
row(const char *what, double ours, double base, const char *base_name,
    const dispatch_cost *cost)
{
	char label[160];
	printf("%-46s %10.0f /s  %.2fx %s  chief %.1f us, %.1f switches "
	       "per closure\n",
	    what, ours, ours / base, base_name, cost->cpu_us, cost->switches);
	bench_json("dispatch", what, ours, "ops/s", base);
	snprintf(label, sizeof(label), "%s, chief CPU per closure", what);
	bench_json("dispatch", label, cost->cpu_us, "us", 0);
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	static const size_t sizes[] = {1, 2, 4, 8};
	long                n       = 20000;
	char          urls[8][64], what[96], sync_name[32], pipe_name[32];
	pid_t         echo[8];
	size_t        nw = pasco_cluster_count(cluster, PASCO_ROLE_WORKER);
	double        raw_sync[4], raw_pipe[4];
	dispatch_cost cost[4];

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--n") == 0) {
			n = atol(argv[i + 1]);
		}
	}
	nw = nw > 8 ? 8 : nw;
	for (size_t p = 0; p < nw; p++) {
		snprintf(urls[p], sizeof(urls[p]), "tcp://127.0.0.1:%d",
		    bench_free_port());
		echo[p] = bench_start_raw(argv[0], urls[p]);
	}
	usleep(200 * 1000);
	printf("dispatch benchmark: %ld no-op operations per figure, best of "
	       "%d, loopback TCP; raw = nng req/rep to as many echo "
	       "processes as workers\n",
	    n, DISPATCH_REPEATS);
	for (size_t k = 0; k < 4 && sizes[k] <= nw; k++) {
		raw_sync[k] = raw_nng(urls, (int) sizes[k], n, 1);
		raw_pipe[k] = raw_nng(urls, (int) sizes[k], n, WINDOW);
		if (raw_sync[k] <= 0 || raw_pipe[k] <= 0) {
			fprintf(stderr, "dispatch: raw nng failed\n");
			for (size_t p = 0; p < nw;
			     p++) { /* leave no peer behind */
				kill(echo[p], SIGTERM);
				waitpid(echo[p], NULL, 0);
			}
			return 1;
		}
		snprintf(what, sizeof(what),
		    "raw nng, %zu peer%s, 1 in flight each", sizes[k],
		    sizes[k] > 1 ? "s" : "");
		printf("%-46s %10.0f /s\n", what, raw_sync[k]);
		bench_json("dispatch", what, raw_sync[k], "ops/s", 0);
		snprintf(what, sizeof(what),
		    "raw nng, %zu peer%s, %d in flight each", sizes[k],
		    sizes[k] > 1 ? "s" : "", WINDOW);
		printf("%-46s %10.0f /s\n", what, raw_pipe[k]);
		bench_json("dispatch", what, raw_pipe[k], "ops/s", 0);
	}
	for (size_t p = 0; p < nw; p++) {
		kill(echo[p], SIGTERM);
		waitpid(echo[p], NULL, 0);
	}
	for (size_t k = 0; k < 4 && sizes[k] <= nw; k++) {
		size_t w = sizes[k];
		double w1 =
		    pasco_dispatch_costed(cluster, w, 1, 1, 1, n, &cost[0]);
		double w4 =
		    pasco_dispatch_costed(cluster, w, 0, 1, 1, n, &cost[1]);
		double wd =
		    pasco_dispatch_costed(cluster, w, 0, 0, 1, n, &cost[2]);
		double pk =
		    pasco_dispatch_costed(cluster, w, 0, 0, PACK, n, &cost[3]);
		if (w1 <= 0 || w4 <= 0 || wd <= 0 || pk <= 0) {
			fprintf(stderr, "dispatch: a measurement failed\n");
			return 1;
		}
		snprintf(sync_name, sizeof(sync_name), "raw 1 in flight");
		snprintf(
		    pipe_name, sizeof(pipe_name), "raw %d in flight", WINDOW);
		snprintf(what, sizeof(what),
		    "closures, %zu worker%s, window 1, unbatched", w,
		    w > 1 ? "s" : "");
		row(what, w1, raw_sync[k], sync_name, &cost[0]);
		snprintf(what, sizeof(what),
		    "closures, %zu worker%s, window %d, unbatched", w,
		    w > 1 ? "s" : "", WINDOW);
		row(what, w4, raw_pipe[k], pipe_name, &cost[1]);
		snprintf(what, sizeof(what),
		    "closures, %zu worker%s, defaults (batching)", w,
		    w > 1 ? "s" : "");
		row(what, wd, raw_pipe[k], pipe_name, &cost[2]);
		snprintf(what, sizeof(what),
		    "calls, %zu worker%s, window %d, packed %d", w,
		    w > 1 ? "s" : "", WINDOW, PACK);
		row(what, pk, raw_pipe[k], pipe_name, &cost[3]);
	}
	return 0;
}

BENCH_MAIN(chief)
