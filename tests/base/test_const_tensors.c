/*
 * Read-only tensors are const across the public headers: the tensor of a
 * value (pasco_value_as_tensor returns const) goes into the model calls
 * and the tape's leaves, and gradients into pasco_variable_apply_gradients,
 * with no cast. This file is compiled with -Wall
 * -Wextra -Werror like every test: before, each call below that passes x
 * failed to compile (discarded const qualifier). Arrays of non-const
 * tensors, as programs wrote them before, still compile too.
 */
#include "helpers.h"

#include <string.h>

#include "pasco.h"

TestSuite(const_tensors, .timeout = 30);

/* A tensor of shape[0..rank) holding 0.1, 0.2, ... */
static pasco_tensor *
filled(int32_t rank, const int64_t *shape)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, rank, shape));
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(t, i, 0.1 * (double) (i + 1));
	}
	return t;
}

Test(const_tensors, a_values_tensor_goes_into_the_model_calls_as_it_is)
{
	pasco_layer   l[] = {pasco_layer_dense(2, PASCO_ACT_LINEAR)};
	pasco_model  *m;
	pasco_tape   *tp;
	pasco_tensor *w[] = {
	    filled(2, (int64_t[]){3, 2}), filled(1, (int64_t[]){2})};
	pasco_value *v = pasco_value_tensor(filled(2, (int64_t[]){4, 3}));
	pasco_value *t = pasco_value_tensor(filled(2, (int64_t[]){4, 2}));
	pasco_tnode *nodes[2], *out, *out_nc, *loss;
	pasco_loss   mse = {.kind = PASCO_LOSS_MSE, .from_logits = false};
	PASCO_PASS(pasco_model_sequential(&m, 3, 1, l, 1));
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));

	const pasco_tensor *x    = pasco_value_as_tensor(v);
	const pasco_tensor *y    = pasco_value_as_tensor(t);
	const pasco_tensor *cw[] = {w[0], w[1]};
	for (int k = 0; k < 2; k++) {
		nodes[k] = pasco_tape_watch(tp, cw[k]); /* const in */
	}
	out = pasco_model_call_with(m, tp, &x, nodes);
	cr_assert_not_null(out, "%s", pasco_tape_message(tp));
	loss = pasco_model_loss(
	    m, tp, (const pasco_tensor *[]){x}, y, mse, nodes);
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	cr_assert_not_null(pasco_tape_constant(tp, x));

	/* an array of non-const tensors, as before */
	pasco_tensor *nc[] = {(pasco_tensor *) x};
	out_nc             = pasco_model_call_with(m, tp, nc, nodes);
	cr_assert_not_null(out_nc, "%s", pasco_tape_message(tp));
	/* the same inputs, the same output: x = 0.1 .. 1.2, w = 0.1 .. */
	const pasco_tensor *a = pasco_tnode_value(out);
	const pasco_tensor *b = pasco_tnode_value(out_nc);
	cr_assert_eq(a->count, 8);
	cr_assert(memcmp(a->data, b->data, a->nbytes) == 0);
	/* row 0: [0.1 0.2 0.3] . [[0.1 0.2] [0.3 0.4] [0.5 0.6]] + [0.1 0.2]
	 */
	cr_assert_float_eq(pasco_tensor_get(a, 0), 0.22 + 0.1, 1e-6);
	cr_assert_float_eq(pasco_tensor_get(a, 1), 0.28 + 0.2, 1e-6);

	/* gradients too: none applied (n = 0), but it compiles */
	pasco_optimizer sgd = pasco_sgd(0.1, 0, false);
	PASCO_PASS(pasco_variable_apply_gradients(
	    0, NULL, &sgd, (const pasco_tensor *[]){y}));

	pasco_tape_free(tp);
	pasco_value_free(v);
	pasco_value_free(t);
	pasco_tensor_release(w[0]);
	pasco_tensor_release(w[1]);
	pasco_model_free(m);
}
