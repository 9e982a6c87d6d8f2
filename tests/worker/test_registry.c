/*
 * The function and dataset-factory registries (worker/registry.c):
 * registration by name, lookups, duplicates, bad arguments, the name list a
 * worker prints for an unknown function, and registration from several
 * threads at once. Criterion runs each test in a fresh process, so each
 * starts from what the constructors registered.
 */
#include "helpers.h"

#include <pthread.h>
#include <string.h>

#include "registry.h"

TestSuite(registry, .timeout = 10);

static int
fn_a(pasco_call *call)
{
	(void) call;
	return PASCO_OK;
}

static int
fn_b(pasco_call *call)
{
	(void) call;
	return PASCO_EINTERNAL;
}

static int
factory_a(const pasco_dataset_context *ctx, pasco_dataset **out)
{
	(void) ctx;
	return pasco_dataset_range(out, 0, 3, 1);
}

/* Registered at program start by the macro, as user programs do. */
PASCO_DATASET(from_the_macro)
{
	(void) ctx;
	return pasco_dataset_range(out, 0, 1, 1);
}

Test(registry, a_registered_function_is_found_by_its_name)
{
	PASCO_PASS(pasco_function_register("train_step", fn_a));
	PASCO_PASS(pasco_function_register("eval_step", fn_b));
	cr_assert_eq(pasci_function_find("train_step"), fn_a);
	cr_assert_eq(pasci_function_find("eval_step"), fn_b);
	cr_assert_null(pasci_function_find("train"), "no prefix matches");
	cr_assert_null(pasci_function_find("TRAIN_STEP"));
	cr_assert_null(pasci_function_find(""));
}

Test(registry, a_taken_name_is_eexist_and_keeps_the_first)
{
	PASCO_PASS(pasco_function_register("step", fn_a));
	PASCO_FAIL(pasco_function_register("step", fn_b), PASCO_EEXIST);
	PASCO_FAIL(pasco_function_register("step", fn_a), PASCO_EEXIST);
	cr_assert_eq(pasci_function_find("step"), fn_a);
	PASCO_PASS(pasco_dataset_register("data", factory_a));
	PASCO_FAIL(pasco_dataset_register("data", factory_a), PASCO_EEXIST);
}

Test(registry, a_name_and_a_function_are_required)
{
	PASCO_FAIL(pasco_function_register(NULL, fn_a), PASCO_EINVAL);
	PASCO_FAIL(pasco_function_register("", fn_a), PASCO_EINVAL);
	PASCO_FAIL(pasco_function_register("f", NULL), PASCO_EINVAL);
	PASCO_FAIL(pasco_dataset_register(NULL, factory_a), PASCO_EINVAL);
	PASCO_FAIL(pasco_dataset_register("", factory_a), PASCO_EINVAL);
	PASCO_FAIL(pasco_dataset_register("d", NULL), PASCO_EINVAL);
	cr_assert_null(pasci_function_find("f"));
	cr_assert_null(pasci_dataset_find("d"));
}

Test(registry, functions_and_datasets_are_separate_namespaces)
{
	PASCO_PASS(pasco_function_register("shared", fn_a));
	PASCO_PASS(pasco_dataset_register("shared", factory_a));
	cr_assert_eq(pasci_function_find("shared"), fn_a);
	cr_assert_eq(pasci_dataset_find("shared"), factory_a);
	cr_assert_null(pasci_function_find("from_the_macro"));
}

Test(registry, the_macro_registers_at_program_start)
{
	pasco_dataset_factory f = pasci_dataset_find("from_the_macro");
	pasco_dataset        *ds;
	pasco_value          *e;
	cr_assert_not_null(f);
	PASCO_PASS(f(&(pasco_dataset_context){.worker_index = 0, .num_workers = 1}, &ds));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(pasco_value_scalar(e), 0);
	pasco_value_free(e);
	pasco_dataset_free(ds);
	/* the macro's constructor already took the name */
	PASCO_FAIL(
	    pasco_dataset_register("from_the_macro", factory_a), PASCO_EEXIST);
}

Test(registry, names_lists_every_registered_name_or_none)
{
	char buf[128];
	cr_assert_str_eq(pasci_function_names(buf, sizeof(buf)), "none");
	PASCO_PASS(pasco_function_register("alpha", fn_a));
	PASCO_PASS(pasco_function_register("beta", fn_b));
	pasci_function_names(buf, sizeof(buf));
	cr_assert(
	    strcmp(buf, "alpha, beta") == 0 || strcmp(buf, "beta, alpha") == 0,
	    "%s", buf);
	cr_assert_str_eq(
	    pasci_dataset_names(buf, sizeof(buf)), "from_the_macro");
}

Test(registry, names_are_cut_to_the_buffer_and_terminated)
{
	char buf[16];
	memset(buf, 'x', sizeof(buf));
	PASCO_PASS(
	    pasco_function_register("a_rather_long_function_name", fn_a));
	PASCO_PASS(
	    pasco_function_register("another_long_function_name", fn_b));
	pasci_function_names(buf, 12);
	cr_assert_eq(strlen(buf), 11, "%s", buf);
	cr_assert_eq(buf[12], 'x', "wrote past the given length");
}

#define NTHREADS 4
#define PER_THREAD 50

static void *
register_many(void *arg)
{
	intptr_t  id = (intptr_t) arg;
	intptr_t *ok = calloc(1, sizeof(*ok));
	char      name[32];
	for (int i = 0; i < PER_THREAD; i++) {
		snprintf(name, sizeof(name), "t%d_%d", (int) id, i);
		*ok += pasco_function_register(name, fn_a) == PASCO_OK;
		*ok += pasco_function_register("contended", fn_b) == PASCO_OK;
	}
	return ok;
}

Test(registry, concurrent_registrations_each_take_effect_once)
{
	pthread_t th[NTHREADS];
	intptr_t  total = 0;
	for (intptr_t i = 0; i < NTHREADS; i++) {
		cr_assert_eq(
		    pthread_create(&th[i], NULL, register_many, (void *) i),
		    0);
	}
	for (int i = 0; i < NTHREADS; i++) {
		intptr_t *ok;
		pthread_join(th[i], (void **) &ok);
		total += *ok;
		free(ok);
	}
	/* every distinct name once, and "contended" exactly once */
	cr_assert_eq(total, NTHREADS * PER_THREAD + 1);
	for (int t = 0; t < NTHREADS; t++) {
		for (int i = 0; i < PER_THREAD; i++) {
			char name[32];
			snprintf(name, sizeof(name), "t%d_%d", t, i);
			cr_assert_eq(
			    pasci_function_find(name), fn_a, "%s", name);
		}
	}
	cr_assert_eq(pasci_function_find("contended"), fn_b);
}
