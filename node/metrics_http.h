/*
 * A task's metrics endpoint: a small HTTP/1.1 server on a thread of its
 * own that answers GET /metrics with the registry's text
 * (base/metrics_registry.h) and nothing else. docs/metrics.md is the
 * user's guide.
 */
#ifndef PASCI_METRICS_HTTP_H
#define PASCI_METRICS_HTTP_H

#include <stddef.h>

#include "pasco/cluster.h"

#define PASCI_METRICS_READ_MS 5000     /* a request's whole head, at most */
#define PASCI_METRICS_REQUEST_MAX 8192 /* bytes of a request's head */
#define PASCI_METRICS_CLIENTS 16       /* connections read at once */

typedef struct pasci_metrics_http pasci_metrics_http;

/* Listens at addr (a numeric IPv4 or IPv6 address, or a host name) and
 * port (0: any free port) and serves on a thread, every series labelled
 * task="<task>". A request whose head is not in within read_ms, or is
 * over PASCI_METRICS_REQUEST_MAX bytes, is answered (408, 431) and
 * closed; past PASCI_METRICS_CLIENTS connections, the oldest is closed.
 * Returns 0, or -1 with the reason in err (the address, the port and
 * the system's error). The thread blocks every signal. Thread-safe. */
int pasci_metrics_http_start(pasci_metrics_http **out, const char *addr,
    int port, const char *task, int read_ms, char *err, size_t errlen);

/* The port it listens on (the one chosen, when asked for 0). */
int pasci_metrics_http_port(const pasci_metrics_http *h);

/* Stops the thread, closes every connection and frees. NULL is a no-op.
 * Not thread-safe: call once, from the thread that started it. */
void pasci_metrics_http_stop(pasci_metrics_http *h);

/* The endpoint pasco_main starts for this process's task, when
 * PASCO_METRICS_PORT (--metrics-port) is set; *out is NULL when it is not.
 * The address is PASCO_METRICS_ADDR when set, else the interface the task
 * binds its listener to (its cluster host when that is a loopback
 * address, PASCO_BIND_ADDRESS when set, else every interface). Logs the
 * address it serves at. -1 with the reason in err when the port is not a
 * number from 0 to 65535 or cannot be listened on. Not thread-safe: call
 * from the main thread. */
int pasci_metrics_serve_task(pasci_metrics_http **out,
    const pasco_cluster *cluster, char *err, size_t errlen);

#endif
