/*
 * Keras's Discretization(bin_boundaries=None, num_bins=None, epsilon=0.01,
 * output_mode="int"): the bin of each value, right-open as numpy's
 * digitize ([b[i-1], b[i]) is bin i). The boundaries are in the config:
 * given, or found by the Python layer's adapt (quantiles within epsilon).
 * Its descriptor (layer_desc.h). Stateless: any thread.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layer_desc.h"
#include "model_impl.h"
#include "prep.h"
#include "util.h"

/* boundaries[0..n) into p, copied. */
static int
set_bounds(pasco_prep *p, size_t n, const double *b, const char *at)
{
	p->has_bounds = true;
	p->nbounds    = n;
	if ((p->bounds = malloc((n + 1) * sizeof(double))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < n; k++) {
		if (!isfinite(b[k]) || (k > 0 && b[k] < b[k - 1])) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: bin_boundaries must be finite and ascending; "
			    "[%zu] is %g after %g",
			    at, k, b[k], k > 0 ? b[k - 1] : -INFINITY);
		}
		p->bounds[k] = b[k];
	}
	return PASCO_OK;
}

int
pasco_layer_discretization(pasco_layer *out, size_t n,
    const double *boundaries, pasco_output_mode mode)
{
	pasco_prep *p = pasci_prep_alloc(PASCO_LAYER_DISCRETIZATION);
	int         rv;
	if (p == NULL) {
		return pasci_prep_drop(out, NULL,
		    pasci_model_fail(PASCO_ENOMEM, "out of memory"));
	}
	p->mode = mode;
	if ((rv = set_bounds(p, n, boundaries, "Discretization")) != 0) {
		return pasci_prep_drop(out, p, rv);
	}
	return pasci_prep_made(out, PASCO_LAYER_DISCRETIZATION, p);
}

static int
discretization_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	const pasco_prep *p = pasci_prep_of(l);
	if (!p->has_bounds) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: no bin_boundaries: give them, or num_bins and adapt "
		    "the layer",
		    l->name);
	}
	if (pasci_prep_check_mode(l, widths[0]) != 0) {
		return PASCO_EINVAL;
	}
	*out =
	    p->mode == PASCO_OUTPUT_INT ? widths[0] : (int64_t) p->nbounds + 1;
	return PASCO_OK;
}

static int
discretization_prep(pasci_prep_call *c)
{
	const pasco_prep   *p = c->p;
	const pasco_tensor *x = c->in[0];
	for (int64_t e = 0; e < x->count; e++) {
		double v  = pasci_prep_num_at(x, e);
		size_t lo = 0, hi = p->nbounds;
		if (isnan(v)) {
			c->idx[e] = (int64_t) p->nbounds; /* as digitize */
			continue;
		}
		while (lo < hi) { /* the boundaries <= v */
			size_t mid = (lo + hi) / 2;
			if (p->bounds[mid] <= v) {
				lo = mid + 1;
			} else {
				hi = mid;
			}
		}
		c->idx[e] = (int64_t) lo;
	}
	return PASCO_OK;
}

static int64_t
discretization_depth(const pasco_layer *l)
{
	return (int64_t) pasci_prep_of(l)->nbounds + 1;
}

static bool
discretization_write(cJSON *c, const pasco_layer *l)
{
	const pasco_prep *p = pasci_prep_of(l);
	cJSON            *b = p->has_bounds
	                          ? cJSON_CreateDoubleArray(p->bounds, (int) p->nbounds)
	                          : cJSON_CreateNull();
	return b != NULL && cJSON_AddItemToObject(c, "bin_boundaries", b) &&
	       (p->num_bins > 0 ? cJSON_AddNumberToObject(
	                              c, "num_bins", (double) p->num_bins)
	                        : cJSON_AddNullToObject(c, "num_bins")) &&
	       cJSON_AddNumberToObject(c, "epsilon", p->epsilon) &&
	       pasci_prep_write_mode(c, p);
}

static int
discretization_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(c, "bin_boundaries");
	const cJSON *it;
	pasco_prep  *p;
	bool         has_bins = false;
	double      *v;
	size_t       n = 0;
	int          rv;
	(void) part;
	if ((p = l->prep = pasci_prep_alloc(l->kind)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	if (pasci_prep_read_opt_int(
	        c, "num_bins", &has_bins, &p->num_bins, at) != 0 ||
	    (has_bins && pasci_json_bound(
	                     at, "num_bins", p->num_bins, PASCI_MAX_IDS)) ||
	    pasci_json_number(c, "epsilon", &p->epsilon, false, 0, at) != 0 ||
	    pasci_prep_read_mode(c, p, at) != 0) {
		return PASCO_EINVAL;
	}
	if (b == NULL || cJSON_IsNull(b)) {
		return PASCO_OK;
	}
	if (!cJSON_IsArray(b)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: bin_boundaries must be null or a list of numbers",
		    at);
	}
	if ((v = pasci_calloc(
	         (size_t) cJSON_GetArraySize(b) + 1, sizeof(*v))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(it, b)
	{
		if (!cJSON_IsNumber(it)) {
			free(v);
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: bin_boundaries[%zu] is not a number", at, n);
		}
		v[n++] = it->valuedouble;
	}
	rv = set_bounds(p, n, v, at);
	free(v);
	return rv;
}

const pasci_layer_desc pasci_layer_discretization_desc = {
    .kind       = PASCO_LAYER_DISCRETIZATION,
    .class_name = "Discretization",
    .prefix     = "discretization",
    .keys = {"name", "bin_boundaries", "num_bins", "epsilon", "output_mode",
        "sparse"},
    .args = {"bin_boundaries"},
    .min_inputs = 1,
    .check      = discretization_check,
    .call       = pasci_prep_layer_call,
    .hold       = pasci_prep_hold,
    .release    = pasci_prep_release,
    .bytes      = pasci_prep_bytes,
    .write      = discretization_write,
    .read       = discretization_read,
    .prep       = discretization_prep,
    .prep_depth = discretization_depth,
};
