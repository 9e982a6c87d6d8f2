/*
 * Keras 3's LayerNormalization (axis -1): gamma * (x - mean) /
 * sqrt(variance + epsilon) + beta, mean and (biased) variance over each
 * example's features, made of tape ops (the gradient goes through them);
 * with rms_scaling, Keras's x / sqrt(variance + epsilon) * gamma, no
 * beta. Variables <name>/gamma (scale or rms_scaling) and <name>/beta
 * (center without rms_scaling) [width], their regularizers and
 * constraints as BatchNormalization's. Its descriptor (layer_desc.h);
 * the normalization it shares with BatchNormalization is layer_norms.h's.
 * Stateless: any thread.
 */
#include "layer_norms.h"
#include "model_impl.h"
#include "tape_impl.h"

static void
layer_norm_defaults(pasco_layer *l)
{
	l->epsilon           = 1e-3;
	l->center            = true;
	l->scale             = true;
	l->beta_initializer  = pasco_init_zeros();
	l->gamma_initializer = pasco_init_ones();
}

pasco_layer
pasco_layer_layer_normalization(void)
{
	return pasci_layer_named(
	    pasci_layer_defaults(PASCO_LAYER_LAYER_NORMALIZATION));
}

static bool
has_gamma(const pasco_layer *l)
{
	return l->scale || l->rms_scaling;
}

static bool
has_beta(const pasco_layer *l)
{
	return l->center && !l->rms_scaling;
}

static int
layer_norm_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) widths;
	(void) out;
	return pasci_norm_check(l);
}

static void
layer_norm_variables(pasco_model *m, size_t i, const int64_t *widths)
{
	const pasco_layer *l = &m->layers[i];
	if (has_gamma(l)) {
		pasci_model_add_var(
		    m, i, "gamma", 1, widths[0], 0, l->gamma_initializer);
		m->vars[m->nvars - 1].constraint = l->gamma_constraint;
	}
	if (has_beta(l)) {
		pasci_model_add_var(
		    m, i, "beta", 1, widths[0], 0, l->beta_initializer);
		m->vars[m->nvars - 1].constraint = l->beta_constraint;
	}
}

static pasco_tnode *
layer_norm_penalty(pasci_layer_call *c, pasco_tnode *loss)
{
	const pasco_layer *l = &c->m->layers[c->i];
	return pasci_norm_penalty(c, has_gamma(l), has_beta(l), loss);
}

static pasco_tnode *
layer_norm_call(pasci_layer_call *c)
{
	const pasco_layer *l     = &c->m->layers[c->i];
	int64_t            width = c->m->out_width[c->i];
	pasco_tnode       *gamma, *beta, *x, *xc, *mean, *var;
	if (pasci_norm_affine_nodes(
	        c, has_gamma(l), has_beta(l), &gamma, &beta) < 0 ||
	    (x = pasci_norm_input(c, width)) == NULL ||
	    (xc = pasci_norm_moments(c->tp, x, -1, &mean, &var)) == NULL) {
		return NULL;
	}
	return pasci_norm_finish(
	    c->tp, l->rms_scaling ? x : xc, var, l->epsilon, gamma, beta);
}

static bool
layer_norm_write(cJSON *c, const pasco_layer *l)
{
	return pasci_norm_write(c, l, -1) &&
	       cJSON_AddBoolToObject(c, "rms_scaling", l->rms_scaling);
}

static int
layer_norm_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	return pasci_norm_read(c, l, NULL, at) != 0 ||
	               pasci_json_bool(
	                   c, "rms_scaling", &l->rms_scaling, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

const pasci_layer_desc pasci_layer_layer_norm_desc = {
    .kind       = PASCO_LAYER_LAYER_NORMALIZATION,
    .class_name = "LayerNormalization",
    .prefix     = "layer_normalization",
    .keys       = {"name", "axis", "epsilon", "center", "scale", "rms_scaling",
              "beta_initializer", "gamma_initializer", "beta_regularizer",
              "gamma_regularizer", "beta_constraint", "gamma_constraint"},
    .min_inputs = 1,
    .defaults   = layer_norm_defaults,
    .check      = layer_norm_check,
    .variables  = layer_norm_variables,
    .call       = layer_norm_call,
    .penalty    = layer_norm_penalty,
    .write      = layer_norm_write,
    .read       = layer_norm_read,
};
