/*
 * Keras 3's BatchNormalization on [batch, ...] along its axis (the last
 * by default): gamma * (x - mean) / sqrt(variance + epsilon) + beta per
 * feature of that axis, the statistics over every other axis; variables
 * <name>/gamma and /beta (trainable), /moving_mean and /moving_variance
 * (non-trainable). On a training tape mean and variance are the batch's
 * (biased), made of tape ops so the gradient goes through them, and each
 * moving statistic gets an update recorded on the tape, (batch - read) *
 * (1 - momentum), which pasco_tape_apply adds on the ps with the step's
 * gradients (why an add: layers.h, "BatchNormalization"). A masked
 * input (an Embedding's mask_zero, [batch, steps] over [batch, steps,
 * dim]) has Keras's masked moments in training: the mean and variance
 * over the unmasked steps only, each sum divided by (unmasked count +
 * 1e-7), and the moving statistics move toward them. Otherwise the
 * moving statistics enter as constants, as they do in every step of a
 * frozen layer (Keras's trainable=False), whose gamma and beta enter as
 * constants too. Its descriptor (layer_desc.h), and
 * what it shares with LayerNormalization (layer_norms.h). Stateless: any
 * thread.
 */
#include "layer_norms.h"
#include "model_impl.h"
#include "tape_impl.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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
	l->bn_axis                     = -1;
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
	if (!(l->gamma_l1 >= 0) || !(l->gamma_l2 >= 0) || !(l->beta_l1 >= 0) ||
	    !(l->beta_l2 >= 0)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: the regularizers' factors must be >= 0, got gamma "
		    "l1 %g, l2 %g, beta l1 %g, l2 %g",
		    l->name, l->gamma_l1, l->gamma_l2, l->beta_l1, l->beta_l2);
	}
	return PASCO_OK;
}

bool
pasci_norm_write(cJSON *c, const pasco_layer *l, int32_t axis)
{
	return cJSON_AddNumberToObject(c, "axis", axis) &&
	       cJSON_AddNumberToObject(c, "epsilon", l->epsilon) &&
	       cJSON_AddBoolToObject(c, "center", l->center) &&
	       cJSON_AddBoolToObject(c, "scale", l->scale) &&
	       pasci_json_write_init(
	           c, "beta_initializer", &l->beta_initializer) &&
	       pasci_json_write_init(
	           c, "gamma_initializer", &l->gamma_initializer) &&
	       pasci_json_write_reg(
	           c, "beta_regularizer", l->beta_l1, l->beta_l2) &&
	       pasci_json_write_reg(
	           c, "gamma_regularizer", l->gamma_l1, l->gamma_l2) &&
	       pasci_json_write_constraint(
	           c, "beta_constraint", &l->beta_constraint) &&
	       pasci_json_write_constraint(
	           c, "gamma_constraint", &l->gamma_constraint);
}

/* "axis": absent, an integer, or a list of one (Keras's
 * LayerNormalization writes [1] once built) into *axis; last_only: -1 or
 * 1 (the last axis of [batch, width] inputs) only. Never 0, the batch's. */
static int
read_axis(const cJSON *c, int32_t *axis, bool last_only, const char *at)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c, "axis");
	if (cJSON_IsArray(a) && cJSON_GetArraySize(a) == 1) {
		a = cJSON_GetArrayItem(a, 0);
	}
	if (a == NULL) {
		return PASCO_OK;
	}
	if (last_only && !(cJSON_IsNumber(a) &&
	                     (a->valuedouble == -1 || a->valuedouble == 1))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: axis must be -1 or 1 (the last axis of [batch, "
		    "width] inputs)",
		    at);
	}
	if (!cJSON_IsNumber(a) || a->valuedouble != (int32_t) a->valuedouble ||
	    a->valuedouble == 0 || fabs(a->valuedouble) > PASCO_MAX_RANK) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: axis must be one integer, not 0 (the batch's), "
		    "between -%d and %d (a list of several axes is not "
		    "supported, as in Keras 3's BatchNormalization)",
		    at, PASCO_MAX_RANK, PASCO_MAX_RANK);
	}
	*axis = (int32_t) a->valuedouble;
	return PASCO_OK;
}

int
pasci_norm_read(const cJSON *c, pasco_layer *l, int32_t *axis, const char *at)
{
	int32_t last = -1;
	return read_axis(c, axis != NULL ? axis : &last, axis == NULL, at) !=
	                   0 ||
	               pasci_json_number(
	                   c, "epsilon", &l->epsilon, false, 0, at) != 0 ||
	               pasci_json_bool(c, "center", &l->center, at) != 0 ||
	               pasci_json_bool(c, "scale", &l->scale, at) != 0 ||
	               pasci_json_read_init(c, "beta_initializer",
	                   &l->beta_initializer, at) != 0 ||
	               pasci_json_read_init(c, "gamma_initializer",
	                   &l->gamma_initializer, at) != 0 ||
	               pasci_json_read_reg(c, "beta_regularizer", &l->beta_l1,
	                   &l->beta_l2, at) != 0 ||
	               pasci_json_read_reg(c, "gamma_regularizer",
	                   &l->gamma_l1, &l->gamma_l2, at) != 0 ||
	               pasci_json_read_constraint(c, "beta_constraint",
	                   &l->beta_constraint, at) != 0 ||
	               pasci_json_read_constraint(c, "gamma_constraint",
	                   &l->gamma_constraint, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

pasco_tnode *
pasci_norm_penalty(
    pasci_layer_call *c, bool has_gamma, bool has_beta, pasco_tnode *loss)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tnode       *gamma, *beta;
	if ((l->gamma_l1 == 0 && l->gamma_l2 == 0 && l->beta_l1 == 0 &&
	        l->beta_l2 == 0) ||
	    pasci_norm_affine_nodes(c, has_gamma, has_beta, &gamma, &beta) <
	        0) {
		return pasco_tape_error(c->tp) == PASCO_OK ? loss : NULL;
	}
	loss =
	    pasci_layer_reg_term(c->tp, loss, gamma, l->gamma_l1, l->gamma_l2);
	return pasci_layer_reg_term(c->tp, loss, beta, l->beta_l1, l->beta_l2);
}

/* ---- BatchNormalization ---- */

/* Keras's axis of an input of rank (the batch's included) as an index. */
static int32_t
bn_axis(const pasco_layer *l, int32_t rank)
{
	return l->bn_axis < 0 ? l->bn_axis + rank : l->bn_axis;
}

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
	if (l->bn_axis == 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: axis 0 is the batch's: give a feature axis (-1, the "
		    "last, or 1 ... rank - 1)",
		    l->name);
	}
	return pasci_norm_check(l);
}

/* Its output has its input's shape; the axis must be one of the input's
 * own (not the batch's). */
static int
batch_norm_shape(
    const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	int32_t rank = in[0].rank + 1, a = bn_axis(l, rank);
	*out = in[0];
	if (a < 1 || a >= rank) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: axis %d is out of range for its input (batch, %s "
		    "per example): give -%d ... -1 or 1 ... %d",
		    l->name, (int) l->bn_axis, PASCI_ESHAPE(&in[0]),
		    (int) rank - 1, (int) rank - 1);
	}
	return PASCO_OK;
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
	const pasco_layer *l  = &m->layers[i];
	pasci_eshape       in = pasci_layer_in_shape(m, i, 0);
	int64_t            n  = in.dim[bn_axis(l, in.rank + 1) - 1];
	(void) widths;
	if (l->scale) {
		pasci_model_add_var(
		    m, i, "gamma", 1, n, 0, l->gamma_initializer);
		m->vars[m->nvars - 1].constraint = l->gamma_constraint;
	}
	if (l->center) {
		pasci_model_add_var(
		    m, i, "beta", 1, n, 0, l->beta_initializer);
		m->vars[m->nvars - 1].constraint = l->beta_constraint;
	}
	pasci_model_add_var(
	    m, i, "moving_mean", 1, n, 0, l->moving_mean_initializer);
	pasci_model_add_var(
	    m, i, "moving_variance", 1, n, 0, l->moving_variance_initializer);
}

/* The shape [1, .., n, .., 1] of rank with n at axis: a per-feature
 * vector broadcast along x. */
static void
feature_shape(int32_t rank, int32_t axis, int64_t n, int64_t *shape)
{
	for (int32_t d = 0; d < rank; d++) {
		shape[d] = d == axis ? n : 1;
	}
}

/* A variable's value as a constant of dtype and shape: read, never
 * differentiated (the moving statistics; a frozen layer's gamma and
 * beta). */
static pasco_tnode *
stat_constant(pasco_tape *tp, pasco_tnode *var, pasco_dtype dtype,
    int32_t rank, const int64_t *shape)
{
	const pasco_tensor *v = pasco_tnode_value(var);
	pasco_tensor       *t;
	pasco_tnode        *n;
	if (v == NULL) {
		return NULL;
	}
	if (pasco_tensor_alloc(&t, dtype, rank, shape) != 0) {
		return pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
	}
	for (int64_t j = 0; j < v->count; j++) {
		pasco_tensor_set(t, j, pasco_tensor_get(v, j));
	}
	n = pasco_tape_constant(tp, t);
	pasco_tensor_release(t);
	return n;
}

/* Records moving's update toward the batch's statistic stat (its n
 * features, kept axes of 1 around them): (stat - moving) * (1 -
 * momentum), against the value read. */
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

/* The input node of layer c->i, checked: n features along its axis
 * (whose index goes into *axis). NULL with the tape's error set. */
static pasco_tnode *
bn_input(pasci_layer_call *c, int64_t n, int32_t *axis)
{
	const pasco_layer  *l = &c->m->layers[c->i];
	const pasco_tensor *x = pasco_tnode_value(c->in[0]);
	if (x == NULL) {
		return NULL;
	}
	*axis = bn_axis(l, x->rank);
	if (x->rank < 2 || *axis < 1 || *axis >= x->rank ||
	    x->shape[*axis] != n) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL,
		    "%s: input %s has not %lld features along axis %d",
		    l->name, PASCI_SHAPE(x->rank, x->shape), (long long) n,
		    (int) l->bn_axis);
	}
	return c->in[0];
}

/* x's mean and biased variance over every axis but axis (kept as 1),
 * into *mean and *var; returns x - mean. */
static pasco_tnode *
bn_moments(pasco_tape *tp, pasco_tnode *x, int32_t rank, int32_t axis,
    pasco_tnode **mean, pasco_tnode **var)
{
	int32_t      axes[PASCO_MAX_RANK];
	size_t       n = 0;
	pasco_tnode *xc;
	for (int32_t d = 0; d < rank; d++) {
		if (d != axis) {
			axes[n++] = d;
		}
	}
	*mean = pasco_t_reduce_mean_axes(tp, x, n, axes, true);
	xc    = pasco_t_sub(tp, x, *mean);
	*var  = pasco_t_reduce_mean_axes(
	     tp, pasco_t_square(tp, xc), n, axes, true);
	return *var != NULL ? xc : NULL;
}

/* Keras's masked moments (BatchNormalization._moments with a mask): m
 * the mask over every axis of x but its last (one number per step), the
 * sums over every axis but axis of the unmasked elements, *mean =
 * sum(x) / (count + 1e-7), *var = sum((x - mean)^2) / (count + 1e-7);
 * returns x - mean (every element: the masked steps are normalized too).
 * NULL with the tape's error set when m does not fit x. */
static pasco_tnode *
bn_masked_moments(pasco_tape *tp, const char *name, pasco_tnode *x,
    const pasco_tensor *m, int32_t axis, pasco_tnode **mean, pasco_tnode **var)
{
	const pasco_tensor *xv   = pasco_tnode_value(x);
	int32_t             rank = xv->rank, axes[PASCO_MAX_RANK];
	int64_t             last = xv->shape[rank - 1], shape[PASCO_MAX_RANK];
	size_t              n    = 0;
	pasco_tensor       *mt, *ct;
	pasco_tnode        *mn, *cn, *xc;
	if (m->count * last != xv->count) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: the mask %s does not fit the input %s (want one "
		    "number per step, its shape but the last axis)",
		    name, PASCI_SHAPE(m->rank, m->shape),
		    PASCI_SHAPE(rank, xv->shape));
	}
	for (int32_t d = 0; d < rank; d++) {
		shape[d] = d == axis ? xv->shape[d] : 1;
		if (d != axis) {
			axes[n++] = d;
		}
	}
	if (pasco_tensor_alloc(&mt, xv->dtype, rank, xv->shape) != 0) {
		return pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
	}
	if (pasco_tensor_alloc(&ct, xv->dtype, rank, shape) != 0) {
		pasco_tensor_release(mt);
		return pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
	}
	double *count = pasci_calloc((size_t) xv->shape[axis], sizeof(*count));
	int64_t inner = 1; /* the stride of axis */
	for (int32_t d = axis + 1; d < rank; d++) {
		inner *= xv->shape[d];
	}
	for (int64_t i = 0; count != NULL && i < xv->count; i++) {
		double on = pasco_tensor_get(m, i / last) != 0;
		pasco_tensor_set(mt, i, on);
		count[(i / inner) % xv->shape[axis]] += on;
	}
	for (int64_t j = 0; count != NULL && j < xv->shape[axis]; j++) {
		pasco_tensor_set(ct, j, count[j] + 1e-7); /* Keras's epsilon */
	}
	mn = count != NULL ? pasco_tape_constant(tp, mt) : NULL;
	cn = count != NULL ? pasco_tape_constant(tp, ct) : NULL;
	free(count);
	pasco_tensor_release(mt);
	pasco_tensor_release(ct);
	if (mn == NULL || cn == NULL) {
		return pasco_tape_error(tp) != 0
		           ? NULL
		           : pasci_tape_fail(
		                 tp, PASCO_ENOMEM, "out of memory");
	}
	*mean = pasco_t_div(tp,
	    pasco_t_reduce_sum_axes(tp, pasco_t_mul(tp, x, mn), n, axes, true),
	    cn);
	xc    = pasco_t_sub(tp, x, *mean);
	*var  = pasco_t_div(tp,
	     pasco_t_reduce_sum_axes(tp,
	         pasco_t_square(tp, pasco_t_mul(tp, xc, mn)), n, axes, true),
	     cn);
	return *var != NULL ? xc : NULL;
}

/* gamma and beta ([n]) shaped to broadcast along x's axis; a frozen
 * layer's as constants. */
static bool
bn_affine(pasci_layer_call *c, int32_t rank, const int64_t *shape,
    pasco_tnode **gamma, pasco_tnode **beta)
{
	const pasco_layer *l    = &c->m->layers[c->i];
	pasco_dtype        dt   = pasco_tnode_value(c->in[0])->dtype;
	pasco_tnode      **v[2] = {gamma, beta};
	for (int k = 0; k < 2; k++) {
		if (*v[k] == NULL) {
			continue;
		}
		*v[k] = l->frozen
		            ? stat_constant(c->tp, *v[k], dt, rank, shape)
		            : pasco_t_reshape(c->tp, *v[k], rank, shape);
		if (*v[k] == NULL) {
			return false;
		}
	}
	return true;
}

static pasco_tnode *
batch_norm_call(pasci_layer_call *c)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tnode       *gamma, *beta, *mm, *mv, *x, *xc, *mean = NULL,
	                                              *var = NULL;
	int64_t shape[PASCO_MAX_RANK];
	int32_t axis, rank;
	int j = pasci_norm_affine_nodes(c, l->scale, l->center, &gamma, &beta);
	mm    = j < 0 ? NULL
	              : pasci_layer_var_node(
	                    c->m, c->tp, c->i, (size_t) j, c->nodes);
	mv    = mm == NULL ? NULL
	                   : pasci_layer_var_node(
	                         c->m, c->tp, c->i, (size_t) j + 1, c->nodes);
	if (mv == NULL ||
	    (x = bn_input(c, pasco_tnode_value(mm)->count, &axis)) == NULL) {
		return NULL;
	}
	rank = pasco_tnode_value(x)->rank;
	feature_shape(rank, axis, pasco_tnode_value(mm)->count, shape);
	if (!bn_affine(c, rank, shape, &gamma, &beta)) {
		return NULL;
	}
	if (c->in_mask != NULL && c->in_mask[0] != NULL) {
		c->mask = c->in_mask[0]; /* Keras's supports_masking */
	}
	if (pasci_tape_training(c->tp) && !l->frozen) {
		xc = c->mask != NULL
		         ? bn_masked_moments(c->tp, l->name, x,
		               pasco_tnode_value(c->mask), axis, &mean, &var)
		         : bn_moments(c->tp, x, rank, axis, &mean, &var);
		if (xc == NULL ||
		    !record_update(c->tp, mm, mean, l->momentum) ||
		    !record_update(c->tp, mv, var, l->momentum)) {
			return NULL;
		}
	} else {
		pasco_dtype dt = pasco_tnode_value(x)->dtype;
		mean           = stat_constant(c->tp, mm, dt, rank, shape);
		var            = stat_constant(c->tp, mv, dt, rank, shape);
		xc             = pasco_t_sub(c->tp, x, mean);
	}
	return pasci_norm_finish(c->tp, xc, var, l->epsilon, gamma, beta);
}

/* Keras's regularization losses count trainable weights only: none for
 * a frozen layer. */
static pasco_tnode *
batch_norm_penalty(pasci_layer_call *c, pasco_tnode *loss)
{
	const pasco_layer *l = &c->m->layers[c->i];
	return l->frozen ? loss
	                 : pasci_norm_penalty(c, l->scale, l->center, loss);
}

static bool
batch_norm_write(cJSON *c, const pasco_layer *l)
{
	return cJSON_AddNumberToObject(c, "momentum", l->momentum) &&
	       pasci_norm_write(c, l, l->bn_axis) &&
	       pasci_json_write_init(c, "moving_mean_initializer",
	           &l->moving_mean_initializer) &&
	       pasci_json_write_init(c, "moving_variance_initializer",
	           &l->moving_variance_initializer) &&
	       cJSON_AddBoolToObject(c, "synchronized", false) &&
	       (!l->frozen || cJSON_AddBoolToObject(c, "trainable", false));
}

static int
batch_norm_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	const cJSON *sync =
	    cJSON_GetObjectItemCaseSensitive(c, "synchronized");
	bool trainable = true;
	(void) part;
	if (pasci_norm_read(c, l, &l->bn_axis, at) != 0 ||
	    pasci_json_number(c, "momentum", &l->momentum, false, 0, at) !=
	        0 ||
	    pasci_json_read_init(c, "moving_mean_initializer",
	        &l->moving_mean_initializer, at) != 0 ||
	    pasci_json_read_init(c, "moving_variance_initializer",
	        &l->moving_variance_initializer, at) != 0 ||
	    pasci_json_bool(c, "trainable", &trainable, at) != 0) {
		return PASCO_EINVAL;
	}
	l->frozen = !trainable;
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
              "beta_constraint", "gamma_constraint", "synchronized", "trainable"},
    .min_inputs = 1,
    .defaults   = batch_norm_defaults,
    .check      = batch_norm_check,
    .shape      = batch_norm_shape,
    .max_vars   = batch_norm_max_vars,
    .variables  = batch_norm_variables,
    .call       = batch_norm_call,
    .penalty    = batch_norm_penalty,
    .write      = batch_norm_write,
    .read       = batch_norm_read,
};
