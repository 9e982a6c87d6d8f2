/* The gradient tape: every op's gradient against central finite
 * differences in f64, the losses against the kernels of kit/ops, a
 * two-layer MLP against a backward written by hand with those kernels,
 * embedding lookups' sparse gradients, dropout, and the tape's errors. */
#include "helpers.h"

#include <math.h>
#include <string.h>

TestSuite(tape, .timeout = 60);

/* A tensor of dtype with uniform values in [lo, hi) from seed. */
static pasco_tensor *
rnd(pasco_dtype dt, int32_t rank, const int64_t *shape, uint64_t seed,
    double lo, double hi)
{
	pasco_tensor *t;
	uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	PASCO_PASS(pasco_tensor_alloc(&t, dt, rank, shape));
	for (int64_t i = 0; i < t->count; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		pasco_tensor_set(
		    t, i, lo + (hi - lo) * (double) (s >> 11) * 0x1p-53);
	}
	return t;
}

static pasco_tensor *
ids_of(int32_t rank, const int64_t *shape, const int64_t *v)
{
	pasco_tensor *t;
	int64_t       n = 1;
	for (int32_t d = 0; d < rank; d++) {
		n *= shape[d];
	}
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I64, rank, shape, v, (size_t) n * sizeof(int64_t)));
	return t;
}

/* sum(x * R), R fixed random of x's shape: a scalar whose gradient sends
 * a different weight to every element of x. */
static pasco_tnode *
weighted(pasco_tape *tp, pasco_tnode *x)
{
	const pasco_tensor *v = pasco_tnode_value(x);
	pasco_tensor       *r;
	pasco_tnode        *n;
	if (v == NULL) {
		return NULL;
	}
	r = rnd(v->dtype, v->rank, v->shape, 99, -1, 1);
	n = pasco_t_reduce_sum(tp,
	    pasco_t_mul(tp, x, pasco_tape_constant(tp, r)), PASCO_T_ALL_AXES);
	pasco_tensor_release(r);
	return n;
}

typedef pasco_tnode *(*build_fn)(
    pasco_tape *tp, pasco_tnode *const *s, void *ctx);

enum { DENSE = 0, TABLE = 1 };

/* Builds f on a fresh tape (training, seed 7) with srcs watched. */
static pasco_tnode *
build(pasco_tape **tp, build_fn f, void *ctx, size_t n, pasco_tensor **srcs,
    const int *kinds, pasco_tnode **nodes)
{
	pasco_tnode *loss;
	PASCO_PASS(pasco_tape_alloc(tp, true, 7));
	for (size_t k = 0; k < n; k++) {
		nodes[k] = kinds != NULL && kinds[k] == TABLE
		               ? pasco_tape_watch_table(*tp, srcs[k])
		               : pasco_tape_watch(*tp, srcs[k]);
	}
	loss = f(*tp, nodes, ctx);
	cr_assert(loss != NULL, "building the loss failed: %s",
	    pasco_tape_message(*tp));
	return loss;
}

static double
loss_at(build_fn f, void *ctx, size_t n, pasco_tensor **srcs, const int *kinds)
{
	pasco_tape  *tp;
	pasco_tnode *nodes[8];
	pasco_tnode *loss = build(&tp, f, ctx, n, srcs, kinds, nodes);
	double       v    = pasco_tensor_get(pasco_tnode_value(loss), 0);
	pasco_tape_free(tp);
	return v;
}

/* The analytic gradient of source k, dense (a sparse one scattered). */
static double
grad_elem(const pasco_tape_grad *g, const pasco_tensor *src, int64_t i)
{
	int64_t dim, row;
	if (g->dense != NULL) {
		return pasco_tensor_get(g->dense, i);
	}
	if (g->ids == NULL) {
		return 0; /* None: the loss does not depend on it */
	}
	dim = src->shape[1];
	row = i / dim;
	for (int64_t r = 0; r < g->ids->count; r++) {
		if (pasco_tensor_get(g->ids, r) == (double) row) {
			return pasco_tensor_get(g->rows, r * dim + i % dim);
		}
	}
	return 0;
}

/* Every element of every source: analytic against central differences. */
static void
check_fd(const char *what, build_fn f, void *ctx, size_t n,
    pasco_tensor **srcs, const int *kinds)
{
	const double    eps = 1e-6;
	pasco_tape     *tp;
	pasco_tnode    *nodes[8];
	pasco_tape_grad g[8];
	pasco_tnode    *loss = build(&tp, f, ctx, n, srcs, kinds, nodes);
	PASCO_PASS(pasco_tape_gradient(tp, loss, n, nodes, g));
	for (size_t k = 0; k < n; k++) {
		for (int64_t i = 0; i < srcs[k]->count; i++) {
			double keep = pasco_tensor_get(srcs[k], i), up, down;
			double num, ana = grad_elem(&g[k], srcs[k], i);
			pasco_tensor_set(srcs[k], i, keep + eps);
			up = loss_at(f, ctx, n, srcs, kinds);
			pasco_tensor_set(srcs[k], i, keep - eps);
			down = loss_at(f, ctx, n, srcs, kinds);
			pasco_tensor_set(srcs[k], i, keep);
			num = (up - down) / (2 * eps);
			cr_assert(fabs(num - ana) <= 1e-6 + 1e-5 * fabs(num),
			    "%s: d/d source %zu [%lld]: analytic %.10g, "
			    "numeric %.10g",
			    what, k, (long long) i, ana, num);
		}
	}
	pasco_tape_grad_fini(g, n);
	pasco_tape_free(tp);
}

static pasco_tensor *
r64(int32_t rank, const int64_t *shape, uint64_t seed)
{
	return rnd(PASCO_F64, rank, shape, seed, -1, 1);
}

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

/* ---- losses ---- */

typedef struct loss_ctx {
	int           kind;
	pasco_tensor *labels;
} loss_ctx;

static pasco_tnode *
apply_loss(
    pasco_tape *tp, int kind, pasco_tnode *x, const pasco_tensor *labels)
{
	switch (kind) {
	case 0:
		return pasco_t_mse(tp, x, labels);
	case 1:
		return pasco_t_binary_crossentropy(tp, x, labels);
	case 2:
		return pasco_t_binary_crossentropy_logits(tp, x, labels);
	default:
		return pasco_t_softmax_crossentropy(tp, x, labels);
	}
}

static pasco_tnode *
b_loss(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	loss_ctx *c = ctx;
	/* scaled, so the incoming gradient is not 1 */
	return pasco_t_scale(
	    tp, apply_loss(tp, c->kind, s[0], c->labels), 1.7);
}

static pasco_tensor *
binary_labels(pasco_dtype dt, int64_t n)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, dt, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		pasco_tensor_set(t, i, (double) ((i * 7 + 3) % 3 == 0));
	}
	return t;
}

static pasco_tensor *
class_labels(int64_t n, int64_t classes)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_I32, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		pasco_tensor_set(t, i, (double) ((i * 5 + 1) % classes));
	}
	return t;
}

Test(tape, loss_gradients_match_finite_differences)
{
	for (int kind = 0; kind < 4; kind++) {
		loss_ctx      c = {kind, NULL};
		pasco_tensor *x;
		if (kind == 3) {
			x        = r64(2, (int64_t[]){6, 4}, 50);
			c.labels = class_labels(6, 4);
		} else {
			/* probabilities away from the clip, for BCE */
			x        = rnd(PASCO_F64, 1, (int64_t[]){6}, 50 + kind,
                            kind == 1 ? 0.05 : -2, kind == 1 ? 0.95 : 2);
			c.labels = binary_labels(PASCO_F64, 6);
		}
		check_fd("loss", b_loss, &c, 1, &x, NULL);
		pasco_tensor_release(x);
		pasco_tensor_release(c.labels);
	}
}

/* The tape's loss value and gradient against the kernel's, in f32. */
static void
check_against_kernel(int kind, pasco_tensor *x, pasco_tensor *labels)
{
	pasco_tape     *tp;
	pasco_tape_grad g;
	pasco_tensor   *dk;
	double          lk;
	int             rv;
	switch (kind) {
	case 0:
		rv = pasco_mse(x, labels, &lk, &dk);
		break;
	case 1:
		rv = pasco_binary_crossentropy(x, labels, &lk, &dk);
		break;
	case 2:
		rv = pasco_binary_crossentropy_logits(x, labels, &lk, &dk);
		break;
	default:
		rv = pasco_softmax_crossentropy(x, labels, &lk, &dk);
	}
	PASCO_PASS(rv);
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *w    = pasco_tape_watch(tp, x);
	pasco_tnode *loss = apply_loss(tp, kind, w, labels);
	PASCO_PASS(pasco_tape_gradient(tp, loss, 1, &w, &g));
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(loss), 0), lk,
	    1e-5 * (1 + fabs(lk)), "loss %d", kind);
	cr_assert_eq(g.dense->dtype, PASCO_F32);
	for (int64_t i = 0; i < x->count; i++) {
		cr_assert_float_eq(pasco_tensor_get(g.dense, i),
		    pasco_tensor_get(dk, i), 1e-6, "loss %d grad %lld", kind,
		    (long long) i);
	}
	pasco_tape_grad_fini(&g, 1);
	pasco_tape_free(tp);
	pasco_tensor_release(dk);
}

Test(tape, losses_match_the_kit_kernels_in_value_and_gradient)
{
	pasco_tensor *labels = binary_labels(PASCO_F32, 8);
	pasco_tensor *pred   = rnd(PASCO_F32, 2, (int64_t[]){4, 2}, 60, -2, 2);
	/* probabilities, some beyond the clip */
	pasco_tensor *prob = rnd(PASCO_F32, 2, (int64_t[]){4, 2}, 61, 0, 1);
	pasco_tensor_set(prob, 0, 0);
	pasco_tensor_set(prob, 1, 1);
	check_against_kernel(0, pred, labels);
	check_against_kernel(1, prob, labels);
	check_against_kernel(2, pred, labels);
	pasco_tensor *logits = rnd(PASCO_F32, 2, (int64_t[]){5, 3}, 62, -3, 3);
	pasco_tensor *cls    = class_labels(5, 3);
	check_against_kernel(3, logits, cls);
	pasco_tensor_release(labels);
	pasco_tensor_release(pred);
	pasco_tensor_release(prob);
	pasco_tensor_release(logits);
	pasco_tensor_release(cls);
}

static pasco_tnode *
b_l2(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	(void) ctx;
	return pasco_t_add(tp, pasco_t_l2(tp, s[0], 0.3), weighted(tp, s[0]));
}

Test(tape, l2_matches_finite_differences_and_the_kernel)
{
	pasco_tensor   *w = r64(2, (int64_t[]){3, 3}, 70), *gk;
	pasco_tape     *tp;
	pasco_tape_grad g;
	check_fd("l2", b_l2, NULL, 1, &w, NULL);
	PASCO_PASS(pasco_tensor_alloc(&gk, PASCO_F64, 2, w->shape));
	double pk = pasco_l2_penalty(w, 0.3, gk);
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *wn = pasco_tape_watch(tp, w);
	pasco_tnode *l  = pasco_t_l2(tp, wn, 0.3);
	PASCO_PASS(pasco_tape_gradient(tp, l, 1, &wn, &g));
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(l), 0), pk, 1e-12);
	for (int64_t i = 0; i < w->count; i++) {
		cr_assert_float_eq(pasco_tensor_get(g.dense, i),
		    pasco_tensor_get(gk, i), 1e-12);
	}
	pasco_tape_grad_fini(&g, 1);
	pasco_tape_free(tp);
	pasco_tensor_release(gk);
	pasco_tensor_release(w);
}

/* ---- embedding lookup ---- */

typedef struct emb_ctx {
	pasco_tensor  *ids;
	pasco_combiner c;
} emb_ctx;

static pasco_tnode *
b_embed(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	emb_ctx *e = ctx;
	return weighted(tp, pasco_t_embedding_lookup(tp, s[0], e->ids, e->c));
}

/* 4 examples of up to 3 ids: repeats within and across examples,
 * padding (-1), an example without ids; rows 3 and 4 untouched. */
static const int64_t emb_ids[12] = {0, 2, 2, 5, -1, -1, 1, 1, 2, -1, -1, -1};

Test(tape, embedding_lookup_gradients_match_for_sum_and_mean)
{
	pasco_combiner cs[]    = {PASCO_COMBINE_SUM, PASCO_COMBINE_MEAN};
	int            kinds[] = {TABLE};
	for (int c = 0; c < 2; c++) {
		emb_ctx e = {ids_of(2, (int64_t[]){4, 3}, emb_ids), cs[c]};
		pasco_tensor *table = r64(2, (int64_t[]){6, 3}, 80 + c);
		check_fd("embedding_lookup", b_embed, &e, 1, &table, kinds);
		pasco_tensor_release(table);
		pasco_tensor_release(e.ids);
	}
}

/* The sparse gradient of reduce_sum(lookup(ids)) over a 5 x 2 table. */
static void
lookup_grad(pasco_combiner c, bool gathered, pasco_tape_grad *g, double *value)
{
	pasco_tape   *tp;
	pasco_tensor *table = r64(2, (int64_t[]){5, 2}, 90), *rows, *gids;
	pasco_tensor *ids =
	    ids_of(2, (int64_t[]){3, 2}, (int64_t[]){1, 3, 3, 3, 0, -1});
	pasco_tnode *src;
	int64_t      want[] = {3, 1, 0, 3, 4};
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	if (gathered) {
		/* the rows a step would gather: ids 3, 1, 0, 3 (repeated), 4
		 */
		gids = ids_of(1, (int64_t[]){5}, want);
		PASCO_PASS(pasco_tensor_alloc(
		    &rows, PASCO_F64, 2, (int64_t[]){5, 2}));
		for (int r = 0; r < 5; r++) {
			for (int d = 0; d < 2; d++) {
				pasco_tensor_set(rows, r * 2 + d,
				    pasco_tensor_get(table, want[r] * 2 + d));
			}
		}
		src = pasco_tape_watch_rows(tp, gids, rows);
		pasco_tensor_release(gids);
		pasco_tensor_release(rows);
	} else {
		src = pasco_tape_watch_table(tp, table);
	}
	pasco_tnode *out = pasco_t_embedding_lookup(tp, src, ids, c);
	pasco_tnode *l   = pasco_t_reduce_sum(tp, out, PASCO_T_ALL_AXES);
	PASCO_PASS(pasco_tape_gradient(tp, l, 1, &src, g));
	*value = pasco_tensor_get(pasco_tnode_value(l), 0);
	pasco_tape_free(tp);
	pasco_tensor_release(ids);
	pasco_tensor_release(table);
}

Test(tape, embedding_gradient_is_sparse_with_repeated_ids_summed)
{
	/* ids [[1, 3], [3, 3], [0, pad]]: sum gives id 0 once, 1 once, 3
	 * three times; mean gives 1/2, 1/2 + 1, and 1 for the lone id 0 */
	double want_sum[] = {1, 1, 3}, want_mean[] = {1, 0.5, 1.5};
	double want_ids[] = {0, 1, 3};
	for (int gathered = 0; gathered < 2; gathered++) {
		for (int c = 0; c < 2; c++) {
			pasco_tape_grad g;
			double          v, vt;
			double         *want = c ? want_mean : want_sum;
			lookup_grad(c ? PASCO_COMBINE_MEAN : PASCO_COMBINE_SUM,
			    gathered, &g, &v);
			cr_assert_null(g.dense);
			cr_assert_eq(g.ids->dtype, PASCO_I64);
			cr_assert_eq(g.ids->count, 3);
			cr_assert_eq(g.rows->rank, 2);
			cr_assert_eq(g.rows->shape[0], 3);
			cr_assert_eq(g.rows->shape[1], 2);
			for (int r = 0; r < 3; r++) {
				cr_assert_eq(
				    pasco_tensor_get(g.ids, r), want_ids[r]);
				for (int d = 0; d < 2; d++) {
					cr_assert_float_eq(
					    pasco_tensor_get(
					        g.rows, r * 2 + d),
					    want[r], 1e-12, "row %d", r);
				}
			}
			pasco_tape_grad_fini(&g, 1);
			/* the gathered rows give the table's values */
			lookup_grad(c ? PASCO_COMBINE_MEAN : PASCO_COMBINE_SUM,
			    !gathered, &g, &vt);
			cr_assert_float_eq(v, vt, 1e-12);
			pasco_tape_grad_fini(&g, 1);
		}
	}
}

Test(tape, embedding_lookup_matches_the_combine_kernels)
{
	/* f32 table, ids [3, 2] without padding (the kernel divides by k) */
	int64_t       idv[] = {4, 1, 1, 1, 0, 2};
	pasco_tensor *table = rnd(PASCO_F32, 2, (int64_t[]){5, 4}, 95, -1, 1);
	pasco_tensor *ids   = ids_of(2, (int64_t[]){3, 2}, idv);
	pasco_tensor *rows, *out, *drows, *dout;
	pasco_tape   *tp;
	pasco_tape_grad g;
	for (int c = 1; c <= 2; c++) {
		PASCO_PASS(pasco_tensor_alloc(
		    &rows, PASCO_F32, 3, (int64_t[]){3, 2, 4}));
		for (int i = 0; i < 6; i++) {
			memcpy((float *) rows->data + i * 4,
			    (float *) table->data + idv[i] * 4,
			    4 * sizeof(float));
		}
		PASCO_PASS(pasco_embedding_combine(rows, c, &out));
		PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
		pasco_tnode *src = pasco_tape_watch_table(tp, table);
		pasco_tnode *y   = pasco_t_embedding_lookup(tp, src, ids, c);
		pasco_tnode *l   = weighted(tp, y);
		PASCO_PASS(pasco_tape_gradient(tp, l, 1, &src, &g));
		for (int64_t i = 0; i < out->count; i++) {
			cr_assert_float_eq(
			    pasco_tensor_get(pasco_tnode_value(y), i),
			    pasco_tensor_get(out, i), 1e-6);
		}
		/* the kernel's row gradients, summed per id by hand */
		dout = rnd(PASCO_F32, 2, (int64_t[]){3, 4}, 99, -1, 1);
		PASCO_PASS(pasco_embedding_combine_grad(dout, 2, c, &drows));
		for (int64_t r = 0; r < g.ids->count; r++) {
			int64_t id = (int64_t) pasco_tensor_get(g.ids, r);
			for (int d = 0; d < 4; d++) {
				double s = 0;
				for (int i = 0; i < 6; i++) {
					s += idv[i] == id
					         ? pasco_tensor_get(
					               drows, i * 4 + d)
					         : 0;
				}
				cr_assert_float_eq(
				    pasco_tensor_get(g.rows, r * 4 + d), s,
				    1e-5);
			}
		}
		cr_assert_eq(
		    g.ids->count, 4); /* ids 0, 1, 2, 4; row 3 untouched */
		pasco_tape_grad_fini(&g, 1);
		pasco_tape_free(tp);
		pasco_tensor_release(dout);
		pasco_tensor_release(drows);
		pasco_tensor_release(out);
		pasco_tensor_release(rows);
	}
	pasco_tensor_release(ids);
	pasco_tensor_release(table);
}

/* ---- a two-layer MLP against the kernels ---- */

static void
assert_close(const pasco_tensor *a, const pasco_tensor *b, const char *what)
{
	cr_assert(pasco_tensor_same_spec(a, b), "%s: specs differ", what);
	for (int64_t i = 0; i < a->count; i++) {
		double x = pasco_tensor_get(a, i), y = pasco_tensor_get(b, i);
		cr_assert(fabs(x - y) <= 1e-6 + 1e-4 * fabs(y),
		    "%s[%lld]: tape %g, kernels %g", what, (long long) i, x,
		    y);
	}
}

Test(tape, mlp_backward_matches_the_hand_written_kernels)
{
	pasco_tensor *x  = rnd(PASCO_F32, 2, (int64_t[]){8, 5}, 1, -1, 1);
	pasco_tensor *w1 = rnd(PASCO_F32, 2, (int64_t[]){5, 7}, 2, -1, 1);
	pasco_tensor *b1 = rnd(PASCO_F32, 1, (int64_t[]){7}, 3, -0.5, 0.5);
	pasco_tensor *w2 = rnd(PASCO_F32, 2, (int64_t[]){7, 3}, 4, -1, 1);
	pasco_tensor *b2 = rnd(PASCO_F32, 1, (int64_t[]){3}, 5, -0.5, 0.5);
	pasco_tensor *y  = class_labels(8, 3);
	pasco_tensor *z1, *a1, *h, *z2, *lg, *dlg, *db2, *dw2, *dh, *da1, *db1,
	    *dw1;
	double loss;

	/* by hand: forward, then each kernel's gradient in reverse */
	PASCO_PASS(pasco_matmul(x, false, w1, false, &z1));
	PASCO_PASS(pasco_bias_add(z1, b1, &a1));
	PASCO_PASS(pasco_activate(PASCO_RELU, a1, &h));
	PASCO_PASS(pasco_matmul(h, false, w2, false, &z2));
	PASCO_PASS(pasco_bias_add(z2, b2, &lg));
	PASCO_PASS(pasco_softmax_crossentropy(lg, y, &loss, &dlg));
	loss += pasco_l2_penalty(w1, 0.01, NULL);
	PASCO_PASS(pasco_bias_add_grad(dlg, &db2));
	PASCO_PASS(pasco_matmul(h, true, dlg, false, &dw2));
	PASCO_PASS(pasco_matmul(dlg, false, w2, true, &dh));
	PASCO_PASS(pasco_activate_grad(PASCO_RELU, h, dh, &da1));
	PASCO_PASS(pasco_bias_add_grad(da1, &db1));
	PASCO_PASS(pasco_matmul(x, true, da1, false, &dw1));
	pasco_l2_penalty(w1, 0.01, dw1);

	pasco_tape     *tp;
	pasco_tape_grad g[4];
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *src[4] = {pasco_tape_watch(tp, w1),
	    pasco_tape_watch(tp, b1), pasco_tape_watch(tp, w2),
	    pasco_tape_watch(tp, b2)};
	pasco_tnode *in     = pasco_tape_constant(tp, x);
	pasco_tnode *hn     = pasco_t_relu(
	        tp, pasco_t_bias_add(
	                tp, pasco_t_matmul(tp, in, src[0], false, false), src[1]));
	pasco_tnode *out = pasco_t_bias_add(
	    tp, pasco_t_matmul(tp, hn, src[2], false, false), src[3]);
	pasco_tnode *l =
	    pasco_t_add(tp, pasco_t_softmax_crossentropy(tp, out, y),
	        pasco_t_l2(tp, src[0], 0.01));
	PASCO_PASS(pasco_tape_gradient(tp, l, 4, src, g));
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(l), 0), loss, 1e-5);
	assert_close(pasco_tnode_value(out), lg, "logits");
	assert_close(g[0].dense, dw1, "dW1");
	assert_close(g[1].dense, db1, "db1");
	assert_close(g[2].dense, dw2, "dW2");
	assert_close(g[3].dense, db2, "db2");
	pasco_tape_grad_fini(g, 4);
	for (int k = 0; k < 4; k++) {
		cr_assert_null(g[k].dense);
	}
	pasco_tape_free(tp);
	pasco_tensor *all[] = {x, w1, b1, w2, b2, y, z1, a1, h, z2, lg, dlg,
	    db2, dw2, dh, da1, db1, dw1};
	for (size_t k = 0; k < sizeof(all) / sizeof(all[0]); k++) {
		pasco_tensor_release(all[k]);
	}
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

/* ---- errors ---- */

/* A fresh f32 constant [r, c] on tp. */
static pasco_tnode *
zeros(pasco_tape *tp, pasco_dtype dt, int64_t r, int64_t c)
{
	pasco_tensor *t;
	pasco_tnode  *n;
	PASCO_PASS(pasco_tensor_alloc(&t, dt, 2, (int64_t[]){r, c}));
	n = pasco_tape_watch(tp, t);
	pasco_tensor_release(t); /* the tape holds it */
	return n;
}

Test(tape, an_error_names_the_op_shapes_and_dtypes_and_sticks)
{
	pasco_tape     *tp;
	pasco_tape_grad g;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *a = zeros(tp, PASCO_F32, 32, 64);
	pasco_tnode *b = zeros(tp, PASCO_F32, 10, 64);
	cr_assert_null(pasco_t_matmul(tp, a, b, false, false));
	cr_assert_eq(pasco_tape_error(tp), PASCO_EINVAL);
	cr_assert_str_eq(pasco_tape_message(tp),
	    "matmul: f32[32,64] x f32[10,64]: inner "
	    "dimensions 64 and 10 differ");
	/* later ops do nothing, even valid ones, and keep the first message */
	cr_assert_null(pasco_t_matmul(tp, a, b, false, true));
	cr_assert_null(pasco_t_relu(tp, NULL));
	cr_assert_null(pasco_tape_watch(tp, NULL));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "matmul: f32[32,64] x f32[10,64]: inner "
	    "dimensions 64 and 10 differ");
	PASCO_FAIL(pasco_tape_gradient(tp, a, 1, &a, &g), PASCO_EINVAL);
	cr_assert_null(g.dense);
	pasco_tape_free(tp);
}

typedef pasco_tnode *(*bad_fn)(pasco_tape *tp);

static pasco_tnode *
bad_dtypes(pasco_tape *tp)
{
	return pasco_t_add(
	    tp, zeros(tp, PASCO_F32, 2, 3), zeros(tp, PASCO_F64, 2, 3));
}

static pasco_tnode *
bad_broadcast(pasco_tape *tp)
{
	return pasco_t_mul(
	    tp, zeros(tp, PASCO_F32, 2, 3), zeros(tp, PASCO_F32, 1, 3));
}

static pasco_tnode *
bad_bias(pasco_tape *tp)
{
	pasco_tnode *b = pasco_t_reduce_sum(tp, zeros(tp, PASCO_F32, 4, 1), 1);
	return pasco_t_bias_add(tp, zeros(tp, PASCO_F32, 2, 3), b);
}

static pasco_tnode *
bad_reshape(pasco_tape *tp)
{
	return pasco_t_reshape(
	    tp, zeros(tp, PASCO_F32, 2, 3), 2, (int64_t[]){4, -1});
}

static pasco_tnode *
bad_concat(pasco_tape *tp)
{
	return pasco_t_concat(tp, 2,
	    (pasco_tnode *[]){
	        zeros(tp, PASCO_F32, 2, 3), zeros(tp, PASCO_F32, 3, 3)},
	    1);
}

static pasco_tnode *
bad_axis(pasco_tape *tp)
{
	return pasco_t_reduce_mean(tp, zeros(tp, PASCO_F32, 2, 3), 2);
}

static pasco_tnode *
bad_label(pasco_tape *tp)
{
	pasco_tensor *y = class_labels(2, 3); /* then label 3 of 3 classes */
	pasco_tensor_set(y, 1, 3);
	pasco_tnode *n =
	    pasco_t_softmax_crossentropy(tp, zeros(tp, PASCO_F32, 2, 3), y);
	pasco_tensor_release(y);
	return n;
}

static pasco_tnode *
bad_id(pasco_tape *tp)
{
	pasco_tensor *t, *ids = ids_of(1, (int64_t[]){2}, (int64_t[]){1, 9});
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 2, (int64_t[]){5, 2}));
	pasco_tnode *n = pasco_t_embedding_lookup(
	    tp, pasco_tape_watch_table(tp, t), ids, PASCO_COMBINE_SUM);
	pasco_tensor_release(t);
	pasco_tensor_release(ids);
	return n;
}

static pasco_tnode *
bad_gathered(pasco_tape *tp)
{
	pasco_tensor *rows,
	    *gids         = ids_of(1, (int64_t[]){2}, (int64_t[]){4, 7});
	pasco_tensor *ids = ids_of(1, (int64_t[]){2}, (int64_t[]){7, 5});
	PASCO_PASS(pasco_tensor_alloc(&rows, PASCO_F32, 2, (int64_t[]){2, 3}));
	pasco_tnode *n = pasco_t_embedding_lookup(tp,
	    pasco_tape_watch_rows(tp, gids, rows), ids, PASCO_COMBINE_MEAN);
	pasco_tensor_release(rows);
	pasco_tensor_release(gids);
	pasco_tensor_release(ids);
	return n;
}

static pasco_tnode *
bad_table_use(pasco_tape *tp)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 2, (int64_t[]){5, 2}));
	pasco_tnode *n = pasco_t_relu(tp, pasco_tape_watch_table(tp, t));
	pasco_tensor_release(t);
	return n;
}

static pasco_tnode *
bad_rate(pasco_tape *tp)
{
	return pasco_t_dropout(tp, zeros(tp, PASCO_F32, 2, 3), 1.0);
}

static pasco_tnode *
bad_loss_count(pasco_tape *tp)
{
	pasco_tensor *y = binary_labels(PASCO_F32, 5);
	pasco_tnode  *n =
	    pasco_t_binary_crossentropy(tp, zeros(tp, PASCO_F32, 2, 3), y);
	pasco_tensor_release(y);
	return n;
}

Test(tape, bad_inputs_fail_with_messages_that_name_them)
{
	struct {
		bad_fn      f;
		const char *msg;
	} cases[] = {
	    {bad_dtypes, "add: f32[2,3] and f64[2,3]: dtypes differ"},
	    {bad_broadcast,
	        "mul: f32[2,3] and f32[1,3]: shapes do not broadcast "
	        "(one must be the trailing dimensions of the other)"},
	    {bad_bias, "bias_add: f32[2,3] + f32[4]: the bias must be [n] for "
	               "x [..., n]"},
	    {bad_reshape,
	        "reshape: f32[2,3] to f32[4,-1]: element counts differ "
	        "(or more than one -1)"},
	    {bad_concat,
	        "concat: f32[2,3] and f32[3,3] along axis 1: the other "
	        "dimensions differ"},
	    {bad_axis, "reduce_mean: f32[2,3]: axis 2 is outside [-2, 2)"},
	    {bad_label, "softmax_crossentropy: label 3 of example 1 is "
	                "outside [0, 3)"},
	    {bad_id, "embedding_lookup: id 9 is outside the table f32[5,2]"},
	    {bad_gathered,
	        "embedding_lookup: id 5 is not among the 2 ids gathered "
	        "(watch_rows)"},
	    {bad_table_use,
	        "relu: input 0 (f32[5,2]) is an embedding table: read "
	        "it with embedding_lookup"},
	    {bad_rate, "dropout: f32[2,3]: rate 1 is outside [0, 1)"},
	    {bad_loss_count,
	        "binary_crossentropy: f32[2,3] against f32[5]: want as "
	        "many labels as predictions (at least one)"},
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		pasco_tape *tp;
		PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
		cr_assert_null(cases[k].f(tp), "case %zu succeeded", k);
		cr_assert_eq(
		    pasco_tape_error(tp), PASCO_EINVAL, "case %zu", k);
		cr_assert_str_eq(pasco_tape_message(tp), cases[k].msg);
		pasco_tape_free(tp);
	}
}

Test(tape, gradient_rejects_a_non_scalar_target_and_unwatched_sources)
{
	pasco_tape     *tp;
	pasco_tape_grad g;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *w = zeros(tp, PASCO_F32, 2, 3);
	pasco_tnode *y = pasco_t_tanh(tp, w);
	PASCO_FAIL(pasco_tape_gradient(tp, y, 1, &w, &g), PASCO_EINVAL);
	cr_assert_str_eq(pasco_tape_message(tp),
	    "gradient: the target f32[2,3] is not a scalar");
	pasco_tape_free(tp);
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	w = zeros(tp, PASCO_F32, 2, 3);
	y = pasco_t_reduce_sum(tp, pasco_t_tanh(tp, w), PASCO_T_ALL_AXES);
	PASCO_FAIL(pasco_tape_gradient(tp, y, 1, (pasco_tnode *[]){y}, &g),
	    PASCO_EINVAL);
	cr_assert_str_eq(pasco_tape_message(tp),
	    "gradient: source 0 is not a watched leaf of this tape");
	pasco_tape_free(tp);
}
