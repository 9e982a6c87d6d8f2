/*
 * make_csv_dataset (see dataset.h): reads the header of each file and the
 * first lines of the first one to name and type the columns, then builds
 * the ordinary CSV source (kit/data/csv.c, its parser and its errors) in
 * its dense mode, each line parsed straight into (features vector,
 * label), then shuffle, repeat and batch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_impl.h"
#include "pasco/dataset.h"
#include "pasco/example.h"
#include "util.h"

#define CSV_FIELD_MAX 1024

/* The header and what is known of each column. */
typedef struct csv_header {
	size_t            ncols;
	pasco_csv_column *cols;   /* names owned */
	bool             *given;  /* type given in column_types */
	char            **sample; /* first value that is not a number */
} csv_header;

/* The columns picked: features, in order, and the label. */
typedef struct csv_rows {
	size_t  nfeat;
	size_t *feat; /* column index of each feature */
	size_t  label;
	char   *features_name; /* NULL: x is the tensor */
} csv_rows;

static void
header_fini(csv_header *h)
{
	for (size_t i = 0; i < h->ncols; i++) {
		free((char *) h->cols[i].name);
		free(h->sample[i]);
	}
	free(h->cols);
	free(h->given);
	free(h->sample);
	memset(h, 0, sizeof(*h));
}

/* The first line of f without its line end into *line (malloc'd). */
static int
read_line(FILE *f, char **line, size_t *cap, size_t *len)
{
	ssize_t n = getline(line, cap, f);
	if (n < 0) {
		return PASCO_EOUTOFRANGE;
	}
	while (n > 0 && ((*line)[n - 1] == '\n' || (*line)[n - 1] == '\r')) {
		(*line)[--n] = 0;
	}
	*len = (size_t) n;
	return PASCO_OK;
}

/* Splits line into its fields; *n gets their number. names (cap entries)
 * get malloc'd copies. */
static int
split_fields(
    char *line, size_t len, char delim, char **names, size_t cap, size_t *n)
{
	char  field[CSV_FIELD_MAX];
	char *p    = line;
	bool  more = true;
	*n         = 0;
	while (more) {
		more = pasci_csv_next_field(
		    &p, line + len, delim, field, sizeof(field));
		if (*n < cap && (names[*n] = pasci_strdup(field)) == NULL) {
			return PASCO_ENOMEM;
		}
		(*n)++;
	}
	return PASCO_OK;
}

/* Widens column i's inferred type to fit text (INT64 < FLOAT < BYTES). */
static int
infer_field(csv_header *h, size_t i, const char *text)
{
	pasco_csv_column *c = &h->cols[i];
	char             *end;
	if (h->given[i] || *text == 0 || c->type == PASCO_FEATURE_BYTES) {
		return PASCO_OK;
	}
	if (c->type == PASCO_FEATURE_INT64) {
		(void) strtoll(text, &end, 10);
		if (*end == 0) {
			return PASCO_OK;
		}
		c->type = PASCO_FEATURE_FLOAT;
	}
	(void) strtod(text, &end);
	if (*end != 0) {
		c->type = PASCO_FEATURE_BYTES;
		if ((h->sample[i] = pasci_strdup(text)) == NULL) {
			return PASCO_ENOMEM;
		}
	}
	return PASCO_OK;
}

/* Reads the types of h's columns from up to rows lines of f. */
static int
infer_types(csv_header *h, FILE *f, char delim, int64_t rows)
{
	char  *line = NULL, field[CSV_FIELD_MAX];
	size_t cap  = 0, len;
	int    rv   = PASCO_OK;
	for (int64_t r = 0; rv == 0 && r < rows &&
	                    read_line(f, &line, &cap, &len) == PASCO_OK;) {
		char  *p    = line;
		bool   more = len > 0;
		size_t i    = 0;
		r += len > 0;
		while (rv == 0 && more) {
			more = pasci_csv_next_field(
			    &p, line + len, delim, field, sizeof(field));
			if (i < h->ncols) {
				rv = infer_field(h, i, field);
			}
			i++;
		}
	}
	free(line);
	return rv;
}

static ssize_t
column_index(const csv_header *h, const char *name)
{
	for (size_t i = 0; name != NULL && i < h->ncols; i++) {
		if (strcmp(h->cols[i].name, name) == 0) {
			return (ssize_t) i;
		}
	}
	return -1;
}

/* "a, b, c" (the header's names) into buf; where they do not all fit,
 * the first ones and the last three around "...", and how many there
 * are. */
static const char *
header_names(const csv_header *h, char *buf, size_t len)
{
	size_t at = 0, tail = h->ncols > 3 ? 3 : h->ncols;
	size_t keep = len > 48 ? len - 48 : 0; /* room for the tail */
	bool   cut  = false;
	for (size_t i = 0; i < h->ncols; i++) {
		size_t need = strlen(h->cols[i].name) + 2;
		if (!cut && at + need > keep && i + tail < h->ncols) {
			cut = true;
			at += (size_t) snprintf(
			    buf + at, len - at, "%s...", i > 0 ? ", " : "");
			i = h->ncols - tail - 1; /* to the last three */
			continue;
		}
		at += (size_t) snprintf(buf + at, len - at, "%s%s",
		    i > 0 ? ", " : "", h->cols[i].name);
		at = at < len ? at : len - 1;
	}
	if (cut) {
		snprintf(buf + at, len - at, "; %zu columns", h->ncols);
	}
	if (h->ncols == 0) {
		buf[0] = 0;
	}
	return buf;
}

/* The names of file's header into h (the first file), or checked against
 * h (the others). */
static int
read_header(csv_header *h, const char *file,
    const pasco_csv_dataset_options *o, bool first)
{
	FILE  *f    = fopen(file, "r");
	char  *line = NULL, **names;
	size_t cap = 0, len, n = 0;
	int    rv;
	if (f == NULL) {
		return pasco_dataset_fail(
		    PASCO_ENOTFOUND, "make_csv: cannot open %s", file);
	}
	if (read_line(f, &line, &cap, &len) != 0 || len == 0) {
		free(line);
		fclose(f);
		return pasco_dataset_fail(
		    PASCO_EINVAL, "make_csv: %s has no header line", file);
	}
	names = pasci_calloc(len + 2, sizeof(*names)); /* fields <= len + 1 */
	rv    = names == NULL
	            ? PASCO_ENOMEM
	            : split_fields(line, len, o->delimiter ? o->delimiter : ',',
	                  names, len + 1, &n);
	if (rv == 0 && first) {
		h->ncols  = n;
		h->cols   = pasci_calloc(n, sizeof(*h->cols));
		h->given  = pasci_calloc(n, sizeof(*h->given));
		h->sample = pasci_calloc(n, sizeof(*h->sample));
		rv =
		    h->cols && h->given && h->sample ? PASCO_OK : PASCO_ENOMEM;
		for (size_t i = 0; rv == 0 && i < n; i++) {
			h->cols[i].name = names[i];
			h->cols[i].type = PASCO_FEATURE_INT64;
			names[i]        = NULL;
		}
	} else if (rv == 0) {
		bool same = n == h->ncols;
		for (size_t i = 0; same && i < n; i++) {
			same = strcmp(names[i], h->cols[i].name) == 0;
		}
		if (!same) {
			char buf[256];
			rv = pasco_dataset_fail(PASCO_EINVAL,
			    "make_csv: the header of %s differs from the "
			    "first file's (%s)",
			    file, header_names(h, buf, sizeof(buf)));
		}
	}
	if (rv == 0 && first) {
		rv = infer_types(h, f, o->delimiter ? o->delimiter : ',',
		    o->num_rows_for_inference > 0 ? o->num_rows_for_inference
		                                  : 100);
	}
	for (size_t i = 0; names != NULL && i < n && i <= len; i++) {
		free(names[i]);
	}
	free(names);
	free(line);
	fclose(f);
	return rv == PASCO_ENOMEM ? pasco_dataset_fail(rv, "make_csv: out "
	                                                   "of memory")
	                          : rv;
}

/* Applies column_types (names must be in the header). */
static int
apply_types(csv_header *h, const pasco_csv_dataset_options *o)
{
	for (size_t j = 0; j < o->ncolumn_types; j++) {
		const pasco_csv_column *t = &o->column_types[j];
		ssize_t                 i = column_index(h, t->name);
		char                    buf[256];
		if (i < 0) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "make_csv: column_types names '%s', not in the "
			    "header (%s)",
			    t->name != NULL ? t->name : "(null)",
			    header_names(h, buf, sizeof(buf)));
		}
		h->cols[i].type          = t->type;
		h->cols[i].has_default   = t->has_default;
		h->cols[i].default_value = t->default_value;
		h->cols[i].num_buckets   = t->num_buckets;
		h->given[i]              = true;
	}
	return PASCO_OK;
}

/* Column i as a feature or the label (what): numeric, else an error. */
static int
check_numeric(const csv_header *h, size_t i, const char *what)
{
	if (h->cols[i].type == PASCO_FEATURE_INT64 ||
	    h->cols[i].type == PASCO_FEATURE_FLOAT) {
		return PASCO_OK;
	}
	if (h->cols[i].type == PASCO_FEATURE_HASHED) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "make_csv: %s column '%s' is HASHED: its i64 keys do not "
		    "fit make_csv's f32 x; read it with pasco_dataset_csv, or "
		    "leave it out with select_columns",
		    what, h->cols[i].name);
	}
	return pasco_dataset_fail(PASCO_EINVAL,
	    "make_csv: %s column '%s' is not numeric (%s%s%s); leave it out "
	    "with select_columns",
	    what, h->cols[i].name,
	    h->sample[i] != NULL ? "it holds '" : "given as BYTES",
	    h->sample[i] != NULL ? h->sample[i] : "",
	    h->sample[i] != NULL ? "'" : "");
}

/* The label and feature columns into r. */
static int
pick_columns(csv_header *h, const pasco_csv_dataset_options *o, csv_rows *r)
{
	ssize_t l = column_index(h, o->label_name);
	char    buf[256];
	if (l < 0) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "make_csv: label_name '%s' is not a column of the header "
		    "(%s)",
		    o->label_name != NULL ? o->label_name : "(null)",
		    header_names(h, buf, sizeof(buf)));
	}
	r->label = (size_t) l;
	if (o->label_type != 0) {
		h->cols[l].type = o->label_type;
	}
	r->feat = pasci_calloc(h->ncols + o->nselect + 1, sizeof(*r->feat));
	if (r->feat == NULL) {
		return pasco_dataset_fail(
		    PASCO_ENOMEM, "make_csv: out of memory");
	}
	for (size_t i = 0; o->select_columns == NULL && i < h->ncols; i++) {
		if (i != r->label) {
			r->feat[r->nfeat++] = i;
		}
	}
	for (size_t j = 0; o->select_columns != NULL && j < o->nselect; j++) {
		ssize_t i = column_index(h, o->select_columns[j]);
		if (i < 0 || i == l) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "make_csv: select_columns names '%s', %s (%s)",
			    o->select_columns[j] ? o->select_columns[j] : "",
			    i < 0 ? "not in the header" : "the label",
			    header_names(h, buf, sizeof(buf)));
		}
		r->feat[r->nfeat++] = (size_t) i;
	}
	if (r->nfeat == 0) {
		return pasco_dataset_fail(
		    PASCO_EINVAL, "make_csv: no feature columns");
	}
	int rv = check_numeric(h, r->label, "label");
	for (size_t j = 0; rv == 0 && j < r->nfeat; j++) {
		rv = check_numeric(h, r->feat[j], "feature");
	}
	return rv;
}

static void
rows_free(void *arg)
{
	csv_rows *r = arg;
	if (r != NULL) {
		free(r->feat);
		free(r->features_name);
		free(r);
	}
}

/* The header, the types and the columns of files under o into h and r. */
static int
describe(csv_header *h, csv_rows *r, const char *const *files, size_t nfiles,
    const pasco_csv_dataset_options *o)
{
	int rv = PASCO_OK;
	if (files == NULL || nfiles == 0) {
		return pasco_dataset_fail(PASCO_EINVAL, "make_csv: no files");
	}
	if (o->batch_size < 1) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "make_csv: batch_size must be positive, got %lld",
		    (long long) o->batch_size);
	}
	for (size_t i = 0; rv == 0 && i < nfiles; i++) {
		rv = read_header(h, files[i], o, i == 0);
	}
	if (rv == 0 && (rv = apply_types(h, o)) == 0 &&
	    (rv = pick_columns(h, o, r)) == 0 && o->features_name != NULL &&
	    (r->features_name = pasci_strdup(o->features_name)) == NULL) {
		rv = pasco_dataset_fail(
		    PASCO_ENOMEM, "make_csv: out of memory");
	}
	return rv;
}

int
pasco_dataset_make_csv(pasco_dataset **out, const char *const *files,
    size_t nfiles, const pasco_csv_dataset_options *o)
{
	csv_header        h = {0};
	csv_rows         *r = pasci_calloc(1, sizeof(*r));
	pasco_csv_options co;
	int               rv;

	*out = NULL;
	if (o == NULL || r == NULL) {
		free(r);
		return pasco_dataset_fail(
		    o == NULL ? PASCO_EINVAL : PASCO_ENOMEM, "make_csv: %s",
		    o == NULL ? "no options" : "out of memory");
	}
	if ((rv = describe(&h, r, files, nfiles, o)) != 0) {
		rows_free(r);
		header_fini(&h);
		return rv;
	}
	co = (pasco_csv_options){.columns = h.cols,
	    .ncolumns                     = h.ncols,
	    .header                       = true,
	    .delimiter                    = o->delimiter,
	    .num_shards                   = o->num_shards,
	    .shard_index                  = o->shard_index};
	/* each line parsed straight into (x, y): no dict of scalars */
	int32_t *place = malloc((h.ncols + 1) * sizeof(*place));
	if (place == NULL) {
		rows_free(r);
		header_fini(&h);
		return pasco_dataset_fail(
		    PASCO_ENOMEM, "make_csv: out of memory");
	}
	for (size_t i = 0; i < h.ncols; i++) {
		place[i] = PASCI_CSV_SKIP;
	}
	for (size_t j = 0; j < r->nfeat; j++) {
		place[r->feat[j]] = (int32_t) j;
	}
	place[r->label] = PASCI_CSV_LABEL;
	rv              = pasci_dataset_csv_dense(
	                 out, files, nfiles, &co, place, r->features_name);
	free(place);
	header_fini(&h);
	rows_free(r);
	if (rv == 0 && o->shuffle_buffer_size > 0) {
		rv = pasco_dataset_shuffle(
		    out, *out, o->shuffle_buffer_size, o->shuffle_seed);
	}
	if (rv == 0) {
		rv = pasco_dataset_repeat(
		    out, *out, o->num_epochs > 0 ? o->num_epochs : -1);
	}
	if (rv == 0) {
		rv = pasco_dataset_batch(
		    out, *out, o->batch_size, o->drop_remainder);
	}
	return rv;
}
