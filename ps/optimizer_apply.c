/*
 * Optimizer updates behind one ops table: element by element in double
 * precision (stored back in the variable's dtype), except f32 variables,
 * which are updated in f32 as Keras does (FTRL excepted), by vectorized
 * loops. Called with the shard's lock held; never blocks.
 */
#include "optimizer_apply.h"

#include <math.h>
#include <string.h>

#include "optimizer_desc.h"
#include "util.h"

/* The arrays an f32 kernel updates: n elements of w from g, and the
 * slots (NULL for one its optimizer does not use). */
typedef struct f32_args {
	float *restrict w;
	const float *restrict g;
	float *restrict s0, *restrict s1, *restrict s2; /* slots, or NULL */
	int64_t n;
} f32_args;

/* One optimizer's update: everything of it that depends on its kind, so
 * that nothing else here switches on kinds. Its name and slots are its
 * descriptor's (base/optimizer_desc.h). Every entry is called with the
 * shard's lock held and never blocks. */
typedef struct opt_ops {
	/* Keras's ValueErrors for the hyperparameters beyond learning_rate,
	 * epsilon and momentum: what is wrong, or NULL. */
	const char *(*check)(const pasco_optimizer *o);
	/* Initial value of slot k. */
	double (*slot_init)(const pasco_optimizer *o, int k);
	/* Whether the update reads slot k (an unused slot is never
	 * allocated: it reads as 0); NULL: every slot is used. */
	bool (*slot_used)(const pasco_optimizer *o, int k);
	/* The per-apply scalar at the shard's step t (Adam's step size);
	 * NULL: 0. */
	double (*alpha)(const pasco_optimizer *o, double t);
	/* One element: w and its slots s[] updated from gradient g. */
	void (*update)(const pasco_optimizer *o, double alpha, double *w,
	    double g, double *s);
	/* (The f32 case in f32 arithmetic is a kernel of apply_f32's
	 * switch.) */
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

static const char *
adagrad_check(const pasco_optimizer *o)
{
	return o->initial_accumulator_value < 0
	           ? "initial_accumulator_value must be >= 0"
	           : NULL;
}

static const char *
adam_check(const pasco_optimizer *o)
{
	return o->beta_1 < 0 || o->beta_1 >= 1 || o->beta_2 < 0 ||
	               o->beta_2 >= 1
	           ? "beta_1 and beta_2 must be in [0, 1)"
	           : NULL;
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

/* Which slots an update reads: as Keras, no momentum slot without
 * momentum, no RMSprop average gradient unless centered, no Adam v_hat
 * without amsgrad. */
static bool
sgd_slot_used(const pasco_optimizer *o, int k)
{
	(void) k;
	return o->momentum != 0;
}

static bool
rmsprop_slot_used(const pasco_optimizer *o, int k)
{
	return k == 0 || (k == 1 && o->momentum != 0) ||
	       (k == 2 && o->centered);
}

static bool
adam_slot_used(const pasco_optimizer *o, int k)
{
	return k < 2 || o->amsgrad;
}

/* Adam's step size at step t. */
static double
adam_alpha(const pasco_optimizer *o, double t)
{
	return o->learning_rate * sqrt(1 - pow(o->beta_2, t)) /
	       (1 - pow(o->beta_1, t));
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

F32_KERNEL void
sgd_f32(const pasco_optimizer *o, float alpha, f32_args a)
{
	(void) alpha;
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
adagrad_f32(const pasco_optimizer *o, float alpha, f32_args a)
{
	(void) alpha;
	float lr = (float) o->learning_rate, eps = (float) o->epsilon;
	for (int64_t i = 0; i < a.n; i++) {
		a.s0[i] += a.g[i] * a.g[i];
		a.w[i] -= lr * a.g[i] / (sqrtf(a.s0[i]) + eps);
	}
}

/* slots: velocity, momentum, average gradient */
F32_KERNEL void
rmsprop_f32(const pasco_optimizer *o, float alpha, f32_args a)
{
	(void) alpha;
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

static const opt_ops ops_table[] = {
    [PASCO_OPT_SGD]     = {.slot_init = zero_init,
            .slot_used                = sgd_slot_used,
            .update                   = sgd_update},
    [PASCO_OPT_ADAGRAD] = {.check = adagrad_check,
        .slot_init                = accumulator_init,
        .update                   = adagrad_update},
    [PASCO_OPT_RMSPROP] = {.slot_init = zero_init,
        .slot_used                    = rmsprop_slot_used,
        .update                       = rmsprop_update},
    [PASCO_OPT_ADAM]    = {.check = adam_check,
           .slot_init             = zero_init,
           .slot_used             = adam_slot_used,
           .alpha                 = adam_alpha,
           .update                = adam_update},
    [PASCO_OPT_FTRL]    = {.check = ftrl_check,
           .slot_init             = accumulator_init,
           .update                = ftrl_update},
};

_Static_assert(sizeof(ops_table) / sizeof(ops_table[0]) == PASCI_OPT_KINDS,
    "one update per optimizer kind (base/optimizer_desc.h)");

/* The update of kind, or NULL for a number that is no optimizer's. */
static const opt_ops *
ops_of(pasco_optimizer_kind kind)
{
	return pasci_opt_desc_of((int) kind) != NULL ? &ops_table[kind] : NULL;
}

int
pasci_optimizer_check(const pasco_optimizer *o, char *err, size_t errlen)
{
	const pasci_opt_desc *d   = pasci_opt_desc_of((int) o->kind);
	const opt_ops        *ops = ops_of(o->kind);
	const char           *bad = NULL;
	if (d == NULL) {
		pasci_fmt(
		    err, errlen, "unknown optimizer kind %d", (int) o->kind);
		return PASCO_EINVAL;
	}
	if (!(o->learning_rate >= 0) || !isfinite(o->learning_rate)) {
		bad = "learning_rate must be a finite number >= 0";
	} else if (o->epsilon < 0 || o->momentum < 0 || o->momentum > 1) {
		bad = "epsilon must be >= 0 and momentum in [0, 1]";
	} else if (ops->check != NULL) {
		bad = ops->check(o);
	}
	if (bad != NULL) {
		pasci_fmt(err, errlen, "%s: %s", d->title, bad);
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

static bool
slot_used(const opt_ops *ops, const pasco_optimizer *o, int k)
{
	return ops->slot_used == NULL || ops->slot_used(o, k);
}

size_t
pasci_slots_need(
    const ps_slots *s, const pasco_optimizer *o, const pasco_tensor *value)
{
	const pasci_opt_desc *d   = pasci_opt_desc_of((int) o->kind);
	const opt_ops        *ops = ops_of(o->kind);
	size_t                n   = 0;
	if (d == NULL || (s->kind != 0 && s->kind != o->kind)) {
		return 0; /* prepare refuses it, allocating nothing */
	}
	for (int k = 0; k < d->nslots; k++) {
		n += s->slot[k] == NULL && slot_used(ops, o, k) ? value->nbytes
		                                                : 0;
	}
	return n;
}

size_t
pasci_slots_bytes(const ps_slots *s)
{
	size_t n = 0;
	for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
		n += s->slot[k] != NULL ? s->slot[k]->nbytes : 0;
	}
	return n;
}

int
pasci_slots_prepare(ps_slots *s, const pasco_optimizer *o,
    const pasco_tensor *value, char *err, size_t errlen)
{
	const pasci_opt_desc *d   = pasci_opt_desc_of((int) o->kind);
	const opt_ops        *ops = ops_of(o->kind);
	if (s->kind != 0 && s->kind != o->kind) {
		pasci_fmt(err, errlen,
		    "the variable has %s slots; it cannot be "
		    "updated with %s",
		    pasci_opt_desc_of((int) s->kind)->title, d->title);
		return PASCO_EINVAL;
	}
	for (int k = 0; k < d->nslots; k++) {
		if (s->slot[k] == NULL && slot_used(ops, o, k)) {
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
	s->nslots = d->nslots;
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
		double wi = w[i], sl[PASCI_OPT_MAX_SLOTS] = {0};
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

/* The f32 case (slots share the value's dtype): the optimizer's f32
 * kernel, or (FTRL, whose update is pow-bound) its update in double
 * element by element. A switch rather than an ops entry: direct calls let
 * the compiler pass the arrays in registers (IPA-SRA), which makes SGD's
 * rows 1.5x faster than through a pointer; it has no default, so -Wswitch
 * (-Wall) names a kind left out. */
static void
apply_f32(const pasco_optimizer *o, const opt_ops *ops, double alpha,
    ps_slots *s, pasco_tensor *value, int64_t at, const pasco_tensor *grad,
    int64_t from, int64_t n)
{
	float   *slot[PASCI_OPT_MAX_SLOTS] = {0};
	f32_args a                         = {.w = (float *) value->data + at,
	                            .g           = (const float *) grad->data + from,
	                            .n           = n};
	/* the configuration says which slots an update uses, not their
	 * presence: a restore sets every slot a checkpoint holds (Adam's
	 * v_hat without amsgrad, a zero one), which must not turn
	 * amsgrad (or RMSprop's centered) on */
	for (int k = 0; k < s->nslots; k++) {
		slot[k] = s->slot[k] != NULL && slot_used(ops, o, k)
		              ? (float *) s->slot[k]->data + at
		              : NULL;
	}
	a.s0 = slot[0], a.s1 = slot[1], a.s2 = slot[2];
	switch (o->kind) {
	case PASCO_OPT_SGD:
		sgd_f32(o, (float) alpha, a);
		break;
	case PASCO_OPT_ADAGRAD:
		adagrad_f32(o, (float) alpha, a);
		break;
	case PASCO_OPT_RMSPROP:
		rmsprop_f32(o, (float) alpha, a);
		break;
	case PASCO_OPT_ADAM:
		adam_f32(o, (float) alpha, a);
		break;
	case PASCO_OPT_FTRL:
		f32_loop(o, ops->update, alpha, s->nslots, slot, a.w, a.g, n);
		break;
	}
}

/* The per-apply scalar at the slots' step (0 for most). */
static double
alpha_of(const opt_ops *ops, const pasco_optimizer *o, const ps_slots *s)
{
	return ops->alpha != NULL ? ops->alpha(o, (double) s->step) : 0;
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
		double w = pasco_tensor_get(value, at + i);
		double sl[PASCI_OPT_MAX_SLOTS] = {0};
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
	const opt_ops *ops = ops_of(o->kind);
	apply_span(o, ops, alpha_of(ops, o, s), s, value, at, grad, from, n);
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
	double         alpha = alpha_of(ops, o, s);
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
pasci_optimizer_apply_row(const pasco_optimizer *o, ps_slots *s,
    pasco_tensor *value, int64_t row, int64_t row_elems,
    const pasco_tensor *grad, int64_t grad_row)
{
	const opt_ops *ops = ops_of(o->kind);
	apply_span(o, ops, alpha_of(ops, o, s), s, value, row * row_elems,
	    grad, grad_row * row_elems, row_elems);
}

double
pasci_slot_init_value(const pasco_optimizer *o, int k)
{
	return ops_of(o->kind)->slot_init(o, k);
}

void
pasci_slots_fini(ps_slots *s)
{
	for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
		pasco_tensor_release(s->slot[k]);
	}
	memset(s, 0, sizeof(*s));
}
