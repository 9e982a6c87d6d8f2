/*
 * A ps's memory budget (PASCO_MAX_PS_MB) and its per-variable limit
 * (PASCO_MAX_VARIABLE_MB).
 *
 * The budget is one atomic count of the bytes the ps holds for good:
 * variables' values, optimizer slots, dynamic tables' rows and slots (by
 * chunk), their key maps and the keys pending admission. Each is charged
 * before its memory is taken and released when it is given back, so a
 * check is a compare-and-swap, never a scan. Memory a request holds only
 * while it is answered (its message, a read's copy while a view of it is
 * sent, a BSP round's sum, a reply) is not charged: the per-message and
 * per-request limits bound it. Every function is thread-safe.
 */
#ifndef PASCO_PS_BUDGET_H
#define PASCO_PS_BUDGET_H

#include <stddef.h>

typedef struct pasci_budget {
	size_t limit; /* bytes; set by pasci_budget_init, then read only */
	size_t used;  /* atomic */
	size_t peak;  /* atomic: the most used has been since init */
} pasci_budget;

void pasci_budget_init(pasci_budget *b, size_t limit);

/* Charges bytes if they fit under the limit: PASCO_OK, or PASCO_ENOMEM
 * with nothing charged (pasci_budget_explain says why). */
int pasci_budget_charge(pasci_budget *b, size_t bytes);

/* Gives back bytes charged earlier. */
void pasci_budget_release(pasci_budget *b, size_t bytes);

size_t pasci_budget_used(const pasci_budget *b);
size_t pasci_budget_peak(const pasci_budget *b);

/* Writes into err what (printf-formatted) and why a charge of bytes was
 * refused: "<what>: N more bytes would pass this ps's memory budget of
 * M MB (PASCO_MAX_PS_MB; K MB in use)". */
void pasci_budget_explain(const pasci_budget *b, size_t bytes, char *err,
    size_t errlen, const char *what, ...)
    __attribute__((format(printf, 5, 6)));

/* PASCO_MAX_PS_MB in bytes; unset: 3/4 of this machine's memory (the
 * smaller of its physical memory and its cgroup's memory.max). A
 * malformed value is warned about and the default used. */
size_t pasci_ps_budget_bytes(void);

/* PASCO_MAX_VARIABLE_MB (default 1024) in bytes; a malformed value is
 * warned about and the default used. */
size_t pasci_ps_max_variable_bytes(void);

#endif
