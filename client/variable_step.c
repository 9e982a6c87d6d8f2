/*
 * A step's reads in one round trip: the whole values of the variables a
 * step reads whole and the rows of the tables it looks up, every shard
 * request in flight together (the reads' calls from variable.c, the
 * gathers' from variable_sparse.c, run by pasci_shard_calls_run_many),
 * and for the library's train step under ASP the global step's fetch-add
 * too (pasci_variable_read_mixed_step), so that its apply needs no round
 * trip of its own.
 * Thread-safe as variable.c.
 */
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "variable_impl.h"

/* The reads of read_mixed; with counter, its fetch-add of 1 travels
 * with them (*t the value after); find_only: dynamic tables' lookups
 * insert nothing. */
static int
read_mixed(size_t n, pasco_variable *const *vars,
    const pasco_tensor *const *ids, pasco_tensor **outs,
    pasco_variable *counter, int64_t *t, bool find_only)
{
	shard_call     **calls   = pasci_calloc(n + 2, sizeof(*calls));
	pasci_gather   **gathers = pasci_calloc(n + 1, sizeof(*gathers));
	pasco_variable **all     = pasci_calloc(n + 2, sizeof(*all));
	int              rv      = PASCO_OK;

	for (size_t k = 0; k < n; k++) {
		outs[k] = NULL;
	}
	if (calls == NULL || gathers == NULL || all == NULL) {
		rv = PASCO_ENOMEM;
		goto out;
	}
	memcpy(all, vars, n * sizeof(*vars));
	if (counter != NULL && (calls[n] = pasci_shard_calls_new(counter,
	                            PASCI_METHOD_VAR_FETCH_ADD)) == NULL) {
		rv = PASCO_ENOMEM;
		goto out;
	}
	if (counter != NULL) {
		calls[n][0].used       = true;
		calls[n][0].b.hdr.step = 1;
		all[n]                 = counter;
	}
	for (size_t k = 0; k < n && rv == 0; k++) {
		if (ids != NULL && ids[k] != NULL) {
			if ((rv = pasci_gather_prepare(
			         vars[k], ids[k], &gathers[k])) == 0) {
				calls[k] = pasci_gather_calls(gathers[k]);
			}
			for (int32_t i = 0;
			     rv == 0 && find_only && i < vars[k]->nshards;
			     i++) {
				calls[k][i].b.hdr.find_only = true;
			}
		} else if ((calls[k] = pasci_read_calls(vars[k])) == NULL) {
			rv = PASCO_ENOMEM;
		}
	}
	if (rv == 0) {
		rv = pasci_shard_calls_run_many(
		    n + (counter != NULL), all, calls);
	}
	if (rv == 0 && counter != NULL) {
		*t = calls[n][0].reply.hdr->step;
	}
	for (size_t k = 0; k < n && rv == 0; k++) {
		rv = gathers[k] != NULL
		         ? pasci_gather_finish(vars[k], gathers[k], &outs[k])
		         : pasci_read_assemble(vars[k], calls[k], &outs[k]);
	}
out:
	for (size_t k = 0; k < n; k++) {
		if (rv != 0) {
			pasco_tensor_release(outs[k]);
			outs[k] = NULL;
		}
		if (gathers != NULL && gathers[k] != NULL) {
			pasci_gather_free(
			    vars[k], gathers[k]); /* its calls too */
		} else if (calls != NULL) {
			pasci_shard_calls_free(vars[k], calls[k]);
		}
	}
	if (counter != NULL && calls != NULL && calls[n] != NULL) {
		pasci_shard_calls_free(counter, calls[n]);
	}
	free(gathers);
	free(calls);
	free(all);
	return rv;
}

int
pasco_variable_read_mixed(size_t n, pasco_variable *const *vars,
    const pasco_tensor *const *ids, pasco_tensor **outs)
{
	return read_mixed(n, vars, ids, outs, NULL, NULL, false);
}

int
pasci_variable_read_mixed_find(size_t n, pasco_variable *const *vars,
    const pasco_tensor *const *ids, pasco_tensor **outs)
{
	return read_mixed(n, vars, ids, outs, NULL, NULL, true);
}

int
pasci_variable_read_mixed_step(size_t n, pasco_variable *const *vars,
    const pasco_tensor *const *ids, pasco_tensor **outs,
    pasco_variable *counter, int64_t *t)
{
	if (!pasci_step_can_prefetch(counter)) {
		return pasci_variable_fail(counter != NULL ? counter : vars[0],
		    PASCO_EINVAL,
		    "a step taken with the reads needs an unsplit integer "
		    "counter under ASP");
	}
	return read_mixed(n, vars, ids, outs, counter, t, false);
}
