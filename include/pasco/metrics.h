/*
 * Metrics whose state lives in a variable on a ps, so every worker adds its
 * batches' counts (assign_add) and anyone reads the result: Keras's Mean,
 * BinaryAccuracy (threshold 0.5) and AUC (ROC, 200 thresholds, trapezoid
 * rule). States are f64: MEAN and ACCURACY [2] (total, count); AUC
 * [4, 200] (true positives, false positives, true negatives, false
 * negatives per threshold).
 * A compiled model's metrics take Keras 3's parameters instead (AUC's
 * num_thresholds, curve and summation, Precision's thresholds, top_k and
 * class_id, ...): pasco_compile_options.metrics in model.h.
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
} pasco_metric_kind;

#define PASCO_AUC_THRESHOLDS 200

/* The state shape of a metric kind (rank and shape[2]). */
void pasco_metric_state_shape(
    pasco_metric_kind kind, int32_t *rank, int64_t *shape);

/* Adds a batch: MEAN takes values (labels NULL); ACCURACY and AUC take
 * predicted probabilities and labels in {0, 1} (f32, same count). One
 * assign_add on the ps. Blocks. */
int pasco_metric_update(pasco_variable *state, pasco_metric_kind kind,
    const pasco_tensor *pred, const pasco_tensor *labels);

/* Reads the state and computes the metric (NaN when nothing was added). */
int pasco_metric_result(
    pasco_variable *state, pasco_metric_kind kind, double *out);

/* Zeroes the state. */
int pasco_metric_reset(pasco_variable *state);

#endif
