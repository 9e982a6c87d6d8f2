/*
 * Keras's Multiply: the elementwise product of its inputs (2 or more, of
 * one per-example shape). With masks, as Keras: a masked step of an
 * input counts as 1; when every input has a mask, the output is 0 where
 * none keeps the step, and its mask is their OR (add.c). No variables.
 * Its descriptor (layer_desc.h). Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

pasco_layer
pasco_layer_multiply(void)
{
	return pasci_layer_named(pasci_layer_defaults(PASCO_LAYER_MULTIPLY));
}

static int
multiply_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) l;
	(void) widths;
	(void) out;
	return PASCO_OK;
}

/* x where the mask keeps a step, else fill (a scalar constant). */
static pasco_tnode *
masked(pasco_tape *tp, pasco_tnode *x, pasco_tnode *mask, double fill)
{
	pasco_tensor        view, *v;
	const pasco_tensor *xv = pasco_tnode_value(x);
	pasco_tnode        *f;
	if (mask == NULL || xv == NULL) {
		return x;
	}
	if (pasco_tensor_scalar(&v, xv->dtype, fill) != 0) {
		return pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
	}
	f = pasco_tape_constant(tp, v);
	pasco_tensor_release(v);
	return f == NULL ? NULL
	                 : pasco_t_where(tp,
	                       pasci_mask_cond(mask, xv->rank, &view), x, f);
}

static pasco_tnode *
multiply_call(pasci_layer_call *c)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tnode       *h = masked(c->tp, c->in[0], c->in_mask[0], 1);
	for (size_t j = 1; h != NULL && j < l->ninputs; j++) {
		h = pasco_t_mul(
		    c->tp, h, masked(c->tp, c->in[j], c->in_mask[j], 1));
	}
	c->mask = pasci_merge_mask(c);
	return h == NULL ? NULL : masked(c->tp, h, c->mask, 0);
}

const pasci_layer_desc pasci_layer_multiply_desc = {
    .kind       = PASCO_LAYER_MULTIPLY,
    .class_name = "Multiply",
    .prefix     = "multiply",
    .keys       = {"name"},
    .min_inputs = 2,
    .check      = multiply_check,
    .shape      = pasci_merge_shape,
    .call       = multiply_call,
    .write      = pasci_layer_no_fields_write,
    .read       = pasci_layer_no_fields_read,
};
