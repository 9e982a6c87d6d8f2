/* A model written with the layers and trained with pasco_model_train_step
 * follows the loss curve of the same model's hand-written step (the
 * kernels of ops.h, as the examples and bench/train call them) from the
 * same initial values (the layers' initializers) on the same batches, one
 * worker, variables on in-process ps tasks (issue 20, section 6).
 *
 * Tolerance: the rounding of the loss to f32. The tape's loss is an f32
 * scalar (the kit returns it in double), and the tape runs the kernels'
 * arithmetic: the same sgemm calls (shapes, transposes, operands), bias
 * gradients summed by the same saxpy row by row, losses and their
 * gradients in double from the same f32 values, embedding rows combined
 * by the same saxpy. So the MLP's gradients are the kernels' bit for bit,
 * its variables stay equal and its loss, rounded to f32, is equal: no
 * tolerance. The tutorial model differs in two f32 roundings: its loss
 * adds the l2 term in f32 (the kit: in double), and the l2 term enters
 * the kernel's gradient before the matmul's (the kit: after), so the
 * kernel may differ in its last bit and ten RMSprop steps carry that:
 * 4 f32 epsilons relative (seen: at most 1 ulp). A wrong gradient moves
 * the loss by percents in one step, and the test checks that the loss
 * moves. */
#include "tape_check.h"

#include <float.h>
#include <math.h>
#include <string.h>

TestSuite(model_numerics, .timeout = 60);

#define STEPS 10

/* The hand-written step's variables: the model's shapes and initializers,
 * under "hand/<name>"; their values equal the model's. */
static void
hand_variables(setup *st, const pasco_model *m, pasco_variable **v)
{
	for (size_t k = 0; k < pasco_model_num_variables(m); k++) {
		const int64_t *shape;
		int32_t        rank = pasco_model_variable_shape(m, k, &shape);
		pasco_initializer init = pasco_model_variable_init(m, k);
		pasco_tensor     *a, *b;
		char              name[128];
		snprintf(name, sizeof(name), "hand/%s",
		    pasco_model_variable_name(m, k));
		PASCO_PASS(pasco_variable_create_init(
		    &v[k], st->s, name, PASCO_F32, rank, shape, &init));
		PASCO_PASS(pasco_variable_read(v[k], &a));
		PASCO_PASS(
		    pasco_variable_read(pasco_model_variable(m, k), &b));
		cr_assert_eq(memcmp(a->data, b->data, a->nbytes), 0,
		    "%s starts as the model's", name);
		pasco_tensor_release(a);
		pasco_tensor_release(b);
	}
}

static void
release_all(pasco_tensor **t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pasco_tensor_release(t[i]);
		t[i] = NULL;
	}
}

/* The layers' step on (x, y); its loss. */
static double
layers_step(const pasco_model *m, pasco_tensor *x, const pasco_tensor *y,
    pasco_loss loss, const pasco_optimizer *opt)
{
	pasco_tape *tp;
	double      v = NAN;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	int rv = pasco_model_train_step(m, tp, &x, y, loss, opt, &v);
	cr_assert_eq(rv, 0, "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
	return v;
}

/* The curves equal once rounded to f32, to ulps f32 epsilons relative. */
static void
assert_same_curve(const double *hand, const double *layers, int ulps)
{
	for (int s = 0; s < STEPS; s++) {
		float  h = (float) hand[s], l = (float) layers[s];
		double rel = fabs((double) h - (double) l) / fabs((double) h);
		cr_assert(rel <= ulps * FLT_EPSILON,
		    "step %d: hand-written loss %.9g, layers %.9g (relative "
		    "%.3g, at most %d f32 epsilons)",
		    s, hand[s], layers[s], rel, ulps);
	}
	cr_assert(fabs(hand[STEPS - 1] - hand[0]) > 0.01 * hand[0],
	    "training moves the loss: %g to %g", hand[0], hand[STEPS - 1]);
}

/* ---- an MLP: Dense(32, relu) -> Dense(4, softmax), Adam ---- */

#define IN 12
#define HID 32
#define CLS 4
#define BATCH 16

/* Batch s: x uniform in [-1, 1), labels from the sign pattern of x. */
static void
mlp_batch(int s, pasco_tensor **x, pasco_tensor **y)
{
	pasco_initializer u = pasco_init_uniform(-1, 1, 100 + (uint64_t) s);
	PASCO_PASS(
	    pasco_tensor_alloc(x, PASCO_F32, 2, (int64_t[]){BATCH, IN}));
	PASCO_PASS(pasco_initializer_fill(&u, *x, 2, (*x)->shape, 0));
	PASCO_PASS(pasco_tensor_alloc(y, PASCO_I32, 1, (int64_t[]){BATCH}));
	for (int64_t i = 0; i < BATCH; i++) {
		const float *r = (const float *) (*x)->data + i * IN;
		((int32_t *) (*y)->data)[i] = (r[0] > 0) + 2 * (r[1] > r[2]);
	}
}

/* bench/train's hand-written MLP step: one read, the kernels, one apply. */
static double
mlp_hand_step(pasco_variable **v, const pasco_tensor *x, const pasco_tensor *y,
    const pasco_optimizer *opt)
{
	pasco_tensor *p[4], *g[4] = {0}, *t[6] = {0};
	double        loss;
	PASCO_PASS(pasco_variable_read_all(4, v, p));
	PASCO_PASS(pasco_matmul(x, false, p[0], false, &t[0]));
	PASCO_PASS(pasco_bias_add(t[0], p[1], &t[1]));
	PASCO_PASS(pasco_activate(PASCO_RELU, t[1], &t[2]));
	PASCO_PASS(pasco_matmul(t[2], false, p[2], false, &t[3]));
	PASCO_PASS(pasco_bias_add(t[3], p[3], &t[4]));
	PASCO_PASS(pasco_softmax_crossentropy(t[4], y, &loss, &t[5]));
	PASCO_PASS(pasco_matmul(t[2], true, t[5], false, &g[2]));
	PASCO_PASS(pasco_bias_add_grad(t[5], &g[3]));
	release_all(&t[0], 2);
	PASCO_PASS(pasco_matmul(t[5], false, p[2], true, &t[0]));
	PASCO_PASS(pasco_activate_grad(PASCO_RELU, t[2], t[0], &t[1]));
	PASCO_PASS(pasco_matmul(x, true, t[1], false, &g[0]));
	PASCO_PASS(pasco_bias_add_grad(t[1], &g[1]));
	PASCO_PASS(pasco_variable_apply_gradients(4, v, opt, g));
	release_all(p, 4);
	release_all(g, 4);
	release_all(t, 6);
	return loss;
}

Test(model_numerics, an_mlp_follows_the_hand_written_steps_loss_curve)
{
	setup           st;
	pasco_model    *m;
	pasco_variable *hv[4];
	pasco_optimizer opt = pasco_adam(0.01, false);
	pasco_loss      loss;
	double          hand[STEPS], layers[STEPS];
	pasco_layer_reset_names();
	pasco_layer l[] = {pasco_layer_dense(HID, PASCO_ACT_RELU),
	    pasco_layer_dense(CLS, PASCO_ACT_SOFTMAX)};
	setup_start(&st, 2);
	PASCO_PASS(pasco_model_sequential(&m, IN, 2, l, 7));
	PASCO_PASS(pasco_model_create_variables(m, st.s));
	hand_variables(&st, m, hv);
	PASCO_PASS(pasco_loss_from_name(
	    "sparse_categorical_crossentropy", false, &loss));
	for (int s = 0; s < STEPS; s++) {
		pasco_tensor *x, *y;
		mlp_batch(s, &x, &y);
		hand[s]   = mlp_hand_step(hv, x, y, &opt);
		layers[s] = layers_step(m, x, y, loss, &opt);
		pasco_tensor_release(x);
		pasco_tensor_release(y);
	}
	assert_same_curve(hand, layers, 0);
	for (size_t k = 0; k < 4; k++) {
		pasco_variable_free(hv[k]);
	}
	pasco_model_free(m);
	setup_stop(&st);
}

/* ---- the tutorial model: Embedding(mean) -> Dense(1, sigmoid), l2,
 * RMSprop; the table's gradient sparse ---- */

#define VOCAB 9
#define DIM 24
#define WORDS 3
#define L2 1e-3

/* Batch s: 3 ids per example (repeats across examples), label 1 iff id
 * 1 is among them. */
static void
tutorial_batch(int s, pasco_tensor **ids, pasco_tensor **y)
{
	uint64_t state = 1 + (uint64_t) s;
	PASCO_PASS(
	    pasco_tensor_alloc(ids, PASCO_I64, 2, (int64_t[]){BATCH, WORDS}));
	PASCO_PASS(pasco_tensor_alloc(y, PASCO_F32, 1, (int64_t[]){BATCH}));
	for (int64_t i = 0; i < BATCH * WORDS; i++) {
		state = state * 6364136223846793005u + 1442695040888963407u;
		((int64_t *) (*ids)->data)[i] =
		    (int64_t) ((state >> 33) % VOCAB);
		if (((int64_t *) (*ids)->data)[i] == 1) {
			((float *) (*y)->data)[i / WORDS] = 1;
		}
	}
}

/* examples/embedding_model.c's step: the rows gathered for ids, combined,
 * the dense layer, the loss of the logits, l2, one mixed apply (the
 * table's gradient one row per id looked up). */
static double
tutorial_hand_step(pasco_variable **v, const pasco_tensor *ids,
    const pasco_tensor *y, const pasco_optimizer *opt)
{
	pasco_tensor       *p[3], *g[3] = {0}, *t[5] = {0};
	const pasco_tensor *idl[] = {ids, NULL, NULL};
	double              loss;
	PASCO_PASS(pasco_variable_read_mixed(3, v, idl, p));
	PASCO_PASS(pasco_embedding_combine(p[0], PASCO_COMBINE_MEAN, &t[0]));
	PASCO_PASS(pasco_matmul(t[0], false, p[1], false, &t[1]));
	PASCO_PASS(pasco_bias_add(t[1], p[2], &t[2]));
	PASCO_PASS(pasco_binary_crossentropy_logits(t[2], y, &loss, &t[3]));
	PASCO_PASS(pasco_matmul(t[0], true, t[3], false, &g[1]));
	PASCO_PASS(pasco_bias_add_grad(t[3], &g[2]));
	PASCO_PASS(pasco_matmul(t[3], false, p[1], true, &t[4]));
	PASCO_PASS(pasco_embedding_combine_grad(
	    t[4], WORDS, PASCO_COMBINE_MEAN, &g[0]));
	loss += pasco_l2_penalty(p[1], L2, g[1]);
	PASCO_PASS(pasco_variable_apply_gradients_mixed(3, v, opt, idl, g));
	release_all(p, 3);
	release_all(g, 3);
	release_all(t, 5);
	return loss;
}

Test(model_numerics, the_tutorial_model_follows_the_hand_written_curve)
{
	setup           st;
	pasco_model    *m;
	pasco_variable *hv[3];
	pasco_optimizer opt = pasco_rmsprop(0.05, 0.9, 0, false);
	pasco_loss      loss;
	double          hand[STEPS], layers[STEPS];
	pasco_layer_reset_names();
	pasco_layer l[] = {pasco_layer_embedding(VOCAB, DIM),
	    pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
	l[1].kernel_l2  = L2;
	setup_start(&st, 2);
	PASCO_PASS(pasco_model_sequential(&m, WORDS, 2, l, 11));
	PASCO_PASS(pasco_model_create_variables(m, st.s));
	hand_variables(&st, m, hv);
	PASCO_PASS(pasco_loss_from_name("binary_crossentropy", false, &loss));
	for (int s = 0; s < STEPS; s++) {
		pasco_tensor *ids, *y;
		tutorial_batch(s, &ids, &y);
		hand[s]   = tutorial_hand_step(hv, ids, y, &opt);
		layers[s] = layers_step(m, ids, y, loss, &opt);
		pasco_tensor_release(ids);
		pasco_tensor_release(y);
	}
	assert_same_curve(hand, layers, 4);
	for (size_t k = 0; k < 3; k++) {
		pasco_variable_free(hv[k]);
	}
	pasco_model_free(m);
	setup_stop(&st);
}
