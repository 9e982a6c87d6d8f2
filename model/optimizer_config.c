/*
 * The optimizer of the compile config (model/compile.c): its check at
 * compile, and its JSON as Keras writes it, {"class_name": "Adam",
 * "config": {...}}, the fields from the kind's descriptor
 * (base/optimizer_desc.h) and the common ones (clipnorm, clipvalue,
 * global_clipnorm: null when not set, as Keras); a learning-rate schedule
 * as Keras serializes one, {"class_name": "ExponentialDecay", "config":
 * {...}} in place of learning_rate's number. Names no kind. Stateless:
 * any thread.
 */
#include "lr_schedule.h"
#include "model_impl.h"
#include "optimizer_desc.h"

#include <math.h>
#include <stddef.h>
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
	if (o->schedule.kind != PASCO_LR_CONSTANT) {
		if ((bad = pasco_lr_schedule_error(&o->schedule)) != NULL) {
			return pasci_model_fail(PASCO_EINVAL,
			    "compile: %s: learning_rate: %s", d->keras, bad);
		}
	} else if (!(o->learning_rate > 0)) {
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

/* A schedule's numbers as a JSON array. */
static bool
write_numbers(cJSON *c, const char *key, const double *x, int n)
{
	cJSON *a = cJSON_AddArrayToObject(c, key);
	for (int i = 0; a != NULL && i < n; i++) {
		if (!cJSON_AddItemToArray(a, cJSON_CreateNumber(x[i]))) {
			return false;
		}
	}
	return a != NULL;
}

/* opt's schedule as Keras serializes one: "learning_rate":
 * {"class_name": "ExponentialDecay", "config": {...}}. */
static bool
write_schedule(cJSON *config, const pasco_lr_schedule *s)
{
	const pasci_lr_desc *d = pasci_lr_desc_of((int) s->kind);
	cJSON               *c;
	bool                 ok;
	if (d == NULL || (c = pasci_json_class(
	                      config, "learning_rate", d->keras)) == NULL) {
		return false;
	}
	ok = !d->piecewise ||
	     (write_numbers(c, "boundaries", s->boundaries, s->nboundaries) &&
	         write_numbers(c, "values", s->values, s->nboundaries + 1));
	for (int i = 0; ok && i < d->nfields; i++) {
		const pasci_lr_field *f  = &d->fields[i];
		const char           *at = (const char *) s + f->off;
		ok                       = f->is_bool ? cJSON_AddBoolToObject(
		                                            c, f->key, *(const bool *) at) != NULL
		                           : f->nullable && isnan(*(const double *) at)
		                               ? cJSON_AddNullToObject(c, f->key) != NULL
		                               : cJSON_AddNumberToObject(
		                                     c, f->key, *(const double *) at) != NULL;
	}
	return ok && cJSON_AddStringToObject(c, "name", d->name) != NULL;
}

bool
pasci_opt_config_write(cJSON *config, const pasco_optimizer *opt)
{
	const pasci_opt_desc *d  = pasci_opt_desc_of((int) opt->kind);
	bool                  ok = d != NULL;
	for (int i = 0; ok && i < d->nfields; i++) {
		ok = i == 0 && opt->schedule.kind != PASCO_LR_CONSTANT
		         ? write_schedule(config, &opt->schedule)
		         : write_field(config, opt, &d->fields[i], false);
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

/* A JSON array of at most max numbers into x; its length, or -1. */
static int
read_numbers(const cJSON *a, double *x, int max)
{
	const cJSON *it;
	int          n = 0;
	if (!cJSON_IsArray(a)) {
		return -1;
	}
	cJSON_ArrayForEach(it, a)
	{
		if (!cJSON_IsNumber(it) || n == max) {
			return -1;
		}
		x[n++] = it->valuedouble;
	}
	return n;
}

/* Keras's boundaries and values. */
static int
read_piecewise(const cJSON *c, pasco_lr_schedule *s, const char *at)
{
	int nb =
	    read_numbers(cJSON_GetObjectItemCaseSensitive(c, "boundaries"),
	        s->boundaries, PASCO_LR_MAX_BOUNDARIES);
	int nv = read_numbers(cJSON_GetObjectItemCaseSensitive(c, "values"),
	    s->values, PASCO_LR_MAX_BOUNDARIES + 1);
	if (nb < 1 || nv != nb + 1) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: PiecewiseConstantDecay needs boundaries (1 to %d "
		    "numbers) and values (one more)",
		    at, PASCO_LR_MAX_BOUNDARIES);
	}
	s->nboundaries = nb;
	return PASCO_OK;
}

/* One key of a schedule's config. */
static int
read_schedule_field(const pasci_lr_desc *d, const cJSON *c, const cJSON *it,
    pasco_lr_schedule *s, const char *at)
{
	if (strcmp(it->string, "name") == 0 ||
	    (d->piecewise && (strcmp(it->string, "boundaries") == 0 ||
	                         strcmp(it->string, "values") == 0))) {
		return PASCO_OK;
	}
	for (int i = 0; i < d->nfields; i++) {
		const pasci_lr_field *f     = &d->fields[i];
		char                 *field = (char *) s + f->off;
		if (strcmp(f->key, it->string) != 0) {
			continue;
		}
		if (f->is_bool) {
			return pasci_json_bool(
			    c, it->string, (bool *) field, at);
		}
		if (f->nullable && cJSON_IsNull(it)) {
			*(double *) field = NAN;
			return PASCO_OK;
		}
		return pasci_json_number(
		    c, it->string, (double *) field, false, -HUGE_VAL, at);
	}
	return pasci_model_fail(PASCO_EINVAL, "%s: %s has no field '%s'", at,
	    d->keras, it->string);
}

/* "learning_rate": {"class_name": "ExponentialDecay", "config": {...}}
 * (Keras's "module" and "registered_name" may be there too). */
static int
read_schedule(const cJSON *o, pasco_lr_schedule *s)
{
	const char *at  = "compile_config: optimizer: learning_rate";
	const char *cls = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(o, "class_name"));
	const pasci_lr_desc *d = pasci_lr_desc_of_class(cls);
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "config"), *it;
	const char  *bad;
	if (d == NULL || !cJSON_IsObject(c)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "%s: expected a number or {\"class_name\": one of "
		    "ExponentialDecay, PiecewiseConstantDecay, "
		    "PolynomialDecay, "
		    "CosineDecay, InverseTimeDecay, \"config\": {...}}, got "
		    "class_name '%s'",
		    at, cls != NULL ? cls : "(none)");
	}
	for (int k = 1; k < PASCI_LR_KINDS; k++) {
		if (pasci_lr_desc_of(k) == d) {
			*s = (pasco_lr_schedule){
			    .kind              = (pasco_lr_schedule_kind) k,
			    .end_learning_rate = 0.0001,
			    .power             = 1.0,
			    .warmup_target     = NAN};
		}
	}
	if (d->piecewise && read_piecewise(c, s, at) != 0) {
		return PASCO_EINVAL;
	}
	cJSON_ArrayForEach(it, c)
	{
		if (read_schedule_field(d, c, it, s, at) != 0) {
			return PASCO_EINVAL;
		}
	}
	if ((bad = pasco_lr_schedule_error(s)) != NULL) {
		return pasci_model_fail(PASCO_EINVAL, "%s: %s", at, bad);
	}
	return PASCO_OK;
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
		if (f->off == offsetof(pasco_optimizer, learning_rate) &&
		    cJSON_IsObject(it)) {
			if (read_schedule(it, &opt->schedule) != 0) {
				return PASCO_EINVAL;
			}
			opt->learning_rate = pasco_lr_schedule_at(
			    &opt->schedule, 0, opt->learning_rate);
		} else if (read_field(c, it, f, opt, at) != 0) {
			return PASCO_EINVAL;
		}
	}
	return PASCO_OK;
}

int
pasci_lr_schedule_from_json(const char *text, pasco_lr_schedule *s)
{
	cJSON *o = cJSON_Parse(text);
	int    rv;
	if (o == NULL) {
		return pasci_model_fail(PASCO_EINVAL,
		    "learning_rate_schedule: not JSON: '%.60s'", text);
	}
	rv = read_schedule(o, s);
	cJSON_Delete(o);
	return rv;
}

char *
pasci_lr_schedule_json(const pasco_lr_schedule *s)
{
	cJSON *o = cJSON_CreateObject();
	char  *text;
	if (o == NULL || !write_schedule(o, s)) {
		cJSON_Delete(o);
		return NULL;
	}
	text = cJSON_PrintUnformatted(
	    cJSON_GetObjectItemCaseSensitive(o, "learning_rate"));
	cJSON_Delete(o);
	return text;
}

int
pasco_model_set_learning_rate(pasco_model *m, double value)
{
	if (m == NULL || !m->compile.compiled) {
		return pasci_model_fail(PASCO_EINVAL,
		    "set_learning_rate: the model is not compiled");
	}
	if (m->compile.opt.schedule.kind != PASCO_LR_CONSTANT) {
		return pasci_model_fail(PASCO_EINVAL,
		    "set_learning_rate: the optimizer's learning rate is a "
		    "schedule (%s), hence not settable",
		    pasci_lr_desc_of((int) m->compile.opt.schedule.kind)
		        ->keras);
	}
	if (!(value > 0) || !isfinite(value)) {
		return pasci_model_fail(PASCO_EINVAL,
		    "set_learning_rate: expected a finite number > 0, got %g",
		    value);
	}
	m->compile.opt.learning_rate = value;
	pasco_tensor_release(m->config); /* the next step sends the new one */
	m->config = NULL;
	return PASCO_OK;
}

double
pasco_model_learning_rate(const pasco_model *m, int64_t global_step)
{
	return pasco_lr_schedule_at(&m->compile.opt.schedule, global_step,
	    m->compile.opt.learning_rate);
}
