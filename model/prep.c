/*
 * The preprocessing layers' shared part (layers.h, "Preprocessing";
 * model/prep.h): their options as one reference-counted pasco_prep, a
 * lookup's vocabulary indexed by key (open addressing over the 64-bit
 * keys: a fingerprint or a value), Keras's hashing rule over keys, and
 * the pass that computes every preprocessing layer's output from the
 * step's input tensors before its variables are read, with Keras's
 * encodings (int, one_hot, multi_hot, count). A pasco_prep is written
 * only while its layer is made; then any thread reads it. The pass runs
 * on the tape's thread, its tensors in the tape's arena.
 */
#include "prep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_desc.h"
#include "pasco/hash.h"
#include "tape_impl.h"
#include "util.h"

static const pasco_prep prep_int_defaults = {
    .mode = PASCO_OUTPUT_INT, .num_oov = 1, .oov_key = -1, .epsilon = 0.01};
static const pasco_prep prep_multi_hot_defaults = {
    .mode = PASCO_OUTPUT_MULTI_HOT, .num_oov = 1, .epsilon = 0.01};

const char *
pasco_output_mode_name(pasco_output_mode m)
{
	static const char *const names[] = {
	    "int", "one_hot", "multi_hot", "count", "tf_idf"};
	return (unsigned) m <= PASCO_OUTPUT_TF_IDF ? names[m] : NULL;
}

pasco_prep *
pasci_prep_alloc(pasco_layer_kind kind)
{
	pasco_prep *p = pasci_calloc(1, sizeof(*p));
	if (p == NULL) {
		return NULL;
	}
	*p = kind == PASCO_LAYER_CATEGORY_ENCODING ? prep_multi_hot_defaults
	                                           : prep_int_defaults;
	p->refs    = 1;
	p->kind    = kind;
	p->strings = kind == PASCO_LAYER_STRING_LOOKUP;
	if (p->strings) {
		p->oov_str = pasci_strdup("[UNK]");
		p->oov_key = pasco_hash_key("[UNK]", 5);
		if (p->oov_str == NULL) {
			free(p);
			return NULL;
		}
	}
	return p;
}

const pasco_prep *
pasci_prep_of(const pasco_layer *l)
{
	if (l->prep != NULL) {
		return l->prep;
	}
	return l->kind == PASCO_LAYER_CATEGORY_ENCODING
	           ? &prep_multi_hot_defaults
	           : &prep_int_defaults;
}

static void
prep_free(pasco_prep *p)
{
	for (size_t k = 0; p->vocab_str != NULL && k < p->nvocab; k++) {
		free(p->vocab_str[k]);
	}
	free(p->vocab_str);
	free(p->vocab_key);
	free(p->slots);
	free(p->mask_str);
	free(p->oov_str);
	free(p->bounds);
	free(p->idf);
	free(p);
}

int
pasci_prep_set_idf(pasco_prep *p, size_t n, const double *w)
{
	double *c = NULL;
	if (w != NULL && (c = malloc((n + 1) * sizeof(*c))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	if (c != NULL) {
		memcpy(c, w, n * sizeof(*c));
	}
	free(p->idf);
	p->idf  = c;
	p->nidf = c != NULL ? n : 0;
	return PASCO_OK;
}

double
pasci_prep_idf_at(const pasco_prep *p, int64_t k)
{
	int64_t t   = k - pasci_prep_token_start(p);
	double  sum = 0;
	if (t >= 0) {
		return t < (int64_t) p->nidf ? p->idf[t] : 0;
	}
	for (size_t j = 0; j < p->nidf; j++) { /* Keras's np.average */
		sum += p->idf[j];
	}
	return p->nidf > 0 ? sum / (double) p->nidf : 0;
}

void
pasci_prep_hold(pasco_layer *l)
{
	if (l->prep != NULL) {
		__atomic_add_fetch(&l->prep->refs, 1, __ATOMIC_RELAXED);
	}
}

void
pasci_prep_release(pasco_layer *l)
{
	pasco_prep *p = l->prep;
	l->prep       = NULL;
	if (p != NULL &&
	    __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		prep_free(p);
	}
}

size_t
pasci_prep_bytes(const pasco_layer *l)
{
	const pasco_prep *p = l->prep;
	size_t            n = 0;
	if (p == NULL) {
		return 0;
	}
	n = sizeof(*p) + p->nvocab * sizeof(int64_t) +
	    p->cap * sizeof(int64_t) + p->nbounds * sizeof(double) +
	    p->nidf * sizeof(double);
	for (size_t k = 0; p->vocab_str != NULL && k < p->nvocab; k++) {
		n += sizeof(char *) + strlen(p->vocab_str[k]) + 1;
	}
	return n;
}

int
pasci_prep_drop(pasco_layer *out, pasco_prep *p, int rv)
{
	pasco_layer l = {.prep = p};
	pasci_prep_release(&l);
	memset(out, 0, sizeof(*out));
	return rv;
}

int
pasci_prep_made(pasco_layer *out, pasco_layer_kind kind, pasco_prep *p)
{
	pasco_layer l = pasci_layer_named(pasci_layer_defaults(kind));
	int         rv;
	memset(out, 0, sizeof(*out));
	l.prep = p;
	if ((rv = pasci_prep_check_options(&l)) != 0) {
		pasci_prep_release(&l);
		return rv;
	}
	*out = l;
	return PASCO_OK;
}

int
pasci_prep_check_options(const pasco_layer *l)
{
	static const int64_t ones[PASCO_LAYER_MAX_INPUTS] = {
	    1, 1, 1, 1, 1, 1, 1, 1};
	int64_t out = 1;
	return pasci_layer_desc_of(l->kind)->check(l, ones, &out);
}

int
pasci_prep_check_mode(const pasco_layer *l, int64_t width)
{
	const pasco_prep *p = pasci_prep_of(l);
	if (pasco_output_mode_name(p->mode) == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: output_mode %d is none of int, one_hot, multi_hot, "
		    "count, tf_idf",
		    l->name, (int) p->mode);
	}
	if (p->mode == PASCO_OUTPUT_TF_IDF &&
	    l->kind != PASCO_LAYER_STRING_LOOKUP &&
	    l->kind != PASCO_LAYER_INTEGER_LOOKUP) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: output_mode \"tf_idf\" is a StringLookup's or an "
		    "IntegerLookup's (use \"count\")",
		    l->name);
	}
	if (p->mode == PASCO_OUTPUT_ONE_HOT && width != 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: output_mode \"one_hot\" takes one value per "
		    "example, got width %lld (use \"multi_hot\")",
		    l->name, (long long) width);
	}
	return PASCO_OK;
}

/* ---- the vocabulary ---------------------------------------------------- */

static uint64_t
slot_of(int64_t key, size_t cap)
{
	uint64_t z = (uint64_t) key + 0x9E3779B97F4A7C15ull;
	z          = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z          = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return (z ^ (z >> 31)) & (cap - 1);
}

int64_t
pasci_prep_find(const pasco_prep *p, int64_t key)
{
	if (p->cap == 0) {
		return -1;
	}
	for (uint64_t s = slot_of(key, p->cap);; s = (s + 1) & (p->cap - 1)) {
		int64_t v = p->slots[s];
		if (v == 0) {
			return -1;
		}
		if (p->vocab_key[v - 1] == key) {
			return v - 1;
		}
	}
}

/* Token k as text, for messages. */
static const char *
token_text(const pasco_prep *p, size_t k, char *buf, size_t len)
{
	if (p->strings) {
		snprintf(buf, len, "'%s'", p->vocab_str[k]);
	} else {
		snprintf(buf, len, "%lld", (long long) p->vocab_key[k]);
	}
	return buf;
}

/* Indexes the keys; a key met twice is refused naming both tokens. */
static int
index_vocab(pasco_prep *p, const char *at)
{
	p->cap = 16;
	while (p->cap < 2 * p->nvocab) {
		p->cap *= 2;
	}
	if ((p->slots = pasci_calloc(p->cap, sizeof(*p->slots))) == NULL) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < p->nvocab; k++) {
		int64_t j = pasci_prep_find(p, p->vocab_key[k]);
		char    a[96], b[96];
		if (j >= 0) {
			bool same = !p->strings || strcmp(p->vocab_str[j],
			                               p->vocab_str[k]) == 0;
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: vocabulary: %s at index %zu %s %s at index "
			    "%lld%s",
			    at, token_text(p, k, a, sizeof(a)), k,
			    same ? "repeats" : "has the fingerprint of",
			    token_text(p, (size_t) j, b, sizeof(b)),
			    (long long) j,
			    same ? ": a vocabulary holds each token once"
			         : " (pasco_hash_key): tokens are matched by "
			           "fingerprint, so these two cannot both be "
			           "in one vocabulary");
		}
		uint64_t s = slot_of(p->vocab_key[k], p->cap);
		while (p->slots[s] != 0) {
			s = (s + 1) & (p->cap - 1);
		}
		p->slots[s] = (int64_t) k + 1;
	}
	return PASCO_OK;
}

/* The mask and OOV tokens are not in the vocabulary (Keras's rule; the
 * OOV token only matters when inverting). */
static int
check_special(const pasco_prep *p, const char *at)
{
	int64_t j = p->has_mask ? pasci_prep_find(p, p->mask_key) : -1;
	char    a[96];
	if (j >= 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: vocabulary holds the mask token %s at index %lld: "
		    "leave the mask and OOV tokens out of the vocabulary",
		    at, token_text(p, (size_t) j, a, sizeof(a)),
		    (long long) j);
	}
	j = p->invert ? pasci_prep_find(p, p->oov_key) : -1;
	if (j >= 0) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: vocabulary holds the OOV token %s at index %lld: "
		    "leave the mask and OOV tokens out of the vocabulary",
		    at, token_text(p, (size_t) j, a, sizeof(a)),
		    (long long) j);
	}
	return PASCO_OK;
}

int
pasci_prep_set_vocab(pasco_prep *p, size_t n, const char *const *tokens,
    const int64_t *values, const char *at)
{
	p->has_vocab = true;
	p->nvocab    = 0;
	p->vocab_key = pasci_calloc(n + 1, sizeof(*p->vocab_key));
	p->vocab_str = p->strings ? pasci_calloc(n + 1, sizeof(char *)) : NULL;
	if (p->vocab_key == NULL || (p->strings && p->vocab_str == NULL)) {
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < n; k++) {
		if (p->strings) {
			if (tokens == NULL || tokens[k] == NULL ||
			    (p->vocab_str[k] = pasci_strdup(tokens[k])) ==
			        NULL) {
				return pasci_model_fail(
				    tokens == NULL || tokens[k] == NULL
				        ? PASCO_EINVAL
				        : PASCO_ENOMEM,
				    "%s: vocabulary[%zu] is no string", at, k);
			}
			p->vocab_key[k] =
			    pasco_hash_key(tokens[k], strlen(tokens[k]));
		} else {
			p->vocab_key[k] = values[k];
		}
		p->nvocab = k + 1;
	}
	int rv = index_vocab(p, at);
	return rv != 0 ? rv : check_special(p, at);
}

int
pasci_prep_vocab_file(pasco_prep *p, const char *path, const char *at)
{
	FILE    *f    = fopen(path, "r");
	char    *line = NULL, **toks = NULL;
	int64_t *vals = NULL;
	size_t   cap = 0, n = 0, room = 0;
	ssize_t  len;
	int      rv = PASCO_OK;
	if (f == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: vocabulary file '%s' cannot be read", at, path);
	}
	while (rv == 0 && (len = getline(&line, &cap, f)) >= 0) {
		while (len > 0 &&
		       (line[len - 1] == '\n' || line[len - 1] == '\r')) {
			line[--len] = 0;
		}
		if (n == room) {
			room       = room ? 2 * room : 64;
			char   **t = realloc(toks, room * sizeof(*toks));
			int64_t *v =
			    t ? realloc(vals, room * sizeof(*vals)) : NULL;
			toks = t ? t : toks;
			vals = v ? v : vals;
			if (t == NULL || v == NULL) {
				rv = pasci_model_fail(
				    PASCO_ENOMEM, "out of memory");
				break;
			}
		}
		char *end = NULL;
		vals[n]   = p->strings ? 0 : strtoll(line, &end, 10);
		if (!p->strings && (line[0] == 0 || *end != 0)) {
			rv = pasci_model_fail(PASCO_EINVAL,
			    "%s: vocabulary file '%s' line %zu: '%s' is not "
			    "an integer",
			    at, path, n + 1, line);
			break;
		}
		toks[n++] = p->strings ? pasci_strdup(line) : NULL;
		if (p->strings && toks[n - 1] == NULL) {
			rv = pasci_model_fail(PASCO_ENOMEM, "out of memory");
		}
	}
	while (rv == 0 && n > 0 && p->strings && toks[n - 1][0] == 0) {
		free(toks[--n]); /* Keras drops trailing empty lines */
	}
	fclose(f);
	free(line);
	if (rv == 0) {
		rv = pasci_prep_set_vocab(
		    p, n, (const char *const *) toks, vals, at);
	}
	for (size_t k = 0; k < n && toks != NULL; k++) {
		free(toks[k]);
	}
	free(toks);
	free(vals);
	return rv;
}

int64_t
pasci_prep_oov_start(const pasco_prep *p)
{
	return p->has_mask && p->mode == PASCO_OUTPUT_INT ? 1 : 0;
}

int64_t
pasci_prep_token_start(const pasco_prep *p)
{
	return pasci_prep_oov_start(p) + p->num_oov;
}

/* ---- keys and bins ----------------------------------------------------- */

double
pasci_prep_num_at(const pasco_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case PASCO_F32:
		return ((const float *) t->data)[i];
	case PASCO_F64:
		return ((const double *) t->data)[i];
	case PASCO_I32:
		return ((const int32_t *) t->data)[i];
	default:
		return (double) ((const int64_t *) t->data)[i];
	}
}

int64_t
pasci_prep_int_at(const pasco_tensor *t, int64_t i)
{
	if (t->dtype == PASCO_I64) {
		return ((const int64_t *) t->data)[i];
	}
	if (t->dtype == PASCO_I32) {
		return ((const int32_t *) t->data)[i];
	}
	double v = pasci_prep_num_at(t, i);
	/* Keras casts floats to int64: toward zero, bounded here */
	return isnan(v)       ? 0
	       : v >= 0x1p63  ? INT64_MAX
	       : v <= -0x1p63 ? INT64_MIN
	                      : (int64_t) v;
}

int64_t
pasci_prep_key_at(const pasco_tensor *t, bool strings, int64_t i)
{
	char text[24];
	int  n;
	if (strings) {
		return ((const int64_t *) t->data)[i];
	}
	n = snprintf(
	    text, sizeof(text), "%lld", (long long) pasci_prep_int_at(t, i));
	return pasco_hash_key(text, (size_t) n);
}

int64_t
pasci_prep_hash_bin(const pasco_prep *p, int64_t key, int64_t bins)
{
	uint64_t h = (uint64_t) key;
	if (p->has_salt) {
		unsigned char b[8];
		for (int k = 0; k < 8; k++) {
			b[k] = (unsigned char) (h >> (8 * k));
		}
		h = pasco_hash64(b, 8, p->salt);
	}
	return (int64_t) (h % (uint64_t) bins);
}

/* ---- the pass before the reads ----------------------------------------- */

bool
pasci_prep_gives_ids(const pasco_model *m, size_t i)
{
	const pasci_layer_desc *d = pasci_layer_desc_of(m->layers[i].kind);
	return d != NULL && d->prep != NULL &&
	       pasci_prep_of(&m->layers[i])->mode == PASCO_OUTPUT_INT;
}

int
pasci_prep_resolve(const pasco_model *m, size_t i)
{
	const pasco_layer      *l = &m->layers[i];
	const pasci_layer_desc *d = pasci_layer_desc_of(l->kind);
	if (l->ninputs < (size_t) d->min_inputs ||
	    (d->min_inputs == 1 && l->ninputs != 1)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: a %s takes %s%d input%s, got %zu", l->name,
		    d->class_name, d->min_inputs > 1 ? "" : "exactly ",
		    d->min_inputs, d->min_inputs > 1 ? "s" : "", l->ninputs);
	}
	for (size_t j = 0; j < l->ninputs; j++) {
		int32_t r = l->inputs[j];
		if (r >= 0 &&
		    pasci_layer_desc_of(m->layers[r].kind)->prep == NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: input %zu is layer '%s' (%s): a "
			    "preprocessing layer is called on model inputs or "
			    "other preprocessing layers, whose values are "
			    "known before the step reads its variables",
			    l->name, j, m->layers[r].name,
			    pasci_layer_desc_of(m->layers[r].kind)
			        ->class_name);
		}
		if (r >= 0 && !pasci_prep_gives_ids(m, (size_t) r)) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: input %zu is layer '%s', whose output_mode "
			    "is not \"int\": a preprocessing layer takes ids",
			    l->name, j, m->layers[r].name);
		}
	}
	return PASCO_OK;
}

/* Input j of layer i: its tensor in ext, whether it holds strings. */
static const pasco_tensor *
input_tensor(const pasco_model *m, const pasco_tensor *const *ext, size_t i,
    size_t j, bool *strings)
{
	int32_t r = m->layers[i].inputs[j];
	size_t  k =
            r < 0 ? (size_t) (-1 - (int64_t) r) : m->ninputs + (size_t) r;
	*strings = r < 0 && m->inputs[k].strings;
	return ext[k];
}

/* t is [batch] (width 1) or [batch, width] of a dtype the layer reads. */
static bool
check_shape(pasco_tape *tp, const pasco_layer *l, size_t j,
    const pasco_tensor *t, int64_t width)
{
	bool ok = t->dtype == PASCO_F32 || t->dtype == PASCO_F64 ||
	          t->dtype == PASCO_I32 || t->dtype == PASCO_I64;
	ok = ok && ((t->rank == 1 && width == 1) ||
	               (t->rank == 2 && t->shape[1] == width));
	if (!ok) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: input %zu is %s%s; expected [batch, %lld] of numbers "
		    "or ids",
		    l->name, j, pasco_dtype_name(t->dtype),
		    PASCI_SHAPE(t->rank, t->shape), (long long) width);
	}
	return ok;
}

/* A tensor of dtype and shape in the arena; a count past 2^40 elements
 * (a depth of 2^53 from a stranger's config) fails naming the layer
 * before anything is asked of the arena, which bounds the rest. */
static pasco_tensor *
arena_tensor(pasco_tape *tp, const pasco_layer *l, pasco_dtype dt,
    int32_t rank, const int64_t *shape)
{
	pasco_tensor *t = pasci_tape_mem(tp, sizeof(*t));
	if (t == NULL) {
		return NULL;
	}
	t->dtype = dt;
	t->rank  = rank;
	t->count = 1;
	for (int32_t k = 0; k < rank; k++) {
		t->shape[k] = shape[k];
		if (shape[k] > 0 &&
		    t->count > ((int64_t) 1 << 40) / shape[k]) {
			pasci_tape_fail(tp, PASCO_ENOMEM,
			    "%s: an output of %s elements is past the bound "
			    "of 2^40",
			    l->name, PASCI_SHAPE(rank, shape));
			return NULL;
		}
		t->count *= shape[k];
	}
	t->nbytes = (size_t) t->count * pasco_dtype_size(dt);
	t->data   = pasci_tape_mem(tp, t->nbytes > 0 ? t->nbytes : 1);
	return t->data != NULL ? t : NULL;
}

/* idx (one per element of x) encoded as layer l's output_mode. */
static pasco_tensor *
encode(pasco_tape *tp, const pasco_layer *l, const pasco_tensor *x,
    const int64_t *idx, int64_t depth)
{
	const pasco_prep *p     = pasci_prep_of(l);
	int64_t           batch = x->shape[0];
	int64_t           w     = x->rank == 2 ? x->shape[1] : 1;
	pasco_tensor     *t;
	if (p->mode == PASCO_OUTPUT_INT) {
		t = arena_tensor(tp, l, PASCO_I64, x->rank, x->shape);
		if (t != NULL) {
			memcpy(t->data, idx, t->nbytes);
		}
		return t;
	}
	t = arena_tensor(tp, l, PASCO_F32, 2, (int64_t[]){batch, depth});
	for (int64_t e = 0; t != NULL && e < batch * w; e++) {
		float *row = (float *) t->data + (e / w) * depth;
		if (idx[e] < 0) {
			continue; /* a masked token counts nowhere */
		}
		if (idx[e] >= depth) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "%s: index %lld is past the depth %lld", l->name,
			    (long long) idx[e], (long long) depth);
			return NULL;
		}
		row[idx[e]] = p->mode == PASCO_OUTPUT_COUNT ||
		                      p->mode == PASCO_OUTPUT_TF_IDF
		                  ? row[idx[e]] + 1
		                  : 1;
	}
	for (int64_t k = 0;
	     t != NULL && p->mode == PASCO_OUTPUT_TF_IDF && k < t->count;
	     k++) { /* Keras's: the counts times the index's idf weight */
		float *v = (float *) t->data + k;
		*v = *v != 0 ? (float) (*v * pasci_prep_idf_at(p, k % depth))
		             : 0;
	}
	return t;
}

/* Layer i's output into ext[ninputs + i]. */
static bool
prep_layer(
    const pasco_model *m, pasco_tape *tp, const pasco_tensor **ext, size_t i)
{
	const pasco_layer      *l = &m->layers[i];
	const pasci_layer_desc *d = pasci_layer_desc_of(l->kind);
	const pasco_tensor     *in[PASCO_LAYER_MAX_INPUTS];
	bool                    strings[PASCO_LAYER_MAX_INPUTS];
	pasci_prep_call         c = {.l = l,
	            .p                  = pasci_prep_of(l),
	            .in                 = in,
	            .strings            = strings,
	            .n                  = l->ninputs};
	for (size_t j = 0; j < l->ninputs; j++) {
		in[j] = input_tensor(m, ext, i, j, &strings[j]);
		if (!check_shape(tp, l, j, in[j],
		        m->layers[i].inputs[j] < 0
		            ? m->inputs[-1 - m->layers[i].inputs[j]].width
		            : m->out_width[m->layers[i].inputs[j]])) {
			return false;
		}
		if (strings[j] && in[j]->dtype != PASCO_I64) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "%s: input %zu holds strings: expected their i64 "
			    "fingerprints, got %s",
			    l->name, j, pasco_dtype_name(in[j]->dtype));
			return false;
		}
		if (j > 0 && (in[j]->rank != in[0]->rank ||
		                 in[j]->shape[0] != in[0]->shape[0])) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "%s: inputs 0 %s and %zu %s differ in shape",
			    l->name, PASCI_SHAPE(in[0]->rank, in[0]->shape), j,
			    PASCI_SHAPE(in[j]->rank, in[j]->shape));
			return false;
		}
	}
	c.idx = pasci_tape_mem_raw(
	    tp, (size_t) (in[0]->count > 0 ? in[0]->count : 1) * 8);
	if (c.idx == NULL) {
		return false;
	}
	if (d->prep(&c) != 0) {
		pasci_tape_fail(tp, PASCO_EINVAL, "%s: %s", l->name, c.err);
		return false;
	}
	ext[m->ninputs + i] = encode(tp, l, in[0], c.idx, d->prep_depth(l));
	return ext[m->ninputs + i] != NULL;
}

const pasco_tensor *const *
pasci_prep_inputs(
    const pasco_model *m, pasco_tape *tp, const pasco_tensor *const *inputs)
{
	const pasco_tensor **ext = NULL;
	for (size_t i = 0; i < m->nlayers; i++) {
		if (pasci_layer_desc_of(m->layers[i].kind)->prep == NULL) {
			continue;
		}
		if (ext == NULL) {
			ext = pasci_tape_mem(
			    tp, (m->ninputs + m->nlayers) * sizeof(*ext));
			if (ext == NULL) {
				return NULL;
			}
			memcpy(ext, inputs, m->ninputs * sizeof(*ext));
		}
		if (!prep_layer(m, tp, ext, i)) {
			return NULL;
		}
	}
	return ext != NULL ? ext : inputs;
}

/* The call of every preprocessing kind: its output, computed before the
 * reads (pasci_prep_inputs), as an f32 constant node: features as they
 * are, ids as numbers (a feature layer reading a Discretization's bins,
 * as Keras's Dense casts them). */
static void
prep_backward(pasco_tape *tp, pasco_tnode *n)
{
	(void) tp;
	(void) n; /* preprocessing is not differentiated: no inputs */
}

pasco_tnode *
pasci_prep_layer_call(pasci_layer_call *c)
{
	static const pasci_tape_op op = {"preprocessing", prep_backward};
	const pasco_tensor        *t  = c->inputs[c->m->ninputs + c->i];
	pasco_tnode               *n;
	if (t == NULL) {
		return pasci_tape_fail(c->tp, PASCO_EINVAL,
		    "%s: its output was not computed before the step",
		    c->m->layers[c->i].name);
	}
	n = pasci_tape_node_raw(c->tp, &op, PASCO_F32, 2,
	    (int64_t[]){t->shape[0], t->rank == 2 ? t->shape[1] : 1}, 0, NULL);
	for (int64_t k = 0; n != NULL && k < t->count; k++) {
		((float *) n->value.data)[k] = (float) pasci_prep_num_at(t, k);
	}
	return n;
}

int
pasco_model_set_string_input(pasco_model *m, size_t k)
{
	if (m == NULL || k >= m->ninputs || !m->inputs[k].ids) {
		return pasci_model_fail(PASCO_EINVAL, "input %zu: %s", k,
		    m == NULL || k >= m->ninputs
		        ? "no such model input"
		        : "an input of features cannot hold strings (strings "
		          "are ids: their fingerprints)");
	}
	m->inputs[k].strings = true;
	return PASCO_OK;
}
