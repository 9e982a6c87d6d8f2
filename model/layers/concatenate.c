/*
 * Keras's Concatenate: its inputs (2 or more, [batch, width] each) along
 * the last axis. No variables. Its descriptor (layer_desc.h). Stateless:
 * any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

pasco_layer
pasco_layer_concatenate(void)
{
	return pasci_layer_named(
	    pasci_layer_defaults(PASCO_LAYER_CONCATENATE));
}

static int
concatenate_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	for (size_t j = 1; j < l->ninputs; j++) {
		*out += widths[j];
	}
	return PASCO_OK;
}

static pasco_tnode *
concatenate_call(pasci_layer_call *c)
{
	const pasco_layer  *l  = &c->m->layers[c->i];
	const pasco_tensor *x0 = pasco_tnode_value(c->in[0]);
	for (size_t j = 0; j < l->ninputs; j++) {
		const pasco_tensor *x = pasco_tnode_value(c->in[j]);
		if (x->rank != 2 || x0->rank != 2 ||
		    x->shape[0] != x0->shape[0]) {
			return pasci_tape_fail(c->tp, PASCO_EINVAL,
			    "%s: inputs %s and %s are not [batch, width] of "
			    "one batch",
			    l->name, PASCI_SHAPE(x0->rank, x0->shape),
			    PASCI_SHAPE(x->rank, x->shape));
		}
	}
	return pasco_t_concat(c->tp, l->ninputs, c->in, -1);
}

static bool
concatenate_write(cJSON *c, const pasco_layer *l)
{
	(void) l;
	return cJSON_AddNumberToObject(c, "axis", -1) != NULL;
}

static int
concatenate_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) l;
	(void) part;
	return pasci_json_read_axis(c, at);
}

const pasci_layer_desc pasci_layer_concatenate_desc = {
    .kind       = PASCO_LAYER_CONCATENATE,
    .class_name = "Concatenate",
    .prefix     = "concatenate",
    .keys       = {"name", "axis"},
    .min_inputs = 2,
    .check      = concatenate_check,
    .call       = concatenate_call,
    .write      = concatenate_write,
    .read       = concatenate_read,
};
