/*
 * Running a role: pasco_main (the same binary as chief, worker or ps) and
 * pasco_server_start (a ps or worker server inside this process). Part of
 * the library, above the roles: it is the one place that knows them all.
 */
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "address.h"
#include "key.h"
#include "lifecycle.h"
#include "metrics_http.h"
#include "pasco/server.h"
#include "ps_server.h"
#include "registry.h"
#include "threads.h"
#include "tls.h"
#include "util.h"
#include "worker_server.h"

/* malloc heaps of a task process at most (below) */
#define PASCI_MALLOC_ARENAS 8

struct pasco_server {
	pasco_role     role;
	ps_server     *ps;
	worker_server *worker;
};

int
pasco_server_start(pasco_server **out, const pasco_cluster *cluster,
    pasco_role role, int32_t index)
{
	pasco_server    *s;
	const char      *url;
	const pasci_key *key;
	char             listen[320], err[256];
	int              rv, handlers;

	*out = NULL;
	if ((role != PASCO_ROLE_PS && role != PASCO_ROLE_WORKER) ||
	    index < 0 ||
	    (size_t) index >= pasco_cluster_count(cluster, role)) {
		return PASCO_EINVAL;
	}
	if (pasci_cluster_key(&key, NULL, 0) != 0) {
		return PASCO_EINVAL; /* the key file is unusable: logged */
	}
	url = pasco_cluster_url(cluster, role, (size_t) index);
	if (!pasci_tls_url(url)) { /* mutual TLS: only the CA's own connect */
		pasci_cluster_key_warn_if_open();
	}
	if (pasci_listen_url(url, listen, sizeof(listen)) != 0) {
		pasci_log(PASCI_LOG_ERROR, "%s %d: cannot listen at %s",
		    pasco_role_name(role), index, url);
		return PASCO_EINVAL;
	}
	if ((handlers = pasci_threads_handlers(role, err, sizeof(err))) < 0) {
		pasci_log(PASCI_LOG_ERROR, "%s %d: %s", pasco_role_name(role),
		    index, err);
		return PASCO_EINVAL;
	}
	if ((s = pasci_calloc(1, sizeof(*s))) == NULL) {
		return PASCO_ENOMEM;
	}
	if (pasci_log_task()[0] == 0) { /* pasco_main names it first */
		char task[32];
		pasci_log_set_task(pasci_fmt(task, sizeof(task), "%s %d",
		    pasco_role_name(role), index));
	}
	s->role = role;
	rv      = role == PASCO_ROLE_PS
	              ? pasci_ps_server_start(&s->ps, listen, handlers, key)
	              : pasci_worker_server_start(
	                    &s->worker, cluster, index, listen, handlers, key);
	if (rv != 0) {
		free(s);
		return rv;
	}
	*out = s;
	return PASCO_OK;
}

uint64_t
pasco_server_incarnation(const pasco_server *s)
{
	return s->role == PASCO_ROLE_PS
	           ? pasci_ps_server_incarnation(s->ps)
	           : pasci_worker_server_incarnation(s->worker);
}

void
pasco_server_stop(pasco_server *s)
{
	if (s != NULL) {
		pasci_ps_server_stop(s->ps);
		pasci_worker_server_stop(s->worker);
		free(s);
	}
}

/* Serves until SIGINT or SIGTERM, the chief's SHUTDOWN, or the chief
 * timeout (lifecycle.h); returns the exit status pasci_serve_until_done
 * chose (0 only when the chief was done). */
static int
serve(const pasco_cluster *cluster, pasco_role role, int32_t index,
    int64_t chief_timeout_s)
{
	pasco_server *server;
	sigset_t      set;
	char          task[32];
	int           rv;

	/* Block the signals before any thread starts, so they all inherit the
	 * mask and only sigwait below receives them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if ((rv = pasco_server_start(&server, cluster, role, index)) != 0) {
		fprintf(stderr, "pasco: cannot start %s %d at %s: %s\n",
		    pasco_role_name(role), index,
		    pasco_cluster_url(cluster, role, (size_t) index),
		    pasco_strerror(rv));
		return 1;
	}
	pasci_log(PASCI_LOG_INFO, "%s %d serving at %s (incarnation %016llx)",
	    pasco_role_name(role), index,
	    pasco_cluster_url(cluster, role, (size_t) index),
	    (unsigned long long) pasco_server_incarnation(server));
	pasci_fmt(task, sizeof(task), "%s %d", pasco_role_name(role), index);
	rv = pasci_serve_until_done(
	    role == PASCO_ROLE_PS ? pasci_ps_server_rpc(server->ps)
	                          : pasci_worker_server_rpc(server->worker),
	    &set, chief_timeout_s, task);
	pasco_server_stop(server);
	return rv;
}

/* The chief or evaluator as process 1 (a container's command without an
 * init): the kernel ignores a signal whose action is the default for
 * process 1, so SIGTERM (docker stop, a pod's deletion) would wait for
 * SIGKILL. Then they end it as they end any other process: status 128 +
 * the signal, nothing told to the ps and worker tasks (lifecycle.h). */
static void
end_on_signal(int sig)
{
	_exit(128 + sig);
}

static void
end_on_signals_as_init(void)
{
	struct sigaction sa = {.sa_handler = end_on_signal};
	if (getpid() != 1) {
		return;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
}

/* Takes "--name=value" or "--name value" out of argv; NULL if absent. */
static const char *
take_option(int *argc, char **argv, const char *name)
{
	size_t n = strlen(name);
	for (int i = 1; i < *argc; i++) {
		const char *v    = NULL;
		int         used = 0;
		if (strncmp(argv[i], name, n) != 0) {
			continue;
		}
		if (argv[i][n] == '=') {
			v    = argv[i] + n + 1;
			used = 1;
		} else if (argv[i][n] == 0 && i + 1 < *argc) {
			v    = argv[i + 1];
			used = 2;
		} else {
			continue;
		}
		memmove(argv + i, argv + i + used,
		    sizeof(char *) * (size_t) (*argc - i - used + 1));
		*argc -= used;
		return v;
	}
	return NULL;
}

/* --bind-address, --checkpoint-root, --key-file, --chief-timeout,
 * --tls-cert, --tls-key, --tls-ca and --nng-threads, --ps-threads,
 * --worker-threads, --metrics-port, --metrics-addr (or PASCO_BIND_ADDRESS,
 * PASCO_CHECKPOINT_DIR, PASCO_KEY_FILE, PASCO_CHIEF_TIMEOUT, PASCO_TLS_CERT,
 * ..., PASCO_NNG_THREADS, ...; an option sets its variable): -1 when
 * malformed, with the reason on stderr. */
static int64_t
task_options(int *argc, char **argv)
{
	static const char *byvar[][2] = {{"--tls-cert", "PASCO_TLS_CERT"},
	    {"--tls-key", "PASCO_TLS_KEY"}, {"--tls-ca", "PASCO_TLS_CA"},
	    {"--nng-threads", "PASCO_NNG_THREADS"},
	    {"--ps-threads", "PASCO_PS_THREADS"},
	    {"--worker-threads", "PASCO_WORKER_THREADS"},
	    {"--metrics-port", "PASCO_METRICS_PORT"},
	    {"--metrics-addr", "PASCO_METRICS_ADDR"}};
	const char        *bind = take_option(argc, argv, "--bind-address");
	const char        *root = take_option(argc, argv, "--checkpoint-root");
	const char        *keyfile = take_option(argc, argv, "--key-file");
	const char      *timeout = take_option(argc, argv, "--chief-timeout");
	const pasci_key *key;
	char             err[600];
	char            *end = NULL;
	long long        s;

	if (bind != NULL) {
		setenv("PASCO_BIND_ADDRESS", bind, 1);
	}
	for (size_t i = 0; i < sizeof(byvar) / sizeof(byvar[0]); i++) {
		const char *path = take_option(argc, argv, byvar[i][0]);
		if (path != NULL) {
			setenv(byvar[i][1], path, 1);
		}
	}
	if (root != NULL) {
		setenv("PASCO_CHECKPOINT_DIR", root, 1);
	}
	if (keyfile != NULL) {
		setenv("PASCO_KEY_FILE", keyfile, 1);
	}
	/* a key file is read now, so a bad one ends the task before it
	 * serves or connects; having none is warned about when a server
	 * starts or the chief connects (not for --help) */
	keyfile = getenv("PASCO_KEY_FILE");
	if (keyfile != NULL && *keyfile != 0 &&
	    pasci_cluster_key(&key, err, sizeof(err)) != 0) {
		fprintf(stderr, "pasco: %s\n", err);
		return -1;
	}
	if (timeout == NULL) {
		timeout = getenv("PASCO_CHIEF_TIMEOUT");
	}
	if (timeout == NULL || *timeout == 0) {
		return PASCI_CHIEF_TIMEOUT_S;
	}
	s = strtoll(timeout, &end, 10);
	if (*end != 0 || s < 0) {
		fprintf(stderr,
		    "pasco: the chief timeout '%s' is not a number of seconds "
		    "(0 waits forever)\n",
		    timeout);
		return -1;
	}
	return s;
}

/* Whether argv asks for --help or --version (before any "--"). */
static bool
asks_for_usage(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--version") == 0) {
			return true;
		}
	}
	return false;
}

/* Line-buffered stdout when it goes to a pipe (pasco launch, a container's
 * log) or PASCO_LINE_BUFFERED is set: each line is written whole and in
 * order with what goes to stderr, not held back until exit. */
static void
line_buffer_stdout(void)
{
	struct stat st;
	if (getenv("PASCO_LINE_BUFFERED") != NULL ||
	    (fstat(STDOUT_FILENO, &st) == 0 && S_ISFIFO(st.st_mode))) {
		setvbuf(stdout, NULL, _IOLBF, 0);
	}
}

int
pasco_main(int argc, char **argv, pasco_chief_fn chief)
{
	pasci_metrics_http *metrics = NULL;
	pasco_cluster      *cluster;
	char                err[512];
	int64_t             chief_timeout_s;
	pasco_role          role;
	int                 rv;

	line_buffer_stdout();
	if ((chief_timeout_s = task_options(&argc, argv)) < 0) {
		return 2;
	}
	if ((rv = pasco_cluster_from_args(
	         &cluster, &argc, argv, err, sizeof(err))) != 0) {
		if (rv == PASCO_ENOTFOUND && asks_for_usage(argc, argv)) {
			return chief(NULL, argc, argv); /* prints its usage */
		}
		fprintf(stderr, "pasco: %s\n", err);
		return 2;
	}
	role = pasco_cluster_task_role(cluster);
	if (role == PASCO_ROLE_PS || role == PASCO_ROLE_WORKER) {
		pasci_log_set_task(pasci_fmt(err, sizeof(err), "%s %d",
		    pasco_role_name(role), pasco_cluster_task_index(cluster)));
	} else {
		pasci_log_set_task(
		    role == PASCO_ROLE_EVALUATOR ? "evaluator" : "chief");
	}
	/* every pool sized from the configuration (threads.h), before any
	 * thread starts */
	if (pasci_threads_setup(err, sizeof(err)) != 0) {
		fprintf(stderr, "pasco: %s\n", err);
		pasco_cluster_free(cluster);
		return 2;
	}
	/* Tensors and messages of hundreds of KB to a few MB come and go
	 * every step: keep them in the heap for reuse instead of mapping
	 * fresh pages (a page fault and a zeroing per 4 KB) for each one;
	 * larger buffers are still mapped and unmapped, and the biggest
	 * tensors and frames are kept by bufcache.h.
	 *
	 * Heaps: PASCI_MALLOC_ARENAS (8) at most, whatever the thread count
	 * (glibc's default is 8 per core). With one heap for every thread, a
	 * worker's closures in flight and a ps's connections met on its lock
	 * for every block its per-thread cache did not hold: with a window of
	 * 4 closures, a softmax worker spent more than half its voluntary
	 * switches waiting there, and a chief with 8 workers 1.26x the CPU per
	 * closure of 1 worker's (1.06x with 8 heaps;
	 * docs/threads-and-cores.md).
	 *
	 * What a ps or worker keeps after a stranger's burst is bounded by the
	 * heaps' trim threshold: the free top of each heap past 4 MB goes back
	 * to the system as it is freed (glibc gives back an extra heap's top
	 * only then, never in malloc_trim), and the serving loop's malloc_trim
	 * after a second of quiet (lifecycle.c) gives back the free blocks
	 * inside them; a ps returns within 16 MB of its baseline after 20,000
	 * bad requests or 1-7 MB frames over 8 connections (test_badinput.c:
	 * with 16 MB it kept 35-55 MB). A chief or evaluator serves no
	 * stranger: it keeps up to 64 MB free per heap, so that blocks of a
	 * few MB (nng's messages, a program's own) are not faulted in again
	 * each time. MALLOC_ARENA_MAX, glibc's own knob, wins when set. */
	mallopt(M_MMAP_THRESHOLD, 8 << 20);
	mallopt(M_TRIM_THRESHOLD,
	    role == PASCO_ROLE_PS || role == PASCO_ROLE_WORKER ? 4 << 20
	                                                       : 64 << 20);
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, PASCI_MALLOC_ARENAS);
	}
	if (pasco_cluster_validate(cluster, err, sizeof(err)) != 0) {
		fprintf(stderr, "pasco: invalid cluster: %s\n", err);
		pasco_cluster_free(cluster);
		return 2;
	}
	/* before the chief function (getopt may reorder argv) and before
	 * any server thread */
	if (pasci_program_args_set(argc, argv) != 0) {
		fprintf(stderr, "pasco: out of memory\n");
		pasco_cluster_free(cluster);
		return 1;
	}
	/* its thread blocks all signals: serve's sigwait gets them */
	if (pasci_metrics_serve_task(&metrics, cluster, err, sizeof(err)) !=
	    0) {
		fprintf(stderr, "pasco: %s\n", err);
		pasco_cluster_free(cluster);
		pasci_program_args_clear();
		return 2;
	}
	switch (role) {
	case PASCO_ROLE_PS:
	case PASCO_ROLE_WORKER:
		rv = serve(cluster, role, pasco_cluster_task_index(cluster),
		    chief_timeout_s);
		break;
	case PASCO_ROLE_EVALUATOR:
		/* the same program as the chief, as in TensorFlow; it is
		 * not the one that ends the cluster */
		end_on_signals_as_init();
		rv = chief(cluster, argc, argv);
		break;
	default: /* chief, or no task given */
		end_on_signals_as_init();
		rv = chief(cluster, argc, argv);
		/* only a chief that succeeded ends its servers; one that
		 * failed leaves them to its next incarnation (lifecycle.h) */
		if (rv == 0) {
			pasci_tell_tasks_done(cluster);
		} else {
			pasci_log(PASCI_LOG_INFO,
			    "the chief failed (status %d): its ps and worker "
			    "tasks keep serving for its next incarnation",
			    rv);
		}
		break;
	}
	pasci_metrics_http_stop(metrics);
	pasco_cluster_free(cluster);
	pasci_program_args_clear();
	return rv;
}
