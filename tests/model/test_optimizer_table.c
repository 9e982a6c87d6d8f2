/* The optimizer table (base/optimizer_desc.c) as the compile config reads
 * and writes it (model/compile.c): every kind of the public enum has a
 * descriptor of its own, with Keras's class name and its fields; a config
 * that names only the class reads that kind's own defaults (the
 * constructors' too), and each kind's config reads back what its writer
 * writes, field by field. */
#include "helpers.h"
#include "model_impl.h"
#include "optimizer_desc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TestSuite(optimizer_table, .timeout = 30);

/* Whether a and b agree on every field of d. */
static bool
same_fields(const pasci_opt_desc *d, const pasco_optimizer *a,
    const pasco_optimizer *b, const char **differs)
{
	for (int i = 0; i < d->nfields; i++) {
		const pasci_opt_field *f = &d->fields[i];
		const char            *x = (const char *) a + f->off;
		const char            *y = (const char *) b + f->off;
		if (f->is_bool ? *(const bool *) x != *(const bool *) y
		               : *(const double *) x != *(const double *) y) {
			*differs = f->key;
			return false;
		}
	}
	return a->kind == b->kind;
}

/* {"class_name": d's, "config": config (taken)} read into *opt. */
static int
read_class(const pasci_opt_desc *d, cJSON *config, pasco_optimizer *opt)
{
	cJSON *o = cJSON_CreateObject();
	int    rv;
	cr_assert_not_null(o);
	cJSON_AddStringToObject(o, "class_name", d->keras);
	cJSON_AddItemToObject(o, "config", config);
	rv = pasci_opt_config_read(o, opt);
	cJSON_Delete(o);
	return rv;
}

Test(optimizer_table, every_kind_has_a_descriptor_of_its_own)
{
	cr_assert_null(pasci_opt_desc_of(0));
	cr_assert_null(pasci_opt_desc_of(PASCI_OPT_KINDS));
	cr_assert_null(pasci_opt_desc_of_class("Lion"));
	for (int k = 1; k < PASCI_OPT_KINDS; k++) {
		const pasci_opt_desc *d = pasci_opt_desc_of(k);
		cr_assert_not_null(d, "kind %d has no row in the table", k);
		cr_assert_eq(d->kind, (pasco_optimizer_kind) k,
		    "row %d holds kind %d", k, (int) d->kind);
		cr_assert(d->name != NULL && d->title != NULL &&
		              d->keras != NULL && d->nslots >= 1 &&
		              d->nfields >= 1,
		    "kind %d: its descriptor lacks a name, slots or fields",
		    k);
		cr_assert_eq(d->defaults.kind, d->kind,
		    "%s: its defaults are another kind's", d->keras);
		cr_assert(d->defaults.learning_rate > 0, "%s", d->keras);
		cr_assert_null(d->defaults.iterations, "%s", d->keras);
		cr_assert_str_eq(
		    d->fields[0].key, "learning_rate", "%s", d->keras);
		cr_assert_eq(pasci_opt_desc_named(d->name), d, "%s", d->name);
		cr_assert_eq(
		    pasci_opt_desc_of_class(d->keras), d, "%s", d->keras);
		for (int i = 0; i < d->nfields; i++) {
			for (int j = 0; j < i; j++) {
				cr_assert(
				    strcmp(d->fields[i].key,
				        d->fields[j].key) != 0 &&
				        d->fields[i].off != d->fields[j].off,
				    "%s: fields %d and %d are the same",
				    d->keras, j, i);
			}
		}
	}
}

Test(optimizer_table, a_config_naming_only_the_class_reads_its_defaults)
{
	for (int k = 1; k < PASCI_OPT_KINDS; k++) {
		const pasci_opt_desc *d       = pasci_opt_desc_of(k);
		pasco_optimizer       o       = {0};
		const char           *differs = "kind";
		PASCO_PASS(read_class(d, cJSON_CreateObject(), &o));
		cr_assert(same_fields(d, &o, &d->defaults, &differs),
		    "%s read with no fields: its %s is not its default",
		    d->keras, differs);
	}
}

Test(optimizer_table, the_constructors_start_from_the_tables_defaults)
{
	for (int k = 1; k < PASCI_OPT_KINDS; k++) {
		const pasci_opt_desc *d       = pasci_opt_desc_of(k);
		const char           *differs = "kind";
		pasco_optimizer       made, every;
		cr_assert(d->keras_default != NULL && d->every_slot != NULL,
		    "%s: its descriptor has no keras_default or every_slot",
		    d->keras);
		made  = d->keras_default();
		every = d->every_slot();
		cr_assert(same_fields(d, &made, &d->defaults, &differs),
		    "%s's constructor at Keras's arguments: its %s is not "
		    "the table's default",
		    d->keras, differs);
		cr_assert_eq(every.kind, d->kind, "%s: every_slot is kind %d",
		    d->keras, (int) every.kind);
	}
}

Test(optimizer_table, every_kind_has_its_update)
{
	for (int k = 1; k < PASCI_OPT_KINDS; k++) {
		const pasci_opt_desc *d = pasci_opt_desc_of(k);
		cr_assert(d->slot_init != NULL && d->update != NULL,
		    "%s: its descriptor has no slot_init or update", d->keras);
	}
}

Test(optimizer_table, each_kinds_reader_reads_back_what_its_writer_writes)
{
	for (int k = 1; k < PASCI_OPT_KINDS; k++) {
		const pasci_opt_desc *d   = pasci_opt_desc_of(k);
		pasco_optimizer       set = d->defaults, got = {0};
		cJSON                *c       = cJSON_CreateObject();
		const char           *differs = "kind";
		for (int i = 0; i < d->nfields;
		     i++) { /* none at its default */
			char *at = (char *) &set + d->fields[i].off;
			if (d->fields[i].is_bool) {
				*(bool *) at = !*(bool *) at;
			} else {
				*(double *) at += 0.125 * (i + 1);
			}
		}
		cr_assert(pasci_opt_config_write(c, &set), "%s", d->keras);
		cr_assert_eq(cJSON_GetArraySize(c),
		    d->nfields + PASCI_OPT_COMMON_FIELDS, "%s", d->keras);
		PASCO_PASS(read_class(d, c, &got));
		cr_assert(same_fields(d, &got, &set, &differs),
		    "%s: %s did not read back", d->keras, differs);
	}
}

Test(optimizer_table, a_field_or_class_of_no_optimizer_is_refused_naming_it)
{
	const pasci_opt_desc *sgd = pasci_opt_desc_of(PASCO_OPT_SGD);
	pasco_optimizer       o;
	cJSON                *c = cJSON_CreateObject();
	cJSON                *bad;
	cJSON_AddNumberToObject(c, "beta_1", 0.5);
	PASCO_FAIL(read_class(sgd, c, &o), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(), "SGD has no field 'beta_1'"),
	    "%s", pasco_model_last_error());
	bad = cJSON_Parse("{\"class_name\": \"Lion\"}");
	PASCO_FAIL(pasci_opt_config_read(bad, &o), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(), "unknown class_name 'Lion'"),
	    "%s", pasco_model_last_error());
	cJSON_Delete(bad);
}

/* A schedule is written as Keras serializes one, {"class_name":
 * "CosineDecay", "config": {...}} in learning_rate's place (None as
 * null), and read back the same; clipnorm and the others as null when
 * not set. */
Test(optimizer_table, a_schedule_and_the_clipping_fields_read_back)
{
	double            b[] = {10, 20}, v[] = {0.3, 0.2, 0.1};
	pasco_lr_schedule s[]   = {pasco_cosine_decay(0.1, 20, 0.1, NAN, 0),
	      pasco_cosine_decay(0.1, 20, 0.1, 0.5, 10),
	      pasco_piecewise_constant_decay(2, b, v),
	      pasco_exponential_decay(0.1, 7, 0.5, true),
	      pasco_polynomial_decay(0.3, 9, 0.01, 2.0, true),
	      pasco_inverse_time_decay(0.2, 5, 0.7, false)};
	const char       *cls[] = {"CosineDecay", "CosineDecay",
	          "PiecewiseConstantDecay", "ExponentialDecay", "PolynomialDecay",
	          "InverseTimeDecay"};
	for (size_t k = 0; k < sizeof(s) / sizeof(s[0]); k++) {
		const pasci_opt_desc *d = pasci_opt_desc_of(PASCO_OPT_ADAMW);
		pasco_optimizer set     = pasco_adamw(0.01, 0.004, false), got;
		cJSON          *c       = cJSON_CreateObject();
		const cJSON    *lr;
		set.schedule = s[k];
		set.clipnorm = k == 1 ? 2.5 : 0;
		cr_assert(pasci_opt_config_write(c, &set));
		lr = cJSON_GetObjectItemCaseSensitive(c, "learning_rate");
		cr_assert_str_eq(
		    cJSON_GetStringValue(
		        cJSON_GetObjectItemCaseSensitive(lr, "class_name")),
		    cls[k]);
		cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
		    c, k == 1 ? "clipvalue" : "clipnorm")));
		if (k == 0) {
			cr_assert(
			    cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
			        cJSON_GetObjectItemCaseSensitive(lr, "config"),
			        "warmup_target")));
		}
		PASCO_PASS(read_class(d, c, &got));
		cr_assert_eq(got.schedule.kind, s[k].kind);
		cr_assert_eq(got.clipnorm, set.clipnorm);
		for (int t = 0; t < 50; t += 3) {
			cr_assert_eq(pasco_lr_schedule_at(&got.schedule, t, 0),
			    pasco_lr_schedule_at(&s[k], t, 0), "%s at %d",
			    cls[k], t);
		}
	}
}

Test(optimizer_table, a_bad_schedule_in_a_config_is_refused_naming_it)
{
	const pasci_opt_desc *d = pasci_opt_desc_of(PASCO_OPT_SGD);
	pasco_optimizer       o;
	const char           *bad[][2] = {
	              {"{\"learning_rate\": {\"class_name\": \"StepDecay\", "
	                         "\"config\": {}}}",
	                  "got class_name 'StepDecay'"},
	              {"{\"learning_rate\": {\"class_name\": \"ExponentialDecay\", "
	                         "\"config\": {\"initial_learning_rate\": 0.1, \"decay_steps\": "
	                         "0, \"decay_rate\": 0.5}}}",
	                  "decay_steps must be > 0"},
	              {"{\"learning_rate\": {\"class_name\": \"ExponentialDecay\", "
	                         "\"config\": {\"decay_steps\": 3, \"cycle\": true}}}",
	                  "ExponentialDecay has no field 'cycle'"},
	              {"{\"learning_rate\": {\"class_name\": "
	                         "\"PiecewiseConstantDecay\", \"config\": {\"boundaries\": [1, "
	                         "2], \"values\": [1]}}}",
	                  "values (one more)"},
	              {"{\"clipnorm\": 1, \"clipvalue\": 2}", NULL},
        };
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		int rv = read_class(d, cJSON_Parse(bad[k][0]), &o);
		if (bad[k][1] == NULL) { /* read, refused at compile */
			PASCO_PASS(rv);
			PASCO_FAIL(pasci_opt_compile_check(&o), PASCO_EINVAL);
			cr_assert(strstr(pasco_model_last_error(),
			              "only one of clipnorm"),
			    "%s", pasco_model_last_error());
			continue;
		}
		PASCO_FAIL(rv, PASCO_EINVAL);
		cr_assert(strstr(pasco_model_last_error(), bad[k][1]) != NULL,
		    "%s: %s", bad[k][0], pasco_model_last_error());
	}
}

/* Keras's optimizer.learning_rate = x between epochs: the compiled
 * optimizer's rate and the config the next step sends change; a model
 * whose rate is a schedule refuses it, as Keras does. */
Test(optimizer_table, the_learning_rate_is_settable_unless_a_schedule)
{
	pasco_layer  l[] = {pasco_layer_dense(2, PASCO_ACT_LINEAR)};
	pasco_model *m;
	char        *json;
	PASCO_PASS(pasco_model_sequential(&m, 3, 1, l, 1));
	PASCO_FAIL(pasco_model_set_learning_rate(m, 0.1), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "not compiled") != NULL);
	PASCO_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){.loss = "mse",
	           .optimizer = pasco_adamw(0.01, 0.004, false)}));
	PASCO_PASS(pasco_model_set_learning_rate(m, 0.0025));
	cr_assert_eq(pasco_model_learning_rate(m, 100), 0.0025);
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(
	    strstr(json, "\"learning_rate\":0.0025") != NULL, "%s", json);
	free(json);
	PASCO_FAIL(pasco_model_set_learning_rate(m, -1), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "> 0, got -1") != NULL,
	    "%s", pasco_model_last_error());

	pasco_optimizer o = pasco_adam(0.01, false);
	o.schedule        = pasco_inverse_time_decay(0.1, 10, 1, false);
	PASCO_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){.loss = "mse", .optimizer = o}));
	cr_assert_float_eq(
	    pasco_model_learning_rate(m, 20), 0.1 / 3, 1e-15, "at 20");
	PASCO_FAIL(pasco_model_set_learning_rate(m, 0.1), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "a schedule (InverseTimeDecay), hence not settable") != NULL,
	    "%s", pasco_model_last_error());
	pasco_model_free(m);
}
