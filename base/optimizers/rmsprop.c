/*
 * RMSprop (Keras's optimizers.RMSprop); slots: velocity, momentum,
 * average gradient.
 *   s = rho * s + (1 - rho) * g^2;
 *   centered: m = rho * m + (1 - rho) * g, d = s - m^2 + epsilon,
 *   else d = s + epsilon;  inc = lr * g / sqrt(d);
 *   momentum > 0: p = momentum * p + inc, w -= p;  else w -= inc
 * Constant descriptor and pure kernels: any thread.
 */
#include "opt_kernel.h"

static void
rmsprop_update(
    const pasco_optimizer *o, const double *k, double *w, double g, double *s)
{
	double d, inc;
	(void) k;
	s[0] = o->rho * s[0] + (1 - o->rho) * g * g;
	if (o->centered) {
		s[2] = o->rho * s[2] + (1 - o->rho) * g;
		d    = s[0] - s[2] * s[2] + o->epsilon;
	} else {
		d = s[0] + o->epsilon;
	}
	inc = o->learning_rate * g / sqrt(d);
	if (o->momentum > 0) {
		s[1] = o->momentum * s[1] + inc;
		*w -= s[1];
	} else {
		*w -= inc;
	}
}

/* As Keras: no momentum slot without momentum, no average gradient
 * unless centered. */
static bool
rmsprop_slot_used(const pasco_optimizer *o, int k)
{
	return k == 0 || (k == 1 && o->momentum != 0) ||
	       (k == 2 && o->centered);
}

PASCI_F32_KERNEL void
rmsprop_f32(const pasco_optimizer *o, const double *k, pasci_opt_f32 a)
{
	(void) k;
	float lr = (float) o->learning_rate, rho = (float) o->rho;
	float eps = (float) o->epsilon, m = (float) o->momentum;
	for (int64_t i = 0; i < a.n; i++) {
		float d, inc;
		a.s0[i] = rho * a.s0[i] + (1 - rho) * a.g[i] * a.g[i];
		if (a.s2 != NULL) {
			a.s2[i] = rho * a.s2[i] + (1 - rho) * a.g[i];
			d       = a.s0[i] - a.s2[i] * a.s2[i] + eps;
		} else {
			d = a.s0[i] + eps;
		}
		inc = lr * a.g[i] / sqrtf(d);
		if (a.s1 != NULL) {
			a.s1[i] = m * a.s1[i] + inc;
			inc     = a.s1[i];
		}
		a.w[i] -= inc;
	}
}

PASCI_OPT_F32_ROWS(rmsprop_rows, rmsprop_f32)

static pasco_optimizer
rmsprop_keras_default(void)
{
	return pasco_rmsprop(0.001, 0.9, 0, false);
}

static pasco_optimizer
rmsprop_every_slot(void)
{
	return pasco_rmsprop(0.01, 0.9, 0.5, true);
}

const pasci_opt_desc pasci_opt_rmsprop_desc = {
    .kind  = PASCO_OPT_RMSPROP,
    .name  = "rmsprop",
    .title = "RMSprop",
    .keras = "RMSprop",
    SLOTS("rms", "momentum", "mg"),
    FIELDS(LR, F("momentum", momentum), F("rho", rho), F("centered", centered),
        EPS),
    .defaults      = {.kind = PASCO_OPT_RMSPROP,
             .learning_rate = 0.001,
             .rho           = 0.9,
             .epsilon       = 1e-7},
    .slot_init     = pasci_opt_zero_init,
    .slot_used     = rmsprop_slot_used,
    .update        = rmsprop_update,
    .f32_rows      = rmsprop_rows,
    .keras_default = rmsprop_keras_default,
    .every_slot    = rmsprop_every_slot,
};

pasco_optimizer
pasco_rmsprop(double learning_rate, double rho, double momentum, bool centered)
{
	pasco_optimizer o = pasci_opt_rmsprop_desc.defaults;
	o.learning_rate   = learning_rate;
	o.rho             = rho;
	o.momentum        = momentum;
	o.centered        = centered;
	return o;
}
