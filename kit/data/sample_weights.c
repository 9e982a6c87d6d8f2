/*
 * A files dataset's per-example weights (Keras's sample_weight and
 * class_weight, include/pasco/dataset.h): its spec's "sample_weight"
 * names a feature that is moved out of x into the element's third item,
 * or its "class_weight" maps each example's class (its integer label, or
 * a one-hot row's argmax) to a weight; either way an element (x, y)
 * becomes (x, y, sample_weight), sample_weight f32 [batch] (a feature
 * of width T with label_shape [T]: [batch, T], one per step). Keras's
 * data adapters do the same (tf_dataset_adapter.make_class_weight_map_fn:
 * a class outside those named weighs 1). The weights are read once,
 * copied; the map runs on whichever thread reads the dataset.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "files_dataset.h"
#include "util.h"
#include "value_impl.h"

#define CLASS_WEIGHT_MAX_CLASS 1000000

struct pasci_weights {
	char   *feature; /* sample_weight: the feature moved out of x */
	double *classes; /* class_weight: weight per class id, 1 unnamed */
	int64_t nclasses;
};

void
pasci_weights_free(pasci_weights *w)
{
	if (w != NULL) {
		free(w->feature);
		free(w->classes);
		free(w);
	}
}

/* The class_weight object {"<class id>": weight, ...} into w. */
static int
read_classes(const cJSON *cw, pasci_weights *w)
{
	const cJSON *it;
	int64_t      max = -1;
	cJSON_ArrayForEach(it, cw)
	{
		char     *end;
		long long c = strtoll(it->string, &end, 10);
		if (end == it->string || *end != 0 || c < 0 ||
		    c > CLASS_WEIGHT_MAX_CLASS || !cJSON_IsNumber(it) ||
		    !isfinite(it->valuedouble)) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: class_weight must map class ids "
			    "(integers in [0, %d], as strings) to numbers; "
			    "got '%s'",
			    CLASS_WEIGHT_MAX_CLASS, it->string);
		}
		max = c > max ? c : max;
	}
	w->nclasses = max + 1;
	if (max >= 0 && (w->classes = malloc((size_t) w->nclasses *
	                                     sizeof(*w->classes))) == NULL) {
		return pasco_dataset_fail(PASCO_ENOMEM, "out of memory");
	}
	for (int64_t c = 0; c < w->nclasses; c++) {
		w->classes[c] = 1;
	}
	cJSON_ArrayForEach(it, cw)
	{
		w->classes[strtoll(it->string, NULL, 10)] = it->valuedouble;
	}
	return PASCO_OK;
}

int
pasci_weights_read(const cJSON *spec, pasci_weights **out)
{
	const cJSON *sw =
	    cJSON_GetObjectItemCaseSensitive(spec, "sample_weight");
	const cJSON *cw =
	    cJSON_GetObjectItemCaseSensitive(spec, "class_weight");
	pasci_weights *w;
	int            rv = PASCO_OK;
	*out              = NULL;
	sw                = cJSON_IsNull(sw) ? NULL : sw;
	cw                = cJSON_IsNull(cw) ? NULL : cw;
	if (sw == NULL && cw == NULL) {
		return PASCO_OK;
	}
	if (sw != NULL && cw != NULL) { /* Keras refuses both too */
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: You cannot `class_weight` and "
		    "`sample_weight` at the same time.");
	}
	if (sw != NULL && (!cJSON_IsString(sw) || sw->valuestring[0] == 0)) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: sample_weight must be the name of one of "
		    "its features");
	}
	if (cw != NULL && !cJSON_IsObject(cw)) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: class_weight must be an object of class "
		    "id -> weight");
	}
	if ((w = pasci_calloc(1, sizeof(*w))) == NULL ||
	    (sw != NULL && (w->feature = strdup(sw->valuestring)) == NULL)) {
		pasci_weights_free(w);
		return pasco_dataset_fail(PASCO_ENOMEM, "out of memory");
	}
	if (cw != NULL && (rv = read_classes(cw, w)) != 0) {
		pasci_weights_free(w);
		return rv;
	}
	*out = w;
	return PASCO_OK;
}

/* Example i's class as Keras takes it: its label rounded, or a one-hot
 * row's argmax (y [batch, classes]). */
static int64_t
class_of(const pasco_tensor *y, int64_t i, int64_t width)
{
	int64_t best = 0;
	if (width == 1) {
		return (int64_t) llround(pasco_tensor_get(y, i));
	}
	for (int64_t j = 1; j < width; j++) {
		if (pasco_tensor_get(y, i * width + j) >
		    pasco_tensor_get(y, i * width + best)) {
			best = j;
		}
	}
	return best;
}

/* class_weight's weights of the labels y, f32 [batch]. */
static int
class_weights(
    const pasci_weights *w, const pasco_tensor *y, pasco_tensor **out)
{
	int64_t n     = y->rank > 0 ? y->shape[0] : 1;
	int64_t width = n > 0 ? y->count / n : 1;
	float  *d;
	if (pasco_tensor_alloc(out, PASCO_F32, 1, (int64_t[]){n}) != 0) {
		return pasco_dataset_fail(PASCO_ENOMEM, "out of memory");
	}
	d = (*out)->data;
	for (int64_t i = 0; i < n; i++) {
		int64_t c = class_of(y, i, width);
		d[i] = c >= 0 && c < w->nclasses ? (float) w->classes[c] : 1;
	}
	return PASCO_OK;
}

/* x without the weight feature into *rest, that feature's tensor into
 * *t (a reference). */
static int
take_feature(const pasci_weights *w, const pasco_value *x, pasco_value **rest,
    pasco_tensor **t)
{
	const pasco_value *v = pasco_value_get(x, w->feature);
	size_t             n = pasco_value_size(x), k = 0;
	const char       **keys;
	pasco_value      **items;
	if (pasco_value_kind_of(x) != PASCO_VALUE_DICT || v == NULL ||
	    pasco_value_as_tensor(v) == NULL) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: sample_weight '%s' is not one of the "
		    "features of x (give it in \"features\", width 1, or "
		    "T for one weight per step of a label_shape [T])",
		    w->feature);
	}
	keys  = malloc((n + 1) * sizeof(*keys));
	items = malloc((n + 1) * sizeof(*items));
	for (size_t i = 0; keys != NULL && items != NULL && i < n; i++) {
		if (strcmp(pasco_value_key(x, i), w->feature) != 0) {
			keys[k]    = pasco_value_key(x, i);
			items[k++] = pasco_value_clone(pasco_value_item(x, i));
		}
	}
	*rest = keys != NULL && items != NULL
	            ? pasci_value_dict_of(k, keys, items)
	            : NULL;
	free(keys);
	free(items);
	if (*rest == NULL) {
		return pasco_dataset_fail(PASCO_ENOMEM, "out of memory");
	}
	*t = pasco_tensor_hold((pasco_tensor *) pasco_value_as_tensor(v));
	return PASCO_OK;
}

static int
weights_map(void *arg, const pasco_value *e, pasco_value **out)
{
	const pasci_weights *w = arg;
	const pasco_value   *x = pasco_value_item(e, 0);
	const pasco_tensor  *y = pasco_value_as_tensor(pasco_value_item(e, 1));
	pasco_value         *rest = NULL;
	pasco_tensor        *t    = NULL;
	int                  rv;
	if (pasco_value_kind_of(e) != PASCO_VALUE_LIST ||
	    pasco_value_size(e) != 2 || y == NULL) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: sample_weight and class_weight need a "
		    "label (elements (x, y))");
	}
	rv = w->feature != NULL ? take_feature(w, x, &rest, &t)
	                        : class_weights(w, y, &t);
	if (rv != 0) {
		return rv;
	}
	if (rest == NULL && (rest = pasco_value_clone(x)) == NULL) {
		pasco_tensor_release(t);
		return pasco_dataset_fail(PASCO_ENOMEM, "out of memory");
	}
	*out = pasco_value_list(3, rest,
	    pasco_value_clone(pasco_value_item(e, 1)), pasco_value_tensor(t));
	return *out != NULL
	           ? PASCO_OK
	           : pasco_dataset_fail(PASCO_ENOMEM, "out of memory");
}

static void
weights_free(void *arg)
{
	pasci_weights_free(arg);
}

int
pasci_weights_apply(pasco_dataset **ds, pasci_weights *w)
{
	if (w == NULL) {
		return PASCO_OK;
	}
	return pasco_dataset_map_with(ds, *ds, weights_map, w, weights_free);
}
