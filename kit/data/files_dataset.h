/* The library's own dataset factory: a dataset declared from files by a
 * JSON spec carried in the dataset's name ("pasco.files:{...}"), so that
 * a worker builds it with no user code (a Python chief's data, issue 23).
 * The spec is documented in include/pasco/dataset.h. */
#ifndef PASCI_FILES_DATASET_H
#define PASCI_FILES_DATASET_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "pasco/dataset.h"
#include "pasco/example.h"

#define PASCI_FILES_PREFIX PASCO_FILES_DATASET_PREFIX

/* Whether name is a files dataset's ("pasco.files:" then its spec).
 * Thread-safe. */
bool pasci_files_dataset_name(const char *name);

/* The dataset of spec (the JSON after the prefix) for the worker or shard
 * ctx names: files matched, sharded, shuffled, repeated, parsed and
 * batched. PASCO_EINVAL for a bad spec, PASCO_ENOTFOUND for a pattern
 * that matches no file, or the source's error, with a message naming the
 * field or file recorded as pasco_dataset_fail records one. *out is NULL
 * on failure. Thread-safe. */
int pasci_files_dataset(
    const char *spec, const pasco_dataset_context *ctx, pasco_dataset **out);

/* A CSV files dataset read by feature (the spec's csv "features"): each
 * input names one column (width 1; type FLOAT, INT64 or HASHED, a
 * string's fingerprint), x the DICT {column: [1]}, y the label column
 * (label_type), every line of files (this worker's share when num_shards
 * > 1), shuffled, repeated (repeat 0 or 1: once; < 0: forever) and
 * batched. Errors as pasco_dataset_csv's, and a feature or label that is
 * no column of the first file's header, naming it. The options are
 * copied. Thread-safe (kit/data/files_csv.c). */
typedef struct pasci_csv_features {
	const char *const         *files;
	size_t                     nfiles;
	const pasco_example_input *inputs;
	size_t                     ninputs;
	const char                *label;
	pasco_feature_type         label_type;
	int32_t                    num_shards, shard_index;
	int64_t                    shuffle, repeat, batch_size;
	uint64_t                   seed;
	bool                       drop_remainder;
} pasci_csv_features;

int pasci_csv_features_dataset(
    pasco_dataset **out, const pasci_csv_features *o);

/* A spec's per-example weights (kit/data/sample_weights.c): its
 * "sample_weight" (a feature moved out of x) or "class_weight" ({"<class
 * id>": weight}), read into *out (NULL when it has neither; both is
 * Keras's error). pasci_weights_apply maps *ds's elements (x, y) to (x, y,
 * sample_weight f32 [batch]), taking over w (NULL: *ds unchanged); on
 * failure *ds is freed and NULL. Thread-safe. */
typedef struct pasci_weights pasci_weights;
int  pasci_weights_read(const cJSON *spec, pasci_weights **out);
int  pasci_weights_apply(pasco_dataset **ds, pasci_weights *w);
void pasci_weights_free(pasci_weights *w);

#endif
