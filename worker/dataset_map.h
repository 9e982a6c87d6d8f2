/*
 * The worker's build of a files dataset ("pasco.files:{spec}"): the
 * kit's files dataset (kit/data/files_dataset.c), then what a Python
 * chief's tf.data chain adds (python/pasco/data.py): a repeat after the
 * batch ("repeat_batches"), the traced map ("map", or "map_file": the same
 * JSON in a file) and the prefetch, in that order. The spec is documented
 * in include/pasco/dataset.h.
 */
#ifndef PASCI_DATASET_MAP_H
#define PASCI_DATASET_MAP_H

#include <cjson/cJSON.h>

#include "pasco/dataset.h"

/* The dataset of spec (the JSON after "pasco.files:") for ctx, as
 * pasci_files_dataset builds it, its batches then repeated, mapped and
 * prefetched as the spec says. PASCO_EINVAL with a message (recorded as
 * pasco_dataset_fail records one) naming the field, the map's node or
 * model for a bad spec; the files dataset's errors. *out NULL on failure.
 * Thread-safe. */
int pasci_worker_files_dataset(
    const char *spec, const pasco_dataset_context *ctx, pasco_dataset **out);

/* A map read from its JSON (the spec's "map" object, include/pasco/
 * dataset.h): every node, model, input path and element leaf checked.
 * PASCO_EINVAL with pasco_dataset_fail's message ("dataset map: ...");
 * PASCO_ENOMEM. *out NULL on failure. The map is read-only once made:
 * any number of threads may run it. */
typedef struct pasci_dataset_map pasci_dataset_map;
int  pasci_dataset_map_parse(const cJSON *map, pasci_dataset_map **out);
void pasci_dataset_map_free(pasci_dataset_map *m);

/* The map of one batch: element (the files dataset's, borrowed) into
 * *result (the caller's). PASCO_EINVAL with pasco_dataset_fail's message
 * naming the input, node or model that failed. Thread-safe. */
int pasci_dataset_map_run(const pasci_dataset_map *m,
    const pasco_value *element, pasco_value **result);

#endif
