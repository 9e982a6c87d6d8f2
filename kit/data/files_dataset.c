/*
 * The files dataset: a dataset built on a worker from a JSON spec alone
 * (CSV or TFRecord file patterns, the label, the features, batch, shuffle,
 * repeat, sharding), so that a chief written in another language (Python,
 * issue 23) declares its data and C workers build it without user code.
 * The spec travels in the dataset's name, "pasco.files:{...}"; the worker
 * registry routes such names here (worker/registry.c). The spec's fields
 * are documented in include/pasco/dataset.h.
 *
 * Order: the files of each pattern (glob, sorted), pattern after pattern;
 * then this worker's share (whole files, or every num_workers-th record);
 * then shuffle, repeat, parse and batch. Everything here runs on the
 * thread that calls the factory; the spec is parsed on each call (a
 * dataset is built once per iterator, not per step).
 */
#include <cjson/cJSON.h>
#include <glob.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "files_dataset.h"
#include "pasco/example.h"
#include "pasco/tfrecord.h"

#define SPEC_MAX_INPUTS 64

enum { SHARD_AUTO, SHARD_FILES, SHARD_RECORDS, SHARD_NONE };

/* A parsed spec; strings are borrowed from the cJSON tree, files owned. */
typedef struct files_spec {
	bool                tfrecord, gzip, drop_remainder;
	char              **files;
	size_t              nfiles;
	const char         *label, *features_name;
	pasco_feature_type  label_type;
	pasco_example_label label_shape; /* tfrecord: its rank and shape */
	const char         *columns[SPEC_MAX_INPUTS];
	size_t              ncolumns;
	pasco_example_input inputs[SPEC_MAX_INPUTS];
	size_t              ninputs;
	int64_t             batch_size, shuffle, repeat, prefetch;
	int64_t             take; /* records kept, before shuffle (0: all) */
	uint64_t            seed;
	int                 shard;
} files_spec;

bool
pasci_files_dataset_name(const char *name)
{
	return name != NULL && strncmp(name, PASCI_FILES_PREFIX,
	                           strlen(PASCI_FILES_PREFIX)) == 0;
}

/* Fails unless every key of o is among keys. */
static int
check_keys(const cJSON *o, const char *const *keys, size_t n, const char *at)
{
	const cJSON *it;
	cJSON_ArrayForEach(it, o)
	{
		size_t i = 0;
		while (i < n && strcmp(keys[i], it->string) != 0) {
			i++;
		}
		if (i == n) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: %s: unknown field '%s'", at,
			    it->string);
		}
	}
	return PASCO_OK;
}

/* An integer field into *v (left alone when absent), at least min. */
static int
int_field(const cJSON *o, const char *key, int64_t min, int64_t *v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (it == NULL || cJSON_IsNull(it)) {
		return PASCO_OK;
	}
	if (!cJSON_IsNumber(it) ||
	    it->valuedouble != (double) (int64_t) it->valuedouble ||
	    it->valuedouble < (double) min) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: %s must be an integer >= %lld", key,
		    (long long) min);
	}
	*v = (int64_t) it->valuedouble;
	return PASCO_OK;
}

/* A string field into *v (left alone when absent or null). */
static int
string_field(const cJSON *o, const char *key, const char **v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (it == NULL || cJSON_IsNull(it)) {
		return PASCO_OK;
	}
	if (!cJSON_IsString(it) || it->valuestring[0] == 0) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: %s must be a non-empty string", key);
	}
	*v = it->valuestring;
	return PASCO_OK;
}

static int
bool_field(const cJSON *o, const char *key, bool *v)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	if (it == NULL || cJSON_IsNull(it)) {
		return PASCO_OK;
	}
	if (!cJSON_IsBool(it)) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: %s must be true or false", key);
	}
	*v = cJSON_IsTrue(it);
	return PASCO_OK;
}

/* One of names (by index) from the string field key; *v left alone when
 * absent. */
static int
choice_field(const cJSON *o, const char *key, const char *const *names,
    size_t n, const char *expected, int *v)
{
	const char *s = NULL;
	int         rv;
	if ((rv = string_field(o, key, &s)) != 0 || s == NULL) {
		return rv;
	}
	for (size_t i = 0; i < n; i++) {
		if (names[i] != NULL && strcmp(names[i], s) == 0) {
			*v = (int) i;
			return PASCO_OK;
		}
	}
	return pasco_dataset_fail(PASCO_EINVAL,
	    "files dataset: %s must be %s, got \"%s\"", key, expected, s);
}

/* The files of each pattern (sorted), appended to spec->files. */
static int
match_files(const cJSON *patterns, files_spec *spec)
{
	const cJSON *it;
	if (!cJSON_IsArray(patterns) || cJSON_GetArraySize(patterns) == 0) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: files must be a non-empty list of file "
		    "patterns");
	}
	cJSON_ArrayForEach(it, patterns)
	{
		glob_t g;
		int    rv;
		char **grown;
		if (!cJSON_IsString(it) || it->valuestring[0] == 0) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: files[%zu] is not a file pattern",
			    spec->nfiles);
		}
		if ((rv = glob(it->valuestring, 0, NULL, &g)) != 0) {
			if (rv != GLOB_NOMATCH) {
				globfree(&g);
			}
			return pasco_dataset_fail(
			    rv == GLOB_NOMATCH ? PASCO_ENOTFOUND : PASCO_EIO,
			    "files dataset: no file matches '%s'",
			    it->valuestring);
		}
		grown = realloc(spec->files,
		    (spec->nfiles + g.gl_pathc) * sizeof(*spec->files));
		if (grown == NULL) {
			globfree(&g);
			return PASCO_ENOMEM;
		}
		spec->files = grown;
		for (size_t i = 0; i < g.gl_pathc; i++) {
			if ((spec->files[spec->nfiles] =
			            strdup(g.gl_pathv[i])) == NULL) {
				globfree(&g);
				return PASCO_ENOMEM;
			}
			spec->nfiles++;
		}
		globfree(&g);
	}
	return PASCO_OK;
}

/* "features": {name: {"type": "float" | "int64" | "hashed", "width",
 * "default", "num_buckets"}, ...} (TFRecord), in the object's order. */
static int
read_features(const cJSON *features, files_spec *spec)
{
	static const char *const keys[] = {
	    "type", "width", "default", "num_buckets"};
	/* "string": a string's fingerprint, HASHED with full keys */
	static const char *const types[] = {[PASCO_FEATURE_INT64] = "int64",
	    [PASCO_FEATURE_FLOAT]                                 = "float",
	    [PASCO_FEATURE_HASHED]                                = "hashed",
	    [5]                                                   = "string"};
	const cJSON             *it;
	if (!cJSON_IsObject(features) || cJSON_GetArraySize(features) == 0) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: a tfrecord dataset needs features, an "
		    "object of name: {type, width}");
	}
	cJSON_ArrayForEach(it, features)
	{
		pasco_example_input *in = &spec->inputs[spec->ninputs];
		const cJSON         *d;
		int                  type = PASCO_FEATURE_FLOAT, rv;
		if (spec->ninputs == SPEC_MAX_INPUTS) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: more than %d features",
			    SPEC_MAX_INPUTS);
		}
		*in = (pasco_example_input){.name = it->string, .width = 1};
		if (!cJSON_IsObject(it)) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: features.%s must be an object "
			    "{type, width}",
			    it->string);
		}
		if ((rv = check_keys(it, keys, 4, it->string)) != 0 ||
		    (rv = choice_field(it, "type", types, 6,
		         "\"float\", \"int64\", \"hashed\" or \"string\"",
		         &type)) != 0 ||
		    (rv = int_field(it, "width", 1, &in->width)) != 0 ||
		    (rv = int_field(it, "num_buckets", 0, &in->num_buckets)) !=
		        0) {
			return rv;
		}
		if (type == 5 && in->num_buckets != 0) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: features.%s: a \"string\" feature "
			    "is its fingerprint; num_buckets is for "
			    "\"hashed\"",
			    it->string);
		}
		in->type = type == 5 ? PASCO_FEATURE_HASHED
		                     : (pasco_feature_type) type;
		d        = cJSON_GetObjectItemCaseSensitive(it, "default");
		if (d != NULL && !cJSON_IsNull(d)) {
			if (!cJSON_IsNumber(d)) {
				return pasco_dataset_fail(PASCO_EINVAL,
				    "files dataset: features.%s: default must "
				    "be a number",
				    it->string);
			}
			in->has_default   = true;
			in->default_value = d->valuedouble;
		}
		spec->ninputs++;
	}
	return PASCO_OK;
}

/* "label_shape": [] (one value, the default), [T] or [T, D]: each
 * example's label a fixed-length feature of that many values (a
 * sequence's labels). TFRecord only: a csv label is one column. */
static int
read_label_shape(const cJSON *root, files_spec *spec)
{
	const cJSON *shape =
	    cJSON_GetObjectItemCaseSensitive(root, "label_shape");
	const cJSON *it;
	if (shape == NULL || cJSON_IsNull(shape)) {
		return PASCO_OK;
	}
	if (spec->label == NULL) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: label_shape without a label");
	}
	if (!spec->tfrecord) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: label_shape is for tfrecord datasets (a "
		    "label feature of T or T * D values); a csv label is one "
		    "column");
	}
	if (!cJSON_IsArray(shape) ||
	    cJSON_GetArraySize(shape) > PASCO_EXAMPLE_LABEL_MAX_RANK) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: label_shape must be a list of at most %d "
		    "dimensions ([], [T] or [T, D])",
		    PASCO_EXAMPLE_LABEL_MAX_RANK);
	}
	cJSON_ArrayForEach(it, shape)
	{
		if (!cJSON_IsNumber(it) || it->valuedouble < 1 ||
		    it->valuedouble > (double) (1 << 24) ||
		    it->valuedouble != (double) (int64_t) it->valuedouble) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: label_shape[%d] must be an "
			    "integer in [1, %d]",
			    (int) spec->label_shape.rank, 1 << 24);
		}
		spec->label_shape.shape[spec->label_shape.rank++] =
		    (int64_t) it->valuedouble;
	}
	if (spec->label_shape.rank > 0 &&
	    cJSON_GetObjectItemCaseSensitive(root, "class_weight") != NULL) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: class_weight weighs one label per "
		    "example; a sequence's labels (label_shape) have one per "
		    "step: weigh the examples with a sample_weight feature");
	}
	return PASCO_OK;
}

/* The "sample_weight" feature's width: 1 (one weight per example), or,
 * with a label_shape [T] or [T, D], T (one per step, Keras's
 * per-timestep sample_weight [batch, T]). */
static int
check_weight_width(const cJSON *root, const files_spec *spec)
{
	const cJSON *sw =
	    cJSON_GetObjectItemCaseSensitive(root, "sample_weight");
	int64_t steps =
	    spec->label_shape.rank > 0 ? spec->label_shape.shape[0] : 1;
	for (size_t i = 0; cJSON_IsString(sw) && i < spec->ninputs; i++) {
		int64_t w = spec->inputs[i].width;
		if (strcmp(spec->inputs[i].name, sw->valuestring) == 0 &&
		    w != 1 && w != steps) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: sample_weight '%s' has width "
			    "%lld; want 1 (one weight per example)%s",
			    sw->valuestring, (long long) w,
			    spec->label_shape.rank > 0
			        ? " or the label_shape's steps T (one per "
			          "step)"
			        : " (a sequence's labels, label_shape [T], "
			          "take T, one per step)");
		}
	}
	return PASCO_OK;
}

static int
read_columns(const cJSON *columns, files_spec *spec)
{
	const cJSON *it;
	if (columns == NULL || cJSON_IsNull(columns)) {
		return PASCO_OK;
	}
	if (!cJSON_IsArray(columns) ||
	    cJSON_GetArraySize(columns) > SPEC_MAX_INPUTS) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: columns must be a list of at most %d "
		    "column names",
		    SPEC_MAX_INPUTS);
	}
	cJSON_ArrayForEach(it, columns)
	{
		if (!cJSON_IsString(it)) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: columns[%zu] is not a name",
			    spec->ncolumns);
		}
		spec->columns[spec->ncolumns++] = it->valuestring;
	}
	return PASCO_OK;
}

static int
read_spec(const cJSON *root, files_spec *spec)
{
	static const char *const keys[]    = {"format", "files", "label",
	       "label_type", "label_shape", "columns", "features_name",
	       "features", "batch_size", "drop_remainder", "shuffle", "seed",
	       "repeat", "shard", "gzip", "prefetch", "sample_weight",
	       "class_weight", "take"};
	static const char *const formats[] = {"csv", "tfrecord"};
	static const char *const shards[]  = {[SHARD_AUTO] = "auto",
	     [SHARD_FILES]                                 = "files",
	     [SHARD_RECORDS]                               = "records",
	     [SHARD_NONE]                                  = "none"};
	static const char *const labels[]  = {
	     [PASCO_FEATURE_INT64] = "int64", [PASCO_FEATURE_FLOAT] = "float"};
	int     format = -1, label_type = 0, rv;
	int64_t seed = 0;

	if (!cJSON_IsObject(root)) {
		return pasco_dataset_fail(
		    PASCO_EINVAL, "files dataset: the spec is not an object");
	}
	if ((rv = check_keys(
	         root, keys, sizeof(keys) / sizeof(keys[0]), "spec")) != 0 ||
	    (rv = choice_field(root, "format", formats, 2,
	         "\"csv\" or \"tfrecord\"", &format)) != 0 ||
	    (rv = choice_field(root, "shard", shards, 4,
	         "\"auto\", \"files\", \"records\" or \"none\"",
	         &spec->shard)) != 0 ||
	    (rv = choice_field(root, "label_type", labels, 3,
	         "\"int64\" or \"float\"", &label_type)) != 0 ||
	    (rv = string_field(root, "label", &spec->label)) != 0 ||
	    (rv = string_field(root, "features_name", &spec->features_name)) !=
	        0 ||
	    (rv = int_field(root, "batch_size", 1, &spec->batch_size)) != 0 ||
	    (rv = int_field(root, "shuffle", 0, &spec->shuffle)) != 0 ||
	    (rv = int_field(root, "seed", 0, &seed)) != 0 ||
	    (rv = int_field(root, "repeat", -1, &spec->repeat)) != 0 ||
	    (rv = int_field(root, "prefetch", 0, &spec->prefetch)) != 0 ||
	    (rv = int_field(root, "take", 1, &spec->take)) != 0 ||
	    (rv = bool_field(root, "gzip", &spec->gzip)) != 0 ||
	    (rv = bool_field(root, "drop_remainder", &spec->drop_remainder)) !=
	        0 ||
	    (rv = read_columns(
	         cJSON_GetObjectItemCaseSensitive(root, "columns"), spec)) !=
	        0) {
		return rv;
	}
	if (format < 0) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: format must be \"csv\" or \"tfrecord\"");
	}
	spec->tfrecord = format == 1;
	if (!spec->tfrecord && spec->take > 0) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: take is for a tfrecord dataset");
	}
	spec->seed       = (uint64_t) seed;
	spec->label_type = label_type != 0 ? (pasco_feature_type) label_type
	                                   : PASCO_FEATURE_INT64;
	if (!spec->tfrecord && spec->label == NULL) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: a csv dataset needs a label column");
	}
	if ((rv = read_label_shape(root, spec)) != 0) {
		return rv;
	}
	/* csv: features (optional) read each column as its own input */
	if ((spec->tfrecord ||
	        cJSON_GetObjectItemCaseSensitive(root, "features") != NULL) &&
	    (rv = read_features(
	         cJSON_GetObjectItemCaseSensitive(root, "features"), spec)) !=
	        0) {
		return rv;
	}
	if ((rv = check_weight_width(root, spec)) != 0) {
		return rv;
	}
	if (!spec->tfrecord && spec->ninputs > 0 &&
	    (spec->ncolumns > 0 || spec->features_name != NULL)) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: a csv's features name its inputs; columns "
		    "and features_name are for one f32 x");
	}
	return match_files(
	    cJSON_GetObjectItemCaseSensitive(root, "files"), spec);
}

/* This worker's files when sharding by files (i, i + M, ...), in place;
 * *by_records when each worker reads every file and keeps its share of
 * the records instead. */
static void
shard_files(
    files_spec *spec, const pasco_dataset_context *ctx, bool *by_records)
{
	int32_t m     = ctx->num_workers > 0 ? ctx->num_workers : 1;
	int32_t i     = ctx->worker_index;
	size_t  n     = 0;
	bool    files = spec->shard == SHARD_FILES ||
	             (spec->shard == SHARD_AUTO && spec->nfiles >= (size_t) m);
	*by_records = m > 1 && !files && spec->shard != SHARD_NONE;
	if (m <= 1 || !files) {
		return;
	}
	for (size_t k = 0; k < spec->nfiles; k++) {
		if (k % (size_t) m == (size_t) i) {
			spec->files[n++] = spec->files[k];
		} else {
			free(spec->files[k]);
		}
	}
	spec->nfiles = n;
}

static int
build_csv(const files_spec *spec, const pasco_dataset_context *ctx,
    bool by_records, pasco_dataset **out)
{
	if (spec->ninputs > 0) {
		pasci_csv_features f = {
		    .files          = (const char *const *) spec->files,
		    .nfiles         = spec->nfiles,
		    .inputs         = spec->inputs,
		    .ninputs        = spec->ninputs,
		    .label          = spec->label,
		    .label_type     = spec->label_type,
		    .num_shards     = by_records ? ctx->num_workers : 0,
		    .shard_index    = by_records ? ctx->worker_index : 0,
		    .shuffle        = spec->shuffle,
		    .repeat         = spec->repeat,
		    .batch_size     = spec->batch_size,
		    .seed           = spec->seed,
		    .drop_remainder = spec->drop_remainder};
		return pasci_csv_features_dataset(out, &f);
	}
	pasco_csv_dataset_options o = {.label_name = spec->label,
	    .label_type                            = spec->label_type,
	    .select_columns      = spec->ncolumns ? spec->columns : NULL,
	    .nselect             = spec->ncolumns,
	    .features_name       = spec->features_name,
	    .batch_size          = spec->batch_size,
	    .drop_remainder      = spec->drop_remainder,
	    .num_epochs          = spec->repeat < 0    ? 0
	                           : spec->repeat == 0 ? 1
	                                               : spec->repeat,
	    .shuffle_buffer_size = spec->shuffle,
	    .shuffle_seed        = spec->seed,
	    .num_shards          = by_records ? ctx->num_workers : 0,
	    .shard_index         = by_records ? ctx->worker_index : 0};
	return pasco_dataset_make_csv(
	    out, (const char *const *) spec->files, spec->nfiles, &o);
}

static int
build_tfrecord(const files_spec *spec, const pasco_dataset_context *ctx,
    bool by_records, pasco_dataset **out)
{
	pasco_tfrecord_options o  = {.gzip = spec->gzip};
	pasco_dataset         *ds = NULL;
	int                    rv;
	if ((rv = pasco_dataset_tfrecord(&ds,
	         (const char *const *) spec->files, spec->nfiles, &o)) != 0 ||
	    (by_records && (rv = pasco_dataset_shard(&ds, ds, ctx->num_workers,
	                        ctx->worker_index)) != 0) ||
	    (spec->take > 0 &&
	        (rv = pasco_dataset_take(&ds, ds, spec->take)) != 0) ||
	    (spec->shuffle > 0 && (rv = pasco_dataset_shuffle(&ds, ds,
	                               spec->shuffle, spec->seed)) != 0) ||
	    (spec->repeat != 0 && spec->repeat != 1 &&
	        (rv = pasco_dataset_repeat(&ds, ds, spec->repeat)) != 0)) {
		return rv; /* each transform freed its input on failure */
	}
	pasco_example_label y = spec->label_shape;
	y.name                = spec->label;
	y.type                = spec->label_type;
	return pasco_dataset_parse_example_labeled(out, ds, spec->inputs,
	    spec->ninputs, spec->label != NULL ? &y : NULL, spec->batch_size,
	    spec->drop_remainder);
}

int
pasci_files_dataset(const char *spec_json, const pasco_dataset_context *ctx,
    pasco_dataset **out)
{
	files_spec     spec = {.batch_size = 32, .repeat = 1};
	cJSON         *root = cJSON_Parse(spec_json != NULL ? spec_json : "");
	pasci_weights *w    = NULL;
	bool           by_records;
	int            rv;

	*out = NULL;
	if (root == NULL) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: the spec is not JSON (near '%.20s')",
		    cJSON_GetErrorPtr() != NULL ? cJSON_GetErrorPtr() : "");
	}
	if ((rv = read_spec(root, &spec)) == 0 &&
	    (rv = pasci_weights_read(root, &w)) == 0) {
		shard_files(&spec, ctx, &by_records);
		if (spec.nfiles == 0) {
			/* more workers than files, sharded by files: this
			 * worker's share is empty */
			rv = pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: worker %d of %d has no file: "
			    "shard by records, or give more files",
			    ctx->worker_index, ctx->num_workers);
		} else {
			rv = spec.tfrecord
			         ? build_tfrecord(&spec, ctx, by_records, out)
			         : build_csv(&spec, ctx, by_records, out);
		}
	}
	if (rv == 0) {
		rv = pasci_weights_apply(out, w);
		w  = NULL; /* taken over */
	}
	pasci_weights_free(w);
	if (rv == 0 && spec.prefetch > 0 &&
	    (rv = pasco_dataset_prefetch(out, *out, spec.prefetch)) != 0) {
		*out = NULL;
	}
	for (size_t k = 0; k < spec.nfiles; k++) {
		free(spec.files[k]);
	}
	free(spec.files);
	cJSON_Delete(root);
	return rv;
}
