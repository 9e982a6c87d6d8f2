/*
 * compile (include/pasco/model.h): the loss by name, the optimizer, the
 * metrics by Keras's names ("accuracy" resolved from the loss and the
 * output's width), their counts and results, and the compile config as
 * JSON. Counts of every metric sit in one vector of f64 (accuracy:
 * correct, seen; mae and mse: error sum, seen; precision: true and false
 * positives; recall: true positives, false negatives; auc: metrics.h's
 * 4 x 200), so one assign_add adds a batch's and sums of them combine
 * batches, shards and workers. Stateless: any thread.
 */
#include "metrics_impl.h"
#include "model_impl.h"
#include "optimizer_desc.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	const char       *name;
	pasci_metric_kind kind;
} metric_names[] = {
    {"binary_accuracy", PASCI_METRIC_BINARY_ACCURACY},
    {"sparse_categorical_accuracy", PASCI_METRIC_SPARSE_CAT_ACCURACY},
    {"categorical_accuracy", PASCI_METRIC_CATEGORICAL_ACCURACY},
    {"auc", PASCI_METRIC_AUC},
    {"mae", PASCI_METRIC_MAE},
    {"mean_absolute_error", PASCI_METRIC_MAE},
    {"mse", PASCI_METRIC_MSE},
    {"mean_squared_error", PASCI_METRIC_MSE},
    {"precision", PASCI_METRIC_PRECISION},
    {"recall", PASCI_METRIC_RECALL},
};

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

/* Keras's resolution of "accuracy" (compile_utils.get_metric_function):
 * binary for an output of width 1, sparse categorical when the labels
 * are class ids (this loss, or a loss graph's y_true as traced: Keras
 * looks at its shape), categorical otherwise. */
static int
resolve_metric(const pasco_model *m, const pasci_compile *c, const char *name,
    pasci_metric_kind *kind)
{
	int64_t width = pasco_model_output_width(m);
	bool    sparse =
	    c->loss.kind == PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY ||
	    (c->loss_graph != NULL &&
	        pasci_loss_graph_sparse_labels(c->loss_graph));
	if (strcmp(name, "accuracy") == 0 || strcmp(name, "acc") == 0) {
		*kind = width == 1 ? PASCI_METRIC_BINARY_ACCURACY
		        : sparse   ? PASCI_METRIC_SPARSE_CAT_ACCURACY
		                   : PASCI_METRIC_CATEGORICAL_ACCURACY;
		return PASCO_OK;
	}
	for (size_t i = 0; i < COUNT(metric_names); i++) {
		if (strcmp(name, metric_names[i].name) == 0) {
			*kind = metric_names[i].kind;
			break;
		}
		if (i + 1 == COUNT(metric_names)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "compile: unknown metric '%s' (accuracy, "
			    "binary_accuracy, sparse_categorical_accuracy, "
			    "categorical_accuracy, auc, precision, recall, "
			    "mae, mse)",
			    name);
		}
	}
	if ((*kind == PASCI_METRIC_AUC || *kind == PASCI_METRIC_PRECISION ||
	        *kind == PASCI_METRIC_RECALL) &&
	    width != 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: %s takes one probability per example; the "
		    "output of '%s' has width %lld",
		    name, m->layers[m->nlayers - 1].name, (long long) width);
	}
	return PASCO_OK;
}

static int
check_optimizer(const pasco_optimizer *o)
{
	const pasci_opt_desc *d = pasci_opt_desc_of((int) o->kind);
	if (d == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: unknown optimizer kind %d", (int) o->kind);
	}
	if (!(o->learning_rate > 0)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: %s: learning_rate must be > 0, got %g", d->keras,
		    o->learning_rate);
	}
	return PASCO_OK;
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
	if ((rv = check_optimizer(&c->opt)) != 0) {
		return rv;
	}
	if (o->nmetrics > PASCI_MAX_METRICS ||
	    (o->nmetrics > 0 && o->metrics == NULL)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: at most %d metrics", PASCI_MAX_METRICS);
	}
	for (size_t k = 0; k < o->nmetrics; k++) {
		const char *name = o->metrics[k] != NULL ? o->metrics[k] : "";
		if (strlen(name) >= PASCI_METRIC_NAME_MAX ||
		    (rv = resolve_metric(m, c, name, &c->metric_kinds[k])) !=
		        0) {
			return rv != 0 ? rv
			               : pasci_model_fail(PASCO_EINVAL,
			                     "compile: metric name too long");
		}
		snprintf(
		    c->metric_names[k], PASCI_METRIC_NAME_MAX, "%s", name);
		c->metric_off[k] = c->state_len;
		c->state_len += c->metric_kinds[k] == PASCI_METRIC_AUC
		                    ? 4 * PASCO_AUC_THRESHOLDS
		                    : 2;
	}
	c->nmetrics = o->nmetrics;
	return PASCO_OK;
}

bool
pasci_opt_config_write(cJSON *config, const pasco_optimizer *opt)
{
	const pasci_opt_desc *d  = pasci_opt_desc_of((int) opt->kind);
	bool                  ok = d != NULL;
	for (int i = 0; ok && i < d->nfields; i++) {
		const pasci_opt_field *f  = &d->fields[i];
		const char            *at = (const char *) opt + f->off;
		ok = f->is_bool ? cJSON_AddBoolToObject(config, f->key,
		                      *(const bool *) at) != NULL
		                : cJSON_AddNumberToObject(config, f->key,
		                      *(const double *) at) != NULL;
	}
	return ok;
}

bool
pasci_compile_to_json(cJSON *root, const pasco_model *m)
{
	const pasci_compile *c = &m->compile;
	cJSON               *cc, *oc, *metrics;
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
		ok = cJSON_AddItemToArray(
		    metrics, cJSON_CreateString(c->metric_names[k]));
	}
	return ok && cJSON_AddBoolToObject(cc, "global_step", c->global_step);
}

int
pasci_opt_config_read(const cJSON *o, pasco_optimizer *opt)
{
	const cJSON          *c, *it;
	const char           *at = "compile_config: optimizer";
	const char           *classes[PASCI_OPT_KINDS] = {NULL};
	int                   kind;
	const pasci_opt_desc *d;
	if (o == NULL) {
		*opt = pasci_opt_desc_of(PASCO_OPT_RMSPROP)->defaults;
		return PASCO_OK;
	}
	for (int k = 1; k < PASCI_OPT_KINDS; k++) {
		classes[k] = pasci_opt_desc_of(k)->keras;
	}
	if (pasci_json_read_class(
	        o, classes, PASCI_OPT_KINDS, &kind, &c, at) != 0) {
		return PASCO_EINVAL;
	}
	d    = pasci_opt_desc_of(kind);
	*opt = d->defaults;
	cJSON_ArrayForEach(it, c)
	{
		const pasci_opt_field *f =
		    pasci_opt_field_named(d, it->string);
		if (f == NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: %s has no field '%s'", at, d->keras,
			    it->string);
		}
		char *field = (char *) opt + f->off;
		if (f->is_bool
		        ? pasci_json_bool(c, it->string, (bool *) field, at)
		        : pasci_json_number(c, it->string, (double *) field,
		              false, -HUGE_VAL, at)) {
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

int
pasci_compile_from_json(const cJSON *root, pasco_model *m)
{
	static const char *const keys[] = {
	    "loss", "from_logits", "optimizer", "metrics", "global_step"};
	const char  *at   = "compile_config";
	const cJSON *cc   = cJSON_GetObjectItemCaseSensitive(root, at);
	const cJSON *loss = cJSON_GetObjectItemCaseSensitive(cc, "loss");
	const cJSON *ms = cJSON_GetObjectItemCaseSensitive(cc, "metrics"), *it;
	const cJSON *lg = NULL, *cls;
	const char  *names[PASCI_MAX_METRICS];
	pasco_compile_options o         = {0};
	bool                  gs        = true;
	char                 *loss_text = NULL;
	bool                  is_class; /* a Keras loss class's config */
	int                   rv;
	if (cc == NULL) {
		return PASCO_OK;
	}
	if (pasci_json_check_keys(cc, keys, COUNT(keys), at) != 0 ||
	    pasci_json_bool(cc, "from_logits", &o.from_logits, at) != 0 ||
	    pasci_json_bool(cc, "global_step", &gs, at) != 0 ||
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
	    cJSON_GetArraySize(ms) > PASCI_MAX_METRICS) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: needs a loss name and at most %d metric names", at,
		    PASCI_MAX_METRICS);
	}
	cJSON_ArrayForEach(it, ms)
	{
		if (!cJSON_IsString(it)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: metrics[%zu] is not a name", at, o.nmetrics);
		}
		names[o.nmetrics++] = it->valuestring;
	}
	/* a Keras loss class's config: its text, read by compile */
	if (is_class && (loss_text = cJSON_PrintUnformatted(loss)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	o.loss           = lg != NULL          ? NULL
	                   : loss_text != NULL ? loss_text
	                                       : loss->valuestring;
	o.metrics        = names;
	o.no_global_step = !gs;
	rv               = compile_with(m, &o, lg);
	free(loss_text);
	return rv;
}

/* The probability (or value) j of row i of pred, through the output's
 * sigmoid or softmax when the loss takes logits. */
static double
prob(const pasco_model *m, const pasco_tensor *pred, int64_t i, int64_t j)
{
	int64_t w = pred->count / pred->shape[0];
	double  z = pasco_tensor_get(pred, i * w + j);
	if (!m->compile.loss.from_logits) {
		return z;
	}
	if (w == 1) {
		return 1 / (1 + exp(-z));
	}
	double mx = -HUGE_VAL, sum = 0;
	for (int64_t k = 0; k < w; k++) {
		mx = fmax(mx, pasco_tensor_get(pred, i * w + k));
	}
	for (int64_t k = 0; k < w; k++) {
		sum += exp(pasco_tensor_get(pred, i * w + k) - mx);
	}
	return exp(z - mx) / sum;
}

static int64_t
argmax_row(const pasco_tensor *t, int64_t i, int64_t w)
{
	int64_t best = 0;
	for (int64_t j = 1; j < w; j++) {
		if (pasco_tensor_get(t, i * w + j) >
		    pasco_tensor_get(t, i * w + best)) {
			best = j;
		}
	}
	return best;
}

/* One metric's counts of a batch. */
static void
counts_of(const pasco_model *m, pasci_metric_kind kind,
    const pasco_tensor *pred, const pasco_tensor *y, double *s)
{
	int64_t n = pred->shape[0], w = pred->count / n;
	for (int64_t i = 0; i < n; i++) {
		if (kind == PASCI_METRIC_SPARSE_CAT_ACCURACY) {
			s[0] += argmax_row(pred, i, w) ==
			        (int64_t) pasco_tensor_get(y, i);
			s[1] += 1;
			continue;
		}
		if (kind == PASCI_METRIC_CATEGORICAL_ACCURACY) {
			s[0] += argmax_row(pred, i, w) == argmax_row(y, i, w);
			s[1] += 1;
			continue;
		}
		for (int64_t j = 0; j < w; j++) {
			double p  = prob(m, pred, i, j);
			double t  = pasco_tensor_get(y, i * w + j);
			bool   yp = p > 0.5, yt = t > 0.5;
			switch (kind) {
			case PASCI_METRIC_BINARY_ACCURACY:
				s[0] += yp == yt;
				s[1] += 1;
				break;
			case PASCI_METRIC_MAE:
				s[0] += fabs(p - t);
				s[1] += 1;
				break;
			case PASCI_METRIC_MSE:
				s[0] += (p - t) * (p - t);
				s[1] += 1;
				break;
			case PASCI_METRIC_PRECISION:
				s[0] += yp && yt;
				s[1] += yp && !yt;
				break;
			case PASCI_METRIC_RECALL:
				s[0] += yp && yt;
				s[1] += !yp && yt;
				break;
			case PASCI_METRIC_AUC:
				pasci_auc_add(s, p, yt);
				break;
			default:
				break;
			}
		}
	}
}

int
pasci_metric_counts(const pasco_model *m, const pasco_tensor *pred,
    const pasco_tensor *y, double *state)
{
	const pasci_compile *c = &m->compile;
	for (size_t k = 0; k < c->nmetrics; k++) {
		pasci_metric_kind kind = c->metric_kinds[k];
		int64_t want = kind == PASCI_METRIC_SPARSE_CAT_ACCURACY
		                   ? pred->shape[0]
		                   : pred->count;
		if (pred->rank != 2 || y == NULL || y->count != want) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: targets %s%s do not fit the output %s (want "
			    "%lld values)",
			    c->metric_names[k],
			    y != NULL ? pasco_dtype_name(y->dtype) : "none",
			    y != NULL ? PASCI_SHAPE(y->rank, y->shape) : "",
			    PASCI_SHAPE(pred->rank, pred->shape),
			    (long long) want);
		}
		counts_of(m, kind, pred, y, state + c->metric_off[k]);
	}
	return PASCO_OK;
}

double
pasci_metric_result(const pasco_model *m, size_t k, const double *state)
{
	const double *s = state + m->compile.metric_off[k];
	switch (m->compile.metric_kinds[k]) {
	case PASCI_METRIC_AUC:
		return pasci_auc_of(s);
	case PASCI_METRIC_PRECISION:
	case PASCI_METRIC_RECALL:
		return s[0] + s[1] > 0 ? s[0] / (s[0] + s[1]) : 0;
	default:
		return s[1] > 0 ? s[0] / s[1] : NAN;
	}
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
