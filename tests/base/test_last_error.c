/*
 * pasco_last_error (base/util.c): a failing call of each family (model,
 * strategy, dataset, fit, coordinator, remote value) leaves its message
 * there on the calling thread, the same text as that family's own getter;
 * another thread's failure does not change it.
 */
#include "helpers.h"

#include <pthread.h>
#include <string.h>

#include "pasco.h"

TestSuite(last_error, .timeout = 60);

/* The family's getter says msg, and pasco_last_error says the same. */
#define EXPECT_LAST(getter, needle)                                           \
	do {                                                                  \
		const char *got_ = (getter);                                  \
		cr_assert(                                                    \
		    strstr(got_, (needle)) != NULL, "%s: %s", #getter, got_); \
		cr_assert_str_eq(pasco_last_error(), got_);                   \
	} while (0)

static pasco_model *
small_model(void)
{
	pasco_layer  l[] = {pasco_layer_dense(2, PASCO_ACT_SOFTMAX)};
	pasco_model *m   = NULL;
	PASCO_PASS(pasco_model_sequential(&m, 3, 1, l, 42));
	return m;
}

Test(last_error, each_familys_failure_is_the_threads_last_error)
{
	const char       *files[] = {"/nonexistent/pasco-data/train.csv"};
	pasco_model      *m       = small_model();
	pasco_strategy   *s       = NULL;
	pasco_dataset    *ds      = NULL;
	pasco_value      *el      = NULL;
	pasco_fit_options fo      = {.epochs = 1};

	/* model */
	cr_assert_neq(pasco_model_compile(
	                  m, &(pasco_compile_options){.loss = "no_such_loss",
	                         .optimizer = pasco_sgd(0.1, 0, false)}),
	    PASCO_OK);
	EXPECT_LAST(pasco_model_last_error(), "no_such_loss");
	/* strategy */
	PASCO_FAIL(pasco_strategy_create(&s, NULL, NULL), PASCO_EINVAL);
	EXPECT_LAST(pasco_strategy_error(NULL), "invalid cluster");
	/* dataset: a data directory that does not exist */
	if (pasco_dataset_make_csv(&ds, files, 1,
	        &(pasco_csv_dataset_options){
	            .label_name = "label", .batch_size = 2}) == PASCO_OK) {
		cr_assert_neq(pasco_dataset_next(ds, &el), PASCO_OK);
	}
	EXPECT_LAST(pasco_dataset_last_error(), "/nonexistent/pasco-data");
	pasco_dataset_free(ds);
	/* fit */
	PASCO_FAIL(pasco_fit(NULL, &fo, NULL), PASCO_EINVAL);
	EXPECT_LAST(pasco_fit_error(), "no coordinator");
	/* a call that succeeds leaves the last failure's message */
	PASCO_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){
	           .loss = "mse", .optimizer = pasco_sgd(0.1, 0, false)}));
	cr_assert(strstr(pasco_last_error(), "no coordinator") != NULL, "%s",
	    pasco_last_error());
	pasco_model_free(m);
}

Test(last_error, a_coordinators_and_a_remote_values_failure_are_the_last_error)
{
	test_cluster        tc;
	pasco_strategy     *s  = NULL;
	pasco_coordinator  *c  = NULL;
	pasco_remote_value *rv = NULL;
	const pasco_value  *v  = NULL;
	test_cluster_start(&tc, 1, 1);
	PASCO_PASS(pasco_strategy_create(&s, tc.cluster, NULL));
	PASCO_PASS(pasco_coordinator_create(&c, s, NULL));
	cr_assert_neq(pasco_schedule(c, NULL, NULL, 0, &rv), PASCO_OK);
	EXPECT_LAST(pasco_coordinator_error(c), "needs a function name");
	pasco_remote_value_free(rv);
	rv = NULL;
	/* a function no worker has: its remote value fails when fetched */
	PASCO_PASS(pasco_schedule(c, "no_such_function", NULL, 0, &rv));
	cr_assert_neq(pasco_remote_value_fetch(rv, &v), PASCO_OK);
	EXPECT_LAST(pasco_remote_value_error(rv), "no_such_function");
	pasco_remote_value_free(rv);
	pasco_coordinator_destroy(c);
	pasco_strategy_destroy(s);
	test_cluster_stop(&tc);
}

static void *
fail_elsewhere(void *arg)
{
	(void) arg;
	pasco_strategy *s = NULL;
	/* this thread's own failure, and its own last error */
	if (pasco_strategy_create(&s, NULL, NULL) == PASCO_OK ||
	    strstr(pasco_last_error(), "invalid cluster") == NULL) {
		return (void *) 1;
	}
	return NULL;
}

Test(last_error, another_threads_failure_does_not_change_it)
{
	pasco_fit_options fo = {.epochs = 1};
	pthread_t         th;
	void             *bad = (void *) 1;
	PASCO_FAIL(pasco_fit(NULL, &fo, NULL), PASCO_EINVAL);
	cr_assert_str_eq(pasco_last_error(), "pasco_fit: no coordinator");
	cr_assert_eq(pthread_create(&th, NULL, fail_elsewhere, NULL), 0);
	cr_assert_eq(pthread_join(th, &bad), 0);
	cr_assert_null(bad, "the other thread did not see its own failure");
	cr_assert_str_eq(pasco_last_error(), "pasco_fit: no coordinator");
}

Test(last_error, is_empty_on_a_thread_that_never_failed)
{
	cr_assert_str_eq(pasco_last_error(), "");
}
