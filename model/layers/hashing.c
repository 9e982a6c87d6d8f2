/*
 * Keras's Hashing(num_bins, mask_value=None, salt=None, output_mode="int"):
 * a bin of [0, num_bins) for each value of its input, by the rule of
 * layers.h ("Preprocessing"): strings by fingerprint, integers by the
 * fingerprint of their decimal text. Its descriptor (layer_desc.h).
 * Stateless: any thread.
 */
#include <string.h>

#include "layer_desc.h"
#include "model_impl.h"
#include "pasco/hash.h"
#include "prep.h"
#include "util.h"

int
pasco_layer_hashing(
    pasco_layer *out, int64_t num_bins, const pasco_hashing_options *o)
{
	pasco_prep *p = pasci_prep_alloc(PASCO_LAYER_HASHING);
	if (p == NULL) {
		return pasci_prep_drop(out, NULL,
		    pasci_model_fail(PASCO_ENOMEM, "out of memory"));
	}
	p->num_bins = num_bins;
	if (o != NULL) {
		p->mode     = o->output_mode;
		p->has_salt = o->has_salt;
		p->salt     = o->salt;
		p->has_mask = o->has_mask || o->mask_string != NULL;
		p->mask_key = o->mask_value;
		if (o->mask_string != NULL) {
			p->mask_is_str = true;
			p->mask_str    = pasci_strdup(o->mask_string);
			p->mask_key    = pasco_hash_key(
			       o->mask_string, strlen(o->mask_string));
		}
	}
	if (p->mask_is_str && p->mask_str == NULL) {
		return pasci_prep_drop(
		    out, p, pasci_model_fail(PASCO_ENOMEM, "out of memory"));
	}
	return pasci_prep_made(out, PASCO_LAYER_HASHING, p);
}

static int
hashing_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	const pasco_prep *p = pasci_prep_of(l);
	if (p->num_bins < 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: num_bins must be >= 1, got %lld", l->name,
		    (long long) p->num_bins);
	}
	if (pasci_prep_check_mode(l, widths[0]) != 0) {
		return PASCO_EINVAL;
	}
	*out = p->mode == PASCO_OUTPUT_INT ? widths[0] : p->num_bins;
	return PASCO_OK;
}

static int
hashing_prep(pasci_prep_call *c)
{
	const pasco_prep   *p    = c->p;
	const pasco_tensor *x    = c->in[0];
	int64_t             bins = p->num_bins;
	bool                mask = p->has_mask && bins > 1;
	for (int64_t e = 0; e < x->count; e++) {
		int64_t key = pasci_prep_key_at(x, c->strings[0], e);
		int64_t raw = c->strings[0] ? key : pasci_prep_int_at(x, e);
		if (mask && raw == p->mask_key) {
			c->idx[e] = 0;
		} else {
			c->idx[e] =
			    mask ? 1 + pasci_prep_hash_bin(p, key, bins - 1)
			         : pasci_prep_hash_bin(p, key, bins);
		}
	}
	return PASCO_OK;
}

static int64_t
hashing_depth(const pasco_layer *l)
{
	return pasci_prep_of(l)->num_bins;
}

static bool
hashing_write(cJSON *c, const pasco_layer *l)
{
	const pasco_prep *p = pasci_prep_of(l);
	bool ok = cJSON_AddNumberToObject(c, "num_bins", (double) p->num_bins);
	if (!p->has_mask) {
		ok = ok && cJSON_AddNullToObject(c, "mask_value");
	} else if (p->mask_is_str) {
		ok = ok &&
		     cJSON_AddStringToObject(c, "mask_value", p->mask_str);
	} else {
		ok = ok && cJSON_AddNumberToObject(
		               c, "mask_value", (double) p->mask_key);
	}
	ok = ok && (p->has_salt ? cJSON_AddNumberToObject(
	                              c, "salt", (double) p->salt) != NULL
	                        : cJSON_AddNullToObject(c, "salt") != NULL);
	return ok && pasci_prep_write_mode(c, p);
}

static int
hashing_read(
    const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(c, "mask_value");
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "salt");
	pasco_prep  *p = l->prep = pasci_prep_alloc(l->kind);
	(void) part;
	if (p == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	if (pasci_json_size(
	        c, "num_bins", &p->num_bins, 1, PASCI_MAX_IDS, at) != 0 ||
	    pasci_prep_read_mode(c, p, at) != 0) {
		return PASCO_EINVAL;
	}
	if (cJSON_IsString(m)) {
		p->has_mask = p->mask_is_str = true;
		p->mask_str                  = pasci_strdup(m->valuestring);
		p->mask_key =
		    pasco_hash_key(m->valuestring, strlen(m->valuestring));
		if (p->mask_str == NULL) {
			return pasci_model_fail(PASCO_ENOMEM, "out of memory");
		}
	} else if (pasci_prep_read_opt_int(
	               c, "mask_value", &p->has_mask, &p->mask_key, at) != 0) {
		return PASCO_EINVAL;
	}
	if (s != NULL && !cJSON_IsNull(s) &&
	    (!cJSON_IsNumber(s) || s->valuedouble < 0 ||
	        s->valuedouble > 0x1p53 ||
	        s->valuedouble != (double) (uint64_t) s->valuedouble)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: salt must be null or an integer in [0, 2^53]", at);
	}
	p->has_salt = s != NULL && !cJSON_IsNull(s);
	p->salt     = p->has_salt ? (uint64_t) s->valuedouble : 0;
	return PASCO_OK;
}

const pasci_layer_desc pasci_layer_hashing_desc = {
    .kind       = PASCO_LAYER_HASHING,
    .class_name = "Hashing",
    .prefix     = "hashing",
    .keys       = {"name", "num_bins", "mask_value", "salt", "output_mode",
              "sparse"},
    .args       = {"num_bins"},
    .min_inputs = 1,
    .check      = hashing_check,
    .call       = pasci_prep_layer_call,
    .hold       = pasci_prep_hold,
    .release    = pasci_prep_release,
    .bytes      = pasci_prep_bytes,
    .write      = hashing_write,
    .read       = hashing_read,
    .prep       = hashing_prep,
    .prep_depth = hashing_depth,
};
