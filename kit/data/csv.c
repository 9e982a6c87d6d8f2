/*
 * CSV source (see dataset.h): each file is read whole with io_uring, then
 * parsed line by line into a dict of one tensor per column (a scalar, or
 * the u8 text of a BYTES column). Errors name file and line, and the
 * column where one is at fault, in the thread's data error.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_impl.h"
#include "fileio.h"
#include "pasco/dataset.h"
#include "pasco/example.h"
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
} csv;

bool
pasci_csv_next_field(char **p, char *end, char delim, char *field, size_t cap)
{
	size_t n      = 0;
	bool   quoted = *p < end && **p == '"';
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
		(*p)++;
	}
	field[n] = 0;
	if (*p < end && **p == delim) {
		(*p)++;
		return true;
	}
	return false;
}

static int
parse_value(csv *c, size_t col, const char *text, pasco_value **out)
{
	const pasco_csv_column *k = &c->cols[col];
	pasco_tensor           *t;
	char                   *end;
	double                  v = k->default_value;
	if (k->type == PASCO_FEATURE_BYTES) {
		if (pasco_tensor_from(&t, PASCO_U8, 1,
		        (int64_t[]){(int64_t) strlen(text)}, text,
		        strlen(text)) != 0) {
			return PASCO_ENOMEM;
		}
		*out = pasco_value_tensor(t);
		return PASCO_OK;
	}
	if (*text == 0 && !k->has_default) {
		pasci_fmt(pasci_data_error, sizeof(pasci_data_error),
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
			pasci_fmt(pasci_data_error, sizeof(pasci_data_error),
			    "%s:%lld: "
			    "column '%s': '%s' is not %s",
			    c->files[c->cur], (long long) c->line, k->name,
			    text,
			    k->type == PASCO_FEATURE_INT64 ? "an integer"
			                                   : "a number");
			return PASCO_EINVAL;
		}
	}
	if (pasco_tensor_scalar(&t,
	        k->type == PASCO_FEATURE_INT64 ? PASCO_I64 : PASCO_F32,
	        v) != 0) {
		return PASCO_ENOMEM;
	}
	if (k->type == PASCO_FEATURE_INT64 && *text != 0) {
		*(int64_t *) t->data = strtoll(text, NULL, 10); /* exact */
	}
	*out = pasco_value_tensor(t);
	return PASCO_OK;
}

/* One line [p, end) into a dict. */
static int
parse_line(csv *c, char *p, char *end, pasco_value **out)
{
	pasco_value **items = calloc(c->ncols + 1, sizeof(*items));
	const char  **keys  = calloc(c->ncols + 1, sizeof(*keys));
	char          field[1024];
	size_t        n    = 0;
	bool          more = true;
	int           rv   = items && keys ? PASCO_OK : PASCO_ENOMEM;
	while (rv == 0 && more) {
		more = pasci_csv_next_field(
		    &p, end, c->delim, field, sizeof(field));
		if (n < c->ncols) {
			keys[n] = c->cols[n].name;
			rv      = parse_value(c, n, field, &items[n]);
		}
		n++;
	}
	if (rv == 0 && n != c->ncols) {
		pasci_fmt(pasci_data_error, sizeof(pasci_data_error),
		    "%s:%lld: %zu "
		    "fields; the columns are %zu",
		    c->files[c->cur], (long long) c->line, n, c->ncols);
		rv = PASCO_EINVAL;
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
		return parse_line(c, line, end, out);
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
	free(c);
}

int
pasco_dataset_csv(pasco_dataset **out, const char *const *files, size_t nfiles,
    const pasco_csv_options *opts)
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
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		return PASCO_ENOMEM;
	}
	c->files   = calloc(nfiles + 1, sizeof(char *));
	c->cols    = calloc(opts->ncolumns, sizeof(*c->cols));
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
	if (rv == 0 && (rv = pasco_dataset_from_generator(
	                    out, csv_next, csv_reset, csv_free, c)) == 0) {
		return PASCO_OK;
	}
	csv_free(c);
	return rv;
}
