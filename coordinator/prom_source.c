/*
 * The coordinator's side of the Prometheus metrics (prom_source.h): its
 * counts, read by the scrape thread under the registry's lock through
 * pasco_coordinator_metrics_read, which takes the queue's lock (never
 * held while the registry's is taken).
 */
#include "prom_source.h"

#include "pasco/coordinator.h"

void
pasci_prom_coordinator_read(void *arg, uint64_t *v)
{
	pasco_coordinator_metrics m;
	pasco_coordinator_metrics_read(arg, &m);
	v[PASCI_MS_SCHEDULED]  = m.scheduled;
	v[PASCI_MS_DISPATCHED] = m.dispatched;
	v[PASCI_MS_COMPLETED]  = m.succeeded;
	v[PASCI_MS_FAILED]     = m.failed;
	v[PASCI_MS_RETRIED]    = m.retried;
	v[PASCI_MS_CANCELLED]  = m.cancelled;
	v[PASCI_MS_QUEUED]     = m.queued;
	v[PASCI_MS_IN_FLIGHT]  = m.inflight;
}
