/*
 * Op graphs (docs/GRAPHS.md, graph.h): the reader checks a graph once
 * (ops from the op table, graph_ops.h; leaves; refs to earlier nodes;
 * shapes and dtypes; attributes parsed into each node; a layer's weights)
 * and keeps it as arrays, so a run does no JSON lookup: it walks the
 * nodes in order, calls each op's run, and checks each value against the
 * node's static shape. A parsed graph is read-only after
 * pasci_graph_parse: any number of threads may run it, each on its own
 * tape.
 */
#include "graph_impl.h"

#include "layer_desc.h"
#include "model_impl.h"
#include "util.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The step-only ops (docs/GRAPHS.md, "A traced step"): their arity; their
 * attributes are the step runner's. */
static const struct {
	const char *name;
	int         min_in, max_in;
} step_ops[] = {
    {"next", 0, 0},
    {"arg", 0, 0},
    {"model", 1, 8},
    {"read", 0, 0},
    {"gradient", 1, 1},
    {"global_step", 0, 0},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The most elements of a layer's weight (2^31: 8 GiB of f32, read whole
 * each step): a config's weight of shape [1e9, 1e9] is refused. */
#define MAX_WEIGHT ((int64_t) 1 << 31)

/* ---- shapes and dtypes ---- */

const char *
pasci_graph_dtype_name(pasco_dtype d)
{
	switch (d) {
	case PASCO_F32:
		return "float32";
	case PASCO_F64:
		return "float64";
	case PASCO_I32:
		return "int32";
	case PASCO_I64:
		return "int64";
	default:
		return "?";
	}
}

static int
read_dtype(const cJSON *o, pasco_dtype *d, const char *at)
{
	static const pasco_dtype all[] = {
	    PASCO_F32, PASCO_F64, PASCO_I32, PASCO_I64};
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, "dtype");
	for (size_t k = 0; cJSON_IsString(it) && k < COUNT(all); k++) {
		if (strcmp(it->valuestring, pasci_graph_dtype_name(all[k])) ==
		    0) {
			*d = all[k];
			return PASCO_OK;
		}
	}
	return pasci_model_fail(PASCO_EINVAL,
	    "%s: dtype must be \"float32\", \"float64\", \"int32\" or "
	    "\"int64\"",
	    at);
}

/* A list of integers >= lo under key, at most max entries. */
static int
read_ints(const cJSON *o, const char *key, int64_t lo, int64_t *out,
    size_t max, size_t *n, const char *at)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, key), *it;
	*n             = 0;
	if (!cJSON_IsArray(l)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s must be a list of integers", at, key);
	}
	cJSON_ArrayForEach(it, l)
	{
		double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
		if (!(v >= (double) lo) || v != floor(v) || v > 9.0e15) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: %s[%zu] must be an integer >= %lld", at, key,
			    *n, (long long) lo);
		}
		if (*n == max) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: %s has more than %zu entries", at, key, max);
		}
		out[(*n)++] = (int64_t) v;
	}
	return PASCO_OK;
}

static int
read_shape(const cJSON *o, int32_t *rank, int64_t *shape, const char *at)
{
	size_t n;
	if (read_ints(o, "shape", -1, shape, PASCO_MAX_RANK, &n, at) != 0) {
		return PASCO_EINVAL;
	}
	*rank = (int32_t) n;
	return PASCO_OK;
}

const char *
pasci_graph_spec(pasco_dtype d, int32_t rank, const int64_t *shape, char *buf)
{
	char s[96];
	snprintf(buf, 112, "%s%s", pasco_dtype_name(d),
	    pasci_shape_str(rank, shape, s, sizeof(s)));
	return buf;
}
#define SPEC PASCI_GSPEC

static bool
same_spec(pasco_dtype d, int32_t rank, const int64_t *shape, pasco_dtype d2,
    int32_t rank2, const int64_t *shape2)
{
	return d == d2 && rank == rank2 &&
	       memcmp(shape, shape2, (size_t) rank * sizeof(*shape)) == 0;
}

/* ---- the graph's inputs and weights ---- */

static int
read_inputs(pasci_graph *g, const cJSON *l, const char *at)
{
	static const char *const keys[] = {"name", "shape", "dtype"};
	const cJSON             *it;
	char                     where[160];
	if (l == NULL) {
		return PASCO_OK;
	}
	if (!cJSON_IsArray(l)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: inputs must be a list", at);
	}
	g->ninputs = (size_t) cJSON_GetArraySize(l);
	g->inputs  = pasci_calloc(g->ninputs + 1, sizeof(*g->inputs));
	if (g->inputs == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	size_t k = 0;
	cJSON_ArrayForEach(it, l)
	{
		graph_input *in = &g->inputs[k];
		pasci_fmt(where, sizeof(where), "%s: inputs[%zu]", at, k++);
		if (pasci_json_check_keys(it, keys, COUNT(keys), where) != 0 ||
		    read_shape(it, &in->rank, in->shape, where) != 0 ||
		    read_dtype(it, &in->dtype, where) != 0) {
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

static int
read_regularizer(const cJSON *w, pasci_graph_weight *out, const char *at)
{
	static const char *const classes[] = {NULL, "L1", "L2", "L1L2"};
	static const char *const keys[]    = {"l1", "l2"};
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(w, "regularizer");
	const cJSON *c;
	char         where[200];
	int          kind;
	if (o == NULL || cJSON_IsNull(o)) {
		return PASCO_OK;
	}
	pasci_fmt(where, sizeof(where), "%s: regularizer", at);
	if (pasci_json_read_class(
	        o, classes, COUNT(classes), &kind, &c, where) != 0 ||
	    pasci_json_check_keys(
	        c, keys + (kind == 2), kind == 3 ? 2 : 1, where) != 0) {
		return PASCO_EINVAL;
	}
	return pasci_json_number(c, "l1", &out->l1, false, 0, where) != 0 ||
	               pasci_json_number(c, "l2", &out->l2, false, 0, where) !=
	                   0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

static int
read_weight(const cJSON *w, pasci_graph_weight *out, const char *at)
{
	static const char *const keys[] = {"name", "shape", "dtype",
	    "initializer", "regularizer", "trainable"};
	static const char *const need[] = {
	    "name", "shape", "dtype", "initializer", "trainable"};
	const char *name = NULL;
	if (pasci_json_check_keys(w, keys, COUNT(keys), at) != 0) {
		return PASCO_EINVAL;
	}
	for (size_t k = 0; k < COUNT(need); k++) {
		if (cJSON_GetObjectItemCaseSensitive(w, need[k]) == NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: missing field '%s'", at, need[k]);
		}
	}
	if (pasci_json_string(w, "name", &name, at) != 0 ||
	    read_shape(w, &out->rank, out->shape, at) != 0 ||
	    read_dtype(w, &out->dtype, at) != 0 ||
	    pasci_json_read_init(w, "initializer", &out->init, at) != 0 ||
	    read_regularizer(w, out, at) != 0 ||
	    pasci_json_bool(w, "trainable", &out->trainable, at) != 0) {
		return PASCO_EINVAL;
	}
	if (name[0] == 0 || strlen(name) >= sizeof(out->name) ||
	    strchr(name, '/') != NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: name '%s' must be 1 to %zu bytes without '/'", at,
		    name, sizeof(out->name) - 1);
	}
	snprintf(out->name, sizeof(out->name), "%s", name);
	if (out->dtype != PASCO_F32) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: dtype must be \"float32\" (a model's variables are "
		    "f32)",
		    at);
	}
	int64_t count = 1;
	for (int32_t d = 0; d < out->rank; d++) {
		if (out->shape[d] < 1) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: shape %s must be known and positive", at,
			    PASCI_SHAPE(out->rank, out->shape));
		}
		/* each dimension is below 2^53 and count at most 2^31 */
		count = out->shape[d] > MAX_WEIGHT ? MAX_WEIGHT + 1
		                                   : count * out->shape[d];
		count = count > MAX_WEIGHT ? MAX_WEIGHT + 1 : count;
	}
	if (count > MAX_WEIGHT) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: shape %s holds more than %lld elements", at,
		    PASCI_SHAPE(out->rank, out->shape),
		    (long long) MAX_WEIGHT);
	}
	return PASCO_OK;
}

static int
read_weights(pasci_graph *g, const cJSON *l, const char *at)
{
	const cJSON *it;
	char         where[160];
	size_t       k = 0;
	if (l == NULL || (cJSON_IsArray(l) && cJSON_GetArraySize(l) == 0)) {
		return PASCO_OK;
	}
	if (g->kind != PASCI_GRAPH_LAYER) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: weights: only a layer's graph has weights", at);
	}
	if (!cJSON_IsArray(l)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: weights must be a list", at);
	}
	g->nweights = (size_t) cJSON_GetArraySize(l);
	g->weights  = pasci_calloc(g->nweights, sizeof(*g->weights));
	if (g->weights == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(it, l)
	{
		pasci_fmt(where, sizeof(where), "%s: weights[%zu]", at, k);
		if (read_weight(it, &g->weights[k], where) != 0) {
			return PASCO_EINVAL;
		}
		for (size_t j = 0; j < k; j++) {
			if (strcmp(g->weights[j].name, g->weights[k].name) ==
			    0) {
				return pasci_model_fail(PASCO_EINVAL,
				    "%s: weights %zu and %zu are both named "
				    "'%s'",
				    at, j, k, g->weights[k].name);
			}
		}
		k++;
	}
	return PASCO_OK;
}

/* ---- nodes ---- */

/* A leaf's index into a list of count (its static spec against the
 * list's entry is checked by the caller). */
static int
read_index(const cJSON *node, graph_node *n, size_t count, const char *what,
    const char *at)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(node, "index");
	if (v == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: missing attribute 'index'", at);
	}
	n->index = -1;
	if (pasci_json_int(node, "index", &n->index, 0, at) != 0) {
		return PASCO_EINVAL;
	}
	if ((size_t) n->index >= count) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: index %lld: the graph has %zu %s", at,
		    (long long) n->index, count, what);
	}
	return PASCO_OK;
}

static int
check_leaf_spec(const graph_node *n, pasco_dtype d, int32_t rank,
    const int64_t *shape, const char *what, const char *at)
{
	if (!same_spec(n->a.dtype, n->a.rank, n->a.shape, d, rank, shape)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s but %s %lld is %s", at,
		    SPEC(n->a.dtype, n->a.rank, n->a.shape), what,
		    (long long) n->index, SPEC(d, rank, shape));
	}
	return PASCO_OK;
}

/* Which op node names: the table's, a leaf or a step-only op. */
static int
resolve_op(const pasci_graph *g, graph_node *n, const char *at, int *min_in,
    int *max_in)
{
	static const char *const leaves[] = {"input", "weight", "constant"};
	*min_in = *max_in = 0;
	for (size_t k = 0; k < COUNT(leaves); k++) {
		if (strcmp(n->name, leaves[k]) == 0) {
			n->kind = (node_kind) (NODE_INPUT + k);
			return PASCO_OK;
		}
	}
	for (size_t k = 0; k < COUNT(step_ops); k++) {
		if (strcmp(n->name, step_ops[k].name) != 0) {
			continue;
		}
		if (g->kind != PASCI_GRAPH_STEP) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: '%s' is a step's op (@pasco.function), not "
			    "one of a layer or a loss",
			    at, n->name);
		}
		n->kind = NODE_STEP;
		*min_in = step_ops[k].min_in;
		*max_in = step_ops[k].max_in;
		return PASCO_OK;
	}
	if ((n->op = pasci_graph_op_named(n->name)) == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: unknown op '%s' (the ops are listed in "
		    "docs/GRAPHS.md)",
		    at, n->name);
	}
	n->kind = NODE_OP;
	*min_in = n->op->min_in;
	*max_in = n->op->max_in;
	return PASCO_OK;
}

/* The node's keys: op, in, shape, dtype and its op's attributes. */
static int
check_node_keys(const cJSON *node, const graph_node *n, const char *at)
{
	static const char *const common[] = {"op", "in", "shape", "dtype"};
	static const char *const index[]  = {"index"};
	static const char *const value[]  = {"value"};
	const char *const       *own      = NULL;
	size_t                   nown     = 0;
	const cJSON             *it;
	if (n->kind == NODE_STEP) {
		return PASCO_OK; /* the step's runner checks them */
	}
	if (n->kind == NODE_INPUT || n->kind == NODE_WEIGHT) {
		own  = index;
		nown = 1;
	} else if (n->kind == NODE_CONSTANT) {
		own  = value;
		nown = 1;
	} else {
		own = n->op->keys;
		while (nown < COUNT(n->op->keys) && own[nown] != NULL) {
			nown++;
		}
	}
	cJSON_ArrayForEach(it, node)
	{
		bool known = false;
		for (size_t k = 0; k < COUNT(common) && !known; k++) {
			known = strcmp(it->string, common[k]) == 0;
		}
		for (size_t k = 0; k < nown && !known; k++) {
			known = strcmp(it->string, own[k]) == 0;
		}
		if (!known) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: unknown attribute '%s'", at, it->string);
		}
	}
	return PASCO_OK;
}

/* Node i's "in": earlier nodes only, min_in..max_in of them. */
static int
read_in(pasci_graph *g, const cJSON *node, size_t i, int min_in, int max_in,
    const char *at)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(node, "in"), *it;
	graph_node  *n = &g->nodes[i];
	size_t       k = 0;
	if (l != NULL && !cJSON_IsArray(l)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: in must be a list of node indices", at);
	}
	n->nin      = l == NULL ? 0 : (size_t) cJSON_GetArraySize(l);
	n->first_in = g->nins;
	if (n->nin < (size_t) min_in || n->nin > (size_t) max_in) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %zu inputs; the op takes %d to %d", at, n->nin,
		    min_in, max_in);
	}
	cJSON_ArrayForEach(it, l)
	{
		double v = cJSON_IsNumber(it) ? it->valuedouble : NAN;
		if (!(v >= 0) || v != floor(v) || v >= (double) i) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: in[%zu] must be an earlier node's index (< "
			    "%zu)",
			    at, k, i);
		}
		g->ins[g->nins++] = (size_t) v;
		k++;
	}
	g->max_in = n->nin > g->max_in ? n->nin : g->max_in;
	return PASCO_OK;
}

static int
read_node(pasci_graph *g, const cJSON *node, size_t i, const char *at0)
{
	graph_node  *n  = &g->nodes[i];
	const cJSON *op = cJSON_GetObjectItemCaseSensitive(node, "op");
	char         at[200];
	int          min_in, max_in;
	n->json = node;
	if (!cJSON_IsObject(node) || !cJSON_IsString(op)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: nodes[%zu]: not an object with a string 'op'", at0,
		    i);
	}
	n->name = op->valuestring;
	pasci_fmt(at, sizeof(at), "%s: nodes[%zu] (%s)", at0, i, n->name);
	if (resolve_op(g, n, at, &min_in, &max_in) != 0 ||
	    check_node_keys(node, n, at) != 0 ||
	    read_in(g, node, i, min_in, max_in, at) != 0 ||
	    read_shape(node, &n->a.rank, n->a.shape, at) != 0 ||
	    read_dtype(node, &n->a.dtype, at) != 0) {
		return PASCO_EINVAL;
	}
	switch (n->kind) {
	case NODE_INPUT:
		return read_index(node, n, g->ninputs, "inputs", at) != 0
		           ? PASCO_EINVAL
		           : check_leaf_spec(n, g->inputs[n->index].dtype,
		                 g->inputs[n->index].rank,
		                 g->inputs[n->index].shape, "input", at);
	case NODE_WEIGHT:
		return read_index(node, n, g->nweights, "weights", at) != 0
		           ? PASCO_EINVAL
		           : check_leaf_spec(n, g->weights[n->index].dtype,
		                 g->weights[n->index].rank,
		                 g->weights[n->index].shape, "weight", at);
	case NODE_CONSTANT:
		return pasci_graph_read_constant(g, node, n, at);
	case NODE_OP:
		return n->op->parse != NULL ? n->op->parse(node, &n->a, at)
		                            : PASCO_OK;
	default:
		return PASCO_OK;
	}
}

static int
read_nodes(pasci_graph *g, const cJSON *l, const char *at)
{
	const cJSON *it;
	size_t       total = 0, i = 0;
	if (!cJSON_IsArray(l) || cJSON_GetArraySize(l) == 0) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: nodes must be a non-empty list", at);
	}
	g->nnodes = (size_t) cJSON_GetArraySize(l);
	cJSON_ArrayForEach(it, l)
	{
		total += (size_t) cJSON_GetArraySize(
		    cJSON_GetObjectItemCaseSensitive(it, "in"));
	}
	g->nodes = pasci_calloc(g->nnodes, sizeof(*g->nodes));
	g->ins   = pasci_calloc(total + 1, sizeof(*g->ins));
	if (g->nodes == NULL || g->ins == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(it, l)
	{
		if (read_node(g, it, i++, at) != 0) {
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

static int
read_outputs(pasci_graph *g, const cJSON *l, const char *at)
{
	int64_t *out;
	size_t   n = l == NULL ? 0 : (size_t) cJSON_GetArraySize(l);
	if ((out = pasci_calloc(n + 1, sizeof(*out))) == NULL ||
	    (g->outputs = pasci_calloc(n + 1, sizeof(*g->outputs))) == NULL) {
		free(out);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	int rv = read_ints(g->json, "outputs", 0, out, n, &g->noutputs, at);
	for (size_t k = 0; rv == 0 && k < g->noutputs; k++) {
		if ((size_t) out[k] >= g->nnodes) {
			rv = pasci_model_fail(PASCO_EINVAL,
			    "%s: outputs[%zu] is %lld; the graph has %zu "
			    "nodes",
			    at, k, (long long) out[k], g->nnodes);
		}
		g->outputs[k] = (size_t) out[k];
	}
	free(out);
	/* a step may return nothing (TensorFlow's eval step): an empty list */
	if (rv == 0 && g->noutputs == 0 && g->kind != PASCI_GRAPH_STEP) {
		rv = pasci_model_fail(
		    PASCO_EINVAL, "%s: outputs must name a node", at);
	}
	return rv;
}

/* The memory of a cJSON tree: its items and strings. */
static size_t
json_bytes(const cJSON *o)
{
	size_t n = sizeof(*o) + (o->string ? strlen(o->string) + 1 : 0) +
	           (o->valuestring ? strlen(o->valuestring) + 1 : 0);
	const cJSON *it;
	for (it = o->child; it != NULL; it = it->next) {
		n += json_bytes(it);
	}
	return n;
}

size_t
pasci_graph_bytes(const pasci_graph *g)
{
	return g->bytes;
}

int
pasci_graph_parse(const cJSON *json, pasci_graph_kind kind, const char *at,
    pasci_graph **out)
{
	static const char *const keys[] = {
	    "inputs", "weights", "nodes", "outputs"};
	pasci_graph *g;
	int          rv;
	*out = NULL;
	at   = at != NULL ? at : "graph";
	if (pasci_json_check_keys(json, keys, COUNT(keys), at) != 0) {
		return PASCO_EINVAL;
	}
	if ((g = pasci_calloc(1, sizeof(*g))) == NULL ||
	    (g->json = cJSON_Duplicate(json, true)) == NULL) {
		free(g);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	g->kind = kind;
#define ITEM(k) cJSON_GetObjectItemCaseSensitive(g->json, k)
	if ((rv = read_inputs(g, ITEM("inputs"), at)) != 0 ||
	    (rv = read_weights(g, ITEM("weights"), at)) != 0 ||
	    (rv = read_nodes(g, ITEM("nodes"), at)) != 0 ||
	    (rv = read_outputs(g, ITEM("outputs"), at)) != 0) {
		pasci_graph_free(g);
		return rv;
	}
#undef ITEM
	g->bytes = sizeof(*g) + json_bytes(g->json) +
	           g->ninputs * sizeof(*g->inputs) +
	           g->nweights * sizeof(*g->weights) +
	           g->nnodes * sizeof(*g->nodes) + g->nins * sizeof(*g->ins) +
	           g->noutputs * sizeof(*g->outputs);
	for (size_t i = 0; i < g->nnodes; i++) {
		g->bytes += g->nodes[i].constant != NULL
		                ? g->nodes[i].constant->nbytes
		                : 0;
	}
	*out = g;
	return PASCO_OK;
}

cJSON *
pasci_graph_to_json(const pasci_graph *g)
{
	return cJSON_Duplicate(g->json, true);
}

void
pasci_graph_free(pasci_graph *g)
{
	if (g == NULL) {
		return;
	}
	for (size_t i = 0; g->nodes != NULL && i < g->nnodes; i++) {
		pasco_tensor_release(g->nodes[i].constant);
	}
	pasci_graph_constants_given_back(g->constants);
	cJSON_Delete(g->json);
	free(g->inputs);
	free(g->weights);
	free(g->nodes);
	free(g->ins);
	free(g->outputs);
	free(g);
}

size_t
pasci_graph_num_inputs(const pasci_graph *g)
{
	return g->ninputs;
}

size_t
pasci_graph_num_weights(const pasci_graph *g)
{
	return g->nweights;
}

size_t
pasci_graph_num_nodes(const pasci_graph *g)
{
	return g->nnodes;
}

size_t
pasci_graph_num_outputs(const pasci_graph *g)
{
	return g->noutputs;
}

pasco_dtype
pasci_graph_input(
    const pasci_graph *g, size_t k, int32_t *rank, const int64_t **shape)
{
	*rank  = g->inputs[k].rank;
	*shape = g->inputs[k].shape;
	return g->inputs[k].dtype;
}

const pasci_graph_weight *
pasci_graph_weight_at(const pasci_graph *g, size_t k)
{
	return k < g->nweights ? &g->weights[k] : NULL;
}

const char *
pasci_graph_node_op(const pasci_graph *g, size_t i)
{
	return i < g->nnodes ? g->nodes[i].name : NULL;
}

const cJSON *
pasci_graph_node_json(const pasci_graph *g, size_t i)
{
	return i < g->nnodes ? g->nodes[i].json : NULL;
}

size_t
pasci_graph_output(const pasci_graph *g, size_t k)
{
	return g->outputs[k];
}

pasco_dtype
pasci_graph_node_spec(
    const pasci_graph *g, size_t i, int32_t *rank, const int64_t **shape)
{
	*rank  = g->nodes[i].a.rank;
	*shape = g->nodes[i].a.shape;
	return g->nodes[i].a.dtype;
}
