/*
 * The connections of an nng server (see conns.h): a small table under one
 * lock, looked up linearly (a server has a few peers; at most twice the
 * cap). Every request asks whether its connection is a member; a count of
 * the strangers, read without the lock, makes that free once there are
 * none. nng_pipe_close runs after the lock is dropped: closing a pipe
 * calls the server's pipe callbacks, which come back here.
 */
#include "conns.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#define DEFAULT_MAX 256
#define DEFAULT_IDLE_S 120
#define LOG_MS 10000 /* a cap's log line at most this often */

typedef struct conn {
	uint32_t id;
	int64_t  opened_ms;
	bool     member;
} conn;

struct pasci_conns {
	pthread_mutex_t mu;
	conn           *v; /* 2 * max entries: max of each kind */
	int             n, max;
	int     strangers;   /* entries not members; atomic reads outside mu */
	int64_t deadline_ms; /* a stranger's; 0: none */
	int64_t evict_logged_ms, full_logged_ms;
	char    what[128];
};

/* A non-negative integer from the environment, or fallback (warned). */
static int64_t
env_number(const char *name, int64_t fallback)
{
	const char *v = getenv(name);
	char       *end;
	long long   n;
	if (v == NULL || *v == 0) {
		return fallback;
	}
	n = strtoll(v, &end, 10);
	if (*end != 0 || n < 0) {
		pasci_log(PASCI_LOG_WARN,
		    "%s='%s' is not a number; using %lld", name, v,
		    (long long) fallback);
		return fallback;
	}
	return n;
}

void
pasci_conn_limits(int *max, int64_t *idle_ms)
{
	*max     = (int) env_number("PASCO_MAX_CONNECTIONS", DEFAULT_MAX);
	*max     = *max > 0 ? *max : DEFAULT_MAX;
	*idle_ms = env_number("PASCO_IDLE_TIMEOUT", DEFAULT_IDLE_S) * 1000;
}

int
pasci_conns_create(pasci_conns **out, const char *what, bool keyed)
{
	pasci_conns *c = pasci_calloc(1, sizeof(*c));
	int64_t      idle_ms;
	*out = NULL;
	if (c == NULL) {
		return PASCO_ENOMEM;
	}
	pasci_conn_limits(&c->max, &idle_ms);
	c->deadline_ms = idle_ms;
	if (keyed && (idle_ms <= 0 || idle_ms > PASCI_CONNS_HANDSHAKE_MS)) {
		c->deadline_ms = PASCI_CONNS_HANDSHAKE_MS;
	}
	if ((c->v = pasci_calloc(2 * (size_t) c->max, sizeof(*c->v))) ==
	    NULL) {
		free(c);
		return PASCO_ENOMEM;
	}
	pasci_fmt(c->what, sizeof(c->what), "%s", what);
	pthread_mutex_init(&c->mu, NULL);
	*out = c;
	return PASCO_OK;
}

void
pasci_conns_destroy(pasci_conns *c)
{
	if (c != NULL) {
		pthread_mutex_destroy(&c->mu);
		free(c->v);
		free(c);
	}
}

static void
drop_locked(pasci_conns *c, int i)
{
	if (!c->v[i].member) {
		__atomic_sub_fetch(&c->strangers, 1, __ATOMIC_RELAXED);
	}
	c->v[i] = c->v[--c->n];
}

/* Whether to log a cap's line now (at most every LOG_MS). */
static bool
should_log_locked(int64_t *logged_ms)
{
	int64_t now = pasci_now_ms();
	if (*logged_ms != 0 && now - *logged_ms < LOG_MS) {
		return false;
	}
	*logged_ms = now;
	return true;
}

/* The oldest stranger's index; the caller knows there is one. */
static int
oldest_stranger_locked(const pasci_conns *c)
{
	int oldest = -1;
	for (int i = 0; i < c->n; i++) {
		if (!c->v[i].member &&
		    (oldest < 0 ||
		        c->v[i].opened_ms < c->v[oldest].opened_ms)) {
			oldest = i;
		}
	}
	return oldest;
}

void
pasci_conns_add(pasci_conns *c, nng_pipe p)
{
	uint32_t evicted = 0;
	bool     log     = false;
	pthread_mutex_lock(&c->mu);
	if (__atomic_load_n(&c->strangers, __ATOMIC_RELAXED) >= c->max) {
		int oldest = oldest_stranger_locked(c);
		evicted    = c->v[oldest].id;
		drop_locked(c, oldest);
		log = should_log_locked(&c->evict_logged_ms);
	}
	c->v[c->n++] = (conn){nng_pipe_id(p), pasci_now_ms(), false};
	__atomic_add_fetch(&c->strangers, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->mu);
	if (evicted != 0) {
		/* its removal callback finds it gone: a no-op */
		nng_pipe_close((nng_pipe){.id = evicted});
	}
	if (log) {
		pasci_log(PASCI_LOG_WARN,
		    "%s: %d connections have not proved themselves, the most "
		    "allowed (PASCO_MAX_CONNECTIONS); closing the oldest to "
		    "make room",
		    c->what, c->max);
	}
}

bool
pasci_conns_admit(pasci_conns *c, nng_pipe p, char *why, size_t len)
{
	uint32_t id = nng_pipe_id(p);
	int      members;
	bool     ok = true, log = false;
	/* every request asks: once none is a stranger, no lock at all */
	if (__atomic_load_n(&c->strangers, __ATOMIC_RELAXED) == 0) {
		return true;
	}
	pthread_mutex_lock(&c->mu);
	members = c->n - c->strangers;
	for (int i = 0; i < c->n; i++) {
		if (c->v[i].id != id || c->v[i].member) {
			continue;
		}
		if ((ok = members < c->max)) {
			c->v[i].member = true;
			__atomic_sub_fetch(&c->strangers, 1, __ATOMIC_RELAXED);
		} else {
			log = should_log_locked(&c->full_logged_ms);
		}
		break;
	}
	pthread_mutex_unlock(&c->mu);
	if (!ok) {
		pasci_fmt(why, len,
		    "%s holds %d connections of cluster members, the most "
		    "allowed (PASCO_MAX_CONNECTIONS); refusing one more",
		    c->what, members);
		if (log) {
			pasci_log(PASCI_LOG_WARN, "%s", why);
		}
	}
	return ok;
}

void
pasci_conns_remove(pasci_conns *c, nng_pipe p)
{
	uint32_t id = nng_pipe_id(p);
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < c->n; i++) {
		if (c->v[i].id == id) {
			drop_locked(c, i);
			break;
		}
	}
	pthread_mutex_unlock(&c->mu);
}

int
pasci_conns_sweep(pasci_conns *c)
{
	uint32_t late[64];
	int      n   = 0;
	int64_t  now = pasci_now_ms();
	if (c->deadline_ms <= 0) {
		return 0;
	}
	pthread_mutex_lock(&c->mu);
	for (int i = 0; i < c->n && n < 64; i++) {
		if (!c->v[i].member &&
		    now - c->v[i].opened_ms >= c->deadline_ms) {
			late[n++] = c->v[i].id;
		}
	}
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < n; i++) {
		nng_pipe p;
		p.id = late[i];
		/* the pipe callback removes it; one nng no longer knows (its
		 * removal came before it was added here) goes now */
		if (nng_pipe_close(p) == NNG_ENOENT) {
			pasci_conns_remove(c, p);
		}
	}
	if (n > 0) {
		pasci_log(PASCI_LOG_INFO,
		    "%s: closed %d connection(s) that did not prove "
		    "themselves within %lld ms (PASCO_IDLE_TIMEOUT; with a "
		    "cluster key at most %d ms)",
		    c->what, n, (long long) c->deadline_ms,
		    PASCI_CONNS_HANDSHAKE_MS);
	}
	return n;
}

int
pasci_conns_count(pasci_conns *c)
{
	int n;
	pthread_mutex_lock(&c->mu);
	n = c->n;
	pthread_mutex_unlock(&c->mu);
	return n;
}
