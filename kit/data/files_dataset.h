/* The library's own dataset factory: a dataset declared from files by a
 * JSON spec carried in the dataset's name ("pasco.files:{...}"), so that
 * a worker builds it with no user code (a Python chief's data, issue 23).
 * The spec is documented in include/pasco/dataset.h. */
#ifndef PASCI_FILES_DATASET_H
#define PASCI_FILES_DATASET_H

#include <stdbool.h>

#include "pasco/dataset.h"

#define PASCI_FILES_PREFIX PASCO_FILES_DATASET_PREFIX

/* Whether name is a files dataset's ("pasco.files:" then its spec).
 * Thread-safe. */
bool pasci_files_dataset_name(const char *name);

/* The dataset of spec (the JSON after the prefix) for the worker or shard
 * ctx names: files matched, sharded, shuffled, repeated, parsed and
 * batched. PASCO_EINVAL for a bad spec, PASCO_ENOTFOUND for a pattern
 * that matches no file, or the source's error, with a message naming the
 * field or file recorded as pasco_dataset_fail records one. *out is NULL
 * on failure. Thread-safe. */
int pasci_files_dataset(
    const char *spec, const pasco_dataset_context *ctx, pasco_dataset **out);

#endif
