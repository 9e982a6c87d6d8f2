/*
 * The table of layer kinds (layer_desc.h): one row per line of
 * include/pasco/layer_kinds.h, which also makes the public enum, so the
 * two cannot differ; a line whose descriptor no file defines fails the
 * link. Its length is checked against PASCO_LAYER_KIND_COUNT. Constant:
 * any thread.
 */
#include "layer_desc.h"

#include <stdio.h>
#include <string.h>

/* Each defined in its file, model/layers/<file>.c. */
#define DECLARE(name, file)                                                   \
	extern const pasci_layer_desc pasci_layer_##file##_desc;
PASCO_LAYER_KIND_LIST(DECLARE)
#undef DECLARE

static const pasci_layer_desc *const table[] = {
#define ROW(name, file) [PASCO_LAYER_##name] = &pasci_layer_##file##_desc,
    PASCO_LAYER_KIND_LIST(ROW)
#undef ROW
};

_Static_assert(sizeof(table) / sizeof(table[0]) == PASCI_LAYER_KINDS,
    "one row per layer kind (PASCO_LAYER_KIND_COUNT)");

const pasci_layer_desc *
pasci_layer_desc_of(int kind)
{
	return kind > 0 && kind < PASCI_LAYER_KINDS ? table[kind] : NULL;
}

const pasci_layer_desc *
pasci_layer_desc_named(const char *cls)
{
	for (int k = 1; cls != NULL && k < PASCI_LAYER_KINDS; k++) {
		if (table[k] != NULL &&
		    strcmp(table[k]->class_name, cls) == 0) {
			return table[k];
		}
	}
	return NULL;
}

const char *
pasci_layer_class_list(char *buf, size_t len)
{
	size_t used = 0;
	if (len > 0) {
		buf[0] = 0;
	}
	for (int k = 1; k < PASCI_LAYER_KINDS && used < len; k++) {
		used += (size_t) snprintf(buf + used, len - used, "%s%s",
		    k > 1 ? ", " : "",
		    table[k] != NULL ? table[k]->class_name : "?");
	}
	return buf;
}
