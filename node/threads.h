/*
 * How many threads each of a process's pools runs: chosen by the role and
 * the configuration (a flag, or the environment), never by the machine's
 * core count. The pools and their defaults:
 *
 * - nng's (PASCO_NNG_THREADS, --nng-threads; default 2, every role): 2n
 *   task threads and n expire threads (net/nng_threads.h), beside nng's
 *   fixed poller, reaper, timer and resolvers (7 with Debian's nng 1.5).
 *   Task threads run completion callbacks, which never block: 4 keep a
 *   ps, a worker and a chief busy. The chief's pool does not follow its
 *   worker count: its closures go to the workers over bulk links and
 *   complete (and refill the window) on the bulk reader of each worker
 *   (below), not on nng's threads, which carry its connections' state and
 *   heartbeats (under 1% of its CPU in bench/dispatch with 8 workers).
 *   Only where a worker has no bulk port (tls+tcp://, inproc://) do
 *   closures complete on nng's task threads: a chief of many such
 *   workers on many cores may raise it.
 * - a ps's request handlers (PASCO_PS_THREADS, --ps-threads; default 8):
 *   requests handled at once. A handler computes (copies, applies under a
 *   shard's lock) more than it waits, so this is the pool that may scale
 *   with the cores given to one ps: raise it when one ps serves many
 *   workers on a big host.
 * - a worker's handlers (PASCO_WORKER_THREADS, --worker-threads; default
 *   16): closures and requests run at once. They mostly wait on ps calls;
 *   16 runs every closure of a chief's window (4 by default) and its
 *   resource operations with room to spare.
 * - OpenBLAS's (OPENBLAS_NUM_THREADS, as OpenBLAS reads it; default 1, no
 *   pool): every process runs several closures or requests at once, and
 *   OpenBLAS's own threads spin while they wait.
 *
 * Other threads are per connection or fixed: an RPC client's timer
 * (pasco-rpc-timer, one per ps and worker a process talks to), a bulk
 * connection's reader on its server (pasco-bulk: a worker has one per
 * closure in flight to it, a ps one per request in flight), the bulk
 * listener (pasco-bulk-acc), the chief's heartbeat, and per worker on the
 * chief its dispatcher (pasco-disp-N: sends when a closure is put and the
 * window has room; it sleeps while replies refill the window) and its bulk
 * reader (pasco-bulk-rx: reads the worker's replies, completes them and
 * sends the next closures). Those two scale with the workers on purpose:
 * each worker's replies are read and answered without waiting on
 * another's, and they cost a sleeping thread, not CPU per closure (the
 * chief's CPU per closure with 8 workers is within 1.3x of 1 worker's:
 * bench/dispatch).
 *
 * Per role with the defaults, 1 ps and 2 workers (bench/threads, which
 * names each thread's pool): chief 22 (nng 13, 2 dispatchers, 2 bulk
 * readers, 3 RPC timers, heartbeat), ps 23 (nng 13, 8 handlers, bulk
 * listener), worker 33 (nng 13, 16 handlers, a bulk connection's reader
 * from the chief at window 1, up to 4 at the default window, bulk
 * listener, RPC timer), evaluator 43 (nng 13, its in-process ps's 8 and
 * worker's 16 handlers, a dispatcher, RPC timers, heartbeat); the same on
 * 16 cores, no OpenBLAS thread in any.
 */
#ifndef PASCI_THREADS_H
#define PASCI_THREADS_H

#include <stddef.h>

#include "pasco/cluster.h"

#define PASCI_NNG_THREADS_DEFAULT 2
#define PASCI_PS_THREADS_DEFAULT 8
#define PASCI_WORKER_THREADS_DEFAULT 16
#define PASCI_THREADS_MAX 256

/* The size of role's handler pool (a ps or a worker): its variable
 * (PASCO_PS_THREADS or PASCO_WORKER_THREADS) or its default. -1 when the
 * variable is not a number from 1 to PASCI_THREADS_MAX, with the reason in
 * err. Thread-safe. */
int pasci_threads_handlers(pasco_role role, char *err, size_t errlen);

/* Sizes nng's pools from PASCO_NNG_THREADS (or the default) and starts
 * nng, checks the handler pools' variables, and keeps OpenBLAS to one thread
 * unless OPENBLAS_NUM_THREADS, GOTO_NUM_THREADS or OMP_NUM_THREADS says
 * otherwise. -1 with the reason in err when a value is malformed; a
 * failure to size nng is logged (it then sizes its pools itself) and not
 * an error. Only the first call acts (pasco_main's, or the public
 * pasco_threads_configure's that the Python package makes when it loads
 * libpasco); later ones return its result. Call first, from the main
 * thread, before any other thread starts. Not thread-safe. */
int pasci_threads_setup(char *err, size_t errlen);

/* Keeps OpenBLAS to one thread unless the environment chose a count
 * (node/blas_early.c in the static library, node/blas_late.c in the
 * shared one). Not thread-safe: call from the main thread. */
void pasci_blas_one_thread(void);

#endif
