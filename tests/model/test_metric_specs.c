/* Compile's metrics with parameters (model/metric_spec.c, metric_counts.c):
 * a metric given as Keras serializes it ({"class_name": "AUC", "config":
 * {...}}) counts and computes Keras 3's value on the examples of Keras's
 * own documentation, logs under a unique name, writes back to a config
 * that reads the same, and a bad field is refused naming the metric and
 * the field. (The values against numpy, over a cluster:
 * tests/python/keras3_metrics.py.) */
#include "helpers.h"
#include "model_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* PASCO_PASS with the model's message */
TestSuite(metric_specs, .timeout = 30);

/* A model of output width w (one Dense layer), compiled with metrics. */
static pasco_model *
compiled(int64_t w, const char *loss, size_t n, const char *const *metrics)
{
	pasco_model *m;
	pasco_layer  l[] = {pasco_layer_dense(w, PASCO_ACT_LINEAR)};
	PASCO_PASS(pasco_model_sequential(&m, 2, 1, l, 1));
	MODEL_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){
	           .loss = loss, .metrics = metrics, .nmetrics = n}));
	return m;
}

static pasco_tensor *
f32(int64_t rows, int64_t cols, const float *v)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_F32, 2, (int64_t[]){rows, cols}, v, 4 * rows * cols));
	return t;
}

/* Metric k's result after counting pred against y once. */
static double
result_of(pasco_model *m, size_t k, pasco_tensor *pred, pasco_tensor *y)
{
	double *state = calloc(m->compile.state_len, sizeof(double));
	MODEL_PASS(pasci_metric_counts(m, pred, y, state));
	double r = pasci_metric_result(m, k, state);
	free(state);
	return r;
}

Test(metric_specs, keras_documented_values)
{
	const char *bin[] = {
	    "{\"class_name\": \"AUC\", \"config\": {\"num_thresholds\": 3}}",
	    "{\"class_name\": \"Precision\", \"config\": {}}",
	    "{\"class_name\": \"Recall\", \"config\": {\"thresholds\": 0.5}}",
	    "{\"class_name\": \"AUC\", \"config\": {\"num_thresholds\": 3, "
	    "\"curve\": \"PR\", \"summation_method\": \"majoring\"}}"};
	pasco_model  *m    = compiled(1, "mse", 4, bin);
	pasco_tensor *y    = f32(4, 1, (float[]){0, 0, 1, 1});
	pasco_tensor *p    = f32(4, 1, (float[]){0, 0.5f, 0.3f, 0.9f});
	pasco_tensor *p01  = f32(4, 1, (float[]){1, 0, 1, 1});
	pasco_tensor *y011 = f32(4, 1, (float[]){0, 1, 1, 1});
	/* AUC(num_thresholds=3): tp [2 1 0], fp [2 0 0]: 0.75 */
	cr_assert_float_eq(result_of(m, 0, p, y), 0.75, 1e-12);
	/* Precision: [0 1 1 1] vs [1 0 1 1]: 2/3; Recall 2/3 */
	cr_assert_float_eq(result_of(m, 1, p01, y011), 2.0 / 3, 1e-12);
	cr_assert_float_eq(result_of(m, 2, p01, y011), 2.0 / 3, 1e-12);
	/* PR majoring: recall [1 .5 0], precision [.5 1 0]: .5 * 1 + .5 * 1 */
	cr_assert_float_eq(result_of(m, 3, p, y), 1.0, 1e-12);
	pasco_model_free(m);

	/* top-k: ties go to the lower index, as Keras's top_k */
	const char *wide[] = {
	    "{\"class_name\": \"Precision\", \"config\": {\"top_k\": 2}}",
	    "{\"class_name\": \"Precision\", \"config\": {\"top_k\": 4}}"};
	m                  = compiled(4, "mse", 2, wide);
	pasco_tensor *ones = f32(1, 4, (float[]){1, 1, 1, 1});
	pasco_tensor *y4   = f32(1, 4, (float[]){0, 0, 1, 1});
	cr_assert_float_eq(result_of(m, 0, ones, y4), 0.0, 1e-12);
	cr_assert_float_eq(result_of(m, 1, ones, y4), 0.5, 1e-12);
	pasco_model_free(m);

	const char *cat[] = {"{\"class_name\": \"TopKCategoricalAccuracy\", "
	                     "\"config\": {\"k\": 1}}",
	    "{\"class_name\": \"TopKCategoricalAccuracy\", \"config\": "
	    "{\"k\": "
	    "2}}"};
	m                 = compiled(3, "mse", 2, cat);
	pasco_tensor *pc =
	    f32(2, 3, (float[]){0.1f, 0.9f, 0.8f, 0.05f, 0.95f, 0});
	pasco_tensor *onehot = f32(2, 3, (float[]){0, 0, 1, 0, 1, 0});
	cr_assert_float_eq(result_of(m, 0, pc, onehot), 0.5, 1e-12);
	cr_assert_float_eq(result_of(m, 1, pc, onehot), 1.0, 1e-12);
	pasco_model_free(m);

	const char *sparse[] = {
	    "{\"class_name\": \"SparseTopKCategoricalAccuracy\", \"config\": "
	    "{\"k\": 1}}",
	    "{\"class_name\": \"SparseTopKCategoricalAccuracy\", \"config\": "
	    "{\"k\": 1, \"from_sorted_ids\": true}}"};
	m                  = compiled(3, "mse", 2, sparse);
	pasco_tensor *ids  = f32(2, 1, (float[]){2, 1});
	pasco_tensor *sids = f32(2, 3, (float[]){1, 0, 3, 1, 2, 3});
	cr_assert_float_eq(result_of(m, 0, pc, ids), 0.5, 1e-12);
	cr_assert_float_eq(result_of(m, 1, sids, ids), 0.5, 1e-12);
	pasco_model_free(m);

	/* regression and crossentropy: Keras's examples */
	const char *reg[] = {"{\"class_name\": \"MeanSquaredError\"}",
	    "{\"class_name\": \"RootMeanSquaredError\"}",
	    "{\"class_name\": \"MeanAbsoluteError\"}",
	    "{\"class_name\": \"BinaryCrossentropy\"}"};
	m                 = compiled(2, "mse", 4, reg);
	pasco_tensor *yr  = f32(2, 2, (float[]){0, 1, 0, 0});
	pasco_tensor *pr  = f32(2, 2, (float[]){1, 1, 0, 0});
	pasco_tensor *pb  = f32(2, 2, (float[]){0.6f, 0.4f, 0.4f, 0.6f});
	cr_assert_float_eq(result_of(m, 0, pr, yr), 0.25, 1e-12);
	cr_assert_float_eq(result_of(m, 1, pr, yr), 0.5, 1e-12);
	cr_assert_float_eq(result_of(m, 2, pr, yr), 0.25, 1e-12);
	cr_assert_float_eq(result_of(m, 3, pb, yr), 0.81492424, 1e-6);
	pasco_model_free(m);
	pasco_tensor *all[] = {
	    y, p, p01, y011, ones, y4, pc, onehot, ids, sids, yr, pr, pb};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		pasco_tensor_release(all[i]);
	}
}

/* multi_label: one AUC per column, averaged or weighted by
 * label_weights; without it, label_weights weigh each column's counts.
 * Column 0 separates its labels (AUC 1), column 1 inverts them (0). */
Test(metric_specs, auc_of_several_labels)
{
	const char *ms[] = {
	    "{\"class_name\": \"AUC\", \"config\": {\"multi_label\": true}}",
	    "{\"class_name\": \"AUC\", \"config\": {\"multi_label\": true, "
	    "\"num_labels\": 2, \"label_weights\": [3, 1]}}",
	    "{\"class_name\": \"AUC\", \"config\": {\"label_weights\": [1, "
	    "0]}}"};
	pasco_model  *m = compiled(2, "mse", 3, ms), *back;
	pasco_tensor *y = f32(4, 2, (float[]){1, 1, 0, 0, 1, 0, 0, 0});
	pasco_tensor *p = f32(
	    4, 2, (float[]){0.9f, 0.1f, 0.2f, 0.8f, 0.6f, 0.3f, 0.1f, 0.7f});
	char *json;
	cr_assert_eq(m->compile.state_len, 2 * 1600 + 800);
	cr_assert_float_eq(result_of(m, 0, p, y), 0.5, 1e-12);
	cr_assert_float_eq(result_of(m, 1, p, y), 0.75, 1e-12);
	cr_assert_float_eq(result_of(m, 2, p, y), 1.0, 1e-12);
	PASCO_PASS(pasco_model_to_json(m, &json));
	MODEL_PASS(pasco_model_from_json(json, &back));
	cr_assert(back->compile.metric_specs[1].multi_label &&
	          back->compile.metric_specs[1].label_weights[0] == 3 &&
	          back->compile.metric_specs[2].nweights == 2);
	free(json);
	pasco_model_free(back);
	pasco_model_free(m);
	pasco_tensor_release(y);
	pasco_tensor_release(p);
}

Test(metric_specs, names_are_keras_and_unique_and_round_trip)
{
	const char  *ms[] = {"auc",
	     "{\"class_name\": \"AUC\", \"config\": "
	      "{\"curve\": \"pr\", \"thresholds\": [0.7, "
	      "0.2], \"name\": \"auc\"}}",
	     "{\"module\": \"keras.metrics\", \"class_name\": \"Precision\", "
	      "\"config\": {\"name\": \"p\", \"dtype\": \"float32\", "
	      "\"thresholds\": 0.3, \"top_k\": null, \"class_id\": null}, "
	      "\"registered_name\": null}",
	     "acc"};
	pasco_model *m    = compiled(1, "binary_crossentropy", 4, ms), *back;
	char        *json, *again;
	cr_assert_str_eq(m->compile.metric_names[0], "auc");
	cr_assert_str_eq(m->compile.metric_names[1], "auc_1");
	cr_assert_str_eq(m->compile.metric_names[2], "p");
	cr_assert_str_eq(m->compile.metric_names[3], "acc");
	/* the given thresholds, sorted, between Keras's two ends */
	cr_assert_eq(m->compile.metric_specs[1].nthresholds, 4);
	cr_assert_eq(m->compile.metric_specs[1].given[0], 0.2);
	cr_assert_eq(m->compile.state_len, 800 + 16 + 2 + 2);
	PASCO_PASS(pasco_model_to_json(m, &json));
	MODEL_PASS(pasco_model_from_json(json, &back));
	PASCO_PASS(pasco_model_to_json(back, &again));
	cr_assert_str_eq(json, again);
	cr_assert_str_eq(back->compile.metric_names[1], "auc_1");
	cr_assert_eq(back->compile.metric_specs[1].curve, PASCI_AUC_PR);
	cr_assert_eq(back->compile.metric_specs[2].given[0], 0.3);
	free(json);
	free(again);
	pasco_model_free(back);
	pasco_model_free(m);
}

static void
refused(int64_t width, const char *metric, const char *says)
{
	pasco_model *m;
	pasco_layer  l[] = {pasco_layer_dense(width, PASCO_ACT_LINEAR)};
	PASCO_PASS(pasco_model_sequential(&m, 2, 1, l, 1));
	PASCO_FAIL(
	    pasco_model_compile(m, &(pasco_compile_options){.loss = "mse",
	                               .metrics  = (const char *[]){metric},
	                               .nmetrics = 1}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), says) != NULL,
	    "%s: said '%s', not '%s'", metric, pasco_model_last_error(), says);
	pasco_model_free(m);
}

Test(metric_specs, bad_metrics_are_refused_naming_the_field)
{
	refused(1,
	    "{\"class_name\": \"AUC\", \"config\": {\"curve\": \"XY\"}}",
	    "compile: metrics[0] (AUC): curve must be \"ROC\", \"PR\" or "
	    "\"PRGAIN\", got \"XY\"");
	refused(1,
	    "{\"class_name\": \"AUC\", \"config\": {\"num_thresholds\": "
	    "5000}}",
	    "num_thresholds must be at most 2048");
	refused(1,
	    "{\"class_name\": \"AUC\", \"config\": {\"num_thresholds\": 1}}",
	    "num_thresholds must be an integer >= 2");
	refused(1,
	    "{\"class_name\": \"AUC\", \"config\": {\"summation_method\": 3}}",
	    "summation_method must be a string");
	refused(2,
	    "{\"class_name\": \"AUC\", \"config\": {\"multi_label\": true, "
	    "\"num_labels\": 3}}",
	    "num_labels 3: not the output's width");
	refused(2,
	    "{\"class_name\": \"AUC\", \"config\": {\"num_labels\": 2}}",
	    "num_labels 2: needed only when multi_label is true");
	refused(2,
	    "{\"class_name\": \"AUC\", \"config\": {\"label_weights\": [1]}}",
	    "label_weights must be null or a list of one weight per output "
	    "column (2;");
	refused(1,
	    "{\"class_name\": \"Precision\", \"config\": {\"thresholds\": "
	    "[0.1, "
	    "0.5]}}",
	    "give one threshold (2 given");
	refused(1,
	    "{\"class_name\": \"Precision\", \"config\": {\"thresholds\": "
	    "1.5}}",
	    "thresholds must be numbers in [0, 1]");
	refused(3,
	    "{\"class_name\": \"Recall\", \"config\": {\"class_id\": 3}}",
	    "class_id 3 is not below the output's width 3");
	refused(3, "{\"class_name\": \"Recall\", \"config\": {\"top_k\": 0}}",
	    "top_k must be an integer >= 1");
	refused(3,
	    "{\"class_name\": \"Recall\", \"config\": {\"top_k\": "
	    "3000000000}}",
	    "top_k must be at most 2147483647");
	refused(1, "{\"class_name\": \"Recall\", \"config\": {\"topk\": 1}}",
	    "topk");
	refused(1, "{\"class_name\": \"Mean\", \"config\": {}}",
	    "unknown metric class 'Mean'");
	refused(1,
	    "{\"class_name\": \"BinaryCrossentropy\", \"config\": "
	    "{\"label_smoothing\": 2}}",
	    "label_smoothing must be in [0, 1]");
	refused(1,
	    "{\"class_name\": \"TopKCategoricalAccuracy\", \"config\": "
	    "{\"k\": "
	    "0}}",
	    "k must be an integer >= 1");
	refused(1, "{\"class_name\": \"AUC\", \"config\": [1]}",
	    "config must be an object");
	refused(1, "{\"class_name\": \"AUC\"", "is not JSON");
	refused(1,
	    "{\"class_name\": \"AUC\", \"config\": {\"name\": "
	    "\"a_name_of_more_than_forty_bytes_is_too_long\"}}",
	    "name must be 1 to 39 bytes");
	refused(3, "precision", "precision takes one probability per example");
	refused(1, "top_5", "unknown metric 'top_5'");
}

/* A wide output: 64 rows of 4096 values j / 4096 (the last is the
 * largest), the last class the label. AUC of 2048 thresholds and
 * Precision's top_k count it in O(log T) per value and one sort per row
 * (0.3 s for this test; O(T) per value and O(w^2) per row took 24 s). */
Test(metric_specs, a_wide_output_counts_exactly)
{
	const int64_t n = 64, w = 4096;
	const char   *ms[] = {"{\"class_name\": \"AUC\", \"config\": "
	                        "{\"num_thresholds\": 2048}}",
	      "{\"class_name\": \"Precision\", \"config\": {\"top_k\": 2}}",
	      "{\"class_name\": \"Recall\", \"config\": {\"top_k\": 1}}"};
	pasco_model  *m    = compiled(w, "mse", 3, ms);
	float        *p    = malloc(sizeof(float) * n * w);
	float        *y    = calloc((size_t) (n * w), sizeof(float));
	for (int64_t i = 0; i < n; i++) {
		for (int64_t j = 0; j < w; j++) {
			p[i * w + j] = (float) j / (float) w;
		}
		y[i * w + w - 1] = 1;
	}
	pasco_tensor *pt = f32(n, w, p), *yt = f32(n, w, y);
	double       *s = calloc(m->compile.state_len, sizeof(double));
	MODEL_PASS(pasci_metric_counts(m, pt, yt, s));
	/* the counts at each threshold as Keras defines them (a value above
	 * the float32 threshold is positive), from one row times n */
	for (int t = 0; t < 2048; t++) {
		float  thr  = t == 0      ? -1e-7f
		              : t == 2047 ? (float) (1 + 1e-7)
		                          : (float) ((double) t / 2047);
		double c[4] = {0};
		for (int64_t j = 0; j < w; j++) {
			bool above = p[j] > thr, pos = j == w - 1;
			c[above ? (pos ? 0 : 1) : (pos ? 3 : 2)] += n;
		}
		for (int r = 0; r < 4; r++) {
			cr_assert_eq(s[r * 2048 + t], c[r],
			    "row %d threshold %d", r, t);
		}
	}
	/* top 2 of a row: the label and one other; top 1: the label */
	cr_assert_float_eq(pasci_metric_result(m, 1, s), 0.5, 1e-12);
	cr_assert_float_eq(pasci_metric_result(m, 2, s), 1.0, 1e-12);
	free(s);
	free(p);
	free(y);
	pasco_tensor_release(pt);
	pasco_tensor_release(yt);
	pasco_model_free(m);
}
