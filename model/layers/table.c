/*
 * The table of layer kinds (layer_desc.h): one row per pasco_layer_kind,
 * its length checked against PASCO_LAYER_KIND_COUNT, so a kind added to
 * the public enum without its row does not compile. Constant: any thread.
 */
#include "layer_desc.h"

#include <stdio.h>
#include <string.h>

/* Each defined in its file, model/layers/<kind>.c. */
extern const pasci_layer_desc pasci_layer_dense_desc;
extern const pasci_layer_desc pasci_layer_embedding_desc;
extern const pasci_layer_desc pasci_layer_dropout_desc;
extern const pasci_layer_desc pasci_layer_activation_desc;
extern const pasci_layer_desc pasci_layer_concatenate_desc;
extern const pasci_layer_desc pasci_layer_normalization_desc;
extern const pasci_layer_desc pasci_layer_custom_desc;

static const pasci_layer_desc *const table[] = {
    [PASCO_LAYER_DENSE]         = &pasci_layer_dense_desc,
    [PASCO_LAYER_EMBEDDING]     = &pasci_layer_embedding_desc,
    [PASCO_LAYER_DROPOUT]       = &pasci_layer_dropout_desc,
    [PASCO_LAYER_ACTIVATION]    = &pasci_layer_activation_desc,
    [PASCO_LAYER_CONCATENATE]   = &pasci_layer_concatenate_desc,
    [PASCO_LAYER_NORMALIZATION] = &pasci_layer_normalization_desc,
    [PASCO_LAYER_CUSTOM]        = &pasci_layer_custom_desc,
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
