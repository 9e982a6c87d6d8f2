/*
 * Keras 3's LayerNormalization: gamma * (x - mean) / sqrt(variance +
 * epsilon) + beta, mean and (biased) variance of each example over the
 * layer's axes (Keras's axis: an int or a list, counted with the batch's,
 * negative from the last; sorted, as Keras's build sorts them), made of
 * tape ops (the gradient goes through them); with rms_scaling, Keras's x
 * / sqrt(variance + epsilon) * gamma, no beta. Variables <name>/gamma
 * (scale or rms_scaling) and <name>/beta (center without rms_scaling) of
 * the input's dimensions at those axes, Keras's shape, broadcast along
 * the others; their regularizers and constraints as
 * BatchNormalization's. Its descriptor (layer_desc.h); the normalization
 * it shares with BatchNormalization is layer_norms.h's. Stateless: any
 * thread.
 */
#include "layer_norms.h"
#include "model_impl.h"
#include "tape_impl.h"
#include "util.h"

#include <stdlib.h>

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

/* Layer l's axes for an input of rank (the batch's included) as sorted
 * indices 1 .. rank - 1 into axes; their count, or -1 with
 * pasci_model_fail naming the layer when one is out of range or given
 * twice. */
static int
ln_axes(const pasco_layer *l, int32_t rank, int32_t *axes)
{
	size_t n = l->ln_naxes > 0 ? l->ln_naxes : 1;
	for (size_t k = 0; k < n; k++) {
		int32_t a = l->ln_naxes > 0 ? l->ln_axes[k] : -1;
		int32_t d = a < 0 ? a + rank : a;
		if (d < 1 || d >= rank) {
			pasci_model_fail(PASCO_EINVAL,
			    "%s: axis %d is out of range for an input of rank "
			    "%d (the batch's included): give -%d ... -1 or 1 "
			    "... %d (0 is the batch's)",
			    l->name, (int) a, (int) rank, (int) rank - 1,
			    (int) rank - 1);
			return -1;
		}
		/* insertion: sorted as Keras's build sorts them */
		size_t j = k;
		for (; j > 0 && axes[j - 1] > d; j--) {
			axes[j] = axes[j - 1];
		}
		if (j > 0 && axes[j - 1] == d) {
			pasci_model_fail(PASCO_EINVAL,
			    "%s: axis %d is given twice (Keras: duplicate "
			    "axes "
			    "are not allowed)",
			    l->name, (int) a);
			return -1;
		}
		axes[j] = d;
	}
	return (int) n;
}

static int
layer_norm_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) widths;
	(void) out;
	if (l->ln_naxes > PASCO_LAYER_MAX_SHAPE) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %zu axes; at most %d (an example has at most %d "
		    "dimensions)",
		    l->name, l->ln_naxes, PASCO_LAYER_MAX_SHAPE,
		    PASCO_LAYER_MAX_SHAPE);
	}
	return pasci_norm_check(l);
}

/* Its output has its input's shape; the axes must be the input's own. */
static int
layer_norm_shape(
    const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	int32_t axes[PASCO_LAYER_MAX_SHAPE];
	*out = in[0];
	return ln_axes(l, in[0].rank + 1, axes) < 0 ? PASCO_EINVAL : PASCO_OK;
}

static void
layer_norm_variables(pasco_model *m, size_t i, const int64_t *widths)
{
	const pasco_layer *l  = &m->layers[i];
	pasci_eshape       in = pasci_layer_in_shape(m, i, 0);
	int32_t            axes[PASCO_LAYER_MAX_SHAPE];
	int64_t            shape[PASCO_LAYER_MAX_SHAPE];
	int                n = ln_axes(l, in.rank + 1, axes);
	(void) widths;
	PASCO_ASSERT(n > 0); /* the shape hook checked them */
	for (int k = 0; k < n; k++) {
		shape[k] = in.dim[axes[k] - 1];
	}
	if (has_gamma(l)) {
		pasci_model_add_var_shape(
		    m, i, "gamma", n, shape, l->gamma_initializer);
		m->vars[m->nvars - 1].constraint = l->gamma_constraint;
	}
	if (has_beta(l)) {
		pasci_model_add_var_shape(
		    m, i, "beta", n, shape, l->beta_initializer);
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
	const pasco_layer  *l = &c->m->layers[c->i];
	const pasco_tensor *x = pasco_tnode_value(c->in[0]);
	pasco_tnode        *gamma, *beta, *xc, *mean, *var;
	int32_t             axes[PASCO_LAYER_MAX_SHAPE];
	int64_t             bshape[PASCO_MAX_RANK];
	int                 n;
	if (x == NULL || pasci_norm_affine_nodes(c, has_gamma(l), has_beta(l),
	                     &gamma, &beta) < 0) {
		return NULL;
	}
	if ((n = ln_axes(l, x->rank, axes)) < 0) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL, "%s: input %s: %s",
		    l->name, PASCI_SHAPE(x->rank, x->shape),
		    pasco_model_last_error());
	}
	/* gamma and beta [dims at the axes] broadcast along the others */
	for (int32_t d = 0; d < x->rank; d++) {
		bshape[d] = 1;
	}
	for (int k = 0; k < n; k++) {
		bshape[axes[k]] = x->shape[axes[k]];
	}
	pasco_tnode **vs[2] = {&gamma, &beta};
	for (int j = 0; j < 2; j++) {
		const pasco_tensor *t =
		    *vs[j] != NULL ? pasco_tnode_value(*vs[j]) : NULL;
		int64_t want = 1;
		for (int k = 0; k < n; k++) {
			want *= x->shape[axes[k]];
		}
		if (t != NULL && t->count != want) {
			return pasci_tape_fail(c->tp, PASCO_EINVAL,
			    "%s: input %s: %s is %s, not its dimensions at "
			    "the axes",
			    l->name, PASCI_SHAPE(x->rank, x->shape),
			    j == 0 ? "gamma" : "beta",
			    PASCI_SHAPE(t->rank, t->shape));
		}
		if (t != NULL && (*vs[j] = pasco_t_reshape(c->tp, *vs[j],
		                      x->rank, bshape)) == NULL) {
			return NULL;
		}
	}
	mean =
	    pasco_t_reduce_mean_axes(c->tp, c->in[0], (size_t) n, axes, true);
	xc  = pasco_t_sub(c->tp, c->in[0], mean);
	var = pasco_t_reduce_mean_axes(
	    c->tp, pasco_t_square(c->tp, xc), (size_t) n, axes, true);
	if (var == NULL) {
		return NULL;
	}
	if (c->in_mask != NULL && c->in_mask[0] != NULL) {
		c->mask = c->in_mask[0]; /* Keras's supports_masking */
	}
	return pasci_norm_finish(c->tp, l->rms_scaling ? c->in[0] : xc, var,
	    l->epsilon, gamma, beta);
}

/* Keras's axis: -1 by default, an int for one axis, else a list. */
static bool
layer_norm_write(cJSON *c, const pasco_layer *l)
{
	cJSON *axes;
	if (l->ln_naxes <= 1) {
		return pasci_norm_write(
		           c, l, l->ln_naxes == 1 ? l->ln_axes[0] : -1) &&
		       cJSON_AddBoolToObject(c, "rms_scaling", l->rms_scaling);
	}
	if (!pasci_norm_write(c, l, -1) ||
	    (axes = cJSON_CreateIntArray(l->ln_axes, (int) l->ln_naxes)) ==
	        NULL) {
		return false;
	}
	cJSON_ReplaceItemInObjectCaseSensitive(c, "axis", axes);
	return cJSON_AddBoolToObject(c, "rms_scaling", l->rms_scaling);
}

/* "axis": absent, an integer or a list of 1 to PASCO_LAYER_MAX_SHAPE
 * integers, none 0 (the batch's); their range is checked against the
 * input by the shape hook. */
static int
read_axes(const cJSON *c, pasco_layer *l, const char *at)
{
	const cJSON *a    = cJSON_GetObjectItemCaseSensitive(c, "axis"), *it;
	bool         list = cJSON_IsArray(a);
	int          n    = list ? cJSON_GetArraySize(a) : 1;
	l->ln_naxes       = 0;
	if (a == NULL) {
		return PASCO_OK;
	}
	if (n < 1 || n > PASCO_LAYER_MAX_SHAPE) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: axis must be an integer or a list of 1 to %d of "
		    "them, "
		    "got %d",
		    at, PASCO_LAYER_MAX_SHAPE, n);
	}
	for (int k = 0; k < n; k++) {
		it = list ? cJSON_GetArrayItem(a, k) : a;
		if (!cJSON_IsNumber(it) ||
		    it->valuedouble != (int32_t) it->valuedouble ||
		    it->valuedouble == 0 ||
		    it->valuedouble > PASCO_LAYER_MAX_SHAPE ||
		    it->valuedouble < -PASCO_LAYER_MAX_SHAPE - 1) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: axis must be integers between -%d and %d, "
			    "not "
			    "0 (the batch's)",
			    at, PASCO_LAYER_MAX_SHAPE + 1,
			    PASCO_LAYER_MAX_SHAPE);
		}
		l->ln_axes[k] = (int32_t) it->valuedouble;
	}
	l->ln_naxes = (size_t) n;
	return PASCO_OK;
}

static int
layer_norm_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	cJSON *rest;
	int    rv;
	(void) part;
	if (read_axes(c, l, at) != 0) {
		return PASCO_EINVAL;
	}
	/* the shared fields, its axis read above */
	if ((rest = cJSON_Duplicate(c, true)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	cJSON_DeleteItemFromObjectCaseSensitive(rest, "axis");
	rv = pasci_norm_read(rest, l, NULL, at) != 0 ||
	             pasci_json_bool(
	                 rest, "rms_scaling", &l->rms_scaling, at) != 0
	         ? PASCO_EINVAL
	         : PASCO_OK;
	cJSON_Delete(rest);
	return rv;
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
    .shape      = layer_norm_shape,
    .variables  = layer_norm_variables,
    .call       = layer_norm_call,
    .penalty    = layer_norm_penalty,
    .write      = layer_norm_write,
    .read       = layer_norm_read,
};
