/* Layers and the Sequential model (issue 20): Keras's names, the
 * variables on in-process ps tasks (names, shapes, placement, initial
 * values), the forward pass against the kit's kernels, errors naming the
 * layer, binding on a worker, and a small MLP trained with the train
 * step. */
#include "layers_impl.h"
#include "tape_check.h"

#include <math.h>
#include <string.h>

TestSuite(model_layers, .timeout = 60);

static double
max_diff(const pasco_tensor *a, const pasco_tensor *b)
{
	double m = 0;
	cr_assert(pasco_tensor_same_spec(a, b));
	for (int64_t i = 0; i < a->count; i++) {
		m = fmax(
		    m, fabs(pasco_tensor_get(a, i) - pasco_tensor_get(b, i)));
	}
	return m;
}

static pasco_tensor *
uniform(int32_t rank, const int64_t *shape, uint64_t seed)
{
	pasco_tensor     *t;
	pasco_initializer u = pasco_init_uniform(-1, 1, seed);
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, rank, shape));
	PASCO_PASS(pasco_initializer_fill(&u, t, rank, shape, 0));
	return t;
}

Test(model_layers, layers_are_named_as_keras_names_them)
{
	pasco_layer_reset_names();
	pasco_layer d0 = pasco_layer_dense(4, PASCO_ACT_RELU);
	pasco_layer e0 = pasco_layer_embedding(10, 3);
	pasco_layer d1 = pasco_layer_dense(2, PASCO_ACT_LINEAR);
	pasco_layer p0 = pasco_layer_dropout(0.5);
	pasco_layer d2 = pasco_layer_dense(1, PASCO_ACT_SIGMOID);
	cr_assert_str_eq(d0.name, "dense");
	cr_assert_str_eq(e0.name, "embedding");
	cr_assert_str_eq(d1.name, "dense_1");
	cr_assert_str_eq(p0.name, "dropout");
	cr_assert_str_eq(d2.name, "dense_2");
	/* Keras's defaults */
	cr_assert(d0.use_bias);
	cr_assert_eq(d1.activation, PASCO_ACT_LINEAR);
	cr_assert_eq(d0.kernel_initializer.kind, PASCO_INIT_GLOROT_UNIFORM);
	cr_assert_eq(d0.bias_initializer.kind, PASCO_INIT_ZEROS);
	cr_assert_eq(e0.embeddings_initializer.kind, PASCO_INIT_UNIFORM);
	cr_assert_eq(e0.embeddings_initializer.minval, -0.05);
	cr_assert_eq(e0.embeddings_initializer.maxval, 0.05);
	cr_assert_eq(e0.combiner, PASCO_COMBINE_MEAN);

	/* a layer without a name gets one when the model is made */
	pasco_model *m;
	pasco_layer  l[] = {e0, d1, {.kind = PASCO_LAYER_DENSE, .units = 2}};
	PASCO_PASS(pasco_model_sequential(&m, 3, 3, l, 1));
	cr_assert_str_eq(pasco_model_layer(m, 2)->name, "dense_3");
	cr_assert_eq(pasco_model_num_variables(m), 4);
	const char   *want[]      = {"embedding/embeddings", "dense_1/kernel",
	           "dense_1/bias", "dense_3/kernel"};
	const int64_t shapes[][2] = {{10, 3}, {3, 2}, {2, 0}, {2, 2}};
	for (size_t k = 0; k < 4; k++) {
		const int64_t *s;
		int32_t        r = pasco_model_variable_shape(m, k, &s);
		cr_assert_str_eq(pasco_model_variable_name(m, k), want[k]);
		cr_assert_eq(r, k == 2 ? 1 : 2);
		cr_assert_eq(s[0], shapes[k][0]);
		cr_assert(r == 1 || s[1] == shapes[k][1]);
	}
	cr_assert_eq(pasco_model_output_width(m), 2);
	pasco_model_free(m);

	/* the same name twice in one model */
	pasco_layer dup[] = {d0, d0};
	PASCO_FAIL(pasco_model_sequential(&m, 3, 2, dup, 1), PASCO_EINVAL);
	cr_assert_null(m);
	cr_assert_str_eq(
	    pasco_model_last_error(), "layers 0 and 1 are both named 'dense'");
	pasco_layer_reset_names();
	cr_assert_str_eq(pasco_layer_dense(1, 0).name, "dense");
}

Test(model_layers, bad_options_name_the_layer)
{
	pasco_model *m;
	pasco_layer_reset_names();
	pasco_layer a[] = {pasco_layer_dense(4, PASCO_ACT_RELU),
	    pasco_layer_embedding(10, 3)};
	PASCO_FAIL(pasco_model_sequential(&m, 3, 2, a, 1), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "embedding: an Embedding is called on one model input of ids");
	pasco_layer b[] = {pasco_layer_dense(0, PASCO_ACT_RELU)};
	PASCO_FAIL(pasco_model_sequential(&m, 3, 1, b, 1), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "dense_1: units must be positive, got 0");
	pasco_layer c[] = {pasco_layer_dropout(1.0)};
	PASCO_FAIL(pasco_model_sequential(&m, 3, 1, c, 1), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "dropout: rate must be in [0, 1), got 1");
	pasco_loss loss;
	PASCO_FAIL(pasco_loss_from_name("categorical_hinge", false, &loss),
	    PASCO_EINVAL);
	cr_assert(strstr(
	    pasco_model_last_error(), "unknown loss 'categorical_hinge'"));
	PASCO_PASS(pasco_loss_from_name(
	    "sparse_categorical_crossentropy", true, &loss));
	cr_assert_eq(loss.kind, PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY);
	cr_assert(loss.from_logits);
}

/* Dense(3, relu) -> Dense(2, softmax) on x [4, 5], checked against the
 * kit's kernels (pasco_matmul, pasco_bias_add, pasco_activate) and a
 * softmax computed by hand. */
Test(model_layers, the_forward_pass_is_the_kit_kernels)
{
	pasco_model *m;
	pasco_tape  *tp;
	pasco_layer_reset_names();
	pasco_layer l[] = {pasco_layer_dense(3, PASCO_ACT_RELU),
	    pasco_layer_dense(2, PASCO_ACT_SOFTMAX)};
	PASCO_PASS(pasco_model_sequential(&m, 5, 2, l, 1));
	pasco_tensor *x   = uniform(2, (int64_t[]){4, 5}, 1);
	pasco_tensor *w[] = {uniform(2, (int64_t[]){5, 3}, 2),
	    uniform(1, (int64_t[]){3}, 3), uniform(2, (int64_t[]){3, 2}, 4),
	    uniform(1, (int64_t[]){2}, 5)};
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tnode *nodes[4];
	for (int k = 0; k < 4; k++) {
		nodes[k] = pasco_tape_watch(tp, w[k]);
	}
	pasco_tnode *y = pasco_model_call_with(m, tp, &x, nodes);
	cr_assert_not_null(y, "%s", pasco_tape_message(tp));

	pasco_tensor *a, *b, *h, *z, *want;
	PASCO_PASS(pasco_matmul(x, false, w[0], false, &a));
	PASCO_PASS(pasco_bias_add(a, w[1], &b));
	PASCO_PASS(pasco_activate(PASCO_RELU, b, &h));
	pasco_tensor_release(a);
	pasco_tensor_release(b);
	PASCO_PASS(pasco_matmul(h, false, w[2], false, &a));
	PASCO_PASS(pasco_bias_add(a, w[3], &z));
	PASCO_PASS(pasco_tensor_copy(&want, z));
	for (int r = 0; r < 4; r++) {
		double z0 = pasco_tensor_get(z, r * 2);
		double z1 = pasco_tensor_get(z, r * 2 + 1);
		double mx = fmax(z0, z1), s = exp(z0 - mx) + exp(z1 - mx);
		pasco_tensor_set(want, r * 2, exp(z0 - mx) / s);
		pasco_tensor_set(want, r * 2 + 1, exp(z1 - mx) / s);
	}
	cr_assert(max_diff(pasco_tnode_value(y), want) < 1e-6);
	for (int k = 0; k < 4; k++) {
		pasco_tensor_release(w[k]);
	}
	pasco_tensor_release(a);
	pasco_tensor_release(h);
	pasco_tensor_release(z);
	pasco_tensor_release(want);
	pasco_tensor_release(x);
	pasco_tape_free(tp);
	pasco_model_free(m);
}

Test(model_layers, forward_errors_name_the_layer_and_the_shapes)
{
	pasco_model *m;
	pasco_tape  *tp;
	pasco_layer_reset_names();
	(void) pasco_layer_dense(1, 0); /* takes "dense" */
	pasco_layer l[] = {pasco_layer_dense(10, PASCO_ACT_LINEAR)};
	l[0].use_bias   = false;
	PASCO_PASS(pasco_model_sequential(&m, 64, 1, l, 1));
	pasco_tensor *x = uniform(2, (int64_t[]){32, 63}, 1);
	pasco_tensor *w = uniform(2, (int64_t[]){64, 10}, 2);
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tnode *n[] = {pasco_tape_watch(tp, w)};
	cr_assert_null(pasco_model_call_with(m, tp, &x, n));
	cr_assert_eq(pasco_tape_error(tp), PASCO_EINVAL);
	cr_assert_str_eq(pasco_tape_message(tp),
	    "dense_1: input [32, 63] does not match kernel [64, 10]");
	pasco_tape_free(tp);
	/* an unbound model cannot read its variables */
	pasco_tape_var tv[1];
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	cr_assert_null(pasco_model_call(m, tp, &x, tv));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "dense_1: variable 'dense_1/kernel' is not created or bound "
	    "(pasco_model_create_variables, pasco_model_bind)");
	pasco_tape_free(tp);
	/* sparse categorical crossentropy of a linear output, not logits */
	pasco_tensor *labels;
	PASCO_PASS(pasco_tensor_alloc(&labels, PASCO_I32, 1, (int64_t[]){32}));
	pasco_tensor *x64 = uniform(2, (int64_t[]){32, 64}, 3);
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	n[0] = pasco_tape_watch(tp, w);
	cr_assert_null(pasco_model_loss(m, tp, &x64, labels,
	    (pasco_loss){.kind = PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
	        .from_logits   = false},
	    n));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "sparse_categorical_crossentropy: the output of 'dense_1' "
	    "(activation linear) is neither logits (from_logits) nor softmax "
	    "probabilities");
	pasco_tape_free(tp);
	pasco_model_free(m);
	/* an Embedding's input must be ids */
	pasco_layer e[] = {pasco_layer_embedding(10, 4)};
	PASCO_PASS(pasco_model_sequential(&m, 2, 1, e, 1));
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tensor *t = uniform(2, (int64_t[]){10, 4}, 4);
	n[0]            = pasco_tape_watch_table(tp, t);
	cr_assert_null(pasco_model_call_with(m, tp, &x, n));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "embedding: input f32[32, 63] is not ids (i32 or i64) [batch, 2]");
	pasco_tape_free(tp);
	/* checked before any read */
	pasco_tape_var ev[1];
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	cr_assert_null(pasco_model_call(m, tp, &x, ev));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "embedding: input f32[32, 63] is not ids (i32 or i64) [batch, 2]");
	pasco_tape_free(tp);
	pasco_model_free(m);
	pasco_tensor_release(t);
	pasco_tensor_release(labels);
	pasco_tensor_release(x64);
	pasco_tensor_release(x);
	pasco_tensor_release(w);
}

/* Embedding(10, 4) split in 2 by its own partitioner, Dense(3): the
 * variables on 2 ps under Keras's names, placed round-robin, with the
 * values that creating them by hand with the same initializers gives. */
Test(model_layers, variables_are_created_on_the_ps_with_keras_names)
{
	setup             st;
	pasco_model      *m;
	pasco_partitioner two = pasco_fixed_shards_partitioner(2);
	pasco_layer_reset_names();
	pasco_layer l[]         = {pasco_layer_embedding(10, 4),
	            pasco_layer_dense(3, PASCO_ACT_LINEAR)};
	l[0].partitioner        = &two;
	l[1].bias_initializer   = pasco_init_constant(0.5);
	l[1].kernel_initializer = pasco_init_glorot_uniform(77);
	setup_start(&st, 2);
	PASCO_PASS(pasco_model_sequential(&m, 2, 2, l, 9));
	PASCO_PASS(pasco_model_create_variables(m, st.s));
	const char *names[] = {
	    "embedding/embeddings", "dense/kernel", "dense/bias"};
	const int32_t tasks[] = {0, 0, 1}; /* shards 0, 1; then 0; then 1 */
	for (size_t k = 0; k < 3; k++) {
		pasco_variable   *v    = pasco_model_variable(m, k), *hand;
		pasco_initializer init = pasco_model_variable_init(m, k);
		pasco_tensor     *a, *b;
		char              hname[64];
		cr_assert_not_null(v);
		cr_assert_str_eq(pasco_variable_name(v), names[k]);
		cr_assert_eq(pasco_variable_ps_task(v), tasks[k]);
		cr_assert_eq(pasco_variable_num_shards(v), k == 0 ? 2 : 1);
		/* the same initializer and seed by hand: the same values */
		snprintf(hname, sizeof(hname), "hand_%zu", k);
		PASCO_PASS(pasco_variable_create_init(&hand, st.s, hname,
		    PASCO_F32, pasco_variable_rank(v), pasco_variable_shape(v),
		    &init));
		PASCO_PASS(pasco_variable_read(v, &a));
		PASCO_PASS(pasco_variable_read(hand, &b));
		cr_assert_eq(max_diff(a, b), 0, "%s", names[k]);
		if (k == 0) { /* Keras's 'uniform': U(-0.05, 0.05) */
			cr_assert_eq(init.seed, 9 * 1000 + 0 + 1);
			for (int64_t i = 0; i < a->count; i++) {
				cr_assert(
				    fabs(pasco_tensor_get(a, i)) <= 0.05);
			}
			cr_assert(
			    pasco_tensor_get(a, 0) != pasco_tensor_get(a, 1));
		}
		if (k == 1) {
			cr_assert_eq(
			    init.seed, 77, "an explicit seed is kept");
		}
		if (k == 2) {
			cr_assert_eq(pasco_tensor_get(a, 2), 0.5);
		}
		pasco_tensor_release(a);
		pasco_tensor_release(b);
		pasco_variable_free(hand);
	}
	/* made again (a restarted chief): the same variables, kept */
	pasco_model  *again;
	pasco_tensor *w0, *w1;
	pasco_layer_reset_names();
	pasco_layer l2[]  = {pasco_layer_embedding(10, 4),
	     pasco_layer_dense(3, PASCO_ACT_LINEAR)};
	l2[0].partitioner = &two;
	PASCO_PASS(pasco_model_sequential(&again, 2, 2, l2, 123));
	PASCO_PASS(pasco_model_create_variables(again, st.s));
	PASCO_PASS(pasco_variable_read(pasco_model_variable(m, 1), &w0));
	PASCO_PASS(pasco_variable_read(pasco_model_variable(again, 1), &w1));
	cr_assert_eq(max_diff(w0, w1), 0);
	pasco_tensor_release(w0);
	pasco_tensor_release(w1);
	pasco_model_free(again);
	/* another shape under an existing name: the strategy says so */
	pasco_layer_reset_names();
	pasco_layer l3[] = {pasco_layer_embedding(11, 4)};
	PASCO_PASS(pasco_model_sequential(&again, 2, 1, l3, 1));
	PASCO_FAIL(pasco_model_create_variables(again, st.s), PASCO_EEXIST);
	cr_assert(strstr(pasco_model_last_error(),
	              "embedding: variable 'embedding/embeddings' already "
	              "exists"),
	    "%s", pasco_model_last_error());
	cr_assert_null(pasco_model_variable(again, 0));
	pasco_model_free(again);
	pasco_model_free(m);
	setup_stop(&st);
}

/* Two separable classes (x0 + x1 > 0 or not, away from the line): an MLP
 * Dense(8, relu) -> Dropout -> Dense(2, softmax) trained with the train
 * step, each step one read and one apply (one global step), reaches a low
 * loss and accuracy 1. The steps run on a second model bound to the
 * first's handles, as a worker's step function would. */
#define N 32

static void
make_data(pasco_tensor **x, pasco_tensor **y)
{
	float   xv[N * 2];
	int32_t yv[N];
	for (int i = 0; i < N; i++) {
		double a = (i % 8) / 8.0 - 0.45, d = 0.3 + (i / 8) * 0.15;
		int    c      = i % 2;
		xv[i * 2]     = (float) (a + (c ? d : -d) / 2);
		xv[i * 2 + 1] = (float) (-a + (c ? d : -d) / 2);
		yv[i]         = c;
	}
	PASCO_PASS(pasco_tensor_from(
	    x, PASCO_F32, 2, (int64_t[]){N, 2}, xv, sizeof(xv)));
	PASCO_PASS(pasco_tensor_from(
	    y, PASCO_I32, 1, (int64_t[]){N}, yv, sizeof(yv)));
}

Test(model_layers, an_mlp_trained_with_the_train_step_learns)
{
	setup           st;
	pasco_model    *chief, *worker;
	pasco_variable *gs;
	pasco_tensor   *x, *y;
	pasco_optimizer opt   = pasco_adam(0.05, false);
	double          first = 0, last = 0;
	pasco_loss      loss;
	setup_start(&st, 2);
	pasco_layer_reset_names();
	pasco_layer l[] = {pasco_layer_dense(8, PASCO_ACT_RELU),
	    pasco_layer_dropout(0.1), pasco_layer_dense(2, PASCO_ACT_SOFTMAX)};
	l[0].kernel_l2  = 1e-4;
	PASCO_PASS(pasco_model_sequential(&chief, 2, 3, l, 3));
	PASCO_PASS(pasco_model_create_variables(chief, st.s));
	PASCO_PASS(pasco_strategy_global_step(st.s, &gs));

	/* the worker's model: other automatic names, bound to the chief's */
	pasco_layer wl[] = {pasco_layer_dense(8, PASCO_ACT_RELU),
	    pasco_layer_dropout(0.1), pasco_layer_dense(2, PASCO_ACT_SOFTMAX)};
	wl[0].kernel_l2  = 1e-4;
	PASCO_PASS(pasco_model_sequential(&worker, 2, 3, wl, 3));
	cr_assert_str_eq(pasco_model_layer(worker, 0)->name, "dense_2");
	pasco_variable *h[4];
	for (size_t k = 0; k < 4; k++) {
		h[k] = pasco_model_variable(chief, k);
	}
	PASCO_PASS(pasco_model_bind(worker, 4, h));
	cr_assert_str_eq(pasco_model_layer(worker, 0)->name, "dense");
	cr_assert_str_eq(pasco_model_layer(worker, 2)->name, "dense_1");
	cr_assert_str_eq(pasco_model_variable_name(worker, 3), "dense_1/bias");

	make_data(&x, &y);
	PASCO_PASS(pasco_loss_from_name(
	    "sparse_categorical_crossentropy", false, &loss));
	opt.iterations = gs;
	for (int step = 0; step < 120; step++) {
		pasco_tape *tp;
		double      v;
		PASCO_PASS(pasco_tape_alloc(&tp, true, (uint64_t) step));
		int rv =
		    pasco_model_train_step(worker, tp, &x, y, loss, &opt, &v);
		cr_assert_eq(rv, 0, "%s", pasco_tape_message(tp));
		first = step == 0 ? v : first;
		last  = v;
		pasco_tape_free(tp);
	}
	cr_assert_eq(test_read_scalar(gs), 120, "one global step per step");
	cr_assert(
	    first > 0.5 && last < 0.1, "loss from %g to %g", first, last);

	/* inference on the chief's model: dropout off, every class right */
	pasco_tape    *tp;
	pasco_tape_var tv[4];
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tnode *out = pasco_model_call(chief, tp, &x, tv);
	cr_assert_not_null(out, "%s", pasco_tape_message(tp));
	const pasco_tensor *p       = pasco_tnode_value(out);
	int                 correct = 0;
	for (int i = 0; i < N; i++) {
		int c = pasco_tensor_get(p, i * 2 + 1) >
		        pasco_tensor_get(p, i * 2);
		correct += c == (int) pasco_tensor_get(y, i);
	}
	cr_assert_eq(correct, N, "accuracy %d / %d", correct, N);
	pasco_tape_free(tp);

	/* a bind that does not fit says what it got and what it expects */
	pasco_variable *swapped[] = {h[0], h[1], h[3], h[2]};
	PASCO_FAIL(pasco_model_bind(worker, 4, swapped), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "bind: variable 2 is 'dense_1/bias' f32[2]; the model "
	    "expects 'dense_1/kernel' f32[8, 2]");
	PASCO_FAIL(pasco_model_bind(worker, 3, h), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "bind: 3 variables given; the model has 4");
	pasco_model_free(worker);
	pasco_model_free(chief);
	pasco_variable_free(gs);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	setup_stop(&st);
}

/* The losses through the model equal the kit's on its output: mse,
 * binary crossentropy of a sigmoid output (through its logits, as Keras
 * does) and of logits, and the Dense kernel_l2 term added. */
Test(model_layers, losses_are_the_kit_losses_of_the_output)
{
	pasco_model *m;
	pasco_tape  *tp;
	double       want, l2 = 0.01;
	pasco_layer_reset_names();
	pasco_layer l[] = {pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	l[0].kernel_l2  = l2;
	PASCO_PASS(pasco_model_sequential(&m, 3, 1, l, 1));
	pasco_tensor *x = uniform(2, (int64_t[]){6, 3}, 1);
	pasco_tensor *w = uniform(2, (int64_t[]){3, 1}, 2);
	pasco_tensor *b = uniform(1, (int64_t[]){1}, 3);
	pasco_tensor *y;
	PASCO_PASS(pasco_tensor_from(&y, PASCO_F32, 2, (int64_t[]){6, 1},
	    (float[]){0, 1, 1, 0, 1, 0}, 6 * sizeof(float)));
	pasco_loss kinds[] = {{.kind = PASCO_LOSS_MSE, .from_logits = false},
	    {.kind = PASCO_LOSS_BINARY_CROSSENTROPY, .from_logits = false},
	    {.kind = PASCO_LOSS_BINARY_CROSSENTROPY, .from_logits = true}};
	for (int k = 0; k < 3; k++) {
		PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
		pasco_tnode *n[] = {
		    pasco_tape_watch(tp, w), pasco_tape_watch(tp, b)};
		pasco_tnode *out = pasco_model_call_with(m, tp, &x, n);
		pasco_tnode *lo  = pasco_model_loss(m, tp, &x, y, kinds[k], n);
		cr_assert_not_null(lo, "%s", pasco_tape_message(tp));
		const pasco_tensor *o = pasco_tnode_value(out);
		pasco_tensor       *g;
		if (k == 0) {
			PASCO_PASS(pasco_mse(o, y, &want, &g));
		} else if (k == 1) {
			PASCO_PASS(pasco_binary_crossentropy(o, y, &want, &g));
		} else {
			PASCO_PASS(
			    pasco_binary_crossentropy_logits(o, y, &want, &g));
		}
		pasco_tensor_release(g);
		want += pasco_l2_penalty(w, l2, NULL);
		cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(lo), 0),
		    want, 1e-5, "loss %d", k);
		pasco_tape_free(tp);
	}
	pasco_tensor_release(x);
	pasco_tensor_release(w);
	pasco_tensor_release(b);
	pasco_tensor_release(y);
	pasco_model_free(m);
}

/* Dense(1, sigmoid) -> Dropout(0.5) in training, binary_crossentropy: the
 * loss takes the dropout's output as probabilities (not a sigmoid's, so
 * not through logits, as Keras), clipped to [1e-7, 1 - 1e-7]. A kept
 * element is 2 sigmoid(z): at sigmoid 0.75 it is 1.5, clipped, and a
 * dropped one is 0, clipped: the clip passes no gradient, so every
 * variable's gradient is 0 (Keras: 0; it was 6.75e5 on the bias). At
 * sigmoid 0.25 a kept element is 0.5, inside the range, and the bias's
 * gradient is the analytic sum over kept elements. */
Test(model_layers,
    a_dropout_output_clipped_by_binary_crossentropy_has_no_gradient)
{
	pasco_model *m;
	pasco_layer_reset_names();
	pasco_layer l[] = {
	    pasco_layer_dense(1, PASCO_ACT_SIGMOID), pasco_layer_dropout(0.5)};
	PASCO_PASS(pasco_model_sequential(&m, 3, 2, l, 1));
	pasco_tensor *x = uniform(2, (int64_t[]){8, 3}, 1), *w, *b, *y;
	PASCO_PASS(pasco_tensor_alloc(&w, PASCO_F32, 2, (int64_t[]){3, 1}));
	PASCO_PASS(pasco_tensor_alloc(&b, PASCO_F32, 1, (int64_t[]){1}));
	PASCO_PASS(pasco_tensor_from(&y, PASCO_F32, 2, (int64_t[]){8, 1},
	    (float[]){0, 1, 1, 0, 1, 0, 0, 1}, 8 * sizeof(float)));
	pasco_loss bce = {
	    .kind = PASCO_LOSS_BINARY_CROSSENTROPY, .from_logits = false};
	for (int c = 0; c < 2; c++) {
		double          s = c == 0 ? 0.75 : 0.25, want = 0;
		int             kept = 0;
		pasco_tape     *tp;
		pasco_tape_grad g[2];
		pasco_tnode    *out;
		pasco_tensor_set(b, 0, log(s / (1 - s)));
		PASCO_PASS(pasco_tape_alloc(&tp, true, 7));
		pasco_tnode *n[] = {
		    pasco_tape_watch(tp, w), pasco_tape_watch(tp, b)};
		const pasco_tensor *in[] = {x};
		pasco_tnode        *lo =
		    pasci_model_loss_out(m, tp, in, y, NULL, bce, n, &out);
		cr_assert_not_null(lo, "%s", pasco_tape_message(tp));
		PASCO_PASS(pasco_tape_gradient(tp, lo, 2, n, g));
		for (int i = 0; i < 8; i++) {
			double p = pasco_tensor_get(pasco_tnode_value(out), i);
			double yi = pasco_tensor_get(y, i);
			kept += p > 0;
			/* dL/dp / n, times the dropout's 2, times s(1 - s) */
			want += p > 0 && c == 1
			            ? (-yi / p + (1 - yi) / (1 - p)) / 8 * 2 *
			                  s * (1 - s)
			            : 0;
		}
		cr_assert(
		    kept > 0 && kept < 8, "the mask keeps some: %d", kept);
		cr_assert_float_eq(pasco_tensor_get(g[1].dense, 0), want, 1e-6,
		    "dL/dbias at sigmoid %g", s);
		for (int k = 0; k < 3 && c == 0; k++) {
			cr_assert_eq(pasco_tensor_get(g[0].dense, k), 0,
			    "dL/dkernel[%d] where every probability is "
			    "clipped",
			    k);
		}
		cr_assert(
		    c == 0 || fabs(want) > 0.01, "the bias moves: %g", want);
		pasco_tape_grad_fini(g, 2);
		pasco_tape_free(tp);
	}
	pasco_tensor_release(x);
	pasco_tensor_release(w);
	pasco_tensor_release(b);
	pasco_tensor_release(y);
	pasco_model_free(m);
}

/* Embedding(20, 4, sum) in 2 shards -> Dense(2) on logits. */
static pasco_model *
click_model(void)
{
	static pasco_partitioner two;
	pasco_model             *m;
	two              = pasco_fixed_shards_partitioner(2);
	pasco_layer l[]  = {pasco_layer_embedding(20, 4),
	     pasco_layer_dense(2, PASCO_ACT_LINEAR)};
	l[0].combiner    = PASCO_COMBINE_SUM;
	l[0].partitioner = &two;
	PASCO_PASS(pasco_model_sequential(&m, 2, 2, l, 5));
	return m;
}

/* A worker's step: args ids, labels, the global step, then the model's
 * variables. The worker builds the model and binds it to the handles. */
PASCO_FUNCTION(layers_train)
{
	const pasco_tensor *ids, *labels;
	pasco_variable     *gs, *vars[3];
	pasco_tape         *tp;
	pasco_optimizer     opt = pasco_adam(0.1, false);
	double              loss;
	int                 rv;
	for (size_t k = 0; k < 3; k++) {
		if ((rv = pasco_call_variable(call, 3 + k, &vars[k])) != 0) {
			return rv;
		}
	}
	if ((rv = pasco_call_tensor(call, 0, &ids)) != 0 ||
	    (rv = pasco_call_tensor(call, 1, &labels)) != 0 ||
	    (rv = pasco_call_variable(call, 2, &gs)) != 0) {
		return rv;
	}
	pasco_model *m = click_model();
	if ((rv = pasco_model_bind(m, 3, vars)) != 0) {
		pasco_model_free(m);
		return pasco_call_fail(
		    call, rv, "%s", pasco_model_last_error());
	}
	opt.iterations = gs;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tensor *in[] = {(pasco_tensor *) ids};
	rv                 = pasco_model_train_step(m, tp, in, labels,
	                    (pasco_loss){.kind = PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
	                        .from_logits   = true},
	                    &opt, &loss);
	if (rv != 0) {
		rv = pasco_call_fail(call, rv, "%s", pasco_tape_message(tp));
	} else {
		pasco_tensor *t;
		PASCO_PASS(pasco_tensor_scalar(&t, PASCO_F64, loss));
		pasco_call_return(call, pasco_value_tensor(t));
	}
	pasco_tape_free(tp);
	pasco_model_free(m);
	return rv;
}

/* Ids below 10 are class 0, the others class 1; two ids per example. The
 * chief creates the variables, workers train them by name-checked binds,
 * and a checkpoint saves and restores them under Keras's names. */
Test(model_layers, workers_train_a_model_and_checkpoints_keep_its_names)
{
	char               dir[] = "/tmp/pasco-layers-XXXXXX", path[256];
	char               cmd[64], *text = NULL;
	size_t             len;
	pasco_coordinator *c;
	pasco_variable    *gs;
	setup              st;
	enum { STEPS = 40 };
	pasco_remote_value *rvs[STEPS];
	cr_assert_not_null(mkdtemp(dir));
	setenv("PASCO_CHECKPOINT_DIR", dir, 1);
	setup_start(&st, 2);
	PASCO_PASS(pasco_coordinator_create(&c, st.s, NULL));
	pasco_layer_reset_names();
	pasco_model *m = click_model();
	PASCO_PASS(pasco_model_create_variables(m, st.s));
	PASCO_PASS(pasco_strategy_global_step(st.s, &gs));
	for (int s = 0; s < STEPS; s++) {
		int64_t       idv[16];
		int32_t       lab[8];
		pasco_tensor *ids, *labels;
		for (int i = 0; i < 8; i++) {
			lab[i]         = (s + i) % 2;
			idv[i * 2]     = lab[i] * 10 + (s * 3 + i) % 10;
			idv[i * 2 + 1] = lab[i] * 10 + (s + i * 7) % 10;
		}
		PASCO_PASS(pasco_tensor_from(
		    &ids, PASCO_I64, 2, (int64_t[]){8, 2}, idv, sizeof(idv)));
		PASCO_PASS(pasco_tensor_from(
		    &labels, PASCO_I32, 1, (int64_t[]){8}, lab, sizeof(lab)));
		pasco_arg a[] = {pasco_arg_tensor(ids),
		    pasco_arg_tensor(labels), pasco_arg_variable(gs),
		    pasco_arg_variable(pasco_model_variable(m, 0)),
		    pasco_arg_variable(pasco_model_variable(m, 1)),
		    pasco_arg_variable(pasco_model_variable(m, 2))};
		/* one step at a time: the losses in order */
		PASCO_PASS(pasco_schedule(c, "layers_train", a, 6, &rvs[s]));
		PASCO_PASS(pasco_join(c));
		pasco_tensor_release(ids);
		pasco_tensor_release(labels);
	}
	const pasco_value *v0, *v1;
	PASCO_PASS(pasco_remote_value_fetch(rvs[0], &v0));
	PASCO_PASS(pasco_remote_value_fetch(rvs[STEPS - 1], &v1));
	cr_assert(
	    pasco_value_scalar(v0) > 0.6 && pasco_value_scalar(v1) < 0.05,
	    "loss from %g to %g", pasco_value_scalar(v0),
	    pasco_value_scalar(v1));
	for (int s = 0; s < STEPS; s++) {
		pasco_remote_value_free(rvs[s]);
	}
	cr_assert_eq(test_read_scalar(gs), STEPS);

	/* saved under Keras's names, and restored by them */
	pasco_tensor *before, *zero, *after;
	PASCO_PASS(pasco_checkpoint_save(st.s, dir, STEPS, 0));
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), NULL));
	FILE *f = open_memstream(&text, &len);
	PASCO_PASS(pasco_checkpoint_inspect(path, f));
	fclose(f);
	cr_assert(strstr(text, "embedding/embeddings") &&
	              strstr(text, "dense/kernel") &&
	              strstr(text, "dense/bias"),
	    "%s", text);
	free(text);
	pasco_variable *k = pasco_model_variable(m, 1);
	PASCO_PASS(pasco_variable_read(k, &before));
	PASCO_PASS(pasco_tensor_alloc(&zero, PASCO_F32, 2, before->shape));
	PASCO_PASS(pasco_variable_assign(k, zero));
	PASCO_PASS(pasco_checkpoint_restore(st.s, path, NULL));
	PASCO_PASS(pasco_variable_read(k, &after));
	cr_assert_eq(max_diff(before, after), 0);
	cr_assert(pasco_tensor_get(after, 0) != 0);
	pasco_tensor_release(before);
	pasco_tensor_release(zero);
	pasco_tensor_release(after);
	pasco_variable_free(gs);
	pasco_model_free(m);
	pasco_coordinator_destroy(c);
	setup_stop(&st);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Wide and deep without a config: features [batch, 3] and ids [batch, 2]
 * (embedding summed), concatenated, through Dense(8, relu) and Dense(1,
 * sigmoid). Labels: the sign of feature 0 xor the id's class (ids below
 * 10 or not), which neither input gives alone. */
static pasco_model *
wide_deep(void)
{
	pasco_model      *m;
	pasco_model_input in[] = {{"features", 3, false}, {"cat", 2, true}};
	pasco_layer l[] = {pasco_layer_on(pasco_layer_embedding(20, 4), 1,
	                       (int32_t[]){PASCO_MODEL_INPUT(1)}),
	    pasco_layer_on(pasco_layer_concatenate(), 2,
	        (int32_t[]){PASCO_MODEL_INPUT(0), 0}),
	    pasco_layer_dense(8, PASCO_ACT_RELU),
	    pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	l[0].combiner   = PASCO_COMBINE_SUM;
	PASCO_PASS(pasco_model_functional(&m, 2, in, 4, l, 11));
	return m;
}

Test(model_layers, a_functional_model_concatenates_features_and_embeddings)
{
	setup           st;
	pasco_model    *m;
	pasco_variable *gs;
	pasco_tensor   *x, *ids, *y;
	pasco_optimizer opt = pasco_adam(0.05, false);
	float           xv[16 * 3], yv[16];
	int64_t         idv[16 * 2];
	double          first = 0, last = 0;
	setup_start(&st, 2);
	pasco_layer_reset_names();
	m = wide_deep();
	cr_assert_str_eq(pasco_model_layer(m, 1)->name, "concatenate");
	const char   *names[] = {"embedding/embeddings", "dense/kernel",
	      "dense/bias", "dense_1/kernel", "dense_1/bias"};
	const int64_t rows[]  = {20, 7, 8, 8, 1};
	cr_assert_eq(pasco_model_num_variables(m), 5);
	for (size_t k = 0; k < 5; k++) {
		const int64_t *shape;
		pasco_model_variable_shape(m, k, &shape);
		cr_assert_str_eq(pasco_model_variable_name(m, k), names[k]);
		cr_assert_eq(shape[0], rows[k], "%s", names[k]);
	}
	PASCO_PASS(pasco_model_create_variables(m, st.s));
	PASCO_PASS(pasco_strategy_global_step(st.s, &gs));
	for (int i = 0; i < 16; i++) {
		int cls = i % 2, pos = (i / 2) % 2;
		xv[i * 3] = (float) ((pos ? 1 : -1) * (0.5 + (i % 5) * 0.1));
		xv[i * 3 + 1]  = (float) ((i % 3) * 0.2 - 0.2);
		xv[i * 3 + 2]  = 0.1f;
		idv[i * 2]     = cls * 10 + i % 7;
		idv[i * 2 + 1] = i % 3 == 0 ? -1 : cls * 10 + (i * 3) % 10;
		yv[i]          = (float) (cls ^ pos);
	}
	PASCO_PASS(pasco_tensor_from(
	    &x, PASCO_F32, 2, (int64_t[]){16, 3}, xv, sizeof(xv)));
	PASCO_PASS(pasco_tensor_from(
	    &ids, PASCO_I64, 2, (int64_t[]){16, 2}, idv, sizeof(idv)));
	PASCO_PASS(pasco_tensor_from(
	    &y, PASCO_F32, 2, (int64_t[]){16, 1}, yv, sizeof(yv)));
	pasco_tensor *in[] = {x, ids};
	opt.iterations     = gs;
	for (int step = 0; step < 150; step++) {
		pasco_tape *tp;
		double      v;
		PASCO_PASS(pasco_tape_alloc(&tp, true, (uint64_t) step));
		int rv = pasco_model_train_step(m, tp, in, y,
		    (pasco_loss){.kind = PASCO_LOSS_BINARY_CROSSENTROPY,
		        .from_logits   = false},
		    &opt, &v);
		cr_assert_eq(rv, 0, "%s", pasco_tape_message(tp));
		first = step == 0 ? v : first;
		last  = v;
		pasco_tape_free(tp);
	}
	cr_assert(
	    first > 0.6 && last < 0.1, "loss from %g to %g", first, last);
	cr_assert_eq(test_read_scalar(gs), 150);

	/* the forward pass equals the same ops by hand on the values read */
	pasco_tape    *tp;
	pasco_tape_var tv[5];
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tnode *out = pasco_model_call(m, tp, in, tv);
	cr_assert_not_null(out, "%s", pasco_tape_message(tp));
	pasco_tnode *e =
	    pasco_t_embedding_lookup(tp, tv[0].node, ids, PASCO_COMBINE_SUM);
	pasco_tnode *h = pasco_t_concat(
	    tp, 2, (pasco_tnode *[]){pasco_tape_constant(tp, x), e}, -1);
	h = pasco_t_relu(tp,
	    pasco_t_bias_add(tp,
	        pasco_t_matmul(tp, h, tv[1].node, false, false), tv[2].node));
	h = pasco_t_sigmoid(tp,
	    pasco_t_bias_add(tp,
	        pasco_t_matmul(tp, h, tv[3].node, false, false), tv[4].node));
	cr_assert_not_null(h, "%s", pasco_tape_message(tp));
	cr_assert_eq(
	    max_diff(pasco_tnode_value(out), pasco_tnode_value(h)), 0);
	for (int i = 0; i < 16; i++) {
		double p = pasco_tensor_get(pasco_tnode_value(out), i);
		cr_assert_eq(p > 0.5, yv[i] > 0.5, "example %d: %g", i, p);
	}
	pasco_tape_free(tp);

	/* inputs that do not fit name the layer or the input */
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tensor *x8    = uniform(2, (int64_t[]){8, 3}, 1);
	pasco_tensor *in8[] = {x8, ids};
	cr_assert_null(pasco_model_call(m, tp, in8, tv));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "concatenate: inputs [8, 3] and [16, 4] are not [batch, width] of "
	    "one batch");
	pasco_tape_free(tp);
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tensor *missing[] = {x, NULL};
	cr_assert_null(pasco_model_call(m, tp, missing, tv));
	cr_assert_str_eq(pasco_tape_message(tp), "input 1 ('cat') is missing");
	pasco_tape_free(tp);
	pasco_tensor_release(x8);
	pasco_tensor_release(x);
	pasco_tensor_release(ids);
	pasco_tensor_release(y);
	pasco_variable_free(gs);
	pasco_model_free(m);
	setup_stop(&st);
}

Test(model_layers, functional_wiring_errors_name_the_layer)
{
	pasco_model      *m;
	pasco_model_input in[] = {{"features", 3, false}, {"cat", 2, true}};
	pasco_layer_reset_names();
	struct {
		pasco_layer l;
		const char *msg;
	} cases[] = {
	    {pasco_layer_on(pasco_layer_concatenate(), 1,
	         (int32_t[]){PASCO_MODEL_INPUT(0)}),
	        "concatenate: a Concatenate needs 2 or more inputs, got 1"},
	    {pasco_layer_on(
	         pasco_layer_dense(2, PASCO_ACT_LINEAR), 1, (int32_t[]){0}),
	        "dense: input 0 is layer 0, not an earlier layer"},
	    {pasco_layer_on(pasco_layer_dense(2, PASCO_ACT_LINEAR), 1,
	         (int32_t[]){PASCO_MODEL_INPUT(2)}),
	        "dense_1: input 0 is model input 2; the model has 2"},
	    {pasco_layer_on(pasco_layer_dense(2, PASCO_ACT_LINEAR), 1,
	         (int32_t[]){PASCO_MODEL_INPUT(1)}),
	        "dense_2: called on ids; only an Embedding takes ids"},
	    {pasco_layer_on(pasco_layer_embedding(5, 2), 1,
	         (int32_t[]){PASCO_MODEL_INPUT(0)}),
	        "embedding: an Embedding is called on one model input of ids"},
	    {pasco_layer_on(pasco_layer_dropout(0.5), 2,
	         (int32_t[]){PASCO_MODEL_INPUT(0), PASCO_MODEL_INPUT(0)}),
	        "dropout: takes one input, got 2"},
	};
	for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
		PASCO_FAIL(
		    pasco_model_functional(&m, 2, in, 1, &cases[c].l, 1),
		    PASCO_EINVAL);
		cr_assert_null(m);
		cr_assert_str_eq(pasco_model_last_error(), cases[c].msg);
	}
	/* a Sequential model's layers are called on the previous output */
	PASCO_FAIL(
	    pasco_model_sequential(&m, 3, 1, &cases[1].l, 1), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "dense: a Sequential model's layers are called on the previous "
	    "one's output (inputs set: pasco_model_functional)");
	/* a concatenation's width is the sum of its inputs' */
	pasco_layer two[] = {pasco_layer_dense(5, PASCO_ACT_RELU),
	    pasco_layer_on(pasco_layer_concatenate(), 3,
	        (int32_t[]){0, PASCO_MODEL_INPUT(0), 0})};
	PASCO_PASS(pasco_model_functional(&m, 2, in, 2, two, 1));
	cr_assert_eq(pasco_model_output_width(m), 13);
	pasco_model_free(m);
}

/* The strategy's partitioner splits every variable but an Embedding with
 * its own. */
Test(model_layers, an_embeddings_own_partitioner_overrides_the_strategys)
{
	test_cluster           tc;
	pasco_strategy        *s;
	pasco_model           *m;
	pasco_partitioner      three = pasco_fixed_shards_partitioner(3);
	pasco_strategy_options o     = {.partitioner = &three};
	test_cluster_start(&tc, 2, 1);
	PASCO_PASS(pasco_strategy_create(&s, tc.cluster, &o));
	pasco_layer_reset_names();
	m = click_model(); /* its Embedding: 2 shards */
	PASCO_PASS(pasco_model_create_variables(m, s));
	cr_assert_eq(pasco_variable_num_shards(pasco_model_variable(m, 0)), 2);
	cr_assert_eq(pasco_variable_num_shards(pasco_model_variable(m, 1)), 3);
	cr_assert_eq(pasco_variable_num_shards(pasco_model_variable(m, 2)), 2,
	    "the bias [2] has 2 rows: never more shards than rows");
	/* round-robin over shards: 0 1 | 0 1 0 | 1 0 */
	int32_t task;
	int64_t off, rows;
	PASCO_PASS(pasco_variable_shard(
	    pasco_model_variable(m, 1), 2, &task, &off, &rows));
	cr_assert_eq(task, 0);
	PASCO_PASS(pasco_variable_shard(
	    pasco_model_variable(m, 2), 0, &task, &off, &rows));
	cr_assert_eq(task, 1);
	pasco_model_free(m);
	pasco_strategy_destroy(s);
	test_cluster_stop(&tc);
}
