/* Op graphs (model/graph.c, docs/GRAPHS.md): the reader's refusals, each
 * naming the node, its op and what was wrong; a run's shape checks. */
#include "graph.h"
#include "graph_layers.h"
#include "helpers.h"
#include "model_impl.h"
#include "tape_impl.h"

#include <cjson/cJSON.h>
#include <math.h>

/* x [-1, 4] -> relu(x @ kernel + bias) [-1, 3]: Dense(3, relu) written
 * as a graph. */
static const char *const dense_graph =
    "{\"inputs\": [{\"shape\": [-1, 4], \"dtype\": \"float32\"}],"
    " \"weights\": ["
    "  {\"name\": \"kernel\", \"shape\": [4, 3], \"dtype\": \"float32\","
    "   \"initializer\": {\"class_name\": \"GlorotUniform\","
    "                     \"config\": {\"seed\": 0}},"
    "   \"regularizer\": null, \"trainable\": true},"
    "  {\"name\": \"bias\", \"shape\": [3], \"dtype\": \"float32\","
    "   \"initializer\": {\"class_name\": \"Zeros\", \"config\": {}},"
    "   \"regularizer\": null, \"trainable\": true}],"
    " \"nodes\": ["
    "  {\"op\": \"input\", \"index\": 0, \"shape\": [-1, 4],"
    "   \"dtype\": \"float32\"},"
    "  {\"op\": \"weight\", \"index\": 0, \"shape\": [4, 3],"
    "   \"dtype\": \"float32\"},"
    "  {\"op\": \"weight\", \"index\": 1, \"shape\": [3],"
    "   \"dtype\": \"float32\"},"
    "  {\"op\": \"matmul\", \"in\": [0, 1], \"transpose_a\": false,"
    "   \"transpose_b\": false, \"shape\": [-1, 3], \"dtype\": \"float32\"},"
    "  {\"op\": \"add\", \"in\": [3, 2], \"shape\": [-1, 3],"
    "   \"dtype\": \"float32\"},"
    "  {\"op\": \"relu\", \"in\": [4], \"shape\": [-1, 3],"
    "   \"dtype\": \"float32\"}],"
    " \"outputs\": [5]}";

static cJSON *
dense_json(void)
{
	cJSON *g = cJSON_Parse(dense_graph);
	cr_assert_not_null(g);
	return g;
}

static cJSON *
node(cJSON *g, int i)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(g, "nodes"), i);
}

/* g (freed) is refused by the reader with PASCO_EINVAL and a message
 * containing want. */
static void
refused(cJSON *g, pasci_graph_kind kind, const char *want)
{
	pasci_graph *out = (pasci_graph *) 1;
	PASCO_FAIL(pasci_graph_parse(g, kind, "fc", &out), PASCO_EINVAL);
	cr_assert_null(out);
	cr_assert(strstr(pasco_model_last_error(), want) != NULL,
	    "'%s' does not say '%s'", pasco_model_last_error(), want);
	cJSON_Delete(g);
}

Test(graph, a_layers_graph_is_read_and_written_back)
{
	cJSON       *g = dense_json();
	pasci_graph *p;
	PASCO_PASS(pasci_graph_parse(g, PASCI_GRAPH_LAYER, "fc", &p));
	cr_assert_eq(pasci_graph_num_inputs(p), 1);
	cr_assert_eq(pasci_graph_num_weights(p), 2);
	cr_assert_eq(pasci_graph_num_nodes(p), 6);
	cr_assert_eq(pasci_graph_num_outputs(p), 1);
	cr_assert_str_eq(pasci_graph_weight_at(p, 1)->name, "bias");
	cr_assert_eq(
	    pasci_graph_weight_at(p, 0)->init.kind, PASCO_INIT_GLOROT_UNIFORM);
	cr_assert_str_eq(pasci_graph_node_op(p, 3), "matmul");
	cJSON *back = pasci_graph_to_json(p);
	cr_assert(cJSON_Compare(back, g, true));
	cJSON_Delete(back);
	cJSON_Delete(g);
	pasci_graph_free(p);
}

Test(graph, an_unknown_op_is_named)
{
	cJSON *g = dense_json();
	cJSON_ReplaceItemInObject(
	    node(g, 5), "op", cJSON_CreateString("relux"));
	refused(
	    g, PASCI_GRAPH_LAYER, "fc: nodes[5] (relux): unknown op 'relux'");
}

Test(graph, a_ref_to_a_later_node_is_refused)
{
	cJSON *g = dense_json();
	cJSON_ReplaceItemInObject(
	    node(g, 4), "in", cJSON_CreateIntArray((int[]){3, 5}, 2));
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: nodes[4] (add): in[1] must be an earlier node's index (< 4)");
}

Test(graph, a_bad_shape_is_refused)
{
	cJSON *g = dense_json();
	cJSON_ReplaceItemInObject(
	    node(g, 3), "shape", cJSON_CreateIntArray((int[]){-2, 3}, 2));
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: nodes[3] (matmul): shape[0] must be an integer >= -1");
	g = dense_json();
	cJSON_ReplaceItemInObject(
	    node(g, 0), "shape", cJSON_CreateIntArray((int[]){-1, 5}, 2));
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: nodes[0] (input): f32[-1, 5] but input 0 is f32[-1, 4]");
	g = dense_json();
	cJSON_ReplaceItemInObject(
	    node(g, 4), "dtype", cJSON_CreateString("float16"));
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: nodes[4] (add): dtype must be \"float32\", \"float64\"");
}

Test(graph, an_unknown_attribute_is_named)
{
	cJSON *g = dense_json();
	cJSON_AddTrueToObject(node(g, 3), "transpose");
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: nodes[3] (matmul): unknown attribute 'transpose'");
}

Test(graph, a_missing_weight_field_is_named)
{
	cJSON *g = dense_json();
	cJSON_DeleteItemFromObject(
	    cJSON_GetArrayItem(cJSON_GetObjectItem(g, "weights"), 1),
	    "initializer");
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: weights[1]: missing field 'initializer'");
}

Test(graph, weights_and_step_ops_belong_to_their_kinds)
{
	refused(dense_json(), PASCI_GRAPH_LOSS,
	    "fc: weights: only a layer's graph has weights");
	cJSON *g = dense_json();
	cJSON_ReplaceItemInObject(
	    node(g, 5), "op", cJSON_CreateString("read"));
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: nodes[5] (read): 'read' is a step's op");
}

/* x [2, 4] through the graph with kernel k and bias b; the output. */
static pasco_tnode *
run_dense(pasco_tape *tp, const pasci_graph *p, const pasco_tensor *x,
    const pasco_tensor *k, const pasco_tensor *b)
{
	pasco_tnode *w[] = {pasco_tape_watch(tp, k), pasco_tape_watch(tp, b)};
	pasci_gval   in  = {pasco_tape_constant(tp, x), NULL}, out;
	return pasci_graph_run(p, tp, "fc", &in, w, NULL, NULL, &out)
	           ? out.node
	           : NULL;
}

Test(graph, a_run_checks_each_node_against_its_traced_shape)
{
	cJSON        *g = dense_json();
	pasci_graph  *p;
	pasco_tape   *tp;
	pasco_tensor *x, *k, *b, *k5;
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){2, 4}));
	PASCO_PASS(pasco_tensor_alloc(&k, PASCO_F32, 2, (int64_t[]){4, 3}));
	PASCO_PASS(pasco_tensor_alloc(&k5, PASCO_F32, 2, (int64_t[]){4, 5}));
	PASCO_PASS(pasco_tensor_alloc(&b, PASCO_F32, 1, (int64_t[]){3}));
	for (int i = 0; i < 12; i++) {
		pasco_tensor_set(k, i, 0.1 * i - 0.5);
	}
	for (int i = 0; i < 8; i++) {
		pasco_tensor_set(x, i, i - 3);
	}
	PASCO_PASS(pasci_graph_parse(g, PASCI_GRAPH_LAYER, "fc", &p));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *y = run_dense(tp, p, x, k, b);
	cr_assert_not_null(y, "%s", pasco_tape_message(tp));
	for (int r = 0; r < 2; r++) {
		for (int c = 0; c < 3; c++) {
			double s = 0;
			for (int j = 0; j < 4; j++) {
				s += pasco_tensor_get(x, r * 4 + j) *
				     pasco_tensor_get(k, j * 3 + c);
			}
			cr_assert_float_eq(
			    pasco_tensor_get(pasco_tnode_value(y), r * 3 + c),
			    fmax(s, 0), 1e-6);
		}
	}
	pasco_tape_free(tp);
	/* a weight of another shape: the node that made it differ says so */
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	cr_assert_null(run_dense(tp, p, x, k5, b));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "fc: nodes[1] (weight): the value is f32[4, 5]; traced f32[4, 3]");
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_tensor_release(k);
	pasco_tensor_release(k5);
	pasco_tensor_release(b);
	pasci_graph_free(p);
	cJSON_Delete(g);
}

Test(graph, an_ops_failure_names_the_node)
{
	cJSON        *g = dense_json();
	pasci_graph  *p;
	pasco_tape   *tp;
	pasco_tensor *x, *k, *b;
	/* weights traced [5, 3] (as the data), the input [-1, 4]: matmul
	 * itself refuses */
	cJSON *w0 = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "weights"), 0);
	cJSON_ReplaceItemInObject(
	    w0, "shape", cJSON_CreateIntArray((int[]){5, 3}, 2));
	cJSON_ReplaceItemInObject(
	    node(g, 1), "shape", cJSON_CreateIntArray((int[]){5, 3}, 2));
	PASCO_PASS(pasci_graph_parse(g, PASCI_GRAPH_LAYER, "fc", &p));
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){2, 4}));
	PASCO_PASS(pasco_tensor_alloc(&k, PASCO_F32, 2, (int64_t[]){5, 3}));
	PASCO_PASS(pasco_tensor_alloc(&b, PASCO_F32, 1, (int64_t[]){3}));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	cr_assert_null(run_dense(tp, p, x, k, b));
	cr_assert(strncmp(pasco_tape_message(tp),
	              "fc: nodes[3] (matmul): ", 23) == 0 &&
	              strstr(pasco_tape_message(tp), "f32[2,4]") != NULL,
	    "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_tensor_release(k);
	pasco_tensor_release(b);
	pasci_graph_free(p);
	cJSON_Delete(g);
}

/* ---- custom layers and losses in models ---- */

/* expr is PASCO_OK; else the model's last error is shown. */
/* A Custom layer's config: name fc, the graph dense_graph (or with an
 * inference_graph: the same without its relu). */
static char *
custom_config(bool inference)
{
	cJSON *c = cJSON_CreateObject();
	char  *s;
	cJSON_AddStringToObject(c, "name", "fc");
	cJSON_AddStringToObject(c, "class", "MyDense");
	cJSON_AddItemToObject(
	    c, "input_widths", cJSON_CreateIntArray((int[]){4}, 1));
	cJSON_AddNumberToObject(c, "output_width", 3);
	cJSON_AddItemToObject(c, "graph", dense_json());
	if (inference) {
		cJSON *g = dense_json();
		cJSON_DeleteItemFromArray(cJSON_GetObjectItem(g, "nodes"), 5);
		cJSON_ReplaceItemInObject(
		    g, "outputs", cJSON_CreateIntArray((int[]){4}, 1));
		cJSON_AddItemToObject(c, "inference_graph", g);
	}
	s = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	return s;
}

/* A Sequential model on [batch, 4] of layer l (released), seed 7. */
static pasco_model *
one_layer_model(pasco_layer l)
{
	pasco_model *m;
	PASCO_PASS(pasco_model_sequential(&m, 4, 1, &l, 7));
	pasco_layer_release(&l);
	return m;
}

static pasco_model *
custom_model(bool inference)
{
	pasco_layer l;
	char       *cfg = custom_config(inference);
	MODEL_PASS(pasco_layer_graph(&l, cfg));
	free(cfg);
	return one_layer_model(l);
}

/* The model's variables as initialized (each initializer filled here,
 * as the ps would), watched on tp into nodes. */
static void
watch_initial(const pasco_model *m, pasco_tape *tp, pasco_tnode **nodes)
{
	for (size_t k = 0; k < pasco_model_num_variables(m); k++) {
		const int64_t    *shape;
		int32_t           r = pasco_model_variable_shape(m, k, &shape);
		pasco_initializer in = pasco_model_variable_init(m, k);
		pasco_tensor     *t;
		PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, r, shape));
		PASCO_PASS(pasco_initializer_fill(&in, t, r, shape, 0));
		nodes[k] = pasco_tape_watch(tp, t);
		pasco_tensor_release(t);
	}
}

static pasco_tensor *
batch(int64_t rows, int64_t cols, double scale)
{
	pasco_tensor *t;
	PASCO_PASS(
	    pasco_tensor_alloc(&t, PASCO_F32, 2, (int64_t[]){rows, cols}));
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(t, i, scale * sin(1.7 * (double) i + 0.3));
	}
	return t;
}

/* m's loss on (x, y) with loss, its value and its variables' gradients
 * (from their initial values) into g. */
static double
loss_and_grads(const pasco_model *m, pasco_loss loss, const pasco_tensor *x,
    const pasco_tensor *y, pasco_tape_grad *g)
{
	pasco_tape  *tp;
	pasco_tnode *nodes[2], *l;
	double       v;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	watch_initial(m, tp, nodes);
	l = pasco_model_loss(m, tp, &x, y, loss, nodes);
	cr_assert_not_null(l, "%s", pasco_tape_message(tp));
	v = pasco_tensor_get(pasco_tnode_value(l), 0);
	PASCO_PASS(pasco_tape_gradient(tp, l, 2, nodes, g));
	pasco_tape_free(tp);
	return v;
}

static void
assert_same_tensor(
    const pasco_tensor *a, const pasco_tensor *b, double tol, const char *what)
{
	cr_assert(a != NULL && b != NULL && pasco_tensor_same_spec(a, b),
	    "%s: specs differ", what);
	for (int64_t i = 0; i < a->count; i++) {
		cr_assert(fabs(pasco_tensor_get(a, i) -
		               pasco_tensor_get(b, i)) <= tol,
		    "%s[%lld]: %.9g and %.9g", what, (long long) i,
		    pasco_tensor_get(a, i), pasco_tensor_get(b, i));
	}
}

Test(graph, a_custom_layer_written_as_a_graph_is_denses_outputs_and_grads)
{
	pasco_layer_reset_names();
	pasco_model *dense =
	    one_layer_model(pasco_layer_dense(3, PASCO_ACT_RELU));
	pasco_model    *fc = custom_model(false);
	pasco_tensor   *x = batch(5, 4, 2), *y = batch(5, 3, 1);
	pasco_tape_grad gd[2], gc[2];
	pasco_loss      mse = {.kind = PASCO_LOSS_MSE, .from_logits = false};
	cr_assert_eq(pasco_model_num_variables(fc), 2);
	cr_assert_str_eq(pasco_model_variable_name(fc, 0), "fc/kernel");
	cr_assert_str_eq(pasco_model_variable_name(fc, 1), "fc/bias");
	for (size_t k = 0; k < 2; k++) {
		pasco_initializer a = pasco_model_variable_init(dense, k);
		pasco_initializer b = pasco_model_variable_init(fc, k);
		cr_assert(a.kind == b.kind && a.seed == b.seed,
		    "variable %zu starts as Dense's", k);
	}
	double ld = loss_and_grads(dense, mse, x, y, gd);
	double lc = loss_and_grads(fc, mse, x, y, gc);
	cr_assert(ld > 0 && ld == lc, "losses %.9g and %.9g", ld, lc);
	assert_same_tensor(gd[0].dense, gc[0].dense, 0, "kernel's gradient");
	assert_same_tensor(gd[1].dense, gc[1].dense, 1e-7, "bias's gradient");
	pasco_tape_grad_fini(gd, 2);
	pasco_tape_grad_fini(gc, 2);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_model_free(dense);
	pasco_model_free(fc);
}

/* A Custom layer ending in softmax gives probabilities with no
 * activation the model can see: sparse_categorical_crossentropy takes
 * Keras's own logits of them, log(clip(p / sum p)), where a built-in
 * Dense(3, softmax) goes through its logits: the same loss and
 * gradients to rounding, and compile accepts both. */
Test(graph, a_custom_layers_probabilities_take_sparse_crossentropy)
{
	pasco_layer_reset_names();
	pasco_model *dense =
	    one_layer_model(pasco_layer_dense(3, PASCO_ACT_SOFTMAX));
	char  *text = custom_config(false);
	cJSON *c    = cJSON_Parse(text), *g, *n;
	cr_assert_not_null(c);
	free(text);
	g = cJSON_GetObjectItem(c, "graph");
	n = cJSON_GetArrayItem(cJSON_GetObjectItem(g, "nodes"), 5);
	cJSON_ReplaceItemInObject(n, "op", cJSON_CreateString("softmax"));
	char       *cfg = cJSON_PrintUnformatted(c);
	pasco_layer l;
	MODEL_PASS(pasco_layer_graph(&l, cfg));
	pasco_model    *fc = one_layer_model(l);
	pasco_tensor   *x  = batch(5, 4, 2), *y;
	pasco_tape_grad gd[2], gc[2];
	pasco_loss sce = {.kind = PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
	    .from_logits        = false};
	PASCO_PASS(pasco_tensor_from(&y, PASCO_I64, 1, (int64_t[]){5},
	    (int64_t[]){0, 2, 1, 1, 0}, 5 * sizeof(int64_t)));
	MODEL_PASS(pasco_model_compile(fc,
	    &(pasco_compile_options){.loss = "sparse_categorical_crossentropy",
	        .optimizer                 = pasco_sgd(0.1, 0, false)}));
	double ld = loss_and_grads(dense, sce, x, y, gd);
	double lc = loss_and_grads(fc, sce, x, y, gc);
	cr_assert(ld > 0 && fabs(ld - lc) <= 1e-6 * ld, "losses %.9g and %.9g",
	    ld, lc);
	assert_same_tensor(
	    gd[0].dense, gc[0].dense, 1e-6, "kernel's gradient");
	assert_same_tensor(gd[1].dense, gc[1].dense, 1e-6, "bias's gradient");
	pasco_tape_grad_fini(gd, 2);
	pasco_tape_grad_fini(gc, 2);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_model_free(dense);
	pasco_model_free(fc);
	free(cfg);
	cJSON_Delete(c);
}

/* mean(square(y_true - y_pred)) over every axis (per_example: over the
 * last, then averaged by the runner). */
static char *
mse_graph(bool per_example)
{
	char *s = malloc(2048);
	snprintf(s, 2048,
	    "{\"name\": \"my_mse\", \"graph\": {"
	    "\"inputs\": [{\"shape\": [-1, 3], \"dtype\": \"float32\"},"
	    "            {\"shape\": [-1, 3], \"dtype\": \"float32\"}],"
	    "\"nodes\": ["
	    " {\"op\": \"input\", \"index\": 0, \"shape\": [-1, 3],"
	    "  \"dtype\": \"float32\"},"
	    " {\"op\": \"input\", \"index\": 1, \"shape\": [-1, 3],"
	    "  \"dtype\": \"float32\"},"
	    " {\"op\": \"subtract\", \"in\": [0, 1], \"shape\": [-1, 3],"
	    "  \"dtype\": \"float32\"},"
	    " {\"op\": \"square\", \"in\": [2], \"shape\": [-1, 3],"
	    "  \"dtype\": \"float32\"},"
	    " {\"op\": \"reduce_mean\", \"in\": [3], \"axis\": %s,"
	    "  \"keepdims\": false, \"shape\": %s, \"dtype\": \"float32\"}],"
	    "\"outputs\": [4]}}",
	    per_example ? "-1" : "null", per_example ? "[-1]" : "[]");
	return s;
}

Test(graph, a_loss_graph_of_the_mean_squared_error_is_mse)
{
	pasco_layer_reset_names();
	for (int per_example = 0; per_example < 2; per_example++) {
		pasco_model          *m = custom_model(false);
		pasco_tensor         *x = batch(6, 4, 2), *y = batch(6, 3, 1);
		char                 *lg = mse_graph(per_example);
		pasco_tape_grad       g1[2], g2[2];
		pasco_compile_options o = {.loss_graph = lg};
		MODEL_PASS(pasco_model_compile(m, &o));
		double a = loss_and_grads(m,
		    (pasco_loss){.kind = PASCO_LOSS_MSE, .from_logits = false},
		    x, y, g1);
		double b = loss_and_grads(m,
		    (pasco_loss){
		        .kind = PASCO_LOSS_GRAPH, .from_logits = false},
		    x, y, g2);
		cr_assert(
		    fabs(a - b) <= 1e-7 * a, "mse %.9g, graph %.9g", a, b);
		/* f32 rounding: the kernel sums its terms in another order */
		assert_same_tensor(g1[0].dense, g2[0].dense, 1e-6, "kernel");
		assert_same_tensor(g1[1].dense, g2[1].dense, 1e-6, "bias");
		pasco_tape_grad_fini(g1, 2);
		pasco_tape_grad_fini(g2, 2);
		pasco_tensor_release(x);
		pasco_tensor_release(y);
		pasco_model_free(m);
		free(lg);
	}
}

Test(graph, a_model_with_a_custom_layer_and_loss_round_trips_through_json)
{
	pasco_layer_reset_names();
	pasco_model          *m         = custom_model(true), *back;
	char                 *lg        = mse_graph(true), *one, *two;
	const char           *metrics[] = {"mae"};
	pasco_compile_options o         = {.loss_graph = lg,
	            .optimizer                         = pasco_sgd(0.1, 0, false),
	            .metrics                           = metrics,
	            .nmetrics                          = 1};
	MODEL_PASS(pasco_model_compile(m, &o));
	PASCO_PASS(pasco_model_to_json(m, &one));
	cr_assert(
	    strstr(one, "\"class_name\":\"Custom\"") != NULL &&
	        strstr(one, "\"inference_graph\"") != NULL &&
	        strstr(one, "\"loss\":{\"class_name\":\"Graph\"") != NULL,
	    "%s", one);
	MODEL_PASS(pasco_model_from_json(one, &back));
	PASCO_PASS(pasco_model_to_json(back, &two));
	cr_assert_str_eq(two, one);
	cr_assert_str_eq(pasco_model_variable_name(back, 0), "fc/kernel");
	free(one);
	free(two);
	free(lg);
	pasco_model_free(back);
	pasco_model_free(m);
}

Test(graph, the_inference_graph_runs_when_not_training)
{
	pasco_layer_reset_names();
	pasco_model  *m      = custom_model(true);
	pasco_tensor *x      = batch(5, 4, 2);
	double        neg[2] = {0, 0};
	for (int training = 0; training < 2; training++) {
		pasco_tape  *tp;
		pasco_tnode *nodes[2], *y;
		PASCO_PASS(pasco_tape_alloc(&tp, training, 1));
		watch_initial(m, tp, nodes);
		y = pasco_model_call_with(m, tp, &x, nodes);
		cr_assert_not_null(y, "%s", pasco_tape_message(tp));
		for (int64_t i = 0; i < 15; i++) {
			neg[training] = fmin(neg[training],
			    pasco_tensor_get(pasco_tnode_value(y), i));
		}
		pasco_tape_free(tp);
	}
	/* graph ends in relu; inference_graph does not */
	cr_assert(neg[0] < 0 && neg[1] == 0, "%g %g", neg[0], neg[1]);
	pasco_tensor_release(x);
	pasco_model_free(m);
}

/* ---- a C layer registered by name ---- */

Test(graph, a_c_layer_registered_by_name_runs_and_round_trips)
{
	static const pasco_layer_fn other = {gl_dense_vars, gl_dense_call};
	pasco_layer                 l;
	pasco_model                *dense, *fc, *back;
	pasco_tensor               *x = batch(5, 4, 2), *y = batch(5, 3, 1);
	pasco_tape_grad             gd[2], gc[2];
	pasco_loss mse = {.kind = PASCO_LOSS_MSE, .from_logits = false};
	char      *one, *two;
	pasco_layer_reset_names();
	PASCO_PASS(gl_register());
	PASCO_PASS(gl_register());
	PASCO_FAIL(pasco_layer_register("test_c_dense", &other), PASCO_EEXIST);
	PASCO_FAIL(
	    pasco_layer_function(&l, "no_such_layer", NULL, 1, (int64_t[]){4}),
	    PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(),
	        "no layer function 'no_such_layer' is registered") != NULL,
	    "%s", pasco_model_last_error());
	PASCO_FAIL(
	    pasco_layer_function(&l, "test_c_dense", "{}", 1, (int64_t[]){4}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "layer function 'test_c_dense': one input") != NULL,
	    "%s", pasco_model_last_error());
	dense = one_layer_model(pasco_layer_dense(3, PASCO_ACT_RELU));
	MODEL_PASS(pasco_layer_function(
	    &l, "test_c_dense", "{\"units\": 3}", 1, (int64_t[]){4}));
	cr_assert_str_eq(l.name, "custom");
	fc = one_layer_model(l);
	cr_assert_str_eq(pasco_model_variable_name(fc, 0), "custom/kernel");
	double ld = loss_and_grads(dense, mse, x, y, gd);
	double lc = loss_and_grads(fc, mse, x, y, gc);
	cr_assert(ld > 0 && ld == lc, "losses %.9g and %.9g", ld, lc);
	assert_same_tensor(gd[0].dense, gc[0].dense, 0, "kernel's gradient");
	assert_same_tensor(gd[1].dense, gc[1].dense, 0, "bias's gradient");
	PASCO_PASS(pasco_model_to_json(fc, &one));
	cr_assert(strstr(one, "\"function\":\"test_c_dense\",\"options\":{"
	                      "\"units\":3}") != NULL,
	    "%s", one);
	MODEL_PASS(pasco_model_from_json(one, &back));
	PASCO_PASS(pasco_model_to_json(back, &two));
	cr_assert_str_eq(two, one);
	pasco_tape_grad_fini(gd, 2);
	pasco_tape_grad_fini(gc, 2);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	free(one);
	free(two);
	pasco_model_free(back);
	pasco_model_free(dense);
	pasco_model_free(fc);
}

Test(graph, a_config_naming_an_unregistered_function_is_refused)
{
	pasco_layer l;
	PASCO_FAIL(
	    pasco_layer_graph(&l,
	        "{\"name\": \"c\", \"input_widths\": [4], "
	        "\"output_width\": 3, \"function\": \"nobody_has_it\"}"),
	    PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(),
	        "c: no layer function 'nobody_has_it' is registered") != NULL,
	    "%s", pasco_model_last_error());
}

/* A model input of ids reaches the graph as its integer tensor: ids
 * [batch, 2] (i64) cast to floats, then @ kernel [2, 3]. */
Test(graph, an_ids_input_reaches_the_graph_as_integers)
{
	static const char *cfg =
	    "{\"name\": \"idl\", \"input_widths\": [2], \"output_width\": 3,"
	    " \"graph\": {\"inputs\": [{\"shape\": [-1, 2], \"dtype\": "
	    "\"int64\"}],"
	    " \"weights\": [{\"name\": \"kernel\", \"shape\": [2, 3],"
	    "  \"dtype\": \"float32\", \"initializer\": {\"class_name\": "
	    "\"Ones\", \"config\": {}}, \"regularizer\": null, \"trainable\": "
	    "true}],"
	    " \"nodes\": [{\"op\": \"input\", \"index\": 0, \"shape\": [-1, "
	    "2],"
	    "  \"dtype\": \"int64\"},"
	    "  {\"op\": \"cast\", \"in\": [0], \"shape\": [-1, 2], \"dtype\": "
	    "\"float32\"},"
	    "  {\"op\": \"weight\", \"index\": 0, \"shape\": [2, 3], "
	    "\"dtype\": "
	    "\"float32\"},"
	    "  {\"op\": \"matmul\", \"in\": [1, 2], \"transpose_a\": false,"
	    "   \"transpose_b\": false, \"shape\": [-1, 3], \"dtype\": "
	    "\"float32\"}],"
	    " \"outputs\": [3]}}";
	pasco_layer       l;
	pasco_model      *m;
	pasco_tape       *tp;
	pasco_tensor     *ids;
	pasco_tnode      *nodes[1], *y;
	pasco_model_input in = {"cat", 2, true};
	MODEL_PASS(pasco_layer_graph(&l, cfg));
	l.inputs[0] = PASCO_MODEL_INPUT(0);
	l.ninputs   = 1;
	MODEL_PASS(pasco_model_functional(&m, 1, &in, 1, &l, 3));
	pasco_layer_release(&l);
	PASCO_PASS(pasco_tensor_from(&ids, PASCO_I64, 2, (int64_t[]){2, 2},
	    (int64_t[]){1, 2, 3, 4}, 4 * sizeof(int64_t)));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	watch_initial(m, tp, nodes);
	y = pasco_model_call_with(m, tp, &ids, nodes);
	cr_assert_not_null(y, "%s", pasco_tape_message(tp));
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(y), 0), 3, 0);
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(y), 5), 7, 0);
	pasco_tape_free(tp);
	pasco_tensor_release(ids);
	pasco_model_free(m);
}

/* A loss graph of class ids (int64 [batch]) against logits [batch, 3]:
 * sparse_categorical_crossentropy from logits. */
static const char *const scce =
    "{\"name\": \"my_scce\", \"graph\": {"
    "\"inputs\": [{\"shape\": [-1], \"dtype\": \"int64\"},"
    "            {\"shape\": [-1, 3], \"dtype\": \"float32\"}],"
    "\"nodes\": ["
    " {\"op\": \"input\", \"index\": 0, \"shape\": [-1], \"dtype\": "
    "\"int64\"},"
    " {\"op\": \"input\", \"index\": 1, \"shape\": [-1, 3], "
    "\"dtype\": "
    "\"float32\"},"
    " {\"op\": \"sparse_categorical_crossentropy\", \"in\": [0, 1],"
    "  \"from_logits\": true, \"shape\": [], \"dtype\": \"float32\"}],"
    "\"outputs\": [2]}}";

/* Keras resolves "accuracy" from y_true's shape: a loss graph whose
 * y_true is class ids (int64 [batch]) gets sparse categorical accuracy,
 * here and in the model a worker reads from the config. */
Test(graph, accuracy_with_a_loss_graph_of_class_ids_is_sparse)
{
	pasco_layer_reset_names();
	pasco_model *m = custom_model(false), *back;
	char        *json;
	MODEL_PASS(
	    pasco_model_compile(m, &(pasco_compile_options){.loss_graph = scce,
	                               .metrics = (const char *[]){"accuracy"},
	                               .nmetrics = 1}));
	cr_assert_eq(
	    m->compile.metric_kinds[0], PASCI_METRIC_SPARSE_CAT_ACCURACY);
	PASCO_PASS(pasco_model_to_json(m, &json));
	MODEL_PASS(pasco_model_from_json(json, &back));
	cr_assert_eq(
	    back->compile.metric_kinds[0], PASCI_METRIC_SPARSE_CAT_ACCURACY);
	free(json);
	pasco_model_free(back);
	pasco_model_free(m);
}

/* What a worker is sent must not make it allocate without bound, nor
 * go uncounted by its model cache. */
Test(graph, sizes_from_a_config_are_bounded_and_counted)
{
	cJSON *g = dense_json(), *c;
	cJSON_ReplaceItemInObject(
	    node(g, 2), "op", cJSON_CreateString("constant"));
	cJSON_DeleteItemFromObject(node(g, 2), "index");
	cJSON_AddNumberToObject(node(g, 2), "value", 1);
	cJSON_ReplaceItemInObject(node(g, 2), "shape",
	    cJSON_CreateIntArray((int[]){1 << 13, 1 << 13}, 2));
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: nodes[2] (constant): a constant of shape [8192, 8192]: at "
	    "most 16777216 elements");

	char       *cfg = custom_config(false);
	pasco_layer l;
	c = cJSON_Parse(cfg);
	cJSON_ReplaceItemInObject(
	    c, "input_widths", cJSON_CreateDoubleArray((double[]){1e300}, 1));
	char *bad = cJSON_PrintUnformatted(c);
	PASCO_FAIL(pasco_layer_graph(&l, bad), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(),
	        "fc: input_widths[0] must be a positive integer") != NULL,
	    "%s", pasco_model_last_error());
	free(bad);
	cJSON_Delete(c);

	pasco_layer_reset_names();
	pasco_model *dense =
	    one_layer_model(pasco_layer_dense(3, PASCO_ACT_RELU));
	pasco_model *fc = custom_model(true);
	cr_assert_geq(pasci_model_bytes(fc),
	    pasci_model_bytes(dense) + 2 * strlen(cfg),
	    "a Custom layer's graphs are counted: %zu bytes, Dense's %zu",
	    pasci_model_bytes(fc), pasci_model_bytes(dense));
	free(cfg);
	pasco_model_free(dense);
	pasco_model_free(fc);
}

/* The Custom layer fc of graph g (taken over). */
static pasco_model *
model_of_graph(cJSON *g)
{
	pasco_layer l;
	cJSON      *c = cJSON_CreateObject();
	char       *cfg;
	cJSON_AddStringToObject(c, "name", "fc");
	cJSON_AddItemToObject(
	    c, "input_widths", cJSON_CreateIntArray((int[]){4}, 1));
	cJSON_AddNumberToObject(c, "output_width", 3);
	cJSON_AddItemToObject(c, "graph", g);
	cfg = cJSON_PrintUnformatted(c);
	cJSON_Delete(c);
	MODEL_PASS(pasco_layer_graph(&l, cfg));
	free(cfg);
	return one_layer_model(l);
}

static cJSON *
weight(cJSON *g, int k)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(g, "weights"), k);
}

Test(graph, a_non_trainable_weight_is_read_but_never_differentiated)
{
	pasco_layer_reset_names();
	cJSON *g = dense_json();
	cJSON_ReplaceItemInObject(
	    weight(g, 1), "trainable", cJSON_CreateFalse());
	pasco_model *fc = model_of_graph(g);
	pasco_model *dense =
	    one_layer_model(pasco_layer_dense(3, PASCO_ACT_RELU));
	pasco_tensor   *x = batch(5, 4, 2), *y = batch(5, 3, 1);
	pasco_tape_grad gd[2], gc[2];
	pasco_loss      mse = {.kind = PASCO_LOSS_MSE, .from_logits = false};
	double          ld  = loss_and_grads(dense, mse, x, y, gd);
	double          lc  = loss_and_grads(fc, mse, x, y, gc);
	cr_assert(ld == lc, "losses %.9g and %.9g", ld, lc);
	assert_same_tensor(gd[0].dense, gc[0].dense, 0, "kernel's gradient");
	cr_assert_not_null(gd[1].dense);
	cr_assert_null(
	    gc[1].dense, "no gradient reaches a non-trainable bias");
	pasco_tape_grad_fini(gd, 2);
	pasco_tape_grad_fini(gc, 2);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_model_free(dense);
	pasco_model_free(fc);
}

Test(graph, regularizers_join_the_training_loss)
{
	pasco_layer_reset_names();
	pasco_layer d = pasco_layer_dense(3, PASCO_ACT_RELU);
	d.kernel_l2   = 0.01;
	cJSON *g2 = dense_json(), *g1 = dense_json(), *g0 = dense_json();
	cJSON_ReplaceItemInObject(weight(g2, 0), "regularizer",
	    cJSON_Parse(
	        "{\"class_name\": \"L2\", \"config\": {\"l2\": 0.01}}"));
	cJSON_ReplaceItemInObject(weight(g1, 0), "regularizer",
	    cJSON_Parse(
	        "{\"class_name\": \"L1\", \"config\": {\"l1\": 0.01}}"));
	pasco_model    *dense = one_layer_model(d);
	pasco_model    *l2 = model_of_graph(g2), *l1 = model_of_graph(g1);
	pasco_model    *none = model_of_graph(g0);
	pasco_tensor   *x = batch(5, 4, 2), *y = batch(5, 3, 1), *k;
	pasco_tape_grad gd[2], g[2];
	pasco_loss      mse = {.kind = PASCO_LOSS_MSE, .from_logits = false};
	double          ld = loss_and_grads(dense, mse, x, y, gd), sum = 0;
	double          lr = loss_and_grads(l2, mse, x, y, g);
	cr_assert(
	    fabs(ld - lr) <= 1e-7 * ld, "L2: %.9g, Dense's %.9g", lr, ld);
	assert_same_tensor(gd[0].dense, g[0].dense, 1e-7, "L2 kernel's");
	pasco_tape_grad_fini(g, 2);
	/* L1: 0.01 * sum(|kernel|) more than without */
	double l0 = loss_and_grads(none, mse, x, y, g);
	pasco_tape_grad_fini(g, 2);
	double la = loss_and_grads(l1, mse, x, y, g);
	pasco_tape_grad_fini(g, 2);
	pasco_initializer in = pasco_model_variable_init(l1, 0);
	PASCO_PASS(pasco_tensor_alloc(&k, PASCO_F32, 2, (int64_t[]){4, 3}));
	PASCO_PASS(pasco_initializer_fill(&in, k, 2, k->shape, 0));
	for (int64_t i = 0; i < 12; i++) {
		sum += fabs(pasco_tensor_get(k, i));
	}
	cr_assert(fabs(la - l0 - 0.01 * sum) <= 1e-6,
	    "L1: %.9g more, want %.9g", la - l0, 0.01 * sum);
	pasco_tape_grad_fini(gd, 2);
	pasco_tensor_release(k);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_model_free(dense);
	pasco_model_free(l2);
	pasco_model_free(l1);
	pasco_model_free(none);
}

/* A worker's cache keeps a model parsed from its config and hands each
 * step a clone: the clone shares the parsed graph (no parse per step) and
 * outlives the model it was cloned from. */
Test(graph, a_clone_shares_the_parsed_graph_and_outlives_its_model)
{
	pasco_layer_reset_names();
	pasco_model  *m = custom_model(true), *copy;
	pasco_tensor *x = batch(2, 4, 1);
	pasco_tape   *tp;
	pasco_tnode  *nodes[2];
	PASCO_PASS(pasci_model_clone(m, &copy));
	cr_assert_not_null(copy->layers[0].custom);
	cr_assert_eq(copy->layers[0].custom, m->layers[0].custom);
	pasco_model_free(m);
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	watch_initial(copy, tp, nodes);
	cr_assert_not_null(pasco_model_call_with(copy, tp, &x, nodes), "%s",
	    pasco_tape_message(tp));
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_model_free(copy);
}

/* y_true traced as int64 class ids, the batch's labels given as floats
 * [batch, 1] or [batch] (a CSV's): cast to the traced dtype and shape, the
 * loss is the one of the integer labels. */
Test(graph, a_loss_graphs_targets_are_cast_to_the_traced_dtype_and_shape)
{
	pasco_layer_reset_names();
	pasco_model    *m = custom_model(false);
	pasco_tensor   *x = batch(4, 4, 2), *yi, *yf, *y1;
	pasco_tape_grad g[2];
	pasco_loss graph = {.kind = PASCO_LOSS_GRAPH, .from_logits = false};
	MODEL_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){.loss_graph = scce}));
	PASCO_PASS(pasco_tensor_from(&yi, PASCO_I64, 1, (int64_t[]){4},
	    (int64_t[]){0, 2, 1, 2}, 4 * sizeof(int64_t)));
	PASCO_PASS(pasco_tensor_from(&yf, PASCO_F32, 2, (int64_t[]){4, 1},
	    (float[]){0, 2, 1, 2}, 4 * sizeof(float)));
	PASCO_PASS(pasco_tensor_from(&y1, PASCO_F32, 1, (int64_t[]){4},
	    (float[]){0, 2, 1, 2}, 4 * sizeof(float)));
	double a = loss_and_grads(m, graph, x, yi, g);
	pasco_tape_grad_fini(g, 2);
	double b = loss_and_grads(m, graph, x, yf, g);
	pasco_tape_grad_fini(g, 2);
	double c = loss_and_grads(m, graph, x, y1, g);
	pasco_tape_grad_fini(g, 2);
	cr_assert(a > 0 && a == b && a == c,
	    "int labels %.9g, float labels [4, 1] %.9g and [4] %.9g", a, b, c);
	pasco_tensor_release(y1);
	pasco_tensor_release(x);
	pasco_tensor_release(yi);
	pasco_tensor_release(yf);
	pasco_model_free(m);
}

/* Several threads clone one model with a graph layer, run it and free
 * their clone at once (the worker's steps): the definition's reference
 * count is atomic (run under -Db_sanitize=thread too). */
typedef struct clone_run {
	const pasco_model *m;
	int                ok;
} clone_run;

static void *
clone_and_run(void *arg)
{
	clone_run    *r = arg;
	pasco_tensor *x = batch(3, 4, 1);
	for (int k = 0; k < 50; k++) {
		pasco_model *copy;
		pasco_tape  *tp;
		pasco_tnode *nodes[2];
		if (pasci_model_clone(r->m, &copy) != 0 ||
		    pasco_tape_alloc(&tp, k % 2 == 0, 1) != 0) {
			break;
		}
		watch_initial(copy, tp, nodes);
		r->ok += pasco_model_call_with(copy, tp, &x, nodes) != NULL;
		pasco_tape_free(tp);
		pasco_model_free(copy);
	}
	pasco_tensor_release(x);
	return NULL;
}

Test(graph, threads_clone_run_and_free_one_models_graph_at_once)
{
	pasco_layer_reset_names();
	pasco_model *m = custom_model(true);
	pthread_t    t[4];
	clone_run    r[4];
	for (int i = 0; i < 4; i++) {
		r[i] = (clone_run){m, 0};
		cr_assert_eq(
		    pthread_create(&t[i], NULL, clone_and_run, &r[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(
		    r[i].ok, 50, "thread %d ran %d of 50", i, r[i].ok);
	}
	pasco_model_free(m);
}

/* ---- what a stranger's graph may not make a worker allocate ---- */

/* graph JSON text g of a layer, read and run on a training tape with the
 * int64 input ids (NULL: none): NULL with the tape's message in msg. */
static bool
run_text(const char *text, const pasco_tensor *ids, char *msg, size_t len)
{
	cJSON       *g = cJSON_Parse(text);
	pasci_graph *p;
	pasco_tape  *tp;
	pasci_gval   in = {NULL, ids}, out;
	bool         ok;
	cr_assert_not_null(g);
	MODEL_PASS(pasci_graph_parse(g, PASCI_GRAPH_LAYER, "fc", &p));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	ok = pasci_graph_run(p, tp, "fc", &in, NULL, NULL, NULL, &out);
	snprintf(msg, len, "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
	pasci_graph_free(p);
	cJSON_Delete(g);
	return ok;
}

Test(graph, huge_shapes_are_refused_with_a_message_not_allocated)
{
	char          msg[512];
	pasco_tensor *ids;
	/* a weight of [1e9, 1e9] */
	cJSON *g = dense_json();
	cJSON_ReplaceItemInObject(weight(g, 0), "shape",
	    cJSON_CreateDoubleArray((double[]){1e9, 1e9}, 2));
	cJSON_ReplaceItemInObject(node(g, 1), "shape",
	    cJSON_CreateDoubleArray((double[]){1e9, 1e9}, 2));
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: weights[0]: shape [1000000000, 1000000000] holds more than "
	    "2147483648 elements");
	/* constants of 2^24 elements each, filled by a number */
	g = dense_json();
	for (int k = 1; k < 3; k++) {
		cJSON *n = node(g, k);
		cJSON_ReplaceItemInObject(
		    n, "op", cJSON_CreateString("constant"));
		cJSON_DeleteItemFromObject(n, "index");
		cJSON_AddNumberToObject(n, "value", 0);
		cJSON_ReplaceItemInObject(
		    n, "shape", cJSON_CreateIntArray((int[]){4096, 4096}, 2));
	}
	refused(g, PASCI_GRAPH_LAYER,
	    "fc: nodes[2] (constant): a constant of shape [4096, 4096]: the "
	    "graph's constants would hold 33554432 elements, at most 16777216 "
	    "in all");
	/* one_hot of depth 2^31 - 1 on 3 ids: 24 GiB */
	PASCO_PASS(pasco_tensor_alloc(&ids, PASCO_I64, 1, (int64_t[]){3}));
	cr_assert(!run_text(
	    "{\"inputs\": [{\"shape\": [-1], \"dtype\": \"int64\"}],"
	    " \"nodes\": [{\"op\": \"input\", \"index\": 0, \"shape\": [-1],"
	    "  \"dtype\": \"int64\"}, {\"op\": \"one_hot\", \"in\": [0],"
	    "  \"depth\": 2147483647, \"shape\": [-1, 2147483647],"
	    "  \"dtype\": \"float32\"}], \"outputs\": [1]}",
	    ids, msg, sizeof(msg)));
	cr_assert(strstr(msg, "one_hot: a value of f32[3,2147483647] is past "
	                      "the tape's bound of 17179869184 bytes") != NULL,
	    "%s", msg);
	/* [2^23, 1] + [1, 2^23]: 2^46 elements */
	cr_assert(!run_text(
	    "{\"inputs\": [{\"shape\": [-1], \"dtype\": \"int64\"}],"
	    " \"nodes\": [{\"op\": \"constant\", \"value\": 1,"
	    "  \"shape\": [8388608, 1], \"dtype\": \"float32\"},"
	    " {\"op\": \"constant\", \"value\": 2, \"shape\": [1, 8388608],"
	    "  \"dtype\": \"float32\"}, {\"op\": \"add\", \"in\": [0, 1],"
	    "  \"shape\": [8388608, 8388608], \"dtype\": \"float32\"}],"
	    " \"outputs\": [2]}",
	    ids, msg, sizeof(msg)));
	cr_assert(strstr(msg, "a value of f32[8388608,8388608] is past the "
	                      "tape's bound") != NULL,
	    "%s", msg);
	pasco_tensor_release(ids);
}

/* A graph of one constant [4096, 4096] (2^24 elements, its bound). */
static int
parse_big_constant(pasci_graph **out)
{
	cJSON *g =
	    cJSON_Parse("{\"nodes\": [{\"op\": \"constant\", \"value\": 0,"
	                " \"shape\": [4096, 4096], \"dtype\": \"float32\"}],"
	                " \"outputs\": [0]}");
	int rv = pasci_graph_parse(g, PASCI_GRAPH_LAYER, "fc", out);
	cJSON_Delete(g);
	return rv;
}

/* Many layers' graphs, each at its bound: 2^26 constant elements in all
 * in the process, given back when a graph is freed. */
Test(graph, the_process_graphs_constants_are_bounded_in_all)
{
	pasci_graph *g[5];
	for (int k = 0; k < 4; k++) {
		MODEL_PASS(parse_big_constant(&g[k]));
	}
	PASCO_FAIL(parse_big_constant(&g[4]), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "fc: nodes[0] (constant): a constant of shape [4096, "
	              "4096]: the process's op graphs would hold more than "
	              "67108864 constant elements in all") != NULL,
	    "%s", pasco_model_last_error());
	pasci_graph_free(g[0]);
	MODEL_PASS(parse_big_constant(&g[4]));
	for (int k = 1; k < 5; k++) {
		pasci_graph_free(g[k]);
	}
}

/* PASCO_MAX_GRAPH_CONSTANTS sets the process's bound (read at the first
 * constant; criterion runs each test in its own process): 2^25 lets two
 * of the graphs above in and refuses the third, naming the variable. */
Test(graph, the_process_constants_bound_is_set_by_its_variable)
{
	pasci_graph *g[2];
	setenv("PASCO_MAX_GRAPH_CONSTANTS", "33554432", 1);
	MODEL_PASS(parse_big_constant(&g[0]));
	MODEL_PASS(parse_big_constant(&g[1]));
	PASCO_FAIL(parse_big_constant(&(pasci_graph *){NULL}), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "would hold more than 33554432 constant elements in "
	              "all (PASCO_MAX_GRAPH_CONSTANTS sets it)") != NULL,
	    "%s", pasco_model_last_error());
	pasci_graph_free(g[0]);
	pasci_graph_free(g[1]);
}

/* PASCO_MAX_TAPE_MB sets a tape's bound (read at the first use): at 1 MB
 * a value of 2^19 f32 (2 MB) is refused naming the op and the variable;
 * unset, the same value is made. */
static pasco_tnode *
two_megabytes(pasco_tape *tp)
{
	pasco_tensor *t;
	pasco_tnode  *n;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 1, (int64_t[]){1 << 19}));
	n = pasco_t_exp(tp, pasco_tape_constant(tp, t));
	pasco_tensor_release(t);
	return n;
}

Test(graph, a_tapes_bound_is_set_by_its_variable)
{
	pasco_tape *tp;
	setenv("PASCO_MAX_TAPE_MB", "1", 1);
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	cr_assert_null(two_megabytes(tp));
	cr_assert_eq(pasco_tape_error(tp), PASCO_ENOMEM);
	cr_assert(strstr(pasco_tape_message(tp),
	              "PASCO_MAX_TAPE_MB sets it") != NULL,
	    "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
}

Test(graph, a_tapes_bound_is_16_gib_by_default)
{
	pasco_tape *tp;
	unsetenv("PASCO_MAX_TAPE_MB");
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	cr_assert_not_null(two_megabytes(tp), "%s", pasco_tape_message(tp));
	cr_assert_eq(pasci_tape_set_max_bytes(1 << 20), (size_t) 16 << 30);
	pasco_tape_free(tp);
}
