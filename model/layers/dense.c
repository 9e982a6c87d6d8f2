/*
 * Keras's Dense: activation(x @ kernel + bias), variables <name>/kernel
 * [in, units] and <name>/bias [units], an optional L2 on the kernel
 * (Keras's kernel_regularizer=l2(f)). Its descriptor (layer_desc.h).
 * Stateless: any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"
#include "util.h"

#include <math.h>
#include <stdio.h>

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
	if (l->kernel_l2 < 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: kernel_l2 must be >= 0, got %g", l->name,
		    l->kernel_l2);
	}
	*out = l->units;
	return PASCO_OK;
}

static void
dense_variables(pasco_model *m, size_t i, const int64_t *widths)
{
	const pasco_layer *l = &m->layers[i];
	pasci_model_add_var(
	    m, i, "kernel", 2, widths[0], l->units, l->kernel_initializer);
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
	if (x->rank != 2 || k->rank != 2 || x->shape[1] != k->shape[0]) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL,
		    "%s: input %s does not match kernel %s", l->name,
		    PASCI_SHAPE(x->rank, x->shape),
		    PASCI_SHAPE(k->rank, k->shape));
	}
	h = pasco_t_matmul(c->tp, h, w, false, false);
	if (l->use_bias) {
		pasco_tnode *b =
		    pasci_layer_var_node(c->m, c->tp, c->i, 1, c->nodes);
		h = b == NULL ? NULL : pasco_t_bias_add(c->tp, h, b);
	}
	c->pre = h;
	c->act = l->activation;
	return pasci_layer_activate(c->tp, h, l->activation);
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
	              c, "bias_constraint", &l->bias_constraint);
	if (ok && l->kernel_l2 > 0) {
		cJSON *r = pasci_json_class(c, "kernel_regularizer", "L2");
		ok       = r != NULL &&
		     cJSON_AddNumberToObject(r, "l2", l->kernel_l2);
	} else if (ok) {
		ok = cJSON_AddNullToObject(c, "kernel_regularizer");
	}
	return ok;
}

static int
read_l2(const cJSON *c, double *l2, const char *where)
{
	static const char *const names[] = {NULL, "L2"};
	static const char *const keys[]  = {"l2"};
	const cJSON             *o =
	    cJSON_GetObjectItemCaseSensitive(c, "kernel_regularizer");
	const cJSON *rc;
	char         at[160];
	int          kind;
	if (o == NULL || cJSON_IsNull(o)) {
		return PASCO_OK;
	}
	pasci_fmt(at, sizeof(at), "%s: kernel_regularizer", where);
	return pasci_json_read_class(o, names, 2, &kind, &rc, at) != 0 ||
	               pasci_json_check_keys(rc, keys, 1, at) != 0 ||
	               pasci_json_number(rc, "l2", l2, false, 0, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

static int
dense_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	return pasci_json_int(c, "units", &l->units, 1, at) != 0 ||
	               pasci_json_read_act(c, &l->activation, at) != 0 ||
	               pasci_json_bool(c, "use_bias", &l->use_bias, at) != 0 ||
	               pasci_json_read_init(c, "kernel_initializer",
	                   &l->kernel_initializer, at) != 0 ||
	               pasci_json_read_init(c, "bias_initializer",
	                   &l->bias_initializer, at) != 0 ||
	               read_l2(c, &l->kernel_l2, at) != 0 ||
	               pasci_json_read_constraint(c, "kernel_constraint",
	                   &l->kernel_constraint, at) != 0 ||
	               pasci_json_read_constraint(
	                   c, "bias_constraint", &l->bias_constraint, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

const pasci_layer_desc pasci_layer_dense_desc = {
    .kind       = PASCO_LAYER_DENSE,
    .class_name = "Dense",
    .prefix     = "dense",
    .keys = {"name", "units", "activation", "use_bias", "kernel_initializer",
        "bias_initializer", "kernel_regularizer", "kernel_constraint",
        "bias_constraint"},
    .args = {"units"},
    .min_inputs = 1,
    .defaults   = dense_defaults,
    .check      = dense_check,
    .variables  = dense_variables,
    .call       = dense_call,
    .write      = dense_write,
    .read       = dense_read,
};
