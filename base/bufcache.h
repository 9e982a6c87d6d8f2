/*
 * A process-wide cache of big buffers for received frames, for tensors
 * about to be sent (bulk.h) and for big tensors (pasco_tensor_alloc). Up
 * to 16 big buffers (1 MB or more, 256 MB in all) freed last are kept for
 * reuse, so a 64 MB frame does not cost 16,384 page faults each time
 * (glibc maps and unmaps buffers this big, and gives back the free top of
 * a heap past 4 MB: node/roles.c), and are dropped once unused for a
 * second by a timer thread the cache runs while it holds any, so an idle
 * process (ps, worker or chief alike) holds none. A buffer of 64 KB up to
 * 1 MB is kept by the thread that frees it (one per thread, 32 MB in all
 * threads at most) for that thread's next one, until it ends.
 * Thread-safe.
 */
#ifndef PASCI_BUFCACHE_H
#define PASCI_BUFCACHE_H

#include <stddef.h>

/* Buffers this big or bigger are kept by the process-wide cache. */
#define PASCI_BUFCACHE_MIN ((size_t) 1 << 20)

/* A buffer of at least n bytes (not zero-filled, 64-byte aligned), or NULL
 * when out of memory. Free it with pasci_bufcache_free. */
void *pasci_bufcache_alloc(size_t n);

/* Frees a buffer from pasci_bufcache_alloc, keeping it for reuse when it
 * is big. NULL is a no-op. */
void pasci_bufcache_free(void *data);

/* How many buffers the cache holds, and their capacity in bytes, for tests
 * and benchmarks. */
void pasci_bufcache_stats(size_t *nbuffers, size_t *bytes);

#endif
