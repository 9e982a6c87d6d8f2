/* Per-example weights (Keras's sample_weight and class_weight): the
 * weighted loss of every loss kind is Keras's "sum_over_batch_size" of the
 * weighted per-example losses, sum_i(w_i * L_i) / batch, and its gradient
 * w_i / batch times example i's own (each L_i the kind's loss of example
 * i alone, the unweighted op that tests/python/losses_numpy.py checks
 * against numpy); compile's weighted_metrics count with the weights,
 * named as Keras names them, and round-trip in the compile config; a
 * dataset element (x, y, sample_weight) is taken apart; and a files
 * dataset's "sample_weight" and "class_weight" yield those triples.
 * (Against numpy on a launched cluster: tests/python/sample_weights.py.)
 */
#include "files_dataset.h"
#include "helpers.h"
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TestSuite(sample_weights, .timeout = 30);

#define B 4
#define C 3

static pasco_tensor *
f64(int32_t rank, const int64_t *shape, const double *v)
{
	pasco_tensor *t;
	int64_t       n = 1;
	for (int32_t i = 0; i < rank; i++) {
		n *= shape[i];
	}
	PASCO_PASS(pasco_tensor_from(&t, PASCO_F64, rank, shape, v, 8 * n));
	return t;
}

/* Loss of pred (rows r0..r0+n) against labels, weighted by w (may be
 * NULL); its value, and the gradient into g (n * C). */
static double
loss_and_grad(const pasco_loss *l, const double *pred, int64_t r0, int64_t n,
    const pasco_tensor *labels, const double *w, double *g)
{
	pasco_tape     *tp;
	pasco_tape_grad gr;
	pasco_tensor   *p = f64(2, (int64_t[]){n, C}, pred + r0 * C);
	pasco_tensor   *y = NULL, *sw = NULL;
	bool            ids = labels->dtype == PASCO_I64;
	const char     *lb  = labels->data;
	size_t          esz = ids ? 8 : 8 * C;
	PASCO_PASS(pasco_tensor_from(&y, labels->dtype, ids ? 1 : 2,
	    ids ? (int64_t[]){n} : (int64_t[]){n, C}, lb + r0 * esz,
	    esz * (size_t) n));
	if (w != NULL) {
		sw = f64(1, (int64_t[]){n}, w + r0);
	}
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *x = pasco_tape_watch(tp, p);
	pasco_tnode *v = pasco_t_loss_weighted(tp, l, x, y, sw);
	cr_assert_not_null(v, "%s", pasco_tape_message(tp));
	double value = pasco_tensor_get(pasco_tnode_value(v), 0);
	PASCO_PASS(pasco_tape_gradient(tp, v, 1, &x, &gr));
	for (int64_t i = 0; i < n * C; i++) {
		g[i] = pasco_tensor_get(gr.dense, i);
	}
	pasco_tape_grad_fini(&gr, 1);
	pasco_tape_free(tp);
	pasco_tensor_release(p);
	pasco_tensor_release(y);
	pasco_tensor_release(sw);
	return value;
}

Test(sample_weights, each_loss_is_the_weighted_sum_over_the_batch_size)
{
	static const struct {
		pasco_loss_kind kind;
		bool            logits, ids;
	} kinds[] = {{PASCO_LOSS_MSE, false, false},
	    {PASCO_LOSS_BINARY_CROSSENTROPY, false, false},
	    {PASCO_LOSS_BINARY_CROSSENTROPY, true, false},
	    {PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, true, true},
	    {PASCO_LOSS_CATEGORICAL_CROSSENTROPY, true, false},
	    {PASCO_LOSS_CATEGORICAL_CROSSENTROPY, false, false},
	    {PASCO_LOSS_MAE, false, false}, {PASCO_LOSS_HUBER, false, false},
	    {PASCO_LOSS_LOG_COSH, false, false},
	    {PASCO_LOSS_HINGE, false, false},
	    {PASCO_LOSS_KL_DIVERGENCE, false, false},
	    {PASCO_LOSS_POISSON, false, false},
	    {PASCO_LOSS_COSINE_SIMILARITY, false, false},
	    {PASCO_LOSS_BINARY_FOCAL_CROSSENTROPY, false, false}};
	/* probabilities in (0, 1), so every kind takes them */
	const double pred[B * C] = {
	    0.2, 0.7, 0.1, 0.6, 0.3, 0.9, 0.05, 0.5, 0.45, 0.8, 0.15, 0.35};
	const double  onehot[B * C] = {0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0};
	const double  w[B]          = {0.5, 2, 0, 1.25};
	pasco_tensor *dense         = f64(2, (int64_t[]){B, C}, onehot);
	pasco_tensor *ids;
	PASCO_PASS(pasco_tensor_from(&ids, PASCO_I64, 1, (int64_t[]){B},
	    (int64_t[]){1, 0, 2, 0}, 8 * B));
	for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
		pasco_loss l = {.kind = kinds[k].kind,
		    .from_logits      = kinds[k].logits,
		    .delta            = 0.3,
		    .alpha            = 0.25,
		    .gamma            = 2,
		    .axis             = -1};
		double     g[B * C], gi[C], want = 0;
		double     got = loss_and_grad(
		        &l, pred, 0, B, kinds[k].ids ? ids : dense, w, g);
		for (int64_t i = 0; i < B; i++) {
			double li = loss_and_grad(&l, pred, i, 1,
			    kinds[k].ids ? ids : dense, NULL, gi);
			want += w[i] * li / B;
			for (int64_t j = 0; j < C; j++) {
				cr_assert_float_eq(g[i * C + j],
				    w[i] / B * gi[j], 1e-12,
				    "kind %d: d/dpred[%lld, %lld] %g, want %g",
				    (int) l.kind, (long long) i, (long long) j,
				    g[i * C + j], w[i] / B * gi[j]);
			}
		}
		cr_assert_float_eq(got, want, 1e-12,
		    "kind %d: loss %.17g, want %.17g", (int) l.kind, got,
		    want);
	}
	pasco_tensor_release(dense);
	pasco_tensor_release(ids);
}

Test(sample_weights, weights_that_do_not_fit_are_refused_naming_the_shapes)
{
	pasco_loss    l  = {.kind = PASCO_LOSS_MSE};
	pasco_tensor *p  = f64(2, (int64_t[]){B, C}, (double[B * C]){0});
	pasco_tensor *y  = f64(2, (int64_t[]){B, C}, (double[B * C]){0});
	pasco_tensor *sw = f64(1, (int64_t[]){3}, (double[]){1, 1, 1});
	pasco_tape   *tp;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	cr_assert_null(
	    pasco_t_loss_weighted(tp, &l, pasco_tape_watch(tp, p), y, sw));
	cr_assert(strstr(pasco_tape_message(tp), "sample weights f64[3]") &&
	              strstr(pasco_tape_message(tp), "[4,3]"),
	    "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
	pasco_tensor_release(p);
	pasco_tensor_release(y);
	pasco_tensor_release(sw);
}

static pasco_model *
compiled(const char *const *metrics, size_t n, const char *const *weighted,
    size_t nw)
{
	pasco_model *m;
	pasco_layer  l[] = {pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	PASCO_PASS(pasco_model_sequential(&m, 2, 1, l, 1));
	MODEL_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){.loss = "binary_crossentropy",
	           .metrics                   = metrics,
	           .nmetrics                  = n,
	           .weighted_metrics          = weighted,
	           .nweighted_metrics         = nw}));
	return m;
}

Test(sample_weights, weighted_metrics_count_with_the_weights)
{
	const char   *ms[] = {"accuracy"};
	const char   *ws[] = {"accuracy", "mse",
	      "{\"class_name\": \"Precision\", \"config\": {}}"};
	pasco_model  *m    = compiled(ms, 1, ws, 3);
	pasco_tensor *pred =
	    f64(2, (int64_t[]){4, 1}, (double[]){0.9, 0.2, 0.6, 0.4});
	pasco_tensor *y  = f64(2, (int64_t[]){4, 1}, (double[]){1, 1, 0, 0});
	pasco_tensor *sw = f64(1, (int64_t[]){4}, (double[]){1, 3, 0.5, 2});
	double       *s  = calloc(m->compile.state_len, sizeof(double));
	cr_assert_eq(m->compile.nmetrics, 4);
	cr_assert_str_eq(m->compile.metric_names[0], "accuracy");
	cr_assert_str_eq(m->compile.metric_names[1], "weighted_accuracy");
	cr_assert_str_eq(m->compile.metric_names[2], "mse");
	cr_assert_str_eq(m->compile.metric_names[3], "precision");
	MODEL_PASS(pasci_metric_counts_weighted(m, pred, y, sw, s));
	/* hits 1 0 0 1: unweighted 2/4; weighted (1 + 2) / 6.5 */
	cr_assert_float_eq(pasci_metric_result(m, 0, s), 0.5, 1e-12);
	cr_assert_float_eq(pasci_metric_result(m, 1, s), 3 / 6.5, 1e-12);
	cr_assert_float_eq(pasci_metric_result(m, 2, s),
	    (0.01 + 3 * 0.64 + 0.5 * 0.36 + 2 * 0.16) / 6.5, 1e-12);
	/* predicted positive: rows 0 (tp, w 1) and 2 (fp, w 0.5) */
	cr_assert_float_eq(pasci_metric_result(m, 3, s), 1 / 1.5, 1e-12);
	/* no weights: every example once, weighted or not */
	memset(s, 0, m->compile.state_len * sizeof(double));
	MODEL_PASS(pasci_metric_counts_weighted(m, pred, y, NULL, s));
	cr_assert_float_eq(pasci_metric_result(m, 1, s), 0.5, 1e-12);
	free(s);
	pasco_tensor_release(pred);
	pasco_tensor_release(y);
	pasco_tensor_release(sw);
	pasco_model_free(m);
}

Test(sample_weights, the_compile_config_keeps_weighted_metrics)
{
	const char  *ms[] = {"accuracy"};
	const char  *ws[] = {"accuracy", "mae"};
	pasco_model *m    = compiled(ms, 1, ws, 2), *back;
	char        *json, *again;
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(strstr(json, "\"weighted_metrics\":[\"accuracy\",\"mae\"]"),
	    "%s", json);
	MODEL_PASS(pasco_model_from_json(json, &back));
	cr_assert_eq(back->compile.nmetrics, 3);
	cr_assert(!back->compile.metric_weighted[0] &&
	          back->compile.metric_weighted[1] &&
	          back->compile.metric_weighted[2]);
	cr_assert_str_eq(back->compile.metric_names[1], "weighted_accuracy");
	PASCO_PASS(pasco_model_to_json(back, &again));
	cr_assert_str_eq(json, again);
	free(json);
	free(again);
	pasco_model_free(back);
	pasco_model_free(m);
	/* more than 8 together is refused, naming both */
	const char *nine[9] = {
	    "mae", "mae", "mae", "mae", "mae", "mae", "mae", "mae", "mae"};
	PASCO_PASS(pasco_model_sequential(&m, 2, 1,
	    (pasco_layer[]){pasco_layer_dense(1, PASCO_ACT_SIGMOID)}, 1));
	PASCO_FAIL(
	    pasco_model_compile(m, &(pasco_compile_options){.loss = "mse",
	                               .metrics                   = nine,
	                               .nmetrics                  = 4,
	                               .weighted_metrics          = nine,
	                               .nweighted_metrics         = 5}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "weighted_metrics"), "%s",
	    pasco_model_last_error());
	pasco_model_free(m);
}

Test(sample_weights, an_element_x_y_sample_weight_is_taken_apart)
{
	pasco_model        *m = compiled(NULL, 0, NULL, 0);
	const pasco_tensor *in[1], *y, *sw;
	pasco_tensor *x = f64(2, (int64_t[]){2, 2}, (double[]){1, 2, 3, 4});
	pasco_tensor *t = f64(1, (int64_t[]){2}, (double[]){0, 1});
	pasco_tensor *w = f64(1, (int64_t[]){2}, (double[]){0.5, 2});
	pasco_value  *e =
	    pasco_value_list(3, pasco_value_tensor(pasco_tensor_hold(x)),
	        pasco_value_tensor(pasco_tensor_hold(t)),
	        pasco_value_tensor(pasco_tensor_hold(w)));
	MODEL_PASS(pasci_model_element(m, e, true, in, &y, &sw));
	cr_assert(in[0] == x && y == t && sw == w);
	pasco_value_free(e);
	/* a NONE third item is no weights */
	e = pasco_value_list(3, pasco_value_tensor(pasco_tensor_hold(x)),
	    pasco_value_tensor(pasco_tensor_hold(t)), pasco_value_none());
	MODEL_PASS(pasci_model_element(m, e, true, in, &y, &sw));
	cr_assert_null(sw);
	pasco_value_free(e);
	/* [batch, T] passes (one weight per step of a sequence output: the
	 * loss and the metrics check it against the output) */
	e = pasco_value_list(3, pasco_value_tensor(pasco_tensor_hold(x)),
	    pasco_value_tensor(pasco_tensor_hold(t)),
	    pasco_value_tensor(pasco_tensor_hold(x)));
	MODEL_PASS(pasci_model_element(m, e, true, in, &y, &sw));
	cr_assert(sw == x);
	pasco_value_free(e);
	/* a scalar or a u8 tensor is refused, naming it */
	pasco_tensor *s0;
	PASCO_PASS(pasco_tensor_alloc(&s0, PASCO_F64, 0, NULL));
	e = pasco_value_list(3, pasco_value_tensor(pasco_tensor_hold(x)),
	    pasco_value_tensor(pasco_tensor_hold(t)), pasco_value_tensor(s0));
	PASCO_FAIL(pasci_model_element(m, e, true, in, &y, &sw), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "sample_weight") &&
	              strstr(pasco_model_last_error(), "f64[]"),
	    "%s", pasco_model_last_error());
	pasco_value_free(e);
	pasco_tensor_release(x);
	pasco_tensor_release(t);
	pasco_tensor_release(w);
	pasco_model_free(m);
}

/* The first element of the csv dataset of spec's extra fields. */
static int
first_element(const char *file, const char *extra, pasco_value **e)
{
	char                  spec[1024];
	pasco_dataset_context ctx = {0, 1, 0, NULL};
	pasco_dataset        *ds;
	int                   rv;
	snprintf(spec, sizeof(spec),
	    "{\"format\":\"csv\",\"files\":[\"%s\"],\"label\":\"label\","
	    "\"batch_size\":3,\"features\":{\"a\":{\"type\":\"float\"},"
	    "\"w\":{\"type\":\"float\"}}%s}",
	    file, extra);
	if ((rv = pasci_files_dataset(spec, &ctx, &ds)) != 0) {
		return rv;
	}
	rv = pasco_dataset_next(ds, e);
	pasco_dataset_free(ds);
	return rv;
}

Test(sample_weights, a_files_dataset_yields_sample_and_class_weights)
{
	char         dir[] = "/tmp/pasco-sw-XXXXXX", file[64];
	pasco_value *e;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/t.csv", dir);
	FILE *f = fopen(file, "w");
	fprintf(f, "a,w,label\n1,0.5,0\n2,2,1\n3,4,2\n");
	fclose(f);
	/* sample_weight: the feature w moves out of x */
	PASCO_PASS(first_element(file, ",\"sample_weight\":\"w\"", &e));
	cr_assert_eq(pasco_value_size(e), 3);
	cr_assert_null(pasco_value_get(pasco_value_item(e, 0), "w"));
	cr_assert_not_null(pasco_value_get(pasco_value_item(e, 0), "a"));
	const pasco_tensor *w = pasco_value_as_tensor(pasco_value_item(e, 2));
	cr_assert(w != NULL && w->count == 3);
	cr_assert(pasco_tensor_get(w, 0) == 0.5 &&
	          pasco_tensor_get(w, 1) == 2 && pasco_tensor_get(w, 2) == 4);
	pasco_value_free(e);
	/* class_weight: the weight of each label's class, 1 when not named */
	PASCO_PASS(
	    first_element(file, ",\"class_weight\":{\"0\":0.25,\"1\":3}", &e));
	w = pasco_value_as_tensor(pasco_value_item(e, 2));
	cr_assert(w != NULL && w->count == 3);
	cr_assert(pasco_tensor_get(w, 0) == 0.25 &&
	              pasco_tensor_get(w, 1) == 3 &&
	              pasco_tensor_get(w, 2) == 1,
	    "%g %g %g", pasco_tensor_get(w, 0), pasco_tensor_get(w, 1),
	    pasco_tensor_get(w, 2));
	cr_assert_not_null(pasco_value_get(pasco_value_item(e, 0), "w"));
	pasco_value_free(e);
	/* both, as Keras, and a bad class id are refused */
	PASCO_FAIL(
	    first_element(file,
	        ",\"sample_weight\":\"w\",\"class_weight\":{\"0\":1}", &e),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(), "at the same time"));
	PASCO_FAIL(first_element(file, ",\"class_weight\":{\"x\":1}", &e),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(), "'x'"), "%s",
	    pasco_dataset_last_error());
	/* a weight feature that x lacks is named */
	PASCO_FAIL(
	    first_element(file, ",\"sample_weight\":\"v\"", &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(), "'v'"), "%s",
	    pasco_dataset_last_error());
	unlink(file);
	rmdir(dir);
}
