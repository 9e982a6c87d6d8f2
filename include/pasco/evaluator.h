/*
 * The sidecar evaluator: what a task of type "evaluator" runs, the C
 * counterpart of Keras's SidecarEvaluator. It watches the chief's
 * checkpoint directory, loads each new checkpoint into variables of its
 * own, evaluates its whole dataset exactly once, and reports the loss and
 * metrics: one JSON line per checkpoint, eval scalars in TensorBoard event
 * files, and a callback. It needs no ps or worker of the training cluster:
 * it starts a ps and a worker server inside its own process (on inproc://
 * addresses) and a strategy and coordinator over them, on which the
 * program creates its variables with the same code as the chief (as Keras's
 * SidecarEvaluator is given the model) and builds its per-worker datasets.
 *
 *     pasco_evaluator_options o = {.checkpoint_dir = dir,
 *         .eval_fn = "eval_shard", .num_shards = 4,
 *         .final_step = epochs * steps_per_epoch};
 *     pasco_evaluator_create(&e, &o);
 *     pasco_variable_create(&w, pasco_evaluator_strategy(e), "w", zero);
 *     pasco_arg arg = pasco_arg_variable(w);
 *     rv = pasco_evaluator_run(e, &arg, 1);   // until the final step
 *
 * Each round, run lists the complete checkpoints (a ckpt-<step> directory
 * with its manifest, checkpoint.h) newer than the last one it evaluated
 * and takes them in step order (with latest_only, only the newest, as
 * Keras does); for each it restores the variables created through
 * pasco_evaluator_strategy, calls eval_fn once per shard with
 * pasco_schedule_shards (exactly once per example), reduces the shards'
 * results and reports them with step = the checkpoint's step. A checkpoint
 * removed before it was restored (the chief keeps the newest N) is skipped
 * with a log line; one that cannot be restored (damaged) is logged and
 * skipped, and is not tried again. It ends once it has evaluated a
 * checkpoint whose step is at least final_step: the chief's last (one
 * that cannot be restored is not evaluated, and the timeout ends run). If the
 * chief dies before writing it, run gives up after timeout_ms without a
 * new checkpoint (PASCO_ETIMEDOUT); with timeout_ms 0 it waits forever,
 * as Keras's does. A directory that does not exist yet is waited for (the
 * chief makes it with its first checkpoint), and said once in the log.
 *
 * The reduction (unless opts.reduce is given): shard k's result is one
 * tensor (any float or integer dtype, rank 0 or 1) of 2 + num_metrics
 * numbers, [sum of the loss over the shard's examples, sum of metric 1,
 * ..., sum of metric m, number of examples]; the reported loss and
 * metrics are each sum over all shards divided by the total count, so
 * means over examples come out exact whatever the sharding. A shard of no
 * examples returns zeros.
 */
#ifndef PASCO_EVALUATOR_H
#define PASCO_EVALUATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coordinator.h"
#include "error.h"
#include "value.h"

typedef struct pasco_evaluator pasco_evaluator;

/* What one checkpoint's evaluation gave, passed to the callback. Borrowed:
 * valid during the call only. */
typedef struct pasco_evaluation {
	const char   *checkpoint; /* its directory, DIR/ckpt-<step> */
	int64_t       step;       /* its step */
	double        loss;       /* the reduced loss */
	const double *metrics;    /* num_metrics values, in option order */
	size_t        num_metrics;
	int64_t       examples; /* examples evaluated; -1 when unknown */
} pasco_evaluation;

/* A reduction of the shards' results (results[k] is shard k's, borrowed):
 * sets *loss, metrics[0 .. num_metrics) and *examples (-1 when it does not
 * count them) and returns PASCO_OK, or an error with a message in err. */
typedef int (*pasco_evaluator_reduce_fn)(void *arg,
    pasco_value *const *results, int32_t num_shards, double *loss,
    double *metrics, size_t num_metrics, int64_t *examples, char *err,
    size_t errlen);

/* Called on run's thread after each checkpoint is evaluated and reported;
 * a non-zero return stops run, which returns it. */
typedef int (*pasco_evaluator_callback)(void *arg, const pasco_evaluation *ev);

typedef struct pasco_evaluator_options {
	/* The chief's checkpoint directory. Required. */
	const char *checkpoint_dir;
	/* The registered function (PASCO_FUNCTION) evaluating one shard:
	 * called with run's args followed by two i64 scalars, k and
	 * num_shards (pasco_schedule_shards). Required. */
	const char *eval_fn;
	/* Shards of the evaluation data; 0 means 1. */
	int32_t num_shards;
	/* Names of the metrics after the loss, as they appear in the JSON
	 * line and the event files ("mae"); num_metrics of them, at most 32.
	 * Copied. */
	const char *const *metric_names;
	size_t             num_metrics;
	/* Eval event files (TensorBoard) go under logdir/eval: a scalar
	 * "loss" and one per metric name, at the checkpoint's step. NULL:
	 * none. */
	const char *logdir;
	/* Stop after evaluating a checkpoint whose step is >= final_step
	 * (the chief's last: epochs * steps_per_epoch); 0: never, only the
	 * timeout ends run. */
	int64_t final_step;
	/* How often the directory is listed; 0 means 500 ms. */
	int64_t poll_interval_ms;
	/* Give up when no new checkpoint has come for this long (the chief
	 * died); 0 waits forever. */
	int64_t timeout_ms;
	/* Evaluate only the newest new checkpoint each round (Keras's
	 * behaviour), skipping older ones the evaluator did not get to;
	 * false evaluates every one still there, in step order. */
	bool latest_only;
	/* One JSON line per checkpoint: {"checkpoint": PATH, "step": N,
	 * "loss": X, <metric>: Y, ..., "examples": N}, flushed at once.
	 * NULL means stdout. Not closed. */
	FILE *json_out;
	/* Another reduction than the sums above; NULL: the sums. */
	pasco_evaluator_reduce_fn reduce;
	void                     *reduce_arg;
	/* Called after each evaluation; may be NULL. */
	pasco_evaluator_callback on_evaluated;
	void                    *callback_arg;
} pasco_evaluator_options;

/* Starts the evaluator's own ps and worker servers in this process, a
 * strategy and a coordinator over them, and opens the event file when
 * opts->logdir is set. Nothing is evaluated yet. PASCO_EINVAL for missing
 * or bad options (a message names which: pasco_evaluator_error(NULL) on
 * this thread), or the error of a server, the strategy or the event file.
 * On failure *out is NULL. Blocks until the servers answer. Thread-safe. */
int pasco_evaluator_create(
    pasco_evaluator **out, const pasco_evaluator_options *opts);

/* The strategy on which the program creates the variables to evaluate,
 * with the same names, dtypes and shapes as the chief's (their initial
 * values do not matter: each checkpoint overwrites them), and the
 * coordinator for per-worker datasets and iterators among run's args.
 * Borrowed: valid until pasco_evaluator_destroy. */
pasco_strategy    *pasco_evaluator_strategy(pasco_evaluator *e);
pasco_coordinator *pasco_evaluator_coordinator(pasco_evaluator *e);

/* Evaluates checkpoints as they come (see above) until one of step >=
 * final_step is evaluated (PASCO_OK), no new checkpoint has come for
 * timeout_ms (PASCO_ETIMEDOUT), the evaluation function fails (its error:
 * a failing program would fail on every checkpoint), a report cannot be
 * written (PASCO_EIO), or the callback returns non-zero (its value). args
 * (may be NULL when nargs is 0) are captured for each evaluation as
 * pasco_schedule does. The message: pasco_evaluator_error. Blocks. Not
 * thread-safe: one run at a time per evaluator. */
int pasco_evaluator_run(
    pasco_evaluator *e, const pasco_arg *args, size_t nargs);

/* The step of the last checkpoint evaluated (-1 before the first), and how
 * many checkpoints were evaluated. Not thread-safe with run. */
int64_t pasco_evaluator_last_step(const pasco_evaluator *e);
int64_t pasco_evaluator_count(const pasco_evaluator *e);

/* Why the last create on this thread (e NULL) or the last run of e failed;
 * "" if it did not. Valid until the next such call. */
const char *pasco_evaluator_error(const pasco_evaluator *e);

/* Stops the coordinator, strategy and servers, closes the event file and
 * frees. Variables created on the strategy must be freed first. NULL is a
 * no-op. Not thread-safe: no other call may use e during or after it. */
void pasco_evaluator_destroy(pasco_evaluator *e);

#endif
