/*
 * Dispatch benchmark: no-op closures scheduled and joined, in closures per
 * second, with 1 and 2 workers, beside the baseline measured in the same
 * run between the same kinds of processes: raw nng request/reply round
 * trips per second from this (chief) process to an echo process, over
 * loopback TCP, with 1 and with 4 requests in flight.
 *
 *     pasco launch --ps 1 --workers 2 -- build/bench/dispatch [--n N]
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

#define PAYLOAD 64
#define REPEATS 3

PASCO_FUNCTION(noop)
{
	(void) call;
	return PASCO_OK;
}

/* The baseline's peer: a raw rep0 echo server, until SIGTERM. */
static int
echo_server(const char *url)
{
	nng_socket s;
	if (nng_rep0_open(&s) != 0 || nng_listen(s, url, NULL, 0) != 0) {
		fprintf(stderr, "echo: cannot listen on %s\n", url);
		return 1;
	}
	for (;;) {
		nng_msg *m;
		if (nng_recvmsg(s, &m, 0) == 0 && nng_sendmsg(s, m, 0) != 0) {
			nng_msg_free(m);
		}
	}
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
	nng_ctx  ctx;
	nng_aio *aio;
	char     buf[PAYLOAD] = {0};
	if (nng_ctx_open(&ctx, a->sock) != 0 ||
	    nng_aio_alloc(&aio, NULL, NULL) != 0) {
		a->failed = 1;
		return NULL;
	}
	for (long i = 0; i < a->n && !a->failed; i++) {
		nng_msg *m;
		nng_msg_alloc(&m, 0);
		nng_msg_append(m, buf, sizeof(buf));
		nng_aio_set_msg(aio, m);
		nng_ctx_send(ctx, aio);
		nng_aio_wait(aio);
		if (nng_aio_result(aio) != 0) {
			nng_msg_free(m);
			a->failed = 1;
			break;
		}
		nng_ctx_recv(ctx, aio);
		nng_aio_wait(aio);
		if (nng_aio_result(aio) != 0) {
			a->failed = 1;
			break;
		}
		nng_msg_free(nng_aio_get_msg(aio));
	}
	nng_aio_free(aio);
	nng_ctx_close(ctx);
	return NULL;
}

/* Raw nng round trips per second with `inflight` concurrent requests. */
static double
raw_nng(const char *url, long n, int inflight)
{
	nng_socket s;
	pthread_t  th[16];
	rtt_arg    args[16];
	double     best = 0;

	if (nng_req0_open(&s) != 0 || nng_dial(s, url, NULL, 0) != 0) {
		return -1;
	}
	for (int r = 0; r < REPEATS; r++) {
		double start = bench_now();
		for (int k = 0; k < inflight; k++) {
			args[k] = (rtt_arg){s, n / inflight, 0};
			pthread_create(&th[k], NULL, round_trips, &args[k]);
		}
		for (int k = 0; k < inflight; k++) {
			pthread_join(th[k], NULL);
		}
		double rate =
		    (double) (n / inflight * inflight) / (bench_now() - start);
		best = rate > best ? rate : best;
	}
	nng_close(s);
	return best;
}

/* No-op closures per second through schedule + join. */
static double
pasco_dispatch(const pasco_cluster *c, size_t workers, uint32_t window, long n)
{
	pasco_cluster            *sub = bench_sub_cluster(c, workers);
	pasco_strategy           *s;
	pasco_coordinator        *coord;
	pasco_coordinator_options o    = {.window = window};
	double                    best = 0;

	if (sub == NULL || pasco_strategy_create(&s, sub, NULL) != 0) {
		return -1;
	}
	pasco_coordinator_create(&coord, s, &o);
	for (int r = 0; r < REPEATS; r++) {
		double start = bench_now();
		for (long i = 0; i < n; i++) {
			if (pasco_schedule(coord, "noop", NULL, 0, NULL) !=
			    0) {
				return -1;
			}
		}
		if (pasco_join(coord) != 0) {
			return -1;
		}
		double rate = (double) n / (bench_now() - start);
		best        = rate > best ? rate : best;
	}
	pasco_coordinator_destroy(coord);
	pasco_strategy_destroy(s);
	pasco_cluster_free(sub);
	return best;
}

static pid_t
start_echo(const char *self, const char *url)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "--echo", url, (char *) NULL);
		_exit(127);
	}
	return pid;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	long   n = 20000;
	char   url[64];
	double raw1, raw4, p11, p14, p24;
	pid_t  echo;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--n") == 0) {
			n = atol(argv[i + 1]);
		}
	}
	if (pasco_cluster_count(cluster, PASCO_ROLE_WORKER) < 2) {
		fprintf(stderr,
		    "dispatch needs 2 workers: pasco launch --ps 1 "
		    "--workers 2 -- %s\n",
		    argv[0]);
		return 2;
	}
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", bench_free_port());
	echo = start_echo(argv[0], url);
	usleep(200 * 1000);
	raw1 = raw_nng(url, n, 1);
	raw4 = raw_nng(url, n, 4);
	kill(echo, SIGTERM);
	waitpid(echo, NULL, 0);
	p11 = pasco_dispatch(cluster, 1, 1, n);
	p14 = pasco_dispatch(cluster, 1, 4, n);
	p24 = pasco_dispatch(cluster, 2, 4, n);
	if (raw1 <= 0 || raw4 <= 0 || p11 <= 0 || p14 <= 0 || p24 <= 0) {
		fprintf(stderr, "dispatch: a measurement failed\n");
		return 1;
	}
	printf("dispatch benchmark: %ld no-op operations, best of %d, "
	       "loopback TCP\n",
	    n, REPEATS);
	printf("%-44s %10.0f /s\n", "raw nng req/rep, 1 in flight", raw1);
	printf("%-44s %10.0f /s\n", "raw nng req/rep, 4 in flight", raw4);
	printf("%-44s %10.0f /s  %.2fx raw (1 in flight)\n",
	    "pasco closures, 1 worker, window 1", p11, p11 / raw1);
	printf("%-44s %10.0f /s  %.2fx raw (4 in flight)\n",
	    "pasco closures, 1 worker, window 4", p14, p14 / raw4);
	printf("%-44s %10.0f /s  %.2fx raw (4 in flight)\n",
	    "pasco closures, 2 workers, window 4", p24, p24 / raw4);
	bench_json(
	    "dispatch", "raw nng req/rep, 1 in flight", raw1, "ops/s", 0);
	bench_json(
	    "dispatch", "raw nng req/rep, 4 in flight", raw4, "ops/s", 0);
	bench_json(
	    "dispatch", "closures, 1 worker, window 1", p11, "ops/s", raw1);
	bench_json(
	    "dispatch", "closures, 1 worker, window 4", p14, "ops/s", raw4);
	bench_json(
	    "dispatch", "closures, 2 workers, window 4", p24, "ops/s", raw4);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--echo") == 0) {
		return echo_server(argv[2]);
	}
	return pasco_main(argc, argv, chief);
}
