/*
 * Optimizers, applied on the ps with the update formulas of the Keras
 * optimizers of the same names. A gradient is sent with the optimizer's
 * configuration; the ps keeps the slots (momentum, accumulators, ...) next
 * to the variable's shard, created on the first apply, and applies the
 * update under the shard's lock. Sparse applies touch only the given rows,
 * of the variable and of its slots, except AdamW's weight decay (below).
 *
 *   SGD      v = momentum * v - lr * g;
 *            w += nesterov ? momentum * v - lr * g : v
 *            (momentum 0: w -= lr * g)
 *   Adagrad  a += g^2;  w -= lr * g / (sqrt(a) + epsilon)
 *   RMSprop  s = rho * s + (1 - rho) * g^2;
 *            centered: m = rho * m + (1 - rho) * g, d = s - m^2 + epsilon,
 *            else d = s + epsilon;
 *            inc = lr * g / sqrt(d);
 *            momentum > 0: p = momentum * p + inc, w -= p;  else w -= inc
 *   Adam     t += 1;  alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t);
 *            m += (g - m)(1 - beta_1);  v += (g^2 - v)(1 - beta_2);
 *            amsgrad: vh = max(vh, v), use vh;
 *            w -= alpha * m / (sqrt(v) + epsilon)
 *   AdamW    decoupled weight decay, then Adam: w -= w * weight_decay * lr
 *            on the WHOLE variable at every apply, as Keras's
 *            _apply_weight_decay, sparse applies too (their moments move
 *            only on their rows, as Adam's): every shard takes each
 *            sparse apply, rows or none, and decays all its rows, in f32
 *            with the same rounding as a dense apply, so a sparse apply
 *            leaves the same bits as the dense one of the same rows.
 *            Cost: O(shard) per sparse apply (measured 0.7-3.5 ns per
 *            f32 element on a loaded 2-core VM: 23-59 ms for a shard of
 *            256K x 64, against 0.25-1.5 ms for Adam's 1,024 rows). A
 *            dynamic table decays lazily (a product of the factors
 *            1 - weight_decay * lr_t per table and a stamp per row,
 *            applied when a row is read, updated or exported): O(rows
 *            updated) per apply, and every value seen equals the eager
 *            one to f32 rounding (docs/optimizers.md)
 *   Nadam    t as Adam's;  u(i) = beta_1 (1 - 0.5 * 0.96^i);
 *            U(t) = u(1) ... u(t);  m, v as Adam's;
 *            m^ = u(t+1) m / (1 - U(t) u(t+1)) + (1 - u(t)) g / (1 - U(t));
 *            w -= lr * m^ / (sqrt(v / (1 - beta_2^t)) + epsilon)
 *   FTRL     l2' = l2 + beta / (2 lr);  gs = g + 2 * l2_shrinkage * w;
 *            n' = n + g^2;  z += gs - (n'^-p - n^-p) / lr * w
 *            (p = learning_rate_power);  q = n'^-p / lr + 2 l2';
 *            w = (clip(z, -l1, l1) - z) / q;  n = n'
 *
 * Arithmetic: f32 variables are updated in f32, as Keras updates float32
 * variables (FTRL in double, rounded to f32); f64 variables in double.
 *
 * Adam's t: with opt.iterations set (a global step, below) t is the global
 * step of the apply less opt.iterations_base, the optimizer's own count
 * as Keras's optimizer.iterations, so results do not depend on how a
 * variable is sharded; without it each shard counts its own applies (a
 * shard that gets no rows of a sparse batch does not count it).
 *
 * The global step and consistency modes. opt.iterations names an int64
 * scalar counter variable, normally the strategy's "global_step"
 * (pasco_strategy_global_step, coordinator.h; a step function gets it as a
 * pasco_arg_variable argument). An apply (pasco_variable_apply_gradient*,
 * dense or sparse) then goes through the counter's ps first, under the
 * consistency mode the counter's handle carries (the strategy's option):
 *
 *   ASP  the counter is incremented (fetch-add) and every shard applies
 *        with t = its new value. One counter step per apply call.
 *   SSP  (staleness s) the gradient's version is the counter's value when
 *        the step read it (below). A gradient more than s steps old
 *        (counter - version > s) is dropped: nothing is applied, the
 *        counter does not move, the call returns PASCO_OK and
 *        pasco_variable_dropped(iterations) counts it. Otherwise as ASP.
 *   BSP  (replicas N; TF1's SyncReplicasOptimizer) round r is the counter's
 *        value; a gradient read at version r joins round r if fewer than N
 *        have, else (or when its version is not r) it is dropped as stale,
 *        as above. Each shard sums the N gradients of the round and applies
 *        their average once, with t = r + 1, when the N-th arrives; the
 *        counter becomes r + 1 only after all N have been pushed to every
 *        shard (every variable updated), so a step that reads the new
 *        version reads the round's update. No call blocks waiting for
 *        others: a round with fewer than N gradients waits, unapplied,
 *        until more come or pasco_strategy_sync_flush applies it (after
 *        pasco_join). Under BSP every step must apply to the same
 *        variables; sparse applies send every shard its (maybe empty) rows
 *        so each shard counts the round.
 *
 * The version: the counter handle remembers the value it last read
 * (pasco_variable_read, pasco_variable_read_all, pasco_variable_fetch_add
 * through that handle). A step reads the global step before or with its
 * parameters (pasco_variable_read_all of the parameters and the global
 * step is one round trip). Under SSP and BSP an apply through a counter
 * handle that has read nothing is PASCO_EPRECONDITION.
 */
#ifndef PASCO_OPTIMIZER_H
#define PASCO_OPTIMIZER_H

#include <stdbool.h>

#include "error.h"
#include "optimizer_kinds.h"
#include "tensor.h"
#include "variable.h"

/* PASCO_OPT_SGD = 1, PASCO_OPT_ADAGRAD, PASCO_OPT_RMSPROP, PASCO_OPT_ADAM,
 * PASCO_OPT_FTRL, PASCO_OPT_ADAMW, PASCO_OPT_NADAM: one per line of
 * optimizer_kinds.h, in its order (0 is no kind). The kinds are numbered by a
 * helper enum so that the public one holds the kinds only: a switch over it
 * that names every kind needs no default. */
#define PASCO_OPT_ORDINAL_(name, file) PASCO_OPT_ORDINAL_##name##_,
enum {
	PASCO_OPT_ORDINAL_NONE_ = 0,
	PASCO_OPTIMIZER_KIND_LIST(PASCO_OPT_ORDINAL_)
	/* Not a kind: one past the last. */
	PASCO_OPT_KIND_COUNT
};
#undef PASCO_OPT_ORDINAL_
#define PASCO_OPT_ENUM_(name, file)                                           \
	PASCO_OPT_##name = PASCO_OPT_ORDINAL_##name##_,
typedef enum pasco_optimizer_kind {
	PASCO_OPTIMIZER_KIND_LIST(PASCO_OPT_ENUM_)
} pasco_optimizer_kind;
#undef PASCO_OPT_ENUM_

/* How applies through a global step combine (see above). */
typedef enum pasco_consistency {
	PASCO_ASP = 0, /* asynchronous: every gradient applied (default) */
	PASCO_BSP = 1, /* bulk synchronous: N gradients averaged per round */
	PASCO_SSP = 2, /* stale synchronous: gradients > s steps old dropped */
} pasco_consistency;

/* Keras 3's learning-rate schedules (keras.optimizers.schedules), set as
 * opt.schedule: the ps evaluates the schedule at each apply's step
 * (Keras's optimizer.iterations: the global step before the apply, 0 for
 * the first; without opt.iterations, the shard's count of earlier
 * applies) and uses it as the learning rate, in place of
 * opt.learning_rate. With p = step / decay_steps (floor(p) when
 * staircase):
 *
 *   ExponentialDecay        lr0 * decay_rate^p
 *   InverseTimeDecay        lr0 / (1 + decay_rate * p)
 *   PolynomialDecay         (lr0 - end) * (1 - s / d)^power + end, with
 *                           s = min(step, decay_steps), d = decay_steps;
 *                           cycle: s = step, d = decay_steps *
 *                           ceil(step / decay_steps) (1 at step 0)
 *   CosineDecay             no warmup (warmup_target NAN, Keras's None):
 *                           lr0 * ((1 - alpha) * c + alpha),
 *                           c = 0.5 (1 + cos(pi * min(step, decay_steps) /
 *                           decay_steps)); with warmup: before
 *                           warmup_steps, lr0 + (warmup_target - lr0) *
 *                           step / warmup_steps, then the decay from
 *                           warmup_target over step - warmup_steps
 *                           (step at most decay_steps + warmup_steps)
 *   PiecewiseConstantDecay  values[0] while step <= boundaries[0],
 *                           values[i] while step <= boundaries[i], then
 *                           values[n] (Keras's sum of ranges)
 */
typedef enum pasco_lr_schedule_kind {
	PASCO_LR_CONSTANT                 = 0, /* opt.learning_rate */
	PASCO_LR_EXPONENTIAL_DECAY        = 1,
	PASCO_LR_PIECEWISE_CONSTANT_DECAY = 2,
	PASCO_LR_POLYNOMIAL_DECAY         = 3,
	PASCO_LR_COSINE_DECAY             = 4,
	PASCO_LR_INVERSE_TIME_DECAY       = 5,
} pasco_lr_schedule_kind;

/* The most boundaries of a PiecewiseConstantDecay. */
#define PASCO_LR_MAX_BOUNDARIES 32

typedef struct pasco_lr_schedule {
	pasco_lr_schedule_kind kind;
	double                 initial_learning_rate;
	double                 decay_steps;
	double                 decay_rate; /* Exponential, InverseTime */
	bool                   staircase;  /* Exponential, InverseTime */
	double                 end_learning_rate; /* Polynomial */
	double                 power;             /* Polynomial */
	bool                   cycle;             /* Polynomial */
	double                 alpha;             /* Cosine */
	double                 warmup_target;     /* Cosine; NAN: none */
	double                 warmup_steps;      /* Cosine */
	int32_t                nboundaries;       /* Piecewise */
	double                 boundaries[PASCO_LR_MAX_BOUNDARIES];
	double                 values[PASCO_LR_MAX_BOUNDARIES + 1];
} pasco_lr_schedule;

/* Keras's constructors, with its defaults in the comments. Thread-safe. */
pasco_lr_schedule pasco_exponential_decay(double initial_learning_rate,
    double decay_steps, double decay_rate, bool staircase /* false */);
pasco_lr_schedule pasco_inverse_time_decay(double initial_learning_rate,
    double decay_steps, double decay_rate, bool staircase /* false */);
pasco_lr_schedule pasco_polynomial_decay(double initial_learning_rate,
    double decay_steps, double end_learning_rate /* 0.0001 */,
    double power /* 1.0 */, bool cycle /* false */);
pasco_lr_schedule pasco_cosine_decay(double initial_learning_rate,
    double decay_steps, double alpha /* 0.0 */, double warmup_target /* NAN */,
    double warmup_steps /* 0 */);
/* n boundaries (at most PASCO_LR_MAX_BOUNDARIES) and n + 1 values, copied;
 * a schedule of more has nboundaries -1, which applies refuse. */
pasco_lr_schedule pasco_piecewise_constant_decay(
    int32_t n, const double *boundaries, const double *values);

/* The learning rate of s at step (0, 1, ...); for PASCO_LR_CONSTANT,
 * constant. Thread-safe. */
double pasco_lr_schedule_at(
    const pasco_lr_schedule *s, int64_t step, double constant);

/* What is wrong with s (Keras's ValueErrors: decay_steps <= 0, boundaries
 * and values of other lengths, ...), or NULL. Thread-safe. */
const char *pasco_lr_schedule_error(const pasco_lr_schedule *s);

typedef struct pasco_optimizer {
	pasco_optimizer_kind kind;
	double               learning_rate;
	/* A learning-rate schedule (above); kind PASCO_LR_CONSTANT: none,
	 * learning_rate is used. */
	pasco_lr_schedule schedule;
	double            momentum;       /* SGD, RMSprop */
	bool              nesterov;       /* SGD */
	double            rho;            /* RMSprop */
	bool              centered;       /* RMSprop */
	double            beta_1, beta_2; /* Adam */
	bool              amsgrad;        /* Adam */
	double            epsilon;        /* Adagrad, RMSprop, Adam */
	double            initial_accumulator_value;  /* Adagrad, FTRL */
	double            learning_rate_power;        /* FTRL */
	double            l1, l2, l2_shrinkage, beta; /* FTRL */
	double            weight_decay;               /* AdamW */
	/* Keras's gradient clipping, every optimizer; 0: none; at most one
	 * of the three set. Applied where the gradients are sent
	 * (pasco_variable_apply_gradients*, on the worker), to the whole
	 * gradient of each variable before it is split into shards:
	 * clipnorm scales each gradient to an L2 norm of at most clipnorm,
	 * clipvalue clips each element to [-clipvalue, clipvalue],
	 * global_clipnorm scales all the gradients of one apply call
	 * (a model's train step: every variable's) by
	 * min(1, global_clipnorm / their joint L2 norm). A sparse gradient's
	 * rows are summed by id first (its dense gradient's norm). */
	double clipnorm, clipvalue, global_clipnorm;
	/* The global step (see above); NULL: each shard counts its own
	 * applies and every gradient is applied at once. Borrowed. */
	pasco_variable *iterations;
	/* This optimizer's own iteration count (Keras's
	 * optimizer.iterations) is the global step minus iterations_base:
	 * the global step's value when it started, so Adam's and Nadam's t
	 * and a schedule's step start from 1 and 0 for each optimizer, not
	 * where an earlier model's training left the global step. 0 (the
	 * constructors'): the global step itself. pasco_model_fit sets it for
	 * a compiled model (docs/optimizers.md, "Iteration counts"). An apply
	 * at a global step at or below it (the global step set back by
	 * hand) counts from the global step itself. */
	int64_t iterations_base;
} pasco_optimizer;

/* Constructors with Keras's defaults for everything but the named
 * arguments (epsilon 1e-7; Adagrad and FTRL accumulators start at 0.1;
 * RMSprop rho 0.9; Adam betas 0.9 and 0.999; FTRL power -0.5). */
pasco_optimizer pasco_sgd(
    double learning_rate, double momentum, bool nesterov);
pasco_optimizer pasco_adagrad(double learning_rate);
pasco_optimizer pasco_rmsprop(
    double learning_rate, double rho, double momentum, bool centered);
pasco_optimizer pasco_adam(double learning_rate, bool amsgrad);
pasco_optimizer pasco_ftrl(double learning_rate, double l1, double l2);
/* Keras 3's AdamW (weight_decay 0.004) and Nadam (betas 0.9, 0.999). */
pasco_optimizer pasco_adamw(
    double learning_rate, double weight_decay, bool amsgrad);
pasco_optimizer pasco_nadam(double learning_rate);

/* Applies grad (v's dtype and shape; float variables only) with opt
 * (through opt->iterations when set: see above).
 * A variable keeps the slots of the first optimizer applied to it; another
 * kind later is PASCO_EINVAL. Blocks. */
int pasco_variable_apply_gradient(
    pasco_variable *v, const pasco_optimizer *opt, const pasco_tensor *grad);

/* Keras's optimizer.apply_gradients(zip(grads, vars)): applies grads[k]
 * to vars[k] with opt, every shard request in flight together. Every
 * gradient is checked first: if one does not fit its variable, nothing is
 * applied. grads are only read: an array of const or non-const tensors
 * (pasco_tensor_array). */
int pasco_variable_apply_gradients(size_t n, pasco_variable *const *vars,
    const pasco_optimizer *opt, pasco_tensor_array grads);

/* apply_gradients with sparse gradients among the dense ones (Keras's
 * apply_gradients given tf.IndexedSlices): where ids[k] is not NULL,
 * grads[k] holds the gradient rows of the rows ids[k] of vars[k], applied
 * as pasco_variable_apply_gradient_sparse applies them; the others are
 * dense, as pasco_variable_apply_gradients. ids may be NULL (all dense).
 * Every gradient is checked before anything is applied, every request is
 * in flight together, and with opt->iterations the whole call is one
 * global step (one step of a model with an embedding table and dense
 * layers advances it once). */
int pasco_variable_apply_gradients_mixed(size_t n, pasco_variable *const *vars,
    const pasco_optimizer *opt, const pasco_tensor *const *ids,
    pasco_tensor_array grads);

/* Applies the gradient rows grads (shape ids.shape + v.shape[1:]) to rows
 * ids, duplicates summed; other rows and their slots are untouched, but
 * for AdamW's weight decay, which every row takes (every shard gets the
 * apply: see AdamW above). With opt->iterations, one global step as
 * pasco_variable_apply_gradients. */
int pasco_variable_apply_gradient_sparse(pasco_variable *v,
    const pasco_optimizer *opt, const pasco_tensor *ids,
    const pasco_tensor *grads);

/* Gradients dropped as stale (SSP, BSP) by applies made through the
 * counter handle v (opt->iterations == v) since it was made. Thread-safe. */
int64_t pasco_variable_dropped(const pasco_variable *v);

#endif
