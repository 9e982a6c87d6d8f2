/*
 * For tests/python/initializers_numpy.py: starts an in-process cluster of
 * two ps, reads a JSON array of cases from stdin, each {"init": a Keras
 * initializer config, "shape": [...], "shards": k}, creates each variable
 * on the ps (the initializer runs there: ps/initializer_fill.c) in one
 * piece and split into k shards over the two ps, reads both back and
 * prints {"values": [...], "sharded": [...], "config": the initializer's
 * config as a model's config writes it} per case, or {"error": the
 * message}.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layer_desc.h"
#include "pasco.h"

static pasco_cluster *cluster;
static pasco_server  *ps[2], *worker;

static int
start(void)
{
	char json[512], err[256];
	snprintf(json, sizeof(json),
	    "{\"cluster\": {\"chief\": [\"inproc://iv-chief-%d\"], \"ps\": "
	    "[\"inproc://iv-ps0-%d\", \"inproc://iv-ps1-%d\"], \"worker\": "
	    "[\"inproc://iv-w0-%d\"]}}",
	    (int) getpid(), (int) getpid(), (int) getpid(), (int) getpid());
	if (pasco_cluster_parse_json(&cluster, json, err, sizeof(err)) != 0) {
		fprintf(stderr, "init_values: %s\n", err);
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		if (pasco_server_start(&ps[i], cluster, PASCO_ROLE_PS, i) !=
		    0) {
			fprintf(
			    stderr, "init_values: ps %d did not start\n", i);
			return 1;
		}
	}
	if (pasco_server_start(&worker, cluster, PASCO_ROLE_WORKER, 0) != 0) {
		fprintf(stderr, "init_values: the worker did not start\n");
		return 1;
	}
	return 0;
}

/* The strategy splitting variables in k shards (1: none), made once. */
static pasco_strategy *s[8];

static pasco_strategy *
strategy_of(int k)
{
	static pasco_partitioner p[8];
	pasco_strategy_options   o = {0};
	k                          = k < 1 ? 1 : k > 7 ? 7 : k;
	if (s[k] == NULL) {
		p[k]          = pasco_fixed_shards_partitioner(k);
		o.partitioner = k > 1 ? &p[k] : NULL;
		if (pasco_strategy_create(&s[k], cluster, &o) != 0) {
			return NULL;
		}
	}
	return s[k];
}

/* The values of a variable made by init, split in k shards, as JSON
 * numbers; NULL with *err set on failure. */
static cJSON *
values_of(const pasco_initializer *init, int32_t rank, const int64_t *shape,
    int k, int n, const char **err)
{
	static char     msg[512];
	pasco_strategy *st = strategy_of(k);
	pasco_variable *v  = NULL;
	pasco_tensor   *t  = NULL;
	cJSON          *a  = NULL;
	char            name[32];
	snprintf(name, sizeof(name), "v%d_%d", n, k);
	if (st == NULL) {
		*err = "no strategy";
		return NULL;
	}
	if (pasco_variable_create_init(
	        &v, st, name, PASCO_F64, rank, shape, init) != 0 ||
	    pasco_variable_read(v, &t) != 0) {
		snprintf(msg, sizeof(msg), "%s", pasco_strategy_error(st));
		*err = msg;
	} else {
		a = cJSON_CreateArray();
		for (int64_t i = 0; i < t->count; i++) {
			cJSON_AddItemToArray(
			    a, cJSON_CreateNumber(pasco_tensor_get(t, i)));
		}
	}
	pasco_tensor_release(t);
	pasco_variable_free(v);
	return a;
}

static cJSON *
run_case(const cJSON *c, int n)
{
	cJSON            *out = cJSON_CreateObject(), *it, *a, *b;
	pasco_initializer init;
	int64_t           shape[PASCO_MAX_RANK];
	int32_t           rank = 0;
	const char       *err  = NULL;
	int               k    = (int) cJSON_GetNumberValue(
	                     cJSON_GetObjectItemCaseSensitive(c, "shards"));
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(c, "shape"))
	{
		shape[rank++] = (int64_t) it->valuedouble;
	}
	if (pasci_json_read_init(c, "init", &init, "init") != 0) {
		cJSON_AddStringToObject(
		    out, "error", pasco_model_last_error());
		return out;
	}
	/* the config as the library writes it back into a model's */
	cJSON_AddBoolToObject(
	    out, "written", pasci_json_write_init(out, "config", &init));
	if ((a = values_of(&init, rank, shape, 1, n, &err)) == NULL ||
	    (b = values_of(&init, rank, shape, k, n, &err)) == NULL) {
		cJSON_Delete(a);
		cJSON_AddStringToObject(out, "error", err);
		return out;
	}
	cJSON_AddItemToObject(out, "values", a);
	cJSON_AddItemToObject(out, "sharded", b);
	return out;
}

int
main(void)
{
	static char buf[1 << 20];
	size_t      len = fread(buf, 1, sizeof(buf) - 1, stdin);
	cJSON      *cases, *it, *outs = cJSON_CreateArray();
	char       *text;
	int         n = 0;
	buf[len]      = 0;
	if ((cases = cJSON_Parse(buf)) == NULL || start() != 0) {
		fprintf(
		    stderr, "init_values: stdin is not JSON, or no cluster\n");
		return 2;
	}
	cJSON_ArrayForEach(it, cases)
	{
		cJSON_AddItemToArray(outs, run_case(it, n++));
	}
	text = cJSON_PrintUnformatted(outs);
	puts(text != NULL ? text : "null");
	free(text);
	cJSON_Delete(cases);
	cJSON_Delete(outs);
	for (int k = 1; k < 8; k++) {
		pasco_strategy_destroy(s[k]);
	}
	pasco_server_stop(worker);
	for (int i = 0; i < 2; i++) {
		pasco_server_stop(ps[i]);
	}
	pasco_cluster_free(cluster);
	return 0;
}
