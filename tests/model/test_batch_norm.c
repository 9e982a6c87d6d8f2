/* Keras 3's BatchNormalization (model/layers/batch_norm.c): its forward
 * pass and its gradients to the input, gamma and beta in training (the
 * batch's statistics, the gradient through them) and in inference (the
 * moving ones) against numpy (tests/model/norm_numpy.py, written from
 * Keras's definitions, gradients by hand); the moving statistics on the
 * ps after N training steps against Keras's recurrence; concurrent steps
 * each counted once; its config round trip and its errors. */
#include "norm_check.h"

#include <pthread.h>

TestSuite(batch_norm, .timeout = 120);

#define B 6
#define W 4

/* A model of one BatchNormalization (f64 nodes given by the tests). */
static pasco_model *
bn_model(pasco_layer l)
{
	pasco_model *m;
	PASCO_PASS(pasco_model_sequential(&m, W, 1, &l, 3));
	return m;
}

/* Columns of other offsets and scales, so each feature's statistics
 * differ. */
static pasco_tensor *
bn_input(uint64_t seed)
{
	pasco_tensor *x = rnd(PASCO_F64, 2, (int64_t[]){B, W}, seed, -1, 1);
	for (int64_t i = 0; i < x->count; i++) {
		int64_t j = i % W;
		pasco_tensor_set(x, i,
		    3.0 * (double) j - 2 + (1 + j) * pasco_tensor_get(x, i));
	}
	return x;
}

/* gamma, beta, moving mean, moving variance (positive). */
static void
bn_vars(pasco_tensor **v)
{
	v[0] = rnd(PASCO_F64, 1, (int64_t[]){W}, 11, 0.5, 2);
	v[1] = rnd(PASCO_F64, 1, (int64_t[]){W}, 12, -1, 1);
	v[2] = rnd(PASCO_F64, 1, (int64_t[]){W}, 13, -2, 2);
	v[3] = rnd(PASCO_F64, 1, (int64_t[]){W}, 14, 0.1, 3);
}

/* y, dx, dgamma, dbeta of the tape against numpy's want. */
static void
check_outputs(const char *what, pasco_tape *tp, pasco_tnode *loss,
    pasco_tnode *y, pasco_tnode **nodes, const double *want)
{
	pasco_tape_grad g[3];
	char            name[64];
	PASCO_PASS(pasco_tape_gradient(tp, loss, 3, nodes, g));
	snprintf(name, sizeof(name), "%s: y", what);
	near_all(name, pasco_tnode_value(y), want, B * W, 1e-10);
	snprintf(name, sizeof(name), "%s: dx", what);
	near_all(name, g[0].dense, want + B * W, B * W, 1e-10);
	snprintf(name, sizeof(name), "%s: dgamma", what);
	near_all(name, g[1].dense, want + 2 * B * W, W, 1e-10);
	snprintf(name, sizeof(name), "%s: dbeta", what);
	near_all(name, g[2].dense, want + 2 * B * W + W, W, 1e-10);
	pasco_tape_grad_fini(g, 3);
}

Test(batch_norm, training_uses_the_batch_statistics_and_differentiates_them)
{
	pasco_layer l   = pasco_layer_batch_normalization();
	l.momentum      = 0.9;
	pasco_model  *m = bn_model(l);
	pasco_tensor *x = bn_input(5), *v[4], *r, *ins[6];
	pasco_tnode  *nodes[5], *y, *loss;
	pasco_tape   *tp;
	double        want[2 * B * W + 4 * W];
	bn_vars(v);
	r = rnd(PASCO_F64, 2, (int64_t[]){B, W}, 99, -1, 1); /* weighted()'s */
	memcpy(ins, (pasco_tensor *[]){x, v[0], v[1], v[2], v[3], r},
	    sizeof(ins));
	numpy_ref("bn_train", "6 4 0.001 0.9", 6, ins, want,
	    sizeof(want) / sizeof(*want));

	loss = norm_forward(&tp, true, m, x, 4, v, nodes, &y);
	check_outputs("training", tp, loss, y, nodes, want);
	/* the moving statistics' updates, against the values read */
	cr_assert_eq(updates_on(tp), 2);
	pasci_tape_update *uv = pasci_tape_step_of(tp)->updates;
	pasci_tape_update *um = uv->next; /* latest first */
	cr_assert_eq(um->var, nodes[3]);
	cr_assert_eq(uv->var, nodes[4]);
	near_all("moving_mean's update", um->delta, want + 2 * B * W + 2 * W,
	    W, 1e-12);
	near_all("moving_variance's update", uv->delta,
	    want + 2 * B * W + 3 * W, W, 1e-12);
	pasco_tape_free(tp);
	for (int k = 0; k < 4; k++) {
		pasco_tensor_release(v[k]);
	}
	pasco_tensor_release(x);
	pasco_tensor_release(r);
	pasco_model_free(m);
}

Test(batch_norm, inference_uses_the_moving_statistics_as_constants)
{
	pasco_model    *m = bn_model(pasco_layer_batch_normalization());
	pasco_tensor   *x = bn_input(6), *v[4], *r, *ins[6];
	pasco_tnode    *nodes[5], *y, *loss;
	pasco_tape     *tp;
	pasco_tape_grad g[2];
	double          want[2 * B * W + 2 * W];
	bn_vars(v);
	r = rnd(PASCO_F64, 2, (int64_t[]){B, W}, 99, -1, 1);
	memcpy(ins, (pasco_tensor *[]){x, v[0], v[1], v[2], v[3], r},
	    sizeof(ins));
	numpy_ref("bn_infer", "6 4 0.001", 6, ins, want,
	    sizeof(want) / sizeof(*want));

	loss = norm_forward(&tp, false, m, x, 4, v, nodes, &y);
	check_outputs("inference", tp, loss, y, nodes, want);
	cr_assert_eq(updates_on(tp), 0, "no update outside training");
	/* no gradient reaches the moving statistics */
	PASCO_PASS(pasco_tape_gradient(tp, loss, 2, nodes + 3, g));
	cr_assert_null(g[0].dense);
	cr_assert_null(g[1].dense);
	pasco_tape_free(tp);
	for (int k = 0; k < 4; k++) {
		pasco_tensor_release(v[k]);
	}
	pasco_tensor_release(x);
	pasco_tensor_release(r);
	pasco_model_free(m);
}

Test(batch_norm, without_center_and_scale_it_has_only_the_moving_statistics)
{
	pasco_layer l = pasco_layer_batch_normalization();
	l.center = l.scale = false;
	pasco_model  *m    = bn_model(l);
	pasco_tensor *x    = bn_input(7), *v[4], *one, *zero, *r, *ins[6];
	pasco_tnode  *nodes[3], *y, *loss;
	pasco_tape   *tp;
	double        want[2 * B * W + 4 * W];
	cr_assert_eq(pasco_model_num_variables(m), 2);
	cr_assert_str_eq(pasco_model_variable_name(m, 0),
	    "batch_normalization/moving_mean");
	bn_vars(v);
	PASCO_PASS(pasco_tensor_alloc(&one, PASCO_F64, 1, (int64_t[]){W}));
	PASCO_PASS(pasco_tensor_alloc(&zero, PASCO_F64, 1, (int64_t[]){W}));
	for (int j = 0; j < W; j++) {
		pasco_tensor_set(one, j, 1);
	}
	r = rnd(PASCO_F64, 2, (int64_t[]){B, W}, 99, -1, 1);
	memcpy(
	    ins, (pasco_tensor *[]){x, one, zero, v[2], v[3], r}, sizeof(ins));
	numpy_ref("bn_train", "6 4 0.001 0.99", 6, ins, want,
	    sizeof(want) / sizeof(*want));
	loss = norm_forward(&tp, true, m, x, 2, v + 2, nodes, &y);
	near_all("y", pasco_tnode_value(y), want, B * W, 1e-10);
	pasco_tape_grad g[1];
	PASCO_PASS(pasco_tape_gradient(tp, loss, 1, nodes, g));
	near_all("dx", g[0].dense, want + B * W, B * W, 1e-10);
	pasco_tape_grad_fini(g, 1);
	pasco_tape_free(tp);
	for (int k = 0; k < 4; k++) {
		pasco_tensor_release(v[k]);
	}
	pasco_tensor_release(one);
	pasco_tensor_release(zero);
	pasco_tensor_release(x);
	pasco_tensor_release(r);
	pasco_model_free(m);
}

/* ---- on the ps: the moving statistics after training steps ---- */

#define STEPS 12
#define SB 8 /* rows per batch */

static pasco_model *
trained_model(setup *st, double momentum)
{
	pasco_model *m;
	pasco_layer_reset_names();
	pasco_layer l[] = {pasco_layer_batch_normalization(),
	    pasco_layer_dense(1, PASCO_ACT_LINEAR)};
	l[0].momentum   = momentum;
	PASCO_PASS(pasco_model_sequential(&m, W, 2, l, 9));
	PASCO_PASS(pasco_model_create_variables(m, st->s));
	return m;
}

/* global_clipnorm for train_on's SGD (0: none): set by a test before
 * its steps. */
static double clip;

static void
train_on(const pasco_model *m, pasco_tensor *x)
{
	pasco_tensor   *y;
	pasco_tape     *tp;
	pasco_optimizer sgd = pasco_sgd(0.05, 0, false);
	sgd.global_clipnorm = clip;
	pasco_loss loss     = {.kind = PASCO_LOSS_MSE, .from_logits = false};
	double     v;
	PASCO_PASS(pasco_tensor_alloc(&y, PASCO_F32, 2, (int64_t[]){SB, 1}));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	int rv = pasco_model_train_step(m, tp, &x, y, loss, &sgd, &v);
	cr_assert_eq(rv, 0, "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
	pasco_tensor_release(y);
}

static pasco_tensor *
read_named(const pasco_model *m, const char *name)
{
	for (size_t k = 0; k < pasco_model_num_variables(m); k++) {
		if (strcmp(pasco_model_variable_name(m, k), name) == 0) {
			pasco_tensor *t;
			PASCO_PASS(pasco_variable_read(
			    pasco_model_variable(m, k), &t));
			return t;
		}
	}
	cr_assert_fail("no variable %s", name);
	return NULL;
}

/* The recurrence after STEPS steps of shifting batches; with clipnorm
 * set, through the clipping front end of the apply (the updates are
 * not gradients: never clipped). */
static void
check_recurrence(double clipnorm)
{
	setup         st;
	pasco_tensor *xs, *x, *mm0, *mv0, *ins[3], *mm, *mv, *gamma;
	double        want[2 * W];
	setup_start(&st, 2);
	pasco_model *m = trained_model(&st, 0.9);
	clip           = clipnorm;
	mm0            = read_named(m, "batch_normalization/moving_mean");
	mv0            = read_named(m, "batch_normalization/moving_variance");
	xs = rnd(PASCO_F32, 3, (int64_t[]){STEPS, SB, W}, 21, -1, 1);
	for (int64_t i = 0; i < xs->count; i++) { /* shifted, scaled */
		int64_t t = i / (SB * W), j = i % W;
		pasco_tensor_set(xs, i,
		    (double) j + 0.3 * (double) t +
		        (1 + 0.5 * (double) j) * pasco_tensor_get(xs, i));
	}
	for (int t = 0; t < STEPS; t++) {
		PASCO_PASS(pasco_tensor_from(&x, PASCO_F32, 2,
		    (int64_t[]){SB, W}, (float *) xs->data + t * SB * W,
		    SB * W * sizeof(float)));
		train_on(m, x);
		pasco_tensor_release(x);
	}
	memcpy(ins, (pasco_tensor *[]){xs, mm0, mv0}, sizeof(ins));
	numpy_ref("bn_moving", "12 8 4 0.9", 3, ins, want, 2 * W);
	mm    = read_named(m, "batch_normalization/moving_mean");
	mv    = read_named(m, "batch_normalization/moving_variance");
	gamma = read_named(m, "batch_normalization/gamma");
	near_all("moving_mean", mm, want, W, 1e-5);
	near_all("moving_variance", mv, want + W, W, 1e-5);
	cr_assert(pasco_tensor_get(gamma, 0) != 1.0, "gamma was trained");
	pasco_tensor_release(mm);
	pasco_tensor_release(mv);
	pasco_tensor_release(gamma);
	pasco_tensor_release(mm0);
	pasco_tensor_release(mv0);
	pasco_tensor_release(xs);
	pasco_model_free(m);
	setup_stop(&st);
}

Test(batch_norm, moving_statistics_on_the_ps_follow_keras_recurrence)
{
	check_recurrence(0);
}

Test(batch_norm, moving_statistics_are_not_clipped_with_the_gradients)
{
	check_recurrence(1e-3);
}

/* Concurrent steps, as two workers take them: every batch the same, of
 * mean c and variance 0, so Keras's recurrence after n updates is
 * moving_mean = c (1 - momentum^n), moving_variance = momentum^n,
 * whatever their order; an add computed against a value another step
 * changed meanwhile moves them by (1 - momentum)^2 of that, nothing at
 * momentum 0.999. So the updates counted, log(1 - mean / c) /
 * log(momentum) and log(variance) / log(momentum), are the steps taken:
 * none lost, none twice. */
#define PER_THREAD 15
#define MOM 0.999

static void *
constant_steps(void *arg)
{
	pasco_tensor *x;
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){SB, W}));
	for (int64_t i = 0; i < x->count; i++) {
		pasco_tensor_set(x, i, 1.0 + (double) (i % W));
	}
	for (int t = 0; t < PER_THREAD; t++) {
		train_on(arg, x);
	}
	pasco_tensor_release(x);
	return NULL;
}

Test(batch_norm, concurrent_steps_each_add_their_update_once)
{
	setup     st;
	pthread_t th[2];
	setup_start(&st, 2);
	pasco_model *m = trained_model(&st, MOM);
	for (int k = 0; k < 2; k++) {
		cr_assert_eq(
		    pthread_create(&th[k], NULL, constant_steps, m), 0);
	}
	for (int k = 0; k < 2; k++) {
		pthread_join(th[k], NULL);
	}
	pasco_tensor *mm = read_named(m, "batch_normalization/moving_mean");
	pasco_tensor *mv =
	    read_named(m, "batch_normalization/moving_variance");
	for (int j = 0; j < W; j++) {
		double c  = 1.0 + j;
		double nm = log(1 - pasco_tensor_get(mm, j) / c) / log(MOM);
		double nv = log(pasco_tensor_get(mv, j)) / log(MOM);
		cr_assert(fabs(nm - 2 * PER_THREAD) < 0.05,
		    "feature %d: moving_mean %.9g counts %.4f updates, %d "
		    "steps were taken",
		    j, pasco_tensor_get(mm, j), nm, 2 * PER_THREAD);
		cr_assert(fabs(nv - 2 * PER_THREAD) < 0.05,
		    "feature %d: moving_variance %.9g counts %.4f updates, %d "
		    "steps were taken",
		    j, pasco_tensor_get(mv, j), nv, 2 * PER_THREAD);
	}
	pasco_tensor_release(mm);
	pasco_tensor_release(mv);
	pasco_model_free(m);
	setup_stop(&st);
}

/* ---- config and errors ---- */

Test(batch_norm, its_config_round_trips_every_field)
{
	pasco_model *m, *back;
	char        *json, *again;
	pasco_layer_reset_names();
	pasco_layer l                 = pasco_layer_batch_normalization();
	l.momentum                    = 0.9;
	l.epsilon                     = 0.01;
	l.center                      = false;
	l.gamma_initializer           = pasco_init_constant(2);
	l.moving_variance_initializer = pasco_init_constant(3);
	cr_assert_str_eq(l.name, "batch_normalization");
	PASCO_PASS(pasco_model_sequential(&m, W, 1, &l, 1));
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(strstr(json, "\"class_name\":\"BatchNormalization\"") ||
	              strstr(json, "\"class_name\": \"BatchNormalization\""),
	    "%s", json);
	PASCO_PASS(pasco_model_from_json(json, &back));
	PASCO_PASS(pasco_model_to_json(back, &again));
	cr_assert_str_eq(json, again);
	const pasco_layer *b = pasco_model_layer(back, 0);
	cr_assert_eq(b->kind, PASCO_LAYER_BATCH_NORMALIZATION);
	cr_assert_eq(b->momentum, 0.9);
	cr_assert_eq(b->epsilon, 0.01);
	cr_assert(!b->center && b->scale);
	cr_assert_eq(b->gamma_initializer.kind, PASCO_INIT_CONSTANT);
	cr_assert_eq(b->gamma_initializer.value, 2);
	cr_assert_eq(b->moving_variance_initializer.value, 3);
	cr_assert_eq(b->moving_mean_initializer.kind, PASCO_INIT_ZEROS);
	cr_assert_eq(pasco_model_num_variables(back), 3);
	cr_assert_str_eq(
	    pasco_model_variable_name(back, 0), "batch_normalization/gamma");
	free(json);
	free(again);
	pasco_model_free(m);
	pasco_model_free(back);
}

Test(batch_norm, bad_configs_name_the_field)
{
	bn_refused("momentum", "2", "momentum must be in [0, 1], got 2");
	bn_refused("momentum", "-1", "momentum must be a number >= 0");
	bn_refused("epsilon", "\"big\"", "epsilon must be a number >= 0");
	bn_refused("axis", "0", "axis must be one integer, not 0");
	bn_refused(
	    "axis", "[1, 2]", "a list of several axes is not supported");
	bn_refused("beta_regularizer",
	    "{\"class_name\": \"L2\", \"config\": {\"l3\": 0.1}}",
	    "(bn): beta_regularizer");
	bn_refused("gamma_constraint", "{\"class_name\": \"UnitNorm\"}",
	    "gamma_constraint");
	bn_refused("synchronized", "true", "synchronized must be false");
	bn_refused("renorm", "true", "renorm");
}

Test(batch_norm, an_input_of_another_width_is_refused_naming_the_layer)
{
	pasco_layer_reset_names();
	pasco_model  *m = bn_model(pasco_layer_batch_normalization());
	pasco_tensor *x = rnd(PASCO_F64, 2, (int64_t[]){B, W + 1}, 1, 0, 1);
	pasco_tensor *v[4];
	pasco_tnode  *nodes[5];
	pasco_tape   *tp;
	bn_vars(v);
	PASCO_PASS(pasco_tape_alloc(&tp, true, 7));
	for (int k = 0; k < 4; k++) {
		nodes[k] = pasco_tape_watch(tp, v[k]);
	}
	cr_assert_null(pasco_model_call_with(m, tp, &x, nodes));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "batch_normalization: input [6, 5] has not 4 features along axis "
	    "-1");
	pasco_tape_free(tp);
	for (int k = 0; k < 4; k++) {
		pasco_tensor_release(v[k]);
	}
	pasco_tensor_release(x);
	pasco_model_free(m);
}
