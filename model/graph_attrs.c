/*
 * The attribute readers of the graph op table's rows (model/graph_ops.c):
 * each reads a node's attributes from its JSON once, when a graph is
 * read, and names the node (`at`, "nodes[4] (clip)") and the attribute on
 * a bad one (pasci_model_fail). Stateless: any thread.
 */
#include <math.h>

#include "graph_attrs.h"
#include "model_impl.h"

static int
attr_missing(const char *at, const char *key)
{
	return pasci_model_fail(
	    PASCO_EINVAL, "%s: missing attribute '%s'", at, key);
}

/* Integers (axes, sizes, depths) fit an int32: a larger one is refused,
 * never truncated into another axis, and a product of a few of them
 * cannot overflow. */
#define ATTR_INT_MAX 2147483647.0

static int
out_of_range(const char *at, const char *key, double v)
{
	return pasci_model_fail(PASCO_EINVAL,
	    "%s: attribute '%s' holds %.17g: integers must be within "
	    "[-2^31 + 1, 2^31 - 1]",
	    at, key, v);
}

/* An integer attribute; absent: *v kept unless required. */
static int
attr_int(const cJSON *node, const char *key, bool required, int64_t *v,
    const char *at)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(node, key);
	if (it == NULL) {
		return required ? attr_missing(at, key) : PASCO_OK;
	}
	if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute '%s' must be an integer", at, key);
	}
	if (fabs(it->valuedouble) > ATTR_INT_MAX) {
		return out_of_range(at, key, it->valuedouble);
	}
	*v = (int64_t) it->valuedouble;
	return PASCO_OK;
}

static int
attr_num(const cJSON *node, const char *key, bool required, double *v,
    const char *at)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(node, key);
	if (it == NULL) {
		return required ? attr_missing(at, key) : PASCO_OK;
	}
	if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute '%s' must be a number", at, key);
	}
	*v = it->valuedouble;
	return PASCO_OK;
}

static int
attr_bool(const cJSON *node, const char *key, bool *v, const char *at)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(node, key);
	if (it != NULL && !cJSON_IsBool(it)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute '%s' must be true or false", at, key);
	}
	*v = it != NULL && cJSON_IsTrue(it);
	return PASCO_OK;
}

/* A list of integers (at most PASCI_GRAPH_MAX_LIST) into v[0..*n). */
static int
attr_list(const cJSON *node, const char *key, bool required, int64_t *v,
    size_t *n, const char *at)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(node, key), *e;
	*n              = 0;
	if (it == NULL) {
		return required ? attr_missing(at, key) : PASCO_OK;
	}
	if (!cJSON_IsArray(it) ||
	    cJSON_GetArraySize(it) > PASCI_GRAPH_MAX_LIST) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute '%s' must be a list of at most %d integers",
		    at, key, PASCI_GRAPH_MAX_LIST);
	}
	cJSON_ArrayForEach(e, it)
	{
		if (!cJSON_IsNumber(e) ||
		    e->valuedouble != floor(e->valuedouble)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: attribute '%s' must be a list of integers",
			    at, key);
		}
		if (fabs(e->valuedouble) > ATTR_INT_MAX) {
			return out_of_range(at, key, e->valuedouble);
		}
		v[(*n)++] = (int64_t) e->valuedouble;
	}
	return PASCO_OK;
}

int
pasci_graph_parse_matmul(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	int rv = attr_bool(node, "transpose_a", &a->b[0], at);
	return rv ? rv : attr_bool(node, "transpose_b", &a->b[1], at);
}

int
pasci_graph_parse_batch_dot(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	int rv = attr_list(node, "axes", true, a->list2, &a->nlist2, at);
	if (rv == PASCO_OK && a->nlist2 != 2) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute 'axes' must be a list of two integers", at);
	}
	return rv;
}

/* axis: an integer, a list, or null / absent (every axis); keepdims. */
int
pasci_graph_parse_reduce(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(node, "axis");
	int          rv;
	a->all = it == NULL || cJSON_IsNull(it);
	if (cJSON_IsArray(it)) {
		rv = attr_list(node, "axis", true, a->list, &a->nlist, at);
	} else if (!a->all) {
		rv       = attr_int(node, "axis", true, &a->list[0], at);
		a->nlist = 1;
	} else {
		rv = PASCO_OK;
	}
	return rv ? rv : attr_bool(node, "keepdims", &a->b[0], at);
}

int
pasci_graph_parse_axis(const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	return attr_int(node, "axis", true, &a->axis, at);
}

/* axis, -1 when absent (concat, softmax, log_softmax). */
int
pasci_graph_parse_axis_last(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	a->axis = -1;
	return attr_int(node, "axis", false, &a->axis, at);
}

int
pasci_graph_parse_gather(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	a->axis = 0;
	return attr_int(node, "axis", false, &a->axis, at);
}

int
pasci_graph_parse_reshape(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	int    rv    = attr_list(node, "shape", true, a->list, &a->nlist, at);
	double count = 1;
	for (size_t k = 0; rv == PASCO_OK && k < a->nlist; k++) {
		count *= a->list[k] > 0 ? (double) a->list[k] : 1;
	}
	if (rv == PASCO_OK && count > 0x1p62) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute 'shape' holds %.3g elements: too many", at,
		    count);
	}
	return rv;
}

/* perm; absent: the axes reversed (a->all). */
int
pasci_graph_parse_transpose(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	a->all = cJSON_GetObjectItemCaseSensitive(node, "perm") == NULL;
	return attr_list(node, "perm", false, a->list, &a->nlist, at);
}

int
pasci_graph_parse_slice(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	int rv = attr_list(node, "begin", true, a->list, &a->nlist, at);
	if (rv == PASCO_OK) {
		rv = attr_list(node, "size", true, a->list2, &a->nlist2, at);
	}
	if (rv == PASCO_OK && a->nlist != a->nlist2) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attributes 'begin' and 'size' must have one length",
		    at);
	}
	return rv;
}

int
pasci_graph_parse_one_hot(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	int rv = attr_int(node, "depth", true, &a->axis, at);
	if (rv == PASCO_OK && a->axis < 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute 'depth' must be 0 or more", at);
	}
	return rv;
}

int
pasci_graph_parse_clip(const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	int rv = attr_num(node, "min", true, &a->f[0], at);
	if (rv == PASCO_OK) {
		rv = attr_num(node, "max", true, &a->f[1], at);
	}
	if (rv == PASCO_OK && a->f[0] > a->f[1]) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute 'min' (%g) is above 'max' (%g)", at,
		    a->f[0], a->f[1]);
	}
	return rv;
}

int
pasci_graph_parse_l2_normalize(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	int rv  = attr_int(node, "axis", true, &a->axis, at);
	a->f[0] = 1e-12;
	if (rv == PASCO_OK) {
		rv = attr_num(node, "epsilon", false, &a->f[0], at);
	}
	if (rv == PASCO_OK && a->f[0] < 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute 'epsilon' must be 0 or more", at);
	}
	return rv;
}

int
pasci_graph_parse_dropout(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	int rv = attr_num(node, "rate", true, &a->f[0], at);
	if (rv == PASCO_OK && !(a->f[0] >= 0 && a->f[0] < 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: attribute 'rate' must be in [0, 1)", at);
	}
	return rv;
}

int
pasci_graph_parse_logits(
    const cJSON *node, pasci_graph_attrs *a, const char *at)
{
	return attr_bool(node, "from_logits", &a->b[0], at);
}
