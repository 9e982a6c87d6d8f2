/*
 * Results benchmark: closures per second that each return a tensor of 4 KB
 * or 1 MB which the chief fetches (pasco_remote_value_fetch), with 1
 * worker and the default coordinator options, beside raw nng req/rep
 * between this process and a peer process answering each request with a
 * reply of the same size, 4 requests in flight (the default window), in
 * the same run.
 *
 *     pasco launch --ps 1 --workers 1 -- build/bench/results [--n N]
 *
 * Each figure is the best of 3 runs of N closures (default 4000 for 4 KB,
 * 1000 for 1 MB).
 */
#include <pasco.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "bench.h"

#define REPEATS 3
#define WINDOW 4

/* args: i64 bytes. Returns an f32 tensor of that many bytes. */
PASCO_FUNCTION(make_result)
{
	const pasco_tensor *n;
	pasco_tensor       *t;
	int64_t             count;
	int                 rv;
	if ((rv = pasco_call_tensor(call, 0, &n)) != 0) {
		return rv;
	}
	count = (int64_t) pasco_tensor_get(n, 0) / 4;
	if ((rv = pasco_tensor_alloc(&t, PASCO_F32, 1, &count)) != 0) {
		return rv;
	}
	((float *) t->data)[count - 1] = 1.0f;
	pasco_call_return(call, pasco_value_tensor(t));
	return PASCO_OK;
}

typedef struct raw_job {
	nng_socket s;
	uint32_t   size;
	long       n;
	int        failed;
} raw_job;

static void *
raw_loop(void *arg)
{
	raw_job *j = arg;
	j->failed  = bench_round_trips(j->s, j->n, j->size, 0) != 0;
	return NULL;
}

/* Raw replies of size bytes per second, WINDOW in flight. */
static double
raw_rate(nng_socket s, uint32_t size, long n)
{
	double best = 0;
	for (int r = 0; r < REPEATS; r++) {
		pthread_t th[WINDOW];
		raw_job   jobs[WINDOW];
		int       failed = 0;
		double    start  = bench_now();
		for (int k = 0; k < WINDOW; k++) {
			jobs[k] = (raw_job){s, size, n / WINDOW, 0};
			pthread_create(&th[k], NULL, raw_loop, &jobs[k]);
		}
		for (int k = 0; k < WINDOW; k++) {
			pthread_join(th[k], NULL);
			failed |= jobs[k].failed;
		}
		if (failed) {
			return -1;
		}
		double rate =
		    (double) (n / WINDOW * WINDOW) / (bench_now() - start);
		best = rate > best ? rate : best;
	}
	return best;
}

/* Closures returning size bytes, fetched, per second. */
static double
pasco_rate(pasco_coordinator *coord, uint32_t size, long n)
{
	pasco_remote_value **rv   = calloc((size_t) n, sizeof(*rv));
	pasco_tensor        *t    = NULL;
	double               best = 0;
	pasco_tensor_scalar(&t, PASCO_I64, size);
	pasco_arg a = pasco_arg_tensor(t);
	for (int r = 0; r < REPEATS && best >= 0; r++) {
		double start = bench_now();
		for (long i = 0; i < n; i++) {
			if (pasco_schedule(
			        coord, "make_result", &a, 1, &rv[i]) != 0) {
				best = -1;
				n    = i;
				break;
			}
		}
		for (long i = 0; i < n; i++) {
			const pasco_value *v;
			if (pasco_remote_value_fetch(rv[i], &v) != 0 ||
			    pasco_value_as_tensor(v)->nbytes != size) {
				best = -1;
			}
			pasco_remote_value_free(rv[i]);
		}
		double rate = (double) n / (bench_now() - start);
		best        = best < 0 ? -1 : rate > best ? rate : best;
	}
	pasco_tensor_release(t);
	free(rv);
	return best;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	static const uint32_t sizes[] = {4096, 1 << 20};
	long                  n       = 0;
	char                  url[64];
	nng_socket            raw;
	pasco_strategy       *s;
	pasco_coordinator    *coord;
	int                   failed = 0;
	pid_t                 peer;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--n") == 0) {
			n = atol(argv[i + 1]);
		}
	}
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", bench_free_port());
	peer = bench_start_raw(argv[0], url);
	if (bench_raw_dial(url, &raw) != 0 ||
	    pasco_strategy_create(&s, cluster, NULL) != 0 ||
	    pasco_coordinator_create(&coord, s, NULL) != 0) {
		fprintf(stderr, "results: cannot reach the raw peer or the "
		                "cluster\n");
		kill(peer, SIGKILL);
		return 1;
	}
	printf(
	    "results benchmark: closures returning a tensor, fetched, 1 "
	    "worker, default options; raw = nng replies of that size, %d in "
	    "flight\n",
	    WINDOW);
	printf("%-8s %14s %14s %8s %10s\n", "size", "raw /s", "closures /s",
	    "ratio", "MB/s");
	for (int k = 0; k < 2; k++) {
		long   count = n > 0 ? n : k == 0 ? 4000 : 1000;
		double base  = raw_rate(raw, sizes[k], count);
		double ours  = pasco_rate(coord, sizes[k], count);
		char   figure[64];
		if (base <= 0 || ours <= 0) {
			fprintf(stderr, "results: a measurement failed\n");
			failed = 1;
			break;
		}
		snprintf(figure, sizeof(figure),
		    "closures returning %s, fetched",
		    k == 0 ? "4 KB" : "1 MB");
		printf("%-8s %14.0f %14.0f %7.2fx %10.1f\n",
		    k == 0 ? "4 KB" : "1 MB", base, ours, ours / base,
		    ours * sizes[k] / 1e6);
		bench_json("results", figure, ours, "closures/s", base);
	}
	pasco_coordinator_destroy(coord);
	pasco_strategy_destroy(s);
	bench_raw_stop(raw, peer);
	return failed;
}

BENCH_MAIN(chief)
