/*
 * Keras's StringLookup(max_tokens=None, num_oov_indices=1,
 * mask_token=None, oov_token="[UNK]", vocabulary=None, invert=False,
 * output_mode="int", ...): strings (their fingerprints, layers.h
 * "Preprocessing") to Keras's indices. Its descriptor (layer_desc.h);
 * what it shares with IntegerLookup is model/prep_lookup.c. Stateless:
 * any thread.
 */
#include <stdlib.h>
#include <string.h>

#include "layer_desc.h"
#include "model_impl.h"
#include "pasco/hash.h"
#include "prep_lookup.h"
#include "util.h"

/* p's mask (NULL: none) and OOV tokens. */
static int
set_tokens(pasco_prep *p, const char *mask, const char *oov)
{
	free(p->oov_str);
	p->oov_str  = pasci_strdup(oov != NULL ? oov : "[UNK]");
	p->oov_key  = p->oov_str != NULL
	                  ? pasco_hash_key(p->oov_str, strlen(p->oov_str))
	                  : 0;
	p->has_mask = mask != NULL;
	if (mask != NULL) {
		p->mask_is_str = true;
		p->mask_str    = pasci_strdup(mask);
		p->mask_key    = pasco_hash_key(mask, strlen(mask));
	}
	return p->oov_str == NULL || (mask != NULL && p->mask_str == NULL)
	           ? pasci_model_fail(PASCO_ENOMEM, "out of memory")
	           : PASCO_OK;
}

int
pasco_layer_string_lookup(pasco_layer *out, size_t n,
    const char *const *vocabulary, const pasco_lookup_options *opts)
{
	pasco_lookup_options o =
	    opts != NULL ? *opts : pasco_lookup_defaults();
	pasco_prep *p = pasci_prep_alloc(PASCO_LAYER_STRING_LOOKUP);
	if (p == NULL) {
		memset(out, 0, sizeof(*out));
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	if (set_tokens(p, o.mask_token, o.oov_token) != 0) {
		return pasci_prep_drop(out, p, PASCO_ENOMEM);
	}
	return pasci_lookup_made(
	    out, PASCO_LAYER_STRING_LOOKUP, p, n, vocabulary, NULL, &o);
}

static bool
string_lookup_write(cJSON *c, const pasco_layer *l)
{
	const pasco_prep *p = pasci_prep_of(l);
	return (p->has_mask
	               ? cJSON_AddStringToObject(c, "mask_token", p->mask_str)
	               : cJSON_AddNullToObject(c, "mask_token")) &&
	       cJSON_AddStringToObject(c, "oov_token",
	           p->oov_str != NULL ? p->oov_str : "[UNK]") &&
	       pasci_lookup_write(c, l) &&
	       cJSON_AddStringToObject(c, "encoding", "utf-8");
}

static int
string_lookup_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, "mask_token");
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(c, "oov_token");
	(void) part;
	if ((l->prep = pasci_prep_alloc(l->kind)) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	if ((m != NULL && !cJSON_IsNull(m) && !cJSON_IsString(m)) ||
	    (o != NULL && !cJSON_IsString(o))) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: mask_token must be null or a string, oov_token a "
		    "string",
		    at);
	}
	return set_tokens(l->prep, cJSON_IsString(m) ? m->valuestring : NULL,
	           o != NULL ? o->valuestring : NULL) != 0 ||
	               pasci_lookup_read(c, l, at) != 0 ||
	               pasci_prep_read_default(
	                   c, "encoding", "\"utf-8\"", at) != 0 ||
	               pasci_lookup_read_vocab(c, l, at) != 0
	           ? PASCO_EINVAL
	           : PASCO_OK;
}

const pasci_layer_desc pasci_layer_string_lookup_desc = {
    .kind       = PASCO_LAYER_STRING_LOOKUP,
    .class_name = "StringLookup",
    .prefix     = "string_lookup",
    .keys       = {"name", "max_tokens", "num_oov_indices", "mask_token",
              "oov_token", "vocabulary", "idf_weights", "invert", "output_mode",
              "pad_to_max_tokens", "sparse", "encoding", "salt"},
    .min_inputs = 1,
    .check      = pasci_lookup_check,
    .call       = pasci_prep_layer_call,
    .hold       = pasci_prep_hold,
    .release    = pasci_prep_release,
    .bytes      = pasci_prep_bytes,
    .write      = string_lookup_write,
    .read       = string_lookup_read,
    .prep       = pasci_lookup_prep,
    .prep_depth = pasci_lookup_depth,
};
