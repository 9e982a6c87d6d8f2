/*
 * A compiled metric's parameters (Keras 3's: AUC's thresholds, curve and
 * summation, Precision's thresholds, top_k and class_id, the top-k
 * accuracies' k, BinaryCrossentropy's from_logits and label_smoothing),
 * read from a metric given by name or as Keras serializes it
 * ({"class_name": "AUC", "config": {...}}) by model/metric_spec.c, and
 * what model/metric_counts.c counts and computes with them. Plain data:
 * copied with the compile config.
 */
#ifndef PASCI_METRIC_SPEC_H
#define PASCI_METRIC_SPEC_H

#include <stdbool.h>
#include <stdint.h>

/* Thresholds a metric may list (AUC's inner ones, Precision's). */
#define PASCI_METRIC_MAX_THRESHOLDS 64
/* AUC's num_thresholds at most: 8 metrics of 4 x 2048 counts fit a fit
 * step's 65536 counts (coordinator/fit.c). */
#define PASCI_AUC_MAX_THRESHOLDS 2048

typedef enum pasci_auc_curve {
	PASCI_AUC_ROC    = 0,
	PASCI_AUC_PR     = 1,
	PASCI_AUC_PRGAIN = 2,
} pasci_auc_curve;

typedef enum pasci_auc_summation {
	PASCI_AUC_INTERPOLATION = 0,
	PASCI_AUC_MINORING      = 1,
	PASCI_AUC_MAJORING      = 2,
} pasci_auc_summation;

typedef struct pasci_metric_spec {
	/* Given as a Keras object: computed on the model's raw output, as
	 * Keras's object is (a name's metric sees the output through the
	 * loss's sigmoid or softmax when the loss takes logits). */
	bool object;
	char as_given[40];     /* a name's text, written back as given */
	char cls[40];          /* an object's class_name */
	bool from_logits;      /* AUC, BinaryCrossentropy */
	bool evenly;           /* AUC: thresholds evenly spaced (clipped p) */
	bool from_sorted_ids;  /* SparseTopKCategoricalAccuracy */
	bool scalar_threshold; /* Precision/Recall: a number given */
	pasci_auc_curve     curve;
	pasci_auc_summation summation;
	int32_t nthresholds; /* AUC: with the two ends; Precision/Recall: 1 */
	int32_t ngiven;      /* thresholds given (0: Keras's default) */
	double  given[PASCI_METRIC_MAX_THRESHOLDS]; /* sorted for AUC */
	/* AUC's labels: multi_label, one AUC per output column (nlabels,
	 * the output's width; else 1), averaged (weighted by label_weights
	 * when given); without it, label_weights weigh each column's
	 * counts. num_labels as given (0: null). */
	bool    multi_label;
	int32_t nlabels, num_labels, nweights;
	double  label_weights[PASCI_METRIC_MAX_THRESHOLDS];
	int32_t top_k;    /* Precision/Recall; 0: none */
	int32_t class_id; /* Precision/Recall; -1: none */
	int32_t k;        /* the top-k accuracies */
	double  label_smoothing;
	double  threshold; /* BinaryAccuracy */
} pasci_metric_spec;

#endif
