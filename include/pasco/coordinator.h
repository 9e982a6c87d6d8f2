/*
 * The coordinator side: a strategy that connects to the cluster and creates
 * variables on ps tasks, and a coordinator that schedules step functions on
 * workers, the C counterparts of TensorFlow's ParameterServerStrategy and
 * ClusterCoordinator.
 *
 * Semantics follow TensorFlow's: pasco_schedule enqueues and returns a
 * remote value at once (blocking only while the queue is full); a function
 * runs at least once; the first error of a step function is raised once by
 * the next pasco_schedule, pasco_join or pasco_done, which first cancel
 * every closure not yet run (their remote values report PASCO_ECANCELLED)
 * and wait for those in flight; the coordinator stays usable afterwards.
 * Closures in flight are asked to stop, as TensorFlow aborts them: their
 * workers start none that has not started, and pasco_call_is_cancelled
 * (function.h) turns true in those running, so a long function that
 * checks it stops early and reports PASCO_ECANCELLED; one that does not
 * check runs to its end, keeps its result, and is waited for.
 * Unlike TensorFlow, each worker may have several closures in flight (the
 * window), so the round trip is not wasted.
 *
 * Thread-safety: every function here may be called from any thread, at
 * once, except the destroy and free functions (no other call may use the
 * object while or after it is destroyed) and pasco_strategy_error (see
 * there). Error messages of the coordinator are kept per thread.
 */
#ifndef PASCO_COORDINATOR_H
#define PASCO_COORDINATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "constraint.h"
#include "error.h"
#include "initializer.h"
#include "optimizer.h"
#include "partitioner.h"
#include "tensor.h"
#include "value.h"
#include "variable.h"

typedef struct pasco_strategy            pasco_strategy;
typedef struct pasco_coordinator         pasco_coordinator;
typedef struct pasco_remote_value        pasco_remote_value;
typedef struct pasco_per_worker_dataset  pasco_per_worker_dataset;
typedef struct pasco_per_worker_iterator pasco_per_worker_iterator;
typedef struct pasco_per_worker_variable pasco_per_worker_variable;

typedef struct pasco_strategy_options {
	/* How long pasco_strategy_create waits for every ps and worker to
	 * answer; 0 means the PASCO_CONNECT_TIMEOUT environment variable
	 * (seconds, e.g. 300 while a cluster's pods are scheduled) or, when
	 * it is unset, 60 s. Every 5 s of waiting logs a warning naming the
	 * task it waits for, its address and why (no such host, connection
	 * refused, ...). */
	int64_t connect_timeout_ms;
	/* Deadline of each ps call made by the coordinator; 0 means 60 s. */
	int64_t call_timeout_ms;
	/* Splits every variable created through the strategy (TensorFlow's
	 * variable_partitioner); NULL: no variable is split. Copied. */
	const pasco_partitioner *partitioner;
	/* Heartbeats to every task: a task that does not answer
	 * heartbeat_misses in a row (each heartbeat_interval_ms apart) is
	 * failed as if its connection dropped. 0 means 1000 ms and 3 misses;
	 * a negative interval turns heartbeats off. */
	int64_t heartbeat_interval_ms;
	int32_t heartbeat_misses;
	/* How applies made through the global step combine
	 * (include/pasco/optimizer.h): PASCO_ASP (the default: each applied
	 * at once), PASCO_BSP (rounds of replicas_to_aggregate gradients
	 * averaged and applied once; 0 means the number of workers) or
	 * PASCO_SSP (a gradient more than staleness global steps old is
	 * dropped; staleness >= 0). Another mode, a negative
	 * replicas_to_aggregate or staleness fails pasco_strategy_create
	 * with PASCO_EINVAL and a message. The mode travels with the global
	 * step's handle (pasco_strategy_global_step) to the steps that get
	 * it as an argument. */
	pasco_consistency consistency;
	int32_t           replicas_to_aggregate;
	int32_t           staleness;
	/* Recovering a lost ps (beyond TensorFlow, where a lost ps fails the
	 * training). With a checkpoint directory, here or else the directory
	 * of the strategy's last pasco_checkpoint_save, a ps whose connection
	 * drops is waited for: no closure is sent meanwhile (schedule blocks
	 * once the queue is full; join waits). When it comes back at its
	 * address as a new process, the coordinator creates its variable
	 * shards again from the newest intact checkpoint of the directory
	 * (pasco_checkpoint_restore_latest's choice): their values and
	 * optimizer slots, and the variable named "global_step" wherever it
	 * lives, so the global step goes back to the checkpoint's step.
	 * Updates those shards had after it are lost; the other ps keep
	 * theirs. A warning names the ps, the checkpoint, its step and the
	 * variables rolled back; pasco_strategy_ps_recoveries counts the
	 * recoveries. Closures that failed because the ps was lost are run
	 * again (at least once, as for a lost worker), and so, after a short
	 * backoff and a few times at most, is a closure failing with
	 * PASCO_EUNAVAILABLE, PASCO_ENOTFOUND or PASCO_ETIMEDOUT when no loss
	 * is known yet. A ps back as the same process (a dropped connection)
	 * goes on as it was. A ps that does not come back within
	 * ps_recovery_timeout_ms (0: 60 s), or that cannot be restored (no
	 * intact checkpoint, or one that lacks a variable it held), fails the
	 * training with PASCO_EUNAVAILABLE at the next schedule / join / done,
	 * as without recovery. NULL (and no save): no recovery. Copied. */
	const char *checkpoint_dir;
	int64_t     ps_recovery_timeout_ms;
} pasco_strategy_options;

/* Connects to every ps and worker of cluster (which must validate) and
 * waits until all answer. opts may be NULL. The strategy keeps its own copy
 * of what it needs from cluster. Every connection proves the cluster key
 * named by PASCO_KEY_FILE (or --key-file, pasco/server.h), when there is
 * one, and requires the task to prove it back. Every connection also
 * names this process as the cluster's chief (its TF_CONFIG chief address
 * and an incarnation chosen once per process): a ps or worker serves one
 * chief at a time, so while another chief (another address) is connected
 * to a task, this one is refused: PASCO_EUNAVAILABLE within about 5 s,
 * the message naming the chief the task serves. A chief restarted at the
 * same address replaces its old incarnation. PASCO_EINVAL for a bad
 * cluster or an unusable key file,
 * PASCO_ETIMEDOUT when a task does not answer in time. On failure *out is
 * NULL and pasco_strategy_error(NULL) says why (which task, what it
 * waited for), on this thread. Blocks. */
int pasco_strategy_create(pasco_strategy **out, const pasco_cluster *cluster,
    const pasco_strategy_options *opts);

/* The message of the last failure of pasco_variable_create or a
 * checkpoint function of s; "" if none. Not thread-safe: the buffer is the
 * strategy's, and such a failure on another thread overwrites it; read it
 * where no other thread uses s. With s NULL: why this thread's last
 * pasco_strategy_create failed ("" if it did not). */
const char *pasco_strategy_error(const pasco_strategy *s);

/* How many times a lost ps was recovered from a checkpoint (see
 * pasco_strategy_options.checkpoint_dir); *last_step (may be NULL) gets
 * the step of the checkpoint the last recovery rolled back to, or -1 when
 * there was none. Thread-safe. */
uint64_t pasco_strategy_ps_recoveries(pasco_strategy *s, int64_t *last_step);

/* One task's health, as the strategy sees it (TensorFlow's
 * get_task_states). */
typedef struct pasco_task_health {
	pasco_role role;  /* PASCO_ROLE_WORKER or PASCO_ROLE_PS */
	int32_t    index; /* within its role */
	/* Connected, and answering: a task that misses heartbeat_misses
	 * heartbeats in a row (a process stopped, hung, or cut off while its
	 * TCP connection stays open) is down until it answers again. */
	bool     up;
	uint64_t incarnation; /* the process answering; 0 when down */
	char     why[256];    /* when down: why, e.g. "no heartbeat answer
	                       * (alive but hung?)", "not connected" */
} pasco_task_health;

/* The health of every task: the workers in index order, then the ps
 * tasks, into out (room for cap; cap may be 0). Returns the number of
 * tasks, num_workers + num_ps, whatever cap is. Never blocks on a task:
 * it reports what connections and heartbeats last said. Thread-safe. */
size_t pasco_strategy_health(
    pasco_strategy *s, pasco_task_health *out, size_t cap);

/* Number of ps tasks and workers. */
size_t pasco_strategy_num_ps(const pasco_strategy *s);
size_t pasco_strategy_num_workers(const pasco_strategy *s);

/* Destroys the strategy after every coordinator and variable handle made
 * from it. NULL is a no-op. */
void pasco_strategy_destroy(pasco_strategy *s);

/* Creates variable name with initial_value's dtype, shape and contents.
 * The strategy's partitioner decides the number of shards (never more
 * than rows; scalars are never split); shard i is named "<name>/part_<i>"
 * and holds rows of the div layout. Each shard goes on the next ps task in
 * round-robin order: the counter advances once per shard, as in
 * TensorFlow. Creating an existing name with the same dtype and shape
 * returns a handle to it (its value is left alone); with another dtype or
 * shape it is PASCO_EEXIST. Partitioner errors are PASCO_EINVAL. Messages:
 * pasco_strategy_error. The handle is owned by the caller. Blocks. */
int pasco_variable_create(pasco_variable **out, pasco_strategy *s,
    const char *name, const pasco_tensor *initial_value);

/* The same, with values computed on the ps by init (so they do not depend
 * on the sharding) instead of sent from the coordinator. */
int pasco_variable_create_init(pasco_variable **out, pasco_strategy *s,
    const char *name, pasco_dtype dtype, int32_t rank, const int64_t *shape,
    const pasco_initializer *init);

/* The same, split by partitioner instead of the strategy's (NULL: the
 * strategy's), as a layer with its own partitioner (an Embedding) is. */
int pasco_variable_create_partitioned(pasco_variable **out, pasco_strategy *s,
    const char *name, pasco_dtype dtype, int32_t rank, const int64_t *shape,
    const pasco_initializer *init, const pasco_partitioner *partitioner);

/* The same, given Keras's constraint (constraint.h; NULL: none), which
 * the ps applies after each optimizer update of the variable. PASCO_EINVAL
 * for a bad constraint, or a MaxNorm over axis 0 of a variable split in
 * shards. */
int pasco_variable_create_constrained(pasco_variable **out, pasco_strategy *s,
    const char *name, pasco_dtype dtype, int32_t rank, const int64_t *shape,
    const pasco_initializer *init, const pasco_partitioner *partitioner,
    const pasco_constraint *constraint);

/* A dynamic embedding table (pasco_dynamic_options: variable.h): rows of
 * dim floats keyed by any 64-bit key
 * (an i64 tensor of keys holds their bits; a u64 key is the same bits;
 * strings hash to keys with pasco_hash_key), made on a key's first
 * lookup, not declared up front. Every ps holds a share: a key lives on
 * the ps a hash of its 64 bits picks (modulo the ps count), the same in
 * every process and run, so a key is always on the same ps; checkpoints
 * restore into another ps count by the same rule. Look rows up with
 * pasco_variable_gather (training: an unseen key gets a row) and update them
 * with pasco_variable_apply_gradient_sparse (any optimizer; slots
 * are made and dropped with each row; the global step drives Adam and
 * the table's clock); pasco_variable_set_find_only(v, true) makes lookups
 * insert nothing (evaluation, prediction). Reading, assigning or applying
 * the whole table is refused: it has no whole value. Key -1 is padding (as
 * on the tape): it reads zeros and never gets a row. A ps makes no row
 * past its memory budget (PASCO_MAX_PS_MB) or its limit per variable
 * (PASCO_MAX_VARIABLE_MB, for the table's rows on it): such a key reads
 * the default and counts as refused, and the ps logs why. */

/* Creates the dynamic table name on every ps (shape [0, dim], f32).
 * Creating it again with the same options returns a handle to it; with
 * other options, or a name a fixed variable has, it is PASCO_EEXIST. Bad
 * options are PASCO_EINVAL. Messages: pasco_strategy_error. It is saved
 * and restored by checkpoints with its keys, rows, slots and counts.
 * Blocks. */
int pasco_dynamic_variable_create(pasco_variable **out, pasco_strategy *s,
    const char *name, const pasco_dynamic_options *options);

/* The global step (Keras's optimizer.iterations, TF1's global_step): an
 * i64 scalar variable named "global_step", created at 0 by the first call
 * (pasco_variable_create: placed round-robin like any variable; later
 * calls, and a strategy that finds it on its ps, leave its value alone).
 * *out is a new handle, owned by the caller, that carries the strategy's
 * consistency mode: set it as opt.iterations (optimizer.h) here or in a
 * step function that gets it with pasco_arg_variable, and each apply
 * advances it once (once per round under BSP); an optimizer's own count
 * (Adam's t) is it less opt.iterations_base, which pasco_model_fit sets
 * per compiled model (optimizer.h). Read it with pasco_variable_read; it
 * is saved in checkpoints like any variable, and the name "global_step"
 * is how a restore finds it. Messages: pasco_strategy_error. Blocks. */
int pasco_strategy_global_step(pasco_strategy *s, pasco_variable **out);

/* BSP: applies every partial round on every ps (the average of the
 * gradients it has) and advances the global step once for it, so that
 * the last steps of a run, fewer than replicas_to_aggregate, count (a run
 * that stops without it leaves them unapplied; nothing ever waits for
 * them). Call it after pasco_join, when no apply is in flight; an apply
 * racing it may start a round of its own. A no-op under ASP and SSP.
 * Messages: pasco_strategy_error. Blocks. */
int pasco_strategy_sync_flush(pasco_strategy *s);

typedef struct pasco_coordinator_options {
	/* Messages in flight per worker; 0 means 4. TensorFlow uses 1. */
	uint32_t window;
	/* Automatic batching: when every worker's window is full and
	 * closures wait in the queue, up to max_batch of them (those whose
	 * tensor arguments total at most 16 KB, of functions that have not
	 * returned more than 64 KB) go to a worker in one message as its
	 * window frees, run there in order, and come back in one reply. Each
	 * keeps its own remote value, error and retry; a failure cancels the
	 * closures after it in its batch, as it cancels queued ones, unless
	 * it is retried (its ps was lost and is being recovered): then they
	 * run again too.
	 * 0 means 32; 1 turns it off. */
	uint32_t max_batch;
	/* Queued closures before pasco_schedule blocks; 0 means 262144. */
	uint32_t queue_size;
	/* When no closure has finished for this long while some are queued or
	 * in flight, log the queue and each worker's state (TensorFlow's
	 * watchdog); 0: off. */
	int64_t watchdog_timeout_ms;
} pasco_coordinator_options;

/* Starts one dispatcher per worker. opts may be NULL. */
int pasco_coordinator_create(pasco_coordinator **out, pasco_strategy *s,
    const pasco_coordinator_options *opts);

/* Stops the dispatchers and frees the coordinator. Closures still queued
 * are cancelled, and those in flight are abandoned, not waited for: their
 * remote values report PASCO_ECANCELLED at once, although the function may
 * have run, or still run, on its worker (as in TensorFlow); workers are
 * asked to cancel them (pasco_call_is_cancelled). Call
 * pasco_join first to keep every result. Blocks only until the dispatchers
 * have stopped. Remote values stay valid until freed; iterators not freed
 * are freed here. NULL is a no-op. Not thread-safe: no other call may use
 * c during or after it. */
void pasco_coordinator_destroy(pasco_coordinator *c);

/* An argument of pasco_schedule. Build one with the helpers below. */
typedef enum pasco_arg_kind {
	PASCO_ARG_TENSOR              = 0,
	PASCO_ARG_VARIABLE            = 1,
	PASCO_ARG_ITERATOR            = 2,
	PASCO_ARG_PER_WORKER_VARIABLE = 3,
} pasco_arg_kind;

typedef struct pasco_arg {
	pasco_arg_kind kind;
	union {
		const pasco_tensor        *tensor;
		const pasco_variable      *variable;
		pasco_per_worker_iterator *iterator;
		pasco_per_worker_variable *per_worker_variable;
	} u;
} pasco_arg;

static inline pasco_arg
pasco_arg_tensor(const pasco_tensor *t)
{
	pasco_arg a = {.kind = PASCO_ARG_TENSOR, .u.tensor = t};
	return a;
}

static inline pasco_arg
pasco_arg_variable(const pasco_variable *v)
{
	pasco_arg a = {.kind = PASCO_ARG_VARIABLE, .u.variable = v};
	return a;
}

/* Each worker gets its own iterator of the per-worker dataset. */
static inline pasco_arg
pasco_arg_iterator(pasco_per_worker_iterator *it)
{
	pasco_arg a = {.kind = PASCO_ARG_ITERATOR, .u.iterator = it};
	return a;
}

/* Each worker gets its own copy of the per-worker variable. */
static inline pasco_arg
pasco_arg_per_worker_variable(pasco_per_worker_variable *v)
{
	pasco_arg a = {
	    .kind = PASCO_ARG_PER_WORKER_VARIABLE, .u.per_worker_variable = v};
	return a;
}

/* Enqueues a call of the step function fn with args and returns at once.
 * args are captured (tensors by reference) before the call returns. When rv
 * is not NULL, *rv receives a remote value owned by the caller; when it is
 * NULL, the worker does not send the result back. Blocks while the queue is
 * full. Returns PASCO_EINVAL for bad arguments, or the pending error of an
 * earlier closure (see above; message: pasco_coordinator_error), in which
 * case nothing is enqueued and *rv is NULL. */
int pasco_schedule(pasco_coordinator *c, const char *fn, const pasco_arg *args,
    size_t nargs, pasco_remote_value **rv);

typedef struct pasco_schedule_options {
	/* Step packing: the worker calls fn this many times, back to back,
	 * in one closure (one message each way), which is what TensorFlow
	 * users write by hand as a loop inside their tf.function
	 * (steps_per_execution). The remote value gets the last call's
	 * result; the first failing call ends the closure with its error
	 * (the message says which call). A closure cut off by a worker
	 * failure runs again whole, so at-least-once holds per closure: some
	 * calls may run twice. pasco_call_repetition tells a call its index.
	 * 0 and 1 mean once. */
	uint32_t repeat;
	/* The remote value gets, instead of the last call's result, the sum
	 * of every call's result followed by the number of calls: an f64
	 * tensor of n + 1 elements, where each call returns n numbers (a
	 * tensor of n elements, or a list of n scalar tensors; the same n
	 * every call). A call that returns something else fails the closure,
	 * naming what it returned. This is how pasco_fit averages its
	 * metrics over every step of packed closures (sum / count), as
	 * Keras does with steps_per_execution. */
	bool sum_results;
} pasco_schedule_options;

/* pasco_schedule with options (opts may be NULL: as pasco_schedule). */
int pasco_schedule_with(pasco_coordinator *c, const char *fn,
    const pasco_arg *args, size_t nargs, const pasco_schedule_options *opts,
    pasco_remote_value **rv);

/* Exactly-once processing of a sharded dataset, for every custom loop
 * (TensorFlow offers it only through Keras's pss_evaluation_shards):
 * schedules fn once per shard k in [0, num_shards), with args followed by
 * two i64 scalars, k and num_shards, and stores shard k's result in
 * results[k] (owned by the caller: pasco_value_free). fn must process its
 * whole shard and return what it computed without side effects on shared
 * state; its result counts only when its closure completes, and a closure
 * cut off by a worker failure runs again from the start of its shard, so
 * every shard, and every example in it, is counted exactly once. Blocks
 * (it joins); on an error no result is returned. */
int pasco_schedule_shards(pasco_coordinator *c, const char *fn,
    const pasco_arg *args, size_t nargs, int32_t num_shards,
    pasco_value **results);

/* Blocks until every scheduled closure has finished, then returns PASCO_OK,
 * or the first error of a closure since the last one raised. */
int pasco_join(pasco_coordinator *c);

/* *done = true when nothing is queued or in flight. Does not block, unless
 * an error is pending, which it raises as pasco_join does. */
int pasco_done(pasco_coordinator *c, bool *done);

/* How many times the watchdog has fired. Its report, a warning, reads
 * "watchdog: no closure finished for <timeout> ms: <n> queued, <n> in
 * flight; worker <i> up|down, <n> in flight; ..." followed by the metrics
 * line below; the watchdog thread ends with pasco_coordinator_destroy. */
uint64_t pasco_coordinator_watchdog_count(const pasco_coordinator *c);

/* What the coordinator has done since it was created (TensorFlow's
 * coordinator metrics). Counts are of scheduled closures (pasco_schedule),
 * not of per-worker resource operations. */
typedef struct pasco_coordinator_metrics {
	uint64_t scheduled;  /* accepted by pasco_schedule */
	uint64_t dispatched; /* sent to a worker, each retry again */
	uint64_t succeeded;  /* finished without an error */
	uint64_t failed;     /* finished with an error (the function's, or
	                      * its input's) */
	uint64_t retried;    /* put back after their worker failed, or a ps
	                      * they used was recovered */
	uint64_t cancelled;  /* cancelled by an earlier error (queued, or
	                      * running and stopped on pasco_call_is_cancelled)
	                      * or by pasco_coordinator_destroy */
	uint64_t fetches;    /* pasco_remote_value_fetch calls that returned
	                      * a value, on remote values of this coordinator */
	uint64_t queued;     /* queued now */
	uint64_t inflight;   /* in flight now */
	/* Time closures waited in the queue before being sent (a retried one
	 * is counted again from its return to the queue), summed over the
	 * `dispatched` sends, and the longest, in microseconds. */
	uint64_t queue_time_us_total;
	uint64_t queue_time_us_max;
	uint64_t watchdog_reports; /* as pasco_coordinator_watchdog_count */
} pasco_coordinator_metrics;

/* Fills *out with c's metrics. They are also logged: at debug level
 * (PASCO_LOG=3) after each pasco_join, at info level when c is destroyed,
 * and with every watchdog report, as one line starting "coordinator
 * metrics". Thread-safe. */
void pasco_coordinator_metrics_read(
    pasco_coordinator *c, pasco_coordinator_metrics *out);

/* The message of the error that pasco_schedule, pasco_join or pasco_done
 * on c last returned to the calling thread ("" if none, or if this
 * thread's last such call was on another coordinator). Each thread has
 * its own message: valid until this thread's next such call, and never
 * overwritten by another thread's. Thread-safe. */
const char *pasco_coordinator_error(const pasco_coordinator *c);

/* Blocks until rv's function has run, then stores in *out its result,
 * borrowed from rv (valid until pasco_remote_value_free), and returns
 * PASCO_OK, or returns the function's error, or PASCO_ECANCELLED when it
 * was cancelled. The result is held by the coordinator, so it can be
 * fetched after the worker that produced it is gone. */
int pasco_remote_value_fetch(pasco_remote_value *rv, const pasco_value **out);

/* True once fetch would not block. */
bool pasco_remote_value_is_ready(const pasco_remote_value *rv);

/* The error message of a failed or cancelled remote value, "" otherwise. */
const char *pasco_remote_value_error(const pasco_remote_value *rv);

/* NULL is a no-op. */
void pasco_remote_value_free(pasco_remote_value *rv);

/* A dataset built on every worker by the factory registered as
 * factory_name (PASCO_DATASET). Nothing is built until an iterator is
 * made. */
int pasco_per_worker_dataset_create(pasco_per_worker_dataset **out,
    pasco_coordinator *c, const char *factory_name);

void pasco_per_worker_dataset_free(pasco_per_worker_dataset *d);

/* Builds a fresh iterator of d on every worker (asynchronously, before any
 * closure scheduled after this call runs on that worker); each worker gets
 * its own, and a worker that restarts gets it rebuilt from the start. Pass
 * it to pasco_schedule with pasco_arg_iterator. A factory's error is
 * reported by the closures that use the iterator on that worker. */
int pasco_per_worker_iterator_create(
    pasco_per_worker_iterator **out, pasco_per_worker_dataset *d);

/* Releases the iterator; workers drop theirs once no closure uses it.
 * NULL is a no-op. */
void pasco_per_worker_iterator_free(pasco_per_worker_iterator *it);

/* A per-worker variable (TensorFlow's per-worker values and
 * per_worker_variable=True variables): a tensor kept on every worker, in
 * that worker's memory, never on a ps. Each worker makes its copy by
 * calling the step function init_fn (PASCO_FUNCTION, called with no
 * argument; it returns the initial tensor with pasco_call_return), once,
 * before any closure scheduled after this call runs there. Closures get it
 * with pasco_arg_per_worker_variable and change their worker's copy with
 * pasco_call_per_worker_add (atomic) or read it with
 * pasco_call_per_worker_read (include/pasco/function.h); a typical use is
 * a local accumulator whose copies the chief sums with
 * pasco_per_worker_variable_read_all. Like a per-worker iterator, it is
 * built again from init_fn on a worker that restarts: what that worker's
 * copy held is lost. An init_fn error is reported by the closures that use
 * the variable on that worker (and by read_all). Does not block. */
int pasco_per_worker_variable_create(pasco_per_worker_variable **out,
    pasco_coordinator *c, const char *init_fn);

/* Reads every worker's copy: out[w], for w in [0, num_workers), gets a new
 * tensor owned by the caller (pasco_tensor_release). The reads are queued
 * behind each worker's earlier resource operations, and run beside the
 * closures in flight there (call pasco_join first for a value that
 * includes every scheduled closure). Blocks until every worker answered.
 * On an error no tensor is returned: PASCO_EUNAVAILABLE for a worker that
 * is down (as TensorFlow aborts a dead worker's value), init_fn's error
 * when it failed on a worker, PASCO_ENOTFOUND when a worker has no copy
 * (it restarted and the copy is not rebuilt yet), PASCO_ECANCELLED when
 * the coordinator is destroyed meanwhile; pasco_coordinator_error (on
 * this thread) says which worker and why. */
int pasco_per_worker_variable_read_all(
    pasco_per_worker_variable *v, pasco_tensor **out);

/* Releases the variable; workers drop their copies once no closure uses
 * it. NULL is a no-op. */
void pasco_per_worker_variable_free(pasco_per_worker_variable *v);

#endif
