/*
 * Test helpers: assertions that print the symbolic error, and an
 * in-process cluster (ps and worker servers on inproc:// addresses inside
 * the test process) for fast coordinator tests.
 */
#ifndef PASCO_TEST_HELPERS_H
#define PASCO_TEST_HELPERS_H

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pasco.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PASCO_PASS(expr)                                                      \
	do {                                                                  \
		int pasco_rv_ = (expr);                                       \
		cr_assert(pasco_rv_ == PASCO_OK, "%s failed: %s (%s)", #expr, \
		    pasco_errname(pasco_rv_), pasco_strerror(pasco_rv_));     \
	} while (0)

#define PASCO_FAIL(expr, want)                                                \
	do {                                                                  \
		int pasco_rv_ = (expr);                                       \
		cr_assert(pasco_rv_ == (want), "%s: got %s, want %s", #expr,  \
		    pasco_errname(pasco_rv_), pasco_errname(want));           \
	} while (0)

/* A model call (model.h) that must succeed, failing the test with the
 * model's last error otherwise. */
#define MODEL_PASS(expr)                                                      \
	do {                                                                  \
		int rv_ = (expr);                                             \
		cr_assert(rv_ == PASCO_OK, "%s: %s", #expr,                   \
		    pasco_model_last_error());                                \
	} while (0)

typedef struct test_cluster {
	pasco_cluster *cluster;
	pasco_server  *ps[8];
	pasco_server  *workers[8];
	int            nps, nworkers;
} test_cluster;

/* Builds a cluster of inproc addresses unique to this process and starts
 * its ps and worker servers. */
static inline void
test_cluster_start(test_cluster *tc, int nps, int nworkers)
{
	static int generation;
	char       json[4096];
	size_t     n;
	char       err[256];
	int        gen = generation++;

	n = (size_t) snprintf(json, sizeof(json),
	    "{\"cluster\":{\"chief\":"
	    "[\"inproc://chief-%d-%d\"],\"ps\":[",
	    (int) getpid(), gen);
	for (int i = 0; i < nps; i++) {
		n += (size_t) snprintf(json + n, sizeof(json) - n,
		    "%s\"inproc://ps%d-%d-%d\"", i ? "," : "", i,
		    (int) getpid(), gen);
	}
	n += (size_t) snprintf(json + n, sizeof(json) - n, "],\"worker\":[");
	for (int i = 0; i < nworkers; i++) {
		n += (size_t) snprintf(json + n, sizeof(json) - n,
		    "%s\"inproc://w%d-%d-%d\"", i ? "," : "", i,
		    (int) getpid(), gen);
	}
	snprintf(json + n, sizeof(json) - n, "]}}");
	PASCO_PASS(
	    pasco_cluster_parse_json(&tc->cluster, json, err, sizeof(err)));
	tc->nps      = nps;
	tc->nworkers = nworkers;
	for (int i = 0; i < nps; i++) {
		PASCO_PASS(pasco_server_start(
		    &tc->ps[i], tc->cluster, PASCO_ROLE_PS, i));
	}
	for (int i = 0; i < nworkers; i++) {
		PASCO_PASS(pasco_server_start(
		    &tc->workers[i], tc->cluster, PASCO_ROLE_WORKER, i));
	}
}

static inline void
test_cluster_stop(test_cluster *tc)
{
	for (int i = 0; i < tc->nworkers; i++) {
		pasco_server_stop(tc->workers[i]);
	}
	for (int i = 0; i < tc->nps; i++) {
		pasco_server_stop(tc->ps[i]);
	}
	pasco_cluster_free(tc->cluster);
}

/* A loopback port nobody listens on now (bound and released), below the
 * kernel's ephemeral range (32768 and up): a port the kernel hands to some
 * other socket meanwhile (a ps's bulk port is one) cannot take it before
 * the test's task binds it. */
static inline int
test_free_port(void)
{
	static unsigned seed;
	static int      given[64]; /* never the same port twice in a test */
	static int      ngiven;
	if (seed == 0) {
		seed =
		    (unsigned) getpid() * 2654435761u ^ (unsigned) time(NULL);
	}
	for (int tries = 0; tries < 200; tries++) {
		struct sockaddr_in a  = {.sin_family = AF_INET,
		     .sin_addr.s_addr                = htonl(INADDR_LOOPBACK)};
		int                fd = socket(AF_INET, SOCK_STREAM, 0), ok;
		seed                  = seed * 1103515245u + 12345u;
		a.sin_port = htons((uint16_t) (20000 + (seed >> 8) % 12000));
		cr_assert(fd >= 0);
		ok = bind(fd, (struct sockaddr *) &a, sizeof(a)) == 0;
		close(fd);
		for (int i = 0; ok && i < ngiven && i < 64; i++) {
			ok = given[i] != ntohs(a.sin_port);
		}
		if (ok) {
			given[ngiven++ % 64] = ntohs(a.sin_port);
			return ntohs(a.sin_port);
		}
	}
	cr_assert_fail("no free loopback port in 20000-31999");
	return -1;
}

static inline pasco_tensor *
test_scalar(pasco_dtype dtype, double v)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_scalar(&t, dtype, v));
	return t;
}

/* Seconds on the monotonic clock. */
static inline double
pasco_test_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* A scalar variable with value v, created through s. */
static inline pasco_variable *
test_scalar_var(pasco_strategy *s, const char *name, pasco_dtype dt, double v)
{
	pasco_variable *var;
	pasco_tensor   *t = test_scalar(dt, v);
	PASCO_PASS(pasco_variable_create(&var, s, name, t));
	pasco_tensor_release(t);
	return var;
}

/* Element 0 of v's value. */
static inline double
test_read_scalar(pasco_variable *v)
{
	pasco_tensor *t;
	double        x;
	PASCO_PASS(pasco_variable_read(v, &t));
	x = pasco_tensor_get(t, 0);
	pasco_tensor_release(t);
	return x;
}

/* This process's peak resident size (KB) since test_peak_kb_reset. */
static inline long
test_peak_kb(void)
{
	char  line[256];
	long  kb = -1;
	FILE *f  = fopen("/proc/self/status", "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmHWM:", 6) == 0) {
			kb = atol(line + 6);
		}
	}
	fclose(f);
	return kb;
}

/* Resets the peak resident size to the size now, which it returns. */
static inline long
test_peak_kb_reset(void)
{
	FILE *f = fopen("/proc/self/clear_refs", "w");
	cr_assert_not_null(f);
	fputs("5", f); /* 5: reset the peak resident size */
	fclose(f);
	return test_peak_kb();
}

/* Sends what this process writes to stderr (its log lines) to a temporary
 * file until test_stderr_take; returns the descriptor to give it. */
static inline int
test_stderr_capture(void)
{
	FILE *f     = tmpfile();
	int   saved = dup(STDERR_FILENO);
	cr_assert(f != NULL && saved >= 0);
	fflush(stderr);
	dup2(fileno(f), STDERR_FILENO);
	fclose(f); /* fd 2 keeps it open */
	return saved;
}

/* What was written to stderr since test_stderr_capture (free() it), and
 * stderr restored. */
static inline char *
test_stderr_take(int saved)
{
	long  n;
	char *text;
	fflush(stderr);
	n = lseek(STDERR_FILENO, 0, SEEK_END);
	cr_assert(n >= 0 && (text = calloc(1, (size_t) n + 1)) != NULL);
	cr_assert_eq(pread(STDERR_FILENO, text, (size_t) n, 0), n);
	dup2(saved, STDERR_FILENO);
	close(saved);
	fputs(text, stderr); /* still shown with the test's output */
	return text;
}

/* Whether what was written to stderr since test_stderr_capture comes to
 * hold needle within ms milliseconds (looked at every 20 ms). */
static inline bool
test_stderr_wait_for(const char *needle, int ms)
{
	static char text[1 << 16];
	for (int waited = 0;; waited += 20) {
		ssize_t n;
		fflush(stderr);
		n = pread(STDERR_FILENO, text, sizeof(text) - 1, 0);
		text[n > 0 ? n : 0] = 0;
		if (strstr(text, needle) != NULL) {
			return true;
		}
		if (waited >= ms) {
			return false;
		}
		usleep(20 * 1000);
	}
}

/* A barrier across the in-process workers of one test process: each of
 * the closures calling it is held (up to 10 s) until n calls in all have
 * arrived (n counts every call so far: the count is never reset), so with
 * a window of 1 the n closures of a round run one per worker. False when
 * the 10 s passed first. */
static inline bool
test_barrier_wait(int n)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t  cv = PTHREAD_COND_INITIALIZER;
	static int             in;
	struct timespec        ts;
	bool                   ok = true;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_lock(&mu);
	in++;
	pthread_cond_broadcast(&cv);
	while (in < n && ok) {
		ok = pthread_cond_timedwait(&cv, &mu, &ts) == 0;
	}
	pthread_mutex_unlock(&mu);
	return ok;
}

#endif
