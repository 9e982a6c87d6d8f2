/* The tape ops of docs/GRAPHS.md's table beyond the layers' own: values
 * against hand-computed ones, every differentiable op's gradient against
 * central finite differences in f64 (numpy broadcasting included: [b,1]
 * with [b,n], [n] with [b,n], a scalar), the rules on ties and clipping,
 * the ops without a gradient, and the messages of bad shapes. */
#include "tape_check.h"
#include "tape_impl.h"

TestSuite(tape_ops_more, .timeout = 60);

/* ---- values ---- */

static pasco_tnode *
cst(pasco_tape *tp, pasco_dtype dt, int32_t rank, const int64_t *shape,
    const double *v)
{
	pasco_tensor *t;
	pasco_tnode  *n;
	PASCO_PASS(pasco_tensor_alloc(&t, dt, rank, shape));
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(t, i, v[i]);
	}
	n = pasco_tape_constant(tp, t);
	pasco_tensor_release(t);
	return n;
}

#define C1(tp, n, ...)                                                        \
	cst(tp, PASCO_F64, 1, (int64_t[]){n}, (double[]){__VA_ARGS__})
#define C2(tp, r, c, ...)                                                     \
	cst(tp, PASCO_F64, 2, (int64_t[]){r, c}, (double[]){__VA_ARGS__})

/* t has shape (rank, shape) and values want[0..count). */
static void
expect_t(const char *what, const pasco_tensor *t, int32_t rank,
    const int64_t *shape, const double *want)
{
	cr_assert_not_null(t, "%s: no value", what);
	cr_assert_eq(t->rank, rank, "%s: rank %d, want %d", what,
	    (int) t->rank, (int) rank);
	for (int32_t d = 0; d < rank; d++) {
		cr_assert_eq(t->shape[d], shape[d], "%s: dim %d is %lld", what,
		    (int) d, (long long) t->shape[d]);
	}
	for (int64_t i = 0; i < t->count; i++) {
		cr_assert(fabs(pasco_tensor_get(t, i) - want[i]) < 1e-9,
		    "%s: [%lld] = %.12g, want %.12g", what, (long long) i,
		    pasco_tensor_get(t, i), want[i]);
	}
}

#define EXPECT(what, node, rank, shape, ...)                                  \
	expect_t(what, pasco_tnode_value(node), rank, shape,                  \
	    (double[]){__VA_ARGS__})

Test(tape_ops_more, elementwise_values_broadcast_as_numpy)
{
	pasco_tape  *tp;
	pasco_tnode *m, *col, *row, *s;
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	m   = C2(tp, 2, 2, 1, 2, 3, 4);
	col = C2(tp, 2, 1, 2, 4);
	row = C1(tp, 2, 2, 1);
	s   = cst(tp, PASCO_F64, 0, NULL, (double[]){10});
	EXPECT("div col", pasco_t_div(tp, m, col), 2, ((int64_t[]){2, 2}), 0.5,
	    1, 0.75, 1);
	EXPECT("add col", pasco_t_add(tp, col, m), 2, ((int64_t[]){2, 2}), 3,
	    4, 7, 8);
	EXPECT("sub scalar", pasco_t_sub(tp, s, m), 2, ((int64_t[]){2, 2}), 9,
	    8, 7, 6);
	EXPECT("mul col by row", pasco_t_mul(tp, col, row), 2,
	    ((int64_t[]){2, 2}), 4, 2, 8, 4);
	EXPECT("maximum", pasco_t_maximum(tp, m, row), 2, ((int64_t[]){2, 2}),
	    2, 2, 3, 4);
	EXPECT("minimum", pasco_t_minimum(tp, m, row), 2, ((int64_t[]){2, 2}),
	    1, 1, 2, 1);
	{
		pasco_tnode *a = C1(tp, 3, 1, 2, 3), *b = C1(tp, 1, 2);
		int64_t      sh[] = {3};
		EXPECT("greater", pasco_t_greater(tp, a, b), 1, sh, 0, 0, 1);
		EXPECT("greater_equal", pasco_t_greater_equal(tp, a, b), 1, sh,
		    0, 1, 1);
		EXPECT("less", pasco_t_less(tp, a, b), 1, sh, 1, 0, 0);
		EXPECT("less_equal", pasco_t_less_equal(tp, a, b), 1, sh, 1, 1,
		    0);
		EXPECT("equal", pasco_t_equal(tp, a, b), 1, sh, 0, 1, 0);
		EXPECT(
		    "not_equal", pasco_t_not_equal(tp, a, b), 1, sh, 1, 0, 1);
	}
	{
		pasco_tensor *c =
		    ids_of(1, (int64_t[]){3}, (int64_t[]){1, 0, 7});
		EXPECT("where",
		    pasco_t_where(tp, c, C1(tp, 3, 1, 2, 3), C1(tp, 1, 10)), 1,
		    ((int64_t[]){3}), 1, 10, 3);
		pasco_tensor_release(c);
	}
	cr_assert_eq(
	    pasco_tape_error(tp), PASCO_OK, "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
}

Test(tape_ops_more, unary_and_reduction_values)
{
	pasco_tape  *tp;
	pasco_tnode *m;
	int64_t      s3[] = {3};
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	EXPECT("exp", pasco_t_exp(tp, C1(tp, 3, 0, 1, -1)), 1, s3, 1, M_E,
	    1 / M_E);
	EXPECT("log", pasco_t_log(tp, C1(tp, 3, 1, M_E, 0.5)), 1, s3, 0, 1,
	    log(0.5));
	EXPECT(
	    "sqrt", pasco_t_sqrt(tp, C1(tp, 3, 4, 9, 0.25)), 1, s3, 2, 3, 0.5);
	EXPECT(
	    "square", pasco_t_square(tp, C1(tp, 3, -3, 0, 2)), 1, s3, 9, 0, 4);
	EXPECT("abs", pasco_t_abs(tp, C1(tp, 3, -2, 0, 2)), 1, s3, 2, 0, 2);
	EXPECT("negative", pasco_t_negative(tp, C1(tp, 3, 5, 0, -1)), 1, s3,
	    -5, 0, 1);
	EXPECT("clip", pasco_t_clip(tp, C1(tp, 3, -5, 0.25, 5), -1, 1), 1, s3,
	    -1, 0.25, 1);
	m = C2(tp, 2, 3, 1, 3, 3, 5, 0, 5);
	EXPECT("reduce_sum axis 0 keepdims",
	    pasco_t_reduce_sum_axes(tp, m, 1, (int32_t[]){0}, true), 2,
	    ((int64_t[]){1, 3}), 6, 3, 8);
	EXPECT("reduce_mean every axis",
	    pasco_t_reduce_mean_axes(tp, m, 0, NULL, false), 0, NULL,
	    17.0 / 6);
	EXPECT("reduce_mean axes {0, 1} keepdims",
	    pasco_t_reduce_mean_axes(tp, m, 2, (int32_t[]){1, 0}, true), 2,
	    ((int64_t[]){1, 1}), 17.0 / 6);
	EXPECT("reduce_max axis -1",
	    pasco_t_reduce_max(tp, m, 1, (int32_t[]){-1}, false), 1,
	    ((int64_t[]){2}), 3, 5);
	expect_t("argmax axis 1 (the first of ties)", pasco_t_argmax(tp, m, 1),
	    1, ((int64_t[]){2}), (double[]){1, 0});
	expect_t("argmax axis 0", pasco_t_argmax(tp, m, 0), 1,
	    ((int64_t[]){3}), (double[]){1, 0, 1});
	EXPECT("softmax axis 0",
	    pasco_t_softmax_axis(tp, C2(tp, 2, 2, 0, 0, log(3), 0), 0), 2,
	    ((int64_t[]){2, 2}), 0.25, 0.5, 0.75, 0.5);
	EXPECT("log_softmax",
	    pasco_t_log_softmax(tp, C1(tp, 2, 0, log(3)), -1), 1,
	    ((int64_t[]){2}), log(0.25), log(0.75));
	EXPECT("l2_normalize",
	    pasco_t_l2_normalize(tp, C1(tp, 2, 3, 4), 0, 1e-12), 1,
	    ((int64_t[]){2}), 0.6, 0.8);
	EXPECT("l2_normalize of zeros (epsilon)",
	    pasco_t_l2_normalize(tp, C1(tp, 2, 0, 0), 0, 1e-12), 1,
	    ((int64_t[]){2}), 0, 0);
	cr_assert_eq(
	    pasco_tape_error(tp), PASCO_OK, "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
}

Test(tape_ops_more, shape_and_product_values)
{
	pasco_tape   *tp;
	pasco_tnode  *m;
	pasco_tensor *ix;
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	m = C2(tp, 2, 3, 1, 2, 3, 4, 5, 6);
	EXPECT("transpose", pasco_t_transpose(tp, m, (int32_t[]){1, 0}), 2,
	    ((int64_t[]){3, 2}), 1, 4, 2, 5, 3, 6);
	EXPECT("transpose NULL", pasco_t_transpose(tp, m, NULL), 2,
	    ((int64_t[]){3, 2}), 1, 4, 2, 5, 3, 6);
	EXPECT("expand_dims -1", pasco_t_expand_dims(tp, m, -1), 3,
	    ((int64_t[]){2, 3, 1}), 1, 2, 3, 4, 5, 6);
	EXPECT("squeeze",
	    pasco_t_squeeze(tp, pasco_t_expand_dims(tp, m, 1), 1), 2,
	    ((int64_t[]){2, 3}), 1, 2, 3, 4, 5, 6);
	EXPECT("slice",
	    pasco_t_slice(tp, m, (int64_t[]){0, 1}, (int64_t[]){-1, 2}), 2,
	    ((int64_t[]){2, 2}), 2, 3, 5, 6);
	ix = ids_of(2, (int64_t[]){2, 2}, (int64_t[]){1, 0, 1, 1});
	EXPECT("gather axis 0", pasco_t_gather(tp, m, ix, 0), 3,
	    ((int64_t[]){2, 2, 3}), 4, 5, 6, 1, 2, 3, 4, 5, 6, 4, 5, 6);
	pasco_tensor_release(ix);
	ix = ids_of(1, (int64_t[]){2}, (int64_t[]){2, 0});
	EXPECT("gather axis 1", pasco_t_gather(tp, m, ix, 1), 2,
	    ((int64_t[]){2, 2}), 3, 1, 6, 4);
	pasco_tensor_release(ix);
	ix = ids_of(1, (int64_t[]){4}, (int64_t[]){0, 2, -1, 3});
	EXPECT("one_hot", pasco_t_one_hot(tp, ix, 3, PASCO_F32), 2,
	    ((int64_t[]){4, 3}), 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0);
	pasco_tensor_release(ix);
	EXPECT("dot 1.1",
	    pasco_t_dot(tp, C1(tp, 3, 1, 2, 3), C1(tp, 3, 4, 5, 6)), 0, NULL,
	    32);
	EXPECT("dot 2.1", pasco_t_dot(tp, m, C1(tp, 3, 1, 0, -1)), 1,
	    ((int64_t[]){2}), -2, -2);
	EXPECT("dot 1.2", pasco_t_dot(tp, C1(tp, 2, 1, -1), m), 1,
	    ((int64_t[]){3}), -3, -3, -3);
	EXPECT("batch_dot [b,n].[b,n]",
	    pasco_t_batch_dot(
	        tp, C2(tp, 2, 2, 1, 2, 3, 4), C2(tp, 2, 2, 5, 6, 7, 8), 1, 1),
	    2, ((int64_t[]){2, 1}), 17, 53);
	{
		pasco_tnode *a = cst(tp, PASCO_F64, 3, (int64_t[]){2, 1, 2},
		    (double[]){1, 2, 3, 4});
		pasco_tnode *b = cst(tp, PASCO_F64, 3, (int64_t[]){2, 2, 1},
		    (double[]){1, 1, 2, -1});
		EXPECT("matmul rank 3", pasco_t_matmul(tp, a, b, false, false),
		    3, ((int64_t[]){2, 1, 1}), 3, 2);
		EXPECT("matmul rank 3, a^T b^T",
		    pasco_t_matmul(tp, b, a, true, true), 3,
		    ((int64_t[]){2, 1, 1}), 3, 2);
	}
	EXPECT("cast to f32", pasco_t_cast(tp, C1(tp, 2, 0.5, -2), PASCO_F32),
	    1, ((int64_t[]){2}), 0.5, -2);
	cr_assert_eq(pasco_tnode_value(pasco_t_cast(tp, m, PASCO_F32))->dtype,
	    PASCO_F32);
	cr_assert_eq(
	    pasco_tape_error(tp), PASCO_OK, "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
}

/* ---- gradients against finite differences ---- */

typedef pasco_tnode *(*op_fn)(pasco_tape *tp, pasco_tnode *const *s);

typedef struct fd_case {
	const char *what;
	op_fn       op;
	size_t      n;
	int32_t     rank[3];
	int64_t     shape[3][4];
	double      lo, hi;
} fd_case;

static pasco_tnode *
b_case(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	const fd_case *c = ctx;
	return weighted(tp, c->op(tp, s));
}

static void
run_cases(const fd_case *cs, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		fd_case       c = cs[i];
		pasco_tensor *srcs[3];
		if (c.lo == 0 && c.hi == 0) {
			c.lo = -1;
			c.hi = 1;
		}
		for (size_t k = 0; k < c.n; k++) {
			srcs[k] = rnd(PASCO_F64, c.rank[k], c.shape[k],
			    17 + 3 * i + k, c.lo, c.hi);
		}
		check_fd(c.what, b_case, &c, c.n, srcs, NULL);
		for (size_t k = 0; k < c.n; k++) {
			pasco_tensor_release(srcs[k]);
		}
	}
}

#define OP(name, expr)                                                        \
	static pasco_tnode *name(pasco_tape *tp, pasco_tnode *const *s)       \
	{                                                                     \
		return (expr);                                                \
	}

OP(o_add, pasco_t_add(tp, s[0], s[1]))
OP(o_sub, pasco_t_sub(tp, s[0], s[1]))
OP(o_mul, pasco_t_mul(tp, s[0], s[1]))
OP(o_div, pasco_t_div(tp, s[0], s[1]))
OP(o_max, pasco_t_maximum(tp, s[0], s[1]))
OP(o_min, pasco_t_minimum(tp, s[0], s[1]))

Test(tape_ops_more, broadcasting_gradients_match_finite_differences)
{
	const fd_case cs[] = {
	    {"add [b,1] + [b,n]", o_add, 2, {2, 2}, {{4, 1}, {4, 3}}, 0, 0},
	    {"add [n] + [b,n]", o_add, 2, {1, 2}, {{3}, {4, 3}}, 0, 0},
	    {"add [b,n] + [n]", o_add, 2, {2, 1}, {{4, 3}, {3}}, 0, 0},
	    {"add scalar + [b,n]", o_add, 2, {0, 2}, {{0}, {2, 3}}, 0, 0},
	    {"sub [b,n] - [b,1]", o_sub, 2, {2, 2}, {{4, 3}, {4, 1}}, 0, 0},
	    {"sub [1,n] - [b,1]", o_sub, 2, {2, 2}, {{1, 3}, {4, 1}}, 0, 0},
	    {"mul [b,1] * [1,n]", o_mul, 2, {2, 2}, {{4, 1}, {1, 3}}, 0, 0},
	    {"mul [2,1,3] * [4,1]", o_mul, 2, {3, 2}, {{2, 1, 3}, {4, 1}}, 0,
	        0},
	    {"div [b,n] / [b,1]", o_div, 2, {2, 2}, {{4, 3}, {4, 1}}, 0.5, 2},
	    {"div [n] / [b,n]", o_div, 2, {1, 2}, {{3}, {4, 3}}, 0.5, 2},
	    {"div scalar / [b,n]", o_div, 2, {0, 2}, {{0}, {2, 3}}, 0.5, 2},
	    {"maximum [b,n], [n]", o_max, 2, {2, 1}, {{4, 3}, {3}}, 0, 0},
	    {"maximum [b,1], [b,n]", o_max, 2, {2, 2}, {{4, 1}, {4, 3}}, 0, 0},
	    {"minimum [2,1,3], [4,1]", o_min, 2, {3, 2}, {{2, 1, 3}, {4, 1}},
	        0, 0},
	    {"minimum scalar, [b,n]", o_min, 2, {0, 2}, {{0}, {2, 3}}, 0, 0},
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]));
}

static pasco_tnode *
o_where(pasco_tape *tp, pasco_tnode *const *s)
{
	pasco_tensor *c =
	    ids_of(2, (int64_t[]){4, 1}, (int64_t[]){1, 0, 0, 3});
	pasco_tnode *n = pasco_t_where(tp, c, s[0], s[1]);
	pasco_tensor_release(c);
	return n;
}

OP(o_exp, pasco_t_exp(tp, s[0]))
OP(o_log, pasco_t_log(tp, s[0]))
OP(o_sqrt, pasco_t_sqrt(tp, s[0]))
OP(o_square, pasco_t_square(tp, s[0]))
OP(o_abs, pasco_t_abs(tp, s[0]))
OP(o_neg, pasco_t_negative(tp, s[0]))
OP(o_clip, pasco_t_clip(tp, s[0], -0.4, 0.3))
OP(o_sum02, pasco_t_reduce_sum_axes(tp, s[0], 2, (int32_t[]){0, 2}, true))
OP(o_mean1, pasco_t_reduce_mean_axes(tp, s[0], 1, (int32_t[]){1}, false))
OP(o_mean_all, pasco_t_reduce_mean_axes(tp, s[0], 0, NULL, true))
OP(o_max_last, pasco_t_reduce_max(tp, s[0], 1, (int32_t[]){-1}, true))
OP(o_max_01, pasco_t_reduce_max(tp, s[0], 2, (int32_t[]){0, 1}, false))
OP(o_max_all, pasco_t_reduce_max(tp, s[0], 0, NULL, false))
OP(o_smax0, pasco_t_softmax_axis(tp, s[0], 0))
OP(o_lsmax1, pasco_t_log_softmax(tp, s[0], 1))
OP(o_lsmax_last, pasco_t_log_softmax(tp, s[0], -1))
OP(o_l2_last, pasco_t_l2_normalize(tp, s[0], -1, 1e-12))
OP(o_l2_0, pasco_t_l2_normalize(tp, s[0], 0, 1e-12))
OP(o_cast, pasco_t_cast(tp, s[0], PASCO_F64))

Test(tape_ops_more, unary_and_reduction_gradients_match_finite_differences)
{
	const fd_case cs[] = {
	    {"where [4,1] ? [4,3] : [3]", o_where, 2, {2, 1}, {{4, 3}, {3}}, 0,
	        0},
	    {"exp", o_exp, 1, {2}, {{3, 4}}, 0, 0},
	    {"log", o_log, 1, {2}, {{3, 4}}, 0.5, 2},
	    {"sqrt", o_sqrt, 1, {2}, {{3, 4}}, 0.5, 2},
	    {"square", o_square, 1, {2}, {{3, 4}}, 0, 0},
	    {"abs", o_abs, 1, {2}, {{3, 4}}, 0, 0},
	    {"negative", o_neg, 1, {2}, {{3, 4}}, 0, 0},
	    {"clip [-0.4, 0.3]", o_clip, 1, {2}, {{3, 4}}, 0, 0},
	    {"reduce_sum axes {0, 2} keepdims", o_sum02, 1, {3}, {{2, 3, 4}},
	        0, 0},
	    {"reduce_mean axis 1", o_mean1, 1, {3}, {{2, 3, 4}}, 0, 0},
	    {"reduce_mean every axis keepdims", o_mean_all, 1, {2}, {{3, 4}},
	        0, 0},
	    {"reduce_max axis -1 keepdims", o_max_last, 1, {3}, {{2, 3, 4}}, 0,
	        0},
	    {"reduce_max axes {0, 1}", o_max_01, 1, {3}, {{2, 3, 4}}, 0, 0},
	    {"reduce_max every axis", o_max_all, 1, {2}, {{3, 4}}, 0, 0},
	    {"softmax axis 0", o_smax0, 1, {3}, {{3, 2, 2}}, 0, 0},
	    {"log_softmax axis 1", o_lsmax1, 1, {3}, {{3, 4, 2}}, 0, 0},
	    {"log_softmax axis -1", o_lsmax_last, 1, {2}, {{3, 4}}, 0, 0},
	    {"l2_normalize axis -1", o_l2_last, 1, {2}, {{3, 4}}, 0, 0},
	    {"l2_normalize axis 0", o_l2_0, 1, {3}, {{3, 2, 2}}, 0, 0},
	    {"cast f64 to f64", o_cast, 1, {2}, {{3, 4}}, 0, 0},
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]));
}

OP(o_transpose, pasco_t_transpose(tp, s[0], (int32_t[]){2, 0, 1}))
OP(o_expand, pasco_t_expand_dims(tp, s[0], 1))
OP(o_squeeze, pasco_t_squeeze(tp, s[0], -2))
OP(o_slice, pasco_t_slice(tp, s[0], (int64_t[]){1, 1}, (int64_t[]){2, -1}))
OP(o_bmm, pasco_t_matmul(tp, s[0], s[1], false, false))
OP(o_bmm_ta, pasco_t_matmul(tp, s[0], s[1], true, false))
OP(o_bmm_tb, pasco_t_matmul(tp, s[0], s[1], false, true))
OP(o_bmm_tab, pasco_t_matmul(tp, s[0], s[1], true, true))
OP(o_dot, pasco_t_dot(tp, s[0], s[1]))
OP(o_bdot11, pasco_t_batch_dot(tp, s[0], s[1], 1, 1))
OP(o_bdot21, pasco_t_batch_dot(tp, s[0], s[1], 2, 1))
OP(o_bdot12, pasco_t_batch_dot(tp, s[0], s[1], 1, 2))
OP(o_bdot22, pasco_t_batch_dot(tp, s[0], s[1], -1, -1))

static pasco_tnode *
o_gather(pasco_tape *tp, pasco_tnode *const *s)
{
	/* index 2 twice: its rows' gradients add up */
	pasco_tensor *ix =
	    ids_of(2, (int64_t[]){2, 2}, (int64_t[]){0, 2, 2, 4});
	pasco_tnode *n = pasco_t_gather(tp, s[0], ix, 0);
	pasco_tensor_release(ix);
	return n;
}

static pasco_tnode *
o_gather1(pasco_tape *tp, pasco_tnode *const *s)
{
	pasco_tensor *ix = ids_of(1, (int64_t[]){3}, (int64_t[]){3, 0, 3});
	pasco_tnode  *n  = pasco_t_gather(tp, s[0], ix, 1);
	pasco_tensor_release(ix);
	return n;
}

Test(tape_ops_more, shape_and_product_gradients_match_finite_differences)
{
	const fd_case cs[] = {
	    {"transpose {2, 0, 1}", o_transpose, 1, {3}, {{2, 3, 4}}, 0, 0},
	    {"expand_dims 1", o_expand, 1, {2}, {{2, 3}}, 0, 0},
	    {"squeeze -2", o_squeeze, 1, {3}, {{2, 1, 3}}, 0, 0},
	    {"slice", o_slice, 1, {2}, {{3, 4}}, 0, 0},
	    {"gather axis 0, repeated", o_gather, 1, {2}, {{5, 3}}, 0, 0},
	    {"gather axis 1", o_gather1, 1, {3}, {{2, 4, 3}}, 0, 0},
	    {"matmul rank 3", o_bmm, 2, {3, 3}, {{2, 3, 4}, {2, 4, 5}}, 0, 0},
	    {"matmul rank 3 a^T", o_bmm_ta, 2, {3, 3}, {{2, 4, 3}, {2, 4, 5}},
	        0, 0},
	    {"matmul rank 3 b^T", o_bmm_tb, 2, {3, 3}, {{2, 3, 4}, {2, 5, 4}},
	        0, 0},
	    {"matmul rank 3 a^T b^T", o_bmm_tab, 2, {3, 3},
	        {{2, 4, 3}, {2, 5, 4}}, 0, 0},
	    {"dot [n].[n]", o_dot, 2, {1, 1}, {{4}, {4}}, 0, 0},
	    {"dot [m,n].[n]", o_dot, 2, {2, 1}, {{3, 4}, {4}}, 0, 0},
	    {"dot [n].[n,k]", o_dot, 2, {1, 2}, {{4}, {4, 2}}, 0, 0},
	    {"dot [m,n].[n,k]", o_dot, 2, {2, 2}, {{3, 4}, {4, 2}}, 0, 0},
	    {"batch_dot [b,n].[b,n]", o_bdot11, 2, {2, 2}, {{3, 4}, {3, 4}}, 0,
	        0},
	    {"batch_dot [b,n,m].[b,m,k] (2, 1)", o_bdot21, 2, {3, 3},
	        {{3, 2, 4}, {3, 4, 5}}, 0, 0},
	    {"batch_dot [b,m,n].[b,k,m] (1, 2)", o_bdot12, 2, {3, 3},
	        {{3, 4, 2}, {3, 5, 4}}, 0, 0},
	    {"batch_dot [b,n,m].[b,m] (2, 1)", o_bdot21, 2, {3, 2},
	        {{3, 2, 4}, {3, 4}}, 0, 0},
	    {"batch_dot [b,m].[b,k,m] (-1, -1)", o_bdot22, 2, {2, 3},
	        {{3, 4}, {3, 5, 4}}, 0, 0},
	};
	run_cases(cs, sizeof(cs) / sizeof(cs[0]));
}

/* ---- the rules: ties, clipping, no gradient ---- */

/* d sum(op(x) * w) / dx for x given, into want's count. */
static void
expect_grad(const char *what, op_fn op, int32_t rank, const int64_t *shape,
    const double *x, const double *want)
{
	pasco_tape     *tp;
	pasco_tensor   *t;
	pasco_tnode    *n, *loss;
	pasco_tape_grad g;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F64, rank, shape));
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(t, i, x[i]);
	}
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	n    = pasco_tape_watch(tp, t);
	loss = pasco_t_reduce_sum(tp, op(tp, &n), PASCO_T_ALL_AXES);
	PASCO_PASS(pasco_tape_gradient(tp, loss, 1, &n, &g));
	if (want == NULL) {
		cr_assert_null(g.dense, "%s: a gradient reached x", what);
	} else {
		expect_t(what, g.dense, rank, shape, want);
	}
	pasco_tape_grad_fini(&g, 1);
	pasco_tape_free(tp);
	pasco_tensor_release(t);
}

OP(o_max_row, pasco_t_reduce_max(tp, s[0], 1, (int32_t[]){1}, false))
OP(o_max_every, pasco_t_reduce_max(tp, s[0], 0, NULL, false))
OP(o_max_self, pasco_t_maximum(tp, s[0], pasco_t_stop_gradient(tp, s[0])))
OP(o_min_self, pasco_t_minimum(tp, pasco_t_stop_gradient(tp, s[0]), s[0]))
OP(o_gt, pasco_t_greater(tp, s[0], pasco_t_scale(tp, s[0], 0.5)))
OP(o_stop, pasco_t_stop_gradient(tp, s[0]))
OP(o_clip01, pasco_t_clip(tp, s[0], 0, 1))

Test(tape_ops_more, ties_go_to_the_first_and_clip_passes_no_gradient_outside)
{
	int64_t      s23[] = {2, 3}, s4[] = {4};
	const double x[] = {3, 1, 3, 2, 2, 0};
	expect_grad("reduce_max over rows: the first of equal maxima",
	    o_max_row, 2, s23, x, (double[]){1, 0, 0, 1, 0, 0});
	expect_grad("reduce_max over everything: the first in row-major order",
	    o_max_every, 2, s23, x, (double[]){1, 0, 0, 0, 0, 0});
	expect_grad("maximum of equals: to the first input", o_max_self, 2,
	    s23, x, (double[]){1, 1, 1, 1, 1, 1});
	expect_grad("minimum of equals: to the first input (stopped)",
	    o_min_self, 2, s23, x, (double[]){0, 0, 0, 0, 0, 0});
	expect_grad("clip [0, 1]: 0 outside, 1 inside and on the bounds",
	    o_clip01, 1, s4, (double[]){-0.5, 0, 0.5, 1.5},
	    (double[]){0, 1, 1, 0});
	expect_grad("a comparison passes no gradient", o_gt, 2, s23, x, NULL);
	expect_grad("stop_gradient", o_stop, 2, s23, x, NULL);
}

Test(tape_ops_more, gather_and_where_route_gradients_as_they_picked)
{
	pasco_tape   *tp;
	pasco_tensor *p  = rnd(PASCO_F64, 2, (int64_t[]){3, 2}, 5, -1, 1);
	pasco_tensor *ix = ids_of(1, (int64_t[]){4}, (int64_t[]){2, 0, 2, 2});
	pasco_tensor *c  = ids_of(1, (int64_t[]){2}, (int64_t[]){0, 1});
	pasco_tnode  *src[2], *loss;
	pasco_tape_grad g[2];
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	src[0] = pasco_tape_watch(tp, p);
	src[1] = pasco_tape_watch(tp, p);
	loss   = pasco_t_add(tp,
	      pasco_t_reduce_sum(
	          tp, pasco_t_gather(tp, src[0], ix, 0), PASCO_T_ALL_AXES),
	      pasco_t_reduce_sum(tp,
	          pasco_t_where(tp, c, pasco_t_scale(tp, src[1], 2), src[1]),
	          PASCO_T_ALL_AXES));
	PASCO_PASS(pasco_tape_gradient(tp, loss, 2, src, g));
	expect_t("gather: row 2 picked three times", g[0].dense, 2,
	    ((int64_t[]){3, 2}), (double[]){1, 1, 0, 0, 3, 3});
	expect_t("where: 2 where true, 1 where false", g[1].dense, 2,
	    ((int64_t[]){3, 2}), (double[]){1, 2, 1, 2, 1, 2});
	pasco_tape_grad_fini(g, 2);
	pasco_tape_free(tp);
	pasco_tensor_release(p);
	pasco_tensor_release(ix);
	pasco_tensor_release(c);
}

Test(tape_ops_more, cast_to_f32_casts_the_gradient_back)
{
	pasco_tape     *tp;
	pasco_tensor   *x = rnd(PASCO_F64, 1, (int64_t[]){3}, 3, -1, 1);
	pasco_tnode    *n, *loss;
	pasco_tape_grad g;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	n    = pasco_tape_watch(tp, x);
	loss = pasco_t_reduce_sum(tp,
	    pasco_t_square(tp, pasco_t_cast(tp, n, PASCO_F32)),
	    PASCO_T_ALL_AXES);
	cr_assert_eq(pasco_tnode_value(loss)->dtype, PASCO_F32);
	PASCO_PASS(pasco_tape_gradient(tp, loss, 1, &n, &g));
	cr_assert_eq(g.dense->dtype, PASCO_F64);
	for (int64_t i = 0; i < 3; i++) {
		double want = 2 * (double) (float) pasco_tensor_get(x, i);
		cr_assert(fabs(pasco_tensor_get(g.dense, i) - want) < 1e-6);
	}
	pasco_tape_grad_fini(&g, 1);
	pasco_tape_free(tp);
	pasco_tensor_release(x);
}

/* A custom Dense (matmul + add of a row) runs the built-in's bias_add. */
Test(tape_ops_more, a_row_added_to_a_matrix_runs_as_bias_add)
{
	pasco_tape  *tp;
	pasco_tnode *x, *b, *y, *z;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	x = C2(tp, 2, 3, 1, 2, 3, 4, 5, 6);
	b = C1(tp, 3, 10, 20, 30);
	y = pasco_t_add(tp, x, b);
	z = pasco_t_add(tp, b, x);
	cr_assert_str_eq(y->op->name, "bias_add");
	cr_assert_str_eq(z->op->name, "bias_add");
	EXPECT("x + b", y, 2, ((int64_t[]){2, 3}), 11, 22, 33, 14, 25, 36);
	EXPECT("b + x", z, 2, ((int64_t[]){2, 3}), 11, 22, 33, 14, 25, 36);
	pasco_tape_free(tp);
}

/* ---- errors ---- */

static pasco_tnode *
z(pasco_tape *tp, int32_t rank, const int64_t *shape)
{
	pasco_tensor *t;
	pasco_tnode  *n;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, rank, shape));
	n = pasco_tape_constant(tp, t);
	pasco_tensor_release(t);
	return n;
}

#define Z(...)                                                                \
	z(tp, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t),             \
	    (int64_t[]){__VA_ARGS__})

static pasco_tnode *
bad(pasco_tape *tp, int k)
{
	pasco_tensor *ix = ids_of(1, (int64_t[]){2}, (int64_t[]){1, 5});
	pasco_tnode  *n  = NULL;
	switch (k) {
	case 0:
		n = pasco_t_div(tp, Z(32, 8), Z(7));
		break;
	case 1:
		n = pasco_t_add(tp, Z(4, 3), Z(4, 2));
		break;
	case 2:
		n = pasco_t_maximum(tp, Z(2, 3), Z(3, 1, 2));
		break;
	case 3:
		n = pasco_t_where(tp, ix, Z(3), Z(3));
		break;
	case 4:
		n = pasco_t_reduce_max(
		    tp, Z(2, 3), 2, (int32_t[]){1, -1}, false);
		break;
	case 5:
		n = pasco_t_reduce_sum_axes(
		    tp, Z(2, 3), 1, (int32_t[]){2}, false);
		break;
	case 6:
		n = pasco_t_transpose(tp, Z(2, 3), (int32_t[]){0, 0});
		break;
	case 7:
		n = pasco_t_slice(
		    tp, Z(2, 3), (int64_t[]){0, 1}, (int64_t[]){1, 3});
		break;
	case 8:
		n = pasco_t_gather(tp, Z(5, 2), ix, 0);
		break;
	case 9:
		n = pasco_t_squeeze(tp, Z(2, 3), 1);
		break;
	case 10:
		n = pasco_t_matmul(tp, Z(2, 3, 4), Z(3, 4, 5), false, false);
		break;
	case 11:
		n = pasco_t_batch_dot(tp, Z(2, 3), Z(2, 4), 1, 1);
		break;
	case 12:
		n = pasco_t_reduce_max(tp, Z(0, 3), 1, (int32_t[]){0}, false);
		break;
	case 13:
		n = pasco_t_dot(tp, Z(2, 3, 4), Z(4));
		break;
	case 14:
		n = pasco_t_expand_dims(tp, Z(2, 3), 3);
		break;
	case 16:
		n = pasco_t_slice(tp, Z(2, 3), NULL, NULL);
		break;
	default:
		n = pasco_t_clip(tp, Z(2), 1, 0);
		break;
	}
	pasco_tensor_release(ix);
	return n;
}

Test(tape_ops_more, bad_shapes_fail_with_messages_that_name_them)
{
	const char *want[] = {
	    "divide: f32[32,8] and f32[7]: shapes do not broadcast",
	    "add: f32[4,3] and f32[4,2]: shapes do not broadcast",
	    "maximum: f32[2,3] and f32[3,1,2]: shapes do not broadcast",
	    "where: condition i64[2], f32[3] and f32[3]: shapes do not "
	    "broadcast",
	    "reduce_max: f32[2,3]: axis -1 is given twice",
	    "reduce_sum: f32[2,3]: axis 2 is outside [-2, 2)",
	    "transpose: f32[2,3]: perm[1] = 0: want a permutation of [0, 2)",
	    "slice: f32[2,3]: dimension 1: begin 1 size 3 is outside [0, 3]",
	    "gather: index 5 (element 1 of i64[2]) is outside [0, 5) of "
	    "f32[5,2] along axis 0",
	    "squeeze: f32[2,3]: dimension 1 is 3, not 1",
	    "matmul: f32[2,3,4] x f32[3,4,5]: batch dimensions 2 and 3, "
	    "inner dimensions 4 and 4: both must agree",
	    "batch_dot: f32[2,3] . f32[2,4] axes [1, 1]: want ranks 2 or 3, "
	    "one batch, and equal sizes on axes past the batch",
	    "reduce_max: f32[0,3]: the maximum of no elements",
	    "dot: f32[2,3,4] . f32[4]: ranks 1 and 2 only",
	    "expand_dims: f32[2,3]: axis 3 is outside [-3, 2] (or the rank "
	    "would pass 8)",
	    "clip: f32[2]: min 1 is above max 0",
	    "slice: f32[2,3]: begin or size is NULL",
	};
	for (int k = 0; k < (int) (sizeof(want) / sizeof(want[0])); k++) {
		pasco_tape *tp;
		PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
		cr_assert_null(bad(tp, k), "case %d succeeded", k);
		cr_assert_eq(pasco_tape_error(tp), PASCO_EINVAL, "case %d", k);
		cr_assert_str_eq(
		    pasco_tape_message(tp), want[k], "case %d", k);
		pasco_tape_free(tp);
	}
}

/* A batch of 0 examples through batch_dot and a rank-3 matmul, forward
 * and backward: empty values and gradients (the backward divided by the
 * batch and stopped the process with SIGFPE). */
Test(tape_ops_more, batch_products_of_an_empty_batch_have_empty_gradients)
{
	pasco_tape     *tp;
	pasco_tensor   *xt, *yt;
	pasco_tape_grad g[2];
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	PASCO_PASS(
	    pasco_tensor_alloc(&xt, PASCO_F64, 3, (int64_t[]){0, 2, 3}));
	PASCO_PASS(
	    pasco_tensor_alloc(&yt, PASCO_F64, 3, (int64_t[]){0, 3, 4}));
	pasco_tnode *x = pasco_tape_watch(tp, xt),
	            *y = pasco_tape_watch(tp, yt);
	pasco_tnode *p = pasco_t_matmul(tp, x, y, false, false);
	pasco_tnode *d = pasco_t_batch_dot(tp, x, x, 2, 2);
	pasco_tnode *loss =
	    pasco_t_add(tp, pasco_t_reduce_sum(tp, p, PASCO_T_ALL_AXES),
	        pasco_t_reduce_sum(tp, d, PASCO_T_ALL_AXES));
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	PASCO_PASS(
	    pasco_tape_gradient(tp, loss, 2, (pasco_tnode *[]){x, y}, g));
	cr_assert_eq(g[0].dense->count, 0);
	cr_assert_eq(g[1].dense->count, 0);
	pasco_tape_grad_fini(g, 2);
	pasco_tensor_release(xt);
	pasco_tensor_release(yt);
	pasco_tape_free(tp);
}
