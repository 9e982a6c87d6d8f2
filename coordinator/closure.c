/* Closure lifetime: what a closure holds is dropped when it is freed. */
#include "closure.h"

#include <stdlib.h>

#include "coordinator_impl.h"

void
pasci_closure_free(closure *c)
{
	if (c == NULL) {
		return;
	}
	for (size_t i = 0; i < c->nargs; i++) {
		pasco_tensor_release(c->args[i].tensor);
		pasco_variable_free(c->args[i].variable);
		if (c->args[i].iterator != NULL) {
			pasci_iterator_release(c->args[i].iterator);
		}
	}
	free(c->args);
	free(c->name);
	pasco_remote_value_free(c->rv);
	if (c->iterator != NULL) {
		pasci_iterator_build_done(c->iterator);
	}
	free(c);
}

void
pasci_closure_cancel(closure *c)
{
	if (c->rv != NULL) {
		pasci_remote_value_fail(c->rv, PASCO_ECANCELLED,
		    "The corresponding function is "
		    "cancelled. Please reschedule "
		    "the function.");
	}
	pasci_closure_free(c);
}
