/*
 * Custom layers (include/pasco/graph.h): an op graph (docs/GRAPHS.md,
 * parsed once by model/graph.c) or a C function registered by name, its
 * weights the variables <name>/<weight>. Its descriptor (layer_desc.h).
 * A definition (pasco_custom) is immutable once made and shared by
 * reference: a layer description, each model made from it and each copy
 * of a model (the worker's cache, a call's clone) hold one, released
 * atomically, so any thread may run or release it. The registry of C
 * layers is under its mutex; its entries live as long as the program.
 */
#include "graph.h"
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pasco_custom {
	int32_t               refs; /* atomic */
	char                  cls[64];
	size_t                ninputs;
	int64_t               widths[PASCO_LAYER_MAX_INPUTS];
	int64_t               output_width;
	pasci_graph          *graph, *inference; /* a graph's */
	const pasco_layer_fn *fn;                /* or a function's */
	char                  fn_name[64];
	cJSON                *options;
	char                 *options_text;
	size_t                nweights;
	pasco_layer_weight   *weights;
};

/* ---- the registry of C layers ---- */

typedef struct fn_entry {
	struct fn_entry      *next;
	char                  name[64];
	const pasco_layer_fn *fn;
} fn_entry;

static pthread_mutex_t fns_mu = PTHREAD_MUTEX_INITIALIZER;
static fn_entry       *fns; /* under fns_mu */

static fn_entry *
fn_find_locked(const char *name)
{
	fn_entry *e = fns;
	while (e != NULL && strcmp(e->name, name) != 0) {
		e = e->next;
	}
	return e;
}

int
pasco_layer_register(const char *name, const pasco_layer_fn *fn)
{
	fn_entry *e;
	int       rv = PASCO_OK;
	if (name == NULL || name[0] == 0 || strlen(name) >= sizeof(e->name) ||
	    fn == NULL || fn->variables == NULL || fn->call == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "pasco_layer_register: a name of 1 to 63 bytes and both "
		    "functions (variables, call) are needed");
	}
	pthread_mutex_lock(&fns_mu);
	if ((e = fn_find_locked(name)) != NULL) {
		rv = e->fn == fn ? PASCO_OK
		                 : pasci_model_fail(PASCO_EEXIST,
		                       "pasco_layer_register: '%s' is "
		                       "registered already",
		                       name);
	} else if ((e = pasci_calloc(1, sizeof(*e))) == NULL) {
		rv = pasci_model_fail(PASCO_ENOMEM, "out of memory");
	} else {
		snprintf(e->name, sizeof(e->name), "%s", name);
		e->fn   = fn;
		e->next = fns;
		fns     = e;
	}
	pthread_mutex_unlock(&fns_mu);
	return rv;
}

static const pasco_layer_fn *
fn_named(const char *name)
{
	fn_entry *e;
	pthread_mutex_lock(&fns_mu);
	e = fn_find_locked(name);
	pthread_mutex_unlock(&fns_mu);
	return e != NULL ? e->fn : NULL;
}

/* ---- definitions ---- */

static void
def_free(pasco_custom *d)
{
	if (d == NULL) {
		return;
	}
	pasci_graph_free(d->graph);
	pasci_graph_free(d->inference);
	cJSON_Delete(d->options);
	free(d->options_text);
	free(d->weights);
	free(d);
}

static void
custom_hold(pasco_layer *l)
{
	if (l->custom != NULL) {
		__atomic_add_fetch(&l->custom->refs, 1, __ATOMIC_RELAXED);
	}
}

static void
custom_release(pasco_layer *l)
{
	if (l->custom != NULL &&
	    __atomic_sub_fetch(&l->custom->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		def_free(l->custom);
	}
	l->custom = NULL;
}

/* The weights of a function's layer, from its variables callback. */
static int
fn_weights(pasco_custom *d, const char *at)
{
	char err[256] = "";
	int  rv;
	d->weights =
	    pasci_calloc(PASCO_LAYER_FN_MAX_WEIGHTS, sizeof(*d->weights));
	if (d->weights == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	rv = d->fn->variables(d->options_text, d->ninputs, d->widths,
	    d->weights, &d->nweights, &d->output_width, err, sizeof(err));
	if (rv != PASCO_OK) {
		return pasci_model_fail(rv != 0 ? rv : PASCO_EINVAL,
		    "%s: layer function '%s': %s", at, d->fn_name,
		    err[0] ? err : pasco_strerror(rv));
	}
	if (d->nweights > PASCO_LAYER_FN_MAX_WEIGHTS || d->output_width < 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: layer function '%s' declared %zu weights (at most "
		    "%d) and output width %lld",
		    at, d->fn_name, d->nweights, PASCO_LAYER_FN_MAX_WEIGHTS,
		    (long long) d->output_width);
	}
	for (size_t k = 0; k < d->nweights; k++) {
		const pasco_layer_weight *w = &d->weights[k];
		if (w->name[0] == 0 || strchr(w->name, '/') != NULL ||
		    w->rank < 0 || w->rank > PASCO_MAX_RANK) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: layer function '%s': weight %zu needs a name "
			    "without '/' and a rank of 0 to %d",
			    at, d->fn_name, k, PASCO_MAX_RANK);
		}
	}
	return PASCO_OK;
}

/* A function's layer: name registered, options an object. */
static int
def_function(
    pasco_custom *d, const char *name, const cJSON *options, const char *at)
{
	if ((d->fn = fn_named(name)) == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: no layer function '%s' is registered in this program "
		    "(pasco_layer_register: every role registers the same)",
		    at, name);
	}
	snprintf(d->fn_name, sizeof(d->fn_name), "%s", name);
	if (options != NULL && !cJSON_IsObject(options)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: options must be a JSON object", at);
	}
	d->options = options != NULL ? cJSON_Duplicate(options, true)
	                             : cJSON_CreateObject();
	if (d->options == NULL ||
	    (d->options_text = cJSON_PrintUnformatted(d->options)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	return fn_weights(d, at);
}

/* Graph g (graph or inference_graph) against the layer: its inputs
 * [-1 or any, width] of the widths, one output [.., output_width] of
 * floats, and (inference_graph) the weights of ref. */
static int
check_graph(const pasco_custom *d, const pasci_graph *g,
    const pasci_graph *ref, const char *at)
{
	pasco_dtype    out;
	int32_t        orank;
	const int64_t *oshape;
	if (pasci_graph_num_inputs(g) != d->ninputs ||
	    pasci_graph_num_outputs(g) != 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: the graph has %zu inputs and %zu outputs; the layer "
		    "%zu inputs (input_widths) and one output",
		    at, pasci_graph_num_inputs(g), pasci_graph_num_outputs(g),
		    d->ninputs);
	}
	for (size_t j = 0; j < d->ninputs; j++) {
		int32_t        rank;
		const int64_t *shape;
		(void) pasci_graph_input(g, j, &rank, &shape);
		if (rank != 2 || shape[1] != d->widths[j]) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: graph input %zu is %s; input_widths[%zu] is "
			    "%lld ([batch, width])",
			    at, j, PASCI_SHAPE(rank, shape), j,
			    (long long) d->widths[j]);
		}
	}
	out = pasci_graph_node_spec(
	    g, pasci_graph_output(g, 0), &orank, &oshape);
	if ((out != PASCO_F32 && out != PASCO_F64) || orank != 2 ||
	    oshape[1] != d->output_width) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: the graph's output is %s%s; output_width is %lld "
		    "(float [batch, width])",
		    at, pasco_dtype_name(out), PASCI_SHAPE(orank, oshape),
		    (long long) d->output_width);
	}
	for (size_t k = 0; ref != NULL && k < pasci_graph_num_weights(ref);
	     k++) {
		const pasci_graph_weight *a = pasci_graph_weight_at(g, k);
		const pasci_graph_weight *b = pasci_graph_weight_at(ref, k);
		if (a == NULL || strcmp(a->name, b->name) != 0 ||
		    a->rank != b->rank || a->trainable != b->trainable ||
		    memcmp(a->shape, b->shape,
		        (size_t) a->rank * sizeof(*a->shape)) != 0) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: weight %zu ('%s') differs from graph's: both "
			    "graphs have the layer's weights",
			    at, k, a != NULL ? a->name : "none");
		}
	}
	if (ref != NULL &&
	    pasci_graph_num_weights(g) != pasci_graph_num_weights(ref)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %zu weights; graph has %zu", at,
		    pasci_graph_num_weights(g), pasci_graph_num_weights(ref));
	}
	return PASCO_OK;
}

/* A graph's layer: graph (training) and inference_graph, if any; its
 * weights are graph's. */
static int
def_graph(pasco_custom *d, const cJSON *graph, const cJSON *inference,
    const char *at)
{
	char where[200];
	int  rv;
	pasci_fmt(where, sizeof(where), "%s: graph", at);
	if ((rv = pasci_graph_parse(
	         graph, PASCI_GRAPH_LAYER, where, &d->graph)) != 0 ||
	    (rv = check_graph(d, d->graph, NULL, where)) != 0) {
		return rv;
	}
	pasci_fmt(where, sizeof(where), "%s: inference_graph", at);
	if (inference != NULL &&
	    ((rv = pasci_graph_parse(
	          inference, PASCI_GRAPH_LAYER, where, &d->inference)) != 0 ||
	        (rv = check_graph(d, d->inference, d->graph, where)) != 0)) {
		return rv;
	}
	d->nweights = pasci_graph_num_weights(d->graph);
	d->weights  = pasci_calloc(d->nweights + 1, sizeof(*d->weights));
	if (d->weights == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < d->nweights; k++) {
		const pasci_graph_weight *w =
		    pasci_graph_weight_at(d->graph, k);
		pasco_layer_weight *o = &d->weights[k];
		snprintf(o->name, sizeof(o->name), "%s", w->name);
		o->rank = w->rank;
		memcpy(o->shape, w->shape, sizeof(o->shape));
		o->init      = w->init;
		o->l1        = w->l1;
		o->l2        = w->l2;
		o->trainable = w->trainable;
	}
	return PASCO_OK;
}

/* input_widths (1 to PASCO_LAYER_MAX_INPUTS positive integers) and
 * output_width. */
static int
read_widths(const cJSON *c, pasco_custom *d, const char *at)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(c, "input_widths");
	const cJSON *it;
	int64_t      w;
	if (!cJSON_IsArray(l) || cJSON_GetArraySize(l) < 1 ||
	    cJSON_GetArraySize(l) > PASCO_LAYER_MAX_INPUTS) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: input_widths must list 1 to %d widths", at,
		    PASCO_LAYER_MAX_INPUTS);
	}
	cJSON_ArrayForEach(it, l)
	{
		if (!cJSON_IsNumber(it) || !(it->valuedouble >= 1) ||
		    it->valuedouble > 9007199254740992.0 ||
		    it->valuedouble != (double) (int64_t) it->valuedouble) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: input_widths[%zu] must be a positive integer",
			    at, d->ninputs);
		}
		if (it->valuedouble > (double) PASCI_MAX_WIDTH) {
			char key[32];
			snprintf(
			    key, sizeof(key), "input_widths[%zu]", d->ninputs);
			return pasci_json_bound(at, key,
			    (int64_t) it->valuedouble, PASCI_MAX_WIDTH);
		}
		d->widths[d->ninputs++] = (int64_t) it->valuedouble;
	}
	w = 0;
	if (pasci_json_size(c, "output_width", &w, 1, PASCI_MAX_WIDTH, at) !=
	    0) {
		return PASCO_EINVAL;
	}
	if (w < 1) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: output_width is missing", at);
	}
	d->output_width = w;
	return PASCO_OK;
}

/* A definition from a layer's config c; *out NULL (a layer with no
 * definition yet, refused when a model is made) when c has neither a
 * graph nor a function. */
static int
def_read(const cJSON *c, pasco_custom **out, const char *at)
{
	const cJSON  *graph = cJSON_GetObjectItemCaseSensitive(c, "graph");
	const cJSON  *fn    = cJSON_GetObjectItemCaseSensitive(c, "function");
	const char   *cls   = NULL;
	int64_t       width;
	pasco_custom *d;
	int           rv;
	*out = NULL;
	if (graph == NULL && fn == NULL) {
		return PASCO_OK;
	}
	if ((graph != NULL) == (fn != NULL) ||
	    (fn != NULL && !cJSON_IsString(fn))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a Custom layer has a graph or a function (a "
		    "registered name), not both",
		    at);
	}
	if ((d = pasci_calloc(1, sizeof(*d))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	d->refs = 1;
	if ((rv = pasci_json_string(c, "class", &cls, at)) != 0 ||
	    (rv = read_widths(c, d, at)) != 0) {
		goto fail;
	}
	if (cls != NULL && strlen(cls) >= sizeof(d->cls)) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "%s: class is longer than %zu bytes", at,
		    sizeof(d->cls) - 1);
		goto fail;
	}
	width = d->output_width;
	rv    = graph != NULL
	            ? def_graph(d, graph,
	                  cJSON_GetObjectItemCaseSensitive(c, "inference_graph"),
	                  at)
	            : def_function(d, fn->valuestring,
	                  cJSON_GetObjectItemCaseSensitive(c, "options"), at);
	if (rv == 0 && d->output_width != width) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "%s: layer function '%s' gives output width %lld; the "
		    "config says %lld",
		    at, d->fn_name, (long long) d->output_width,
		    (long long) width);
	}
	if (rv != 0) {
		goto fail;
	}
	snprintf(d->cls, sizeof(d->cls), "%s",
	    cls != NULL  ? cls
	    : fn != NULL ? fn->valuestring
	                 : "Custom");
	*out = d;
	return PASCO_OK;
fail:
	def_free(d);
	return rv;
}

/* ---- the public constructors ---- */

int
pasco_layer_function(pasco_layer *out, const char *name, const char *options,
    size_t ninputs, const int64_t *widths)
{
	pasco_custom *d;
	cJSON        *o = NULL;
	int           rv;
	if (name == NULL || ninputs < 1 || ninputs > PASCO_LAYER_MAX_INPUTS ||
	    widths == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "pasco_layer_function: a name and 1 to %d input widths "
		    "are needed",
		    PASCO_LAYER_MAX_INPUTS);
	}
	if (options != NULL && (o = cJSON_Parse(options)) == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "pasco_layer_function '%s': options are not JSON", name);
	}
	if ((d = pasci_calloc(1, sizeof(*d))) == NULL) {
		cJSON_Delete(o);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	d->refs    = 1;
	d->ninputs = ninputs;
	for (size_t j = 0; j < ninputs; j++) {
		d->widths[j] = widths[j];
	}
	snprintf(d->cls, sizeof(d->cls), "%s", name);
	rv = def_function(d, name, o, "pasco_layer_function");
	cJSON_Delete(o);
	if (rv != 0) {
		def_free(d);
		return rv;
	}
	*out = pasci_layer_named(pasci_layer_defaults(PASCO_LAYER_CUSTOM));
	out->custom = d;
	return PASCO_OK;
}

int
pasco_layer_graph(pasco_layer *out, const char *config)
{
	const pasci_layer_desc *desc = pasci_layer_desc_of(PASCO_LAYER_CUSTOM);
	cJSON      *c     = config != NULL ? cJSON_Parse(config) : NULL;
	const char *name  = NULL;
	size_t      nkeys = 0;
	pasco_layer l     = pasci_layer_defaults(PASCO_LAYER_CUSTOM);
	int         rv;
	while (nkeys < PASCI_LAYER_MAX_KEYS && desc->keys[nkeys] != NULL) {
		nkeys++;
	}
	if (c == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "pasco_layer_graph: the config is not JSON");
	}
	if ((rv = pasci_json_check_keys(c, desc->keys, nkeys, "Custom")) !=
	        0 ||
	    (rv = pasci_json_string(c, "name", &name, "Custom")) != 0 ||
	    (rv = def_read(c, &l.custom, name != NULL ? name : "Custom")) !=
	        0) {
		cJSON_Delete(c);
		return rv;
	}
	if (l.custom == NULL) {
		cJSON_Delete(c);
		return pasci_model_fail(PASCO_EINVAL,
		    "pasco_layer_graph: the config has neither a graph nor a "
		    "function");
	}
	if (name != NULL && strlen(name) >= sizeof(l.name)) {
		custom_release(&l);
		cJSON_Delete(c);
		return pasci_model_fail(PASCO_EINVAL,
		    "pasco_layer_graph: name '%.40s...' is longer than %zu "
		    "bytes",
		    name, sizeof(l.name) - 1);
	}
	if (name != NULL && name[0] != 0) {
		snprintf(l.name, sizeof(l.name), "%s", name);
	} else {
		l = pasci_layer_named(l);
	}
	cJSON_Delete(c);
	*out = l;
	return PASCO_OK;
}

/* ---- the descriptor ---- */

static int
custom_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	const pasco_custom *d = l->custom;
	if (d == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a Custom layer needs a graph or a function "
		    "(pasco_layer_graph, pasco_layer_function)",
		    l->name);
	}
	if (l->ninputs != d->ninputs) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: called on %zu inputs; it takes %zu (input_widths)",
		    l->name, l->ninputs, d->ninputs);
	}
	for (size_t j = 0; j < d->ninputs; j++) {
		if (widths[j] != d->widths[j]) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: input %zu is %lld wide; input_widths[%zu] is "
			    "%lld",
			    l->name, j, (long long) widths[j], j,
			    (long long) d->widths[j]);
		}
	}
	*out = d->output_width;
	return PASCO_OK;
}

static size_t
custom_bytes(const pasco_layer *l)
{
	const pasco_custom *d = l->custom;
	if (d == NULL) {
		return 0;
	}
	return sizeof(*d) + d->nweights * sizeof(*d->weights) +
	       (d->graph ? pasci_graph_bytes(d->graph) : 0) +
	       (d->inference ? pasci_graph_bytes(d->inference) : 0) +
	       (d->options_text ? 3 * strlen(d->options_text) : 0);
}

static size_t
custom_max_vars(const pasco_layer *l)
{
	return l->custom != NULL ? l->custom->nweights : 0;
}

static void
custom_variables(pasco_model *m, size_t i, const int64_t *widths)
{
	const pasco_custom *d = m->layers[i].custom;
	(void) widths;
	for (size_t k = 0; k < d->nweights; k++) {
		pasci_model_add_var_shape(m, i, d->weights[k].name,
		    d->weights[k].rank, d->weights[k].shape,
		    d->weights[k].init);
	}
}

/* A copy of x's value as a constant: read, never differentiated. */
static pasco_tnode *
frozen(pasco_tape *tp, pasco_tnode *x)
{
	pasco_tensor *t;
	pasco_tnode  *n;
	if (pasco_tensor_copy(&t, pasco_tnode_value(x)) != 0) {
		return pasci_tape_fail(tp, PASCO_ENOMEM, "out of memory");
	}
	n = pasco_tape_constant(tp, t);
	pasco_tensor_release(t);
	return n;
}

/* The function's output, checked: float [batch, output_width]. */
static pasco_tnode *
fn_call(pasci_layer_call *c, const pasco_tensor *const *ids, pasco_tnode **w)
{
	const pasco_layer  *l = &c->m->layers[c->i];
	const pasco_custom *d = l->custom;
	const pasco_tensor *v;
	pasco_tnode        *h;
	for (size_t k = 0; k < d->nweights; k++) {
		if (!d->weights[k].trainable &&
		    (w[k] = frozen(c->tp, w[k])) == NULL) {
			return NULL;
		}
	}
	h = d->fn->call(c->tp, d->options_text, d->ninputs, c->in, ids, w);
	if (h == NULL || pasco_tape_error(c->tp) != PASCO_OK) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL,
		    "%s: layer function '%s' returned no output", l->name,
		    d->fn_name);
	}
	v = pasco_tnode_value(h);
	if (v->rank != 2 || v->shape[1] != d->output_width) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL,
		    "%s: layer function '%s' returned %s; the layer's output "
		    "is [batch, %lld]",
		    l->name, d->fn_name, PASCI_SHAPE(v->rank, v->shape),
		    (long long) d->output_width);
	}
	return h;
}

static pasco_tnode *
custom_call(pasci_layer_call *c)
{
	const pasco_layer  *l                           = &c->m->layers[c->i];
	const pasco_custom *d                           = l->custom;
	const pasco_tensor *ids[PASCO_LAYER_MAX_INPUTS] = {0};
	pasci_gval          in[PASCO_LAYER_MAX_INPUTS]  = {0}, out;
	pasco_tnode       **w =
	    pasci_tape_mem(c->tp, (d->nweights + 1) * sizeof(*w));
	const pasci_graph *g;
	for (size_t k = 0; w != NULL && k < d->nweights; k++) {
		if ((w[k] = pasci_layer_var_node(
		         c->m, c->tp, c->i, k, c->nodes)) == NULL) {
			return NULL;
		}
	}
	for (size_t j = 0; j < l->ninputs; j++) {
		if (c->in[j] == NULL) {
			ids[j] = c->inputs[-1 - (int64_t) l->inputs[j]];
		}
		in[j] = (pasci_gval){c->in[j], ids[j]};
	}
	if (w == NULL || d->fn != NULL) {
		return w == NULL ? NULL : fn_call(c, ids, w);
	}
	g = d->inference != NULL && !pasci_tape_training(c->tp) ? d->inference
	                                                        : d->graph;
	if (!pasci_graph_run(g, c->tp, l->name, in, w, NULL, NULL, &out)) {
		return NULL;
	}
	return out.node;
}

/* l1 * sum(|w|) (as relu(w) + relu(-w)) and l2 * sum(w^2) per weight. */
static pasco_tnode *
custom_penalty(pasci_layer_call *c, pasco_tnode *loss)
{
	const pasco_custom *d = c->m->layers[c->i].custom;
	for (size_t k = 0; loss != NULL && k < d->nweights; k++) {
		const pasco_layer_weight *wt = &d->weights[k];
		pasco_tnode              *w, *abs;
		if (wt->l1 == 0 && wt->l2 == 0) {
			continue;
		}
		w = pasci_layer_var_node(c->m, c->tp, c->i, k, c->nodes);
		w = w != NULL && !wt->trainable ? frozen(c->tp, w) : w;
		if (w == NULL) {
			return NULL;
		}
		if (wt->l2 > 0) {
			loss = pasco_t_add(
			    c->tp, loss, pasco_t_l2(c->tp, w, wt->l2));
		}
		if (wt->l1 > 0) {
			abs  = pasco_t_add(c->tp, pasco_t_relu(c->tp, w),
			     pasco_t_relu(c->tp, pasco_t_scale(c->tp, w, -1)));
			loss = pasco_t_add(c->tp, loss,
			    pasco_t_scale(c->tp,
			        pasco_t_reduce_sum(
			            c->tp, abs, PASCO_T_ALL_AXES),
			        wt->l1));
		}
	}
	return loss;
}

static bool
custom_write(cJSON *c, const pasco_layer *l)
{
	const pasco_custom *d = l->custom;
	cJSON              *widths;
	bool                ok;
	if (d == NULL) {
		return true; /* no definition yet: nothing to write */
	}
	ok = cJSON_AddStringToObject(c, "class", d->cls) != NULL &&
	     (widths = cJSON_AddArrayToObject(c, "input_widths")) != NULL;
	for (size_t j = 0; ok && j < d->ninputs; j++) {
		ok = cJSON_AddItemToArray(
		    widths, cJSON_CreateNumber((double) d->widths[j]));
	}
	ok = ok && cJSON_AddNumberToObject(
	               c, "output_width", (double) d->output_width) != NULL;
	if (ok && d->fn != NULL) {
		return cJSON_AddStringToObject(c, "function", d->fn_name) &&
		       cJSON_AddItemToObject(
		           c, "options", cJSON_Duplicate(d->options, true));
	}
	ok = ok &&
	     cJSON_AddItemToObject(c, "graph", pasci_graph_to_json(d->graph));
	if (ok && d->inference != NULL) {
		ok = cJSON_AddItemToObject(
		    c, "inference_graph", pasci_graph_to_json(d->inference));
	}
	return ok;
}

static int
custom_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	custom_release(l);
	return def_read(c, &l->custom, at);
}

const pasci_layer_desc pasci_layer_custom_desc = {
    .kind       = PASCO_LAYER_CUSTOM,
    .class_name = "Custom",
    .prefix     = "custom",
    .keys       = {"name", "class", "input_widths", "output_width", "graph",
              "inference_graph", "function", "options"},
    .min_inputs = 1,
    .any_inputs = true,
    .check      = custom_check,
    .max_vars   = custom_max_vars,
    .variables  = custom_variables,
    .call       = custom_call,
    .penalty    = custom_penalty,
    .hold       = custom_hold,
    .release    = custom_release,
    .bytes      = custom_bytes,
    .write      = custom_write,
    .read       = custom_read,
};
