/*
 * Counters and the consistency of applies through a global step (the
 * semantics: include/pasco/optimizer.h; the ps side: ps/sync.c). A step
 * is admitted by the counter's ps (one fetch-add), sent to the shards with
 * its t, and under BSP reported done to the counter after the pushes.
 */
#include "pasco/optimizer.h"
#include "util.h"
#include "variable_impl.h"

/* One VAR_FETCH_ADD on counter c: *value the reply's step, *dropped its
 * verdict. */
static int
counter_call(pasco_variable *c, int64_t delta, const pasci_wire_sync *sync,
    int64_t *value, bool *dropped)
{
	shard_call *calls;
	int         rv;
	if (c->nshards != 1 || c->rank != 0 ||
	    (c->dtype != PASCO_I64 && c->dtype != PASCO_I32)) {
		return pasci_variable_fail(c, PASCO_EINVAL,
		    "fetch_add on '%s': a counter is an unsplit i64 or i32 "
		    "scalar",
		    c->name);
	}
	if ((calls = pasci_shard_calls_new(c, PASCI_METHOD_VAR_FETCH_ADD)) ==
	    NULL) {
		return PASCO_ENOMEM;
	}
	calls[0].used       = true;
	calls[0].b.hdr.step = delta;
	calls[0].b.hdr.sync = sync;
	if ((rv = pasci_shard_calls_run(c, calls)) == 0) {
		*value = calls[0].reply.hdr->step;
		if (dropped != NULL) {
			*dropped = calls[0].reply.hdr->sync != NULL &&
			           calls[0].reply.hdr->sync->dropped;
		}
	}
	pasci_shard_calls_free(c, calls);
	return rv;
}

int
pasco_variable_fetch_add(pasco_variable *v, int64_t delta, int64_t *value)
{
	int64_t got = 0;
	int     rv  = counter_call(v, delta, NULL, &got, NULL);
	if (rv == 0) {
		__atomic_store_n(&v->seen, got, __ATOMIC_RELEASE);
		if (value != NULL) {
			*value = got;
		}
	}
	return rv;
}

int64_t
pasco_variable_dropped(const pasco_variable *v)
{
	return __atomic_load_n(&v->dropped, __ATOMIC_ACQUIRE);
}

bool
pasci_step_can_prefetch(const pasco_variable *c)
{
	return c != NULL && c->nshards == 1 && c->rank == 0 &&
	       (c->dtype == PASCO_I64 || c->dtype == PASCO_I32) &&
	       c->sync.mode == PASCO_ASP;
}

bool
pasci_step_is_bsp(const pasco_optimizer *opt)
{
	return opt != NULL && opt->iterations != NULL &&
	       opt->iterations->sync.mode == PASCO_BSP;
}

int64_t
pasci_step_count(const pasco_optimizer *opt, int64_t step)
{
	int64_t base = opt != NULL ? opt->iterations_base : 0;
	return step - base >= 1 ? step - base : step;
}

int
pasci_step_begin(pasco_variable *v, const pasco_optimizer *opt, pasci_step *st)
{
	pasco_variable *c = opt != NULL ? opt->iterations : NULL;
	pasci_wire_sync admit;
	int64_t         got = 0;
	int             rv;

	*st = (pasci_step){.counter = c};
	if (c == NULL) {
		return PASCO_OK;
	}
	admit         = c->sync;
	admit.version = __atomic_load_n(&c->seen, __ATOMIC_ACQUIRE);
	admit.dropped = admit.done = false;
	rv                         = counter_call(
	                            c, 1, admit.mode != PASCO_ASP ? &admit : NULL, &got, &st->dropped);
	if (rv != 0) {
		st->counter = NULL;
		return v != NULL ? pasci_variable_fail(v, rv,
		                       "the global step '%s': %s", c->name,
		                       pasco_variable_error(c))
		                 : rv;
	}
	if (st->dropped) {
		__atomic_fetch_add(&c->dropped, 1, __ATOMIC_ACQ_REL);
		st->counter = NULL; /* nothing to end */
		return PASCO_OK;
	}
	st->t = pasci_step_count(opt, admit.mode == PASCO_BSP ? got + 1 : got);
	if (admit.mode == PASCO_BSP) {
		st->bsp          = true;
		st->sync         = admit;
		st->sync.version = got; /* the round */
		st->sync.dropped = false;
	} else {
		st->counter = NULL; /* ASP and SSP need no end */
	}
	return PASCO_OK;
}

void
pasci_step_stamp(
    const pasci_step *st, const pasco_variable *v, shard_call *calls)
{
	for (int32_t i = 0; i < v->nshards; i++) {
		if (calls[i].used) {
			calls[i].b.hdr.step = st->t;
			calls[i].b.hdr.sync = st->bsp ? &st->sync : NULL;
		}
	}
}

void
pasci_step_end(pasci_step *st)
{
	pasci_wire_sync done;
	int64_t         got;
	if (st->counter == NULL || !st->bsp) {
		return;
	}
	done      = st->sync;
	done.done = true;
	if (counter_call(st->counter, 0, &done, &got, NULL) != 0) {
		pasci_log(PASCI_LOG_WARN,
		    "BSP round %lld: '%s' was not told that a member pushed "
		    "(%s); the round waits for pasco_strategy_sync_flush",
		    (long long) st->sync.version, st->counter->name,
		    pasco_variable_error(st->counter));
	}
	st->counter = NULL;
}
