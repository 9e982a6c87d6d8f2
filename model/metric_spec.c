/*
 * A compiled model's metrics as given (include/pasco/model.h): Keras's
 * names ("accuracy" resolved from the loss and the output's width, "auc",
 * "precision", ...) or Keras 3's serialized objects ({"class_name": "AUC",
 * "config": {"name": "auc_1", "num_thresholds": 200, "curve": "PR", ...}},
 * with Keras's "module" and "registered_name" beside them) read into a
 * kind and its parameters (metric_spec.h), each field checked and a bad
 * one named; and written back the way they were given. Stateless: any
 * thread.
 */
#include "model_impl.h"
#include "pasco/metrics.h"

#include <math.h>
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
    {"top_k_categorical_accuracy", PASCI_METRIC_TOP_K},
    {"sparse_top_k_categorical_accuracy", PASCI_METRIC_SPARSE_TOP_K},
};

/* Keras 3's metric classes Pasco computes in compile: the class, its
 * kind, its default name and its config's fields beside name and dtype. */
static const struct {
	const char       *cls;
	pasci_metric_kind kind;
	const char       *name;
	const char       *fields[9];
} metric_classes[] = {
    {"AUC", PASCI_METRIC_AUC, "auc",
        {"num_thresholds", "curve", "summation_method", "thresholds",
            "multi_label", "num_labels", "label_weights", "from_logits"}},
    {"Precision", PASCI_METRIC_PRECISION, "precision",
        {"thresholds", "top_k", "class_id"}},
    {"Recall", PASCI_METRIC_RECALL, "recall",
        {"thresholds", "top_k", "class_id"}},
    {"TopKCategoricalAccuracy", PASCI_METRIC_TOP_K,
        "top_k_categorical_accuracy", {"k"}},
    {"SparseTopKCategoricalAccuracy", PASCI_METRIC_SPARSE_TOP_K,
        "sparse_top_k_categorical_accuracy", {"k", "from_sorted_ids"}},
    {"MeanSquaredError", PASCI_METRIC_MSE, "mean_squared_error", {NULL}},
    {"RootMeanSquaredError", PASCI_METRIC_RMSE, "root_mean_squared_error",
        {NULL}},
    {"MeanAbsoluteError", PASCI_METRIC_MAE, "mean_absolute_error", {NULL}},
    {"BinaryCrossentropy", PASCI_METRIC_BCE, "binary_crossentropy",
        {"from_logits", "label_smoothing"}},
    {"BinaryAccuracy", PASCI_METRIC_BINARY_ACCURACY, "binary_accuracy",
        {"threshold"}},
    {"SparseCategoricalAccuracy", PASCI_METRIC_SPARSE_CAT_ACCURACY,
        "sparse_categorical_accuracy", {NULL}},
    {"CategoricalAccuracy", PASCI_METRIC_CATEGORICAL_ACCURACY,
        "categorical_accuracy", {NULL}},
};

static void
spec_defaults(pasci_metric_kind kind, pasci_metric_spec *s)
{
	*s = (pasci_metric_spec){.nthresholds = 1,
	    .nlabels                          = 1,
	    .class_id                         = -1,
	    .k                                = 5,
	    .threshold                        = 0.5};
	if (kind == PASCI_METRIC_AUC) {
		s->nthresholds = PASCO_AUC_THRESHOLDS;
		s->evenly      = true;
	}
}

size_t
pasci_metric_state_len(pasci_metric_kind kind, const pasci_metric_spec *s)
{
	switch (kind) {
	case PASCI_METRIC_AUC:
		return 4 * (size_t) s->nthresholds * (size_t) s->nlabels;
	case PASCI_METRIC_PRECISION:
	case PASCI_METRIC_RECALL:
		return 2 * (size_t) s->nthresholds;
	default:
		return 2;
	}
}

/* Keras's resolution of "accuracy" (compile_utils.get_metric_function):
 * binary for an output of width 1, sparse categorical when the labels
 * are class ids (this loss, or a loss graph's y_true as traced: Keras
 * looks at its shape), categorical otherwise. */
static int
resolve_name(const pasco_model *m, const pasci_compile *c, const char *name,
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
			return PASCO_OK;
		}
	}
	return pasci_model_fail(PASCO_EINVAL,
	    "compile: unknown metric '%s' (accuracy, binary_accuracy, "
	    "sparse_categorical_accuracy, categorical_accuracy, auc, "
	    "precision, recall, mae, mse, top_k_categorical_accuracy, "
	    "sparse_top_k_categorical_accuracy; or a metric object as "
	    "{\"class_name\": ..., \"config\": {...}})",
	    name);
}

/* A config's field that is absent or null. */
static bool
is_unset(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	return it == NULL || cJSON_IsNull(it);
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;
	return (x > y) - (x < y);
}

/* "thresholds": null, a number or a list of numbers, each in [0, 1]. */
static int
read_thresholds(const cJSON *o, pasci_metric_spec *s, const char *at)
{
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "thresholds");
	const cJSON *it;
	if (t == NULL || cJSON_IsNull(t)) {
		return PASCO_OK;
	}
	s->scalar_threshold = cJSON_IsNumber(t);
	if (!s->scalar_threshold &&
	    (!cJSON_IsArray(t) || cJSON_GetArraySize(t) == 0 ||
	        cJSON_GetArraySize(t) > PASCI_METRIC_MAX_THRESHOLDS)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: thresholds must be null, a number or a list of 1 to "
		    "%d numbers",
		    at, PASCI_METRIC_MAX_THRESHOLDS);
	}
	for (it = s->scalar_threshold ? t : t->child; it != NULL;
	     it = s->scalar_threshold ? NULL : it->next) {
		if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) ||
		    !(it->valuedouble <= 1)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: thresholds must be numbers in [0, 1]", at);
		}
		s->given[s->ngiven++] = it->valuedouble;
	}
	return PASCO_OK;
}

/* Keras's is_evenly_distributed_thresholds of [0, given..., 1]. */
static bool
evenly_spaced(const pasci_metric_spec *s)
{
	int32_t n = s->ngiven + 2;
	for (int32_t i = 1; i + 1 < n; i++) {
		double even = (double) i / (n - 1); /* numpy's allclose */
		if (fabs(s->given[i - 1] - even) > 1e-7 + 1e-5 * even) {
			return false;
		}
	}
	return true;
}

/* o[key], one of choices (Keras's from_str: each also spelled as alts
 * spells it) into *out; what says what they are. */
static int
read_choice(const cJSON *o, const char *key, const char *const *choices,
    const char *const *alts, int n, int *out, const char *at)
{
	const char *v = NULL, *what = strcmp(key, "curve") == 0
	                                  ? "\"ROC\", \"PR\" or \"PRGAIN\""
	                                  : "\"interpolation\", \"minoring\" "
	                                    "or \"majoring\"";
	if (pasci_json_string(o, key, &v, at) != 0) {
		return PASCO_EINVAL;
	}
	for (int i = 0; v != NULL && i < n; i++) {
		if (strcmp(v, choices[i]) == 0 || strcmp(v, alts[i]) == 0) {
			*out = i;
			return PASCO_OK;
		}
	}
	return v == NULL
	           ? PASCO_OK
	           : pasci_model_fail(PASCO_EINVAL,
	                 "%s: %s must be %s, got \"%s\"", at, key, what, v);
}

/* AUC's multi_label, num_labels (the output's width) and label_weights
 * (one per output column, >= 0). */
static int
read_labels(const pasco_model *m, const cJSON *o, bool multi,
    pasci_metric_spec *s, const char *at)
{
	const cJSON *lw = cJSON_GetObjectItemCaseSensitive(o, "label_weights");
	const cJSON *list  = cJSON_IsArray(lw) ? lw : NULL, *it;
	int64_t      width = pasco_model_output_width(m), nl = 0;
	if (!is_unset(o, "num_labels") &&
	    pasci_json_int(o, "num_labels", &nl, 1, at) != 0) {
		return PASCO_EINVAL;
	}
	if (nl > 0 && (!multi || nl != width)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: num_labels %lld: %s", at, (long long) nl,
		    multi ? "not the output's width"
		          : "needed only when multi_label is true");
	}
	if (lw != NULL && !cJSON_IsNull(lw) &&
	    (!cJSON_IsArray(lw) || cJSON_GetArraySize(lw) != width ||
	        width > PASCI_METRIC_MAX_THRESHOLDS)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: label_weights must be null or a list of one weight "
		    "per output column (%lld; at most %d)",
		    at, (long long) width, PASCI_METRIC_MAX_THRESHOLDS);
	}
	cJSON_ArrayForEach(it, list)
	{
		if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) ||
		    !isfinite(it->valuedouble)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: label_weights must be numbers >= 0", at);
		}
		s->label_weights[s->nweights++] = it->valuedouble;
	}
	s->multi_label = multi;
	s->num_labels  = (int32_t) nl;
	s->nlabels     = multi ? (int32_t) width : 1;
	return PASCO_OK;
}

static int
read_auc(
    const pasco_model *m, const cJSON *o, pasci_metric_spec *s, const char *at)
{
	static const char *const curves[] = {"ROC", "PR", "PRGAIN"};
	static const char *const lower[]  = {"roc", "pr", "prgain"};
	static const char *const sums[]   = {
	      "interpolation", "minoring", "majoring"};
	static const char *const capital[] = {
	    "Interpolation", "Minoring", "Majoring"};
	int64_t n     = s->nthresholds;
	int     curve = 0, sum = 0;
	bool    multi = false;
	if (pasci_json_int(o, "num_thresholds", &n, 2, at) != 0 ||
	    read_choice(o, "curve", curves, lower, 3, &curve, at) != 0 ||
	    read_choice(o, "summation_method", sums, capital, 3, &sum, at) !=
	        0 ||
	    pasci_json_bool(o, "multi_label", &multi, at) != 0 ||
	    pasci_json_bool(o, "from_logits", &s->from_logits, at) != 0 ||
	    read_thresholds(o, s, at) != 0) {
		return PASCO_EINVAL;
	}
	if (read_labels(m, o, multi, s, at) != 0) {
		return PASCO_EINVAL;
	}
	if (n > PASCI_AUC_MAX_THRESHOLDS) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: num_thresholds must be at most %d, got %lld", at,
		    PASCI_AUC_MAX_THRESHOLDS, (long long) n);
	}
	s->curve       = (pasci_auc_curve) curve;
	s->summation   = (pasci_auc_summation) sum;
	s->nthresholds = (int32_t) n;
	if (s->ngiven > 0) { /* Keras: num_thresholds follows the list */
		qsort(
		    s->given, (size_t) s->ngiven, sizeof(double), cmp_double);
		s->nthresholds = s->ngiven + 2;
		s->evenly      = evenly_spaced(s);
	}
	if (4 * (int64_t) s->nthresholds * s->nlabels > 65536) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: 4 x num_thresholds x labels = %lld counts; at most "
		    "65536 (a step's counts)",
		    at, 4 * (long long) s->nthresholds * s->nlabels);
	}
	return PASCO_OK;
}

/* Precision and Recall: thresholds (one, in compile: a log holds one
 * number), top_k, class_id (below the output's width). */
static int
read_precision(
    const pasco_model *m, const cJSON *o, pasci_metric_spec *s, const char *at)
{
	int64_t top_k = 0, class_id = -1, width = pasco_model_output_width(m);
	if (read_thresholds(o, s, at) != 0 ||
	    (!is_unset(o, "top_k") &&
	        pasci_json_int(o, "top_k", &top_k, 1, at) != 0) ||
	    (!is_unset(o, "class_id") &&
	        pasci_json_int(o, "class_id", &class_id, 0, at) != 0)) {
		return PASCO_EINVAL;
	}
	if (s->ngiven > 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: thresholds: a compiled metric logs one number: give "
		    "one threshold (%d given; a traced step's metric object "
		    "takes several)",
		    at, s->ngiven);
	}
	if (top_k > INT32_MAX) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: top_k must be at most %d", at, INT32_MAX);
	}
	if (class_id >= width) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: class_id %lld is not below the output's width %lld",
		    at, (long long) class_id, (long long) width);
	}
	s->top_k    = (int32_t) top_k;
	s->class_id = (int32_t) class_id;
	return PASCO_OK;
}

/* The fields of class i's config beside name and dtype. */
static int
read_fields(const pasco_model *m, pasci_metric_kind kind, const cJSON *o,
    pasci_metric_spec *s, const char *at)
{
	int64_t k = s->k;
	switch (kind) {
	case PASCI_METRIC_AUC:
		return read_auc(m, o, s, at);
	case PASCI_METRIC_PRECISION:
	case PASCI_METRIC_RECALL:
		return read_precision(m, o, s, at);
	case PASCI_METRIC_TOP_K:
	case PASCI_METRIC_SPARSE_TOP_K:
		if (pasci_json_int(o, "k", &k, 1, at) != 0 ||
		    pasci_json_bool(
		        o, "from_sorted_ids", &s->from_sorted_ids, at) != 0) {
			return PASCO_EINVAL;
		}
		s->k = k > INT32_MAX ? INT32_MAX : (int32_t) k;
		return PASCO_OK;
	case PASCI_METRIC_BCE:
		if (pasci_json_bool(o, "from_logits", &s->from_logits, at) !=
		        0 ||
		    pasci_json_number(o, "label_smoothing",
		        &s->label_smoothing, false, 0, at) != 0) {
			return PASCO_EINVAL;
		}
		return s->label_smoothing <= 1
		           ? PASCO_OK
		           : pasci_model_fail(PASCO_EINVAL,
		                 "%s: label_smoothing must be in [0, 1]", at);
	case PASCI_METRIC_BINARY_ACCURACY:
		return pasci_json_number(
		    o, "threshold", &s->threshold, false, -HUGE_VAL, at);
	default:
		return PASCO_OK;
	}
}

/* {"class_name", "config"} of a Keras metric object into kind, spec and
 * its name (the config's, else the class's default). */
static int
read_object(const pasco_model *m, const cJSON *obj, pasci_metric_kind *kind,
    pasci_metric_spec *s, char *name, const char *where)
{
	static const char *const top[] = {
	    "class_name", "config", "module", "registered_name"};
	const cJSON *cls = cJSON_GetObjectItemCaseSensitive(obj, "class_name");
	const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(obj, "config");
	const char  *n = NULL, *dtype = NULL;
	const char  *keys[11] = {"name", "dtype"};
	char         at[128];
	size_t       i = 0, nkeys = 2;
	if (pasci_json_check_keys(obj, top, COUNT(top), where) != 0) {
		return PASCO_EINVAL;
	}
	while (cJSON_IsString(cls) && i < COUNT(metric_classes) &&
	       strcmp(metric_classes[i].cls, cls->valuestring) != 0) {
		i++;
	}
	if (!cJSON_IsString(cls) || i == COUNT(metric_classes)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: unknown metric class '%s' (AUC, Precision, Recall, "
		    "TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, "
		    "MeanSquaredError, RootMeanSquaredError, "
		    "MeanAbsoluteError, "
		    "BinaryCrossentropy, BinaryAccuracy, "
		    "SparseCategoricalAccuracy, CategoricalAccuracy; Mean and "
		    "Sum take values, not (y_true, y_pred): update them in a "
		    "traced step)",
		    where, cJSON_IsString(cls) ? cls->valuestring : "(none)");
	}
	snprintf(at, sizeof(at), "%s (%s)", where, metric_classes[i].cls);
	if (cfg != NULL && !cJSON_IsObject(cfg)) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: config must be an object", at);
	}
	if (cfg == NULL) { /* no config: the class's defaults */
		static const cJSON empty = {.type = cJSON_Object};
		cfg                      = &empty;
	}
	*kind = metric_classes[i].kind;
	spec_defaults(*kind, s);
	s->object = true;
	snprintf(s->cls, sizeof(s->cls), "%s", metric_classes[i].cls);
	for (const char *const *f = metric_classes[i].fields; *f != NULL;
	     f++) {
		keys[nkeys++] = *f;
	}
	if (pasci_json_check_keys(cfg, keys, nkeys, at) != 0 ||
	    pasci_json_string(cfg, "name", &n, at) != 0 ||
	    (!is_unset(cfg, "dtype") &&
	        pasci_json_string(cfg, "dtype", &dtype, at) != 0) ||
	    read_fields(m, *kind, cfg, s, at) != 0) {
		return PASCO_EINVAL;
	}
	n = n != NULL ? n : metric_classes[i].name;
	if (n[0] == 0 || strlen(n) >= PASCI_METRIC_NAME_MAX) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: name must be 1 to %d bytes", at,
		    PASCI_METRIC_NAME_MAX - 1);
	}
	snprintf(name, PASCI_METRIC_NAME_MAX, "%s", n);
	return PASCO_OK;
}

/* Checks that need the output's width: AUC, Precision and Recall of
 * a name take one probability per example. */
static int
check_width(const pasco_model *m, pasci_metric_kind kind,
    const pasci_metric_spec *s, const char *name)
{
	int64_t width = pasco_model_output_width(m);
	if (!s->object &&
	    (kind == PASCI_METRIC_AUC || kind == PASCI_METRIC_PRECISION ||
	        kind == PASCI_METRIC_RECALL) &&
	    width != 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: %s takes one probability per example; the "
		    "output of '%s' has width %lld (a metric object, e.g. "
		    "Precision with top_k or class_id, takes labels of the "
		    "output's shape)",
		    name, m->layers[m->nlayers - 1].name, (long long) width);
	}
	return PASCO_OK;
}

static bool
name_taken(const pasci_compile *c, size_t k, const char *name)
{
	for (size_t j = 0; j < k; j++) {
		if (strcmp(c->metric_names[j], name) == 0) {
			return true;
		}
	}
	return false;
}

/* name, or name_1, name_2, ... when an earlier metric has it (Keras's
 * unique names); a weighted metric's taken name is weighted_<name> first
 * (Keras's compile_utils). */
static void
unique_name(const pasci_compile *c, size_t k, char *name)
{
	char base[PASCI_METRIC_NAME_MAX], suffix[16];
	if (c->metric_weighted[k] && name_taken(c, k, name)) {
		snprintf(base, sizeof(base), "weighted_%s", name);
		snprintf(name, PASCI_METRIC_NAME_MAX, "%s", base);
	}
	snprintf(base, sizeof(base), "%s", name);
	for (int n = 1;; n++) {
		if (!name_taken(c, k, name)) {
			return;
		}
		/* the base cut where the suffix would not fit */
		int room = PASCI_METRIC_NAME_MAX - 1 -
		           snprintf(suffix, sizeof(suffix), "_%d", n);
		snprintf(
		    name, PASCI_METRIC_NAME_MAX, "%.*s%s", room, base, suffix);
	}
}

int
pasci_metric_read(
    const pasco_model *m, pasci_compile *c, size_t k, const char *text)
{
	pasci_metric_kind *kind = &c->metric_kinds[k];
	pasci_metric_spec *s    = &c->metric_specs[k];
	char              *name = c->metric_names[k];
	char               where[48];
	int                rv;
	snprintf(where, sizeof(where), "compile: metrics[%zu]", k);
	if (text == NULL || text[0] == 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: expected a metric name or a metric object, got %s",
		    where, text == NULL ? "NULL" : "\"\"");
	}
	if (text[0] == '{') {
		cJSON *obj = cJSON_Parse(text);
		if (obj == NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: '%.40s' is not JSON", where, text);
		}
		rv = read_object(m, obj, kind, s, name, where);
		cJSON_Delete(obj);
	} else if (strlen(text) >= PASCI_METRIC_NAME_MAX) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "%s: metric name too long (at most %d bytes)", where,
		    PASCI_METRIC_NAME_MAX - 1);
	} else if ((rv = resolve_name(m, c, text, kind)) == 0) {
		spec_defaults(*kind, s);
		snprintf(s->as_given, sizeof(s->as_given), "%s", text);
		snprintf(name, PASCI_METRIC_NAME_MAX, "%s", text);
	}
	if (rv == 0 && (rv = check_width(m, *kind, s, name)) == 0) {
		unique_name(c, k, name);
	}
	return rv;
}

/* AUC's and Precision's "thresholds" as given (null when none). */
static bool
write_thresholds(cJSON *cfg, const pasci_metric_spec *s)
{
	cJSON *list;
	if (s->ngiven == 0) {
		return cJSON_AddNullToObject(cfg, "thresholds") != NULL;
	}
	if (s->scalar_threshold) {
		return cJSON_AddNumberToObject(
		           cfg, "thresholds", s->given[0]) != NULL;
	}
	if ((list = cJSON_AddArrayToObject(cfg, "thresholds")) == NULL) {
		return false;
	}
	for (int32_t i = 0; i < s->ngiven; i++) {
		if (!cJSON_AddItemToArray(
		        list, cJSON_CreateNumber(s->given[i]))) {
			return false;
		}
	}
	return true;
}

static bool
write_labels(cJSON *cfg, const pasci_metric_spec *s)
{
	cJSON *list;
	if (!cJSON_AddBoolToObject(cfg, "multi_label", s->multi_label) ||
	    (s->num_labels > 0 ? !cJSON_AddNumberToObject(
	                             cfg, "num_labels", s->num_labels)
	                       : !cJSON_AddNullToObject(cfg, "num_labels"))) {
		return false;
	}
	if (s->nweights == 0) {
		return cJSON_AddNullToObject(cfg, "label_weights") != NULL;
	}
	if ((list = cJSON_AddArrayToObject(cfg, "label_weights")) == NULL) {
		return false;
	}
	for (int32_t i = 0; i < s->nweights; i++) {
		if (!cJSON_AddItemToArray(
		        list, cJSON_CreateNumber(s->label_weights[i]))) {
			return false;
		}
	}
	return true;
}

static bool
write_fields(cJSON *cfg, pasci_metric_kind kind, const pasci_metric_spec *s)
{
	static const char *const curves[] = {"ROC", "PR", "PRGAIN"};
	static const char *const sums[]   = {
	      "interpolation", "minoring", "majoring"};
	switch (kind) {
	case PASCI_METRIC_AUC:
		return cJSON_AddNumberToObject(
		           cfg, "num_thresholds", s->nthresholds) &&
		       cJSON_AddStringToObject(
		           cfg, "curve", curves[s->curve]) &&
		       cJSON_AddStringToObject(
		           cfg, "summation_method", sums[s->summation]) &&
		       cJSON_AddBoolToObject(
		           cfg, "from_logits", s->from_logits) &&
		       write_labels(cfg, s) &&
		       (s->ngiven == 0 || write_thresholds(cfg, s));
	case PASCI_METRIC_PRECISION:
	case PASCI_METRIC_RECALL:
		return write_thresholds(cfg, s) &&
		       (s->top_k > 0 ? cJSON_AddNumberToObject(
		                           cfg, "top_k", s->top_k) != NULL
		                     : cJSON_AddNullToObject(cfg, "top_k") !=
		                           NULL) &&
		       (s->class_id >= 0 ? cJSON_AddNumberToObject(cfg,
		                               "class_id", s->class_id) != NULL
		                         : cJSON_AddNullToObject(
		                               cfg, "class_id") != NULL);
	case PASCI_METRIC_TOP_K:
		return cJSON_AddNumberToObject(cfg, "k", s->k) != NULL;
	case PASCI_METRIC_SPARSE_TOP_K:
		return cJSON_AddNumberToObject(cfg, "k", s->k) &&
		       cJSON_AddBoolToObject(
		           cfg, "from_sorted_ids", s->from_sorted_ids);
	case PASCI_METRIC_BCE:
		return cJSON_AddBoolToObject(
		           cfg, "from_logits", s->from_logits) &&
		       cJSON_AddNumberToObject(
		           cfg, "label_smoothing", s->label_smoothing);
	case PASCI_METRIC_BINARY_ACCURACY:
		return cJSON_AddNumberToObject(
		           cfg, "threshold", s->threshold) != NULL;
	default:
		return true;
	}
}

bool
pasci_metric_write(cJSON *metrics, const pasci_compile *c, size_t k)
{
	const pasci_metric_spec *s = &c->metric_specs[k];
	cJSON                   *obj, *cfg;
	if (!s->object) {
		return cJSON_AddItemToArray(
		    metrics, cJSON_CreateString(s->as_given));
	}
	return (obj = cJSON_CreateObject()) != NULL &&
	       cJSON_AddItemToArray(metrics, obj) &&
	       cJSON_AddStringToObject(obj, "class_name", s->cls) &&
	       (cfg = cJSON_AddObjectToObject(obj, "config")) != NULL &&
	       cJSON_AddStringToObject(cfg, "name", c->metric_names[k]) &&
	       write_fields(cfg, c->metric_kinds[k], s);
}

int
pasci_metric_texts(
    const cJSON *ms, const char **texts, char **owned, size_t *n)
{
	const cJSON *it;
	*n = 0;
	cJSON_ArrayForEach(it, ms)
	{
		owned[*n] = NULL;
		if (cJSON_IsObject(it) &&
		    (owned[*n] = cJSON_PrintUnformatted(it)) == NULL) {
			return pasci_model_fail(PASCO_ENOMEM, "out of memory");
		}
		if (!cJSON_IsString(it) && owned[*n] == NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "compile_config: metrics[%zu] is neither a name "
			    "nor a metric object",
			    *n);
		}
		texts[*n] = owned[*n] != NULL ? owned[*n] : it->valuestring;
		(*n)++;
	}
	return PASCO_OK;
}
