/*
 * Custom losses (docs/GRAPHS.md, "A custom loss in a compile config"): a
 * loss op graph, parsed once when the model is compiled (or its compile
 * config read), held by reference by the model and each copy of it, run
 * by the train and evaluate batches where a built-in loss would be:
 * inputs y_true (the batch's targets, cast to the traced dtype) and
 * y_pred (the model's output); a scalar output is the loss, per-example
 * losses [batch] are averaged. With sample weights (Keras's sample_weight
 * and class_weight), each example's loss is multiplied by its weight
 * before that mean, Keras's "sum_over_batch_size" (sum(w_i * l_i) /
 * batch, as pasco_t_loss_weighted); a scalar loss is multiplied by each
 * weight and averaged, loss * mean(w), as Keras's reduce_weighted_values
 * broadcasts it. Immutable once read: any thread, each on its own tape;
 * the reference count is atomic.
 */
#include "graph.h"
#include "model_impl.h"
#include "tape_impl.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pasci_loss_graph {
	int32_t      refs; /* atomic */
	char         name[48];
	pasci_graph *graph;
};

int
pasci_loss_graph_read(
    const cJSON *config, pasci_loss_graph **out, const char *at)
{
	static const char *const keys[] = {"name", "graph"};
	const char              *name   = "graph_loss";
	pasci_loss_graph        *lg;
	char                     where[200];
	int32_t                  rank;
	const int64_t           *shape;
	pasco_dtype              dt;
	int                      rv;
	*out = NULL;
	if (pasci_json_check_keys(config, keys, 2, at) != 0 ||
	    pasci_json_string(config, "name", &name, at) != 0) {
		return PASCO_EINVAL;
	}
	if (strlen(name) >= sizeof(lg->name)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: name is longer than %zu bytes", at,
		    sizeof(lg->name) - 1);
	}
	if ((lg = pasci_calloc(1, sizeof(*lg))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	lg->refs = 1;
	snprintf(lg->name, sizeof(lg->name), "%s", name);
	pasci_fmt(where, sizeof(where), "%s: %s", at, name);
	rv = pasci_graph_parse(
	    cJSON_GetObjectItemCaseSensitive(config, "graph"),
	    PASCI_GRAPH_LOSS, where, &lg->graph);
	if (rv == 0 && (pasci_graph_num_inputs(lg->graph) != 2 ||
	                   pasci_graph_num_outputs(lg->graph) != 1)) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "%s: a loss graph has 2 inputs (y_true, y_pred) and one "
		    "output; this one %zu and %zu",
		    where, pasci_graph_num_inputs(lg->graph),
		    pasci_graph_num_outputs(lg->graph));
	}
	if (rv == 0) {
		dt = pasci_graph_node_spec(lg->graph,
		    pasci_graph_output(lg->graph, 0), &rank, &shape);
		if ((dt != PASCO_F32 && dt != PASCO_F64) || rank > 1) {
			rv = pasci_model_fail(PASCO_EINVAL,
			    "%s: the output is %s%s; a loss is a float scalar "
			    "or per-example losses [batch]",
			    where, pasco_dtype_name(dt),
			    PASCI_SHAPE(rank, shape));
		}
	}
	if (rv != 0) {
		pasci_loss_graph_release(lg);
		return rv;
	}
	*out = lg;
	return PASCO_OK;
}

pasci_loss_graph *
pasci_loss_graph_hold(pasci_loss_graph *lg)
{
	if (lg != NULL) {
		__atomic_add_fetch(&lg->refs, 1, __ATOMIC_RELAXED);
	}
	return lg;
}

void
pasci_loss_graph_release(pasci_loss_graph *lg)
{
	if (lg == NULL ||
	    __atomic_sub_fetch(&lg->refs, 1, __ATOMIC_ACQ_REL) > 0) {
		return;
	}
	pasci_graph_free(lg->graph);
	free(lg);
}

size_t
pasci_loss_graph_bytes(const pasci_loss_graph *lg)
{
	return lg != NULL ? sizeof(*lg) + pasci_graph_bytes(lg->graph) : 0;
}

const char *
pasci_loss_graph_name(const pasci_loss_graph *lg)
{
	return lg->name;
}

bool
pasci_loss_graph_sparse_labels(const pasci_loss_graph *lg)
{
	int32_t        rt, rp;
	const int64_t *st, *sp;
	pasco_dtype    dt = pasci_graph_input(lg->graph, 0, &rt, &st);
	(void) pasci_graph_input(lg->graph, 1, &rp, &sp);
	return dt == PASCO_I32 || dt == PASCO_I64 || rt < rp;
}

bool
pasci_loss_graph_write(
    cJSON *parent, const char *key, const pasci_loss_graph *lg)
{
	cJSON *c = pasci_json_class(parent, key, "Graph");
	return c != NULL && cJSON_AddStringToObject(c, "name", lg->name) &&
	       cJSON_AddItemToObject(
	           c, "graph", pasci_graph_to_json(lg->graph));
}

/* y as the traced y_true: its dtype, and [batch] and [batch, 1] (or any
 * shape with the same count whose dimensions past the batch are 1)
 * taken for each other. A new tensor when y is not that already (*made
 * owns it), else y. */
static const pasco_tensor *
as_traced(pasco_tape *tp, const pasci_graph *g, const pasco_tensor *y,
    pasco_tensor **made)
{
	int32_t        rank;
	const int64_t *shape;
	pasco_dtype    dt = pasci_graph_input(g, 0, &rank, &shape);
	int64_t        want[PASCO_MAX_RANK];
	bool           ones = rank >= 1 && y->rank >= 1;
	*made               = NULL;
	for (int32_t d = 1; ones && d < rank; d++) {
		ones = shape[d] == 1;
	}
	for (int32_t d = 1; ones && d < y->rank; d++) {
		ones = y->shape[d] == 1;
	}
	if ((dt == y->dtype || (dt != PASCO_F32 && dt != PASCO_F64)) &&
	    (!ones || rank == y->rank)) {
		return y; /* ints are converted by the runner */
	}
	for (int32_t d = 0; d < rank; d++) {
		want[d] = d == 0 ? y->shape[0] : 1;
	}
	if (!ones) {
		rank = y->rank;
		memcpy(want, y->shape, sizeof(want));
	}
	if (pasco_tensor_alloc(made, dt, rank, want) != 0) {
		pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
		return NULL;
	}
	for (int64_t k = 0; k < y->count && k < (*made)->count; k++) {
		pasco_tensor_set(*made, k, pasco_tensor_get(y, k));
	}
	return *made;
}

/* The per-example weights sw as a constant [rows] of dtype (rows: the
 * batch's examples); NULL with the tape's error set when sw is not one
 * number per example. */
static pasco_tnode *
weights_node(pasco_tape *tp, const pasci_loss_graph *lg,
    const pasco_tensor *sw, pasco_dtype dtype, int64_t rows)
{
	pasco_tensor *w;
	pasco_tnode  *n;
	if (sw->count != rows || sw->rank < 1 || sw->rank > 2 ||
	    (sw->rank == 2 && sw->shape[1] != 1) ||
	    (sw->dtype != PASCO_F32 && sw->dtype != PASCO_F64 &&
	        sw->dtype != PASCO_I32 && sw->dtype != PASCO_I64)) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "loss '%s': sample weights %s for a batch of %lld: want "
		    "one number per example ([%lld] or [%lld, 1])",
		    lg->name, PASCI_TSPEC(sw), (long long) rows,
		    (long long) rows, (long long) rows);
	}
	if (pasco_tensor_alloc(&w, dtype, 1, &rows) != 0) {
		return pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
	}
	for (int64_t i = 0; i < rows; i++) {
		pasco_tensor_set(w, i, pasco_tensor_get(sw, i));
	}
	n = pasco_tape_constant(tp, w);
	pasco_tensor_release(w); /* the tape holds it */
	return n;
}

pasco_tnode *
pasci_loss_graph_run(const pasci_loss_graph *lg, pasco_tape *tp,
    const pasco_tensor *y, pasco_tnode *pred, const pasco_tensor *sw)
{
	pasco_tensor       *made;
	const pasco_tensor *t     = as_traced(tp, lg->graph, y, &made);
	pasci_gval          in[2] = {{0}}, out;
	int32_t             rank;
	const int64_t      *shape;
	const pasco_tensor *v, *p;
	pasco_dtype dt = pasci_graph_input(lg->graph, 0, &rank, &shape);
	int64_t     rows;
	bool        ok;
	if (t == NULL) {
		return NULL;
	}
	if (dt == PASCO_F32 || dt == PASCO_F64) {
		in[0].node = pasco_tape_constant(tp, t);
	} else {
		in[0].ints = t; /* of any dtype: the runner converts it */
	}
	in[1].node = pred;
	ok         = (in[0].node != NULL || in[0].ints != NULL) &&
	     pasci_graph_run(
	         lg->graph, tp, lg->name, in, NULL, NULL, NULL, &out);
	pasco_tensor_release(made);
	if (!ok) {
		return NULL;
	}
	v = pasco_tnode_value(out.node);
	if (sw == NULL) {
		return v->rank == 0 ? out.node
		                    : pasco_t_reduce_mean(
		                          tp, out.node, PASCO_T_ALL_AXES);
	}
	p    = pasco_tnode_value(pred);
	rows = p->rank > 0 ? p->shape[0] : 1;
	if (v->rank == 1 && v->shape[0] != rows) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "loss '%s': returned %s for a batch of %lld; weighing "
		    "examples (sample_weight, class_weight) needs a scalar or "
		    "one loss per example [%lld]",
		    lg->name, PASCI_SHAPE(v->rank, v->shape), (long long) rows,
		    (long long) rows);
	}
	/* sum(w_i * l_i) / batch; a scalar l: l * mean(w), as Keras */
	return pasco_t_reduce_mean(tp,
	    pasco_t_mul(
	        tp, out.node, weights_node(tp, lg, sw, v->dtype, rows)),
	    PASCO_T_ALL_AXES);
}
