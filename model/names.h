/*
 * Names to indices for a model's layers and inputs (model/names.c), so a
 * model of n layers checks its names and resolves its calls in O(n), not
 * by scanning every earlier layer.
 */
#ifndef PASCI_NAMES_H
#define PASCI_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Open addressing over the names' hashes. The names are borrowed: the
 * caller keeps them alive and unchanged while they are in the table. */
typedef struct pasci_names {
	size_t       mask; /* slots - 1, a power of two minus one */
	const char **keys; /* NULL: an empty slot */
	int32_t     *vals;
} pasci_names;

/* A table for up to n names. PASCO_ENOMEM (message set) without memory. */
int pasci_names_init(pasci_names *t, size_t n);

/* Frees the table's slots (not the names). */
void pasci_names_fini(pasci_names *t);

/* name's value, into *v; false when the table has no such name. */
bool pasci_names_get(const pasci_names *t, const char *name, int32_t *v);

/* Sets name to v; *old (may be NULL) gets its previous value, and the
 * return is true, when it had one. At most n distinct names (init's). */
bool pasci_names_put(
    pasci_names *t, const char *name, int32_t v, int32_t *old);

#endif
