/*
 * `pasco top`: a live view of a running cluster from its tasks' metrics
 * endpoints (docs/metrics.md). Every interval it scrapes each task's
 * GET /metrics (HTTP/1.1, bounded in time and size), sums the series it
 * shows over their labels, and draws one line per task, rates from the
 * previous scrape, in place (ANSI home and clear) like top. q or Ctrl-C
 * exits; --once draws one frame (two scrapes an interval apart, for the
 * rates) without escapes and exits. Single-threaded; the public API only
 * (the cluster from TF_CONFIG).
 */
#include "top.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <pasco.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "launch.h"

#define MAX_TARGETS 512
#define SCRAPE_MS 2000     /* a task's whole answer, at most */
#define BODY_MAX (4 << 20) /* bytes of an answer, at most */

/* The series shown, summed over their labels. */
enum {
	S_STEPS,
	S_COMPLETED,
	S_WORKER_CLOSURES,
	S_IN_FLIGHT,
	S_QUEUED,
	S_RETRIED,
	S_REQUESTS,
	S_RSS,
	S_THREADS,
	S_CPU,
	S_COUNT
};
static const char *const series[S_COUNT] = {"pasco_steps_total",
    "pasco_closures_completed_total", "pasco_worker_closures_total",
    "pasco_closures_in_flight", "pasco_closures_queued",
    "pasco_closures_retried_total", "pasco_requests_total",
    "process_resident_memory_bytes", "process_threads",
    "process_cpu_seconds_total"};

typedef struct target {
	char   addr[280]; /* host:port */
	char   task[64];  /* its task label, once seen */
	bool   up, was_up;
	char   why[128]; /* why it is down */
	double v[S_COUNT], prev[S_COUNT];
	double at, prev_at; /* seconds, monotonic */
} target;

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void) sig;
	stop = 1;
}

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* A connected socket to addr ("host:port", "[v6]:port"), or -1 with why. */
static int
dial(const char *addr, double deadline, char *why, size_t len)
{
	char            host[300], *port;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
	int             fd, rv, err = 0;
	socklen_t       elen = sizeof(err);
	snprintf(host, sizeof(host), "%s", addr[0] == '[' ? addr + 1 : addr);
	if ((port = strrchr(host, ':')) == NULL) {
		snprintf(why, len, "no port in %.60s", addr);
		return -1;
	}
	*port++ = 0;
	if (port > host + 1 && port[-2] == ']') {
		port[-2] = 0;
	}
	if ((rv = getaddrinfo(host, port, &hints, &res)) != 0) {
		snprintf(why, len, "%s", gai_strerror(rv));
		return -1;
	}
	fd = socket(
	    res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = errno;
	} else if (connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
		struct pollfd p  = {.fd = fd, .events = POLLOUT};
		int           ms = (int) ((deadline - now_s()) * 1000);
		if (errno != EINPROGRESS) {
			err = errno;
		} else if (poll(&p, 1, ms > 0 ? ms : 0) != 1) {
			err = ETIMEDOUT;
		} else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) !=
		           0) {
			err = errno;
		}
	}
	freeaddrinfo(res);
	if (err != 0) {
		snprintf(why, len, "%s", strerror(err));
		if (fd >= 0) {
			close(fd);
		}
		return -1;
	}
	return fd;
}

/* Waits for fd to be ready for events until deadline: false on timeout. */
static bool
ready(int fd, short events, double deadline)
{
	struct pollfd p  = {.fd = fd, .events = events};
	int           ms = (int) ((deadline - now_s()) * 1000);
	return ms > 0 && poll(&p, 1, ms) == 1;
}

/* t's /metrics answer, malloc'd and NUL-terminated (its body only), or
 * NULL with t->why set. */
static char *
fetch(target *t)
{
	double deadline = now_s() + SCRAPE_MS / 1000.0;
	char   req[400], *buf = NULL, *body;
	size_t len = 0, cap = 0;
	int    fd = dial(t->addr, deadline, t->why, sizeof(t->why)), n;
	if (fd < 0) {
		return NULL;
	}
	n = snprintf(req, sizeof(req),
	    "GET /metrics HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
	    t->addr);
	if (!ready(fd, POLLOUT, deadline) ||
	    send(fd, req, (size_t) n, MSG_NOSIGNAL) != n) {
		snprintf(t->why, sizeof(t->why), "cannot send the request");
		close(fd);
		return NULL;
	}
	for (;;) {
		ssize_t k;
		if (len + 4096 + 1 > cap) {
			char *more =
			    cap < BODY_MAX ? realloc(buf, cap + 65536) : NULL;
			if (more == NULL) {
				snprintf(
				    t->why, sizeof(t->why), "answer too long");
				break;
			}
			buf = more;
			cap += 65536;
		}
		if (!ready(fd, POLLIN, deadline)) {
			snprintf(t->why, sizeof(t->why), "no answer in %d ms",
			    SCRAPE_MS);
			break;
		}
		if ((k = recv(fd, buf + len, cap - len - 1, 0)) <= 0) {
			break;
		}
		len += (size_t) k;
	}
	close(fd);
	if (buf == NULL) {
		return NULL;
	}
	buf[len] = 0;
	if (strncmp(buf, "HTTP/1.1 200", 12) != 0 ||
	    (body = strstr(buf, "\r\n\r\n")) == NULL) {
		if (t->why[0] == 0) {
			snprintf(t->why, sizeof(t->why), "answered %.40s",
			    strncmp(buf, "HTTP/", 5) == 0 ? buf + 9
			                                  : "garbage");
			t->why[strcspn(t->why, "\r")] = 0;
		}
		free(buf);
		return NULL;
	}
	memmove(buf, body + 4, strlen(body + 4) + 1);
	return buf;
}

/* Sums the shown series of text into t->v; takes its task label. */
static void
parse(target *t, char *text)
{
	char *save = NULL;
	memset(t->v, 0, sizeof(t->v));
	for (char *line = strtok_r(text, "\n", &save); line != NULL;
	     line       = strtok_r(NULL, "\n", &save)) {
		size_t name_len = strcspn(line, "{ ");
		char  *sp       = strrchr(line, ' '), *task;
		if (line[0] == '#' || sp == NULL) {
			continue;
		}
		if (t->task[0] == 0 &&
		    (task = strstr(line, "task=\"")) != NULL) {
			snprintf(t->task, sizeof(t->task), "%.*s",
			    (int) strcspn(task + 6, "\""), task + 6);
		}
		for (int s = 0; s < S_COUNT; s++) {
			if (strlen(series[s]) == name_len &&
			    strncmp(line, series[s], name_len) == 0) {
				t->v[s] += strtod(sp + 1, NULL);
			}
		}
	}
}

static void
scrape(target *t)
{
	char *text;
	t->why[0] = 0;
	memcpy(t->prev, t->v, sizeof(t->v));
	t->prev_at = t->at;
	t->was_up  = t->up;
	t->up      = (text = fetch(t)) != NULL;
	if (t->up) {
		t->at = now_s();
		parse(t, text);
		free(text);
	}
}

/* The rate of series s over the last interval (0 without two scrapes). */
static double
rate(const target *t, int s)
{
	double dt = t->at - t->prev_at;
	return t->up && t->was_up && dt > 0 && t->v[s] >= t->prev[s]
	           ? (t->v[s] - t->prev[s]) / dt
	           : 0;
}

static void
draw(target *ts, int n, double interval, bool ansi)
{
	int up = 0;
	for (int i = 0; i < n; i++) {
		up += ts[i].up;
	}
	printf("%spasco top - %d of %d tasks up - every %.1f s%s\n",
	    ansi ? "\033[H\033[2J" : "", up, n, interval,
	    ansi ? " - q quits" : "");
	printf("%-13s %-5s %9s %8s %8s %8s %7s %7s %8s %8s %7s %6s\n", "TASK",
	    "STATE", "STEPS", "STEPS/S", "CLOS/S", "INFLIGHT", "QUEUED",
	    "RETRIED", "REQ/S", "RSS_MB", "THREADS", "CPU%");
	for (int i = 0; i < n; i++) {
		target *t = &ts[i];
		if (!t->up) {
			printf("%-13s %-5s %s (%s)\n",
			    t->task[0] ? t->task : t->addr, "down", t->addr,
			    t->why);
			continue;
		}
		printf("%-13s %-5s %9.0f %8.1f %8.1f %8.0f %7.0f %7.0f %8.1f "
		       "%8.1f %7.0f %6.1f\n",
		    t->task, "up", t->v[S_STEPS], rate(t, S_STEPS),
		    rate(t, S_COMPLETED) + rate(t, S_WORKER_CLOSURES),
		    t->v[S_IN_FLIGHT], t->v[S_QUEUED], t->v[S_RETRIED],
		    rate(t, S_REQUESTS), t->v[S_RSS] / (1 << 20),
		    t->v[S_THREADS], 100 * rate(t, S_CPU));
	}
	fflush(stdout);
}

/* Reads "role index host:port" lines (pasco launch --metrics-file). */
static int
read_file(const char *path, target *ts, int *n)
{
	FILE *f = fopen(path, "r");
	char  line[512], role[32], addr[280];
	int   index;
	if (f == NULL) {
		fprintf(stderr, "pasco top: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL && *n < MAX_TARGETS) {
		if (sscanf(line, "%31s %d %279s", role, &index, addr) == 3) {
			snprintf(ts[*n].addr, sizeof(ts[*n].addr), "%s", addr);
			snprintf(ts[*n].task, sizeof(ts[*n].task), "%s:%d",
			    role, index);
			(*n)++;
		} else if (strspn(line, " \t\r\n") != strlen(line)) {
			fprintf(stderr,
			    "pasco top: %s: '%.*s' is not 'ROLE INDEX "
			    "HOST:PORT'\n",
			    path, (int) strcspn(line, "\n"), line);
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

/* Every task of TF_CONFIG's cluster, at its host and the metrics port. */
static int
from_tf_config(int port, target *ts, int *n)
{
	static const pasco_role roles[] = {PASCO_ROLE_CHIEF, PASCO_ROLE_PS,
	    PASCO_ROLE_WORKER, PASCO_ROLE_EVALUATOR};
	char                   *argv[]  = {"pasco", NULL}, err[512];
	int                     argc    = 1;
	pasco_cluster          *c;
	if (pasco_cluster_from_args(&c, &argc, argv, err, sizeof(err)) != 0) {
		fprintf(stderr, "pasco top: TF_CONFIG: %s\n", err);
		return -1;
	}
	for (size_t r = 0; r < sizeof(roles) / sizeof(roles[0]); r++) {
		for (size_t i = 0;
		     i < pasco_cluster_count(c, roles[r]) && *n < MAX_TARGETS;
		     i++) {
			const char *url  = pasco_cluster_url(c, roles[r], i);
			const char *host = strstr(url, "://");
			host             = host != NULL ? host + 3 : url;
			snprintf(ts[*n].addr, sizeof(ts[*n].addr), "%.*s:%d",
			    (int) (strrchr(host, ':') - host), host, port);
			snprintf(ts[*n].task, sizeof(ts[*n].task), "%s:%zu",
			    pasco_role_name(roles[r]), i);
			(*n)++;
		}
	}
	pasco_cluster_free(c);
	return 0;
}

static const char usage_text[] =
    "usage: pasco top [--once] [--interval SECONDS]\n"
    "                 (--file PATH | --tf-config PORT | HOST:PORT...)\n"
    "  A live view of a running cluster: every interval (1 s), each\n"
    "  task's metrics (GET /metrics, docs/metrics.md), one line per task:\n"
    "  its steps (the chief's), steps/s, closures/s (run by a worker,\n"
    "  completed for the chief), closures in flight, queued, retried, ps\n"
    "  requests/s served, resident memory, threads and CPU%.\n"
    "  --file PATH      the tasks of `pasco launch --metrics-file PATH`\n"
    "  --tf-config PORT every task of TF_CONFIG's cluster, at its host\n"
    "                   and metrics port PORT (--metrics-port PORT)\n"
    "  HOST:PORT...     these metrics endpoints\n"
    "  --once           print one frame (after two scrapes an interval\n"
    "                   apart, for the rates) and exit: 0 when a task\n"
    "                   answered, 1 when none did\n"
    "  --interval S     seconds between scrapes (0.2 to 3600; 1)\n"
    "  q or Ctrl-C exits.\n";

/* Draws frames until q, Ctrl-C or SIGTERM. */
static void
run_live(target *ts, int n, double interval)
{
	struct termios old, raw;
	bool           tty = tcgetattr(STDIN_FILENO, &old) == 0;
	if (tty) {
		raw = old;
		raw.c_lflag &= ~(tcflag_t) (ICANON | ECHO);
		raw.c_cc[VMIN]  = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	printf("\033[?25l"); /* no cursor while drawing */
	while (!stop) {
		double next = now_s() + interval;
		for (int i = 0; i < n; i++) {
			scrape(&ts[i]);
		}
		draw(ts, n, interval, true);
		while (!stop && now_s() < next) {
			struct pollfd p = {
			    .fd = STDIN_FILENO, .events = POLLIN};
			char c  = 0;
			int  ms = (int) ((next - now_s()) * 1000) + 1;
			if (poll(&p, 1, ms) == 1 &&
			    (read(STDIN_FILENO, &c, 1) != 1 || c == 'q' ||
			        c == 'Q')) {
				stop = 1; /* q, or stdin closed */
			}
		}
	}
	printf("\033[?25h\n");
	if (tty) {
		tcsetattr(STDIN_FILENO, TCSANOW, &old);
	}
}

/* One frame after two scrapes an interval apart: 0 when a task
 * answered, 1 when none did. */
static int
run_once(target *ts, int n, double interval)
{
	int up = 0;
	for (int round = 0; round < 2 && !stop; round++) {
		double next = now_s() + interval;
		for (int i = 0; i < n; i++) {
			scrape(&ts[i]);
		}
		while (round == 0 && !stop && now_s() < next) {
			usleep(10000);
		}
	}
	draw(ts, n, interval, false);
	for (int i = 0; i < n; i++) {
		up += ts[i].up;
	}
	return up > 0 ? 0 : 1;
}

/* The targets of --tf-config PORT: -1 (usage) or 2 (TF_CONFIG) on error. */
static int
tf_config_option(const char *arg, target *ts, int *n)
{
	char *end;
	long  port = strtol(arg, &end, 10);
	if (*end != 0 || port < 1 || port > 65535) {
		return tool_usage_error("pasco top",
		    "--tf-config '%s': give the tasks' metrics port", arg);
	}
	return from_tf_config((int) port, ts, n) != 0 ? 2 : 0;
}

/* The options into *once, *interval and ts[0..*n); -1 when done (the
 * targets follow at optind), else the exit status to return (0 after
 * --help). */
static int
parse_options(
    int argc, char **argv, bool *once, double *interval, target *ts, int *n)
{
	static const struct option options[] = {
	    {"once", no_argument, NULL, 'o'},
	    {"interval", required_argument, NULL, 'i'},
	    {"file", required_argument, NULL, 'f'},
	    {"tf-config", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
	char *end;
	int   opt, rv;
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+:", options, NULL)) != -1) {
		switch (opt) {
		case 'o':
			*once = true;
			break;
		case 'i':
			*interval = strtod(optarg, &end);
			if (*end != 0 ||
			    !(*interval >= 0.2 && *interval <= 3600)) {
				return tool_usage_error("pasco top",
				    "--interval '%s': give seconds from 0.2 "
				    "to 3600",
				    optarg);
			}
			break;
		case 'f':
			if (read_file(optarg, ts, n) != 0) {
				return 2;
			}
			break;
		case 't':
			if ((rv = tf_config_option(optarg, ts, n)) != 0) {
				return rv;
			}
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case ':':
			return tool_usage_error("pasco top",
			    "option '%s' needs a value", argv[optind - 1]);
		default:
			return tool_usage_error("pasco top",
			    "unknown option '%s'", argv[optind - 1]);
		}
	}
	return -1;
}

int
pasco_top(int argc, char **argv)
{
	static target    ts[MAX_TARGETS];
	struct sigaction sa       = {.sa_handler = on_signal};
	double           interval = 1;
	bool             once     = false;
	int              n        = 0, rv;

	if ((rv = parse_options(argc, argv, &once, &interval, ts, &n)) >= 0) {
		return rv;
	}
	for (; optind < argc && n < MAX_TARGETS; optind++, n++) {
		if (strchr(argv[optind], ':') == NULL) {
			return tool_usage_error("pasco top",
			    "'%s' is not HOST:PORT", argv[optind]);
		}
		snprintf(ts[n].addr, sizeof(ts[n].addr), "%s", argv[optind]);
	}
	if (n == 0) {
		return tool_usage_error("pasco top", "%s",
		    "no task given (--file, --tf-config or HOST:PORT)");
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (once) {
		return run_once(ts, n, interval);
	}
	run_live(ts, n, interval);
	return 0;
}
