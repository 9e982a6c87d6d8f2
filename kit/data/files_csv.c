/*
 * A files dataset's CSV read by feature (include/pasco/dataset.h, the
 * spec's csv "features"): each named column is its own model input, x the
 * DICT {column: [1] tensor} (float -> f32, int64 -> i64, string -> i64
 * fingerprints, pasco_hash_key of the text, as TFRecord's "string"
 * features), y the label column. So a string column reaches a model's
 * StringLookup or Hashing (layers.h, "Preprocessing"). Built on the
 * factory's thread: the header read, then the CSV source in its dict
 * mode (kit/data/csv.c, its parser and errors), mapped, shuffled,
 * repeated and batched.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_impl.h"
#include "files_dataset.h"
#include "pasco/example.h"
#include "util.h"
#include "value_impl.h"

#define FIELD_MAX 1024

/* What the map keeps: the feature columns, in order, and the label. */
typedef struct csv_pick {
	size_t n;
	char **names;
	char  *label;
} csv_pick;

static void
pick_free(void *arg)
{
	csv_pick *p = arg;
	for (size_t k = 0; p != NULL && k < p->n; k++) {
		free(p->names[k]);
	}
	if (p != NULL) {
		free(p->names);
		free(p->label);
		free(p);
	}
}

/* A line's dict of scalars into (DICT {feature: [1]}, label). */
static int
pick_map(void *arg, const pasco_value *e, pasco_value **out)
{
	const csv_pick *p     = arg;
	pasco_value   **items = pasci_calloc(p->n + 1, sizeof(*items));
	const char    **keys  = pasci_calloc(p->n + 1, sizeof(*keys));
	pasco_value    *x = NULL, *y = NULL;
	int             rv = items && keys ? PASCO_OK : PASCO_ENOMEM;
	for (size_t k = 0; rv == 0 && k < p->n; k++) {
		const pasco_tensor *t =
		    pasco_value_as_tensor(pasco_value_get(e, p->names[k]));
		pasco_tensor *r = NULL;
		keys[k]         = p->names[k];
		rv              = t == NULL ? PASCO_EINVAL
		                            : pasco_tensor_from(&r, t->dtype, 1,
		                                  (int64_t[]){1}, t->data, t->nbytes);
		if (rv == 0 && (items[k] = pasco_value_tensor(r)) == NULL) {
			rv = PASCO_ENOMEM;
		}
	}
	if (rv == 0 && ((x = pasci_value_dict_of(p->n, keys, items)) == NULL ||
	                   (y = pasco_value_clone(
	                        pasco_value_get(e, p->label))) == NULL)) {
		rv = PASCO_ENOMEM;
	}
	if (rv != 0 && x == NULL) {
		for (size_t k = 0; items != NULL && k < p->n; k++) {
			pasco_value_free(items[k]);
		}
	}
	free(items);
	free(keys);
	if (rv == 0 && (*out = pasco_value_list(2, x, y)) == NULL) {
		rv = PASCO_ENOMEM;
	} else if (rv != 0) {
		pasco_value_free(x);
	}
	return rv;
}

/* The first file's header names into cols (malloc'd names). */
static int
read_header(const char *file, pasco_csv_column **cols, size_t *n)
{
	FILE   *f    = fopen(file, "r");
	char   *line = NULL, field[FIELD_MAX], *p;
	size_t  cap  = 0;
	ssize_t len;
	bool    more = true;
	*n           = 0;
	if (f == NULL) {
		return pasco_dataset_fail(
		    PASCO_ENOTFOUND, "files dataset: cannot open %s", file);
	}
	len = getline(&line, &cap, f);
	fclose(f);
	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
		line[--len] = 0;
	}
	if (len <= 0) {
		free(line);
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: %s has no header line", file);
	}
	*cols = pasci_calloc((size_t) len + 2, sizeof(**cols));
	for (p = line; *cols != NULL && more; (*n)++) {
		more = pasci_csv_next_field(
		    &p, line + len, ',', field, sizeof(field));
		(*cols)[*n] = (pasco_csv_column){
		    .name = pasci_strdup(field), .type = PASCO_FEATURE_BYTES};
	}
	free(line);
	return *cols != NULL ? PASCO_OK
	                     : pasco_dataset_fail(PASCO_ENOMEM,
	                           "files dataset: out of memory");
}

static ssize_t
column_of(const pasco_csv_column *cols, size_t n, const char *name)
{
	for (size_t k = 0; k < n; k++) {
		if (cols[k].name != NULL && strcmp(cols[k].name, name) == 0) {
			return (ssize_t) k;
		}
	}
	return -1;
}

/* Types the columns: the features', the label's; the rest BYTES. */
static int
type_columns(pasco_csv_column *cols, size_t n, const pasci_csv_features *o)
{
	ssize_t l = column_of(cols, n, o->label);
	if (l < 0) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "files dataset: label '%s' is not a column of %s",
		    o->label, o->files[0]);
	}
	cols[l].type = o->label_type;
	for (size_t j = 0; j < o->ninputs; j++) {
		const pasco_example_input *in = &o->inputs[j];
		ssize_t                    k  = column_of(cols, n, in->name);
		if (k < 0 || k == l || in->width != 1) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "files dataset: features.%s: %s", in->name,
			    k < 0    ? "not a column of the csv header"
			    : k == l ? "is the label"
			             : "a csv feature is one column: width 1");
		}
		cols[k].type          = in->type;
		cols[k].has_default   = in->has_default;
		cols[k].default_value = in->default_value;
		cols[k].num_buckets   = in->num_buckets;
	}
	return PASCO_OK;
}

static int
make_pick(const pasci_csv_features *o, csv_pick **out)
{
	csv_pick *p = pasci_calloc(1, sizeof(*p));
	int       rv;
	*out = p;
	if (p == NULL ||
	    (p->names = pasci_calloc(o->ninputs + 1, sizeof(char *))) ==
	        NULL ||
	    (p->label = pasci_strdup(o->label)) == NULL) {
		return PASCO_ENOMEM;
	}
	for (size_t j = 0; j < o->ninputs; j++) {
		if ((p->names[j] = pasci_strdup(o->inputs[j].name)) == NULL) {
			return PASCO_ENOMEM;
		}
		p->n = j + 1;
	}
	rv = PASCO_OK;
	return rv;
}

int
pasci_csv_features_dataset(pasco_dataset **out, const pasci_csv_features *o)
{
	pasco_csv_column *cols = NULL;
	csv_pick         *pick = NULL;
	size_t            n    = 0;
	int               rv   = read_header(o->files[0], &cols, &n);
	pasco_csv_options co   = {.header = true,
	      .num_shards                 = o->num_shards,
	      .shard_index                = o->shard_index};
	*out                   = NULL;
	if (rv == 0) {
		rv = type_columns(cols, n, o);
	}
	co.columns  = cols;
	co.ncolumns = n;
	if (rv == 0) {
		rv = pasco_dataset_csv(out, o->files, o->nfiles, &co);
	}
	if (rv == 0 && (rv = make_pick(o, &pick)) != 0) {
		pasco_dataset_free(*out);
		*out = NULL;
		pick_free(pick);
	}
	if (rv == 0) {
		rv = pasco_dataset_map_with(
		    out, *out, pick_map, pick, pick_free);
	}
	for (size_t k = 0; cols != NULL && k < n; k++) {
		free((char *) cols[k].name);
	}
	free(cols);
	if (rv == 0 && o->shuffle > 0) {
		rv = pasco_dataset_shuffle(out, *out, o->shuffle, o->seed);
	}
	if (rv == 0 && o->repeat != 0 && o->repeat != 1) {
		rv = pasco_dataset_repeat(out, *out, o->repeat);
	}
	if (rv == 0) {
		rv = pasco_dataset_batch(
		    out, *out, o->batch_size, o->drop_remainder);
	}
	return rv;
}
