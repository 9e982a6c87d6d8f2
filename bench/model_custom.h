/*
 * bench/model's custom layers (issue 32, include/pasco/graph.h), included
 * by bench/model.c only (it registers step functions and a C layer):
 *
 *   mlp, graph    bench/train's MLP 784-256-10 with its two Dense layers
 *                 as op-graph layers (pasco_layer_graph: matmul, add,
 *                 relu, as Python's tracer writes them), then a softmax
 *                 Activation: the same model as mlp_layers' (the same
 *                 shapes, initializers and seeds), beside the built-in
 *                 layers and the hand-written step;
 *   deepfm        8 fields of ids (Embedding 1000 x 8 each), the
 *                 factorization machine's interaction of the 8 field
 *                 vectors, a deep part (concatenated 64 -> Dense 32 ReLU),
 *                 both into Dense(1, sigmoid), binary cross-entropy, SGD,
 *                 batch 256; the interaction as an op-graph layer
 *                 (fm_graph) against the same interaction written by hand
 *                 on the tape as a registered C layer (fm_c, the same
 *                 ops: concat, reshape, sums, products).
 *
 * A custom layer's definition is made once (the graph parsed and checked
 * once) and held by every model a step makes from it, as a worker's
 * cached model does.
 */
#ifndef PASCO_BENCH_MODEL_CUSTOM_H
#define PASCO_BENCH_MODEL_CUSTOM_H

#include <pasco/graph.h>
#include <stdio.h>

#include "train.h"

#define FM_FIELDS 8
#define FM_DIM 8
#define FM_VOCAB 1000
#define FM_DEEP 32
#define FM_BATCH 256
#define FM_LR 0.05

/* The definitions, made once by custom_init (custom_err says why not). */
static pthread_once_t custom_once = PTHREAD_ONCE_INIT;
static pasco_layer    mlp_graph_l[2], fm_graph_l, fm_c_l;
static char           custom_err[512];

/* A Dense layer's op graph: relu(x @ kernel + bias) or x @ kernel + bias;
 * the config object of a Custom layer named name. */
static char *
dense_graph(const char *name, int64_t in, int64_t units, bool relu)
{
	static const char f[] =
	    "{\"name\":\"%s\",\"class\":\"GraphDense\",\"input_widths\":[%lld],"
	    "\"output_width\":%lld,\"graph\":{\"inputs\":[{\"shape\":[-1,%lld],"
	    "\"dtype\":\"float32\"}],\"weights\":["
	    "{\"name\":\"kernel\",\"shape\":[%lld,%lld],\"dtype\":\"float32\","
	    "\"initializer\":{\"class_name\":\"GlorotUniform\",\"config\":{}},"
	    "\"regularizer\":null,\"trainable\":true},"
	    "{\"name\":\"bias\",\"shape\":[%lld],\"dtype\":\"float32\","
	    "\"initializer\":{\"class_name\":\"Zeros\",\"config\":{}},"
	    "\"regularizer\":null,\"trainable\":true}],\"nodes\":["
	    "{\"op\":\"input\",\"index\":0,\"shape\":[-1,%lld],"
	    "\"dtype\":\"float32\"},"
	    "{\"op\":\"weight\",\"index\":0,\"shape\":[%lld,%lld],"
	    "\"dtype\":\"float32\"},"
	    "{\"op\":\"weight\",\"index\":1,\"shape\":[%lld],"
	    "\"dtype\":\"float32\"},"
	    "{\"op\":\"matmul\",\"in\":[0,1],\"transpose_a\":false,"
	    "\"transpose_b\":false,\"shape\":[-1,%lld],\"dtype\":\"float32\"},"
	    "{\"op\":\"add\",\"in\":[3,2],\"shape\":[-1,%lld],"
	    "\"dtype\":\"float32\"}%s],\"outputs\":[%d]}}";
	char       relu_node[128] = "";
	long long  i = in, u = units;
	char      *out;
	if (relu) {
		snprintf(relu_node, sizeof(relu_node),
		    ",{\"op\":\"relu\",\"in\":[4],\"shape\":[-1,%lld],"
		    "\"dtype\":\"float32\"}",
		    u);
	}
	size_t n = sizeof(f) + 512;
	if ((out = malloc(n)) != NULL) {
		snprintf(out, n, f, name, i, u, i, i, u, u, i, i, u, u, u, u,
		    relu_node, relu ? 5 : 4);
	}
	return out;
}

/* The factorization machine's interaction of FM_FIELDS inputs [b, k] as
 * an op graph: 0.5 * sum_k ((sum_i v_i)^2 - sum_i v_i^2), [b, 1]. */
static char *
fm_graph(void)
{
	size_t n = 8192, len;
	char  *s = malloc(n);
	int    k = FM_DIM, f = FM_FIELDS;
	if (s == NULL) {
		return NULL;
	}
	len = (size_t) snprintf(s, n,
	    "{\"name\":\"fm\",\"class\":\"FactorizationMachine\","
	    "\"input_widths\":[");
	for (int i = 0; i < f; i++) {
		len += (size_t) snprintf(s + len, n - len, "%s%d", i ? "," : "", k);
	}
	len += (size_t) snprintf(s + len, n - len,
	    "],\"output_width\":1,\"graph\":{\"inputs\":[");
	for (int i = 0; i < f; i++) {
		len += (size_t) snprintf(s + len, n - len,
		    "%s{\"shape\":[-1,%d],\"dtype\":\"float32\"}", i ? "," : "", k);
	}
	len += (size_t) snprintf(s + len, n - len, "],\"nodes\":[");
	for (int i = 0; i < f; i++) {
		len += (size_t) snprintf(s + len, n - len,
		    "{\"op\":\"input\",\"index\":%d,\"shape\":[-1,%d],"
		    "\"dtype\":\"float32\"},",
		    i, k);
	}
	len += (size_t) snprintf(s + len, n - len, "{\"op\":\"concat\",\"in\":[");
	for (int i = 0; i < f; i++) {
		len += (size_t) snprintf(s + len, n - len, "%s%d", i ? "," : "", i);
	}
#define NODE(fmt, ...)                                                       \
	len += (size_t) snprintf(s + len, n - len, fmt, __VA_ARGS__)
	NODE("],\"axis\":1,\"shape\":[-1,%d],\"dtype\":\"float32\"},", f * k);
	NODE("{\"op\":\"reshape\",\"in\":[%d],\"shape\":[-1,%d,%d],"
	     "\"dtype\":\"float32\"},",
	    f, f, k); /* f + 1: v [b, f, k] */
	NODE("{\"op\":\"reduce_sum\",\"in\":[%d],\"axis\":1,\"keepdims\":false,"
	     "\"shape\":[-1,%d],\"dtype\":\"float32\"},",
	    f + 1, k); /* f + 2: s */
	NODE("{\"op\":\"multiply\",\"in\":[%d,%d],\"shape\":[-1,%d],"
	     "\"dtype\":\"float32\"},",
	    f + 2, f + 2, k); /* f + 3: s^2 */
	NODE("{\"op\":\"multiply\",\"in\":[%d,%d],\"shape\":[-1,%d,%d],"
	     "\"dtype\":\"float32\"},",
	    f + 1, f + 1, f, k); /* f + 4: v^2 */
	NODE("{\"op\":\"reduce_sum\",\"in\":[%d],\"axis\":1,\"keepdims\":false,"
	     "\"shape\":[-1,%d],\"dtype\":\"float32\"},",
	    f + 4, k); /* f + 5 */
	NODE("{\"op\":\"subtract\",\"in\":[%d,%d],\"shape\":[-1,%d],"
	     "\"dtype\":\"float32\"},",
	    f + 3, f + 5, k); /* f + 6 */
	NODE("{\"op\":\"reduce_sum\",\"in\":[%d],\"axis\":1,\"keepdims\":true,"
	     "\"shape\":[-1,1],\"dtype\":\"float32\"},",
	    f + 6); /* f + 7 */
	NODE("{\"op\":\"constant\",\"value\":0.5,\"shape\":[],"
	     "\"dtype\":\"float32\"},%s",
	    ""); /* f + 8 */
	NODE("{\"op\":\"multiply\",\"in\":[%d,%d],\"shape\":[-1,1],"
	     "\"dtype\":\"float32\"}],\"outputs\":[%d]}}",
	    f + 7, f + 8, f + 9);
#undef NODE
	return len < n ? s : (free(s), NULL);
}

/* The same interaction by hand on the tape: a registered C layer. */
static int
fm_c_variables(const char *options, size_t ninputs, const int64_t *widths,
    pasco_layer_weight *weights, size_t *nweights, int64_t *output_width,
    char *err, size_t errlen)
{
	(void) options;
	(void) weights;
	for (size_t i = 0; i < ninputs; i++) {
		if (widths[i] != FM_DIM || ninputs != FM_FIELDS) {
			snprintf(err, errlen,
			    "fm_c: wants %d inputs %d wide, got %zu (input %zu "
			    "%lld wide)",
			    FM_FIELDS, FM_DIM, ninputs, i, (long long) widths[i]);
			return PASCO_EINVAL;
		}
	}
	*nweights     = 0;
	*output_width = 1;
	return PASCO_OK;
}

static pasco_tnode *
fm_c_call(pasco_tape *tp, const char *options, size_t ninputs,
    pasco_tnode *const *x, const pasco_tensor *const *ids,
    pasco_tnode *const *w)
{
	(void) options;
	(void) ids;
	(void) w;
	pasco_tnode *v = pasco_t_reshape(tp,
	    pasco_t_concat(tp, ninputs, x, 1), 3,
	    (int64_t[]){-1, (int64_t) ninputs, FM_DIM});
	pasco_tnode *s = pasco_t_reduce_sum(tp, v, 1);
	pasco_tnode *d = pasco_t_sub(tp, pasco_t_mul(tp, s, s),
	    pasco_t_reduce_sum(tp, pasco_t_mul(tp, v, v), 1));
	return pasco_t_scale(tp,
	    pasco_t_reshape(
	        tp, pasco_t_reduce_sum(tp, d, 1), 2, (int64_t[]){-1, 1}),
	    0.5);
}

static const pasco_layer_fn fm_c_fn = {fm_c_variables, fm_c_call};

static void
custom_fail(const char *what, char *config)
{
	snprintf(custom_err, sizeof(custom_err), "%s: %s", what,
	    config == NULL ? "no memory" : pasco_model_last_error());
}

static void
custom_init(void)
{
	char *c[] = {dense_graph("gdense", INPUTS, HIDDEN, true),
	    dense_graph("gdense_1", HIDDEN, CLASSES, false), fm_graph()};
	if (c[0] == NULL || pasco_layer_graph(&mlp_graph_l[0], c[0]) != 0) {
		custom_fail("the MLP's first graph layer", c[0]);
	} else if (c[1] == NULL ||
	           pasco_layer_graph(&mlp_graph_l[1], c[1]) != 0) {
		custom_fail("the MLP's second graph layer", c[1]);
	} else if (c[2] == NULL || pasco_layer_graph(&fm_graph_l, c[2]) != 0) {
		custom_fail("the FM graph layer", c[2]);
	} else if (pasco_layer_register("fm_c", &fm_c_fn) != 0 ||
	           pasco_layer_function(&fm_c_l, "fm_c", "{}", FM_FIELDS,
	               (int64_t[]){FM_DIM, FM_DIM, FM_DIM, FM_DIM, FM_DIM,
	                   FM_DIM, FM_DIM, FM_DIM}) != 0) {
		custom_fail("the FM C layer", "");
	}
	for (int i = 0; i < 3; i++) {
		free(c[i]);
	}
}

/* ---- the models ---- */

static pasco_model *
mlp_graph_model(void)
{
	pasco_model *m;
	pthread_once(&custom_once, custom_init);
	if (custom_err[0] != '\0') {
		return NULL;
	}
	pasco_layer l[] = {mlp_graph_l[0], mlp_graph_l[1],
	    pasco_layer_activation(PASCO_ACT_SOFTMAX)};
	return pasco_model_sequential(&m, INPUTS, 3, l, 1) == 0 ? m : NULL;
}

/* DeepFM with fm (fm_graph_l or fm_c_l) as its interaction. */
static pasco_model *
deepfm_model(const pasco_layer *fm)
{
	pasco_model      *m;
	pasco_model_input in[FM_FIELDS];
	pasco_layer       l[FM_FIELDS + 5];
	int32_t           fields[FM_FIELDS];
	static const char *names[] = {"f0", "f1", "f2", "f3", "f4", "f5", "f6",
	    "f7"};
	pthread_once(&custom_once, custom_init);
	if (custom_err[0] != '\0') {
		return NULL;
	}
	for (int i = 0; i < FM_FIELDS; i++) {
		in[i]     = (pasco_model_input){names[i], 1, true};
		fields[i] = i;
		l[i]      = pasco_layer_on(pasco_layer_embedding(FM_VOCAB, FM_DIM),
		         1, (int32_t[]){PASCO_MODEL_INPUT(i)});
	}
	l[FM_FIELDS]     = pasco_layer_on(*fm, FM_FIELDS, fields);
	l[FM_FIELDS + 1] = pasco_layer_on(
	    pasco_layer_concatenate(), FM_FIELDS, fields);
	l[FM_FIELDS + 2] = pasco_layer_dense(FM_DEEP, PASCO_ACT_RELU);
	l[FM_FIELDS + 3] = pasco_layer_on(pasco_layer_concatenate(), 2,
	    (int32_t[]){FM_FIELDS, FM_FIELDS + 2});
	l[FM_FIELDS + 4] = pasco_layer_dense(1, PASCO_ACT_SIGMOID);
	return pasco_model_functional(&m, FM_FIELDS, in, FM_FIELDS + 5, l, 1) ==
	               0
	           ? m
	           : NULL;
}

static pasco_model *
deepfm_graph_model(void)
{
	pthread_once(&custom_once, custom_init);
	return deepfm_model(&fm_graph_l);
}

static pasco_model *
deepfm_c_model(void)
{
	pthread_once(&custom_once, custom_init);
	return deepfm_model(&fm_c_l);
}

/* The DeepFM batch: FM_FIELDS id tensors [FM_BATCH, 1] (field i's ids
 * skewed to small values), labels 1 when fields 0 and 1 agree in parity
 * with field 2's. */
static pasco_tensor *fm_ids[FM_FIELDS], *fm_labels;

static void
fm_batch_init(void)
{
	uint64_t st = 11;
	pasco_tensor_alloc(&fm_labels, PASCO_F32, 1, (int64_t[]){FM_BATCH});
	for (int f = 0; f < FM_FIELDS; f++) {
		pasco_tensor_alloc(
		    &fm_ids[f], PASCO_I64, 2, (int64_t[]){FM_BATCH, 1});
		for (int64_t i = 0; i < FM_BATCH; i++) {
			st = st * 6364136223846793005u + 1442695040888963407u;
			uint64_t r = (st >> 33) % FM_VOCAB;
			((int64_t *) fm_ids[f]->data)[i] =
			    (int64_t) (r * r / FM_VOCAB);
		}
	}
	for (int64_t i = 0; i < FM_BATCH; i++) {
		int64_t a = ((int64_t *) fm_ids[0]->data)[i],
		        b = ((int64_t *) fm_ids[1]->data)[i],
		        c = ((int64_t *) fm_ids[2]->data)[i];
		((float *) fm_labels->data)[i] = ((a + b) & 1) == (c & 1);
	}
}

static pthread_once_t fm_once = PTHREAD_ONCE_INIT;

/* ---- the steps on a worker: the model's variables as arguments ---- */

static int
custom_step(pasco_call *call, pasco_model *m, pasco_tensor *const *x,
    const pasco_tensor *y, pasco_loss loss, pasco_optimizer opt)
{
	pasco_variable *v[32];
	size_t          n = m != NULL ? pasco_model_num_variables(m) : 0;
	pasco_tape     *tp;
	int             rv = m == NULL ? PASCO_EINVAL : PASCO_OK;
	for (size_t i = 0; i < n && rv == 0; i++) {
		rv = pasco_call_variable(call, i, &v[i]);
	}
	if (rv != 0 || (rv = pasco_model_bind(m, n, v)) != 0) {
		pasco_model_free(m);
		return pasco_call_fail(call, PASCO_EINVAL, "%s",
		    custom_err[0] ? custom_err : pasco_model_last_error());
	}
	if ((rv = pasco_tape_alloc(&tp, true, 1)) == 0) {
		rv = pasco_model_train_step(m, tp, x, y, loss, &opt, NULL);
		if (rv != 0) {
			rv = pasco_call_fail(
			    call, rv, "%s", pasco_tape_message(tp));
		}
	}
	pasco_tape_free(tp);
	pasco_model_free(m);
	return rv;
}

PASCO_FUNCTION(mlp_graph)
{
	pthread_once(&inputs_once, inputs_init);
	return custom_step(call, mlp_graph_model(),
	    (pasco_tensor *[]){mlp_in.x}, mlp_in.y,
	    (pasco_loss){.kind = PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY, .from_logits = false},
	    pasco_sgd(LR, 0, false));
}

PASCO_FUNCTION(deepfm_graph)
{
	pthread_once(&fm_once, fm_batch_init);
	return custom_step(call, deepfm_graph_model(), fm_ids, fm_labels,
	    (pasco_loss){.kind = PASCO_LOSS_BINARY_CROSSENTROPY, .from_logits = false},
	    pasco_sgd(FM_LR, 0, false));
}

PASCO_FUNCTION(deepfm_c)
{
	pthread_once(&fm_once, fm_batch_init);
	return custom_step(call, deepfm_c_model(), fm_ids, fm_labels,
	    (pasco_loss){.kind = PASCO_LOSS_BINARY_CROSSENTROPY, .from_logits = false},
	    pasco_sgd(FM_LR, 0, false));
}

#endif
