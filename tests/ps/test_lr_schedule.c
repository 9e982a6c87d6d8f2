/*
 * Learning-rate schedules (base/lr_schedule.c) applied on the ps: SGD with
 * a gradient of 1 moves each element by minus the learning rate of that
 * apply, which must be Keras 3's schedule (keras/src/optimizers/schedules/
 * learning_rate_schedule.py, written out here) at the step before the
 * apply (0 for the first). The shard counts its applies here (no global
 * step); through a global step the same steps follow it
 * (tests/python/optimizer_numpy.py, on a launched cluster). And the
 * schedule crosses the wire whole.
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "lr_schedule.h"
#include "store.h"
#include "wire.h"

TestSuite(lr_schedule, .timeout = 30);

#define STEPS 40

/* Keras's formulas, one per class, at step t. */
static double
keras_lr(const pasco_lr_schedule *s, double t)
{
	double lr0 = s->initial_learning_rate, d = s->decay_steps, p = t / d;
	switch (s->kind) {
	case PASCO_LR_EXPONENTIAL_DECAY:
		return lr0 * pow(s->decay_rate, s->staircase ? floor(p) : p);
	case PASCO_LR_INVERSE_TIME_DECAY:
		return lr0 /
		       (1 + s->decay_rate * (s->staircase ? floor(p) : p));
	case PASCO_LR_POLYNOMIAL_DECAY: {
		double ds = d, st = t;
		if (s->cycle) {
			ds = d * (t == 0 ? 1 : ceil(t / d));
		} else if (st > d) {
			st = d;
		}
		return (lr0 - s->end_learning_rate) *
		           pow(1 - st / ds, s->power) +
		       s->end_learning_rate;
	}
	case PASCO_LR_COSINE_DECAY: {
		double w = s->warmup_steps, from = lr0, st = t;
		if (!isnan(s->warmup_target)) {
			st = t < d + w ? t : d + w;
			if (st < w) {
				return (s->warmup_target - lr0) * (st / w) +
				       lr0;
			}
			st -= w;
			from = s->warmup_target;
		} else if (st > d) {
			st = d;
		}
		double c = 0.5 * (1 + cos(M_PI * st / d));
		return from * ((1 - s->alpha) * c + s->alpha);
	}
	case PASCO_LR_PIECEWISE_CONSTANT_DECAY:
		for (int i = 0; i < s->nboundaries; i++) {
			if (t <= s->boundaries[i]) {
				return s->values[i];
			}
		}
		return s->values[s->nboundaries];
	case PASCO_LR_CONSTANT:
		break;
	}
	return NAN;
}

static int
copy_out(void *arg, const pasco_tensor *value)
{
	return pasco_tensor_copy(arg, value);
}

/* STEPS applies of SGD with s; each moves w by -schedule(t). */
static void
check_schedule(pasco_lr_schedule sched, const char *what)
{
	ps_store       *st;
	pasco_tensor   *w0, *g, *now;
	pasco_optimizer o = pasco_sgd(1, 0, false);
	char            err[256];
	double          prev = 0;
	o.schedule           = sched;
	PASCO_PASS(pasci_store_create(&st));
	PASCO_PASS(pasco_tensor_alloc(&w0, PASCO_F64, 1, (int64_t[]){1}));
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F64, 1, (int64_t[]){1}));
	pasco_tensor_set(g, 0, 1);
	PASCO_PASS(pasci_store_var_create(st, "w", w0, err, sizeof(err)));
	for (int t = 0; t < STEPS; t++) {
		double want = keras_lr(&sched, t), lr;
		int    rv =
		    pasci_store_var_apply(st, "w", &o, g, err, sizeof(err));
		cr_assert_eq(rv, PASCO_OK, "%s: %s", what, err);
		PASCO_PASS(pasci_store_var_with(
		    st, "w", copy_out, &now, err, sizeof(err)));
		lr   = prev - pasco_tensor_get(now, 0);
		prev = pasco_tensor_get(now, 0);
		pasco_tensor_release(now);
		cr_assert(fabs(lr - want) <= 1e-12 * (1 + fabs(want)),
		    "%s at step %d: the ps applied %.15g, Keras's %.15g", what,
		    t, lr, want);
		cr_assert_float_eq(pasco_lr_schedule_at(&sched, t, 0), want,
		    1e-12, "%s at %d", what, t);
	}
	pasco_tensor_release(w0);
	pasco_tensor_release(g);
	pasci_store_destroy(st);
}

Test(lr_schedule, each_schedule_gives_keras_rate_at_each_step)
{
	double b[] = {5, 12, 30}, v[] = {0.5, 0.25, 0.125, 0.01};
	check_schedule(pasco_exponential_decay(0.1, 7, 0.5, false), "exp");
	check_schedule(
	    pasco_exponential_decay(0.1, 7, 0.5, true), "exp staircase");
	check_schedule(pasco_inverse_time_decay(0.2, 5, 0.7, false), "inv");
	check_schedule(
	    pasco_inverse_time_decay(0.2, 5, 0.7, true), "inv staircase");
	check_schedule(
	    pasco_polynomial_decay(0.3, 25, 0.0001, 1.0, false), "poly");
	check_schedule(
	    pasco_polynomial_decay(0.3, 9, 0.01, 2.0, true), "poly cycle");
	check_schedule(pasco_cosine_decay(0.4, 30, 0.0, NAN, 0), "cosine");
	check_schedule(
	    pasco_cosine_decay(0.1, 20, 0.1, 0.5, 10), "cosine warmup");
	check_schedule(pasco_piecewise_constant_decay(3, b, v), "piecewise");
}

Test(lr_schedule, a_bad_schedule_is_refused_naming_it)
{
	ps_store       *st;
	pasco_tensor   *w, *g;
	char            err[256];
	pasco_optimizer o     = pasco_adam(0.1, false);
	double          b[40] = {0}, v[41] = {0};
	PASCO_PASS(pasci_store_create(&st));
	PASCO_PASS(pasco_tensor_alloc(&w, PASCO_F32, 1, (int64_t[]){2}));
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F32, 1, (int64_t[]){2}));
	PASCO_PASS(pasci_store_var_create(st, "w", w, err, sizeof(err)));
	o.schedule = pasco_exponential_decay(0.1, 0, 0.5, false);
	PASCO_FAIL(pasci_store_var_apply(st, "w", &o, g, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "decay_steps must be > 0") != NULL, "%s", err);
	o.schedule            = pasco_exponential_decay(0.1, 3, 0.5, false);
	o.schedule.decay_rate = INFINITY;
	PASCO_FAIL(pasci_store_var_apply(st, "w", &o, g, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "must be finite") != NULL, "%s", err);
	o.schedule           = pasco_piecewise_constant_decay(2, b, v);
	o.schedule.values[1] = NAN;
	PASCO_FAIL(pasci_store_var_apply(st, "w", &o, g, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "must be numbers") != NULL, "%s", err);
	o.schedule = pasco_piecewise_constant_decay(40, b, v);
	PASCO_FAIL(pasci_store_var_apply(st, "w", &o, g, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "PiecewiseConstantDecay") != NULL, "%s", err);
	pasco_tensor_release(w);
	pasco_tensor_release(g);
	pasci_store_destroy(st);
}

Test(lr_schedule, a_schedule_crosses_the_wire_whole)
{
	double            b[] = {3, 9}, v[] = {0.3, 0.2, 0.1};
	pasco_lr_schedule s[] = {pasco_piecewise_constant_decay(2, b, v),
	    pasco_cosine_decay(0.1, 20, 0.1, 0.5, 10),
	    pasco_cosine_decay(0.1, 20, 0.1, NAN, 0),
	    pasco_polynomial_decay(0.3, 9, 0.01, 2.0, true)};
	for (size_t k = 0; k < sizeof(s) / sizeof(s[0]); k++) {
		pasco_optimizer    o = pasco_nadam(0.01);
		pasci_wire_builder bld;
		pasci_wire_msg     m;
		nng_msg           *msg;
		char               err[256];
		o.schedule = s[k];
		pasci_wire_builder_init(&bld, PASCI_METHOD_VAR_APPLY);
		bld.hdr.opt = &o;
		PASCO_PASS(pasci_wire_encode(&bld, &msg));
		pasci_wire_builder_fini(&bld);
		PASCO_PASS(pasci_wire_decode(&m, msg, err, sizeof(err)));
		cr_assert_not_null(m.hdr->opt);
		for (int t = 0; t < STEPS; t++) {
			cr_assert_eq(
			    pasco_lr_schedule_at(&m.hdr->opt->schedule, t, 0),
			    pasco_lr_schedule_at(&s[k], t, 0),
			    "schedule %zu at %d", k, t);
		}
		cr_assert_eq(
		    m.hdr->opt->schedule.nboundaries, s[k].nboundaries);
		pasci_wire_msg_fini(&m);
	}
}
