/*
 * The size of a process's thread pools from its configuration (see
 * threads.h for each pool and why its default is what it is). Called by
 * pasco_main before any thread starts (or by a program that does not go
 * through it, through pasco_threads_configure: the Python package when it
 * loads the library), and by pasco_server_start for the handler pools.
 */
#include "threads.h"

#include <stdlib.h>
#include <string.h>

#include "nng_threads.h"
#include "pasco/error.h"
#include "pasco/server.h"
#include "util.h"

/* The number in variable var (or dflt when unset or empty), from 1 to max;
 * -1 with the reason in err otherwise. */
static int
env_count(const char *var, int dflt, int max, char *err, size_t errlen)
{
	const char *v = getenv(var);
	char       *end;
	long        n;
	if (v == NULL || *v == 0) {
		return dflt;
	}
	n = strtol(v, &end, 10);
	if (*end != 0 || n < 1 || n > max) {
		pasci_fmt(err, errlen,
		    "%s='%s' is not a thread count from 1 to %d", var, v, max);
		return -1;
	}
	return (int) n;
}

int
pasci_threads_handlers(pasco_role role, char *err, size_t errlen)
{
	return role == PASCO_ROLE_PS
	           ? env_count("PASCO_PS_THREADS", PASCI_PS_THREADS_DEFAULT,
	                 PASCI_THREADS_MAX, err, errlen)
	           : env_count("PASCO_WORKER_THREADS",
	                 PASCI_WORKER_THREADS_DEFAULT, PASCI_THREADS_MAX, err,
	                 errlen);
}

static int
threads_setup_once(char *err, size_t errlen)
{
	char why[512];
	int  nng = env_count(
	     "PASCO_NNG_THREADS", PASCI_NNG_THREADS_DEFAULT, 64, err, errlen);
	if (nng < 0 ||
	    pasci_threads_handlers(PASCO_ROLE_PS, err, errlen) < 0 ||
	    pasci_threads_handlers(PASCO_ROLE_WORKER, err, errlen) < 0) {
		return -1;
	}
	pasci_blas_one_thread();
	if (pasci_nng_threads_set(nng, why, sizeof(why)) != 0) {
		pasci_log(PASCI_LOG_WARN, "%s", why);
	}
	return 0;
}

/* The first setup's result and its message: only the first call sizes
 * anything (nng starts once), later ones report what it did. */
static int  setup_rv = 1; /* 1: not run yet */
static char setup_err[512];

int
pasci_threads_setup(char *err, size_t errlen)
{
	if (setup_rv == 1) {
		setup_rv = threads_setup_once(setup_err, sizeof(setup_err));
	}
	if (setup_rv != 0) {
		pasci_fmt(err, errlen, "%s", setup_err);
	}
	return setup_rv;
}

int
pasco_threads_configure(char *err, size_t errlen)
{
	char why[512];
	if (pasci_threads_setup(why, sizeof(why)) != 0) {
		pasci_fmt(err, errlen, "%s", why);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}
