/*
 * compile (include/pasco/model.h): the loss by name, the optimizer, the
 * metrics and weighted metrics (Keras 3's weighted_metrics: counted with
 * the sample weights; read by model/metric_spec.c, by name or as Keras's
 * objects;
 * their counts, one vector of f64 that sums over batches, shards and
 * workers, and results in model/metric_counts.c), and the compile config
 * as JSON. Stateless: any thread.
 */
#include "model_impl.h"
#include "optimizer_desc.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The activation of the model's output (linear when its last layer has
 * none). */
static pasco_act
output_act(const pasco_model *m)
{
	const pasco_layer *l = &m->layers[m->nlayers - 1];
	return l->kind == PASCO_LAYER_DENSE ||
	               l->kind == PASCO_LAYER_ACTIVATION
	           ? l->activation
	           : PASCO_ACT_LINEAR;
}

static int
check_loss(const pasco_model *m, const pasco_loss *loss)
{
	pasco_act act = output_act(m);
	if ((loss->kind == PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ||
	        loss->kind == PASCO_LOSS_CATEGORICAL_CROSSENTROPY) &&
	    !loss->from_logits && act != PASCO_ACT_SOFTMAX &&
	    m->layers[m->nlayers - 1].kind != PASCO_LAYER_CUSTOM) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: %s: the output of '%s' (activation %s) is "
		    "neither logits (from_logits) nor softmax probabilities",
		    loss->kind == PASCO_LOSS_CATEGORICAL_CROSSENTROPY
		        ? "categorical_crossentropy"
		        : "sparse_categorical_crossentropy",
		    m->layers[m->nlayers - 1].name, pasco_act_name(act));
	}
	return PASCO_OK;
}

static int compile_rest(
    pasco_model *m, const pasco_compile_options *o, pasci_compile *c);

/* The loss: a graph's (config lg, or o->loss_graph's JSON) or a name's. */
static int
compile_loss(const pasco_model *m, const pasco_compile_options *o,
    const cJSON *lg, pasci_compile *c)
{
	cJSON *parsed = NULL;
	int    rv;
	if (lg == NULL && o->loss_graph != NULL &&
	    (lg = parsed = cJSON_Parse(o->loss_graph)) == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "compile: loss_graph is not JSON");
	}
	if (lg != NULL) {
		rv =
		    pasci_loss_graph_read(lg, &c->loss_graph, "compile: loss");
		cJSON_Delete(parsed);
		if (rv == 0) {
			c->loss = (pasco_loss){
			    .kind = PASCO_LOSS_GRAPH, .from_logits = false};
			snprintf(c->loss_name, sizeof(c->loss_name), "%s",
			    pasci_loss_graph_name(c->loss_graph));
		}
		return rv;
	}
	if (o->loss == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "compile: needs a loss (or a loss_graph)");
	}
	/* a Keras config's JSON ({"class_name": "Huber", ...}) or a name */
	rv = o->loss[0] == '{'
	         ? pasco_loss_from_config(o->loss, &c->loss)
	         : pasco_loss_from_name(o->loss, o->from_logits, &c->loss);
	if (rv != 0 || (rv = pasci_loss_check(&c->loss, "compile")) != 0 ||
	    (rv = check_loss(m, &c->loss)) != 0) {
		return rv;
	}
	/* a config is written back as one (loss_name stays empty) */
	snprintf(c->loss_name, sizeof(c->loss_name), "%s",
	    o->loss[0] == '{' ? "" : o->loss);
	return PASCO_OK;
}

/* pasco_model_compile with lg, a compile config's Graph loss, if any. */
static int
compile_with(pasco_model *m, const pasco_compile_options *o, const cJSON *lg)
{
	pasci_compile c = {.compiled = true};
	int           rv;

	if (m == NULL || o == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "compile: needs a model and a loss");
	}
	if ((rv = compile_loss(m, o, lg, &c)) != 0) {
		return rv;
	}
	rv = compile_rest(m, o, &c);
	if (rv != 0) {
		pasci_loss_graph_release(c.loss_graph);
		return rv;
	}
	pasci_loss_graph_release(m->compile.loss_graph);
	m->compile = c;
	pasco_tensor_release(m->config); /* the config changed */
	m->config = NULL;
	return PASCO_OK;
}

int
pasco_model_compile(pasco_model *m, const pasco_compile_options *o)
{
	return compile_with(m, o, NULL);
}

/* compile's loss_weights into c: one number (a model has one output),
 * finite (Keras multiplies by any). */
static int
compile_loss_weights(
    const pasco_model *m, const pasco_compile_options *o, pasci_compile *c)
{
	c->loss_weight     = 1;
	c->has_loss_weight = o->nloss_weights > 0;
	if (o->nloss_weights == 0) {
		return PASCO_OK;
	}
	if (o->loss_weights == NULL || o->nloss_weights > 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: loss_weights has %zu entries, but the model has "
		    "1 output ('%s'): give one number",
		    o->nloss_weights, m->layers[m->nlayers - 1].name);
	}
	if (!isfinite(o->loss_weights[0])) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: loss_weights: the weight of output '%s' must be "
		    "a finite number, got %g",
		    m->layers[m->nlayers - 1].name, o->loss_weights[0]);
	}
	c->loss_weight = o->loss_weights[0];
	return PASCO_OK;
}

/* The optimizer and metrics into c. */
static int
compile_rest(pasco_model *m, const pasco_compile_options *o, pasci_compile *c)
{
	int rv;
	c->opt            = o->optimizer.kind == 0
	                        ? pasci_opt_desc_of(PASCO_OPT_RMSPROP)->defaults
	                        : o->optimizer;
	c->opt.iterations = NULL;
	c->global_step    = !o->no_global_step;
	if ((rv = compile_loss_weights(m, o, c)) != 0) {
		return rv;
	}
	if ((rv = pasci_opt_compile_check(&c->opt)) != 0) {
		return rv;
	}
	if (o->nmetrics + o->nweighted_metrics > PASCI_MAX_METRICS ||
	    o->nmetrics > PASCI_MAX_METRICS ||
	    (o->nmetrics > 0 && o->metrics == NULL) ||
	    (o->nweighted_metrics > 0 && o->weighted_metrics == NULL)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: at most %d metrics and weighted_metrics "
		    "together (got %zu and %zu)",
		    PASCI_MAX_METRICS, o->nmetrics, o->nweighted_metrics);
	}
	for (size_t k = 0; k < o->nmetrics + o->nweighted_metrics; k++) {
		c->metric_weighted[k] = k >= o->nmetrics;
		if ((rv = pasci_metric_read(m, c, k,
		         k < o->nmetrics
		             ? o->metrics[k]
		             : o->weighted_metrics[k - o->nmetrics])) != 0) {
			return rv;
		}
		c->metric_off[k] = c->state_len;
		c->state_len += pasci_metric_state_len(
		    c->metric_kinds[k], &c->metric_specs[k]);
	}
	c->nmetrics = o->nmetrics + o->nweighted_metrics;
	return PASCO_OK;
}

bool
pasci_compile_to_json(cJSON *root, const pasco_model *m)
{
	const pasci_compile *c = &m->compile;
	cJSON               *cc, *oc, *metrics, *weighted = NULL;
	bool                 ok;
	if (!c->compiled) {
		return true;
	}
	ok = (cc = cJSON_AddObjectToObject(root, "compile_config")) != NULL &&
	     (c->loss_graph != NULL
	             ? pasci_loss_graph_write(cc, "loss", c->loss_graph)
	         : c->loss_name[0] == 0
	             ? pasci_loss_config_write(cc, "loss", &c->loss)
	             : cJSON_AddStringToObject(cc, "loss", c->loss_name) !=
	                   NULL) &&
	     cJSON_AddBoolToObject(cc, "from_logits", c->loss.from_logits) &&
	     (oc = pasci_json_class(cc, "optimizer",
	          pasci_opt_desc_of((int) c->opt.kind)->keras)) != NULL &&
	     pasci_opt_config_write(oc, &c->opt);
	ok = ok && (metrics = cJSON_AddArrayToObject(cc, "metrics")) != NULL;
	for (size_t k = 0; ok && k < c->nmetrics; k++) {
		if (c->metric_weighted[k] && weighted == NULL) {
			ok = (weighted = cJSON_AddArrayToObject(
			          cc, "weighted_metrics")) != NULL;
		}
		ok = ok &&
		     pasci_metric_write(
		         c->metric_weighted[k] ? weighted : metrics, c, k);
	}
	/* the optimizer's start on the global step, once fit knows it
	 * (include/pasco/optimizer.h iterations_base) */
	ok = ok &&
	     (!c->base_known || cJSON_AddNumberToObject(cc, "iterations_base",
	                            (double) c->opt.iterations_base) != NULL);
	ok = ok && (!c->has_loss_weight ||
	               cJSON_AddNumberToObject(
	                   cc, "loss_weights", c->loss_weight) != NULL);
	return ok && cJSON_AddBoolToObject(cc, "global_step", c->global_step);
}

/* A compile config's "loss_weights" as Keras 3 takes it: a number, a
 * list of one, or an object keyed by the output's name; into *w and *n
 * (0: absent or null). */
static int
read_loss_weights(const pasco_model *m, const cJSON *cc, double *w, size_t *n)
{
	const cJSON *lw = cJSON_GetObjectItemCaseSensitive(cc, "loss_weights");
	const char  *out = m->layers[m->nlayers - 1].name;
	const cJSON *one = lw;
	*n               = 0;
	if (lw == NULL || cJSON_IsNull(lw)) {
		return PASCO_OK;
	}
	if ((cJSON_IsArray(lw) || cJSON_IsObject(lw)) &&
	    cJSON_GetArraySize(lw) != 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile_config: loss_weights has %d entries, but the "
		    "model has 1 output ('%s')",
		    cJSON_GetArraySize(lw), out);
	}
	if (cJSON_IsArray(lw) || cJSON_IsObject(lw)) {
		one = cJSON_GetArrayItem(lw, 0);
	}
	if (cJSON_IsObject(lw) && strcmp(one->string, out) != 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile_config: loss_weights names output '%s'; the "
		    "model's output is '%s'",
		    one->string, out);
	}
	if (!cJSON_IsNumber(one)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile_config: loss_weights must be a number, a list "
		    "of one or {\"%s\": number}",
		    out);
	}
	*w = one->valuedouble;
	*n = 1;
	return PASCO_OK;
}

int
pasci_compile_from_json(const cJSON *root, pasco_model *m)
{
	static const char *const keys[] = {"loss", "from_logits", "optimizer",
	    "metrics", "weighted_metrics", "global_step", "loss_weights",
	    "iterations_base"};
	const char              *at     = "compile_config";
	const cJSON *cc   = cJSON_GetObjectItemCaseSensitive(root, at);
	const cJSON *loss = cJSON_GetObjectItemCaseSensitive(cc, "loss");
	const cJSON *ms   = cJSON_GetObjectItemCaseSensitive(cc, "metrics");
	const cJSON *ws =
	    cJSON_GetObjectItemCaseSensitive(cc, "weighted_metrics");
	const cJSON          *lg = NULL, *cls;
	const char           *names[2 * PASCI_MAX_METRICS];
	char                 *owned[2 * PASCI_MAX_METRICS] = {NULL};
	pasco_compile_options o                            = {0};
	bool                  gs                           = true;
	int64_t               base                         = -1;
	char                 *loss_text                    = NULL;
	bool                  is_class; /* a Keras loss class's config */
	double                lw = 1;
	int                   rv;
	if (cc == NULL) {
		return PASCO_OK;
	}
	if (pasci_json_check_keys(cc, keys, COUNT(keys), at) != 0 ||
	    pasci_json_bool(cc, "from_logits", &o.from_logits, at) != 0 ||
	    pasci_json_bool(cc, "global_step", &gs, at) != 0 ||
	    pasci_json_int(cc, "iterations_base", &base, 0, at) != 0 ||
	    pasci_opt_config_read(
	        cJSON_GetObjectItemCaseSensitive(cc, "optimizer"),
	        &o.optimizer) != 0) {
		return PASCO_EINVAL;
	}
	cls      = cJSON_GetObjectItemCaseSensitive(loss, "class_name");
	is_class = cJSON_IsObject(loss) && cJSON_IsString(cls) &&
	           strcmp(cls->valuestring, "Graph") != 0;
	if (cJSON_IsObject(loss) && !is_class) {
		static const char *const classes[] = {NULL, "Graph"};
		int                      kind;
		if (pasci_json_read_class(loss, classes, 2, &kind, &lg,
		        "compile_config: loss") != 0) {
			return PASCO_EINVAL;
		}
	}
	if ((lg == NULL && !is_class && !cJSON_IsString(loss)) ||
	    (ms != NULL && !cJSON_IsArray(ms)) ||
	    (ws != NULL && !cJSON_IsNull(ws) && !cJSON_IsArray(ws)) ||
	    cJSON_GetArraySize(ms) + cJSON_GetArraySize(ws) >
	        PASCI_MAX_METRICS) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: needs a loss name and at most %d metrics and "
		    "weighted_metrics together (lists)",
		    at, PASCI_MAX_METRICS);
	}
	/* a Keras loss class's config: its text, read by compile */
	if (is_class && (loss_text = cJSON_PrintUnformatted(loss)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	o.loss             = lg != NULL          ? NULL
	                     : loss_text != NULL ? loss_text
	                                         : loss->valuestring;
	o.metrics          = names;
	o.weighted_metrics = names + PASCI_MAX_METRICS;
	o.no_global_step   = !gs;
	if ((rv = read_loss_weights(m, cc, &lw, &o.nloss_weights)) != 0) {
		free(loss_text);
		return rv;
	}
	o.loss_weights = &lw;
	if ((rv = pasci_metric_texts(ms, names, owned, &o.nmetrics)) == 0 &&
	    (rv = pasci_metric_texts(cJSON_IsArray(ws) ? ws : NULL,
	         names + PASCI_MAX_METRICS, owned + PASCI_MAX_METRICS,
	         &o.nweighted_metrics)) == 0) {
		o.optimizer.iterations_base = base >= 0 ? base : 0;
		rv                          = compile_with(m, &o, lg);
		m->compile.base_known       = rv == 0 && base >= 0;
	}
	for (size_t k = 0; k < 2 * PASCI_MAX_METRICS; k++) {
		free(owned[k]);
	}
	free(loss_text);
	return rv;
}

size_t
pasco_model_num_args(const pasco_model *m)
{
	return 1 + m->nvars;
}

int
pasco_model_args(pasco_model *m, pasco_arg *args, size_t cap, size_t *n)
{
	char *json;
	int   rv;
	if (*n + pasco_model_num_args(m) > cap) {
		return pasci_model_fail(PASCO_EINVAL,
		    "model args: room for %zu arguments after %zu; the model "
		    "takes %zu",
		    cap - *n, *n, pasco_model_num_args(m));
	}
	for (size_t k = 0; k < m->nvars; k++) {
		if (m->vars[k].handle == NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "model args: variable '%s' is not created "
			    "(pasco_model_create_variables)",
			    m->vars[k].name);
		}
	}
	if (m->config == NULL) {
		if ((rv = pasco_model_to_json(m, &json)) != 0) {
			return rv;
		}
		rv = pasco_tensor_from(&m->config, PASCO_U8, 1,
		    (int64_t[]){(int64_t) strlen(json)}, json, strlen(json));
		free(json);
		if (rv != 0) {
			return pasci_model_fail(rv, "out of memory");
		}
	}
	args[(*n)++] = pasco_arg_tensor(m->config);
	for (size_t k = 0; k < m->nvars; k++) {
		args[(*n)++] = pasco_arg_variable(m->vars[k].handle);
	}
	return PASCO_OK;
}
