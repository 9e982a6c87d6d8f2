/* Lookups in the function and dataset-factory registries. */
#ifndef PASCO_WORKER_REGISTRY_H
#define PASCO_WORKER_REGISTRY_H

#include <stddef.h>

#include "pasco/dataset.h"
#include "pasco/function.h"

pasco_function        pasci_function_find(const char *name);
pasco_dataset_factory pasci_dataset_find(const char *name);

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
