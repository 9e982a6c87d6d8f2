/*
 * Keras 3's BatchNormalization on [batch, width] (axis -1): gamma * (x -
 * mean) / sqrt(variance + epsilon) + beta per feature; variables
 * <name>/gamma and /beta (trainable), /moving_mean and /moving_variance
 * (non-trainable). On a training tape mean and variance are the batch's
 * (biased), made of tape ops so the gradient goes through them, and each
 * moving statistic gets an update recorded on the tape, (batch - read) *
 * (1 - momentum), which pasco_tape_apply adds on the ps with the step's
 * gradients (why an add: layers.h, "BatchNormalization"). Otherwise the
 * moving statistics enter as constants. Its descriptor (layer_desc.h), and
 * what it shares with LayerNormalization (layer_norms.h). Stateless: any
 * thread.
 */
#include "layer_norms.h"
#include "model_impl.h"
#include "tape_impl.h"
#include "util.h"

#include <math.h>
#include <stdio.h>

static void
batch_norm_defaults(pasco_layer *l)
{
	l->momentum                    = 0.99;
	l->epsilon                     = 1e-3;
	l->center                      = true;
	l->scale                       = true;
	l->beta_initializer            = pasco_init_zeros();
	l->gamma_initializer           = pasco_init_ones();
	l->moving_mean_initializer     = pasco_init_zeros();
	l->moving_variance_initializer = pasco_init_ones();
}

pasco_layer
pasco_layer_batch_normalization(void)
{
	return pasci_layer_named(
	    pasci_layer_defaults(PASCO_LAYER_BATCH_NORMALIZATION));
}

/* ---- shared with LayerNormalization (layer_norms.h) ---- */

int
pasci_norm_affine_nodes(pasci_layer_call *c, bool has_gamma, bool has_beta,
    pasco_tnode **gamma, pasco_tnode **beta)
{
	int j  = 0;
	*gamma = *beta = NULL;
	if (has_gamma && (*gamma = pasci_layer_var_node(c->m, c->tp, c->i,
	                      (size_t) j++, c->nodes)) == NULL) {
		return -1;
	}
	if (has_beta && (*beta = pasci_layer_var_node(c->m, c->tp, c->i,
	                     (size_t) j++, c->nodes)) == NULL) {
		return -1;
	}
	return j;
}

pasco_tnode *
pasci_norm_input(pasci_layer_call *c, int64_t width)
{
	const pasco_tensor *x = pasco_tnode_value(c->in[0]);
	if (x == NULL) {
		return NULL;
	}
	if (x->rank != 2 || x->shape[1] != width) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL,
		    "%s: input %s is not [batch, %lld]",
		    c->m->layers[c->i].name, PASCI_SHAPE(x->rank, x->shape),
		    (long long) width);
	}
	return c->in[0];
}

pasco_tnode *
pasci_norm_moments(pasco_tape *tp, pasco_tnode *x, int32_t axis,
    pasco_tnode **mean, pasco_tnode **var)
{
	pasco_tnode *xc;
	*mean = pasco_t_reduce_mean_axes(tp, x, 1, &axis, true);
	xc    = pasco_t_sub(tp, x, *mean);
	*var  = pasco_t_reduce_mean_axes(
	     tp, pasco_t_square(tp, xc), 1, &axis, true);
	return *var != NULL ? xc : NULL;
}

pasco_tnode *
pasci_norm_finish(pasco_tape *tp, pasco_tnode *num, pasco_tnode *var,
    double epsilon, pasco_tnode *gamma, pasco_tnode *beta)
{
	const pasco_tensor *v = pasco_tnode_value(var);
	pasco_tensor       *e;
	pasco_tnode        *y;
	if (v == NULL || pasco_tape_error(tp) != PASCO_OK) {
		return NULL;
	}
	if (pasco_tensor_scalar(&e, v->dtype, epsilon) != 0) {
		return pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
	}
	y = pasco_t_div(tp, num,
	    pasco_t_sqrt(
	        tp, pasco_t_add(tp, var, pasco_tape_constant(tp, e))));
	pasco_tensor_release(e); /* the tape holds it */
	if (gamma != NULL) {
		y = pasco_t_mul(tp, y, gamma);
	}
	return beta != NULL ? pasco_t_add(tp, y, beta) : y;
}

int
pasci_norm_check(const pasco_layer *l)
{
	if (!(l->epsilon >= 0) || !isfinite(l->epsilon)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: epsilon must be a number >= 0, got %g", l->name,
		    l->epsilon);
	}
	return PASCO_OK;
}

static const char *const null_keys[] = {"beta_regularizer",
    "gamma_regularizer", "beta_constraint", "gamma_constraint"};

bool
pasci_norm_write(cJSON *c, const pasco_layer *l)
{
	bool ok = cJSON_AddNumberToObject(c, "axis", -1) &&
	          cJSON_AddNumberToObject(c, "epsilon", l->epsilon) &&
	          cJSON_AddBoolToObject(c, "center", l->center) &&
	          cJSON_AddBoolToObject(c, "scale", l->scale) &&
	          pasci_json_write_init(
	              c, "beta_initializer", &l->beta_initializer) &&
	          pasci_json_write_init(
	              c, "gamma_initializer", &l->gamma_initializer);
	for (size_t k = 0; ok && k < 4; k++) {
		ok = cJSON_AddNullToObject(c, null_keys[k]) != NULL;
	}
	return ok;
}

/* "axis": absent, -1 or 1 (the last of [batch, width]), or a list of one
 * of those (Keras's LayerNormalization writes [1] once built). */
static int
read_last_axis(const cJSON *c, const char *at)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c, "axis");
	if (cJSON_IsArray(a) && cJSON_GetArraySize(a) == 1) {
		a = cJSON_GetArrayItem(a, 0);
	}
	if (a != NULL && !(cJSON_IsNumber(a) &&
	                     (a->valuedouble == -1 || a->valuedouble == 1))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: axis must be -1 or 1 (the last axis of [batch, "
		    "width] inputs)",
		    at);
	}
	return PASCO_OK;
}

int
pasci_norm_read(const cJSON *c, pasco_layer *l, const char *at)
{
	if (read_last_axis(c, at) != 0 ||
	    pasci_json_number(c, "epsilon", &l->epsilon, false, 0, at) != 0 ||
	    pasci_json_bool(c, "center", &l->center, at) != 0 ||
	    pasci_json_bool(c, "scale", &l->scale, at) != 0 ||
	    pasci_json_read_init(
	        c, "beta_initializer", &l->beta_initializer, at) != 0 ||
	    pasci_json_read_init(
	        c, "gamma_initializer", &l->gamma_initializer, at) != 0) {
		return PASCO_EINVAL;
	}
	for (size_t k = 0; k < 4; k++) {
		const cJSON *v =
		    cJSON_GetObjectItemCaseSensitive(c, null_keys[k]);
		if (v != NULL && !cJSON_IsNull(v)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: %s must be null (a regularizer or constraint "
			    "on gamma and beta is not supported)",
			    at, null_keys[k]);
		}
	}
	return PASCO_OK;
}

/* ---- BatchNormalization ---- */

static int
batch_norm_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) widths;
	(void) out;
	if (!(l->momentum >= 0 && l->momentum <= 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: momentum must be in [0, 1], got %g", l->name,
		    l->momentum);
	}
	return pasci_norm_check(l);
}

static size_t
batch_norm_max_vars(const pasco_layer *l)
{
	(void) l;
	return 4;
}

static void
batch_norm_variables(pasco_model *m, size_t i, const int64_t *widths)
{
	const pasco_layer *l = &m->layers[i];
	if (l->scale) {
		pasci_model_add_var(
		    m, i, "gamma", 1, widths[0], 0, l->gamma_initializer);
	}
	if (l->center) {
		pasci_model_add_var(
		    m, i, "beta", 1, widths[0], 0, l->beta_initializer);
	}
	pasci_model_add_var(
	    m, i, "moving_mean", 1, widths[0], 0, l->moving_mean_initializer);
	pasci_model_add_var(m, i, "moving_variance", 1, widths[0], 0,
	    l->moving_variance_initializer);
}

/* A moving statistic's value as a constant of dtype [width]: read, never
 * differentiated. */
static pasco_tnode *
stat_constant(pasco_tape *tp, pasco_tnode *moving, pasco_dtype dtype)
{
	const pasco_tensor *v = pasco_tnode_value(moving);
	pasco_tensor       *t;
	pasco_tnode        *n;
	if (pasco_tensor_alloc(&t, dtype, 1, &v->count) != 0) {
		return pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
	}
	for (int64_t j = 0; j < v->count; j++) {
		pasco_tensor_set(t, j, pasco_tensor_get(v, j));
	}
	n = pasco_tape_constant(tp, t);
	pasco_tensor_release(t);
	return n;
}

/* Records moving's update toward the batch's statistic stat ([1,
 * width]): (stat - moving) * (1 - momentum), against the value read. */
static bool
record_update(
    pasco_tape *tp, pasco_tnode *moving, pasco_tnode *stat, double momentum)
{
	const pasco_tensor *v = pasco_tnode_value(moving);
	const pasco_tensor *s = pasco_tnode_value(stat);
	pasco_tensor       *d;
	bool                ok;
	if (pasco_tensor_alloc(&d, v->dtype, v->rank, v->shape) != 0) {
		pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
		return false;
	}
	for (int64_t j = 0; j < v->count; j++) {
		double read = pasco_tensor_get(v, j);
		pasco_tensor_set(
		    d, j, (pasco_tensor_get(s, j) - read) * (1 - momentum));
	}
	ok = pasci_tape_add_update(tp, moving, d);
	pasco_tensor_release(d);
	return ok;
}

static pasco_tnode *
batch_norm_call(pasci_layer_call *c)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tnode       *gamma, *beta, *mm, *mv, *x, *xc, *mean, *var;
	int j = pasci_norm_affine_nodes(c, l->scale, l->center, &gamma, &beta);
	mm    = j < 0 ? NULL
	              : pasci_layer_var_node(
	                    c->m, c->tp, c->i, (size_t) j, c->nodes);
	mv    = mm == NULL ? NULL
	                   : pasci_layer_var_node(
	                         c->m, c->tp, c->i, (size_t) j + 1, c->nodes);
	if (mv == NULL ||
	    (x = pasci_norm_input(c, pasco_tnode_value(mm)->count)) == NULL) {
		return NULL;
	}
	if (pasci_tape_training(c->tp)) {
		xc = pasci_norm_moments(c->tp, x, 0, &mean, &var);
		if (xc == NULL ||
		    !record_update(c->tp, mm, mean, l->momentum) ||
		    !record_update(c->tp, mv, var, l->momentum)) {
			return NULL;
		}
	} else {
		pasco_dtype dt = pasco_tnode_value(x)->dtype;
		mean           = stat_constant(c->tp, mm, dt);
		var            = stat_constant(c->tp, mv, dt);
		xc             = pasco_t_sub(c->tp, x, mean);
	}
	return pasci_norm_finish(c->tp, xc, var, l->epsilon, gamma, beta);
}

static bool
batch_norm_write(cJSON *c, const pasco_layer *l)
{
	return cJSON_AddNumberToObject(c, "momentum", l->momentum) &&
	       pasci_norm_write(c, l) &&
	       pasci_json_write_init(c, "moving_mean_initializer",
	           &l->moving_mean_initializer) &&
	       pasci_json_write_init(c, "moving_variance_initializer",
	           &l->moving_variance_initializer) &&
	       cJSON_AddBoolToObject(c, "synchronized", false);
}

static int
batch_norm_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	const cJSON *sync =
	    cJSON_GetObjectItemCaseSensitive(c, "synchronized");
	(void) part;
	if (pasci_norm_read(c, l, at) != 0 ||
	    pasci_json_number(c, "momentum", &l->momentum, false, 0, at) !=
	        0 ||
	    pasci_json_read_init(c, "moving_mean_initializer",
	        &l->moving_mean_initializer, at) != 0 ||
	    pasci_json_read_init(c, "moving_variance_initializer",
	        &l->moving_variance_initializer, at) != 0) {
		return PASCO_EINVAL;
	}
	if (sync != NULL && !cJSON_IsFalse(sync)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: synchronized must be false (each worker's batch "
		    "statistics are its own)",
		    at);
	}
	return PASCO_OK;
}

const pasci_layer_desc pasci_layer_batch_norm_desc = {
    .kind       = PASCO_LAYER_BATCH_NORMALIZATION,
    .class_name = "BatchNormalization",
    .prefix     = "batch_normalization",
    .keys       = {"name", "axis", "momentum", "epsilon", "center", "scale",
              "beta_initializer", "gamma_initializer", "moving_mean_initializer",
              "moving_variance_initializer", "beta_regularizer", "gamma_regularizer",
              "beta_constraint", "gamma_constraint", "synchronized"},
    .min_inputs = 1,
    .defaults   = batch_norm_defaults,
    .check      = batch_norm_check,
    .max_vars   = batch_norm_max_vars,
    .variables  = batch_norm_variables,
    .call       = batch_norm_call,
    .write      = batch_norm_write,
    .read       = batch_norm_read,
};
