/* A traced custom loss (a "Graph" loss) weighed as the built-in losses
 * are: sum_i(w_i * l_i) / batch of its per-example losses, a scalar loss
 * times the weights' mean (Keras's reduce_weighted_values), the
 * gradient w_i / batch times example i's own; weights that do not fit
 * are refused naming the shapes. And compile's loss_weights (Keras 3's,
 * for a model of one output): the loss, not the regularizers' terms,
 * scaled by it, kept in the compile config, and lists longer than the
 * outputs refused naming the count. References written here.
 */
#include "helpers.h"
#include "model_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(loss_weights, .timeout = 30);

#define B 4
#define D 2

/* mean((y_pred - y_true)^2, axis=1): per-example [batch] when per_example,
 * else its mean over the whole batch, a scalar. */
static char *
sq_graph(bool per_example)
{
	char *s = malloc(2048);
	snprintf(s, 2048,
	    "{\"name\": \"my_sq\", \"graph\": {"
	    "\"inputs\": [{\"shape\": [-1, 2], \"dtype\": \"float64\"},"
	    "            {\"shape\": [-1, 2], \"dtype\": \"float64\"}],"
	    "\"nodes\": ["
	    " {\"op\": \"input\", \"index\": 0, \"shape\": [-1, 2], "
	    "\"dtype\": \"float64\"},"
	    " {\"op\": \"input\", \"index\": 1, \"shape\": [-1, 2], "
	    "\"dtype\": \"float64\"},"
	    " {\"op\": \"subtract\", \"in\": [1, 0], \"shape\": [-1, 2], "
	    "\"dtype\": \"float64\"},"
	    " {\"op\": \"square\", \"in\": [2], \"shape\": [-1, 2], "
	    "\"dtype\": \"float64\"},"
	    " {\"op\": \"reduce_mean\", \"in\": [3], %s \"keepdims\": false, "
	    "\"shape\": %s, \"dtype\": \"float64\"}],"
	    "\"outputs\": [4]}}",
	    per_example ? "\"axis\": 1," : "\"axis\": null,",
	    per_example ? "[-1]" : "[]");
	return s;
}

static pasci_loss_graph *
graph_loss(bool per_example)
{
	char             *text = sq_graph(per_example);
	cJSON            *c    = cJSON_Parse(text);
	pasci_loss_graph *lg;
	cr_assert_not_null(c);
	MODEL_PASS(pasci_loss_graph_read(c, &lg, "test"));
	cJSON_Delete(c);
	free(text);
	return lg;
}

static const double pred_v[B * D] = {0.5, -1, 2, 0.25, -0.75, 1.5, 3, -2};
static const double true_v[B * D] = {1, 0, 1.5, 0.5, 0, 1, 2.5, -1};
static const double w_v[B]        = {1, 3, 0.5, 0};

/* The loss of the graph on pred_v against true_v weighted by sw (NULL:
 * none), and its gradient into g (B * D). NaN when refused (the tape's
 * message into msg). */
static double
run(pasci_loss_graph *lg, const pasco_tensor *sw, double *g, char *msg)
{
	pasco_tensor   *p, *y;
	pasco_tape     *tp;
	pasco_tape_grad gr;
	pasco_tnode    *x, *l;
	double          v = NAN;
	PASCO_PASS(pasco_tensor_from(
	    &p, PASCO_F64, 2, (int64_t[]){B, D}, pred_v, sizeof(pred_v)));
	PASCO_PASS(pasco_tensor_from(
	    &y, PASCO_F64, 2, (int64_t[]){B, D}, true_v, sizeof(true_v)));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	x = pasco_tape_watch(tp, p);
	l = pasci_loss_graph_run(lg, tp, y, x, sw);
	if (l == NULL) {
		snprintf(msg, 512, "%s", pasco_tape_message(tp));
	} else {
		v = pasco_tensor_get(pasco_tnode_value(l), 0);
		PASCO_PASS(pasco_tape_gradient(tp, l, 1, &x, &gr));
		for (int64_t i = 0; i < B * D; i++) {
			g[i] = pasco_tensor_get(gr.dense, i);
		}
		pasco_tape_grad_fini(&gr, 1);
	}
	pasco_tape_free(tp);
	pasco_tensor_release(p);
	pasco_tensor_release(y);
	return v;
}

Test(loss_weights, a_graph_loss_is_the_weighted_sum_over_the_batch_size)
{
	pasci_loss_graph *per = graph_loss(true), *scalar = graph_loss(false);
	pasco_tensor     *sw;
	double            g[B * D], want = 0, wsum = 0, all = 0, v;
	char              msg[512];
	PASCO_PASS(pasco_tensor_from(
	    &sw, PASCO_F64, 1, (int64_t[]){B}, w_v, sizeof(w_v)));
	for (int i = 0; i < B; i++) {
		double li = 0;
		for (int j = 0; j < D; j++) {
			double d = pred_v[i * D + j] - true_v[i * D + j];
			li += d * d / D;
		}
		want += w_v[i] * li / B;
		all += li / B;
		wsum += w_v[i];
	}
	v = run(per, sw, g, msg);
	cr_assert_float_eq(
	    v, want, 1e-12, "weighted: %.17g, want %.17g", v, want);
	for (int i = 0; i < B; i++) {
		for (int j = 0; j < D; j++) {
			double d = pred_v[i * D + j] - true_v[i * D + j];
			cr_assert_float_eq(g[i * D + j],
			    w_v[i] / B * 2 * d / D, 1e-12,
			    "gradient [%d, %d]: %.17g", i, j, g[i * D + j]);
		}
	}
	/* unweighted: the plain mean, as before */
	v = run(per, NULL, g, msg);
	cr_assert_float_eq(v, all, 1e-12, "unweighted: %.17g", v);
	/* a scalar loss: times the weights' mean, as Keras broadcasts it */
	v = run(scalar, sw, g, msg);
	cr_assert_float_eq(v, all * wsum / B, 1e-12,
	    "scalar: %.17g, want "
	    "%.17g",
	    v, all * wsum / B);
	pasco_tensor_release(sw);
	/* [B, 1] weights and int weights are taken too */
	PASCO_PASS(pasco_tensor_from(&sw, PASCO_I64, 2, (int64_t[]){B, 1},
	    (int64_t[]){1, 3, 0, 0}, 4 * sizeof(int64_t)));
	v = run(per, sw, g, msg);
	cr_assert(isfinite(v), "%s", msg);
	pasco_tensor_release(sw);
	/* one weight short: refused, naming the shapes */
	PASCO_PASS(pasco_tensor_from(
	    &sw, PASCO_F64, 1, (int64_t[]){B - 1}, w_v, 3 * sizeof(double)));
	v = run(per, sw, g, msg);
	cr_assert(isnan(v));
	cr_assert(strstr(msg, "my_sq") && strstr(msg, "[3]") &&
	              strstr(msg, "batch of 4"),
	    "%s", msg);
	pasco_tensor_release(sw);
	pasci_loss_graph_release(per);
	pasci_loss_graph_release(scalar);
}

/* A model Dense(2) of kernel I and bias 0 (its output: its input)
 * compiled with the graph loss: the model's loss, as the worker's step
 * computes it, weighed by the sample weights. */
Test(loss_weights, a_model_with_a_graph_loss_takes_sample_weights)
{
	pasco_model      *m;
	char             *text = sq_graph(true);
	pasco_layer       l[]  = {pasco_layer_dense(D, PASCO_ACT_LINEAR)};
	pasco_tensor     *x, *y, *sw, *k, *b;
	pasco_tape       *tp;
	pasco_tnode      *nodes[2], *loss, *out;
	double            g[B * D], want;
	char              msg[512];
	pasci_loss_graph *lg = graph_loss(true);
	PASCO_PASS(pasco_model_sequential(&m, D, 1, l, 7));
	MODEL_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){.loss_graph = text}));
	free(text);
	PASCO_PASS(pasco_tensor_from(
	    &x, PASCO_F64, 2, (int64_t[]){B, D}, pred_v, sizeof(pred_v)));
	PASCO_PASS(pasco_tensor_from(
	    &y, PASCO_F64, 2, (int64_t[]){B, D}, true_v, sizeof(true_v)));
	PASCO_PASS(pasco_tensor_from(
	    &sw, PASCO_F64, 1, (int64_t[]){B}, w_v, sizeof(w_v)));
	PASCO_PASS(pasco_tensor_from(&k, PASCO_F64, 2, (int64_t[]){D, D},
	    (double[]){1, 0, 0, 1}, 4 * sizeof(double)));
	PASCO_PASS(pasco_tensor_from(
	    &b, PASCO_F64, 1, (int64_t[]){D}, (double[]){0, 0}, 16));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	nodes[0] = pasco_tape_watch(tp, k);
	nodes[1] = pasco_tape_watch(tp, b);
	loss = pasci_model_loss_out(m, tp, (const pasco_tensor *const[]){x}, y,
	    sw, m->compile.loss, nodes, &out);
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	want = run(lg, sw, g, msg);
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(loss), 0), want,
	    1e-12, "model: %.17g, the graph's weighted loss %.17g",
	    pasco_tensor_get(pasco_tnode_value(loss), 0), want);
	pasco_tape_free(tp);
	pasci_loss_graph_release(lg);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_tensor_release(sw);
	pasco_tensor_release(k);
	pasco_tensor_release(b);
	pasco_model_free(m);
}

/* Dense(1) on 2 features (kernel_l2 l2) compiled with mse and the loss
 * weights lw (n of them). */
static pasco_model *
mse_model(double l2, const double *lw, size_t n)
{
	pasco_model *m;
	pasco_layer  l = pasco_layer_dense(1, PASCO_ACT_LINEAR);
	l.kernel_l2    = l2;
	PASCO_PASS(pasco_model_sequential(&m, D, 1, &l, 7));
	MODEL_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){
	           .loss = "mse", .loss_weights = lw, .nloss_weights = n}));
	return m;
}

/* m's loss on (pred_v, its first column) with kernel [0.5, -2], bias
 * 0.25, and its gradient in the kernel into gk (2). */
static double
mse_loss(const pasco_model *m, double *gk)
{
	pasco_tensor   *x, *y, *k, *b;
	pasco_tape     *tp;
	pasco_tnode    *nodes[2], *loss;
	pasco_tape_grad g;
	double          v, yv[B];
	for (int i = 0; i < B; i++) {
		yv[i] = true_v[i * D];
	}
	PASCO_PASS(pasco_tensor_from(
	    &x, PASCO_F64, 2, (int64_t[]){B, D}, pred_v, sizeof(pred_v)));
	PASCO_PASS(pasco_tensor_from(
	    &y, PASCO_F64, 2, (int64_t[]){B, 1}, yv, sizeof(yv)));
	PASCO_PASS(pasco_tensor_from(
	    &k, PASCO_F64, 2, (int64_t[]){D, 1}, (double[]){0.5, -2}, 16));
	PASCO_PASS(pasco_tensor_from(
	    &b, PASCO_F64, 1, (int64_t[]){1}, (double[]){0.25}, 8));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	nodes[0] = pasco_tape_watch(tp, k);
	nodes[1] = pasco_tape_watch(tp, b);
	loss     = pasco_model_loss(m, tp, &x, y, m->compile.loss, nodes);
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	v = pasco_tensor_get(pasco_tnode_value(loss), 0);
	PASCO_PASS(pasco_tape_gradient(tp, loss, 1, nodes, &g));
	gk[0] = pasco_tensor_get(g.dense, 0);
	gk[1] = pasco_tensor_get(g.dense, 1);
	pasco_tape_grad_fini(&g, 1);
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_tensor_release(k);
	pasco_tensor_release(b);
	return v;
}

Test(loss_weights, loss_weights_scale_the_loss_not_the_regularizers)
{
	double       half  = 0.5, g0[2], gr[2], gw[2];
	pasco_model *plain = mse_model(0, NULL, 0),
	            *reg   = mse_model(0.1, NULL, 0);
	pasco_model *w     = mse_model(0.1, &half, 1);
	double       base = mse_loss(plain, g0), lr = mse_loss(reg, gr);
	double       lw = mse_loss(w, gw);
	cr_assert(lr - base > 0.01, "the regularizer adds %g", lr - base);
	cr_assert_float_eq(lw, 0.5 * base + (lr - base), 1e-12,
	    "weighted %.17g; 0.5 * %.17g + %.17g", lw, base, lr - base);
	for (int j = 0; j < 2; j++) {
		cr_assert_float_eq(gw[j], 0.5 * g0[j] + (gr[j] - g0[j]), 1e-12,
		    "gradient %d: %.17g", j, gw[j]);
	}
	pasco_model_free(plain);
	pasco_model_free(reg);
	pasco_model_free(w);
}

Test(loss_weights, the_compile_config_keeps_loss_weights)
{
	double       q = 0.25;
	pasco_model *m = mse_model(0, &q, 1), *back;
	char        *json, *again, *edited;
	double       g[2];
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(strstr(json, "\"loss_weights\":0.25"), "%s", json);
	MODEL_PASS(pasco_model_from_json(json, &back));
	cr_assert(back->compile.has_loss_weight);
	cr_assert_float_eq(back->compile.loss_weight, 0.25, 0);
	cr_assert_float_eq(mse_loss(back, g), mse_loss(m, g), 1e-15);
	PASCO_PASS(pasco_model_to_json(back, &again));
	cr_assert_str_eq(json, again);
	free(again);
	pasco_model_free(back);
	/* Keras's other forms: a list of one, a dict keyed by the output */
	char named[96];
	snprintf(named, sizeof(named), "{\"%s\": 0.25}",
	    m->layers[m->nlayers - 1].name);
	const char *forms[] = {"[0.25]", named};
	for (int k = 0; k < 2; k++) {
		size_t len = strlen(json) + 64;
		char  *at  = strstr(json, "\"loss_weights\":0.25");
		edited     = malloc(len);
		snprintf(edited, len, "%.*s\"loss_weights\":%s%s",
		    (int) (at - json), json, forms[k],
		    at + strlen("\"loss_weights\":0.25"));
		MODEL_PASS(pasco_model_from_json(edited, &back));
		cr_assert_float_eq(
		    back->compile.loss_weight, 0.25, 0, "%s", forms[k]);
		pasco_model_free(back);
		free(edited);
	}
	/* refused: two weights for one output, a dict naming another
	 * output, a string */
	const char *bad[]  = {"[0.25, 1]", "{\"out\": 0.25}", "\"x\""};
	const char *says[] = {"2 entries", "names output 'out'", "a number"};
	for (int k = 0; k < 3; k++) {
		size_t len = strlen(json) + 64;
		char  *at  = strstr(json, "\"loss_weights\":0.25");
		edited     = malloc(len);
		snprintf(edited, len, "%.*s\"loss_weights\":%s%s",
		    (int) (at - json), json, bad[k],
		    at + strlen("\"loss_weights\":0.25"));
		PASCO_FAIL(pasco_model_from_json(edited, &back), PASCO_EINVAL);
		cr_assert(strstr(pasco_model_last_error(), says[k]), "%s: %s",
		    bad[k], pasco_model_last_error());
		free(edited);
	}
	free(json);
	pasco_model_free(m);
	/* in C: more weights than outputs, naming the count */
	PASCO_PASS(pasco_model_sequential(&m, D, 1,
	    (pasco_layer[]){pasco_layer_dense(1, PASCO_ACT_LINEAR)}, 7));
	PASCO_FAIL(
	    pasco_model_compile(m, &(pasco_compile_options){.loss = "mse",
	                               .loss_weights  = (double[]){1, 2, 3},
	                               .nloss_weights = 3}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "3 entries") &&
	              strstr(pasco_model_last_error(), "1 output"),
	    "%s", pasco_model_last_error());
	pasco_model_free(m);
}
