/*
 * Prints the layer table (model/layers/layer_desc.h) as JSON, for
 * tests/python/layer_table.py: per kind its Keras class name, automatic
 * name prefix, config fields, the fields Keras requires, and the config
 * the library writes for a layer of the kind's defaults.
 */
#include "kind_table.h"
#include "layer_desc.h"

static cJSON *
strings(const char *const *v, size_t max)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t k = 0; a != NULL && k < max && v[k] != NULL; k++) {
		cJSON_AddItemToArray(a, cJSON_CreateString(v[k]));
	}
	return a;
}

static cJSON *
kind_json(const pasci_layer_desc *d)
{
	pasco_layer l = pasci_layer_defaults(d->kind);
	cJSON      *o = cJSON_CreateObject();
	cJSON      *c = cJSON_CreateObject();
	if (o == NULL || c == NULL || !d->write(c, &l)) {
		cJSON_Delete(c);
		cJSON_Delete(o);
		return NULL;
	}
	cJSON_AddNumberToObject(o, "kind", d->kind);
	cJSON_AddStringToObject(o, "class_name", d->class_name);
	cJSON_AddStringToObject(o, "prefix", d->prefix);
	cJSON_AddItemToObject(
	    o, "keys", strings(d->keys, PASCI_LAYER_MAX_KEYS));
	cJSON_AddItemToObject(o, "args", strings(d->args, 4));
	cJSON_AddItemToObject(o, "defaults", c);
	return o;
}

static cJSON *
kind_at(int k)
{
	const pasci_layer_desc *d = pasci_layer_desc_of(k);
	return d != NULL && d->kind == (pasco_layer_kind) k ? kind_json(d)
	                                                     : NULL;
}

int
main(void)
{
	return print_kind_table("layer_table", PASCI_LAYER_KINDS, kind_at);
}
