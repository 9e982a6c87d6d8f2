/*
 * Saving checkpoints (see checkpoint.h, and checkpoint_impl.h for the
 * manifest): save asks each ps to write its own safetensors file, which
 * answers with its slots, its dynamic tables (checkpoint_dynamic.c makes
 * their entries) and the CRC-32C of every tensor it wrote, then
 * writes the manifest atomically. Reading is checkpoint_read.c's. Runs on
 * the caller's thread; the strategy's lock is only held to copy its
 * variable directory.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint_impl.h"
#include "fileio.h"
#include "pasco/checkpoint.h"
#include "recovery.h"
#include "util.h"
#include "variable_impl.h"

#define MANIFEST PASCI_CKPT_MANIFEST

pasco_variable **
pasci_checkpoint_directory(pasco_strategy *s, size_t *n)
{
	pasco_variable **out;
	size_t           count = 0, i, kept = 0;
	pthread_mutex_lock(&s->mu);
	for (var_entry *e = s->vars; e != NULL; e = e->next) {
		count++;
	}
	out = pasci_calloc(count + 1, sizeof(*out));
	i   = count; /* the directory is newest first: fill from the end */
	for (var_entry *e = s->vars; out != NULL && e != NULL; e = e->next) {
		if (pasci_variable_clone(&out[--i], e->layout) != 0) {
			out[i] = NULL;
		}
	}
	pthread_mutex_unlock(&s->mu);
	for (i = 0; out != NULL && i < count; i++) { /* drop failed clones */
		if (out[i] != NULL) {
			out[kept++] = out[i];
		}
	}
	*n = kept;
	return out;
}

void
pasci_checkpoint_directory_free(pasco_variable **vars, size_t n)
{
	for (size_t i = 0; vars != NULL && i < n; i++) {
		pasco_variable_free(vars[i]);
	}
	free(vars);
}

static int
fail(pasco_strategy *s, int rv, const char *fmt, const char *a, const char *b)
{
	pthread_mutex_lock(&s->mu);
	pasci_error_fmt(s->error, sizeof(s->error), fmt, a, b);
	pthread_mutex_unlock(&s->mu);
	return rv;
}

/* Each ps writes its file; slots (a JSON object) merges their slot
 * metadata, tables gets each file's dynamic tables, files each file's
 * checksums. */
static int
save_shards(pasco_strategy *s, const char *ckdir, cJSON *slots, cJSON *tables,
    cJSON *files)
{
	for (size_t i = 0; i < s->nps; i++) {
		pasci_wire_builder b;
		pasci_wire_msg     reply;
		char               path[4096], err[512];
		cJSON             *part, *e, *file;
		int                rv;
		pasci_fmt(
		    path, sizeof(path), "%s/ps-%zu.safetensors", ckdir, i);
		pasci_wire_builder_init(&b, PASCI_METHOD_CKPT_SAVE);
		b.hdr.name = path;
		rv = pasci_rpc_call(s->ps[i], &b, s->call_timeout_ms, &reply,
		    err, sizeof(err));
		pasci_wire_builder_fini(&b);
		if (rv != 0) {
			return fail(s, rv, "saving %s: %s", path, err);
		}
		part = cJSON_Parse(reply.hdr->json);
		pasci_wire_msg_fini(&reply);
		if (!cJSON_IsObject(
		        cJSON_GetObjectItemCaseSensitive(part, "crc32c"))) {
			cJSON_Delete(part);
			return fail(s, PASCO_EPROTO,
			    "saving %s: the ps answered without checksums%s",
			    path, "");
		}
		cJSON_ArrayForEach(
		    e, cJSON_GetObjectItemCaseSensitive(part, "slots"))
		{
			cJSON_AddItemToObject(
			    slots, e->string, cJSON_Duplicate(e, 1));
		}
		pasci_fmt(path, sizeof(path), "ps-%zu.safetensors", i);
		if (cJSON_IsObject(
		        cJSON_GetObjectItemCaseSensitive(part, "dynamic"))) {
			cJSON_AddItemToObject(tables, path,
			    cJSON_DetachItemFromObjectCaseSensitive(
			        part, "dynamic"));
		}
		file = cJSON_AddObjectToObject(files, path);
		cJSON_AddItemToObject(file, "crc32c",
		    cJSON_DetachItemFromObjectCaseSensitive(part, "crc32c"));
		cJSON_Delete(part);
	}
	return PASCO_OK;
}

/* The manifest of a save (NULL: out of memory, or a dynamic table a ps did
 * not write, err says which). */
static cJSON *
manifest_of(pasco_strategy *s, int64_t step, const cJSON *slots,
    const cJSON *tables, char *err, size_t errlen)
{
	size_t           n;
	pasco_variable **vars = pasci_checkpoint_directory(s, &n);
	cJSON           *m    = cJSON_CreateObject();
	cJSON           *arr  = cJSON_AddArrayToObject(m, "variables");
	cJSON_AddStringToObject(m, "format", PASCI_CKPT_FORMAT);
	cJSON_AddNumberToObject(m, "step", (double) step);
	for (size_t i = 0; i < n; i++) {
		pasco_variable *v = vars[i];
		cJSON          *e = cJSON_CreateObject(), *shape, *shards;
		cJSON_AddItemToArray(arr, e);
		cJSON_AddStringToObject(e, "name", v->name);
		cJSON_AddStringToObject(
		    e, "dtype", pasco_dtype_name(v->dtype));
		shape = cJSON_AddArrayToObject(e, "shape");
		for (int32_t d = 0; d < v->rank; d++) {
			cJSON_AddItemToArray(
			    shape, cJSON_CreateNumber((double) v->shape[d]));
		}
		if (v->dynamic) {
			if (pasci_ckpt_dyn_describe(
			        e, v, tables, err, errlen) != 0) {
				cJSON_Delete(m);
				m = NULL;
				break;
			}
			continue;
		}
		shards = cJSON_AddArrayToObject(e, "shards");
		for (int32_t k = 0; k < v->nshards; k++) {
			cJSON       *sh = cJSON_CreateObject();
			const cJSON *sl = cJSON_GetObjectItemCaseSensitive(
			    slots, v->shards[k].name);
			char file[64];
			pasci_fmt(file, sizeof(file), "ps-%d.safetensors",
			    v->shards[k].ps_task);
			cJSON_AddStringToObject(sh, "name", v->shards[k].name);
			cJSON_AddNumberToObject(
			    sh, "ps_task", v->shards[k].ps_task);
			cJSON_AddNumberToObject(
			    sh, "offset", (double) v->shards[k].offset);
			cJSON_AddNumberToObject(
			    sh, "rows", (double) v->shards[k].rows);
			cJSON_AddStringToObject(sh, "file", file);
			if (sl != NULL) {
				cJSON_AddItemToObject(
				    sh, "slots", cJSON_Duplicate(sl, 1));
			}
			cJSON_AddItemToArray(shards, sh);
		}
	}
	pasci_checkpoint_directory_free(vars, n);
	return m;
}

/* Removes a checkpoint directory and what Pasco wrote in it. */
static void
remove_checkpoint(const char *path)
{
	DIR           *d = opendir(path);
	struct dirent *e;
	char           file[4096];
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "ps-", 3) == 0 ||
		    strncmp(e->d_name, MANIFEST, strlen(MANIFEST)) == 0) {
			pasci_fmt(
			    file, sizeof(file), "%s/%s", path, e->d_name);
			unlink(file);
		}
	}
	if (d != NULL) {
		closedir(d);
	}
	rmdir(path);
}

/* A complete checkpoint of a directory: its step and when its manifest
 * was written. */
typedef struct listed {
	int64_t         step;
	struct timespec saved;
} listed;

static bool
newer(const listed *a, const listed *b)
{
	if (a->saved.tv_sec != b->saved.tv_sec) {
		return a->saved.tv_sec > b->saved.tv_sec;
	}
	if (a->saved.tv_nsec != b->saved.tv_nsec) {
		return a->saved.tv_nsec > b->saved.tv_nsec;
	}
	return a->step > b->step;
}

/* The complete checkpoints of dir, most recently saved first; at most
 * max. */
static size_t
list_saved(const char *dir, listed *out, size_t max)
{
	DIR           *d = opendir(dir);
	struct dirent *e;
	size_t         n = 0;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char       *end, path[4096];
		struct stat st;
		listed      c;
		if (strncmp(e->d_name, "ckpt-", 5) != 0) {
			continue;
		}
		c.step = strtoll(e->d_name + 5, &end, 10);
		pasci_fmt(
		    path, sizeof(path), "%s/%s/" MANIFEST, dir, e->d_name);
		if (*end != 0 || end == e->d_name + 5 || n == max ||
		    stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
		    access(path, R_OK) != 0) {
			continue;
		}
		c.saved  = st.st_mtim;
		size_t i = n++;
		while (i > 0 && newer(&c, &out[i - 1])) {
			out[i] = out[i - 1];
			i--;
		}
		out[i] = c;
	}
	if (d != NULL) {
		closedir(d);
	}
	return n;
}

size_t
pasci_checkpoint_list(const char *dir, int64_t *steps, size_t max)
{
	listed *all = pasci_calloc(max + 1, sizeof(*all));
	size_t  n   = all != NULL ? list_saved(dir, all, max) : 0;
	for (size_t i = 0; i < n; i++) {
		steps[i] = all[i].step;
	}
	free(all);
	return n;
}

static void
prune(const char *dir, int32_t keep)
{
	int64_t steps[1024];
	size_t  n = pasci_checkpoint_list(dir, steps, 1024);
	for (size_t i = (size_t) keep; keep > 0 && i < n; i++) {
		char path[4096];
		pasci_fmt(path, sizeof(path), "%s/ckpt-%lld", dir,
		    (long long) steps[i]);
		remove_checkpoint(path);
	}
}

/* Makes the manifest just written for step the most recently saved of
 * dir, whatever the clock's granularity or an earlier run's clock said:
 * its time is set past every other manifest's when it is not already. */
static void
make_newest(const char *dir, int64_t step, const char *manifest)
{
	listed      all[1024];
	size_t      n = list_saved(dir, all, 1024);
	struct stat st;
	for (size_t i = 0; i < n; i++) {
		if (all[i].step == step) {
			continue;
		}
		if (stat(manifest, &st) != 0 ||
		    newer(&(listed){step, st.st_mtim}, &all[i])) {
			return; /* the others are older still */
		}
		struct timespec t[2] = {{0, UTIME_OMIT}, all[i].saved};
		if (++t[1].tv_nsec == 1000000000L) {
			t[1].tv_sec++;
			t[1].tv_nsec = 0;
		}
		utimensat(AT_FDCWD, manifest, t, AT_SYMLINK_NOFOLLOW);
		return;
	}
}

/* This strategy's run id, as manifests carry it ("run"): made at its
 * first save. */
static void
run_id(pasco_strategy *s, char *buf, size_t len)
{
	pthread_mutex_lock(&s->mu);
	if (s->ckpt_run == 0) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME, &now);
		s->ckpt_run = ((uint64_t) now.tv_sec * 1000000000u +
		                  (uint64_t) now.tv_nsec) ^
		              ((uint64_t) getpid() << 40) ^ (uintptr_t) s;
	}
	pasci_fmt(buf, len, "%016llx", (unsigned long long) s->ckpt_run);
	pthread_mutex_unlock(&s->mu);
}

/* Whether checkpoint dir/ckpt-step was saved by another run than run (its
 * manifest says so, or says nothing: written before runs were noted). */
static bool
saved_by_another_run(const char *dir, int64_t step, const char *run)
{
	char        path[4096], err[256];
	cJSON      *m;
	const char *its;
	bool        other;
	pasci_fmt(path, sizeof(path), "%s/ckpt-%lld", dir, (long long) step);
	if ((m = pasci_checkpoint_manifest(path, err, sizeof(err))) == NULL) {
		return false;
	}
	its = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "run"));
	other = its == NULL || strcmp(its, run) != 0;
	cJSON_Delete(m);
	return other;
}

/* Says so, once per directory, when dir holds checkpoints of this step or
 * later that another run saved: a run that resumed from dir saves later
 * steps only. */
static void
note_earlier_run(pasco_strategy *s, const char *dir, int64_t step,
    int32_t keep, const char *run)
{
	int64_t steps[1024], newest = -1;
	size_t  n;
	bool    noted;
	char    kept[64];
	pthread_mutex_lock(&s->mu);
	noted = strcmp(s->ckpt_dir_noted, dir) == 0;
	pthread_mutex_unlock(&s->mu);
	n = noted ? 0 : pasci_checkpoint_list(dir, steps, 1024);
	for (size_t i = 0; i < n; i++) {
		if (steps[i] >= step && steps[i] > newest &&
		    saved_by_another_run(dir, steps[i], run)) {
			newest = steps[i];
		}
	}
	if (newest < step) {
		return;
	}
	pthread_mutex_lock(&s->mu);
	pasci_fmt(s->ckpt_dir_noted, sizeof(s->ckpt_dir_noted), "%s", dir);
	pthread_mutex_unlock(&s->mu);
	if (keep > 0) {
		pasci_fmt(
		    kept, sizeof(kept), "the newest %d are kept", (int) keep);
	} else {
		pasci_fmt(kept, sizeof(kept), "keep 0: all are kept");
	}
	pasci_log(PASCI_LOG_WARN,
	    "%s holds checkpoints up to step %lld from an earlier run (this "
	    "run saves step %lld): checkpoints are ordered by when they were "
	    "saved, so this run's are the latest and the earlier run's are "
	    "removed first (%s)",
	    dir, (long long) newest, (long long) step, kept);
}

/* One try of a save's shards (pasci_recovery_retry's op): what an
 * earlier try gathered is dropped first. */
typedef struct save_attempt {
	pasco_strategy *s;
	const char     *ckdir;
	cJSON          *slots, *tables, *files;
	bool            tried;
} save_attempt;

static int
save_attempt_run(void *arg, char *why, size_t len)
{
	save_attempt *a = arg;
	int           rv;
	if (a->tried) {
		cJSON_Delete(a->slots);
		cJSON_Delete(a->tables);
		cJSON_Delete(a->files);
		a->slots  = cJSON_CreateObject();
		a->tables = cJSON_CreateObject();
		a->files  = cJSON_CreateObject();
	}
	a->tried = true;
	rv       = save_shards(a->s, a->ckdir, a->slots, a->tables, a->files);
	pasci_fmt(why, len, "%s", rv != 0 ? pasco_strategy_error(a->s) : "");
	return rv;
}

/* A save into dir/ckpt-<step>; a staging one (pasci_checkpoint_stage)
 * neither prunes dir nor makes it the ps recovery directory. */
static int
checkpoint_save(pasco_strategy *s, const char *dir, int64_t step, int32_t keep,
    bool staging)
{
	char   ckdir[4096], abs_ckdir[PATH_MAX], path[4200], err[512];
	char   run[32];
	cJSON *slots = cJSON_CreateObject(), *m = NULL;
	cJSON *files = cJSON_CreateObject(), *tables = cJSON_CreateObject();
	char  *text = NULL;
	struct iovec iov;
	int          rv;

	pasci_fmt(ckdir, sizeof(ckdir), "%s/ckpt-%lld", dir, (long long) step);
	run_id(s, run, sizeof(run));
	if (!staging) {
		note_earlier_run(s, dir, step, keep, run);
	}
	if ((rv = pasci_make_dirs(ckdir, err, sizeof(err))) != 0) {
		fail(s, rv, "%s%s", err, "");
		goto out;
	}
	/* the ps tasks get an absolute path (they check it against their
	 * checkpoint root, and need not share our working directory) */
	if (realpath(ckdir, abs_ckdir) == NULL) {
		rv = fail(s, PASCO_EIO, "%s: %s", ckdir, strerror(errno));
		goto out;
	}
	/* with ps recovery, a ps being recovered is waited for, and a save
	 * that met a lost ps is tried again once it is back */
	save_attempt at = {s, abs_ckdir, slots, tables, files, false};
	char         what[4200];
	pasci_fmt(what, sizeof(what), "checkpoint %s", ckdir);
	rv     = pasci_recovery_retry(s, what, save_attempt_run, &at);
	slots  = at.slots;
	tables = at.tables;
	files  = at.files;
	if (rv != 0) {
		goto out;
	}
	err[0] = 0;
	m      = manifest_of(s, step, slots, tables, err, sizeof(err));
	if (m == NULL && err[0] != 0) {
		rv = fail(s, PASCO_EPROTO, "checkpoint %s: %s", ckdir, err);
		goto out;
	}
	if (m != NULL) {
		cJSON_AddStringToObject(m, "run", run);
		cJSON_AddItemToObject(m, "files", files);
		files = NULL;
	}
	text = m != NULL ? cJSON_Print(m) : NULL;
	if (text == NULL) {
		rv = PASCO_ENOMEM;
		goto out;
	}
	iov = (struct iovec){text, strlen(text)};
	pasci_fmt(path, sizeof(path), "%s/" MANIFEST, ckdir);
	if ((rv = pasci_file_write(path, &iov, 1, 1, err, sizeof(err))) != 0) {
		fail(s, rv, "%s%s", err, "");
		goto out;
	}
	if (!staging) {
		make_newest(dir, step, path);
		prune(dir, keep);
		pasci_recovery_note_save(s, dir);
	}
out:
	free(text);
	cJSON_Delete(m);
	cJSON_Delete(slots);
	cJSON_Delete(files);
	cJSON_Delete(tables);
	return rv;
}

int
pasco_checkpoint_save(
    pasco_strategy *s, const char *dir, int64_t step, int32_t keep)
{
	return checkpoint_save(s, dir, step, keep, false);
}

int
pasci_checkpoint_stage(pasco_strategy *s, const char *dir)
{
	return checkpoint_save(s, dir, 0, 0, true);
}

int
pasco_checkpoint_latest(const char *dir, char *path, size_t len, int64_t *step)
{
	int64_t steps[1024];
	if (pasci_checkpoint_list(dir, steps, 1024) == 0) {
		return PASCO_ENOTFOUND;
	}
	pasci_fmt(path, len, "%s/ckpt-%lld", dir, (long long) steps[0]);
	if (step != NULL) {
		*step = steps[0];
	}
	return PASCO_OK;
}
