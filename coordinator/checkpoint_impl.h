/*
 * Checkpoint internals shared by checkpoint.c (save, the list of
 * checkpoints), checkpoint_read.c (reading and verifying a checkpoint),
 * checkpoint_restore.c (restoring from it), checkpoint_inspect.c and
 * recovery.c (a lost ps's variables restored from the latest intact
 * checkpoint).
 *
 * Manifest format 2 ("pasco-checkpoint-2"): {"format", "step", "run" (the
 * saving strategy's id: another run's checkpoints are noted), "variables":
 * [{"name", "dtype", "shape", "shards": [{"name", "ps_task", "offset",
 * "rows", "file", "slots": {"optimizer": "adam", "step", "count", "names":
 * ["m", "v", "vhat"]}}]}], "files": {"ps-0.safetensors": {"crc32c":
 * {"<tensor>": crc, ...}}}}; a slot tensor is "<shard>/<slot name>".
 * A dynamic table's entry (checkpoint_dynamic.c) also has "dynamic": true,
 * "dim", "rows" (all its files'), "options": {"min_count", "evict_after",
 * "max_rows_per_ps", "default_zeros", "initializer": {"kind", "value",
 * "minval", "maxval", "mean", "stddev", "seed": "<decimal>"}}, and its
 * shape stays [0, dim]; each shard (one per ps, named like the table,
 * offset and rows 0) has "dynamic": {"rows", "pending", "optimizer"
 * (absent before any update), "slots": [slot names its file holds]}, and
 * its file holds "<table>/keys", "/values", "/last_step",
 * "/pending_keys", "/pending_counts", "/meta", "/slot_init" and
 * "/<slot name>" (ps/checkpoint_shard.h), checksummed like every tensor.
 * A reader that predates tables finds no "<table>" tensor and refuses the
 * entry; checkpoints without tables are unchanged, so the format stays 2.
 * Format 1 ("pasco-checkpoint-1": no "files", slots "<shard>/.slot/<k>",
 * the optimizer as its pasco_optimizer_kind number) loads, unverified,
 * only when the reader allows it; any other format is refused.
 */
#ifndef PASCO_COORDINATOR_CHECKPOINT_H
#define PASCO_COORDINATOR_CHECKPOINT_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "coordinator_impl.h"
#include "safetensors.h"

#define PASCI_CKPT_MANIFEST "manifest.json"
#define PASCI_CKPT_FORMAT "pasco-checkpoint-2"
#define PASCI_CKPT_FORMAT_1 "pasco-checkpoint-1"
#define PASCI_CKPT_MAX_FILES 256

/* A checkpoint read whole: its manifest and every file it names, each
 * checked against the manifest's checksums. */
typedef struct pasci_ckpt {
	char              path[4096];
	cJSON            *m;
	int64_t           step;
	int               format; /* 1 or 2 (pasci_ckpt_format) */
	size_t            n;
	char             *names[PASCI_CKPT_MAX_FILES];
	pasci_safetensors files[PASCI_CKPT_MAX_FILES];
} pasci_ckpt;

/* Steps of the complete checkpoints (with a manifest) in dir, newest
 * first; at most max. */
size_t pasci_checkpoint_list(const char *dir, int64_t *steps, size_t max);

/* The manifest of the checkpoint at path, or NULL with err (it names the
 * file). */
cJSON *pasci_checkpoint_manifest(const char *path, char *err, size_t errlen);

/* The format of manifest m (of the checkpoint at path): 2, 1, or -1 with
 * err naming the checkpoint (an unknown format, or format 2 without its
 * checksums). */
int pasci_ckpt_format(const cJSON *m, const char *path, char *err, size_t len);

/* Reads the checkpoint at path and verifies it: every file the manifest
 * names is read, and every tensor's CRC-32C compared with the manifest's.
 * PASCO_ENOTFOUND (no manifest or a missing file) or PASCO_EPROTO (a
 * damaged file or tensor, a manifest of no known format), err naming the
 * checkpoint, file and tensor. A format 1 checkpoint (no checksums) is
 * PASCO_EPRECONDITION unless allow_format_1; then it is read with a
 * warning in the log. */
int pasci_ckpt_open(pasci_ckpt *ck, const char *path, bool allow_format_1,
    char *err, size_t len);

/* The newest checkpoint of dir that pasci_ckpt_open accepts (format 1
 * not allowed); each one
 * skipped is logged with why (and listed in err if none is left:
 * PASCO_ENOTFOUND). */
int pasci_ckpt_open_latest(
    pasci_ckpt *ck, const char *dir, char *err, size_t len);

void pasci_ckpt_close(pasci_ckpt *ck);

/* File `name` of ck (one of its own directory), read and verified on
 * first use; NULL with err naming the file and what is wrong. */
const pasci_safetensors *pasci_ckpt_file(
    pasci_ckpt *ck, const char *name, char *err, size_t errlen);

/* Checks file `name` of the checkpoint at dir (already read into f)
 * against manifest m's checksums: PASCO_EPROTO naming every damaged tensor
 * in err; *count gets the tensors checked. PASCO_OK for a format 1
 * manifest (nothing to check against; *count 0). */
int pasci_ckpt_verify_file(const cJSON *m, const char *dir, const char *name,
    const pasci_safetensors *f, size_t *count, char *err, size_t len);

/* pasco_checkpoint_save of step 0 into dir/ckpt-0 for a saved model
 * (model_save.c), which reads it back and removes it: dir is neither
 * pruned nor made the strategy's ps recovery directory. Messages:
 * pasco_strategy_error. Blocks. */
int pasci_checkpoint_stage(pasco_strategy *s, const char *dir);

/* Clones of the variables created through s (oldest first); free with
 * pasci_checkpoint_directory_free. */
pasco_variable **pasci_checkpoint_directory(pasco_strategy *s, size_t *n);
void pasci_checkpoint_directory_free(pasco_variable **vars, size_t n);

/* Restores vars from ck. task < 0: every variable ck holds (values
 * assigned, slots set on every shard); the others are left alone, with a
 * warning. task >= 0: the shards placed on ps `task` are created again
 * from ck (values and slots), and the variable named "global_step", if ck
 * holds it, is assigned wherever it lives; a variable with a shard on task
 * that ck lacks is PASCO_ENOTFOUND. Every spec is checked before anything
 * is written. restored (may be NULL) gets the names restored, comma
 * separated. */
int pasci_ckpt_restore(pasci_ckpt *ck, pasco_variable **vars, size_t n,
    int32_t task, char *restored, size_t rlen, char *err, size_t len);

/* checkpoint_dynamic.c: dynamic embedding tables. */

/* Fills manifest entry e of dynamic table v (dim, options, a shard per
 * ps) from tables, the "dynamic" object each ps answered its save with,
 * by file name. PASCO_EPROTO when a ps did not write the table (err says
 * which). */
int pasci_ckpt_dyn_describe(cJSON *e, const pasco_variable *v,
    const cJSON *tables, char *err, size_t len);

/* Checks that ck's entry restores into v: both dynamic tables of the same
 * dim, every shard's tensors present with the right dtypes and shapes, its
 * slots of one known optimizer. PASCO_EINVAL (v differs) or PASCO_EPROTO,
 * err naming the table, file and tensor. */
int pasci_ckpt_dyn_check(pasci_ckpt *ck, const cJSON *entry,
    const pasco_variable *v, char *err, size_t len);

/* Restores dynamic table v from ck's entry: every old shard's rows,
 * slots and pending counts routed by pasci_dyn_shard over v's shard
 * count, each shard (only those on ps task when task >= 0, the table then
 * created again there with the manifest's options) sent DYN_IMPORT
 * requests of at most about pasci_ckpt_dyn_request_bytes, the first one
 * clearing its table. Counters: with as many shards as the checkpoint,
 * shard i gets old shard i's; otherwise the rows it gets count as created,
 * and no evictions or refusals. Blocks. */
int pasci_ckpt_dyn_restore(pasci_ckpt *ck, const cJSON *entry,
    pasco_variable *v, int32_t task, char *err, size_t len);

/* The size a DYN_IMPORT request of a restore stays near (64 MB; tests
 * make it small to split a table's share into many requests). */
extern size_t pasci_ckpt_dyn_request_bytes;

#endif
