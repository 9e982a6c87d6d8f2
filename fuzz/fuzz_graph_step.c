/*
 * Fuzz target: a traced step's JSON as a worker gets it in a call of
 * "pasco.graph_step" (docs/GRAPHS.md, "A traced step"): the worker's
 * parser and cache (pasci_gstep_get, worker/graph_step_parse.c) on the
 * bytes, then the op-graph reader (pasci_graph_parse, model/graph.c) as
 * each kind (step, layer, loss) on every "graph" object found anywhere in
 * the JSON. A refusal must say why; a graph that is read must write back
 * (pasci_graph_to_json) to JSON that reads again to the same bytes.
 */
#include "fuzz_util.h"
#include "graph.h"
#include "graph_step.h"
#include "pasco/model.h"

#include <cjson/cJSON.h>

static void
check_graph(const cJSON *g, pasci_graph_kind kind)
{
	pasci_graph *p = NULL, *q = NULL;
	cJSON       *j1, *j2;
	char        *one, *two;
	if (pasci_graph_parse(g, kind, "fuzz", &p) != 0) {
		FUZZ_CHECK(p == NULL);
		FUZZ_CHECK(pasco_model_last_error()[0] != 0);
		return;
	}
	FUZZ_CHECK(p != NULL);
	j1 = pasci_graph_to_json(p);
	FUZZ_CHECK(j1 != NULL);
	if (pasci_graph_parse(j1, kind, "fuzz", &q) != 0) {
		one = cJSON_PrintUnformatted(j1);
		fprintf(stderr, "written back: %s\nrefused: %s\n", one,
		    pasco_model_last_error());
		FUZZ_CHECK(!"a graph written back reads again");
	}
	j2  = pasci_graph_to_json(q);
	one = cJSON_PrintUnformatted(j1);
	two = cJSON_PrintUnformatted(j2);
	FUZZ_CHECK(one != NULL && two != NULL);
	if (strcmp(one, two) != 0) {
		fprintf(stderr, "first: %s\nagain: %s\n", one, two);
		FUZZ_CHECK(!"a graph written back reads to the same bytes");
	}
	free(one);
	free(two);
	cJSON_Delete(j1);
	cJSON_Delete(j2);
	pasci_graph_free(q);
	pasci_graph_free(p);
}

/* Every object under the key "graph", at any depth (bounded: cJSON
 * refuses nesting past 1000). */
static void
walk(const cJSON *j, int depth)
{
	const cJSON *c;
	if (depth > 64) {
		return;
	}
	cJSON_ArrayForEach(c, j)
	{
		if (c->string != NULL && strcmp(c->string, "graph") == 0 &&
		    cJSON_IsObject(c)) {
			check_graph(c, PASCI_GRAPH_STEP);
			check_graph(c, PASCI_GRAPH_LAYER);
			check_graph(c, PASCI_GRAPH_LOSS);
		}
		walk(c, depth + 1);
	}
}

int
fuzz_graph_step_one(const uint8_t *data, size_t size)
{
	const pasci_gstep *s = NULL;
	char              *text;
	cJSON             *root;
	if (pasci_gstep_get(data, size, &s) != 0) {
		FUZZ_CHECK(s == NULL && pasco_model_last_error()[0] != 0);
	} else {
		const pasci_gstep *again = NULL;
		FUZZ_CHECK(s != NULL && s->graph != NULL);
		/* kept by its bytes: the same step again */
		FUZZ_CHECK(
		    pasci_gstep_get(data, size, &again) == 0 && again == s);
		pasci_gstep_release(again);
		pasci_gstep_release(s);
	}
	pasci_gstep_cache_reset();
	if ((text = malloc(size + 1)) == NULL) {
		return 0;
	}
	memcpy(text, data, size);
	text[size] = 0;
	if ((root = cJSON_Parse(text)) != NULL) {
		walk(root, 0);
		cJSON_Delete(root);
	}
	free(text);
	return 0;
}

#ifndef PASCO_FUZZ_NO_MAIN
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_graph_step_one(data, size);
}
#endif
