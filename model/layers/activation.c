/*
 * Keras's Activation: one activation of its input. No variables. Its
 * descriptor (layer_desc.h). Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"

pasco_layer
pasco_layer_activation(pasco_act activation)
{
	pasco_layer l = pasci_layer_defaults(PASCO_LAYER_ACTIVATION);
	l.activation  = activation;
	return pasci_layer_named(l);
}

static int
activation_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) widths;
	(void) out;
	if (pasco_act_name(l->activation) == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: unknown activation %d", l->name, (int) l->activation);
	}
	return PASCO_OK;
}

static pasco_tnode *
activation_call(pasci_layer_call *c)
{
	c->pre = c->in[0];
	c->act = c->m->layers[c->i].activation;
	return pasci_layer_activate(c->tp, c->in[0], c->act);
}

static bool
activation_write(cJSON *c, const pasco_layer *l)
{
	return cJSON_AddStringToObject(
	           c, "activation", pasco_act_name(l->activation)) != NULL;
}

static int
activation_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	return pasci_json_read_act(c, &l->activation, at);
}

const pasci_layer_desc pasci_layer_activation_desc = {
    .kind       = PASCO_LAYER_ACTIVATION,
    .class_name = "Activation",
    .prefix     = "activation",
    .keys       = {"name", "activation"},
    .args       = {"activation"},
    .min_inputs = 1,
    .keeps_shape = true,
    .check      = activation_check,
    .call       = activation_call,
    .write      = activation_write,
    .read       = activation_read,
};
