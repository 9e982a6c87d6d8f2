/*
 * Name lookups with a deadline (see resolve.h). A lookup is a small object
 * shared by its caller and its thread, each holding one reference: the
 * thread runs getaddrinfo, keeps the first address, signals and drops its
 * reference; the caller waits as long as it chose and drops its own, so
 * whoever is last frees it, and a caller never waits on getaddrinfo past
 * its deadline.
 */
#include "resolve.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

struct pasci_lookup {
	pthread_mutex_t mu;
	pthread_cond_t  cv; /* done became true */
	/* Protected by mu. */
	int            refs; /* the caller's and the running thread's */
	bool           done;
	int            gai; /* getaddrinfo's result, once done */
	bool           found;
	pasci_sockaddr addr; /* the first address, when found */
	/* Set before the thread starts, then read only. */
	char            host[256];
	char            port[16];
	int             flags;
	pasci_lookup_fn fn;
};

static pasci_lookup_fn lookup_fn; /* NULL: getaddrinfo */

void
pasci_resolve_set_lookup(pasci_lookup_fn fn)
{
	lookup_fn = fn;
}

static void
lookup_unhold(pasci_lookup *l)
{
	bool last;
	pthread_mutex_lock(&l->mu);
	last = --l->refs == 0;
	pthread_mutex_unlock(&l->mu);
	if (last) {
		pthread_cond_destroy(&l->cv);
		pthread_mutex_destroy(&l->mu);
		free(l);
	}
}

/* The first IPv4 or IPv6 address of ai into *addr, as nng takes it. */
static bool
first_inet(const struct addrinfo *ai, pasci_sockaddr *addr)
{
	for (; ai != NULL; ai = ai->ai_next) {
		if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
		    ai->ai_addrlen <= sizeof(addr->sa)) {
			memcpy(&addr->sa, ai->ai_addr, ai->ai_addrlen);
			addr->len = ai->ai_addrlen;
			return true;
		}
	}
	return false;
}

static int
lookup_run(pasci_lookup_fn fn, const char *host, const char *port, int flags,
    pasci_sockaddr *addr, bool *found)
{
	struct addrinfo  hints = {.ai_family = AF_UNSPEC,
	     .ai_socktype                    = SOCK_STREAM,
	     .ai_flags                       = AI_NUMERICSERV | flags};
	struct addrinfo *ai    = NULL;
	int              gai;

	gai    = fn != NULL ? fn(host, port, &hints, &ai)
	                    : getaddrinfo(host, port, &hints, &ai);
	*found = gai == 0 && first_inet(ai, addr);
	if (ai != NULL) {
		freeaddrinfo(ai);
	}
	return gai;
}

static void *
lookup_main(void *arg)
{
	pasci_lookup  *l = arg;
	pasci_sockaddr addr;
	bool           found;
	int            gai;

	pasci_thread_name("pasco-lookup");
	gai = lookup_run(l->fn, l->host, l->port, l->flags, &addr, &found);
	pthread_mutex_lock(&l->mu);
	l->done  = true;
	l->gai   = gai;
	l->found = found;
	l->addr  = addr;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
	lookup_unhold(l);
	return NULL;
}

bool
pasci_host_is_numeric(const char *host)
{
	struct in6_addr a6;
	struct in_addr  a4;
	return inet_pton(AF_INET, host, &a4) == 1 ||
	       inet_pton(AF_INET6, host, &a6) == 1;
}

int
pasci_lookup_start(pasci_lookup **out, const char *host, const char *port,
    int flags, char *detail, size_t len)
{
	pasci_lookup      *l;
	pthread_condattr_t ca;
	pthread_attr_t     ta;
	pthread_t          th;
	int                rv;

	*out = NULL;
	if ((l = pasci_calloc(1, sizeof(*l))) == NULL) {
		pasci_fmt(detail, len, "out of memory looking up '%s'", host);
		return PASCO_ENOMEM;
	}
	pasci_fmt(l->host, sizeof(l->host), "%s", host);
	pasci_fmt(l->port, sizeof(l->port), "%s", port);
	l->flags = flags;
	l->fn    = lookup_fn;
	l->refs  = 1;
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (pasci_host_is_numeric(host)) { /* no name service involved */
		l->gai  = lookup_run(NULL, host, port, flags | AI_NUMERICHOST,
		     &l->addr, &l->found);
		l->done = true;
		*out    = l;
		return PASCO_OK;
	}
	l->refs = 2;
	pthread_attr_init(&ta);
	pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
	rv = pthread_create(&th, &ta, lookup_main, l);
	pthread_attr_destroy(&ta);
	if (rv != 0) {
		l->refs = 1;
		pasci_lookup_release(l);
		pasci_fmt(detail, len,
		    "cannot start a thread to look up '%s': %s", host,
		    strerror(rv));
		return PASCO_EIO;
	}
	*out = l;
	return PASCO_OK;
}

int
pasci_lookup_wait(pasci_lookup *l, int64_t timeout_ms, pasci_sockaddr *addr,
    char *detail, size_t len)
{
	struct timespec ts;
	int             rv;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
	ts.tv_sec += timeout_ms / 1000;
	ts.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&l->mu);
	while (!l->done && pthread_cond_timedwait(&l->cv, &l->mu, &ts) == 0) {
	}
	if (!l->done) {
		rv = PASCO_ETIMEDOUT;
		pasci_fmt(
		    detail, len, "looking up '%s' has not finished", l->host);
	} else if (l->found) {
		*addr = l->addr;
		rv    = PASCO_OK;
	} else {
		rv = PASCO_ENOTFOUND;
		pasci_fmt(detail, len, "cannot resolve '%s': %s", l->host,
		    l->gai != 0 ? gai_strerror(l->gai)
		                : "no IPv4 or IPv6 address");
	}
	pthread_mutex_unlock(&l->mu);
	return rv;
}

void
pasci_lookup_release(pasci_lookup *l)
{
	if (l != NULL) {
		lookup_unhold(l);
	}
}

int
pasci_resolve(const char *host, const char *port, int flags,
    int64_t timeout_ms, pasci_sockaddr *addr, char *detail, size_t len)
{
	pasci_lookup *l;
	int rv = pasci_lookup_start(&l, host, port, flags, detail, len);
	if (rv != 0) {
		return rv;
	}
	if ((rv = pasci_lookup_wait(l, timeout_ms, addr, detail, len)) ==
	    PASCO_ETIMEDOUT) {
		pasci_fmt(detail, len,
		    "looking up '%s' got no answer within %lld ms (the name "
		    "service is slow or does not answer)",
		    host, (long long) timeout_ms);
	}
	pasci_lookup_release(l);
	return rv;
}

void
pasci_sockaddr_host(
    const pasci_sockaddr *addr, char *buf, size_t len, int *port)
{
	const struct sockaddr_in  *a4 = (const void *) &addr->sa;
	const struct sockaddr_in6 *a6 = (const void *) &addr->sa;
	if (addr->sa.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &a6->sin6_addr, buf, (socklen_t) len);
		*port = ntohs(a6->sin6_port);
	} else {
		inet_ntop(AF_INET, &a4->sin_addr, buf, (socklen_t) len);
		*port = ntohs(a4->sin_port);
	}
}
