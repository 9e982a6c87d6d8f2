/*
 * Input pipelines. A pasco_dataset is a stream of elements (pasco_value,
 * usually a tensor or a list of tensors) built from a source and a chain of
 * transforms. Each transform takes over the dataset it wraps. Datasets are
 * built on workers by registered factories (PASCO_DATASET) and iterated by
 * step functions with pasco_dataset_next; pasco_dataset_next is thread-safe
 * (several closures may share one worker's iterator), everything else is
 * not.
 */
#ifndef PASCO_DATASET_H
#define PASCO_DATASET_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "tensor.h"
#include "value.h"

typedef struct pasco_dataset pasco_dataset;

/* What a factory is told about where it runs, and the program's own
 * arguments (pasco_program_args, server.h: argv less pasco's flags, as the
 * chief function gets it; argc 0 outside pasco_main), so that a factory
 * parses the same options as the chief, with no global filled in main. */
typedef struct pasco_dataset_context {
	int32_t      worker_index; /* this worker, 0-based */
	int32_t      num_workers;  /* workers in the cluster */
	int          argc;
	char *const *argv; /* argv[argc] is NULL; read-only */
} pasco_dataset_context;

/* A dataset factory: builds this worker's dataset into *out. Returns
 * PASCO_OK or an error (reported to the coordinator). */
typedef int (*pasco_dataset_factory)(
    const pasco_dataset_context *ctx, pasco_dataset **out);

/* For a factory that cannot build its dataset: records a message naming
 * what is wrong (a path, a missing file) and returns err, so that
 *     return pasco_dataset_fail(PASCO_ENOTFOUND, "no files in %s", dir);
 * reaches the coordinator as "dataset factory 'NAME' failed on worker W:
 * not found: no files in DIR". A factory whose data source fails while
 * being built reports that source's message the same way. */
int pasco_dataset_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Datasets declared from files, with no factory (issue 23: a chief in
 * another language, whose workers run no user code): a dataset name
 * "pasco.files:" followed by a JSON spec is built on each worker by the
 * library itself, wherever a factory name is taken (per-worker datasets,
 * pasco_model_fit / _evaluate / _predict's dataset names). The spec:
 *   {"format": "csv" | "tfrecord",
 *    "files": [glob patterns, each matched and sorted, in order],
 *    "label": column or feature name (csv: required; tfrecord: null
 *        yields x alone, for predict),
 *    "label_type": "int64" (default) | "float",
 *    "label_shape": [] (default: one value per example, y [batch]), [T]
 *        or [T, D]: tfrecord only, each example's label a fixed-length
 *        feature of T (T * D) values, y [batch, T] or [batch, T, D] (a
 *        sequence's class ids or targets per step: docs/sequences.md;
 *        pasco_dataset_parse_example_labeled),
 *    "batch_size": 32, "drop_remainder": false,
 *    "shuffle": buffer size (0: none), "seed": 0 (0: drawn),
 *    "repeat": 1 (-1: forever), "prefetch": 0 (elements read ahead),
 *    "shard": "auto" | "files" | "records" | "none"
 *        (auto: whole files i, i + M, ... for worker i of M when there
 *        are at least M files, else every M-th record),
 *    csv: "columns": [feature columns] (default: all but the label),
 *        "features_name": x as the DICT {name: x} (default: the tensor),
 *        read as pasco_dataset_make_csv reads them; or "features" (as
 *        tfrecord's, each a column of width 1, no columns nor
 *        features_name): x the DICT {column: [batch, 1]}, a "string"
 *        column as its texts' fingerprints (pasco_hash_key, hash.h);
 *    tfrecord: "features": {name: {"type": "float" | "int64" | "hashed" |
 *        "string", "width": 1, "default": number, "num_buckets": 0},
 *        ...}, in order, read as pasco_dataset_parse_example_inputs
 *        reads them ("string": HASHED with full keys, a string's
 *        fingerprint, what a model's string input holds, layers.h
 *        "Preprocessing"; x a DICT by feature name), "gzip": false,
 *    "sample_weight": a feature's name (of "features", width 1): moved
 *        out of x, each element (x, y, weights [batch, 1]); width T with
 *        a "label_shape" [T] or [T, D]: weights [batch, T], one per step
 *        (docs/sequences.md); or
 *        "class_weight": {"<class id>": weight, ...}: each element
 *        (x, y, f32 weights [batch]) of its labels' classes (an integer
 *        label, a one-hot row's argmax; 1 for a class not named), as
 *        Keras's fit(class_weight=) (model.h, "Sample weights"); not
 *        both,
 *    "take": records kept (tfrecord; before the shuffle),
 *    "repeat_batches": true: repeat after the batch instead (each epoch
 *        ends with its own short batch),
 *    "map" (or "map_file": a file of the same JSON): a map traced by a
 *        Python chief (Dataset.map, docs/datasets.md), run on each batch:
 *        {"inputs": [a path into the element read per graph input: list
 *        indices and dict keys], "graph": an op graph (docs/GRAPHS.md)
 *        whose "model" nodes (attribute "arg") run models[arg], "models":
 *        [configs of preprocessing layers only], "element": the mapped
 *        element, lists and dicts whose leaves are output indices, each
 *        output in one place}}.
 * Order: files, this worker's share, take, shuffle, repeat, parse and
 * batch (then the repeat of repeat_batches, the map, the prefetch). A
 * bad spec is PASCO_EINVAL naming the field, a pattern matching no file
 * PASCO_ENOTFOUND naming it; both reach the coordinator as a factory's
 * error does. The name (and so the spec) is at most 4000 bytes. */
#define PASCO_FILES_DATASET_PREFIX "pasco.files:"

/* Builds here, in the calling process, the dataset a worker builds for
 * name: a registered factory's (PASCO_DATASET) or a "pasco.files:{spec}"
 * name, called as worker shard of num_shards (its share; 0 of 1: all of
 * it) with this program's arguments (pasco_program_args). A chief uses it
 * to read what its workers read, e.g. for pasco_model_adapt (layers.h).
 * *out is owned by the caller (pasco_dataset_free); NULL on failure.
 * PASCO_EINVAL for no name or a shard not in [0, num_shards),
 * PASCO_ENOTFOUND for a name that is neither registered nor a files
 * dataset, or the factory's error (a bad spec: PASCO_EINVAL naming the
 * field; no file matching a pattern: PASCO_ENOTFOUND naming it);
 * pasco_dataset_last_error says which, on this thread. */
int pasco_dataset_from_name(
    pasco_dataset **out, const char *name, int32_t shard, int32_t num_shards);

/* Registers a factory under name; the PASCO_DATASET macro does it at
 * program start. Returns PASCO_EEXIST if the name is taken. Thread-safe. */
int pasco_dataset_register(const char *name, pasco_dataset_factory fn);

/* Defines and registers a dataset factory:
 *     PASCO_DATASET(numbers) { return pasco_dataset_range(out, 0, 10, 1); }
 * The body sees `ctx` and `out`. */
#define PASCO_DATASET(name)                                                   \
	static int name(                                                      \
	    const pasco_dataset_context *ctx, pasco_dataset **out);           \
	__attribute__((constructor)) static void pasco_dataset_reg_##name(    \
	    void)                                                             \
	{                                                                     \
		(void) pasco_dataset_register(#name, name);                   \
	}                                                                     \
	static int name(const pasco_dataset_context *ctx, pasco_dataset **out)

/* Sources. */

/* Scalars start, start+step, ... below stop (above, for a negative step),
 * as i64. step 0 is PASCO_EINVAL. */
int pasco_dataset_range(
    pasco_dataset **out, int64_t start, int64_t stop, int64_t step);

/* Slices of value along dimension 0: a tensor of shape [n, ...] gives n
 * elements of shape [...]; a list of tensors (all with n rows) gives n lists.
 * The dataset holds its own references. */
int pasco_dataset_from_tensors(pasco_dataset **out, const pasco_value *value);

/* Elements from a callback. next stores a new element in *element (owned by
 * the dataset) and returns PASCO_OK, or returns PASCO_EOUTOFRANGE at the
 * end, or another error. reset (may be NULL) starts the sequence again; a
 * generator without reset cannot be repeated. free_arg (may be NULL) is
 * called on arg when the dataset is freed. */
typedef int (*pasco_generator_next)(void *arg, pasco_value **element);
int pasco_dataset_from_generator(pasco_dataset **out,
    pasco_generator_next next, void (*reset)(void *arg),
    void (*free_arg)(void *arg), void *arg);

/* CSV files: one element per line, a dict of scalar tensors keyed by
 * column name (INT64 -> i64, FLOAT -> f32, BYTES -> u8 of the text,
 * HASHED -> the i64 key of the text: pasco_hash_key of its bytes, quotes
 * removed, or pasco_hash_bucket when num_buckets > 0; hash.h). An empty
 * field takes the column's default (HASHED: default_value as the key), or
 * is an error without one; a field that does not parse, or a line with
 * another number of fields, is an error naming file, line and column
 * (pasco_dataset_last_error). Fields may be quoted with double quotes (no
 * newlines inside); a field is read up to 1023 bytes, and a longer HASHED
 * field is an error (its key would be that of the first 1023 bytes). A
 * bad column (no name, num_buckets < 0 or set on a type other than
 * HASHED) is PASCO_EINVAL, its message recorded as pasco_dataset_fail
 * records one. */
typedef struct pasco_csv_column {
	const char *name;
	int         type; /* pasco_feature_type (example.h) */
	bool        has_default;
	double      default_value; /* for INT64, FLOAT and HASHED */
	/* HASHED: 0 gives full keys, > 0 buckets in [0, num_buckets). Last,
	 * so that initializers written before it existed still compile. */
	int64_t num_buckets;
} pasco_csv_column;

typedef struct pasco_csv_options {
	const pasco_csv_column *columns;
	size_t                  ncolumns;
	bool                    header; /* skip the first line of each file */
	char                    delimiter; /* 0 means ',' */
	/* Only data lines k with k % num_shards == shard_index (k counted
	 * from 0 over the files, header and empty lines not counted) are
	 * parsed and yielded: a worker's share without parsing the others'
	 * (tf.data's shard, before any parsing). num_shards 0 or 1: all. */
	int32_t num_shards, shard_index;
} pasco_csv_options;

int pasco_dataset_csv(pasco_dataset **out, const char *const *files,
    size_t nfiles, const pasco_csv_options *opts);

/* Model inputs from CSV files with a header, as TensorFlow's
 * tf.data.experimental.make_csv_dataset: the header names the columns,
 * label_name picks the label, and the feature columns (select_columns,
 * or every other column in file order) are stacked into one f32 vector
 * per line. Batched, each element is the LIST (x, y) a model's fit takes:
 *   x: f32 [batch, width], the features in select_columns' (or the
 *      file's) order; when features_name is set, the DICT
 *      {features_name: that tensor} instead (a functional model's input
 *      by name). A Sequential model (one input) takes the plain tensor.
 *   y: the label column, i64 [batch] (INT64) or f32 [batch] (FLOAT).
 *     pasco_csv_dataset_options o = {.label_name = "label",
 *         .batch_size = 32, .shuffle_buffer_size = 1000,
 *         .shuffle_seed = 7};
 *     pasco_dataset_make_csv(out, files, nfiles, &o);
 * Types. A column's type is given in column_types (by name; its default
 * for empty fields too), or else inferred from the first
 * num_rows_for_inference lines of the first file (0: 100): INT64 when
 * every value read is an integer, FLOAT when every one is a number,
 * BYTES otherwise. Features must be numeric (INT64 values are converted
 * to f32); BYTES columns may be present but not selected, and so may
 * columns given as HASHED in column_types (their i64 keys do not fit an
 * f32 vector: read them with pasco_dataset_csv).
 * Errors (PASCO_EINVAL, or the file's error), with a message recorded as
 * pasco_dataset_fail records one, so that a factory returning the error
 * reports it, and readable by pasco_dataset_last_error: an unreadable file, a
 * file whose header differs from the first's, no label_name or a label or
 * selected column not in the header (the header is listed), a non-numeric
 * feature or label column (its name and the first value that is not a number),
 * batch_size < 1. Errors while iterating (a field that does not parse, a short
 * line) name the file, the line and the column (pasco_dataset_last_error).
 * Sharding: num_shards > 1 keeps only data lines k % num_shards ==
 * shard_index (counted over the files), skipped before they are parsed:
 * a factory gives a worker its share with
 * .num_shards = ctx->num_workers, .shard_index = ctx->worker_index.
 * Order: lines are read file after file; then shuffled within
 * shuffle_buffer_size lines (0: not shuffled; seed 0 draws a seed),
 * repeated num_epochs times (0 or less: forever, TensorFlow's None; each
 * epoch reshuffled) and batched (the last short batch kept unless
 * drop_remainder). Files and options are copied. */
typedef struct pasco_csv_dataset_options {
	const char             *label_name;
	int                     label_type; /* 0: inferred; or INT64 / FLOAT */
	const char *const      *select_columns; /* NULL: all but the label */
	size_t                  nselect;
	const char             *features_name; /* NULL: x is the tensor */
	const pasco_csv_column *column_types;  /* may be NULL */
	size_t                  ncolumn_types;
	int64_t                 batch_size;
	bool                    drop_remainder;
	int64_t                 num_epochs;
	int64_t                 shuffle_buffer_size;
	uint64_t                shuffle_seed;
	char                    delimiter;               /* 0 means ',' */
	int64_t                 num_rows_for_inference;  /* 0 means 100 */
	int32_t                 num_shards, shard_index; /* 0: all lines */
} pasco_csv_dataset_options;

int pasco_dataset_make_csv(pasco_dataset **out, const char *const *files,
    size_t nfiles, const pasco_csv_dataset_options *opts);

/* The message of the last error of a data source (CSV, TFRecord, a
 * generator, parse_examples) seen by pasco_dataset_next on this thread, ""
 * if none. An error raised on a prefetch thread brings its message to the
 * thread that calls pasco_dataset_next. */
const char *pasco_dataset_last_error(void);

/* Transforms: each takes over in (freed on failure too). */

/* Stacks batch_size consecutive elements (same structure and shapes) into
 * one, adding a leading dimension. The last, short batch is kept unless
 * drop_remainder. */
int pasco_dataset_batch(pasco_dataset **out, pasco_dataset *in,
    int64_t batch_size, bool drop_remainder);

/* Like pasco_dataset_batch, but tensors whose first dimension varies from
 * element to element (variable-length features: the ids and values of a
 * sparse feature) are padded at its end with pad_value to the longest in
 * the batch, as TensorFlow's padded_batch does: [n] tensors make
 * [batch, longest]. Other dimensions, dtypes and structure must agree. */
int pasco_dataset_padded_batch(pasco_dataset **out, pasco_dataset *in,
    int64_t batch_size, bool drop_remainder, double pad_value);

/* Repeats in count times; count < 0 repeats forever. */
int pasco_dataset_repeat(
    pasco_dataset **out, pasco_dataset *in, int64_t count);

/* Keeps elements whose index i has i % num_shards == index. */
int pasco_dataset_shard(
    pasco_dataset **out, pasco_dataset *in, int64_t num_shards, int64_t index);

/* The first count elements (count < 0: all). */
int pasco_dataset_take(pasco_dataset **out, pasco_dataset *in, int64_t count);

/* Whether ds repeats forever (tf.data's INFINITE cardinality): it, or a
 * dataset it reads, is a repeat with count < 0 (pasco_dataset_make_csv
 * with num_epochs 0 makes one) and no take cuts it; such a dataset ends
 * only if what it repeats is empty. A generator, or an interleave of
 * endless datasets, is not known to be endless: false. */
bool pasco_dataset_is_infinite(const pasco_dataset *ds);

/* Replaces each element e with fn(arg, e, &result); fn owns nothing of e. */
typedef int (*pasco_map_fn)(
    void *arg, const pasco_value *element, pasco_value **result);
int pasco_dataset_map(
    pasco_dataset **out, pasco_dataset *in, pasco_map_fn fn, void *arg);

/* The same, and free_arg(arg) runs when the dataset is freed (or at once
 * when this fails). */
int pasco_dataset_map_with(pasco_dataset **out, pasco_dataset *in,
    pasco_map_fn fn, void *arg, void (*free_arg)(void *arg));

/* Keeps the elements for which keep(arg, element, &yes) sets yes. */
typedef int (*pasco_filter_fn)(
    void *arg, const pasco_value *element, bool *keep);
int pasco_dataset_filter(
    pasco_dataset **out, pasco_dataset *in, pasco_filter_fn keep, void *arg);

/* Maps each element of in to a dataset with fn (fn owns nothing of the
 * element; *out is then owned by the interleave) and takes block_length
 * elements from each of up to cycle_length open datasets in turn, opening
 * the next one where one ends: TensorFlow's deterministic interleave, e.g.
 * over a dataset of file names, reading cycle_length files at a time. */
typedef int (*pasco_interleave_fn)(
    void *arg, const pasco_value *element, pasco_dataset **out);
int pasco_dataset_interleave(pasco_dataset **out, pasco_dataset *in,
    pasco_interleave_fn fn, void *arg, int64_t cycle_length,
    int64_t block_length);

/* Reads ahead on a background thread, keeping up to count elements ready
 * (the "load" stage overlapping the step). End of data and errors come
 * after the elements read before them. */
int pasco_dataset_prefetch(
    pasco_dataset **out, pasco_dataset *in, int64_t count);

/* Shuffles within a window of buffer_size elements, seeded; seed 0 draws
 * a random seed, so unseeded shuffles differ from worker to worker (as
 * TensorFlow's). */
int pasco_dataset_shuffle(pasco_dataset **out, pasco_dataset *in,
    int64_t buffer_size, uint64_t seed);

/* The next element into *element (owned by the caller), PASCO_EOUTOFRANGE
 * at the end, or the error of the source. Thread-safe. */
int pasco_dataset_next(pasco_dataset *ds, pasco_value **element);

/* NULL is a no-op. */
void pasco_dataset_free(pasco_dataset *ds);

#endif
