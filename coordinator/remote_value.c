/*
 * Remote values: futures completed by RPC completion threads and read by
 * the user's threads. Each has its own lock; references are held by the
 * user and by the closure that will complete it.
 */
#include <stdlib.h>

#include "coordinator_impl.h"
#include "util.h"

struct pasco_remote_value {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	int             refs;  /* protected by mu */
	bool            ready; /* protected by mu; then immutable: */
	int             err;
	char           *msg;
	pasco_value    *value;
	pasci_counter  *fetches; /* held, or NULL: counts fetches that
	                          * returned a value */
};

pasco_remote_value *
pasci_remote_value_new(void)
{
	pasco_remote_value *rv = pasci_calloc(1, sizeof(*rv));
	if (rv != NULL) {
		pthread_mutex_init(&rv->mu, NULL);
		pthread_cond_init(&rv->cv, NULL);
		rv->refs = 1;
	}
	return rv;
}

void
pasci_remote_value_hold(pasco_remote_value *rv)
{
	pthread_mutex_lock(&rv->mu);
	rv->refs++;
	pthread_mutex_unlock(&rv->mu);
}

void
pasco_remote_value_free(pasco_remote_value *rv)
{
	bool last;
	if (rv == NULL) {
		return;
	}
	pthread_mutex_lock(&rv->mu);
	last = --rv->refs == 0;
	pthread_mutex_unlock(&rv->mu);
	if (last) {
		pasci_counter_release(rv->fetches);
		pasco_value_free(rv->value);
		free(rv->msg);
		pthread_cond_destroy(&rv->cv);
		pthread_mutex_destroy(&rv->mu);
		free(rv);
	}
}

static void
complete(pasco_remote_value *rv, pasco_value *value, int err, const char *msg)
{
	pthread_mutex_lock(&rv->mu);
	if (rv->ready) {
		pthread_mutex_unlock(&rv->mu);
		pasco_value_free(value);
		return;
	}
	rv->value = value;
	rv->err   = err;
	rv->msg   = pasci_strdup(msg != NULL ? msg : "");
	rv->ready = true;
	pthread_cond_broadcast(&rv->cv);
	pthread_mutex_unlock(&rv->mu);
}

void
pasci_remote_value_set(pasco_remote_value *rv, pasco_value *value)
{
	complete(rv, value, PASCO_OK, "");
}

void
pasci_remote_value_fail(pasco_remote_value *rv, int err, const char *msg)
{
	complete(rv, NULL, err, msg);
}

int
pasco_remote_value_fetch(pasco_remote_value *rv, const pasco_value **out)
{
	pthread_mutex_lock(&rv->mu);
	while (!rv->ready) {
		pthread_cond_wait(&rv->cv, &rv->mu);
	}
	pthread_mutex_unlock(&rv->mu);
	*out = rv->err == 0 ? rv->value : NULL;
	if (rv->err == 0 && rv->fetches != NULL) {
		pasci_counter_add(rv->fetches, 1);
	}
	if (rv->err != 0) {
		/* ready: msg is written once, before ready was set */
		pasci_error_note(rv->msg);
	}
	return rv->err;
}

void
pasci_remote_value_count_fetches(pasco_remote_value *rv, pasci_counter *n)
{
	pasci_counter_hold(n);
	rv->fetches = n; /* before rv is handed out: no lock needed */
}

bool
pasco_remote_value_is_ready(const pasco_remote_value *rv)
{
	bool ready;
	pthread_mutex_lock((pthread_mutex_t *) &rv->mu);
	ready = rv->ready;
	pthread_mutex_unlock((pthread_mutex_t *) &rv->mu);
	return ready;
}

const char *
pasco_remote_value_error(const pasco_remote_value *rv)
{
	return pasco_remote_value_is_ready(rv) && rv->msg != NULL ? rv->msg
	                                                          : "";
}
