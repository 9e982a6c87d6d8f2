/*
 * The library step function "pasco.graph_step" (docs/GRAPHS.md, "A
 * traced step"): argument 0 is the step's JSON, parsed once per process
 * (graph_step_parse.c); the arguments after it are bound to the step's
 * "args" (a mismatch names the argument, the kind it wants and what came)
 * and the graph runs on one tape (model/graph.c), this file computing its
 * step-only nodes: next (one pasco_dataset_next per iterator and call),
 * arg, model (the model's forward pass, its variables read in one round
 * trip, embedding rows by the ids of its inputs), read (the variables of
 * every read node, read together before the graph runs: watched when a
 * gradient node asks for one or it is a model's, else constants, an
 * integer one such as the global step as ints), gradient (one
 * pasco_tape_gradient per target for every variable asked of it) and
 * global_step. Then each apply is one mixed apply, each update an
 * assign_add, and the outputs come back as a LIST of tensors. Every error
 * fails the call naming the step, and the node and its op where there is
 * one. A model called more than once in a step reads its dense variables
 * at its first call, and every call shares those sources; each call reads
 * an embedding table's rows for its own ids (another source of the same
 * table), and the table's gradient joins every source's rows (the ps sums
 * repeated ids), so each variable has one gradient. Run by the worker's
 * handler threads, each call with its own tape, model copies and bindings; the
 * parsed step is shared, read-only.
 */
#include "graph_step.h"

#include "layer_desc.h"
#include "model_impl.h"
#include "pasco/hash.h"
#include "prep.h"
#include "tape_impl.h"
#include "util.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fails node i of the run; false. pasci_graph_run puts the step's name,
 * the node's index and its op before the message. The tape keeps its
 * first error: a failure of the tape's own (a read) stays as it is. */
bool
pasci_gstep_fail(pasci_gstep_run *r, size_t i, int err, const char *fmt, ...)
{
	char    msg[768];
	va_list ap;
	(void) i;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pasci_tape_fail(r->tp, err, "%s", msg);
	return false;
}

/* A tensor as a value: float on the tape (a constant), integers as they
 * are; of the node's dtype. */
static bool
tensor_value(
    pasci_gstep_run *r, size_t i, const pasco_tensor *t, pasci_gval *out)
{
	pasco_dtype want = r->s->nodes[i].dtype;
	if (t->dtype != want) {
		return pasci_gstep_fail(r, i, PASCO_EINVAL,
		    "got %s%s, traced as %s", pasco_dtype_name(t->dtype),
		    PASCI_SHAPE(t->rank, t->shape), pasco_dtype_name(want));
	}
	if (t->dtype == PASCO_F32 || t->dtype == PASCO_F64) {
		out->node = pasco_tape_constant(r->tp, t);
		return out->node != NULL;
	}
	out->ints = t;
	return true;
}

/* The element of (arg, call), taken from its iterator on first use. */
static bool
element_of(pasci_gstep_run *r, size_t i, const pasco_value **out)
{
	const pasci_gstep_node *n = &r->s->nodes[i];
	pasci_gstep_elem       *e;
	int                     rv;
	for (size_t k = 0; k < r->nelems; k++) {
		if (r->elems[k].arg == n->arg && r->elems[k].call == n->call) {
			*out = r->elems[k].v;
			return true;
		}
	}
	e  = &r->elems[r->nelems];
	*e = (pasci_gstep_elem){.arg = n->arg, .call = n->call};
	if ((rv = pasco_dataset_next(r->its[n->arg], &e->v)) != 0) {
		return rv == PASCO_EOUTOFRANGE
		           ? pasci_gstep_fail(r, i, rv,
		                 "the iterator args[%lld] ended at its call "
		                 "%lld: the dataset is out of range (repeat "
		                 "it)",
		                 (long long) n->arg, (long long) n->call)
		           : pasci_gstep_fail(r, i, rv,
		                 "the iterator args[%lld]: %s",
		                 (long long) n->arg,
		                 pasco_dataset_last_error());
	}
	r->nelems++;
	*out = e->v;
	return true;
}

static bool
node_next(pasci_gstep_run *r, size_t i, pasci_gval *out)
{
	const pasco_value *v = NULL;
	const cJSON       *it;
	size_t             depth = 0;
	if (!element_of(r, i, &v)) {
		return false;
	}
	cJSON_ArrayForEach(it, r->s->nodes[i].path)
	{
		const pasco_value *c = NULL;
		if (cJSON_IsString(it) &&
		    pasco_value_kind_of(v) == PASCO_VALUE_DICT) {
			c = pasco_value_get(v, it->valuestring);
		} else if (cJSON_IsNumber(it) && it->valueint >= 0 &&
		           pasco_value_kind_of(v) == PASCO_VALUE_LIST &&
		           (size_t) it->valueint < pasco_value_size(v)) {
			c = pasco_value_item(v, (size_t) it->valueint);
		}
		if (c == NULL) {
			char *p = cJSON_PrintUnformatted(it);
			pasci_gstep_fail(r, i, PASCO_EINVAL,
			    "path[%zu] %s is not in the element (a %s of %zu)",
			    depth, p != NULL ? p : "?",
			    pasco_value_kind_of(v) == PASCO_VALUE_DICT ? "dict"
			    : pasco_value_kind_of(v) == PASCO_VALUE_LIST
			        ? "list"
			        : "tensor",
			    pasco_value_size(v));
			free(p);
			return false;
		}
		v = c;
		depth++;
	}
	if (pasco_value_as_tensor(v) == NULL) {
		return pasci_gstep_fail(r, i, PASCO_EINVAL, "%s",
		    "the path leads to no tensor of the element");
	}
	return tensor_value(r, i, pasco_value_as_tensor(v), out);
}

/* Reads vars[v] for v in want[0..n) (ids: each one's, or NULL) in one
 * round trip and watches them. */
static bool
read_vars(pasci_gstep_run *r, size_t n, const size_t *want,
    const pasco_tensor *const *ids)
{
	pasco_tape_var *tv = pasci_tape_mem(r->tp, (n + 1) * sizeof(*tv));
	if (tv == NULL) {
		return false;
	}
	for (size_t k = 0; k < n; k++) {
		tv[k] =
		    (pasco_tape_var){.var = r->vars[want[k]], .ids = ids[k]};
	}
	if (n > 0 && pasco_tape_read(r->tp, n, tv) != 0) {
		return false;
	}
	for (size_t k = 0; k < n; k++) {
		pasci_gstep_src *m;
		if (r->src[want[k]] == NULL) {
			r->src[want[k]] = tv[k].node;
			continue;
		}
		if ((m = pasci_tape_mem(r->tp, sizeof(*m))) == NULL) {
			return false;
		}
		*m = (pasci_gstep_src){tv[k].node, r->more[want[k]]};
		r->more[want[k]] = m;
		r->nmore++;
	}
	return true;
}

/* Variable v's newest source: a table's rows for the latest call. */
static pasco_tnode *
newest(const pasci_gstep_run *r, size_t v)
{
	return r->more[v] != NULL ? r->more[v]->node : r->src[v];
}

/* The first error message among vs[0..n). */
static const char *
vars_error(size_t n, pasco_variable *const *vs)
{
	for (size_t k = 0; k < n; k++) {
		if (pasco_variable_error(vs[k])[0] != 0) {
			return pasco_variable_error(vs[k]);
		}
	}
	return "";
}

/* Whether step variable v, read by a read node, is watched: a model's
 * (its forward pass shares the source, and may record an update of it),
 * or a float variable argument some gradient node asks for (asked[v]).
 * Any other is not differentiated and is read as a constant: an integer
 * one (the global step) as ints, a float one as a tape constant. */
static bool
read_watched(const pasci_gstep_run *r, size_t v, const bool *asked)
{
	pasco_dtype dt = pasco_variable_dtype(r->vars[v]);
	if (dt != PASCO_F32 && dt != PASCO_F64) {
		return false;
	}
	return v < r->nvars - r->s->nvar_args || asked[v];
}

/* vs[0..n)'s values, read together (one round trip), as sources
 * (watch[k]) or constants: a float one a tape constant in r->src, an
 * integer one ints in r->ints. Read nodes are of dense variables only
 * (pasci_gstep_bind refuses a whole read of a table). */
static bool
read_dense(pasci_gstep_run *r, size_t n, const size_t *want, const bool *watch)
{
	pasco_variable **vs   = pasci_tape_mem(r->tp, (n + 1) * sizeof(*vs));
	pasco_tensor   **outs = pasci_calloc(n + 1, sizeof(*outs));
	int              rv   = PASCO_ENOMEM;
	bool             ok   = vs != NULL && outs != NULL;
	for (size_t k = 0; ok && k < n; k++) {
		vs[k] = r->vars[want[k]];
	}
	if (ok && n > 0 && (rv = pasco_variable_read_all(n, vs, outs)) != 0) {
		pasci_tape_fail(r->tp, rv, "read: %s", vars_error(n, vs));
		ok = false;
	} else if (!ok) {
		pasci_tape_fail(r->tp, PASCO_ENOMEM, "read: out of memory");
	}
	for (size_t k = 0; ok && k < n; k++) {
		const pasco_tensor *t = outs[k];
		size_t              v = want[k];
		if (watch[k] || t->dtype == PASCO_F32 ||
		    t->dtype == PASCO_F64) {
			r->src[v] = watch[k] ? pasco_tape_watch(r->tp, outs[k])
			                     : pasco_tape_constant(r->tp, t);
			ok        = r->src[v] != NULL;
		} else if ((r->ints[v] = pasci_graph_ints(
		                r->tp, t->dtype, t->rank, t->shape)) != NULL) {
			memcpy(r->ints[v]->data, t->data, t->nbytes);
		} else {
			ok = false;
		}
	}
	for (size_t k = 0; outs != NULL && k < n; k++) {
		pasco_tensor_release(outs[k]); /* the tape holds its nodes' */
	}
	free(outs);
	return ok;
}

/* The variables of every read node, together, before the graph: watched
 * when differentiated (read_watched), else constants. */
static bool
read_nodes(pasci_gstep_run *r)
{
	size_t *want  = pasci_tape_mem(r->tp, (r->nvars + 1) * sizeof(*want));
	bool   *watch = pasci_tape_mem(r->tp, r->nvars + 1);
	bool   *seen  = pasci_tape_mem(r->tp, r->nvars + 1);
	bool   *asked = pasci_tape_mem(r->tp, r->nvars + 1);
	size_t  n     = 0;
	if (want == NULL || watch == NULL || seen == NULL || asked == NULL) {
		return false;
	}
	for (size_t i = 0; i < r->s->nnodes; i++) {
		if (r->s->nodes[i].op == PASCI_GSTEP_OP_GRADIENT) {
			asked[r->s->nodes[i].var] = true;
		}
	}
	for (size_t i = 0; i < r->s->nnodes; i++) {
		int64_t v = r->s->nodes[i].var;
		if (r->s->nodes[i].op == PASCI_GSTEP_OP_READ && !seen[v]) {
			seen[v]   = true;
			watch[n]  = read_watched(r, (size_t) v, asked);
			want[n++] = (size_t) v;
		}
	}
	return read_dense(r, n, want, watch);
}

static bool
node_model(pasci_gstep_run *r, size_t i, size_t n, const pasci_gval *in,
    pasci_gval *out)
{
	const pasco_model   *m  = r->models[r->s->nodes[i].arg];
	size_t               v0 = r->model_var0[r->s->nodes[i].arg], nw = 0;
	const pasco_tensor **ts = pasci_tape_mem(r->tp, (n + 1) * sizeof(*ts));
	pasco_tnode **feats = pasci_tape_mem(r->tp, (n + 1) * sizeof(*feats));
	pasco_tnode **nodes =
	    pasci_tape_mem(r->tp, (m->nvars + 1) * sizeof(*nodes));
	size_t *want = pasci_tape_mem(r->tp, (m->nvars + 1) * sizeof(*want));
	const pasco_tensor **ids =
	    pasci_tape_mem(r->tp, (m->nvars + 1) * sizeof(*ids));
	if (ts == NULL || feats == NULL || nodes == NULL || want == NULL ||
	    ids == NULL) {
		return false;
	}
	if (n != m->ninputs) {
		return pasci_gstep_fail(r, i, PASCO_EINVAL,
		    "the model '%s' takes %zu inputs, the node gives %zu",
		    m->name, m->ninputs, n);
	}
	for (size_t k = 0; k < n; k++) {
		ts[k]    = in[k].node != NULL ? pasco_tnode_value(in[k].node)
		                              : in[k].ints;
		feats[k] = in[k].node;
	}
	/* ids after preprocessing layers (a lookup's) are theirs */
	const pasco_tensor *const *ext = pasci_prep_inputs(m, r->tp, ts);
	if (ext == NULL) {
		return pasci_gstep_fail(r, i, pasco_tape_error(r->tp), "%s",
		    pasco_tape_message(r->tp));
	}
	/* one read: the dense variables not read yet, every table's rows
	 * for this call's ids */
	for (size_t k = 0; k < m->nvars; k++) {
		if (r->src[v0 + k] == NULL || r->sparse[v0 + k]) {
			ids[nw] = r->sparse[v0 + k] ? ext[pasci_layer_input_of(
			                                  m, m->vars[k].layer)]
			                            : NULL;
			want[nw++] = v0 + k;
		}
	}
	if (!read_vars(r, nw, want, ids)) {
		return pasci_gstep_fail(r, i, pasco_tape_error(r->tp), "%s",
		    pasco_tape_message(r->tp));
	}
	for (size_t k = 0; k < m->nvars; k++) {
		nodes[k] = newest(r, v0 + k);
	}
	if ((out->node = pasci_model_forward(m, r->tp, ts, feats, nodes)) ==
	    NULL) {
		return pasci_gstep_fail(r, i, pasco_tape_error(r->tp), "%s",
		    pasco_tape_message(r->tp));
	}
	return true;
}

static bool
node_global_step(pasci_gstep_run *r, size_t i, pasci_gval *out)
{
	pasco_tensor *t = pasci_graph_ints(r->tp, PASCO_I64, 0, NULL);
	int64_t       v = 0;
	int           rv;
	if (t == NULL) {
		return false;
	}
	if ((rv = pasco_variable_fetch_add(r->global_step, 0, &v)) != 0) {
		return pasci_gstep_fail(
		    r, i, rv, "%s", pasco_variable_error(r->global_step));
	}
	*(int64_t *) t->data = v;
	out->ints            = t;
	return true;
}

static bool
gs_node(void *arg, pasco_tape *tp, size_t i, size_t n, const pasci_gval *in,
    pasci_gval *out)
{
	pasci_gstep_run *r = arg;
	(void) tp;
	switch (r->s->nodes[i].op) {
	case PASCI_GSTEP_OP_NEXT:
		return node_next(r, i, out);
	case PASCI_GSTEP_OP_ARG:
		return tensor_value(r, i, r->tensors[r->s->nodes[i].arg], out);
	case PASCI_GSTEP_OP_MODEL:
		return node_model(r, i, n, in, out);
	case PASCI_GSTEP_OP_READ:
		out->node = r->src[r->s->nodes[i].var];
		out->ints = r->ints[r->s->nodes[i].var];
		return true;
	case PASCI_GSTEP_OP_GRADIENT:
		return pasci_gstep_gradient(r, i, in, out);
	case PASCI_GSTEP_OP_GLOBAL_STEP:
		return node_global_step(r, i, out);
	default:
		return pasci_gstep_fail(r, i, PASCO_EINVAL, "%s",
		    "not a step-only op (the graph runner's)");
	}
}

/* Node j's value as a tensor of v's dtype and shape (converted from
 * another dtype), owned by the caller; what names the user. */
static int
value_for(pasci_gstep_run *r, int64_t j, pasco_variable *v, const char *what,
    pasco_tensor **out)
{
	const pasci_gval   *g = &r->values[j];
	const pasco_tensor *t =
	    g->node != NULL ? pasco_tnode_value(g->node) : g->ints;
	int32_t        rank  = pasco_variable_rank(v);
	const int64_t *shape = pasco_variable_shape(v);
	bool           ok    = t != NULL && t->rank == rank;
	for (int32_t d = 0; ok && d < rank; d++) {
		ok = t->shape[d] == shape[d];
	}
	if (!ok) {
		return pasco_call_fail(r->call, PASCO_EINVAL,
		    "%s: %s: nodes[%lld] (%s) is %s%s, the variable '%s' %s%s",
		    r->s->name, what, (long long) j,
		    pasci_graph_node_op(r->s->graph, (size_t) j),
		    t != NULL ? pasco_dtype_name(t->dtype) : "nothing",
		    t != NULL ? PASCI_SHAPE(t->rank, t->shape) : "",
		    pasco_variable_name(v),
		    pasco_dtype_name(pasco_variable_dtype(v)),
		    PASCI_SHAPE(rank, shape));
	}
	if (pasco_tensor_alloc(out, pasco_variable_dtype(v), rank, shape) !=
	    0) {
		return pasco_call_fail(r->call, PASCO_ENOMEM, "out of memory");
	}
	if (t->dtype == (*out)->dtype) {
		memcpy((*out)->data, t->data, t->nbytes);
	}
	for (int64_t k = 0; t->dtype != (*out)->dtype && k < t->count; k++) {
		pasco_tensor_set(*out, k, pasco_tensor_get(t, k));
	}
	return PASCO_OK;
}

/* Gradient j of apply a (a gradient node of its variable: as computed;
 * else a dense value) into vs, ids and gr at *m; own gets a tensor made
 * here. A gradient TensorFlow would give as None is left out. */
static int
apply_grad(pasci_gstep_run *r, size_t a, size_t j, pasco_variable **vs,
    const pasco_tensor **ids, const pasco_tensor **gr, pasco_tensor **own,
    size_t *m)
{
	const pasci_gstep_apply *ap = &r->s->applies[a];
	int64_t                  g = ap->grads[j], v = ap->vars[j];
	const pasci_gstep_node  *n = &r->s->nodes[g];
	char                     what[64];
	if (n->op == PASCI_GSTEP_OP_GRADIENT && n->var == v) {
		if (!r->no_grad[g]) {
			vs[*m]  = r->vars[v];
			ids[*m] = r->grads[g].ids;
			gr[*m]  = r->grads[g].dense != NULL ? r->grads[g].dense
			                                    : r->grads[g].rows;
			(*m)++;
		}
		return PASCO_OK;
	}
	if (n->op == PASCI_GSTEP_OP_GRADIENT && r->sparse[n->var]) {
		return pasco_call_fail(r->call, PASCO_EINVAL,
		    "%s: applies[%zu]: grads[%zu] is nodes[%lld], the sparse "
		    "gradient of '%s', given for the variable '%s'",
		    r->s->name, a, j, (long long) g,
		    pasco_variable_name(r->vars[n->var]),
		    pasco_variable_name(r->vars[v]));
	}
	snprintf(what, sizeof(what), "applies[%zu] grads[%zu]", a, j);
	if (value_for(r, g, r->vars[v], what, own) != 0) {
		return PASCO_EINVAL;
	}
	vs[*m]     = r->vars[v];
	gr[(*m)++] = *own;
	return PASCO_OK;
}

/* Apply a: one mixed apply of its gradients with its optimizer. */
static int
run_apply(pasci_gstep_run *r, size_t a)
{
	const pasci_gstep_apply *ap  = &r->s->applies[a];
	pasco_variable         **vs  = pasci_calloc(ap->n + 1, sizeof(*vs));
	const pasco_tensor     **ids = pasci_calloc(ap->n + 1, sizeof(*ids));
	const pasco_tensor     **gr  = pasci_calloc(ap->n + 1, sizeof(*gr));
	pasco_tensor           **own = pasci_calloc(ap->n + 1, sizeof(*own));
	pasco_optimizer          opt = ap->opt;
	size_t                   m   = 0;
	int                      rv  = PASCO_OK;
	if (vs == NULL || ids == NULL || gr == NULL || own == NULL) {
		rv = pasco_call_fail(r->call, PASCO_ENOMEM, "out of memory");
	}
	for (size_t j = 0; rv == 0 && j < ap->n; j++) {
		rv = apply_grad(r, a, j, vs, ids, gr, &own[j], &m);
	}
	opt.iterations = ap->global_step ? r->global_step : NULL;
	if (rv == 0 && m == 0) {
		rv = pasco_call_fail(r->call, PASCO_EINVAL,
		    "%s: applies[%zu]: no gradient for any of its %zu "
		    "variables (their targets depend on none of them)",
		    r->s->name, a, ap->n);
	} else if (rv == 0 && (rv = pasco_variable_apply_gradients_mixed(
	                           m, vs, &opt, ids, gr)) != 0) {
		pasco_call_fail(r->call, rv, "%s: applies[%zu]: %s",
		    r->s->name, a, vars_error(m, vs));
	}
	for (size_t j = 0; own != NULL && j < ap->n; j++) {
		pasco_tensor_release(own[j]);
	}
	free(own);
	free(gr);
	free(ids);
	free(vs);
	return rv;
}

static int
run_update(pasci_gstep_run *r, size_t u)
{
	const pasci_gstep_update *up = &r->s->updates[u];
	pasco_variable           *v  = r->vars[up->var];
	pasco_tensor             *t;
	char                      what[32];
	int                       rv;
	snprintf(what, sizeof(what), "updates[%zu]", u);
	if ((rv = value_for(r, up->value, v, what, &t)) != 0) {
		return rv;
	}
	if ((rv = pasco_variable_assign_add(v, t)) != 0) {
		pasco_call_fail(r->call, rv, "%s: %s ('%s'): %s", r->s->name,
		    what, pasco_variable_name(v), pasco_variable_error(v));
	}
	pasco_tensor_release(t);
	return rv;
}

/* The updates its models' forward passes recorded on a training tape (a
 * BatchNormalization's moving statistics, layers.h): each an assign_add
 * of the step variable its watched node was read from. */
static int
run_layer_updates(pasci_gstep_run *r)
{
	const pasci_tape_update *u = pasci_tape_step_of(r->tp)->updates;
	for (; u != NULL; u = u->next) {
		size_t v = 0;
		int    rv;
		while (v < r->nvars && r->src[v] != u->var) {
			v++;
		}
		if (v == r->nvars) {
			return pasco_call_fail(r->call, PASCO_EINVAL,
			    "%s: a layer's update is of no step variable",
			    r->s->name);
		}
		rv = pasco_variable_assign_add(r->vars[v], u->delta);
		if (rv != 0) {
			return pasco_call_fail(r->call, rv,
			    "%s: the update of '%s' (a layer's): %s",
			    r->s->name, pasco_variable_name(r->vars[v]),
			    pasco_variable_error(r->vars[v]));
		}
	}
	return PASCO_OK;
}

/* The outputs, copied, as the call's LIST result (empty for a step that
 * returns nothing). */
static int
return_outputs(pasci_gstep_run *r, const pasci_gval *outs)
{
	size_t        n     = r->s->noutputs;
	pasco_value **items = pasci_calloc(n + 1, sizeof(*items));
	pasco_value  *list  = NULL;
	bool          ok    = items != NULL;
	for (size_t k = 0; ok && k < n; k++) {
		const pasco_tensor *t = outs[k].node != NULL
		                            ? pasco_tnode_value(outs[k].node)
		                            : outs[k].ints;
		pasco_tensor       *c = NULL;
		ok                    = t != NULL &&
		     pasco_tensor_from(&c, t->dtype, t->rank, t->shape,
		         t->data, t->nbytes) == 0 &&
		     (items[k] = pasco_value_tensor(c)) != NULL;
	}
	if (ok) { /* list_of frees the items when it fails */
		list = pasco_value_list_of(n, items);
	}
	for (size_t k = 0; !ok && items != NULL && k < n; k++) {
		pasco_value_free(items[k]);
	}
	free(items);
	if (list == NULL) {
		return pasco_call_fail(r->call, PASCO_ENOMEM, "out of memory");
	}
	pasco_call_return(r->call, list);
	return PASCO_OK;
}

/* A tape seed: the step, this worker and a count of this process's
 * steps, so dropout masks differ step to step. */
static uint64_t
step_seed(const pasci_gstep_run *r)
{
	static atomic_uint_fast64_t steps;
	uint64_t z = pasco_hash64(r->s->name, strlen(r->s->name), 0) ^
	             ((uint64_t) pasco_call_worker_index(r->call) << 40) ^
	             (atomic_fetch_add(&steps, 1) * 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	return (z ^ (z >> 27)) * 0x94d049bb133111ebull;
}

static int
run_alloc(pasci_gstep_run *r)
{
	size_t na = r->s->nargs + 1, nn = r->s->nnodes + 1;
	r->models     = pasci_calloc(na, sizeof(*r->models));
	r->its        = pasci_calloc(na, sizeof(*r->its));
	r->tensors    = pasci_calloc(na, sizeof(*r->tensors));
	r->model_var0 = pasci_calloc(na, sizeof(*r->model_var0));
	r->grads      = pasci_calloc(nn, sizeof(*r->grads));
	r->no_grad    = pasci_calloc(nn, sizeof(*r->no_grad));
	r->values     = pasci_calloc(nn, sizeof(*r->values));
	r->elems      = pasci_calloc(nn, sizeof(*r->elems));
	if (r->models == NULL || r->its == NULL || r->tensors == NULL ||
	    r->model_var0 == NULL || r->grads == NULL || r->no_grad == NULL ||
	    r->values == NULL || r->elems == NULL) {
		return pasco_call_fail(r->call, PASCO_ENOMEM, "out of memory");
	}
	return PASCO_OK;
}

static void
run_fini(pasci_gstep_run *r)
{
	if (r->grads != NULL) {
		pasco_tape_grad_fini(r->grads, r->s->nnodes);
	}
	pasco_tape_free(r->tp);
	for (size_t k = 0; r->elems != NULL && k < r->nelems; k++) {
		pasco_value_free(r->elems[k].v);
	}
	for (size_t i = 0; r->models != NULL && i < r->s->nargs; i++) {
		pasco_model_free(r->models[i]);
	}
	free(r->models);
	free(r->its);
	free(r->tensors);
	free(r->model_var0);
	free(r->vars);
	free(r->sparse);
	free(r->src);
	free(r->ints);
	free(r->more);
	free(r->grads);
	free(r->no_grad);
	free(r->values);
	free(r->elems);
	pasci_gstep_release(r->s);
}

/* The graph on a tape, then the applies and updates, then the result. */
static int
run_step(pasci_gstep_run *r)
{
	pasci_graph_hook hook = {.arg = r, .node = gs_node};
	pasci_gval *outs = pasci_calloc(r->s->noutputs + 1, sizeof(*outs));
	int         rv   = PASCO_OK;
	if (outs == NULL ||
	    pasco_tape_alloc(&r->tp, r->s->training, step_seed(r)) != 0) {
		free(outs);
		return pasco_call_fail(r->call, PASCO_ENOMEM, "out of memory");
	}
	if (!read_nodes(r)) { /* before the graph: no node to name */
		rv = pasco_tape_error(r->tp);
		pasco_call_fail(r->call, rv,
		    "%s: the variables of its read "
		    "nodes: %s",
		    r->s->name, pasco_tape_message(r->tp));
	} else if (!pasci_graph_run(r->s->graph, r->tp, r->s->name, NULL, NULL,
	               &hook, r->values, outs)) {
		rv = pasco_tape_error(r->tp) != 0 ? pasco_tape_error(r->tp)
		                                  : PASCO_EINVAL;
		pasco_call_fail(r->call, rv, "%s", pasco_tape_message(r->tp));
	}
	for (size_t a = 0; rv == 0 && a < r->s->napplies; a++) {
		rv = run_apply(r, a);
	}
	for (size_t u = 0; rv == 0 && u < r->s->nupdates; u++) {
		rv = run_update(r, u);
	}
	if (rv == 0) {
		rv = run_layer_updates(r);
	}
	if (rv == 0) {
		rv = return_outputs(r, outs);
	}
	free(outs);
	return rv;
}

int
pasci_graph_step(pasco_call *call)
{
	const pasco_tensor *t;
	pasci_gstep_run     r = {.call = call};
	int                 rv;
	if ((rv = pasco_call_tensor(call, 0, &t)) != 0) {
		return rv;
	}
	if (t->dtype != PASCO_U8 || t->rank != 1) {
		return pasco_call_fail(call, PASCO_EINVAL,
		    "pasco.graph_step: argument 0 is %s%s, not a traced "
		    "step's JSON (u8 [n])",
		    pasco_dtype_name(t->dtype),
		    PASCI_SHAPE(t->rank, t->shape));
	}
	if ((rv = pasci_gstep_get(t->data, (size_t) t->count, &r.s)) != 0) {
		return pasco_call_fail(call, rv, "pasco.graph_step: %s",
		    pasco_model_last_error());
	}
	if ((rv = run_alloc(&r)) == 0 && (rv = pasci_gstep_bind(&r)) == 0) {
		rv = run_step(&r);
	}
	run_fini(&r);
	return rv;
}
