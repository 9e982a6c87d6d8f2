/* Layer descriptions with Keras's defaults and names, the Sequential
 * model's shapes and variables, and binding it to variable handles. */
#include "layer_desc.h"
#include "layers_impl.h"
#include "model_impl.h"
#include "names.h"
#include "prep.h"
#include "util.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static _Thread_local char last_error[512];

int
pasci_model_fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	pasci_error_note(last_error);
	return err;
}

const char *
pasco_model_last_error(void)
{
	return last_error;
}

const char *
pasci_shape_str(int32_t rank, const int64_t *shape, char *buf, size_t len)
{
	size_t at = 0;
	at += (size_t) snprintf(buf, len, "[");
	for (int32_t i = 0; i < rank && at < len; i++) {
		at += (size_t) snprintf(buf + at, len - at, "%s%lld",
		    i > 0 ? ", " : "", (long long) shape[i]);
	}
	if (at < len) {
		snprintf(buf + at, len - at, "]");
	}
	return buf;
}

/* Keras's automatic names: one counter per kind, for the program. */
static pthread_mutex_t names_mu = PTHREAD_MUTEX_INITIALIZER;
static int64_t         name_count[PASCI_LAYER_KINDS];

static void
auto_name(pasco_layer *l)
{
	const pasci_layer_desc *d = pasci_layer_desc_of(l->kind);
	int64_t                 n;
	if (d == NULL) {
		return;
	}
	pthread_mutex_lock(&names_mu);
	n = name_count[l->kind]++;
	pthread_mutex_unlock(&names_mu);
	if (n == 0) {
		snprintf(l->name, sizeof(l->name), "%s", d->prefix);
	} else {
		snprintf(l->name, sizeof(l->name), "%s_%lld", d->prefix,
		    (long long) n);
	}
}

void
pasco_layer_reset_names(void)
{
	pthread_mutex_lock(&names_mu);
	memset(name_count, 0, sizeof(name_count));
	pthread_mutex_unlock(&names_mu);
}

const char *
pasco_act_name(pasco_act a)
{
	static const char *names[] = {
	    "linear", "relu", "sigmoid", "tanh", "softmax"};
	return (unsigned) a <= PASCO_ACT_SOFTMAX ? names[a] : NULL;
}

pasco_layer
pasci_layer_defaults(pasco_layer_kind kind)
{
	const pasci_layer_desc *d = pasci_layer_desc_of(kind);
	pasco_layer             l = {.kind = kind};
	if (d != NULL && d->defaults != NULL) {
		d->defaults(&l);
	}
	return l;
}

pasco_layer
pasci_layer_named(pasco_layer l)
{
	auto_name(&l);
	return l;
}

pasco_layer
pasco_layer_on(pasco_layer l, size_t n, const int32_t *inputs)
{
	l.ninputs = n;
	for (size_t j = 0; j < n && j < PASCO_LAYER_MAX_INPUTS; j++) {
		l.inputs[j] = inputs[j];
	}
	return l;
}

const char *
pasci_eshape_str(const pasci_eshape *s, char *buf, size_t len)
{
	size_t at = (size_t) snprintf(buf, len, "(");
	for (int32_t i = 0; i < s->rank && at < len; i++) {
		at += (size_t) snprintf(buf + at, len - at, "%s%lld",
		    i > 0 ? ", " : "", (long long) s->dim[i]);
	}
	if (at < len) {
		snprintf(buf + at, len - at, s->rank == 1 ? ",)" : ")");
	}
	return buf;
}

int64_t
pasci_eshape_count(const pasci_eshape *s)
{
	int64_t n = 1;
	for (int32_t i = 0; i < s->rank; i++) {
		if (s->dim[i] < 0 ||
		    __builtin_mul_overflow(n, s->dim[i], &n)) {
			return INT64_MAX;
		}
	}
	return n;
}

pasci_eshape
pasci_layer_in_shape(const pasco_model *m, size_t i, size_t j)
{
	int32_t r = m->layers[i].inputs[j];
	return r >= 0 ? m->out_shape[r]
	              : (pasci_eshape){1, {m->inputs[-1 - (int64_t) r].width}};
}

/* Checks l's options against its inputs' widths and per-example shapes;
 * sets *out and *shape. */
static int
check_layer(const pasco_layer *l, const int64_t *widths,
    const pasci_eshape *shapes, int64_t *out, pasci_eshape *shape)
{
	const pasci_layer_desc *d = pasci_layer_desc_of(l->kind);
	int                     rv;
	*out   = widths[0];
	*shape = shapes[0];
	if (d == NULL) {
		return pasci_model_fail(PASCO_EINVAL, "%s: unknown kind %d",
		    l->name, (int) l->kind);
	}
	for (size_t j = 0;
	     d->shape == NULL && !d->keeps_shape && j < l->ninputs; j++) {
		if (shapes[j].rank != 1) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: a %s takes [batch, width] inputs; input %zu "
			    "is %s per example (put a Flatten or a "
			    "GlobalAveragePooling1D before it)",
			    l->name, d->class_name, j,
			    PASCI_ESHAPE(&shapes[j]));
		}
	}
	if ((rv = d->check(l, widths, out)) != 0 ||
	    (rv = pasci_layer_check_activity(l)) != 0) {
		return rv;
	}
	if (d->shape != NULL) {
		if ((rv = d->shape(l, shapes, shape)) != 0) {
			return rv;
		}
		*out = pasci_eshape_count(shape);
		if (*out > PASCI_ESHAPE_MAX_COUNT) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: its output would be %s per example; at most "
			    "2^31 values",
			    l->name, PASCI_ESHAPE(shape));
		}
	} else if (!d->keeps_shape) {
		*shape = (pasci_eshape){1, {*out}};
	}
	return PASCO_OK;
}

void
pasci_model_add_var(pasco_model *m, size_t layer, const char *what,
    int32_t rank, int64_t d0, int64_t d1, pasco_initializer init)
{
	pasci_model_add_var_shape(
	    m, layer, what, rank, (const int64_t[]){d0, d1}, init);
}

void
pasci_model_add_var_shape(pasco_model *m, size_t layer, const char *what,
    int32_t rank, const int64_t *shape, pasco_initializer init)
{
	pasci_model_var *v = &m->vars[m->nvars];
	/* m->vars holds each layer's max_vars */
	PASCO_ASSERT(m->nvars < m->capvars && rank <= PASCO_MAX_RANK);
	snprintf(
	    v->name, sizeof(v->name), "%s/%s", m->layers[layer].name, what);
	v->rank = rank;
	memcpy(v->shape, shape, (size_t) rank * sizeof(*shape));
	if (init.seed == 0 && init.kind != PASCO_INIT_ZEROS &&
	    init.kind != PASCO_INIT_ONES && init.kind != PASCO_INIT_CONSTANT) {
		init.seed = m->seed * 1000 + m->nvars + 1;
	}
	v->init  = init;
	v->layer = layer;
	m->nvars++;
}

/* The most elements of a variable read whole each step (2^31: 8 GiB of
 * f32), and of an embedding table, read by rows (2^40): a config's
 * Dense(9e15) is refused before anything is allocated or sized in bytes. */
#define MAX_DENSE_ELEMENTS ((int64_t) 1 << 31)
#define MAX_TABLE_ELEMENTS ((int64_t) 1 << 40)

/* Layer i's output width and the element counts of its variables
 * within their bounds. */
static int
check_sizes(const pasco_model *m, size_t i)
{
	const pasco_layer *l     = &m->layers[i];
	bool               table = pasci_layer_desc_of(l->kind)->ids;
	int64_t most = table ? MAX_TABLE_ELEMENTS : MAX_DENSE_ELEMENTS;
	if (m->out_width[i] > MAX_DENSE_ELEMENTS) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: its output is %lld wide; the most is 2^31", l->name,
		    (long long) m->out_width[i]);
	}
	for (size_t k = m->first_var[i]; k < m->nvars; k++) {
		const pasci_model_var *v = &m->vars[k];
		int64_t                n = 1;
		char                   shape[96];
		size_t                 at = 0;
		for (int32_t d = 0; d < v->rank; d++) {
			at += (size_t) snprintf(shape + at, sizeof(shape) - at,
			    "%s%lld", d > 0 ? ", " : "",
			    (long long) v->shape[d]);
			at = at < sizeof(shape) ? at : sizeof(shape) - 1;
			if (v->shape[d] > 0) {
				n = v->shape[d] > most / n ? most + 1
				                           : n * v->shape[d];
			}
		}
		if (n > most) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: its variable '%s' of shape [%s] has more "
			    "elements than the most a%s may have (2^%d)",
			    l->name, v->name, shape,
			    table ? "n embedding table"
			          : " variable read whole each step",
			    table ? 40 : 31);
		}
	}
	return PASCO_OK;
}

/* Resolves layer i's inputs (ninputs 0: the previous layer's output, or
 * input 0) and checks them: earlier layers or model inputs, ids for an
 * Embedding only. widths[j] gets input j's width. */
static int
resolve_inputs(pasco_model *m, size_t i, int64_t *widths, pasci_eshape *shapes)
{
	/* no kind's: checked as one input of features, then refused by
	 * check_layer */
	static const pasci_layer_desc none = {.min_inputs = 1};
	pasco_layer                  *l    = &m->layers[i];
	const pasci_layer_desc       *d    = pasci_layer_desc_of(l->kind);
	size_t                        nids = 0, nprep = 0;
	d = d != NULL ? d : &none;
	if (l->ninputs == 0) {
		l->ninputs   = 1;
		l->inputs[0] = i == 0 ? PASCO_MODEL_INPUT(0) : (int32_t) i - 1;
	}
	if (l->ninputs > PASCO_LAYER_MAX_INPUTS) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %zu inputs; at most %d", l->name, l->ninputs,
		    PASCO_LAYER_MAX_INPUTS);
	}
	for (size_t j = 0; j < l->ninputs; j++) {
		int32_t r = l->inputs[j];
		size_t  k = (size_t) (-1 - (int64_t) r);
		if (r >= 0 && (size_t) r >= i) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: input %zu is layer %d, not an earlier layer",
			    l->name, j, (int) r);
		}
		if (r < 0 && k >= m->ninputs) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: input %zu is model input %zu; the model has "
			    "%zu",
			    l->name, j, k, m->ninputs);
		}
		widths[j] = r >= 0 ? m->out_width[r] : m->inputs[k].width;
		shapes[j] =
		    r >= 0 ? m->out_shape[r] : (pasci_eshape){1, {widths[j]}};
		nids += r < 0 && m->inputs[k].ids;
		nprep += r >= 0 && pasci_prep_gives_ids(m, (size_t) r);
	}
	if (d->prep != NULL) { /* model/prep.c */
		return pasci_prep_resolve(m, i);
	}
	if (d->ids && (l->ninputs != 1 || nids + nprep != 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: an %s is called on one model input of ids", l->name,
		    d->class_name);
	}
	if (d->any_inputs) {
		return l->ninputs >= 1 ? PASCO_OK
		                       : pasci_model_fail(PASCO_EINVAL,
		                             "%s: takes 1 to %d inputs",
		                             l->name, PASCO_LAYER_MAX_INPUTS);
	}
	if (!d->ids && nids > 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: called on ids; only an Embedding takes ids", l->name);
	}
	if (d->min_inputs > 1 && l->ninputs < (size_t) d->min_inputs) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a %s needs %d or more inputs, got %zu", l->name,
		    d->class_name, d->min_inputs, l->ninputs);
	}
	if (d->min_inputs <= 1 && l->ninputs != 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: takes one input, got %zu", l->name, l->ninputs);
	}
	return PASCO_OK;
}

/* Layer i: its variables after checking its name (not one of an earlier
 * layer's, in names), inputs and options. */
static int
build_layer(pasco_model *m, size_t i, pasci_names *names)
{
	int64_t      widths[PASCO_LAYER_MAX_INPUTS];
	pasci_eshape shapes[PASCO_LAYER_MAX_INPUTS];
	pasco_layer *l = &m->layers[i];
	int32_t      j;
	int          rv;
	if (l->name[0] == 0) {
		auto_name(l);
	}
	if (pasci_names_put(names, l->name, (int32_t) i, &j)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "layers %d and %zu are both named '%s'", (int) j, i,
		    l->name);
	}
	m->first_var[i] = m->nvars;
	if ((rv = resolve_inputs(m, i, widths, shapes)) != 0 ||
	    (rv = check_layer(l, widths, shapes, &m->out_width[i],
	         &m->out_shape[i])) != 0) {
		return rv;
	}
	if (pasci_layer_desc_of(l->kind)->variables != NULL) {
		pasci_layer_desc_of(l->kind)->variables(m, i, widths);
	}
	return check_sizes(m, i);
}

static int
build(pasco_model *m)
{
	pasci_names names;
	int         rv = pasci_names_init(&names, m->nlayers);
	for (size_t i = 0; rv == 0 && i < m->nlayers; i++) {
		rv = build_layer(m, i, &names);
	}
	pasci_names_fini(&names);
	return rv;
}

/* The most variables layers[0..n) add (each kind's max_vars). */
static size_t
max_vars(size_t n, const pasco_layer *layers)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const pasci_layer_desc *d =
		    pasci_layer_desc_of(layers[i].kind);
		total += d != NULL && d->max_vars != NULL
		             ? d->max_vars(&layers[i])
		             : PASCI_LAYER_MAX_VARS;
	}
	return total + 1;
}

void
pasco_layer_release(pasco_layer *l)
{
	const pasci_layer_desc *d =
	    l != NULL ? pasci_layer_desc_of(l->kind) : NULL;
	if (d != NULL && d->release != NULL) {
		d->release(l);
	}
}

static int
model_new(pasco_model **out, size_t ninputs, const pasco_model_input *inputs,
    size_t n, const pasco_layer *layers, uint64_t seed)
{
	pasco_model *m;
	int          rv;

	*out = NULL;
	if (n == 0 || layers == NULL || ninputs == 0 || inputs == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "a model needs inputs and layers");
	}
	if (n > PASCO_MODEL_MAX_LAYERS || ninputs > PASCO_MODEL_MAX_LAYERS) {
		return pasci_model_fail(PASCO_EINVAL,
		    "a model of %zu layers and %zu inputs: at most %d of each "
		    "(PASCO_MODEL_MAX_LAYERS)",
		    n, ninputs, PASCO_MODEL_MAX_LAYERS);
	}
	for (size_t k = 0; k < ninputs; k++) {
		if (inputs[k].width < 1) {
			return pasci_model_fail(PASCO_EINVAL,
			    "input %zu ('%s'): the width must be positive, "
			    "got %lld",
			    k, inputs[k].name != NULL ? inputs[k].name : "",
			    (long long) inputs[k].width);
		}
	}
	m = pasci_calloc(1, sizeof(*m));
	if (m != NULL) {
		m->capvars = max_vars(n, layers);
	}
	if (m == NULL ||
	    (m->layers = pasci_calloc(n, sizeof(*layers))) == NULL ||
	    (m->inputs = pasci_calloc(ninputs, sizeof(*m->inputs))) == NULL ||
	    (m->out_width = pasci_calloc(n, sizeof(int64_t))) == NULL ||
	    (m->out_shape = pasci_calloc(n, sizeof(*m->out_shape))) == NULL ||
	    (m->first_var = pasci_calloc(n, sizeof(size_t))) == NULL ||
	    (m->parts = pasci_calloc(n, sizeof(*m->parts))) == NULL ||
	    (m->vars = pasci_calloc(m->capvars, sizeof(*m->vars))) == NULL ||
	    (m->norm = pasci_calloc(n, sizeof(*m->norm))) == NULL) {
		pasco_model_free(m);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	memcpy(m->layers, layers, n * sizeof(*layers));
	m->nlayers = n;
	for (size_t i = 0; i < n; i++) {
		const pasci_layer_desc *d =
		    pasci_layer_desc_of(layers[i].kind);
		if (d != NULL && d->hold != NULL) {
			d->hold(&m->layers[i]);
		}
		if (layers[i].partitioner != NULL) {
			m->parts[i]              = *layers[i].partitioner;
			m->layers[i].partitioner = &m->parts[i];
		} else {
			m->layers[i].partitioner = NULL;
		}
	}
	m->ninputs = ninputs;
	m->seed    = seed;
	for (size_t k = 0; k < ninputs; k++) {
		snprintf(m->inputs[k].name, sizeof(m->inputs[k].name), "%s",
		    inputs[k].name != NULL ? inputs[k].name : "");
		m->inputs[k].width = inputs[k].width;
		m->inputs[k].ids   = inputs[k].ids;
	}
	for (size_t i = 0; i < n; i++) {
		m->layers[i].name[PASCO_LAYER_NAME_MAX - 1] = 0;
	}
	if ((rv = build(m)) != 0) {
		pasco_model_free(m);
		return rv;
	}
	*out = m;
	return PASCO_OK;
}

int
pasco_model_functional(pasco_model **out, size_t ninputs,
    const pasco_model_input *inputs, size_t n, const pasco_layer *layers,
    uint64_t seed)
{
	int rv = model_new(out, ninputs, inputs, n, layers, seed);
	if (rv == 0) {
		(*out)->functional = true;
		snprintf((*out)->name, sizeof((*out)->name), "functional");
	}
	return rv;
}

int
pasco_model_sequential(pasco_model **out, int64_t input_width, size_t n,
    const pasco_layer *layers, uint64_t seed)
{
	const pasci_layer_desc *first =
	    n > 0 && layers != NULL ? pasci_layer_desc_of(layers[0].kind)
	                            : NULL;
	pasco_model_input in = {
	    "input", input_width, first != NULL && first->ids};
	*out = NULL;
	for (size_t i = 0; layers != NULL && i < n; i++) {
		if (layers[i].ninputs != 0) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: a Sequential model's layers are called on "
			    "the "
			    "previous one's output (inputs set: "
			    "pasco_model_functional)",
			    layers[i].name);
		}
	}
	int rv = model_new(out, 1, &in, n, layers, seed);
	if (rv == 0) {
		snprintf((*out)->name, sizeof((*out)->name), "sequential");
	}
	return rv;
}

void
pasco_model_free(pasco_model *m)
{
	if (m == NULL) {
		return;
	}
	for (size_t k = 0; m->owns && k < m->nvars; k++) {
		pasco_variable_free(m->vars[k].handle);
	}
	for (size_t i = 0; m->layers != NULL && i < m->nlayers; i++) {
		pasco_layer_release(&m->layers[i]);
	}
	pasco_tensor_release(m->config);
	pasci_loss_graph_release(m->compile.loss_graph);
	pasci_model_norm_free(m);
	free(m->vars);
	free(m->parts);
	free(m->first_var);
	free(m->out_width);
	free(m->out_shape);
	free(m->inputs);
	free(m->layers);
	free(m);
}

size_t
pasco_model_num_inputs(const pasco_model *m)
{
	return m->ninputs;
}

size_t
pasco_model_num_layers(const pasco_model *m)
{
	return m->nlayers;
}

const pasco_layer *
pasco_model_layer(const pasco_model *m, size_t i)
{
	return i < m->nlayers ? &m->layers[i] : NULL;
}

int64_t
pasco_model_output_width(const pasco_model *m)
{
	return m->out_width[m->nlayers - 1];
}

int32_t
pasco_model_layer_shape(const pasco_model *m, size_t i, const int64_t **dims)
{
	if (i >= m->nlayers) {
		*dims = NULL;
		return 0;
	}
	*dims = m->out_shape[i].dim;
	return m->out_shape[i].rank;
}

size_t
pasco_model_num_variables(const pasco_model *m)
{
	return m->nvars;
}

const char *
pasco_model_variable_name(const pasco_model *m, size_t k)
{
	return k < m->nvars ? m->vars[k].name : NULL;
}

int32_t
pasco_model_variable_shape(
    const pasco_model *m, size_t k, const int64_t **shape)
{
	if (k >= m->nvars) {
		*shape = NULL;
		return -1;
	}
	*shape = m->vars[k].shape;
	return m->vars[k].rank;
}

pasco_initializer
pasco_model_variable_init(const pasco_model *m, size_t k)
{
	return k < m->nvars ? m->vars[k].init : (pasco_initializer){0};
}

pasco_variable *
pasco_model_variable(const pasco_model *m, size_t k)
{
	return k < m->nvars ? m->vars[k].handle : NULL;
}

/* Checks vars[k] against the model's variable k; *prefix_len gets the
 * length of its layer part. */
static int
check_bind(const pasco_model *m, size_t k, pasco_variable *v, size_t *plen)
{
	const pasci_model_var *mv    = &m->vars[k];
	const char            *want  = strrchr(mv->name, '/') + 1;
	const char            *name  = v != NULL ? pasco_variable_name(v) : "";
	const char            *slash = strrchr(name, '/');
	int32_t                rank  = v != NULL ? pasco_variable_rank(v) : 0;
	const int64_t *shape = v != NULL ? pasco_variable_shape(v) : NULL;

	if (v == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "bind: variable %zu is NULL; the model expects '%s'", k,
		    mv->name);
	}
	if (slash == NULL || strcmp(slash + 1, want) != 0 ||
	    (size_t) (slash - name) >= PASCO_LAYER_NAME_MAX ||
	    pasco_variable_dtype(v) != PASCO_F32 || rank != mv->rank ||
	    memcmp(shape, mv->shape, (size_t) rank * sizeof(int64_t)) != 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "bind: variable %zu is '%s' %s%s; the model expects '%s' "
		    "f32%s",
		    k, name, pasco_dtype_name(pasco_variable_dtype(v)),
		    PASCI_SHAPE(rank, shape), mv->name,
		    PASCI_SHAPE(mv->rank, mv->shape));
	}
	*plen = (size_t) (slash - name);
	return PASCO_OK;
}

int
pasco_model_bind(pasco_model *m, size_t n, pasco_variable *const *vars)
{
	size_t *plen;
	int     rv = PASCO_OK;

	if (n != m->nvars) {
		return pasci_model_fail(PASCO_EINVAL,
		    "bind: %zu variables given; the model has %zu", n,
		    m->nvars);
	}
	if ((plen = pasci_calloc(n + 1, sizeof(*plen))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < n && rv == 0; k++) {
		size_t f = m->first_var[m->vars[k].layer];
		if ((rv = check_bind(m, k, vars[k], &plen[k])) == 0 && k > f &&
		    (plen[k] != plen[f] ||
		        strncmp(pasco_variable_name(vars[k]),
		            pasco_variable_name(vars[f]), plen[k]) != 0)) {
			rv = pasci_model_fail(PASCO_EINVAL,
			    "bind: variables %zu ('%s') and %zu ('%s') are of "
			    "one layer but name different ones",
			    f, pasco_variable_name(vars[f]), k,
			    pasco_variable_name(vars[k]));
		}
	}
	for (size_t k = 0; k < n && rv == 0; k++) {
		pasci_model_var *mv = &m->vars[k];
		pasco_layer     *l  = &m->layers[mv->layer];
		if (m->owns) {
			pasco_variable_free(mv->handle);
		}
		mv->handle = vars[k];
		snprintf(l->name, sizeof(l->name), "%.*s", (int) plen[k],
		    pasco_variable_name(vars[k]));
		snprintf(mv->name, sizeof(mv->name), "%s",
		    pasco_variable_name(vars[k]));
	}
	m->owns = m->owns && rv != 0;
	pasco_tensor_release(m->config); /* the layers' names may change */
	m->config = NULL;
	free(plen);
	return rv;
}

int
pasci_model_clone(const pasco_model *m, pasco_model **out)
{
	pasco_model_input *in = pasci_calloc(m->ninputs, sizeof(*in));
	int                rv;
	*out = NULL;
	if (in == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < m->ninputs; k++) {
		in[k] = (pasco_model_input){
		    m->inputs[k].name, m->inputs[k].width, m->inputs[k].ids};
	}
	rv = model_new(out, m->ninputs, in, m->nlayers, m->layers, m->seed);
	free(in);
	if (rv == 0) {
		(*out)->functional = m->functional;
		(*out)->compile    = m->compile;
		pasci_loss_graph_hold(m->compile.loss_graph);
		memcpy((*out)->name, m->name, sizeof(m->name));
		for (size_t k = 0; k < m->ninputs; k++) {
			(*out)->inputs[k].strings = m->inputs[k].strings;
		}
	}
	return rv;
}

size_t
pasci_model_bytes(const pasco_model *m)
{
	size_t per_layer = sizeof(*m->layers) + sizeof(*m->out_width) +
	                   sizeof(*m->out_shape) + sizeof(*m->first_var) +
	                   sizeof(*m->parts) + sizeof(*m->norm);
	size_t held = pasci_loss_graph_bytes(m->compile.loss_graph);
	for (size_t i = 0; i < m->nlayers; i++) {
		const pasci_layer_desc *d =
		    pasci_layer_desc_of(m->layers[i].kind);
		held += d != NULL && d->bytes != NULL ? d->bytes(&m->layers[i])
		                                      : 0;
	}
	return sizeof(*m) + m->nlayers * per_layer +
	       m->capvars * sizeof(*m->vars) +
	       m->ninputs * sizeof(*m->inputs) + held;
}

void
pasci_model_drop_variables(pasco_model *m)
{
	for (size_t k = 0; k < m->nvars; k++) {
		if (m->owns) {
			pasco_variable_free(m->vars[k].handle);
		}
		m->vars[k].handle = NULL;
	}
	m->owns = false;
	for (size_t i = 0; m->norm != NULL && i < m->nlayers; i++) {
		pasco_variable_free(m->norm[i].count_var);
		m->norm[i].count_var = NULL;
	}
}

const char *
pasco_model_name(const pasco_model *m)
{
	return m->name;
}

int
pasco_model_set_name(pasco_model *m, const char *name)
{
	if (name == NULL || name[0] == 0 || strlen(name) >= sizeof(m->name)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "a model's name is 1 to %d bytes",
		    PASCO_LAYER_NAME_MAX - 1);
	}
	snprintf(m->name, sizeof(m->name), "%s", name);
	pasco_tensor_release(m->config);
	m->config = NULL;
	return PASCO_OK;
}
