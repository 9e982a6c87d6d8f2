/*
 * How a task's life ends with its chief's: a ps or worker serves until a
 * signal, until the chief says it is done (SHUTDOWN), or until nothing has
 * called it for the chief timeout (the chief is gone: killed, or its host
 * lost), so that a Slurm step or a Kubernetes job ends when its training
 * does. The chief says it is done to every task when its function returns
 * success, and only then: a chief that fails (or is killed) leaves its
 * servers serving, for its next incarnation (the launcher restarts it, and
 * it resumes from its backup), until the chief timeout. Only the chief's
 * success is a success for a ps or worker: every other end is a non-zero
 * exit status, which a restart policy such as Kubernetes's OnFailure
 * restarts, so a chief that comes back finds its servers.
 */
#ifndef PASCI_LIFECYCLE_H
#define PASCI_LIFECYCLE_H

#include <signal.h>
#include <stdint.h>

#include "pasco/cluster.h"
#include "rpc.h"

/* The default chief timeout: no request of any kind (the chief's
 * heartbeats come every second) for this long ends a task. */
#define PASCI_CHIEF_TIMEOUT_S 120

/* A ps or worker's exit status when the chief timeout passed: 128 +
 * SIGUSR1, which the Kubeflow training operator's ExitCode restart policy
 * takes for the retryable error a program chose (its others: 1, 2, 126,
 * 127, 128 and 139 are permanent; 130, 137 and 143 retryable). Non-zero,
 * so OnFailure restarts the task as well. */
#define PASCI_EXIT_CHIEF_GONE 138

/* Waits for one of signals (blocked in every thread), a SHUTDOWN on rpc, or
 * timeout_s seconds without a request (never when timeout_s <= 0); logs
 * which ended it, naming task. Returns the task's exit status: 0 after the
 * chief's SHUTDOWN, 128 + the signal's number after a signal,
 * PASCI_EXIT_CHIEF_GONE after the chief timeout. */
int pasci_serve_until_done(const pasci_rpc_server *rpc,
    const sigset_t *signals, int64_t timeout_s, const char *task);

/* Tells every ps and worker of cluster that the chief is done, each with a
 * bounded wait (a task already gone costs at most about a second). */
void pasci_tell_tasks_done(const pasco_cluster *cluster);

#endif
