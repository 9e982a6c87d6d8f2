/* Keras 3's losses in compile (issue 33; model/losses.c): by name and by
 * a loss class's config, the config written back as Keras's and read
 * again to the same bytes, parameters checked naming the class and the
 * field, and a compiled loss run by the model's own step (label
 * smoothing through a sigmoid's logits). The formulas themselves are
 * checked against numpy by tests/python/losses_numpy.py. */
#include "helpers.h"
#include "model_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TestSuite(losses, .timeout = 30);

static pasco_model *
binary_model(void)
{
	pasco_model *m;
	pasco_layer  l[] = {pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	PASCO_PASS(pasco_model_sequential(&m, 3, 1, l, 42));
	return m;
}

static char *
compiled_json(pasco_model *m, const char *loss, bool from_logits)
{
	char *json;
	MODEL_PASS(
	    pasco_model_compile(m, &(pasco_compile_options){.loss = loss,
	                               .from_logits = from_logits}));
	PASCO_PASS(pasco_model_to_json(m, &json));
	return json;
}

Test(losses, names_and_aliases_are_keras_with_its_defaults)
{
	static const struct {
		const char     *name;
		pasco_loss_kind kind;
	} names[] = {{"mae", PASCO_LOSS_MAE}, {"mape", PASCO_LOSS_MAPE},
	    {"logcosh", PASCO_LOSS_LOG_COSH},
	    {"kld", PASCO_LOSS_KL_DIVERGENCE}, {"huber", PASCO_LOSS_HUBER},
	    {"cosine_similarity", PASCO_LOSS_COSINE_SIMILARITY},
	    {"binary_focal_crossentropy",
	        PASCO_LOSS_BINARY_FOCAL_CROSSENTROPY}};
	pasco_loss l;
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		PASCO_PASS(pasco_loss_from_name(names[i].name, false, &l));
		cr_assert_eq(l.kind, names[i].kind, "%s", names[i].name);
	}
	cr_assert_eq(l.delta, 1.0);
	cr_assert_eq(l.alpha, 0.25);
	cr_assert_eq(l.gamma, 2.0);
	cr_assert_eq(l.axis, -1);
	cr_assert_not(l.apply_class_balancing);
	PASCO_FAIL(
	    pasco_loss_from_name("huber_loss", false, &l), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(), "unknown loss 'huber_loss'"));
}

Test(losses, a_loss_config_compiles_and_round_trips_as_keras_writes_it)
{
	pasco_model *m = binary_model(), *back;
	char        *one, *two;
	one = compiled_json(m,
	    "{\"class_name\": \"BinaryFocalCrossentropy\", \"config\": "
	    "{\"gamma\": 3, \"apply_class_balancing\": true, \"name\": \"f\", "
	    "\"reduction\": \"sum_over_batch_size\", \"dtype\": null}}",
	    false);
	cr_assert(strstr(one,
	              "\"loss\":{\"class_name\":\"BinaryFocalCrossentropy\","
	              "\"config\":{\"name\":\"binary_focal_crossentropy\","
	              "\"from_logits\":false,\"label_smoothing\":0,\"axis\":-"
	              "1,\"apply_class_balancing\":true,\"alpha\":0.25,"
	              "\"gamma\":3}}"),
	    "%s", one);
	MODEL_PASS(pasco_model_from_json(one, &back));
	PASCO_PASS(pasco_model_to_json(back, &two));
	cr_assert_str_eq(one, two);
	free(one);
	free(two);
	pasco_model_free(back);
	/* a name stays a name */
	one = compiled_json(m, "logcosh", false);
	cr_assert(strstr(one, "\"loss\":\"logcosh\""), "%s", one);
	free(one);
	pasco_model_free(m);
}

Test(losses, bad_parameters_are_refused_naming_the_class_and_field)
{
	static const struct {
		const char *loss, *words;
		bool        from_logits;
	} bad[] = {
	    {"{\"class_name\": \"Huber\", \"config\": {\"delta\": -1}}",
	        "loss config: Huber: delta must be a number > 0, got -1",
	        false},
	    {"{\"class_name\": \"Poisson\", \"config\": {\"from_logits\": "
	     "true}}",
	        "Poisson takes no from_logits", false},
	    {"mae", "compile: mean_absolute_error takes no from_logits", true},
	    {"{\"class_name\": \"BinaryCrossentropy\", \"config\": "
	     "{\"label_smoothing\": 2}}",
	        "label_smoothing must be in [0, 1], got 2", false},
	    {"{\"class_name\": \"Huber\", \"config\": {\"delta\": \"2\"}}",
	        "loss config: delta must be a number", false},
	    {"{\"class_name\": \"Huber\"", "loss config: not JSON", false},
	};
	pasco_model *m = binary_model();
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		PASCO_FAIL(pasco_model_compile(
		               m, &(pasco_compile_options){.loss = bad[i].loss,
		                      .from_logits = bad[i].from_logits}),
		    PASCO_EINVAL);
		cr_assert(strstr(pasco_model_last_error(), bad[i].words),
		    "%s: %s", bad[i].loss, pasco_model_last_error());
	}
	pasco_model_free(m);
}

/* The model's loss of a sigmoid output with label smoothing: Keras's
 * bce of the smoothed labels, through the logits. */
Test(losses, a_models_loss_smooths_labels_through_the_sigmoids_logits)
{
	pasco_model  *m = binary_model();
	pasco_tensor *w, *b, *x, *y;
	pasco_tape   *tp;
	pasco_tnode  *l, *nodes[2];
	float         xs[] = {0.5f, -1, 2, 1, 0, -0.5f}, ys[] = {1, 0};
	double        want = 0;
	pasco_loss    loss;
	PASCO_PASS(
	    pasco_loss_from_config("{\"class_name\": "
	                           "\"BinaryCrossentropy\", \"config\": "
	                           "{\"label_smoothing\": 0.2}}",
	        &loss));
	PASCO_PASS(pasco_tensor_from(&w, PASCO_F32, 2, (int64_t[]){3, 1},
	    (float[]){0.3f, -0.2f, 0.1f}, 3 * sizeof(float)));
	PASCO_PASS(pasco_tensor_from(&b, PASCO_F32, 1, (int64_t[]){1},
	    (float[]){0.05f}, sizeof(float)));
	PASCO_PASS(pasco_tensor_from(
	    &x, PASCO_F32, 2, (int64_t[]){2, 3}, xs, sizeof(xs)));
	PASCO_PASS(pasco_tensor_from(
	    &y, PASCO_F32, 2, (int64_t[]){2, 1}, ys, sizeof(ys)));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	nodes[0] = pasco_tape_watch(tp, w);
	nodes[1] = pasco_tape_watch(tp, b);
	l        = pasco_model_loss(m, tp, &x, y, loss, nodes);
	cr_assert_not_null(l, "%s", pasco_tape_message(tp));
	for (int r = 0; r < 2; r++) {
		double z = 0.05, t = ys[r] * 0.8 + 0.1;
		for (int j = 0; j < 3; j++) {
			z += (double) xs[r * 3 + j] *
			     (double) ((float[]){0.3f, -0.2f, 0.1f})[j];
		}
		want += (fmax(z, 0) - z * t + log1p(exp(-fabs(z)))) / 2;
	}
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(l), 0), want, 1e-6);
	pasco_tape_free(tp);
	pasco_tensor_release(w);
	pasco_tensor_release(b);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_model_free(m);
}

/* Keras's layer.losses of a Dense's regularizers: the kernel's L1 and
 * L2, the bias's L1 and L2, added to the loss with their gradients
 * (l1 sign(w) + 2 l2 w), and the config as Keras's L1 / L2 / L1L2. */
Test(losses, dense_regularizers_add_keras_penalties_and_round_trip)
{
	pasco_model    *m, *back;
	pasco_layer     l[] = {pasco_layer_dense(2, PASCO_ACT_LINEAR)};
	pasco_tensor   *w, *b, *x, *y;
	pasco_tape     *tp;
	pasco_tnode    *loss, *nodes[2];
	pasco_tape_grad g[2];
	float           ws[] = {0.5f, -0.25f, 0.125f, 1, -2, 0.75f},
	      bs[]           = {0.2f, -0.3f};
	float  xs[] = {1, 2, -1, 0.5f, 0, 3}, ys[] = {1, 0, -1, 2};
	double want = 0, gb[2] = {0};
	char  *json, *json2;
	l[0].kernel_l1 = 0.1;
	l[0].kernel_l2 = 0.2;
	l[0].bias_l1   = 0.3;
	l[0].bias_l2   = 0.4;
	PASCO_PASS(pasco_model_sequential(&m, 3, 1, l, 42));
	PASCO_PASS(pasco_tensor_from(
	    &w, PASCO_F32, 2, (int64_t[]){3, 2}, ws, sizeof(ws)));
	PASCO_PASS(pasco_tensor_from(
	    &b, PASCO_F32, 1, (int64_t[]){2}, bs, sizeof(bs)));
	PASCO_PASS(pasco_tensor_from(
	    &x, PASCO_F32, 2, (int64_t[]){2, 3}, xs, sizeof(xs)));
	PASCO_PASS(pasco_tensor_from(
	    &y, PASCO_F32, 2, (int64_t[]){2, 2}, ys, sizeof(ys)));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	nodes[0] = pasco_tape_watch(tp, w);
	nodes[1] = pasco_tape_watch(tp, b);
	loss     = pasco_model_loss(
	        m, tp, &x, y, (pasco_loss){.kind = PASCO_LOSS_MSE}, nodes);
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	PASCO_PASS(pasco_tape_gradient(tp, loss, 2, nodes, g));
	for (int r = 0; r < 2; r++) {
		for (int j = 0; j < 2; j++) {
			double o = bs[j];
			for (int k = 0; k < 3; k++) {
				o += (double) xs[r * 3 + k] * ws[k * 2 + j];
			}
			want += (o - ys[r * 2 + j]) * (o - ys[r * 2 + j]) / 4;
			gb[j] += 2 * (o - ys[r * 2 + j]) / 4;
		}
	}
	for (int k = 0; k < 6; k++) {
		want += 0.1 * fabs(ws[k]) + 0.2 * ws[k] * ws[k];
	}
	for (int j = 0; j < 2; j++) {
		want += 0.3 * fabs(bs[j]) + 0.4 * bs[j] * bs[j];
		gb[j] += 0.3 * (bs[j] > 0 ? 1 : -1) + 0.8 * bs[j];
		cr_assert_float_eq(pasco_tensor_get(g[1].dense, j), gb[j],
		    1e-5, "bias %d", j);
	}
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(loss), 0), want, 1e-5);
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(
	    strstr(json, "\"kernel_regularizer\":{\"class_name\":\"L1L2\","
	                 "\"config\":{\"l1\":0.1,\"l2\":0.2}}"),
	    "%s", json);
	MODEL_PASS(pasco_model_from_json(json, &back));
	PASCO_PASS(pasco_model_to_json(back, &json2));
	cr_assert_str_eq(json, json2);
	pasco_tape_grad_fini(g, 2);
	pasco_tape_free(tp);
	free(json);
	free(json2);
	pasco_model_free(back);
	pasco_model_free(m);
	pasco_tensor_release(w);
	pasco_tensor_release(b);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
}
