/*
 * The big-buffer cache (see bufcache.h). Buffers of CACHE_MIN bytes or
 * more are candidates; up to CACHE_BUFFERS of those freed last (at most
 * CACHE_BYTES each, CACHE_TOTAL in all) stay cached, most recent first,
 * the least recent falling out. A buffer carries its capacity in a header
 * before the data.
 *
 * Threads: any thread allocates and frees; everything is under cache_mu.
 * While the cache holds a buffer, a detached trimmer thread runs, sleeping
 * until the oldest buffer has been unused for CACHE_KEEP_MS and freeing
 * it; it ends when the cache is empty, and the next free that caches a
 * buffer starts another. So trimming needs no owner: every process that
 * uses the cache (ps, worker, chief) lets go of big buffers once idle.
 * Memory is freed outside the lock.
 *
 * Frames and tensors share it (pasco_tensor_alloc takes its big blocks
 * here): a step's big tensors come and go every step, and glibc gives the
 * free top of a heap past 4 MB back to the system as it is freed
 * (node/roles.c), so the next step would fault their pages in again.
 *
 * Smaller buffers, from SLOT_MIN bytes up to CACHE_MIN (a step's replies
 * of a few hundred KB), are kept per thread: the thread that frees one
 * keeps it, one at most, for its next frame, so a thread that receives
 * and finishes its frames (a worker's step, a ps connection) calls malloc
 * for none of them once warm, and threads receiving at once do not meet
 * on glibc's arena locks (large blocks there take and give back heap
 * under the lock). What threads keep this way is at most SLOTS_BYTES in
 * all (slots_bytes); a thread's buffer is freed when the thread ends.
 */
#include "bufcache.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util.h"

#define BUF_HEAD 64 /* the capacity; keeps malloc's alignment for the data */
#define CACHE_MIN PASCI_BUFCACHE_MIN /* smaller ones: plain malloc */
#define CACHE_BUFFERS 16
#define CACHE_BYTES ((size_t) 160 << 20)
#define CACHE_TOTAL ((size_t) 256 << 20)
#define CACHE_KEEP_MS 1000
#define SLOT_MIN ((size_t) 64 << 10)
#define SLOTS_BYTES ((size_t) 32 << 20)

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
/* Protected by cache_mu. */
static void   *cache[CACHE_BUFFERS];    /* heads */
static int64_t cache_ms[CACHE_BUFFERS]; /* when each was freed */
static size_t  cache_total;             /* their capacities */
static bool    trimming;                /* a trimmer thread runs */

static size_t
buf_capacity(void *head)
{
	return *(size_t *) head;
}

static _Thread_local void *slot;        /* a head this thread keeps */
static size_t              slots_bytes; /* atomic: kept by all threads */
static pthread_key_t       slot_key;
static pthread_once_t      slot_once = PTHREAD_ONCE_INIT;

static void
slot_free(void *head)
{
	__atomic_sub_fetch(&slots_bytes, buf_capacity(head), __ATOMIC_RELAXED);
	free(head);
	slot = NULL;
}

static void
slot_key_make(void)
{
	(void) pthread_key_create(&slot_key, slot_free);
}

/* This thread's kept buffer when it holds n bytes, or NULL. */
static void *
slot_take(size_t n)
{
	void *head = slot;
	if (head == NULL || n < SLOT_MIN || buf_capacity(head) < n) {
		return NULL;
	}
	slot = NULL;
	(void) pthread_setspecific(slot_key, NULL);
	__atomic_sub_fetch(&slots_bytes, buf_capacity(head), __ATOMIC_RELAXED);
	return head;
}

/* Whether this thread keeps head (then it is not to be freed). */
static bool
slot_keep(void *head)
{
	size_t cap = buf_capacity(head);
	if (slot != NULL || cap < SLOT_MIN || cap >= CACHE_MIN) {
		return false;
	}
	if (__atomic_add_fetch(&slots_bytes, cap, __ATOMIC_RELAXED) >
	        SLOTS_BYTES ||
	    pthread_once(&slot_once, slot_key_make) != 0 ||
	    pthread_setspecific(slot_key, head) != 0) {
		__atomic_sub_fetch(&slots_bytes, cap, __ATOMIC_RELAXED);
		return false;
	}
	slot = head;
	return true;
}

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = {
	    .tv_sec = (time_t) (ms / 1000), .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

/* Moves the buffers unused for CACHE_KEEP_MS to old; returns when the
 * next one is due (INT64_MAX: the cache is empty). */
static int64_t
cache_trim_locked(int64_t now, void **old)
{
	int64_t next = INT64_MAX;
	for (int i = 0; i < CACHE_BUFFERS; i++) {
		if (cache[i] == NULL) {
			continue;
		}
		if (now - cache_ms[i] >= CACHE_KEEP_MS) {
			cache_total -= buf_capacity(cache[i]);
			old[i]   = cache[i];
			cache[i] = NULL;
		} else if (cache_ms[i] + CACHE_KEEP_MS < next) {
			next = cache_ms[i] + CACHE_KEEP_MS;
		}
	}
	return next;
}

static void *
cache_trimmer(void *arg)
{
	(void) arg;
	pasci_thread_name("pasco-bufcache");
	pthread_mutex_lock(&cache_mu);
	for (;;) {
		void   *old[CACHE_BUFFERS] = {0};
		int64_t now                = pasci_now_ms();
		int64_t next               = cache_trim_locked(now, old);
		if (next == INT64_MAX) {
			trimming = false; /* the next free starts another */
		}
		pthread_mutex_unlock(&cache_mu);
		for (int i = 0; i < CACHE_BUFFERS; i++) {
			free(old[i]);
		}
		if (next == INT64_MAX) {
			return NULL;
		}
		sleep_ms(next - now);
		pthread_mutex_lock(&cache_mu);
	}
}

/* Whether a trimmer runs (starting one if none does). */
static bool
trimmer_start_locked(void)
{
	pthread_attr_t attr;
	pthread_t      th;
	if (trimming) {
		return true;
	}
	if (pthread_attr_init(&attr) != 0) {
		return false;
	}
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	trimming = pthread_create(&th, &attr, cache_trimmer, NULL) == 0;
	pthread_attr_destroy(&attr);
	return trimming;
}

/* The capacity a new big buffer of n bytes gets: n rounded up to an
 * eighth of its power of two (at most 12.5% more), so that the next
 * request a little bigger (a frame or tensor of nearly the same size)
 * finds it fits. */
static size_t
big_capacity(size_t n)
{
	size_t step = (size_t) 1 << (63 - __builtin_clzll(n)) >> 3;
	return n > SIZE_MAX - step ? n : (n + step - 1) / step * step;
}

void *
pasci_bufcache_alloc(size_t n)
{
	void *head = NULL;
	if (n >= CACHE_MIN) {
		pthread_mutex_lock(&cache_mu);
		for (int i = 0; i < CACHE_BUFFERS && head == NULL; i++) {
			if (cache[i] != NULL && buf_capacity(cache[i]) >= n &&
			    buf_capacity(cache[i]) / 2 <= n) {
				head     = cache[i];
				cache[i] = NULL;
				cache_total -= buf_capacity(head);
			}
		}
		pthread_mutex_unlock(&cache_mu);
	} else {
		head = slot_take(n);
	}
	if (head == NULL) {
		size_t cap = n >= CACHE_MIN ? big_capacity(n) : n;
		if ((head = malloc(BUF_HEAD + cap)) != NULL) {
			*(size_t *) head = cap;
		}
	}
	return head != NULL ? (char *) head + BUF_HEAD : NULL;
}

/* Puts head first in the cache, the most recent; the least recent fall
 * out into evict (past CACHE_BUFFERS, or until CACHE_TOTAL holds), their
 * count returned. */
static size_t
cache_put_locked(void *head, void **evict)
{
	size_t n = 0;
	for (int i = CACHE_BUFFERS - 1; i >= 0; i--) {
		bool out = i == CACHE_BUFFERS - 1 ||
		           cache_total + buf_capacity(head) > CACHE_TOTAL;
		if (cache[i] != NULL && out) {
			evict[n++] = cache[i];
			cache_total -= buf_capacity(cache[i]);
			cache[i] = NULL;
		}
	}
	memmove(&cache[1], &cache[0], (CACHE_BUFFERS - 1) * sizeof(cache[0]));
	memmove(&cache_ms[1], &cache_ms[0],
	    (CACHE_BUFFERS - 1) * sizeof(cache_ms[0]));
	cache[0]    = head;
	cache_ms[0] = pasci_now_ms();
	cache_total += buf_capacity(head);
	return n;
}

void
pasci_bufcache_free(void *data)
{
	void  *head, *evict[CACHE_BUFFERS];
	size_t nevict = 0;
	if (data == NULL) {
		return;
	}
	head = (char *) data - BUF_HEAD;
	if (slot_keep(head)) {
		return;
	}
	evict[nevict++] = head; /* unless it is cached */
	if (buf_capacity(head) >= CACHE_MIN &&
	    buf_capacity(head) <= CACHE_BYTES) {
		pthread_mutex_lock(&cache_mu);
		/* no trimmer, no caching: an idle process must hold none */
		if (trimmer_start_locked()) {
			nevict = cache_put_locked(head, evict);
		}
		pthread_mutex_unlock(&cache_mu);
	}
	for (size_t i = 0; i < nevict; i++) {
		free(evict[i]);
	}
}

void
pasci_bufcache_stats(size_t *nbuffers, size_t *bytes)
{
	*nbuffers = 0;
	*bytes    = 0;
	pthread_mutex_lock(&cache_mu);
	for (int i = 0; i < CACHE_BUFFERS; i++) {
		if (cache[i] != NULL) {
			(*nbuffers)++;
			*bytes += buf_capacity(cache[i]);
		}
	}
	pthread_mutex_unlock(&cache_mu);
}
