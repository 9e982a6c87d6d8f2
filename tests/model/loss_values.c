/*
 * For tests/python/losses_numpy.py: reads a JSON array of cases from
 * stdin, each {"loss": a name, a Keras loss class's config or a traced
 * {"class_name": "Graph", "config": ...}, "pred": [...] (f64), "shape":
 * [...], "y": [...], "y_shape": [...], "y_dtype": "float32" | "float64" |
 * "int64"}, and prints for each the loss the library computes on a tape
 * (pasco_t_loss, or the loss graph run as compile runs it) and its
 * gradient with respect to pred: {"loss": x, "grad": [...]}, or {"error":
 * the message}.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_impl.h"
#include "pasco/tape.h"

static pasco_tensor *
tensor_of(const cJSON *vals, const cJSON *shape, pasco_dtype dt)
{
	int64_t       dims[PASCO_MAX_RANK];
	int32_t       rank = 0;
	const cJSON  *it;
	pasco_tensor *t = NULL;
	int           i = 0;
	cJSON_ArrayForEach(it, shape)
	{
		dims[rank++] = (int64_t) it->valuedouble;
	}
	if (pasco_tensor_alloc(&t, dt, rank, dims) != 0) {
		return NULL;
	}
	cJSON_ArrayForEach(it, vals)
	{
		pasco_tensor_set(t, i++, it->valuedouble);
	}
	return t;
}

static pasco_tnode *
loss_node(pasco_tape *tp, const cJSON *spec, pasco_tnode *pred,
    const pasco_tensor *y, pasci_loss_graph **lg)
{
	const cJSON *cls =
	    cJSON_GetObjectItemCaseSensitive(spec, "class_name");
	pasco_loss loss;
	if (cJSON_IsString(cls) && strcmp(cls->valuestring, "Graph") == 0) {
		if (pasci_loss_graph_read(
		        cJSON_GetObjectItemCaseSensitive(spec, "config"), lg,
		        "loss") != 0) {
			return NULL;
		}
		return pasci_loss_graph_run(*lg, tp, y, pred, NULL);
	}
	if (pasci_loss_config_read(spec, &loss, "loss") != 0) {
		return NULL;
	}
	return pasco_t_loss(tp, &loss, pred, y);
}

static cJSON *
run_case(const cJSON *c)
{
	cJSON      *out = cJSON_CreateObject(), *g;
	const char *ydt = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(c, "y_dtype"));
	pasco_dtype dt = ydt == NULL || strcmp(ydt, "float64") == 0 ? PASCO_F64
	                 : strcmp(ydt, "int64") == 0                ? PASCO_I64
	                                             : PASCO_F32;
	pasco_tensor *p =
	    tensor_of(cJSON_GetObjectItemCaseSensitive(c, "pred"),
	        cJSON_GetObjectItemCaseSensitive(c, "shape"), PASCO_F64);
	pasco_tensor *y  = tensor_of(cJSON_GetObjectItemCaseSensitive(c, "y"),
	     cJSON_GetObjectItemCaseSensitive(c, "y_shape"), dt);
	pasco_tape   *tp = NULL;
	pasci_loss_graph *lg   = NULL;
	pasco_tape_grad   grad = {0};
	pasco_tnode      *x, *l = NULL;
	if (p != NULL && y != NULL && pasco_tape_alloc(&tp, true, 1) == 0 &&
	    (x = pasco_tape_watch(tp, p)) != NULL) {
		l = loss_node(tp, cJSON_GetObjectItemCaseSensitive(c, "loss"),
		    x, y, &lg);
		if (l != NULL &&
		    pasco_tape_gradient(tp, l, 1, &x, &grad) == 0) {
			cJSON_AddNumberToObject(out, "loss",
			    pasco_tensor_get(pasco_tnode_value(l), 0));
			g = cJSON_AddArrayToObject(out, "grad");
			for (int64_t i = 0;
			     grad.dense && i < grad.dense->count; i++) {
				cJSON_AddItemToArray(
				    g, cJSON_CreateNumber(
				           pasco_tensor_get(grad.dense, i)));
			}
		}
	}
	if (cJSON_GetObjectItemCaseSensitive(out, "loss") == NULL) {
		cJSON_AddStringToObject(out, "error",
		    tp != NULL && pasco_tape_error(tp) != 0
		        ? pasco_tape_message(tp)
		        : pasco_model_last_error());
	}
	pasco_tape_grad_fini(&grad, 1);
	pasci_loss_graph_release(lg);
	pasco_tape_free(tp);
	pasco_tensor_release(p);
	pasco_tensor_release(y);
	return out;
}

int
main(void)
{
	size_t cap = 1 << 20, n = 0, k;
	char  *buf = malloc(cap);
	cJSON *cases, *it, *outs = cJSON_CreateArray();
	char  *text;
	while (
	    buf != NULL && (k = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
		n += k;
		if (n + 1 == cap) {
			char *more = realloc(buf, cap *= 2);
			if (more == NULL) {
				free(buf);
				return 2;
			}
			buf = more;
		}
	}
	if (buf == NULL) {
		return 2;
	}
	buf[n] = 0;
	if ((cases = cJSON_Parse(buf)) == NULL) {
		fprintf(stderr, "loss_values: stdin is not JSON\n");
		free(buf);
		return 2;
	}
	cJSON_ArrayForEach(it, cases)
	{
		cJSON_AddItemToArray(outs, run_case(it));
	}
	text = cJSON_PrintUnformatted(outs);
	puts(text != NULL ? text : "null");
	free(text);
	free(buf);
	cJSON_Delete(cases);
	cJSON_Delete(outs);
	return 0;
}
