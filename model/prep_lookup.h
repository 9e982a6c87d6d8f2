/*
 * What StringLookup and IntegerLookup share (model/prep_lookup.c): the
 * descriptor functions both kinds use, and the reading of their common
 * config fields. Stateless: any thread.
 */
#ifndef PASCI_PREP_LOOKUP_H
#define PASCI_PREP_LOOKUP_H

#include "prep.h"

int pasci_lookup_check(
    const pasco_layer *l, const int64_t *widths, int64_t *out);
int     pasci_lookup_prep(pasci_prep_call *c);
int64_t pasci_lookup_depth(const pasco_layer *l);

/* The fields both write: max_tokens, num_oov_indices, vocabulary,
 * idf_weights, invert, output_mode, sparse, pad_to_max_tokens, salt. */
bool pasci_lookup_write(cJSON *c, const pasco_layer *l);

/* Reads them (l->prep allocated by the caller) but the vocabulary, read
 * by pasci_lookup_read_vocab once the mask and OOV tokens are. */
int pasci_lookup_read(const cJSON *c, pasco_layer *l, const char *at);
int pasci_lookup_read_vocab(const cJSON *c, pasco_layer *l, const char *at);

/* A constructor's end: p (taken over) given o's options and the
 * vocabulary tokens[0..n) or values[0..n) (or o's file). */
int pasci_lookup_made(pasco_layer *out, pasco_layer_kind kind, pasco_prep *p,
    size_t n, const char *const *tokens, const int64_t *values,
    const pasco_lookup_options *o);

#endif
