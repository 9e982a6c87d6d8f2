/*
 * Keras's Dropout: zeroes a rate of its inputs, scaling the rest by
 * 1 / (1 - rate), on a training tape only. No variables. Its descriptor
 * (layer_desc.h). Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"

pasco_layer
pasco_layer_dropout(double rate)
{
	pasco_layer l = pasci_layer_defaults(PASCO_LAYER_DROPOUT);
	l.rate        = rate;
	return pasci_layer_named(l);
}

static int
dropout_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) widths;
	(void) out;
	if (!(l->rate >= 0 && l->rate < 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: rate must be in [0, 1), got %g", l->name, l->rate);
	}
	return PASCO_OK;
}

static pasco_tnode *
dropout_call(pasci_layer_call *c)
{
	return pasco_t_dropout(c->tp, c->in[0], c->m->layers[c->i].rate);
}

static bool
dropout_write(cJSON *c, const pasco_layer *l)
{
	return cJSON_AddNumberToObject(c, "rate", l->rate) != NULL;
}

static int
dropout_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	return pasci_json_number(c, "rate", &l->rate, false, 0, at);
}

const pasci_layer_desc pasci_layer_dropout_desc = {
    .kind       = PASCO_LAYER_DROPOUT,
    .class_name = "Dropout",
    .prefix     = "dropout",
    .keys       = {"name", "rate"},
    .args       = {"rate"},
    .min_inputs = 1,
    .check      = dropout_check,
    .call       = dropout_call,
    .write      = dropout_write,
    .read       = dropout_read,
};
