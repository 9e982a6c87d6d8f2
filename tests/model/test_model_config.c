/* Models as data and compile (issue 20): the JSON config of Sequential
 * and functional models round trips (JSON equal, the same variables,
 * names, shapes and initializers), bad configs name the layer and the
 * field, and compile resolves losses, optimizers and metrics as Keras
 * does, its config travelling with the model's. */
#include "helpers.h"
#include "model_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TestSuite(model_config, .timeout = 30);

static pasco_model *
mlp(void)
{
	pasco_model *m;
	pasco_layer  l[]        = {pasco_layer_dense(16, PASCO_ACT_RELU),
	            pasco_layer_dropout(0.25),
	            pasco_layer_dense(3, PASCO_ACT_SOFTMAX)};
	l[0].kernel_l2          = 0.01;
	l[0].kernel_initializer = pasco_init_truncated_normal(0, 0.1, 7);
	l[2].use_bias           = false;
	l[2].kernel_initializer = pasco_init_uniform(-0.5, 0.5, 0);
	PASCO_PASS(pasco_model_sequential(&m, 8, 3, l, 42));
	return m;
}

static pasco_model *
wide_deep(const pasco_partitioner *p)
{
	pasco_model      *m;
	pasco_model_input in[] = {{"dense", 13, false}, {"cat", 3, true}};
	pasco_layer l[]  = {pasco_layer_on(pasco_layer_embedding(1000, 8), 1,
	                        (int32_t[]){PASCO_MODEL_INPUT(1)}),
	     pasco_layer_on(pasco_layer_concatenate(), 2,
	         (int32_t[]){PASCO_MODEL_INPUT(0), 0}),
	     pasco_layer_dense(32, PASCO_ACT_RELU),
	     pasco_layer_activation(PASCO_ACT_TANH),
	     pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	l[0].combiner    = PASCO_COMBINE_SUM;
	l[0].partitioner = p;
	PASCO_PASS(pasco_model_functional(&m, 2, in, 5, l, 1ull << 60));
	return m;
}

/* Same variables (names, shapes, initializers), inputs and layers. */
static void
assert_same_model(const pasco_model *a, const pasco_model *b)
{
	cr_assert_str_eq(pasco_model_name(a), pasco_model_name(b));
	cr_assert_eq(pasco_model_num_inputs(a), pasco_model_num_inputs(b));
	cr_assert_eq(pasco_model_num_layers(a), pasco_model_num_layers(b));
	cr_assert_eq(pasco_model_output_width(a), pasco_model_output_width(b));
	cr_assert_eq(
	    pasco_model_num_variables(a), pasco_model_num_variables(b));
	for (size_t k = 0; k < pasco_model_num_variables(a); k++) {
		const int64_t    *sa, *sb;
		int32_t           ra = pasco_model_variable_shape(a, k, &sa);
		int32_t           rb = pasco_model_variable_shape(b, k, &sb);
		pasco_initializer ia = pasco_model_variable_init(a, k);
		pasco_initializer ib = pasco_model_variable_init(b, k);
		cr_assert_str_eq(pasco_model_variable_name(a, k),
		    pasco_model_variable_name(b, k));
		cr_assert_eq(ra, rb);
		cr_assert_arr_eq(sa, sb, (size_t) ra * sizeof(int64_t));
		cr_assert(ia.kind == ib.kind && ia.value == ib.value &&
		              ia.minval == ib.minval &&
		              ia.maxval == ib.maxval && ia.mean == ib.mean &&
		              ia.stddev == ib.stddev && ia.seed == ib.seed,
		    "variable %zu's initializer differs", k);
	}
	for (size_t i = 0; i < pasco_model_num_layers(a); i++) {
		const pasco_layer *la = pasco_model_layer(a, i);
		const pasco_layer *lb = pasco_model_layer(b, i);
		cr_assert_str_eq(la->name, lb->name);
		cr_assert_eq(la->kind, lb->kind);
		cr_assert_eq(la->ninputs, lb->ninputs);
		cr_assert_arr_eq(
		    la->inputs, lb->inputs, la->ninputs * sizeof(int32_t));
		cr_assert_eq(la->rate, lb->rate);
		cr_assert_eq(la->kernel_l2, lb->kernel_l2);
		cr_assert_eq(la->combiner, lb->combiner);
		cr_assert_eq(la->activation, lb->activation);
		cr_assert_eq(la->partitioner == NULL, lb->partitioner == NULL);
	}
}

static char *
round_trip(pasco_model *m, pasco_model **back)
{
	char *json, *again;
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert_eq(pasco_model_from_json(json, back), 0, "%s: %s", json,
	    pasco_model_last_error());
	assert_same_model(m, *back);
	PASCO_PASS(pasco_model_to_json(*back, &again));
	cr_assert_str_eq(json, again);
	free(again);
	return json;
}

Test(model_config, a_sequential_model_round_trips)
{
	pasco_layer_reset_names();
	pasco_model *m    = mlp(), *back;
	char        *json = round_trip(m, &back);
	/* Keras's names and fields are in it */
	cr_assert(strstr(json, "\"class_name\":\"Sequential\"") != NULL);
	cr_assert(strstr(json, "\"name\":\"dense_1\"") != NULL);
	cr_assert(
	    strstr(json, "{\"class_name\":\"L2\",\"config\":{\"l2\":0.01}}"),
	    "%s", json);
	cr_assert(strstr(json, "\"class_name\":\"TruncatedNormal\","
	                       "\"config\":{\"mean\":0,\"stddev\":0.1,"
	                       "\"seed\":7}") != NULL,
	    "%s", json);
	cr_assert(strstr(json, "\"use_bias\":false") != NULL);
	cr_assert(strstr(json, "\"rate\":0.25") != NULL);
	cr_assert(strstr(json, "inbound_nodes") == NULL);
	/* a seed derived from the model's: the same in both */
	cr_assert_eq(pasco_model_variable_init(back, 2).seed, 42 * 1000 + 3);
	free(json);
	pasco_model_free(back);
	pasco_model_free(m);
}

Test(model_config, a_normalization_layer_round_trips_without_its_statistics)
{
	pasco_layer_reset_names();
	pasco_layer  l[] = {pasco_layer_normalization(),
	     pasco_layer_dense(3, PASCO_ACT_SOFTMAX)};
	pasco_model *m, *back, *bad;
	PASCO_PASS(pasco_model_sequential(&m, 4, 2, l, 5));
	char *json = round_trip(m, &back);
	cr_assert(strstr(json, "{\"class_name\":\"Normalization\",\"config\":"
	                       "{\"name\":\"normalization\",\"axis\":-1,"
	                       "\"mean\":null,\"variance\":null,"
	                       "\"invert\":false}}") != NULL,
	    "%s", json);
	/* its mean and variance, then the Dense's kernel and bias */
	cr_assert_eq(pasco_model_num_variables(back), 4);
	cr_assert_str_eq(
	    pasco_model_variable_name(back, 0), "normalization/mean");
	cr_assert_str_eq(
	    pasco_model_variable_name(back, 1), "normalization/variance");
	/* statistics are not config: they come from adapt */
	const char *with_mean =
	    "{\"class_name\":\"Sequential\",\"config\":{\"name\":\"s\","
	    "\"seed\":1,\"inputs\":[{\"name\":\"input\",\"width\":4,"
	    "\"ids\":false}],\"layers\":[{\"class_name\":\"Normalization\","
	    "\"config\":{\"name\":\"n\",\"mean\":[1,2,3,4]}}]}}";
	cr_assert_eq(pasco_model_from_json(with_mean, &bad), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(), "mean must be null") != NULL,
	    "%s", pasco_model_last_error());
	free(json);
	pasco_model_free(back);
	pasco_model_free(m);
}

Test(model_config, a_functional_model_round_trips_with_its_wiring)
{
	pasco_layer_reset_names();
	pasco_partitioner p = pasco_fixed_shards_partitioner(3);
	pasco_model      *m = wide_deep(&p), *back;
	PASCO_PASS(pasco_model_set_name(m, "wide_deep"));
	char *json = round_trip(m, &back);
	cr_assert(strstr(json, "\"class_name\":\"Functional\"") != NULL);
	cr_assert(strstr(json, "\"inbound_nodes\":[\"dense\",\"embedding\"]"),
	    "%s", json);
	cr_assert(strstr(json, "\"seed\":\"1152921504606846976\"") != NULL,
	    "a seed past 2^53 is a string: %s", json);
	cr_assert(strstr(json, "\"num_shards\":3") != NULL);
	cr_assert_eq(pasco_model_layer(back, 0)->partitioner->num_shards, 3);
	cr_assert_eq(pasco_model_layer(back, 0)->combiner, PASCO_COMBINE_SUM);
	free(json);
	pasco_model_free(back);
	pasco_model_free(m);
}

/* from_json(text) fails with PASCO_EINVAL and a message holding want. */
static void
refused(const char *json, const char *want)
{
	pasco_model *m = (pasco_model *) 1;
	PASCO_FAIL(pasco_model_from_json(json, &m), PASCO_EINVAL);
	cr_assert_null(m);
	cr_assert(strstr(pasco_model_last_error(), want) != NULL,
	    "for %s: '%s' lacks '%s'", json, pasco_model_last_error(), want);
}

#define SEQ(layers)                                                           \
	"{\"class_name\":\"Sequential\",\"config\":{\"inputs\":[{\"name\":"   \
	"\"x\",\"width\":4}],\"layers\":[" layers "]}}"

Test(model_config, bad_configs_name_the_layer_and_the_field)
{
	refused("{", "not JSON");
	refused("{\"class_name\":\"Model\"}", "Sequential or Functional");
	refused(SEQ("{\"class_name\":\"Dense\",\"config\":{\"name\":\"d\","
	            "\"units\":0}}"),
	    "layers[0] (d): units must be an integer >= 1");
	refused(SEQ("{\"class_name\":\"Dense\",\"config\":{\"name\":\"d\","
	            "\"units\":2,\"unit\":3}}"),
	    "layers[0] (d): unknown field 'unit'");
	refused(SEQ("{\"class_name\":\"Dense\",\"config\":{\"units\":2}},"
	            "{\"class_name\":\"Dense\",\"config\":{\"name\":\"out\","
	            "\"units\":2,\"activation\":\"gelu\"}}"),
	    "layers[1] (out): unknown activation 'gelu'");
	refused(SEQ("{\"class_name\":\"Conv2D\",\"config\":{}}"),
	    "layers[0]: unknown class_name 'Conv2D'");
	refused(SEQ("{\"class_name\":\"Dense\",\"config\":{\"name\":\"d\","
	            "\"units\":2,\"kernel_initializer\":{\"class_name\":"
	            "\"Identity\"}}}"),
	    "layers[0] (d): kernel_initializer: unknown class_name "
	    "'Identity'");
	refused(SEQ("{\"class_name\":\"Dropout\",\"config\":{\"name\":\"p\","
	            "\"rate\":1.5}}"),
	    "p: rate must be in [0, 1)");
	refused(SEQ("{\"class_name\":\"Dense\",\"config\":{\"name\":\"d\","
	            "\"units\":2,\"use_bias\":1}}"),
	    "layers[0] (d): use_bias must be true or false");
	refused("{\"class_name\":\"Functional\",\"config\":{\"inputs\":[{"
	        "\"name\":\"x\",\"width\":4}],\"layers\":[{\"class_name\":"
	        "\"Dense\",\"config\":{\"name\":\"d\",\"units\":2},"
	        "\"inbound_nodes\":[\"y\"]}]}}",
	    "layers[0] (d): inbound node 'y' is no input and no earlier "
	    "layer");
	refused("{\"class_name\":\"Sequential\",\"config\":{\"inputs\":[],"
	        "\"layers\":[]}}",
	    "inputs must be a non-empty list");
	/* fuzz/regressions/model_config/model_name_too_long_left_the_model:
	 * the model was made, then its name refused, and handed out */
	refused("{\"class_name\":\"Sequential\",\"config\":{\"name\":\""
	        "a_model_name_longer_than_sixty_three_bytes_which_is_the_cap_"
	        "of_a_name\",\"inputs\":[{\"name\":\"x\",\"width\":4}],"
	        "\"layers\":[{\"class_name\":\"Dense\",\"config\":{"
	        "\"units\":2}}]}}",
	    "a model's name is 1 to 63 bytes");
}

#define IDS_SEQ(layers)                                                       \
	"{\"class_name\":\"Sequential\",\"config\":{\"inputs\":[{\"name\":"   \
	"\"x\",\"width\":4,\"ids\":true}],\"layers\":[" layers "]}}"

/* A variable's element count is bounded before anything is allocated or
 * sized in bytes: 2^31 for one read whole each step, 2^40 for an
 * embedding table (read by rows); a layer's output width 2^31. Dense(9e15)
 * and Embedding(9e15, 64) were read before. */
Test(model_config, sizes_past_the_bounds_are_refused_naming_the_variable)
{
	pasco_model *m;
	refused(SEQ("{\"class_name\":\"Dense\",\"config\":{\"name\":\"d\","
	            "\"units\":1000000000}}"),
	    "d: its variable 'd/kernel' of shape [4, 1000000000] has more "
	    "elements than the most a variable read whole each step may "
	    "have (2^31)");
	refused(IDS_SEQ("{\"class_name\":\"Embedding\",\"config\":{\"name\":"
	                "\"e\",\"input_dim\":1000000000000,"
	                "\"output_dim\":64}}"),
	    "e: its variable 'e/embeddings' of shape [1000000000000, 64] "
	    "has more elements than the most an embedding table may have "
	    "(2^40)");
	/* a large table within the bound is a model (not created here) */
	PASCO_PASS(pasco_model_from_json(
	    IDS_SEQ("{\"class_name\":\"Embedding\",\"config\":{\"name\":\"e\","
	            "\"input_dim\":1000000000,\"output_dim\":64}}"),
	    &m));
	pasco_model_free(m);
}

/* Every size field of a config is bounded as it is read, before any
 * variable is made, and its refusal names the layer, the field and the
 * bound (model_impl.h: 2^31 for a width, 2^40 for a count of ids). */
Test(model_config, size_fields_past_their_bounds_are_refused_by_name)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
	    {SEQ("{\"class_name\":\"Dense\",\"config\":{\"name\":\"d\","
	         "\"units\":9000000000000000}}"),
	        "layers[0] (d): units is 9000000000000000; the most is 2^31 "
	        "(2147483648)"},
	    {SEQ("{\"class_name\":\"Dense\",\"config\":{\"name\":\"d\","
	         "\"units\":2147483649}}"),
	        "layers[0] (d): units is 2147483649; the most is 2^31 "
	        "(2147483648)"},
	    {IDS_SEQ("{\"class_name\":\"Embedding\",\"config\":{\"name\":"
	             "\"e\",\"input_dim\":9000000000000000,\"output_dim\":"
	             "64}}"),
	        "layers[0] (e): input_dim is 9000000000000000; the most is "
	        "2^40 (1099511627776)"},
	    {IDS_SEQ("{\"class_name\":\"Embedding\",\"config\":{\"name\":"
	             "\"e\",\"input_dim\":10,\"output_dim\":4294967296}}"),
	        "layers[0] (e): output_dim is 4294967296; the most is 2^31 "
	        "(2147483648)"},
	    {IDS_SEQ("{\"class_name\":\"Embedding\",\"config\":{\"name\":"
	             "\"e\",\"input_dim\":10,\"output_dim\":4,\"dynamic\":{"
	             "\"max_rows_per_ps\":4294967295}}}"),
	        "layers[0] (e): max_rows_per_ps is 4294967295; the most is "
	        "4294967294"},
	    {"{\"class_name\":\"Sequential\",\"config\":{\"inputs\":[{"
	     "\"name\":\"x\",\"width\":3000000000}],\"layers\":[{"
	     "\"class_name\":\"Dense\",\"config\":{\"name\":\"d\",\"units\":"
	     "1}}]}}",
	        "inputs[0]: width is 3000000000; the most is 2^31 "
	        "(2147483648)"},
	    {IDS_SEQ("{\"class_name\":\"CategoryEncoding\",\"config\":{"
	             "\"name\":\"c\",\"num_tokens\":9000000000000000}}"),
	        "layers[0] (c): num_tokens is 9000000000000000; the most is "
	        "2^31 (2147483648)"},
	    {SEQ("{\"class_name\":\"Hashing\",\"config\":{\"name\":\"h\","
	         "\"num_bins\":9000000000000000}}"),
	        "layers[0] (h): num_bins is 9000000000000000; the most is "
	        "2^40 (1099511627776)"},
	    {SEQ("{\"class_name\":\"Discretization\",\"config\":{\"name\":"
	         "\"z\",\"num_bins\":9000000000000000}}"),
	        "layers[0] (z): num_bins is 9000000000000000; the most is "
	        "2^40 (1099511627776)"},
	    {SEQ("{\"class_name\":\"StringLookup\",\"config\":{\"name\":"
	         "\"s\",\"num_oov_indices\":9000000000000000}}"),
	        "layers[0] (s): num_oov_indices is 9000000000000000; the most "
	        "is 2^31 (2147483648)"},
	    {SEQ("{\"class_name\":\"StringLookup\",\"config\":{\"name\":"
	         "\"s\",\"max_tokens\":9000000000000000}}"),
	        "layers[0] (s): max_tokens is 9000000000000000; the most is "
	        "2^31 (2147483648)"},
	    {SEQ("{\"class_name\":\"Reshape\",\"config\":{\"name\":\"r\","
	         "\"target_shape\":[2,9000000000000000]}}"),
	        "layers[0] (r): target_shape[1] is 9000000000000000; the most "
	        "is 2^31 (2147483648)"},
	    {SEQ("{\"class_name\":\"Dropout\",\"config\":{\"name\":\"o\","
	         "\"rate\":0.5,\"noise_shape\":[null,9000000000000000]}}"),
	        "layers[0] (o): noise_shape[1] is 9000000000000000; the most "
	        "is 2^31 (2147483648)"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		pasco_model *m = (pasco_model *) 1;
		PASCO_FAIL(
		    pasco_model_from_json(cases[k].json, &m), PASCO_EINVAL);
		cr_assert_null(m);
		cr_assert_str_eq(pasco_model_last_error(), cases[k].want,
		    "for %s", cases[k].json);
	}
}

/* A functional config of n layers d0..d(n-1) on input x, each on the one
 * before (Dense(2), or Activation(relu) every other one, so half have
 * variables); the last is named `last`. The caller frees it. */
static char *
chain_config(size_t n, const char *last)
{
	size_t cap = 200 + n * 160, at = 0;
	char  *j = malloc(cap);
	cr_assert_not_null(j);
	at += (size_t) snprintf(j, cap,
	    "{\"class_name\":\"Functional\",\"config\":{\"inputs\":[{"
	    "\"name\":\"x\",\"width\":4}],\"layers\":[");
	for (size_t i = 0; i < n; i++) {
		char name[32], in[32];
		snprintf(name, sizeof(name), "d%zu", i);
		snprintf(in, sizeof(in), i == 0 ? "x" : "d%zu", i - 1);
		at += (size_t) snprintf(j + at, cap - at,
		    "%s{\"class_name\":\"%s\",\"config\":{\"name\":\"%s\"%s},"
		    "\"inbound_nodes\":[\"%s\"]}",
		    i > 0 ? "," : "", i % 2 ? "Activation" : "Dense",
		    i + 1 == n ? last : name,
		    i % 2 ? ",\"activation\":\"relu\"" : ",\"units\":2", in);
	}
	snprintf(j + at, cap - at, "]}}");
	return j;
}

static double
thread_cpu_seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double) t.tv_sec + (double) t.tv_nsec * 1e-9;
}

/* Reading a config, and copying the model (as a worker does at every
 * call), take time linear in the layers: names are checked and inbound
 * nodes resolved through a table, not against every earlier layer (a
 * config of 50,000 layers took 15 to 27 s of a worker's thread; this one,
 * at the cap, 7 s to read and 5 s to copy, now 0.15 s together). The
 * bound is CPU time of this thread, so other processes on the machine do
 * not move it. A duplicate name is still refused, naming both layers. */
Test(model_config, a_config_at_the_layer_cap_reads_in_linear_time)
{
	size_t       n    = PASCO_MODEL_MAX_LAYERS;
	char        *json = chain_config(n, "out");
	pasco_model *m, *copy;
	double       t0 = thread_cpu_seconds(), t;
	PASCO_PASS(pasco_model_from_json(json, &m));
	PASCO_PASS(pasci_model_clone(m, &copy));
	t = thread_cpu_seconds() - t0;
	cr_assert_eq(pasco_model_num_layers(copy), n);
	cr_assert_eq(pasco_model_num_variables(copy), n);
	cr_assert_eq(
	    pasco_model_layer(copy, n - 1)->inputs[0], (int32_t) n - 2);
	cr_assert(t < 2.0,
	    "reading and copying %zu layers took %.2f s of CPU (linear: "
	    "well under 1 s)",
	    n, t);
	pasco_model_free(copy);
	pasco_model_free(m);
	free(json);

	json = chain_config(20000, "d0");
	refused(json, "layers 0 and 19999 are both named 'd0'");
	free(json);
}

/* More layers than PASCO_MODEL_MAX_LAYERS: refused at once, in a config
 * and from C, naming the cap. */
Test(model_config, a_model_past_the_layer_cap_is_refused_naming_it)
{
	size_t       n    = PASCO_MODEL_MAX_LAYERS + 1;
	char        *json = chain_config(n, "out");
	pasco_layer *l    = calloc(n, sizeof(*l));
	pasco_model *m    = (pasco_model *) 1;
	refused(json, "config: 32769 layers; a model has at most 32768 "
	              "(PASCO_MODEL_MAX_LAYERS)");
	cr_assert_not_null(l);
	for (size_t i = 0; i < n; i++) {
		l[i] = pasci_layer_defaults(PASCO_LAYER_DROPOUT);
		snprintf(l[i].name, sizeof(l[i].name), "p%zu", i);
	}
	PASCO_FAIL(pasco_model_sequential(&m, 4, n, l, 1), PASCO_EINVAL);
	cr_assert_null(m);
	cr_assert_str_eq(pasco_model_last_error(),
	    "a model of 32769 layers and 1 inputs: at most 32768 of each "
	    "(PASCO_MODEL_MAX_LAYERS)");
	PASCO_PASS(pasco_model_sequential(&m, 4, n - 1, l, 1));
	pasco_model_free(m);
	free(l);
	free(json);
}

Test(model_config, compile_resolves_accuracy_as_keras_does)
{
	pasco_model *m     = mlp(), *b;
	pasco_layer  l[]   = {pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	pasco_layer  r[]   = {pasco_layer_dense(3, PASCO_ACT_LINEAR)};
	const char  *acc[] = {"accuracy", "mae"};
	pasco_model *reg;

	PASCO_PASS(pasco_model_compile(m,
	    &(pasco_compile_options){.loss = "sparse_categorical_crossentropy",
	        .metrics                   = acc,
	        .nmetrics                  = 2}));
	cr_assert_eq(
	    m->compile.metric_kinds[0], PASCI_METRIC_SPARSE_CAT_ACCURACY);
	cr_assert_eq(m->compile.opt.kind, PASCO_OPT_RMSPROP); /* Keras's */
	PASCO_PASS(pasco_model_sequential(&b, 4, 1, l, 1));
	PASCO_PASS(pasco_model_compile(
	    b, &(pasco_compile_options){.loss = "binary_crossentropy",
	           .metrics                   = acc,
	           .nmetrics                  = 1}));
	cr_assert_eq(b->compile.metric_kinds[0], PASCI_METRIC_BINARY_ACCURACY);
	PASCO_PASS(pasco_model_sequential(&reg, 4, 1, r, 1));
	PASCO_PASS(pasco_model_compile(
	    reg, &(pasco_compile_options){
	             .loss = "mse", .metrics = acc, .nmetrics = 1}));
	cr_assert_eq(
	    reg->compile.metric_kinds[0], PASCI_METRIC_CATEGORICAL_ACCURACY);
	/* one-hot labels: categorical accuracy, as Keras resolves it */
	PASCO_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){.loss = "categorical_crossentropy",
	           .metrics                   = acc,
	           .nmetrics                  = 1}));
	cr_assert_eq(
	    m->compile.metric_kinds[0], PASCI_METRIC_CATEGORICAL_ACCURACY);

	/* errors */
	PASCO_FAIL(
	    pasco_model_compile(reg,
	        &(pasco_compile_options){.loss = "categorical_crossentropy"}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "categorical_crossentropy: the output of") != NULL,
	    "%s", pasco_model_last_error());
	PASCO_FAIL(pasco_model_compile(reg,
	               &(pasco_compile_options){
	                   .loss = "sparse_categorical_crossentropy"}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "neither logits") != NULL);
	PASCO_FAIL(
	    pasco_model_compile(reg, &(pasco_compile_options){.loss = "mse",
	                                 .metrics  = (const char *[]){"auc"},
	                                 .nmetrics = 1}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "auc takes one probability per example") != NULL,
	    "%s", pasco_model_last_error());
	PASCO_FAIL(
	    pasco_model_compile(reg, &(pasco_compile_options){.loss = "mse",
	                                 .metrics  = (const char *[]){"f1"},
	                                 .nmetrics = 1}),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "unknown metric 'f1'"));
	PASCO_FAIL(pasco_model_compile(reg,
	               &(pasco_compile_options){.loss = "categorical_hinge"}),
	    PASCO_EINVAL);
	pasco_model_free(reg);
	pasco_model_free(b);
	pasco_model_free(m);
}

Test(model_config, the_compile_config_travels_with_the_model)
{
	pasco_optimizer opts[] = {pasco_sgd(0.1, 0.9, true),
	    pasco_adagrad(0.2), pasco_rmsprop(0.01, 0.8, 0.5, true),
	    pasco_adam(0.003, true), pasco_ftrl(0.05, 0.01, 0.02)};
	opts[4].l2_shrinkage   = 0.125;
	opts[4].beta           = 0.5;
	for (size_t i = 0; i < sizeof(opts) / sizeof(*opts); i++) {
		pasco_model *m = mlp(), *back;
		PASCO_PASS(pasco_model_compile(
		    m, &(pasco_compile_options){
		           .loss           = "sparse_categorical_crossentropy",
		           .from_logits    = false,
		           .optimizer      = opts[i],
		           .metrics        = (const char *[]){"acc", "mse"},
		           .nmetrics       = 2,
		           .no_global_step = i == 2}));
		char *json = round_trip(m, &back);
		cr_assert(strstr(json,
		              "\"compile_config\":{\"loss\":"
		              "\"sparse_categorical_crossentropy\"") != NULL);
		const pasci_compile *a = &m->compile, *b = &back->compile;
		cr_assert(a->opt.kind == b->opt.kind &&
		              a->opt.learning_rate == b->opt.learning_rate &&
		              a->opt.momentum == b->opt.momentum &&
		              a->opt.nesterov == b->opt.nesterov &&
		              a->opt.centered == b->opt.centered &&
		              a->opt.amsgrad == b->opt.amsgrad &&
		              a->opt.l2_shrinkage == b->opt.l2_shrinkage &&
		              a->opt.beta == b->opt.beta &&
		              a->global_step == b->global_step &&
		              a->state_len == b->state_len &&
		              a->loss.kind == b->loss.kind &&
		              a->metric_kinds[1] == b->metric_kinds[1],
		    "optimizer %zu: the compile config differs: %s", i, json);
		free(json);
		pasco_model_free(back);
		pasco_model_free(m);
	}
	refused("{\"class_name\":\"Sequential\",\"config\":{\"inputs\":[{"
	        "\"name\":\"x\",\"width\":4}],\"layers\":[{\"class_name\":"
	        "\"Dense\",\"config\":{\"units\":1}}]},\"compile_config\":{"
	        "\"loss\":\"mse\",\"optimizer\":{\"class_name\":\"Adam\","
	        "\"config\":{\"momentum\":0.9}}}}",
	    "compile_config: optimizer: Adam has no field 'momentum'");
}

Test(model_config, metric_counts_give_keras_values)
{
	pasco_layer  l[] = {pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	pasco_model *m;
	const char  *names[] = {
	     "accuracy", "precision", "recall", "auc", "mae"};
	double        state[2 + 2 + 2 + 800 + 2] = {0};
	float         p[] = {0.9f, 0.2f, 0.7f, 0.4f, 0.6f};
	float         y[] = {1, 0, 0, 1, 1};
	pasco_tensor *pt, *yt;
	PASCO_PASS(pasco_model_sequential(&m, 4, 1, l, 1));
	PASCO_PASS(pasco_model_compile(
	    m, &(pasco_compile_options){.loss = "binary_crossentropy",
	           .metrics                   = names,
	           .nmetrics                  = 5}));
	cr_assert_eq(m->compile.state_len, 2 + 2 + 2 + 800 + 2);
	PASCO_PASS(pasco_tensor_from(
	    &pt, PASCO_F32, 2, (int64_t[]){5, 1}, p, sizeof(p)));
	PASCO_PASS(pasco_tensor_from(
	    &yt, PASCO_F32, 1, (int64_t[]){5}, y, sizeof(y)));
	PASCO_PASS(pasci_metric_counts(m, pt, yt, state));
	/* predicted positive: 0.9 0.7 0.6 -> tp 2, fp 1, fn 1; correct 3/5 */
	cr_assert_float_eq(pasci_metric_result(m, 0, state), 0.6, 1e-12);
	cr_assert_float_eq(pasci_metric_result(m, 1, state), 2.0 / 3, 1e-12);
	cr_assert_float_eq(pasci_metric_result(m, 2, state), 2.0 / 3, 1e-12);
	/* positives 0.9 0.4 0.6 against negatives 0.2 0.7: 4 of 6 pairs */
	cr_assert_float_eq(pasci_metric_result(m, 3, state), 4.0 / 6, 0.01);
	cr_assert_float_eq(pasci_metric_result(m, 4, state),
	    (0.1 + 0.2 + 0.7 + 0.6 + 0.4) / 5, 1e-6);
	pasco_tensor_release(yt);
	/* targets that do not fit the output name the metric */
	PASCO_PASS(pasco_tensor_from(
	    &yt, PASCO_F32, 1, (int64_t[]){4}, y, 4 * sizeof(float)));
	PASCO_FAIL(pasci_metric_counts(m, pt, yt, state), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "accuracy: targets f32[4] do not fit the output [5, 1]"),
	    "%s", pasco_model_last_error());
	pasco_tensor_release(yt);
	pasco_tensor_release(pt);
	pasco_model_free(m);
}
