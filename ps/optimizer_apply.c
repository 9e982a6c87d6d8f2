/*
 * Optimizer updates behind one ops table: element by element in double
 * precision (stored back in the variable's dtype), except f32 variables,
 * which are updated in f32 as Keras does (FTRL excepted), by vectorized
 * loops. Called with the shard's lock held; never blocks.
 */
#include "optimizer_apply.h"

#include <math.h>
#include <string.h>

#include "util.h"

typedef struct opt_ops {
	const char *name;
	int         nslots;
	/* Initial value of slot k. */
	double (*slot_init)(const pasco_optimizer *o, int k);
	/* One element: w and its slots s[] updated from gradient g; alpha is
	 * the per-apply scalar computed by prepare (Adam's step size). */
	void (*update)(const pasco_optimizer *o, double alpha, double *w,
	    double g, double *s);
} opt_ops;

static double
zero_init(const pasco_optimizer *o, int k)
{
	(void) o;
	(void) k;
	return 0;
}

static double
accumulator_init(const pasco_optimizer *o, int k)
{
	return k == 0 ? o->initial_accumulator_value : 0;
}

static void
sgd_update(
    const pasco_optimizer *o, double alpha, double *w, double g, double *s)
{
	(void) alpha;
	if (o->momentum == 0) {
		*w -= o->learning_rate * g;
		return;
	}
	s[0] = o->momentum * s[0] - o->learning_rate * g;
	*w += o->nesterov ? o->momentum * s[0] - o->learning_rate * g : s[0];
}

static void
adagrad_update(
    const pasco_optimizer *o, double alpha, double *w, double g, double *s)
{
	(void) alpha;
	s[0] += g * g;
	*w -= o->learning_rate * g / (sqrt(s[0]) + o->epsilon);
}

/* slots: velocity, momentum, average gradient */
static void
rmsprop_update(
    const pasco_optimizer *o, double alpha, double *w, double g, double *s)
{
	double d, inc;
	(void) alpha;
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

/* slots: m, v, v_hat */
static void
adam_update(
    const pasco_optimizer *o, double alpha, double *w, double g, double *s)
{
	s[0] += (g - s[0]) * (1 - o->beta_1);
	s[1] += (g * g - s[1]) * (1 - o->beta_2);
	if (o->amsgrad) {
		s[2] = fmax(s[2], s[1]);
	}
	*w -= alpha * s[0] / (sqrt(o->amsgrad ? s[2] : s[1]) + o->epsilon);
}

/* slots: accumulator n, linear z */
static void
ftrl_update(
    const pasco_optimizer *o, double alpha, double *w, double g, double *s)
{
	double p = o->learning_rate_power, lr = o->learning_rate;
	double l2 = o->l2 + o->beta / (2 * lr);
	double gs = g + 2 * o->l2_shrinkage * *w;
	double n2 = s[0] + g * g;
	double q, zc;
	(void) alpha;
	s[1] += gs - (pow(n2, -p) - pow(s[0], -p)) / lr * *w;
	q    = pow(n2, -p) / lr + 2 * l2;
	zc   = fmin(fmax(s[1], -o->l1), o->l1);
	*w   = (zc - s[1]) / q;
	s[0] = n2;
}

static const opt_ops ops_table[] = {
    [PASCO_OPT_SGD]     = {"SGD", 1, zero_init, sgd_update},
    [PASCO_OPT_ADAGRAD] = {"Adagrad", 1, accumulator_init, adagrad_update},
    [PASCO_OPT_RMSPROP] = {"RMSprop", 3, zero_init, rmsprop_update},
    [PASCO_OPT_ADAM]    = {"Adam", 3, zero_init, adam_update},
    [PASCO_OPT_FTRL]    = {"FTRL", 2, accumulator_init, ftrl_update},
};

static const opt_ops *
ops_of(pasco_optimizer_kind kind)
{
	return kind >= PASCO_OPT_SGD && kind <= PASCO_OPT_FTRL
	           ? &ops_table[kind]
	           : NULL;
}

int
pasci_optimizer_check(const pasco_optimizer *o, char *err, size_t errlen)
{
	const opt_ops *ops = ops_of(o->kind);
	const char    *bad = NULL;
	if (ops == NULL) {
		pasci_fmt(
		    err, errlen, "unknown optimizer kind %d", (int) o->kind);
		return PASCO_EINVAL;
	}
	if (!(o->learning_rate >= 0) || !isfinite(o->learning_rate)) {
		bad = "learning_rate must be a finite number >= 0";
	} else if (o->epsilon < 0 || o->momentum < 0 || o->momentum > 1) {
		bad = "epsilon must be >= 0 and momentum in [0, 1]";
	} else if (o->kind == PASCO_OPT_ADAM &&
	           (o->beta_1 < 0 || o->beta_1 >= 1 || o->beta_2 < 0 ||
	               o->beta_2 >= 1)) {
		bad = "beta_1 and beta_2 must be in [0, 1)";
	} else if (o->kind == PASCO_OPT_FTRL &&
	           (o->learning_rate <= 0 || o->learning_rate_power > 0 ||
	               o->initial_accumulator_value < 0 || o->l1 < 0 ||
	               o->l2 < 0 || o->l2_shrinkage < 0 || o->beta < 0)) {
		bad = "FTRL needs learning_rate > 0, learning_rate_power <= 0 "
		      "and "
		      "non-negative initial_accumulator_value, l1, l2, "
		      "l2_shrinkage and beta";
	} else if (o->kind == PASCO_OPT_ADAGRAD &&
	           o->initial_accumulator_value < 0) {
		bad = "initial_accumulator_value must be >= 0";
	}
	if (bad != NULL) {
		pasci_fmt(err, errlen, "%s: %s", ops->name, bad);
		return PASCO_EINVAL;
	}
	return PASCO_OK;
}

/* Sets every element of a new (zero-filled) slot to x. */
static void
fill_slot(pasco_tensor *t, double x)
{
	if (x == 0) {
		return;
	}
	if (t->dtype == PASCO_F32) {
		float *p = t->data;
		for (int64_t i = 0; i < t->count; i++) {
			p[i] = (float) x;
		}
		return;
	}
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(t, i, x);
	}
}

/* Whether o's update reads slot k: as Keras, no momentum slot without
 * momentum, no RMSprop average gradient unless centered, no Adam v_hat
 * without amsgrad. An unused slot is never allocated (it reads as 0). */
static bool
slot_used(const pasco_optimizer *o, int k)
{
	switch (o->kind) {
	case PASCO_OPT_SGD:
		return o->momentum != 0;
	case PASCO_OPT_RMSPROP:
		return k == 0 || (k == 1 && o->momentum != 0) ||
		       (k == 2 && o->centered);
	case PASCO_OPT_ADAM:
		return k < 2 || o->amsgrad;
	default:
		return true;
	}
}

int
pasci_slots_prepare(ps_slots *s, const pasco_optimizer *o,
    const pasco_tensor *value, char *err, size_t errlen)
{
	const opt_ops *ops = ops_of(o->kind);
	if (s->kind != 0 && s->kind != o->kind) {
		pasci_fmt(err, errlen,
		    "the variable has %s slots; it cannot be "
		    "updated with %s",
		    ops_of(s->kind)->name, ops->name);
		return PASCO_EINVAL;
	}
	for (int k = 0; k < ops->nslots; k++) {
		if (s->slot[k] == NULL && slot_used(o, k)) {
			if (pasco_tensor_alloc(&s->slot[k], value->dtype,
			        value->rank, value->shape) != 0) {
				if (s->kind == 0) {
					pasci_slots_fini(s);
				}
				return PASCO_ENOMEM;
			}
			fill_slot(s->slot[k], ops->slot_init(o, k));
		}
	}
	s->kind   = o->kind;
	s->nslots = ops->nslots;
	s->step++;
	return PASCO_OK;
}

typedef void (*update_fn)(
    const pasco_optimizer *o, double alpha, double *w, double g, double *s);

/* The element loop of apply_f32 in double, through an update function
 * (FTRL's). */
static inline __attribute__((always_inline)) void
f32_loop(const pasco_optimizer *o, update_fn update, double alpha, int nslots,
    float *const *slot, float *w, const float *g, int64_t n)
{
	for (int64_t i = 0; i < n; i++) {
		double wi = w[i], sl[PS_MAX_SLOTS] = {0};
		for (int k = 0; k < nslots; k++) {
			sl[k] = slot[k] != NULL ? slot[k][i] : 0;
		}
		update(o, alpha, &wi, g[i], sl);
		w[i] = (float) wi;
		for (int k = 0; k < nslots; k++) {
			if (slot[k] != NULL) {
				slot[k][i] = (float) sl[k];
			}
		}
	}
}

/* f32 variables are updated in f32 arithmetic, as Keras updates float32
 * variables, by one loop per optimizer over plain arrays, which the
 * compiler vectorizes: GCC's -O2 cost model leaves these loops scalar, and
 * sqrtf is vectorized only without errno (ps/meson.build: -fno-math-errno;
 * its operands here are never negative). optimize() is GCC's; clang's
 * vectorizer runs at -O2. */
#if defined(__clang__)
#define F32_KERNEL static
#else
#define F32_KERNEL __attribute__((optimize("O3"))) static
#endif

typedef struct f32_args {
	float *restrict w;
	const float *restrict g;
	float *restrict s0, *restrict s1, *restrict s2; /* slots, or NULL */
	int64_t n;
} f32_args;

F32_KERNEL void
sgd_f32(const pasco_optimizer *o, f32_args a)
{
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

F32_KERNEL void
adagrad_f32(const pasco_optimizer *o, f32_args a)
{
	float lr = (float) o->learning_rate, eps = (float) o->epsilon;
	for (int64_t i = 0; i < a.n; i++) {
		a.s0[i] += a.g[i] * a.g[i];
		a.w[i] -= lr * a.g[i] / (sqrtf(a.s0[i]) + eps);
	}
}

/* slots: velocity, momentum, average gradient */
F32_KERNEL void
rmsprop_f32(const pasco_optimizer *o, f32_args a)
{
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

/* slots: m, v, v_hat */
F32_KERNEL void
adam_f32(const pasco_optimizer *o, float alpha, f32_args a)
{
	float b1 = (float) (1 - o->beta_1), b2 = (float) (1 - o->beta_2);
	float eps = (float) o->epsilon;
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

/* The f32 case (slots share the value's dtype): FTRL, whose update is
 * pow-bound, in double through the generic formula, the others in f32. */
static void
apply_f32(const pasco_optimizer *o, const opt_ops *ops, double alpha,
    ps_slots *s, pasco_tensor *value, int64_t at, const pasco_tensor *grad,
    int64_t from, int64_t n)
{
	float   *slot[PS_MAX_SLOTS] = {0};
	f32_args a                  = {.w = (float *) value->data + at,
	                     .g           = (const float *) grad->data + from,
	                     .n           = n};
	for (int k = 0; k < s->nslots; k++) {
		slot[k] = s->slot[k] != NULL ? (float *) s->slot[k]->data + at
		                             : NULL;
	}
	a.s0 = slot[0], a.s1 = slot[1], a.s2 = slot[2];
	switch (o->kind) {
	case PASCO_OPT_SGD:
		sgd_f32(o, a);
		break;
	case PASCO_OPT_ADAGRAD:
		adagrad_f32(o, a);
		break;
	case PASCO_OPT_RMSPROP:
		rmsprop_f32(o, a);
		break;
	case PASCO_OPT_ADAM:
		adam_f32(o, (float) alpha, a);
		break;
	default:
		f32_loop(
		    o, ops->update, alpha, ops->nslots, slot, a.w, a.g, n);
		break;
	}
}

/* Adam's step size at the slots' step t (0 for the others). */
static double
alpha_of(const pasco_optimizer *o, const ps_slots *s)
{
	double t = (double) s->step;
	return o->kind == PASCO_OPT_ADAM
	           ? o->learning_rate * sqrt(1 - pow(o->beta_2, t)) /
	                 (1 - pow(o->beta_1, t))
	           : 0;
}

/* Updates n elements from `at` with alpha already computed. */
static void
apply_span(const pasco_optimizer *o, const opt_ops *ops, double alpha,
    ps_slots *s, pasco_tensor *value, int64_t at, const pasco_tensor *grad,
    int64_t from, int64_t n)
{
	if (value->dtype == PASCO_F32 && grad->dtype == PASCO_F32) {
		apply_f32(o, ops, alpha, s, value, at, grad, from, n);
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		double w                = pasco_tensor_get(value, at + i);
		double sl[PS_MAX_SLOTS] = {0};
		for (int k = 0; k < s->nslots; k++) {
			if (s->slot[k] != NULL) {
				sl[k] = pasco_tensor_get(s->slot[k], at + i);
			}
		}
		ops->update(
		    o, alpha, &w, pasco_tensor_get(grad, from + i), sl);
		pasco_tensor_set(value, at + i, w);
		for (int k = 0; k < s->nslots; k++) {
			if (s->slot[k] != NULL) {
				pasco_tensor_set(s->slot[k], at + i, sl[k]);
			}
		}
	}
}

void
pasci_optimizer_apply(const pasco_optimizer *o, ps_slots *s,
    pasco_tensor *value, int64_t at, const pasco_tensor *grad, int64_t from,
    int64_t n)
{
	apply_span(
	    o, ops_of(o->kind), alpha_of(o, s), s, value, at, grad, from, n);
}

/* Rows of a big table are cache misses: the loop asks for the row
 * PREFETCH_AHEAD ahead (value and slots) while it updates this one. */
#define PREFETCH_AHEAD 12

void
pasci_prefetch_elems(
    const pasco_tensor *t, int64_t at, int64_t n, bool for_write)
{
	size_t      esize = pasco_dtype_size(t->dtype);
	size_t      bytes = (size_t) n * esize;
	const char *p     = (const char *) t->data + (size_t) at * esize;
	for (size_t off = 0; off < bytes; off += 64) {
		if (for_write) {
			__builtin_prefetch(p + off, 1);
		} else {
			__builtin_prefetch(p + off, 0);
		}
	}
}

static void
prefetch_rows_of(const ps_slots *s, const pasco_tensor *value, int64_t at,
    int64_t row_elems)
{
	pasci_prefetch_elems(value, at, row_elems, true);
	for (int k = 0; k < s->nslots; k++) {
		if (s->slot[k] != NULL) {
			pasci_prefetch_elems(s->slot[k], at, row_elems, true);
		}
	}
}

void
pasci_optimizer_apply_rows(const pasco_optimizer *o, ps_slots *s,
    pasco_tensor *value, const int64_t *ids, int64_t nids, int64_t row_elems,
    const pasco_tensor *grad)
{
	const opt_ops *ops   = ops_of(o->kind);
	double         alpha = alpha_of(o, s);
	for (int64_t i = 0; i < nids; i++) {
		if (i + PREFETCH_AHEAD < nids) {
			prefetch_rows_of(s, value,
			    ids[i + PREFETCH_AHEAD] * row_elems, row_elems);
		}
		apply_span(o, ops, alpha, s, value, ids[i] * row_elems, grad,
		    i * row_elems, row_elems);
	}
}

void
pasci_slots_fini(ps_slots *s)
{
	for (int k = 0; k < PS_MAX_SLOTS; k++) {
		pasco_tensor_release(s->slot[k]);
	}
	memset(s, 0, sizeof(*s));
}
