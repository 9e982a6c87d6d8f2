/* Op graphs (model/graph.c, docs/GRAPHS.md): the reader's refusals, each
 * naming the node, its op and what was wrong; a run's shape checks. */
#include "graph.h"
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
	cr_assert_eq(pasci_graph_weight_at(p, 0)->init.kind,
	    PASCO_INIT_GLOROT_UNIFORM);
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
	cJSON_ReplaceItemInObject(node(g, 5), "op", cJSON_CreateString("relux"));
	refused(g, PASCI_GRAPH_LAYER, "fc: nodes[5] (relux): unknown op 'relux'");
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
	cJSON_ReplaceItemInObject(node(g, 5), "op", cJSON_CreateString("read"));
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
			cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(y),
			                       r * 3 + c),
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
	cr_assert(strncmp(pasco_tape_message(tp), "fc: nodes[3] (matmul): ",
	              23) == 0 &&
	              strstr(pasco_tape_message(tp), "f32[2,4]") != NULL,
	    "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_tensor_release(k);
	pasco_tensor_release(b);
	pasci_graph_free(p);
	cJSON_Delete(g);
}
