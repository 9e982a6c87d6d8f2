/*
 * Registries of step functions and dataset factories, filled at program
 * start by the PASCO_FUNCTION / PASCO_DATASET constructors and read by the
 * worker server; names "pasco.files:{spec}" are the library's own files
 * dataset (kit/data/files_dataset.c, with a Python chief's tf.data map:
 * worker/dataset_map.c), built with no registration. One mutex
 * guards both; lookups copy the pointer out. Also the program's own arguments
 * (pasco_program_args), kept by pasco_main before any server thread starts and
 * read-only after.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_map.h"
#include "files_dataset.h"
#include "pasco/server.h"
#include "registry.h"
#include "util.h"

typedef struct entry {
	char         *name;
	void         *fn;
	struct entry *next;
} entry;

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static entry          *functions; /* protected by registry_mu */
static entry          *datasets;  /* protected by registry_mu */

static int
registry_add(entry **list, const char *name, void *fn)
{
	entry *e;
	int    rv = PASCO_OK;
	if (name == NULL || *name == 0 || fn == NULL) {
		return PASCO_EINVAL;
	}
	pthread_mutex_lock(&registry_mu);
	for (e = *list; e != NULL; e = e->next) {
		if (strcmp(e->name, name) == 0) {
			rv = PASCO_EEXIST;
			break;
		}
	}
	if (rv == 0 && ((e = pasci_calloc(1, sizeof(*e))) == NULL ||
	                   (e->name = pasci_strdup(name)) == NULL)) {
		free(e);
		rv = PASCO_ENOMEM;
	} else if (rv == 0) {
		e->fn   = fn;
		e->next = *list;
		*list   = e;
	}
	pthread_mutex_unlock(&registry_mu);
	return rv;
}

static void *
registry_find(entry *const *list, const char *name)
{
	void *fn = NULL;
	pthread_mutex_lock(&registry_mu);
	for (const entry *e = *list; e != NULL && fn == NULL; e = e->next) {
		if (strcmp(e->name, name) == 0) {
			fn = e->fn;
		}
	}
	pthread_mutex_unlock(&registry_mu);
	return fn;
}

static char *
registry_names(entry *const *list, char *buf, size_t len)
{
	size_t n = 0;
	buf[0]   = 0;
	pthread_mutex_lock(&registry_mu);
	for (const entry *e = *list; e != NULL && n < len; e = e->next) {
		n += (size_t) snprintf(
		    buf + n, len - n, "%s%s", n ? ", " : "", e->name);
	}
	pthread_mutex_unlock(&registry_mu);
	return buf[0] ? buf : strcpy(buf, "none");
}

int
pasco_function_register(const char *name, pasco_function fn)
{
	return registry_add(&functions, name, (void *) fn);
}

int
pasco_dataset_register(const char *name, pasco_dataset_factory fn)
{
	return registry_add(&datasets, name, (void *) fn);
}

pasco_function
pasci_function_find(const char *name)
{
	pasco_function fn = pasci_model_function_find(name);
	return fn != NULL ? fn
	                  : (pasco_function) registry_find(&functions, name);
}

pasco_dataset_factory
pasci_dataset_find(const char *name)
{
	return (pasco_dataset_factory) registry_find(&datasets, name);
}

bool
pasci_dataset_known(const char *name)
{
	return pasci_files_dataset_name(name) ||
	       pasci_dataset_find(name) != NULL;
}

int
pasci_dataset_build(
    const char *name, const pasco_dataset_context *ctx, pasco_dataset **out)
{
	pasco_dataset_factory f;
	*out = NULL;
	if (pasci_files_dataset_name(name)) {
		return pasci_worker_files_dataset(
		    name + strlen(PASCI_FILES_PREFIX), ctx, out);
	}
	if ((f = pasci_dataset_find(name)) == NULL) {
		return PASCO_ENOTFOUND;
	}
	return f(ctx, out);
}

int
pasco_dataset_from_name(
    pasco_dataset **out, const char *name, int32_t shard, int32_t num_shards)
{
	pasco_dataset_context ctx = {
	    .worker_index = shard, .num_workers = num_shards};
	int rv;
	if (out == NULL) {
		return PASCO_EINVAL;
	}
	*out = NULL;
	if (name == NULL || *name == 0) {
		return pasco_dataset_fail(
		    PASCO_EINVAL, "dataset: no name given");
	}
	if (num_shards < 1 || shard < 0 || shard >= num_shards) {
		return pasco_dataset_fail(PASCO_EINVAL,
		    "dataset '%.96s': shard %d of %d is not in [0, %d)", name,
		    (int) shard, (int) num_shards, (int) num_shards);
	}
	if (!pasci_dataset_known(name)) {
		return pasco_dataset_fail(PASCO_ENOTFOUND,
		    "dataset '%.96s' is neither registered (PASCO_DATASET) "
		    "nor a \"" PASCO_FILES_DATASET_PREFIX "{spec}\" name",
		    name);
	}
	ctx.argv = pasco_program_args(&ctx.argc);
	pasco_dataset_fail(PASCO_OK, "%s", ""); /* no stale message */
	if ((rv = pasci_dataset_build(name, &ctx, out)) != 0 &&
	    *pasco_dataset_last_error() == 0) {
		pasco_dataset_fail(
		    rv, "dataset '%.96s': its factory failed", name);
	}
	return rv;
}

char *
pasci_function_names(char *buf, size_t len)
{
	return registry_names(&functions, buf, len);
}

char *
pasci_dataset_names(char *buf, size_t len)
{
	return registry_names(&datasets, buf, len);
}

/* Written once by pasco_main before it starts any thread, read after. */
static int    program_argc;
static char **program_argv;
static char  *no_args[] = {NULL};

int
pasci_program_args_set(int argc, char *const *argv)
{
	char **copy =
	    pasci_calloc((size_t) (argc > 0 ? argc : 0) + 1, sizeof(*copy));
	if (copy == NULL) {
		return PASCO_ENOMEM;
	}
	for (int i = 0; i < argc; i++) {
		copy[i] = argv[i];
	}
	free(program_argv);
	program_argv = copy;
	program_argc = argc;
	return PASCO_OK;
}

void
pasci_program_args_clear(void)
{
	free(program_argv);
	program_argv = NULL;
	program_argc = 0;
}

char *const *
pasco_program_args(int *argc)
{
	if (argc != NULL) {
		*argc = program_argv != NULL ? program_argc : 0;
	}
	return program_argv != NULL ? program_argv : no_args;
}
