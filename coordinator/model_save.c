/*
 * A model saved and loaded whole (model.h, "Saving"): its weights file is
 * one safetensors file made from a checkpoint of its variables. Every ps
 * writes its shards with their optimizer slots into a staging directory
 * beside the target (pasci_checkpoint_stage), the chief reads that
 * checkpoint back (every tensor checked against its CRC-32C) and merges
 * it: each variable whole under its name ("dense/kernel", its slots
 * "dense/kernel/m"), the shards of a partitioned one put together by
 * their offsets, each dynamic table's per-ps state under
 * "<table>/ps_<k>/..." (its rows are routed by key again on load), and
 * the global step. The file's metadata holds the manifest of that merged
 * checkpoint (one file, one shard per variable), so loading is a restore
 * (pasci_ckpt_restore): each variable assigned as the strategy now places
 * and partitions it, whatever the ps count. The .keras file is a zip of
 * config.json (pasco_model_to_json), metadata.json and the weights file
 * (model_zip.c). Runs on the caller's thread.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint_impl.h"
#include "fileio.h"
#include "layers_impl.h"
#include "model_zip.h"
#include "pasco/model.h"
#include "pasco/tfrecord.h"
#include "pasco/version.h"
#include "util.h"
#include "variable_impl.h"

#define WEIGHTS "model.weights.safetensors"
#define WEIGHTS_FORMAT "pasco-weights-1"
#define GLOBAL_STEP "global_step"

static const cJSON *
item(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* The merged file's tensors, each with its CRC-32C. */
typedef struct merged {
	size_t         n, cap;
	char         **names;
	pasco_tensor **tensors;
	cJSON         *crcs;
} merged;

static void
merged_fini(merged *w)
{
	for (size_t i = 0; i < w->n; i++) {
		free(w->names[i]);
		pasco_tensor_release(w->tensors[i]);
	}
	free(w->names);
	free(w->tensors);
	cJSON_Delete(w->crcs);
}

/* Adds t under name, taking the caller's reference (released on
 * failure). */
static int
merged_add(merged *w, const char *name, pasco_tensor *t)
{
	if (w->n == w->cap) {
		size_t         cap = w->cap ? w->cap * 2 : 32;
		char         **nn  = realloc(w->names, cap * sizeof(*nn));
		pasco_tensor **tt  = NULL;
		if (nn != NULL) {
			w->names = nn;
			tt       = realloc(w->tensors, cap * sizeof(*tt));
		}
		if (tt == NULL) {
			pasco_tensor_release(t);
			return PASCO_ENOMEM;
		}
		w->tensors = tt;
		w->cap     = cap;
	}
	if ((w->names[w->n] = pasci_strdup(name)) == NULL) {
		pasco_tensor_release(t);
		return PASCO_ENOMEM;
	}
	w->tensors[w->n++] = t;
	cJSON_AddNumberToObject(
	    w->crcs, name, (double) pasco_crc32c(t->data, t->nbytes));
	return PASCO_OK;
}

/* Adds tensor `from` of file f as `to`. */
static int
merged_copy(merged *w, const pasci_safetensors *f, const char *file,
    const char *from, const char *to, char *err, size_t len)
{
	const pasco_tensor *t = pasci_safetensors_find(f, from);
	if (t == NULL) {
		pasci_fmt(err, len, "the checkpoint's %s lacks tensor '%s'",
		    file, from);
		return PASCO_EPROTO;
	}
	return merged_add(w, to, pasco_tensor_hold((pasco_tensor *) t));
}

/* The whole tensor of manifest variable e (its value, or its slot
 * `slot`) from its shards, placed by their offsets. */
static int
assemble(pasci_ckpt *ck, const cJSON *e, const char *slot, pasco_tensor **out,
    char *err, size_t len)
{
	int64_t      shape[8];
	int32_t      rank = 0;
	size_t       row  = 1;
	const cJSON *d, *sh;
	int          rv = PASCO_OK;
	*out            = NULL;
	cJSON_ArrayForEach(d, item(e, "shape"))
	{
		if (rank == 8) {
			return PASCO_EPROTO;
		}
		shape[rank] = (int64_t) d->valuedouble;
		row *= rank++ > 0 ? (size_t) d->valuedouble : 1;
	}
	cJSON_ArrayForEach(sh, item(e, "shards"))
	{
		const char *name = cJSON_GetStringValue(item(sh, "name"));
		const char *file = cJSON_GetStringValue(item(sh, "file"));
		double      off  = cJSON_GetNumberValue(item(sh, "offset"));
		const pasci_safetensors *f;
		const pasco_tensor      *t;
		char                     tname[1100];
		if (name == NULL || file == NULL ||
		    (f = pasci_ckpt_file(ck, file, err, len)) == NULL) {
			rv = PASCO_EPROTO;
			break;
		}
		pasci_fmt(tname, sizeof(tname), "%s%s%s", name,
		    slot != NULL ? "/" : "", slot != NULL ? slot : "");
		if ((t = pasci_safetensors_find(f, tname)) == NULL) {
			pasci_fmt(err, len,
			    "the checkpoint's %s lacks tensor '%s'", file,
			    tname);
			rv = PASCO_EPROTO;
			break;
		}
		if (*out == NULL && (rv = pasco_tensor_alloc(
		                         out, t->dtype, rank, shape)) != 0) {
			break;
		}
		size_t at = (size_t) off * row * pasco_dtype_size(t->dtype);
		if (t->dtype != (*out)->dtype || off < 0 ||
		    at + t->nbytes > (*out)->nbytes) {
			pasci_fmt(err, len,
			    "the checkpoint's %s: '%s' does not fit its "
			    "variable",
			    file, tname);
			rv = PASCO_EPROTO;
			break;
		}
		memcpy((char *) (*out)->data + at, t->data, t->nbytes);
	}
	if (rv != 0) {
		pasco_tensor_release(*out);
		*out = NULL;
	}
	return rv;
}

/* The slots of the shards of e, when every shard has those of one
 * optimizer (else NULL: a restore would not restore them either), the
 * step the newest; a new object. */
static cJSON *
common_slots(const cJSON *e)
{
	const cJSON *sh, *first = NULL;
	double       step = 0;
	cJSON       *out;
	cJSON_ArrayForEach(sh, item(e, "shards"))
	{
		const cJSON *sl = item(sh, "slots");
		const char  *o  = cJSON_GetStringValue(item(sl, "optimizer"));
		if (o == NULL || (first != NULL &&
		                     strcmp(o, cJSON_GetStringValue(item(first,
		                                   "optimizer"))) != 0)) {
			return NULL;
		}
		first = first != NULL ? first : sl;
		if (cJSON_GetNumberValue(item(sl, "step")) > step) {
			step = cJSON_GetNumberValue(item(sl, "step"));
		}
	}
	if (first == NULL || (out = cJSON_Duplicate(first, 1)) == NULL) {
		return NULL;
	}
	cJSON_ReplaceItemInObjectCaseSensitive(
	    out, "step", cJSON_CreateNumber(step));
	return out;
}

/* A dense variable into w, whole: copy gets one shard in the merged
 * file. */
static int
merge_dense(pasci_ckpt *ck, const cJSON *e, cJSON *copy, merged *w, char *err,
    size_t len)
{
	const char   *var   = cJSON_GetStringValue(item(e, "name"));
	cJSON        *slots = common_slots(e), *sh, *shards, *n;
	pasco_tensor *t;
	int           rv = assemble(ck, e, NULL, &t, err, len);
	if (rv == 0) {
		rv = merged_add(w, var, t);
	}
	cJSON_ArrayForEach(n, item(slots, "names"))
	{
		char tname[1100];
		if (rv != 0) {
			break;
		}
		pasci_fmt(tname, sizeof(tname), "%s/%s", var,
		    cJSON_GetStringValue(n));
		if ((rv = assemble(
		         ck, e, cJSON_GetStringValue(n), &t, err, len)) == 0) {
			rv = merged_add(w, tname, t);
		}
	}
	sh = cJSON_CreateObject();
	cJSON_AddStringToObject(sh, "name", var);
	cJSON_AddNumberToObject(sh, "ps_task", 0);
	cJSON_AddNumberToObject(sh, "offset", 0);
	cJSON_AddNumberToObject(sh, "rows",
	    cJSON_GetArraySize(item(e, "shape")) > 0
	        ? cJSON_GetArrayItem(item(e, "shape"), 0)->valuedouble
	        : 0);
	cJSON_AddStringToObject(sh, "file", WEIGHTS);
	if (slots != NULL) {
		cJSON_AddItemToObject(sh, "slots", slots);
	}
	shards = cJSON_CreateArray();
	cJSON_AddItemToArray(shards, sh);
	cJSON_ReplaceItemInObjectCaseSensitive(copy, "shards", shards);
	return rv;
}

/* A dynamic table's shards into w, shard k renamed "<table>/ps_<k>". */
static int
merge_dynamic(pasci_ckpt *ck, cJSON *copy, merged *w, char *err, size_t len)
{
	static const char *const parts[] = {"keys", "values", "last_step",
	    "pending_keys", "pending_counts", "meta", "slot_init"};
	const char *var = cJSON_GetStringValue(item(copy, "name"));
	cJSON      *sh;
	int         k = 0, rv = PASCO_OK;
	cJSON_ArrayForEach(sh, item(copy, "shards"))
	{
		const char *name = cJSON_GetStringValue(item(sh, "name"));
		const char *file = cJSON_GetStringValue(item(sh, "file"));
		const pasci_safetensors *f;
		const cJSON             *slot;
		char                     to[1100], from[1100], shard[1100];
		if (name == NULL || file == NULL ||
		    (f = pasci_ckpt_file(ck, file, err, len)) == NULL) {
			return PASCO_EPROTO;
		}
		pasci_fmt(shard, sizeof(shard), "%s/ps_%d", var, k++);
		for (size_t i = 0; rv == 0 && i < 7; i++) {
			pasci_fmt(from, sizeof(from), "%s/%s", name, parts[i]);
			pasci_fmt(to, sizeof(to), "%s/%s", shard, parts[i]);
			rv = merged_copy(w, f, file, from, to, err, len);
		}
		cJSON_ArrayForEach(slot, item(item(sh, "dynamic"), "slots"))
		{
			const char *sn = cJSON_GetStringValue(slot);
			pasci_fmt(from, sizeof(from), "%s/%s", name,
			    sn != NULL ? sn : "");
			pasci_fmt(to, sizeof(to), "%s/%s", shard,
			    sn != NULL ? sn : "");
			rv = rv != 0
			         ? rv
			         : merged_copy(w, f, file, from, to, err, len);
		}
		if (rv != 0) {
			return rv;
		}
		cJSON_ReplaceItemInObjectCaseSensitive(
		    sh, "name", cJSON_CreateString(shard));
		cJSON_ReplaceItemInObjectCaseSensitive(
		    sh, "file", cJSON_CreateString(WEIGHTS));
	}
	return PASCO_OK;
}

/* Normalization layer i's count variable (Keras's count; not among the
 * model's variables: no step reads it), or NULL. */
static pasco_variable *
norm_count(const pasco_model *m, size_t i)
{
	return m->layers[i].kind == PASCO_LAYER_NORMALIZATION &&
	               m->norm != NULL
	           ? m->norm[i].count_var
	           : NULL;
}

/* Whether the model has a variable of that name (a Normalization's count
 * too), or it is the global step of a model that counts its steps by
 * it. */
static bool
wanted(const pasco_model *m, const char *name)
{
	if (name == NULL) {
		return false;
	}
	if (strcmp(name, GLOBAL_STEP) == 0) {
		return m->compile.global_step;
	}
	for (size_t k = 0; k < m->nvars; k++) {
		if (strcmp(m->vars[k].name, name) == 0) {
			return true;
		}
	}
	for (size_t i = 0; i < m->nlayers; i++) {
		pasco_variable *c = norm_count(m, i);
		if (c != NULL && strcmp(pasco_variable_name(c), name) == 0) {
			return true;
		}
	}
	return false;
}

/* The manifest of the merged file of ck's variables that m wants, its
 * tensors into w. NULL with err. */
static cJSON *
merge(pasci_ckpt *ck, const pasco_model *m, merged *w, char *err, size_t len)
{
	cJSON       *out = cJSON_CreateObject(), *vars, *file;
	const cJSON *e;
	int          rv   = PASCO_OK;
	double       step = 0;
	cJSON_AddStringToObject(out, "format", PASCI_CKPT_FORMAT);
	vars = cJSON_AddArrayToObject(out, "variables");
	cJSON_ArrayForEach(e, item(ck->m, "variables"))
	{
		const char *name = cJSON_GetStringValue(item(e, "name"));
		cJSON      *copy;
		if (rv != 0 || !wanted(m, name)) {
			continue;
		}
		copy = cJSON_Duplicate(e, 1);
		cJSON_AddItemToArray(vars, copy);
		rv = cJSON_IsTrue(item(e, "dynamic"))
		         ? merge_dynamic(ck, copy, w, err, len)
		         : merge_dense(ck, e, copy, w, err, len);
		if (rv == 0 && strcmp(name, GLOBAL_STEP) == 0) {
			const pasco_tensor *t = w->tensors[w->n - 1];
			step                  = pasco_tensor_get(t, 0);
		}
	}
	cJSON_AddNumberToObject(out, "step", step);
	file = cJSON_AddObjectToObject(
	    cJSON_AddObjectToObject(out, "files"), WEIGHTS);
	cJSON_AddItemReferenceToObject(file, "crc32c", w->crcs);
	if (rv != 0) {
		cJSON_Delete(out);
		return NULL;
	}
	return out;
}

/* rm -r of the staging directory: its checkpoint's files, then it. */
static void
remove_staging(const char *dir)
{
	char           path[4200];
	DIR           *d;
	struct dirent *e;
	pasci_fmt(path, sizeof(path), "%s/ckpt-0", dir);
	if ((d = opendir(path)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			char file[4400];
			if (e->d_name[0] != '.') {
				pasci_fmt(file, sizeof(file), "%s/%s", path,
				    e->d_name);
				unlink(file);
			}
		}
		closedir(d);
	}
	rmdir(path);
	rmdir(dir);
}

static int
check_created(const pasco_model *m, const char *what)
{
	if (m == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "%s: needs a model", what);
	}
	for (size_t k = 0; k < m->nvars; k++) {
		if (m->vars[k].handle == NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: the model's variable %s is not created "
			    "(pasco_model_create_variables, or fit first)",
			    what, m->vars[k].name);
		}
	}
	return PASCO_OK;
}

/* The merged weights of m's variables through s (staged beside path) as
 * a safetensors file at path. */
static int
write_weights(pasco_strategy *s, const pasco_model *m, const char *path,
    const char *what)
{
	char        stage[4200], ck_path[4300], err[1500] = "", *dir, *text;
	char       *copy = pasci_strdup(path);
	pasci_ckpt *ck   = pasci_calloc(1, sizeof(*ck));
	merged      w    = {.crcs = cJSON_CreateObject()};
	cJSON      *man  = NULL, *meta;
	int         rv;
	if (copy == NULL || ck == NULL) {
		free(copy);
		free(ck);
		cJSON_Delete(w.crcs);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	dir = dirname(copy);
	pasci_fmt(stage, sizeof(stage), "%s/.pasco-save-XXXXXX", dir);
	if (mkdtemp(stage) == NULL) {
		rv = pasci_model_fail(PASCO_EIO,
		    "%s %s: cannot make a staging directory in %s: %s", what,
		    path, dir, strerror(errno));
		goto out;
	}
	if ((rv = pasci_checkpoint_stage(s, stage)) != 0) {
		pasci_model_fail(rv,
		    "%s %s: the ps tasks write the variables into %s, beside "
		    "it, which must be on storage they reach and under their "
		    "checkpoint root (PASCO_CHECKPOINT_DIR): %s",
		    what, path, dir, pasco_strategy_error(s));
		goto out_stage;
	}
	pasci_fmt(ck_path, sizeof(ck_path), "%s/ckpt-0", stage);
	if ((rv = pasci_ckpt_open(ck, ck_path, false, err, sizeof(err))) !=
	        0 ||
	    (man = merge(ck, m, &w, err, sizeof(err))) == NULL) {
		rv = pasci_model_fail(
		    rv != 0 ? rv : PASCO_EPROTO, "%s %s: %s", what, path, err);
		goto out_ck;
	}
	meta = cJSON_CreateObject();
	text = cJSON_PrintUnformatted(man);
	cJSON_AddStringToObject(meta, "format", WEIGHTS_FORMAT);
	cJSON_AddStringToObject(meta, "manifest", text != NULL ? text : "");
	free(text);
	rv = pasci_safetensors_write(path, w.n, (const char *const *) w.names,
	    w.tensors, meta, err, sizeof(err));
	cJSON_Delete(meta);
	if (rv != 0) {
		pasci_model_fail(rv, "%s %s: %s", what, path, err);
	}
out_ck:
	pasci_ckpt_close(ck);
out_stage:
	remove_staging(stage);
out:
	cJSON_Delete(man);
	merged_fini(&w);
	free(ck);
	free(copy);
	return rv;
}

int
pasco_model_save_weights(
    pasco_strategy *s, const pasco_model *m, const char *path)
{
	int rv = check_created(m, "save_weights");
	if (rv != 0 || s == NULL || path == NULL || *path == 0) {
		return rv != 0
		           ? rv
		           : pasci_model_fail(PASCO_EINVAL,
		                 "save_weights: needs a strategy and a path");
	}
	return write_weights(s, m, path, "save_weights");
}

/* Restores m's variables (and the global step) from the weights file f
 * (taken over: finished here), named what in messages. */
static int
restore_file(
    pasco_strategy *s, pasco_model *m, pasci_safetensors *f, const char *what)
{
	const char *text = cJSON_GetStringValue(item(f->metadata, "manifest"));
	pasci_ckpt *ck   = pasci_calloc(1, sizeof(*ck));
	pasco_variable *gs    = NULL,
	               **vars = pasci_calloc(
	                   m->nvars + m->nlayers + 2, sizeof(*vars));
	char   err[1500] = "";
	size_t n         = 0, count;
	int    rv        = PASCO_OK;
	if (ck == NULL || vars == NULL) {
		pasci_safetensors_fini(f);
		free(ck);
		free(vars);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	pasci_fmt(ck->path, sizeof(ck->path), "%s", what);
	ck->m = text != NULL ? cJSON_Parse(text) : NULL;
	if (ck->m == NULL ||
	    pasci_ckpt_format(ck->m, what, err, sizeof(err)) != 2) {
		rv = pasci_model_fail(PASCO_EPROTO,
		    "%s is not a Pasco weights file (its safetensors metadata "
		    "has no manifest of format " PASCI_CKPT_FORMAT ")%s%s",
		    what, err[0] != 0 ? ": " : "", err);
		pasci_safetensors_fini(f);
		goto out;
	}
	ck->format   = 2;
	ck->step     = (int64_t) cJSON_GetNumberValue(item(ck->m, "step"));
	ck->names[0] = pasci_strdup(WEIGHTS);
	ck->files[0] = *f;
	ck->n        = 1;
	if ((rv = pasci_ckpt_verify_file(
	         ck->m, what, WEIGHTS, f, &count, err, sizeof(err))) != 0) {
		pasci_model_fail(rv, "%s", err);
		goto out;
	}
	for (size_t k = 0; k < m->nvars; k++) {
		const cJSON *e;
		bool         found = false;
		cJSON_ArrayForEach(e, item(ck->m, "variables"))
		{
			const char *name =
			    cJSON_GetStringValue(item(e, "name"));
			found =
			    found || (name != NULL &&
			                 strcmp(name, m->vars[k].name) == 0);
		}
		if (!found) {
			rv = pasci_model_fail(PASCO_EINVAL,
			    "%s holds no variable %s, which the model has (a "
			    "file saved from another model?)",
			    what, m->vars[k].name);
			goto out;
		}
		vars[n++] = m->vars[k].handle;
	}
	for (size_t i = 0; i < m->nlayers; i++) {
		if (norm_count(m, i) != NULL) {
			vars[n++] = norm_count(m, i);
		}
	}
	if (wanted(m, GLOBAL_STEP)) {
		if ((rv = pasco_strategy_global_step(s, &gs)) != 0) {
			pasci_model_fail(rv, "%s: the global step: %s", what,
			    pasco_strategy_error(s));
			goto out;
		}
		vars[n++] = gs;
	}
	if ((rv = pasci_ckpt_restore(
	         ck, vars, n, -1, NULL, 0, err, sizeof(err))) != 0) {
		pasci_model_fail(rv, "loading %s: %s", what, err);
	}
out:
	pasco_variable_free(gs);
	pasci_ckpt_close(ck);
	free(ck);
	free(vars);
	return rv;
}

static bool
ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);
	return n >= k && strcmp(s + n - k, tail) == 0;
}

/* Entry `name` of the .keras file at path, NUL-terminated. */
static int
keras_entry(const char *path, const char *name, void **out, size_t *len)
{
	void  *buf;
	size_t n;
	char   err[1024];
	int    rv = pasci_file_read(path, &buf, &n, err, sizeof(err));
	if (rv != 0) {
		return pasci_model_fail(rv, "%s", err);
	}
	rv = pasci_zip_entry_read(
	    buf, n, path, name, out, len, err, sizeof(err));
	free(buf);
	return rv != 0 ? pasci_model_fail(rv, "%s", err) : PASCO_OK;
}

int
pasco_model_load_weights(pasco_strategy *s, pasco_model *m, const char *path)
{
	pasci_safetensors f;
	void             *buf = NULL;
	size_t            len;
	char              err[1024];
	int               rv = check_created(m, "load_weights");
	if (rv != 0 || s == NULL || path == NULL) {
		return rv != 0
		           ? rv
		           : pasci_model_fail(PASCO_EINVAL,
		                 "load_weights: needs a strategy and a path");
	}
	if (ends_with(path, ".keras")) {
		if ((rv = keras_entry(path, WEIGHTS, &buf, &len)) != 0) {
			return rv;
		}
		rv = pasci_safetensors_parse(&f, buf, len, err, sizeof(err));
		free(buf);
	} else {
		rv = pasci_safetensors_read(&f, path, err, sizeof(err));
	}
	if (rv != 0) {
		return pasci_model_fail(rv, "load_weights %s: %s", path, err);
	}
	return restore_file(s, m, &f, path);
}

/* metadata.json: Keras's fields, then Pasco's. */
static char *
metadata_json(pasco_strategy *s, const pasco_model *m)
{
	char      date[32];
	time_t    now = time(NULL);
	struct tm t;
	cJSON    *j = cJSON_CreateObject();
	char     *text;
	localtime_r(&now, &t);
	strftime(date, sizeof(date), "%Y-%m-%d@%H:%M:%S", &t);
	cJSON_AddStringToObject(j, "pasco_version", PASCO_VERSION);
	cJSON_AddStringToObject(j, "date_saved", date);
	cJSON_AddStringToObject(j, "weights", WEIGHTS);
	cJSON_AddNumberToObject(j, "ps_tasks", (double) s->nps);
	cJSON_AddNumberToObject(j, "variables", (double) m->nvars);
	text = cJSON_Print(j);
	cJSON_Delete(j);
	return text;
}

int
pasco_model_save(pasco_strategy *s, const pasco_model *m, const char *path)
{
	char  *config = NULL, *meta = NULL, wpath[4200];
	void  *weights = NULL;
	size_t wlen    = 0;
	char   err[1024];
	int    rv = check_created(m, "save");
	if (rv == 0 &&
	    (s == NULL || path == NULL || !ends_with(path, ".keras"))) {
		rv = pasci_model_fail(PASCO_EINVAL,
		    "Invalid filepath extension for saving. Please add a "
		    "`.keras` extension. Received: filepath=%s",
		    path != NULL ? path : "(null)");
	}
	if (rv != 0) {
		return rv;
	}
	pasci_fmt(wpath, sizeof(wpath), "%s.weights-XXXXXX", path);
	int fd = mkstemp(wpath);
	if (fd < 0) {
		return pasci_model_fail(
		    PASCO_EIO, "save %s: %s", path, strerror(errno));
	}
	close(fd);
	if ((rv = write_weights(s, m, wpath, "save")) == 0 &&
	    (rv = pasci_file_read(wpath, &weights, &wlen, err, sizeof(err))) !=
	        0) {
		pasci_model_fail(rv, "save %s: %s", path, err);
	}
	unlink(wpath);
	if (rv == 0 && ((rv = pasco_model_to_json(m, &config)) != 0 ||
	                   (meta = metadata_json(s, m)) == NULL)) {
		rv = pasci_model_fail(
		    rv != 0 ? rv : PASCO_ENOMEM, "save %s: the config", path);
	}
	if (rv == 0) {
		pasci_zip_entry e[] = {{"metadata.json", meta, strlen(meta)},
		    {"config.json", config, strlen(config)},
		    {WEIGHTS, weights, wlen}};
		if ((rv = pasci_zip_write(path, e, 3, err, sizeof(err))) !=
		    0) {
			pasci_model_fail(rv, "save: %s", err);
		}
	}
	free(config);
	free(meta);
	free(weights);
	return rv;
}

int
pasco_model_load(pasco_model **out, pasco_strategy *s, const char *path)
{
	void        *config = NULL;
	size_t       len;
	pasco_model *m = NULL;
	int          rv;
	*out = NULL;
	if (s == NULL || path == NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "load_model: needs a strategy and a path");
	}
	if (!ends_with(path, ".keras")) {
		return pasci_model_fail(PASCO_EINVAL,
		    "File format not supported: filepath=%s. Pasco loads "
		    ".keras files (pasco_model_save's)",
		    path);
	}
	if ((rv = keras_entry(path, "config.json", &config, &len)) != 0) {
		return rv;
	}
	rv = pasco_model_from_json(config, &m);
	free(config);
	if (rv != 0) {
		char why[1024];
		pasci_fmt(why, sizeof(why), "%s", pasco_model_last_error());
		return pasci_model_fail(
		    rv, "load_model %s: config.json: %s", path, why);
	}
	if ((rv = pasco_model_create_variables(m, s)) != 0 ||
	    (rv = pasco_model_load_weights(s, m, path)) != 0) {
		pasco_model_free(m);
		return rv;
	}
	*out = m;
	return PASCO_OK;
}
