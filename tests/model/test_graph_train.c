/*
 * Custom layers and losses trained by fit on a launched cluster (issue 32
 * item 3): this test is the chief; 1 ps and 1 worker are graph_node
 * processes (model_node's datasets, and the C layer "test_c_dense"
 * registered at start). With one worker, a window of 1 and SGD, training
 * is one sequence of steps, so a model with a Dense written as a graph
 * and a cross-entropy written as a loss graph, or with the Dense written
 * in C, has the loss curve of its built-in twin from the same seeds.
 */
#include "graph_layers.h"
#include "helpers.h"
#include "node_spawn.h"
#include "model_data.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(graph_train, .timeout = 120);

#define EPOCHS 3
#define UNITS 8

typedef struct cluster {
	char               spec[256];
	pid_t              pids[2];
	pasco_cluster     *cluster;
	pasco_strategy    *s;
	pasco_coordinator *c;
} cluster;

static cluster K;

static pid_t
spawn(const char *role)
{
	return test_spawn_node("PASCO_GRAPH_NODE", K.spec, role, 0, NULL);
}

static void
start(void)
{
	char json[300], err[256];
	memset(&K, 0, sizeof(K));
	snprintf(K.spec, sizeof(K.spec),
	    "\"cluster\": {\"ps\": [\"127.0.0.1:%d\"], "
	    "\"worker\": [\"127.0.0.1:%d\"]}",
	    test_free_port(), test_free_port());
	K.pids[0] = spawn("ps");
	K.pids[1] = spawn("worker");
	snprintf(json, sizeof(json), "{%s}", K.spec);
	PASCO_PASS(
	    pasco_cluster_parse_json(&K.cluster, json, err, sizeof(err)));
	PASCO_PASS(pasco_strategy_create(&K.s, K.cluster,
	    &(pasco_strategy_options){.connect_timeout_ms = 20000}));
	PASCO_PASS(pasco_coordinator_create(&K.c, K.s, NULL));
	PASCO_PASS(gl_register()); /* the chief makes the C layer too */
	pasco_layer_reset_names();
}

static void
stop(void)
{
	pasco_coordinator_destroy(K.c);
	pasco_strategy_destroy(K.s);
	for (int i = 0; i < 2; i++) {
		if (K.pids[i] > 0) {
			kill(K.pids[i], SIGKILL);
			waitpid(K.pids[i], NULL, 0);
		}
	}
	pasco_cluster_free(K.cluster);
}

/* Dense(UNITS, relu) on MD_FEATURES as a Custom layer's config. */
static char *
dense_layer(void)
{
	char *s = malloc(4096);
	cr_assert_not_null(s);
	snprintf(s, 4096,
	    "{\"name\": \"fc\", \"class\": \"MyDense\", \"input_widths\": "
	    "[%d],"
	    " \"output_width\": %d, \"graph\": {"
	    "\"inputs\": [{\"shape\": [-1, %d], \"dtype\": \"float32\"}],"
	    "\"weights\": ["
	    " {\"name\": \"kernel\", \"shape\": [%d, %d], \"dtype\": "
	    "\"float32\", \"initializer\": {\"class_name\": \"GlorotUniform\","
	    " \"config\": {\"seed\": 0}}, \"regularizer\": null, "
	    "\"trainable\": true},"
	    " {\"name\": \"bias\", \"shape\": [%d], \"dtype\": \"float32\","
	    " \"initializer\": {\"class_name\": \"Zeros\", \"config\": {}},"
	    " \"regularizer\": null, \"trainable\": true}],"
	    "\"nodes\": ["
	    " {\"op\": \"input\", \"index\": 0, \"shape\": [-1, %d], "
	    "\"dtype\": \"float32\"},"
	    " {\"op\": \"weight\", \"index\": 0, \"shape\": [%d, %d], "
	    "\"dtype\": \"float32\"},"
	    " {\"op\": \"weight\", \"index\": 1, \"shape\": [%d], "
	    "\"dtype\": \"float32\"},"
	    " {\"op\": \"matmul\", \"in\": [0, 1], \"transpose_a\": false,"
	    "  \"transpose_b\": false, \"shape\": [-1, %d], "
	    "\"dtype\": \"float32\"},"
	    " {\"op\": \"add\", \"in\": [3, 2], \"shape\": [-1, %d], "
	    "\"dtype\": \"float32\"},"
	    " {\"op\": \"relu\", \"in\": [4], \"shape\": [-1, %d], "
	    "\"dtype\": \"float32\"}],"
	    "\"outputs\": [5]}}",
	    MD_FEATURES, UNITS, MD_FEATURES, MD_FEATURES, UNITS, UNITS,
	    MD_FEATURES, MD_FEATURES, UNITS, UNITS, UNITS, UNITS, UNITS);
	return s;
}

/* Keras's sparse categorical cross-entropy of the class ids (int64
 * [batch]) and the softmax output, as a loss graph. */
static const char *const scce_graph =
    "{\"name\": \"my_scce\", \"graph\": {"
    "\"inputs\": [{\"shape\": [-1], \"dtype\": \"int64\"},"
    "            {\"shape\": [-1, 3], \"dtype\": \"float32\"}],"
    "\"nodes\": ["
    " {\"op\": \"input\", \"index\": 0, \"shape\": [-1], \"dtype\": "
    "\"int64\"},"
    " {\"op\": \"input\", \"index\": 1, \"shape\": [-1, 3], \"dtype\": "
    "\"float32\"},"
    " {\"op\": \"sparse_categorical_crossentropy\", \"in\": [0, 1],"
    "  \"from_logits\": false, \"shape\": [], \"dtype\": \"float32\"}],"
    "\"outputs\": [2]}}";

/* A model of first (released), then Dense(3, softmax), seed 42,
 * compiled with SGD(0.1) and the loss named, or the loss graph. */
static pasco_model *
model_on(pasco_layer first, const char *loss, const char *loss_graph)
{
	pasco_model *m;
	pasco_layer  l[] = {
	     first, pasco_layer_dense(MD_CLASSES, PASCO_ACT_SOFTMAX)};
	int rv = pasco_model_sequential(&m, MD_FEATURES, 2, l, 42);
	pasco_layer_release(&l[0]);
	cr_assert_eq(rv, 0, "%s", pasco_model_last_error());
	rv =
	    pasco_model_compile(m, &(pasco_compile_options){.loss = loss,
	                               .loss_graph                = loss_graph,
	                               .optimizer = pasco_sgd(0.1, 0, false),
	                               .metrics = (const char *[]){"accuracy"},
	                               .nmetrics = 1});
	cr_assert_eq(rv, 0, "compile: %s", pasco_model_last_error());
	return m;
}

/* fit: EPOCHS epochs of 20 steps, one at a time; each epoch's loss. */
static void
train(pasco_model *m, double *losses)
{
	pasco_history h;
	int           rv = pasco_model_fit(K.c, m,
	              &(pasco_model_fit_options){.dataset = "md_train",
	                  .epochs                         = EPOCHS,
	                  .steps_per_epoch                = 20,
	                  .window                         = 1},
	              &h);
	cr_assert_eq(rv, 0, "fit of %s: %s", pasco_model_layer(m, 0)->name,
	    pasco_model_last_error());
	cr_assert_eq(h.count, EPOCHS);
	for (int e = 0; e < EPOCHS; e++) {
		cr_assert(pasco_logs_get(&h.epochs[e], "loss", &losses[e]));
	}
	pasco_history_fini(&h);
}

static void
same_curve(const double *want, const double *got, const char *what)
{
	for (int e = 0; e < EPOCHS; e++) {
		cr_log_info("%s: epoch %d: %.9g, built-in %.9g", what, e,
		    got[e], want[e]);
		cr_assert(fabs(want[e] - got[e]) <= 1e-5 * want[e],
		    "%s: epoch %d: loss %.9g; the built-in model's %.9g", what,
		    e, got[e], want[e]);
	}
}

Test(graph_train, custom_layers_and_losses_train_as_their_builtin_twins)
{
	double      builtin[EPOCHS], graph[EPOCHS], cfn[EPOCHS];
	char       *cfg = dense_layer();
	pasco_layer fc, c;
	start();
	pasco_model *a = model_on(pasco_layer_dense(UNITS, PASCO_ACT_RELU),
	    "sparse_categorical_crossentropy", NULL);
	train(a, builtin);
	cr_assert_lt(builtin[EPOCHS - 1], builtin[0], "it learns");

	cr_assert_eq(
	    pasco_layer_graph(&fc, cfg), 0, "%s", pasco_model_last_error());
	pasco_model *b = model_on(fc, NULL, scce_graph);
	train(b, graph);
	same_curve(builtin, graph, "a graph layer and a graph loss");

	cr_assert_eq(pasco_layer_function(&c, "test_c_dense", "{\"units\": 8}",
	                 1, (int64_t[]){MD_FEATURES}),
	    0, "%s", pasco_model_last_error());
	pasco_model *d = model_on(c, "sparse_categorical_crossentropy", NULL);
	train(d, cfn);
	same_curve(builtin, cfn, "a C layer");
	pasco_model_free(a);
	pasco_model_free(b);
	pasco_model_free(d);
	free(cfg);
	stop();
}

/* A graph whose trace does not match the data fails the step on the
 * worker, which goes on serving; the chief gets the node's message. */
Test(graph_train, a_graph_that_does_not_match_the_data_fails_fit_naming_it)
{
	char       *cfg = dense_layer(), *at;
	pasco_layer fc;
	double      losses[EPOCHS];
	/* matmul traced [-1, 5]: its value is [32, 8] */
	at = strstr(cfg, "\"op\": \"matmul\"");
	cr_assert_not_null(at);
	at = strstr(at, "\"shape\": [-1, 8]");
	cr_assert_not_null(at);
	at[14] = '5';
	start();
	cr_assert_eq(pasco_layer_graph(&fc, cfg), 0, "%s",
	    pasco_model_last_error());
	pasco_model *m = model_on(fc, "sparse_categorical_crossentropy", NULL);
	int          rv = pasco_model_fit(K.c, m,
	             &(pasco_model_fit_options){.dataset = "md_train",
	                 .epochs                         = 1,
	                 .steps_per_epoch                = 2,
	                 .window                         = 1},
	             NULL);
	cr_assert_neq(rv, 0);
	cr_assert(strstr(pasco_model_last_error(),
	              "fc: nodes[3] (matmul): the value is f32[32, 8]; traced "
	              "f32[-1, 5]") != NULL,
	    "%s", pasco_model_last_error());
	pasco_model_free(m);
	/* the worker serves on: the twin model trains */
	m = model_on(pasco_layer_dense(UNITS, PASCO_ACT_RELU),
	    "sparse_categorical_crossentropy", NULL);
	train(m, losses);
	pasco_model_free(m);
	free(cfg);
	stop();
}
