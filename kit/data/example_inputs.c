/*
 * Example features into model inputs by name (see example.h): each record
 * is parsed by pasco_example_parse with one spec per input (ids read as
 * variable-length int64 lists, hashed keys as variable-length HASHED
 * bytes lists) and the label (one value, or a fixed-length feature of
 * the label's shape: a sequence's labels), then ids and keys are padded
 * with -1 to their input's width, and the (x, y) elements batched. The map
 * runs on whichever thread iterates; its state is read-only once built.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset_impl.h"
#include "pasco/example.h"
#include "util.h"
#include "value_impl.h"

typedef struct example_inputs {
	pasco_feature_spec *specs; /* inputs, then the label; names owned */
	int64_t            *width; /* per input */
	size_t              ninputs;
	bool                label;
	pasco_example_label y; /* its shape: each example's label */
} example_inputs;

static void
inputs_free(void *arg)
{
	example_inputs *p = arg;
	for (size_t i = 0; p->specs != NULL && i < p->ninputs + p->label;
	     i++) {
		free((char *) p->specs[i].name);
	}
	free(p->specs);
	free(p->width);
	free(p);
}

/* ids [n] as i64 [width], padded with -1. */
static int
pad_ids(const example_inputs *p, size_t i, const pasco_tensor *ids,
    pasco_value **out)
{
	pasco_tensor *t;
	int64_t       w = p->width[i];
	if (ids->count > w) {
		pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
		    "example_inputs: feature '%s' has %lld ids; its input "
		    "takes at most %lld",
		    p->specs[i].name, (long long) ids->count, (long long) w);
		return PASCO_EINVAL;
	}
	if (pasco_tensor_alloc(&t, PASCO_I64, 1, &w) != 0) {
		return PASCO_ENOMEM;
	}
	for (int64_t k = 0; k < w; k++) {
		((int64_t *) t->data)[k] =
		    k < ids->count ? ((const int64_t *) ids->data)[k] : -1;
	}
	*out = pasco_value_tensor(t);
	return PASCO_OK;
}

/* The parsed features (a dict in spec order) as (x, y), or x. */
static int
to_inputs(const example_inputs *p, const pasco_value *f, pasco_value **out)
{
	pasco_value **x    = pasci_calloc(p->ninputs + 1, sizeof(*x));
	const char  **keys = pasci_calloc(p->ninputs + 1, sizeof(*keys));
	int           rv   = x && keys ? PASCO_OK : PASCO_ENOMEM;
	pasco_value  *xv   = NULL;
	for (size_t i = 0; rv == 0 && i < p->ninputs; i++) {
		const pasco_value *v = pasco_value_item(f, i);
		keys[i]              = p->specs[i].name;
		if (p->specs[i].type == PASCO_FEATURE_INT64 ||
		    p->specs[i].type == PASCO_FEATURE_HASHED) {
			rv = pad_ids(p, i, pasco_value_as_tensor(v), &x[i]);
		} else if ((x[i] = pasco_value_clone(v)) == NULL) {
			rv = PASCO_ENOMEM;
		}
	}
	if (rv != 0) {
		for (size_t i = 0; x != NULL && i < p->ninputs; i++) {
			pasco_value_free(x[i]);
		}
	} else if ((xv = pasci_value_dict_of(p->ninputs, keys, x)) == NULL) {
		rv = PASCO_ENOMEM; /* the items went with it */
	}
	free(x);
	free(keys);
	if (rv == 0 && p->label) {
		/* one value: a scalar, [batch] once batched; else the
		 * label's shape, [batch, T] or [batch, T, D] once batched */
		const pasco_tensor *l =
		    pasco_value_as_tensor(pasco_value_item(f, p->ninputs));
		pasco_tensor *y = NULL;
		if (p->y.rank > 0) {
			pasco_tensor_from(&y, l->dtype, p->y.rank, p->y.shape,
			    l->data, l->nbytes);
		} else if (pasco_tensor_scalar(&y, l->dtype, 0) == 0) {
			memcpy(y->data, l->data, l->nbytes);
		}
		xv = pasco_value_list(2, xv, pasco_value_tensor(y));
		rv = xv == NULL ? PASCO_ENOMEM : PASCO_OK;
	}
	if (rv != 0) {
		pasco_value_free(xv);
		return rv;
	}
	*out = xv;
	return PASCO_OK;
}

static int
parse_inputs(void *arg, const pasco_value *element, pasco_value **result)
{
	const example_inputs *p = arg;
	const pasco_tensor   *t = pasco_value_as_tensor(element);
	pasco_value          *f;
	char                  err[512];
	int                   rv;
	if (t == NULL || t->dtype != PASCO_U8) {
		pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
		    "example_inputs: an element is not a u8 tensor of a "
		    "serialized Example");
		return PASCO_EINVAL;
	}
	if ((rv = pasco_example_parse(t->data, t->nbytes, p->specs,
	         p->ninputs + p->label, &f, err, sizeof(err))) != 0) {
		pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
		    "example_inputs: %s", err);
		return rv;
	}
	rv = to_inputs(p, f, result);
	pasco_value_free(f);
	return rv;
}

static int
check_input(const pasco_example_input *in, size_t i)
{
	if (in->name == NULL || in->width < 1 ||
	    (in->type != PASCO_FEATURE_FLOAT &&
	        in->type != PASCO_FEATURE_INT64 &&
	        in->type != PASCO_FEATURE_HASHED)) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "example_inputs: input %zu ('%s'): needs a name, a width "
		    ">= 1 (got %lld) and type FLOAT, INT64 or HASHED",
		    i, in->name ? in->name : "(null)", (long long) in->width);
	}
	if (in->num_buckets < 0 ||
	    (in->num_buckets != 0 && in->type != PASCO_FEATURE_HASHED)) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "example_inputs: input %zu ('%s'): num_buckets %lld; want "
		    "0 (full keys) or, for a HASHED input, > 0",
		    i, in->name, (long long) in->num_buckets);
	}
	return PASCO_OK;
}

/* The values of one example's label: the product of its shape. */
static int64_t
label_values(const pasco_example_label *y)
{
	int64_t n = 1;
	for (int32_t d = 0; d < y->rank; d++) {
		n *= y->shape[d];
	}
	return n;
}

/* The specs of inputs and label into p. */
static int
make_specs(example_inputs *p, const pasco_example_input *inputs, size_t n,
    const char *label_name, pasco_feature_type label_type)
{
	p->ninputs = n;
	p->label   = label_name != NULL;
	p->specs   = pasci_calloc(n + 1, sizeof(*p->specs));
	p->width   = pasci_calloc(n + 1, sizeof(*p->width));
	if (p->specs == NULL || p->width == NULL) {
		return PASCO_ENOMEM;
	}
	for (size_t i = 0; i < n + p->label; i++) {
		pasco_feature_spec *s = &p->specs[i];
		if (i == n) {
			*s = (pasco_feature_spec){
			    .type = label_type, .length = label_values(&p->y)};
		} else {
			s->type          = inputs[i].type;
			s->length        = s->type == PASCO_FEATURE_FLOAT
			                       ? inputs[i].width
			                       : 0; /* ids: padded */
			s->has_default   = inputs[i].has_default;
			s->default_value = inputs[i].default_value;
			s->num_buckets   = inputs[i].num_buckets;
			p->width[i]      = inputs[i].width;
		}
		s->name = pasci_strdup(i == n ? label_name : inputs[i].name);
		if (s->name == NULL) {
			return PASCO_ENOMEM;
		}
	}
	return PASCO_OK;
}

/* A label's shape: rank 0 .. PASCO_EXAMPLE_LABEL_MAX_RANK, dimensions
 * >= 1, as many values as a feature may hold. */
static int
check_label(const pasco_example_label *y)
{
	bool ok = y->rank >= 0 && y->rank <= PASCO_EXAMPLE_LABEL_MAX_RANK;
	for (int32_t d = 0; ok && d < y->rank; d++) {
		ok = y->shape[d] >= 1 && y->shape[d] <= (1 << 24);
	}
	if (!ok || label_values(y) > (1 << 24)) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "example_inputs: label '%s': its shape must be [] (one "
		    "value), [T] or [T, D], each dimension >= 1 and at most "
		    "%d values in all (got rank %d)",
		    y->name, 1 << 24, (int) y->rank);
	}
	return PASCO_OK;
}

int
pasco_dataset_parse_example_inputs(pasco_dataset **out, pasco_dataset *in,
    const pasco_example_input *inputs, size_t ninputs, const char *label_name,
    pasco_feature_type label_type, int64_t batch_size, bool drop_remainder)
{
	pasco_example_label y = {.name = label_name, .type = label_type};
	return pasco_dataset_parse_example_labeled(out, in, inputs, ninputs,
	    label_name != NULL ? &y : NULL, batch_size, drop_remainder);
}

int
pasco_dataset_parse_example_labeled(pasco_dataset **out, pasco_dataset *in,
    const pasco_example_input *inputs, size_t ninputs,
    const pasco_example_label *label, int64_t batch_size, bool drop_remainder)
{
	example_inputs    *p;
	const char        *label_name = label != NULL ? label->name : NULL;
	pasco_feature_type label_type = label != NULL ? label->type : 0;
	int                rv         = PASCO_OK;
	*out                          = NULL;
	if (inputs == NULL || ninputs == 0 || batch_size < 1 ||
	    (label != NULL && ((label_type != PASCO_FEATURE_FLOAT &&
	                           label_type != PASCO_FEATURE_INT64) ||
	                          label_name == NULL))) {
		rv = pasco_dataset_fail(PASCO_EINVAL,
		    "example_inputs: needs inputs, a batch_size >= 1 (got "
		    "%lld) and a label of type FLOAT or INT64",
		    (long long) batch_size);
	}
	if (rv == 0 && label != NULL) {
		rv = check_label(label);
	}
	for (size_t i = 0; rv == 0 && i < ninputs; i++) {
		rv = check_input(&inputs[i], i);
	}
	if (rv != 0 || (p = pasci_calloc(1, sizeof(*p))) == NULL) {
		pasco_dataset_free(in);
		return rv != 0 ? rv : PASCO_ENOMEM;
	}
	if (label != NULL) {
		p->y = *label; /* its name is copied into the specs */
	}
	if (make_specs(p, inputs, ninputs, label_name, label_type) != 0) {
		inputs_free(p);
		pasco_dataset_free(in);
		return pasco_dataset_fail(
		    PASCO_ENOMEM, "example_inputs: out of memory");
	}
	if ((rv = pasco_dataset_map_with(
	         out, in, parse_inputs, p, inputs_free)) != 0) {
		return rv;
	}
	return pasco_dataset_batch(out, *out, batch_size, drop_remainder);
}
