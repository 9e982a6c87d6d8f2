/*
 * Reading a checkpoint (see checkpoint_impl.h): the manifest, then every
 * file it names, verified tensor by tensor against the manifest's CRC-32C
 * before anything is restored (checkpoint_restore.c restores), and the
 * newest intact checkpoint of a directory.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint_impl.h"
#include "fileio.h"
#include "pasco/checkpoint.h"
#include "pasco/tfrecord.h"
#include "tensor_impl.h"
#include "util.h"
#include "variable_impl.h"

static const cJSON *
item(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

cJSON *
pasci_checkpoint_manifest(const char *path, char *err, size_t errlen)
{
	char   file[4200];
	void  *buf;
	size_t len;
	cJSON *m;
	pasci_fmt(file, sizeof(file), "%s/" PASCI_CKPT_MANIFEST, path);
	if (pasci_file_read(file, &buf, &len, err, errlen) != 0) {
		return NULL;
	}
	m = cJSON_ParseWithLength(buf, len);
	free(buf);
	if (m == NULL || !cJSON_IsArray(item(m, "variables"))) {
		pasci_fmt(err, errlen, "%s is not a Pasco checkpoint manifest",
		    file);
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

/* What j is, for a message: "a number", "an object", ... */
static const char *
json_kind(const cJSON *j)
{
	return cJSON_IsNumber(j)   ? "a number"
	       : cJSON_IsBool(j)   ? "a boolean"
	       : cJSON_IsNull(j)   ? "null"
	       : cJSON_IsArray(j)  ? "an array"
	       : cJSON_IsObject(j) ? "an object"
	                           : "a value that is not a string";
}

int
pasci_ckpt_format(const cJSON *m, const char *path, char *err, size_t len)
{
	const cJSON *fj = item(m, "format");
	const char  *f  = cJSON_GetStringValue(fj);
	if (fj != NULL && f == NULL) { /* "format": 1 is not "missing" */
		pasci_fmt(err, len,
		    "checkpoint %s: the manifest's format must be a string "
		    "(\"" PASCI_CKPT_FORMAT "\"), got %s",
		    path, json_kind(fj));
		return -1;
	}
	if (f != NULL && strcmp(f, PASCI_CKPT_FORMAT_1) == 0) {
		return 1;
	}
	if (f == NULL || strcmp(f, PASCI_CKPT_FORMAT) != 0) {
		pasci_fmt(err, len,
		    "checkpoint %s: the manifest's format is %s%s%s, which "
		    "this Pasco does not read (it reads \"" PASCI_CKPT_FORMAT
		    "\")",
		    path, f != NULL ? "\"" : "", f != NULL ? f : "missing",
		    f != NULL ? "\"" : "");
		return -1;
	}
	if (!cJSON_IsObject(item(m, "files"))) {
		pasci_fmt(err, len,
		    "checkpoint %s: the manifest is of format 2 but has no "
		    "checksums (\"files\"): it is damaged",
		    path);
		return -1;
	}
	return 2;
}

int
pasci_ckpt_verify_file(const cJSON *m, const char *dir, const char *name,
    const pasci_safetensors *f, size_t *count, char *err, size_t len)
{
	const cJSON *crcs = item(item(item(m, "files"), name), "crc32c");
	const cJSON *c;
	size_t       used = 0;
	int          rv   = PASCO_OK;

	*count = 0;
	if (pasci_ckpt_format(m, dir, err, len) == 1) {
		return PASCO_OK; /* nothing to check against */
	}
	if (!cJSON_IsObject(crcs)) {
		pasci_fmt(err, len,
		    "checkpoint %s: the manifest has no checksums for %s", dir,
		    name);
		return PASCO_EPROTO;
	}
	for (size_t i = 0; i < f->n; i++) { /* a tensor the manifest lacks */
		if (item(crcs, f->names[i]) == NULL && rv == 0) {
			pasci_fmt(err, len,
			    "checkpoint %s: %s holds tensor '%s', which the "
			    "manifest does not list",
			    dir, name, f->names[i]);
			rv = PASCO_EPROTO;
		}
	}
	cJSON_ArrayForEach(c, crcs)
	{
		const pasco_tensor *t   = pasci_safetensors_find(f, c->string);
		uint32_t            got = 0, want = (uint32_t) c->valuedouble;
		(*count)++;
		if (t != NULL &&
		    (got = pasco_crc32c(t->data, t->nbytes)) == want) {
			continue;
		}
		if (rv == 0) {
			used = (size_t) snprintf(
			    err, len, "checkpoint %s: %s:", dir, name);
		}
		if (used < len) {
			used += (size_t) snprintf(err + used, len - used,
			    t == NULL ? "%s tensor '%s' is missing"
			              : "%s tensor '%s' is damaged (CRC-32C "
			                "%08x, the manifest says %08x)",
			    rv == 0 ? "" : ";", c->string, got, want);
		}
		rv = PASCO_EPROTO;
	}
	return rv;
}

/* File `name` of ck, read and verified on first use. */
const pasci_safetensors *
pasci_ckpt_file(pasci_ckpt *ck, const char *name, char *err, size_t errlen)
{
	char        path[4200], why[900];
	struct stat st;
	size_t      count;
	int         rv;
	for (size_t i = 0; i < ck->n; i++) {
		if (strcmp(ck->names[i], name) == 0) {
			return &ck->files[i];
		}
	}
	/* a manifest names files of its own directory, nothing else */
	if (name[0] == 0 || strchr(name, '/') != NULL ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		pasci_fmt(err, errlen,
		    "the manifest in %s names '%s', which is not a file of "
		    "that directory",
		    ck->path, name);
		return NULL;
	}
	pasci_fmt(path, sizeof(path), "%s/%s", ck->path, name);
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		pasci_fmt(err, errlen,
		    "%s is not a regular file (a symbolic link?): not read",
		    path);
		return NULL;
	}
	if (ck->n == PASCI_CKPT_MAX_FILES) {
		pasci_fmt(err, errlen, "checkpoint %s has more than %d files",
		    ck->path, PASCI_CKPT_MAX_FILES);
		return NULL;
	}
	if (pasci_safetensors_read(
	        &ck->files[ck->n], path, why, sizeof(why)) != 0) {
		pasci_fmt(err, errlen, "checkpoint %s: %s", ck->path, why);
		return NULL;
	}
	rv = pasci_ckpt_verify_file(
	    ck->m, ck->path, name, &ck->files[ck->n], &count, err, errlen);
	if (rv != 0 || (ck->names[ck->n] = pasci_strdup(name)) == NULL) {
		pasci_safetensors_fini(&ck->files[ck->n]);
		return NULL;
	}
	return &ck->files[ck->n++];
}

void
pasci_ckpt_close(pasci_ckpt *ck)
{
	for (size_t i = 0; i < ck->n; i++) {
		free(ck->names[i]);
		pasci_safetensors_fini(&ck->files[i]);
	}
	cJSON_Delete(ck->m);
	ck->m = NULL;
	ck->n = 0;
}

/* Whether ck's manifest may be read: format 2, or format 1 when allowed
 * (with a warning). */
static int
check_format(pasci_ckpt *ck, bool allow_format_1, char *err, size_t len)
{
	int format = pasci_ckpt_format(ck->m, ck->path, err, len);
	if (format < 0) {
		return PASCO_EPROTO;
	}
	if (format == 1 && !allow_format_1) {
		pasci_fmt(err, len,
		    "checkpoint %s is of format 1, which carries no "
		    "checksums: "
		    "it is read only when asked for "
		    "(pasco_checkpoint_read_options.allow_format_1, pasco "
		    "checkpoint inspect --allow-format-1)",
		    ck->path);
		return PASCO_EPRECONDITION;
	}
	ck->format = format;
	if (format == 1) {
		pasci_log(PASCI_LOG_WARN,
		    "checkpoint %s is of format 1: it carries no checksums, "
		    "so its tensors are read unchecked",
		    ck->path);
	}
	return PASCO_OK;
}

int
pasci_ckpt_open(pasci_ckpt *ck, const char *path, bool allow_format_1,
    char *err, size_t len)
{
	const cJSON *e, *sh, *f;
	int          rv;
	memset(ck, 0, sizeof(*ck));
	pasci_fmt(ck->path, sizeof(ck->path), "%s", path);
	if ((ck->m = pasci_checkpoint_manifest(path, err, len)) == NULL) {
		return PASCO_ENOTFOUND;
	}
	if ((rv = check_format(ck, allow_format_1, err, len)) != 0) {
		pasci_ckpt_close(ck);
		return rv;
	}
	ck->step = (int64_t) cJSON_GetNumberValue(item(ck->m, "step"));
	/* every file: those the shards name, and those with checksums */
	cJSON_ArrayForEach(e, item(ck->m, "variables"))
	{
		cJSON_ArrayForEach(sh, item(e, "shards"))
		{
			const char *name =
			    cJSON_GetStringValue(item(sh, "file"));
			if (name == NULL ||
			    pasci_ckpt_file(ck, name, err, len) == NULL) {
				if (name == NULL) {
					pasci_fmt(err, len,
					    "checkpoint %s: a shard of '%s' "
					    "names no file",
					    path,
					    cJSON_GetStringValue(
					        item(e, "name")));
				}
				pasci_ckpt_close(ck);
				return PASCO_EPROTO;
			}
		}
	}
	cJSON_ArrayForEach(f, item(ck->m, "files"))
	{
		if (pasci_ckpt_file(ck, f->string, err, len) == NULL) {
			pasci_ckpt_close(ck);
			return PASCO_EPROTO;
		}
	}
	return PASCO_OK;
}

int
pasci_ckpt_open_latest(pasci_ckpt *ck, const char *dir, char *err, size_t len)
{
	int64_t steps[1024];
	size_t  n       = pasci_checkpoint_list(dir, steps, 1024);
	size_t  skipped = 0;
	char    why[1024], path[4096];

	pasci_fmt(err, len, "no checkpoint in %s", dir);
	for (size_t i = 0; i < n; i++) {
		pasci_fmt(path, sizeof(path), "%s/ckpt-%lld", dir,
		    (long long) steps[i]);
		if (pasci_ckpt_open(ck, path, false, why, sizeof(why)) == 0) {
			if (skipped > 0) {
				pasci_log(PASCI_LOG_WARN,
				    "using checkpoint %s (step %lld), the "
				    "newest intact one",
				    path, (long long) steps[i]);
			}
			return PASCO_OK;
		}
		pasci_log(
		    PASCI_LOG_WARN, "skipping checkpoint %s: %s", path, why);
		if (skipped++ == 0) {
			pasci_fmt(err, len,
			    "no intact checkpoint in %s (the newest, %s: %s)",
			    dir, path, why);
		}
	}
	return PASCO_ENOTFOUND;
}

int
pasco_checkpoint_verify(const char *path, char *err, size_t len)
{
	pasci_ckpt ck;
	int        rv = pasci_ckpt_open(&ck, path, false, err, len);
	if (rv == 0) {
		pasci_ckpt_close(&ck);
	}
	return rv;
}
