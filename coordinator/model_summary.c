/*
 * Keras's model.summary() (model.h, pasco_model_summary): the table of
 * layers (Layer (type), Output Shape, Param #, and for a functional model
 * its InputLayer rows and Connected to), the totals (trainable and
 * non-trainable, with their float32 bytes as Keras writes them), then
 * where each variable lives: its shards, their rows and the ps task of
 * each, read from the handles the strategy made. Runs on the caller's
 * thread; reads the model only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layer_desc.h"
#include "layers_impl.h"
#include "pasco/model.h"
#include "util.h"

#define COLS 4

typedef struct row {
	char cell[COLS][256];
} row;

/* 1234567 as "1,234,567". */
static void
grouped(char *buf, size_t len, int64_t n)
{
	char   digits[32];
	size_t nd = (size_t) snprintf(
	           digits, sizeof(digits), "%lld", (long long) n),
	       at = 0;
	for (size_t i = 0; i < nd && at + 2 < len; i++) {
		if (i > 0 && (nd - i) % 3 == 0) {
			buf[at++] = ',';
		}
		buf[at++] = digits[i];
	}
	buf[at] = 0;
}

/* Keras's readable_memory_size of n float32 parameters. */
static void
bytes_of(char *buf, size_t len, int64_t n)
{
	static const char *const units[] = {"B", "KB", "MB", "GB", "TB"};
	double                   b       = (double) n * 4;
	int                      u       = 0;
	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	pasci_fmt(buf, len, "%.2f %s", b, units[u]);
}

/* Elements of variable k (a dynamic table's rows are not counted: they
 * grow on the ps). */
static int64_t
elements(const pasco_model *m, size_t k)
{
	int64_t n = 1;
	for (int32_t d = 0; d < m->vars[k].rank; d++) {
		n *= m->vars[k].shape[d];
	}
	return n;
}

/* Whether variable k takes no gradient: a Normalization's statistics,
 * Keras's BatchNormalization moving statistics. */
static bool
non_trainable(const pasco_model *m, size_t k)
{
	const char *slash = strrchr(m->vars[k].name, '/');
	const char *last  = slash != NULL ? slash + 1 : m->vars[k].name;
	return m->layers[m->vars[k].layer].kind == PASCO_LAYER_NORMALIZATION ||
	       strcmp(last, "moving_mean") == 0 ||
	       strcmp(last, "moving_variance") == 0;
}

/* The name an input of a layer is called on, Keras's way
 * ("dense[0][0]"). */
static void
source_name(const pasco_model *m, int32_t src, char *buf, size_t len)
{
	if (src < 0) {
		pasci_fmt(buf, len, "%s[0][0]", m->inputs[-1 - src].name);
	} else {
		pasci_fmt(buf, len, "%s[0][0]", m->layers[src].name);
	}
}

static void
connected_to(const pasco_model *m, size_t i, char *buf, size_t len)
{
	const pasco_layer *l    = &m->layers[i];
	size_t             used = 0;
	buf[0]                  = 0;
	for (size_t j = 0; j < l->ninputs && used < len; j++) {
		char one[128];
		source_name(m, l->inputs[j], one, sizeof(one));
		used += (size_t) snprintf(
		    buf + used, len - used, "%s%s", j > 0 ? ", " : "", one);
	}
	if (l->ninputs == 0) {
		source_name(m, i > 0 ? (int32_t) i - 1 : PASCO_MODEL_INPUT(0),
		    buf, len);
	}
}

/* The table's rows: inputs (functional models), then the layers; the
 * totals into counts[0] (trainable) and counts[1]. */
static size_t
table_rows(const pasco_model *m, row *rows, int64_t counts[2])
{
	size_t n  = 0;
	counts[0] = counts[1] = 0;
	for (size_t i = 0; m->functional && i < m->ninputs; i++, n++) {
		pasci_fmt(rows[n].cell[0], 256, "%s (InputLayer)",
		    m->inputs[i].name);
		pasci_fmt(rows[n].cell[1], 256, "(None, %lld)",
		    (long long) m->inputs[i].width);
		pasci_fmt(rows[n].cell[2], 256, "0");
		pasci_fmt(rows[n].cell[3], 256, "-");
	}
	for (size_t i = 0; i < m->nlayers; i++, n++) {
		const pasci_layer_desc *d =
		    pasci_layer_desc_of(m->layers[i].kind);
		size_t end =
		    i + 1 < m->nlayers ? m->first_var[i + 1] : m->nvars;
		int64_t params = 0;
		for (size_t k = m->first_var[i]; k < end; k++) {
			params += elements(m, k);
			counts[non_trainable(m, k) ? 1 : 0] += elements(m, k);
		}
		if (m->layers[i].kind == PASCO_LAYER_NORMALIZATION) {
			params++; /* its count, a variable of its own */
			counts[1]++;
		}
		pasci_fmt(rows[n].cell[0], 256, "%s (%s)", m->layers[i].name,
		    d != NULL ? d->class_name : "?");
		pasci_fmt(rows[n].cell[1], 256, "(None, %lld)",
		    (long long) m->out_width[i]);
		grouped(rows[n].cell[2], 256, params);
		connected_to(m, i, rows[n].cell[3], 256);
	}
	return n;
}

/* Characters (not bytes) of UTF-8 s. */
static size_t
width_of(const char *s)
{
	size_t n = 0;
	for (; *s != 0; s++) {
		n += ((unsigned char) *s & 0xc0) != 0x80;
	}
	return n;
}

static void
rule(FILE *f, const size_t *w, int ncols, const char *l, const char *mid,
    const char *r, const char *fill)
{
	fputs(l, f);
	for (int c = 0; c < ncols; c++) {
		for (size_t i = 0; i < w[c] + 2; i++) {
			fputs(fill, f);
		}
		fputs(c + 1 < ncols ? mid : r, f);
	}
	fputc('\n', f);
}

static void
line(FILE *f, const size_t *w, int ncols, const char *const *cells,
    const char *bar)
{
	for (int c = 0; c < ncols; c++) {
		size_t pad = w[c] - width_of(cells[c]);
		fprintf(f, "%s ", bar);
		if (c == 2) { /* Param # is right-aligned */
			fprintf(f, "%*s%s ", (int) pad, "", cells[c]);
		} else {
			fprintf(f, "%s%*s ", cells[c], (int) pad, "");
		}
	}
	fprintf(f, "%s\n", bar);
}

/* Where variable k lives, one line. */
static void
placement(FILE *f, const pasco_model *m, size_t k, size_t namew)
{
	pasco_variable *v = m->vars[k].handle;
	int32_t         n = v != NULL ? pasco_variable_num_shards(v) : 0;
	char            shape[128] = "(";
	size_t          used       = 1;
	for (int32_t d = 0; d < m->vars[k].rank; d++) {
		used += (size_t) snprintf(shape + used, sizeof(shape) - used,
		    "%s%lld", d > 0 ? ", " : "",
		    (long long) m->vars[k].shape[d]);
	}
	pasci_fmt(shape + used, sizeof(shape) - used, "%s",
	    m->vars[k].rank == 1 ? ",)" : ")");
	fprintf(f, " %-*s %-14s ", (int) namew, m->vars[k].name, shape);
	if (v == NULL) {
		fputs("not created yet (build or fit the model)\n", f);
		return;
	}
	if (pasco_variable_is_dynamic(v)) {
		fputs("dynamic table, keys hashed over ps", f);
		for (int32_t i = 0; i < n; i++) {
			int32_t ps;
			int64_t off, rows;
			pasco_variable_shard(v, i, &ps, &off, &rows);
			fprintf(f, "%s %d", i > 0 ? "," : "", ps);
		}
		fputc('\n', f);
		return;
	}
	for (int32_t i = 0; i < n; i++) {
		int32_t ps;
		int64_t off, rows;
		pasco_variable_shard(v, i, &ps, &off, &rows);
		if (n == 1) {
			fprintf(f, "ps %d", ps);
		} else {
			fprintf(f, "%spart_%d rows [%lld, %lld) on ps %d",
			    i > 0 ? ", " : "", i, (long long) off,
			    (long long) (off + rows), ps);
		}
	}
	fputc('\n', f);
}

static void
write_summary(FILE *f, const pasco_model *m, const row *rows, size_t n,
    const int64_t counts[2])
{
	static const char *const heads[COLS] = {
	    "Layer (type)", "Output Shape", "Param #", "Connected to"};
	int    ncols   = m->functional ? 4 : 3;
	size_t w[COLS] = {29, 24, 11, 20}, namew = 20;
	char   num[64], size[32];
	for (size_t r = 0; r < n; r++) {
		for (int c = 0; c < ncols; c++) {
			size_t cw = width_of(rows[r].cell[c]);
			w[c]      = cw > w[c] ? cw : w[c];
		}
	}
	fprintf(f, "Model: \"%s\"\n", m->name);
	rule(f, w, ncols, "┏", "┳", "┓", "━");
	line(f, w, ncols, heads, "┃");
	rule(f, w, ncols, "┡", "╇", "┩", "━");
	for (size_t r = 0; r < n; r++) {
		const char *cells[COLS] = {rows[r].cell[0], rows[r].cell[1],
		    rows[r].cell[2], rows[r].cell[3]};
		line(f, w, ncols, cells, "│");
		if (r + 1 < n) {
			rule(f, w, ncols, "├", "┼", "┤", "─");
		}
	}
	rule(f, w, ncols, "└", "┴", "┘", "─");
	grouped(num, sizeof(num), counts[0] + counts[1]);
	bytes_of(size, sizeof(size), counts[0] + counts[1]);
	fprintf(f, " Total params: %s (%s)\n", num, size);
	grouped(num, sizeof(num), counts[0]);
	bytes_of(size, sizeof(size), counts[0]);
	fprintf(f, " Trainable params: %s (%s)\n", num, size);
	grouped(num, sizeof(num), counts[1]);
	bytes_of(size, sizeof(size), counts[1]);
	fprintf(f, " Non-trainable params: %s (%s)\n", num, size);
	for (size_t k = 0; k < m->nvars; k++) {
		size_t nw = strlen(m->vars[k].name);
		namew     = nw > namew ? nw : namew;
	}
	fputs(" Variables (shape: where they live):\n", f);
	for (size_t k = 0; k < m->nvars; k++) {
		placement(f, m, k, namew);
	}
}

int
pasco_model_summary(const pasco_model *m, char **out)
{
	row    *rows;
	size_t  n, len;
	int64_t counts[2];
	FILE   *f;
	*out = NULL;
	if (m == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "summary: needs a model");
	}
	rows = pasci_calloc(m->ninputs + m->nlayers + 1, sizeof(*rows));
	if (rows == NULL || (f = open_memstream(out, &len)) == NULL) {
		free(rows);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	n = table_rows(m, rows, counts);
	write_summary(f, m, rows, n, counts);
	free(rows);
	if (fclose(f) != 0) {
		free(*out);
		*out = NULL;
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	return PASCO_OK;
}
