/*
 * What StringLookup and IntegerLookup share (model/layers/string_lookup.c,
 * integer_lookup.c): their checks, Keras's index layout (layers.h,
 * "Preprocessing": mask, OOV indices, then the vocabulary), the lookup
 * and its inverse, and their common config fields. Stateless: any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_desc.h"
#include "model_impl.h"
#include "pasco/hash.h"
#include "prep.h"
#include "prep_lookup.h"
#include "util.h"

int64_t
pasci_lookup_depth(const pasco_layer *l)
{
	const pasco_prep *p = pasci_prep_of(l);
	return p->pad ? p->max_tokens
	              : pasci_prep_token_start(p) + (int64_t) p->nvocab;
}

static int
check_counts(const pasco_layer *l, const pasco_prep *p)
{
	if (p->num_oov < 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: num_oov_indices must be >= 0, got %lld", l->name,
		    (long long) p->num_oov);
	}
	if (p->max_tokens != 0 && p->max_tokens <= 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: max_tokens must be None or greater than 1, got %lld",
		    l->name, (long long) p->max_tokens);
	}
	if (p->pad && p->max_tokens == 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: pad_to_max_tokens needs max_tokens", l->name);
	}
	if (!p->has_vocab) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: no vocabulary: give vocabulary (a list or a file) or "
		    "adapt the layer",
		    l->name);
	}
	if (p->max_tokens != 0 &&
	    pasci_prep_token_start(p) + (int64_t) p->nvocab > p->max_tokens) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a vocabulary of %zu tokens and %lld special indices "
		    "is larger than max_tokens %lld",
		    l->name, p->nvocab, (long long) pasci_prep_token_start(p),
		    (long long) p->max_tokens);
	}
	return PASCO_OK;
}

int
pasci_lookup_check(const pasco_layer *l, const int64_t *widths, int64_t *out)
{
	const pasco_prep *p = pasci_prep_of(l);
	int               rv;
	if (pasci_prep_check_mode(l, widths[0]) != 0) {
		return PASCO_EINVAL;
	}
	if ((rv = check_counts(l, p)) != 0) {
		return rv;
	}
	if (p->mode == PASCO_OUTPUT_TF_IDF && p->nidf != p->nvocab) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: output_mode \"tf_idf\" needs idf_weights, one per "
		    "vocabulary token (%zu), got %zu (adapt computes them)",
		    l->name, p->nvocab, p->nidf);
	}
	if (p->mode != PASCO_OUTPUT_TF_IDF && p->idf != NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: idf_weights are only for output_mode \"tf_idf\", "
		    "got \"%s\"",
		    l->name, pasco_output_mode_name(p->mode));
	}
	if (p->invert && p->mode != PASCO_OUTPUT_INT) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: invert=True needs output_mode \"int\", got \"%s\"",
		    l->name, pasco_output_mode_name(p->mode));
	}
	*out = p->mode == PASCO_OUTPUT_INT ? widths[0] : pasci_lookup_depth(l);
	return PASCO_OK;
}

/* The token of index v (invert). */
static int64_t
invert_one(const pasco_prep *p, int64_t v)
{
	int64_t t = v - pasci_prep_token_start(p);
	if (p->has_mask && v == 0) {
		return p->mask_key;
	}
	return t >= 0 && t < (int64_t) p->nvocab ? p->vocab_key[t]
	                                         : p->oov_key;
}

/* The OOV index of key, or -1 with the message set (no OOV index). */
static int64_t
oov_index(pasci_prep_call *c, int64_t key)
{
	const pasco_prep *p = c->p;
	int64_t           b;
	if (p->num_oov == 0) {
		snprintf(c->err, sizeof(c->err),
		    p->strings ? "a token (fingerprint %lld) is not in the "
		                 "vocabulary and num_oov_indices is 0"
		               : "%lld is not in the vocabulary and "
		                 "num_oov_indices is 0",
		    (long long) key);
		return -1;
	}
	if (p->strings) {
		b = pasci_prep_hash_bin(p, key, p->num_oov);
	} else {
		b = key % p->num_oov; /* Keras's floormod */
		b = b < 0 ? b + p->num_oov : b;
	}
	return pasci_prep_oov_start(p) + b;
}

int
pasci_lookup_prep(pasci_prep_call *c)
{
	const pasco_prep   *p  = c->p;
	const pasco_tensor *x  = c->in[0];
	int64_t             t0 = pasci_prep_token_start(p);
	if (p->strings != c->strings[0] && !p->invert) {
		snprintf(c->err, sizeof(c->err),
		    p->strings ? "its input holds numbers, not strings: a "
		                 "StringLookup takes a string input (dtype "
		                 "\"string\"); IntegerLookup takes integers"
		               : "its input holds strings: an IntegerLookup "
		                 "takes integers; StringLookup takes strings");
		return PASCO_EINVAL;
	}
	for (int64_t e = 0; e < x->count; e++) {
		int64_t key = pasci_prep_int_at(x, e), k;
		if (p->invert) {
			c->idx[e] = invert_one(p, key);
		} else if (p->has_mask && key == p->mask_key) {
			c->idx[e] = p->mode == PASCO_OUTPUT_INT ? 0 : -1;
		} else if ((k = pasci_prep_find(p, key)) >= 0) {
			c->idx[e] = t0 + k;
		} else if ((c->idx[e] = oov_index(c, key)) < 0) {
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

bool
pasci_lookup_write(cJSON *c, const pasco_layer *l)
{
	const pasco_prep *p = pasci_prep_of(l);
	cJSON            *v = NULL;
	bool              ok;
	ok =
	    (p->max_tokens > 0 ? cJSON_AddNumberToObject(
	                             c, "max_tokens", (double) p->max_tokens)
	                       : cJSON_AddNullToObject(c, "max_tokens")) &&
	    cJSON_AddNumberToObject(c, "num_oov_indices", (double) p->num_oov);
	if (ok && p->has_vocab) {
		v = p->strings ? cJSON_CreateStringArray(
		                     (const char *const *) p->vocab_str,
		                     (int) p->nvocab)
		               : cJSON_CreateArray();
		for (size_t k = 0; v != NULL && !p->strings && k < p->nvocab;
		     k++) {
			cJSON_AddItemToArray(
			    v, cJSON_CreateNumber((double) p->vocab_key[k]));
		}
		ok = v != NULL && cJSON_AddItemToObject(c, "vocabulary", v);
	} else if (ok) {
		ok = cJSON_AddNullToObject(c, "vocabulary") != NULL;
	}
	if (ok && p->idf != NULL) {
		v  = cJSON_CreateDoubleArray(p->idf, (int) p->nidf);
		ok = v != NULL && cJSON_AddItemToObject(c, "idf_weights", v);
	} else if (ok) {
		ok = cJSON_AddNullToObject(c, "idf_weights") != NULL;
	}
	return ok && cJSON_AddBoolToObject(c, "invert", p->invert) &&
	       pasci_prep_write_mode(c, p) &&
	       cJSON_AddBoolToObject(c, "pad_to_max_tokens", p->pad) &&
	       cJSON_AddNullToObject(c, "salt");
}

/* "idf_weights": null or a list of numbers. */
static int
read_idf(const cJSON *c, pasco_prep *p, const char *at)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "idf_weights");
	const cJSON *it;
	double      *w;
	size_t       k = 0;
	int          rv;
	if (v == NULL || cJSON_IsNull(v)) {
		return PASCO_OK;
	}
	if (!cJSON_IsArray(v)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: idf_weights must be null or a list of numbers", at);
	}
	w = pasci_calloc((size_t) cJSON_GetArraySize(v) + 1, sizeof(*w));
	if (w == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	cJSON_ArrayForEach(it, v)
	{
		if (!cJSON_IsNumber(it)) {
			free(w);
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: idf_weights[%zu] is not a number", at, k);
		}
		w[k++] = it->valuedouble;
	}
	rv = pasci_prep_set_idf(p, k, w);
	free(w);
	return rv;
}

/* "vocabulary": null, a list of tokens (strings or integers), or a file
 * path. */
static int
read_vocab(const cJSON *c, pasco_prep *p, const char *at)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(c, "vocabulary");
	const cJSON *it;
	size_t       n = 0, k = 0;
	if (v == NULL || cJSON_IsNull(v)) {
		return PASCO_OK;
	}
	if (cJSON_IsString(v)) {
		return pasci_prep_vocab_file(p, v->valuestring, at);
	}
	if (!cJSON_IsArray(v)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: vocabulary must be null, a list or a file path", at);
	}
	n                   = (size_t) cJSON_GetArraySize(v);
	const char **tokens = pasci_calloc(n + 1, sizeof(*tokens));
	int64_t     *values = pasci_calloc(n + 1, sizeof(*values));
	int          rv     = tokens && values ? PASCO_OK : PASCO_ENOMEM;
	cJSON_ArrayForEach(it, v)
	{
		if (rv != 0) {
			break;
		}
		bool ok = p->strings
		              ? cJSON_IsString(it)
		              : cJSON_IsNumber(it) &&
		                    it->valuedouble ==
		                        (double) (int64_t) it->valuedouble;
		if (!ok) {
			rv = pasci_model_fail(PASCO_EINVAL,
			    "%s: vocabulary[%zu] is not %s", at, k,
			    p->strings ? "a string" : "an integer");
			break;
		}
		tokens[k]   = p->strings ? it->valuestring : NULL;
		values[k++] = p->strings ? 0 : (int64_t) it->valuedouble;
	}
	if (rv == PASCO_ENOMEM) {
		rv = pasci_model_fail(rv, "out of memory");
	}
	if (rv == 0) {
		rv = pasci_prep_set_vocab(p, n, tokens, values, at);
	}
	free(tokens);
	free(values);
	return rv;
}

int
pasci_lookup_read(const cJSON *c, pasco_layer *l, const char *at)
{
	pasco_prep *p       = l->prep;
	bool        has_max = false;
	if (p == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	if (pasci_prep_read_opt_int(
	        c, "max_tokens", &has_max, &p->max_tokens, at) != 0 ||
	    pasci_json_size(c, "num_oov_indices", &p->num_oov, 0,
	        PASCI_MAX_WIDTH, at) != 0 ||
	    pasci_json_bool(c, "invert", &p->invert, at) != 0 ||
	    pasci_json_bool(c, "pad_to_max_tokens", &p->pad, at) != 0 ||
	    pasci_prep_read_mode(c, p, at) != 0 || read_idf(c, p, at) != 0 ||
	    pasci_prep_read_default(c, "salt", "null", at) != 0) {
		return PASCO_EINVAL;
	}
	if (has_max && pasci_json_bound(at, "max_tokens", p->max_tokens,
	                   PASCI_MAX_WIDTH) != 0) {
		return PASCO_EINVAL;
	}
	if (has_max && p->max_tokens < 2) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: max_tokens must be None or greater than 1, got %lld",
		    at, (long long) p->max_tokens);
	}
	p->max_tokens = has_max ? p->max_tokens : 0;
	return PASCO_OK;
}

int
pasci_lookup_read_vocab(const cJSON *c, pasco_layer *l, const char *at)
{
	return read_vocab(c, l->prep, at);
}

int
pasci_lookup_made(pasco_layer *out, pasco_layer_kind kind, pasco_prep *p,
    size_t n, const char *const *tokens, const int64_t *values,
    const pasco_lookup_options *o)
{
	const char *at = kind == PASCO_LAYER_STRING_LOOKUP ? "StringLookup"
	                                                   : "IntegerLookup";
	int         rv = PASCO_OK;
	p->max_tokens  = o->max_tokens;
	p->num_oov     = o->num_oov_indices;
	p->invert      = o->invert;
	p->pad         = o->pad_to_max_tokens;
	p->mode        = o->output_mode;
	if (o->idf_weights != NULL &&
	    (rv = pasci_prep_set_idf(p, o->num_idf_weights, o->idf_weights)) !=
	        0) {
		return pasci_prep_drop(out, p, rv);
	}
	if (n > 0 && tokens == NULL && values == NULL) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "%s: a vocabulary of %zu tokens given as NULL", at, n);
	} else if (o->vocabulary_file != NULL) {
		rv = pasci_prep_vocab_file(p, o->vocabulary_file, at);
	} else if (tokens != NULL || values != NULL) {
		rv = pasci_prep_set_vocab(p, n, tokens, values, at);
	}
	if (rv != 0) {
		return pasci_prep_drop(out, p, rv);
	}
	return pasci_prep_made(out, kind, p);
}

pasco_lookup_options
pasco_lookup_defaults(void)
{
	return (pasco_lookup_options){
	    .num_oov_indices = 1, .oov_token = "[UNK]", .oov_value = -1};
}
