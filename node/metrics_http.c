/*
 * The metrics endpoint (metrics_http.h): one thread polls the listener,
 * a wake pipe and up to PASCI_METRICS_CLIENTS connections, each reading
 * its request's head into a bounded buffer under a deadline. A whole head
 * is answered at once (GET /metrics: the registry's text; anything else:
 * 400, 404, 405) and the connection closed (HTTP/1.1, Connection: close).
 * Only this thread touches the connections; the registry is read through
 * pasci_metrics_render, which is thread-safe. Nothing a client sends can
 * block the task's own threads: at worst it holds one slot of this thread
 * until its deadline, or delays an answer by a send timeout.
 */
#include "metrics_http.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "address.h"
#include "metrics_registry.h"
#include "util.h"
#include "wire.h"

#define SEND_MS 2000 /* an answer not taken by then is dropped */

typedef struct client {
	int     fd; /* -1: a free slot */
	int64_t deadline_ms;
	size_t  len;
	char    buf[PASCI_METRICS_REQUEST_MAX];
} client;

struct pasci_metrics_http {
	int       listen_fd, port, read_ms;
	int       wake[2]; /* stop writes a byte */
	pthread_t thread;
	char      task[64];
	client    clients[PASCI_METRICS_CLIENTS]; /* the thread's alone */
};

/* Sends all of buf, blocking up to SEND_MS in all. */
static void
send_all(int fd, const char *buf, size_t len)
{
	int64_t deadline = pasci_now_ms() + SEND_MS;
	while (len > 0) {
		ssize_t k = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (k > 0) {
			buf += k;
			len -= (size_t) k;
			continue;
		}
		if (k < 0 && errno != EAGAIN && errno != EINTR) {
			return;
		}
		int64_t left = deadline - pasci_now_ms();
		if (left <= 0) {
			return;
		}
		poll(&(struct pollfd){.fd = fd, .events = POLLOUT}, 1,
		    (int) left);
	}
}

static void
answer(
    int fd, const char *status, const char *type, const char *body, size_t len)
{
	char head[256];
	int  n = snprintf(head, sizeof(head),
	     "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	      "Connection: close\r\n\r\n",
	     status, type, len);
	send_all(fd, head, (size_t) n);
	send_all(fd, body, len);
}

static void
answer_text(int fd, const char *status, const char *body)
{
	answer(fd, status, "text/plain; charset=utf-8", body, strlen(body));
}

/* Answers the request whose head is c's buffer. */
static void
serve_request(pasci_metrics_http *h, client *c)
{
	char   method[16], path[256], version[16];
	char  *text;
	size_t len = 0;

	c->buf[c->len < sizeof(c->buf) ? c->len : sizeof(c->buf) - 1] = 0;
	if (sscanf(c->buf, "%15s %255s %15s", method, path, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7) != 0) {
		answer_text(c->fd, "400 Bad Request",
		    "not an HTTP/1.x request line\n");
		return;
	}
	if (strcmp(method, "GET") != 0) {
		answer_text(c->fd, "405 Method Not Allowed",
		    "only GET /metrics is served\n");
		return;
	}
	if (strcmp(path, "/metrics") != 0 &&
	    strncmp(path, "/metrics?", 9) != 0) {
		answer_text(
		    c->fd, "404 Not Found", "only /metrics is served\n");
		return;
	}
	if ((text = pasci_metrics_render(h->task, &len)) == NULL) {
		answer_text(
		    c->fd, "500 Internal Server Error", "out of memory\n");
		return;
	}
	answer(c->fd, "200 OK", "text/plain; version=0.0.4; charset=utf-8",
	    text, len);
	free(text);
}

static void
client_close(client *c)
{
	close(c->fd);
	c->fd  = -1;
	c->len = 0;
}

/* Reads what c has sent; answers and closes once its head is whole, or
 * too long, or the peer is gone. */
static void
client_read(pasci_metrics_http *h, client *c)
{
	ssize_t k = recv(
	    c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, MSG_DONTWAIT);
	if (k <= 0) {
		if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
			client_close(c);
		}
		return;
	}
	c->len += (size_t) k;
	c->buf[c->len] = 0;
	if (strstr(c->buf, "\r\n\r\n") != NULL ||
	    strstr(c->buf, "\n\n") != NULL) {
		serve_request(h, c);
		client_close(c);
	} else if (c->len == sizeof(c->buf) - 1) {
		answer_text(c->fd, "431 Request Header Fields Too Large",
		    "the request's head is over 8192 bytes\n");
		client_close(c);
	}
}

/* A slot for a new connection: a free one, else the oldest's. */
static client *
client_slot(pasci_metrics_http *h)
{
	client *oldest = &h->clients[0];
	for (int i = 0; i < PASCI_METRICS_CLIENTS; i++) {
		client *c = &h->clients[i];
		if (c->fd < 0) {
			return c;
		}
		oldest = c->deadline_ms < oldest->deadline_ms ? c : oldest;
	}
	client_close(oldest);
	return oldest;
}

static void
accept_one(pasci_metrics_http *h)
{
	int     fd = accept4(h->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	client *c;
	if (fd < 0) {
		return;
	}
	c              = client_slot(h);
	c->fd          = fd;
	c->len         = 0;
	c->deadline_ms = pasci_now_ms() + h->read_ms;
}

/* Closes the connections past their deadline (408); the time until the
 * next deadline, or -1. */
static int
expire(pasci_metrics_http *h)
{
	int64_t now = pasci_now_ms(), next = -1;
	for (int i = 0; i < PASCI_METRICS_CLIENTS; i++) {
		client *c = &h->clients[i];
		if (c->fd >= 0 && c->deadline_ms <= now) {
			answer_text(c->fd, "408 Request Timeout",
			    "the request's head did not come in time\n");
			client_close(c);
		} else if (c->fd >= 0 &&
		           (next < 0 || c->deadline_ms - now < next)) {
			next = c->deadline_ms - now;
		}
	}
	return (int) next;
}

static void *
serve_main(void *arg)
{
	pasci_metrics_http *h = arg;
	pthread_setname_np(pthread_self(), "pasco-metrics");
	for (;;) {
		struct pollfd pfd[PASCI_METRICS_CLIENTS + 2];
		client       *who[PASCI_METRICS_CLIENTS + 2] = {0};
		nfds_t        n                              = 2;
		int           timeout                        = expire(h);
		pfd[0] = (struct pollfd){.fd = h->wake[0], .events = POLLIN};
		pfd[1] = (struct pollfd){.fd = h->listen_fd, .events = POLLIN};
		for (int i = 0; i < PASCI_METRICS_CLIENTS; i++) {
			if (h->clients[i].fd >= 0) {
				who[n]   = &h->clients[i];
				pfd[n++] = (struct pollfd){
				    .fd = h->clients[i].fd, .events = POLLIN};
			}
		}
		if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
			pasci_log(PASCI_LOG_ERROR,
			    "metrics endpoint: poll: %s", strerror(errno));
			return NULL;
		}
		if (pfd[0].revents != 0) {
			return NULL;
		}
		for (nfds_t k = 2; k < n; k++) {
			if (pfd[k].revents != 0 && who[k]->fd >= 0) {
				client_read(h, who[k]);
			}
		}
		if (pfd[1].revents & POLLIN) {
			accept_one(h);
		}
	}
}

/* A socket listening at addr:port; -1 with the reason in err. */
static int
listen_at(const char *addr, int port, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
	                    .ai_flags         = AI_PASSIVE | AI_NUMERICSERV},
	                *res  = NULL;
	char port_s[16];
	int  fd = -1, rv, one = 1;

	snprintf(port_s, sizeof(port_s), "%d", port);
	if ((rv = getaddrinfo(addr, port_s, &hints, &res)) != 0) {
		pasci_fmt(err, errlen, "metrics address '%s': %s", addr,
		    gai_strerror(rv));
		return -1;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) != 0 ||
	    listen(fd, 64) != 0) {
		pasci_fmt(err, errlen,
		    "cannot serve metrics at %s port %d: %s", addr, port,
		    strerror(errno));
		if (fd >= 0) {
			close(fd);
		}
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

static int
bound_port(int fd)
{
	struct sockaddr_storage a;
	socklen_t               len = sizeof(a);
	if (getsockname(fd, (struct sockaddr *) &a, &len) != 0) {
		return -1;
	}
	return ntohs(a.ss_family == AF_INET6
	                 ? ((struct sockaddr_in6 *) &a)->sin6_port
	                 : ((struct sockaddr_in *) &a)->sin_port);
}

int
pasci_metrics_http_start(pasci_metrics_http **out, const char *addr, int port,
    const char *task, int read_ms, char *err, size_t errlen)
{
	pasci_metrics_http *h = pasci_calloc(1, sizeof(*h));
	sigset_t            all, old;
	*out = NULL;
	if (h == NULL) {
		pasci_fmt(
		    err, errlen, "out of memory for the metrics endpoint");
		return -1;
	}
	for (int i = 0; i < PASCI_METRICS_CLIENTS; i++) {
		h->clients[i].fd = -1;
	}
	h->read_ms = read_ms;
	pasci_fmt(h->task, sizeof(h->task), "%s", task);
	if ((h->listen_fd = listen_at(addr, port, err, errlen)) < 0) {
		free(h);
		return -1;
	}
	h->port = bound_port(h->listen_fd);
	pasci_metrics_set_namer(PASCI_MF_REQUESTS, pasci_method_name);
	pasci_metrics_set_namer(PASCI_MF_PARTS, pasci_method_name);
	if (pipe2(h->wake, O_CLOEXEC) != 0) {
		pasci_fmt(err, errlen, "metrics endpoint: pipe: %s",
		    strerror(errno));
		close(h->listen_fd);
		free(h);
		return -1;
	}
	/* the thread takes no signal: pasco_main's sigwait gets them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rv = pthread_create(&h->thread, NULL, serve_main, h);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rv != 0) {
		pasci_fmt(err, errlen,
		    "metrics endpoint: cannot start its thread: %s",
		    strerror(rv));
		close(h->wake[0]);
		close(h->wake[1]);
		close(h->listen_fd);
		free(h);
		return -1;
	}
	*out = h;
	return 0;
}

int
pasci_metrics_http_port(const pasci_metrics_http *h)
{
	return h->port;
}

void
pasci_metrics_http_stop(pasci_metrics_http *h)
{
	if (h == NULL) {
		return;
	}
	(void) !write(h->wake[1], "x", 1);
	pthread_join(h->thread, NULL);
	for (int i = 0; i < PASCI_METRICS_CLIENTS; i++) {
		if (h->clients[i].fd >= 0) {
			close(h->clients[i].fd);
		}
	}
	close(h->listen_fd);
	close(h->wake[0]);
	close(h->wake[1]);
	free(h);
}

/* The host the task's own listener binds ("0.0.0.0" with no address). */
static void
task_host(const pasco_cluster *cluster, char *host, size_t len)
{
	pasco_role  role = pasco_cluster_task_role(cluster);
	int32_t     i    = pasco_cluster_task_index(cluster);
	const char *url  = role == PASCO_ROLE_NONE
	                       ? NULL
	                       : pasco_cluster_url(cluster, role, (size_t) i);
	const char *bind = getenv("PASCO_BIND_ADDRESS");
	char        listen[320], port[16];
	snprintf(host, len, "%s", bind != NULL && *bind ? bind : "0.0.0.0");
	if (url != NULL &&
	    pasci_listen_url(url, listen, sizeof(listen)) == 0) {
		pasci_url_split(listen, host, len, port, sizeof(port));
	}
}

int
pasci_metrics_serve_task(pasci_metrics_http **out,
    const pasco_cluster *cluster, char *err, size_t errlen)
{
	const char *port_s = getenv("PASCO_METRICS_PORT");
	const char *addr   = getenv("PASCO_METRICS_ADDR");
	pasco_role  role   = pasco_cluster_task_role(cluster);
	char        host[256], task[64], url[320], *end = NULL;
	long        port;

	*out = NULL;
	if (port_s == NULL || *port_s == 0) {
		return 0;
	}
	port = strtol(port_s, &end, 10);
	if (*end != 0 || port < 0 || port > 65535) {
		pasci_fmt(err, errlen,
		    "the metrics port '%s' (--metrics-port, "
		    "PASCO_METRICS_PORT) "
		    "is not a number from 0 to 65535",
		    port_s);
		return -1;
	}
	if (addr != NULL && *addr != 0) {
		snprintf(host, sizeof(host), "%s", addr);
	} else {
		task_host(cluster, host, sizeof(host));
	}
	pasci_fmt(task, sizeof(task), "%s:%d",
	    role == PASCO_ROLE_NONE ? "chief" : pasco_role_name(role),
	    role == PASCO_ROLE_NONE ? 0
	                            : (int) pasco_cluster_task_index(cluster));
	if (pasci_metrics_http_start(out, host, (int) port, task,
	        PASCI_METRICS_READ_MS, err, errlen) != 0) {
		return -1;
	}
	pasci_fmt(url, sizeof(url), "http://%s%s%s:%d/metrics",
	    strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
	    pasci_metrics_http_port(*out));
	if (port == 0) { /* chosen here: the user must be told */
		fprintf(stderr, "pasco: %s metrics at %s\n", task, url);
	} else {
		pasci_log(PASCI_LOG_INFO, "metrics at %s", url);
	}
	return 0;
}
