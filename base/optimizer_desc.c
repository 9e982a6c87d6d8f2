/*
 * The optimizer descriptors (optimizer_desc.h): constant tables, read by
 * any thread.
 */
#include "optimizer_desc.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

/* The slot names, and their count derived from them. */
#define SLOTS(...)                                                            \
	.slots  = {__VA_ARGS__},                                              \
	.nslots = (int) (sizeof((const char *[]){__VA_ARGS__}) /              \
	                 sizeof(const char *))

static const pasci_opt_desc descs[] = {
    [PASCO_OPT_SGD]     = {PASCO_OPT_SGD, "sgd", "SGD", SLOTS("momentum")},
    [PASCO_OPT_ADAGRAD] = {PASCO_OPT_ADAGRAD, "adagrad", "Adagrad",
        SLOTS("accumulator")},
    [PASCO_OPT_RMSPROP] = {PASCO_OPT_RMSPROP, "rmsprop", "RMSprop",
        SLOTS("rms", "momentum", "mg")},
    [PASCO_OPT_ADAM]    = {PASCO_OPT_ADAM, "adam", "Adam",
           SLOTS("m", "v", "vhat")},
    [PASCO_OPT_FTRL]    = {PASCO_OPT_FTRL, "ftrl", "FTRL",
           SLOTS("accumulator", "linear")},
};

_Static_assert(sizeof(descs) / sizeof(descs[0]) == PASCI_OPT_KINDS,
    "one descriptor per optimizer kind (PASCI_OPT_KINDS)");

const pasci_opt_desc *
pasci_opt_desc_of(int kind)
{
	return kind > 0 && kind < PASCI_OPT_KINDS && descs[kind].name != NULL
	           ? &descs[kind]
	           : NULL;
}

const pasci_opt_desc *
pasci_opt_desc_named(const char *name)
{
	for (int k = 1; name != NULL && k < PASCI_OPT_KINDS; k++) {
		if (descs[k].name != NULL &&
		    strcmp(descs[k].name, name) == 0) {
			return &descs[k];
		}
	}
	return NULL;
}

int
pasci_opt_slot_index(const pasci_opt_desc *d, const char *slot)
{
	for (int k = 0; slot != NULL && k < d->nslots; k++) {
		if (strcmp(d->slots[k], slot) == 0) {
			return k;
		}
	}
	return -1;
}

void
pasci_opt_slot_list(const pasci_opt_desc *d, char *buf, size_t len)
{
	size_t used = 0;
	if (len > 0) {
		buf[0] = 0;
	}
	for (int k = 0; k < d->nslots && used < len; k++) {
		used += (size_t) snprintf(buf + used, len - used, "%s%s",
		    k > 0 ? ", " : "", d->slots[k]);
	}
}
