/*
 * A model's forward pass and gradients on one tape, for the numpy checks
 * of tests/python/layers_merge_numerics.py: reads from stdin
 *     {"config": a model config (pasco_model_from_json),
 *      "inputs": [{"dtype": "f32" | "i64", "shape": [...], "data": [...]}],
 *      "variables": [[...], ...]   (each variable's values, row-major),
 *      "upstream": [...]           (the output's element count),
 *      "training": bool, "seed": n}
 * and prints {"shape": the output's, "output": [...], "inputs": [the
 * gradient of sum(output * upstream) for each feature input, null for
 * ids], "variables": [each variable's, dense; an Embedding's sparse rows
 * scattered into its table]} or {"error": the message}. Exit 0 either
 * way; 2 on a bad request.
 */
#include "layer_desc.h"
#include "layers_impl.h"
#include "model_impl.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *
read_all(FILE *f)
{
	size_t cap = 1 << 16, n = 0, got;
	char  *buf = malloc(cap);
	while (buf != NULL && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap) {
			buf = realloc(buf, cap *= 2);
		}
	}
	if (buf != NULL) {
		buf[n] = 0;
	}
	return buf;
}

static pasco_tensor *
tensor_of(
    const cJSON *o, pasco_dtype dtype, int32_t rank, const int64_t *shape)
{
	pasco_tensor *t;
	const cJSON  *v;
	int64_t       k = 0;
	if (pasco_tensor_alloc(&t, dtype, rank, shape) != 0) {
		return NULL;
	}
	cJSON_ArrayForEach(v, o)
	{
		if (k < t->count) {
			pasco_tensor_set(t, k, v->valuedouble);
		}
		k++;
	}
	if (k != t->count) {
		fprintf(stderr, "layer_grads: %lld values for %lld elements\n",
		    (long long) k, (long long) t->count);
		pasco_tensor_release(t);
		return NULL;
	}
	return t;
}

static cJSON *
numbers(const pasco_tensor *t)
{
	cJSON *a = cJSON_CreateArray();
	for (int64_t k = 0; t != NULL && k < t->count; k++) {
		cJSON_AddItemToArray(
		    a, cJSON_CreateNumber(pasco_tensor_get(t, k)));
	}
	return a;
}

/* A gradient as a dense array of the variable's shape. */
static cJSON *
dense_grad(const pasco_tape_grad *g, const pasci_model_var *v)
{
	pasco_tensor *d;
	cJSON        *a;
	if (g->dense != NULL) {
		return numbers(g->dense);
	}
	if (v == NULL) {
		return cJSON_CreateNull(); /* an input the output ignores */
	}
	if (pasco_tensor_alloc(&d, PASCO_F64, v->rank, v->shape) != 0) {
		return NULL;
	}
	for (int64_t r = 0; g->ids != NULL && r < g->ids->count; r++) {
		int64_t row = (int64_t) pasco_tensor_get(g->ids, r);
		int64_t dim = v->shape[1];
		for (int64_t j = 0; j < dim; j++) {
			((double *) d->data)[row * dim + j] +=
			    pasco_tensor_get(g->rows, r * dim + j);
		}
	}
	a = numbers(d);
	pasco_tensor_release(d);
	return a;
}

static int
run(const cJSON *req, cJSON *out)
{
	char *cfg = cJSON_PrintUnformatted(
	    cJSON_GetObjectItemCaseSensitive(req, "config"));
	const cJSON  *ins = cJSON_GetObjectItemCaseSensitive(req, "inputs");
	const cJSON  *vs  = cJSON_GetObjectItemCaseSensitive(req, "variables");
	const cJSON  *it;
	pasco_model  *m;
	pasco_tape   *tp;
	pasco_tensor *in[16]    = {0}, *up;
	pasco_tnode  *feats[16] = {0}, **nodes, *y, *loss;
	size_t        n = 0, nsrc = 0;
	int           rv = pasco_model_from_json(cfg, &m);
	free(cfg);
	if (rv != 0) {
		cJSON_AddStringToObject(
		    out, "error", pasco_model_last_error());
		return 0;
	}
	pasco_tape_alloc(&tp,
	    cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "training")),
	    (uint64_t) cJSON_GetObjectItemCaseSensitive(req, "seed")
	        ->valuedouble);
	cJSON_ArrayForEach(it, ins)
	{
		const cJSON *sh =
		    cJSON_GetObjectItemCaseSensitive(it, "shape");
		int64_t shape[8];
		int32_t rank = 0;
		bool ids = strcmp(cJSON_GetObjectItemCaseSensitive(it, "dtype")
		                      ->valuestring,
		               "i64") == 0;
		const cJSON *d;
		cJSON_ArrayForEach(d, sh)
		{
			shape[rank++] = (int64_t) d->valuedouble;
		}
		in[n] = tensor_of(cJSON_GetObjectItemCaseSensitive(it, "data"),
		    ids ? PASCO_I64 : PASCO_F32, rank, shape);
		if (in[n] == NULL) {
			return 2;
		}
		feats[n] = ids ? NULL : pasco_tape_watch(tp, in[n]);
		n++;
	}
	nodes = calloc(m->nvars + 1, sizeof(*nodes));
	pasco_tnode *src[64];
	for (size_t k = 0; k < m->nvars; k++) {
		pasci_model_var *v = &m->vars[k];
		pasco_tensor    *t = tensor_of(cJSON_GetArrayItem(vs, (int) k),
		       PASCO_F32, v->rank, v->shape);
		if (t == NULL) {
			return 2;
		}
		nodes[k] = pasci_layer_desc_of(m->layers[v->layer].kind)->ids
		               ? pasco_tape_watch_table(tp, t)
		               : pasco_tape_watch(tp, t);
		pasco_tensor_release(t);
		src[nsrc++] = nodes[k];
	}
	for (size_t k = 0; k < n; k++) {
		src[nsrc++] = feats[k];
	}
	y = pasci_model_forward(
	    m, tp, (const pasco_tensor *const *) in, feats, nodes);
	if (y != NULL) {
		const pasco_tensor *yv = pasco_tnode_value(y);
		up                     = tensor_of(
		                        cJSON_GetObjectItemCaseSensitive(req, "upstream"),
		                        PASCO_F32, yv->rank, yv->shape);
		if (up == NULL) {
			return 2;
		}
		loss = pasco_t_reduce_sum(tp,
		    pasco_t_mul(tp, y, pasco_tape_constant(tp, up)),
		    PASCO_T_ALL_AXES);
		pasco_tensor_release(up);
		pasco_tape_grad grads[64] = {0};
		size_t          nv        = m->nvars;
		pasco_tnode    *live[64];
		size_t          nlive = 0;
		for (size_t k = 0; k < nsrc; k++) {
			if (src[k] != NULL) {
				live[nlive++] = src[k];
			}
		}
		if (loss != NULL &&
		    pasco_tape_gradient(tp, loss, nlive, live, grads) == 0) {
			cJSON *shape = cJSON_AddArrayToObject(out, "shape");
			cJSON *gi    = cJSON_CreateArray();
			cJSON *gv    = cJSON_CreateArray();
			size_t at    = 0;
			for (int32_t d = 0; d < yv->rank; d++) {
				cJSON_AddItemToArray(shape,
				    cJSON_CreateNumber((double) yv->shape[d]));
			}
			cJSON_AddItemToObject(out, "output", numbers(yv));
			for (size_t k = 0; k < nv; k++, at++) {
				cJSON_AddItemToArray(
				    gv, dense_grad(&grads[at], &m->vars[k]));
			}
			for (size_t k = 0; k < n; k++) {
				cJSON_AddItemToArray(
				    gi, feats[k] == NULL
				            ? cJSON_CreateNull()
				            : dense_grad(&grads[at++], NULL));
			}
			cJSON_AddItemToObject(out, "variables", gv);
			cJSON_AddItemToObject(out, "inputs", gi);
			pasco_tape_grad_fini(grads, nlive);
		}
	}
	if (pasco_tape_error(tp) != 0) {
		cJSON_AddStringToObject(out, "error", pasco_tape_message(tp));
	}
	pasco_tape_free(tp);
	for (size_t k = 0; k < n; k++) {
		pasco_tensor_release(in[k]);
	}
	free(nodes);
	pasco_model_free(m);
	return 0;
}

int
main(void)
{
	char  *text = read_all(stdin);
	cJSON *req  = text != NULL ? cJSON_Parse(text) : NULL;
	cJSON *out  = cJSON_CreateObject();
	char  *s;
	int    rv;
	free(text);
	if (req == NULL) {
		fprintf(stderr, "layer_grads: stdin is not JSON\n");
		return 2;
	}
	rv = run(req, out);
	s  = cJSON_PrintUnformatted(out);
	puts(s);
	free(s);
	cJSON_Delete(out);
	cJSON_Delete(req);
	return rv;
}
