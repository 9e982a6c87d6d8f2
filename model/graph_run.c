/*
 * Running a parsed op graph on a tape (graph.h): nodes in order, each
 * value checked against the node's static shape, errors naming the
 * graph, the node, its op and the shapes. No JSON is read here: the
 * attributes were parsed once by model/graph.c. Any thread, on its own
 * tape.
 */
#include "graph_impl.h"

#include "model_impl.h"

#include <stdio.h>
#include <string.h>

static bool
is_float(pasco_dtype d)
{
	return d == PASCO_F32 || d == PASCO_F64;
}

#define SPEC PASCI_GSPEC

/* Puts "at: nodes[i] (op): " before the op's message: the op names
 * itself and the shapes, the graph the node. The tape keeps its first
 * error, so the message is rewritten in place (PASCI_TAPE_MSG_MAX). */
static bool
fail_at(pasco_tape *tp, const char *at, size_t i, const char *op)
{
	char  buf[PASCI_TAPE_MSG_MAX];
	char *msg = (char *) pasco_tape_message(tp);
	snprintf(buf, sizeof(buf), "%s: nodes[%zu] (%s): %s", at, i, op, msg);
	memcpy(msg, buf, sizeof(buf));
	return false;
}

static const pasco_tensor *
gval_value(const pasci_gval *v)
{
	return v->node != NULL ? pasco_tnode_value(v->node) : v->ints;
}

/* v against node n's static spec (-1 matches any size). */
static bool
check_value(pasco_tape *tp, const graph_node *n, const pasci_gval *v,
    const char *at, size_t i)
{
	const pasco_tensor *t  = gval_value(v);
	bool                ok = t != NULL && t->dtype == n->a.dtype &&
	          t->rank == n->a.rank &&
	          (v->node != NULL) == is_float(n->a.dtype);
	for (int32_t d = 0; ok && d < t->rank; d++) {
		ok = n->a.shape[d] < 0 || n->a.shape[d] == t->shape[d];
	}
	if (!ok) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: nodes[%zu] (%s): the value is %s; traced %s", at, i,
		    n->name,
		    t != NULL ? SPEC(t->dtype, t->rank, t->shape) : "none",
		    SPEC(n->a.dtype, n->a.rank, n->a.shape));
	}
	return ok;
}

/* t's elements as a new tensor of dtype d on tp: a constant node for a
 * float dtype, else an integer tensor in the arena. */
static bool
convert(pasco_tape *tp, const pasco_tensor *t, pasco_dtype d, pasci_gval *out)
{
	pasco_tensor *c = NULL;
	if (!is_float(d)) {
		c         = pasci_graph_ints(tp, d, t->rank, t->shape);
		out->ints = c;
	} else if (pasco_tensor_alloc(&c, d, t->rank, t->shape) != 0) {
		pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
		return false;
	}
	for (int64_t k = 0; c != NULL && k < t->count; k++) {
		pasco_tensor_set(c, k, pasco_tensor_get(t, k));
	}
	if (c != NULL && is_float(d)) {
		out->node = pasco_tape_constant(tp, c);
		pasco_tensor_release(c);
		return out->node != NULL;
	}
	return c != NULL;
}

/* Input k as the graph traced it: ints converted to its dtype (a float
 * one: a constant); a float node must have its dtype. */
static bool
run_input(pasco_tape *tp, const pasci_graph *g, const graph_node *n,
    const pasci_gval *given, pasci_gval *out, const char *at)
{
	const graph_input  *in = &g->inputs[n->index];
	const pasco_tensor *t  = gval_value(given);
	*out                   = (pasci_gval){0};
	if (t == NULL) {
		pasci_tape_fail(tp, PASCO_EINVAL, "%s: input %lld is missing",
		    at, (long long) n->index);
		return false;
	}
	if (t->dtype == in->dtype &&
	    (given->node != NULL) == is_float(t->dtype)) {
		*out = *given;
		return true;
	}
	if (given->node != NULL) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: input %lld is %s; traced %s", at,
		    (long long) n->index, SPEC(t->dtype, t->rank, t->shape),
		    SPEC(in->dtype, in->rank, in->shape));
		return false;
	}
	return convert(tp, t, in->dtype, out);
}

/* Weight k's node; a non-trainable one enters as a constant copy of its
 * value, so no gradient reaches it. */
static bool
run_weight(pasco_tape *tp, const pasci_graph *g, const graph_node *n,
    pasco_tnode *const *weights, pasci_gval *out, const char *at)
{
	pasco_tnode *w = weights != NULL ? weights[n->index] : NULL;
	if (w == NULL) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: no node for weight %lld ('%s')", at,
		    (long long) n->index, g->weights[n->index].name);
		return false;
	}
	if (g->weights[n->index].trainable) {
		out->node = w;
		return true;
	}
	return convert(
	    tp, pasco_tnode_value(w), pasco_tnode_value(w)->dtype, out);
}

static bool
run_node(const pasci_graph *g, pasco_tape *tp, size_t i, const char *at,
    const pasci_gval *inputs, pasco_tnode *const *weights,
    const pasci_graph_hook *hook, pasci_gval *values, pasci_gval *in)
{
	const graph_node *n   = &g->nodes[i];
	pasci_gval       *out = &values[i];
	*out                  = (pasci_gval){0};
	for (size_t k = 0; k < n->nin; k++) {
		in[k] = values[g->ins[n->first_in + k]];
	}
	switch (n->kind) {
	case NODE_INPUT:
		return run_input(tp, g, n, &inputs[n->index], out, at);
	case NODE_WEIGHT:
		return run_weight(tp, g, n, weights, out, at);
	case NODE_CONSTANT:
		if (is_float(n->a.dtype)) {
			out->node = pasco_tape_constant(tp, n->constant);
		} else {
			out->ints = n->constant;
		}
		return out->node != NULL || out->ints != NULL;
	case NODE_STEP:
		if (hook == NULL || hook->node == NULL) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "%s: nodes[%zu] (%s): a step's op, run without "
			    "a step",
			    at, i, n->name);
			return false;
		}
		return hook->node(hook->arg, tp, i, n->nin, in, out) ||
		       fail_at(tp, at, i, n->name);
	default:
		return n->op->run(tp, n->nin, in, &n->a, out) ||
		       fail_at(tp, at, i, n->name);
	}
}

bool
pasci_graph_run(const pasci_graph *g, pasco_tape *tp, const char *at,
    const pasci_gval *inputs, pasco_tnode *const *weights,
    const pasci_graph_hook *hook, pasci_gval *values, pasci_gval *outputs)
{
	pasci_gval *in;
	at = at != NULL ? at : "graph";
	if (tp == NULL || pasco_tape_error(tp) != PASCO_OK) {
		return false;
	}
	if (values == NULL) {
		values = pasci_tape_mem(tp, g->nnodes * sizeof(*values));
	}
	in = pasci_tape_mem(tp, (g->max_in + 1) * sizeof(*in));
	if (values == NULL || in == NULL) {
		return false;
	}
	for (size_t i = 0; i < g->nnodes; i++) {
		if (!run_node(g, tp, i, at, inputs, weights, hook, values,
		        in) ||
		    !check_value(tp, &g->nodes[i], &values[i], at, i)) {
			return false;
		}
	}
	for (size_t k = 0; k < g->noutputs; k++) {
		outputs[k] = values[g->outputs[k]];
	}
	return true;
}
