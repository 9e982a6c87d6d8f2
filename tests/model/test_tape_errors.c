/* The tape's errors: messages that name the op, the shapes and the
 * dtypes; the first error sticks and later ops do nothing. */
#include "tape_check.h"

TestSuite(tape_errors, .timeout = 60);

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

Test(tape_errors, an_error_names_the_op_shapes_and_dtypes_and_sticks)
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
	    tp, zeros(tp, PASCO_F32, 2, 3), zeros(tp, PASCO_F32, 2, 2));
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

Test(tape_errors, bad_inputs_fail_with_messages_that_name_them)
{
	struct {
		bad_fn      f;
		const char *msg;
	} cases[] = {
	    {bad_dtypes, "add: f32[2,3] and f64[2,3]: dtypes differ"},
	    {bad_broadcast,
	        "mul: f32[2,3] and f32[2,2]: shapes do not broadcast"},
	    {bad_bias, "bias_add: f32[2,3] + f32[4]: the bias must be [n] for "
	               "x [..., n]"},
	    {bad_reshape,
	        "reshape: f32[2,3] to f32[4,-1]: element counts differ "
	        "(or more than one -1)"},
	    {bad_concat,
	        "concat: f32[2,3] and f32[3,3] along axis 1: the other "
	        "dimensions differ"},
	    {bad_axis, "reduce_mean: f32[2,3]: axis 2 is outside [-2, 2)"},
	    {bad_label, "softmax_crossentropy: label 3 of example 1 (of 2 in "
	                "the batch) is outside [0, 3): the logits have 3 "
	                "classes"},
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

Test(tape_errors, gradient_rejects_a_non_scalar_target_and_unwatched_sources)
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
