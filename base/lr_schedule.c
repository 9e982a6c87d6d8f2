/*
 * Keras 3's learning-rate schedules (keras/src/optimizers/schedules/
 * learning_rate_schedule.py), evaluated where an apply is made (the ps,
 * ps/optimizer_apply.c) and for the TensorBoard scalar; formulas in
 * include/pasco/optimizer.h. Constant tables and pure functions: any
 * thread.
 */
#include "lr_schedule.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

// clang-format off
#define LF(k, member)                                                         \
	{                                                                     \
		.key = (k), .off = offsetof(pasco_lr_schedule, member),       \
		.is_bool = _Generic(((pasco_lr_schedule *) 0)->member,        \
		    bool: true, default: false)                               \
	}
// clang-format on
#define LR0 LF("initial_learning_rate", initial_learning_rate)
#define STEPS LF("decay_steps", decay_steps)
#define TARGET                                                                \
	{                                                                     \
		.key      = "warmup_target",                                  \
		.off      = offsetof(pasco_lr_schedule, warmup_target),       \
		.nullable = true                                              \
	}

static const pasci_lr_desc descs[PASCI_LR_KINDS] = {
    [PASCO_LR_EXPONENTIAL_DECAY] = {"ExponentialDecay", "ExponentialDecay",
        false, 4,
        {LR0, STEPS, LF("decay_rate", decay_rate),
            LF("staircase", staircase)}},
    [PASCO_LR_PIECEWISE_CONSTANT_DECAY] = {"PiecewiseConstantDecay",
        "PiecewiseConstant", true, 0, {{0}}},
    [PASCO_LR_POLYNOMIAL_DECAY] = {"PolynomialDecay", "PolynomialDecay", false,
        5,
        {LR0, STEPS, LF("end_learning_rate", end_learning_rate),
            LF("power", power), LF("cycle", cycle)}},
    [PASCO_LR_COSINE_DECAY]     = {"CosineDecay", "CosineDecay", false, 5,
            {LR0, STEPS, LF("alpha", alpha), TARGET,
                LF("warmup_steps", warmup_steps)}},
    [PASCO_LR_INVERSE_TIME_DECAY] = {"InverseTimeDecay", "InverseTimeDecay",
        false, 4,
        {LR0, STEPS, LF("decay_rate", decay_rate),
            LF("staircase", staircase)}},
};

const pasci_lr_field pasci_lr_wire_fields[PASCI_LR_WIRE_FIELDS] = {LR0, STEPS,
    LF("decay_rate", decay_rate), LF("staircase", staircase),
    LF("end_learning_rate", end_learning_rate), LF("power", power),
    LF("cycle", cycle), LF("alpha", alpha), TARGET,
    LF("warmup_steps", warmup_steps)};

const pasci_lr_desc *
pasci_lr_desc_of(int kind)
{
	return kind > 0 && kind < PASCI_LR_KINDS ? &descs[kind] : NULL;
}

const pasci_lr_desc *
pasci_lr_desc_of_class(const char *keras)
{
	for (int k = 1; keras != NULL && k < PASCI_LR_KINDS; k++) {
		if (strcmp(descs[k].keras, keras) == 0) {
			return &descs[k];
		}
	}
	return NULL;
}

static pasco_lr_schedule
decay(pasco_lr_schedule_kind kind, double lr0, double decay_steps)
{
	return (pasco_lr_schedule){.kind = kind,
	    .initial_learning_rate       = lr0,
	    .decay_steps                 = decay_steps,
	    .warmup_target               = NAN};
}

pasco_lr_schedule
pasco_exponential_decay(double initial_learning_rate, double decay_steps,
    double decay_rate, bool staircase)
{
	pasco_lr_schedule s = decay(
	    PASCO_LR_EXPONENTIAL_DECAY, initial_learning_rate, decay_steps);
	s.decay_rate = decay_rate;
	s.staircase  = staircase;
	return s;
}

pasco_lr_schedule
pasco_inverse_time_decay(double initial_learning_rate, double decay_steps,
    double decay_rate, bool staircase)
{
	pasco_lr_schedule s = decay(
	    PASCO_LR_INVERSE_TIME_DECAY, initial_learning_rate, decay_steps);
	s.decay_rate = decay_rate;
	s.staircase  = staircase;
	return s;
}

pasco_lr_schedule
pasco_polynomial_decay(double initial_learning_rate, double decay_steps,
    double end_learning_rate, double power, bool cycle)
{
	pasco_lr_schedule s = decay(
	    PASCO_LR_POLYNOMIAL_DECAY, initial_learning_rate, decay_steps);
	s.end_learning_rate = end_learning_rate;
	s.power             = power;
	s.cycle             = cycle;
	return s;
}

pasco_lr_schedule
pasco_cosine_decay(double initial_learning_rate, double decay_steps,
    double alpha, double warmup_target, double warmup_steps)
{
	pasco_lr_schedule s =
	    decay(PASCO_LR_COSINE_DECAY, initial_learning_rate, decay_steps);
	s.alpha         = alpha;
	s.warmup_target = warmup_target;
	s.warmup_steps  = warmup_steps;
	return s;
}

pasco_lr_schedule
pasco_piecewise_constant_decay(
    int32_t n, const double *boundaries, const double *values)
{
	pasco_lr_schedule s = {
	    .kind = PASCO_LR_PIECEWISE_CONSTANT_DECAY, .warmup_target = NAN};
	if (n < 1 || n > PASCO_LR_MAX_BOUNDARIES) {
		s.nboundaries = -1;
		return s;
	}
	s.nboundaries = n;
	memcpy(s.boundaries, boundaries, (size_t) n * sizeof(double));
	memcpy(s.values, values, (size_t) (n + 1) * sizeof(double));
	return s;
}

const char *
pasco_lr_schedule_error(const pasco_lr_schedule *s)
{
	if (s->kind == PASCO_LR_CONSTANT) {
		return NULL;
	}
	if (pasci_lr_desc_of((int) s->kind) == NULL) {
		return "unknown learning-rate schedule kind";
	}
	if (s->kind == PASCO_LR_PIECEWISE_CONSTANT_DECAY) {
		if (s->nboundaries < 1 ||
		    s->nboundaries > PASCO_LR_MAX_BOUNDARIES) {
			return "PiecewiseConstantDecay needs 1 to 32 "
			       "boundaries "
			       "and one value more";
		}
		for (int32_t i = 0; i <= s->nboundaries; i++) {
			if (!isfinite(s->values[i]) ||
			    (i < s->nboundaries && isnan(s->boundaries[i]))) {
				return "PiecewiseConstantDecay's boundaries "
				       "and "
				       "values must be numbers";
			}
		}
		return NULL;
	}
	if (!(s->decay_steps > 0) || !isfinite(s->decay_steps)) {
		return "decay_steps must be > 0";
	}
	for (int i = 0; i < PASCI_LR_WIRE_FIELDS; i++) {
		const pasci_lr_field *f = &pasci_lr_wire_fields[i];
		double x = *(const double *) ((const char *) s + f->off);
		if (!f->is_bool && !isfinite(x) &&
		    !(f->nullable && isnan(x))) {
			return "its numbers must be finite";
		}
	}
	if (s->kind == PASCO_LR_COSINE_DECAY && !isnan(s->warmup_target) &&
	    !(s->warmup_steps > 0)) {
		return "CosineDecay with a warmup_target needs warmup_steps > "
		       "0";
	}
	return NULL;
}

/* Keras's CosineDecay._decay_function. */
static double
cosine(const pasco_lr_schedule *s, double step, double from)
{
	double c = 0.5 * (1.0 + cos(M_PI * (step / s->decay_steps)));
	return from * ((1 - s->alpha) * c + s->alpha);
}

static double
cosine_at(const pasco_lr_schedule *s, double step)
{
	double lr0 = s->initial_learning_rate;
	if (isnan(s->warmup_target)) {
		return cosine(s, fmin(step, s->decay_steps), lr0);
	}
	step = fmin(step, s->decay_steps + s->warmup_steps);
	if (step < s->warmup_steps) {
		return (s->warmup_target - lr0) * (step / s->warmup_steps) +
		       lr0;
	}
	return cosine(s, step - s->warmup_steps, s->warmup_target);
}

static double
polynomial_at(const pasco_lr_schedule *s, double step)
{
	double d = s->decay_steps, p;
	if (s->cycle) {
		d *= step == 0 ? 1.0 : ceil(step / s->decay_steps);
	} else {
		step = fmin(step, d);
	}
	p = step / d;
	return (s->initial_learning_rate - s->end_learning_rate) *
	           pow(1 - p, s->power) +
	       s->end_learning_rate;
}

/* Keras's sum over the ranges (boundaries are not checked for order). */
static double
piecewise_at(const pasco_lr_schedule *s, double step)
{
	int32_t n = s->nboundaries;
	double  v = 0;
	v += (step <= s->boundaries[0]) * s->values[0];
	v += (step > s->boundaries[n - 1]) * s->values[n];
	for (int32_t i = 1; i < n; i++) {
		v +=
		    (step > s->boundaries[i - 1] && step <= s->boundaries[i]) *
		    s->values[i];
	}
	return v;
}

double
pasco_lr_schedule_at(const pasco_lr_schedule *s, int64_t step, double constant)
{
	double t = (double) step, p = t / s->decay_steps;
	if (s->staircase) {
		p = floor(p);
	}
	switch (s->kind) {
	case PASCO_LR_CONSTANT:
		return constant;
	case PASCO_LR_EXPONENTIAL_DECAY:
		return s->initial_learning_rate * pow(s->decay_rate, p);
	case PASCO_LR_INVERSE_TIME_DECAY:
		return s->initial_learning_rate / (1 + s->decay_rate * p);
	case PASCO_LR_POLYNOMIAL_DECAY:
		return polynomial_at(s, t);
	case PASCO_LR_COSINE_DECAY:
		return cosine_at(s, t);
	case PASCO_LR_PIECEWISE_CONSTANT_DECAY:
		return s->nboundaries >= 1 ? piecewise_at(s, t) : constant;
	}
	return constant;
}
