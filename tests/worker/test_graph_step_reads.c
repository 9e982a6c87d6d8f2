/*
 * Traced steps' read nodes (worker/graph_step.c, docs/GRAPHS.md "A
 * traced step"), on 2 ps and 1 worker in this process (inproc://): a
 * variable no gradient asks for is read as a constant, and an integer
 * one (the global step) as an integer value the step may return and cast
 * into its arithmetic; a gradient asked of an integer variable is
 * refused naming it.
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

TestSuite(graph_step, .timeout = 60);

static test_cluster       TC;
static pasco_strategy    *S;
static pasco_coordinator *C;

static void
start(void)
{
	test_cluster_start(&TC, 2, 1);
	PASCO_PASS(pasco_strategy_create(&S, TC.cluster, NULL));
	PASCO_PASS(pasco_coordinator_create(&C, S, NULL));
}

static void
stop(void)
{
	pasco_coordinator_destroy(C);
	pasco_strategy_destroy(S);
	test_cluster_stop(&TC);
}

/* The global step read by a step (var 0, i64), returned and cast into a
 * loss: loss = step * sum(w * c), w trained by SGD through the global
 * step (the apply counts it after the read), c (var 2) read but never
 * differentiated. Outputs: the step, the loss, c. */
static const char *GS_STEP =
    "{\"name\": \"gs_step\","
    " \"args\": [{\"kind\": \"variable\", \"shape\": [], \"dtype\": "
    "\"int64\"},"
    "            {\"kind\": \"variable\", \"shape\": [2], \"dtype\": "
    "\"float32\"},"
    "            {\"kind\": \"variable\", \"shape\": [2], \"dtype\": "
    "\"float32\"},"
    "            {\"kind\": \"global_step\"}],"
    " \"graph\": {\"nodes\": ["
    "  {\"op\": \"read\", \"var\": 0, \"shape\": [], \"dtype\": "
    "\"int64\"},"
    "  {\"op\": \"cast\", \"in\": [0], \"shape\": [], \"dtype\": "
    "\"float32\"},"
    "  {\"op\": \"read\", \"var\": 1, \"shape\": [2], \"dtype\": "
    "\"float32\"},"
    "  {\"op\": \"read\", \"var\": 2, \"shape\": [2], \"dtype\": "
    "\"float32\"},"
    "  {\"op\": \"multiply\", \"in\": [2, 3], \"shape\": [2],"
    "   \"dtype\": \"float32\"},"
    "  {\"op\": \"reduce_sum\", \"in\": [4], \"shape\": [],"
    "   \"dtype\": \"float32\"},"
    "  {\"op\": \"multiply\", \"in\": [1, 5], \"shape\": [],"
    "   \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 1, \"in\": [6], \"shape\": [2],"
    "   \"dtype\": \"float32\"}],"
    "  \"outputs\": [0, 6, 3]},"
    " \"applies\": [{\"optimizer\": {\"class_name\": \"SGD\","
    "   \"config\": {\"learning_rate\": 0.5}},"
    "   \"grads\": [7], \"vars\": [1], \"global_step\": true}]}";

/* The same step asking a gradient of the global step itself. */
static const char *GS_GRAD_STEP =
    "{\"name\": \"gs_grad\","
    " \"args\": [{\"kind\": \"variable\", \"shape\": [], \"dtype\": "
    "\"int64\"}],"
    " \"graph\": {\"nodes\": ["
    "  {\"op\": \"read\", \"var\": 0, \"shape\": [], \"dtype\": "
    "\"int64\"},"
    "  {\"op\": \"cast\", \"in\": [0], \"shape\": [], \"dtype\": "
    "\"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 0, \"in\": [1], \"shape\": [],"
    "   \"dtype\": \"int64\"}],"
    "  \"outputs\": [1]}}";

static pasco_arg
json_arg(const char *json, pasco_tensor **t)
{
	int64_t n = (int64_t) strlen(json);
	PASCO_PASS(pasco_tensor_from(t, PASCO_U8, 1, &n, json, (size_t) n));
	return pasco_arg_tensor(*t);
}

static pasco_variable *
f32_variable(const char *name, double a, double b)
{
	pasco_tensor   *t;
	pasco_variable *v;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, (int64_t[]){2}));
	pasco_tensor_set(t, 0, a);
	pasco_tensor_set(t, 1, b);
	PASCO_PASS(pasco_variable_create(&v, S, name, t));
	pasco_tensor_release(t);
	return v;
}

static double
element(pasco_variable *v, int64_t k)
{
	pasco_tensor *t;
	double        x;
	PASCO_PASS(pasco_variable_read(v, &t));
	x = pasco_tensor_get(t, k);
	pasco_tensor_release(t);
	return x;
}

Test(graph_step, an_int64_variable_reads_as_a_constant_the_step_returns)
{
	pasco_variable     *gs, *w, *c;
	pasco_tensor       *json;
	pasco_arg           args[5];
	pasco_remote_value *r;
	const pasco_value  *v;
	double              w0 = 1, w1 = -2; /* by hand */
	start();
	PASCO_PASS(pasco_strategy_global_step(S, &gs));
	PASCO_PASS(pasco_variable_fetch_add(gs, 3, NULL)); /* from 3 */
	w       = f32_variable("w", w0, w1);
	c       = f32_variable("c", 0.5, 0.25);
	args[0] = json_arg(GS_STEP, &json);
	args[1] = pasco_arg_variable(gs);
	args[2] = pasco_arg_variable(w);
	args[3] = pasco_arg_variable(c);
	args[4] = pasco_arg_variable(gs);
	for (int64_t k = 0; k < 3; k++) {
		int64_t step = 3 + k;
		double  loss = (double) step * (w0 * 0.5 + w1 * 0.25);
		const pasco_tensor *o[3];
		PASCO_PASS(pasco_schedule(C, "pasco.graph_step", args, 5, &r));
		cr_assert_eq(pasco_remote_value_fetch(r, &v), 0,
		    "step %lld: %s", (long long) k,
		    pasco_remote_value_error(r));
		cr_assert_eq(pasco_value_size(v), 3);
		for (size_t j = 0; j < 3; j++) {
			o[j] = pasco_value_as_tensor(pasco_value_item(v, j));
			cr_assert_not_null(o[j]);
		}
		cr_assert(o[0]->dtype == PASCO_I64 && o[0]->rank == 0,
		    "the step comes back as %s",
		    pasco_dtype_name(o[0]->dtype));
		cr_assert_eq(*(const int64_t *) o[0]->data, step,
		    "step %lld read the global step %lld, want %lld",
		    (long long) k, (long long) *(const int64_t *) o[0]->data,
		    (long long) step);
		cr_assert_float_eq(pasco_tensor_get(o[1], 0), loss, 1e-5,
		    "step %lld: loss %.9g, by hand %.9g", (long long) k,
		    pasco_tensor_get(o[1], 0), loss);
		cr_assert_eq(pasco_tensor_get(o[2], 1), 0.25);
		pasco_remote_value_free(r);
		w0 -= 0.5 * (double) step * 0.5; /* d loss / d w = step * c */
		w1 -= 0.5 * (double) step * 0.25;
	}
	cr_assert_float_eq(element(w, 0), w0, 1e-5, "w[0] %.9g, by hand %.9g",
	    element(w, 0), w0);
	cr_assert_float_eq(element(w, 1), w1, 1e-5, "w[1] %.9g, by hand %.9g",
	    element(w, 1), w1);
	cr_assert_eq(element(c, 0), 0.5, "c, never differentiated, is kept");
	cr_assert_eq(element(gs, 0), 6, "one count per apply");
	pasco_tensor_release(json);
	pasco_variable_free(w);
	pasco_variable_free(c);
	pasco_variable_free(gs);
	stop();
}

Test(graph_step, a_gradient_of_an_int64_variable_is_refused_naming_it)
{
	pasco_variable     *gs;
	pasco_tensor       *json;
	pasco_arg           args[2];
	pasco_remote_value *r;
	const pasco_value  *v;
	const char         *want = "gs_grad: nodes[2] (gradient): "
	                           "'global_step' is i64: only a float "
	                           "variable is differentiated";
	start();
	PASCO_PASS(pasco_strategy_global_step(S, &gs));
	args[0] = json_arg(GS_GRAD_STEP, &json);
	args[1] = pasco_arg_variable(gs);
	PASCO_PASS(pasco_schedule(C, "pasco.graph_step", args, 2, &r));
	cr_assert_eq(pasco_remote_value_fetch(r, &v), PASCO_EINVAL);
	cr_assert(strstr(pasco_remote_value_error(r), want) != NULL, "%s",
	    pasco_remote_value_error(r));
	pasco_remote_value_free(r);
	(void) pasco_join(C);
	pasco_tensor_release(json);
	pasco_variable_free(gs);
	stop();
}
