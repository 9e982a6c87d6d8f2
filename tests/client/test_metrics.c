/* Metrics accumulated on a ps, from several updates. */
#include "helpers.h"
#include "pasco/metrics.h"
#include "pasco/model.h"

#include <math.h>

TestSuite(metrics, .timeout = 30);

static test_cluster    tc;
static pasco_strategy *strategy;

static pasco_variable *
metric(const char *name, pasco_metric_kind kind)
{
	pasco_variable   *v;
	pasco_initializer zeros = pasco_init_zeros();
	int32_t           rank;
	int64_t           shape[2];
	pasco_metric_state_shape(kind, &rank, shape);
	PASCO_PASS(pasco_variable_create_init(
	    &v, strategy, name, PASCO_F64, rank, shape, &zeros));
	return v;
}

static pasco_tensor *
f32s(const float *x, int64_t n)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_F32, 1, &n, x, sizeof(float) * (size_t) n));
	return t;
}

Test(metrics, mean_accuracy_and_auc_accumulate_across_updates)
{
	test_cluster_start(&tc, 1, 1);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, NULL));
	pasco_variable *mean = metric("mean", PASCO_METRIC_MEAN);
	pasco_variable *acc  = metric("acc", PASCO_METRIC_ACCURACY);
	pasco_variable *auc  = metric("auc", PASCO_METRIC_AUC);
	pasco_tensor   *p1   = f32s((float[]){0.1f, 0.4f}, 2),
	             *y1     = f32s((float[]){0, 0}, 2);
	pasco_tensor *p2     = f32s((float[]){0.35f, 0.8f}, 2),
	             *y2     = f32s((float[]){1, 1}, 2);
	double r;

	PASCO_PASS(pasco_metric_result(acc, PASCO_METRIC_ACCURACY, &r));
	cr_assert(isnan(r), "nothing added yet");
	PASCO_PASS(pasco_metric_update(mean, PASCO_METRIC_MEAN, p1, NULL));
	PASCO_PASS(pasco_metric_update(mean, PASCO_METRIC_MEAN, p2, NULL));
	PASCO_PASS(pasco_metric_result(mean, PASCO_METRIC_MEAN, &r));
	cr_assert_float_eq(r, (0.1 + 0.4 + 0.35 + 0.8) / 4, 1e-6);
	PASCO_PASS(pasco_metric_update(acc, PASCO_METRIC_ACCURACY, p1, y1));
	PASCO_PASS(pasco_metric_update(acc, PASCO_METRIC_ACCURACY, p2, y2));
	PASCO_PASS(pasco_metric_result(acc, PASCO_METRIC_ACCURACY, &r));
	cr_assert_float_eq(r, 0.75, 1e-12); /* 0.35 with label 1 is wrong */
	/* sklearn's roc_auc_score([0,0,1,1], [.1,.4,.35,.8]) = 0.75 */
	PASCO_PASS(pasco_metric_update(auc, PASCO_METRIC_AUC, p1, y1));
	PASCO_PASS(pasco_metric_update(auc, PASCO_METRIC_AUC, p2, y2));
	PASCO_PASS(pasco_metric_result(auc, PASCO_METRIC_AUC, &r));
	cr_assert_float_eq(r, 0.75, 1e-3);
	PASCO_PASS(pasco_metric_reset(acc));
	PASCO_PASS(pasco_metric_update(acc, PASCO_METRIC_ACCURACY, p2, y1));
	PASCO_PASS(pasco_metric_result(acc, PASCO_METRIC_ACCURACY, &r));
	cr_assert_float_eq(r, 0.5, 1e-12);
	PASCO_FAIL(pasco_metric_update(acc, PASCO_METRIC_ACCURACY, p1, NULL),
	    PASCO_EINVAL);
	pasco_tensor *all[] = {p1, y1, p2, y2};
	for (int i = 0; i < 4; i++) {
		pasco_tensor_release(all[i]);
	}
	pasco_variable_free(mean);
	pasco_variable_free(acc);
	pasco_variable_free(auc);
	pasco_strategy_destroy(strategy);
	test_cluster_stop(&tc);
}

/* ---- Keras 3's metric objects (pasco_metric_create) ---- */

static pasco_variable *
object_state(const char *name, const pasco_metric *mt)
{
	pasco_variable   *v;
	pasco_initializer zeros = pasco_init_zeros();
	int64_t           n     = pasco_metric_state_len(mt);
	PASCO_PASS(pasco_variable_create_init(
	    &v, strategy, name, PASCO_F64, 1, &n, &zeros));
	return v;
}

static pasco_metric *
object(const char *spec, int64_t width, const char *loss)
{
	pasco_metric *mt;
	int           rv = pasco_metric_create(&mt, spec, width, loss);
	cr_assert_eq(rv, 0, "%s: %s", spec, pasco_model_last_error());
	return mt;
}

Test(metrics, objects_take_keras_parameters_and_accumulate_on_the_ps)
{
	test_cluster_start(&tc, 1, 1);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, NULL));
	pasco_metric *prec = object("{\"class_name\": \"Precision\", "
	                            "\"config\": {\"thresholds\": 0.3}}",
	    1, NULL);
	pasco_metric *roc  = object("auc", 1, NULL);
	pasco_metric *rmse =
	    object("{\"class_name\": \"RootMeanSquaredError\", "
	           "\"config\": {}}",
	        1, NULL);
	pasco_metric   *top2 = object("{\"class_name\": "
	                                "\"SparseTopKCategoricalAccuracy\", "
	                                "\"config\": {\"k\": 2}}",
	      3, NULL);
	pasco_variable *sp   = object_state("prec", prec),
	               *sa   = object_state("roc", roc),
	               *sr   = object_state("rmse", rmse),
	               *st   = object_state("top2", top2);
	pasco_tensor *p1     = f32s((float[]){0.1f, 0.4f}, 2),
	             *y1     = f32s((float[]){0, 0}, 2);
	pasco_tensor *p2     = f32s((float[]){0.35f, 0.8f}, 2),
	             *y2     = f32s((float[]){1, 1}, 2);
	pasco_tensor *p3, *y3;
	double        r;
	cr_assert_str_eq(pasco_metric_name(prec), "precision");
	cr_assert_str_eq(
	    pasco_metric_name(top2), "sparse_top_k_categorical_accuracy");
	/* two updates, as two workers' batches */
	PASCO_PASS(pasco_metric_add(sp, prec, p1, y1));
	PASCO_PASS(pasco_metric_add(sp, prec, p2, y2));
	PASCO_PASS(pasco_metric_value(sp, prec, &r));
	/* Keras's: p > 0.3 is positive: 0.4 (false), 0.35, 0.8 (true) */
	cr_assert_float_eq(r, 2.0 / 3, 1e-12);
	PASCO_PASS(pasco_metric_add(sa, roc, p1, y1));
	PASCO_PASS(pasco_metric_add(sa, roc, p2, y2));
	PASCO_PASS(pasco_metric_value(sa, roc, &r));
	cr_assert_float_eq(r, 0.75, 1e-3); /* sklearn's roc_auc_score */
	PASCO_PASS(pasco_metric_add(sr, rmse, p1, y1));
	PASCO_PASS(pasco_metric_add(sr, rmse, p2, y2));
	PASCO_PASS(pasco_metric_value(sr, rmse, &r));
	cr_assert_float_eq(
	    r, sqrt((0.01 + 0.16 + 0.65 * 0.65 + 0.04) / 4), 1e-6);
	/* [2, 3] scores, class ids: row 0's 2nd best is class 2 (in), row
	 * 1's true class 0 is its worst (out) */
	p3           = f32s((float[]){0.5f, 0.1f, 0.4f, 0.1f, 0.5f, 0.4f}, 6);
	p3->rank     = 2;
	p3->shape[0] = 2;
	p3->shape[1] = 3;
	y3           = f32s((float[]){2, 0}, 2);
	PASCO_PASS(pasco_metric_add(st, top2, p3, y3));
	PASCO_PASS(pasco_metric_value(st, top2, &r));
	cr_assert_float_eq(r, 0.5, 1e-12);
	/* a prediction of another width, a state of another length */
	PASCO_FAIL(pasco_metric_add(st, top2, p1, y1), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "predictions [2] are not [batch, 3]"),
	    "%s", pasco_model_last_error());
	PASCO_FAIL(pasco_metric_value(sp, roc, &r), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "auc: its state is f64"),
	    "%s", pasco_model_last_error());
	PASCO_PASS(pasco_metric_reset(sp));
	PASCO_PASS(pasco_metric_value(sp, prec, &r));
	cr_assert_float_eq(r, 0, 1e-12, "Keras's divide_no_nan");
	pasco_tensor *all[] = {p1, y1, p2, y2, p3, y3};
	for (int i = 0; i < 6; i++) {
		pasco_tensor_release(all[i]);
	}
	pasco_variable *vs[] = {sp, sa, sr, st};
	for (int i = 0; i < 4; i++) {
		pasco_variable_free(vs[i]);
	}
	pasco_metric_destroy(prec);
	pasco_metric_destroy(roc);
	pasco_metric_destroy(rmse);
	pasco_metric_destroy(top2);
	pasco_strategy_destroy(strategy);
	test_cluster_stop(&tc);
}

Test(metrics, a_bad_object_is_refused_naming_its_field_and_sum_adds)
{
	pasco_metric *mt = (pasco_metric *) 1;
	PASCO_FAIL(pasco_metric_create(&mt,
	               "{\"class_name\": \"AUC\", \"config\": {\"curve\": "
	               "\"XY\"}}",
	               1, NULL),
	    PASCO_EINVAL);
	cr_assert_null(mt);
	cr_assert(strstr(pasco_model_last_error(), "curve"), "%s",
	    pasco_model_last_error());
	PASCO_FAIL(pasco_metric_create(&mt, "auc", 0, NULL), PASCO_EINVAL);
	PASCO_FAIL(pasco_metric_create(&mt, "nope", 1, NULL), PASCO_EINVAL);
	pasco_metric_destroy(NULL);

	test_cluster_start(&tc, 1, 1);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, NULL));
	pasco_variable *sum = metric("sum", PASCO_METRIC_SUM);
	pasco_tensor   *p   = f32s((float[]){1.5f, -0.25f}, 2);
	double          r;
	PASCO_PASS(pasco_metric_result(sum, PASCO_METRIC_SUM, &r));
	cr_assert_float_eq(r, 0, 1e-12, "Keras's Sum of nothing");
	PASCO_PASS(pasco_metric_update(sum, PASCO_METRIC_SUM, p, NULL));
	PASCO_PASS(pasco_metric_update(sum, PASCO_METRIC_SUM, p, NULL));
	PASCO_PASS(pasco_metric_result(sum, PASCO_METRIC_SUM, &r));
	cr_assert_float_eq(r, 2.5, 1e-12);
	pasco_tensor_release(p);
	pasco_variable_free(sum);
	pasco_strategy_destroy(strategy);
	test_cluster_stop(&tc);
}
