/* Keras 3's LayerNormalization (model/layers/layer_norm.c): its forward
 * pass and its gradients to the input, gamma and beta against numpy
 * (tests/model/norm_numpy.py: Keras's _layer_normalization, gradients by
 * hand), with center, scale and rms_scaling; the same in training and
 * not; its variables, config round trip and errors. */
#include "norm_check.h"

TestSuite(layer_norm, .timeout = 60);

#define B 5
#define W 6

/* The options of one case, and numpy's answers for them. */
typedef struct ln_case {
	bool   center, scale, rms;
	double epsilon;
} ln_case;

static void
check_case(ln_case k, bool training)
{
	pasco_model    *m;
	pasco_tensor   *x, *gamma, *beta, *r, *vars[2];
	pasco_tnode    *nodes[3], *y, *loss;
	pasco_tape     *tp;
	pasco_tape_grad g[3];
	double          want[2 * B * W + 2 * W];
	char            args[64], what[96];
	size_t          nv = 0;
	pasco_layer_reset_names();
	pasco_layer l = pasco_layer_layer_normalization();
	l.center      = k.center;
	l.scale       = k.scale;
	l.rms_scaling = k.rms;
	l.epsilon     = k.epsilon;
	PASCO_PASS(pasco_model_sequential(&m, W, 1, &l, 3));
	x = rnd(PASCO_F64, 2, (int64_t[]){B, W}, 31, -2, 3);
	for (int64_t i = 0; i < x->count; i++) { /* rows of other scales */
		pasco_tensor_set(x, i,
		    (double) (i / W) +
		        (1 + (double) (i / W)) * pasco_tensor_get(x, i));
	}
	gamma = rnd(PASCO_F64, 1, (int64_t[]){W}, 32, 0.5, 2);
	beta  = rnd(PASCO_F64, 1, (int64_t[]){W}, 33, -1, 1);
	r     = rnd(PASCO_F64, 2, (int64_t[]){B, W}, 99, -1, 1);
	snprintf(args, sizeof(args), "5 6 %.17g %d %d %d", k.epsilon, k.center,
	    k.scale, k.rms);
	numpy_ref("ln", args, 4, (pasco_tensor *[]){x, gamma, beta, r}, want,
	    sizeof(want) / sizeof(*want));
	if (k.scale || k.rms) {
		vars[nv++] = gamma;
	}
	if (k.center && !k.rms) {
		vars[nv++] = beta;
	}
	cr_assert_eq(pasco_model_num_variables(m), nv);
	loss = norm_forward(&tp, training, m, x, nv, vars, nodes, &y);
	snprintf(what, sizeof(what), "center %d scale %d rms %d training %d",
	    k.center, k.scale, k.rms, training);
	near_all(what, pasco_tnode_value(y), want, B * W, 1e-10);
	PASCO_PASS(pasco_tape_gradient(tp, loss, nv + 1, nodes, g));
	near_all(what, g[0].dense, want + B * W, B * W, 1e-10);
	if (k.scale || k.rms) {
		near_all(what, g[1].dense, want + 2 * B * W, W, 1e-10);
	}
	if (k.center && !k.rms) {
		near_all(what, g[nv].dense, want + 2 * B * W + W, W, 1e-10);
	}
	cr_assert_eq(updates_on(tp), 0);
	pasco_tape_grad_fini(g, nv + 1);
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_tensor_release(gamma);
	pasco_tensor_release(beta);
	pasco_tensor_release(r);
	pasco_model_free(m);
}

Test(layer_norm, forward_and_gradients_match_numpy)
{
	check_case((ln_case){true, true, false, 1e-3}, true);
	check_case((ln_case){true, true, false, 1e-3}, false);
	check_case((ln_case){false, true, false, 0.5}, true);
	check_case((ln_case){true, false, false, 1e-3}, true);
	check_case((ln_case){false, false, false, 1e-3}, true);
}

Test(layer_norm, rms_scaling_is_keras_variance_scaling_with_gamma_only)
{
	check_case((ln_case){true, true, true, 1e-3}, true);
	check_case((ln_case){true, false, true, 0.1}, false);
}

Test(layer_norm, its_config_round_trips_every_field)
{
	pasco_model *m, *back;
	char        *json, *again;
	pasco_layer_reset_names();
	pasco_layer l       = pasco_layer_layer_normalization();
	l.epsilon           = 1e-5;
	l.rms_scaling       = true;
	l.scale             = false;
	l.beta_initializer  = pasco_init_constant(0.5);
	l.gamma_initializer = pasco_init_normal(1, 0.1, 4);
	cr_assert_str_eq(l.name, "layer_normalization");
	PASCO_PASS(pasco_model_sequential(&m, W, 1, &l, 1));
	PASCO_PASS(pasco_model_to_json(m, &json));
	PASCO_PASS(pasco_model_from_json(json, &back));
	PASCO_PASS(pasco_model_to_json(back, &again));
	cr_assert_str_eq(json, again);
	/* Keras's built LayerNormalization writes axis [1] */
	const char  *ax = strstr(json, "\"axis\":-1");
	char         keras[4096];
	pasco_model *k;
	cr_assert_not_null(ax, "%s", json);
	snprintf(keras, sizeof(keras), "%.*s\"axis\":[1]%s", (int) (ax - json),
	    json, ax + 9);
	PASCO_PASS(pasco_model_from_json(keras, &k));
	cr_assert_eq(pasco_model_layer(k, 0)->epsilon, 1e-5);
	pasco_model_free(k);
	const pasco_layer *b = pasco_model_layer(back, 0);
	cr_assert_eq(b->kind, PASCO_LAYER_LAYER_NORMALIZATION);
	cr_assert_eq(b->epsilon, 1e-5);
	cr_assert(b->rms_scaling && !b->scale && b->center);
	cr_assert_eq(b->beta_initializer.value, 0.5);
	cr_assert_eq(b->gamma_initializer.kind, PASCO_INIT_NORMAL);
	cr_assert_eq(b->gamma_initializer.seed, 4);
	/* rms_scaling: gamma only */
	cr_assert_eq(pasco_model_num_variables(back), 1);
	cr_assert_str_eq(
	    pasco_model_variable_name(back, 0), "layer_normalization/gamma");
	free(json);
	free(again);
	pasco_model_free(m);
	pasco_model_free(back);
}

Test(layer_norm, bad_configs_name_the_field)
{
	static const char *const cases[][2] = {
	    {"\"epsilon\": -1", "epsilon must be a number >= 0"},
	    {"\"axis\": 0", "not 0 (the batch's)"},
	    {"\"axis\": [0]", "not 0 (the batch's)"},
	    {"\"axis\": [1, 2, 3, 1]", "a list of 1 to 3"},
	    {"\"rms_scaling\": 1", "rms_scaling must be true or false"},
	    {"\"beta_constraint\": {\"class_name\": \"UnitNorm\"}",
	        "(ln): beta_constraint"},
	    {"\"gamma_regularizer\": {\"class_name\": \"L2\", "
	     "\"config\": {\"l1\": 1}}",
	        "(ln): gamma_regularizer: L2 takes l2 only"},
	    {"\"momentum\": 0.9", "momentum"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char         json[512];
		pasco_model *m = NULL;
		snprintf(json, sizeof(json),
		    "{\"class_name\": \"Sequential\", \"config\": "
		    "{\"inputs\": "
		    "[{\"name\": \"x\", \"width\": 4}], \"layers\": "
		    "[{\"class_name\": \"LayerNormalization\", \"config\": "
		    "{\"name\": \"ln\", %s}}]}}",
		    cases[i][0]);
		PASCO_FAIL(pasco_model_from_json(json, &m), PASCO_EINVAL);
		cr_assert_null(m);
		cr_assert(
		    strstr(pasco_model_last_error(), cases[i][1]) != NULL,
		    "%s: '%s' does not say '%s'", cases[i][0],
		    pasco_model_last_error(), cases[i][1]);
	}
}
