/* The gradient tape's ops: every op's gradient against central finite
 * differences in f64 (tape_check.h), values where a kernel computes the
 * same, dropout, and the gradient's contract (None, repeatable, f32 and
 * f64 alike). */
#include "tape_check.h"

TestSuite(tape, .timeout = 60);

/* ---- matmul, arithmetic ---- */

static pasco_tnode *
b_matmul(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	const bool *t = ctx;
	return weighted(tp, pasco_t_matmul(tp, s[0], s[1], t[0], t[1]));
}

Test(tape, matmul_gradients_match_finite_differences_for_every_transpose)
{
	for (int c = 0; c < 4; c++) {
		bool          t[2]  = {c & 1, c & 2};
		int64_t       sa[2] = {t[0] ? 4 : 3, t[0] ? 3 : 4};
		int64_t       sb[2] = {t[1] ? 5 : 4, t[1] ? 4 : 5};
		pasco_tensor *s[2]  = {r64(2, sa, 1 + c), r64(2, sb, 11 + c)};
		check_fd("matmul", b_matmul, t, 2, s, NULL);
		pasco_tensor_release(s[0]);
		pasco_tensor_release(s[1]);
	}
}

typedef struct ew_ctx {
	pasco_tnode *(*op)(pasco_tape *, pasco_tnode *, pasco_tnode *);
} ew_ctx;

static pasco_tnode *
b_ew(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	return weighted(tp, ((ew_ctx *) ctx)->op(tp, s[0], s[1]));
}

Test(tape, add_sub_mul_gradients_match_with_and_without_broadcasting)
{
	ew_ctx  ops[]   = {{pasco_t_add}, {pasco_t_sub}, {pasco_t_mul}};
	int64_t full[2] = {3, 4}, row[1] = {4};
	for (int o = 0; o < 3; o++) {
		/* same shape; a row on the right; a row on the left; a
		 * scalar */
		pasco_tensor *cases[4][2] = {
		    {r64(2, full, 1), r64(2, full, 2)},
		    {r64(2, full, 3), r64(1, row, 4)},
		    {r64(1, row, 5), r64(2, full, 6)},
		    {r64(2, full, 7), r64(0, NULL, 8)},
		};
		for (int c = 0; c < 4; c++) {
			check_fd(
			    "elementwise", b_ew, &ops[o], 2, cases[c], NULL);
			pasco_tensor_release(cases[c][0]);
			pasco_tensor_release(cases[c][1]);
		}
	}
}

static pasco_tnode *
b_scale_bias(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	(void) ctx;
	return weighted(
	    tp, pasco_t_bias_add(tp, pasco_t_scale(tp, s[0], -2.5), s[1]));
}

Test(tape, scale_and_bias_add_gradients_match)
{
	pasco_tensor *s[2] = {
	    r64(3, (int64_t[]){2, 3, 4}, 1), r64(1, (int64_t[]){4}, 2)};
	check_fd("scale+bias_add", b_scale_bias, NULL, 2, s, NULL);
	pasco_tensor_release(s[0]);
	pasco_tensor_release(s[1]);
}

/* ---- activations ---- */

typedef struct un_ctx {
	pasco_tnode *(*op)(pasco_tape *, pasco_tnode *);
} un_ctx;

static pasco_tnode *
b_unary(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	return weighted(tp, ((un_ctx *) ctx)->op(tp, s[0]));
}

Test(tape, activation_gradients_match)
{
	un_ctx ops[] = {{pasco_t_relu}, {pasco_t_sigmoid}, {pasco_t_tanh},
	    {pasco_t_softmax}};
	for (int o = 0; o < 4; o++) {
		pasco_tensor *x =
		    rnd(PASCO_F64, 2, (int64_t[]){3, 5}, 20 + o, -3, 3);
		check_fd("activation", b_unary, &ops[o], 1, &x, NULL);
		pasco_tensor_release(x);
	}
}

Test(tape, activations_match_the_kernels_in_value_and_gradient)
{
	pasco_activation f[] = {PASCO_RELU, PASCO_SIGMOID, PASCO_TANH};
	un_ctx ops[] = {{pasco_t_relu}, {pasco_t_sigmoid}, {pasco_t_tanh}};
	for (int o = 0; o < 3; o++) {
		pasco_tensor *x =
		    rnd(PASCO_F32, 2, (int64_t[]){4, 6}, 30 + o, -3, 3);
		/* weighted's weights: the incoming gradient dy */
		pasco_tensor   *dy = rnd(PASCO_F32, 2, x->shape, 99, -1, 1);
		pasco_tensor   *y, *dx;
		pasco_tape     *tp;
		pasco_tape_grad g;
		PASCO_PASS(pasco_tape_alloc(&tp, false, 0));
		pasco_tnode        *w = pasco_tape_watch(tp, x);
		pasco_tnode        *a = ops[o].op(tp, w);
		const pasco_tensor *v = pasco_tnode_value(a);
		PASCO_PASS(
		    pasco_tape_gradient(tp, weighted(tp, a), 1, &w, &g));
		PASCO_PASS(pasco_activate(f[o], x, &y));
		PASCO_PASS(pasco_activate_grad(f[o], y, dy, &dx));
		for (int64_t i = 0; i < x->count; i++) {
			cr_assert_float_eq(pasco_tensor_get(v, i),
			    pasco_tensor_get(y, i), 1e-6);
			cr_assert_float_eq(pasco_tensor_get(g.dense, i),
			    pasco_tensor_get(dx, i), 1e-6);
		}
		pasco_tape_grad_fini(&g, 1);
		pasco_tensor_release(dx);
		pasco_tensor_release(dy);
		pasco_tensor_release(y);
		pasco_tensor_release(x);
		pasco_tape_free(tp);
	}
}

/* ---- shapes and reductions ---- */

static pasco_tnode *
b_reshape(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	(void) ctx;
	/* reshape's output feeds a matmul, so the element order matters */
	pasco_tnode *r = pasco_t_reshape(tp, s[0], 2, (int64_t[]){-1, 4});
	return weighted(tp, pasco_t_matmul(tp, r, s[1], false, false));
}

Test(tape, reshape_gradient_matches)
{
	pasco_tensor *s[2] = {
	    r64(3, (int64_t[]){2, 3, 4}, 1), r64(2, (int64_t[]){4, 2}, 2)};
	check_fd("reshape", b_reshape, NULL, 2, s, NULL);
	cr_assert_eq(s[0]->count, 24);
	pasco_tensor_release(s[0]);
	pasco_tensor_release(s[1]);
}

static pasco_tnode *
b_concat(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	return weighted(tp, pasco_t_concat(tp, 3, s, *(int32_t *) ctx));
}

Test(tape, concat_gradients_match_along_first_middle_and_last_axes)
{
	int32_t axes[] = {0, 1, -1};
	for (int a = 0; a < 3; a++) {
		int64_t s0[3] = {2, 3, 4}, s1[3] = {2, 3, 4},
		        s2[3]      = {2, 3, 4};
		int ax             = axes[a] < 0 ? 2 : axes[a];
		s1[ax]             = 1;
		s2[ax]             = 2;
		pasco_tensor *s[3] = {
		    r64(3, s0, 1), r64(3, s1, 2), r64(3, s2, 3)};
		check_fd("concat", b_concat, &axes[a], 3, s, NULL);
		for (int k = 0; k < 3; k++) {
			pasco_tensor_release(s[k]);
		}
	}
}

Test(tape, concat_places_each_input_along_the_axis)
{
	pasco_tape   *tp;
	pasco_tensor *a, *b;
	double        va[] = {1, 2, 3, 4}, vb[] = {5, 6};
	PASCO_PASS(pasco_tensor_from(
	    &a, PASCO_F64, 2, (int64_t[]){2, 2}, va, sizeof(va)));
	PASCO_PASS(pasco_tensor_from(
	    &b, PASCO_F64, 2, (int64_t[]){2, 1}, vb, sizeof(vb)));
	PASCO_PASS(pasco_tape_alloc(&tp, false, 0));
	const pasco_tensor *v      = pasco_tnode_value(pasco_t_concat(tp, 2,
	         (pasco_tnode *[]){
	             pasco_tape_constant(tp, a), pasco_tape_constant(tp, b)},
	         -1));
	double              want[] = {1, 2, 5, 3, 4, 6};
	cr_assert_eq(v->rank, 2);
	cr_assert_eq(v->shape[0], 2);
	cr_assert_eq(v->shape[1], 3);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(pasco_tensor_get(v, i), want[i]);
	}
	pasco_tape_free(tp);
	pasco_tensor_release(a);
	pasco_tensor_release(b);
}

typedef struct red_ctx {
	bool    mean;
	int32_t axis;
} red_ctx;

static pasco_tnode *
b_reduce(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	red_ctx     *c = ctx;
	pasco_tnode *r = c->mean ? pasco_t_reduce_mean(tp, s[0], c->axis)
	                         : pasco_t_reduce_sum(tp, s[0], c->axis);
	return weighted(tp, r);
}

Test(tape, reduce_sum_and_mean_gradients_match_over_each_axis)
{
	int32_t axes[] = {0, 1, 2, -1, PASCO_T_ALL_AXES};
	for (int m = 0; m < 2; m++) {
		for (int a = 0; a < 5; a++) {
			red_ctx       c = {m, axes[a]};
			pasco_tensor *x = r64(3, (int64_t[]){2, 3, 4}, 40 + a);
			check_fd("reduce", b_reduce, &c, 1, &x, NULL);
			pasco_tensor_release(x);
		}
	}
}

Test(tape, reduce_values_are_sums_and_means)
{
	pasco_tape   *tp;
	pasco_tensor *x;
	double        v[] = {1, 2, 3, 4, 5, 6};
	PASCO_PASS(pasco_tensor_from(
	    &x, PASCO_F64, 2, (int64_t[]){2, 3}, v, sizeof(v)));
	PASCO_PASS(pasco_tape_alloc(&tp, false, 0));
	pasco_tnode        *c = pasco_tape_constant(tp, x);
	const pasco_tensor *s0 =
	    pasco_tnode_value(pasco_t_reduce_sum(tp, c, 0));
	const pasco_tensor *m1 =
	    pasco_tnode_value(pasco_t_reduce_mean(tp, c, -1));
	const pasco_tensor *all =
	    pasco_tnode_value(pasco_t_reduce_mean(tp, c, PASCO_T_ALL_AXES));
	cr_assert_eq(s0->rank, 1);
	cr_assert_eq(s0->shape[0], 3);
	cr_assert_eq(pasco_tensor_get(s0, 0), 5);
	cr_assert_eq(pasco_tensor_get(s0, 2), 9);
	cr_assert_eq(m1->shape[0], 2);
	cr_assert_eq(pasco_tensor_get(m1, 0), 2);
	cr_assert_eq(pasco_tensor_get(m1, 1), 5);
	cr_assert_eq(all->rank, 0);
	cr_assert_eq(pasco_tensor_get(all, 0), 3.5);
	pasco_tape_free(tp);
	pasco_tensor_release(x);
}

static pasco_tnode *
b_reuse(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	(void) ctx;
	pasco_tnode *sq = pasco_t_mul(tp, s[0], s[0]);
	pasco_tnode *cc =
	    pasco_t_concat(tp, 3, (pasco_tnode *[]){s[0], sq, s[0]}, 0);
	return pasco_t_add(tp, weighted(tp, cc),
	    weighted(tp, pasco_t_matmul(tp, s[0], s[0], true, false)));
}

Test(tape, a_node_used_several_times_sums_its_gradients)
{
	pasco_tensor *a = r64(2, (int64_t[]){3, 3}, 12);
	check_fd("reuse", b_reuse, NULL, 1, &a, NULL);
	pasco_tensor_release(a);
}

/* ---- dropout ---- */

static pasco_tnode *
b_dropout(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	(void) ctx;
	return weighted(tp, pasco_t_dropout(tp, pasco_t_tanh(tp, s[0]), 0.4));
}

Test(tape, dropout_gradient_matches_under_its_seeded_mask)
{
	pasco_tensor *x = r64(2, (int64_t[]){4, 5}, 3);
	check_fd("dropout", b_dropout, NULL, 1, &x, NULL);
	pasco_tensor_release(x);
}

/* The dropout of x (all ones) on a tape with training and seed. */
static void
dropout_of(bool training, uint64_t seed, double rate, double *out, int64_t n)
{
	pasco_tape   *tp;
	pasco_tensor *x;
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_F64, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		pasco_tensor_set(x, i, 1);
	}
	PASCO_PASS(pasco_tape_alloc(&tp, training, seed));
	const pasco_tensor *v = pasco_tnode_value(
	    pasco_t_dropout(tp, pasco_tape_constant(tp, x), rate));
	cr_assert(v != NULL, "%s", pasco_tape_message(tp));
	for (int64_t i = 0; i < n; i++) {
		out[i] = pasco_tensor_get(v, i);
	}
	pasco_tape_free(tp);
	pasco_tensor_release(x);
}

Test(tape, dropout_is_reproducible_by_seed_scaled_and_identity_in_inference)
{
	enum { N = 4000 };
	static double a[N], b[N], c[N], d[N];
	int64_t       kept = 0, differ = 0;
	dropout_of(true, 5, 0.25, a, N);
	dropout_of(true, 5, 0.25, b, N);
	dropout_of(true, 6, 0.25, c, N);
	dropout_of(false, 5, 0.25, d, N);
	for (int i = 0; i < N; i++) {
		cr_assert_eq(a[i], b[i], "same seed, element %d differs", i);
		cr_assert(a[i] == 0 || fabs(a[i] - 1 / 0.75) < 1e-12);
		cr_assert_eq(d[i], 1, "inference must be the identity");
		kept += a[i] != 0;
		differ += (a[i] != 0) != (c[i] != 0);
	}
	/* 3000 expected kept; 5 standard deviations is about 137 */
	cr_assert(kept > 2860 && kept < 3140, "kept %lld of %d",
	    (long long) kept, N);
	cr_assert(differ > 1000, "another seed gave another mask (%lld)",
	    (long long) differ);
}

/* ---- the gradient's contract ---- */

Test(tape, gradient_is_none_for_an_unused_source_and_repeatable)
{
	pasco_tensor *a = r64(2, (int64_t[]){2, 2}, 1),
	             *b = r64(1, (int64_t[]){2}, 2);
	pasco_tape     *tp;
	pasco_tape_grad g[2], h[2];
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *src[2] = {
	    pasco_tape_watch(tp, a), pasco_tape_watch(tp, b)};
	pasco_tnode *l = weighted(tp, pasco_t_tanh(tp, src[0]));
	PASCO_PASS(pasco_tape_gradient(tp, l, 2, src, g));
	PASCO_PASS(pasco_tape_gradient(tp, l, 2, src, h));
	cr_assert_not_null(g[0].dense);
	cr_assert_null(g[1].dense);
	cr_assert_null(g[1].ids);
	cr_assert_null(g[1].rows);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(pasco_tensor_get(g[0].dense, i),
		    pasco_tensor_get(h[0].dense, i));
	}
	pasco_tape_grad_fini(g, 2);
	pasco_tape_grad_fini(h, 2);
	/* d l / d l is 1; a constant target gives None */
	pasco_tnode *c = pasco_t_reduce_sum(
	    tp, pasco_tape_constant(tp, b), PASCO_T_ALL_AXES);
	PASCO_PASS(pasco_tape_gradient(tp, c, 2, src, g));
	cr_assert_null(g[0].dense);
	cr_assert_null(g[1].dense);
	pasco_tape_free(tp);
	pasco_tensor_release(a);
	pasco_tensor_release(b);
}

Test(tape, f32_and_f64_tapes_agree)
{
	pasco_tensor   *w64 = r64(2, (int64_t[]){3, 4}, 1), *w32;
	pasco_tape_grad g[2];
	pasco_tape     *tp[2];
	PASCO_PASS(pasco_tensor_alloc(&w32, PASCO_F32, 2, w64->shape));
	for (int64_t i = 0; i < w64->count; i++) {
		pasco_tensor_set(w32, i, pasco_tensor_get(w64, i));
	}
	for (int k = 0; k < 2; k++) {
		PASCO_PASS(pasco_tape_alloc(&tp[k], true, 3));
		pasco_tnode *w = pasco_tape_watch(tp[k], k ? w64 : w32);
		pasco_tnode *l =
		    weighted(tp[k], pasco_t_softmax(tp[k],
		                        pasco_t_dropout(tp[k],
		                            pasco_t_sigmoid(tp[k], w), 0.3)));
		PASCO_PASS(pasco_tape_gradient(tp[k], l, 1, &w, &g[k]));
	}
	cr_assert_eq(g[0].dense->dtype, PASCO_F32);
	cr_assert_eq(g[1].dense->dtype, PASCO_F64);
	for (int64_t i = 0; i < w64->count; i++) {
		cr_assert_float_eq(pasco_tensor_get(g[0].dense, i),
		    pasco_tensor_get(g[1].dense, i), 1e-6);
	}
	pasco_tape_grad_fini(g, 2);
	pasco_tape_free(tp[0]);
	pasco_tape_free(tp[1]);
	pasco_tensor_release(w32);
	pasco_tensor_release(w64);
}

/* categorical_crossentropy: labels as class probabilities [batch, classes] */
static pasco_tnode *
cce_fn(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	return pasco_t_softmax_crossentropy(tp, s[0], ctx);
}

Test(tape, softmax_crossentropy_with_dense_labels_matches_finite_differences)
{
	int64_t       shape[2] = {3, 4};
	pasco_tensor *x = rnd(PASCO_F64, 2, shape, 11, -2.0, 2.0), *soft,
	             *onehot;
	/* soft labels (rows summing to 1 and to 0.5) and one-hot ones */
	const double sv[12] = {
	    0.1, 0.2, 0.3, 0.4, 0, 0, 1, 0, 0.25, 0, 0.25, 0};
	const double hv[12] = {0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0};
	PASCO_PASS(pasco_tensor_alloc(&soft, PASCO_F64, 2, shape));
	PASCO_PASS(pasco_tensor_alloc(&onehot, PASCO_F32, 2, shape));
	for (int i = 0; i < 12; i++) {
		pasco_tensor_set(soft, i, sv[i]);
		pasco_tensor_set(onehot, i, hv[i]);
	}
	check_fd("cce soft labels", cce_fn, soft, 1, &x, NULL);
	check_fd("cce one-hot labels", cce_fn, onehot, 1, &x, NULL);
	/* one-hot labels give what the class ids 1, 3, 0 give */
	pasco_tensor   *ids = ids_of(1, (int64_t[]){3}, (int64_t[]){1, 3, 0});
	pasco_tape     *ta, *tb;
	pasco_tnode    *na, *nb;
	pasco_tape_grad ga, gb;
	PASCO_PASS(pasco_tape_alloc(&ta, true, 1));
	PASCO_PASS(pasco_tape_alloc(&tb, true, 1));
	na              = pasco_tape_watch(ta, x);
	nb              = pasco_tape_watch(tb, x);
	pasco_tnode *la = pasco_t_softmax_crossentropy(ta, na, onehot);
	pasco_tnode *lb = pasco_t_softmax_crossentropy(tb, nb, ids);
	cr_assert(la != NULL && lb != NULL);
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(la), 0),
	    pasco_tensor_get(pasco_tnode_value(lb), 0), 1e-12);
	PASCO_PASS(pasco_tape_gradient(ta, la, 1, &na, &ga));
	PASCO_PASS(pasco_tape_gradient(tb, lb, 1, &nb, &gb));
	for (int i = 0; i < 12; i++) {
		cr_assert_float_eq(pasco_tensor_get(ga.dense, i),
		    pasco_tensor_get(gb.dense, i), 1e-12, "element %d", i);
	}
	pasco_tape_grad_fini(&ga, 1);
	pasco_tape_grad_fini(&gb, 1);
	pasco_tape_free(ta);
	pasco_tape_free(tb);
	pasco_tensor_release(ids);
	pasco_tensor_release(soft);
	pasco_tensor_release(onehot);
	pasco_tensor_release(x);
}

/* Keras's binary cross-entropy of a sigmoid's output goes through its
 * logits: the same value and gradient as from the logits, and a gradient
 * left at saturation, where clipped probabilities would give none. */
Test(tape, binary_crossentropy_of_a_sigmoid_is_taken_from_its_logits)
{
	pasco_tensor *z = NULL, *y = NULL;
	PASCO_PASS(pasco_tensor_from(&z, PASCO_F64, 1, (int64_t[]){3},
	    (double[]){-40, 0.5, 30}, 3 * sizeof(double)));
	PASCO_PASS(pasco_tensor_from(&y, PASCO_F64, 1, (int64_t[]){3},
	    (double[]){1, 0, 0}, 3 * sizeof(double)));
	pasco_tape     *tp;
	pasco_tape_grad g[1], h[1];
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *src = pasco_tape_watch(tp, z);
	pasco_tnode *a =
	    pasco_t_binary_crossentropy(tp, pasco_t_sigmoid(tp, src), y);
	pasco_tnode *b = pasco_t_binary_crossentropy_logits(tp, src, y);
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(a), 0),
	    pasco_tensor_get(pasco_tnode_value(b), 0), 1e-12);
	/* (40 + log1p(e^-40) + 0.974 + 30) / 3: beyond the clip's 16.1 */
	cr_assert_gt(pasco_tensor_get(pasco_tnode_value(a), 0), 20);
	PASCO_PASS(pasco_tape_gradient(tp, a, 1, &src, g));
	PASCO_PASS(pasco_tape_gradient(tp, b, 1, &src, h));
	for (int i = 0; i < 3; i++) {
		cr_assert_float_eq(pasco_tensor_get(g[0].dense, i),
		    pasco_tensor_get(h[0].dense, i), 1e-12);
	}
	/* d/dz of the mean at z = -40, y = 1: (sigmoid(z) - 1) / 3 */
	cr_assert_float_eq(pasco_tensor_get(g[0].dense, 0), -1.0 / 3, 1e-9);
	pasco_tape_grad_fini(g, 1);
	pasco_tape_grad_fini(h, 1);
	pasco_tape_free(tp);
	pasco_tensor_release(z);
	pasco_tensor_release(y);
}
