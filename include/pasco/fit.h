/*
 * The training loop of Keras's Model.fit under ParameterServerStrategy,
 * over the coordinator: epochs of steps_per_epoch scheduled step calls,
 * the epoch's loss and metrics (the mean over its steps of what they
 * returned), optional exactly-once validation, and
 * callbacks at epoch granularity, as TensorFlow restricts them under this
 * strategy. The same callbacks drive a custom loop through a callback list
 * (pasco_callbacks_begin, ..._epoch_begin, ..._epoch_end, ..._end), which
 * pasco_fit itself uses.
 *
 *     pasco_callbacks *cbs;
 *     pasco_callback   cb;
 *     pasco_callbacks_create(&cbs);
 *     pasco_callback_backup_restore(&cb, strategy, "/shared/backup");
 *     pasco_callbacks_add(cbs, cb);
 *     pasco_callback_checkpoint(&cb, &(pasco_checkpoint_callback_options){
 *         .strategy = strategy, .dir = "/shared/ckpt", .keep = 3});
 *     pasco_callbacks_add(cbs, cb);
 *     pasco_fit_options o = {.epochs = 5, .steps_per_epoch = 20,
 *         .step_function = "train_step", .args = args, .nargs = 4,
 *         .callbacks = cbs};
 *     int rv = pasco_fit(coord, &o, NULL);
 *
 * Errors carry a message: pasco_fit_error(), per thread.
 */
#ifndef PASCO_FIT_H
#define PASCO_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coordinator.h"
#include "error.h"

/* Logs: what Keras hands callbacks as `logs`, name -> value, in the order
 * set. An epoch's logs hold "loss", each metric by its name, "val_loss"
 * and "val_<metric>" when validating, and "steps_per_second". */
#define PASCO_LOGS_MAX 32
#define PASCO_LOG_NAME_MAX 64

typedef struct pasco_logs {
	size_t count;
	struct {
		char   name[PASCO_LOG_NAME_MAX];
		double value;
	} entries[PASCO_LOGS_MAX];
} pasco_logs;

/* Sets name (replacing its value when present). PASCO_EINVAL for a name
 * that is empty or too long, PASCO_EOUTOFRANGE when logs are full. */
int pasco_logs_set(pasco_logs *logs, const char *name, double value);

/* Whether name is present; its value into *value (may be NULL). */
bool pasco_logs_get(const pasco_logs *logs, const char *name, double *value);

/* What callbacks see of the loop. The loop (or the custom loop's calls on
 * the list) fills it; callbacks read it and may set the two fields marked
 * writable. */
typedef struct pasco_fit_context {
	int32_t epochs;          /* training ends before this epoch */
	int64_t steps_per_epoch; /* steps in each epoch */
	/* The first epoch to run. A begin callback may move it (writable):
	 * backup and restore does, to resume an interrupted run. */
	int32_t initial_epoch;
	int32_t epoch;      /* the current epoch, from 0 */
	int64_t steps_done; /* steps of the current epoch finished so far */
	/* The training step: epoch * steps_per_epoch + steps_done, kept by
	 * the list (pasco_callbacks_global_step); the checkpoint step. */
	int64_t global_step;
	/* Set by a callback (writable) to end training after the current
	 * epoch; stop_reason says why (shown by the progress display). */
	bool stop_training;
	char stop_reason[160];
	/* The optimizer's learning rate that the steps scheduled next use,
	 * when the loop has one (pasco_model_fit: the compiled optimizer's;
	 * pasco_fit: pasco_fit_options.learning_rate), else 0. Read it here;
	 * change it with pasco_fit_set_learning_rate. */
	double learning_rate;
	/* Set by a callback's begin (writable) to have "learning_rate" in
	 * every epoch's logs (the rate that epoch's steps used), as Keras's
	 * ReduceLROnPlateau and LearningRateScheduler put it there. */
	bool log_learning_rate;
	/* In progress calls only (else NULL; borrowed): the epoch's running
	 * logs, "loss" and each metric over its steps finished so far. */
	const pasco_logs *batch_logs;
} pasco_fit_context;

/* Sets the learning rate of the steps scheduled from now on: a callback's
 * call (Keras's `model.optimizer.learning_rate = lr`). The fit loop sends
 * it with the next epoch's steps (a change in epoch_begin applies to that
 * epoch; one in progress or epoch_end to the next), and the ps applies
 * every update of those steps at that rate. PASCO_EINVAL, with a message,
 * for a rate that is not a finite number > 0, or a loop without a learning
 * rate (ctx->learning_rate 0: a step function of your own, unless
 * pasco_fit_options.learning_rate and set_learning_rate carry it). Not
 * thread-safe: call from a callback, on the loop's thread. */
int pasco_fit_set_learning_rate(pasco_fit_context *ctx, double lr);

/* A callback: any function pointer may be NULL. Each is called from the
 * thread running the loop, in the order the callbacks were added; a
 * non-OK return ends the loop with that error (set a message with
 * pasco_fit_fail). begin runs once before the first epoch; epoch_begin
 * and epoch_end around each epoch (epoch_end with the epoch's logs);
 * progress while an epoch's steps finish (ctx->steps_done grows; loss is
 * the mean loss so far), at most once per finished closure: the only
 * batch-level call, as TensorFlow keeps for its built-in callbacks; end
 * once after training completes or stops early (not after an error),
 * with the last epoch's logs. free releases user when the list is
 * freed. */
typedef struct pasco_callback {
	const char *name; /* for messages; a string literal */
	int (*begin)(void *user, pasco_fit_context *ctx);
	int (*epoch_begin)(void *user, pasco_fit_context *ctx);
	int (*progress)(void *user, pasco_fit_context *ctx, double loss);
	int (*epoch_end)(
	    void *user, pasco_fit_context *ctx, const pasco_logs *logs);
	int (*end)(void *user, pasco_fit_context *ctx, const pasco_logs *logs);
	void (*free)(void *user);
	void *user;
} pasco_callback;

/* Records a printf-style message for pasco_fit_error on this thread and
 * returns err: `return pasco_fit_fail(PASCO_EIO, "disk full");`. */
int pasco_fit_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The message of the last failure of a function of this header on this
 * thread ("" if none). */
const char *pasco_fit_error(void);

/* A list of callbacks, driven by pasco_fit or by a custom loop. Not
 * thread-safe: use a list from one thread. */
typedef struct pasco_callbacks pasco_callbacks;

int pasco_callbacks_create(pasco_callbacks **out);

/* Appends cb. The list takes cb.user over, even on failure (PASCO_ENOMEM;
 * cb.free is called then). */
int pasco_callbacks_add(pasco_callbacks *cbs, pasco_callback cb);

/* Starts training: epochs and steps_per_epoch (> 0, else PASCO_EINVAL)
 * go into the context, *initial_epoch is where the caller means to start
 * and, on return, where it must start (a backup may have moved it). */
int pasco_callbacks_begin(pasco_callbacks *cbs, int32_t epochs,
    int64_t steps_per_epoch, int32_t *initial_epoch);
int pasco_callbacks_epoch_begin(pasco_callbacks *cbs, int32_t epoch);
/* steps_done: steps of the current epoch finished; loss: their mean. */
int pasco_callbacks_progress(
    pasco_callbacks *cbs, int64_t steps_done, double loss);
/* Ends the epoch: steps_done becomes steps_per_epoch. */
int pasco_callbacks_epoch_end(
    pasco_callbacks *cbs, int32_t epoch, const pasco_logs *logs);
int pasco_callbacks_end(pasco_callbacks *cbs, const pasco_logs *logs);

/* Whether a callback asked training to stop (early stopping does). */
bool pasco_callbacks_stop_requested(const pasco_callbacks *cbs);

/* The training step now (see pasco_fit_context.global_step). */
int64_t pasco_callbacks_global_step(const pasco_callbacks *cbs);

/* The list's context (borrowed). */
const pasco_fit_context *pasco_callbacks_context(const pasco_callbacks *cbs);

/* Frees the list and every callback's user data. NULL is a no-op. */
void pasco_callbacks_free(pasco_callbacks *cbs);

/* Built-in callbacks. Each fills *out; pass it to pasco_callbacks_add. */

typedef struct pasco_checkpoint_callback_options {
	pasco_strategy *strategy; /* whose variables are saved */
	const char     *dir;      /* checkpoints go to dir/ckpt-<step> */
	/* Save every N training steps (checked as steps finish); 0: at the
	 * end of every epoch. The final step is saved at the end either
	 * way. */
	int64_t every_steps;
	int32_t keep; /* keep the newest N; 0 keeps all */
} pasco_checkpoint_callback_options;

/* ModelCheckpoint: pasco_checkpoint_save at the global step. Copied. */
int pasco_callback_checkpoint(
    pasco_callback *out, const pasco_checkpoint_callback_options *o);

/* BackupAndRestore: at each epoch's end, a checkpoint in backup_dir
 * (keeping 2) and then backup_dir/training_state.json ({"epoch": next
 * epoch, "step": ..., "checkpoint": "ckpt-<step>"}, renamed into place);
 * at begin, when that file exists, the checkpoint it names is restored
 * and training starts at its epoch; at a successful end, the backup is
 * deleted. backup_dir must be on storage every task reaches. */
int pasco_callback_backup_restore(
    pasco_callback *out, pasco_strategy *strategy, const char *backup_dir);

typedef struct pasco_tensorboard_options {
	const char *logdir; /* event files in logdir/train and logdir/eval */
	/* Written as epoch_learning_rate each epoch when not 0. */
	double learning_rate;
	/* A learning-rate schedule as Keras serializes one ({"class_name":
	 * "ExponentialDecay", "config": {...}}, the compile config's form);
	 * when set, epoch_learning_rate is its value at the global step at
	 * the epoch's end (Keras's optimizer.learning_rate then). NULL:
	 * learning_rate. Read by pasco_callback_tensorboard. */
	const char *learning_rate_schedule;
} pasco_tensorboard_options;

/* TensorBoard: at each epoch's end, every log as the scalar
 * "epoch_<name>" at step epoch, as Keras writes them: train logs in
 * logdir/train, val_* logs (without "val_") in logdir/eval. */
int pasco_callback_tensorboard(
    pasco_callback *out, const pasco_tensorboard_options *o);

typedef enum pasco_monitor_mode {
	PASCO_MONITOR_AUTO = 0, /* max for names with "acc", else min */
	PASCO_MONITOR_MIN  = 1,
	PASCO_MONITOR_MAX  = 2,
} pasco_monitor_mode;

typedef struct pasco_early_stopping_options {
	const char        *monitor; /* a log name; NULL: "val_loss" */
	double             min_delta;
	int32_t            patience;
	pasco_monitor_mode mode;
} pasco_early_stopping_options;

/* EarlyStopping, as Keras: an epoch improves when its monitored value
 * beats the best by more than min_delta; after `patience` epochs in a row
 * without improvement (and not on the first epoch), training stops after
 * the current epoch, saying so in ctx->stop_reason. Weights are left as
 * they are. An epoch whose logs lack the name is skipped with a
 * warning. */
int pasco_callback_early_stopping(
    pasco_callback *out, const pasco_early_stopping_options *o);

/* What the progress display shows: Keras's verbose. */
typedef enum pasco_progress_style {
	/* verbose "auto": the bar on a terminal, else a line per epoch */
	PASCO_PROGRESS_AUTO = 0,
	/* verbose=1: Keras 3's progress bar, redrawn in place with "\r"
	 * ("12/100 ━━━━━━━━━━━━━━━━━━━━ 3s 30ms/step - loss: 0.4123"), one
	 * line per epoch when it ends, "Epoch 2/5" before each epoch */
	PASCO_PROGRESS_BAR = 1,
	/* verbose=2: plain lines, "Epoch 2/5: 20/20 steps in 52 ms, loss
	 * 0.05, ..." at each epoch's end (and each interval_s of a longer
	 * one) */
	PASCO_PROGRESS_LINES = 2,
} pasco_progress_style;

typedef struct pasco_progress_options {
	FILE *out; /* NULL: stdout */
	/* Plain output (not a terminal): a line every interval_s seconds
	 * while an epoch runs (the first an interval after it starts, so
	 * an epoch shorter than interval_s prints only its end line), and
	 * one at its end; 0 means 10 s. Durations under a second are shown
	 * in ms ("20/20 steps in 85 ms"). */
	double               interval_s;
	pasco_progress_style style;
} pasco_progress_options;

/* A progress display in o->style (o may be NULL: AUTO). The bar, as
 * Keras 3's Progbar: at most 20 redraws a second, the steps done and the
 * epoch's, a bar of 20, the time left (ETA: "3s", "1:05", "1:02:03") and
 * the time per step from the second step on, then the running loss and
 * metrics ("- loss: 0.4123 - accuracy: 0.8812", 4 decimals, %.4e under
 * 1e-3); the epoch's last line shows the time it took and every log,
 * val_ ones included. Plain lines as documented at the style. */
int pasco_callback_progress(
    pasco_callback *out, const pasco_progress_options *o);

/* Keras's ReduceLROnPlateau: when `monitor` has not improved (by more
 * than min_delta: below best - min_delta in min mode, above best +
 * min_delta in max mode) for `patience` epochs in a row, the learning
 * rate becomes max(lr * factor, min_lr) (pasco_fit_set_learning_rate: the
 * next epoch's steps use it), unless it is at min_lr already; then
 * `cooldown` epochs pass before epochs without improvement count again.
 * Each epoch's logs get "learning_rate". An epoch whose logs lack the
 * name is skipped with a warning. PASCO_EINVAL for factor >= 1 or not >
 * 0, a negative patience, cooldown, min_delta or min_lr; the loop
 * without a learning rate fails at begin. */
typedef struct pasco_reduce_lr_options {
	const char        *monitor; /* NULL: "val_loss" */
	double             factor;  /* 0 means 0.1 */
	int32_t            patience;
	pasco_monitor_mode mode;
	double             min_delta; /* Keras's 1e-4 is not implied */
	int32_t            cooldown;
	double             min_lr;
	bool               verbose; /* a line on stdout at each reduction */
} pasco_reduce_lr_options;

int pasco_callback_reduce_lr_on_plateau(
    pasco_callback *out, const pasco_reduce_lr_options *o);

/* Keras's LearningRateScheduler: at each epoch's begin the learning rate
 * becomes schedule(user, epoch, current rate) (a finite number > 0, else
 * fit fails naming the epoch and the value); each epoch's logs get
 * "learning_rate". verbose: a line on stdout at each epoch. user is not
 * freed. */
int pasco_callback_lr_scheduler(pasco_callback *out,
    double (*schedule)(void *user, int32_t epoch, double lr), void *user,
    bool verbose);

/* Keras's CSVLogger: at begin, path is opened (truncated, or with append
 * added to, its header kept when it has one); at each epoch's end a row:
 * "epoch" then the logs by name in sorted order (with no val_ logs in the
 * first epoch, the val_ form of each name too, "NA" when absent), numbers
 * in Python's repr ("0.5", "1.0", "1e-05"); the header is written before
 * the first row unless appending to a file that has one. separator: one
 * character, NULL: ",". Copied. PASCO_EIO naming the path when it cannot
 * be opened or written. */
int pasco_callback_csv_logger(
    pasco_callback *out, const char *path, const char *separator, bool append);

/* Keras's TerminateOnNaN: when a step's loss (the epoch's running loss,
 * seen as each closure's result comes back) is NaN or infinite, prints
 * "Batch N: Invalid loss, terminating training" and stops training after
 * the current epoch (under ParameterServerStrategy an epoch's steps are
 * scheduled at its start), saying so in ctx->stop_reason. */
int pasco_callback_terminate_on_nan(pasco_callback *out);

/* The fit loop. */
typedef struct pasco_fit_options {
	int32_t epochs; /* train epochs [initial_epoch, epochs); 0 means 1 */
	/* Required (PASCO_EINVAL when 0), as with ParameterServerStrategy:
	 * the data are infinite per-worker streams, so an epoch is a count
	 * of steps. */
	int64_t steps_per_epoch;
	int32_t initial_epoch;
	/* The step function and its arguments (tensors, variables,
	 * per-worker iterators), as pasco_schedule takes them. It returns
	 * its loss as a scalar, or a list [loss, metric_0, ...] with one
	 * scalar per metric name (or a 1-D tensor of them). */
	const char        *step_function;
	const pasco_arg   *args;
	size_t             nargs;
	const char *const *metric_names;
	size_t             nmetrics;
	/* Steps per closure (pasco_schedule_options.repeat, Keras's
	 * steps_per_execution). Each closure returns the sums of its steps'
	 * loss and metrics and its count of steps (sum_results), so the
	 * epoch's figures are means over every step whatever K is (the last
	 * closure of an epoch may be short). 0 means 1. */
	uint32_t steps_per_execution;
	/* Validation after each epoch, exactly once through
	 * pasco_schedule_shards: validation_function runs once per shard
	 * with validation_args then (shard, num_shards) and returns that
	 * shard's sums as a list of scalars or a 1-D tensor:
	 * [sum_loss, sum_metric_0, ..., count]. val_loss is the total loss
	 * over the total count, val_<metric> likewise. NULL: no validation.
	 */
	const char      *validation_function;
	const pasco_arg *validation_args;
	size_t           nvalidation_args;
	int32_t          validation_shards; /* 0 means the worker count */
	/* Callbacks, driven by the loop; not taken over. NULL: none. */
	pasco_callbacks *callbacks;
	/* Hooks for a loop built on this one (pasco_model_fit, model.h):
	 * epoch_start runs after the callbacks' epoch_begin, before the
	 * epoch's steps are scheduled; epoch_logs after the epoch's
	 * training logs are made (every step finished), before validation
	 * and epoch_end, and may add or replace entries. A non-OK return
	 * ends the loop with that error (message: pasco_fit_fail). NULL:
	 * none.
	 * ncounts: the step returns that many more numbers after its loss
	 * and metrics (a 1-D tensor or list of 1 + nmetrics + ncounts),
	 * counts that are summed, not averaged: epoch_logs gets their
	 * totals over the epoch's closures (counts; NULL when ncounts is
	 * 0). Each closure's result counts once, however often it ran
	 * (a closure cut off by a lost worker or ps is run again and only
	 * the run that returned is kept), so a count that a step makes of
	 * its batch counts each batch that finished once. At most 65536. */
	size_t ncounts;
	int (*epoch_start)(void *user, int32_t epoch);
	int (*epoch_logs)(
	    void *user, int32_t epoch, const double *counts, pasco_logs *logs);
	void *hooks_user;
	/* The learning rate the steps use at the start (the context's
	 * learning_rate; 0: none), and the hook that makes the steps
	 * scheduled next use lr once a callback changed it
	 * (pasco_fit_set_learning_rate): called before an epoch's steps are
	 * scheduled when the rate differs from theirs, and once more after
	 * the last epoch (before the end callbacks), so the rate the
	 * callbacks left is kept, as Keras's optimizer keeps it. Both or
	 * neither. */
	double learning_rate;
	int (*set_learning_rate)(void *user, double lr);
	/* The running logs of progress calls (ctx->batch_logs): the metrics
	 * from the totals of the counts of the epoch's closures finished so
	 * far (ncounts of them), added after "loss". NULL: the metrics are
	 * the means of the steps' metric values. */
	int (*batch_logs)(void *user, const double *counts, pasco_logs *logs);
	/* Per-closure data (pasco_model_fit's exact epochs, model.h): when
	 * closure_tensor is not NULL, argument closure_arg of each closure is
	 * the tensor it makes (*out, a new reference the loop releases once
	 * the closure holds it) for closure index `closure` (from 0) of
	 * `epoch`, in place of args[closure_arg]; a closure run again after a
	 * lost worker gets the same tensor. An epoch is then
	 * ceil(steps_per_epoch / steps_per_execution) closures and *steps
	 * comes preset to steps_per_execution for each, the last too (Keras
	 * runs whole executions: steps_per_epoch 5 and steps_per_execution 3
	 * run 6 steps), which the hook may lower (to 1 or more: the last
	 * batches of its data). PASCO_EOUTOFRANGE: its data ran out before this closure,
	 * so the epoch ends with the closures scheduled (Keras's "input ran
	 * out of data"; the epoch's logs are over the steps run; not before
	 * the first closure: PASCO_EINVAL). Another non-OK return ends the
	 * loop with that error. closure_arg must be below nargs
	 * (PASCO_EINVAL). */
	size_t closure_arg;
	int (*closure_tensor)(void *user, int32_t epoch, int64_t closure,
	    uint32_t *steps, pasco_tensor **out);
} pasco_fit_options;

/* Keras's History: the logs of each epoch this call ran. */
typedef struct pasco_history {
	int32_t     initial_epoch; /* where training started */
	int32_t     count;         /* epochs run */
	pasco_logs *epochs;        /* epochs[i]: epoch initial_epoch + i */
	bool        stopped_early; /* a callback stopped training */
} pasco_history;

/* Trains: for each epoch, callbacks' epoch_begin, steps_per_epoch steps
 * scheduled on the workers (closures of steps_per_execution steps), their
 * results fetched as they finish (progress callbacks), the epoch's logs
 * (loss and metrics: means over every step; steps_per_second), then
 * validation, then epoch_end. history (may be NULL) gets the epochs'
 * logs: pasco_history_fini it, also after a failure. Errors: PASCO_EINVAL
 * for bad options, a step's or validation's error (the coordinator stays
 * usable), a callback's. Message: pasco_fit_error. Blocks. Not
 * thread-safe: one fit per coordinator at a time. */
int pasco_fit(pasco_coordinator *c, const pasco_fit_options *opts,
    pasco_history *history);

/* Frees what pasco_fit put in h. NULL is a no-op. */
void pasco_history_fini(pasco_history *h);

#endif
