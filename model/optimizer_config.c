/*
 * The optimizer of the compile config (model/compile.c): its check at
 * compile, and its JSON as Keras writes it, {"class_name": "Adam",
 * "config": {...}}, the fields from the kind's descriptor
 * (base/optimizer_desc.h) and the common ones (clipnorm, clipvalue,
 * global_clipnorm: null when not set, as Keras). Names no kind. Stateless:
 * any thread.
 */
#include "model_impl.h"
#include "optimizer_desc.h"

#include <math.h>
#include <string.h>

int
pasci_opt_compile_check(const pasco_optimizer *o)
{
	const pasci_opt_desc *d = pasci_opt_desc_of((int) o->kind);
	const char           *bad;
	if (d == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: unknown optimizer kind %d", (int) o->kind);
	}
	if (!(o->learning_rate > 0)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "compile: %s: learning_rate must be > 0, got %g", d->keras,
		    o->learning_rate);
	}
	if ((bad = pasci_opt_clip_error(o)) != NULL) {
		return pasci_model_fail(
		    PASCO_EINVAL, "compile: %s: %s", d->keras, bad);
	}
	return PASCO_OK;
}

/* One field of opt into config; a common one at 0 as null. */
static bool
write_field(cJSON *config, const pasco_optimizer *opt,
    const pasci_opt_field *f, bool null_at_zero)
{
	const char *at = (const char *) opt + f->off;
	if (f->is_bool) {
		return cJSON_AddBoolToObject(
		           config, f->key, *(const bool *) at) != NULL;
	}
	if (null_at_zero && *(const double *) at == 0) {
		return cJSON_AddNullToObject(config, f->key) != NULL;
	}
	return cJSON_AddNumberToObject(config, f->key, *(const double *) at) !=
	       NULL;
}

bool
pasci_opt_config_write(cJSON *config, const pasco_optimizer *opt)
{
	const pasci_opt_desc *d  = pasci_opt_desc_of((int) opt->kind);
	bool                  ok = d != NULL;
	for (int i = 0; ok && i < d->nfields; i++) {
		ok = write_field(config, opt, &d->fields[i], false);
	}
	for (int i = 0; ok && i < PASCI_OPT_COMMON_FIELDS; i++) {
		ok = write_field(
		    config, opt, &pasci_opt_common_fields[i], true);
	}
	return ok;
}

/* The field it of config c into opt. */
static int
read_field(const cJSON *c, const cJSON *it, const pasci_opt_field *f,
    pasco_optimizer *opt, const char *at)
{
	char *field = (char *) opt + f->off;
	if (f->is_bool) {
		return pasci_json_bool(c, it->string, (bool *) field, at);
	}
	if (cJSON_IsNull(it)) { /* Keras's None: a common field's "none" */
		*(double *) field = 0;
		return PASCO_OK;
	}
	return pasci_json_number(
	    c, it->string, (double *) field, false, -HUGE_VAL, at);
}

int
pasci_opt_config_read(const cJSON *o, pasco_optimizer *opt)
{
	const cJSON          *c, *it;
	const char           *at = "compile_config: optimizer";
	const char           *classes[PASCI_OPT_KINDS] = {NULL};
	int                   kind;
	const pasci_opt_desc *d;
	if (o == NULL) {
		*opt = pasci_opt_desc_of(PASCO_OPT_RMSPROP)->defaults;
		return PASCO_OK;
	}
	for (int k = 1; k < PASCI_OPT_KINDS; k++) {
		classes[k] = pasci_opt_desc_of(k)->keras;
	}
	if (pasci_json_read_class(
	        o, classes, PASCI_OPT_KINDS, &kind, &c, at) != 0) {
		return PASCO_EINVAL;
	}
	d    = pasci_opt_desc_of(kind);
	*opt = d->defaults;
	cJSON_ArrayForEach(it, c)
	{
		const pasci_opt_field *f =
		    pasci_opt_field_named(d, it->string);
		if (f == NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "%s: %s has no field '%s'", at, d->keras,
			    it->string);
		}
		if (read_field(c, it, f, opt, at) != 0) {
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}
