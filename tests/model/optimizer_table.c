/*
 * Prints the optimizer table (base/optimizer_desc.h) as JSON, for
 * tests/python/optimizer_table.py: per kind its name (pasco.optimizers.get
 * takes it), Keras's class name, its config fields in order, and the
 * config the library writes for the kind's defaults (model/compile.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "model_impl.h"
#include "optimizer_desc.h"

static cJSON *
kind_json(const pasci_opt_desc *d)
{
	cJSON *o    = cJSON_CreateObject();
	cJSON *c    = cJSON_CreateObject();
	cJSON *keys = cJSON_CreateArray();
	if (o == NULL || c == NULL || keys == NULL ||
	    !pasci_opt_config_write(c, &d->defaults)) {
		cJSON_Delete(keys);
		cJSON_Delete(c);
		cJSON_Delete(o);
		return NULL;
	}
	for (int k = 0; k < d->nfields; k++) {
		cJSON_AddItemToArray(
		    keys, cJSON_CreateString(d->fields[k].key));
	}
	cJSON_AddNumberToObject(o, "kind", d->kind);
	cJSON_AddStringToObject(o, "name", d->name);
	cJSON_AddStringToObject(o, "class_name", d->keras);
	cJSON_AddItemToObject(o, "keys", keys);
	cJSON_AddItemToObject(o, "defaults", c);
	return o;
}

int
main(void)
{
	cJSON *kinds = cJSON_CreateArray();
	char  *out;
	for (int k = 1; kinds != NULL && k < PASCI_OPT_KINDS; k++) {
		const pasci_opt_desc *d = pasci_opt_desc_of(k);
		cJSON                *o = d != NULL ? kind_json(d) : NULL;
		if (o == NULL || d->kind != (pasco_optimizer_kind) k) {
			fprintf(stderr,
			    "optimizer_table: kind %d has no descriptor of "
			    "its "
			    "own\n",
			    k);
			return 1;
		}
		cJSON_AddItemToArray(kinds, o);
	}
	if ((out = cJSON_PrintUnformatted(kinds)) == NULL) {
		fprintf(stderr, "optimizer_table: out of memory\n");
		return 1;
	}
	puts(out);
	free(out);
	cJSON_Delete(kinds);
	return 0;
}
