/*
 * The table of optimizer descriptors (optimizer_desc.h): one row per line
 * of include/pasco/optimizer_kinds.h, which also makes the public enum, so
 * the two cannot differ; a line whose descriptor no file defines fails the
 * link, and a descriptor that is not its row's kind fails
 * tests/model/test_optimizer_table.c. Constant: any thread.
 */
#include "optimizer_desc.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "optimizers/opt_kernel.h"
#include "util.h"

/* Each defined in its file, base/optimizers/<file>.c. */
#define DECLARE(name, file)                                                   \
	extern const pasci_opt_desc pasci_opt_##file##_desc;
PASCO_OPTIMIZER_KIND_LIST(DECLARE)
#undef DECLARE

static const pasci_opt_desc *const table[] = {
#define ROW(name, file) [PASCO_OPT_##name] = &pasci_opt_##file##_desc,
    PASCO_OPTIMIZER_KIND_LIST(ROW)
#undef ROW
};

_Static_assert(sizeof(table) / sizeof(table[0]) == PASCI_OPT_KINDS,
    "one descriptor per optimizer kind (PASCI_OPT_KINDS)");

const pasci_opt_desc *
pasci_opt_desc_of(int kind)
{
	return kind > 0 && kind < PASCI_OPT_KINDS && table[kind]->name != NULL
	           ? table[kind]
	           : NULL;
}

bool
pasci_opt_decays(const pasco_optimizer *o)
{
	const pasci_opt_desc *d =
	    o != NULL ? pasci_opt_desc_of((int) o->kind) : NULL;
	return d != NULL && d->decay != NULL && o->weight_decay != 0;
}

const pasci_opt_desc *
pasci_opt_desc_named(const char *name)
{
	for (int k = 1; name != NULL && k < PASCI_OPT_KINDS; k++) {
		if (table[k]->name != NULL &&
		    strcmp(table[k]->name, name) == 0) {
			return table[k];
		}
	}
	return NULL;
}

const pasci_opt_desc *
pasci_opt_desc_of_class(const char *keras)
{
	for (int k = 1; keras != NULL && k < PASCI_OPT_KINDS; k++) {
		if (table[k]->keras != NULL &&
		    strcmp(table[k]->keras, keras) == 0) {
			return table[k];
		}
	}
	return NULL;
}

const pasci_opt_field pasci_opt_common_fields[PASCI_OPT_COMMON_FIELDS] = {
    F("clipnorm", clipnorm),
    F("clipvalue", clipvalue),
    F("global_clipnorm", global_clipnorm),
};

const pasci_opt_field *
pasci_opt_field_named(const pasci_opt_desc *d, const char *key)
{
	for (int k = 0; key != NULL && k < d->nfields; k++) {
		if (strcmp(d->fields[k].key, key) == 0) {
			return &d->fields[k];
		}
	}
	for (int k = 0; key != NULL && k < PASCI_OPT_COMMON_FIELDS; k++) {
		if (strcmp(pasci_opt_common_fields[k].key, key) == 0) {
			return &pasci_opt_common_fields[k];
		}
	}
	return NULL;
}

const char *
pasci_opt_clip_error(const pasco_optimizer *o)
{
	double c[] = {o->clipnorm, o->clipvalue, o->global_clipnorm};
	int    set = 0;
	for (int k = 0; k < 3; k++) {
		if (!(c[k] >= 0) || !isfinite(c[k])) {
			return "clipnorm, clipvalue and global_clipnorm must "
			       "be "
			       "finite numbers >= 0 (0: none)";
		}
		set += c[k] > 0;
	}
	return set > 1 ? "only one of clipnorm, clipvalue and global_clipnorm "
	                 "can be set"
	               : NULL;
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

double
pasci_opt_zero_init(const pasco_optimizer *o, int k)
{
	(void) o;
	(void) k;
	return 0;
}

double
pasci_opt_accumulator_init(const pasco_optimizer *o, int k)
{
	return k == 0 ? o->initial_accumulator_value : 0;
}
