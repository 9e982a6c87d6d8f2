/*
 * A step's reads in one round trip: the whole values of the variables a
 * step reads whole and the rows of the tables it looks up, every shard
 * request in flight together (the reads' calls from variable.c, the
 * gathers' from variable_sparse.c, run by pasci_shard_calls_run_many).
 * Thread-safe as variable.c.
 */
#include <stdlib.h>

#include "variable_impl.h"

int
pasco_variable_read_mixed(size_t n, pasco_variable *const *vars,
    const pasco_tensor *const *ids, pasco_tensor **outs)
{
	shard_call   **calls   = calloc(n + 1, sizeof(*calls));
	pasci_gather **gathers = calloc(n + 1, sizeof(*gathers));
	int            rv      = PASCO_OK;

	for (size_t k = 0; k < n; k++) {
		outs[k] = NULL;
	}
	if (calls == NULL || gathers == NULL) {
		rv = PASCO_ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < n && rv == 0; k++) {
		if (ids != NULL && ids[k] != NULL) {
			if ((rv = pasci_gather_prepare(
			         vars[k], ids[k], &gathers[k])) == 0) {
				calls[k] = pasci_gather_calls(gathers[k]);
			}
		} else if ((calls[k] = pasci_read_calls(vars[k])) == NULL) {
			rv = PASCO_ENOMEM;
		}
	}
	if (rv == 0) {
		rv = pasci_shard_calls_run_many(n, vars, calls);
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
	free(gathers);
	free(calls);
	return rv;
}
