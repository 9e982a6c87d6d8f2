/*
 * Dense ps throughput: pulling a whole variable (pasco_variable_read) and
 * pushing a gradient to it (pasco_variable_apply_gradient, plain SGD
 * applied on the ps), in GB/s of tensor bytes, for 4 KB, 256 KB, 4 MB and
 * 64 MB variables, from 1 and 2 client threads of the chief, beside raw
 * nng request/reply moving the same bytes between the same processes
 * kinds in the same run (a reply of that size for pull, a request of that
 * size acknowledged empty for push). The ps is on this host, so Pasco's
 * calls take a local link (shared memory, docs/deploy.md "Ports"); each figure
 * is measured again over TCP (PASCO_BULK_LOCAL=0 in this process: what a
 * client on another host gets), in the same run.
 *
 *     pasco launch --ps 1 --workers 1 -- build/bench/ps_dense [--quick]
 *         [--only KB]
 *
 * Each figure is the best of 3 rounds moving about 256 MB, or of 4,000
 * operations where that is fewer (32 MB or 1,000, and no 64 MB size, with
 * --quick).
 */
#include <pasco.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "bench.h"

#define ROUNDS 3

typedef struct job {
	const char     *url; /* raw: the peer; NULL: pasco */
	nng_socket      sock;
	pasco_variable *v;
	size_t          size;
	long            iters;
	bool            push;
	int             failed;
} job;

static void *
raw_client(void *arg)
{
	job *j = arg;
	/* push: the payload, as a gradient; pull: ask for it */
	j->failed = bench_round_trips(j->sock, j->iters,
	                j->push ? 0 : (uint32_t) j->size,
	                j->push ? j->size - 8 : 0) != 0;
	return NULL;
}

static void *
pasco_client(void *arg)
{
	job            *j   = arg;
	pasco_optimizer sgd = pasco_sgd(1e-9, 0, false);
	pasco_tensor   *grad;
	int64_t         n = (int64_t) (j->size / sizeof(float));
	if (pasco_tensor_alloc(&grad, PASCO_F32, 1, &n) != 0) {
		j->failed = 1;
		return NULL;
	}
	for (long i = 0; i < j->iters && !j->failed; i++) {
		if (j->push) {
			j->failed = pasco_variable_apply_gradient(
			                j->v, &sgd, grad) != 0;
		} else {
			pasco_tensor *t;
			j->failed = pasco_variable_read(j->v, &t) != 0;
			pasco_tensor_release(t);
		}
	}
	pasco_tensor_release(grad);
	return NULL;
}

/* Best GB/s over ROUNDS of `clients` threads running j's loop, Pasco's
 * calls over TCP when tcp (its own pool of connections: bulk_client.c). */
static double
measure(job proto, int clients, void *(*fn)(void *), bool tcp)
{
	double best = 0;
	setenv("PASCO_BULK_LOCAL", tcp ? "0" : "1", 1);
	for (int r = 0; r < ROUNDS; r++) {
		pthread_t th[2];
		job       jobs[2];
		double    start  = bench_now();
		int       failed = 0;
		for (int k = 0; k < clients; k++) {
			jobs[k] = proto;
			pthread_create(&th[k], NULL, fn, &jobs[k]);
		}
		for (int k = 0; k < clients; k++) {
			pthread_join(th[k], NULL);
			failed |= jobs[k].failed;
		}
		if (failed) {
			best = -1;
			break;
		}
		double gbs = (double) proto.size * (double) proto.iters *
		             clients / (bench_now() - start) / 1e9;
		best = gbs > best ? gbs : best;
	}
	setenv("PASCO_BULK_LOCAL", "1", 1);
	return best;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	static const size_t sizes[] = {4096, 256 << 10, 4 << 20, 64 << 20};
	bool                quick   = false;
	char                url[64];
	pasco_strategy     *s;
	nng_socket          raw;
	int                 failed = 0;
	size_t              only = 0; /* --only KB: one size, for profiling */
	for (int i = 1; i < argc; i++) {
		quick |= strcmp(argv[i], "--quick") == 0;
		if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			only = (size_t) atol(argv[i + 1]) << 10;
		}
	}
	double budget = quick ? 32e6 : 256e6;
	size_t nsizes = quick ? 3 : 4;
	snprintf(url, sizeof(url), "tcp://127.0.0.1:%d", bench_free_port());
	pid_t peer = bench_start_raw(argv[0], url);
	if (bench_raw_dial(url, &raw) != 0 ||
	    pasco_strategy_create(&s, cluster, NULL) != 0) {
		fprintf(stderr,
		    "ps_dense: cannot reach the raw peer or the cluster\n");
		kill(peer, SIGKILL);
		return 1;
	}
	printf("ps dense benchmark: GB/s of tensor bytes, best of %d; raw nng "
	       "over loopback TCP, pasco over a local link (this host), and "
	       "over TCP\n",
	    ROUNDS);
	printf("%-8s %-5s %-8s %10s %10s %8s %10s %8s\n", "size", "op",
	    "clients", "raw nng", "pasco", "ratio", "pasco tcp", "ratio");
	for (size_t k = 0; k < nsizes; k++) {
		if (only != 0 && sizes[k] != only) {
			continue;
		}
		pasco_variable *v;
		pasco_tensor   *init;
		char            name[32];
		int64_t         n     = (int64_t) (sizes[k] / sizeof(float));
		long            iters = (long) (budget / (double) sizes[k]);
		long            cap   = quick ? 1000 : 4000; /* small sizes */
		iters = iters < 4 ? 4 : iters > cap ? cap : iters;
		snprintf(name, sizeof(name), "dense_%zu", sizes[k]);
		pasco_tensor_alloc(&init, PASCO_F32, 1, &n);
		if (pasco_variable_create(&v, s, name, init) != 0) {
			fprintf(
			    stderr, "ps_dense: %s\n", pasco_strategy_error(s));
			failed = 1;
			pasco_tensor_release(init);
			break;
		}
		pasco_tensor_release(init);
		for (int push = 0; push < 2; push++) {
			for (int clients = 1; clients <= 2; clients++) {
				job    j = {url, raw, v, sizes[k],
				       iters / clients, push, 0};
				double base =
				    measure(j, clients, raw_client, false);
				double ours =
				    measure(j, clients, pasco_client, false);
				double tcp =
				    measure(j, clients, pasco_client, true);
				char label[32], figure[96];
				if (base <= 0 || ours <= 0 || tcp <= 0) {
					fprintf(stderr,
					    "ps_dense: a measurement failed "
					    "(%s)\n",
					    pasco_variable_error(v));
					failed = 1;
					continue;
				}
				snprintf(label, sizeof(label), "%zuK",
				    sizes[k] >> 10);
				printf("%-8s %-5s %-8d %10.3f %10.3f %7.2fx "
				       "%10.3f %7.2fx\n",
				    label, push ? "push" : "pull", clients,
				    base, ours, ours / base, tcp, tcp / base);
				snprintf(figure, sizeof(figure),
				    "%s %s, %d client%s",
				    push ? "push" : "pull", label, clients,
				    clients > 1 ? "s" : "");
				bench_json(
				    "ps_dense", figure, ours, "GB/s", base);
				strcat(figure, ", over TCP");
				bench_json(
				    "ps_dense", figure, tcp, "GB/s", base);
			}
		}
		pasco_variable_free(v);
	}
	bench_raw_stop(raw, peer);
	pasco_strategy_destroy(s);
	return failed;
}

BENCH_MAIN(chief)
