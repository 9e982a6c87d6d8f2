/* The layer table (model/layers/table.c, layer_desc.h): every kind of the
 * public enum has a descriptor of its own with every function a model
 * calls, automatic names for every kind, and each kind's config reader
 * reads back what its writer writes. */
#include "helpers.h"
#include "layer_desc.h"

#include <stdlib.h>
#include <string.h>

TestSuite(layer_table, .timeout = 30);

Test(layer_table, every_kind_has_a_descriptor_of_its_own)
{
	cr_assert_null(pasci_layer_desc_of(0));
	cr_assert_null(pasci_layer_desc_of(PASCI_LAYER_KINDS));
	cr_assert_null(pasci_layer_desc_named("NoSuchLayer"));
	for (int k = 1; k < PASCI_LAYER_KINDS; k++) {
		const pasci_layer_desc *d = pasci_layer_desc_of(k);
		cr_assert_not_null(d, "kind %d has no row in the table", k);
		cr_assert_eq(d->kind, (pasco_layer_kind) k,
		    "row %d holds %s's descriptor (kind %d)", k, d->class_name,
		    (int) d->kind);
		cr_assert(d->class_name != NULL && d->prefix != NULL &&
		              d->check != NULL && d->call != NULL &&
		              d->write != NULL && d->read != NULL,
		    "%s: its descriptor lacks a name or a function",
		    d->class_name);
		cr_assert_str_eq(d->keys[0], "name", "%s", d->class_name);
		cr_assert(d->min_inputs >= 1 &&
		              d->min_inputs <= PASCO_LAYER_MAX_INPUTS,
		    "%s", d->class_name);
		cr_assert_eq(pasci_layer_desc_named(d->class_name), d);
		for (size_t j = 0; j < 4 && d->args[j] != NULL; j++) {
			size_t n = 0;
			while (d->keys[n] != NULL &&
			       strcmp(d->keys[n], d->args[j]) != 0) {
				n++;
			}
			cr_assert_not_null(d->keys[n],
			    "%s: argument %s is no config field",
			    d->class_name, d->args[j]);
		}
	}
}

Test(layer_table, every_kind_is_named_automatically)
{
	for (int k = 1; k < PASCI_LAYER_KINDS; k++) {
		const pasci_layer_desc *d = pasci_layer_desc_of(k);
		char                    second[PASCO_LAYER_NAME_MAX];
		pasco_layer_reset_names();
		pasco_layer a = pasci_layer_named(pasci_layer_defaults(k));
		pasco_layer b = pasci_layer_named(pasci_layer_defaults(k));
		snprintf(second, sizeof(second), "%s_1", d->prefix);
		cr_assert_str_eq(a.name, d->prefix);
		cr_assert_str_eq(b.name, second);
	}
	pasco_layer_reset_names();
}

/* The config c of a layer of kind d's defaults, each required number set
 * to 1 (the defaults leave units, input_dim, ... at 0: no layer). */
static char *
written(const pasci_layer_desc *d, const pasco_layer *l)
{
	cJSON *c = cJSON_CreateObject();
	char  *s;
	cr_assert(d->write(c, l), "%s: its writer failed", d->class_name);
	for (size_t j = 0; j < 4 && d->args[j] != NULL; j++) {
		cJSON *v = cJSON_GetObjectItemCaseSensitive(c, d->args[j]);
		if (cJSON_IsNumber(v) && v->valuedouble == 0) {
			cJSON_SetNumberValue(v, 1);
		}
	}
	s = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	return s;
}

Test(layer_table, every_kinds_reader_reads_what_its_writer_writes)
{
	for (int k = 1; k < PASCI_LAYER_KINDS; k++) {
		const pasci_layer_desc *d     = pasci_layer_desc_of(k);
		pasco_layer             first = pasci_layer_defaults(k);
		/* read over zeros, not defaults: a field left unread shows */
		pasco_layer       back = {.kind = (pasco_layer_kind) k};
		pasco_partitioner part = {0};
		char             *one  = written(d, &first);
		cJSON            *c    = cJSON_Parse(one);
		char             *two;
		cr_assert_eq(d->read(c, &back, &part, d->class_name), 0,
		    "%s: %s", d->class_name, pasco_model_last_error());
		two = written(d, &back);
		pasco_layer_release(&back);
		cr_assert_str_eq(
		    two, one, "%s: read back as %s", d->class_name, two);
		cJSON_Delete(c);
		free(one);
		free(two);
	}
}
