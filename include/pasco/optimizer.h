/*
 * Optimizers, applied on the ps with the update formulas of the Keras
 * optimizers of the same names. A gradient is sent with the optimizer's
 * configuration; the ps keeps the slots (momentum, accumulators, ...) next
 * to the variable's shard, created on the first apply, and applies the
 * update under the shard's lock. Sparse applies touch only the given rows,
 * of the variable and of its slots.
 *
 *   SGD       v = momentum * v - lr * g;  w += nesterov ? momentum * v - lr *
 * g : v (momentum 0: w -= lr * g) Adagrad   a += g^2;  w -= lr * g / (sqrt(a)
 * + epsilon) RMSprop   s = rho * s + (1 - rho) * g^2;  centered: m = rho * m +
 * (1 - rho) * g, d = s - m^2 + epsilon, else d = s + epsilon;  inc = lr * g /
 * sqrt(d); momentum > 0: p = momentum * p + inc, w -= p;  else w -= inc Adam
 * t += 1;  alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t); m += (g - m)(1 -
 * beta_1);  v += (g^2 - v)(1 - beta_2); amsgrad: vh = max(vh, v), use vh;  w
 * -= alpha * m / (sqrt(v) + epsilon) FTRL      l2' = l2 + beta / (2 lr);  gs =
 * g + 2 * l2_shrinkage * w;  n' = n + g^2; z += gs - (n'^-p - n^-p) / lr * w
 * (p = learning_rate_power); q = n'^-p / lr + 2 l2';  w = (clip(z, -l1, l1) -
 * z) / q;  n = n'
 *
 * Adam's t counts the applies to each shard (Keras counts the optimizer's
 * iterations: the same when every step updates every variable).
 */
#ifndef PASCO_OPTIMIZER_H
#define PASCO_OPTIMIZER_H

#include <stdbool.h>

#include "error.h"
#include "tensor.h"
#include "variable.h"

typedef enum pasco_optimizer_kind {
	PASCO_OPT_SGD     = 1,
	PASCO_OPT_ADAGRAD = 2,
	PASCO_OPT_RMSPROP = 3,
	PASCO_OPT_ADAM    = 4,
	PASCO_OPT_FTRL    = 5,
} pasco_optimizer_kind;

typedef struct pasco_optimizer {
	pasco_optimizer_kind kind;
	double               learning_rate;
	double               momentum;       /* SGD, RMSprop */
	bool                 nesterov;       /* SGD */
	double               rho;            /* RMSprop */
	bool                 centered;       /* RMSprop */
	double               beta_1, beta_2; /* Adam */
	bool                 amsgrad;        /* Adam */
	double               epsilon;        /* Adagrad, RMSprop, Adam */
	double               initial_accumulator_value;  /* Adagrad, FTRL */
	double               learning_rate_power;        /* FTRL */
	double               l1, l2, l2_shrinkage, beta; /* FTRL */
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

/* Applies grad (v's dtype and shape; float variables only) with opt.
 * A variable keeps the slots of the first optimizer applied to it; another
 * kind later is PASCO_EINVAL. Blocks. */
int pasco_variable_apply_gradient(
    pasco_variable *v, const pasco_optimizer *opt, const pasco_tensor *grad);

/* Keras's optimizer.apply_gradients(zip(grads, vars)): applies grads[k]
 * to vars[k] with opt, every shard request in flight together. Every
 * gradient is checked first: if one does not fit its variable, nothing is
 * applied. */
int pasco_variable_apply_gradients(size_t n, pasco_variable *const *vars,
    const pasco_optimizer *opt, pasco_tensor *const *grads);

/* Applies the gradient rows grads (shape ids.shape + v.shape[1:]) to rows
 * ids, duplicates summed; other rows and their slots are untouched. */
int pasco_variable_apply_gradient_sparse(pasco_variable *v,
    const pasco_optimizer *opt, const pasco_tensor *ids,
    const pasco_tensor *grads);

#endif
