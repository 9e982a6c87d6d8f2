/*
 * A model as data (include/pasco/model.h): its config as JSON and back,
 * in Keras's get_config spirit (class names, constructor options,
 * initializers with their seeds, inbound layers). The compile config is
 * written and read by model/compile.c. Stateless: any thread.
 */
#include "layer_desc.h"
#include "layers_impl.h"
#include "model_impl.h"
#include "names.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED_EXACT 9007199254740992.0 /* 2^53 */

static const char *const init_classes[] = {[PASCO_INIT_ZEROS] = "Zeros",
    [PASCO_INIT_ONES]                                         = "Ones",
    [PASCO_INIT_CONSTANT]                                     = "Constant",
    [PASCO_INIT_UNIFORM]          = "RandomUniform",
    [PASCO_INIT_NORMAL]           = "RandomNormal",
    [PASCO_INIT_TRUNCATED_NORMAL] = "TruncatedNormal",
    [PASCO_INIT_GLOROT_UNIFORM]   = "GlorotUniform",
    [PASCO_INIT_GLOROT_NORMAL]    = "GlorotNormal",
    [PASCO_INIT_HE_NORMAL]        = "HeNormal",
    [PASCO_INIT_HE_UNIFORM]       = "HeUniform",
    [PASCO_INIT_LECUN_NORMAL]     = "LecunNormal",
    [PASCO_INIT_LECUN_UNIFORM]    = "LecunUniform",
    [PASCO_INIT_VARIANCE_SCALING] = "VarianceScaling",
    [PASCO_INIT_ORTHOGONAL]       = "Orthogonal"};

/* VarianceScaling's modes and distributions by Keras's names. */
static const char *const init_modes[] = {[PASCO_FAN_IN] = "fan_in",
    [PASCO_FAN_OUT]                                     = "fan_out",
    [PASCO_FAN_AVG]                                     = "fan_avg"};
static const char *const init_dists[] = {
    [PASCO_DIST_TRUNCATED_NORMAL]   = "truncated_normal",
    [PASCO_DIST_UNTRUNCATED_NORMAL] = "untruncated_normal",
    [PASCO_DIST_UNIFORM]            = "uniform"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Writing. cJSON's adders return NULL without memory: checked once, at
 * the end, by printing (a partial tree prints, so every adder result is
 * checked through `ok`). */

static cJSON *
add_seed(cJSON *o, const char *key, uint64_t seed)
{
	char buf[24];
	if ((double) seed <= SEED_EXACT) {
		return cJSON_AddNumberToObject(o, key, (double) seed);
	}
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long) seed);
	return cJSON_AddStringToObject(o, key, buf);
}

cJSON *
pasci_json_class(cJSON *parent, const char *key, const char *cls)
{
	cJSON *o = cJSON_CreateObject();
	if (o == NULL || !cJSON_AddItemToObject(parent, key, o) ||
	    cJSON_AddStringToObject(o, "class_name", cls) == NULL) {
		return NULL;
	}
	return cJSON_AddObjectToObject(o, "config");
}

bool
pasci_json_write_init(
    cJSON *parent, const char *key, const pasco_initializer *in)
{
	const char *cls = (unsigned) in->kind < COUNT(init_classes)
	                      ? init_classes[in->kind]
	                      : NULL;
	cJSON *c  = cls != NULL ? pasci_json_class(parent, key, cls) : NULL;
	bool   ok = c != NULL;
	switch (in->kind) {
	case PASCO_INIT_CONSTANT:
		ok = ok && cJSON_AddNumberToObject(c, "value", in->value);
		break;
	case PASCO_INIT_UNIFORM:
		ok = ok && cJSON_AddNumberToObject(c, "minval", in->minval) &&
		     cJSON_AddNumberToObject(c, "maxval", in->maxval);
		break;
	case PASCO_INIT_NORMAL:
	case PASCO_INIT_TRUNCATED_NORMAL:
		ok = ok && cJSON_AddNumberToObject(c, "mean", in->mean) &&
		     cJSON_AddNumberToObject(c, "stddev", in->stddev);
		break;
	case PASCO_INIT_VARIANCE_SCALING:
		ok =
		    ok && pasco_initializer_is_valid(in) &&
		    cJSON_AddNumberToObject(c, "scale", in->scale) &&
		    cJSON_AddStringToObject(c, "mode", init_modes[in->mode]) &&
		    cJSON_AddStringToObject(
		        c, "distribution", init_dists[in->distribution]);
		break;
	case PASCO_INIT_ORTHOGONAL:
		ok = ok && cJSON_AddNumberToObject(c, "gain", in->scale);
		break;
	default:
		break;
	}
	if (ok && in->kind >= PASCO_INIT_UNIFORM) {
		ok = add_seed(c, "seed", in->seed) != NULL;
	}
	return ok;
}

static bool
write_layer_config(cJSON *c, const pasco_layer *l)
{
	const pasci_layer_desc *d = pasci_layer_desc_of(l->kind);
	return c != NULL && d != NULL &&
	       cJSON_AddStringToObject(c, "name", l->name) != NULL &&
	       d->write(c, l);
}

static bool
write_layer(cJSON *layers, const pasco_model *m, size_t i)
{
	const pasco_layer *l  = &m->layers[i];
	cJSON             *o  = cJSON_CreateObject(), *in;
	bool               ok = o != NULL && cJSON_AddItemToArray(layers, o) &&
	          cJSON_AddStringToObject(o, "class_name",
	              pasci_layer_desc_of(l->kind)->class_name) != NULL &&
	          write_layer_config(cJSON_AddObjectToObject(o, "config"), l);
	if (!ok || !m->functional) {
		return ok;
	}
	if ((in = cJSON_AddArrayToObject(o, "inbound_nodes")) == NULL) {
		return false;
	}
	for (size_t j = 0; ok && j < l->ninputs; j++) {
		int32_t     r    = l->inputs[j];
		const char *name = r >= 0 ? m->layers[r].name
		                          : m->inputs[-1 - (int64_t) r].name;
		ok = cJSON_AddItemToArray(in, cJSON_CreateString(name));
	}
	return ok;
}

static bool
write_model(cJSON *root, const pasco_model *m)
{
	cJSON *c, *ins, *layers;
	bool   ok = cJSON_AddStringToObject(root, "class_name",
                      m->functional ? "Functional" : "Sequential") != NULL &&
	          (c = cJSON_AddObjectToObject(root, "config")) != NULL &&
	          cJSON_AddStringToObject(c, "name", m->name) != NULL &&
	          add_seed(c, "seed", m->seed) != NULL &&
	          (ins = cJSON_AddArrayToObject(c, "inputs")) != NULL;
	for (size_t k = 0; ok && k < m->ninputs; k++) {
		cJSON *o = cJSON_CreateObject();
		ok       = o != NULL && cJSON_AddItemToArray(ins, o) &&
		     cJSON_AddStringToObject(o, "name", m->inputs[k].name) &&
		     cJSON_AddNumberToObject(
		         o, "width", (double) m->inputs[k].width) &&
		     cJSON_AddBoolToObject(o, "ids", m->inputs[k].ids) &&
		     (!m->inputs[k].strings ||
		         cJSON_AddStringToObject(o, "dtype", "string"));
	}
	ok = ok && (layers = cJSON_AddArrayToObject(c, "layers")) != NULL;
	for (size_t i = 0; ok && i < m->nlayers; i++) {
		ok = write_layer(layers, m, i);
	}
	return ok && pasci_compile_to_json(root, m);
}

int
pasco_model_to_json(const pasco_model *m, char **out)
{
	cJSON *root = cJSON_CreateObject();
	*out        = NULL;
	if (root != NULL && write_model(root, m)) {
		*out = cJSON_PrintUnformatted(root);
	}
	cJSON_Delete(root);
	return *out != NULL ? PASCO_OK
	                    : pasci_model_fail(PASCO_ENOMEM, "out of memory");
}

/* Keras's defaults of an initializer class. */
static pasco_initializer
init_defaults(pasco_init_kind kind)
{
	switch (kind) {
	case PASCO_INIT_ONES:
		return pasco_init_ones();
	case PASCO_INIT_CONSTANT:
		return pasco_init_constant(0);
	case PASCO_INIT_UNIFORM:
		return pasco_init_uniform(-0.05, 0.05, 0);
	case PASCO_INIT_NORMAL:
		return pasco_init_normal(0, 0.05, 0);
	case PASCO_INIT_TRUNCATED_NORMAL:
		return pasco_init_truncated_normal(0, 0.05, 0);
	case PASCO_INIT_ZEROS:
		return pasco_init_zeros();
	case PASCO_INIT_VARIANCE_SCALING:
		return pasco_init_variance_scaling(
		    1, PASCO_FAN_IN, PASCO_DIST_TRUNCATED_NORMAL, 0);
	case PASCO_INIT_ORTHOGONAL:
		return pasco_init_orthogonal(1, 0);
	default: /* Glorot, He, Lecun: a seed only */
		return (pasco_initializer){.kind = kind};
	}
}

/* A name among names[0..n), by Keras's name in c[key] (absent: *v
 * stays). */
static int
read_named(const cJSON *c, const char *key, const char *const *names, size_t n,
    int *v, const char *at)
{
	const char *s = NULL;
	if (pasci_json_string(c, key, &s, at) != 0) {
		return PASCO_EINVAL;
	}
	if (s != NULL && strcmp(key, "distribution") == 0 &&
	    strcmp(s, "normal") == 0) {
		s = "truncated_normal"; /* Keras's alias */
	}
	for (size_t k = 0; s != NULL && k < n; k++) {
		if (strcmp(s, names[k]) == 0) {
			*v = (int) k;
			return PASCO_OK;
		}
	}
	return s == NULL ? PASCO_OK
	                 : pasci_model_fail(PASCO_EINVAL,
	                       "%s: %s '%s' is none of %s, %s, %s", at, key, s,
	                       names[0], names[1], names[2]);
}

/* Keras's input_axes and output_axes: null (the fans of the shape) is
 * the only value taken. */
static int
axes_set(const cJSON *c, const char *at)
{
	const cJSON *i = cJSON_GetObjectItemCaseSensitive(c, "input_axes");
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(c, "output_axes");
	if ((i != NULL && !cJSON_IsNull(i)) ||
	    (o != NULL && !cJSON_IsNull(o))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: input_axes and output_axes: only null (the fans of "
		    "the shape) is taken",
		    at);
	}
	return PASCO_OK;
}

/* VarianceScaling's and Orthogonal's fields into in. */
static int
read_init_scaling(const cJSON *c, pasco_initializer *in, const char *at)
{
	int mode = (int) in->mode, dist = (int) in->distribution;
	if (pasci_json_number(c, "scale", &in->scale, false, 0, at) != 0 ||
	    pasci_json_number(c, "gain", &in->scale, false, -HUGE_VAL, at) !=
	        0 ||
	    read_named(c, "mode", init_modes, 3, &mode, at) != 0 ||
	    read_named(c, "distribution", init_dists, 3, &dist, at) != 0) {
		return PASCO_EINVAL;
	}
	in->mode         = (pasco_init_mode) mode;
	in->distribution = (pasco_init_distribution) dist;
	if (in->kind == PASCO_INIT_VARIANCE_SCALING && !(in->scale > 0)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: VarianceScaling: scale must be > 0, got %g", at,
		    in->scale);
	}
	return PASCO_OK;
}

int
pasci_json_read_init(const cJSON *parent, const char *key,
    pasco_initializer *in, const char *where)
{
	static const char *const keys[] = {"value", "minval", "maxval", "mean",
	    "stddev", "seed", "scale", "mode", "distribution", "gain",
	    "input_axes", "output_axes"};
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, key), *c;
	char         at[160];
	int          kind;
	if (o == NULL) {
		return PASCO_OK;
	}
	pasci_fmt(at, sizeof(at), "%s: %s", where, key);
	if (pasci_json_read_class(
	        o, init_classes, COUNT(init_classes), &kind, &c, at) != 0 ||
	    pasci_json_check_keys(c, keys, COUNT(keys), at) != 0) {
		return PASCO_EINVAL;
	}
	*in = init_defaults((pasco_init_kind) kind);
	return pasci_json_number(
	           c, "value", &in->value, false, -HUGE_VAL, at) != 0 ||
	               pasci_json_number(
	                   c, "minval", &in->minval, false, -HUGE_VAL, at) ||
	               pasci_json_number(
	                   c, "maxval", &in->maxval, false, -HUGE_VAL, at) ||
	               pasci_json_number(
	                   c, "mean", &in->mean, false, -HUGE_VAL, at) ||
	               pasci_json_number(
	                   c, "stddev", &in->stddev, false, 0, at) ||
	               pasci_json_seed(c, &in->seed, at) ||
	               read_init_scaling(c, in, at) || axes_set(c, at)
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

int
pasci_json_read_act(const cJSON *c, pasco_act *a, const char *where)
{
	const char *name = NULL;
	if (pasci_json_string(c, "activation", &name, where) != 0) {
		return PASCO_EINVAL;
	}
	if (name == NULL) {
		return PASCO_OK;
	}
	for (int k = PASCO_ACT_LINEAR; k <= PASCO_ACT_SOFTMAX; k++) {
		if (strcmp(name, pasco_act_name((pasco_act) k)) == 0) {
			*a = (pasco_act) k;
			return PASCO_OK;
		}
	}
	return pasci_model_fail(PASCO_EINVAL,
	    "%s: unknown activation '%s' (linear, relu, sigmoid, tanh, "
	    "softmax)",
	    where, name);
}

int
pasci_json_read_axis(const cJSON *c, const char *where)
{
	double axis = -1;
	if (pasci_json_number(c, "axis", &axis, true, -1, where) != 0) {
		return PASCO_EINVAL;
	}
	if (axis != -1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: axis must be -1 (the last axis)", where);
	}
	return PASCO_OK;
}

/* The options of a layer of kind d from its config c. */
static int
read_options(const cJSON *c, const pasci_layer_desc *d, pasco_layer *l,
    pasco_partitioner *part, const char *at)
{
	size_t nkeys = 0;
	while (nkeys < PASCI_LAYER_MAX_KEYS && d->keys[nkeys] != NULL) {
		nkeys++;
	}
	if (pasci_json_check_keys(c, d->keys, nkeys, at) != 0 ||
	    d->read(c, l, part, at) != 0) {
		return PASCO_EINVAL;
	}
	if (part->kind != 0) {
		l->partitioner = part;
	}
	return PASCO_OK;
}

/* Layer i's entry: class, config, and (functional) what it is called on,
 * by name, among the inputs and the layers before it (names: each name
 * to its last layer, else its last input). */
static int
read_layer(const cJSON *o, size_t i, pasco_layer *layers,
    pasco_partitioner *part, const pasci_names *names, bool functional)
{
	static const char *const keys[] = {
	    "class_name", "config", "inbound_nodes"};
	pasco_layer *l   = &layers[i];
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(o, "class_name");
	const cJSON *c   = cJSON_GetObjectItemCaseSensitive(o, "config");
	const cJSON *inbound =
	    cJSON_GetObjectItemCaseSensitive(o, "inbound_nodes");
	const cJSON            *it;
	const char             *name = "";
	char                    at[160];
	char                    classes[160];
	const pasci_layer_desc *d;

	snprintf(at, sizeof(at), "layers[%zu]", i);
	if (pasci_json_check_keys(o, keys, functional ? 3 : 2, at) != 0) {
		return PASCO_EINVAL;
	}
	d = cJSON_IsString(cls) ? pasci_layer_desc_named(cls->valuestring)
	                        : NULL;
	if (d == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: unknown class_name '%s' (%s)", at,
		    cJSON_IsString(cls) ? cls->valuestring : "(none)",
		    pasci_layer_class_list(classes, sizeof(classes)));
	}
	*l = pasci_layer_defaults(d->kind);
	if (c != NULL && pasci_json_string(c, "name", &name, at) != 0) {
		return PASCO_EINVAL;
	}
	if (strlen(name) >= PASCO_LAYER_NAME_MAX) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: name is longer than %d bytes", at,
		    PASCO_LAYER_NAME_MAX - 1);
	}
	snprintf(l->name, sizeof(l->name), "%s", name);
	snprintf(at, sizeof(at), "layers[%zu] (%s)", i, name[0] ? name : "?");
	if (c != NULL && read_options(c, d, l, part, at) != 0) {
		return PASCO_EINVAL;
	}
	if (!functional) {
		return PASCO_OK;
	}
	if (!cJSON_IsArray(inbound) || cJSON_GetArraySize(inbound) < 1 ||
	    cJSON_GetArraySize(inbound) > PASCO_LAYER_MAX_INPUTS) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: inbound_nodes must list 1 to %d layer or input names",
		    at, PASCO_LAYER_MAX_INPUTS);
	}
	cJSON_ArrayForEach(it, inbound)
	{
		int32_t r;
		if (!cJSON_IsString(it) ||
		    !pasci_names_get(names, it->valuestring, &r)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: inbound node '%s' is no input and no earlier "
			    "layer",
			    at,
			    cJSON_IsString(it) ? it->valuestring
			                       : "(not a name)");
		}
		l->inputs[l->ninputs++] = r;
	}
	return PASCO_OK;
}

static int
read_inputs(const cJSON *c, pasco_model_input **out, size_t *n)
{
	static const char *const keys[] = {"name", "width", "ids", "dtype"};
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(c, "inputs"), *it;
	size_t       k   = 0;
	*n               = (size_t) cJSON_GetArraySize(arr);
	if (!cJSON_IsArray(arr) || *n == 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "config: inputs must be a non-empty list of {name, width, "
		    "ids}");
	}
	if (*n > PASCO_MODEL_MAX_LAYERS) {
		return pasci_model_fail(PASCO_EINVAL,
		    "config: %zu inputs; a model has at most %d "
		    "(PASCO_MODEL_MAX_LAYERS)",
		    *n, PASCO_MODEL_MAX_LAYERS);
	}
	if ((*out = pasci_calloc(*n, sizeof(**out))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(it, arr)
	{
		char    at[48];
		int64_t width = 0;
		snprintf(at, sizeof(at), "inputs[%zu]", k);
		(*out)[k].name = "";
		if (pasci_json_check_keys(it, keys, 4, at) != 0 ||
		    pasci_json_string(it, "name", &(*out)[k].name, at) != 0 ||
		    pasci_json_size(
		        it, "width", &width, 1, PASCI_MAX_WIDTH, at) != 0 ||
		    pasci_json_bool(it, "ids", &(*out)[k].ids, at) != 0) {
			return PASCO_EINVAL;
		}
		if (width < 1 || (*out)[k].name[0] == 0) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: needs a name and a positive width", at);
		}
		(*out)[k++].width = width;
	}
	return PASCO_OK;
}

/* The inputs of config c whose "dtype" is "string" marked so in m
 * (pasco_model_set_string_input); another dtype is Keras's name of a
 * number type. */
static int
read_string_inputs(const cJSON *c, pasco_model *m)
{
	static const char *const dtypes[] = {
	    "float32", "float64", "int32", "int64"};
	const cJSON *it;
	size_t       k = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(c, "inputs"))
	{
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(it, "dtype");
		bool         know = false;
		for (size_t j = 0; cJSON_IsString(d) && j < 4; j++) {
			know = know || strcmp(d->valuestring, dtypes[j]) == 0;
		}
		if (d != NULL && !know &&
		    (!cJSON_IsString(d) || strcmp(d->valuestring, "string"))) {
			return pasci_model_fail(PASCO_EINVAL,
			    "inputs[%zu]: dtype must be \"string\", "
			    "\"float32\", \"float64\", \"int32\" or "
			    "\"int64\"",
			    k);
		}
		if (d != NULL && !know &&
		    pasco_model_set_string_input(m, k) != 0) {
			return pasci_model_fail(PASCO_EINVAL,
			    "inputs[%zu]: dtype \"string\" needs ids true (a "
			    "string input holds fingerprints)",
			    k);
		}
		k++;
	}
	return PASCO_OK;
}

/* The model of config c (class Sequential or Functional). */
static int
read_model(const cJSON *c, bool functional, pasco_model **out)
{
	static const char *const keys[] = {"name", "seed", "inputs", "layers"};
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(c, "layers"), *it;
	pasco_model_input *ins    = NULL;
	pasco_layer       *layers = NULL;
	pasco_partitioner *parts  = NULL;
	pasci_names        names  = {0};
	size_t      nins = 0, n = (size_t) cJSON_GetArraySize(arr), i = 0;
	uint64_t    seed = 0;
	const char *name = NULL;
	int         rv;

	if ((rv = pasci_json_check_keys(c, keys, 4, "config")) != 0 ||
	    (rv = pasci_json_seed(c, &seed, "config")) != 0 ||
	    (rv = pasci_json_string(c, "name", &name, "config")) != 0 ||
	    (rv = read_inputs(c, &ins, &nins)) != 0) {
		goto done;
	}
	if (!cJSON_IsArray(arr) || n == 0) {
		rv = pasci_model_fail(
		    PASCO_EINVAL, "config: layers must be a non-empty list");
		goto done;
	}
	if (n > PASCO_MODEL_MAX_LAYERS) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "config: %zu layers; a model has at most %d "
		    "(PASCO_MODEL_MAX_LAYERS)",
		    n, PASCO_MODEL_MAX_LAYERS);
		goto done;
	}
	layers = pasci_calloc(n, sizeof(*layers));
	parts  = pasci_calloc(n, sizeof(*parts));
	if (layers == NULL || parts == NULL) {
		rv = pasci_model_fail(PASCO_ENOMEM, "out of memory");
		goto done;
	}
	if ((rv = pasci_names_init(&names, nins + n)) != 0) {
		goto done;
	}
	for (size_t k = 0; k < nins; k++) {
		pasci_names_put(
		    &names, ins[k].name, PASCO_MODEL_INPUT(k), NULL);
	}
	cJSON_ArrayForEach(it, arr)
	{
		if ((rv = read_layer(
		         it, i, layers, &parts[i], &names, functional)) != 0) {
			goto done;
		}
		pasci_names_put(&names, layers[i].name, (int32_t) i, NULL);
		i++;
	}
	if (!functional && nins != 1) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "config: a Sequential model has one input, got %zu", nins);
		goto done;
	}
	rv = functional
	         ? pasco_model_functional(out, nins, ins, n, layers, seed)
	         : pasco_model_sequential(out, ins[0].width, n, layers, seed);
	if (rv == 0 && !functional) {
		if ((*out)->inputs[0].ids != ins[0].ids) {
			pasco_model_free(*out);
			*out = NULL;
			rv   = pasci_model_fail(PASCO_EINVAL,
			      "inputs[0]: ids must be %s: the first layer is "
			        "%san "
			        "Embedding",
                            ins[0].ids ? "false" : "true",
                            ins[0].ids ? "not " : "");
			goto done;
		}
		snprintf((*out)->inputs[0].name,
		    sizeof((*out)->inputs[0].name), "%s", ins[0].name);
	}
	if (rv == 0 && (rv = read_string_inputs(c, *out)) != 0) {
		pasco_model_free(*out);
		*out = NULL;
	}
	if (rv == 0 && name != NULL &&
	    (rv = pasco_model_set_name(*out, name)) != 0) {
		pasco_model_free(*out); /* *out NULL on failure */
		*out = NULL;
	}
done:
	pasci_names_fini(&names);
	for (size_t k = 0; layers != NULL && k < n; k++) {
		pasco_layer_release(&layers[k]); /* the model holds its own */
	}
	free(parts);
	free(layers);
	free(ins);
	return rv;
}

int
pasco_model_from_json(const char *json, pasco_model **out)
{
	static const char *const keys[] = {
	    "class_name", "config", "compile_config"};
	cJSON       *root;
	const cJSON *cls;
	int          rv;

	*out = NULL;
	if (json == NULL || (root = cJSON_Parse(json)) == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "model config: not JSON (near '%.20s')",
		    json != NULL && cJSON_GetErrorPtr() != NULL
		        ? cJSON_GetErrorPtr()
		        : "");
	}
	cls = cJSON_GetObjectItemCaseSensitive(root, "class_name");
	if ((rv = pasci_json_check_keys(root, keys, 3, "model config")) != 0) {
		goto done;
	}
	if (!cJSON_IsString(cls) ||
	    (strcmp(cls->valuestring, "Sequential") != 0 &&
	        strcmp(cls->valuestring, "Functional") != 0)) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "model config: class_name must be Sequential or "
		    "Functional");
		goto done;
	}
	rv = read_model(cJSON_GetObjectItemCaseSensitive(root, "config"),
	    cls->valuestring[0] == 'F', out);
	if (rv == 0 && (rv = pasci_compile_from_json(root, *out)) != 0) {
		pasco_model_free(*out);
		*out = NULL;
	}
done:
	cJSON_Delete(root);
	return rv;
}
