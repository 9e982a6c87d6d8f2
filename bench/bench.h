/*
 * Helpers shared by the benchmarks: a clock, a free loopback port, a raw
 * nng peer in a child process (the baseline every figure is set against),
 * and the JSON line each figure is also printed as (bench/run collects
 * them into bench/results/latest.json).
 */
#ifndef PASCO_BENCH_H
#define PASCO_BENCH_H

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pasco.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* nbatch batches of batch ids in [0, rows): ranks drawn Zipf(s) by the
 * inverse CDF (an LCG from seed), rank r sent to a scattered id, as the
 * skewed ids of click and recommendation data. Each an i64 [batch]
 * tensor; the array and the tensors are the caller's. */
static inline pasco_tensor **
bench_zipf_batches(
    int64_t rows, double s, int nbatch, int64_t batch, uint64_t seed)
{
	double        *cdf = malloc(sizeof(double) * (size_t) rows), sum = 0;
	pasco_tensor **out = calloc((size_t) nbatch, sizeof(*out));
	for (int64_t r = 0; r < rows; r++) {
		sum += 1.0 / pow((double) (r + 1), s);
		cdf[r] = sum;
	}
	for (int b = 0; b < nbatch; b++) {
		pasco_tensor_alloc(&out[b], PASCO_I64, 1, &batch);
		for (int64_t i = 0; i < batch; i++) {
			seed =
			    seed * 6364136223846793005u + 1442695040888963407u;
			double u =
			    (double) (seed >> 11) / 9007199254740992.0 * sum;
			int64_t lo = 0, hi = rows - 1;
			while (lo < hi) {
				int64_t mid = (lo + hi) / 2;
				if (cdf[mid] < u) {
					lo = mid + 1;
				} else {
					hi = mid;
				}
			}
			((int64_t *) out[b]->data)[i] =
			    (int64_t) (((uint64_t) lo * 2654435761u) %
			               (uint64_t) rows);
		}
	}
	free(cdf);
	return out;
}

/* iters sparse operations on v, batch (offset + i) % nbatch of batches
 * each: gathers, or with grads Adagrad(0.01) applies of grads. 0, or -1 at
 * the first failure. */
static inline int
bench_sparse_ops(pasco_variable *v, pasco_tensor **batches, int nbatch,
    long offset, long iters, const pasco_tensor *grads)
{
	pasco_optimizer opt = pasco_adagrad(0.01);
	for (long i = 0; i < iters; i++) {
		pasco_tensor *b = batches[(offset + i) % nbatch], *out;
		int           rv;
		if (grads != NULL) {
			rv = pasco_variable_apply_gradient_sparse(
			    v, &opt, b, grads);
		} else {
			rv = pasco_variable_gather(v, b, &out);
			pasco_tensor_release(out);
		}
		if (rv != 0) {
			return -1;
		}
	}
	return 0;
}

/* Resident bytes of process pid, or -1. */
static inline double
bench_rss_bytes(pid_t pid)
{
	char  path[64];
	long  pages = -1, size;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/statm", (int) pid);
	if ((f = fopen(path, "r")) == NULL) {
		return -1;
	}
	if (fscanf(f, "%ld %ld", &size, &pages) != 2) {
		pages = -1;
	}
	fclose(f);
	return pages < 0 ? -1
	                 : (double) pages * (double) sysconf(_SC_PAGESIZE);
}

static inline double
bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* A loopback port nobody listens on now. */
static inline int
bench_free_port(void)
{
	struct sockaddr_in a = {
	    .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int       fd  = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *) &a, len) != 0 ||
	    getsockname(fd, (struct sockaddr *) &a, &len) != 0) {
		return -1;
	}
	close(fd);
	return ntohs(a.sin_port);
}

/* The raw peer: a rep0 server until killed. A request that starts with
 * the 8 bytes "SIZE" + a u32 n (and anything after) is answered with n
 * bytes; any other request over 4 KB with an empty reply; any other is
 * echoed. */
static inline int
bench_raw_server(const char *url)
{
	nng_socket s;
	if (nng_rep0_open(&s) != 0 ||
	    nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, 0) != 0 ||
	    nng_listen(s, url, NULL, 0) != 0) {
		fprintf(stderr, "raw peer: cannot listen on %s\n", url);
		return 1;
	}
	for (;;) {
		nng_msg *m, *r = NULL;
		uint32_t n;
		if (nng_recvmsg(s, &m, 0) != 0) {
			continue;
		}
		if (nng_msg_len(m) >= 8 &&
		    memcmp(nng_msg_body(m), "SIZE", 4) == 0) {
			memcpy(&n, (char *) nng_msg_body(m) + 4, 4);
			if (nng_msg_alloc(&r, n) == 0) {
				nng_msg_free(m);
				m = r;
			}
		} else if (nng_msg_len(m) >
		           4096) { /* a push: acknowledged empty */
			nng_msg_clear(m);
		}
		if (nng_sendmsg(s, m, 0) != 0) {
			nng_msg_free(m);
		}
	}
}

/* One thread of bench_raw_server_mt: answers requests on its own context,
 * as bench_raw_server does. */
static void *
bench_raw_echo_thread(void *arg)
{
	nng_socket s = *(nng_socket *) arg;
	nng_ctx    ctx;
	nng_aio   *aio;
	if (nng_ctx_open(&ctx, s) != 0 || nng_aio_alloc(&aio, NULL, NULL)) {
		return NULL;
	}
	for (;;) {
		nng_msg *m, *r;
		uint32_t n;
		nng_ctx_recv(ctx, aio);
		nng_aio_wait(aio);
		if (nng_aio_result(aio) != 0) {
			continue;
		}
		m = nng_aio_get_msg(aio);
		if (nng_msg_len(m) >= 8 &&
		    memcmp(nng_msg_body(m), "SIZE", 4) == 0) {
			memcpy(&n, (char *) nng_msg_body(m) + 4, 4);
			if (nng_msg_alloc(&r, n) == 0) {
				nng_msg_free(m);
				m = r;
			}
		} else if (nng_msg_len(m) > 4096) {
			nng_msg_clear(m);
		}
		nng_aio_set_msg(aio, m);
		nng_ctx_send(ctx, aio);
		nng_aio_wait(aio);
		if (nng_aio_result(aio) != 0) {
			nng_msg_free(m);
		}
	}
	return NULL;
}

/* The raw peer with BENCH_ECHO_THREADS threads, each answering on its own
 * context: what one echo process can do for many clients at once (the
 * baseline of a ps serving many). Never returns. */
#define BENCH_ECHO_THREADS 8
static inline int
bench_raw_server_mt(const char *url)
{
	static nng_socket s;
	pthread_t         th;
	if (nng_rep0_open(&s) != 0 ||
	    nng_socket_set_size(s, NNG_OPT_RECVMAXSZ, 0) != 0 ||
	    nng_listen(s, url, NULL, 0) != 0) {
		fprintf(stderr, "raw peer: cannot listen on %s\n", url);
		return 1;
	}
	for (int i = 1; i < BENCH_ECHO_THREADS; i++) {
		pthread_create(&th, NULL, bench_raw_echo_thread, &s);
	}
	bench_raw_echo_thread(&s);
	return 1;
}

/* bench_start_raw for the many-threaded peer (`self --raw-mt URL`). */
static inline pid_t
bench_start_raw_mt(const char *self, const char *url)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "--raw-mt", url, (char *) NULL);
		_exit(127);
	}
	return pid;
}

/* Starts this program as the raw peer in a child process: `self --raw URL`,
 * which each benchmark's main hands to bench_raw_server. */
static inline pid_t
bench_start_raw(const char *self, const char *url)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl(self, self, "--raw", url, (char *) NULL);
		_exit(127);
	}
	return pid;
}

/* A req0 socket dialing the raw peer at url in the background (it may not
 * be listening yet), with no receive size limit. 0 or -1. */
static inline int
bench_raw_dial(const char *url, nng_socket *s)
{
	return nng_req0_open(s) == 0 &&
	               nng_socket_set_size(*s, NNG_OPT_RECVMAXSZ, 0) == 0 &&
	               nng_socket_set_ms(*s, NNG_OPT_RECONNMINT, 10) == 0 &&
	               nng_dial(*s, url, NULL, NNG_FLAG_NONBLOCK) == 0
	           ? 0
	           : -1;
}

/* A request for the raw peer of 8 + extra bytes: "SIZE" + n when n > 0
 * (answered with n bytes), else zeros (echoed, or answered empty when
 * over 4 KB). */
static inline nng_msg *
bench_request(uint32_t n, size_t extra)
{
	nng_msg *m;
	if (nng_msg_alloc(&m, 8 + extra) != 0) {
		return NULL;
	}
	memset(nng_msg_body(m), 0, 8);
	if (n > 0) {
		memcpy(nng_msg_body(m), "SIZE", 4);
		memcpy((char *) nng_msg_body(m) + 4, &n, 4);
	}
	return m;
}

/* One round trip on ctx: sends req (taken over), waits for the reply and
 * frees it. 0, or -1 on a failure. */
static inline int
bench_round_trip(nng_ctx ctx, nng_aio *aio, nng_msg *req)
{
	if (req == NULL) {
		return -1;
	}
	nng_aio_set_msg(aio, req);
	nng_ctx_send(ctx, aio);
	nng_aio_wait(aio);
	if (nng_aio_result(aio) != 0) {
		nng_msg_free(req);
		return -1;
	}
	nng_ctx_recv(ctx, aio);
	nng_aio_wait(aio);
	if (nng_aio_result(aio) != 0) {
		return -1;
	}
	nng_msg_free(nng_aio_get_msg(aio));
	return 0;
}

/* n round trips on a context of s, each asking the raw peer for `reply`
 * bytes back (0: none or an echo) with `extra` bytes of payload. 0, or -1
 * on a failure. */
static inline int
bench_round_trips(nng_socket s, long n, uint32_t reply, size_t extra)
{
	nng_ctx  ctx;
	nng_aio *aio;
	int      rv = 0;
	if (nng_ctx_open(&ctx, s) != 0) {
		return -1;
	}
	if (nng_aio_alloc(&aio, NULL, NULL) != 0) {
		nng_ctx_close(ctx);
		return -1;
	}
	for (long i = 0; i < n && rv == 0; i++) {
		rv = bench_round_trip(ctx, aio, bench_request(reply, extra));
	}
	nng_aio_free(aio);
	nng_ctx_close(ctx);
	return rv;
}

/* Closes the socket to the raw peer and stops the peer. */
static inline void
bench_raw_stop(nng_socket s, pid_t peer)
{
	nng_close(s);
	kill(peer, SIGKILL);
	waitpid(peer, NULL, 0);
}

/* main() of a benchmark whose raw peer is this program run with
 * `--raw URL` (bench_start_raw); otherwise a Pasco role. */
#define BENCH_MAIN(chief)                                                     \
	int main(int argc, char **argv)                                       \
	{                                                                     \
		if (argc == 3 && strcmp(argv[1], "--raw") == 0) {             \
			return bench_raw_server(argv[2]);                     \
		}                                                             \
		if (argc == 3 && strcmp(argv[1], "--raw-mt") == 0) {          \
			return bench_raw_server_mt(argv[2]);                  \
		}                                                             \
		return pasco_main(argc, argv, chief);                         \
	}

/* A cluster of the first `ps` ps tasks and the first `workers` workers of
 * c, so one launch measures 1, 2 and 4 workers (or ps). NULL on failure. */
static inline pasco_cluster *
bench_sub_cluster_ps(const pasco_cluster *c, size_t ps, size_t workers)
{
	char           json[4096], err[256];
	size_t         n;
	pasco_cluster *out;
	n = (size_t) snprintf(json, sizeof(json), "{\"cluster\": {\"ps\": [");
	for (size_t i = 0; i < ps; i++) {
		n += (size_t) snprintf(json + n, sizeof(json) - n, "%s\"%s\"",
		    i ? ", " : "", pasco_cluster_url(c, PASCO_ROLE_PS, i));
	}
	n += (size_t) snprintf(json + n, sizeof(json) - n, "], \"worker\": [");
	for (size_t i = 0; i < workers; i++) {
		n += (size_t) snprintf(json + n, sizeof(json) - n, "%s\"%s\"",
		    i ? ", " : "", pasco_cluster_url(c, PASCO_ROLE_WORKER, i));
	}
	snprintf(json + n, sizeof(json) - n, "]}}");
	return pasco_cluster_parse_json(&out, json, err, sizeof(err)) == 0
	           ? out
	           : NULL;
}

/* The first `workers` workers of c, with every ps of c. */
static inline pasco_cluster *
bench_sub_cluster(const pasco_cluster *c, size_t workers)
{
	return bench_sub_cluster_ps(
	    c, pasco_cluster_count(c, PASCO_ROLE_PS), workers);
}

/* CPU seconds (user + system, all threads) used by process pid, or -1. */
static inline double
bench_cpu_of(pid_t pid)
{
	char               path[64], buf[1024], *p;
	unsigned long long utime, stime;
	size_t             n;
	FILE              *f;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
	if ((f = fopen(path, "r")) == NULL) {
		return -1;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* fields after the command name, which may hold spaces: state is
	 * field 3, utime 14, stime 15 */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 2,
	        "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
	        &utime, &stime) != 2) {
		return -1;
	}
	return (double) (utime + stime) / (double) sysconf(_SC_CLK_TCK);
}

/* One JSON line per figure: value in unit, beside baseline (same unit,
 * same run) when there is one. */
static inline void
bench_json(const char *bench, const char *figure, double value,
    const char *unit, double baseline)
{
	printf("{\"bench\": \"%s\", \"figure\": \"%s\", \"value\": %.6g, "
	       "\"unit\": \"%s\"",
	    bench, figure, value, unit);
	if (baseline > 0) {
		printf(", \"baseline\": %.6g, \"ratio\": %.4f", baseline,
		    value / baseline);
	}
	printf("}\n");
}

/* Starts self (a benchmark's own binary) as the only task of `role` (ps or
 * worker) of a cluster whose other role is the launch's first task (its
 * ps 0 or worker 0), so the benchmark can measure that process from
 * outside (its CPU, its resident memory); *cluster gets that cluster.
 * The pid, or -1 with the reason on stderr. */
static inline pid_t
bench_start_task(const char *self, const pasco_cluster *launch,
    pasco_role role, pasco_cluster **cluster)
{
	char        json[512], env[600], err[256], own[64];
	bool        ps    = role == PASCO_ROLE_PS;
	const char *other = pasco_cluster_url(
	    launch, ps ? PASCO_ROLE_WORKER : PASCO_ROLE_PS, 0);
	pid_t pid;
	snprintf(own, sizeof(own), "127.0.0.1:%d", bench_free_port());
	other += strncmp(other, "tcp://", 6) == 0 ? 6 : 0;
	snprintf(json, sizeof(json),
	    "{\"cluster\": {\"ps\": [\"%s\"], \"worker\": [\"%s\"]}",
	    ps ? own : other, ps ? other : own);
	if (pasco_cluster_parse_json(
	        cluster, strcat(json, "}"), err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: %s\n", self, err);
		return -1;
	}
	json[strlen(json) - 1] = 0;
	snprintf(env, sizeof(env),
	    "%s, \"task\": {\"type\": \"%s\", \"index\": 0}}", json,
	    ps ? "ps" : "worker");
	if ((pid = fork()) == 0) {
		setenv("TF_CONFIG", env, 1);
		execl(self, self, (char *) NULL);
		_exit(127);
	}
	if (pid < 0) {
		pasco_cluster_free(*cluster);
		*cluster = NULL;
	}
	return pid;
}

/* bench_start_task for the ps. */
static inline pid_t
bench_start_ps(
    const char *self, const pasco_cluster *launch, pasco_cluster **cluster)
{
	return bench_start_task(self, launch, PASCO_ROLE_PS, cluster);
}

#endif
