/*
 * Nadam (Keras 3's optimizers.Nadam): Adam with Nesterov momentum and
 * Dozat's momentum schedule; slots: m, v.
 *   u(i) = beta_1 (1 - 0.5 * 0.96^i);  U(t) = u(1) u(2) ... u(t)
 *   (Keras's _u_product after the step's update);
 *   m += (g - m)(1 - beta_1);  v += (g^2 - v)(1 - beta_2);
 *   m^ = u(t+1) m / (1 - U(t) u(t+1)) + (1 - u(t)) g / (1 - U(t));
 *   w -= lr * m^ / (sqrt(v / (1 - beta_2^t)) + epsilon)
 * U(t) depends on t only, so a shard computes it from the apply's step
 * (the global step) instead of keeping Keras's running product.
 * Constant descriptor and pure kernels: any thread.
 */
#include "opt_kernel.h"

/* Past this many factors 0.96^i is below 1e-35: u(i) is beta_1 to double
 * precision, and the rest of U(t) is a power of beta_1. */
#define NADAM_EXACT_FACTORS 2000

static double
nadam_u(const pasco_optimizer *o, double i)
{
	return o->beta_1 * (1 - 0.5 * pow(0.96, i));
}

/* k[]: u(t), u(t+1), U(t), U(t) u(t+1), 1 - beta_2^t. */
static void
nadam_scalars(const pasco_optimizer *o, double t, double *k)
{
	double prod = 1, d = 1;
	double exact = t < NADAM_EXACT_FACTORS ? t : NADAM_EXACT_FACTORS;
	for (int i = 1; i <= (int) exact; i++) {
		d *= 0.96;
		prod *= o->beta_1 * (1 - 0.5 * d);
	}
	prod *= pow(o->beta_1, t - exact);
	k[0] = nadam_u(o, t);
	k[1] = nadam_u(o, t + 1);
	k[2] = prod;
	k[3] = prod * k[1];
	k[4] = 1 - pow(o->beta_2, t);
}

static void
nadam_update(
    const pasco_optimizer *o, const double *k, double *w, double g, double *s)
{
	double m_hat, v_hat;
	s[0] += (g - s[0]) * (1 - o->beta_1);
	s[1] += (g * g - s[1]) * (1 - o->beta_2);
	m_hat = k[1] * s[0] / (1 - k[3]) + (1 - k[0]) * g / (1 - k[2]);
	v_hat = s[1] / k[4];
	*w -= m_hat * o->learning_rate / (sqrt(v_hat) + o->epsilon);
}

static const char *
nadam_check(const pasco_optimizer *o)
{
	return o->beta_1 < 0 || o->beta_1 >= 1 || o->beta_2 < 0 ||
	               o->beta_2 >= 1
	           ? "beta_1 and beta_2 must be in [0, 1)"
	           : NULL;
}

PASCI_F32_KERNEL void
nadam_f32(const pasco_optimizer *o, const double *k, pasci_opt_f32 a)
{
	float b1 = (float) (1 - o->beta_1), b2 = (float) (1 - o->beta_2);
	float eps = (float) o->epsilon, lr = (float) o->learning_rate;
	float u_t = (float) k[0], u_t1 = (float) k[1];
	float p_t = (float) k[2], p_t1 = (float) k[3], b2p = (float) k[4];
	for (int64_t i = 0; i < a.n; i++) {
		a.s0[i] += (a.g[i] - a.s0[i]) * b1;
		a.s1[i] += (a.g[i] * a.g[i] - a.s1[i]) * b2;
		float m_hat = u_t1 * a.s0[i] / (1 - p_t1) +
		              (1 - u_t) * a.g[i] / (1 - p_t);
		float v_hat = a.s1[i] / b2p;
		a.w[i] -= m_hat * lr / (sqrtf(v_hat) + eps);
	}
}

PASCI_OPT_F32_ROWS(nadam_rows, nadam_f32)

static pasco_optimizer
nadam_keras_default(void)
{
	return pasco_nadam(0.001);
}

static pasco_optimizer
nadam_every_slot(void)
{
	return pasco_nadam(0.05);
}

const pasci_opt_desc pasci_opt_nadam_desc = {
    .kind  = PASCO_OPT_NADAM,
    .name  = "nadam",
    .title = "Nadam",
    .keras = "Nadam",
    SLOTS("momentum", "velocity"),
    FIELDS(LR, F("beta_1", beta_1), F("beta_2", beta_2), EPS),
    .defaults      = {.kind = PASCO_OPT_NADAM,
             .learning_rate = 0.001,
             .beta_1        = 0.9,
             .beta_2        = 0.999,
             .epsilon       = 1e-7},
    .check         = nadam_check,
    .slot_init     = pasci_opt_zero_init,
    .scalars       = nadam_scalars,
    .update        = nadam_update,
    .f32_rows      = nadam_rows,
    .keras_default = nadam_keras_default,
    .every_slot    = nadam_every_slot,
};

pasco_optimizer
pasco_nadam(double learning_rate)
{
	pasco_optimizer o = pasci_opt_nadam_desc.defaults;
	o.learning_rate   = learning_rate;
	return o;
}
