/*
 * A name service that does not answer, for the lookup-deadline tests
 * (test_bulk.c, test_rpc.c): stuck_wait blocks a lookup of "*.stuck.test"
 * until stuck_release lets it go. Header-only: each test is one program.
 */
#ifndef PASCO_TEST_STUCK_LOOKUP_H
#define PASCO_TEST_STUCK_LOOKUP_H

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static pthread_mutex_t stuck_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t  stuck_cv = PTHREAD_COND_INITIALIZER;
static bool            stuck_released;
static int             stuck_waiting;

/* Whether host is a stuck name; if so, returns only once released. */
static inline bool
stuck_wait(const char *host)
{
	if (strstr(host, ".stuck.test") == NULL) {
		return false;
	}
	pthread_mutex_lock(&stuck_mu);
	stuck_waiting++;
	while (!stuck_released) {
		pthread_cond_wait(&stuck_cv, &stuck_mu);
	}
	stuck_waiting--;
	pthread_cond_broadcast(&stuck_cv);
	pthread_mutex_unlock(&stuck_mu);
	return true;
}

/* Lets the stuck lookups go and waits (at most 5 s) until they return. */
static inline void
stuck_release(void)
{
	int64_t until = pasci_now_ms() + 5000;
	pthread_mutex_lock(&stuck_mu);
	stuck_released = true;
	pthread_cond_broadcast(&stuck_cv);
	while (stuck_waiting > 0 && pasci_now_ms() < until) {
		pthread_mutex_unlock(&stuck_mu);
		usleep(1000);
		pthread_mutex_lock(&stuck_mu);
	}
	pthread_mutex_unlock(&stuck_mu);
}

#endif
