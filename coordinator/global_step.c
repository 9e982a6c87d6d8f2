/*
 * The global step and the strategy's consistency mode (coordinator.h;
 * the semantics: include/pasco/optimizer.h). The mode lives on the global
 * step's handles and travels with every apply, so no ps is set up.
 */
#include <stdlib.h>
#include <string.h>

#include "coordinator_impl.h"
#include "util.h"
#include "variable_impl.h"

#define GLOBAL_STEP "global_step"

int
pasci_strategy_sync_options(
    pasco_strategy *s, const pasco_strategy_options *opts)
{
	pasci_wire_sync sync = {0};
	if (opts == NULL) {
		s->sync = sync;
		return PASCO_OK;
	}
	sync.mode      = (int32_t) opts->consistency;
	sync.replicas  = opts->replicas_to_aggregate;
	sync.staleness = opts->staleness;
	if (sync.mode == PASCO_BSP && sync.replicas == 0) {
		sync.replicas = (int32_t) s->nworkers;
	}
	if (sync.mode < PASCO_ASP || sync.mode > PASCO_SSP) {
		pasci_error_fmt(s->error, sizeof(s->error),
		    "unknown consistency mode %d: PASCO_ASP (0), PASCO_BSP "
		    "(1) "
		    "or PASCO_SSP (2)",
		    (int) sync.mode);
		return PASCO_EINVAL;
	}
	if (sync.replicas < 0 || sync.staleness < 0) {
		pasci_error_fmt(s->error, sizeof(s->error),
		    "consistency: replicas_to_aggregate (%d) and staleness "
		    "(%d) must be >= 0",
		    (int) sync.replicas, (int) sync.staleness);
		return PASCO_EINVAL;
	}
	s->sync = sync;
	return PASCO_OK;
}

int
pasco_strategy_global_step(pasco_strategy *s, pasco_variable **out)
{
	pasco_tensor *zero;
	int           rv;
	*out = NULL;
	if ((rv = pasco_tensor_alloc(&zero, PASCO_I64, 0, NULL)) != 0) {
		return rv;
	}
	rv = pasco_variable_create(out, s, GLOBAL_STEP, zero);
	pasco_tensor_release(zero);
	if (rv == PASCO_EEXIST) {
		pthread_mutex_lock(&s->mu);
		pasci_error_fmt(s->error, sizeof(s->error),
		    "the global step needs the name '" GLOBAL_STEP
		    "', which is taken by a variable that is not an i64 "
		    "scalar");
		pthread_mutex_unlock(&s->mu);
	}
	if (rv == 0) {
		(*out)->sync = s->sync;
	}
	return rv;
}

int
pasco_strategy_sync_flush(pasco_strategy *s)
{
	pasco_variable *all;
	shard_call     *calls;
	int             rv;
	if (s->sync.mode != PASCO_BSP) {
		return PASCO_OK;
	}
	/* one call per ps, through a handle whose "shards" are the ps tasks */
	if ((rv = pasci_variable_new(&all, "BSP flush", PASCO_I64, 0, NULL,
	         s->call_timeout_ms)) != 0) {
		return rv;
	}
	for (size_t i = 0; i < s->nps && rv == 0; i++) {
		rv = pasci_variable_add_shard(
		    all, "", (int32_t) i, 0, 0, s->ps[i]);
	}
	calls = rv == 0 ? pasci_shard_calls_new(all, PASCI_METHOD_SYNC_FLUSH)
	                : NULL;
	if (calls == NULL) {
		pasco_variable_free(all);
		return PASCO_ENOMEM;
	}
	for (size_t i = 0; i < s->nps; i++) {
		calls[i].used = true;
	}
	if ((rv = pasci_shard_calls_run(all, calls)) != 0) {
		pthread_mutex_lock(&s->mu);
		pasci_error_fmt(s->error, sizeof(s->error), "%s",
		    pasco_variable_error(all));
		pthread_mutex_unlock(&s->mu);
	}
	pasci_shard_calls_free(all, calls);
	pasco_variable_free(all);
	return rv;
}
