/*
 * A traced step's call bound to its step (graph_step.h): the call's
 * arguments after the JSON checked against the step's "args" kind by
 * kind (a mismatch names the argument, the kind and shape it wants and
 * what came), the models rebuilt from their configs (the worker's model
 * cache), the step's variables listed (every model's in model order, then
 * the variable arguments) and what depends on them checked before
 * anything runs: variable indices in range, a sparse gradient (an
 * embedding table's rows) taken by nothing but applies, no whole read of
 * an embedding table. Any handler thread, on its own call.
 */
#include "graph_step.h"

#include "call.h"
#include "layer_desc.h"
#include "model_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *
kind_name(pasci_gstep_kind k)
{
	static const char *names[] = {"?", "an iterator", "a model",
	    "a variable", "a tensor", "the global step (a variable)"};
	return names[k <= PASCI_GSTEP_GLOBAL_STEP ? k : 0];
}

/* What the call's argument p is, for a mismatch's message. */
static const char *
call_arg_str(const pasco_call *call, size_t p, char *buf, size_t len)
{
	const call_arg *a = &call->args[p];
	if (a->kind == PASCI_ARG_TENSOR) {
		snprintf(buf, len, "a tensor %s%s",
		    pasco_dtype_name(a->tensor->dtype),
		    PASCI_SHAPE(a->tensor->rank, a->tensor->shape));
	} else if (a->kind == PASCI_ARG_VARIABLE) {
		snprintf(buf, len, "the variable '%s' %s%s",
		    pasco_variable_name(a->variable),
		    pasco_dtype_name(pasco_variable_dtype(a->variable)),
		    PASCI_SHAPE(pasco_variable_rank(a->variable),
		        pasco_variable_shape(a->variable)));
	} else {
		snprintf(buf, len, "%s",
		    pasci_resource_dataset(a->res) != NULL
		        ? "a per-worker iterator"
		        : "a per-worker variable");
	}
	return buf;
}

static bool
shape_fits(const pasci_gstep_arg *a, pasco_dtype dt, int32_t rank,
    const int64_t *shape)
{
	bool ok = dt == a->dtype && rank == a->rank;
	for (int32_t d = 0; ok && d < rank; d++) {
		ok = a->shape[d] < 0 || a->shape[d] == shape[d];
	}
	return ok;
}

/* Whether call argument p is what step argument i wants. */
static bool
arg_fits(const pasci_gstep_arg *a, const call_arg *c)
{
	switch (a->kind) {
	case PASCI_GSTEP_ITERATOR:
		return c->kind == PASCI_ARG_RESOURCE &&
		       pasci_resource_dataset(c->res) != NULL;
	case PASCI_GSTEP_MODEL:
		return c->kind == PASCI_ARG_TENSOR &&
		       c->tensor->dtype == PASCO_U8 && c->tensor->rank == 1;
	case PASCI_GSTEP_TENSOR:
		return c->kind == PASCI_ARG_TENSOR &&
		       shape_fits(a, c->tensor->dtype, c->tensor->rank,
		           c->tensor->shape);
	case PASCI_GSTEP_VARIABLE:
		return c->kind == PASCI_ARG_VARIABLE &&
		       shape_fits(a, pasco_variable_dtype(c->variable),
		           pasco_variable_rank(c->variable),
		           pasco_variable_shape(c->variable));
	default:
		return c->kind == PASCI_ARG_VARIABLE &&
		       pasco_variable_dtype(c->variable) == PASCO_I64 &&
		       pasco_variable_rank(c->variable) == 0;
	}
}

static int
arg_mismatch(pasci_gstep_run *r, size_t i, size_t p)
{
	const pasci_gstep_arg *a = &r->s->args[i];
	char                   want[160], got[200];
	if (a->kind == PASCI_GSTEP_VARIABLE || a->kind == PASCI_GSTEP_TENSOR) {
		snprintf(want, sizeof(want), "%s %s%s", kind_name(a->kind),
		    pasco_dtype_name(a->dtype),
		    PASCI_SHAPE(a->rank, a->shape));
	} else if (a->kind == PASCI_GSTEP_MODEL) {
		snprintf(want, sizeof(want),
		    "a model (its config, u8 JSON, then its variables: "
		    "pasco_model_args)");
	} else {
		snprintf(want, sizeof(want), "%s%s", kind_name(a->kind),
		    a->kind == PASCI_GSTEP_GLOBAL_STEP ? " i64 []" : "");
	}
	return pasco_call_fail(r->call, PASCO_EINVAL,
	    "%s: argument %zu (args[%zu]): expected %s, got %s", r->s->name, p,
	    i, want, call_arg_str(r->call, p, got, sizeof(got)));
}

/* Step argument i (a model) at call argument p; *next gets the argument
 * after its variables. */
static int
bind_model(pasci_gstep_run *r, size_t i, size_t p, size_t *next)
{
	char msg[sizeof(r->call->error)];
	int  rv = pasco_model_from_call(r->call, p, &r->models[i]);
	if (rv != 0) {
		snprintf(msg, sizeof(msg), "%s", r->call->error);
		return pasco_call_fail(r->call, rv,
		    "%s: argument %zu (args[%zu], a model): %s", r->s->name, p,
		    i, msg);
	}
	*next = p + 1 + r->models[i]->nvars;
	return PASCO_OK;
}

/* The call's arguments bound to the step's; the models' copies made. */
static int
bind_args(pasci_gstep_run *r)
{
	size_t p = 1, n = pasco_call_arg_count(r->call);
	for (size_t i = 0; i < r->s->nargs; i++) {
		const pasci_gstep_arg *a = &r->s->args[i];
		if (p >= n) {
			return pasco_call_fail(r->call, PASCO_EINVAL,
			    "%s: args[%zu] (%s) has no argument: the call "
			    "has %zu after the step's JSON",
			    r->s->name, i, kind_name(a->kind), n - 1);
		}
		if (!arg_fits(a, &r->call->args[p])) {
			return arg_mismatch(r, i, p);
		}
		const call_arg *c = &r->call->args[p];
		if (a->kind == PASCI_GSTEP_MODEL) {
			int rv = bind_model(r, i, p, &p);
			if (rv != 0) {
				return rv;
			}
			continue;
		}
		r->its[i] = a->kind == PASCI_GSTEP_ITERATOR
		                ? pasci_resource_dataset(c->res)
		                : NULL;
		r->tensors[i] =
		    a->kind == PASCI_GSTEP_TENSOR ? c->tensor : NULL;
		if (a->kind == PASCI_GSTEP_GLOBAL_STEP) {
			r->global_step = c->variable;
		}
		p++;
	}
	if (p != n) {
		return pasco_call_fail(r->call, PASCO_EINVAL,
		    "%s: the step's args take %zu arguments after its JSON, "
		    "the call has %zu",
		    r->s->name, p - 1, n - 1);
	}
	return PASCO_OK;
}

/* The step's variables: every model's in model order, then the variable
 * arguments; which are embedding tables. */
static int
bind_vars(pasci_gstep_run *r)
{
	const pasci_gstep *s = r->s;
	size_t             n = s->nvar_args, k = 0, p = 1;
	for (size_t i = 0; i < s->nargs; i++) {
		n += r->models[i] != NULL ? r->models[i]->nvars : 0;
	}
	r->nvars  = n;
	r->vars   = pasci_calloc(n + 1, sizeof(*r->vars));
	r->sparse = pasci_calloc(n + 1, sizeof(*r->sparse));
	r->src    = pasci_calloc(n + 1, sizeof(*r->src));
	r->ints   = pasci_calloc(n + 1, sizeof(*r->ints));
	r->more   = pasci_calloc(n + 1, sizeof(*r->more));
	if (r->vars == NULL || r->sparse == NULL || r->src == NULL ||
	    r->ints == NULL || r->more == NULL) {
		return pasco_call_fail(r->call, PASCO_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nargs; i++) {
		const pasco_model *m = r->models[i];
		r->model_var0[i]     = k;
		for (size_t j = 0; m != NULL && j < m->nvars; j++, k++) {
			r->vars[k]   = m->vars[j].handle;
			r->sparse[k] = pasci_layer_desc_of(
			    m->layers[m->vars[j].layer].kind)
			                   ->ids;
		}
	}
	for (size_t i = 0; i < s->nargs; i++, p++) {
		if (s->args[i].kind == PASCI_GSTEP_MODEL) {
			p += r->models[i]->nvars;
		} else if (s->args[i].kind == PASCI_GSTEP_VARIABLE) {
			r->vars[k++] = r->call->args[p].variable;
		}
	}
	return PASCO_OK;
}

/* Node i (or an output, an update's value) may not take gradient node g
 * when that one is sparse. */
static int
check_sparse_use(pasci_gstep_run *r, int64_t g, const char *user)
{
	const pasci_gstep_node *n = &r->s->nodes[g];
	if (n->op != PASCI_GSTEP_OP_GRADIENT || !r->sparse[n->var]) {
		return PASCO_OK;
	}
	return pasco_call_fail(r->call, PASCO_EINVAL,
	    "%s: %s takes nodes[%lld] (gradient), the sparse gradient of "
	    "the embedding table '%s' (rows for the ids looked up): only "
	    "applies may take it",
	    r->s->name, user, (long long) g,
	    pasco_variable_name(r->vars[n->var]));
}

static bool
is_float(pasco_dtype dt)
{
	return dt == PASCO_F32 || dt == PASCO_F64;
}

static int
check_var(pasci_gstep_run *r, int64_t v, const char *what)
{
	if (v >= 0 && (size_t) v < r->nvars) {
		return PASCO_OK;
	}
	return pasco_call_fail(r->call, PASCO_EINVAL,
	    "%s: %s: var %lld is out of range: the step has %zu variables "
	    "(its models' then its variable arguments)",
	    r->s->name, what, (long long) v, r->nvars);
}

/* What depends on the models bound: variable indices in range, a
 * sparse gradient used by nothing but applies, read only of dense
 * variables. */
static int
check_bound(pasci_gstep_run *r)
{
	const pasci_gstep *s = r->s;
	char               what[128];
	for (size_t i = 0; i < s->nnodes; i++) {
		const pasci_gstep_node *n = &s->nodes[i];
		snprintf(what, sizeof(what), "nodes[%zu] (%s)", i,
		    pasci_graph_node_op(s->graph, i));
		if ((n->op == PASCI_GSTEP_OP_READ ||
		        n->op == PASCI_GSTEP_OP_GRADIENT) &&
		    check_var(r, n->var, what) != 0) {
			return PASCO_EINVAL;
		}
		if (n->op == PASCI_GSTEP_OP_GRADIENT &&
		    !is_float(pasco_variable_dtype(r->vars[n->var]))) {
			return pasco_call_fail(r->call, PASCO_EINVAL,
			    "%s: %s: '%s' is %s: only a float variable is "
			    "differentiated (an integer one reads as a "
			    "constant)",
			    s->name, what,
			    pasco_variable_name(r->vars[n->var]),
			    pasco_dtype_name(
			        pasco_variable_dtype(r->vars[n->var])));
		}
		if (n->op == PASCI_GSTEP_OP_READ && r->sparse[n->var]) {
			return pasco_call_fail(r->call, PASCO_EINVAL,
			    "%s: %s: '%s' is an embedding table: its model "
			    "reads the rows its ids need, never the whole",
			    s->name, what,
			    pasco_variable_name(r->vars[n->var]));
		}
		if (n->used_by >= 0) {
			snprintf(what, sizeof(what), "nodes[%lld] (%s)",
			    (long long) n->used_by,
			    pasci_graph_node_op(
			        s->graph, (size_t) n->used_by));
			if (check_sparse_use(r, (int64_t) i, what) != 0) {
				return PASCO_EINVAL;
			}
		}
	}
	for (size_t k = 0; k < s->noutputs; k++) {
		snprintf(what, sizeof(what), "outputs[%zu]", k);
		if (check_sparse_use(r, s->outputs[k], what) != 0) {
			return PASCO_EINVAL;
		}
	}
	for (size_t u = 0; u < s->nupdates; u++) {
		snprintf(what, sizeof(what), "updates[%zu]", u);
		if (check_var(r, s->updates[u].var, what) != 0 ||
		    check_sparse_use(r, s->updates[u].value, what) != 0) {
			return PASCO_EINVAL;
		}
	}
	for (size_t a = 0; a < s->napplies; a++) {
		snprintf(what, sizeof(what), "applies[%zu]", a);
		for (size_t j = 0; j < s->applies[a].n; j++) {
			if (check_var(r, s->applies[a].vars[j], what) != 0) {
				return PASCO_EINVAL;
			}
		}
	}
	return PASCO_OK;
}

int
pasci_gstep_bind(pasci_gstep_run *r)
{
	int rv;
	if ((rv = bind_args(r)) == 0 && (rv = bind_vars(r)) == 0) {
		rv = check_bound(r);
	}
	return rv;
}
