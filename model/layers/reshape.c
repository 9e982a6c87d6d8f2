/*
 * Keras's Reshape(target_shape): the same values per example in the
 * target shape (1 to PASCO_LAYER_MAX_SHAPE dimensions, one of them -1,
 * inferred), and the config's lists of dimensions the kinds share
 * (layer_desc.h: Reshape's target_shape, Dropout's noise_shape) and
 * data_format. No variables. Its descriptor (layer_desc.h). Stateless:
 * any thread.
 */
#include "layer_desc.h"
#include "model_impl.h"
#include "tape_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

pasco_layer
pasco_layer_reshape(int32_t rank, const int64_t *target_shape)
{
	pasco_layer l = pasci_layer_defaults(PASCO_LAYER_RESHAPE);
	l.target_rank = rank;
	for (int32_t k = 0; k < rank && k < PASCO_LAYER_MAX_SHAPE; k++) {
		l.target_shape[k] = target_shape[k];
	}
	return pasci_layer_named(l);
}

int
pasci_json_read_dims(const cJSON *c, const char *key, int32_t *rank,
    int64_t *dims, int32_t max, bool null_ok, const char *at)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(c, key), *it;
	int32_t      n = 0;
	if (a == NULL || cJSON_IsNull(a)) {
		*rank = 0;
		return PASCO_OK;
	}
	if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) < 1 ||
	    cJSON_GetArraySize(a) > max) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: %s must be a list of 1 to %d dimensions", at, key,
		    (int) max);
	}
	cJSON_ArrayForEach(it, a)
	{
		double v = null_ok && cJSON_IsNull(it) ? -1
		           : cJSON_IsNumber(it)        ? it->valuedouble
		                                       : NAN;
		if (!(v >= -1 && v <= 9007199254740992.0 && v == floor(v))) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: %s[%d] must be a whole number >= -1%s", at,
			    key, (int) n, null_ok ? " or null" : "");
		}
		if (v > (double) PASCI_MAX_WIDTH) {
			char k[48];
			snprintf(k, sizeof(k), "%s[%d]", key, (int) n);
			return pasci_json_bound(
			    at, k, (int64_t) v, PASCI_MAX_WIDTH);
		}
		dims[n++] = (int64_t) v;
	}
	*rank = n;
	return PASCO_OK;
}

bool
pasci_json_write_dims(
    cJSON *c, const char *key, int32_t rank, const int64_t *dims, bool null_ok)
{
	cJSON *a;
	if (rank == 0) {
		return cJSON_AddNullToObject(c, key) != NULL;
	}
	if ((a = cJSON_AddArrayToObject(c, key)) == NULL) {
		return false;
	}
	for (int32_t k = 0; k < rank; k++) {
		cJSON *v = null_ok && dims[k] == -1
		               ? cJSON_CreateNull()
		               : cJSON_CreateNumber((double) dims[k]);
		if (v == NULL || !cJSON_AddItemToArray(a, v)) {
			return false;
		}
	}
	return true;
}

int
pasci_json_read_data_format(
    const cJSON *c, bool *channels_first, const char *at)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(c, "data_format");
	if (f == NULL || cJSON_IsNull(f)) {
		return PASCO_OK;
	}
	if (!cJSON_IsString(f) ||
	    (strcmp(f->valuestring, "channels_last") &&
	        strcmp(f->valuestring, "channels_first"))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: data_format must be \"channels_last\" or "
		    "\"channels_first\"",
		    at);
	}
	*channels_first = strcmp(f->valuestring, "channels_first") == 0;
	return PASCO_OK;
}

static int
reshape_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	int unknown = 0;
	(void) widths;
	(void) out;
	if (l->target_rank < 1 || l->target_rank > PASCO_LAYER_MAX_SHAPE) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: target_shape must have 1 to %d dimensions, got %d",
		    l->name, PASCO_LAYER_MAX_SHAPE, (int) l->target_rank);
	}
	for (int32_t k = 0; k < l->target_rank; k++) {
		unknown += l->target_shape[k] == -1;
		if (l->target_shape[k] == 0 || l->target_shape[k] < -1 ||
		    unknown > 1) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: target_shape %s: each dimension positive, "
			    "one at most -1",
			    l->name,
			    PASCI_SHAPE(l->target_rank, l->target_shape));
		}
	}
	return PASCO_OK;
}

static int
reshape_shape(const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out)
{
	int64_t count = pasci_eshape_count(&in[0]), known = 1;
	int32_t free = -1;
	out->rank    = l->target_rank;
	for (int32_t k = 0; k < l->target_rank; k++) {
		out->dim[k] = l->target_shape[k];
		if (l->target_shape[k] == -1) {
			free = k;
		} else if (known <= count && __builtin_mul_overflow(known,
		                                 l->target_shape[k], &known)) {
			known = INT64_MAX; /* more than any count */
		}
	}
	if (free >= 0 && known <= count && count % known == 0) {
		out->dim[free] = count / known;
		known          = count;
	}
	if (known != count) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: cannot reshape an input of shape %s (%lld values per "
		    "example) to target_shape %s",
		    l->name, PASCI_ESHAPE(&in[0]), (long long) count,
		    PASCI_SHAPE(l->target_rank, l->target_shape));
	}
	return PASCO_OK;
}

static pasco_tnode *
reshape_call(pasci_layer_call *c)
{
	const pasci_eshape *s = &c->m->out_shape[c->i];
	const pasco_tensor *x = pasco_tnode_value(c->in[0]);
	int64_t             shape[PASCO_LAYER_MAX_SHAPE + 1];
	shape[0] = x->shape[0];
	memcpy(shape + 1, s->dim, (size_t) s->rank * sizeof(*shape));
	return pasco_t_reshape(c->tp, c->in[0], s->rank + 1, shape);
}

static bool
reshape_write(cJSON *c, const pasco_layer *l)
{
	return pasci_json_write_dims(
	    c, "target_shape", l->target_rank, l->target_shape, false);
}

static int
reshape_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	return pasci_json_read_dims(c, "target_shape", &l->target_rank,
	    l->target_shape, PASCO_LAYER_MAX_SHAPE, false, at);
}

const pasci_layer_desc pasci_layer_reshape_desc = {
    .kind       = PASCO_LAYER_RESHAPE,
    .class_name = "Reshape",
    .prefix     = "reshape",
    .keys       = {"name", "target_shape"},
    .args       = {"target_shape"},
    .min_inputs = 1,
    .check      = reshape_check,
    .shape      = reshape_shape,
    .call       = reshape_call,
    .write      = reshape_write,
    .read       = reshape_read,
};
