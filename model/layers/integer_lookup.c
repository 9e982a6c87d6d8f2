/*
 * Keras's IntegerLookup(max_tokens=None, num_oov_indices=1,
 * mask_token=None, oov_token=-1, vocabulary=None, vocabulary_dtype=
 * "int64", invert=False, output_mode="int", ...): integers to Keras's
 * indices (layers.h, "Preprocessing"). Its descriptor (layer_desc.h);
 * what it shares with StringLookup is model/prep_lookup.c. Stateless:
 * any thread.
 */
#include <string.h>

#include "layer_desc.h"
#include "model_impl.h"
#include "prep_lookup.h"

int
pasco_layer_integer_lookup(pasco_layer *out, size_t n,
    const int64_t *vocabulary, const pasco_lookup_options *opts)
{
	pasco_lookup_options o =
	    opts != NULL ? *opts : pasco_lookup_defaults();
	pasco_prep *p = pasci_prep_alloc(PASCO_LAYER_INTEGER_LOOKUP);
	if (p == NULL) {
		memset(out, 0, sizeof(*out));
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	p->has_mask = o.has_mask;
	p->mask_key = o.mask_value;
	p->oov_key  = o.oov_value;
	return pasci_lookup_made(
	    out, PASCO_LAYER_INTEGER_LOOKUP, p, n, NULL, vocabulary, &o);
}

static bool
integer_lookup_write(cJSON *c, const pasco_layer *l)
{
	const pasco_prep *p = pasci_prep_of(l);
	return (p->has_mask ? cJSON_AddNumberToObject(
	                          c, "mask_token", (double) p->mask_key)
	                    : cJSON_AddNullToObject(c, "mask_token")) &&
	       cJSON_AddNumberToObject(c, "oov_token", (double) p->oov_key) &&
	       pasci_lookup_write(c, l) &&
	       cJSON_AddStringToObject(c, "vocabulary_dtype", "int64") &&
	       cJSON_AddStringToObject(c, "oov_method", "floormod");
}

static int
integer_lookup_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	bool has_oov = false;
	(void) part;
	if ((l->prep = pasci_prep_alloc(l->kind)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	return pasci_prep_read_opt_int(c, "mask_token", &l->prep->has_mask,
	           &l->prep->mask_key, at) != 0 ||
	               pasci_prep_read_opt_int(c, "oov_token", &has_oov,
	                   &l->prep->oov_key, at) != 0 ||
	               pasci_lookup_read(c, l, at) != 0 ||
	               pasci_prep_read_default(
	                   c, "vocabulary_dtype", "\"int64\"", at) != 0 ||
	               pasci_prep_read_default(
	                   c, "oov_method", "\"floormod\"", at) != 0 ||
	               pasci_lookup_read_vocab(c, l, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

const pasci_layer_desc pasci_layer_integer_lookup_desc = {
    .kind       = PASCO_LAYER_INTEGER_LOOKUP,
    .class_name = "IntegerLookup",
    .prefix     = "integer_lookup",
    .keys       = {"name", "max_tokens", "num_oov_indices", "mask_token",
              "oov_token", "vocabulary", "vocabulary_dtype", "idf_weights", "invert",
              "output_mode", "sparse", "pad_to_max_tokens", "oov_method", "salt"},
    .min_inputs = 1,
    .check      = pasci_lookup_check,
    .call       = pasci_prep_layer_call,
    .hold       = pasci_prep_hold,
    .release    = pasci_prep_release,
    .bytes      = pasci_prep_bytes,
    .write      = integer_lookup_write,
    .read       = integer_lookup_read,
    .prep       = pasci_lookup_prep,
    .prep_depth = pasci_lookup_depth,
};
