/*
 * Keras's (2.x) Normalization(axis=-1): (x - mean) / max(sqrt(variance),
 * 1e-7) per feature, non-trainable variables <name>/mean and
 * <name>/variance [width] (adapted by model/normalization.c). Its
 * descriptor (layer_desc.h). Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

pasco_layer
pasco_layer_normalization(void)
{
	return pasci_layer_named(
	    pasci_layer_defaults(PASCO_LAYER_NORMALIZATION));
}

static int
normalization_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) l;
	(void) widths;
	(void) out;
	return PASCO_OK;
}

static void
normalization_variables(pasco_model *m, size_t i, const int64_t *widths)
{
	pasci_model_add_var(m, i, "mean", 1, widths[0], 0, pasco_init_zeros());
	pasci_model_add_var(
	    m, i, "variance", 1, widths[0], 0, pasco_init_ones());
}

/* mean and variance are read with the other variables but enter as
 * constants, so no gradient reaches them. */
static pasco_tnode *
normalization_call(pasci_layer_call *c)
{
	pasco_tnode *mean =
	    pasci_layer_var_node(c->m, c->tp, c->i, 0, c->nodes);
	pasco_tnode *var =
	    mean ? pasci_layer_var_node(c->m, c->tp, c->i, 1, c->nodes) : NULL;
	const pasco_tensor *v  = pasco_tnode_value(c->in[0]);
	const pasco_tensor *mu = pasco_tnode_value(mean);
	if (var == NULL || v == NULL) {
		return NULL;
	}
	if (v->rank != 2 || v->shape[1] != mu->count) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL,
		    "%s: input %s does not match mean %s",
		    c->m->layers[c->i].name, PASCI_SHAPE(v->rank, v->shape),
		    PASCI_SHAPE(mu->rank, mu->shape));
	}
	return pasco_t_normalize(c->tp, c->in[0], mu, pasco_tnode_value(var));
}

/* Keras's fields; the adapted statistics are not config: they live in
 * the variables <name>/mean and /variance. */
static bool
normalization_write(cJSON *c, const pasco_layer *l)
{
	(void) l;
	return cJSON_AddNumberToObject(c, "axis", -1) &&
	       cJSON_AddNullToObject(c, "mean") &&
	       cJSON_AddNullToObject(c, "variance") &&
	       cJSON_AddBoolToObject(c, "invert", false);
}

static int
normalization_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	const cJSON *inv = cJSON_GetObjectItemCaseSensitive(c, "invert");
	(void) l;
	(void) part;
	if (pasci_json_read_axis(c, at) != 0) {
		return PASCO_EINVAL;
	}
	for (int k = 0; k < 2; k++) {
		const char  *f = k == 0 ? "mean" : "variance";
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, f);
		if (v != NULL && !cJSON_IsNull(v)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: %s must be null: a Normalization layer's "
			    "statistics come from pasco_model_adapt, kept in "
			    "its variables",
			    at, f);
		}
	}
	if (inv != NULL && !cJSON_IsFalse(inv)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: invert must be false (not supported)", at);
	}
	return PASCO_OK;
}

const pasci_layer_desc pasci_layer_normalization_desc = {
    .kind       = PASCO_LAYER_NORMALIZATION,
    .class_name = "Normalization",
    .prefix     = "normalization",
    .keys       = {"name", "axis", "mean", "variance", "invert"},
    .min_inputs = 1,
    .check      = normalization_check,
    .variables  = normalization_variables,
    .call       = normalization_call,
    .write      = normalization_write,
    .read       = normalization_read,
};
