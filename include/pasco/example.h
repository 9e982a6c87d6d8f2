/*
 * tf.train.Example records (TensorFlow's example.proto, same field numbers):
 * parsing into tensors by a feature spec, encoding from tensors, and a
 * dataset transform that parses each record of a TFRecord dataset.
 */
#ifndef PASCO_EXAMPLE_H
#define PASCO_EXAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "error.h"
#include "hash.h"
#include "value.h"

typedef enum pasco_feature_type {
	PASCO_FEATURE_INT64 = 1, /* int64_list -> i64 tensor */
	PASCO_FEATURE_FLOAT = 2, /* float_list -> f32 tensor */
	PASCO_FEATURE_BYTES = 3, /* bytes_list of one value -> u8 tensor */
	/* bytes_list of any number of values -> i64 tensor of their keys,
	 * each value hashed with pasco_hash_key (hash.h: XXH64, -1 never
	 * given), or into [0, num_buckets) with pasco_hash_bucket */
	PASCO_FEATURE_HASHED = 4,
} pasco_feature_type;

typedef struct pasco_feature_spec {
	const char        *name;
	pasco_feature_type type;
	/* > 0: fixed length (shape [length]); 0: variable length (shape [n],
	 * e.g. the ids and values of a sparse feature, seed 004). */
	int64_t length;
	/* A missing fixed-length INT64 / FLOAT feature takes default_value in
	 * every element when has_default; otherwise it is an error. A missing
	 * variable-length feature is empty. */
	bool   has_default;
	double default_value;
	/* HASHED only: 0 gives full 64-bit keys (pasco_hash_key), > 0 a
	 * bucket in [0, num_buckets) (pasco_hash_bucket); < 0, or set on
	 * another type, is an error. Last, so that initializers written
	 * before it existed still compile. */
	int64_t num_buckets;
} pasco_feature_spec;

/* Parses one serialized Example into a dict of tensors keyed by feature
 * name (in spec order; features not in the spec are ignored). A HASHED
 * feature follows INT64's length rule: a fixed length wants that many
 * byte strings, a missing one takes default_value in every element when
 * has_default. Errors (PASCO_EINVAL, PASCO_EPROTO) name the problem in
 * err: malformed bytes, a missing feature without default, a feature of
 * another type (a HASHED feature must be a bytes_list), a fixed feature
 * of another length, a bad num_buckets. Thread-safe. */
int pasco_example_parse(const void *data, size_t len,
    const pasco_feature_spec *specs, size_t nspecs, pasco_value **out,
    char *err, size_t errlen);

/* Serializes a dict of tensors as an Example: i64/i32 tensors as
 * int64_list, f32/f64 as float_list, u8 as a bytes_list of one value, a
 * LIST of u8 tensors as a bytes_list of their values (strings, e.g. the
 * features a HASHED spec reads). *out is malloc'd, owned by the caller.
 * PASCO_EINVAL for anything else. */
int pasco_example_encode(const pasco_value *features, void **out, size_t *len);

/* Parses every element of in (u8 tensors: serialized Examples, as a
 * TFRecord dataset yields) with specs (copied). A record that does not
 * parse ends iteration with its error. Takes over in. */
int pasco_dataset_parse_examples(pasco_dataset **out, pasco_dataset *in,
    const pasco_feature_spec *specs, size_t nspecs);

/* A model input read from an Example feature of the same name. FLOAT:
 * features, f32 [width] (the feature's fixed length; a missing feature
 * takes default_value when has_default). INT64: ids for an Embedding, i64
 * [width]: a feature with fewer ids is padded at its end with -1 (an
 * Embedding's padding), one with more is an error, a missing one is all
 * padding. HASHED: a bytes_list of strings, each hashed into a key
 * (pasco_hash_key, or a bucket when num_buckets > 0), then padded as
 * INT64 ids are: i64 [width]. */
typedef struct pasco_example_input {
	const char        *name;
	pasco_feature_type type; /* FLOAT, INT64 or HASHED */
	int64_t            width;
	bool               has_default; /* FLOAT */
	double             default_value;
	int64_t            num_buckets; /* HASHED: as pasco_feature_spec's */
} pasco_example_input;

/* Serialized Examples (the elements of in, a TFRecord dataset) parsed
 * into the batches a model's fit takes, by feature name: the LIST (x, y)
 * with x the DICT {inputs[i].name: f32 or i64 [batch, width]} (a
 * functional model's inputs by name) and y the label feature label_name
 * (of one value; missing is an error), i64 [batch] when label_type is
 * INT64, f32 [batch] when FLOAT. label_name NULL: each batch is x alone
 * (for predict). The last short batch is kept unless drop_remainder.
 * A record that does not parse, a missing label, or ids beyond width end
 * iteration with PASCO_EINVAL and a message naming the feature
 * (pasco_dataset_last_error). Bad arguments (no inputs, a width < 1, a
 * BYTES input, a bad num_buckets, batch_size < 1) are PASCO_EINVAL with
 * the message recorded
 * as pasco_dataset_fail does. inputs are copied; takes over in. */
int pasco_dataset_parse_example_inputs(pasco_dataset **out, pasco_dataset *in,
    const pasco_example_input *inputs, size_t ninputs, const char *label_name,
    pasco_feature_type label_type, int64_t batch_size, bool drop_remainder);

/* The label of pasco_dataset_parse_example_labeled: the feature name,
 * its type (INT64: i64, FLOAT: f32) and each example's shape: rank 0 one
 * value (y [batch]); rank 1 or 2, shape [T] or [T, D], a fixed-length
 * feature of T (T * D) values, row-major (y [batch, T] or [batch, T, D]:
 * a sequence's class ids per step, or its targets per step and
 * feature). */
#define PASCO_EXAMPLE_LABEL_MAX_RANK 2
typedef struct pasco_example_label {
	const char        *name;
	pasco_feature_type type; /* INT64 or FLOAT */
	int32_t            rank; /* 0 .. PASCO_EXAMPLE_LABEL_MAX_RANK */
	int64_t            shape[PASCO_EXAMPLE_LABEL_MAX_RANK];
} pasco_example_label;

/* pasco_dataset_parse_example_inputs with a label of any shape (label
 * NULL: x alone, for predict): y is [batch] followed by the label's
 * shape. A record whose label feature has another number of values than
 * the shape holds ends iteration with PASCO_EINVAL naming the feature and
 * both counts. A rank outside [0, 2] or a dimension < 1 is PASCO_EINVAL
 * at the call. label is copied; takes over in. Thread-safe. */
int pasco_dataset_parse_example_labeled(pasco_dataset **out, pasco_dataset *in,
    const pasco_example_input *inputs, size_t ninputs,
    const pasco_example_label *label, int64_t batch_size, bool drop_remainder);

#endif
