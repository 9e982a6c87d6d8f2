/*
 * CSV source (see dataset.h): each file is read whole with io_uring, then
 * parsed line by line into a dict of one tensor per column (a scalar, the
 * u8 text of a BYTES column, or the i64 key of a HASHED one). Errors name file
 * and line, and the column where one is at fault, in the thread's data error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_impl.h"
#include "fileio.h"
#include "pasco/dataset.h"
#include "pasco/example.h"
#include "pasco/hash.h"
#include "util.h"
#include "value_impl.h"

typedef struct csv {
	char            **files;
	size_t            nfiles, cur;
	char             *buf;
	size_t            len, off;
	int64_t           line;
	pasco_csv_column *cols;
	size_t            ncols;
	bool              header;
	char              delim;
	int32_t           nshards, shard;
	int64_t           row; /* data lines seen, for sharding */
	/* dense mode (pasci_dataset_csv_dense): per column its place in x,
	 * PASCI_CSV_LABEL or PASCI_CSV_SKIP; NULL: a dict per line */
	int32_t *place;
	size_t   nfeat;
	char    *features_name;
} csv;

/* pasci_csv_next_field, and the field's whole length into *len (more
 * than cap - 1 when it was cut). */
static bool
next_field(
    char **p, char *end, char delim, char *field, size_t cap, size_t *len)
{
	size_t n      = 0;
	bool   quoted = *p < end && **p == '"';
	*len          = 0;
	if (quoted) {
		(*p)++;
	}
	while (*p < end) {
		char c = **p;
		if (quoted && c == '"') {
			if (*p + 1 < end &&
			    (*p)[1] == '"') { /* "" is a quote */
				(*p)++;
			} else {
				quoted = false;
				(*p)++;
				continue;
			}
		} else if (!quoted && c == delim) {
			break;
		}
		if (n + 1 < cap) {
			field[n++] = c;
		}
		(*len)++;
		(*p)++;
	}
	field[n] = 0;
	if (*p < end && **p == delim) {
		(*p)++;
		return true;
	}
	return false;
}

bool
pasci_csv_next_field(char **p, char *end, char delim, char *field, size_t cap)
{
	size_t len;
	return next_field(p, end, delim, field, cap, &len);
}

/* The number in text for numeric column col (its default when empty),
 * or PASCO_EINVAL naming the file, the line and the column. */
static int
parse_number(csv *c, size_t col, const char *text, double *out)
{
	const pasco_csv_column *k = &c->cols[col];
	char                   *end;
	double                  v = k->default_value;
	if (*text == 0 && !k->has_default) {
		pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
		    "%s:%lld: "
		    "column '%s' is empty and has no default",
		    c->files[c->cur], (long long) c->line, k->name);
		return PASCO_EINVAL;
	}
	if (*text != 0) {
		errno = 0;
		v     = k->type == PASCO_FEATURE_INT64
		            ? (double) strtoll(text, &end, 10)
		            : strtod(text, &end);
		if (errno != 0 || *end != 0) {
			pasci_error_fmt(pasci_data_error,
			    sizeof(pasci_data_error),
			    "%s:%lld: "
			    "column '%s': '%s' is not %s",
			    c->files[c->cur], (long long) c->line, k->name,
			    text,
			    k->type == PASCO_FEATURE_INT64 ? "an integer"
			                                   : "a number");
			return PASCO_EINVAL;
		}
	}
	*out = v;
	return PASCO_OK;
}

/* Column col's key of text (HASHED): its hash, or its default when
 * empty. */
static int
parse_key(csv *c, size_t col, const char *text, pasco_tensor **out)
{
	const pasco_csv_column *k = &c->cols[col];
	size_t                  n = strlen(text);
	if (n == 0 && !k->has_default) {
		pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
		    "%s:%lld: column '%s' is empty and has no default",
		    c->files[c->cur], (long long) c->line, k->name);
		return PASCO_EINVAL;
	}
	if (pasco_tensor_scalar(out, PASCO_I64, 0) != 0) {
		return PASCO_ENOMEM;
	}
	*(int64_t *) (*out)->data =
	    n == 0               ? (int64_t) k->default_value
	    : k->num_buckets > 0 ? pasco_hash_bucket(text, n, k->num_buckets)
	                         : pasco_hash_key(text, n);
	return PASCO_OK;
}

/* Column col's scalar tensor (i64, f32, u8 text for BYTES, i64 key for
 * HASHED). */
static int
parse_scalar(csv *c, size_t col, const char *text, pasco_tensor **out)
{
	const pasco_csv_column *k = &c->cols[col];
	double                  v;
	int                     rv;
	if (k->type == PASCO_FEATURE_HASHED) {
		return parse_key(c, col, text, out);
	}
	if (k->type == PASCO_FEATURE_BYTES) {
		return pasco_tensor_from(out, PASCO_U8, 1,
		    (int64_t[]){(int64_t) strlen(text)}, text, strlen(text));
	}
	if ((rv = parse_number(c, col, text, &v)) != 0) {
		return rv;
	}
	if (pasco_tensor_scalar(out,
	        k->type == PASCO_FEATURE_INT64 ? PASCO_I64 : PASCO_F32,
	        v) != 0) {
		return PASCO_ENOMEM;
	}
	if (k->type == PASCO_FEATURE_INT64 && *text != 0) {
		*(int64_t *) (*out)->data =
		    strtoll(text, NULL, 10); /* exact */
	}
	return PASCO_OK;
}

static int
parse_value(csv *c, size_t col, const char *text, pasco_value **out)
{
	pasco_tensor *t;
	int           rv = parse_scalar(c, col, text, &t);
	if (rv == 0 && (*out = pasco_value_tensor(t)) == NULL) {
		rv = PASCO_ENOMEM;
	}
	return rv;
}

/* Says that the line has n fields where the columns are ncols. */
static int
field_count_error(csv *c, size_t n)
{
	pasci_error_fmt(pasci_data_error, sizeof(pasci_data_error),
	    "%s:%lld: %zu fields; the columns are %zu", c->files[c->cur],
	    (long long) c->line, n, c->ncols);
	return PASCO_EINVAL;
}

/* Dense mode: one line [p, end) into (x f32 [nfeat], y scalar), x under
 * features_name when set. */
static int
parse_dense(csv *c, char *p, char *end, pasco_value **out)
{
	pasco_tensor *x, *y = NULL;
	pasco_value  *xv;
	char          field[1024];
	size_t        n    = 0;
	bool          more = true;
	int           rv   = pasco_tensor_alloc(
	                &x, PASCO_F32, 1, (int64_t[]){(int64_t) c->nfeat});
	float *d = rv == 0 ? x->data : NULL;
	while (rv == 0 && more) {
		double v;
		more = pasci_csv_next_field(
		    &p, end, c->delim, field, sizeof(field));
		if (n >= c->ncols || c->place[n] == PASCI_CSV_SKIP) {
			n++;
			continue;
		}
		if (c->place[n] == PASCI_CSV_LABEL) {
			rv = parse_scalar(c, n, field, &y);
		} else if ((rv = parse_number(c, n, field, &v)) == 0) {
			d[c->place[n]] = (float) v;
		}
		n++;
	}
	if (rv == 0 && n != c->ncols) {
		rv = field_count_error(c, n);
	}
	if (rv != 0) {
		pasco_tensor_release(x);
		pasco_tensor_release(y);
		return rv;
	}
	xv = pasco_value_tensor(x);
	if (c->features_name != NULL) {
		xv = pasco_value_dict(1, c->features_name, xv);
	}
	*out = pasco_value_list(2, xv, pasco_value_tensor(y));
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

/* One line [p, end) into a dict. */
static int
parse_line(csv *c, char *p, char *end, pasco_value **out)
{
	pasco_value **items = pasci_calloc(c->ncols + 1, sizeof(*items));
	const char  **keys  = pasci_calloc(c->ncols + 1, sizeof(*keys));
	char          field[1024];
	size_t        n    = 0;
	bool          more = true;
	int           rv   = items && keys ? PASCO_OK : PASCO_ENOMEM;
	while (rv == 0 && more) {
		size_t len;
		more =
		    next_field(&p, end, c->delim, field, sizeof(field), &len);
		if (n < c->ncols && len >= sizeof(field) &&
		    c->cols[n].type == PASCO_FEATURE_HASHED) {
			/* its key would be that of its first bytes */
			pasci_error_fmt(pasci_data_error,
			    sizeof(pasci_data_error),
			    "%s:%lld: column '%s': a field of %zu bytes; a "
			    "HASHED field may have at most %zu",
			    c->files[c->cur], (long long) c->line,
			    c->cols[n].name, len, sizeof(field) - 1);
			rv = PASCO_EINVAL;
		} else if (n < c->ncols) {
			keys[n] = c->cols[n].name;
			rv      = parse_value(c, n, field, &items[n]);
		}
		n++;
	}
	if (rv == 0 && n != c->ncols) {
		rv = field_count_error(c, n);
	}
	if (rv == 0 &&
	    (*out = pasci_value_dict_of(c->ncols, keys, items)) == NULL) {
		rv = PASCO_ENOMEM;
	} else if (rv != 0) {
		for (size_t i = 0; items != NULL && i < c->ncols; i++) {
			pasco_value_free(items[i]);
		}
	}
	free(items);
	free(keys);
	return rv;
}

static int
csv_next(void *arg, pasco_value **out)
{
	csv *c = arg;
	for (;;) {
		char *line, *end;
		if (c->buf == NULL) {
			void *data;
			int   rv;
			if (c->cur >= c->nfiles) {
				return PASCO_EOUTOFRANGE;
			}
			if ((rv = pasci_file_read(c->files[c->cur], &data,
			         &c->len, pasci_data_error,
			         sizeof(pasci_data_error))) != 0) {
				pasci_error_note(pasci_data_error);
				return rv;
			}
			c->buf  = data;
			c->off  = 0;
			c->line = 0;
		}
		if (c->off >= c->len) {
			free(c->buf);
			c->buf = NULL;
			c->cur++;
			continue;
		}
		line   = c->buf + c->off;
		end    = memchr(line, '\n', c->len - c->off);
		end    = end != NULL ? end : c->buf + c->len;
		c->off = (size_t) (end - c->buf) + 1;
		c->line++;
		if (end > line && end[-1] == '\r') {
			end--;
		}
		if ((c->header && c->line == 1) || end == line) {
			continue; /* the header, or an empty line */
		}
		if (c->nshards > 1 && c->row++ % c->nshards != c->shard) {
			continue; /* another shard's line */
		}
		return c->place != NULL ? parse_dense(c, line, end, out)
		                        : parse_line(c, line, end, out);
	}
}

static void
csv_reset(void *arg)
{
	csv *c = arg;
	free(c->buf);
	c->buf = NULL;
	c->cur = c->len = c->off = 0;
	c->row                   = 0;
}

static void
csv_free(void *arg)
{
	csv *c = arg;
	for (size_t i = 0; i < c->nfiles; i++) {
		free(c->files[i]);
	}
	for (size_t i = 0; i < c->ncols; i++) {
		free((char *) c->cols[i].name);
	}
	free(c->files);
	free(c->cols);
	free(c->buf);
	free(c->place);
	free(c->features_name);
	free(c);
}

static int csv_open(pasco_dataset **out, const char *const *files,
    size_t nfiles, const pasco_csv_options *opts, const int32_t *place,
    const char *features_name);

int
pasco_dataset_csv(pasco_dataset **out, const char *const *files, size_t nfiles,
    const pasco_csv_options *opts)
{
	return csv_open(out, files, nfiles, opts, NULL, NULL);
}

int
pasci_dataset_csv_dense(pasco_dataset **out, const char *const *files,
    size_t nfiles, const pasco_csv_options *opts, const int32_t *place,
    const char *features_name)
{
	return csv_open(out, files, nfiles, opts, place, features_name);
}

/* Every column named, num_buckets only on HASHED ones and not < 0. */
static int
check_columns(const pasco_csv_options *opts)
{
	for (size_t i = 0; i < opts->ncolumns; i++) {
		const pasco_csv_column *k = &opts->columns[i];
		if (k->name == NULL) {
			return pasco_dataset_fail(
			    PASCO_EINVAL, "csv: column %zu has no name", i);
		}
		if (k->num_buckets < 0 ||
		    (k->num_buckets != 0 && k->type != PASCO_FEATURE_HASHED)) {
			return pasco_dataset_fail(PASCO_EINVAL,
			    "csv: column '%s': num_buckets %lld; want 0 (full "
			    "keys) or, for a HASHED column, > 0",
			    k->name, (long long) k->num_buckets);
		}
	}
	return PASCO_OK;
}

static int
csv_open(pasco_dataset **out, const char *const *files, size_t nfiles,
    const pasco_csv_options *opts, const int32_t *place,
    const char *features_name)
{
	csv *c;
	int  rv;
	*out = NULL;
	if (opts == NULL || opts->ncolumns == 0 || opts->columns == NULL) {
		return PASCO_EINVAL;
	}
	if (opts->num_shards < 0 || opts->shard_index < 0 ||
	    (opts->num_shards > 1 && opts->shard_index >= opts->num_shards)) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "csv: shard_index %d of num_shards %d: want 0 <= "
		    "shard_index < num_shards",
		    (int) opts->shard_index, (int) opts->num_shards);
	}
	if ((rv = check_columns(opts)) != 0) {
		return rv;
	}
	if ((c = pasci_calloc(1, sizeof(*c))) == NULL) {
		return PASCO_ENOMEM;
	}
	c->files   = pasci_calloc(nfiles + 1, sizeof(char *));
	c->cols    = pasci_calloc(opts->ncolumns, sizeof(*c->cols));
	c->delim   = opts->delimiter ? opts->delimiter : ',';
	c->header  = opts->header;
	c->nshards = opts->num_shards;
	c->shard   = opts->shard_index;
	rv         = c->files && c->cols ? PASCO_OK : PASCO_ENOMEM;
	for (size_t i = 0; rv == 0 && i < nfiles; i++) {
		rv        = (c->files[i] = pasci_strdup(files[i])) ? PASCO_OK
		                                                   : PASCO_ENOMEM;
		c->nfiles = i + 1;
	}
	for (size_t i = 0; rv == 0 && i < opts->ncolumns; i++) {
		c->cols[i]      = opts->columns[i];
		c->cols[i].name = pasci_strdup(opts->columns[i].name);
		c->ncols        = i + 1;
		rv = c->cols[i].name != NULL ? PASCO_OK : PASCO_ENOMEM;
	}
	if (rv == 0 && place != NULL) {
		if ((c->place = pasci_calloc(
		         opts->ncolumns, sizeof(int32_t))) == NULL ||
		    (features_name != NULL && (c->features_name = pasci_strdup(
		                                   features_name)) == NULL)) {
			rv = PASCO_ENOMEM;
		}
		for (size_t i = 0; rv == 0 && i < opts->ncolumns; i++) {
			c->place[i] = place[i];
			c->nfeat += place[i] >= 0;
		}
	}
	if (rv == 0 && (rv = pasco_dataset_from_generator(
	                    out, csv_next, csv_reset, csv_free, c)) == 0) {
		return PASCO_OK;
	}
	csv_free(c);
	return rv;
}
