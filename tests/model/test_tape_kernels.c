/* The tape against the kernels of kit/ops: the losses and L2 in value
 * and gradient, embedding lookups (sparse gradients, repeated ids summed,
 * sum and mean) against finite differences and the combine kernels, and
 * a two-layer MLP against a backward written by hand with the kernels. */
#include "tape_check.h"

TestSuite(tape_kernels, .timeout = 60);

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

Test(tape_kernels, loss_gradients_match_finite_differences)
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

Test(tape_kernels, losses_match_the_kit_kernels_in_value_and_gradient)
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

/* Keras's binary cross-entropy clips the probabilities to [1e-7, 1 - 1e-7]
 * with clip_by_value, whose gradient is 0 outside the range: the loss is
 * flat there (16.118 = -log(1e-7) for a wrong label), and its gradient in
 * p is 0, from the kernel and from the tape in f32 and f64. Inside the
 * range the gradient is the analytic (-y / p + (1 - y) / (1 - p)) / n. */
Test(tape_kernels, binary_crossentropy_passes_no_gradient_where_it_clips)
{
	const double  p[] = {1e-9, 0.3, 0.7, 1 - 1e-12, 0, 1};
	const double  y[] = {1, 1, 0, 0, 1, 0};
	const int     n   = 6;
	pasco_tensor *labels, *prob, *dk;
	double        lk, want = 0;
	PASCO_PASS(pasco_tensor_alloc(&labels, PASCO_F32, 1, (int64_t[]){n}));
	for (int i = 0; i < n; i++) {
		double q = fmin(fmax(p[i], 1e-7), 1 - 1e-7);
		pasco_tensor_set(labels, i, y[i]);
		want -= (y[i] * log(q) + (1 - y[i]) * log(1 - q)) / n;
	}
	for (int dt = 0; dt < 2; dt++) {
		pasco_tape     *tp;
		pasco_tape_grad g;
		PASCO_PASS(pasco_tensor_alloc(
		    &prob, dt ? PASCO_F64 : PASCO_F32, 1, (int64_t[]){n}));
		for (int i = 0; i < n; i++) {
			pasco_tensor_set(prob, i, p[i]);
		}
		if (!dt) {
			PASCO_PASS(
			    pasco_binary_crossentropy(prob, labels, &lk, &dk));
			cr_assert_float_eq(lk, want, 1e-6 * want);
		}
		PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
		pasco_tnode *w = pasco_tape_watch(tp, prob);
		pasco_tnode *l = pasco_t_binary_crossentropy(tp, w, labels);
		PASCO_PASS(pasco_tape_gradient(tp, l, 1, &w, &g));
		cr_assert_float_eq(pasco_tensor_get(pasco_tnode_value(l), 0),
		    want, 1e-6 * want);
		for (int i = 0; i < n; i++) {
			bool   in = i == 1 || i == 2;
			double d =
			    in ? (-y[i] / p[i] + (1 - y[i]) / (1 - p[i])) / n
			       : 0;
			cr_assert_float_eq(pasco_tensor_get(g.dense, i), d,
			    1e-6, "tape (%s) dL/dp at p = %g, y = %g",
			    dt ? "f64" : "f32", p[i], y[i]);
			cr_assert(
			    dt || fabs(pasco_tensor_get(dk, i) - d) <= 1e-6,
			    "kernel dL/dp at p = %g, y = %g: %g, want %g",
			    p[i], y[i], pasco_tensor_get(dk, i), d);
		}
		pasco_tape_grad_fini(&g, 1);
		pasco_tape_free(tp);
		pasco_tensor_release(prob);
	}
	pasco_tensor_release(dk);
	pasco_tensor_release(labels);
}

static pasco_tnode *
b_l2(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	(void) ctx;
	return pasco_t_add(tp, pasco_t_l2(tp, s[0], 0.3), weighted(tp, s[0]));
}

Test(tape_kernels, l2_matches_finite_differences_and_the_kernel)
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

Test(tape_kernels, embedding_lookup_gradients_match_for_sum_and_mean)
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

/* Two lookups of one table (a shared embedding), one per combiner, and
 * the table's rows also reached through tanh: their parts are summed. */
static pasco_tnode *
b_embed_twice(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	emb_ctx     *e = ctx;
	pasco_tnode *a =
	    pasco_t_embedding_lookup(tp, s[0], e->ids, PASCO_COMBINE_SUM);
	pasco_tnode *b =
	    pasco_t_embedding_lookup(tp, s[0], e->ids, PASCO_COMBINE_MEAN);
	return weighted(tp, pasco_t_concat(tp, 2,
	                        (pasco_tnode *[]){a, pasco_t_tanh(tp, b)}, 0));
}

Test(tape_kernels, two_lookups_of_one_table_sum_their_sparse_gradients)
{
	int           kinds[] = {TABLE};
	emb_ctx       e       = {ids_of(2, (int64_t[]){4, 3}, emb_ids), 0};
	pasco_tensor *table   = r64(2, (int64_t[]){6, 3}, 85);
	check_fd("two lookups", b_embed_twice, &e, 1, &table, kinds);
	pasco_tensor_release(table);
	pasco_tensor_release(e.ids);
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

Test(tape_kernels, embedding_gradient_is_sparse_with_repeated_ids_summed)
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

Test(tape_kernels, embedding_lookup_matches_the_combine_kernels)
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

Test(tape_kernels, mlp_backward_matches_the_hand_written_kernels)
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

/* relu(x)'s value and gradient for x of n elements (specials first),
 * against x > 0 ? x : 0 and the gradient written out: two relus of x,
 * the first gradient written, the second added (exact: R and R / 2). */
static void
check_relu(pasco_dtype dt, int64_t n)
{
	static const double specials[] = {-0.0, 0.0, NAN, 0x1p-1070, -INFINITY,
	    INFINITY, -0x1p-1070, 1e-30, -1e-30};
	pasco_tensor       *x          = rnd(dt, 1, &n, 17, -1, 1), *r;
	pasco_tape         *tp;
	pasco_tape_grad     g;
	for (int64_t i = 0; i < n && i < 9; i++) {
		pasco_tensor_set(x, i, specials[i]);
	}
	r = rnd(dt, 1, &n, 99, -1, 1); /* weighted()'s R */
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_tnode *s = pasco_tape_watch(tp, x);
	pasco_tnode *a = pasco_t_relu(tp, s);
	pasco_tnode *l = pasco_t_add(tp, weighted(tp, a),
	    pasco_t_scale(tp, weighted(tp, pasco_t_relu(tp, s)), 0.5));
	PASCO_PASS(pasco_tape_gradient(tp, l, 1, &s, &g));
	for (int64_t i = 0; i < n; i++) {
		double v   = pasco_tensor_get(x, i), y, d,
		       w   = pasco_tensor_get(r, i);
		double got = pasco_tensor_get(pasco_tnode_value(a), i);
		double dg  = pasco_tensor_get(g.dense, i);
		y          = v > 0 ? v : 0;
		d = dt == PASCO_F32 ? (double) ((float) (0.5 * w) + (float) w)
		                    : 0.5 * w + w;
		d = y > 0 ? d : 0;
		cr_assert(memcmp(&got, &y, sizeof(y)) == 0,
		    "relu of element %lld (%g) of %lld: %g, want %g",
		    (long long) i, v, (long long) n, got, y);
		cr_assert(memcmp(&dg, &d, sizeof(d)) == 0,
		    "relu's gradient at element %lld (%g) of %lld: %g, want "
		    "%g",
		    (long long) i, v, (long long) n, dg, d);
	}
	pasco_tape_grad_fini(&g, 1);
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_tensor_release(r);
}

Test(
    tape_kernels, relu_and_its_gradient_are_the_plain_formula_on_every_element)
{
	/* blocks of 8 and a tail, a tail only, whole blocks */
	int64_t sizes[] = {21, 5, 16, 1};
	for (int k = 0; k < 4; k++) {
		check_relu(PASCO_F32, sizes[k]);
		check_relu(PASCO_F64, sizes[k]);
	}
}

Test(tape_kernels, bias_add_is_the_plain_sum_on_every_element)
{
	/* columns: blocks of 8 and a tail, a tail only, whole blocks */
	int64_t cols[] = {21, 5, 16};
	for (int k = 0; k < 6; k++) {
		pasco_dtype   dt      = k % 2 ? PASCO_F64 : PASCO_F32;
		int64_t       shape[] = {3, cols[k / 2]};
		pasco_tensor *x       = rnd(dt, 2, shape, 5, -1e3, 1e3);
		pasco_tensor *b       = rnd(dt, 1, &shape[1], 6, -1, 1);
		pasco_tape   *tp;
		PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
		const pasco_tensor *y = pasco_tnode_value(pasco_t_bias_add(tp,
		    pasco_tape_constant(tp, x), pasco_tape_constant(tp, b)));
		cr_assert_not_null(y, "%s", pasco_tape_message(tp));
		for (int64_t i = 0; i < x->count; i++) {
			double got  = pasco_tensor_get(y, i);
			double u    = pasco_tensor_get(x, i),
			       v    = pasco_tensor_get(b, i % shape[1]);
			double want = dt == PASCO_F32
			                  ? (double) ((float) u + (float) v)
			                  : u + v;
			cr_assert(memcmp(&got, &want, sizeof(got)) == 0,
			    "bias_add element %lld of [3, %lld]: %.17g, want "
			    "%.17g",
			    (long long) i, (long long) shape[1], got, want);
		}
		pasco_tape_free(tp);
		pasco_tensor_release(x);
		pasco_tensor_release(b);
	}
}

/* A tape whose arena held NaN everywhere, then freed: the thread's next
 * tape takes its blocks back as they are. */
static void
leave_nan_in_the_arena(void)
{
	int64_t       n = 6000;
	pasco_tensor *t = rnd(PASCO_F32, 1, &n, 1, 0, 1);
	pasco_tape   *tp;
	for (int64_t i = 0; i < n; i++) {
		pasco_tensor_set(t, i, NAN);
	}
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	for (int k = 0; k < 8; k++) {
		cr_assert_not_null(
		    pasco_t_scale(tp, pasco_tape_constant(tp, t), 1));
	}
	pasco_tape_free(tp);
	pasco_tensor_release(t);
}

static void
assert_same_bits(
    const pasco_tensor *got, const pasco_tensor *want, const char *what)
{
	cr_assert_eq(got->count, want->count, "%s: counts differ", what);
	cr_assert(memcmp(got->data, want->data, want->nbytes) == 0,
	    "%s: not the kernel's bits (first element %g, want %g)", what,
	    pasco_tensor_get(got, 0), pasco_tensor_get(want, 0));
}

Test(tape_kernels, matmul_and_its_gradient_do_not_read_what_their_memory_held)
{
	pasco_tensor   *x = rnd(PASCO_F32, 2, (int64_t[]){32, 40}, 1, -1, 1);
	pasco_tensor   *w = rnd(PASCO_F32, 2, (int64_t[]){40, 24}, 2, -1, 1);
	pasco_tensor   *r = rnd(PASCO_F32, 2, (int64_t[]){32, 24}, 99, -1, 1);
	pasco_tensor   *z, *dw, *dx;
	pasco_tape     *tp;
	pasco_tape_grad g[2];
	PASCO_PASS(pasco_matmul(x, false, w, false, &z));
	PASCO_PASS(pasco_matmul(x, true, r, false, &dw)); /* weighted()'s R */
	PASCO_PASS(pasco_matmul(r, false, w, true, &dx));
	for (int k = 0; k < 3; k++) {
		leave_nan_in_the_arena();
		PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
		pasco_tnode *s[2] = {
		    pasco_tape_watch(tp, x), pasco_tape_watch(tp, w)};
		pasco_tnode *y = pasco_t_matmul(tp, s[0], s[1], false, false);
		PASCO_PASS(pasco_tape_gradient(tp, weighted(tp, y), 2, s, g));
		assert_same_bits(pasco_tnode_value(y), z, "x w");
		assert_same_bits(g[1].dense, dw, "d w");
		assert_same_bits(g[0].dense, dx, "d x");
		pasco_tape_grad_fini(g, 2);
		pasco_tape_free(tp);
	}
	pasco_tensor *all[] = {x, w, r, z, dw, dx};
	for (int k = 0; k < 6; k++) {
		pasco_tensor_release(all[k]);
	}
}
