/*
 * Keras's CategoryEncoding(num_tokens, output_mode="multi_hot"): integer
 * inputs in [0, num_tokens) into f32 [batch, num_tokens], one_hot,
 * multi_hot or count (layers.h, "Preprocessing"). Its descriptor
 * (layer_desc.h). Stateless: any thread.
 */
#include <math.h>
#include <stdio.h>

#include "layer_desc.h"
#include "model_impl.h"
#include "prep.h"

int
pasco_layer_category_encoding(
    pasco_layer *out, int64_t num_tokens, pasco_output_mode mode)
{
	pasco_prep *p = pasci_prep_alloc(PASCO_LAYER_CATEGORY_ENCODING);
	if (p == NULL) {
		return pasci_prep_drop(out, NULL,
		    pasci_model_fail(PASCO_ENOMEM, "out of memory"));
	}
	p->num_tokens = num_tokens;
	p->mode       = mode;
	return pasci_prep_made(out, PASCO_LAYER_CATEGORY_ENCODING, p);
}

static int
category_encoding_check(
    const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	const pasco_prep *p = pasci_prep_of(l);
	if (p->num_tokens < 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: num_tokens must be >= 1, got %lld", l->name,
		    (long long) p->num_tokens);
	}
	if (p->mode == PASCO_OUTPUT_INT ||
	    pasco_output_mode_name(p->mode) == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: output_mode must be one_hot, multi_hot or count, got "
		    "%s",
		    l->name,
		    p->mode == PASCO_OUTPUT_INT ? "int" : "an unknown mode");
	}
	if (pasci_prep_check_mode(l, widths[0]) != 0) {
		return PASCO_EINVAL;
	}
	*out = p->num_tokens;
	return PASCO_OK;
}

static int
category_encoding_prep(pasci_prep_call *c)
{
	const pasco_tensor *x = c->in[0];
	int64_t             n = c->p->num_tokens;
	for (int64_t e = 0; e < x->count; e++) {
		double v = pasci_prep_num_at(x, e);
		if (!(v >= 0 && v < (double) n) || v != floor(v)) {
			snprintf(c->err, sizeof(c->err),
			    "input value %g (element %lld) is not an integer "
			    "in [0, num_tokens=%lld)",
			    v, (long long) e, (long long) n);
			return PASCO_EINVAL;
		}
		c->idx[e] = (int64_t) v;
	}
	return PASCO_OK;
}

static int64_t
category_encoding_depth(const pasco_layer *l)
{
	return pasci_prep_of(l)->num_tokens;
}

static bool
category_encoding_write(cJSON *c, const pasco_layer *l)
{
	const pasco_prep *p = pasci_prep_of(l);
	return cJSON_AddNumberToObject(
	           c, "num_tokens", (double) p->num_tokens) &&
	       pasci_prep_write_mode(c, p);
}

static int
category_encoding_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	(void) part;
	if ((l->prep = pasci_prep_alloc(l->kind)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	return pasci_json_size(c, "num_tokens", &l->prep->num_tokens, 1,
	           PASCI_MAX_WIDTH, at) ||
	               pasci_prep_read_mode(c, l->prep, at)
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

const pasci_layer_desc pasci_layer_category_encoding_desc = {
    .kind       = PASCO_LAYER_CATEGORY_ENCODING,
    .class_name = "CategoryEncoding",
    .prefix     = "category_encoding",
    .keys       = {"name", "num_tokens", "output_mode", "sparse"},
    .args       = {"num_tokens"},
    .min_inputs = 1,
    .check      = category_encoding_check,
    .call       = pasci_prep_layer_call,
    .hold       = pasci_prep_hold,
    .release    = pasci_prep_release,
    .bytes      = pasci_prep_bytes,
    .write      = category_encoding_write,
    .read       = category_encoding_read,
    .prep       = category_encoding_prep,
    .prep_depth = category_encoding_depth,
};
