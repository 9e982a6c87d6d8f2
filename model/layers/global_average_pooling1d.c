/*
 * Keras's GlobalAveragePooling1D(data_format=None, keepdims=False): a
 * sequence [batch, steps, d] ("channels_last"; [batch, d, steps]
 * "channels_first") averaged over its steps into [batch, d] ([batch, 1,
 * d] or [batch, d, 1] with keepdims). With a mask (an Embedding's
 * mask_zero), as Keras: the mean over the steps the mask keeps; a
 * sequence with none kept gives zeros, where Keras's 0 / 0 is NaN. No
 * mask goes on. No variables. Its descriptor (layer_desc.h). Stateless:
 * any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

pasco_layer
pasco_layer_global_average_pooling1d(void)
{
	return pasci_layer_named(
	    pasci_layer_defaults(PASCO_LAYER_GLOBAL_AVERAGE_POOLING1D));
}

static int
gap1d_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) l;
	(void) widths;
	(void) out;
	return PASCO_OK;
}

static int
gap1d_shape(const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	int64_t d = in[0].dim[l->channels_first ? 0 : 1];
	if (in[0].rank != 2) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: its input is %s per example; a "
		    "GlobalAveragePooling1D takes a sequence (steps, "
		    "features)%s",
		    l->name, PASCI_ESHAPE(&in[0]),
		    in[0].rank == 1 ? " (an Embedding gives one with "
		                      "combiner None or mask_zero)"
		                    : "");
	}
	*out = !l->keepdims        ? (pasci_eshape){1, {d}}
	       : l->channels_first ? (pasci_eshape){2, {d, 1}}
	                           : (pasci_eshape){2, {1, d}};
	return PASCO_OK;
}

/* The mean of x over axis where mask [batch, steps] keeps a step. */
static pasco_tnode *
masked_mean(pasci_layer_call *c, pasco_tnode *x, int32_t axis)
{
	const pasco_layer  *l  = &c->m->layers[c->i];
	const pasco_tensor *xv = pasco_tnode_value(x);
	const pasco_tensor *mv = pasco_tnode_value(c->in_mask[0]);
	pasco_tensor       *one;
	pasco_tnode        *m, *sum, *count;
	int64_t             shape[3] = {mv->shape[0], 1, 1};
	shape[axis]                  = mv->shape[1];
	if (xv->shape[axis] != mv->shape[1]) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL,
		    "%s: mask %s does not match input %s", l->name,
		    PASCI_SHAPE(mv->rank, mv->shape),
		    PASCI_SHAPE(xv->rank, xv->shape));
	}
	m   = pasco_t_reshape(c->tp, c->in_mask[0], 3, shape);
	sum = pasco_t_reduce_sum_axes(
	    c->tp, pasco_t_mul(c->tp, x, m), 1, &axis, l->keepdims);
	count = pasco_t_reduce_sum_axes(c->tp, m, 1, &axis, l->keepdims);
	if (pasco_tensor_scalar(&one, xv->dtype, 1) != 0) {
		return pasci_tape_fail(c->tp, PASCO_ENOMEM, "out of memory");
	}
	/* a count of 0 has a sum of 0: max(count, 1) gives it zeros */
	count = pasco_t_maximum(c->tp, count, pasco_tape_constant(c->tp, one));
	pasco_tensor_release(one);
	return pasco_t_div(c->tp, sum, count);
}

static pasco_tnode *
gap1d_call(pasci_layer_call *c)
{
	const pasco_layer *l    = &c->m->layers[c->i];
	int32_t            axis = l->channels_first ? 2 : 1;
	if (c->in_mask[0] != NULL) {
		return masked_mean(c, c->in[0], axis);
	}
	return pasco_t_reduce_mean_axes(
	    c->tp, c->in[0], 1, &axis, l->keepdims);
}

static bool
gap1d_write(cJSON *c, const pasco_layer *l)
{
	return cJSON_AddStringToObject(c, "data_format",
	           l->channels_first ? "channels_first" : "channels_last") &&
	       cJSON_AddBoolToObject(c, "keepdims", l->keepdims);
}

static int
gap1d_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	return pasci_json_read_data_format(c, &l->channels_first, at) != 0 ||
	               pasci_json_bool(c, "keepdims", &l->keepdims, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

const pasci_layer_desc pasci_layer_global_average_pooling1d_desc = {
    .kind       = PASCO_LAYER_GLOBAL_AVERAGE_POOLING1D,
    .class_name = "GlobalAveragePooling1D",
    .prefix     = "global_average_pooling1d",
    .keys       = {"name", "data_format", "keepdims"},
    .min_inputs = 1,
    .check      = gap1d_check,
    .shape      = gap1d_shape,
    .call       = gap1d_call,
    .write      = gap1d_write,
    .read       = gap1d_read,
};
