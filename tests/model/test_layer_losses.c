/* What layers add to a model's loss beyond its compiled loss (Keras 3's
 * layer.losses): a Dense's and an Embedding's activity_regularizer (of
 * the layer's output, divided by the batch size: keras/src/layers/
 * layer.py), and an Embedding's embeddings_regularizer on the distinct
 * rows the step looks up (model/layers/embedding.c); each against the
 * formula computed here, their gradients, their configs and errors. */
#include "tape_check.h"

#include "model_impl.h"

TestSuite(layer_losses, .timeout = 60);

/* The loss of m (mse against y) with and without the layers' terms:
 * their difference, and d(difference)/d(node k) into g (dense or
 * sparse). */
static double
added_loss(const pasco_model *m, pasco_tape *tp, const pasco_tensor *x,
    const pasco_tensor *y, pasco_tnode **nodes, size_t n, pasco_tape_grad *g)
{
	pasco_loss   mse  = {.kind = PASCO_LOSS_MSE};
	pasco_tnode *full = pasco_model_loss(m, tp, &x, y, mse, nodes);
	pasco_tnode *out, *plain, *diff;
	cr_assert_not_null(full, "%s", pasco_tape_message(tp));
	out   = pasco_model_call_with(m, tp, &x, nodes);
	plain = pasco_t_loss(tp, &mse, out, y);
	diff  = pasco_t_sub(tp, full, plain);
	cr_assert_not_null(diff, "%s", pasco_tape_message(tp));
	PASCO_PASS(pasco_tape_gradient(tp, diff, n, nodes, g));
	return pasco_tensor_get(pasco_tnode_value(diff), 0);
}

Test(layer_losses, dense_activity_regularizer_is_keras_divided_by_the_batch)
{
	pasco_layer     l = pasco_layer_dense(2, PASCO_ACT_TANH);
	pasco_model    *m;
	pasco_tensor   *w = rnd(PASCO_F64, 2, (int64_t[]){3, 2}, 1, -1, 1);
	pasco_tensor   *b = rnd(PASCO_F64, 1, (int64_t[]){2}, 2, -1, 1);
	pasco_tensor   *x = rnd(PASCO_F64, 2, (int64_t[]){4, 3}, 3, -2, 2);
	pasco_tensor   *y = rnd(PASCO_F64, 2, (int64_t[]){4, 2}, 4, -1, 1);
	pasco_tnode    *nodes[2];
	pasco_tape     *tp;
	pasco_tape_grad g[2];
	double          want = 0, db[2] = {0};
	l.activity_l1 = 0.3;
	l.activity_l2 = 0.7;
	PASCO_PASS(pasco_model_sequential(&m, 3, 1, &l, 1));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	nodes[0]   = pasco_tape_watch(tp, w);
	nodes[1]   = pasco_tape_watch(tp, b);
	double got = added_loss(m, tp, x, y, nodes, 2, g);
	/* Keras: (l1 sum|y| + l2 sum y^2) / batch, y = tanh(x w + b) */
	for (int r = 0; r < 4; r++) {
		for (int j = 0; j < 2; j++) {
			double z = pasco_tensor_get(b, j);
			for (int k = 0; k < 3; k++) {
				z += pasco_tensor_get(x, r * 3 + k) *
				     pasco_tensor_get(w, k * 2 + j);
			}
			double o = tanh(z);
			want += (0.3 * fabs(o) + 0.7 * o * o) / 4;
			db[j] += (0.3 * (o > 0 ? 1 : -1) + 1.4 * o) *
			         (1 - o * o) / 4;
		}
	}
	cr_assert_float_eq(
	    got, want, 1e-12, "activity term %.15g, want %.15g", got, want);
	for (int j = 0; j < 2; j++) {
		cr_assert_float_eq(pasco_tensor_get(g[1].dense, j), db[j],
		    1e-12, "d/dbias %d", j);
	}
	pasco_tape_grad_fini(g, 2);
	pasco_tape_free(tp);
	pasco_model_free(m);
	pasco_tensor_release(w);
	pasco_tensor_release(b);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
}

/* ids of 3 examples, 2 each (mean combiner; -1 padding): rows 1, 2 and 5
 * are looked up, 2 and 5 twice. */
static const int64_t ids_v[] = {1, 2, 2, -1, 5, 5};

Test(layer_losses, embeddings_regularizer_takes_each_looked_up_row_once)
{
	pasco_layer     l = pasco_layer_embedding(8, 3);
	pasco_model    *m;
	pasco_tensor   *t = rnd(PASCO_F64, 2, (int64_t[]){8, 3}, 5, -1, 1);
	pasco_tensor   *x = ids_of(2, (int64_t[]){3, 2}, ids_v);
	pasco_tensor   *y = rnd(PASCO_F64, 2, (int64_t[]){3, 3}, 6, -1, 1);
	pasco_tnode    *nodes[1];
	pasco_tape     *tp;
	pasco_tape_grad g[1];
	const int64_t   rows[] = {1, 2, 5};
	double          want   = 0;
	l.embeddings_l1        = 0.2;
	l.embeddings_l2        = 0.5;
	PASCO_PASS(pasco_model_sequential(&m, 2, 1, &l, 1));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	nodes[0]   = pasco_tape_watch_table(tp, t);
	double got = added_loss(m, tp, x, y, nodes, 1, g);
	for (int r = 0; r < 3; r++) {
		for (int j = 0; j < 3; j++) {
			double v = pasco_tensor_get(t, rows[r] * 3 + j);
			want += 0.2 * fabs(v) + 0.5 * v * v;
		}
	}
	cr_assert_float_eq(
	    got, want, 1e-12, "rows' term %.15g, want %.15g", got, want);
	/* the gradient reaches rows 1, 2, 5 only, once each */
	cr_assert_eq(g[0].ids->count, 3);
	for (int r = 0; r < 3; r++) {
		cr_assert_eq(pasco_tensor_get(g[0].ids, r), rows[r]);
		for (int j = 0; j < 3; j++) {
			double v = pasco_tensor_get(t, rows[r] * 3 + j);
			cr_assert_float_eq(
			    pasco_tensor_get(g[0].rows, r * 3 + j),
			    0.2 * (v > 0 ? 1 : -1) + v, 1e-12, "row %lld",
			    (long long) rows[r]);
		}
	}
	pasco_tape_grad_fini(g, 1);
	pasco_tape_free(tp);
	pasco_model_free(m);
	pasco_tensor_release(t);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
}

Test(layer_losses, embedding_activity_regularizer_takes_its_output)
{
	pasco_layer     l = pasco_layer_embedding(8, 3);
	pasco_model    *m;
	pasco_tensor   *t = rnd(PASCO_F64, 2, (int64_t[]){8, 3}, 5, -1, 1);
	pasco_tensor   *x = ids_of(2, (int64_t[]){3, 2}, ids_v);
	pasco_tensor   *y = rnd(PASCO_F64, 2, (int64_t[]){3, 3}, 6, -1, 1);
	pasco_tnode    *nodes[1];
	pasco_tape     *tp;
	pasco_tape_grad g[1];
	double          want = 0;
	l.activity_l2        = 0.25;
	PASCO_PASS(pasco_model_sequential(&m, 2, 1, &l, 1));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	nodes[0]   = pasco_tape_watch_table(tp, t);
	double got = added_loss(m, tp, x, y, nodes, 1, g);
	for (int r = 0; r < 3; r++) { /* the mean of each example's rows */
		for (int j = 0; j < 3; j++) {
			double s = 0, n = 0;
			for (int k = 0; k < 2; k++) {
				if (ids_v[r * 2 + k] >= 0) {
					s += pasco_tensor_get(
					    t, ids_v[r * 2 + k] * 3 + j);
					n++;
				}
			}
			want += 0.25 * (s / n) * (s / n) / 3;
		}
	}
	cr_assert_float_eq(
	    got, want, 1e-12, "activity %.15g, want %.15g", got, want);
	pasco_tape_grad_fini(g, 1);
	pasco_tape_free(tp);
	pasco_model_free(m);
	pasco_tensor_release(t);
	pasco_tensor_release(x);
	pasco_tensor_release(y);
}

Test(layer_losses, regularizers_round_trip_as_keras_writes_them)
{
	pasco_model_input in[] = {{"ids", 2, true}};
	pasco_layer       l[]  = {pasco_layer_embedding(8, 3),
	           pasco_layer_dense(2, PASCO_ACT_LINEAR)};
	pasco_model      *m, *back;
	char             *json, *again;
	l[0].inputs[0]     = PASCO_MODEL_INPUT(0);
	l[0].ninputs       = 1;
	l[0].embeddings_l2 = 0.5;
	l[0].activity_l1   = 0.25;
	l[1].activity_l1   = 0.125;
	l[1].activity_l2   = 2;
	PASCO_PASS(pasco_model_functional(&m, 1, in, 2, l, 1));
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(strstr(json, "\"embeddings_regularizer\":{\"class_name\":"
	                       "\"L2\",\"config\":{\"l2\":0.5}}"),
	    "%s", json);
	cr_assert(strstr(json, "\"activity_regularizer\":{\"class_name\":"
	                       "\"L1L2\",\"config\":{\"l1\":0.125,\"l2\":2}}"),
	    "%s", json);
	PASCO_PASS(pasco_model_from_json(json, &back));
	PASCO_PASS(pasco_model_to_json(back, &again));
	cr_assert_str_eq(json, again);
	cr_assert_eq(pasco_model_layer(back, 0)->activity_l1, 0.25);
	cr_assert_eq(pasco_model_layer(back, 1)->activity_l2, 2);
	free(json);
	free(again);
	pasco_model_free(m);
	pasco_model_free(back);
}

Test(layer_losses, a_kind_without_them_refuses_them_naming_the_layer)
{
	pasco_layer l[] = {
	    pasco_layer_dense(2, PASCO_ACT_LINEAR), pasco_layer_dropout(0.1)};
	pasco_model *m = NULL;
	snprintf(l[1].name, sizeof(l[1].name), "drop");
	l[1].activity_l2 = 0.1;
	PASCO_FAIL(pasco_model_sequential(&m, 3, 2, l, 1), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "drop: an activity_regularizer is taken by Dense and Embedding "
	    "layers only");
	l[1].activity_l2   = 0;
	l[0].embeddings_l1 = 0.1;
	snprintf(l[0].name, sizeof(l[0].name), "dd");
	PASCO_FAIL(pasco_model_sequential(&m, 3, 2, l, 1), PASCO_EINVAL);
	cr_assert_str_eq(pasco_model_last_error(),
	    "dd: an embeddings_regularizer is an Embedding's");
	l[0].embeddings_l1 = 0;
	l[0].activity_l1   = -1;
	PASCO_FAIL(pasco_model_sequential(&m, 3, 2, l, 1), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "dd: the regularizers' factors must be >= 0"),
	    "%s", pasco_model_last_error());
	cr_assert_null(m);
}

/* ---- a sequence output (Keras's per-step losses averaged) ---- */

#define SB 3 /* examples */
#define ST 4 /* steps */
#define SV 6 /* vocabulary */
#define SE 2 /* embedding dim */
#define SD 3 /* units per step */

static const int64_t seq_ids[SB * ST] = {1, 2, 3, 0, 5, 5, 4, 1, 2, 0, 0, 3};

/* Embedding (the sequence) then Dense(SD, act) per step, its variables
 * watched (table, kernel, bias). */
static pasco_model *
sequence_model(
    pasco_act act, pasco_tape *tp, pasco_tensor **v, pasco_tnode **nodes)
{
	pasco_layer  l[] = {pasco_layer_embedding_sequence(SV, SE, false),
	     pasco_layer_dense(SD, act)};
	pasco_model *m;
	PASCO_PASS(pasco_model_sequential(&m, ST, 2, l, 1));
	v[0]     = rnd(PASCO_F64, 2, (int64_t[]){SV, SE}, 7, -1, 1);
	v[1]     = rnd(PASCO_F64, 2, (int64_t[]){SE, SD}, 8, -1, 1);
	v[2]     = rnd(PASCO_F64, 1, (int64_t[]){SD}, 9, -1, 1);
	nodes[0] = pasco_tape_watch_table(tp, v[0]);
	nodes[1] = pasco_tape_watch(tp, v[1]);
	nodes[2] = pasco_tape_watch(tp, v[2]);
	return m;
}

/* The Dense's pre-activation at example b, step t, unit j. */
static double
seq_logit(pasco_tensor *const *v, int b, int t, int j)
{
	double  z  = pasco_tensor_get(v[2], j);
	int64_t id = seq_ids[b * ST + t];
	for (int k = 0; k < SE; k++) {
		z += pasco_tensor_get(v[0], id * SE + k) *
		     pasco_tensor_get(v[1], k * SD + j);
	}
	return z;
}

Test(layer_losses, sparse_crossentropy_of_a_sequence_averages_every_step)
{
	pasco_tape     *tp;
	pasco_tensor   *v[3], *x = ids_of(2, (int64_t[]){SB, ST}, seq_ids), *y;
	pasco_tnode    *nodes[3], *loss;
	pasco_tape_grad g[3];
	double          want = 0, db[SD] = {0};
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_model *m = sequence_model(PASCO_ACT_SOFTMAX, tp, v, nodes);
	PASCO_PASS(pasco_tensor_alloc(&y, PASCO_I32, 2, (int64_t[]){SB, ST}));
	for (int i = 0; i < SB * ST; i++) {
		pasco_tensor_set(y, i, (i * 2 + 1) % SD);
	}
	loss = pasco_model_loss(m, tp, &x, y,
	    (pasco_loss){.kind = PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY},
	    nodes);
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	PASCO_PASS(pasco_tape_gradient(tp, loss, 3, nodes, g));
	/* Keras: the per-step crossentropy [batch, steps], averaged */
	for (int b = 0; b < SB; b++) {
		for (int t = 0; t < ST; t++) {
			double z[SD], s = 0;
			int    c = (int) pasco_tensor_get(y, b * ST + t);
			for (int j = 0; j < SD; j++) {
				s += exp(z[j] = seq_logit(v, b, t, j));
			}
			want += (log(s) - z[c]) / (SB * ST);
			for (int j = 0; j < SD; j++) {
				db[j] +=
				    (exp(z[j]) / s - (j == c)) / (SB * ST);
			}
		}
	}
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(loss), 0), want, 1e-12);
	for (int j = 0; j < SD; j++) {
		cr_assert_float_eq(pasco_tensor_get(g[2].dense, j), db[j],
		    1e-12, "dbias %d", j);
	}
	pasco_tape_grad_fini(g, 3);
	pasco_tape_free(tp);
	for (int k = 0; k < 3; k++) {
		pasco_tensor_release(v[k]);
	}
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_model_free(m);
}

Test(layer_losses, mse_of_a_sequence_and_mismatched_labels)
{
	pasco_tape   *tp;
	pasco_tensor *v[3], *x = ids_of(2, (int64_t[]){SB, ST}, seq_ids), *y;
	pasco_tensor *bad;
	pasco_tnode  *nodes[3], *loss;
	double        want = 0;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	pasco_model *m = sequence_model(PASCO_ACT_LINEAR, tp, v, nodes);
	y              = rnd(PASCO_F64, 3, (int64_t[]){SB, ST, SD}, 10, -1, 1);
	loss           = pasco_model_loss(
	              m, tp, &x, y, (pasco_loss){.kind = PASCO_LOSS_MSE}, nodes);
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	for (int b = 0; b < SB; b++) {
		for (int t = 0; t < ST; t++) {
			for (int j = 0; j < SD; j++) {
				double e =
				    seq_logit(v, b, t, j) -
				    pasco_tensor_get(y, (b * ST + t) * SD + j);
				want += e * e / (SB * ST * SD);
			}
		}
	}
	cr_assert_float_eq(pasco_tnode_value(loss) != NULL
	                       ? pasco_tensor_get(pasco_tnode_value(loss), 0)
	                       : NAN,
	    want, 1e-12);
	pasco_tape_free(tp);
	/* labels of another shape are refused naming both */
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	for (int k = 0; k < 3; k++) {
		pasco_tensor_release(v[k]);
	}
	pasco_model_free(m);
	m   = sequence_model(PASCO_ACT_LINEAR, tp, v, nodes);
	bad = rnd(PASCO_F64, 2, (int64_t[]){SB, ST}, 10, -1, 1);
	cr_assert_null(pasco_model_loss(
	    m, tp, &x, bad, (pasco_loss){.kind = PASCO_LOSS_MSE}, nodes));
	cr_assert_str_eq(pasco_tape_message(tp),
	    "loss: labels [3, 4] do not match the sequence output [3, 4, 3] "
	    "([batch, steps, dim] targets)");
	pasco_tape_free(tp);
	for (int k = 0; k < 3; k++) {
		pasco_tensor_release(v[k]);
	}
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_tensor_release(bad);
	pasco_model_free(m);
}

/* Keras's masked loss (tests/model/test_seq_masks.c has the numpy
 * checks): the per-step losses of the unmasked steps (id not 0) summed
 * and divided by their count. */
Test(layer_losses, a_masked_sequence_output_averages_over_unmasked_steps)
{
	pasco_layer   l[] = {pasco_layer_embedding_sequence(SV, SE, true),
	      pasco_layer_dense(SD, PASCO_ACT_LINEAR)};
	pasco_model  *m;
	pasco_tape   *tp;
	pasco_tensor *v[3], *x = ids_of(2, (int64_t[]){SB, ST}, seq_ids), *y;
	pasco_tnode  *nodes[3], *out, *loss;
	double        want = 0, valid = 0;
	snprintf(l[1].name, sizeof(l[1].name), "per_step");
	PASCO_PASS(pasco_model_sequential(&m, ST, 2, l, 1));
	PASCO_PASS(pasco_tape_alloc(&tp, true, 1));
	v[0]     = rnd(PASCO_F64, 2, (int64_t[]){SV, SE}, 7, -1, 1);
	v[1]     = rnd(PASCO_F64, 2, (int64_t[]){SE, SD}, 8, -1, 1);
	v[2]     = rnd(PASCO_F64, 1, (int64_t[]){SD}, 9, -1, 1);
	nodes[0] = pasco_tape_watch_table(tp, v[0]);
	nodes[1] = pasco_tape_watch(tp, v[1]);
	nodes[2] = pasco_tape_watch(tp, v[2]);
	y        = rnd(PASCO_F64, 3, (int64_t[]){SB, ST, SD}, 10, -1, 1);
	loss     = pasco_model_loss(
	        m, tp, &x, y, (pasco_loss){.kind = PASCO_LOSS_MSE}, nodes);
	cr_assert_not_null(loss, "%s", pasco_tape_message(tp));
	out = pasco_model_call_with(m, tp, &x, nodes);
	cr_assert_not_null(out, "%s", pasco_tape_message(tp));
	for (int64_t r = 0; r < SB * ST; r++) {
		double e = 0;
		for (int64_t j = 0; j < SD; j++) {
			double d = pasco_tensor_get(
			               pasco_tnode_value(out), r * SD + j) -
			           pasco_tensor_get(y, r * SD + j);
			e += d * d / SD;
		}
		want += seq_ids[r] != 0 ? e : 0;
		valid += seq_ids[r] != 0;
	}
	cr_assert_float_eq(
	    pasco_tensor_get(pasco_tnode_value(loss), 0), want / valid, 1e-12);
	pasco_tape_free(tp);
	for (int k = 0; k < 3; k++) {
		pasco_tensor_release(v[k]);
	}
	pasco_tensor_release(x);
	pasco_tensor_release(y);
	pasco_model_free(m);
}
