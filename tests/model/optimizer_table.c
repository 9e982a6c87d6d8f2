/*
 * Prints the optimizer table (base/optimizer_desc.h) as JSON, for
 * tests/python/optimizer_table.py: per kind its name (pasco.optimizers.get
 * takes it), Keras's class name, its config fields in order (its own,
 * then the common ones: clipnorm, clipvalue, global_clipnorm), and the
 * config the library writes for the kind's defaults (model/compile.c).
 */
#include "kind_table.h"
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
	/* every key the writer writes: the kind's fields, then the
	 * common ones (clipnorm, ...) */
	for (const cJSON *it = c->child; it != NULL; it = it->next) {
		cJSON_AddItemToArray(keys, cJSON_CreateString(it->string));
	}
	cJSON_AddNumberToObject(o, "kind", d->kind);
	cJSON_AddStringToObject(o, "name", d->name);
	cJSON_AddStringToObject(o, "class_name", d->keras);
	cJSON_AddItemToObject(o, "keys", keys);
	cJSON_AddItemToObject(o, "defaults", c);
	return o;
}

static cJSON *
kind_at(int k)
{
	const pasci_opt_desc *d = pasci_opt_desc_of(k);
	return d != NULL && d->kind == (pasco_optimizer_kind) k ? kind_json(d)
	                                                         : NULL;
}

int
main(void)
{
	return print_kind_table("optimizer_table", PASCI_OPT_KINDS, kind_at);
}
