/*
 * A task's metrics endpoint (node/metrics_http.c) over the process's
 * registry (base/metrics_registry.c), in-process on loopback: the text is
 * Prometheus's exposition format 0.0.4 (HELP and TYPE before each family,
 * counters named _total, histograms' cumulative buckets ending at +Inf
 * with _sum and _count, every sample labelled with its task), counters
 * grow, and crafted requests (garbage, an unknown path or method, a head
 * past the limit, a half request held open, many idle connections) are
 * answered or dropped while /metrics keeps being served.
 */
#include "helpers.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dyn_table.h"
#include "metrics_http.h"
#include "metrics_registry.h"
#include "util.h"

TestSuite(metrics_http, .timeout = 60);

static int
dial(int port)
{
	struct sockaddr_in a  = {.sin_family = AF_INET,
	     .sin_port                       = htons((uint16_t) port),
	     .sin_addr.s_addr                = htonl(INADDR_LOOPBACK)};
	int                fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(fd >= 0);
	cr_assert_eq(connect(fd, (struct sockaddr *) &a, sizeof(a)), 0,
	    "connect: %s", strerror(errno));
	return fd;
}

/* Everything fd sends until it closes, within ms (NUL-terminated,
 * malloc'd); fails the test past ms. */
static char *
read_all(int fd, int ms)
{
	size_t  cap = 1 << 20, len = 0;
	char   *buf = malloc(cap);
	int64_t end = pasci_now_ms() + ms;
	cr_assert(buf != NULL);
	for (;;) {
		struct pollfd p    = {.fd = fd, .events = POLLIN};
		int64_t       left = end - pasci_now_ms();
		ssize_t       k;
		cr_assert(left > 0 && poll(&p, 1, (int) left) == 1,
		    "no end of the answer within %d ms (got %zu bytes)", ms,
		    len);
		k = recv(fd, buf + len, cap - len - 1, 0);
		if (k <= 0) {
			break;
		}
		len += (size_t) k;
		cr_assert(len < cap - 1);
	}
	buf[len] = 0;
	close(fd);
	return buf;
}

/* The answer to raw, sent whole on a fresh connection. */
static char *
ask(int port, const char *raw, size_t len)
{
	int fd = dial(port);
	cr_assert_eq(send(fd, raw, len, MSG_NOSIGNAL), (ssize_t) len);
	return read_all(fd, 5000);
}

static char *
get_metrics(int port)
{
	static const char req[] =
	    "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n";
	char *a = ask(port, req, sizeof(req) - 1);
	cr_assert(
	    strncmp(a, "HTTP/1.1 200 OK\r\n", 17) == 0, "answer: %.200s", a);
	cr_assert(
	    strstr(a, "Content-Type: text/plain; version=0.0.4") != NULL);
	return a;
}

/* The value of the sample whose line starts with series (name and
 * labels), or -1. */
static double
sample(const char *text, const char *series)
{
	size_t      n = strlen(series);
	const char *p = text;
	while ((p = strstr(p, series)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ') {
			return strtod(p + n + 1, NULL);
		}
		p += n;
	}
	return -1;
}

static pasci_metrics_http *
start(int read_ms)
{
	pasci_metrics_http *h;
	char                err[256];
	cr_assert_eq(pasci_metrics_http_start(&h, "127.0.0.1", 0, "worker:3",
	                 read_ms, err, sizeof(err)),
	    0, "%s", err);
	cr_assert(pasci_metrics_http_port(h) > 0);
	return h;
}

/* Checks the whole text line by line against the format's rules. */
static void
check_format(char *body)
{
	char   family[128] = "", type[16] = "", *save = NULL;
	int    samples     = 0;
	double last_bucket = -1;
	for (char *l = strtok_r(body, "\n", &save); l != NULL;
	     l       = strtok_r(NULL, "\n", &save)) {
		char name[128];
		if (strncmp(l, "# HELP ", 7) == 0) {
			cr_assert(sscanf(l, "# HELP %127s", family) == 1);
			cr_assert(strlen(l) > 8 + strlen(family), "%s", l);
			type[0] = 0;
			continue;
		}
		if (strncmp(l, "# TYPE ", 7) == 0) {
			cr_assert(
			    sscanf(l, "# TYPE %127s %15s", name, type) == 2);
			cr_assert_str_eq(
			    name, family, "TYPE after its HELP: %s", l);
			cr_assert(strcmp(type, "counter") == 0 ||
			              strcmp(type, "gauge") == 0 ||
			              strcmp(type, "histogram") == 0,
			    "%s", l);
			if (strcmp(type, "counter") == 0) {
				size_t n = strlen(family);
				cr_assert(n > 6 && strcmp(family + n - 6,
				                       "_total") == 0,
				    "a counter's name ends _total: %s",
				    family);
			}
			last_bucket = -1;
			continue;
		}
		cr_assert(l[0] != '#', "an unknown comment: %s", l);
		cr_assert(type[0] != 0, "a sample before its TYPE: %s", l);
		cr_assert(strncmp(l, family, strlen(family)) == 0,
		    "sample %s outside its family %s", l, family);
		cr_assert(strstr(l, "{task=\"worker:3\"") != NULL, "%s", l);
		char  *sp = strrchr(l, ' '), *end;
		double v  = strtod(sp + 1, &end);
		cr_assert(*end == 0 && v >= 0, "a value: %s", l);
		if (strcmp(type, "histogram") == 0 && strstr(l, "_bucket{")) {
			cr_assert(
			    v >= last_bucket, "buckets are cumulative: %s", l);
			last_bucket = v;
		} else if (strcmp(type, "histogram") == 0 &&
		           strstr(l, "_count{")) {
			cr_assert_eq(
			    v, last_bucket, "_count is +Inf's: %s", l);
		}
		samples++;
	}
	cr_assert(samples > 30, "only %d samples", samples);
}

Test(metrics_http, serves_the_exposition_format_with_every_series)
{
	pasci_metrics_http *h = start(PASCI_METRICS_READ_MS);
	pasci_metric_count(PASCI_MF_REQUESTS, 3); /* VAR_READ */
	pasci_metric_observe(PASCI_MH_REQUEST, 0.003);
	pasci_metric_observe(PASCI_MH_REQUEST, 42); /* past the last bound */
	char *a    = get_metrics(pasci_metrics_http_port(h));
	char *body = strstr(a, "\r\n\r\n") + 4;
	cr_assert(sample(body, "pasco_requests_total{task=\"worker:3\",method="
	                       "\"VAR_READ\"}") >= 1);
	cr_assert(sample(body, "pasco_request_duration_seconds_bucket{task="
	                       "\"worker:3\",le=\"+Inf\"}") >= 2);
	cr_assert(sample(body, "pasco_request_duration_seconds_bucket{task="
	                       "\"worker:3\",le=\"10\"}") <
	          sample(body, "pasco_request_duration_seconds_bucket{task="
	                       "\"worker:3\",le=\"+Inf\"}"));
	cr_assert(sample(body, "pasco_request_duration_seconds_sum{task="
	                       "\"worker:3\"}") >= 42.003 - 1e-6);
	cr_assert(
	    sample(body, "process_resident_memory_bytes{task=\"worker:3\"}") >
	    1e6);
	cr_assert(sample(body, "process_threads{task=\"worker:3\"}") >= 2);
	cr_assert(sample(body, "pasco_steps_total{task=\"worker:3\"}") >= 0);
	cr_assert(
	    sample(body, "pasco_closures_in_flight{task=\"worker:3\"}") >= 0);
	check_format(body);
	free(a);
	pasci_metrics_http_stop(h);
}

static uint64_t fake[PASCI_MS_COUNT];

static void
read_fake(void *arg, uint64_t *v)
{
	(void) arg;
	memcpy(v, fake, sizeof(fake));
}

Test(metrics_http, counters_grow_and_a_detached_source_keeps_its_counts)
{
	pasci_metrics_http *h    = start(PASCI_METRICS_READ_MS);
	int                 port = pasci_metrics_http_port(h);
	char               *a    = get_metrics(port), *b;
	double s0 = sample(a, "pasco_steps_total{task=\"worker:3\"}");
	pasci_metric_add(PASCI_M_STEPS, 5);
	fake[PASCI_MS_COMPLETED] = 7;
	fake[PASCI_MS_IN_FLIGHT] = 3;
	cr_assert_eq(pasci_metrics_source_attach(&fake, read_fake), 0);
	b = get_metrics(port);
	cr_assert_eq(
	    sample(b, "pasco_steps_total{task=\"worker:3\"}"), s0 + 5);
	cr_assert_eq(
	    sample(b, "pasco_closures_completed_total{task=\"worker:3\"}"), 7);
	cr_assert_eq(
	    sample(b, "pasco_closures_in_flight{task=\"worker:3\"}"), 3);
	free(b);
	pasci_metrics_source_detach(&fake);
	b = get_metrics(port);
	cr_assert_eq(
	    sample(b, "pasco_closures_completed_total{task=\"worker:3\"}"), 7,
	    "a counter never goes back");
	cr_assert_eq(
	    sample(b, "pasco_closures_in_flight{task=\"worker:3\"}"), 0);
	free(a);
	free(b);
	pasci_metrics_http_stop(h);
}

Test(metrics_http, answers_only_get_metrics_and_survives_garbage)
{
	pasci_metrics_http *h       = start(PASCI_METRICS_READ_MS);
	int                 port    = pasci_metrics_http_port(h);
	static const char   other[] = "GET /admin HTTP/1.1\r\n\r\n";
	static const char   post[]  = "POST /metrics HTTP/1.1\r\n\r\n";
	static const char   junk[]  = "\x01\x02\xff junk\r\n\r\n";
	char               *a;
	char                huge[20000];

	a = ask(port, other, sizeof(other) - 1);
	cr_assert(strncmp(a, "HTTP/1.1 404", 12) == 0, "%.80s", a);
	free(a);
	a = ask(port, post, sizeof(post) - 1);
	cr_assert(strncmp(a, "HTTP/1.1 405", 12) == 0, "%.80s", a);
	free(a);
	a = ask(port, junk, sizeof(junk) - 1);
	cr_assert(strncmp(a, "HTTP/1.1 400", 12) == 0, "%.80s", a);
	free(a);
	/* a head past the limit, never ended: refused and closed */
	memcpy(huge, "GET /metrics HTTP/1.1\r\nX-A: ", 28);
	memset(huge + 28, 'a', sizeof(huge) - 28);
	int fd = dial(port);
	(void) send(fd, huge, sizeof(huge), MSG_NOSIGNAL);
	a = read_all(fd, 5000);
	cr_assert(strncmp(a, "HTTP/1.1 431", 12) == 0, "%.80s", a);
	free(a);
	free(get_metrics(port));
	pasci_metrics_http_stop(h);
}

Test(metrics_http, a_slow_half_request_neither_blocks_scrapes_nor_stays)
{
	pasci_metrics_http *h    = start(400);
	int                 port = pasci_metrics_http_port(h);
	int                 slow = dial(port), idle[3 * PASCI_METRICS_CLIENTS];
	int64_t             t0;
	char               *a;
	cr_assert_eq(send(slow, "GET /metr", 9, MSG_NOSIGNAL), 9);
	t0 = pasci_now_ms();
	free(get_metrics(port)); /* while the slow one waits */
	cr_assert(pasci_now_ms() - t0 < 300, "a scrape waited %lld ms",
	    (long long) (pasci_now_ms() - t0));
	a = read_all(slow, 3000); /* dropped at its deadline */
	cr_assert(strncmp(a, "HTTP/1.1 408", 12) == 0, "%.80s", a);
	free(a);
	/* more idle connections than slots: the oldest give way */
	for (int i = 0; i < 3 * PASCI_METRICS_CLIENTS; i++) {
		idle[i] = dial(port);
	}
	free(get_metrics(port));
	for (int i = 0; i < 3 * PASCI_METRICS_CLIENTS; i++) {
		close(idle[i]);
	}
	pasci_metrics_http_stop(h);
}

Test(metrics_http, the_task_port_comes_from_the_environment)
{
	pasco_cluster      *c;
	pasci_metrics_http *h = (void *) 1;
	char                err[256];
	PASCO_PASS(pasco_cluster_parse_json(&c,
	    "{\"cluster\": {\"ps\": [\"127.0.0.1:1\"], \"worker\": "
	    "[\"127.0.0.1:2\"]}, \"task\": {\"type\": \"worker\", "
	    "\"index\": 0}}",
	    err, sizeof(err)));
	unsetenv("PASCO_METRICS_PORT");
	cr_assert_eq(pasci_metrics_serve_task(&h, c, err, sizeof(err)), 0);
	cr_assert_null(h, "off unless asked");
	setenv("PASCO_METRICS_PORT", "99999", 1);
	cr_assert_eq(pasci_metrics_serve_task(&h, c, err, sizeof(err)), -1);
	cr_assert(
	    strstr(err, "'99999'") != NULL && strstr(err, "--metrics-port"),
	    "%s", err);
	setenv("PASCO_METRICS_PORT", "0", 1);
	cr_assert_eq(
	    pasci_metrics_serve_task(&h, c, err, sizeof(err)), 0, "%s", err);
	free(get_metrics(pasci_metrics_http_port(h)));
	pasci_metrics_http_stop(h);
	unsetenv("PASCO_METRICS_PORT");
	pasco_cluster_free(c);
}

/* pasco_dynamic_table_rows follows a ps's rows: made, evicted at the cap,
 * and gone with their table. */
Test(metrics_http, the_dynamic_rows_gauge_follows_the_tables)
{
	pasci_dyn_config c = {.dim = 4,
	    .init                  = pasco_init_uniform(-0.05, 0.05, 7),
	    .max_rows              = 3};
	pasci_dyn_set   *set;
	char             err[256] = "";
	float            row[4];
	uint64_t         before = pasci_metric_get(PASCI_M_DYN_ROWS);
	PASCO_PASS(pasci_dyn_set_create(&set));
	PASCO_PASS(pasci_dyn_add(set, "emb", &c, err, sizeof(err)));
	for (int64_t k = 1; k <= 5; k++) {
		PASCO_PASS(pasci_dyn_lookup(pasci_dyn_find(set, "emb"), &k, 1,
		    true, row, err, sizeof(err)));
	}
	cr_assert_eq(pasci_metric_get(PASCI_M_DYN_ROWS), before + 3);
	pasci_dyn_set_destroy(set);
	cr_assert_eq(pasci_metric_get(PASCI_M_DYN_ROWS), before);
}
