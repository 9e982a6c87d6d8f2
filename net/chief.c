/*
 * One chief per cluster (see chief.h): this process's identity as a
 * chief, and a server's seat for the chief it serves. The seat's table
 * (the served chief, its connections, the incarnations it replaced) is
 * under its mu; the old incarnation's pipes are closed, and refusals
 * logged, after mu is dropped (closing a pipe runs the server's pipe
 * callback, which comes back to pasci_chief_seat_forget).
 */
#include "chief.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define SEAT_RETIRED 8    /* replaced incarnations remembered */
#define SEAT_LOG_MS 10000 /* a refusal is logged at most this often */

static uint64_t       self_incarnation;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void
self_init(void)
{
	while (self_incarnation == 0) {
		self_incarnation = pasci_random_u64();
	}
}

void
pasci_chief_self(const pasco_cluster *cluster, pasci_chief *out)
{
	const char *url = cluster != NULL
	                      ? pasco_cluster_url(cluster, PASCO_ROLE_CHIEF, 0)
	                      : NULL;
	pthread_once(&self_once, self_init);
	out->incarnation = self_incarnation;
	if (url != NULL && *url != 0) {
		pasci_fmt(out->name, sizeof(out->name), "%s", url);
	} else {
		char host[64] = "";
		gethostname(host, sizeof(host) - 1);
		pasci_fmt(out->name, sizeof(out->name), "host %s pid %d", host,
		    (int) getpid());
	}
}

struct pasci_chief_seat {
	char what[128]; /* read only */

	pthread_mutex_t mu;
	/* Protected by mu. */
	bool        taken; /* a chief was ever served */
	pasci_chief chief;
	uint32_t   *pipes; /* the chief's connections */
	int         npipes, cap;
	uint64_t    retired[SEAT_RETIRED]; /* of chief.name, replaced */
	int         nretired;
	int64_t     logged_ms;
	unsigned    suppressed;
};

int
pasci_chief_seat_create(pasci_chief_seat **out, const char *what)
{
	pasci_chief_seat *s = pasci_calloc(1, sizeof(*s));
	if ((*out = s) == NULL) {
		return PASCO_ENOMEM;
	}
	pasci_fmt(s->what, sizeof(s->what), "%s", what);
	pthread_mutex_init(&s->mu, NULL);
	return PASCO_OK;
}

void
pasci_chief_seat_destroy(pasci_chief_seat *s)
{
	if (s != NULL) {
		pthread_mutex_destroy(&s->mu);
		free(s->pipes);
		free(s);
	}
}

static bool
seat_add_pipe_locked(pasci_chief_seat *s, uint32_t id)
{
	for (int i = 0; i < s->npipes; i++) {
		if (s->pipes[i] == id) {
			return true;
		}
	}
	if (s->npipes == s->cap) {
		int       cap = s->cap > 0 ? 2 * s->cap : 8;
		uint32_t *p   = realloc(s->pipes, sizeof(*p) * (size_t) cap);
		if (p == NULL) {
			return false;
		}
		s->pipes = p;
		s->cap   = cap;
	}
	s->pipes[s->npipes++] = id;
	return true;
}

static bool
seat_retired_locked(const pasci_chief_seat *s, uint64_t incarnation)
{
	for (int i = 0; i < s->nretired && i < SEAT_RETIRED; i++) {
		if (s->retired[i] == incarnation) {
			return true;
		}
	}
	return false;
}

/* The seat goes to (name, incarnation); the pipes of the chief it held
 * are moved to *old (the caller closes them), *nold. */
static void
seat_give_locked(pasci_chief_seat *s, const char *name, uint64_t incarnation,
    uint32_t **old, int *nold)
{
	bool same_name = s->taken && strcmp(s->chief.name, name) == 0;
	if (same_name) {
		s->retired[s->nretired++ % SEAT_RETIRED] =
		    s->chief.incarnation;
	} else {
		s->nretired = 0; /* another chief: its history starts anew */
	}
	*old      = s->pipes;
	*nold     = s->npipes;
	s->pipes  = NULL;
	s->npipes = s->cap = 0;
	s->taken           = true;
	pasci_fmt(s->chief.name, sizeof(s->chief.name), "%s", name);
	s->chief.incarnation = incarnation;
}

/* Why (name, incarnation) may not have the seat, into why; "" when it
 * may. */
static void
seat_refusal_locked(const pasci_chief_seat *s, const char *name,
    uint64_t incarnation, char *why, size_t len)
{
	bool same_name = strcmp(s->chief.name, name) == 0;
	why[0]         = 0;
	if (same_name && seat_retired_locked(s, incarnation)) {
		pasci_fmt(why, len,
		    "%s refused chief %s (incarnation %016llx): a newer "
		    "incarnation of that chief (%016llx) replaced it",
		    s->what, name, (unsigned long long) incarnation,
		    (unsigned long long) s->chief.incarnation);
	} else if (!same_name && s->npipes > 0) {
		pasci_fmt(why, len,
		    "%s refused chief %s: it already serves chief %s "
		    "(incarnation %016llx), which is connected; one chief "
		    "per cluster at a time (is another job using these "
		    "addresses?)",
		    s->what, name, s->chief.name,
		    (unsigned long long) s->chief.incarnation);
	}
}

static void
seat_log_refusal(pasci_chief_seat *s, const char *why)
{
	bool     log;
	unsigned more = 0;
	int64_t  now  = pasci_now_ms();
	pthread_mutex_lock(&s->mu);
	log = s->logged_ms == 0 || now - s->logged_ms >= SEAT_LOG_MS;
	if (log) {
		s->logged_ms  = now;
		more          = s->suppressed;
		s->suppressed = 0;
	} else {
		s->suppressed++;
	}
	pthread_mutex_unlock(&s->mu);
	if (log && more > 0) {
		pasci_log(PASCI_LOG_WARN, "%s (and %u refusals not logged)",
		    why, more);
	} else if (log) {
		pasci_log(PASCI_LOG_WARN, "%s", why);
	}
}

bool
pasci_chief_seat_claim(pasci_chief_seat *s, nng_pipe pipe, const char *name,
    uint64_t incarnation, char *why, size_t len)
{
	uint32_t *old  = NULL;
	int       nold = 0;
	bool      ok;

	pthread_mutex_lock(&s->mu);
	why[0] = 0;
	if (s->taken) {
		seat_refusal_locked(s, name, incarnation, why, len);
	}
	if (why[0] == 0 && (!s->taken || strcmp(s->chief.name, name) != 0 ||
	                       s->chief.incarnation != incarnation)) {
		seat_give_locked(s, name, incarnation, &old, &nold);
	}
	ok = why[0] == 0 &&
	     seat_add_pipe_locked(s, (uint32_t) nng_pipe_id(pipe));
	if (why[0] == 0 && !ok) {
		pasci_fmt(why, len, "%s: out of memory", s->what);
	}
	pthread_mutex_unlock(&s->mu);
	if (!ok) {
		seat_log_refusal(s, why);
	} else if (nold > 0) {
		pasci_log(PASCI_LOG_WARN,
		    "%s: chief %s is a new incarnation (%016llx); closing the "
		    "%d connection(s) of the one it replaces",
		    s->what, name, (unsigned long long) incarnation, nold);
	}
	for (int i = 0; i < nold; i++) { /* nng's locks: not under ours */
		nng_pipe_close((nng_pipe){.id = old[i]});
	}
	free(old);
	return ok;
}

void
pasci_chief_seat_forget(pasci_chief_seat *s, nng_pipe pipe)
{
	uint32_t id = (uint32_t) nng_pipe_id(pipe);
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < s->npipes; i++) {
		if (s->pipes[i] == id) {
			s->pipes[i] = s->pipes[--s->npipes];
			break;
		}
	}
	pthread_mutex_unlock(&s->mu);
}

bool
pasci_chief_seat_current(
    pasci_chief_seat *s, pasci_chief *out, int *connections)
{
	bool taken;
	pthread_mutex_lock(&s->mu);
	taken        = s->taken;
	*out         = s->chief;
	*connections = s->npipes;
	pthread_mutex_unlock(&s->mu);
	return taken;
}

uint64_t
pasci_chief_self_incarnation(void)
{
	pthread_once(&self_once, self_init);
	return self_incarnation;
}

bool
pasci_chief_seat_admits(
    pasci_chief_seat *s, uint64_t inc, char *why, size_t len)
{
	pasci_chief served;
	bool        taken;
	if (inc == 0) {
		return true;
	}
	pthread_mutex_lock(&s->mu);
	taken  = s->taken;
	served = s->chief;
	pthread_mutex_unlock(&s->mu);
	if (taken && served.incarnation == inc) {
		return true;
	}
	if (taken) {
		pasci_fmt(why, len,
		    "%s serves the chief %s (a closure came from another "
		    "chief, or from one it replaced)",
		    s->what, served.name);
	} else {
		pasci_fmt(why, len,
		    "%s serves no chief yet (a closure came before its "
		    "chief's handshake)",
		    s->what);
	}
	return false;
}
