/*
 * Names to indices (names.h): linear probing over XXH64 of the name, at
 * most half full, so a lookup is O(1) on average and a model's names
 * (layers, inputs) are checked and resolved in time linear in their
 * count. One table per caller, no lock: any thread.
 */
#include "names.h"

#include "layers_impl.h"
#include "pasco/hash.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

int
pasci_names_init(pasci_names *t, size_t n)
{
	size_t slots = 16;
	while (slots < 2 * n) {
		slots *= 2;
	}
	t->mask = slots - 1;
	t->keys = pasci_calloc(slots, sizeof(*t->keys));
	t->vals = pasci_calloc(slots, sizeof(*t->vals));
	if (t->keys == NULL || t->vals == NULL) {
		pasci_names_fini(t);
		return pasci_model_fail(PASCO_ENOMEM, "out of memory");
	}
	return PASCO_OK;
}

void
pasci_names_fini(pasci_names *t)
{
	free(t->keys);
	free(t->vals);
	t->keys = NULL;
	t->vals = NULL;
}

/* The slot of name, or the empty slot where it would go. */
static size_t
names_slot(const pasci_names *t, const char *name)
{
	size_t i = (size_t) pasco_hash64(name, strlen(name), 0) & t->mask;
	while (t->keys[i] != NULL && strcmp(t->keys[i], name) != 0) {
		i = (i + 1) & t->mask;
	}
	return i;
}

bool
pasci_names_get(const pasci_names *t, const char *name, int32_t *v)
{
	size_t i = names_slot(t, name);
	if (t->keys[i] == NULL) {
		return false;
	}
	*v = t->vals[i];
	return true;
}

bool
pasci_names_put(pasci_names *t, const char *name, int32_t v, int32_t *old)
{
	size_t i   = names_slot(t, name);
	bool   had = t->keys[i] != NULL;
	if (had && old != NULL) {
		*old = t->vals[i];
	}
	t->keys[i] = name;
	t->vals[i] = v;
	return had;
}
