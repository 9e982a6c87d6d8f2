/*
 * Dispatch pieces shared by bench/dispatch and bench/scale: raw nng round
 * trips to echo processes (the baseline) and no-op closures through
 * schedule + join, each the best of DISPATCH_REPEATS runs. Include it from
 * one file of a program only (it registers the no-op function).
 */
#ifndef PASCO_BENCH_DISPATCH_H
#define PASCO_BENCH_DISPATCH_H

#include <pasco.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "bench.h"

#define PAYLOAD 64 /* bytes of each raw request */
#define DISPATCH_REPEATS 3
#define DISPATCH_MAX_PEERS 16

PASCO_FUNCTION(noop)
{
	(void) call;
	return PASCO_OK;
}

typedef struct rtt_arg {
	nng_socket sock;
	long       n;
	int        failed;
} rtt_arg;

static void *
round_trips(void *arg)
{
	rtt_arg *a = arg;
	a->failed  = bench_round_trips(a->sock, a->n, 0, PAYLOAD - 8) != 0;
	return NULL;
}

/* Raw nng round trips per second to npeers (at most DISPATCH_MAX_PEERS)
 * echo processes, with `inflight` requests in flight to each (a thread
 * each, npeers x inflight <= 64). -1 when a peer cannot be reached. */
static double
raw_nng(char urls[][64], int npeers, long n, int inflight)
{
	nng_socket s[DISPATCH_MAX_PEERS];
	pthread_t  th[64];
	rtt_arg    args[64];
	double     best    = 0;
	int        threads = npeers * inflight, failed = 0;
	long       per = n / threads;

	for (int p = 0; p < npeers; p++) {
		int rv = nng_req0_open(&s[p]);
		/* an echo peer just started may not listen yet: 10 s at most
		 */
		for (int t = 0; rv == 0; t++) {
			rv = nng_dial(s[p], urls[p], NULL, 0);
			if (rv != NNG_ECONNREFUSED || t == 200) {
				break;
			}
			usleep(50 * 1000);
			rv = 0;
		}
		if (rv != 0) {
			while (p >= 0) { /* close the sockets opened so far */
				nng_close(s[p--]);
			}
			return -1;
		}
	}
	for (int r = 0; r < DISPATCH_REPEATS; r++) {
		double start = bench_now();
		for (int k = 0; k < threads; k++) {
			args[k] = (rtt_arg){s[k % npeers], per, 0};
			pthread_create(&th[k], NULL, round_trips, &args[k]);
		}
		for (int k = 0; k < threads; k++) {
			pthread_join(th[k], NULL);
			failed |= args[k].failed;
		}
		double rate = (double) (per * threads) / (bench_now() - start);
		best        = rate > best ? rate : best;
	}
	for (int p = 0; p < npeers; p++) {
		nng_close(s[p]);
	}
	return failed ? -1 : best; /* a failed round trip is not a fast one */
}

/* What the chief (this process) spent per closure in the best run:
 * CPU time (user + system, every thread) and context switches. */
typedef struct dispatch_cost {
	double cpu_us, switches;
} dispatch_cost;

/* No-op closures per second through schedule + join; cost (NULL: not
 * wanted) gets the chief's cost per closure in the best run. */
static double
pasco_dispatch_costed(const pasco_cluster *c, size_t workers, uint32_t window,
    uint32_t max_batch, uint32_t repeat, long n, dispatch_cost *cost)
{
	pasco_schedule_options    so  = {.repeat = repeat};
	pasco_cluster            *sub = bench_sub_cluster(c, workers);
	pasco_strategy           *s;
	pasco_coordinator        *coord;
	pasco_coordinator_options o = {
	    .window = window, .max_batch = max_batch};
	double best = 0;

	if (sub == NULL || pasco_strategy_create(&s, sub, NULL) != 0) {
		return -1;
	}
	pasco_coordinator_create(&coord, s, &o);
	for (int r = 0; r < DISPATCH_REPEATS; r++) {
		struct rusage a, b;
		double        start = bench_now();
		long          done  = n / repeat * repeat;
		getrusage(RUSAGE_SELF, &a);
		for (long i = 0; i < n / repeat; i++) {
			if (pasco_schedule_with(
			        coord, "noop", NULL, 0, &so, NULL) != 0) {
				return -1;
			}
		}
		if (pasco_join(coord) != 0) {
			return -1;
		}
		double rate = (double) done / (bench_now() - start);
		getrusage(RUSAGE_SELF, &b);
		if (rate > best && cost != NULL) {
			double us =
			    (double) (b.ru_utime.tv_sec - a.ru_utime.tv_sec +
			              b.ru_stime.tv_sec - a.ru_stime.tv_sec) *
			        1e6 +
			    (double) (b.ru_utime.tv_usec - a.ru_utime.tv_usec +
			              b.ru_stime.tv_usec - a.ru_stime.tv_usec);
			cost->cpu_us   = us / (double) (n / repeat);
			cost->switches = (double) (b.ru_nvcsw - a.ru_nvcsw +
			                           b.ru_nivcsw - a.ru_nivcsw) /
			                 (double) (n / repeat);
		}
		best = rate > best ? rate : best;
	}
	pasco_coordinator_destroy(coord);
	pasco_strategy_destroy(s);
	pasco_cluster_free(sub);
	return best;
}

static inline double
pasco_dispatch(const pasco_cluster *c, size_t workers, uint32_t window,
    uint32_t max_batch, uint32_t repeat, long n)
{
	return pasco_dispatch_costed(
	    c, workers, window, max_batch, repeat, n, NULL);
}

#endif
