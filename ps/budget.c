/*
 * The ps's memory budget and limits (budget.h). The count is kept with
 * __atomic builtins: a charge is a compare-and-swap loop that never lets
 * the count pass the limit, so concurrent charges cannot overshoot it
 * together; the peak is raised after each charge. The limits are read
 * from the environment when a ps starts.
 */
#include "budget.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

#define DEFAULT_MAX_VARIABLE_MB 1024
#define MB_MAX ((long long) 1 << 24) /* 16 TB in MB */

void
pasci_budget_init(pasci_budget *b, size_t limit)
{
	b->limit = limit;
	b->used  = 0;
	b->peak  = 0;
}

int
pasci_budget_charge(pasci_budget *b, size_t bytes)
{
	size_t used = __atomic_load_n(&b->used, __ATOMIC_RELAXED), peak;
	do {
		if (bytes > b->limit || used > b->limit - bytes) {
			return PASCO_ENOMEM;
		}
	} while (!__atomic_compare_exchange_n(&b->used, &used, used + bytes,
	    true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	used += bytes;
	peak = __atomic_load_n(&b->peak, __ATOMIC_RELAXED);
	while (
	    peak < used && !__atomic_compare_exchange_n(&b->peak, &peak, used,
	                       true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
	}
	return PASCO_OK;
}

void
pasci_budget_release(pasci_budget *b, size_t bytes)
{
	size_t was = __atomic_fetch_sub(&b->used, bytes, __ATOMIC_RELAXED);
	PASCO_ASSERT(was >= bytes);
}

size_t
pasci_budget_used(const pasci_budget *b)
{
	return __atomic_load_n(&b->used, __ATOMIC_RELAXED);
}

size_t
pasci_budget_peak(const pasci_budget *b)
{
	return __atomic_load_n(&b->peak, __ATOMIC_RELAXED);
}

void
pasci_budget_explain(const pasci_budget *b, size_t bytes, char *err,
    size_t errlen, const char *what, ...)
{
	char    head[384];
	va_list ap;
	va_start(ap, what);
	vsnprintf(head, sizeof(head), what, ap);
	va_end(ap);
	pasci_fmt(err, errlen,
	    "%s: %zu more bytes would pass this ps's memory budget of %zu MB "
	    "(PASCO_MAX_PS_MB; %zu MB in use)",
	    head, bytes, b->limit >> 20, pasci_budget_used(b) >> 20);
}

/* name's value in MB (1 to MB_MAX), or -1 when unset; a malformed value
 * is warned about (naming what is used instead) and is -1. */
static long long
env_mb(const char *name, const char *instead)
{
	const char *v   = getenv(name);
	char       *end = NULL;
	long long   mb;
	if (v == NULL || *v == 0) {
		return -1;
	}
	mb = strtoll(v, &end, 10);
	if (*end != 0 || mb < 1 || mb > MB_MAX) {
		pasci_log(PASCI_LOG_WARN,
		    "%s='%s' is not a number of megabytes (1 to %lld); using "
		    "%s",
		    name, v, MB_MAX, instead);
		return -1;
	}
	return mb;
}

size_t
pasci_ps_max_variable_bytes(void)
{
	long long mb = env_mb("PASCO_MAX_VARIABLE_MB", "1024");
	return (size_t) (mb > 0 ? mb : DEFAULT_MAX_VARIABLE_MB) << 20;
}

/* This machine's memory for us: physical memory, or the cgroup's
 * memory.max (v2) when that is lower. */
static size_t
machine_bytes(void)
{
	long               pages = sysconf(_SC_PHYS_PAGES);
	long               page  = sysconf(_SC_PAGESIZE);
	unsigned long long phys =
	    pages > 0 && page > 0
	        ? (unsigned long long) pages * (unsigned long long) page
	        : (unsigned long long) 1 << 32;
	unsigned long long cg = 0;
	FILE              *f  = fopen("/sys/fs/cgroup/memory.max", "r");
	if (f != NULL) {
		if (fscanf(f, "%llu", &cg) != 1) {
			cg = 0; /* "max": no limit */
		}
		fclose(f);
	}
	return (size_t) (cg > 0 && cg < phys ? cg : phys);
}

size_t
pasci_ps_budget_bytes(void)
{
	long long mb =
	    env_mb("PASCO_MAX_PS_MB", "3/4 of this machine's memory");
	return mb > 0 ? (size_t) mb << 20 : machine_bytes() / 4 * 3;
}
