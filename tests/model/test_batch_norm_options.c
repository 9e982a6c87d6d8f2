/* BatchNormalization's options beyond the defaults
 * (model/layers/batch_norm.c): an axis other than the last (axis 1 and
 * -2 on [batch, C, T], through a Reshape), trainable=False (inference
 * mode in a training step), and the regularizers and constraints of gamma
 * and beta, against numpy (tests/model/norm_numpy.py, bn_nd) and Keras's
 * formulas; their config round trip and errors. */
#include "norm_check.h"

TestSuite(batch_norm_options, .timeout = 120);

#define B 5
#define C 3
#define T 4

/* Reshape to [C, T], then BatchNormalization l: x [B, C * T]. */
static pasco_model *
channels_model(pasco_layer l)
{
	pasco_model *m;
	pasco_layer  ls[] = {pasco_layer_reshape(2, (int64_t[]){C, T}), l};
	PASCO_PASS(pasco_model_sequential(&m, C * T, 2, ls, 3));
	return m;
}

/* gamma, beta, moving mean, moving variance [n] (variance positive). */
static void
stats(pasco_tensor **v, int64_t n)
{
	v[0] = rnd(PASCO_F64, 1, &n, 11, 0.5, 2);
	v[1] = rnd(PASCO_F64, 1, &n, 12, -1, 1);
	v[2] = rnd(PASCO_F64, 1, &n, 13, -2, 2);
	v[3] = rnd(PASCO_F64, 1, &n, 14, 0.1, 3);
}

static void
release_all(pasco_tensor **v, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		pasco_tensor_release(v[k]);
	}
}

/* Layer l on channels_model's x against numpy's bn_nd of that axis. */
static void
check_channels(pasco_layer l, bool training, const char *numpy_args)
{
	pasco_model    *m = channels_model(l);
	pasco_tensor   *x = rnd(PASCO_F64, 2, (int64_t[]){B, C * T}, 5, -2, 3);
	pasco_tensor   *v[4], *r, *ins[6];
	pasco_tnode    *nodes[5], *y, *loss;
	pasco_tape     *tp;
	pasco_tape_grad g[3];
	double          want[2 * B * C * T + 4 * C];
	size_t          nwant = 2 * B * C * T + (training ? 4 : 2) * C;
	for (int64_t i = 0; i < x->count; i++) { /* channels apart */
		pasco_tensor_set(x, i,
		    pasco_tensor_get(x, i) * (1 + (double) ((i / T) % C)) +
		        2.0 * (double) ((i / T) % C));
	}
	stats(v, C);
	r = rnd(PASCO_F64, 3, (int64_t[]){B, C, T}, 99, -1, 1);
	memcpy(ins, (pasco_tensor *[]){x, v[0], v[1], v[2], v[3], r},
	    sizeof(ins));
	numpy_ref("bn_nd", numpy_args, 6, ins, want, nwant);

	loss = norm_forward(&tp, true, m, x, 4, v, nodes, &y);
	PASCO_PASS(pasco_tape_gradient(tp, loss, 3, nodes, g));
	near_all("y", pasco_tnode_value(y), want, B * C * T, 1e-10);
	near_all("dx", g[0].dense, want + B * C * T, B * C * T, 1e-10);
	if (l.frozen) { /* constants: numpy's dgamma, dbeta unused */
		cr_assert_null(g[1].dense, "a frozen gamma has a gradient");
		cr_assert_null(g[2].dense, "a frozen beta has a gradient");
	} else {
		near_all("dgamma", g[1].dense, want + 2 * B * C * T, C, 1e-10);
		near_all(
		    "dbeta", g[2].dense, want + 2 * B * C * T + C, C, 1e-10);
	}
	if (training) {
		pasci_tape_update *uv = pasci_tape_step_of(tp)->updates;
		cr_assert_eq(updates_on(tp), 2);
		near_all("moving_mean's update", uv->next->delta,
		    want + 2 * B * C * T + 2 * C, C, 1e-12);
		near_all("moving_variance's update", uv->delta,
		    want + 2 * B * C * T + 3 * C, C, 1e-12);
	} else {
		cr_assert_eq(
		    updates_on(tp), 0, "a frozen layer updates nothing");
	}
	pasco_tape_grad_fini(g, 3);
	pasco_tape_free(tp);
	release_all(v, 4);
	pasco_tensor_release(x);
	pasco_tensor_release(r);
	pasco_model_free(m);
}

Test(batch_norm_options, axis_1_normalizes_each_channel_over_batch_and_steps)
{
	pasco_layer l = pasco_layer_batch_normalization();
	l.bn_axis     = 1;
	l.momentum    = 0.9;
	check_channels(l, true, "5,3,4 1 0.001 0.9 1");
}

Test(batch_norm_options, a_negative_axis_counts_from_the_last)
{
	pasco_layer l = pasco_layer_batch_normalization();
	l.bn_axis     = -2;
	l.momentum    = 0.9;
	check_channels(l, true, "5,3,4 1 0.001 0.9 1");
	l.bn_axis      = -1; /* the steps' axis: T features */
	pasco_model *m = channels_model(l);
	cr_assert_eq(
	    pasco_model_variable_shape(m, 0, &(const int64_t *){0}), 1);
	const int64_t *shape;
	pasco_model_variable_shape(m, 0, &shape);
	cr_assert_eq(shape[0], T, "axis -1 of [B, C, T]: %d features", T);
	pasco_model_free(m);
}

Test(batch_norm_options, trainable_false_runs_in_inference_mode_in_training)
{
	pasco_layer l = pasco_layer_batch_normalization();
	l.bn_axis     = 1;
	l.frozen      = true;
	check_channels(l, false, "5,3,4 1 0.001 0.99 0");
}

/* A frozen layer's gamma and beta are constants: no gradient reaches
 * them, so a step's apply leaves them as they were. */
Test(batch_norm_options, trainable_false_gives_gamma_and_beta_no_gradient)
{
	pasco_layer l = pasco_layer_batch_normalization();
	l.frozen      = true;
	pasco_model    *m;
	pasco_tensor   *x = rnd(PASCO_F64, 2, (int64_t[]){B, C}, 5, -1, 1);
	pasco_tensor   *v[4];
	pasco_tnode    *nodes[5], *y, *loss;
	pasco_tape     *tp;
	pasco_tape_grad g[4];
	PASCO_PASS(pasco_model_sequential(&m, C, 1, &l, 3));
	stats(v, C);
	loss = norm_forward(&tp, true, m, x, 4, v, nodes, &y);
	PASCO_PASS(pasco_tape_gradient(tp, loss, 4, nodes + 1, g));
	for (int k = 0; k < 4; k++) {
		cr_assert_null(g[k].dense, "variable %d has a gradient", k);
	}
	pasco_tape_free(tp);
	release_all(v, 4);
	pasco_tensor_release(x);
	pasco_model_free(m);
}

/* Keras's L1L2 on gamma and L2 on beta: the loss gets l1 sum|gamma| +
 * l2 sum gamma^2 + l2' sum beta^2, their gradients with it; a frozen
 * layer's weights are not trainable, so none (Keras's layer.losses
 * counts trainable weights only). */
static double
penalty_of(bool frozen, pasco_tape_grad *g, pasco_tensor **v)
{
	pasco_layer l = pasco_layer_batch_normalization();
	l.gamma_l1    = 0.1;
	l.gamma_l2    = 0.2;
	l.beta_l2     = 0.3;
	l.frozen      = frozen;
	pasco_model  *m;
	pasco_tensor *x = rnd(PASCO_F64, 2, (int64_t[]){B, C}, 5, -1, 1);
	pasco_tensor *y = rnd(PASCO_F64, 2, (int64_t[]){B, C}, 6, -1, 1);
	pasco_tnode  *nodes[4], *loss, *plain;
	pasco_tape   *tp;
	double        out;
	PASCO_PASS(pasco_model_sequential(&m, C, 1, &l, 3));
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	for (int k = 0; k < 4; k++) {
		nodes[k] = pasco_tape_watch(tp, v[k]);
	}
	loss = pasco_model_loss(
	    m, tp, &x, y, (pasco_loss){.kind = PASCO_LOSS_MSE}, nodes);
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	plain = pasco_t_loss(tp, &(pasco_loss){.kind = PASCO_LOSS_MSE},
	    pasci_model_forward(
	        m, tp, (const pasco_tensor *[]){x}, NULL, nodes),
	    y);
	out   = pasco_tensor_get(pasco_tnode_value(loss), 0) -
	      pasco_tensor_get(pasco_tnode_value(plain), 0);
	if (g != NULL) {
		pasco_tape_grad gp[2];
		PASCO_PASS(pasco_tape_gradient(tp, loss, 2, nodes, g));
		PASCO_PASS(pasco_tape_gradient(tp, plain, 2, nodes, gp));
		for (int k = 0; k < 2; k++) {
			for (int j = 0; j < C; j++) {
				pasco_tensor_set(g[k].dense, j,
				    pasco_tensor_get(g[k].dense, j) -
				        pasco_tensor_get(gp[k].dense, j));
			}
		}
		pasco_tape_grad_fini(gp, 2);
	}
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_model_free(m);
	return out;
}

Test(batch_norm_options, regularizers_add_keras_penalties_unless_frozen)
{
	pasco_tensor   *v[4];
	pasco_tape_grad g[2];
	double          want = 0;
	stats(v, C);
	for (int j = 0; j < C; j++) {
		double ga = pasco_tensor_get(v[0], j),
		       be = pasco_tensor_get(v[1], j);
		want += 0.1 * fabs(ga) + 0.2 * ga * ga + 0.3 * be * be;
	}
	cr_assert_float_eq(penalty_of(false, g, v), want, 1e-12);
	for (int j = 0; j < C; j++) {
		double ga = pasco_tensor_get(v[0], j),
		       be = pasco_tensor_get(v[1], j);
		cr_assert_float_eq(pasco_tensor_get(g[0].dense, j),
		    0.1 * (ga > 0 ? 1 : -1) + 0.4 * ga, 1e-12, "dgamma %d", j);
		cr_assert_float_eq(pasco_tensor_get(g[1].dense, j), 0.6 * be,
		    1e-12, "dbeta %d", j);
	}
	pasco_tape_grad_fini(g, 2);
	cr_assert_float_eq(penalty_of(true, NULL, v), 0, 1e-15);
	release_all(v, 4);
}

Test(batch_norm_options, constraints_reach_gamma_and_beta_only)
{
	pasco_layer l      = pasco_layer_batch_normalization();
	l.gamma_constraint = pasco_constraint_non_neg();
	l.beta_constraint  = pasco_constraint_max_norm(2, 0);
	pasco_model *m;
	PASCO_PASS(pasco_model_sequential(&m, C, 1, &l, 3));
	cr_assert_eq(m->vars[0].constraint.kind, PASCO_CONSTRAINT_NON_NEG);
	cr_assert_eq(m->vars[1].constraint.kind, PASCO_CONSTRAINT_MAX_NORM);
	cr_assert_eq(m->vars[2].constraint.kind, 0, "moving_mean: none");
	cr_assert_eq(m->vars[3].constraint.kind, 0, "moving_variance: none");
	pasco_model_free(m);
}

Test(batch_norm_options, its_new_fields_round_trip_as_keras_writes_them)
{
	pasco_model *m, *back;
	char        *json, *again;
	pasco_layer  l     = pasco_layer_batch_normalization();
	l.bn_axis          = 1;
	l.frozen           = true;
	l.gamma_l1         = 0.5;
	l.beta_l2          = 0.25;
	l.gamma_constraint = pasco_constraint_non_neg();
	m                  = channels_model(l);
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(strstr(json, "\"axis\":1,") != NULL, "%s", json);
	cr_assert(strstr(json, "\"trainable\":false") != NULL, "%s", json);
	cr_assert(strstr(json, "\"gamma_regularizer\":{\"class_name\":\"L1\","
	                       "\"config\":{\"l1\":0.5}}") != NULL,
	    "%s", json);
	cr_assert(strstr(json, "\"beta_regularizer\":{\"class_name\":\"L2\","
	                       "\"config\":{\"l2\":0.25}}") != NULL,
	    "%s", json);
	PASCO_PASS(pasco_model_from_json(json, &back));
	PASCO_PASS(pasco_model_to_json(back, &again));
	cr_assert_str_eq(json, again);
	const pasco_layer *b = pasco_model_layer(back, 1);
	cr_assert(b->frozen && b->bn_axis == 1);
	cr_assert(b->gamma_l1 == 0.5 && b->beta_l2 == 0.25);
	cr_assert_eq(b->gamma_constraint.kind, PASCO_CONSTRAINT_NON_NEG);
	free(json);
	free(again);
	pasco_model_free(m);
	pasco_model_free(back);
}

Test(batch_norm_options, bad_axes_and_options_are_refused_naming_them)
{
	bn_refused("axis", "0", "axis must be one integer, not 0");
	bn_refused(
	    "axis", "[1, 2]", "a list of several axes is not supported");
	bn_refused("axis", "2", "axis 2 is out of range for its input");
	bn_refused("axis", "-3", "axis -3 is out of range for its input");
	bn_refused("trainable", "1", "trainable");
	bn_refused("gamma_regularizer",
	    "{\"class_name\": \"L3\", \"config\": {}}", "gamma_regularizer");
	bn_refused("beta_constraint", "{\"class_name\": \"Positive\"}",
	    "beta_constraint");
	pasco_layer  l = pasco_layer_batch_normalization();
	pasco_model *m = NULL;
	l.bn_axis      = 0;
	PASCO_FAIL(pasco_model_sequential(&m, 4, 1, &l, 1), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "axis 0 is the batch's"),
	    "%s", pasco_model_last_error());
	l.bn_axis = -1;
	l.beta_l1 = -1;
	PASCO_FAIL(pasco_model_sequential(&m, 4, 1, &l, 1), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "the regularizers' factors must be >= 0"),
	    "%s", pasco_model_last_error());
}

/* LayerNormalization takes the same regularizers (and constraints): its
 * gamma's L1 and beta's L2 enter the loss. */
Test(batch_norm_options, layer_normalization_regularizers_enter_the_loss)
{
	pasco_layer l      = pasco_layer_layer_normalization();
	l.gamma_l1         = 0.25;
	l.beta_l2          = 0.5;
	l.gamma_constraint = pasco_constraint_non_neg();
	pasco_model  *m;
	pasco_tensor *x = rnd(PASCO_F64, 2, (int64_t[]){B, C}, 5, -1, 1);
	pasco_tensor *y = rnd(PASCO_F64, 2, (int64_t[]){B, C}, 6, -1, 1);
	pasco_tensor *v[4];
	pasco_tnode  *nodes[2], *loss, *plain;
	pasco_tape   *tp;
	double        want = 0;
	PASCO_PASS(pasco_model_sequential(&m, C, 1, &l, 3));
	cr_assert_eq(m->vars[0].constraint.kind, PASCO_CONSTRAINT_NON_NEG);
	stats(v, C);
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	nodes[0] = pasco_tape_watch(tp, v[0]);
	nodes[1] = pasco_tape_watch(tp, v[1]);
	loss     = pasco_model_loss(
	        m, tp, &x, y, (pasco_loss){.kind = PASCO_LOSS_MSE}, nodes);
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	plain = pasco_t_loss(tp, &(pasco_loss){.kind = PASCO_LOSS_MSE},
	    pasco_model_call_with(m, tp, &x, nodes), y);
	for (int j = 0; j < C; j++) {
		double ga = pasco_tensor_get(v[0], j),
		       be = pasco_tensor_get(v[1], j);
		want += 0.25 * fabs(ga) + 0.5 * be * be;
	}
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(loss), 0) -
	                       pasco_tensor_get(pasco_tnode_value(plain), 0),
	    want, 1e-12);
	pasco_tape_free(tp);
	release_all(v, 4);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_model_free(m);
}
