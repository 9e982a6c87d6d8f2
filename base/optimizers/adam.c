/*
 * Adam (Keras's optimizers.Adam); slots: m, v, v_hat.
 *   alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t);
 *   m += (g - m)(1 - beta_1);  v += (g^2 - v)(1 - beta_2);
 *   amsgrad: vh = max(vh, v), use vh;  w -= alpha * m / (sqrt(v) + epsilon)
 * Constant descriptor and pure kernels: any thread.
 */
#include "opt_kernel.h"

void
pasci_opt_adam_update(
    const pasco_optimizer *o, const double *k, double *w, double g, double *s)
{
	s[0] += (g - s[0]) * (1 - o->beta_1);
	s[1] += (g * g - s[1]) * (1 - o->beta_2);
	if (o->amsgrad) {
		s[2] = fmax(s[2], s[1]);
	}
	*w -= k[0] * s[0] / (sqrt(o->amsgrad ? s[2] : s[1]) + o->epsilon);
}

const char *
pasci_opt_adam_check(const pasco_optimizer *o)
{
	return o->beta_1 < 0 || o->beta_1 >= 1 || o->beta_2 < 0 ||
	               o->beta_2 >= 1
	           ? "beta_1 and beta_2 must be in [0, 1)"
	           : NULL;
}

/* As Keras: no v_hat without amsgrad. */
bool
pasci_opt_adam_slot_used(const pasco_optimizer *o, int k)
{
	return k < 2 || o->amsgrad;
}

/* Adam's step size at step t. */
void
pasci_opt_adam_scalars(const pasco_optimizer *o, double t, double *k)
{
	k[0] = o->learning_rate * sqrt(1 - pow(o->beta_2, t)) /
	       (1 - pow(o->beta_1, t));
}

PASCI_F32_KERNEL void
adam_f32(const pasco_optimizer *o, const double *k, pasci_opt_f32 a)
{
	float b1 = (float) (1 - o->beta_1), b2 = (float) (1 - o->beta_2);
	float eps = (float) o->epsilon, alpha = (float) k[0];
	for (int64_t i = 0; i < a.n; i++) {
		a.s0[i] += (a.g[i] - a.s0[i]) * b1;
		a.s1[i] += (a.g[i] * a.g[i] - a.s1[i]) * b2;
		float v = a.s1[i];
		if (a.s2 != NULL) {
			a.s2[i] = fmaxf(a.s2[i], a.s1[i]);
			v       = a.s2[i];
		}
		a.w[i] -= alpha * a.s0[i] / (sqrtf(v) + eps);
	}
}

PASCI_OPT_F32_ROWS(adam_rows, adam_f32)

static pasco_optimizer
adam_keras_default(void)
{
	return pasco_adam(0.001, false);
}

static pasco_optimizer
adam_every_slot(void)
{
	return pasco_adam(0.05, true);
}

const pasci_opt_desc pasci_opt_adam_desc = {
    .kind  = PASCO_OPT_ADAM,
    .name  = "adam",
    .title = "Adam",
    .keras = "Adam",
    SLOTS("m", "v", "vhat"),
    FIELDS(LR, F("beta_1", beta_1), F("beta_2", beta_2), F("amsgrad", amsgrad),
        EPS),
    .defaults      = {.kind = PASCO_OPT_ADAM,
             .learning_rate = 0.001,
             .beta_1        = 0.9,
             .beta_2        = 0.999,
             .epsilon       = 1e-7},
    .check         = pasci_opt_adam_check,
    .slot_init     = pasci_opt_zero_init,
    .slot_used     = pasci_opt_adam_slot_used,
    .scalars       = pasci_opt_adam_scalars,
    .update        = pasci_opt_adam_update,
    .f32_rows      = adam_rows,
    .keras_default = adam_keras_default,
    .every_slot    = adam_every_slot,
};

pasco_optimizer
pasco_adam(double learning_rate, bool amsgrad)
{
	pasco_optimizer o = pasci_opt_adam_desc.defaults;
	o.learning_rate   = learning_rate;
	o.amsgrad         = amsgrad;
	return o;
}
