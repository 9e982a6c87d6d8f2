/* A tape with variables on in-process ps tasks: a step's reads in one
 * pasco_variable_read_mixed (whole values and gathered rows), and its
 * gradients in one mixed apply (one global step), checked against the
 * same step computed on a local tape and applied by hand. */
#include "helpers.h"

#include <math.h>
#include <string.h>

TestSuite(tape_vars, .timeout = 60);

typedef struct setup {
	test_cluster      tc;
	pasco_partitioner p;
	pasco_strategy   *s;
	pasco_variable   *gs, *emb, *w, *b;
} setup;

/* 2 ps; a 10 x 4 table in 3 shards; a dense kernel [8, 3] and bias [3]. */
static void
setup_start(setup *st)
{
	pasco_strategy_options o = {.partitioner = &st->p};
	pasco_initializer      u = pasco_init_uniform(-0.5, 0.5, 3);
	st->p                    = pasco_fixed_shards_partitioner(3);
	test_cluster_start(&st->tc, 2, 1);
	PASCO_PASS(pasco_strategy_create(&st->s, st->tc.cluster, &o));
	PASCO_PASS(pasco_strategy_global_step(st->s, &st->gs));
	PASCO_PASS(pasco_variable_create_init(
	    &st->emb, st->s, "emb", PASCO_F32, 2, (int64_t[]){10, 4}, &u));
	PASCO_PASS(pasco_variable_create_init(
	    &st->w, st->s, "w", PASCO_F32, 2, (int64_t[]){8, 3}, &u));
	PASCO_PASS(pasco_variable_create_init(
	    &st->b, st->s, "b", PASCO_F32, 1, (int64_t[]){3}, &u));
	cr_assert_eq(pasco_variable_num_shards(st->emb), 3);
}

static void
setup_stop(setup *st)
{
	pasco_variable_free(st->emb);
	pasco_variable_free(st->w);
	pasco_variable_free(st->b);
	pasco_variable_free(st->gs);
	pasco_strategy_destroy(st->s);
	test_cluster_stop(&st->tc);
}

static pasco_tensor *
ids_of(int32_t rank, const int64_t *shape, const int64_t *v)
{
	pasco_tensor *t;
	int64_t       n = rank == 2 ? shape[0] * shape[1] : shape[0];
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I64, rank, shape, v, (size_t) n * sizeof(int64_t)));
	return t;
}

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

Test(tape_vars, read_mixed_reads_whole_values_and_rows_together)
{
	setup         st;
	pasco_tensor *ids =
	    ids_of(2, (int64_t[]){2, 2}, (int64_t[]){9, 0, 4, 9});
	pasco_tensor *outs[3], *want_w, *want_rows;
	setup_start(&st);
	pasco_variable     *vs[]  = {st.w, st.emb, st.b};
	const pasco_tensor *idl[] = {NULL, ids, NULL};
	PASCO_PASS(pasco_variable_read_mixed(3, vs, idl, outs));
	PASCO_PASS(pasco_variable_read(st.w, &want_w));
	PASCO_PASS(pasco_variable_gather(st.emb, ids, &want_rows));
	cr_assert_eq(max_diff(outs[0], want_w), 0);
	cr_assert_eq(max_diff(outs[1], want_rows), 0);
	cr_assert_eq(outs[1]->rank, 3);
	cr_assert_eq(outs[2]->count, 3);
	for (int k = 0; k < 3; k++) {
		pasco_tensor_release(outs[k]);
	}
	pasco_tensor_release(want_w);
	pasco_tensor_release(want_rows);
	/* an id out of range: nothing returned, the message on the table */
	pasco_tensor *bad = ids_of(1, (int64_t[]){2}, (int64_t[]){3, 10});
	idl[1]            = bad;
	PASCO_FAIL(pasco_variable_read_mixed(3, vs, idl, outs), PASCO_EINVAL);
	for (int k = 0; k < 3; k++) {
		cr_assert_null(outs[k]);
	}
	cr_assert_str_eq(pasco_variable_error(st.emb),
	    "gather on 'emb': id 10 is out of range [0, 10)");
	pasco_tensor_release(bad);
	pasco_tensor_release(ids);
	setup_stop(&st);
}

/* The step: mean of the rows of ids [5, 2] (padding -1), concatenated
 * with x [5, 4], through a dense layer, softmax cross-entropy + L2. */
static pasco_tnode *
step_loss(pasco_tape *tp, pasco_tnode *emb, pasco_tnode *w, pasco_tnode *b,
    const pasco_tensor *ids, pasco_tensor *x, const pasco_tensor *labels)
{
	pasco_tnode *e =
	    pasco_t_embedding_lookup(tp, emb, ids, PASCO_COMBINE_MEAN);
	pasco_tnode *h = pasco_t_concat(
	    tp, 2, (pasco_tnode *[]){e, pasco_tape_constant(tp, x)}, -1);
	pasco_tnode *y =
	    pasco_t_bias_add(tp, pasco_t_matmul(tp, h, w, false, false), b);
	return pasco_t_add(tp, pasco_t_softmax_crossentropy(tp, y, labels),
	    pasco_t_l2(tp, w, 0.01));
}

Test(
    tape_vars, a_step_reads_once_and_applies_every_gradient_as_one_global_step)
{
	setup           st;
	const double    lr  = 0.5;
	pasco_optimizer sgd = pasco_sgd(lr, 0, false);
	pasco_tensor   *ids = ids_of(
	      2, (int64_t[]){5, 2}, (int64_t[]){1, 7, 7, 7, 0, -1, 9, 1, 4, 1});
	pasco_tensor     *x, *labels, *before[3], *after[3];
	pasco_initializer u = pasco_init_uniform(-1, 1, 8);
	setup_start(&st);
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){5, 4}));
	PASCO_PASS(pasco_initializer_fill(&u, x, 2, x->shape, 0));
	PASCO_PASS(pasco_tensor_from(&labels, PASCO_I32, 1, (int64_t[]){5},
	    (int32_t[]){0, 2, 1, 1, 0}, 5 * sizeof(int32_t)));
	pasco_variable *vs[] = {st.emb, st.w, st.b};
	PASCO_PASS(pasco_variable_read_all(3, vs, before));

	/* the step on variables */
	pasco_tape    *tp;
	pasco_tape_var tv[] = {
	    {st.emb, ids, NULL}, {st.w, NULL, NULL}, {st.b, NULL, NULL}};
	sgd.iterations = st.gs;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	PASCO_PASS(pasco_tape_read(tp, 3, tv));
	/* the sparse source holds the distinct ids' rows only */
	cr_assert_eq(pasco_tnode_value(tv[0].node)->shape[0], 5);
	pasco_tnode *loss =
	    step_loss(tp, tv[0].node, tv[1].node, tv[2].node, ids, x, labels);
	PASCO_PASS(pasco_tape_apply(tp, loss, 3, tv, &sgd));
	cr_assert_eq(test_read_scalar(st.gs), 1, "one global step");

	/* the same step locally, applied by hand */
	pasco_tape     *lt;
	pasco_tape_grad g[3];
	PASCO_PASS(pasco_tape_alloc(&lt, true, 1));
	pasco_tnode *src[] = {pasco_tape_watch_table(lt, before[0]),
	    pasco_tape_watch(lt, before[1]), pasco_tape_watch(lt, before[2])};
	pasco_tnode *ll =
	    step_loss(lt, src[0], src[1], src[2], ids, x, labels);
	cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(ll), 0),
	    pasco_tensor_get(pasco_tnode_value(loss), 0), 1e-6);
	PASCO_PASS(pasco_tape_gradient(lt, ll, 3, src, g));
	cr_assert_eq(g[0].ids->count, 5); /* ids 0, 1, 4, 7, 9 */
	for (int64_t r = 0; r < g[0].ids->count; r++) {
		int64_t id = (int64_t) pasco_tensor_get(g[0].ids, r);
		for (int d = 0; d < 4; d++) {
			pasco_tensor_set(before[0], id * 4 + d,
			    pasco_tensor_get(before[0], id * 4 + d) -
			        lr * pasco_tensor_get(g[0].rows, r * 4 + d));
		}
	}
	for (int k = 1; k < 3; k++) {
		for (int64_t i = 0; i < before[k]->count; i++) {
			pasco_tensor_set(before[k], i,
			    pasco_tensor_get(before[k], i) -
			        lr * pasco_tensor_get(g[k].dense, i));
		}
	}
	PASCO_PASS(pasco_variable_read_all(3, vs, after));
	for (int k = 0; k < 3; k++) {
		cr_assert(max_diff(after[k], before[k]) < 1e-6,
		    "variable %d: %g off the local step", k,
		    max_diff(after[k], before[k]));
		pasco_tensor_release(after[k]);
		pasco_tensor_release(before[k]);
	}
	pasco_tape_grad_fini(g, 3);
	pasco_tape_free(lt);
	pasco_tape_free(tp);
	pasco_tensor_release(ids);
	pasco_tensor_release(x);
	pasco_tensor_release(labels);
	setup_stop(&st);
}

Test(tape_vars, a_failed_read_or_apply_is_the_tapes_error)
{
	setup           st;
	pasco_optimizer sgd = pasco_sgd(0.1, 0, false);
	pasco_tensor   *bad = ids_of(1, (int64_t[]){2}, (int64_t[]){2, 12});
	pasco_tape     *tp;
	setup_start(&st);
	pasco_tape_var tv[] = {{st.w, NULL, NULL}, {st.emb, bad, NULL}};
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	PASCO_FAIL(pasco_tape_read(tp, 2, tv), PASCO_EINVAL);
	cr_assert_str_eq(pasco_tape_message(tp),
	    "read: gather on 'emb': id 12 is out of range [0, 10)");
	cr_assert_null(tv[0].node);
	cr_assert_null(tv[1].node);
	pasco_tape_free(tp);
	/* a loss of none of the variables applies nothing */
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	tv[1].ids = NULL;
	PASCO_PASS(pasco_tape_read(tp, 2, tv));
	pasco_tensor *one, *w0, *w1;
	PASCO_PASS(pasco_tensor_scalar(&one, PASCO_F32, 1));
	pasco_tnode *c = pasco_t_l2(tp, pasco_tape_constant(tp, one), 1);
	pasco_tensor_release(one);
	PASCO_PASS(pasco_variable_read(st.w, &w0));
	PASCO_FAIL(pasco_tape_apply(tp, c, 2, tv, &sgd), PASCO_EINVAL);
	cr_assert_str_eq(pasco_tape_message(tp),
	    "apply: the loss depends on none of the 2 variables");
	PASCO_PASS(pasco_variable_read(st.w, &w1));
	cr_assert_eq(max_diff(w0, w1), 0);
	pasco_tensor_release(w0);
	pasco_tensor_release(w1);
	pasco_tape_free(tp);
	pasco_tensor_release(bad);
	setup_stop(&st);
}

/* Labels are the parity of each example's id (plus noise-free features):
 * a table [10, 4] and a dense layer [4, 2] learn it in a few hundred
 * steps of SGD through the tape, one read and one apply per step. */
Test(tape_vars, a_model_trained_through_the_tape_learns)
{
	setup             st;
	pasco_optimizer   sgd = pasco_sgd(0.5, 0.9, false);
	pasco_variable   *w2;
	pasco_initializer u     = pasco_init_uniform(-0.1, 0.1, 5);
	double            first = 0, last = 0;
	setup_start(&st);
	PASCO_PASS(pasco_variable_create_init(
	    &w2, st.s, "w2", PASCO_F32, 2, (int64_t[]){4, 2}, &u));
	sgd.iterations = st.gs;
	for (int step = 0; step < 150; step++) {
		int32_t       idv[8], lab[8];
		pasco_tensor *ids, *labels;
		pasco_tape   *tp;
		for (int i = 0; i < 8; i++) {
			idv[i] = (step * 3 + i * 7) % 10;
			lab[i] = idv[i] % 2;
		}
		PASCO_PASS(pasco_tensor_from(
		    &ids, PASCO_I32, 1, (int64_t[]){8}, idv, sizeof(idv)));
		PASCO_PASS(pasco_tensor_from(
		    &labels, PASCO_I32, 1, (int64_t[]){8}, lab, sizeof(lab)));
		pasco_tape_var tv[] = {{st.emb, ids, NULL}, {w2, NULL, NULL}};
		PASCO_PASS(pasco_tape_alloc(&tp, true, (uint64_t) step));
		PASCO_PASS(pasco_tape_read(tp, 2, tv));
		pasco_tnode *e = pasco_t_embedding_lookup(
		    tp, tv[0].node, ids, PASCO_COMBINE_SUM);
		pasco_tnode *y = pasco_t_matmul(
		    tp, pasco_t_tanh(tp, e), tv[1].node, false, false);
		pasco_tnode *loss =
		    pasco_t_softmax_crossentropy(tp, y, labels);
		PASCO_PASS(pasco_tape_apply(tp, loss, 2, tv, &sgd));
		last  = pasco_tensor_get(pasco_tnode_value(loss), 0);
		first = step == 0 ? last : first;
		pasco_tape_free(tp);
		pasco_tensor_release(ids);
		pasco_tensor_release(labels);
	}
	cr_assert_eq(test_read_scalar(st.gs), 150, "one global step per step");
	cr_assert(
	    first > 0.6 && last < 0.05, "loss from %g to %g", first, last);
	pasco_variable_free(w2);
	setup_stop(&st);
}

Test(tape_vars, a_lookup_of_padding_only_gathers_nothing)
{
	setup           st;
	pasco_optimizer sgd = pasco_sgd(0.1, 0, false);
	pasco_tensor   *ids =
	    ids_of(2, (int64_t[]){2, 2}, (int64_t[]){-1, -1, -1, -1});
	pasco_tensor *w0, *w1;
	pasco_tape   *tp;
	setup_start(&st);
	pasco_tape_var tv[] = {{st.emb, ids, NULL}, {st.b, NULL, NULL}};
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	PASCO_PASS(pasco_tape_read(tp, 2, tv));
	cr_assert_eq(pasco_tnode_value(tv[0].node)->shape[0], 0);
	pasco_tnode *e =
	    pasco_t_embedding_lookup(tp, tv[0].node, ids, PASCO_COMBINE_MEAN);
	cr_assert_eq(pasco_tensor_get(pasco_tnode_value(e), 0), 0);
	pasco_tnode *loss =
	    pasco_t_add(tp, pasco_t_reduce_sum(tp, e, PASCO_T_ALL_AXES),
	        pasco_t_reduce_sum(tp, tv[1].node, PASCO_T_ALL_AXES));
	PASCO_PASS(pasco_variable_read(st.emb, &w0));
	PASCO_PASS(pasco_tape_apply(tp, loss, 2, tv, &sgd));
	PASCO_PASS(pasco_variable_read(st.emb, &w1));
	cr_assert_eq(max_diff(w0, w1), 0, "the table moved");
	pasco_tensor_release(w0);
	pasco_tensor_release(w1);
	pasco_tape_free(tp);
	pasco_tensor_release(ids);
	setup_stop(&st);
}
