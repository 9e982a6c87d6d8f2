/*
 * Runs a model's forward pass for tests/python/prep_layers.py: reads one
 * JSON object from stdin, {"config": a model config (pasco_model_from_json),
 * "inputs": [{"dtype": "f32" | "f64" | "i32" | "i64" | "string", "shape":
 * [..], "data": [flat values; strings for "string", each fingerprinted
 * with pasco_hash_key]}, ...]}, and prints {"shape": [...], "data":
 * [...]} of the output, or {"error": message} when the config or the pass
 * fails. A model of preprocessing layers (and layers of no variables).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pasco/hash.h"
#include "pasco/layers.h"
#include "pasco/model.h"
#include "pasco/tape.h"

static int
fail(const char *msg)
{
	cJSON *o = cJSON_CreateObject();
	char  *s;
	cJSON_AddStringToObject(o, "error", msg);
	s = cJSON_PrintUnformatted(o);
	puts(s);
	free(s);
	cJSON_Delete(o);
	return 0;
}

static pasco_tensor *
read_input(const cJSON *in)
{
	const cJSON  *dt = cJSON_GetObjectItem(in, "dtype");
	const cJSON  *sh = cJSON_GetObjectItem(in, "shape"), *it;
	const cJSON  *d  = cJSON_GetObjectItem(in, "data");
	int64_t       shape[8];
	int32_t       rank = 0;
	pasco_dtype   t    = PASCO_I64;
	pasco_tensor *x;
	int64_t       k    = 0;
	const char   *name = dt->valuestring;
	cJSON_ArrayForEach(it, sh)
	{
		shape[rank++] = (int64_t) it->valuedouble;
	}
	t = strcmp(name, "f32") == 0   ? PASCO_F32
	    : strcmp(name, "f64") == 0 ? PASCO_F64
	    : strcmp(name, "i32") == 0 ? PASCO_I32
	                               : PASCO_I64;
	if (pasco_tensor_alloc(&x, t, rank, shape) != 0) {
		return NULL;
	}
	cJSON_ArrayForEach(it, d)
	{
		if (cJSON_IsString(it)) {
			((int64_t *) x->data)[k] = pasco_hash_key(
			    it->valuestring, strlen(it->valuestring));
		} else if (t == PASCO_F32) {
			((float *) x->data)[k] = (float) it->valuedouble;
		} else if (t == PASCO_F64) {
			((double *) x->data)[k] = it->valuedouble;
		} else if (t == PASCO_I32) {
			((int32_t *) x->data)[k] = (int32_t) it->valuedouble;
		} else {
			((int64_t *) x->data)[k] = (int64_t) it->valuedouble;
		}
		k++;
	}
	return x;
}

int
main(void)
{
	static char buf[1 << 22];
	size_t      n = fread(buf, 1, sizeof(buf) - 1, stdin);
	cJSON      *j = (buf[n] = 0, cJSON_Parse(buf));
	char *cfg = cJSON_PrintUnformatted(cJSON_GetObjectItem(j, "config"));
	pasco_model  *m;
	pasco_tape   *tp;
	pasco_tensor *ins[8] = {0};
	size_t        nin    = 0;
	const cJSON  *it;
	char         *back = NULL;
	if (pasco_model_from_json(cfg, &m) != 0) {
		fail(pasco_model_last_error());
		free(cfg);
		cJSON_Delete(j);
		return 0;
	}
	if (pasco_model_to_json(m, &back) != 0) {
		fail(pasco_model_last_error());
		pasco_model_free(m);
		free(cfg);
		cJSON_Delete(j);
		return 0;
	}
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "inputs"))
	{
		ins[nin++] = read_input(it);
	}
	pasco_tape_alloc(&tp, false, 1);
	pasco_tnode *out = pasco_model_call_with(m, tp, ins, NULL);
	if (out == NULL) {
		fail(pasco_tape_message(tp));
	} else {
		const pasco_tensor *v = pasco_tnode_value(out);
		cJSON              *o = cJSON_CreateObject();
		cJSON              *s = cJSON_AddArrayToObject(o, "shape");
		cJSON              *d = cJSON_AddArrayToObject(o, "data");
		cJSON_AddItemToObject(o, "config", cJSON_Parse(back));
		for (int32_t r = 0; r < v->rank; r++) {
			cJSON_AddItemToArray(
			    s, cJSON_CreateNumber((double) v->shape[r]));
		}
		for (int64_t k = 0; k < v->count; k++) {
			cJSON_AddItemToArray(d,
			    cJSON_CreateNumber(((const float *) v->data)[k]));
		}
		char *txt = cJSON_PrintUnformatted(o);
		puts(txt);
		free(txt);
		cJSON_Delete(o);
	}
	pasco_tape_free(tp);
	for (size_t k = 0; k < nin; k++) {
		pasco_tensor_release(ins[k]);
	}
	pasco_model_free(m);
	free(cfg);
	free(back);
	cJSON_Delete(j);
	return 0;
}
