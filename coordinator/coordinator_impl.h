/*
 * Coordinator internals shared by its files: the strategy (strategy.c:
 * connections and the variable directory), remote values
 * (remote_value.c), per-worker iterators (per_worker.c), and the
 * coordinator, whose public API is coordinator.c and whose dispatch engine
 * is dispatch.c. coordinator.c calls the engine and the iterators, the
 * engine calls the iterators, and per_worker.c calls neither: it only
 * puts closures on the queue. The strategy reports connection changes to
 * the engine.
 */
#ifndef PASCO_COORDINATOR_INTERNAL_H
#define PASCO_COORDINATOR_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "pasco/coordinator.h"
#include "pasco/partitioner.h"
#include "queue.h"
#include "rpc.h"

typedef struct pasci_recovery    pasci_recovery;    /* recovery.h */
typedef struct pasci_link_faults pasci_link_faults; /* below */

typedef struct var_entry {
	pasco_variable   *layout; /* a handle to the created variable */
	struct var_entry *next;
} var_entry;

/* A strategy's view of one task, for connection callbacks and heartbeats. */
typedef struct task_link {
	pasco_strategy   *s;
	size_t            index;
	bool              is_ps;
	pasci_rpc_client *client;
	uint64_t          incarnation;   /* ps: the first seen; under s->mu */
	int               ping_inflight; /* atomic */
	int hb_dropped; /* atomic: the link was last dropped for missing
	                 * heartbeats (health.c says so); cleared when up */
} task_link;

struct pasco_strategy {
	size_t             nps, nworkers;
	pasci_rpc_client **ps;
	pasci_rpc_client **workers;
	task_link         *links; /* workers */
	task_link         *ps_links;
	int64_t            heartbeat_ms; /* 0: off */
	int                heartbeat_misses;
	pthread_t          heartbeat;
	bool               heartbeat_started;
	pthread_mutex_t    hb_mu;
	pthread_cond_t     hb_cv;
	bool               stopping; /* under hb_mu */
	int64_t            call_timeout_ms;
	bool               has_partitioner;
	pasco_partitioner  partitioner;
	pasci_wire_sync    sync; /* the global step's mode (global_step.c) */
	pthread_mutex_t    mu;
	/* Protected by mu. */
	uint64_t           var_count; /* round-robin counter */
	var_entry         *vars;
	pasco_coordinator *coord; /* the one attached coordinator */
	char               error[1024];
	pasci_recovery    *rec; /* ps recovery (recovery.h) */
	/* The run id its checkpoints' manifests carry (0 until its first
	 * save), and the last directory whose earlier run's checkpoints were
	 * noted (checkpoint.c). */
	uint64_t ckpt_run;
	char     ckpt_dir_noted[4096];
};

/* Adds a copy of v's handle to s's variable directory (what checkpoints
 * save, and what a create of the same name finds). */
void pasci_strategy_remember(pasco_strategy *s, const pasco_variable *v);

/* Checks opts' consistency mode into s->sync (a message in s->error). */
int pasci_strategy_sync_options(
    pasco_strategy *s, const pasco_strategy_options *opts);

/* Called by the strategy when worker w connects (with the incarnation)
 * or disconnects. */
void pasci_coordinator_worker_state(
    pasco_coordinator *c, size_t w, bool up, uint64_t incarnation);

/* A shared counter (metrics.c): a coordinator's count that objects
 * outliving it (remote values) may still bump. Atomic; freed with the
 * last reference. */
typedef struct pasci_counter {
	uint64_t n;
	int32_t  refs;
} pasci_counter;

pasci_counter *pasci_counter_new(void); /* NULL when out of memory */
void           pasci_counter_hold(pasci_counter *n);
void           pasci_counter_release(pasci_counter *n); /* NULL: no-op */
void           pasci_counter_add(pasci_counter *n, uint64_t k);
uint64_t       pasci_counter_get(pasci_counter *n); /* NULL: 0 */

/* Logs c's metrics (pasco_coordinator_metrics_read) at level, after what. */
void pasci_metrics_log(pasco_coordinator *c, int level, const char *what);

/* Remote values. */
pasco_remote_value *pasci_remote_value_new(void);
void                pasci_remote_value_hold(pasco_remote_value *rv);
/* Completes rv with a value (taken over) or an error; first completion
 * wins. */
void pasci_remote_value_set(pasco_remote_value *rv, pasco_value *value);
void pasci_remote_value_fail(pasco_remote_value *rv, int err, const char *msg);
/* Counts rv's successful fetches in n (held); call before rv is shared. */
void pasci_remote_value_count_fetches(
    pasco_remote_value *rv, pasci_counter *n);

/* Per-worker iterators. */
struct pasco_per_worker_dataset {
	pasco_coordinator *coord;
	char              *factory;
};

struct pasco_per_worker_iterator {
	pasco_coordinator *coord;
	char              *factory;
	uint64_t           id;
	bool is_value; /* a per-worker variable: factory is a function */
	/* Protected by the coordinator's mu: refs, the user's and those of
	 * closures using it (at 0 its workers are told to release it);
	 * builds, the build closures holding it (they need its memory, not
	 * its resource: a release queued after a build runs after it on its
	 * worker); released, refs reached 0 (the memory goes with the last
	 * build). */
	int             refs;
	int             builds;
	bool            released;
	pthread_mutex_t mu;
	int            *err; /* per worker: factory error, under mu */
	char          **msg; /* per worker, under mu */
	struct pasco_per_worker_iterator *next; /* live list, coordinator mu */
};

/* A new iterator of factory on every worker (is_value: a per-worker
 * variable, the tensor the function factory returns). */
int  pasci_iterator_create(pasco_per_worker_iterator **out,
     pasco_coordinator *c, const char *factory, bool is_value);
void pasci_iterator_hold(pasco_per_worker_iterator *it);
/* A build closure of it is done with it (freed). */
void pasci_iterator_build_done(pasco_per_worker_iterator *it);
/* Enqueues the build of every live iterator of c on worker w (it came
 * back). Takes c->mu, then the queue's lock. */
void pasci_iterators_rebuild(pasco_coordinator *c, size_t w);
/* Frees it at once, whatever its references (coordinator teardown). */
void pasci_iterator_free(pasco_per_worker_iterator *it, size_t nworkers);
void pasci_iterator_release(pasco_per_worker_iterator *it);
/* Records the outcome of building it on worker w. */
void pasci_iterator_set_status(
    pasco_per_worker_iterator *it, size_t w, int err, const char *msg);
/* Copies worker w's build error of it; PASCO_OK if none. */
int pasci_iterator_status(
    pasco_per_worker_iterator *it, size_t w, char *msg, size_t len);

struct pasco_coordinator {
	pasco_strategy *s;
	closure_queue   q;
	uint32_t        max_batch;   /* closures per message, window full */
	uint64_t        riders_sent; /* closures sent riding in a batch */
	int32_t         completing;  /* flight_done calls running (atomic) */
	size_t          nworkers;
	pthread_t      *dispatchers;
	size_t          ndispatchers;
	int64_t         watchdog_ms;
	pthread_t       watchdog;
	bool            watchdog_started;
	pthread_cond_t  watchdog_cv;    /* with mu: stop */
	int64_t         last_finish_ms; /* atomic */
	uint64_t        watchdog_count; /* atomic */
	uint64_t        id_base; /* ids: from here, 2^32 of them (cancel.c) */
	uint64_t        next_id; /* atomic */
	pasci_counter  *fetches; /* metrics.c; may be NULL */
	pasci_link_faults *faults; /* link_fault.c */
	pthread_mutex_t    mu;
	/* Protected by mu. */
	bool                       stopping;
	pasco_per_worker_iterator *iterators; /* live ones */
	/* per worker: releases of freed iterators that could not reach it
	 * (its link was down); sent again when it is back, since the same
	 * process may come back still holding them (dispatch.c) */
	closure **parked;
	/* per worker: its link is up, as the last state event said; a
	 * release that fails after the worker is back (its failure came late)
	 * is queued again at once, not parked */
	bool  *linked;
	char **big_results; /* functions whose results are too big to batch */
	size_t nbig_results;
};

/* A fresh id for a closure or an iterator. */
static inline uint64_t
pasci_coordinator_next_id(pasco_coordinator *c)
{
	return __atomic_add_fetch(&c->next_id, 1, __ATOMIC_RELAXED);
}

/* Sets what pasco_coordinator_error returns on this thread. */
void pasci_coordinator_set_error(pasco_coordinator *c, const char *msg);

/* Per-worker variables (per_worker_variable.c). */
struct pasco_per_worker_variable {
	pasco_per_worker_iterator *it; /* its resource on every worker */
};

/* Completes a RESOURCE_READ closure of worker w from its reply (or the
 * transport's err and detail): its remote value gets the tensor or the
 * error. Does not free cl. */
void pasci_per_worker_read_done(
    closure *cl, size_t w, int err, pasci_wire_msg *reply, const char *detail);

/* Cancelling running closures (cancel.c): draws c's closure id range and
 * gives the queue its cancel hook, which asks every worker to cancel the
 * closures of that range issued so far. */
void pasci_cancel_install(pasco_coordinator *c);

/* The dispatch engine (dispatch.c). */

/* Starts one dispatcher per worker, and the watchdog if asked for.
 * PASCO_ENOMEM when a dispatcher could not start (those started run until
 * pasci_dispatch_stop). */
int pasci_dispatch_start(pasco_coordinator *c);

/* Stops the watchdog, stops the queue (queued closures are cancelled),
 * abandons the calls in flight (their closures are cancelled, without
 * waiting for the workers), joins the dispatchers and waits for running
 * completions. Blocks. */
void pasci_dispatch_stop(pasco_coordinator *c);

/* Failed links (link_fault.c; README, "Failures"). */
pasci_link_faults *pasci_link_faults_new(size_t nworkers, size_t nps);
void               pasci_link_faults_free(pasci_link_faults *f);

/* Closure cl could not be sent to worker w or its connection was lost
 * (the transport's detail): w takes no global closure for a backoff
 * (50 ms, doubling up to 2 s), and this is logged once per connection of
 * w. The caller puts cl back. */
void pasci_link_fault_lost_send(
    pasco_coordinator *c, size_t w, const closure *cl, const char *detail);

/* Worker w connected (again): its lost-send backoff and log start over. */
void pasci_link_fault_worker_up(pasco_coordinator *c, size_t w);

/* Closure cl is sent to worker w: notes the ps it uses and w's progress.
 * Lock-free. */
void pasci_link_fault_sent(pasco_coordinator *c, size_t w, const closure *cl);

/* A closure of worker w completed (or failed): w's progress. Lock-free. */
void pasci_link_fault_progress(pasco_coordinator *c, size_t w);

/* Warns once per stall about each worker with closures in flight that has
 * finished none for 3 s while the others finish theirs, naming the ps its
 * last closure used. The strategy's heartbeat thread calls it, under the
 * strategy's lock. */
void pasci_link_fault_check_slow(pasco_coordinator *c);

/* A global closure of worker w succeeded: its ps bench starts over. */
void pasci_link_fault_success(pasco_coordinator *c, size_t w);

typedef enum pasci_link_verdict {
	PASCI_LINK_NOT_MINE, /* not a ps unreachable from w, or no more */
	PASCI_LINK_RETRY,    /* put it back on the queue now */
} pasci_link_verdict;

/* Closure cl of worker w failed with err and msg: when w said a ps was
 * unreachable from it, while the chief reaches that ps, the closure is
 * retried, on another worker (w is benched; a timeout only) or up to 3
 * times per ps as TensorFlow's transient ps failures. Never blocks. */
pasci_link_verdict pasci_link_fault_on_failure(pasco_coordinator *c, size_t w,
    const closure *cl, int err, const char *msg);

/* Whether closure cl may ride in a batch: its tensor arguments are small
 * and its function has not returned a big result before. */
bool pasci_dispatch_may_ride(pasco_coordinator *c, const closure *cl);

/* The checks of a create from an initializer (coordinator/
 * variable_checks.c): init valid (an Orthogonal's shape of rank 2 or more
 * and within PASCO_INIT_ORTHOGONAL_MAX), constraint NULL or valid for
 * rank; PASCO_EINVAL with s->error naming the variable and what is
 * wrong. And whether constraint reduces over the first axis (a MaxNorm
 * of axis 0, or of a rank-1 variable), which a split variable cannot. */
int  pasci_variable_create_check(pasco_strategy *s, const char *name,
     int32_t rank, const int64_t *shape, const pasco_initializer *init,
     const pasco_constraint *constraint);
bool pasci_constraint_needs_whole(
    const pasco_constraint *constraint, int32_t rank);

/* A compiled model's optimizer's own iteration count
 * (coordinator/model_base.c): its start on the global step gs, the ps
 * variable *out ("<first variable>/iterations_base"), made at the model's
 * first fit with the global step's value then (or the start its config
 * gives), found again when it is there; and m's compiled optimizer's
 * iterations_base read from it (changed: whether that changed m's config,
 * as after a resume's restore). NULL gs or no variables: none. Messages:
 * pasco_model_last_error. Block. */
typedef struct pasco_model pasco_model;
int pasci_fit_base_var(pasco_strategy *s, pasco_model *m, pasco_variable *gs,
    pasco_variable **out);
int pasci_fit_base_read(pasco_model *m, pasco_variable *base, bool *changed);

#endif
