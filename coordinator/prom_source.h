/*
 * A coordinator's closure counts as a source of the process's Prometheus
 * metrics (base/metrics_registry.h): attached when it is created, detached
 * (its last counts kept) when it is destroyed.
 */
#ifndef PASCI_PROM_SOURCE_H
#define PASCI_PROM_SOURCE_H

#include "metrics_registry.h"

/* Fills v[PASCI_MS_*] from the coordinator arg
 * (pasco_coordinator_metrics_read). Thread-safe. */
void pasci_prom_coordinator_read(void *arg, uint64_t *v);

#endif
