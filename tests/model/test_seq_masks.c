/* Sequences and masks as Keras 3 has them (docs/sequences.md): an
 * Embedding(mask_zero) sequence through a Dense per step, its loss
 * (sparse_categorical_crossentropy, mean_squared_error) the per-step
 * losses weighted by the mask, sum over the unmasked steps / their count,
 * and by each example's sample weight; the gradients through it; the
 * metrics Keras masks counted over the unmasked steps only; and
 * BatchNormalization's masked moments, its moving statistics moved
 * toward them. Against numpy (tests/model/seq_numpy.py, written from
 * Keras's definitions, gradients by hand), with a row of padding only
 * and a batch of padding only. */
#include "norm_check.h"

#include <string.h>

TestSuite(seq_masks, .timeout = 60);

#define B 4
#define T 5
#define V 7
#define D 3
#define C 4

/* Row 1 is padding only; the others end in padding. */
static const int64_t ids_masked[B * T] = {
    3, 1, 4, 0, 0, 0, 0, 0, 0, 0, 2, 6, 5, 3, 0, 1, 1, 0, 0, 0};

static pasco_model *
seq_model(bool mask_zero, pasco_layer last, const char *loss,
    const char *const *metrics, size_t nmetrics)
{
	pasco_model_input in[] = {{"ids", T, true}};
	pasco_layer       l[]  = {
	           pasco_layer_embedding_sequence(V, D, mask_zero), last};
	pasco_model *m;
	cr_assert_eq(pasco_model_functional(&m, 1, in, 2, l, 1), 0, "%s",
	    pasco_model_last_error());
	if (loss != NULL) { /* the metrics weighted too, as metric 1... */
		cr_assert_eq(pasco_model_compile(
		                 m, &(pasco_compile_options){.loss = loss,
		                        .metrics                   = metrics,
		                        .nmetrics                  = nmetrics,
		                        .weighted_metrics          = metrics,
		                        .nweighted_metrics = nmetrics}),
		    0, "%s", pasco_model_last_error());
	}
	return m;
}

static pasco_tensor *
ids_tensor(const int64_t *ids)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_from(&t, PASCO_I64, 2, (int64_t[]){B, T}, ids,
	    sizeof(int64_t) * B * T));
	return t;
}

/* The model's loss (and the metrics' counts into state) on ids, y and
 * sw, its variables vars (table, kernel, bias) watched; gradients into
 * g[3], the table's scattered dense into dtable (V * D). */
static double
loss_of(const pasco_model *m, pasco_tensor *ids, pasco_tensor *const *vars,
    const pasco_tensor *y, const pasco_tensor *sw, pasco_tape_grad *g,
    double *dtable, double *state)
{
	pasco_tape         *tp;
	pasco_tnode        *nodes[3], *out, *mask, *l;
	const pasco_tensor *in[] = {ids};
	double              v;
	PASCO_PASS(pasco_tape_alloc(&tp, true, 3));
	nodes[0] = pasco_tape_watch_table(tp, vars[0]);
	nodes[1] = pasco_tape_watch(tp, vars[1]);
	nodes[2] = pasco_tape_watch(tp, vars[2]);
	l        = pasci_model_loss_masked(
	           m, tp, in, y, sw, m->compile.loss, nodes, &out, &mask);
	cr_assert_not_null(l, "%s", pasco_tape_message(tp));
	v = pasco_tensor_get(pasco_tnode_value(l), 0);
	PASCO_PASS(pasco_tape_gradient(tp, l, 3, nodes, g));
	memset(dtable, 0, sizeof(double) * V * D);
	for (int64_t r = 0; g[0].ids != NULL && r < g[0].ids->count; r++) {
		int64_t row = (int64_t) pasco_tensor_get(g[0].ids, r);
		for (int64_t j = 0; j < D; j++) {
			dtable[row * D + j] +=
			    pasco_tensor_get(g[0].rows, r * D + j);
		}
	}
	if (state != NULL) {
		cr_assert_eq(
		    pasci_metric_counts_masked(m, pasco_tnode_value(out), y,
		        sw, mask != NULL ? pasco_tnode_value(mask) : NULL,
		        state),
		    0, "%s", pasco_model_last_error());
	}
	pasco_tape_free(tp);
	return v;
}

/* A loss of kind ("sce" or "mse") against numpy's: loss, the gradients
 * of table, kernel and bias, and the masked metric, unweighted (metric
 * 0) and weighted (1). sw_values: NULL (none), B weights (one per
 * example) or, with steps, B * T (one per step, Keras's [B, T]). */
static void
check_loss(const char *kind, bool masked, const int64_t *idv,
    const double *sw_values, bool steps)
{
	bool        sce = strcmp(kind, "sce") == 0;
	pasco_layer last =
	    pasco_layer_dense(C, sce ? PASCO_ACT_SOFTMAX : PASCO_ACT_LINEAR);
	const char   *metrics[] = {sce ? "accuracy" : "mse"};
	pasco_model  *m         = seq_model(masked, last,
            sce ? "sparse_categorical_crossentropy" : "mse", metrics, 1);
	pasco_tensor *ids       = ids_tensor(idv), *ids_f, *y, *sw;
	pasco_tensor *vars[3]   = {
	      rnd(PASCO_F64, 2, (int64_t[]){V, D}, 1, -1, 1),
	      rnd(PASCO_F64, 2, (int64_t[]){D, C}, 2, -1, 1),
	      rnd(PASCO_F64, 1, (int64_t[]){C}, 3, -0.5, 0.5)};
	pasco_tape_grad g[3];
	double          want[1 + V * D + D * C + C + 2], dtable[V * D];
	int64_t         nw    = steps ? B * T : B;
	double         *state = calloc(m->compile.state_len, sizeof(double));
	char            a[64];
	if (sce) {
		PASCO_PASS(
		    pasco_tensor_alloc(&y, PASCO_I64, 2, (int64_t[]){B, T}));
		for (int64_t i = 0; i < B * T; i++) {
			pasco_tensor_set(y, i, (double) ((i * 7 + 3) % C));
		}
	} else {
		y = rnd(PASCO_F64, 3, (int64_t[]){B, T, C}, 4, -1, 1);
	}
	sw = NULL;
	if (sw_values != NULL) {
		PASCO_PASS(pasco_tensor_alloc(
		    &sw, PASCO_F64, steps ? 2 : 1, (int64_t[]){B, T}));
	}
	PASCO_PASS(
	    pasco_tensor_alloc(&ids_f, PASCO_F64, 2, (int64_t[]){B, T}));
	for (int64_t i = 0; i < B * T; i++) {
		pasco_tensor_set(ids_f, i, (double) idv[i]);
	}
	pasco_tensor *ones;
	PASCO_PASS(pasco_tensor_alloc(
	    &ones, PASCO_F64, steps ? 2 : 1, (int64_t[]){B, T}));
	for (int64_t b = 0; b < nw; b++) {
		pasco_tensor_set(
		    ones, b, sw_values != NULL ? sw_values[b] : 1);
		if (sw != NULL) {
			pasco_tensor_set(sw, b, sw_values[b]);
		}
	}
	snprintf(a, sizeof(a), "%d %d %d %d %d %d %d", B, T, V, D, C, masked,
	    steps);
	numpy_ref(kind, a, 6,
	    (pasco_tensor *[]){ids_f, vars[0], vars[1], vars[2], ones, y},
	    want, sizeof(want) / sizeof(*want));

	double got = loss_of(m, ids, vars, y, sw, g, dtable, state);
	cr_assert(fabs(got - want[0]) <= 1e-10 * fmax(1, fabs(want[0])),
	    "%s loss %.12g, numpy %.12g", kind, got, want[0]);
	for (int64_t i = 0; i < V * D; i++) {
		cr_assert(fabs(dtable[i] - want[1 + i]) <= 1e-10,
		    "%s dtable[%lld] %.12g, numpy %.12g", kind, (long long) i,
		    dtable[i], want[1 + i]);
	}
	near_all("dkernel", g[1].dense, want + 1 + V * D, D * C, 1e-10);
	near_all("dbias", g[2].dense, want + 1 + V * D + D * C, C, 1e-10);
	bool padding_only = masked;
	for (int64_t i = 0; i < B * T; i++) {
		padding_only = padding_only && idv[i] == 0;
	}
	if (padding_only) { /* counted nowhere: Keras's count stays 0 */
		const double *s0 = state + m->compile.metric_off[0];
		cr_assert(s0[0] == 0 && s0[1] == 0, "%s metric counts %g, %g",
		    kind, s0[0], s0[1]);
	}
	bool zero_weights = sw != NULL;
	for (int64_t i = 0; sw != NULL && i < sw->count; i++) {
		zero_weights = zero_weights && sw_values[i] == 0;
	}
	if (zero_weights) { /* the weighted metric counts nothing either */
		const double *s1 = state + m->compile.metric_off[1];
		cr_assert(s1[0] == 0 && s1[1] == 0,
		    "%s weighted metric counts %g, %g", kind, s1[0], s1[1]);
	}
	for (size_t k = 0; k < 2; k++) {
		double r = pasci_metric_result(m, k, state);
		double w = want[1 + V * D + D * C + C + k];
		cr_assert(padding_only || (k == 1 && zero_weights) ||
		              fabs(r - w) <= 1e-10,
		    "%s metric %zu %.12g, numpy %.12g", kind, k, r, w);
	}
	pasco_tape_grad_fini(g, 3);
	free(state);
	for (int k = 0; k < 3; k++) {
		pasco_tensor_release(vars[k]);
	}
	pasco_tensor_release(ids);
	pasco_tensor_release(ids_f);
	pasco_tensor_release(ones);
	pasco_tensor_release(y);
	pasco_tensor_release(sw);
	pasco_model_free(m);
}

Test(seq_masks, sparse_crossentropy_averages_over_the_unmasked_steps)
{
	check_loss("sce", true, ids_masked, NULL, false);
	check_loss("sce", true, ids_masked, (double[]){0.5, 2, 1, 3}, false);
}

Test(seq_masks, mse_averages_over_the_unmasked_steps)
{
	check_loss("mse", true, ids_masked, NULL, false);
	check_loss("mse", true, ids_masked, (double[]){0.5, 2, 0, 3}, false);
}

Test(seq_masks, an_unmasked_sequence_takes_sample_weights_per_example)
{
	check_loss("sce", false, ids_masked, (double[]){0.5, 2, 1, 3}, false);
	check_loss("mse", false, ids_masked, NULL, false);
}

/* Keras's per-timestep sample_weight [B, T]: each step's loss times its
 * own weight, with and without a mask (sum(w_bt * L_bt over the unmasked
 * steps) / their count), a row of zero weights among them; the weighted
 * metrics count each step with its weight times its mask. */
static const double step_w[B * T] = {
    0.5, 2, 1, 3, 0.25, 1, 2, 1, 0.5, 1, 0, 0, 0, 0, 0, 3, 0.5, 1, 2, 0.75};

Test(seq_masks, sparse_crossentropy_takes_weights_per_step)
{
	check_loss("sce", true, ids_masked, step_w, true);
	check_loss("sce", false, ids_masked, step_w, true);
}

Test(seq_masks, mse_takes_weights_per_step)
{
	check_loss("mse", true, ids_masked, step_w, true);
	check_loss("mse", false, ids_masked, step_w, true);
}

/* A batch whose weights are all 0: loss 0, no gradient, and the weighted
 * metrics count nothing (divide_no_nan). */
Test(seq_masks, weights_per_step_all_zero_give_loss_0)
{
	static const double zero_w[B * T] = {0};
	check_loss("sce", true, ids_masked, zero_w, true);
	check_loss("mse", false, ids_masked, zero_w, true);
}

/* Keras's divide_no_nan: a batch of padding only has loss 0 and no
 * gradient, and its masked metrics count nothing. */
Test(seq_masks, a_batch_of_padding_only_has_loss_0)
{
	static const int64_t zeros[B * T] = {0};
	check_loss("sce", true, zeros, NULL, false);
	check_loss("mse", true, zeros, NULL, false);
}

/* A mask that does not fit the output is refused naming both shapes
 * (pasci_loss_mask_weights), and so are weights of another count. */
Test(seq_masks, a_mask_or_weights_that_do_not_fit_are_refused)
{
	pasco_tensor *out, *mask, *sw, *w = NULL;
	PASCO_PASS(
	    pasco_tensor_alloc(&out, PASCO_F32, 3, (int64_t[]){B, T, C}));
	PASCO_PASS(pasco_tensor_alloc(&mask, PASCO_F32, 2, (int64_t[]){B, 4}));
	PASCO_PASS(pasco_tensor_alloc(&sw, PASCO_F32, 1, (int64_t[]){3}));
	PASCO_FAIL(pasci_loss_mask_weights(out, mask, NULL, "tags", &w),
	    PASCO_EINVAL);
	cr_assert_null(w);
	cr_assert(strstr(pasco_model_last_error(), "the mask [4, 4] of 'tags' "
	                                           "does not fit its output "
	                                           "[4, 5, 4]") != NULL,
	    "%s", pasco_model_last_error());
	PASCO_FAIL(
	    pasci_loss_mask_weights(out, NULL, sw, "tags", &w), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "want one number per "
	              "example ([4] or [4, 1])") != NULL,
	    "%s", pasco_model_last_error());
	pasco_tensor_release(out);
	pasco_tensor_release(mask);
	pasco_tensor_release(sw);
}

/* Embedding(mask_zero) -> BatchNormalization in training: the moments of
 * the unmasked steps only, (sum / (count + 1e-7)), every step normalized
 * with them, the gradients through them, and the moving statistics'
 * updates toward them. */
Test(seq_masks, batch_norm_takes_the_moments_of_the_unmasked_steps)
{
	pasco_layer bn         = pasco_layer_batch_normalization();
	bn.momentum            = 0.9;
	pasco_model_input in[] = {{"ids", T, true}};
	pasco_layer  l[] = {pasco_layer_embedding_sequence(V, D, true), bn};
	pasco_model *m;
	cr_assert_eq(pasco_model_functional(&m, 1, in, 2, l, 1), 0, "%s",
	    pasco_model_last_error());
	pasco_tensor *ids  = ids_tensor(ids_masked), *ids_f;
	pasco_tensor *v[5] = {rnd(PASCO_F64, 2, (int64_t[]){V, D}, 5, -2, 3),
	    rnd(PASCO_F64, 1, (int64_t[]){D}, 11, 0.5, 2),
	    rnd(PASCO_F64, 1, (int64_t[]){D}, 12, -1, 1),
	    rnd(PASCO_F64, 1, (int64_t[]){D}, 13, -2, 2),
	    rnd(PASCO_F64, 1, (int64_t[]){D}, 14, 0.1, 3)};
	pasco_tensor *r = rnd(PASCO_F64, 3, (int64_t[]){B, T, D}, 99, -1, 1);
	double        want[B * T * D + V * D + 4 * D], dtable[V * D];
	PASCO_PASS(
	    pasco_tensor_alloc(&ids_f, PASCO_F64, 2, (int64_t[]){B, T}));
	for (int64_t i = 0; i < B * T; i++) {
		pasco_tensor_set(ids_f, i, (double) ids_masked[i]);
	}
	numpy_ref("bn", "4 5 7 3 0.001 0.9", 7,
	    (pasco_tensor *[]){ids_f, v[0], v[1], v[2], v[3], v[4], r}, want,
	    sizeof(want) / sizeof(*want));

	pasco_tape         *tp;
	pasco_tnode        *nodes[5], *y;
	pasco_tape_grad     g[3];
	const pasco_tensor *inp[] = {ids};
	PASCO_PASS(pasco_tape_alloc(&tp, true, 7));
	nodes[0] = pasco_tape_watch_table(tp, v[0]);
	for (int k = 1; k < 5; k++) {
		nodes[k] = pasco_tape_watch(tp, v[k]);
	}
	y = pasci_model_forward(m, tp, inp, NULL, nodes);
	cr_assert_not_null(y, "%s", pasco_tape_message(tp));
	pasco_tnode *loss = pasco_t_reduce_sum(tp,
	    pasco_t_mul(tp, y, pasco_tape_constant(tp, r)), PASCO_T_ALL_AXES);
	PASCO_PASS(pasco_tape_gradient(tp, loss, 3, nodes, g));
	near_all("y", pasco_tnode_value(y), want, B * T * D, 1e-9);
	memset(dtable, 0, sizeof(dtable));
	for (int64_t k = 0; k < g[0].ids->count; k++) {
		int64_t row = (int64_t) pasco_tensor_get(g[0].ids, k);
		for (int64_t j = 0; j < D; j++) {
			dtable[row * D + j] +=
			    pasco_tensor_get(g[0].rows, k * D + j);
		}
	}
	for (int64_t i = 0; i < V * D; i++) {
		cr_assert(fabs(dtable[i] - want[B * T * D + i]) <= 1e-8,
		    "dtable[%lld] %.12g, numpy %.12g", (long long) i,
		    dtable[i], want[B * T * D + i]);
	}
	const double *w = want + B * T * D + V * D;
	near_all("dgamma", g[1].dense, w, D, 1e-9);
	near_all("dbeta", g[2].dense, w + D, D, 1e-9);
	pasci_tape_update *uv = pasci_tape_step_of(tp)->updates;
	cr_assert_eq(updates_on(tp), 2);
	near_all("moving_mean's update", uv->next->delta, w + 2 * D, D, 1e-12);
	near_all("moving_variance's update", uv->delta, w + 3 * D, D, 1e-12);
	pasco_tape_grad_fini(g, 3);
	pasco_tape_free(tp);
	for (int k = 0; k < 5; k++) {
		pasco_tensor_release(v[k]);
	}
	pasco_tensor_release(r);
	pasco_tensor_release(ids);
	pasco_tensor_release(ids_f);
	pasco_model_free(m);
}

/* Every built-in loss kind with a mask (masked; else every step counts)
 * and sample weights (steps: one per step, else per example): the loss of
 * the rows [B * T, C] weighted by pasci_loss_mask_weights is Keras's
 * sum(w_r * L_r over the unmasked rows) / (unmasked rows), each L_r the
 * kind's unweighted loss of row r alone. */
static void
every_kind(bool steps, bool masked)
{
	static const pasco_loss_kind kinds[]      = {PASCO_LOSS_MSE,
	         PASCO_LOSS_BINARY_CROSSENTROPY,
	         PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
	         PASCO_LOSS_CATEGORICAL_CROSSENTROPY, PASCO_LOSS_MAE,
	         PASCO_LOSS_HUBER, PASCO_LOSS_LOG_COSH, PASCO_LOSS_HINGE,
	         PASCO_LOSS_KL_DIVERGENCE, PASCO_LOSS_POISSON,
	         PASCO_LOSS_COSINE_SIMILARITY,
	         PASCO_LOSS_BINARY_FOCAL_CROSSENTROPY};
	const double                 sw_values[B] = {0.5, 2, 1, 3};
	pasco_tensor                *p =
	    rnd(PASCO_F64, 3, (int64_t[]){B, T, C}, 21, 0.05, 0.95);
	pasco_tensor *dense =
	    rnd(PASCO_F64, 3, (int64_t[]){B, T, C}, 22, 0, 1);
	pasco_tensor *ids, *mask, *sw, *w;
	PASCO_PASS(pasco_tensor_alloc(&ids, PASCO_I64, 2, (int64_t[]){B, T}));
	PASCO_PASS(pasco_tensor_alloc(&mask, PASCO_F32, 2, (int64_t[]){B, T}));
	if (steps) {
		PASCO_PASS(pasco_tensor_from(&sw, PASCO_F64, 2,
		    (int64_t[]){B, T}, step_w, sizeof(step_w)));
	} else {
		PASCO_PASS(pasco_tensor_from(&sw, PASCO_F64, 1, (int64_t[]){B},
		    sw_values, sizeof(sw_values)));
	}
	double valid = 0;
	for (int64_t i = 0; i < B * T; i++) {
		pasco_tensor_set(ids, i, (double) ((i * 5 + 1) % C));
		pasco_tensor_set(mask, i, !masked || ids_masked[i] != 0);
		valid += !masked || ids_masked[i] != 0;
	}
	PASCO_PASS(
	    pasci_loss_mask_weights(p, masked ? mask : NULL, sw, "tags", &w));
	cr_assert_not_null(w);
	for (size_t k = 0; k < sizeof(kinds) / sizeof(*kinds); k++) {
		pasco_loss l = {.kind = kinds[k],
		    .delta            = 0.3,
		    .alpha            = 0.25,
		    .gamma            = 2,
		    .axis             = -1};
		bool       sparse =
		    kinds[k] == PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY;
		const pasco_tensor *y   = sparse ? ids : dense;
		size_t              ysz = sparse ? 8 : 8 * C;
		pasco_tensor       *pv, *yv;
		PASCO_PASS(pasco_tensor_from(&pv, PASCO_F64, 2,
		    (int64_t[]){B * T, C}, p->data, p->nbytes));
		PASCO_PASS(pasco_tensor_from(&yv, y->dtype, sparse ? 1 : 2,
		    (int64_t[]){B * T, C}, y->data, y->nbytes));
		pasco_tape *tp;
		PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
		pasco_tnode *v = pasco_t_loss_weighted(
		    tp, &l, pasco_tape_constant(tp, pv), yv, w);
		cr_assert_not_null(v, "%s", pasco_tape_message(tp));
		double got  = pasco_tensor_get(pasco_tnode_value(v), 0),
		       want = 0;
		for (int64_t r = 0; r < B * T; r++) {
			pasco_tensor *pr, *yr;
			PASCO_PASS(pasco_tensor_from(&pr, PASCO_F64, 2,
			    (int64_t[]){1, C}, (double *) p->data + r * C,
			    8 * C));
			PASCO_PASS(pasco_tensor_from(&yr, y->dtype,
			    sparse ? 1 : 2, (int64_t[]){1, C},
			    (const char *) y->data + (size_t) r * ysz, ysz));
			pasco_tnode *one = pasco_t_loss(
			    tp, &l, pasco_tape_constant(tp, pr), yr);
			cr_assert_not_null(one, "%s", pasco_tape_message(tp));
			want += pasco_tensor_get(mask, r) != 0
			            ? (steps ? step_w[r] : sw_values[r / T]) *
			                  pasco_tensor_get(
			                      pasco_tnode_value(one), 0)
			            : 0;
			pasco_tensor_release(pr);
			pasco_tensor_release(yr);
		}
		want /= valid;
		cr_assert(fabs(got - want) <= 1e-12 * fmax(1, fabs(want)),
		    "loss kind %d (steps %d, masked %d): %.15g, by rows %.15g",
		    (int) kinds[k], steps, masked, got, want);
		pasco_tape_free(tp);
		pasco_tensor_release(pv);
		pasco_tensor_release(yv);
	}
	pasco_tensor_release(w);
	pasco_tensor_release(p);
	pasco_tensor_release(dense);
	pasco_tensor_release(ids);
	pasco_tensor_release(mask);
	pasco_tensor_release(sw);
}

Test(seq_masks, every_loss_kind_averages_over_the_unmasked_steps)
{
	every_kind(false, true);
}

/* Weights per step ([B, T], a row of zeros among them) with and without
 * a mask: sum(w_bt * L_bt over the unmasked steps) / their count. */
Test(seq_masks, every_loss_kind_takes_weights_per_step)
{
	every_kind(true, true);
	every_kind(true, false);
}
