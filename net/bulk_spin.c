/*
 * A short spin before a reply wait sleeps (bulk_frame.h,
 * pasci_bulk_spin_ready). A small request's reply comes back in tens of
 * microseconds when the server runs on another CPU; a thread that sleeps
 * for it is switched out and woken, two context switches and an
 * interprocessor wake-up, for a wait shorter than the switch. So a bulk
 * client's wait for a reply first polls its sockets without sleeping for
 * up to PASCO_BULK_SPIN_US microseconds, and sleeps only past that.
 *
 * Spinning is for a thread with a CPU to spare. It never spins when the
 * thread may run on one CPU only (the server it waits for would need that
 * CPU), and a thread whose spins keep ending asleep (a busy machine, where
 * the server does not get a CPU at once, or slow replies) stops spinning
 * for a while: after m misses in a row it skips the next 2^m waits (at
 * most 64), and the first spin that sees its reply starts it over.
 *
 * All state is the calling thread's own (thread-local): nothing is shared
 * but the microseconds, read once from the environment.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "bulk_frame.h"
#include "util.h"

#define SPIN_US_DEFAULT 60
#define SPIN_US_MAX 1000
#define MISSES_MAX 6 /* skips at most 2^6 waits */

typedef struct spin_state {
	unsigned         skip;   /* waits left that do not spin */
	unsigned         misses; /* spins in a row that ended asleep */
	pasci_spin_stats stats;
} spin_state;

static _Thread_local spin_state spin;
static int                      spin_us = -1; /* atomic: -1 not read */

int
pasci_bulk_spin_us(void)
{
	int us = __atomic_load_n(&spin_us, __ATOMIC_RELAXED);
	if (us < 0) {
		const char *e = getenv("PASCO_BULK_SPIN_US");
		char       *end;
		long        v = SPIN_US_DEFAULT;
		if (e != NULL && *e) {
			v = strtol(e, &end, 10);
			if (*end != 0 || v < 0 || v > SPIN_US_MAX) {
				pasci_log(PASCI_LOG_WARN,
				    "PASCO_BULK_SPIN_US='%s' is not a number "
				    "of microseconds from 0 to %d: a reply "
				    "wait spins %d us",
				    e, SPIN_US_MAX, SPIN_US_DEFAULT);
				v = SPIN_US_DEFAULT;
			}
		}
		us = (int) v;
		__atomic_store_n(&spin_us, us, __ATOMIC_RELAXED);
	}
	return us;
}

void
pasci_bulk_spin_set_us(int us)
{
	__atomic_store_n(&spin_us,
	    us < 0             ? -1
	    : us > SPIN_US_MAX ? SPIN_US_MAX
	                       : us,
	    __ATOMIC_RELAXED);
}

pasci_spin_stats
pasci_bulk_spin_stats(void)
{
	return spin.stats;
}

static int64_t
now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t) t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Whether this thread may spin now: more than one CPU to run on, and not
 * backing off after misses. */
static bool
spin_allowed(void)
{
	cpu_set_t set;
	/* read each time (a system call, against the sleep it may save): a
	 * thread pinned meanwhile (taskset, bench/step_cost) stops at once */
	if (sched_getaffinity(0, sizeof(set), &set) != 0 ||
	    CPU_COUNT(&set) < 2) {
		spin.stats.one_cpu++;
		return false;
	}
	if (spin.skip > 0) {
		spin.skip--;
		spin.stats.skipped++;
		return false;
	}
	return true;
}

/* Whether every one of p[0..n) has something to read (or ended). */
static bool
all_ready(struct pollfd *p, size_t n)
{
	size_t ready = 0;
	if (poll(p, (nfds_t) n, 0) < 0) {
		return errno == EINTR ? false : true; /* the wait says what */
	}
	for (size_t i = 0; i < n; i++) {
		ready += p[i].revents != 0;
	}
	return ready == n;
}

bool
pasci_bulk_spin_ready(const int *fds, size_t n)
{
	struct pollfd p[PASCI_BULK_HELD_MAX];
	int           us = pasci_bulk_spin_us();
	int64_t       end;
	if (us == 0 || n == 0 || n > PASCI_BULK_HELD_MAX || !spin_allowed()) {
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
	}
	end = now_ns() + (int64_t) us * 1000;
	for (;;) {
		/* read before the look: a spinner preempted past the end
		 * still sees what came meanwhile */
		bool last = now_ns() >= end;
		if (all_ready(p, n)) {
			spin.misses = 0;
			spin.stats.hits++;
			return true;
		}
		if (last) {
			break;
		}
	}
	spin.misses += spin.misses < MISSES_MAX;
	spin.skip = 1u << spin.misses;
	spin.stats.misses++;
	return false;
}
