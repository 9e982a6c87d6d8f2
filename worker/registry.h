/* Lookups in the function and dataset-factory registries. */
#ifndef PASCO_WORKER_REGISTRY_H
#define PASCO_WORKER_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "pasco/dataset.h"
#include "pasco/function.h"

pasco_function        pasci_function_find(const char *name);
pasco_dataset_factory pasci_dataset_find(const char *name);

/* Whether name can be built here: the library's files dataset
 * ("pasco.files:{spec}", kit/data/files_dataset.c) or a registered
 * factory. Thread-safe. */
bool pasci_dataset_known(const char *name);

/* Builds the dataset named name for ctx: the files dataset of the spec
 * such a name carries, else the registered factory (PASCO_ENOTFOUND when
 * there is none). The factory's message, if any, is recorded as
 * pasco_dataset_fail records one. Thread-safe (as the factory is). */
int pasci_dataset_build(
    const char *name, const pasco_dataset_context *ctx, pasco_dataset **out);

/* The library's own step functions (worker/model_steps.c:
 * "pasco.model_train", ...), or NULL. */
pasco_function pasci_model_function_find(const char *name);

/* Comma-separated registered names into buf ("none" if empty). */
char *pasci_function_names(char *buf, size_t len);
char *pasci_dataset_names(char *buf, size_t len);

/* Keeps argv[0..argc) (the array copied, the strings borrowed: main's)
 * as pasco_program_args; clear frees the copy. Not thread-safe: call
 * before any server thread starts (pasco_main). */
int  pasci_program_args_set(int argc, char *const *argv);
void pasci_program_args_clear(void);

#endif
