/*
 * A bounded nng_close (sock_close.h): the closing thread and the caller
 * share one record; whoever is last frees it.
 */
#include "sock_close.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "util.h"

typedef struct closing {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	nng_socket      sock;
	bool            closed, abandoned;
	void (*done)(void *);
	void *arg;
} closing;

static void *
close_main(void *p)
{
	closing *cl = p;
	bool     abandoned;
	pasci_thread_name("pasco-close");
	nng_close(cl->sock);
	pthread_mutex_lock(&cl->mu);
	cl->closed = true;
	abandoned  = cl->abandoned;
	pthread_cond_broadcast(&cl->cv);
	pthread_mutex_unlock(&cl->mu);
	if (abandoned) {
		cl->done(cl->arg);
		pthread_cond_destroy(&cl->cv);
		pthread_mutex_destroy(&cl->mu);
		free(cl);
	}
	return NULL;
}

bool
pasci_sock_close_bounded(nng_socket sock, const char *what, int wait_ms,
    void (*timed_out)(void *), void (*done)(void *), void      *arg)
{
	closing        *cl = pasci_calloc(1, sizeof(*cl));
	pthread_t       t;
	struct timespec until;
	bool            closed;

	if (cl == NULL) {
		nng_close(sock);
		return true;
	}
	pthread_mutex_init(&cl->mu, NULL);
	pthread_cond_init(&cl->cv, NULL);
	cl->sock = sock;
	cl->done = done;
	cl->arg  = arg;
	if (pthread_create(&t, NULL, close_main, cl) != 0) {
		nng_close(sock);
		closed = true;
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_ms / 1000;
	until.tv_nsec += (long) (wait_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&cl->mu);
	while (!cl->closed &&
	       pthread_cond_timedwait(&cl->cv, &cl->mu, &until) == 0) {
	}
	closed = cl->closed;
	pthread_mutex_unlock(&cl->mu);
	if (!closed) {
		pasci_log(PASCI_LOG_WARN,
		    "closing %s did not finish within %d ms (nng 1.5's "
		    "nng_close can hang here); going on without it",
		    what, wait_ms);
		if (timed_out != NULL) {
			timed_out(arg);
		}
		pthread_mutex_lock(&cl->mu);
		closed        = cl->closed;
		cl->abandoned = !closed;
		pthread_mutex_unlock(&cl->mu);
	}
	if (!closed) {
		pthread_detach(t); /* it frees cl and calls done */
		return false;
	}
	pthread_join(t, NULL);
out:
	pthread_cond_destroy(&cl->cv);
	pthread_mutex_destroy(&cl->mu);
	free(cl);
	return true;
}
