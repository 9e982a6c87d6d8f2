/*
 * The closure queue, with TensorFlow's _CoordinatedClosureQueue semantics:
 * a bounded global FIFO plus an unbounded FIFO per worker for tagged
 * (resource) closures, taken first; an in-flight count of global closures;
 * the first error of a closure, raised once by the next put / wait / done
 * after every queued closure is cancelled and every in-flight one has
 * finished. It also keeps each worker's dispatch state (up, in flight,
 * window), so a dispatcher can wait for "work I may take" under one lock.
 *
 * All functions are thread-safe. Cancelled closures are freed after the
 * lock is dropped, never under it.
 */
#ifndef PASCO_COORDINATOR_QUEUE_H
#define PASCO_COORDINATOR_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "closure.h"

typedef struct queue_worker {
	bool     up;
	uint32_t inflight;        /* global closures sent to this worker */
	uint32_t riders;          /* more of them, riding in a batch */
	bool     tagged_inflight; /* a resource closure is outstanding */
	closure *tagged_head, *tagged_tail;
	/* This worker's dispatcher sleeps on its own condition, so a new
	 * closure wakes one dispatcher that can take it, not all of them
	 * (with N workers a shared condition cost N wake-ups per closure,
	 * N - 1 of them for nothing, and dispatch got slower as workers were
	 * added). asleep: waiting on cv and not yet woken. */
	pthread_cond_t cv;
	bool           asleep;
	/* Until then (pasci_now_ms), no global closure: its link failed
	 * (pasci_queue_bench). 0: not benched. */
	int64_t benched_until_ms;
	/* Derived from the fields above, after each change of them or of the
	 * window, so that a put and a refill do constant work whatever the
	 * worker count (scanning every worker per closure made the chief's
	 * CPU per closure grow with the workers): open (up, not benched,
	 * room in its window; counted in the queue's nopen) and idle (open,
	 * its dispatcher asleep, no resource operation queued or
	 * outstanding; in the queue's idle list, longest asleep first). */
	bool open, idle;
	/* A closure of this worker landed on a thread that refills its
	 * window next (pasci_queue_refiller): not open until that thread's
	 * pasci_queue_try_get, which clears it. */
	bool                 refill_pending;
	struct queue_worker *idle_prev, *idle_next;
} queue_worker;

/* What the queue has seen, for pasco_coordinator_metrics: global closures
 * only (tagged resource operations are not counted). */
typedef struct queue_stats {
	uint64_t put;       /* accepted by pasci_queue_put */
	uint64_t taken;     /* handed to a worker (riders and retries too) */
	uint64_t finished;  /* landed without an error */
	uint64_t failed;    /* landed with an error */
	uint64_t put_back;  /* back to the queue after their worker failed */
	uint64_t cancelled; /* never ran: drained by an error or a stop */
	uint64_t wait_ns_total, wait_ns_max; /* time queued, per take */
	uint64_t wakes; /* dispatchers woken (each a thread switch or two) */
	uint64_t join_wakes;    /* times a waiting join woke up */
	size_t   len, inflight; /* now */
} queue_stats;

typedef struct closure_queue {
	pthread_mutex_t put_wait_mu; /* no put slips in while wait runs */
	pthread_mutex_t mu;
	pthread_cond_t  free_slot; /* the global queue has room */
	pthread_cond_t  settled;   /* inflight reached 0, or an error came */
	/* Everything below is protected by mu. */
	closure      *head, *tail;
	size_t        len, cap;
	size_t        inflight;
	queue_worker *workers;
	size_t        nworkers;
	uint32_t      window;
	bool          stopped;
	int           error; /* first error, 0 if none */
	char          error_msg[1024];
	int           error_source; /* the task that raised it, or -1 */
	size_t        nopen;        /* workers marked open */
	queue_worker *idle_head, *idle_tail; /* workers marked idle */
	bool          paused; /* a ps is being recovered: no global closure */
	queue_stats   stats;  /* len and inflight unused: see the fields */
	/* Called (without the lock) when an error is raised while closures
	 * are in flight, before waiting for them: to cancel them. Set once,
	 * before the queue is used. */
	void (*cancel_inflight)(void *arg);
	void *cancel_arg;
	/* When set, a closure put gets its id from this counter (atomic)
	 * under the lock: after any error raised before it, so a cancel of
	 * the ids issued so far never reaches it. */
	uint64_t *ids;
} closure_queue;

int pasci_queue_init(
    closure_queue *q, size_t cap, size_t nworkers, uint32_t window);
void pasci_queue_fini(closure_queue *q);

/* Enqueues c (blocking while full). If an error is pending, c is not
 * enqueued: everything queued is cancelled, in-flight closures are waited
 * for, and the error is returned (msg gets its text) and cleared. On an
 * error or when stopped, c is left to the caller. */
int pasci_queue_put(closure_queue *q, closure *c, char *msg, size_t msglen);

/* Enqueues a resource closure for worker w; never blocks or fails. */
void pasci_queue_put_tagged(closure_queue *q, closure *c, size_t w);

/* Blocks until worker w may take something: a tagged closure of w (when w
 * is up and none is outstanding), else a global closure (when w is up, has
 * fewer than window in flight, and no tagged closure is queued or
 * outstanding, and no error is pending). Returns NULL once stopped.
 * *tagged tells which. */
closure *pasci_queue_get(closure_queue *q, size_t w, bool *tagged);

/* pasci_queue_get without waiting: NULL when w may take nothing now. */
closure *pasci_queue_try_get(closure_queue *q, size_t w, bool *tagged);

/* The calling thread refills worker w's window itself (pasci_queue_try_get)
 * after the closures it lands from now on (mark_finished, mark_failed,
 * rider_done, put_back): landing one does not wake w's dispatcher, which
 * would find the freed slot taken (its wake-up and its sleep again were
 * two thread switches per closure for nothing), and the freed slot is not
 * open to others until this thread's next pasci_queue_try_get(q, w), which
 * it must make: another worker's refill meanwhile takes riders rather
 * than send one closure because w seemed to have room. A benched w's
 * dispatcher is still woken, to time its bench's end. SIZE_MAX: this
 * thread does not refill (the default). Returns the previous setting, to
 * restore (a completion inside a refill's failed send). Per thread; no
 * lock. */
size_t pasci_queue_refiller(closure_queue *q, size_t w);

/* Automatic batching: when worker w's window is full (the closure just
 * taken filled it), no other worker has room, and more small closures are
 * queued, takes up to max of them to ride in the same message. They are in
 * flight (join waits for them) without taking window slots. Never blocks;
 * returns how many. */
size_t pasci_queue_take_riders(
    closure_queue *q, size_t w, closure **out, size_t max);

/* A global closure taken by worker w finished (successfully or with an
 * error already recorded by pasci_queue_mark_failed). */
void pasci_queue_mark_finished(closure_queue *q, size_t w);

/* A global closure failed with an application error: keeps the first
 * error, then acts as pasci_queue_mark_finished. */
void pasci_queue_mark_failed(
    closure_queue *q, size_t w, int err, const char *msg);

/* Records an error that no closure raised (a ps failed): kept if it is the
 * first, and raised like a closure's by the next put / wait / done. */
void pasci_queue_record_error(closure_queue *q, int err, const char *msg);

/* The same for news about task source (a ps index): it also replaces a
 * pending error from that same task, which it supersedes (a ps lost, then
 * known to have restarted as a new process: its variables are gone), so
 * the latest news of a task is what the caller gets. */
void pasci_queue_record_error_from(
    closure_queue *q, int err, const char *msg, int source);

/* A global closure could not run on w (the worker failed): back to the
 * tail of the queue, or cancelled if an error is pending. */
void pasci_queue_put_back(closure_queue *q, size_t w, closure *c);

/* While paused, no global closure is handed out (tagged ones are), and
 * wait keeps waiting for the queued ones: a ps is being recovered. */
void pasci_queue_set_paused(closure_queue *q, bool paused);

/* Sets the closures each worker may have in flight (window > 0) and
 * returns the one before; closures already in flight stay. */
uint32_t pasci_queue_set_window(closure_queue *q, uint32_t window);

/* The same three for a rider (err 0: finished). */
void pasci_queue_rider_done(
    closure_queue *q, size_t w, int err, const char *msg);
void pasci_queue_rider_put_back(closure_queue *q, size_t w, closure *c);

/* A tagged closure of w finished (or was dropped). */
void pasci_queue_tagged_done(closure_queue *q, size_t w);

/* Worker w takes no global closure until until_ms (pasci_now_ms's
 * clock; tagged ones it still takes): its link failed, and its closures
 * run elsewhere meanwhile. A bench is never shortened; 0 lifts it, and so
 * does w coming up. Returns whether w was benched already. */
bool pasci_queue_bench(closure_queue *q, size_t w, int64_t until_ms);

/* Whether a worker other than w is up and not benched: one that could run
 * w's closures. */
bool pasci_queue_other_can_run(closure_queue *q, size_t w);

/* Marks worker w up or down; true when that took the last worker up
 * down. */
bool pasci_queue_set_worker_up(closure_queue *q, size_t w, bool up);

/* Waits until nothing is queued or in flight, or an error comes; then
 * raises the error as pasci_queue_put does. */
int pasci_queue_wait(closure_queue *q, char *msg, size_t msglen);

/* *done = nothing queued or in flight; raises a pending error first. */
int pasci_queue_done(closure_queue *q, bool *done, char *msg, size_t msglen);

/* Stops dispatchers, cancels what is queued (tagged too) and waits until
 * nothing is in flight on any worker, calling nudge(arg) (without the
 * lock) now and every 100 ms while something is. */
void pasci_queue_stop(closure_queue *q, void (*nudge)(void *), void *arg);

/* One line on the queue and every worker, for the watchdog. True when
 * anything is queued or in flight. */
bool pasci_queue_describe(closure_queue *q, char *buf, size_t len);

/* A copy of the queue's counters, with len and inflight filled. */
void pasci_queue_stats(closure_queue *q, queue_stats *out);

/* Global closures in flight on worker w (riders too). */
size_t pasci_queue_worker_inflight(closure_queue *q, size_t w);

/* Counts, for tests and metrics. */
size_t pasci_queue_inflight(closure_queue *q);
size_t pasci_queue_length(closure_queue *q);

#endif
