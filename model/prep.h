/*
 * Preprocessing layers' insides (layers.h, "Preprocessing"), shared by
 * their kinds' files (model/layers/hashing.c, string_lookup.c,
 * integer_lookup.c, category_encoding.c, discretization.c,
 * hashed_crossing.c), model/prep.c (options, vocabularies, the encodings,
 * the pass before a step's reads) and model/prep_json.c (their configs).
 * A pasco_prep is immutable once its layer is made and shared by
 * reference between the models that hold it: any thread reads it.
 */
#ifndef PASCI_PREP_H
#define PASCI_PREP_H

#include <cjson/cJSON.h>

#include "layers_impl.h"
#include "pasco/tape.h"

struct pasco_prep {
	int32_t           refs; /* atomically */
	pasco_layer_kind  kind;
	pasco_output_mode mode;
	/* Hashing, HashedCrossing; Discretization's adapt bins (0: null) */
	int64_t num_bins;
	/* Hashing's mask_value, a lookup's mask token: mask_key is its
	 * fingerprint (strings, mask_str kept) or its value */
	bool     has_mask;
	int64_t  mask_key;
	char    *mask_str;
	bool     mask_is_str;
	bool     has_salt;
	uint64_t salt;
	/* StringLookup, IntegerLookup */
	bool     strings; /* StringLookup: keys are fingerprints */
	int64_t  max_tokens, num_oov;
	bool     invert, pad;
	char    *oov_str; /* StringLookup's oov_token */
	int64_t  oov_key; /* its fingerprint, or IntegerLookup's value */
	bool     has_vocab;
	size_t   nvocab;
	char   **vocab_str; /* StringLookup: the tokens */
	int64_t *vocab_key; /* fingerprints or values, in order */
	size_t   cap;       /* slots: a power of two >= 2 nvocab */
	int64_t *slots;     /* vocabulary index + 1 of a key; 0: empty */
	double  *idf;       /* idf_weights[nidf] (tf_idf), in vocab order */
	size_t   nidf;      /* 0 with idf NULL: none given */
	/* CategoryEncoding */
	int64_t num_tokens;
	/* Discretization */
	bool    has_bounds;
	size_t  nbounds;
	double *bounds;
	double  epsilon;
};

/* A new pasco_prep of kind with Keras's defaults (one reference), or
 * NULL without memory. */
pasco_prep *pasci_prep_alloc(pasco_layer_kind kind);

/* l's options: its own, or its kind's defaults when it has none. */
const pasco_prep *pasci_prep_of(const pasco_layer *l);

/* The descriptor hooks every preprocessing kind shares. */
void   pasci_prep_hold(pasco_layer *l);
void   pasci_prep_release(pasco_layer *l);
size_t pasci_prep_bytes(const pasco_layer *l);

/* A constructor's end: l of kind named, holding p (taken over), checked
 * (pasci_prep_check_options); *out set, or cleared and p dropped. */
int pasci_prep_made(pasco_layer *out, pasco_layer_kind kind, pasco_prep *p);

/* output_mode known, and ONE_HOT on one value per example (width 1):
 * PASCO_EINVAL naming the layer. */
int pasci_prep_check_mode(const pasco_layer *l, int64_t width);

/* A constructor's failure: p dropped, *out cleared; returns rv. */
int pasci_prep_drop(pasco_layer *out, pasco_prep *p, int rv);

/* The options' own checks (num_bins, modes, the vocabulary against
 * max_tokens): PASCO_EINVAL naming the layer. */
int pasci_prep_check_options(const pasco_layer *l);

/* p's vocabulary: tokens[0..n) (StringLookup) or values[0..n)
 * (IntegerLookup), copied, keyed and indexed. PASCO_EINVAL naming `at`
 * and the token for a duplicate (or two tokens of one fingerprint), the
 * mask or OOV token inside it; PASCO_ENOMEM. */
int pasci_prep_set_vocab(pasco_prep *p, size_t n, const char *const *tokens,
    const int64_t *values, const char *at);

/* The same from a file of one token per line. */
int pasci_prep_vocab_file(pasco_prep *p, const char *path, const char *at);

/* The vocabulary index of key, or -1. */
int64_t pasci_prep_find(const pasco_prep *p, int64_t key);

/* Where a lookup's OOV indices start, where its tokens start, and the
 * depth of its encodings (non-int modes). */
int64_t pasci_prep_oov_start(const pasco_prep *p);
int64_t pasci_prep_token_start(const pasco_prep *p);

/* The tf_idf weight of index k of a lookup (layers.h, idf_weights):
 * the mean of the weights for an OOV index, 0 past the vocabulary. */
double pasci_prep_idf_at(const pasco_prep *p, int64_t k);

/* p's idf weights: w[0..n) copied (replacing any), or none (w NULL).
 * PASCO_ENOMEM. */
int pasci_prep_set_idf(pasco_prep *p, size_t n, const double *w);

/* The bin of key among bins (Hashing's rule, layers.h). */
int64_t pasci_prep_hash_bin(const pasco_prep *p, int64_t key, int64_t bins);

/* The key of element i of t as Hashing takes it: a fingerprint as it is
 * (strings), an integer's decimal text's fingerprint, a float cast to
 * an integer first. */
int64_t pasci_prep_key_at(const pasco_tensor *t, bool strings, int64_t i);

/* Element i of t as a double / as an integer. */
double  pasci_prep_num_at(const pasco_tensor *t, int64_t i);
int64_t pasci_prep_int_at(const pasco_tensor *t, int64_t i);

/* What a kind's prep hook is given: layer l (strings[j]: whether input j
 * holds fingerprints), its inputs in[0..n), and idx to fill, one per
 * element of in[0] (-1: dropped, a masked token in a non-int mode). On
 * failure it writes a message into err (naming the value; the caller
 * names the layer) and returns PASCO_EINVAL. */
typedef struct pasci_prep_call {
	const pasco_layer         *l;
	const pasco_prep          *p;
	const pasco_tensor *const *in;
	const bool                *strings;
	size_t                     n;
	int64_t                   *idx;
	char                       err[256];
} pasci_prep_call;

/* Checks a preprocessing layer i's inputs at build time: model inputs or
 * preprocessing layers whose output is ids, as many as its kind takes.
 * PASCO_EINVAL naming the layer. */
int pasci_prep_resolve(const pasco_model *m, size_t i);

/* Whether layer i of m is a preprocessing layer whose output is ids. */
bool pasci_prep_gives_ids(const pasco_model *m, size_t i);

/* The model's inputs followed by each layer's preprocessed output
 * (ninputs + nlayers entries, NULL for a layer that is none), in tp's
 * arena; inputs itself when the model has no preprocessing layer. NULL
 * with the tape's error set naming the layer. */
const pasco_tensor *const *pasci_prep_inputs(
    const pasco_model *m, pasco_tape *tp, const pasco_tensor *const *inputs);

/* Every preprocessing kind's call (layer_desc.h): its output, computed by
 * pasci_prep_inputs and given in c->inputs, as an f32 constant node
 * [batch, width] (ids as numbers, for a feature layer after it). */
struct pasci_layer_call;
pasco_tnode *pasci_prep_layer_call(struct pasci_layer_call *c);

/* Config fields the kinds share (model/prep_json.c). */
bool pasci_prep_write_mode(cJSON *c, const pasco_prep *p);
int  pasci_prep_read_mode(const cJSON *c, pasco_prep *p, const char *at);
/* "sparse" (and the other fields Keras has that Pasco takes only at
 * their defaults) absent, null or at the default. */
int pasci_prep_read_default(
    const cJSON *c, const char *key, const char *dflt, const char *at);
/* A field that is null, absent, or an integer (into *v, *has). */
int pasci_prep_read_opt_int(
    const cJSON *c, const char *key, bool *has, int64_t *v, const char *at);

#endif
