/*
 * The AUC's counts and result (client/metrics.c), shared with the
 * compiled metrics of models (model/compile.c), whose counts travel
 * in a state vector of their own.
 */
#ifndef PASCI_METRICS_IMPL_H
#define PASCI_METRICS_IMPL_H

#include <stdbool.h>

#include "pasco/metrics.h"

/* Adds one prediction p of a label y to AUC counts s
 * ([4][PASCO_AUC_THRESHOLDS]: true positives, false positives, true
 * negatives, false negatives per threshold). */
void pasci_auc_add(double *s, double p, bool y);

/* The area under the ROC curve of counts s (trapezoid rule). */
double pasci_auc_of(const double *s);

#endif
