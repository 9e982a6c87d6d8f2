/*
 * OpenBLAS kept to one thread in a program linked with the static
 * library (pasci_blas_one_thread). OpenBLAS starts its thread pool while
 * it loads, before main, at the count OPENBLAS_NUM_THREADS (or
 * GOTO_NUM_THREADS, OMP_NUM_THREADS) gives or else at the number of CPUs
 * the process may run on; openblas_set_num_threads later only changes how
 * many of them a call uses. So, when none of those variables is set, the
 * program's first thread is pinned to one of its CPUs before any library
 * starts (an entry of the program's .preinit_array, which only a program,
 * not a shared library, may have), OpenBLAS counts one CPU and starts no
 * thread, and the CPUs it had are given back before main (a constructor of
 * the program runs after its libraries'). The environment is read from
 * the array the loader passes: getenv does not work yet then.
 *
 * Threads: both run before main, on the only thread.
 */
#include <cblas.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"

static cpu_set_t blas_cpus; /* the first thread's CPUs before the pin */
static bool      blas_pinned;

static bool
env_has(char **envp, const char *name)
{
	size_t n = strlen(name);
	for (char **e = envp; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
			return true;
		}
	}
	return false;
}

static void
blas_pin(int argc, char **argv, char **envp)
{
	cpu_set_t one;
	(void) argc;
	(void) argv;
	if (env_has(envp, "OPENBLAS_NUM_THREADS") ||
	    env_has(envp, "GOTO_NUM_THREADS") ||
	    env_has(envp, "OMP_NUM_THREADS") ||
	    sched_getaffinity(0, sizeof(blas_cpus), &blas_cpus) != 0) {
		return;
	}
	CPU_ZERO(&one);
	for (int i = 0; i < CPU_SETSIZE; i++) {
		if (CPU_ISSET(i, &blas_cpus)) {
			CPU_SET(i, &one);
			break;
		}
	}
	blas_pinned = sched_setaffinity(0, sizeof(one), &one) == 0;
}

typedef void (*preinit_fn)(int, char **, char **);

__attribute__((section(".preinit_array"),
    used)) static const preinit_fn blas_pin_entry = blas_pin;

__attribute__((constructor)) static void
blas_unpin(void)
{
	if (blas_pinned) {
		sched_setaffinity(0, sizeof(blas_cpus), &blas_cpus);
		blas_pinned = false;
	}
}

void
pasci_blas_one_thread(void)
{
	/* no pool was started (or the environment chose one); calls use
	 * one thread unless it chose */
	if (getenv("OPENBLAS_NUM_THREADS") == NULL &&
	    getenv("GOTO_NUM_THREADS") == NULL &&
	    getenv("OMP_NUM_THREADS") == NULL) {
		openblas_set_num_threads(1);
	}
}
