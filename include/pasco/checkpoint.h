/*
 * Checkpoints. A checkpoint is a directory DIR/ckpt-<step> holding one
 * safetensors file per ps task (every shard the ps holds, and its optimizer
 * slots as "<shard>/.slot/<k>"; readable by numpy and every common
 * framework) and a JSON manifest (step, variables, shard layouts, slots),
 * written last and renamed into place: a crash mid-save leaves no manifest,
 * and the previous checkpoint stays the latest. Files are written and read
 * with io_uring. The ps files are written by the ps tasks themselves, so
 * DIR must be on storage every task can reach (as TensorFlow's model_dir).
 */
#ifndef PASCO_CHECKPOINT_H
#define PASCO_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coordinator.h"
#include "error.h"

/* Saves every variable created through s as checkpoint `step` in dir
 * (created if needed), then keeps only the newest `keep` complete
 * checkpoints there (0 keeps all). Messages: pasco_strategy_error. Blocks. */
int pasco_checkpoint_save(
    pasco_strategy *s, const char *dir, int64_t step, int32_t keep);

/* The newest complete checkpoint in dir: its directory into path and its
 * step. PASCO_ENOTFOUND when there is none. Thread-safe. */
int pasco_checkpoint_latest(
    const char *dir, char *path, size_t len, int64_t *step);

/* Loads the checkpoint at path (a ckpt-<step> directory) into the
 * variables created through s that it holds, matched by name, dtype and
 * shape, whatever the number of shards or ps tasks then and now; optimizer
 * slots too. Variables it does not hold are left alone. *step (may be NULL)
 * gets its step. Blocks. */
int pasco_checkpoint_restore(
    pasco_strategy *s, const char *path, int64_t *step);

/* Prints the checkpoint at path (a ckpt-<step> directory, or a directory
 * of them: the latest) to out: step, variables, shapes, shards, files. */
int pasco_checkpoint_inspect(const char *path, FILE *out);

#endif
