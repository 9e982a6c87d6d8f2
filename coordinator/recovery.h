/*
 * A lost ps recovered by the coordinator (recovery.c). With a recovery
 * directory (pasco_strategy_options.checkpoint_dir, else the directory of
 * the strategy's last pasco_checkpoint_save), a ps that drops is waited
 * for (global closures are held back meanwhile) instead of failing the
 * training; when it comes back as a new process, a thread of the strategy
 * creates its variable shards again from the newest intact checkpoint
 * (values, slots, and the variable "global_step" wherever it lives), then
 * training goes on. Closures that failed because of it are retried. A ps
 * that does not come back within the timeout fails the training as without
 * recovery. Without a directory, nothing here changes anything.
 *
 * Locks: the ps states are under the strategy's mu; the held closures
 * under the recovery's own lock, which is taken after the strategy's and
 * before no other.
 */
#ifndef PASCO_COORDINATOR_RECOVERY_H
#define PASCO_COORDINATOR_RECOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include "closure.h"
#include "coordinator_impl.h"

/* Sets up recovery for s (off until a directory is known: opts' or a
 * save's). PASCO_ENOMEM. */
int pasci_recovery_init(pasco_strategy *s, const pasco_strategy_options *opts);

/* Stops the recovery thread; held closures must have been flushed. */
void pasci_recovery_fini(pasco_strategy *s);

/* A ps connection change, with s->mu held; fresh: it came back as a new
 * process. Returns whether recovery handled it (false: do as without
 * recovery). */
bool pasci_recovery_ps_state(
    pasco_strategy *s, size_t ps, bool up, bool fresh);

/* The count of ps losses and recoveries so far (atomic): a closure sent
 * before a change may have met the lost ps. */
uint64_t pasci_recovery_epoch(pasco_strategy *s);

typedef enum pasci_recovery_verdict {
	PASCI_RECOVERY_FAIL,  /* a failure like any other */
	PASCI_RECOVERY_RETRY, /* put it back on the queue now */
	PASCI_RECOVERY_HELD,  /* taken: retried later, or failed */
} pasci_recovery_verdict;

/* Closure cl (a rider or not) of worker w failed with err and msg: retried
 * when a ps was lost or recovered since it was sent, or is down; held and
 * retried after a backoff (at most a few times) when its error is one a
 * lost ps causes (unavailable, not found, timed out) and the loss may not
 * be known yet. Never blocks. */
pasci_recovery_verdict pasci_recovery_on_failure(pasco_coordinator *c,
    size_t w, closure *cl, bool rider, int err, const char *msg);

/* Hands every closure held for c back to its queue (cancelled there when
 * it is stopped). */
void pasci_recovery_flush(pasco_coordinator *c);

/* Records dir as the recovery directory unless the options named one. */
void pasci_recovery_note_save(pasco_strategy *s, const char *dir);

/* With recovery on, waits until no ps is down or being restored (at most
 * the recovery timeout): true when recovery is on. */
bool pasci_recovery_wait_healthy(pasco_strategy *s);

/* op(arg, why, len) for a chief's own ps operation (a checkpoint's save,
 * a metric reset): with recovery on, once no ps is being recovered, and
 * again (at most 5 times, 300 ms apart, each after the recovery) while
 * it fails for a lost ps (PASCO_EUNAVAILABLE, PASCO_ETIMEDOUT), with a
 * warning "what: why; trying again". op's last status. */
int pasci_recovery_retry(pasco_strategy *s, const char *what,
    int (*op)(void *arg, char *why, size_t len), void  *arg);

#endif
