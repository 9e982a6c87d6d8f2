/*
 * Keras's losses as data (include/pasco/layers.h): their names and
 * aliases, their classes' configs ({"class_name": "Huber", "config":
 * {"delta": 2.0}}) read and written with Keras's argument names and
 * defaults, the checks of their parameters, and the label smoothing of
 * the crossentropies. The losses themselves are ops on the tape
 * (model/ops_loss.c, model/ops_loss_keras.c). Stateless: any thread.
 */
#include "model_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A kind's Keras class, its default name (the class's name argument),
 * and which arguments it takes. */
enum {
	A_LOGITS   = 1 << 0, /* from_logits */
	A_SMOOTH   = 1 << 1, /* label_smoothing */
	A_AXIS     = 1 << 2, /* axis */
	A_DELTA    = 1 << 3, /* delta */
	A_FOCAL    = 1 << 4, /* apply_class_balancing, alpha, gamma */
	A_IGNORE   = 1 << 5, /* ignore_class (null only) */
	A_CROSSENT = A_LOGITS | A_SMOOTH | A_AXIS,
};

static const struct {
	const char *cls, *name;
	unsigned    args;
} kinds[] = {
    [PASCO_LOSS_MSE] = {"MeanSquaredError", "mean_squared_error", 0},
    [PASCO_LOSS_BINARY_CROSSENTROPY] = {"BinaryCrossentropy",
        "binary_crossentropy", A_CROSSENT},
    [PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY] =
        {"SparseCategoricalCrossentropy", "sparse_categorical_crossentropy",
            A_LOGITS | A_AXIS | A_IGNORE},
    [PASCO_LOSS_CATEGORICAL_CROSSENTROPY] = {"CategoricalCrossentropy",
        "categorical_crossentropy", A_CROSSENT},
    [PASCO_LOSS_MAE]      = {"MeanAbsoluteError", "mean_absolute_error", 0},
    [PASCO_LOSS_MAPE]     = {"MeanAbsolutePercentageError",
            "mean_absolute_percentage_error", 0},
    [PASCO_LOSS_HUBER]    = {"Huber", "huber_loss", A_DELTA},
    [PASCO_LOSS_LOG_COSH] = {"LogCosh", "log_cosh", 0},
    [PASCO_LOSS_HINGE]    = {"Hinge", "hinge", 0},
    [PASCO_LOSS_SQUARED_HINGE]     = {"SquaredHinge", "squared_hinge", 0},
    [PASCO_LOSS_KL_DIVERGENCE]     = {"KLDivergence", "kl_divergence", 0},
    [PASCO_LOSS_POISSON]           = {"Poisson", "poisson", 0},
    [PASCO_LOSS_COSINE_SIMILARITY] = {"CosineSimilarity", "cosine_similarity",
        A_AXIS},
    [PASCO_LOSS_BINARY_FOCAL_CROSSENTROPY] = {"BinaryFocalCrossentropy",
        "binary_focal_crossentropy", A_CROSSENT | A_FOCAL},
};

/* Keras's function names and aliases (keras/src/losses/__init__.py). */
static const struct {
	const char     *name;
	pasco_loss_kind kind;
} names[] = {
    {"mse", PASCO_LOSS_MSE},
    {"mean_squared_error", PASCO_LOSS_MSE},
    {"mae", PASCO_LOSS_MAE},
    {"mean_absolute_error", PASCO_LOSS_MAE},
    {"mape", PASCO_LOSS_MAPE},
    {"mean_absolute_percentage_error", PASCO_LOSS_MAPE},
    {"huber", PASCO_LOSS_HUBER},
    {"log_cosh", PASCO_LOSS_LOG_COSH},
    {"logcosh", PASCO_LOSS_LOG_COSH},
    {"hinge", PASCO_LOSS_HINGE},
    {"squared_hinge", PASCO_LOSS_SQUARED_HINGE},
    {"kl_divergence", PASCO_LOSS_KL_DIVERGENCE},
    {"kld", PASCO_LOSS_KL_DIVERGENCE},
    {"poisson", PASCO_LOSS_POISSON},
    {"cosine_similarity", PASCO_LOSS_COSINE_SIMILARITY},
    {"binary_crossentropy", PASCO_LOSS_BINARY_CROSSENTROPY},
    {"bce", PASCO_LOSS_BINARY_CROSSENTROPY},
    {"binary_focal_crossentropy", PASCO_LOSS_BINARY_FOCAL_CROSSENTROPY},
    {"sparse_categorical_crossentropy",
        PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY},
    {"categorical_crossentropy", PASCO_LOSS_CATEGORICAL_CROSSENTROPY},
};

static bool
kind_known(int kind)
{
	return kind > 0 && (size_t) kind < COUNT(kinds) &&
	       kinds[kind].cls != NULL;
}

/* Keras's defaults of a kind. */
static pasco_loss
loss_defaults(pasco_loss_kind kind, bool from_logits)
{
	return (pasco_loss){.kind = kind,
	    .from_logits          = from_logits,
	    .delta                = 1.0,
	    .alpha                = 0.25,
	    .gamma                = 2.0,
	    .axis                 = -1};
}

int
pasco_loss_from_name(const char *name, bool from_logits, pasco_loss *out)
{
	for (size_t i = 0; name != NULL && i < COUNT(names); i++) {
		if (strcmp(name, names[i].name) == 0) {
			*out = loss_defaults(names[i].kind, from_logits);
			return PASCO_OK;
		}
	}
	return pasci_model_fail(PASCO_EINVAL,
	    "unknown loss '%s' (mse, mae, mape, huber, log_cosh, hinge, "
	    "squared_hinge, kl_divergence, poisson, cosine_similarity, "
	    "binary_crossentropy, binary_focal_crossentropy, "
	    "sparse_categorical_crossentropy, categorical_crossentropy, or "
	    "their long names)",
	    name != NULL ? name : "(null)");
}

int
pasci_loss_check(const pasco_loss *l, const char *at)
{
	unsigned args = kind_known((int) l->kind) ? kinds[l->kind].args : 0;
	if (!kind_known((int) l->kind) || l->kind == PASCO_LOSS_GRAPH) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: unknown loss kind %d", at, (int) l->kind);
	}
	if (l->from_logits && !(args & A_LOGITS)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s takes no from_logits", at, kinds[l->kind].name);
	}
	if (l->kind == PASCO_LOSS_HUBER &&
	    !(l->delta > 0 && isfinite(l->delta))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: Huber: delta must be a number > 0, got %g", at,
		    l->delta);
	}
	if (!(l->label_smoothing >= 0 && l->label_smoothing <= 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s: label_smoothing must be in [0, 1], got %g", at,
		    kinds[l->kind].name, l->label_smoothing);
	}
	if ((args & A_FOCAL) &&
	    (!(l->gamma >= 0 && isfinite(l->gamma)) || !isfinite(l->alpha))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: BinaryFocalCrossentropy: gamma must be a number >= 0 "
		    "and alpha a number, got %g and %g",
		    at, l->gamma, l->alpha);
	}
	if ((args & A_AXIS) && l->axis != -1 &&
	    !(l->kind == PASCO_LOSS_COSINE_SIMILARITY && l->axis == 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s: axis %d: only the last axis (-1) is taken", at,
		    kinds[l->kind].name, (int) l->axis);
	}
	return PASCO_OK;
}

/* The config's fields of Keras's loss classes, into l. */
static int
read_fields(const cJSON *c, pasco_loss *l, const char *at)
{
	static const char *const keys[] = {"name", "reduction", "dtype",
	    "from_logits", "label_smoothing", "axis", "delta", "alpha",
	    "gamma", "apply_class_balancing", "ignore_class"};
	static const unsigned    need[] = {0, 0, 0, A_LOGITS, A_SMOOTH, A_AXIS,
	       A_DELTA, A_FOCAL, A_FOCAL, A_FOCAL, A_IGNORE};
	const cJSON *red = cJSON_GetObjectItemCaseSensitive(c, "reduction");
	const cJSON *dt  = cJSON_GetObjectItemCaseSensitive(c, "dtype");
	const cJSON *ig  = cJSON_GetObjectItemCaseSensitive(c, "ignore_class");
	double       axis = l->axis;
	if (pasci_json_check_keys(c, keys, COUNT(keys), at) != 0) {
		return PASCO_EINVAL;
	}
	for (size_t k = 3; k < COUNT(keys); k++) {
		if (!(kinds[l->kind].args & need[k]) &&
		    cJSON_GetObjectItemCaseSensitive(c, keys[k]) != NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: %s takes no %s", at, kinds[l->kind].cls,
			    keys[k]);
		}
	}
	if ((red != NULL && !cJSON_IsNull(red) &&
	        strcmp(cJSON_GetStringValue(red) ? red->valuestring : "",
	            "sum_over_batch_size") != 0) ||
	    (dt != NULL && !cJSON_IsNull(dt) &&
	        strcmp(cJSON_GetStringValue(dt) ? dt->valuestring : "",
	            "float32") != 0) ||
	    (ig != NULL && !cJSON_IsNull(ig))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s: reduction \"sum_over_batch_size\", dtype null or "
		    "\"float32\" and ignore_class null are the ones taken",
		    at, kinds[l->kind].cls);
	}
	if (pasci_json_bool(c, "from_logits", &l->from_logits, at) != 0 ||
	    pasci_json_number(
	        c, "label_smoothing", &l->label_smoothing, false, 0, at) ||
	    pasci_json_number(c, "axis", &axis, true, -1, at) != 0 ||
	    pasci_json_number(c, "delta", &l->delta, false, -HUGE_VAL, at) ||
	    pasci_json_number(c, "alpha", &l->alpha, false, -HUGE_VAL, at) ||
	    pasci_json_number(c, "gamma", &l->gamma, false, 0, at) ||
	    pasci_json_bool(c, "apply_class_balancing",
	        &l->apply_class_balancing, at) != 0) {
		return PASCO_EINVAL;
	}
	l->axis = (int32_t) fmin(axis, 8);
	return pasci_loss_check(l, at);
}

int
pasci_loss_config_read(const cJSON *o, pasco_loss *l, const char *at)
{
	const char  *cls[COUNT(kinds)];
	const cJSON *c;
	int          kind;
	if (cJSON_IsString(o)) {
		return pasco_loss_from_name(o->valuestring, false, l);
	}
	for (size_t k = 0; k < COUNT(kinds); k++) {
		cls[k] = kinds[k].cls;
	}
	/* a function's name as its class: Keras serializes those so too */
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "class_name");
	for (size_t i = 0; cJSON_IsString(name) && i < COUNT(names); i++) {
		if (strcmp(name->valuestring, names[i].name) == 0) {
			*l = loss_defaults(names[i].kind, false);
			c  = cJSON_GetObjectItemCaseSensitive(o, "config");
			return c == NULL || cJSON_IsNull(c)
			           ? PASCO_OK
			           : read_fields(c, l, at);
		}
	}
	if (pasci_json_read_class(o, cls, COUNT(cls), &kind, &c, at) != 0) {
		return PASCO_EINVAL;
	}
	*l = loss_defaults((pasco_loss_kind) kind, false);
	return read_fields(c, l, at);
}

int
pasco_loss_from_config(const char *json, pasco_loss *out)
{
	cJSON *o = json != NULL ? cJSON_Parse(json) : NULL;
	int    rv;
	if (o == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "loss config: not JSON (want {\"class_name\": \"Huber\", "
		    "\"config\": {\"delta\": 2.0}})");
	}
	rv = pasci_loss_config_read(o, out, "loss config");
	cJSON_Delete(o);
	return rv;
}

bool
pasci_loss_config_write(cJSON *parent, const char *key, const pasco_loss *l)
{
	unsigned args = kind_known((int) l->kind) ? kinds[l->kind].args : 0;
	cJSON   *c    = kind_known((int) l->kind)
	                    ? pasci_json_class(parent, key, kinds[l->kind].cls)
	                    : NULL;
	bool     ok   = c != NULL &&
	          cJSON_AddStringToObject(c, "name", kinds[l->kind].name);
	if (ok && (args & A_LOGITS)) {
		ok = cJSON_AddBoolToObject(c, "from_logits", l->from_logits);
	}
	if (ok && (args & A_SMOOTH)) {
		ok = cJSON_AddNumberToObject(
		    c, "label_smoothing", l->label_smoothing);
	}
	if (ok && (args & A_AXIS)) {
		ok = cJSON_AddNumberToObject(c, "axis", l->axis);
	}
	if (ok && (args & A_DELTA)) {
		ok = cJSON_AddNumberToObject(c, "delta", l->delta);
	}
	if (ok && (args & A_FOCAL)) {
		ok = cJSON_AddBoolToObject(c, "apply_class_balancing",
		         l->apply_class_balancing) &&
		     cJSON_AddNumberToObject(c, "alpha", l->alpha) &&
		     cJSON_AddNumberToObject(c, "gamma", l->gamma);
	}
	return ok;
}

int
pasci_loss_smooth_labels(const pasco_loss *l, const pasco_tensor *y,
    int64_t classes, pasco_tensor **out)
{
	double s   = l->label_smoothing;
	double add = l->kind == PASCO_LOSS_CATEGORICAL_CROSSENTROPY
	                 ? s / (double) classes
	                 : s / 2;
	*out       = NULL;
	if (s == 0 || (l->kind != PASCO_LOSS_BINARY_CROSSENTROPY &&
	                  l->kind != PASCO_LOSS_CATEGORICAL_CROSSENTROPY)) {
		return PASCO_OK;
	}
	if (pasco_tensor_alloc(out, PASCO_F64, y->rank, y->shape) != 0) {
		return PASCO_ENOMEM;
	}
	for (int64_t i = 0; i < y->count; i++) {
		pasco_tensor_set(
		    *out, i, pasco_tensor_get(y, i) * (1 - s) + add);
	}
	return PASCO_OK;
}

bool
pasci_loss_step_weights(const pasco_tensor *sw, const pasco_tensor *out)
{
	if (sw->dtype == PASCO_U8 || out->rank < 3 ||
	    sw->rank != out->rank - 1) {
		return false;
	}
	for (int i = 0; i < sw->rank; i++) {
		if (sw->shape[i] != out->shape[i]) {
			return false;
		}
	}
	return true;
}

int
pasci_loss_mask_weights(const pasco_tensor *out, const pasco_tensor *mask,
    const pasco_tensor *sw, const char *layer, pasco_tensor **w)
{
	int64_t batch = out->rank > 0 ? out->shape[0] : 1;
	int64_t rows  = out->rank >= 2 && out->shape[out->rank - 1] > 0
	                    ? out->count / out->shape[out->rank - 1]
	                    : batch;
	int64_t per   = batch > 0 ? rows / batch : 1;
	int64_t div   = per; /* row r weighs sw[r / div] */
	double  valid = 0, scale;
	*w            = NULL;
	if (mask == NULL && (sw == NULL || per == 1)) {
		return PASCO_OK; /* sw as it is: one per example and row */
	}
	if (mask != NULL && mask->count != rows) {
		return pasci_model_fail(PASCO_EINVAL,
		    "loss: the mask %s of '%s' does not fit its output %s "
		    "(want one per step: %lld)",
		    PASCI_SHAPE(mask->rank, mask->shape), layer,
		    PASCI_SHAPE(out->rank, out->shape), (long long) rows);
	}
	if (sw != NULL && pasci_loss_step_weights(sw, out)) {
		div = 1; /* Keras's [batch, T]: one weight per step */
	} else if (sw != NULL && (sw->count != batch || sw->rank > 2 ||
	                             (sw->rank == 2 && sw->shape[1] != 1) ||
	                             sw->dtype == PASCO_U8)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "loss: sample weights %s%s against the output %s of "
		    "'%s': want one number per example ([%lld] or [%lld, "
		    "1])%s",
		    pasco_dtype_name(sw->dtype),
		    PASCI_SHAPE(sw->rank, sw->shape),
		    PASCI_SHAPE(out->rank, out->shape), layer,
		    (long long) batch, (long long) batch,
		    per > 1 ? " or one per step (the output's shape without "
		              "its last dimension)"
		            : "");
	}
	for (int64_t r = 0; mask != NULL && r < rows; r++) {
		valid += pasco_tensor_get(mask, r) != 0;
	}
	/* Keras's apply_mask: total / valid per unmasked step, 0 when no
	 * step is (divide_no_nan) */
	scale = mask == NULL ? 1 : valid > 0 ? (double) rows / valid : 0;
	if (pasco_tensor_alloc(w, PASCO_F64, 1, &rows) != 0) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (int64_t r = 0; r < rows; r++) {
		double m = mask == NULL || pasco_tensor_get(mask, r) != 0;
		((double *) (*w)->data)[r] =
		    (sw != NULL ? pasco_tensor_get(sw, r / div) : 1) * m *
		    scale;
	}
	return PASCO_OK;
}
