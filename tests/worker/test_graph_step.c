/*
 * Traced steps on workers (worker/graph_step.c, "pasco.graph_step"):
 * hand-written step JSONs (docs/GRAPHS.md, "A traced step") run on 2 ps
 * and 1 worker, model_node processes on loopback (the worker program of
 * the model tests: dataset factories, no step code). A training step
 * gives the built-in pasco.model_train's losses and weights; a metric's
 * counts added by `updates` over N steps are the counts computed here in
 * one process; bad arguments, a sparse gradient taken by an op and the
 * end of the data fail with messages naming the step and the node. The
 * training, sparse and metric steps run again on a cluster in this
 * process (inproc://), so LeakSanitizer sees what the worker's step
 * leaves. In this process too: the JSON is parsed once and kept by its
 * bytes, and a bad one is refused naming the field or node.
 */
#include "graph_step.h"
#include "helpers.h"
#include "model/model_data.h"
#include "node_spawn.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TestSuite(graph_step, .timeout = 120);

#define NWORKERS 1

typedef struct cluster {
	test_cluster       tc; /* in this process (start_here) */
	bool               here;
	char               spec[512];
	pid_t              pids[2 + NWORKERS];
	pasco_cluster     *cluster;
	pasco_strategy    *s;
	pasco_coordinator *c;
} cluster;

static cluster K;

static pid_t
spawn(const char *role, int index)
{
	return test_spawn_node("PASCO_MODEL_NODE", K.spec, role, index, NULL);
}

/* 2 ps and one worker (one data stream: md_train's seed 1000), and this
 * process's strategy and coordinator. */
static void
start(void)
{
	char json[600], err[256];
	memset(&K, 0, sizeof(K));
	snprintf(K.spec, sizeof(K.spec),
	    "\"cluster\": {\"ps\": [\"127.0.0.1:%d\", \"127.0.0.1:%d\"], "
	    "\"worker\": [\"127.0.0.1:%d\"]}",
	    test_free_port(), test_free_port(), test_free_port());
	K.pids[0] = spawn("ps", 0);
	K.pids[1] = spawn("ps", 1);
	K.pids[2] = spawn("worker", 0);
	snprintf(json, sizeof(json), "{%s}", K.spec);
	PASCO_PASS(
	    pasco_cluster_parse_json(&K.cluster, json, err, sizeof(err)));
	PASCO_PASS(pasco_strategy_create(&K.s, K.cluster,
	    &(pasco_strategy_options){.connect_timeout_ms = 20000}));
	PASCO_PASS(pasco_coordinator_create(&K.c, K.s, NULL));
	pasco_layer_reset_names();
}

/* The same cluster in this process (inproc://): what the worker's step
 * leaves allocated is this process's, for LeakSanitizer. */
static void
start_here(void)
{
	memset(&K, 0, sizeof(K));
	K.here = true;
	test_cluster_start(&K.tc, 2, 1);
	PASCO_PASS(pasco_strategy_create(&K.s, K.tc.cluster, NULL));
	PASCO_PASS(pasco_coordinator_create(&K.c, K.s, NULL));
	pasco_layer_reset_names();
}

static void
stop(void)
{
	pasco_coordinator_destroy(K.c);
	pasco_strategy_destroy(K.s);
	if (K.here) {
		test_cluster_stop(&K.tc);
		return;
	}
	for (size_t i = 0; i < sizeof(K.pids) / sizeof(*K.pids); i++) {
		if (K.pids[i] > 0) {
			kill(K.pids[i], SIGKILL);
			waitpid(K.pids[i], NULL, 0);
		}
	}
	pasco_cluster_free(K.cluster);
}

/* An MLP 4 -> 16 relu -> 3 logits, its variables on the ps, compiled
 * with opt and sparse categorical crossentropy from logits. */
static pasco_model *
logits_mlp(pasco_optimizer opt)
{
	pasco_model *m;
	pasco_layer  l[] = {pasco_layer_dense(16, PASCO_ACT_RELU),
	     pasco_layer_dense(MD_CLASSES, PASCO_ACT_LINEAR)};
	PASCO_PASS(pasco_model_sequential(&m, MD_FEATURES, 2, l, 42));
	PASCO_PASS(pasco_model_compile(m,
	    &(pasco_compile_options){.loss = "sparse_categorical_crossentropy",
	        .from_logits               = true,
	        .optimizer                 = opt}));
	PASCO_PASS(pasco_model_create_variables(m, K.s));
	return m;
}

/* The step's JSON as argument 0. */
static pasco_arg
json_arg(const char *json, pasco_tensor **t)
{
	int64_t n = (int64_t) strlen(json);
	PASCO_PASS(pasco_tensor_from(t, PASCO_U8, 1, &n, json, (size_t) n));
	return pasco_arg_tensor(*t);
}

/* One schedule of the step, waited for: its result's first output (a
 * scalar) into *out; the error code otherwise, the message in err. */
static int
run_step(const pasco_arg *args, size_t n, double *out, char *err, size_t len)
{
	pasco_remote_value *r;
	const pasco_value  *v;
	int                 rv;
	PASCO_PASS(pasco_schedule(K.c, "pasco.graph_step", args, n, &r));
	rv = pasco_remote_value_fetch(r, &v);
	if (rv == 0 && out != NULL) {
		cr_assert_eq(pasco_value_kind_of(v), PASCO_VALUE_LIST);
		*out = pasco_tensor_get(
		    pasco_value_as_tensor(pasco_value_item(v, 0)), 0);
	}
	snprintf(err, len, "%s", rv != 0 ? pasco_remote_value_error(r) : "");
	pasco_remote_value_free(r);
	if (rv != 0) {
		(void) pasco_join(K.c); /* the error, raised once */
	}
	return rv;
}

/* The MLP's training step, traced by hand: the batch, the model's
 * forward pass, the loss, the gradients of its 4 variables and one SGD
 * apply through the global step; returns the loss. */
static const char *TRAIN_STEP =
    "{\"name\": \"train_step\","
    " \"args\": [{\"kind\": \"iterator\"}, {\"kind\": \"model\"},"
    "            {\"kind\": \"global_step\"}],"
    " \"graph\": {\"nodes\": ["
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 0, \"path\": [0],"
    "   \"shape\": [-1, 4], \"dtype\": \"float32\"},"
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 0, \"path\": [1],"
    "   \"shape\": [-1], \"dtype\": \"int64\"},"
    "  {\"op\": \"model\", \"arg\": 1, \"training\": true, \"in\": [0],"
    "   \"shape\": [-1, 3], \"dtype\": \"float32\"},"
    "  {\"op\": \"sparse_categorical_crossentropy\", \"from_logits\": true,"
    "   \"in\": [1, 2], \"shape\": [], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 0, \"in\": [3],"
    "   \"shape\": [4, 16], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 1, \"in\": [3],"
    "   \"shape\": [16], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 2, \"in\": [3],"
    "   \"shape\": [16, 3], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 3, \"in\": [3],"
    "   \"shape\": [3], \"dtype\": \"float32\"}],"
    "  \"outputs\": [3]},"
    " \"applies\": [{\"optimizer\": {\"class_name\": \"SGD\","
    "   \"config\": {\"learning_rate\": 0.1}},"
    "   \"grads\": [4, 5, 6, 7], \"vars\": [0, 1, 2, 3],"
    "   \"global_step\": true}]}";

#define STEPS 6

/* STEPS steps, one at a time, on m with a fresh iterator of dataset:
 * the traced step json ("pasco.graph_step"), or with json NULL the
 * built-in "pasco.model_train"; each step's loss into losses. */
static void
train(pasco_model *m, const char *dataset, const char *json, double *losses)
{
	pasco_arg                  args[16];
	size_t                     n  = 0;
	pasco_tensor              *jt = NULL;
	pasco_per_worker_dataset  *ds;
	pasco_per_worker_iterator *it;
	pasco_variable            *gs;
	char                       err[1024];
	PASCO_PASS(pasco_per_worker_dataset_create(&ds, K.c, dataset));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, ds));
	PASCO_PASS(pasco_strategy_global_step(K.s, &gs));
	if (json != NULL) {
		args[n++] = json_arg(json, &jt);
		args[n++] = pasco_arg_iterator(it);
	}
	PASCO_PASS(pasco_model_args(m, args, 16, &n));
	if (json == NULL) {
		args[n++] = pasco_arg_iterator(it);
	}
	args[n++] = pasco_arg_variable(gs);
	for (int k = 0; k < STEPS; k++) {
		if (json != NULL) {
			cr_assert_eq(
			    run_step(args, n, &losses[k], err, sizeof(err)), 0,
			    "step %d: %s", k, err);
			continue;
		}
		pasco_remote_value *r;
		const pasco_value  *v;
		PASCO_PASS(
		    pasco_schedule(K.c, "pasco.model_train", args, n, &r));
		PASCO_PASS(pasco_remote_value_fetch(r, &v));
		losses[k] = pasco_tensor_get(pasco_value_as_tensor(v), 0);
		pasco_remote_value_free(r);
	}
	pasco_variable_free(gs);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(ds);
	pasco_tensor_release(jt);
}

/* a's variables from the first on equal b's, element by element. */
static void
expect_same_weights(pasco_model *a, pasco_model *b, size_t first)
{
	pasco_tensor *va, *vb;
	for (size_t k = first; k < pasco_model_num_variables(a); k++) {
		PASCO_PASS(
		    pasco_variable_read(pasco_model_variable(a, k), &va));
		PASCO_PASS(
		    pasco_variable_read(pasco_model_variable(b, k), &vb));
		cr_assert_eq(va->count, vb->count);
		for (int64_t i = 0; i < va->count; i++) {
			cr_assert_eq(pasco_tensor_get(vb, i),
			    pasco_tensor_get(va, i),
			    "%s[%lld]: %.9g, want %.9g",
			    pasco_model_variable_name(b, k), (long long) i,
			    pasco_tensor_get(vb, i), pasco_tensor_get(va, i));
		}
		pasco_tensor_release(va);
		pasco_tensor_release(vb);
	}
}

static int64_t
global_step_now(void)
{
	pasco_variable *gs;
	pasco_tensor   *t;
	int64_t         v;
	PASCO_PASS(pasco_strategy_global_step(K.s, &gs));
	PASCO_PASS(pasco_variable_read(gs, &t));
	v = (int64_t) pasco_tensor_get(t, 0);
	pasco_tensor_release(t);
	pasco_variable_free(gs);
	return v;
}

Test(graph_step, trains_as_the_built_in_train_step)
{
	double       builtin[STEPS], traced[STEPS];
	pasco_model *a, *b;
	int64_t      gs0;
	start();
	a = logits_mlp(pasco_sgd(0.1, 0, false));
	b = logits_mlp(pasco_sgd(0.1, 0, false));
	expect_same_weights(a, b, 0); /* one model seed: one start */
	train(a, "md_train", NULL, builtin);
	gs0 = global_step_now();
	train(b, "md_train", TRAIN_STEP, traced);
	cr_assert_eq(global_step_now() - gs0, STEPS,
	    "each traced step applies through the global step once");
	for (int k = 0; k < STEPS; k++) {
		cr_assert(isfinite(builtin[k]));
		cr_assert_eq(traced[k], builtin[k],
		    "step %d: loss %.9g, the built-in step's %.9g", k,
		    traced[k], builtin[k]);
	}
	cr_assert_lt(builtin[STEPS - 1], builtin[0], "it learns");
	expect_same_weights(a, b, 0);
	pasco_model_free(a);
	pasco_model_free(b);
	stop();
}

/* md_train's stream for a worker in this process (worker 0's: seed
 * 1000), batches of MD_BATCH. */
static int
here_next(void *arg, pasco_value **out)
{
	uint64_t *next = arg;
	*out           = md_batch(1000, *next, 1, MD_BATCH, MD_FEATURES);
	*next += MD_BATCH;
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

PASCO_DATASET(graph_step_here)
{
	uint64_t *next = calloc(1, sizeof(*next));
	(void) ctx;
	if (next == NULL) {
		return PASCO_ENOMEM;
	}
	return pasco_dataset_from_generator(out, here_next, NULL, free, next);
}

/* md_keys' stream for a worker in this process (seed 1000). */
static int
here_keys_next(void *arg, pasco_value **out)
{
	uint64_t *next = arg;
	*out           = md_keys_batch(1000, *next, 1, MD_BATCH, false);
	*next += MD_BATCH;
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

PASCO_DATASET(graph_step_here_keys)
{
	uint64_t *next = calloc(1, sizeof(*next));
	(void) ctx;
	if (next == NULL) {
		return PASCO_ENOMEM;
	}
	return pasco_dataset_from_generator(
	    out, here_keys_next, NULL, free, next);
}

Test(graph_step, trains_in_this_process_as_the_built_in_step)
{
	double       builtin[STEPS], traced[STEPS];
	pasco_model *a, *b;
	start_here();
	a = logits_mlp(pasco_sgd(0.1, 0, false));
	b = logits_mlp(pasco_sgd(0.1, 0, false));
	train(a, "graph_step_here", NULL, builtin);
	train(b, "graph_step_here", TRAIN_STEP, traced);
	for (int k = 0; k < STEPS; k++) {
		cr_assert_eq(traced[k], builtin[k],
		    "step %d: loss %.9g, the built-in step's %.9g", k,
		    traced[k], builtin[k]);
	}
	expect_same_weights(a, b, 0);
	pasco_model_free(a);
	pasco_model_free(b);
	stop();
}

/* The same with a dynamic Embedding of hashed words (md_keys): its
 * gradient is sparse (the rows of the keys looked up), which the apply
 * takes as ids and rows. */
static const char *KEYS_STEP =
    "{\"name\": \"keys_step\","
    " \"args\": [{\"kind\": \"iterator\"}, {\"kind\": \"model\"},"
    "            {\"kind\": \"global_step\"}],"
    " \"graph\": {\"nodes\": ["
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 0, \"path\": [0],"
    "   \"shape\": [-1, 3], \"dtype\": \"int64\"},"
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 0, \"path\": [1],"
    "   \"shape\": [-1], \"dtype\": \"float32\"},"
    "  {\"op\": \"model\", \"arg\": 1, \"training\": true, \"in\": [0],"
    "   \"shape\": [-1, 1], \"dtype\": \"float32\"},"
    "  {\"op\": \"binary_crossentropy\", \"from_logits\": true,"
    "   \"in\": [1, 2], \"shape\": [], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 0, \"in\": [3],"
    "   \"shape\": [-1, 8], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 1, \"in\": [3],"
    "   \"shape\": [8, 1], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 2, \"in\": [3],"
    "   \"shape\": [1], \"dtype\": \"float32\"}],"
    "  \"outputs\": [3]},"
    " \"applies\": [{\"optimizer\": {\"class_name\": \"SGD\","
    "   \"config\": {\"learning_rate\": 0.5}},"
    "   \"grads\": [4, 5, 6], \"vars\": [0, 1, 2],"
    "   \"global_step\": true}]}";

/* A dynamic Embedding (8) of md_keys' 3 words, then Dense(1) logits. */
static pasco_model *
keys_model(void)
{
	pasco_model *m;
	pasco_layer  l[] = {pasco_layer_dynamic_embedding(8),
	     pasco_layer_dense(1, PASCO_ACT_LINEAR)};
	PASCO_PASS(pasco_model_sequential(&m, MD_KEYS, 2, l, 5));
	PASCO_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){.loss = "binary_crossentropy",
	           .from_logits               = true,
	           .optimizer                 = pasco_sgd(0.5, 0, false)}));
	PASCO_PASS(pasco_model_create_variables(m, K.s));
	return m;
}

/* The Dense's kernel and bias after the embedding. */
static void
dense_weights(pasco_model *m, double *w)
{
	pasco_tensor *t;
	for (size_t k = 1; k < 3; k++) {
		PASCO_PASS(
		    pasco_variable_read(pasco_model_variable(m, k), &t));
		for (int64_t i = 0; i < t->count; i++) {
			*w++ = pasco_tensor_get(t, i);
		}
		pasco_tensor_release(t);
	}
}

/* here: the cluster in this process, else processes. */
static void
sparse_apply(bool here)
{
	const char  *data = here ? "graph_step_here_keys" : "md_keys";
	double       builtin[STEPS], traced[STEPS], wa[9], wb[9];
	pasco_model *m;
	/* a cluster each: the table's rows start as a fresh table's of one
	 * name do */
	here ? start_here() : start();
	m = keys_model();
	train(m, data, NULL, builtin);
	dense_weights(m, wa);
	pasco_model_free(m);
	stop();
	here ? start_here() : start();
	m = keys_model();
	train(m, data, KEYS_STEP, traced);
	dense_weights(m, wb);
	pasco_model_free(m);
	stop();
	for (int k = 0; k < STEPS; k++) {
		cr_assert(isfinite(builtin[k]));
		cr_assert_eq(traced[k], builtin[k],
		    "step %d: loss %.9g, the built-in step's %.9g", k,
		    traced[k], builtin[k]);
	}
	cr_assert_neq(builtin[STEPS - 1], builtin[0], "it trains");
	for (int i = 0; i < 9; i++) {
		cr_assert_eq(wb[i], wa[i], "dense weight %d: %.9g, want %.9g",
		    i, wb[i], wa[i]);
	}
}

Test(graph_step, applies_an_embeddings_sparse_gradient_as_the_built_in_step)
{
	sparse_apply(false);
}

Test(graph_step, applies_a_sparse_gradient_in_this_process)
{
	sparse_apply(true);
}

/* A metric's counts as a traced step adds them (updates): per class, the
 * examples predicted right (argmax of the logits) and the examples, into
 * a variable f64 [6]; the model runs with training false and nothing is
 * applied. Returns the batch's counts. */
static const char *METRIC_STEP =
    "{\"name\": \"metric_step\","
    " \"args\": [{\"kind\": \"iterator\"}, {\"kind\": \"model\"},"
    "            {\"kind\": \"variable\", \"shape\": [6],"
    "             \"dtype\": \"float64\"}],"
    " \"graph\": {\"nodes\": ["
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 0, \"path\": [0],"
    "   \"shape\": [-1, 4], \"dtype\": \"float32\"},"
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 0, \"path\": [1],"
    "   \"shape\": [-1], \"dtype\": \"int64\"},"
    "  {\"op\": \"model\", \"arg\": 1, \"training\": false, \"in\": [0],"
    "   \"shape\": [-1, 3], \"dtype\": \"float32\"},"
    "  {\"op\": \"argmax\", \"axis\": -1, \"in\": [2],"
    "   \"shape\": [-1], \"dtype\": \"int64\"},"
    "  {\"op\": \"one_hot\", \"depth\": 3, \"in\": [3],"
    "   \"shape\": [-1, 3], \"dtype\": \"float32\"},"
    "  {\"op\": \"one_hot\", \"depth\": 3, \"in\": [1],"
    "   \"shape\": [-1, 3], \"dtype\": \"float32\"},"
    "  {\"op\": \"multiply\", \"in\": [4, 5],"
    "   \"shape\": [-1, 3], \"dtype\": \"float32\"},"
    "  {\"op\": \"reduce_sum\", \"axis\": 0, \"keepdims\": false,"
    "   \"in\": [6], \"shape\": [3], \"dtype\": \"float32\"},"
    "  {\"op\": \"reduce_sum\", \"axis\": 0, \"keepdims\": false,"
    "   \"in\": [5], \"shape\": [3], \"dtype\": \"float32\"},"
    "  {\"op\": \"concat\", \"axis\": 0, \"in\": [7, 8],"
    "   \"shape\": [6], \"dtype\": \"float32\"}],"
    "  \"outputs\": [9]},"
    " \"updates\": [{\"var\": 4, \"op\": \"assign_add\", \"value\": 9}]}";

#define METRIC_STEPS 8

/* The counts of METRIC_STEP over md_train's first n batches (worker 0's
 * stream), the model's forward pass run here, in this process. */
static void
counts_here(pasco_model *m, int n, double *counts)
{
	for (int s = 0; s < n; s++) {
		pasco_value *e = md_batch(
		    1000, (uint64_t) s * MD_BATCH, 1, MD_BATCH, MD_FEATURES);
		const pasco_tensor *x =
		    pasco_value_as_tensor(pasco_value_item(e, 0));
		const pasco_tensor *y =
		    pasco_value_as_tensor(pasco_value_item(e, 1));
		pasco_tape_var vars[4];
		pasco_tape    *tp;
		pasco_tnode   *out;
		PASCO_PASS(pasco_tape_alloc(&tp, false, 0));
		out =
		    pasco_model_call(m, tp, (const pasco_tensor *[]){x}, vars);
		cr_assert_not_null(out, "%s", pasco_tape_message(tp));
		const pasco_tensor *z = pasco_tnode_value(out);
		for (int64_t i = 0; i < MD_BATCH; i++) {
			int64_t best = 0, c = (int64_t) pasco_tensor_get(y, i);
			for (int64_t j = 1; j < MD_CLASSES; j++) {
				best =
				    pasco_tensor_get(z, i * MD_CLASSES + j) >
				            pasco_tensor_get(
				                z, i * MD_CLASSES + best)
				        ? j
				        : best;
			}
			counts[c] += best == c;
			counts[MD_CLASSES + c] += 1;
		}
		pasco_tape_free(tp);
		pasco_value_free(e);
	}
}

static void
metric_counts(bool here)
{
	pasco_arg                  args[16];
	size_t                     n = 0;
	pasco_tensor              *json, *zeros, *t;
	pasco_per_worker_dataset  *ds;
	pasco_per_worker_iterator *it;
	pasco_variable            *counts;
	pasco_remote_value        *r[METRIC_STEPS];
	const pasco_value         *v;
	double                     want[6] = {0};
	pasco_model               *m;
        here ? start_here() : start();
	m = logits_mlp(pasco_sgd(0.1, 0, false));
	PASCO_PASS(pasco_tensor_alloc(&zeros, PASCO_F64, 1, (int64_t[]){6}));
	PASCO_PASS(
	    pasco_variable_create(&counts, K.s, "accuracy/counts", zeros));
	PASCO_PASS(pasco_per_worker_dataset_create(
	    &ds, K.c, here ? "graph_step_here" : "md_train"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, ds));
	args[n++] = json_arg(METRIC_STEP, &json);
	args[n++] = pasco_arg_iterator(it);
	PASCO_PASS(pasco_model_args(m, args, 16, &n));
	args[n++] = pasco_arg_variable(counts);
	for (int k = 0; k < METRIC_STEPS; k++) { /* in flight together */
		PASCO_PASS(
		    pasco_schedule(K.c, "pasco.graph_step", args, n, &r[k]));
	}
	PASCO_PASS(pasco_join(K.c));
	for (int k = 0; k < METRIC_STEPS; k++) {
		PASCO_PASS(pasco_remote_value_fetch(r[k], &v));
		const pasco_tensor *b =
		    pasco_value_as_tensor(pasco_value_item(v, 0));
		cr_assert(b != NULL && b->count == 6 && b->dtype == PASCO_F32);
		pasco_remote_value_free(r[k]);
	}
	counts_here(m, METRIC_STEPS, want);
	PASCO_PASS(pasco_variable_read(counts, &t));
	for (int j = 0; j < 6; j++) {
		cr_assert_eq(pasco_tensor_get(t, j), want[j],
		    "counts[%d]: %g, in one process %g", j,
		    pasco_tensor_get(t, j), want[j]);
	}
	cr_assert_eq(want[3] + want[4] + want[5], METRIC_STEPS * MD_BATCH);
	pasco_tensor_release(t);
	pasco_tensor_release(zeros);
	pasco_tensor_release(json);
	pasco_variable_free(counts);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(ds);
	pasco_model_free(m);
	stop();
}

Test(graph_step, updates_sum_a_metrics_counts_over_steps)
{
	metric_counts(false);
}

Test(graph_step, updates_sum_the_counts_in_this_process)
{
	metric_counts(true);
}

/* A step's failure: its code is want and its message holds each of the
 * NULL-ended needles. */
static void
expect_failure(const pasco_arg *args, size_t n, int want, ...)
{
	char        err[1024];
	int         rv = run_step(args, n, NULL, err, sizeof(err));
	va_list     ap;
	const char *needle;
	cr_assert_eq(rv, want, "got %s, want %s: %s", pasco_errname(rv),
	    pasco_errname(want), err);
	va_start(ap, want);
	while ((needle = va_arg(ap, const char *)) != NULL) {
		cr_assert(strstr(err, needle) != NULL, "'%s' not in: %s",
		    needle, err);
	}
	va_end(ap);
}

Test(graph_step, a_bad_argument_is_named_with_its_kind_and_what_came)
{
	pasco_arg                  args[16];
	size_t                     n = 0;
	pasco_tensor              *json, *wrong;
	pasco_per_worker_dataset  *ds;
	pasco_per_worker_iterator *it;
	pasco_model               *m;
	start();
	m = logits_mlp(pasco_sgd(0.1, 0, false));
	PASCO_PASS(pasco_tensor_alloc(&wrong, PASCO_F32, 1, (int64_t[]){6}));
	PASCO_PASS(pasco_per_worker_dataset_create(&ds, K.c, "md_train"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, ds));
	args[n++] = json_arg(METRIC_STEP, &json);
	args[n++] = pasco_arg_iterator(it);
	PASCO_PASS(pasco_model_args(m, args, 16, &n));
	args[n++] = pasco_arg_tensor(wrong); /* the metric's variable */
	expect_failure(args, n, PASCO_EINVAL,
	    "metric_step: argument 7 (args[2])", "expected a variable f64[6]",
	    "got a tensor f32[6]", NULL);
	/* the model where the iterator goes */
	args[1] = args[2];
	expect_failure(args, n, PASCO_EINVAL,
	    "metric_step: argument 1 (args[0])", "expected an iterator",
	    "got a tensor u8", NULL);
	/* one argument short */
	args[1] = pasco_arg_iterator(it);
	expect_failure(args, n - 1, PASCO_EINVAL, "metric_step: args[2]",
	    "has no argument", NULL);
	pasco_tensor_release(json);
	pasco_tensor_release(wrong);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(ds);
	pasco_model_free(m);
	stop();
}

/* An embedding's gradient (sparse: the rows of the ids looked up) taken
 * by an op. */
static const char *SPARSE_STEP =
    "{\"name\": \"sparse_step\","
    " \"args\": [{\"kind\": \"iterator\"}, {\"kind\": \"model\"}],"
    " \"graph\": {\"nodes\": ["
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 0, \"path\": [0],"
    "   \"shape\": [-1, 3], \"dtype\": \"int64\"},"
    "  {\"op\": \"model\", \"arg\": 1, \"training\": true, \"in\": [0],"
    "   \"shape\": [-1, 1], \"dtype\": \"float32\"},"
    "  {\"op\": \"reduce_sum\", \"axis\": null, \"keepdims\": false,"
    "   \"in\": [1], \"shape\": [], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 0, \"in\": [2],"
    "   \"shape\": [60, 4], \"dtype\": \"float32\"},"
    "  {\"op\": \"square\", \"in\": [3],"
    "   \"shape\": [60, 4], \"dtype\": \"float32\"}],"
    "  \"outputs\": [2]}}";

Test(graph_step, a_sparse_gradient_taken_by_an_op_is_refused)
{
	pasco_arg                  args[16];
	size_t                     n = 0;
	pasco_tensor              *json;
	pasco_per_worker_dataset  *ds;
	pasco_per_worker_iterator *it;
	pasco_model               *m;
	pasco_layer                l[] = {pasco_layer_embedding(MD_WORDS, 4),
	                   pasco_layer_dense(1, PASCO_ACT_LINEAR)};
	start();
	PASCO_PASS(pasco_model_sequential(&m, 3, 2, l, 7));
	PASCO_PASS(pasco_model_create_variables(m, K.s));
	PASCO_PASS(pasco_per_worker_dataset_create(&ds, K.c, "md_train"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, ds));
	args[n++] = json_arg(SPARSE_STEP, &json);
	args[n++] = pasco_arg_iterator(it);
	PASCO_PASS(pasco_model_args(m, args, 16, &n));
	expect_failure(args, n, PASCO_EINVAL,
	    "sparse_step: nodes[4] (square) takes nodes[3] (gradient)",
	    "the sparse gradient of the embedding table "
	    "'embedding/embeddings'",
	    "only applies may take it", NULL);
	pasco_tensor_release(json);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(ds);
	pasco_model_free(m);
	stop();
}

/* Thirteen next() calls on md_eval's 12 batches (300 examples, 25 a
 * batch, one worker): the last one has none. */
static void
next_calls(char *buf, size_t len)
{
	size_t off = (size_t) snprintf(buf, len,
	    "{\"name\": \"eval_step\", \"args\": [{\"kind\": \"iterator\"}],"
	    " \"graph\": {\"nodes\": [");
	for (int k = 0; k < 13; k++) {
		off += (size_t) snprintf(buf + off, len - off,
		    "%s{\"op\": \"next\", \"arg\": 0, \"call\": %d, \"path\": "
		    "[1], \"shape\": [-1], \"dtype\": \"int64\"}",
		    k > 0 ? ", " : "", k);
	}
	snprintf(buf + off, len - off, "], \"outputs\": [12]}}");
}

Test(graph_step, the_end_of_the_data_is_out_of_range_naming_the_node)
{
	char                       step[4096];
	pasco_arg                  args[2];
	pasco_tensor              *json;
	pasco_per_worker_dataset  *ds;
	pasco_per_worker_iterator *it;
	start();
	next_calls(step, sizeof(step));
	PASCO_PASS(pasco_per_worker_dataset_create(&ds, K.c, "md_eval"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, ds));
	args[0] = json_arg(step, &json);
	args[1] = pasco_arg_iterator(it);
	expect_failure(args, 2, PASCO_EOUTOFRANGE,
	    "eval_step: nodes[12] (next)",
	    "the iterator args[0] ended at its call 12", NULL);
	pasco_tensor_release(json);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(ds);
	stop();
}

/* A step that returns nothing (TensorFlow's eval step): an empty list. */
static const char *NOTHING_STEP =
    "{\"name\": \"nothing_step\", \"args\": [{\"kind\": \"iterator\"}],"
    " \"graph\": {\"nodes\": [{\"op\": \"next\", \"arg\": 0, \"call\": 0,"
    " \"path\": [1], \"shape\": [-1], \"dtype\": \"int64\"}],"
    " \"outputs\": []}}";

Test(graph_step, a_step_that_returns_nothing_gives_an_empty_list)
{
	pasco_arg                  args[2];
	pasco_tensor              *json;
	pasco_per_worker_dataset  *ds;
	pasco_per_worker_iterator *it;
	pasco_remote_value        *r;
	const pasco_value         *v;
	start_here();
	PASCO_PASS(
	    pasco_per_worker_dataset_create(&ds, K.c, "graph_step_here"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, ds));
	args[0] = json_arg(NOTHING_STEP, &json);
	args[1] = pasco_arg_iterator(it);
	PASCO_PASS(pasco_schedule(K.c, "pasco.graph_step", args, 2, &r));
	cr_assert_eq(pasco_remote_value_fetch(r, &v), 0, "%s",
	    pasco_remote_value_error(r));
	cr_assert_eq(pasco_value_kind_of(v), PASCO_VALUE_LIST);
	cr_assert_eq(pasco_value_size(v), 0);
	pasco_remote_value_free(r);
	pasco_tensor_release(json);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(ds);
	stop();
}

/* The keys model called on two batches in one step (each of a call of
 * the iterator), the sum of their losses trained: each call looks up
 * its own words, so the table's rows are read for each call's keys and
 * its gradient joins both reads'. */
static const char *TWICE_STEP =
    "{\"name\": \"twice_step\","
    " \"args\": [{\"kind\": \"iterator\"}, {\"kind\": \"model\"},"
    "            {\"kind\": \"global_step\"}],"
    " \"graph\": {\"nodes\": ["
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 0, \"path\": [0],"
    "   \"shape\": [-1, 3], \"dtype\": \"int64\"},"
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 0, \"path\": [1],"
    "   \"shape\": [-1], \"dtype\": \"float32\"},"
    "  {\"op\": \"model\", \"arg\": 1, \"training\": true, \"in\": [0],"
    "   \"shape\": [-1, 1], \"dtype\": \"float32\"},"
    "  {\"op\": \"binary_crossentropy\", \"from_logits\": true,"
    "   \"in\": [1, 2], \"shape\": [], \"dtype\": \"float32\"},"
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 1, \"path\": [0],"
    "   \"shape\": [-1, 3], \"dtype\": \"int64\"},"
    "  {\"op\": \"next\", \"arg\": 0, \"call\": 1, \"path\": [1],"
    "   \"shape\": [-1], \"dtype\": \"float32\"},"
    "  {\"op\": \"model\", \"arg\": 1, \"training\": true, \"in\": [4],"
    "   \"shape\": [-1, 1], \"dtype\": \"float32\"},"
    "  {\"op\": \"binary_crossentropy\", \"from_logits\": true,"
    "   \"in\": [5, 6], \"shape\": [], \"dtype\": \"float32\"},"
    "  {\"op\": \"add\", \"in\": [3, 7], \"shape\": [],"
    "   \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 0, \"in\": [8],"
    "   \"shape\": [-1, 8], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 1, \"in\": [8],"
    "   \"shape\": [8, 1], \"dtype\": \"float32\"},"
    "  {\"op\": \"gradient\", \"var\": 2, \"in\": [8],"
    "   \"shape\": [1], \"dtype\": \"float32\"}],"
    "  \"outputs\": [8]},"
    " \"applies\": [{\"optimizer\": {\"class_name\": \"SGD\","
    "   \"config\": {\"learning_rate\": 0.5}},"
    "   \"grads\": [9, 10, 11], \"vars\": [0, 1, 2],"
    "   \"global_step\": true}]}";

/* The same by hand on the chief, step k of graph_step_here_keys' stream:
 * one read of the table's rows for both batches' keys, the model called
 * on each, the sum of the losses applied. */
static double
twice_by_hand(pasco_model *m, int k)
{
	pasco_value        *b[2];
	const pasco_tensor *x[2], *y[2];
	pasco_tensor       *keys;
	pasco_tape         *tp;
	pasco_tape_var      vars[3];
	pasco_tnode        *nodes[3], *loss[2], *sum;
	pasco_loss          bce = {
	             .kind = PASCO_LOSS_BINARY_CROSSENTROPY, .from_logits = true};
	pasco_optimizer opt = pasco_sgd(0.5, 0, false);
	double          value;
	for (int c = 0; c < 2; c++) {
		b[c] = md_keys_batch(1000, (uint64_t) (2 * k + c) * MD_BATCH,
		    1, MD_BATCH, false);
		cr_assert_not_null(b[c]);
		x[c] = pasco_value_as_tensor(pasco_value_item(b[c], 0));
		y[c] = pasco_value_as_tensor(pasco_value_item(b[c], 1));
	}
	PASCO_PASS(pasco_tensor_alloc(
	    &keys, PASCO_I64, 1, (int64_t[]){x[0]->count + x[1]->count}));
	memcpy(keys->data, x[0]->data, x[0]->nbytes);
	memcpy((char *) keys->data + x[0]->nbytes, x[1]->data, x[1]->nbytes);
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	for (size_t v = 0; v < 3; v++) {
		vars[v] = (pasco_tape_var){.var = pasco_model_variable(m, v),
		    .ids                        = v == 0 ? keys : NULL};
	}
	PASCO_PASS(pasco_tape_read(tp, 3, vars));
	for (size_t v = 0; v < 3; v++) {
		nodes[v] = vars[v].node;
	}
	for (int c = 0; c < 2; c++) {
		loss[c] = pasco_model_loss(
		    m, tp, (const pasco_tensor *[]){x[c]}, y[c], bce, nodes);
	}
	sum = pasco_t_add(tp, loss[0], loss[1]);
	cr_assert_not_null(sum, "%s", pasco_tape_message(tp));
	value = pasco_tensor_get(pasco_tnode_value(sum), 0);
	PASCO_PASS(pasco_tape_apply(tp, sum, 3, vars, &opt));
	pasco_tape_free(tp);
	pasco_tensor_release(keys);
	pasco_value_free(b[0]);
	pasco_value_free(b[1]);
	return value;
}

/* The rows of the first STEPS steps' keys, then the Dense's weights. */
static void
twice_weights(pasco_model *m, double *w, size_t *n)
{
	pasco_value *b =
	    md_keys_batch(1000, 0, 1, 2 * STEPS * MD_BATCH, false);
	pasco_tensor *rows;
	*n = 0;
	PASCO_PASS(pasco_variable_gather(pasco_model_variable(m, 0),
	    pasco_value_as_tensor(pasco_value_item(b, 0)), &rows));
	for (int64_t i = 0; i < rows->count; i++) {
		w[(*n)++] = pasco_tensor_get(rows, i);
	}
	pasco_tensor_release(rows);
	dense_weights(m, w + *n);
	*n += 9;
	pasco_value_free(b);
}

Test(graph_step, a_model_called_twice_reads_each_calls_rows)
{
	enum { NW = 2 * STEPS * MD_BATCH * MD_KEYS * 8 + 9 };
	static double wa[NW], wb[NW];
	double        traced[STEPS], hand[STEPS];
	size_t        na, nb;
	pasco_model  *m;
	start_here();
	m = keys_model();
	train(m, "graph_step_here_keys", TWICE_STEP, traced);
	twice_weights(m, wa, &na);
	pasco_model_free(m);
	stop();
	start_here();
	m = keys_model();
	for (int k = 0; k < STEPS; k++) {
		hand[k] = twice_by_hand(m, k);
	}
	twice_weights(m, wb, &nb);
	pasco_model_free(m);
	stop();
	cr_assert_neq(hand[STEPS - 1], hand[0], "it trains");
	for (int k = 0; k < STEPS; k++) {
		cr_assert_float_eq(traced[k], hand[k], 1e-6 * fabs(hand[k]),
		    "step %d: loss %.9g, by hand %.9g", k, traced[k], hand[k]);
	}
	cr_assert_eq(na, nb);
	for (size_t i = 0; i < na; i++) {
		cr_assert_float_eq(wa[i], wb[i], 1e-6 * (fabs(wb[i]) + 1e-3),
		    "weight %zu: %.9g, by hand %.9g", i, wa[i], wb[i]);
	}
}

/* In this process, no cluster: the step's JSON read once and kept by its
 * bytes, and what is wrong with one named. */
Test(graph_step, a_steps_json_is_parsed_once_and_kept_by_its_bytes)
{
	const pasci_gstep *a, *b;
	size_t             len = strlen(TRAIN_STEP);
	pasci_gstep_cache_reset();
	PASCO_PASS(pasci_gstep_get(TRAIN_STEP, len, &a));
	cr_assert(pasci_gstep_cache_holds(TRAIN_STEP, len));
	PASCO_PASS(pasci_gstep_get(TRAIN_STEP, len, &b));
	cr_assert_eq(a, b, "the same bytes: the kept step");
	cr_assert_str_eq(a->name, "train_step");
	cr_assert_eq(a->nargs, 3);
	cr_assert_eq(a->global_step_arg, 2);
	cr_assert_eq(a->napplies, 1);
	cr_assert_eq(a->applies[0].opt.kind, PASCO_OPT_SGD);
	cr_assert_float_eq(a->applies[0].opt.learning_rate, 0.1, 1e-12);
	cr_assert_eq(a->nodes[5].leader, 4, "one gradient call per target");
	cr_assert(a->training);
	pasci_gstep_cache_reset(); /* a step still held outlives it */
	cr_assert(!pasci_gstep_cache_holds(TRAIN_STEP, len));
	cr_assert_str_eq(b->name, "train_step");
	pasci_gstep_release(a);
	pasci_gstep_release(b);
}

/* The step TRAIN_STEP with from replaced by to: refused, the message
 * holding want. */
static void
expect_refused(const char *from, const char *to, const char *want)
{
	char               json[4096];
	const char        *at = strstr(TRAIN_STEP, from);
	const pasci_gstep *s;
	cr_assert_not_null(at, "no '%s' in the step", from);
	snprintf(json, sizeof(json), "%.*s%s%s", (int) (at - TRAIN_STEP),
	    TRAIN_STEP, to, at + strlen(from));
	PASCO_FAIL(pasci_gstep_get(json, strlen(json), &s), PASCO_EINVAL);
	cr_assert_null(s);
	cr_assert(strstr(pasco_model_last_error(), want) != NULL,
	    "'%s' not in: %s", want, pasco_model_last_error());
}

Test(graph_step, a_bad_step_is_refused_naming_what_is_wrong)
{
	expect_refused("{\"kind\": \"iterator\"}", "{\"kind\": \"queue\"}",
	    "train_step: args[0]: kind 'queue' is not iterator, model");
	expect_refused("\"arg\": 0, \"call\": 0, \"path\": [0]",
	    "\"arg\": 1, \"call\": 0, \"path\": [0]",
	    "train_step: nodes[0] (next): argument 1 is not an iterator");
	expect_refused("\"call\": 0, \"path\": [1]",
	    "\"call\": 0, \"path\": [1], \"cal\": 1",
	    "train_step: nodes[1] (next): unknown field 'cal'");
	expect_refused("\"op\": \"gradient\", \"var\": 0, \"in\": [3]",
	    "\"op\": \"gradient\", \"var\": 0, \"in\": []",
	    "nodes[4] (gradient)");
	expect_refused("\"training\": true", "\"training\": 1",
	    "train_step: nodes[2] (model): training");
	expect_refused("{\"kind\": \"global_step\"}",
	    "{\"kind\": \"tensor\", \"shape\": [], \"dtype\": \"int64\"}",
	    "train_step: applies[0]: global_step is true, and the step has "
	    "no global_step argument");
	expect_refused("\"grads\": [4, 5, 6, 7]", "\"grads\": [4, 5, 6]",
	    "train_step: applies[0]: grads and vars must be lists of one "
	    "length");
	expect_refused("\"class_name\": \"SGD\"", "\"class_name\": \"Sgd\"",
	    "train_step: applies[0]: optimizer: ");
	expect_refused(
	    "\"applies\"", "\"apply\"", "the step: unknown field 'apply'");
	expect_refused("\"name\": \"train_step\",",
	    "\"name\": \"train_step\",,", "does not parse");
	/* fuzz/regressions/graph_step/variable_arg_without_dtype: the
	 * missing dtype was read from an uninitialized pointer */
	expect_refused("{\"kind\": \"iterator\"}", "{\"kind\": \"variable\"}",
	    "train_step: args[0]: dtype '(missing)' is not float32");
}

/* A step of n tensor args, n constants and a gradient of each (every one
 * of another target): the JSON into a malloc'd string. */
static char *
wide_step(int n)
{
	size_t cap = (size_t) n * 200 + 256, len = 0;
	char  *j = malloc(cap);
	cr_assert_not_null(j);
	len += (size_t) snprintf(
	    j + len, cap - len, "{\"name\": \"wide\", \"args\": [");
	for (int k = 0; k < n; k++) {
		len += (size_t) snprintf(j + len, cap - len,
		    "%s{\"kind\": \"tensor\", \"dtype\": \"float32\", "
		    "\"shape\": []}",
		    k > 0 ? "," : "");
	}
	len += (size_t) snprintf(
	    j + len, cap - len, "], \"graph\": {\"nodes\": [");
	for (int k = 0; k < n; k++) {
		len += (size_t) snprintf(j + len, cap - len,
		    "{\"op\": \"constant\", \"value\": %d, \"shape\": [], "
		    "\"dtype\": \"float32\"},",
		    k);
	}
	for (int k = 0; k < n; k++) {
		len += (size_t) snprintf(j + len, cap - len,
		    "%s{\"op\": \"gradient\", \"var\": 0, \"in\": [%d], "
		    "\"shape\": [], \"dtype\": \"float32\"}",
		    k > 0 ? "," : "", k);
	}
	snprintf(j + len, cap - len, "], \"outputs\": [0]}}");
	return j;
}

/* A stranger's step of 100,000 args and 100,000 gradients of distinct
 * targets: read in linear time (the args were found by index from the
 * list's start, and each gradient's leader by a scan of every earlier
 * node: together 25 s and more of CPU before). */
Test(graph_step, a_step_of_many_args_and_gradients_reads_in_linear_time)
{
	char              *json = wide_step(100000);
	const pasci_gstep *s;
	clock_t            t0 = clock();
	double             cpu;
	pasci_gstep_cache_reset();
	PASCO_PASS(pasci_gstep_get(json, strlen(json), &s));
	cpu = (double) (clock() - t0) / CLOCKS_PER_SEC;
	cr_assert_eq(s->nargs, 100000);
	cr_assert_eq(s->nodes[100000 + 7].leader, 100000 + 7);
	cr_assert_lt(cpu, 8.0, "%.1f s of CPU to read the step", cpu);
	pasci_gstep_release(s);
	pasci_gstep_cache_reset();
	free(json);
}
