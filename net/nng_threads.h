/*
 * The size of nng's own thread pools, chosen by the process, not by the
 * machine's core count. See nng_threads.c.
 */
#ifndef PASCI_NNG_THREADS_H
#define PASCI_NNG_THREADS_H

#include <stddef.h>

/* The threads nng runs in this process. task: its task pool, which runs
 * the callbacks of completed operations (replies matched to calls,
 * requests handed to a server's threads); they never block. expire: the
 * threads that time operations out. poller and resolver are fixed by the
 * installed nng (see pasci_nng_threads_set). */
typedef struct pasci_nng_threads {
	int task;
	int expire;
	int poller;
	int resolver;
} pasci_nng_threads;

/* What nng starts with n as its sizing (PASCO_NNG_THREADS): 2n task
 * threads (at most 16) and n expire threads, one poller; 4 resolver
 * threads with nng 1.5 and 1.6 (compiled in), 1 with 1.7 and later. */
pasci_nng_threads pasci_nng_threads_for(int n);

/* Sizes nng's pools from n (1 to 64; see pasci_nng_threads_for) and
 * starts nng, so that its threads exist, at those counts, when this
 * returns. With nng 1.7 and later through nng_init_set_parameter; with
 * 1.5 and 1.6, which size them from the core count alone, by answering
 * nng's own question for the core count with n while it starts.
 * PASCO_EINVAL: n out of range. PASCO_EUNAVAILABLE: the installed nng
 * cannot be sized (linked statically, or not as expected) or started: it
 * sizes its pools itself. The reason is in err. Not thread-safe: call it
 * first, from the main thread, before anything in the process uses nng
 * (one that did keeps the pools nng started with). */
int pasci_nng_threads_set(int n, char *err, size_t errlen);

#endif
