/*
 * Keras's Flatten: [batch, d0, d1, ...] into [batch, d0 * d1 * ...];
 * data_format "channels_first" moves the first axis per example last
 * first (Keras's, for inputs of 2 or more dimensions per example). No
 * variables. Its descriptor (layer_desc.h). Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

pasco_layer
pasco_layer_flatten(void)
{
	return pasci_layer_named(pasci_layer_defaults(PASCO_LAYER_FLATTEN));
}

static int
flatten_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) l;
	(void) widths;
	(void) out;
	return PASCO_OK;
}

static int
flatten_shape(const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	(void) l;
	*out = (pasci_eshape){1, {pasci_eshape_count(&in[0])}};
	return PASCO_OK;
}

static pasco_tnode *
flatten_call(pasci_layer_call *c)
{
	const pasco_layer  *l = &c->m->layers[c->i];
	pasco_tnode        *h = c->in[0];
	const pasco_tensor *x = pasco_tnode_value(h);
	if (l->channels_first && x->rank > 2) {
		int32_t perm[PASCO_LAYER_MAX_SHAPE + 1] = {0};
		for (int32_t k = 1; k < x->rank - 1; k++) {
			perm[k] = k + 1;
		}
		perm[x->rank - 1] = 1;
		h                 = pasco_t_transpose(c->tp, h, perm);
	}
	return h == NULL
	           ? NULL
	           : pasco_t_reshape(c->tp, h, 2,
	                 (int64_t[]){x->shape[0], c->m->out_width[c->i]});
}

static bool
flatten_write(cJSON *c, const pasco_layer *l)
{
	return cJSON_AddStringToObject(c, "data_format",
	           l->channels_first ? "channels_first" : "channels_last") !=
	       NULL;
}

static int
flatten_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	return pasci_json_read_data_format(c, &l->channels_first, at);
}

const pasci_layer_desc pasci_layer_flatten_desc = {
    .kind       = PASCO_LAYER_FLATTEN,
    .class_name = "Flatten",
    .prefix     = "flatten",
    .keys       = {"name", "data_format"},
    .min_inputs = 1,
    .check      = flatten_check,
    .shape      = flatten_shape,
    .call       = flatten_call,
    .write      = flatten_write,
    .read       = flatten_read,
};
