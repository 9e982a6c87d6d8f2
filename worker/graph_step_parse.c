/*
 * A traced step's JSON (docs/GRAPHS.md, "A traced step") read into a
 * pasci_gstep (graph_step.h): its arguments, its graph (model/graph.c's
 * reader, kind PASCI_GRAPH_STEP) with the step-only nodes' attributes
 * read here, its applies (optimizers read as compile configs write them)
 * and its updates. Everything that does not depend on the call's
 * arguments is checked here, once; the step runner (graph_step.c) checks
 * the rest at each call. Parsed steps are kept by their bytes, as
 * model_cache.c keeps model configs: a list in use order under one
 * mutex, bounded in entries, the least recently used dropped first; an
 * entry is held (refs) by the calls running it, and one dropped meanwhile
 * is freed by its last holder. Any handler thread.
 */
#include "graph_step.h"

#include "model_impl.h"
#include "pasco/hash.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A JSON array's integer entries into v[0..n) (allocated), each in
 * [lo, hi). */
static int
int_list(const cJSON *a, int64_t lo, int64_t hi, int64_t **v, size_t *n,
    const char *where, const char *key)
{
	const cJSON *it;
	size_t       k = 0;
	if (!cJSON_IsArray(a)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: %s must be a list", where, key);
	}
	*n = (size_t) cJSON_GetArraySize(a);
	if ((*v = pasci_calloc(*n + 1, sizeof(**v))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(it, a)
	{
		if (!cJSON_IsNumber(it) ||
		    it->valuedouble != (double) it->valueint ||
		    it->valueint < lo || it->valueint >= hi) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: %s[%zu] must be an integer in [%lld, %lld)",
			    where, key, k, (long long) lo, (long long) hi);
		}
		(*v)[k++] = it->valueint;
	}
	return PASCO_OK;
}

/* A required integer field in [lo, hi). */
static int
int_field(const cJSON *o, const char *key, int64_t lo, int64_t hi, int64_t *v,
    const char *where)
{
	if (cJSON_GetObjectItemCaseSensitive(o, key) == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: '%s' is missing", where, key);
	}
	if (pasci_json_int(o, key, v, (double) lo, where) != 0) {
		return PASCO_EINVAL;
	}
	if (*v >= hi) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s %lld is out of range (%lld of them)", where, key,
		    (long long) *v, (long long) hi);
	}
	return PASCO_OK;
}

static int
dtype_field(const cJSON *o, pasco_dtype *dt, const char *where)
{
	static const struct {
		const char *name;
		pasco_dtype dt;
	} names[]     = {{"float32", PASCO_F32}, {"float64", PASCO_F64},
	        {"int32", PASCO_I32}, {"int64", PASCO_I64}};
	const char *s = NULL; /* stays NULL when "dtype" is missing */
	if (pasci_json_string(o, "dtype", &s, where) != 0) {
		return PASCO_EINVAL;
	}
	for (size_t k = 0; s != NULL && k < sizeof(names) / sizeof(*names);
	     k++) {
		if (strcmp(s, names[k].name) == 0) {
			*dt = names[k].dt;
			return PASCO_OK;
		}
	}
	return pasci_model_fail(PASCO_EINVAL,
	    "%s: dtype '%s' is not float32, float64, int32 or int64", where,
	    s != NULL ? s : "(missing)");
}

static int
shape_field(const cJSON *o, int32_t *rank, int64_t *shape, const char *where)
{
	int64_t *v = NULL;
	size_t   n = 0;
	int rv     = int_list(cJSON_GetObjectItemCaseSensitive(o, "shape"), -1,
	        INT64_MAX, &v, &n, where, "shape");
	if (rv == 0 && n > PASCO_MAX_RANK) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "%s: shape has %zu dimensions (at most %d)", where, n,
		    PASCO_MAX_RANK);
	}
	for (size_t k = 0; rv == 0 && k < n; k++) {
		shape[k] = v[k];
	}
	*rank = (int32_t) n;
	free(v);
	return rv;
}

static int
parse_arg(const cJSON *o, pasci_gstep_arg *a, const char *where)
{
	static const char *kinds[] = {
	    "iterator", "model", "variable", "tensor", "global_step"};
	static const char *keys[] = {"kind", "shape", "dtype"};
	const char        *kind   = NULL;
	if (pasci_json_check_keys(o, keys, 3, where) != 0 ||
	    pasci_json_string(o, "kind", &kind, where) != 0) {
		return PASCO_EINVAL;
	}
	for (int k = 0; kind != NULL && k < 5; k++) {
		if (strcmp(kind, kinds[k]) == 0) {
			a->kind = (pasci_gstep_kind) (k + 1);
		}
	}
	if (a->kind == 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: kind '%s' is not iterator, model, variable, tensor "
		    "or global_step",
		    where, kind != NULL ? kind : "(missing)");
	}
	if (a->kind != PASCI_GSTEP_VARIABLE && a->kind != PASCI_GSTEP_TENSOR) {
		return PASCO_OK;
	}
	return dtype_field(o, &a->dtype, where) != 0 ||
	               shape_field(o, &a->rank, a->shape, where) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

static int
parse_args(pasci_gstep *s, const cJSON *args)
{
	char         where[192];
	const cJSON *it;
	size_t       i = 0;
	if (!cJSON_IsArray(args)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: args must be a list", s->name);
	}
	s->nargs = (size_t) cJSON_GetArraySize(args);
	if ((s->args = pasci_calloc(s->nargs + 1, sizeof(*s->args))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	/* walked once: cJSON_GetArrayItem(i) walks from the first each
	 * time, quadratic in a step of many args */
	cJSON_ArrayForEach(it, args)
	{
		snprintf(where, sizeof(where), "%s: args[%zu]", s->name, i);
		if (parse_arg(it, &s->args[i], where) != 0) {
			return PASCO_EINVAL;
		}
		if (s->args[i].kind == PASCI_GSTEP_GLOBAL_STEP &&
		    s->global_step_arg >= 0) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: a second global_step argument (args[%lld] "
			    "is one)",
			    where, (long long) s->global_step_arg);
		}
		s->global_step_arg = s->args[i].kind == PASCI_GSTEP_GLOBAL_STEP
		                         ? (int64_t) i
		                         : s->global_step_arg;
		s->nvar_args += s->args[i].kind == PASCI_GSTEP_VARIABLE;
		i++;
	}
	return PASCO_OK;
}

/* Argument field "arg" of a node, which must be of kind. */
static int
node_arg(const pasci_gstep *s, const cJSON *o, pasci_gstep_kind kind,
    const char *what, int64_t *arg, const char *where)
{
	if (int_field(o, "arg", 0, (int64_t) s->nargs, arg, where) != 0) {
		return PASCO_EINVAL;
	}
	if (s->args[*arg].kind != kind) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: argument %lld is not %s", where, (long long) *arg,
		    what);
	}
	return PASCO_OK;
}

/* The step-only attributes of node i (op) into n; its inputs' count
 * checked (nin). */
static int
parse_step_node(pasci_gstep *s, size_t i, const char *op, const cJSON *o,
    size_t nin, const char *where)
{
	static const struct {
		const char    *name;
		pasci_gstep_op op;
		size_t         min_in, max_in;
		const char    *keys[7];
	} ops[] = {
	    {"next", PASCI_GSTEP_OP_NEXT, 0, 0,
	        {"op", "in", "shape", "dtype", "arg", "call", "path"}},
	    {"arg", PASCI_GSTEP_OP_ARG, 0, 0,
	        {"op", "in", "shape", "dtype", "arg"}},
	    {"model", PASCI_GSTEP_OP_MODEL, 1, 8,
	        {"op", "in", "shape", "dtype", "arg", "training"}},
	    {"read", PASCI_GSTEP_OP_READ, 0, 0,
	        {"op", "in", "shape", "dtype", "var"}},
	    {"gradient", PASCI_GSTEP_OP_GRADIENT, 1, 1,
	        {"op", "in", "shape", "dtype", "var"}},
	    {"global_step", PASCI_GSTEP_OP_GLOBAL_STEP, 0, 0,
	        {"op", "in", "shape", "dtype"}},
	};
	pasci_gstep_node *n = &s->nodes[i];
	size_t            k = 0, nkeys = 0;
	while (
	    k < sizeof(ops) / sizeof(*ops) && strcmp(ops[k].name, op) != 0) {
		k++;
	}
	if (k == sizeof(ops) / sizeof(*ops)) {
		return PASCO_OK; /* the op table's or a leaf: graph.c's */
	}
	while (nkeys < 7 && ops[k].keys[nkeys] != NULL) {
		nkeys++;
	}
	n->op = ops[k].op;
	if (pasci_json_check_keys(o, ops[k].keys, nkeys, where) != 0) {
		return PASCO_EINVAL;
	}
	if (nin < ops[k].min_in || nin > ops[k].max_in) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: takes %zu to %zu inputs, got %zu", where,
		    ops[k].min_in, ops[k].max_in, nin);
	}
	if (dtype_field(o, &n->dtype, where) != 0) {
		return PASCO_EINVAL;
	}
	switch (n->op) {
	case PASCI_GSTEP_OP_NEXT:
		n->path = cJSON_GetObjectItemCaseSensitive(o, "path");
		if (n->path != NULL && !cJSON_IsArray(n->path)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: path must be a list of indices and keys",
			    where);
		}
		return node_arg(s, o, PASCI_GSTEP_ITERATOR, "an iterator",
		           &n->arg, where) != 0 ||
		               int_field(o, "call", 0, INT32_MAX, &n->call,
		                   where) != 0
		           ? PASCO_EINVAL
		           : PASCO_OK;
	case PASCI_GSTEP_OP_ARG:
		return node_arg(
		    s, o, PASCI_GSTEP_TENSOR, "a tensor", &n->arg, where);
	case PASCI_GSTEP_OP_MODEL:
		return node_arg(s, o, PASCI_GSTEP_MODEL, "a model", &n->arg,
		           where) != 0 ||
		               pasci_json_bool(
		                   o, "training", &n->training, where) != 0
		           ? PASCO_EINVAL
		           : PASCO_OK;
	case PASCI_GSTEP_OP_READ:
	case PASCI_GSTEP_OP_GRADIENT:
		return int_field(o, "var", 0, INT32_MAX, &n->var, where);
	default:
		return s->global_step_arg < 0
		           ? pasci_model_fail(PASCO_EINVAL,
		                 "%s: the step has no global_step argument",
		                 where)
		           : PASCO_OK;
	}
}

/* parse_nodes's walk; first[t]: the first gradient node of target t
 * (-1: none yet), so that a step of many gradients reads in linear time. */
static int
parse_nodes_with(pasci_gstep *s, int64_t *first, int *training)
{
	char where[256];
	for (size_t i = 0; i < s->nnodes; i++) {
		const cJSON *o  = pasci_graph_node_json(s->graph, i);
		const cJSON *in = cJSON_GetObjectItemCaseSensitive(o, "in");
		const char  *op = pasci_graph_node_op(s->graph, i);
		size_t       nin =
                    cJSON_IsArray(in) ? (size_t) cJSON_GetArraySize(in) : 0;
		const cJSON *it;
		s->nodes[i].used_by = -1;
		snprintf(where, sizeof(where), "%s: nodes[%zu] (%s)", s->name,
		    i, op);
		if (parse_step_node(s, i, op, o, nin, where) != 0) {
			return PASCO_EINVAL;
		}
		cJSON_ArrayForEach(it, in)
		{ /* the reader checked: earlier nodes only */
			size_t j = (size_t) it->valueint;
			if (j < i && s->nodes[j].used_by < 0) {
				s->nodes[j].used_by = (int64_t) i;
			}
		}
		pasci_gstep_node *n = &s->nodes[i];
		if (n->op == PASCI_GSTEP_OP_GRADIENT) {
			n->target =
			    in->child->valueint; /* < i: the reader's */
			if (first[n->target] < 0) {
				first[n->target] = (int64_t) i;
			}
			n->leader = (size_t) first[n->target];
		}
		if (n->op == PASCI_GSTEP_OP_MODEL && *training >= 0 &&
		    *training != (int) n->training) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: training %s, and an earlier model call's is "
			    "%s: a step's tape is training or not",
			    where, n->training ? "true" : "false",
			    *training ? "true" : "false");
		}
		*training = n->op == PASCI_GSTEP_OP_MODEL ? (int) n->training
		                                          : *training;
	}
	return PASCO_OK;
}

/* The step-only nodes' attributes, each gradient's leader (the first
 * gradient of its target) and who uses each node. */
static int
parse_nodes(pasci_gstep *s)
{
	int      training = -1, rv;
	int64_t *first;
	s->nnodes = pasci_graph_num_nodes(s->graph);
	s->nodes  = pasci_calloc(s->nnodes + 1, sizeof(*s->nodes));
	first     = malloc((s->nnodes + 1) * sizeof(*first));
	if (s->nodes == NULL || first == NULL) {
		free(first);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nnodes; i++) {
		first[i] = -1;
	}
	rv = parse_nodes_with(s, first, &training);
	free(first);
	s->training = training == 1;
	return rv;
}

static int
parse_apply(
    pasci_gstep *s, const cJSON *o, pasci_gstep_apply *a, const char *where)
{
	static const char *keys[] = {
	    "optimizer", "grads", "vars", "global_step"};
	size_t nv = 0;
	int    rv;
	if (pasci_json_check_keys(o, keys, 4, where) != 0 ||
	    pasci_json_bool(o, "global_step", &a->global_step, where) != 0 ||
	    int_list(cJSON_GetObjectItemCaseSensitive(o, "grads"), 0,
	        (int64_t) s->nnodes, &a->grads, &a->n, where, "grads") != 0 ||
	    int_list(cJSON_GetObjectItemCaseSensitive(o, "vars"), 0, INT32_MAX,
	        &a->vars, &nv, where, "vars") != 0) {
		return PASCO_EINVAL;
	}
	if (nv != a->n || a->n == 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: grads and vars must be lists of one length (not 0); "
		    "got %zu and %zu",
		    where, a->n, nv);
	}
	if (a->global_step && s->global_step_arg < 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: global_step is true, and the step has no "
		    "global_step argument",
		    where);
	}
	if ((rv = pasci_opt_config_read(
	         cJSON_GetObjectItemCaseSensitive(o, "optimizer"), &a->opt)) !=
	    0) {
		char msg[512];
		snprintf(msg, sizeof(msg), "%s", pasco_model_last_error());
		return pasci_model_fail(rv, "%s: optimizer: %s", where, msg);
	}
	return PASCO_OK;
}

static int
parse_update(
    pasci_gstep *s, const cJSON *o, pasci_gstep_update *u, const char *where)
{
	static const char *keys[] = {"var", "op", "value"};
	const char        *op     = NULL;
	if (pasci_json_check_keys(o, keys, 3, where) != 0 ||
	    pasci_json_string(o, "op", &op, where) != 0 ||
	    int_field(o, "var", 0, INT32_MAX, &u->var, where) != 0 ||
	    int_field(o, "value", 0, (int64_t) s->nnodes, &u->value, where) !=
	        0) {
		return PASCO_EINVAL;
	}
	if (op == NULL || strcmp(op, "assign_add") != 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: op '%s' is not assign_add", where,
		    op != NULL ? op : "(missing)");
	}
	return PASCO_OK;
}

/* The applies and the updates, each list optional. */
static int
parse_effects(pasci_gstep *s, const cJSON *root)
{
	const cJSON *ap = cJSON_GetObjectItemCaseSensitive(root, "applies");
	const cJSON *up = cJSON_GetObjectItemCaseSensitive(root, "updates");
	const cJSON *it;
	char         where[192];
	size_t       i;
	if ((ap != NULL && !cJSON_IsArray(ap)) ||
	    (up != NULL && !cJSON_IsArray(up))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: applies and updates must be lists", s->name);
	}
	s->napplies = (size_t) cJSON_GetArraySize(ap);
	s->nupdates = (size_t) cJSON_GetArraySize(up);
	s->applies  = pasci_calloc(s->napplies + 1, sizeof(*s->applies));
	s->updates  = pasci_calloc(s->nupdates + 1, sizeof(*s->updates));
	if (s->applies == NULL || s->updates == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	i = 0;
	cJSON_ArrayForEach(it, ap)
	{
		snprintf(where, sizeof(where), "%s: applies[%zu]", s->name, i);
		if (parse_apply(s, it, &s->applies[i++], where) != 0) {
			return PASCO_EINVAL;
		}
	}
	i = 0;
	cJSON_ArrayForEach(it, up)
	{
		snprintf(where, sizeof(where), "%s: updates[%zu]", s->name, i);
		if (parse_update(s, it, &s->updates[i++], where) != 0) {
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

/* The graph's outputs (its reader checked them), for the step's checks
 * of what may take a sparse gradient. */
static int
parse_outputs(pasci_gstep *s, const cJSON *root)
{
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "graph");
	char         where[160];
	snprintf(where, sizeof(where), "%s: graph", s->name);
	return int_list(cJSON_GetObjectItemCaseSensitive(g, "outputs"), 0,
	    (int64_t) s->nnodes, &s->outputs, &s->noutputs, where, "outputs");
}

static void
gstep_free(pasci_gstep *s)
{
	if (s == NULL) {
		return;
	}
	for (size_t i = 0; s->applies != NULL && i < s->napplies; i++) {
		free(s->applies[i].grads);
		free(s->applies[i].vars);
	}
	free(s->applies);
	free(s->updates);
	free(s->nodes);
	free(s->outputs);
	free(s->args);
	pasci_graph_free(s->graph);
}

static int
gstep_parse_root(pasci_gstep *s, const cJSON *root)
{
	static const char *keys[] = {
	    "name", "args", "graph", "applies", "updates"};
	const char *name = NULL;
	if (pasci_json_check_keys(root, keys, 5, "the step") != 0 ||
	    pasci_json_string(root, "name", &name, "the step") != 0) {
		return PASCO_EINVAL;
	}
	snprintf(s->name, sizeof(s->name), "%s",
	    name != NULL ? name : "(unnamed step)");
	s->global_step_arg = -1;
	if (parse_args(s, cJSON_GetObjectItemCaseSensitive(root, "args")) !=
	        0 ||
	    pasci_graph_parse(cJSON_GetObjectItemCaseSensitive(root, "graph"),
	        PASCI_GRAPH_STEP, s->name, &s->graph) != 0 ||
	    parse_nodes(s) != 0 || parse_outputs(s, root) != 0 ||
	    parse_effects(s, root) != 0) {
		return pasco_model_last_error()[0] != 0 ? PASCO_EINVAL
		                                        : PASCO_ENOMEM;
	}
	return PASCO_OK;
}

/* A cache entry: the step first, so a held step finds its entry. */
typedef struct gcached {
	pasci_gstep     step;
	uint64_t        hash;
	size_t          len;
	char           *bytes;
	int             refs; /* under cache_mu: the list's and callers' */
	struct gcached *prev, *next;
} gcached;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
/* Protected by cache_mu: the list, most recently used first, and its
 * count. Each listed entry holds one ref of its own. */
static gcached *head, *tail;
static size_t   nentries;

static void
gcached_free(gcached *c)
{
	gstep_free(&c->step);
	free(c->bytes);
	free(c);
}

static void
unlink_locked(gcached *c)
{
	*(c->prev != NULL ? &c->prev->next : &head) = c->next;
	*(c->next != NULL ? &c->next->prev : &tail) = c->prev;
	c->prev = c->next = NULL;
	nentries--;
}

static void
push_front_locked(gcached *c)
{
	c->prev                               = NULL;
	c->next                               = head;
	*(head != NULL ? &head->prev : &tail) = c;
	head                                  = c;
	nentries++;
}

static gcached *
find_locked(uint64_t h, const void *bytes, size_t len)
{
	for (gcached *c = head; c != NULL; c = c->next) {
		if (c->hash == h && c->len == len &&
		    memcmp(c->bytes, bytes, len) == 0) {
			return c;
		}
	}
	return NULL;
}

/* Drops one ref of c under cache_mu; true when c is to be freed. */
static bool
unref_locked(gcached *c)
{
	return --c->refs == 0;
}

/* Parses bytes into a new entry (one ref: the caller's). */
static int
gcached_parse(uint64_t h, const void *bytes, size_t len, gcached **out)
{
	gcached *c    = pasci_calloc(1, sizeof(*c));
	char    *json = malloc(len + 1);
	cJSON   *root = NULL;
	int      rv   = PASCO_ENOMEM;
	*out          = NULL;
	if (c == NULL || json == NULL) {
		free(c);
		free(json);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	memcpy(json, bytes, len);
	json[len] = 0;
	c->bytes  = json;
	c->len    = len;
	c->hash   = h;
	c->refs   = 1;
	if ((root = cJSON_Parse(json)) == NULL) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "a traced step's JSON does not parse (near byte %zu)",
		    (size_t) (cJSON_GetErrorPtr() != NULL
		                  ? cJSON_GetErrorPtr() - json
		                  : 0));
	} else {
		rv = gstep_parse_root(&c->step, root);
	}
	cJSON_Delete(root);
	if (rv != 0) {
		gcached_free(c);
		return rv;
	}
	*out = c;
	return PASCO_OK;
}

int
pasci_gstep_get(const void *bytes, size_t len, const pasci_gstep **out)
{
	uint64_t h = pasco_hash64(bytes, len, 0);
	gcached *c, *kept, *drop = NULL;
	int      rv;
	*out = NULL;
	pthread_mutex_lock(&cache_mu);
	if ((c = find_locked(h, bytes, len)) != NULL) {
		unlink_locked(c);
		push_front_locked(c);
		c->refs++;
	}
	pthread_mutex_unlock(&cache_mu);
	if (c != NULL) {
		*out = &c->step;
		return PASCO_OK;
	}
	if ((rv = gcached_parse(h, bytes, len, &c)) != 0) {
		return rv;
	}
	pthread_mutex_lock(&cache_mu);
	if ((kept = find_locked(h, bytes, len)) != NULL) {
		kept->refs++; /* another call parsed it first: use that */
		drop = c;
		c    = kept;
	} else {
		c->refs++; /* the list's */
		push_front_locked(c);
		if (nentries > PASCI_GSTEP_CACHE_ENTRIES) {
			gcached *old = tail;
			unlink_locked(old);
			drop = unref_locked(old) ? old : NULL;
		}
	}
	pthread_mutex_unlock(&cache_mu);
	if (drop != NULL) {
		gcached_free(drop);
	}
	*out = &c->step;
	return PASCO_OK;
}

void
pasci_gstep_release(const pasci_gstep *s)
{
	gcached *c = (gcached *) s; /* the entry's first member */
	bool     last;
	if (c == NULL) {
		return;
	}
	pthread_mutex_lock(&cache_mu);
	last = unref_locked(c);
	pthread_mutex_unlock(&cache_mu);
	if (last) {
		gcached_free(c);
	}
}

void
pasci_gstep_cache_reset(void)
{
	gcached *drop = NULL;
	pthread_mutex_lock(&cache_mu);
	while (tail != NULL) {
		gcached *c = tail;
		unlink_locked(c);
		if (unref_locked(c)) {
			c->next = drop;
			drop    = c;
		}
	}
	pthread_mutex_unlock(&cache_mu);
	while (drop != NULL) {
		gcached *next = drop->next;
		gcached_free(drop);
		drop = next;
	}
}

bool
pasci_gstep_cache_holds(const void *bytes, size_t len)
{
	uint64_t h = pasco_hash64(bytes, len, 0);
	bool     held;
	pthread_mutex_lock(&cache_mu);
	held = find_locked(h, bytes, len) != NULL;
	pthread_mutex_unlock(&cache_mu);
	return held;
}
