/*
 * `pasco checkpoint inspect` (pasco_checkpoint_inspect): the manifest's
 * variables and shards (a dynamic table: its dim, rows per file and in
 * all, optimizer and slots), then every data file read and checked against the
 * manifest's checksums, naming each damaged tensor. A format 1 checkpoint
 * (no checksums) is listed but its files are read only when allowed.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint_impl.h"
#include "pasco/checkpoint.h"
#include "util.h"

static const cJSON *
item(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* A dynamic table: its dim, rows per file and in all, optimizer and
 * slots. */
static void
print_table(const cJSON *e, FILE *out)
{
	const cJSON *sh, *n;
	const char  *opt = NULL;
	fprintf(out, "%s: dynamic table, dim %.0f, %.0f row(s) in %d file(s)",
	    cJSON_GetStringValue(item(e, "name")),
	    cJSON_GetNumberValue(item(e, "dim")),
	    cJSON_GetNumberValue(item(e, "rows")),
	    cJSON_GetArraySize(item(e, "shards")));
	cJSON_ArrayForEach(sh, item(e, "shards"))
	{
		const char *o = cJSON_GetStringValue(
		    item(item(sh, "dynamic"), "optimizer"));
		opt = opt != NULL ? opt : o;
	}
	if (opt != NULL) {
		fprintf(out, ", %s slots", opt);
	} else {
		fprintf(out, ", no optimizer slots yet");
	}
	fputc('\n', out);
	cJSON_ArrayForEach(sh, item(e, "shards"))
	{
		const cJSON *dy = item(sh, "dynamic");
		fprintf(out,
		    "  ps %.0f in %s: %.0f row(s), %.0f pending key(s)",
		    cJSON_GetNumberValue(item(sh, "ps_task")),
		    cJSON_GetStringValue(item(sh, "file")),
		    cJSON_GetNumberValue(item(dy, "rows")),
		    cJSON_GetNumberValue(item(dy, "pending")));
		if (cJSON_GetArraySize(item(dy, "slots")) > 0) {
			fprintf(out, ", slots");
		}
		cJSON_ArrayForEach(n, item(dy, "slots"))
		{
			fprintf(out, " %s", cJSON_GetStringValue(n));
		}
		fputc('\n', out);
	}
}

static void
print_variable(const cJSON *e, FILE *out)
{
	const cJSON *d, *sh;
	if (cJSON_IsTrue(item(e, "dynamic"))) {
		print_table(e, out);
		return;
	}
	fprintf(out, "%s %s[", cJSON_GetStringValue(item(e, "name")),
	    cJSON_GetStringValue(item(e, "dtype")));
	cJSON_ArrayForEach(d, item(e, "shape"))
	{
		fprintf(out, "%s%.0f", d == item(e, "shape")->child ? "" : ",",
		    d->valuedouble);
	}
	fprintf(
	    out, "], %d shard(s)\n", cJSON_GetArraySize(item(e, "shards")));
	cJSON_ArrayForEach(sh, item(e, "shards"))
	{
		const cJSON *sl  = item(sh, "slots");
		double       off = cJSON_GetNumberValue(item(sh, "offset"));
		fprintf(out, "  %s: rows [%.0f, %.0f) on ps %.0f in %s",
		    cJSON_GetStringValue(item(sh, "name")), off,
		    off + cJSON_GetNumberValue(item(sh, "rows")),
		    cJSON_GetNumberValue(item(sh, "ps_task")),
		    cJSON_GetStringValue(item(sh, "file")));
		if (sl == NULL) {
			fputc('\n', out);
			continue;
		}
		if (cJSON_IsString(item(sl, "optimizer"))) {
			const cJSON *n;
			fprintf(out, ", %s slots",
			    item(sl, "optimizer")->valuestring);
			cJSON_ArrayForEach(n, item(sl, "names"))
			{
				fprintf(out, " %s", cJSON_GetStringValue(n));
			}
		} else {
			fprintf(out, ", with optimizer slots");
		}
		fprintf(out, " (step %.0f)\n",
		    cJSON_GetNumberValue(item(sl, "step")));
	}
}

/* The files a manifest names, each once, in order of first mention. */
static size_t
manifest_files(const cJSON *m, const char **names, size_t max)
{
	const cJSON *e, *sh, *f;
	size_t       n = 0;
	cJSON_ArrayForEach(e, item(m, "variables"))
	{
		cJSON_ArrayForEach(sh, item(e, "shards"))
		{
			const char *name =
			    cJSON_GetStringValue(item(sh, "file"));
			bool seen = name == NULL;
			for (size_t i = 0; i < n && !seen; i++) {
				seen = strcmp(names[i], name) == 0;
			}
			if (!seen && n < max) {
				names[n++] = name;
			}
		}
	}
	cJSON_ArrayForEach(f, item(m, "files"))
	{
		bool seen = false;
		for (size_t i = 0; i < n && !seen; i++) {
			seen = strcmp(names[i], f->string) == 0;
		}
		if (!seen && n < max) {
			names[n++] = f->string;
		}
	}
	return n;
}

/* Reads and checks one data file; prints the outcome. */
static int
check_file(const cJSON *m, const char *dir, const char *name, FILE *out)
{
	pasci_safetensors f;
	char              path[4200], err[2048];
	struct stat       st;
	size_t            count = 0;
	int               rv;
	pasci_fmt(path, sizeof(path), "%s/%s", dir, name);
	if (strchr(name, '/') != NULL || strcmp(name, "..") == 0 ||
	    (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))) {
		fprintf(
		    out, "%s: not a regular file of the checkpoint\n", name);
		return PASCO_EPROTO;
	}
	if ((rv = pasci_safetensors_read(&f, path, err, sizeof(err))) != 0) {
		fprintf(out, "%s: unreadable: %s\n", name, err);
		return rv;
	}
	rv =
	    pasci_ckpt_verify_file(m, dir, name, &f, &count, err, sizeof(err));
	if (rv != 0) {
		fprintf(out, "%s: DAMAGED: %s\n", name, err);
	} else if (pasci_ckpt_format(m, dir, err, sizeof(err)) == 1) {
		fprintf(out,
		    "%s: %zu tensor(s) read; no checksums to check (a format "
		    "1 checkpoint)\n",
		    name, f.n);
	} else {
		fprintf(
		    out, "%s: %zu tensor(s), checksums match\n", name, count);
	}
	pasci_safetensors_fini(&f);
	return rv;
}

/* Whether the files of m may be read, said on out: PASCO_OK for format 2,
 * or format 1 when allowed. */
static int
check_format(const cJSON *m, const char *dir, bool allow_format_1, FILE *out)
{
	char err[1024];
	int  format = pasci_ckpt_format(m, dir, err, sizeof(err));
	if (format < 0) {
		fprintf(out, "%s\n", err);
		return PASCO_EPROTO;
	}
	if (format == 1 && !allow_format_1) {
		fprintf(out,
		    "format 1: this checkpoint carries no checksums, so its "
		    "tensors cannot be checked; not read (pass "
		    "--allow-format-1 to read it anyway)\n");
		return PASCO_EPRECONDITION;
	}
	if (format == 1) {
		fprintf(out, "WARNING: format 1: this checkpoint carries no "
		             "checksums; only its files' structure is "
		             "checked\n");
	}
	return PASCO_OK;
}

int
pasco_checkpoint_inspect(const char *path, FILE *out)
{
	return pasco_checkpoint_inspect_with(path, out, NULL);
}

int
pasco_checkpoint_inspect_with(
    const char *path, FILE *out, const pasco_checkpoint_read_options *opts)
{
	char         dir[4096], err[1024];
	const char  *files[PASCI_CKPT_MAX_FILES];
	int64_t      step;
	cJSON       *m;
	const cJSON *e;
	size_t       nfiles;
	int          rv = PASCO_OK;

	pasci_fmt(dir, sizeof(dir), "%s", path);
	if ((m = pasci_checkpoint_manifest(dir, err, sizeof(err))) == NULL &&
	    pasco_checkpoint_latest(path, dir, sizeof(dir), &step) == 0) {
		m = pasci_checkpoint_manifest(dir, err, sizeof(err));
	}
	if (m == NULL) {
		fprintf(stderr, "pasco checkpoint: no checkpoint at %s (%s)\n",
		    path, err);
		return PASCO_ENOTFOUND;
	}
	fprintf(out, "checkpoint %s, step %.0f, format %s\n", dir,
	    cJSON_GetNumberValue(item(m, "step")),
	    cJSON_GetStringValue(item(m, "format"))
	        ? cJSON_GetStringValue(item(m, "format"))
	        : "?");
	cJSON_ArrayForEach(e, item(m, "variables"))
	{
		print_variable(e, out);
	}
	rv = check_format(m, dir, opts != NULL && opts->allow_format_1, out);
	nfiles = rv == 0 ? manifest_files(m, files, PASCI_CKPT_MAX_FILES) : 0;
	for (size_t i = 0; i < nfiles; i++) {
		int r = check_file(m, dir, files[i], out);
		rv    = rv != 0 ? rv : r;
	}
	if (rv == PASCO_EPRECONDITION) {
		fprintf(stderr,
		    "pasco checkpoint: %s is of format 1 (no checksums)\n",
		    dir);
	} else if (rv != 0) {
		fprintf(stderr, "pasco checkpoint: %s is damaged\n", dir);
	}
	cJSON_Delete(m);
	return rv;
}
