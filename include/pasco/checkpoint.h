/*
 * Checkpoints. A checkpoint is a directory DIR/ckpt-<step> holding one
 * safetensors file per ps task (every shard the ps holds, and its optimizer
 * slots as "<shard>/<slot>" with Keras's slot names: SGD "momentum";
 * Adagrad "accumulator"; RMSprop "rms", "momentum", "mg"; Adam "m", "v",
 * "vhat"; FTRL "accumulator", "linear"; readable by numpy and every common
 * framework; a dynamic embedding table T as its share's "T/keys",
 * "T/values", "T/last_step", "T/pending_keys", "T/pending_counts" (the
 * admission counts), "T/meta", "T/slot_init" and "T/<slot>") and a JSON
 * manifest (format "pasco-checkpoint-2": step,
 * variables, shard layouts, slots with the optimizer by name ("adam"), and
 * the CRC-32C of every tensor of every file), written last and renamed
 * into place: a crash mid-save leaves no manifest, and the previous
 * checkpoint stays the latest. Every read checks every tensor against its
 * checksum first. Checkpoints of format 1 (slots "<shard>/.slot/<k>", the
 * optimizer a number, no checksums) are read only when asked for
 * (pasco_checkpoint_read_options.allow_format_1), unchecked, with a
 * warning; otherwise they are refused (PASCO_EPRECONDITION), so a manifest
 * relabelled as format 1 cannot switch the checks off. Files are
 * written and read with io_uring. The ps files are written by the ps tasks
 * themselves, so DIR must be on storage every task can reach (as
 * TensorFlow's model_dir).
 */
#ifndef PASCO_CHECKPOINT_H
#define PASCO_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coordinator.h"
#include "error.h"

/* Saves every variable created through s as checkpoint `step` in dir
 * (created if needed), then keeps only the `keep` most recently saved
 * complete checkpoints there (0 keeps all). Checkpoints are ordered by
 * when they were saved (their manifest's time, which a save makes the
 * newest of dir), not by step, as TensorFlow's CheckpointManager does: a
 * new run reusing a directory that an earlier run left later steps in
 * has its own checkpoints kept and found as the latest, and the earlier
 * run's removed first. That is logged at the run's first save there
 * ("DIR holds checkpoints up to step N from an earlier run ..."): a run
 * that means to continue the earlier one restores first
 * (pasco_checkpoint_restore_latest) and saves later steps. A lower step
 * than dir's newest is not refused: a run saves one after resuming past a
 * damaged newest checkpoint, or after a ps recovery set the global step
 * back, and those must be kept. A copy of a
 * checkpoint directory keeps the order only with the files' times (cp -p,
 * rsync -a). dir also becomes the strategy's ps
 * recovery directory unless pasco_strategy_options.checkpoint_dir named
 * one (see coordinator.h); while a ps is being recovered, the save waits
 * for it. PASCO_EEXIST when a variable is named like another's slot
 * ("w/m" beside w's Adam slot "m") or a dynamic table's tensor ("T/keys"
 * beside table T). Messages: pasco_strategy_error.
 * Blocks. */
int pasco_checkpoint_save(
    pasco_strategy *s, const char *dir, int64_t step, int32_t keep);

/* The most recently saved complete checkpoint in dir (one with a
 * manifest; its data is not read: pasco_checkpoint_restore_latest skips
 * damaged ones): its directory into path and its step. PASCO_ENOTFOUND when
 * there is none. Thread-safe. */
int pasco_checkpoint_latest(
    const char *dir, char *path, size_t len, int64_t *step);

/* Loads the checkpoint at path (a ckpt-<step> directory) into the
 * variables created through s that it holds, matched by name, dtype and
 * shape, whatever the number of shards or ps tasks then and now; optimizer
 * slots too. A dynamic table (created first with
 * pasco_dynamic_variable_create, the same dim) gets its keys, rows, slots
 * and admission counts, each key on the ps its hash picks among the ps
 * tasks now; each ps's table is emptied first. Its counts (created,
 * evicted, refused) come back per ps when the ps count is the same, and
 * otherwise restart from the rows each ps gets. Variables it does not hold are
 * left alone. Every file is read and every tensor checked against the
 * manifest's CRC-32C before any variable is written, and every variable's
 * dtype and shape too: a damaged tensor is PASCO_EPROTO (a missing file or
 * manifest PASCO_ENOTFOUND, a mismatched variable PASCO_EINVAL) with
 * pasco_strategy_error naming the checkpoint, file and tensor, and no variable
 * changed. (An RPC failing midway can still leave some variables restored and
 * others not.) *step (may be NULL) gets its step. Blocks. */
int pasco_checkpoint_restore(
    pasco_strategy *s, const char *path, int64_t *step);

/* How a checkpoint may be read. */
typedef struct pasco_checkpoint_read_options {
	/* Read a checkpoint of format 1 (written before checksums): its
	 * tensors cannot be checked, so it is restored unchecked, with a
	 * warning in the log naming it. false (the default): a format 1
	 * checkpoint is PASCO_EPRECONDITION, the message naming it and this
	 * option. */
	bool allow_format_1;
} pasco_checkpoint_read_options;

/* pasco_checkpoint_restore with options (opts may be NULL: the
 * defaults). Blocks. */
int pasco_checkpoint_restore_with(pasco_strategy *s, const char *path,
    const pasco_checkpoint_read_options *opts, int64_t *step);

/* Resuming: restores the newest intact checkpoint of dir. Checkpoints are
 * tried most recently saved first; one that is damaged, has a missing or
 * unreadable file, or an unreadable manifest is skipped with a warning in
 * the log naming it and why ("skipping checkpoint DIR/ckpt-20: ..."), and
 * the one before it tried (a format 1 checkpoint is skipped too: restore
 * it with pasco_checkpoint_restore_with). PASCO_ENOTFOUND when none is
 * intact (the message names the newest one skipped, and why). Errors of
 * the restore itself (a mismatched variable, a ps failing) are returned,
 * not skipped. *step (may be NULL) gets the step restored. Blocks. */
int pasco_checkpoint_restore_latest(
    pasco_strategy *s, const char *dir, int64_t *step);

/* Reads every file of the checkpoint at path and checks every tensor
 * against the manifest's checksums, without restoring anything: PASCO_OK;
 * PASCO_ENOTFOUND (no manifest, a missing file) or PASCO_EPROTO (a damaged
 * file or tensor), err naming the checkpoint, file and tensor. A format 1
 * checkpoint, which has no checksums, is PASCO_EPRECONDITION; a manifest
 * of an unknown format, or of format 2 without its checksums,
 * PASCO_EPROTO. Thread-safe. */
int pasco_checkpoint_verify(const char *path, char *err, size_t errlen);

/* Prints the checkpoint at path (a ckpt-<step> directory, or a directory
 * of them: the latest) to out: step, format, variables, shapes, shards,
 * slots by name, then each data file read and checked ("ps-0.safetensors:
 * 6 tensor(s), checksums match", or "ps-1.safetensors: DAMAGED: ...
 * tensor 'w' is damaged (CRC-32C ..., the manifest says ...)").
 * PASCO_OK when every file is intact; PASCO_EPROTO (or the read's error)
 * when one is not; PASCO_ENOTFOUND without a manifest; for a format 1
 * checkpoint, which has no checksums, PASCO_EPRECONDITION (after the
 * listing, saying so) unless opts allow it: then its files are read and
 * their structure checked, and the output says nothing could be checked
 * against checksums. */
int pasco_checkpoint_inspect(const char *path, FILE *out);

/* pasco_checkpoint_inspect with options (opts may be NULL). */
int pasco_checkpoint_inspect_with(
    const char *path, FILE *out, const pasco_checkpoint_read_options *opts);

#endif
