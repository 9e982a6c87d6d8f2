/*
 * AdamW (Keras 3's optimizers.AdamW): Adam with decoupled weight decay,
 * applied before the update with this apply's learning rate, as Keras's
 * _apply_weight_decay does; slots: m, v, v_hat as Adam's.
 *   w -= w * weight_decay * lr;  then Adam's update (base/optimizers/adam.c)
 * Keras decays the whole variable on every apply, also when the gradient
 * is sparse (IndexedSlices): a sparse apply on the ps decays its whole
 * shard (adamw_decay_f32, O(shard) per apply) and then moves its rows and
 * their moments as Adam; a dynamic table, lazily (ps/dyn_decay.c).
 * Constant descriptor and pure kernels: any thread.
 */
#include "opt_kernel.h"

static void
adamw_decay(const pasco_optimizer *o, double *w)
{
	*w = *w - *w * o->weight_decay * o->learning_rate;
}

static void
adamw_update(
    const pasco_optimizer *o, const double *k, double *w, double g, double *s)
{
	adamw_decay(o, w);
	pasci_opt_adam_update(o, k, w, g, s);
}

/* The decay alone over n elements, as adamw_f32 computes it (the same
 * expression in f32), so a row decayed here and one decayed there are the
 * same bits. */
PASCI_F32_KERNEL void
adamw_decay_f32(const pasco_optimizer *o, float *restrict w, int64_t n)
{
	float wd = (float) o->weight_decay, lr = (float) o->learning_rate;
	for (int64_t i = 0; i < n; i++) {
		w[i] = w[i] - w[i] * wd * lr;
	}
}

static const char *
adamw_check(const pasco_optimizer *o)
{
	const char *bad = pasci_opt_adam_check(o);
	if (bad != NULL) {
		return bad;
	}
	return !(o->weight_decay >= 0) || !isfinite(o->weight_decay)
	           ? "weight_decay must be a finite number >= 0"
	           : NULL;
}

/* The f32 kernel stays Adam's loop with the decay fused in: one pass
 * over the rows (the ps's apply is a hot path). */
PASCI_F32_KERNEL void
adamw_f32(const pasco_optimizer *o, const double *k, pasci_opt_f32 a)
{
	float b1 = (float) (1 - o->beta_1), b2 = (float) (1 - o->beta_2);
	float eps = (float) o->epsilon, alpha = (float) k[0];
	float wd = (float) o->weight_decay, lr = (float) o->learning_rate;
	for (int64_t i = 0; i < a.n; i++) {
		a.w[i] = a.w[i] - a.w[i] * wd * lr;
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

PASCI_OPT_F32_ROWS(adamw_rows, adamw_f32)

static pasco_optimizer
adamw_keras_default(void)
{
	return pasco_adamw(0.001, 0.004, false);
}

static pasco_optimizer
adamw_every_slot(void)
{
	return pasco_adamw(0.05, 0.1, true);
}

const pasci_opt_desc pasci_opt_adamw_desc = {
    .kind  = PASCO_OPT_ADAMW,
    .name  = "adamw",
    .title = "AdamW",
    .keras = "AdamW",
    SLOTS("m", "v", "vhat"),
    FIELDS(LR, F("weight_decay", weight_decay), F("beta_1", beta_1),
        F("beta_2", beta_2), F("amsgrad", amsgrad), EPS),
    .defaults      = {.kind = PASCO_OPT_ADAMW,
             .learning_rate = 0.001,
             .weight_decay  = 0.004,
             .beta_1        = 0.9,
             .beta_2        = 0.999,
             .epsilon       = 1e-7},
    .check         = adamw_check,
    .slot_init     = pasci_opt_zero_init,
    .slot_used     = pasci_opt_adam_slot_used,
    .scalars       = pasci_opt_adam_scalars,
    .update        = adamw_update,
    .f32_rows      = adamw_rows,
    .decay         = adamw_decay,
    .decay_f32     = adamw_decay_f32,
    .keras_default = adamw_keras_default,
    .every_slot    = adamw_every_slot,
};

pasco_optimizer
pasco_adamw(double learning_rate, double weight_decay, bool amsgrad)
{
	pasco_optimizer o = pasci_opt_adamw_desc.defaults;
	o.learning_rate   = learning_rate;
	o.weight_decay    = weight_decay;
	o.amsgrad         = amsgrad;
	return o;
}
