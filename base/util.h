/*
 * Small helpers every module shares: logging, clocks, random ids, checked
 * allocation, message buffers. Internal (pasci_) only.
 */
#ifndef PASCI_UTIL_H
#define PASCI_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pasco/error.h"

/* Aborts with file:line; for broken invariants only, never bad input. */
#define PASCO_ASSERT(x)                                                       \
	do {                                                                  \
		if (!(x)) {                                                   \
			pasci_panic(__FILE__, __LINE__, #x);                  \
		}                                                             \
	} while (0)

_Noreturn void pasci_panic(const char *file, int line, const char *what);

/* Logs one line to stderr when level <= the PASCO_LOG threshold (env: a
 * name, error, warn, info or debug, or a digit 0 to 3; default warn; an
 * unknown value is reported once and means warn). The line is
 * "2024-05-01T12:00:00.123Z chief pasco info: ..." : a UTC timestamp with
 * milliseconds, the task when one was set, then the level. Thread-safe. */
enum {
	PASCI_LOG_ERROR = 0,
	PASCI_LOG_WARN  = 1,
	PASCI_LOG_INFO  = 2,
	PASCI_LOG_DEBUG = 3
};
void pasci_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Whether level would be logged. Thread-safe. */
int pasci_log_enabled(int level);

/* The task named in every log line ("ps 0", "worker 1", "chief"); NULL or
 * "" for none. pasco_main sets it; pasco_server_start sets it when none is
 * set yet. Call before the threads that log start (it is not locked). */
void pasci_log_set_task(const char *task);

/* The task set by pasci_log_set_task: "" when none. */
const char *pasci_log_task(void);

/* Monotonic milliseconds and nanoseconds. */
int64_t pasci_now_ms(void);
int64_t pasci_now_ns(void);

/* 64 random bits from the OS (never 0). */
uint64_t pasci_random_u64(void);

/* snprintf into a fixed buffer, always terminated; returns buf. */
char *pasci_fmt(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Records msg as this thread's last error (pasco_last_error): every
 * family's failure recorder calls it. NULL or "" leaves the last one (a
 * failure with nothing to say, wrapping another's empty message, must not
 * erase the cause). Thread-safe: each thread has its own. */
void pasci_error_note(const char *msg);

/* pasci_fmt into buf, then pasci_error_note(buf): for writes into the
 * buffers that hold an object's or a family's error (a strategy's, the
 * dataset's). Returns buf. */
char *pasci_error_fmt(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

char *pasci_strdup(const char *s);

/* calloc, for every zeroed allocation in the library. glibc (2.36, as
 * Debian 12 ships it) serves calloc from a heap under its lock and never
 * from the thread's own cache, and a task's threads share at most 8 heaps
 * (node/roles.c): the small blocks a step zeroes by the dozen (tensors,
 * decoded headers, calls) met on those locks. Up to 1 KB (what the
 * thread's cache holds) it is malloc and memset; past that, calloc
 * itself, which knows fresh pages are zero. NULL when count * size
 * overflows or memory is short. */
#define PASCI_CALLOC_CACHED 1024
static inline void *
pasci_calloc(size_t count, size_t size)
{
	size_t n;
	void  *p;
	if (__builtin_mul_overflow(count, size, &n)) {
		return NULL;
	}
	if (n > PASCI_CALLOC_CACHED) {
		return calloc(1, n);
	}
	if ((p = malloc(n > 0 ? n : 1)) != NULL) {
		__builtin_memset(p, 0, n);
	}
	return p;
}

/* The number in environment variable name, read now: dflt when it is
 * unset or empty; dflt too, with a warning naming the variable, the value
 * and the range, when it is no integer in [lo, hi] (unit: what it counts,
 * for the warning: "megabytes"). Thread-safe. */
long long pasci_env_number(const char *name, long long lo, long long hi,
    long long dflt, const char *unit);

/* The largest message a process accepts, nng or bulk, in bytes: 256 MB,
 * or PASCO_MAX_MESSAGE_MB (read once). A peer declaring more is refused
 * before anything is allocated for it. */
size_t pasci_max_message_bytes(void);

/* Splitmix64: a counter-based generator step. */
static inline uint64_t
pasci_mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Big-endian integers of 1 to 8 bytes in a byte buffer. */
static inline void
pasci_put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--) {
		p[i] = (uint8_t) v;
		v >>= 8;
	}
}

static inline uint64_t
pasci_get_be(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++) {
		v = (v << 8) | p[i];
	}
	return v;
}

/* Names the calling thread (truncated to 15 characters). */
void pasci_thread_name(const char *name);

#endif
