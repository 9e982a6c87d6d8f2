/* The ps side of a checkpoint: one shard file per ps (checkpoint_shard.c). */
#ifndef PASCO_PS_CHECKPOINT_SHARD_H
#define PASCO_PS_CHECKPOINT_SHARD_H

#include <stddef.h>

#include "dyn_table.h"
#include "store.h"

/* Writes every variable of s (and its optimizer slots, as "<name>/<slot>"
 * with Keras's slot names: "m", "v", "vhat", "accumulator", ...) and every
 * dynamic table of dyn (may be NULL) to a safetensors file at rel below
 * the directory root (a descriptor; root_name names it in messages),
 * atomically and never through a symbolic link (pasci_file_write_below), from copies taken under each variable's or table's lock. A
 * table T is "T/keys" (i64 [n]), "T/values" (f32 [n, dim]), "T/last_step"
 * (i64 [n]), "T/pending_keys" and "T/pending_counts" (i64 [p]), "T/meta"
 * (i64 [6]: created, evicted_age, evicted_cap, refused, step, applies),
 * "T/slot_init" (f64 [nslots]; [0] before any update) and "T/<slot>" (f32
 * [n, dim]) for each slot its rows hold. On success *slots_json (malloc'd,
 * the caller's to free) describes the slots, tables and checksums:
 * {"slots": {"<name>": {"optimizer": "adam", "step": n, "count": k,
 * "names": ["m", "v", "vhat"]}, ...}, "dynamic": {"<table>": {"dim",
 * "rows", "pending", "optimizer" (absent before any update), "slots": [the
 * slot tensors written], "options": {"min_count", "evict_after",
 * "max_rows_per_ps", "default_zeros", "initializer": {"kind", "value",
 * "minval", "maxval", "mean", "stddev", "seed": "<decimal>"}}}, ...},
 * "crc32c": {"<tensor>": CRC-32C of its bytes, ...}}; on failure it is
 * NULL and err says why (PASCO_EEXIST: a variable is named like another's
 * slot or a table's tensor). Blocks on the file write. Thread-safe. */
int pasci_checkpoint_shard_save(ps_store *s, pasci_dyn_set *dyn, int root,
    const char *root_name, const char *rel, char **slots_json, char *err,
    size_t errlen);

/* Whether a ps whose checkpoint root is root (a resolved absolute path;
 * "" when the operator gave none) may write path: an absolute path that
 * starts with root and a '/'. On success *rel points into path at the
 * part below root, which pasci_checkpoint_shard_save walks from the
 * root's descriptor (refusing "", ".", ".." and symbolic links there:
 * nothing is resolved by path, so a directory swapped for a link between
 * this check and the write is still refused). PASCO_EPRECONDITION without
 * a root, PASCO_EPERM for a path outside it; err names the path. */
int pasci_checkpoint_path_check(const char *root, const char *path,
    const char **rel, char *err, size_t errlen);

#endif
