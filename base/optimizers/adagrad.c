/*
 * Adagrad (Keras's optimizers.Adagrad):
 *   a += g^2;  w -= lr * g / (sqrt(a) + epsilon)
 * Constant descriptor and pure kernels: any thread.
 */
#include "opt_kernel.h"

static void
adagrad_update(
    const pasco_optimizer *o, const double *k, double *w, double g, double *s)
{
	(void) k;
	s[0] += g * g;
	*w -= o->learning_rate * g / (sqrt(s[0]) + o->epsilon);
}

static const char *
adagrad_check(const pasco_optimizer *o)
{
	return o->initial_accumulator_value < 0
	           ? "initial_accumulator_value must be >= 0"
	           : NULL;
}

PASCI_F32_KERNEL void
adagrad_f32(const pasco_optimizer *o, const double *k, pasci_opt_f32 a)
{
	(void) k;
	float lr = (float) o->learning_rate, eps = (float) o->epsilon;
	for (int64_t i = 0; i < a.n; i++) {
		a.s0[i] += a.g[i] * a.g[i];
		a.w[i] -= lr * a.g[i] / (sqrtf(a.s0[i]) + eps);
	}
}

PASCI_OPT_F32_ROWS(adagrad_rows, adagrad_f32)

static pasco_optimizer
adagrad_keras_default(void)
{
	return pasco_adagrad(0.001);
}

static pasco_optimizer
adagrad_every_slot(void)
{
	return pasco_adagrad(0.1);
}

const pasci_opt_desc pasci_opt_adagrad_desc = {
    .kind  = PASCO_OPT_ADAGRAD,
    .name  = "adagrad",
    .title = "Adagrad",
    .keras = "Adagrad",
    SLOTS("accumulator"),
    FIELDS(LR, EPS, ACC),
    .defaults      = {.kind             = PASCO_OPT_ADAGRAD,
             .learning_rate             = 0.001,
             .epsilon                   = 1e-7,
             .initial_accumulator_value = 0.1},
    .check         = adagrad_check,
    .slot_init     = pasci_opt_accumulator_init,
    .update        = adagrad_update,
    .f32_rows      = adagrad_rows,
    .keras_default = adagrad_keras_default,
    .every_slot    = adagrad_every_slot,
};

pasco_optimizer
pasco_adagrad(double learning_rate)
{
	pasco_optimizer o = pasci_opt_adagrad_desc.defaults;
	o.learning_rate   = learning_rate;
	return o;
}
