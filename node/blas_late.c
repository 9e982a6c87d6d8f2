/*
 * OpenBLAS kept to one thread in a process that loaded the shared
 * library (pasci_blas_one_thread; a program linked with the static one
 * uses blas_early.c, which keeps OpenBLAS from starting its pool at all).
 * A shared library cannot run before OpenBLAS does, so here its pool was
 * started while it loaded, at one thread per CPU unless
 * OPENBLAS_NUM_THREADS (or GOTO_NUM_THREADS, OMP_NUM_THREADS) chose: when
 * none did, calls are kept to one thread and the pool's threads are
 * ended.
 *
 * Threads: call from the main thread before any BLAS call runs.
 */
#include <cblas.h>
#include <stdlib.h>

#include "threads.h"

/* OpenBLAS's own: ends its pool's threads (it calls it before a fork). */
extern int blas_thread_shutdown_(void);

void
pasci_blas_one_thread(void)
{
	if (getenv("OPENBLAS_NUM_THREADS") == NULL &&
	    getenv("GOTO_NUM_THREADS") == NULL &&
	    getenv("OMP_NUM_THREADS") == NULL) {
		openblas_set_num_threads(1);
		blas_thread_shutdown_();
	}
}
