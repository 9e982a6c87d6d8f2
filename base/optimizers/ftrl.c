/*
 * FTRL-Proximal (Keras's optimizers.Ftrl); slots: accumulator n, linear z.
 *   l2' = l2 + beta / (2 lr);  gs = g + 2 * l2_shrinkage * w;
 *   n' = n + g^2;  z += gs - (n'^-p - n^-p) / lr * w
 *   (p = learning_rate_power);  q = n'^-p / lr + 2 l2';
 *   w = (clip(z, -l1, l1) - z) / q;  n = n'
 * Its update is pow-bound: f32 variables too are updated in double, element
 * by element (no f32 kernel). Constant descriptor and pure kernels: any
 * thread.
 */
#include "opt_kernel.h"

static void
ftrl_update(
    const pasco_optimizer *o, const double *k, double *w, double g, double *s)
{
	double p = o->learning_rate_power, lr = o->learning_rate;
	double l2 = o->l2 + o->beta / (2 * lr);
	double gs = g + 2 * o->l2_shrinkage * *w;
	double n2 = s[0] + g * g;
	double q, zc;
	(void) k;
	s[1] += gs - (pow(n2, -p) - pow(s[0], -p)) / lr * *w;
	q    = pow(n2, -p) / lr + 2 * l2;
	zc   = fmin(fmax(s[1], -o->l1), o->l1);
	*w   = (zc - s[1]) / q;
	s[0] = n2;
}

static const char *
ftrl_check(const pasco_optimizer *o)
{
	return o->learning_rate <= 0 || o->learning_rate_power > 0 ||
	               o->initial_accumulator_value < 0 || o->l1 < 0 ||
	               o->l2 < 0 || o->l2_shrinkage < 0 || o->beta < 0
	           ? "FTRL needs learning_rate > 0, learning_rate_power <= 0 "
	             "and non-negative initial_accumulator_value, l1, l2, "
	             "l2_shrinkage and beta"
	           : NULL;
}

static pasco_optimizer
ftrl_keras_default(void)
{
	return pasco_ftrl(0.001, 0, 0);
}

static pasco_optimizer
ftrl_every_slot(void)
{
	return pasco_ftrl(0.1, 0.001, 0.01);
}

const pasci_opt_desc pasci_opt_ftrl_desc = {
    .kind  = PASCO_OPT_FTRL,
    .name  = "ftrl",
    .title = "FTRL",
    .keras = "Ftrl",
    SLOTS("accumulator", "linear"),
    FIELDS(LR, ACC, F("learning_rate_power", learning_rate_power),
        F("l1_regularization_strength", l1),
        F("l2_regularization_strength", l2),
        F("l2_shrinkage_regularization_strength", l2_shrinkage),
        F("beta", beta)),
    .defaults      = {.kind             = PASCO_OPT_FTRL,
             .learning_rate             = 0.001,
             .learning_rate_power       = -0.5,
             .initial_accumulator_value = 0.1},
    .check         = ftrl_check,
    .slot_init     = pasci_opt_accumulator_init,
    .update        = ftrl_update,
    .keras_default = ftrl_keras_default,
    .every_slot    = ftrl_every_slot,
};

pasco_optimizer
pasco_ftrl(double learning_rate, double l1, double l2)
{
	pasco_optimizer o = pasci_opt_ftrl_desc.defaults;
	o.learning_rate   = learning_rate;
	o.l1              = l1;
	o.l2              = l2;
	return o;
}
