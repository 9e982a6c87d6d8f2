/*
 * Keras's Dot(axes, normalize=False) of two inputs [batch, d]: each
 * pair of rows' dot product, [batch, 1]; axes 1 or -1 (the one axis past
 * the batch; Keras's int or pair). normalize: each row l2-normalized
 * first, Keras's x * rsqrt(max(sum x^2, epsilon^2)), epsilon 1e-7. No
 * variables. Its descriptor (layer_desc.h). Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

/* Keras's backend.epsilon(), squared: normalize's bound on sum x^2 */
#define DOT_EPSILON2 1e-14

pasco_layer
pasco_layer_dot(int32_t axes, bool normalize)
{
	pasco_layer l = pasci_layer_defaults(PASCO_LAYER_DOT);
	l.dot_axes[0] = l.dot_axes[1] = axes;
	l.normalize                   = normalize;
	return pasci_layer_named(l);
}

static int
dot_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) widths;
	(void) out;
	if (l->ninputs != 2) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a Dot takes 2 inputs, got %zu", l->name, l->ninputs);
	}
	for (int k = 0; k < 2; k++) {
		if (l->dot_axes[k] != 1 && l->dot_axes[k] != -1) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: axes (%d, %d): inputs [batch, d] are dotted "
			    "along axis 1 (or -1)",
			    l->name, (int) l->dot_axes[0],
			    (int) l->dot_axes[1]);
		}
	}
	return PASCO_OK;
}

static int
dot_shape(const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	if (in[0].rank != 1 || in[1].rank != 1 ||
	    in[0].dim[0] != in[1].dim[0]) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: inputs are %s and %s per example; a Dot takes two "
		    "[batch, d] of one d",
		    l->name, PASCI_ESHAPE(&in[0]), PASCI_ESHAPE(&in[1]));
	}
	*out = (pasci_eshape){1, {1}};
	return PASCO_OK;
}

static pasco_tnode *
dot_call(pasci_layer_call *c)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tnode       *x = c->in[0], *y = c->in[1];
	if (l->normalize) {
		x = pasco_t_l2_normalize(c->tp, x, 1, DOT_EPSILON2);
		y = pasco_t_l2_normalize(c->tp, y, 1, DOT_EPSILON2);
	}
	/* sum(x * y) over axis 1, kept: [batch, 1] (of any batch, 0 too) */
	return pasco_t_reduce_sum_axes(
	    c->tp, pasco_t_mul(c->tp, x, y), 1, (int32_t[]){1}, true);
}

static bool
dot_write(cJSON *c, const pasco_layer *l)
{
	bool ok;
	if (l->dot_axes[0] == l->dot_axes[1]) {
		ok =
		    cJSON_AddNumberToObject(c, "axes", l->dot_axes[0]) != NULL;
	} else {
		int64_t axes[2] = {l->dot_axes[0], l->dot_axes[1]};
		ok = pasci_json_write_dims(c, "axes", 2, axes, false);
	}
	return ok && cJSON_AddBoolToObject(c, "normalize", l->normalize);
}

static int
dot_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c, "axes");
	(void) part;
	if (cJSON_IsArray(a)) {
		int32_t n = 0;
		int64_t axes[2];
		if (pasci_json_read_dims(c, "axes", &n, axes, 2, false, at) ||
		    n != 2) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: axes must be an integer or a pair of them",
			    at);
		}
		l->dot_axes[0] = (int32_t) axes[0];
		l->dot_axes[1] = (int32_t) axes[1];
	} else if (a != NULL) {
		int64_t axes = 0;
		if (pasci_json_int(c, "axes", &axes, -8, at) != 0 ||
		    axes > 8) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: axes must be an integer or a pair of them",
			    at);
		}
		l->dot_axes[0] = l->dot_axes[1] = (int32_t) axes;
	}
	return pasci_json_bool(c, "normalize", &l->normalize, at);
}

const pasci_layer_desc pasci_layer_dot_desc = {
    .kind       = PASCO_LAYER_DOT,
    .class_name = "Dot",
    .prefix     = "dot",
    .keys       = {"name", "axes", "normalize"},
    .args       = {"axes"},
    .min_inputs = 2,
    .check      = dot_check,
    .shape      = dot_shape,
    .call       = dot_call,
    .write      = dot_write,
    .read       = dot_read,
};
