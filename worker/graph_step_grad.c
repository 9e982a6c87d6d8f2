/*
 * A traced step's gradient nodes (graph_step.h): one pasco_tape_gradient
 * per target for every variable asked of it, each once; an embedding
 * table read by several calls of its model has a source per call, and
 * its gradient joins theirs. A dense gradient is a node of the graph; a
 * sparse one (a table's rows) only applies take. Any handler thread, on
 * its own run.
 */
#include "graph_step.h"

#include "tape_impl.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static pasco_tensor *
held(pasco_tensor *t)
{
	return t != NULL ? pasco_tensor_hold(t) : NULL;
}

/* A sparse gradient g extended by h's ids and rows: the same table's,
 * read again by a later call of its model. The ps sums repeated ids
 * (client/variable_sparse.c), so the rows need not be merged here. h's
 * tensors are released. */
static int
sparse_join(pasco_tape_grad *g, pasco_tape_grad *h)
{
	pasco_tensor *ids, *rows;
	int64_t       n = 0, width;
	if (h->ids == NULL) {
		return PASCO_OK;
	}
	if (g->ids == NULL) {
		pasco_tape_grad_fini(g, 1);
		*g = *h;
		*h = (pasco_tape_grad){0};
		return PASCO_OK;
	}
	n     = g->ids->count + h->ids->count;
	width = g->rows->count / (g->ids->count > 0 ? g->ids->count : 1);
	if (pasco_tensor_alloc(&ids, PASCO_I64, 1, (int64_t[]){n}) != 0) {
		return PASCO_ENOMEM;
	}
	if (pasco_tensor_alloc(
	        &rows, g->rows->dtype, 2, (int64_t[]){n, width}) != 0) {
		pasco_tensor_release(ids);
		return PASCO_ENOMEM;
	}
	for (int64_t i = 0; i < n; i++) {
		const pasco_tensor *t = i < g->ids->count ? g->ids : h->ids;
		int64_t j = i < g->ids->count ? i : i - g->ids->count;
		((int64_t *) ids->data)[i] =
		    t->dtype == PASCO_I32 ? ((const int32_t *) t->data)[j]
		                          : ((const int64_t *) t->data)[j];
	}
	memcpy(rows->data, g->rows->data, g->rows->nbytes);
	memcpy((char *) rows->data + g->rows->nbytes, h->rows->data,
	    h->rows->nbytes);
	pasco_tape_grad_fini(g, 1);
	pasco_tape_grad_fini(h, 1);
	*g = (pasco_tape_grad){.ids = ids, .rows = rows};
	return PASCO_OK;
}

/* Every gradient of the target of leader: one pasco_tape_gradient for
 * all the variables asked of it (each once, a table with each of its
 * sources: at[] of a later source is SIZE_MAX, joined to the first's). */
static bool
gradients_of(pasci_gstep_run *r, size_t leader, const pasci_gval *target)
{
	const pasci_gstep *s  = r->s;
	size_t             nn = 0, cap = s->nnodes + r->nmore + 1;
	pasco_tnode      **src = pasci_tape_mem(r->tp, cap * sizeof(*src));
	size_t            *at  = pasci_tape_mem(r->tp, cap * sizeof(*at));
	pasco_tape_grad   *g   = pasci_calloc(cap, sizeof(*g));
	bool               ok;
	if (src == NULL || at == NULL || g == NULL) {
		free(g);
		return pasci_gstep_fail(
		    r, leader, PASCO_ENOMEM, "%s", "out of memory");
	}
	if (target->node == NULL) {
		free(g);
		return pasci_gstep_fail(r, leader, PASCO_EINVAL,
		    "its target nodes[%lld] is not a float value",
		    (long long) s->nodes[leader].target);
	}
	for (size_t j = leader; j < s->nnodes; j++) {
		const pasci_gstep_node *n = &s->nodes[j];
		if (n->op != PASCI_GSTEP_OP_GRADIENT || n->leader != leader) {
			continue;
		}
		size_t k = 0;
		while (k < nn && r->src[n->var] != src[k]) {
			k++;
		}
		r->no_grad[j] = r->src[n->var] == NULL; /* never read */
		if (!r->no_grad[j] && k == nn) {
			src[nn]  = r->src[n->var];
			at[nn++] = j;
			for (pasci_gstep_src *m = r->more[n->var]; m != NULL;
			     m                  = m->next) {
				src[nn]  = m->node;
				at[nn++] = SIZE_MAX;
			}
		}
	}
	ok = nn == 0 ||
	     pasco_tape_gradient(r->tp, target->node, nn, src, g) == 0;
	for (size_t k = 0; ok && k < nn; k++) {
		size_t first = k;
		while (k + 1 < nn && at[k + 1] == SIZE_MAX) {
			if (sparse_join(&g[first], &g[++k]) != 0) {
				pasco_tape_grad_fini(g, nn);
				free(g);
				return pasci_gstep_fail(r, leader,
				    PASCO_ENOMEM, "%s", "out of memory");
			}
		}
		r->grads[at[first]] = g[first]; /* the run releases them */
		r->no_grad[at[first]] =
		    g[first].dense == NULL && g[first].ids == NULL;
	}
	for (size_t j = leader; ok && j < s->nnodes; j++) {
		size_t k = 0; /* a variable asked twice: the first's, held */
		while (k < nn && (at[k] == j || at[k] == SIZE_MAX ||
		                     r->src[s->nodes[j].var] != src[k])) {
			k++;
		}
		if (s->nodes[j].op == PASCI_GSTEP_OP_GRADIENT &&
		    s->nodes[j].leader == leader && k < nn && !r->no_grad[j] &&
		    r->grads[j].dense == NULL && r->grads[j].ids == NULL) {
			r->grads[j] = (pasco_tape_grad){
			    .dense = held(r->grads[at[k]].dense),
			    .ids   = held(r->grads[at[k]].ids),
			    .rows  = held(r->grads[at[k]].rows)};
			r->no_grad[j] = r->no_grad[at[k]];
		}
	}
	free(g);
	return ok ? true
	          : pasci_gstep_fail(r, leader, pasco_tape_error(r->tp), "%s",
	                pasco_tape_message(r->tp));
}

bool
pasci_gstep_gradient(
    pasci_gstep_run *r, size_t i, const pasci_gval *in, pasci_gval *out)
{
	const pasci_gstep_node *n = &r->s->nodes[i];
	pasco_variable         *v = r->vars[n->var];
	pasco_tensor           *z;
	if (n->leader == i && !gradients_of(r, i, &in[0])) {
		return false;
	}
	if (r->sparse[n->var]) { /* only applies take it (check_bound) */
		return true;
	}
	if (!r->no_grad[i]) {
		out->node = pasco_tape_constant(r->tp, r->grads[i].dense);
		return out->node != NULL;
	}
	/* TensorFlow's None: zeros here, and applies skip it */
	if (pasco_tensor_alloc(&z, pasco_variable_dtype(v),
	        pasco_variable_rank(v), pasco_variable_shape(v)) != 0) {
		return pasci_gstep_fail(
		    r, i, PASCO_ENOMEM, "%s", "out of memory");
	}
	out->node = pasco_tape_constant(r->tp, z);
	pasco_tensor_release(z); /* the tape holds it */
	return out->node != NULL;
}
