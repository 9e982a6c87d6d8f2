/*
 * A model as a step's argument, on the worker side (pasco_model_from_call,
 * include/pasco/model.h): its config (JSON as a u8 tensor) rebuilt into a
 * model and bound to the call's variable handles. Parsed models are kept
 * per process, by their config's bytes (worker/model_cache.c, bounded in
 * entries and bytes), so a step parses a config once: later calls copy
 * the cached model (a few small allocations) and bind the copy, which is
 * the call's own. Any handler thread.
 */
#include "model_cache.h"
#include "model_impl.h"
#include "pasco/function.h"
#include "util.h"

#include <stdlib.h>

int
pasco_model_from_call(pasco_call *call, size_t first, pasco_model **out)
{
	const pasco_tensor *t;
	pasco_variable    **vars;
	pasco_model        *m;
	int                 rv;

	*out = NULL;
	if ((rv = pasco_call_tensor(call, first, &t)) != 0) {
		return rv;
	}
	if (t->dtype != PASCO_U8 || t->rank != 1) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "argument %zu is %s%s, not a model's config (u8 JSON: "
		    "pasco_model_args)",
		    first, pasco_dtype_name(t->dtype),
		    PASCI_SHAPE(t->rank, t->shape));
	}
	if ((rv = pasci_model_cache_get(t->data, (size_t) t->count, &m)) !=
	    0) {
		return pasco_call_fail(call, rv, "the model's config: %s",
		    pasco_model_last_error());
	}
	if ((vars = pasci_calloc(m->nvars + 1, sizeof(*vars))) == NULL) {
		pasco_model_free(m);
		return pasco_call_fail(call, PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < m->nvars && rv == 0; k++) {
		rv = pasco_call_variable(call, first + 1 + k, &vars[k]);
	}
	if (rv == 0 && (rv = pasco_model_bind(m, m->nvars, vars)) != 0) {
		pasco_call_fail(call, rv, "%s", pasco_model_last_error());
	}
	free(vars);
	if (rv != 0) {
		pasco_model_free(m);
		return rv;
	}
	*out = m;
	return PASCO_OK;
}
