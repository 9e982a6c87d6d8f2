/*
 * Metrics whose state lives in a variable on a ps, so every worker adds its
 * batches' counts (assign_add) and anyone reads the result.
 *
 * Metric objects (issue 33): Keras 3's metrics with their parameters, as
 * a compiled model takes them (pasco_compile_options.metrics in model.h):
 * AUC(num_thresholds, curve "ROC" | "PR", summation_method, thresholds,
 * multi_label, from_logits), Precision and Recall (thresholds, top_k,
 * class_id), TopKCategoricalAccuracy and SparseTopKCategoricalAccuracy
 * (k), MeanSquaredError, RootMeanSquaredError, MeanAbsoluteError,
 * BinaryCrossentropy (from_logits, label_smoothing), BinaryAccuracy
 * (threshold), (Sparse)CategoricalAccuracy, or their names:
 *
 *     pasco_metric *auc;
 *     pasco_metric_create(&auc, "{"class_name": "AUC", "config": "
 *         "{"num_thresholds": 50, "curve": "PR"}}", 1, NULL);
 *     int64_t n = pasco_metric_state_len(auc);
 *     pasco_tensor *zeros;                 // its state: f64 [n] zeros
 *     pasco_tensor_alloc(&zeros, PASCO_F64, 1, &n);
 *     pasco_variable *state;               // on a ps (coordinator.h)
 *     pasco_variable_create(&state, strategy, "pr_auc", zeros);
 *     pasco_metric_add(state, auc, probabilities, labels); // any worker
 *     double v;
 *     pasco_metric_value(state, auc, &v);
 *     pasco_metric_reset(state);                          // zeroes it
 *
 * The older kinds below remain: MEAN (of values), SUM (Keras's Sum),
 * ACCURACY (BinaryAccuracy at 0.5) and AUC (ROC, 200 thresholds,
 * trapezoid rule): their states are f64 [2] (total, count) and [4, 200]
 * (true positives, false positives, true negatives, false negatives per
 * threshold). Keras's Mean and Sum have no metric object here: they take
 * values, not predictions and labels (use MEAN and SUM).
 */
#ifndef PASCO_METRICS_H
#define PASCO_METRICS_H

#include "error.h"
#include "tensor.h"
#include "variable.h"

typedef enum pasco_metric_kind {
	PASCO_METRIC_MEAN     = 1,
	PASCO_METRIC_ACCURACY = 2,
	PASCO_METRIC_AUC      = 3,
	PASCO_METRIC_SUM      = 4, /* Keras's Sum: of values, as MEAN */
} pasco_metric_kind;

#define PASCO_AUC_THRESHOLDS 200

/* The state shape of a metric kind (rank and shape[2]). */
void pasco_metric_state_shape(
    pasco_metric_kind kind, int32_t *rank, int64_t *shape);

/* Adds a batch: MEAN and SUM take values (labels NULL); ACCURACY and AUC take
 * predicted probabilities and labels in {0, 1} (f32, same count). One
 * assign_add on the ps. Blocks. */
int pasco_metric_update(pasco_variable *state, pasco_metric_kind kind,
    const pasco_tensor *pred, const pasco_tensor *labels);

/* Reads the state and computes the metric (NaN when nothing was added). */
int pasco_metric_result(
    pasco_variable *state, pasco_metric_kind kind, double *out);

/* Zeroes the state (of any metric, objects' included). */
int pasco_metric_reset(pasco_variable *state);

/* ---- metric objects ---- */

typedef struct pasco_metric pasco_metric;

/* A Keras 3 metric object for predictions [batch, width]: spec is a name
 * ("auc", "precision", "mae", "accuracy", ...) or a metric object's JSON
 * as Keras serializes it, {"class_name": "Precision", "config":
 * {"thresholds": 0.3}}, read as pasco_compile_options.metrics reads it;
 * a name depending on the loss ("accuracy": binary for
 * "binary_crossentropy", sparse categorical for
 * "sparse_categorical_crossentropy") resolves against loss (a Keras loss
 * name; NULL: "mse"). *out NULL on failure: PASCO_EINVAL with
 * pasco_model_last_error naming the field, PASCO_ENOMEM. Free with
 * pasco_metric_destroy (NULL is a no-op). Thread-safe. */
int pasco_metric_create(
    pasco_metric **out, const char *spec, int64_t width, const char *loss);
void pasco_metric_destroy(pasco_metric *mt);

/* Its name as Keras logs it ("auc", "precision", ...). Thread-safe. */
const char *pasco_metric_name(const pasco_metric *mt);

/* The length n of its state, an f64 [n] variable created zeroed. */
int64_t pasco_metric_state_len(const pasco_metric *mt);

/* Adds a batch's counts to state with one assign_add: pred [batch, width]
 * (or [batch] of width 1), labels as Keras's metric takes them (class
 * ids [batch] for the sparse ones, else pred's count). PASCO_EINVAL with
 * pasco_model_last_error naming the metric and the shapes; the
 * variable's error. Blocks. Thread-safe. */
int pasco_metric_add(pasco_variable *state, const pasco_metric *mt,
    const pasco_tensor *pred, const pasco_tensor *labels);

/* Reads state and computes the metric's value into *out (with nothing
 * added: NaN for a mean, 0 where Keras divides with divide_no_nan).
 * PASCO_EINVAL for a state of another dtype or length. Blocks.
 * Thread-safe. */
int pasco_metric_value(
    pasco_variable *state, const pasco_metric *mt, double *out);

#endif
