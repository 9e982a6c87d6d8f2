/*
 * A Dataset.map traced on a Python chief (python/pasco/_dataset_map.py),
 * run here on each batch a files dataset reads, so that string features
 * become ids on the worker before a step sees them. The map's JSON (the
 * spec's "map", include/pasco/dataset.h) is an op graph (docs/GRAPHS.md)
 * whose inputs are paths into the element read, whose "model" nodes run a
 * model of preprocessing layers (model/prep.c), and whose outputs fill
 * the element's structure.
 *
 * Everything is checked when the dataset is built: a bad map is an error
 * naming the field, the node or the model, never a crash. A parsed map is
 * read-only; each run has its own tape, so the map runs on whichever
 * thread reads the dataset (a prefetch's producer, or the step's).
 */
#include "dataset_map.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "files_dataset.h"
#include "graph.h"
#include "layer_desc.h"
#include "model_impl.h"
#include "prep.h"
#include "tape_impl.h"
#include "util.h"
#include "value_impl.h"

#define MAP_MAX_MODELS 64
#define MAP_MAX_PATH 8
#define MAP_MAX_DEPTH 16
#define MAP_FILE_MAX (64 << 20)

struct pasci_dataset_map {
	cJSON        *json; /* a copy: the input paths and the element */
	pasci_graph  *graph;
	pasco_model **models;
	size_t        nmodels, noutputs;
	int64_t      *model_of; /* per node: its model, -1 for other ops */
};

static int map_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/* PASCO_EINVAL with the message "dataset map: <fmt...>". */
static int
map_fail(const char *fmt, ...)
{
	char    msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return pasco_dataset_fail(PASCO_EINVAL, "dataset map: %s", msg);
}

void
pasci_dataset_map_free(pasci_dataset_map *m)
{
	if (m == NULL) {
		return;
	}
	for (size_t k = 0; m->models != NULL && k < m->nmodels; k++) {
		pasco_model_free(m->models[k]);
	}
	free(m->models);
	free(m->model_of);
	pasci_graph_free(m->graph);
	cJSON_Delete(m->json);
	free(m);
}

/* models[k] from its config: preprocessing layers only. */
static int
read_model(pasci_dataset_map *m, size_t k, const cJSON *config)
{
	char *text =
	    cJSON_IsObject(config) ? cJSON_PrintUnformatted(config) : NULL;
	int rv;
	if (text == NULL) {
		return cJSON_IsObject(config)
		           ? PASCO_ENOMEM
		           : map_fail("models[%lld]: not a model config (an "
		                      "object)",
		                 (long long) k);
	}
	rv = pasco_model_from_json(text, &m->models[k]);
	free(text);
	if (rv != 0) {
		return map_fail("models[%lld]: %s", (long long) k,
		    pasco_model_last_error());
	}
	if (m->models[k]->nlayers == 0) {
		return map_fail("models[%lld]: no layer", (long long) k);
	}
	for (size_t i = 0; i < m->models[k]->nlayers; i++) {
		const pasco_layer *l = &m->models[k]->layers[i];
		if (pasci_layer_desc_of(l->kind)->prep == NULL) {
			return map_fail("models[%lld]: layer '%s' is not a "
			                "preprocessing layer (a map runs "
			                "preprocessing layers and ops only)",
			    (long long) k, l->name);
		}
	}
	return PASCO_OK;
}

/* Each node of a step's kind must be a "model" node naming a model whose
 * inputs it gives; the others (next, read, ...) are not a map's. */
static int
check_nodes(pasci_dataset_map *m)
{
	size_t n = pasci_graph_num_nodes(m->graph);
	if ((m->model_of = pasci_calloc(n + 1, sizeof(*m->model_of))) ==
	    NULL) {
		return PASCO_ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		static const char *const step_ops[] = {
		    "next", "arg", "read", "gradient", "global_step"};
		const char  *op   = pasci_graph_node_op(m->graph, i);
		const cJSON *node = pasci_graph_node_json(m->graph, i), *it;
		const cJSON *arg =
		    cJSON_GetObjectItemCaseSensitive(node, "arg");
		m->model_of[i] = -1;
		for (size_t k = 0; k < sizeof(step_ops) / sizeof(*step_ops);
		     k++) {
			if (strcmp(op, step_ops[k]) == 0) {
				return map_fail("nodes[%lld] (%s): not an op "
				                "of a map",
				    (long long) i, op);
			}
		}
		if (strcmp(op, "model") != 0) {
			continue;
		}
		cJSON_ArrayForEach(it, node)
		{
			if (strcmp(it->string, "op") &&
			    strcmp(it->string, "in") &&
			    strcmp(it->string, "shape") &&
			    strcmp(it->string, "dtype") &&
			    strcmp(it->string, "arg")) {
				return map_fail("nodes[%lld] (model): unknown "
				                "attribute '%s'",
				    (long long) i, it->string);
			}
		}
		if (!cJSON_IsNumber(arg) || arg->valuedouble < 0 ||
		    arg->valuedouble >= (double) m->nmodels ||
		    arg->valuedouble != (double) (int64_t) arg->valuedouble) {
			return map_fail("nodes[%lld] (model): arg must be the "
			                "index of one of the map's models",
			    (long long) i);
		}
		m->model_of[i] = (int64_t) arg->valuedouble;
		if ((size_t) cJSON_GetArraySize(
		        cJSON_GetObjectItemCaseSensitive(node, "in")) !=
		    m->models[m->model_of[i]]->ninputs) {
			return map_fail("nodes[%lld] (model): its inputs are "
			                "not as many as its model's",
			    (long long) i);
		}
	}
	return PASCO_OK;
}

/* "inputs": one path per graph input, each a list of list indices and
 * dict keys into the element read. */
static int
check_paths(const pasci_dataset_map *m, const cJSON *paths)
{
	const cJSON *p, *it;
	size_t       k = 0;
	if (!cJSON_IsArray(paths) || (size_t) cJSON_GetArraySize(paths) !=
	                                 pasci_graph_num_inputs(m->graph)) {
		return map_fail("inputs must list one path per graph input");
	}
	cJSON_ArrayForEach(p, paths)
	{
		if (!cJSON_IsArray(p) ||
		    cJSON_GetArraySize(p) > MAP_MAX_PATH) {
			return map_fail("inputs[%lld]: not a path (a list of "
			                "at most 8 indices and keys)",
			    (long long) k);
		}
		cJSON_ArrayForEach(it, p)
		{
			if (!(cJSON_IsString(it) ||
			        (cJSON_IsNumber(it) && it->valuedouble >= 0 &&
			            it->valuedouble < 1e9 &&
			            it->valuedouble ==
			                (double) (int64_t) it->valuedouble))) {
				return map_fail("inputs[%lld]: a path holds "
				                "list indices and dict keys",
				    (long long) k);
			}
		}
		k++;
	}
	return PASCO_OK;
}

/* The element: lists, dicts (non-empty keys) and output indices, each
 * output used exactly once (an output tensor has one owner). */
static int
check_element(const cJSON *e, int depth, unsigned char *used, size_t nout)
{
	const cJSON *it;
	if (depth > MAP_MAX_DEPTH) {
		return map_fail(
		    "element: nested deeper than %d", MAP_MAX_DEPTH);
	}
	if (cJSON_IsNumber(e)) {
		double v = e->valuedouble;
		if (v < 0 || v >= (double) nout || v != (double) (int64_t) v) {
			return map_fail("element: %lld is not an output index",
			    (long long) v);
		}
		if (used[(size_t) v]++) {
			return map_fail("element: output %lld is used twice",
			    (long long) v);
		}
		return PASCO_OK;
	}
	if (!cJSON_IsArray(e) && !cJSON_IsObject(e)) {
		return map_fail("element: expected lists, dicts and output "
		                "indices");
	}
	cJSON_ArrayForEach(it, e)
	{
		int rv;
		if (cJSON_IsObject(e) && it->string[0] == 0) {
			return map_fail("element: an empty dict key");
		}
		if ((rv = check_element(it, depth + 1, used, nout)) != 0) {
			return rv;
		}
	}
	return PASCO_OK;
}

int
pasci_dataset_map_parse(const cJSON *map, pasci_dataset_map **out)
{
	static const char *const keys[] = {
	    "inputs", "graph", "models", "element"};
	pasci_dataset_map *m;
	const cJSON       *it, *models;
	unsigned char     *used;
	size_t             k = 0;
	int                rv;
	*out = NULL;
	if (!cJSON_IsObject(map)) {
		return map_fail("the map is not an object");
	}
	cJSON_ArrayForEach(it, map)
	{
		size_t i = 0;
		while (i < 4 && strcmp(keys[i], it->string) != 0) {
			i++;
		}
		if (i == 4) {
			return map_fail("unknown field '%s'", it->string);
		}
	}
	if ((m = pasci_calloc(1, sizeof(*m))) == NULL ||
	    (m->json = cJSON_Duplicate(map, true)) == NULL) {
		free(m);
		return PASCO_ENOMEM;
	}
	models = cJSON_GetObjectItemCaseSensitive(m->json, "models");
	if (models != NULL &&
	    (!cJSON_IsArray(models) ||
	        cJSON_GetArraySize(models) > MAP_MAX_MODELS)) {
		rv = map_fail("models must be a list of at most %d model "
		              "configs",
		    MAP_MAX_MODELS);
		goto fail;
	}
	m->nmodels = (size_t) cJSON_GetArraySize(models);
	if ((m->models = pasci_calloc(m->nmodels + 1, sizeof(*m->models))) ==
	    NULL) {
		rv = PASCO_ENOMEM;
		goto fail;
	}
	cJSON_ArrayForEach(it, models)
	{
		if ((rv = read_model(m, k++, it)) != 0) {
			goto fail;
		}
	}
	if ((rv = pasci_graph_parse(
	         cJSON_GetObjectItemCaseSensitive(m->json, "graph"),
	         PASCI_GRAPH_STEP, "dataset map", &m->graph)) != 0) {
		rv = pasco_dataset_fail(rv, "%s", pasco_model_last_error());
		goto fail;
	}
	m->noutputs = pasci_graph_num_outputs(m->graph);
	if (m->noutputs == 0) {
		rv = map_fail("the graph has no output");
		goto fail;
	}
	if ((rv = check_nodes(m)) != 0 ||
	    (rv = check_paths(m,
	         cJSON_GetObjectItemCaseSensitive(m->json, "inputs"))) != 0) {
		goto fail;
	}
	if ((used = pasci_calloc(m->noutputs, 1)) == NULL) {
		rv = PASCO_ENOMEM;
		goto fail;
	}
	rv =
	    check_element(cJSON_GetObjectItemCaseSensitive(m->json, "element"),
	        0, used, m->noutputs);
	for (k = 0; rv == 0 && k < m->noutputs; k++) {
		if (!used[k]) {
			rv = map_fail("element: output %lld is in no place",
			    (long long) k);
		}
	}
	free(used);
	if (rv != 0) {
		goto fail;
	}
	*out = m;
	return PASCO_OK;
fail:
	pasci_dataset_map_free(m);
	return rv;
}

/* ---- running ---------------------------------------------------------- */

typedef struct map_run {
	const pasci_dataset_map *m;
} map_run;

static const pasco_tensor *
gval_tensor(const pasci_gval *v)
{
	return v->node != NULL ? pasco_tnode_value(v->node) : v->ints;
}

/* A "model" node: its model's preprocessing on the node's inputs. */
static bool
run_model(void *arg, pasco_tape *tp, size_t i, size_t n, const pasci_gval *in,
    pasci_gval *out)
{
	const pasci_dataset_map   *m = ((map_run *) arg)->m;
	const pasco_model         *mod;
	const pasco_tensor        *ins[PASCO_LAYER_MAX_INPUTS];
	const pasco_tensor *const *ext;
	const pasco_tensor        *t;
	if (m->model_of[i] < 0) {
		pasci_tape_fail(tp, PASCO_EINVAL, "not an op of a map");
		return false;
	}
	mod = m->models[m->model_of[i]];
	for (size_t k = 0; k < n && k < PASCO_LAYER_MAX_INPUTS; k++) {
		ins[k] = gval_tensor(&in[k]);
	}
	if ((ext = pasci_prep_inputs(mod, tp, ins)) == NULL) {
		return false;
	}
	t = ext[mod->ninputs + mod->nlayers - 1];
	if (t == NULL) {
		pasci_tape_fail(tp, PASCO_EINVAL, "%s: no output",
		    mod->layers[mod->nlayers - 1].name);
		return false;
	}
	if (t->dtype == PASCO_I64 || t->dtype == PASCO_I32) {
		out->ints = t;
	} else {
		out->node = pasco_tape_constant(tp, t);
	}
	return out->ints != NULL || out->node != NULL;
}

/* The element's tensor at path, or NULL. */
static const pasco_tensor *
at_path(const pasco_value *v, const cJSON *path)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, path)
	{
		if (cJSON_IsString(it)) {
			v = pasco_value_kind_of(v) == PASCO_VALUE_DICT
			        ? pasco_value_get(v, it->valuestring)
			        : NULL;
		} else {
			v = pasco_value_kind_of(v) == PASCO_VALUE_LIST
			        ? pasco_value_item(v, (size_t) it->valuedouble)
			        : NULL;
		}
		if (v == NULL) {
			return NULL;
		}
	}
	return pasco_value_as_tensor(v);
}

/* Input k of the graph from tensor t: [batch, 1] read as [batch] where
 * the trace has a [batch] input; a float as a constant, ints as they
 * are (pasci_graph_run converts them to the traced dtype). */
static bool
input_of(const pasci_dataset_map *m, pasco_tape *tp, size_t k,
    const pasco_tensor *t, pasci_gval *out)
{
	int32_t        rank;
	const int64_t *shape;
	pasco_tensor  *flat = NULL;
	bool           isf  = t->dtype == PASCO_F32 || t->dtype == PASCO_F64;
	(void) pasci_graph_input(m->graph, k, &rank, &shape);
	if (rank == 1 && t->rank == 2 && t->shape[1] == 1) {
		if (!isf) {
			pasco_tensor *c =
			    pasci_graph_ints(tp, t->dtype, 1, t->shape);
			if (c == NULL) {
				return false;
			}
			memcpy(c->data, t->data, t->nbytes);
			out->ints = c;
			return true;
		}
		if (pasco_tensor_from(&flat, t->dtype, 1, t->shape, t->data,
		        t->nbytes) != 0) {
			pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
			return false;
		}
		t = flat;
	}
	if (isf) {
		out->node = pasco_tape_constant(tp, t);
		pasco_tensor_release(flat);
		return out->node != NULL;
	}
	out->ints = t;
	return true;
}

/* The element's value of JSON e over the outputs' tensors (each taken
 * once, checked when parsed); NULL without memory. */
static pasco_value *
build(const cJSON *e, pasco_tensor **ts)
{
	size_t        n = (size_t) cJSON_GetArraySize(e), k = 0;
	pasco_value **items;
	const char  **keys;
	const cJSON  *it;
	pasco_value  *v;
	if (cJSON_IsNumber(e)) {
		v = pasco_value_tensor(ts[(size_t) e->valuedouble]);
		if (v != NULL) {
			ts[(size_t) e->valuedouble] = NULL; /* taken over */
		}
		return v;
	}
	items = pasci_calloc(n + 1, sizeof(*items));
	keys  = pasci_calloc(n + 1, sizeof(*keys));
	if (items == NULL || keys == NULL) {
		free(items);
		free(keys);
		return NULL;
	}
	cJSON_ArrayForEach(it, e)
	{
		keys[k]    = it->string;
		items[k++] = build(it, ts);
	}
	v = cJSON_IsObject(e) ? pasci_value_dict_of(n, keys, items)
	                      : pasco_value_list_of(n, items);
	free(items);
	free(keys);
	return v;
}

int
pasci_dataset_map_run(const pasci_dataset_map *m, const pasco_value *element,
    pasco_value **result)
{
	const cJSON *paths =
	    cJSON_GetObjectItemCaseSensitive(m->json, "inputs");
	size_t           nin = pasci_graph_num_inputs(m->graph), k = 0;
	map_run          run  = {.m = m};
	pasci_graph_hook hook = {.arg = &run, .node = run_model};
	pasco_tape      *tp   = NULL;
	pasci_gval      *in = NULL, *outs = NULL;
	pasco_tensor   **ts = NULL;
	const cJSON     *p;
	int              rv = PASCO_OK;
	*result             = NULL;
	if ((rv = pasco_tape_alloc(&tp, false, 0)) != 0 ||
	    (in = pasci_calloc(nin + 1, sizeof(*in))) == NULL ||
	    (outs = pasci_calloc(m->noutputs, sizeof(*outs))) == NULL ||
	    (ts = pasci_calloc(m->noutputs, sizeof(*ts))) == NULL) {
		rv = PASCO_ENOMEM;
		goto done;
	}
	cJSON_ArrayForEach(p, paths)
	{
		const pasco_tensor *t = at_path(element, p);
		char               *where;
		if (t == NULL) {
			where = cJSON_PrintUnformatted(p);
			rv    = pasco_dataset_fail(PASCO_EINVAL,
			       "dataset map: inputs[%zu]: the element read has "
			          "no tensor at %s",
			       k, where != NULL ? where : "its path");
			free(where);
			goto done;
		}
		if (!input_of(m, tp, k, t, &in[k])) {
			break;
		}
		k++;
	}
	if (pasco_tape_error(tp) != 0 ||
	    !pasci_graph_run(
	        m->graph, tp, "dataset map", in, NULL, &hook, NULL, outs)) {
		rv = pasco_dataset_fail(pasco_tape_error(tp) != 0
		                            ? pasco_tape_error(tp)
		                            : PASCO_EINVAL,
		    "%s", pasco_tape_message(tp));
		goto done;
	}
	for (k = 0; k < m->noutputs; k++) {
		if ((rv = pasco_tensor_copy(&ts[k], gval_tensor(&outs[k]))) !=
		    0) {
			goto done;
		}
	}
	*result =
	    build(cJSON_GetObjectItemCaseSensitive(m->json, "element"), ts);
	rv = *result != NULL ? PASCO_OK : PASCO_ENOMEM;
done:
	for (k = 0; ts != NULL && k < m->noutputs; k++) {
		pasco_tensor_release(ts[k]);
	}
	free(ts);
	free(outs);
	free(in);
	pasco_tape_free(tp);
	return rv;
}

/* ---- the worker's files dataset ------------------------------------- */

static int
map_fn(void *arg, const pasco_value *element, pasco_value **result)
{
	return pasci_dataset_map_run(arg, element, result);
}

static void
map_free(void *arg)
{
	pasci_dataset_map_free(arg);
}

/* The map file's JSON, read whole (at most MAP_FILE_MAX bytes). */
static cJSON *
read_map_file(const char *path, int *rv)
{
	FILE  *f = fopen(path, "rb");
	char  *text;
	long   n;
	cJSON *out = NULL;
	if (f == NULL) {
		*rv = pasco_dataset_fail(PASCO_ENOTFOUND,
		    "files dataset: map_file '%s' cannot be opened", path);
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    n > MAP_FILE_MAX || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		*rv = pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: map_file '%s' is unreadable or over %d "
		    "bytes",
		    path, MAP_FILE_MAX);
		return NULL;
	}
	if ((text = malloc((size_t) n + 1)) == NULL) {
		fclose(f);
		*rv = PASCO_ENOMEM;
		return NULL;
	}
	if (fread(text, 1, (size_t) n, f) == (size_t) n) {
		text[n] = 0;
		out     = cJSON_Parse(text);
	}
	free(text);
	fclose(f);
	if (out == NULL) {
		*rv = pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: map_file '%s' is not JSON", path);
	}
	return out;
}

/* An integer field taken out of root (absent: dflt), at least min. */
static int
take_int(cJSON *root, const char *key, int64_t min, int64_t dflt, int64_t *v)
{
	cJSON *it = cJSON_DetachItemFromObjectCaseSensitive(root, key);
	*v        = dflt;
	if (it != NULL && !cJSON_IsNull(it)) {
		if (!cJSON_IsNumber(it) ||
		    it->valuedouble != (double) (int64_t) it->valuedouble ||
		    it->valuedouble < (double) min) {
			cJSON_Delete(it);
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: %s must be an integer >= %lld",
			    key, (long long) min);
		}
		*v = (int64_t) it->valuedouble;
	}
	cJSON_Delete(it);
	return PASCO_OK;
}

int
pasci_worker_files_dataset(
    const char *spec, const pasco_dataset_context *ctx, pasco_dataset **out)
{
	cJSON             *root = cJSON_Parse(spec != NULL ? spec : ""), *mj;
	cJSON             *file, *rb;
	pasci_dataset_map *map = NULL;
	char              *text;
	int64_t            repeat = 1, prefetch = 0;
	bool               batches;
	int                rv = PASCO_OK;
	*out                  = NULL;
	if (root == NULL || !cJSON_IsObject(root) ||
	    (!cJSON_HasObjectItem(root, "map") &&
	        !cJSON_HasObjectItem(root, "map_file") &&
	        !cJSON_HasObjectItem(root, "repeat_batches"))) {
		cJSON_Delete(root); /* the kit's alone, its errors its own */
		return pasci_files_dataset(spec, ctx, out);
	}
	mj   = cJSON_DetachItemFromObjectCaseSensitive(root, "map");
	file = cJSON_DetachItemFromObjectCaseSensitive(root, "map_file");
	rb   = cJSON_DetachItemFromObjectCaseSensitive(root, "repeat_batches");
	batches = cJSON_IsTrue(rb);
	if (rb != NULL && !cJSON_IsBool(rb)) {
		rv = pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: repeat_batches must be true or false");
	} else if (mj != NULL && file != NULL) {
		rv = pasco_dataset_fail(
		    PASCO_EINVAL, "files dataset: map and map_file: give one");
	} else if (file != NULL && !cJSON_IsString(file)) {
		rv = pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: map_file must be a file name");
	} else if (file != NULL) {
		mj = read_map_file(file->valuestring, &rv);
	}
	if (rv == 0 && (mj != NULL || file != NULL)) {
		rv = pasci_dataset_map_parse(mj, &map);
	}
	if (rv == 0 && batches) {
		rv = take_int(root, "repeat", -1, 1, &repeat);
		if (rv == 0 && repeat == 0) {
			rv = pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: repeat must be -1 or positive");
		}
	}
	if (rv == 0) {
		rv = take_int(root, "prefetch", 0, 0, &prefetch);
	}
	if (rv == 0) {
		text = cJSON_PrintUnformatted(root);
		rv   = text != NULL ? pasci_files_dataset(text, ctx, out)
		                    : PASCO_ENOMEM;
		free(text);
	}
	if (rv == 0 && batches && repeat != 1) {
		rv = pasco_dataset_repeat(out, *out, repeat);
	}
	if (rv == 0 && map != NULL) {
		rv  = pasco_dataset_map_with(out, *out, map_fn, map, map_free);
		map = NULL; /* taken over, freed on failure too */
	}
	if (rv == 0 && prefetch > 0) {
		rv = pasco_dataset_prefetch(out, *out, prefetch);
	}
	if (rv != 0) {
		*out = NULL; /* each transform freed its input on failure */
	}
	pasci_dataset_map_free(map);
	cJSON_Delete(mj);
	cJSON_Delete(file);
	cJSON_Delete(rb);
	cJSON_Delete(root);
	return rv;
}
