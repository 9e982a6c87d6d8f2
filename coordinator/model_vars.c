/* A model's variables created on the ps through the strategy, with
 * Keras's names (dense/kernel, embedding/embeddings). */
#include "layers_impl.h"

#include "pasco/coordinator.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>

/* Normalization layer i's count (Keras's, i64 scalar; steps never read
 * it), then its adapted statistics written, if any. */
static int
create_count(pasco_model *m, size_t i, pasco_strategy *s)
{
	pasci_model_norm *st   = &m->norm[i];
	pasco_initializer zero = pasco_init_zeros();
	pasco_variable   *v;
	char              name[PASCO_LAYER_NAME_MAX + 8];
	int               rv;
	snprintf(name, sizeof(name), "%s/count", m->layers[i].name);
	rv = pasco_variable_create_partitioned(
	    &v, s, name, PASCO_I64, 0, NULL, &zero, NULL);
	if (rv != 0) {
		return pasci_model_fail(
		    rv, "%s: %s", m->layers[i].name, pasco_strategy_error(s));
	}
	pasco_variable_free(st->count_var);
	st->count_var = v;
	return pasci_model_norm_write(m, i);
}

int
pasco_model_create_variables(pasco_model *m, pasco_strategy *s)
{
	pasco_variable **made;
	int              rv = PASCO_OK;

	if (m == NULL || s == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "create_variables: needs a model and a strategy");
	}
	made = pasci_calloc(m->nvars + 1, sizeof(*made));
	if (made == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < m->nvars && rv == 0; k++) {
		const pasci_model_var *mv = &m->vars[k];
		const pasco_layer     *l  = &m->layers[mv->layer];
		if (l->kind == PASCO_LAYER_EMBEDDING && l->dynamic) {
			pasco_dynamic_options o = l->dynamic_options;
			o.dim                   = l->output_dim;
			o.initializer           = mv->init;
			rv = pasco_dynamic_variable_create(
			    &made[k], s, mv->name, &o);
		} else {
			rv = pasco_variable_create_constrained(&made[k], s,
			    mv->name, PASCO_F32, mv->rank, mv->shape,
			    &mv->init,
			    l->kind == PASCO_LAYER_EMBEDDING ? l->partitioner
			                                     : NULL,
			    &mv->constraint);
		}
		if (rv != 0) {
			pasci_model_fail(
			    rv, "%s: %s", l->name, pasco_strategy_error(s));
		}
	}
	for (size_t k = 0; k < m->nvars; k++) {
		if (rv != 0) {
			pasco_variable_free(made[k]);
			continue;
		}
		if (m->owns) {
			pasco_variable_free(m->vars[k].handle);
		}
		m->vars[k].handle = made[k];
	}
	if (rv == 0) {
		m->owns = true;
	}
	free(made);
	for (size_t i = 0; rv == 0 && i < m->nlayers; i++) {
		if (m->layers[i].kind == PASCO_LAYER_NORMALIZATION) {
			rv = create_count(m, i, s);
		}
	}
	return rv;
}
