/*
 * The checkpoint callbacks of the fit loop (include/pasco/fit.h):
 * ModelCheckpoint (every epoch or every N steps, keeping N, and the final
 * step) and BackupAndRestore (a checkpoint and a small JSON state per
 * epoch in the backup directory, restored at begin, deleted at a
 * successful end). They run on the thread that drives the callback list;
 * the checkpoint files are written by the ps tasks themselves.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fileio.h"
#include "pasco/checkpoint.h"
#include "pasco/fit.h"
#include "util.h"

/* ModelCheckpoint. */

/* Both callbacks' state starts with the strategy and the directory, so
 * one pair of functions allocates and frees either. */
typedef struct dir_cb {
	pasco_strategy *s;
	char           *dir;
} dir_cb;

static void *
dir_cb_alloc(size_t size, pasco_strategy *s, const char *dir)
{
	dir_cb *d = pasci_calloc(1, size);
	if (d == NULL || (d->dir = pasci_strdup(dir)) == NULL) {
		free(d);
		return NULL;
	}
	d->s = s;
	return d;
}

static void
dir_cb_free(void *user)
{
	dir_cb *d = user;
	if (d != NULL) {
		free(d->dir);
		free(d);
	}
}

typedef struct ckpt_cb {
	pasco_strategy *s; /* as dir_cb */
	char           *dir;
	int64_t         every, last_saved; /* -1: none yet */
	int32_t         keep;
} ckpt_cb;

static int
ckpt_save(ckpt_cb *k, int64_t step)
{
	int rv = pasco_checkpoint_save(k->s, k->dir, step, k->keep);
	if (rv != PASCO_OK) {
		return pasco_fit_fail(rv, "saving step %lld in %s: %s",
		    (long long) step, k->dir, pasco_strategy_error(k->s));
	}
	k->last_saved = step;
	return PASCO_OK;
}

static int
ckpt_begin(void *user, pasco_fit_context *ctx)
{
	ckpt_cb *k    = user;
	k->last_saved = -1;
	(void) ctx;
	return PASCO_OK;
}

/* Every `every` steps: saves when the step crossed a multiple since the
 * last save (steps are seen as closures finish, not one by one). */
static int
ckpt_progress(void *user, pasco_fit_context *ctx, double loss)
{
	ckpt_cb *k    = user;
	int64_t  step = ctx->global_step;
	(void) loss;
	if (k->every > 0 && step / k->every > k->last_saved / k->every &&
	    step != k->last_saved) {
		return ckpt_save(k, step);
	}
	return PASCO_OK;
}

static int
ckpt_epoch_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	ckpt_cb *k = user;
	(void) logs;
	if (k->every == 0) {
		return ckpt_save(k, ctx->global_step);
	}
	return ckpt_progress(user, ctx, 0);
}

static int
ckpt_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	ckpt_cb *k = user;
	(void) logs;
	return k->last_saved == ctx->global_step
	           ? PASCO_OK
	           : ckpt_save(k, ctx->global_step);
}

int
pasco_callback_checkpoint(
    pasco_callback *out, const pasco_checkpoint_callback_options *o)
{
	ckpt_cb *k;
	memset(out, 0, sizeof(*out));
	if (o == NULL || o->strategy == NULL || o->dir == NULL ||
	    o->dir[0] == 0 || o->every_steps < 0 || o->keep < 0) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "checkpoint callback: a strategy and a directory are "
		    "required; every_steps and keep must be >= 0");
	}
	if ((k = dir_cb_alloc(sizeof(*k), o->strategy, o->dir)) == NULL) {
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for a callback");
	}
	k->every      = o->every_steps;
	k->keep       = o->keep;
	k->last_saved = -1;
	*out          = (pasco_callback){.name = "checkpoint",
	             .begin                    = ckpt_begin,
	             .progress                 = ckpt_progress,
	             .epoch_end                = ckpt_epoch_end,
	             .end                      = ckpt_end,
	             .free                     = dir_cb_free,
	             .user                     = k};
	return PASCO_OK;
}

/* BackupAndRestore. */

#define STATE_FILE "training_state.json"

typedef struct backup_cb {
	pasco_strategy *s; /* as dir_cb */
	char           *dir;
} backup_cb;

static int
backup_read_state(
    backup_cb *b, int32_t *epoch, char *ckpt, size_t ckptlen, bool *found)
{
	char   path[4096], err[256];
	void  *text;
	size_t len;
	pasci_fmt(path, sizeof(path), "%s/" STATE_FILE, b->dir);
	*found = access(path, F_OK) == 0;
	if (!*found) {
		return PASCO_OK;
	}
	if (pasci_file_read(path, &text, &len, err, sizeof(err)) != 0) {
		return pasco_fit_fail(PASCO_EIO, "%s", err);
	}
	cJSON       *j  = cJSON_ParseWithLength(text, len);
	const cJSON *e  = cJSON_GetObjectItem(j, "epoch");
	const cJSON *ck = cJSON_GetObjectItem(j, "checkpoint");
	int          rv = PASCO_OK;
	free(text);
	if (!cJSON_IsNumber(e) || e->valuedouble < 0 || !cJSON_IsString(ck) ||
	    strncmp(ck->valuestring, "ckpt-", 5) != 0 ||
	    strchr(ck->valuestring, '/') != NULL) {
		rv = pasco_fit_fail(PASCO_EPROTO,
		    "%s: not a training state (want {\"epoch\": N, "
		    "\"checkpoint\": \"ckpt-<step>\"})",
		    path);
	} else {
		*epoch = (int32_t) e->valuedouble;
		pasci_fmt(ckpt, ckptlen, "%s/%s", b->dir, ck->valuestring);
	}
	cJSON_Delete(j);
	return rv;
}

static int
backup_begin(void *user, pasco_fit_context *ctx)
{
	backup_cb *b = user;
	char       ckpt[4096];
	int32_t    epoch = 0;
	int64_t    step  = 0;
	bool       found;
	int rv = backup_read_state(b, &epoch, ckpt, sizeof(ckpt), &found);
	if (rv != PASCO_OK || !found) {
		return rv;
	}
	if ((rv = pasco_checkpoint_restore(b->s, ckpt, &step)) != PASCO_OK) {
		return pasco_fit_fail(rv, "restoring the backup %s: %s", ckpt,
		    pasco_strategy_error(b->s));
	}
	pasci_log(PASCI_LOG_INFO,
	    "backup and restore: resuming at epoch %d (step %lld) from %s",
	    (int) epoch, (long long) step, ckpt);
	ctx->initial_epoch = epoch;
	return PASCO_OK;
}

static int
backup_epoch_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	backup_cb *b = user;
	char       path[4096], err[256], state[256];
	int64_t    step = ctx->global_step;
	int        rv;
	(void) logs;
	/* the checkpoint first, then the state naming it: a crash between
	 * them leaves the previous state and its checkpoint (2 are kept) */
	if ((rv = pasco_checkpoint_save(b->s, b->dir, step, 2)) != PASCO_OK) {
		return pasco_fit_fail(rv, "backing up step %lld in %s: %s",
		    (long long) step, b->dir, pasco_strategy_error(b->s));
	}
	int          n   = snprintf(state, sizeof(state),
	               "{\"epoch\": %d, \"step\": %lld, \"checkpoint\": \"ckpt-%lld\"}\n",
	               (int) ctx->epoch + 1, (long long) step, (long long) step);
	struct iovec iov = {state, (size_t) n};
	pasci_fmt(path, sizeof(path), "%s/" STATE_FILE, b->dir);
	if ((rv = pasci_file_write(path, &iov, 1, 1, err, sizeof(err))) != 0) {
		return pasco_fit_fail(rv, "%s", err);
	}
	return PASCO_OK;
}

/* Removes the files of dir/name, then the directory. */
static void
remove_checkpoint_dir(const char *dir, const char *name)
{
	char           path[4096], file[4400];
	DIR           *d;
	struct dirent *e;
	pasci_fmt(path, sizeof(path), "%s/%s", dir, name);
	if ((d = opendir(path)) == NULL) {
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") != 0 &&
		    strcmp(e->d_name, "..") != 0) {
			pasci_fmt(
			    file, sizeof(file), "%s/%s", path, e->d_name);
			unlink(file);
		}
	}
	closedir(d);
	rmdir(path);
}

/* Training completed: the backup is deleted (the state file first, so a
 * crash midway leaves nothing to resume from). */
static int
backup_end(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	backup_cb     *b = user;
	char           path[4096];
	DIR           *d;
	struct dirent *e;
	(void) ctx;
	(void) logs;
	pasci_fmt(path, sizeof(path), "%s/" STATE_FILE, b->dir);
	if (unlink(path) != 0 && access(path, F_OK) == 0) {
		return pasco_fit_fail(
		    PASCO_EIO, "cannot delete the backup state %s", path);
	}
	if ((d = opendir(b->dir)) != NULL) {
		while ((e = readdir(d)) != NULL) {
			if (strncmp(e->d_name, "ckpt-", 5) == 0) {
				remove_checkpoint_dir(b->dir, e->d_name);
			}
		}
		closedir(d);
	}
	rmdir(b->dir); /* only when nothing else is there */
	return PASCO_OK;
}

int
pasco_callback_backup_restore(
    pasco_callback *out, pasco_strategy *strategy, const char *backup_dir)
{
	backup_cb *b;
	memset(out, 0, sizeof(*out));
	if (strategy == NULL || backup_dir == NULL || backup_dir[0] == 0) {
		return pasco_fit_fail(PASCO_EINVAL,
		    "backup and restore: a strategy and a directory are "
		    "required");
	}
	if ((b = dir_cb_alloc(sizeof(*b), strategy, backup_dir)) == NULL) {
		return pasco_fit_fail(
		    PASCO_ENOMEM, "no memory for a callback");
	}
	*out = (pasco_callback){.name = "backup_and_restore",
	    .begin                    = backup_begin,
	    .epoch_end                = backup_epoch_end,
	    .end                      = backup_end,
	    .free                     = dir_cb_free,
	    .user                     = b};
	return PASCO_OK;
}
