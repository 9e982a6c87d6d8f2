/* The ps side of a checkpoint: one shard file per ps (checkpoint_shard.c). */
#ifndef PASCO_PS_CHECKPOINT_SHARD_H
#define PASCO_PS_CHECKPOINT_SHARD_H

#include <stddef.h>

#include "store.h"

/* Writes every variable of s (and its optimizer slots, as "<name>/<slot>"
 * with Keras's slot names: "m", "v", "vhat", "accumulator", ...) to a
 * safetensors file at path, atomically, from copies taken under each
 * variable's lock. On success *slots_json (malloc'd, the caller's to free)
 * describes the slots and checksums: {"slots": {"<name>": {"optimizer":
 * "adam", "step": n, "count": k, "names": ["m", "v", "vhat"]}, ...},
 * "crc32c": {"<tensor>": CRC-32C of its bytes, ...}}; on failure it is
 * NULL and err says why (PASCO_EEXIST: a variable is named like another's
 * slot). Blocks on the file write. Thread-safe. */
int pasci_checkpoint_shard_save(ps_store *s, const char *path,
    char **slots_json, char *err, size_t errlen);

/* Whether a ps whose checkpoint root is root (a resolved absolute path;
 * "" when the operator gave none) may write path: an absolute path whose
 * directory exists and resolves (symbolic links followed) to root or
 * below it, and whose last part is a plain file name. PASCO_EPRECONDITION
 * without a root, PASCO_EPERM for a path outside it, PASCO_ENOTFOUND for a
 * directory that does not exist; err names the path. */
int pasci_checkpoint_path_check(
    const char *root, const char *path, char *err, size_t errlen);

#endif
