/*
 * Keras's Average: the mean of its inputs (2 or more, of one per-example
 * shape), the mask as Add's (add.c). No variables. Its descriptor
 * (layer_desc.h). Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

pasco_layer
pasco_layer_average(void)
{
	return pasci_layer_named(pasci_layer_defaults(PASCO_LAYER_AVERAGE));
}

static int
average_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) l;
	(void) widths;
	(void) out;
	return PASCO_OK;
}

static pasco_tnode *
average_call(pasci_layer_call *c)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tnode       *h = c->in[0];
	for (size_t j = 1; h != NULL && j < l->ninputs; j++) {
		h = pasco_t_add(c->tp, h, c->in[j]);
	}
	c->mask = pasci_merge_mask(c);
	return h == NULL ? NULL
	                 : pasco_t_scale(c->tp, h, 1.0 / (double) l->ninputs);
}

const pasci_layer_desc pasci_layer_average_desc = {
    .kind       = PASCO_LAYER_AVERAGE,
    .class_name = "Average",
    .prefix     = "average",
    .keys       = {"name"},
    .min_inputs = 2,
    .check      = average_check,
    .shape      = pasci_merge_shape,
    .call       = average_call,
    .write      = pasci_layer_no_fields_write,
    .read       = pasci_layer_no_fields_read,
};
