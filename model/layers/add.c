/*
 * Keras's Add: the sum of its inputs (2 or more, of one per-example
 * shape), and what the merge layers share (Add, Multiply, Average,
 * layer_desc.h): the shape check and the output's mask, the OR of the
 * inputs' masks when each has one (Keras's Merge.compute_mask). No
 * variables. Its descriptor (layer_desc.h). Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

pasco_layer
pasco_layer_add(void)
{
	return pasci_layer_named(pasci_layer_defaults(PASCO_LAYER_ADD));
}

int
pasci_merge_shape(
    const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	const pasci_layer_desc *d = pasci_layer_desc_of(l->kind);
	for (size_t j = 1; j < l->ninputs; j++) {
		bool same = in[j].rank == in[0].rank;
		for (int32_t k = 0; same && k < in[0].rank; k++) {
			same = in[j].dim[k] == in[0].dim[k];
		}
		if (!same) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: inputs 0 and %zu are %s and %s per example; "
			    "an %s takes inputs of one shape",
			    l->name, j, PASCI_ESHAPE(&in[0]),
			    PASCI_ESHAPE(&in[j]), d->class_name);
		}
	}
	*out = in[0];
	return PASCO_OK;
}

pasco_tnode *
pasci_merge_mask(pasci_layer_call *c)
{
	const pasco_layer *l    = &c->m->layers[c->i];
	pasco_tnode       *mask = c->in_mask[0];
	for (size_t j = 1; mask != NULL && j < l->ninputs; j++) {
		mask = c->in_mask[j] == NULL
		           ? NULL
		           : pasco_t_maximum(c->tp, mask, c->in_mask[j]);
	}
	return mask;
}

const pasco_tensor *
pasci_mask_cond(pasco_tnode *mask, int32_t rank, pasco_tensor *view)
{
	*view = *pasco_tnode_value(mask);
	for (int32_t k = view->rank; k < rank; k++) {
		view->shape[view->rank++] = 1;
	}
	return view;
}

static int
add_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) l;
	(void) widths;
	(void) out;
	return PASCO_OK;
}

static pasco_tnode *
add_call(pasci_layer_call *c)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tnode       *h = c->in[0];
	for (size_t j = 1; h != NULL && j < l->ninputs; j++) {
		h = pasco_t_add(c->tp, h, c->in[j]);
	}
	c->mask = pasci_merge_mask(c);
	return h;
}

bool
pasci_layer_no_fields_write(cJSON *c, const pasco_layer *l)
{
	(void) c;
	(void) l;
	return true;
}

int
pasci_layer_no_fields_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) c;
	(void) l;
	(void) part;
	(void) at;
	return PASCO_OK;
}

const pasci_layer_desc pasci_layer_add_desc = {
    .kind       = PASCO_LAYER_ADD,
    .class_name = "Add",
    .prefix     = "add",
    .keys       = {"name"},
    .min_inputs = 2,
    .check      = add_check,
    .shape      = pasci_merge_shape,
    .call       = add_call,
    .write      = pasci_layer_no_fields_write,
    .read       = pasci_layer_no_fields_read,
};
