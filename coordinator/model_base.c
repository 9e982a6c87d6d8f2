/*
 * Each compiled model's optimizer counts its own iterations, as Keras's
 * optimizer.iterations does (include/pasco/optimizer.h iterations_base):
 * its count is the global step less the global step's value when its
 * first fit began, its base. The base lives on a ps as the i64 scalar
 * "<the model's first variable>/iterations_base", so strategy
 * checkpoints keep it as they keep the global step, and a chief that
 * starts again (the same model compiled afresh) finds it there or in the
 * checkpoint it resumes from; the compile config carries it to the
 * workers (and into a saved model). Runs on the fit's thread.
 */
#include <stdio.h>

#include "coordinator_impl.h"
#include "model_impl.h"

static int
read_i64(pasco_variable *v, int64_t *out)
{
	pasco_tensor *t;
	int           rv = pasco_variable_read(v, &t);
	if (rv == 0) {
		*out = (int64_t) pasco_tensor_get(t, 0);
		pasco_tensor_release(t);
	}
	return rv;
}

int
pasci_fit_base_var(pasco_strategy *s, pasco_model *m, pasco_variable *gs,
    pasco_variable **out)
{
	char          name[PASCO_LAYER_NAME_MAX + 40];
	int64_t       start = m->compile.opt.iterations_base;
	pasco_tensor *init;
	int           rv;
	*out = NULL;
	if (gs == NULL || m->nvars == 0) {
		return PASCO_OK;
	}
	if (snprintf(name, sizeof(name), "%s/iterations_base",
	        m->vars[0].name) >= (int) sizeof(name)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "fit: '%s/iterations_base' (the optimizer's start) is "
		    "longer than a variable name may be",
		    m->vars[0].name);
	}
	/* a new optimizer starts at the global step's value now */
	if (!m->compile.base_known && (rv = read_i64(gs, &start)) != 0) {
		return pasci_model_fail(
		    rv, "fit: the global step: %s", pasco_variable_error(gs));
	}
	if ((rv = pasco_tensor_scalar(&init, PASCO_I64, (double) start)) !=
	    0) {
		return pasci_model_fail(rv, "out of memory");
	}
	rv = pasco_variable_create(out, s, name, init); /* kept if there */
	pasco_tensor_release(init);
	if (rv != 0) {
		return pasci_model_fail(rv, "fit: the optimizer's start: %s",
		    pasco_strategy_error(s));
	}
	return pasci_fit_base_read(m, *out, NULL);
}

int
pasci_fit_base_read(pasco_model *m, pasco_variable *base, bool *changed)
{
	int64_t v;
	int     rv;
	if (changed != NULL) {
		*changed = false;
	}
	if (base == NULL) {
		return PASCO_OK;
	}
	if ((rv = read_i64(base, &v)) != 0) {
		return pasci_model_fail(rv, "fit: the optimizer's start: %s",
		    pasco_variable_error(base));
	}
	if (m->compile.base_known && m->compile.opt.iterations_base == v) {
		return PASCO_OK;
	}
	m->compile.opt.iterations_base = v;
	m->compile.base_known          = true;
	pasco_tensor_release(m->config); /* the config changed */
	m->config = NULL;
	if (changed != NULL) {
		*changed = true;
	}
	return PASCO_OK;
}
