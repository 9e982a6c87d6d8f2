/*
 * Keras's Dense: activation(x @ kernel + bias) on the last axis (a
 * sequence [batch, steps, d] too, its mask kept), variables
 * <name>/kernel [d, units] and <name>/bias [units], an optional L2 on
 * the kernel (Keras's kernel_regularizer=l2(f)). Its descriptor
 * (layer_desc.h), and the regularizers' shared parts (layer_desc.h):
 * Keras's L1/L2/L1L2 configs, their terms, activity_regularizer's.
 * Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void
dense_defaults(pasco_layer *l)
{
	l->use_bias           = true;
	l->kernel_initializer = pasco_init_glorot_uniform(0);
	l->bias_initializer   = pasco_init_zeros();
}

pasco_layer
pasco_layer_dense(int64_t units, pasco_act activation)
{
	pasco_layer l = pasci_layer_defaults(PASCO_LAYER_DENSE);
	l.units       = units;
	l.activation  = activation;
	return pasci_layer_named(l);
}

static int
dense_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	(void) widths;
	if (l->units < 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: units must be positive, got %lld", l->name,
		    (long long) l->units);
	}
	if (pasco_act_name(l->activation) == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: unknown activation %d", l->name, (int) l->activation);
	}
	if (!(l->kernel_l2 >= 0) || !(l->kernel_l1 >= 0) ||
	    !(l->bias_l1 >= 0) || !(l->bias_l2 >= 0)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: the regularizers' factors must be >= 0, got kernel "
		    "l1 %g, l2 %g, bias l1 %g, l2 %g",
		    l->name, l->kernel_l1, l->kernel_l2, l->bias_l1,
		    l->bias_l2);
	}
	*out = l->units;
	return PASCO_OK;
}

/* Keras's: on the last axis, (..., d) -> (..., units). */
static int
dense_shape(const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	*out                    = in[0];
	out->dim[out->rank - 1] = l->units;
	return PASCO_OK;
}

static void
dense_variables(pasco_model *m, size_t i, const int64_t *widths)
{
	const pasco_layer *l  = &m->layers[i];
	pasci_eshape       in = pasci_layer_in_shape(m, i, 0);
	(void) widths;
	pasci_model_add_var(m, i, "kernel", 2, in.dim[in.rank - 1], l->units,
	    l->kernel_initializer);
	m->vars[m->nvars - 1].constraint = l->kernel_constraint;
	if (l->use_bias) {
		pasci_model_add_var(
		    m, i, "bias", 1, l->units, 0, l->bias_initializer);
		m->vars[m->nvars - 1].constraint = l->bias_constraint;
	}
}

static pasco_tnode *
dense_call(pasci_layer_call *c)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tnode       *h = c->in[0];
	pasco_tnode *w = pasci_layer_var_node(c->m, c->tp, c->i, 0, c->nodes);
	const pasco_tensor *x = pasco_tnode_value(h);
	const pasco_tensor *k = pasco_tnode_value(w);
	if (x == NULL || k == NULL) {
		return NULL;
	}
	if (x->rank < 2 || k->rank != 2 ||
	    x->shape[x->rank - 1] != k->shape[0]) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL,
		    "%s: input %s does not match kernel %s", l->name,
		    PASCI_SHAPE(x->rank, x->shape),
		    PASCI_SHAPE(k->rank, k->shape));
	}
	if (x->rank > 2) { /* a sequence: [batch * steps, d] and back */
		h = pasco_t_reshape(
		    c->tp, h, 2, (int64_t[]){-1, x->shape[x->rank - 1]});
	}
	h = pasco_t_matmul(c->tp, h, w, false, false);
	if (l->use_bias) {
		pasco_tnode *b =
		    pasci_layer_var_node(c->m, c->tp, c->i, 1, c->nodes);
		h = b == NULL ? NULL : pasco_t_bias_add(c->tp, h, b);
	}
	if (x->rank > 2) {
		int64_t shape[PASCO_MAX_RANK];
		memcpy(shape, x->shape, sizeof(shape));
		shape[x->rank - 1] = l->units;
		h                  = pasco_t_reshape(c->tp, h, x->rank, shape);
		c->mask = c->in_mask[0]; /* Keras's supports_masking */
	}
	c->pre = h;
	c->act = l->activation;
	return pasci_layer_activate(c->tp, h, l->activation);
}

bool
pasci_json_write_reg(cJSON *c, const char *key, double l1, double l2)
{
	cJSON *r;
	if (l1 == 0 && l2 == 0) {
		return cJSON_AddNullToObject(c, key) != NULL;
	}
	r = pasci_json_class(c, key, l1 == 0 ? "L2" : l2 == 0 ? "L1" : "L1L2");
	return r != NULL &&
	       (l1 == 0 || cJSON_AddNumberToObject(r, "l1", l1) != NULL) &&
	       (l2 == 0 || cJSON_AddNumberToObject(r, "l2", l2) != NULL);
}

static bool
dense_write(cJSON *c, const pasco_layer *l)
{
	bool ok = cJSON_AddNumberToObject(c, "units", (double) l->units) &&
	          cJSON_AddStringToObject(
	              c, "activation", pasco_act_name(l->activation)) &&
	          cJSON_AddBoolToObject(c, "use_bias", l->use_bias) &&
	          pasci_json_write_init(
	              c, "kernel_initializer", &l->kernel_initializer) &&
	          pasci_json_write_init(
	              c, "bias_initializer", &l->bias_initializer) &&
	          pasci_json_write_constraint(
	              c, "kernel_constraint", &l->kernel_constraint) &&
	          pasci_json_write_constraint(
	              c, "bias_constraint", &l->bias_constraint) &&
	          pasci_json_write_reg(c, "activity_regularizer",
	              l->activity_l1, l->activity_l2);
	return ok &&
	       pasci_json_write_reg(
	           c, "kernel_regularizer", l->kernel_l1, l->kernel_l2) &&
	       pasci_json_write_reg(
	           c, "bias_regularizer", l->bias_l1, l->bias_l2);
}

int
pasci_json_read_reg(
    const cJSON *c, const char *key, double *l1, double *l2, const char *where)
{
	static const char *const names[] = {NULL, "L1", "L2", "L1L2"};
	static const char *const keys[]  = {"l1", "l2"};
	const cJSON             *o = cJSON_GetObjectItemCaseSensitive(c, key);
	const cJSON             *rc;
	char                     at[160];
	int                      kind;
	if (o == NULL || cJSON_IsNull(o)) {
		return PASCO_OK;
	}
	pasci_fmt(at, sizeof(at), "%s: %s", where, key);
	if (pasci_json_read_class(o, names, 4, &kind, &rc, at) != 0 ||
	    pasci_json_check_keys(rc, keys, 2, at) != 0) {
		return PASCO_EINVAL;
	}
	/* Keras's defaults: L1(0.01), L2(0.01), L1L2(0, 0) */
	*l1 = kind == 1 ? 0.01 : 0;
	*l2 = kind == 2 ? 0.01 : 0;
	if ((kind == 2 && cJSON_GetObjectItemCaseSensitive(rc, "l1")) ||
	    (kind == 1 && cJSON_GetObjectItemCaseSensitive(rc, "l2"))) {
		return pasci_model_fail(PASCO_EINVAL, "%s: %s takes %s only",
		    at, names[kind], kind == 1 ? "l1" : "l2");
	}
	return pasci_json_number(rc, "l1", l1, false, 0, at) != 0 ||
	               pasci_json_number(rc, "l2", l2, false, 0, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

static int
dense_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	return pasci_json_size(
	           c, "units", &l->units, 1, PASCI_MAX_WIDTH, at) != 0 ||
	               pasci_json_read_act(c, &l->activation, at) != 0 ||
	               pasci_json_bool(c, "use_bias", &l->use_bias, at) != 0 ||
	               pasci_json_read_init(c, "kernel_initializer",
	                   &l->kernel_initializer, at) != 0 ||
	               pasci_json_read_init(c, "bias_initializer",
	                   &l->bias_initializer, at) != 0 ||
	               pasci_json_read_reg(c, "kernel_regularizer",
	                   &l->kernel_l1, &l->kernel_l2, at) != 0 ||
	               pasci_json_read_reg(c, "bias_regularizer", &l->bias_l1,
	                   &l->bias_l2, at) != 0 ||
	               pasci_json_read_reg(c, "activity_regularizer",
	                   &l->activity_l1, &l->activity_l2, at) != 0 ||
	               pasci_json_read_constraint(c, "kernel_constraint",
	                   &l->kernel_constraint, at) != 0 ||
	               pasci_json_read_constraint(
	                   c, "bias_constraint", &l->bias_constraint, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

pasco_tnode *
pasci_layer_reg_term(
    pasco_tape *tp, pasco_tnode *loss, pasco_tnode *w, double l1, double l2)
{
	pasco_tnode *t[2] = {NULL, NULL};
	if (w != NULL && l1 > 0) {
		t[0] = pasco_t_scale(tp,
		    pasco_t_reduce_sum(
		        tp, pasco_t_abs(tp, w), PASCO_T_ALL_AXES),
		    l1);
	}
	if (w != NULL && l2 > 0) {
		t[1] = pasco_t_l2(tp, w, l2);
	}
	for (int k = 0; k < 2; k++) {
		if (t[k] != NULL) {
			loss =
			    loss == NULL ? t[k] : pasco_t_add(tp, loss, t[k]);
		}
	}
	return loss;
}

pasco_tnode *
pasci_layer_activity_term(
    pasco_tape *tp, pasco_tnode *acc, const pasco_layer *l, pasco_tnode *y)
{
	const pasco_tensor *v = pasco_tnode_value(y);
	double              batch;
	pasco_tnode        *t = NULL;
	if (v == NULL || (l->activity_l1 == 0 && l->activity_l2 == 0)) {
		return acc;
	}
	/* Keras 3: divide_no_nan(loss, batch size) */
	batch = v->rank > 0 && v->shape[0] > 0 ? (double) v->shape[0] : 0;
	if (batch == 0) {
		return acc;
	}
	if (l->activity_l1 > 0) {
		t = pasco_t_scale(tp,
		    pasco_t_reduce_sum(
		        tp, pasco_t_abs(tp, y), PASCO_T_ALL_AXES),
		    l->activity_l1 / batch);
	}
	if (l->activity_l2 > 0) {
		pasco_tnode *u = pasco_t_scale(tp,
		    pasco_t_reduce_sum(
		        tp, pasco_t_square(tp, y), PASCO_T_ALL_AXES),
		    l->activity_l2 / batch);
		t              = t == NULL ? u : pasco_t_add(tp, t, u);
	}
	return acc == NULL ? t : pasco_t_add(tp, acc, t);
}

int
pasci_layer_check_activity(const pasco_layer *l)
{
	bool takes =
	    l->kind == PASCO_LAYER_DENSE || l->kind == PASCO_LAYER_EMBEDDING;
	if (!(l->activity_l1 >= 0) || !(l->activity_l2 >= 0) ||
	    !(l->embeddings_l1 >= 0) || !(l->embeddings_l2 >= 0)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: the regularizers' factors must be >= 0, got activity "
		    "l1 %g, l2 %g, embeddings l1 %g, l2 %g",
		    l->name, l->activity_l1, l->activity_l2, l->embeddings_l1,
		    l->embeddings_l2);
	}
	if (!takes && (l->activity_l1 != 0 || l->activity_l2 != 0)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: an activity_regularizer is taken by Dense and "
		    "Embedding layers only",
		    l->name);
	}
	if (l->kind != PASCO_LAYER_EMBEDDING &&
	    (l->embeddings_l1 != 0 || l->embeddings_l2 != 0)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: an embeddings_regularizer is an Embedding's",
		    l->name);
	}
	return PASCO_OK;
}

/* Keras's layer.losses of its regularizers but the kernel's L2
 * (sequential.c's): the kernel's L1, the bias's L1 and L2. */
static pasco_tnode *
dense_penalty(pasci_layer_call *c, pasco_tnode *loss)
{
	const pasco_layer *l = &c->m->layers[c->i];
	pasco_tnode       *k, *b = NULL;
	if (l->kernel_l1 == 0 && l->bias_l1 == 0 && l->bias_l2 == 0) {
		return loss;
	}
	k = pasci_layer_var_node(c->m, c->tp, c->i, 0, c->nodes);
	if (l->use_bias) {
		b = pasci_layer_var_node(c->m, c->tp, c->i, 1, c->nodes);
	}
	loss = pasci_layer_reg_term(c->tp, loss, k, l->kernel_l1, 0);
	return pasci_layer_reg_term(c->tp, loss, b, l->bias_l1, l->bias_l2);
}

const pasci_layer_desc pasci_layer_dense_desc = {
    .kind       = PASCO_LAYER_DENSE,
    .class_name = "Dense",
    .prefix     = "dense",
    .keys = {"name", "units", "activation", "use_bias", "kernel_initializer",
        "bias_initializer", "kernel_regularizer", "kernel_constraint",
        "bias_constraint", "bias_regularizer", "activity_regularizer"},
    .args = {"units"},
    .min_inputs = 1,
    .defaults   = dense_defaults,
    .check      = dense_check,
    .shape      = dense_shape,
    .variables  = dense_variables,
    .call       = dense_call,
    .penalty    = dense_penalty,
    .write      = dense_write,
    .read       = dense_read,
};
