/*
 * SGD (Keras's optimizers.SGD): gradient descent with momentum and
 * Nesterov's momentum.
 *   v = momentum * v - lr * g;  w += nesterov ? momentum * v - lr * g : v
 *   (momentum 0: w -= lr * g, and no slot)
 * Constant descriptor and pure kernels: any thread (the ps calls them under
 * the shard's lock).
 */
#include "opt_kernel.h"

static void
sgd_update(
    const pasco_optimizer *o, const double *k, double *w, double g, double *s)
{
	(void) k;
	if (o->momentum == 0) {
		*w -= o->learning_rate * g;
		return;
	}
	s[0] = o->momentum * s[0] - o->learning_rate * g;
	*w += o->nesterov ? o->momentum * s[0] - o->learning_rate * g : s[0];
}

/* As Keras: no momentum slot without momentum. */
static bool
sgd_slot_used(const pasco_optimizer *o, int k)
{
	(void) k;
	return o->momentum != 0;
}

PASCI_F32_KERNEL void
sgd_f32(const pasco_optimizer *o, const double *k, pasci_opt_f32 a)
{
	(void) k;
	float lr = (float) o->learning_rate, m = (float) o->momentum;
	if (a.s0 == NULL) {
		for (int64_t i = 0; i < a.n; i++) {
			a.w[i] -= lr * a.g[i];
		}
	} else if (o->nesterov) {
		for (int64_t i = 0; i < a.n; i++) {
			a.s0[i] = m * a.s0[i] - lr * a.g[i];
			a.w[i] += m * a.s0[i] - lr * a.g[i];
		}
	} else {
		for (int64_t i = 0; i < a.n; i++) {
			a.s0[i] = m * a.s0[i] - lr * a.g[i];
			a.w[i] += a.s0[i];
		}
	}
}

PASCI_OPT_F32_ROWS(sgd_rows, sgd_f32)

static pasco_optimizer
sgd_keras_default(void)
{
	return pasco_sgd(0.01, 0, false);
}

static pasco_optimizer
sgd_every_slot(void)
{
	return pasco_sgd(0.05, 0.9, true);
}

const pasci_opt_desc pasci_opt_sgd_desc = {
    .kind  = PASCO_OPT_SGD,
    .name  = "sgd",
    .title = "SGD",
    .keras = "SGD",
    SLOTS("momentum"),
    FIELDS(LR, F("momentum", momentum), F("nesterov", nesterov)),
    .defaults      = {.kind = PASCO_OPT_SGD, .learning_rate = 0.01},
    .slot_init     = pasci_opt_zero_init,
    .slot_used     = sgd_slot_used,
    .update        = sgd_update,
    .f32_rows      = sgd_rows,
    .keras_default = sgd_keras_default,
    .every_slot    = sgd_every_slot,
};

pasco_optimizer
pasco_sgd(double learning_rate, double momentum, bool nesterov)
{
	pasco_optimizer o = pasci_opt_sgd_desc.defaults;
	o.learning_rate   = learning_rate;
	o.momentum        = momentum;
	o.nesterov        = nesterov;
	return o;
}
