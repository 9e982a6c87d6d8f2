/* Keras 3's LayerNormalization over axes other than the last
 * (model/layers/layer_norm.c) on [batch, T, D] (a Reshape first): axis
 * [1, 2], 1, -2 and [2, 1] (sorted, as Keras's build sorts them), with
 * center, scale and rms_scaling. gamma and beta take Keras's shape (the
 * dimensions at the axes); the output and the gradients to x, gamma and
 * beta match numpy (tests/model/norm_numpy.py ln_nd, Keras's
 * _layer_normalization, gradients by hand) and central finite
 * differences through the tape; the axes round-trip in the config; a
 * repeated or out-of-range axis is refused naming the layer. */
#include "norm_check.h"

TestSuite(layer_norm_axes, .timeout = 120);

#define B 3
#define T 4
#define D 5

/* Reshape to [T, D], then LayerNormalization l: x [B, T * D]. */
static pasco_model *
seq_model(pasco_layer l)
{
	pasco_model *m;
	pasco_layer  ls[] = {pasco_layer_reshape(2, (int64_t[]){T, D}), l};
	PASCO_PASS(pasco_model_sequential(&m, T * D, 2, ls, 3));
	return m;
}

static pasco_layer
ln_over(size_t n, const int32_t *axes)
{
	pasco_layer l = pasco_layer_layer_normalization();
	l.ln_naxes    = n;
	memcpy(l.ln_axes, axes, n * sizeof(*axes));
	return l;
}

/* The finite-difference loss: sum(y * R) of the model on x (source 0)
 * with its variables (sources 1 ..). */
typedef struct fd_ctx {
	const pasco_model *m;
	pasco_tensor      *x;
} fd_ctx;

static pasco_tnode *
fd_loss(pasco_tape *tp, pasco_tnode *const *s, void *ctx)
{
	fd_ctx             *c        = ctx;
	const pasco_tensor *in[1]    = {c->x};
	pasco_tnode        *feats[1] = {s[0]};
	pasco_tnode *y = pasci_model_forward(c->m, tp, in, feats, s + 1);
	return y != NULL ? weighted(tp, y) : NULL;
}

/* Layer l over numpy's axes (its args) on x [B, T * D]: gamma and beta
 * of shape [p0(, p1)], the output and gradients against numpy and
 * finite differences. */
static void
check_axes(pasco_layer l, int32_t prank, const int64_t *pshape,
    const char *numpy_args)
{
	pasco_model    *m  = seq_model(l);
	const int64_t   np = prank == 1 ? pshape[0] : pshape[0] * pshape[1];
	pasco_tensor   *x = rnd(PASCO_F64, 2, (int64_t[]){B, T * D}, 5, -2, 3);
	pasco_tensor   *gamma = rnd(PASCO_F64, prank, pshape, 11, 0.5, 2);
	pasco_tensor   *beta  = rnd(PASCO_F64, prank, pshape, 12, -1, 1);
	pasco_tensor   *r = rnd(PASCO_F64, 3, (int64_t[]){B, T, D}, 99, -1, 1);
	pasco_tensor   *vars[2], *srcs[3];
	pasco_tnode    *nodes[3], *y, *loss;
	pasco_tape     *tp;
	pasco_tape_grad g[3];
	double          want[2 * B * T * D + 2 * T * D];
	size_t          nv        = 0;
	bool            has_gamma = l.scale || l.rms_scaling,
	     has_beta             = l.center && !l.rms_scaling;
	for (int64_t i = 0; i < x->count; i++) { /* steps apart */
		pasco_tensor_set(x, i,
		    pasco_tensor_get(x, i) * (1 + (double) ((i / D) % T)) +
		        (double) (i % D));
	}
	numpy_ref("ln_nd", numpy_args, 4,
	    (pasco_tensor *[]){x, gamma, beta, r}, want,
	    2 * B * T * D + 2 * (size_t) np);
	if (has_gamma) {
		vars[nv++] = gamma;
	}
	if (has_beta) {
		vars[nv++] = beta;
	}
	/* Keras's shapes */
	cr_assert_eq(pasco_model_num_variables(m), nv);
	for (size_t k = 0; k < nv; k++) {
		cr_assert_eq(m->vars[k].rank, prank, "%s: rank %d",
		    m->vars[k].name, (int) m->vars[k].rank);
		for (int32_t d = 0; d < prank; d++) {
			cr_assert_eq(m->vars[k].shape[d], pshape[d], "%s",
			    m->vars[k].name);
		}
	}
	loss = norm_forward(&tp, true, m, x, nv, vars, nodes, &y);
	cr_assert_eq(pasco_tnode_value(y)->rank, 3);
	near_all(numpy_args, pasco_tnode_value(y), want, B * T * D, 1e-10);
	PASCO_PASS(pasco_tape_gradient(tp, loss, nv + 1, nodes, g));
	near_all("dx", g[0].dense, want + B * T * D, B * T * D, 1e-10);
	if (has_gamma) {
		near_all(
		    "dgamma", g[1].dense, want + 2 * B * T * D, np, 1e-10);
	}
	if (has_beta) {
		near_all("dbeta", g[nv].dense, want + 2 * B * T * D + np, np,
		    1e-10);
	}
	pasco_tape_grad_fini(g, nv + 1);
	pasco_tape_free(tp);
	/* finite differences through the tape */
	srcs[0] = x;
	memcpy(srcs + 1, vars, nv * sizeof(*vars));
	check_fd(numpy_args, fd_loss, &(fd_ctx){m, x}, nv + 1, srcs, NULL);
	pasco_tensor_release(x);
	pasco_tensor_release(gamma);
	pasco_tensor_release(beta);
	pasco_tensor_release(r);
	pasco_model_free(m);
}

Test(layer_norm_axes, axes_1_2_normalize_each_example_whole)
{
	check_axes(ln_over(2, (int32_t[]){1, 2}), 2, (int64_t[]){T, D},
	    "3,4,5 1,2 0.001 1 1 0");
	check_axes(ln_over(2, (int32_t[]){-1, -2}), 2, (int64_t[]){T, D},
	    "3,4,5 2,1 0.001 1 1 0");
}

Test(layer_norm_axes, axis_1_normalizes_over_the_steps)
{
	check_axes(ln_over(1, (int32_t[]){1}), 1, (int64_t[]){T},
	    "3,4,5 1 0.001 1 1 0");
	check_axes(ln_over(1, (int32_t[]){-2}), 1, (int64_t[]){T},
	    "3,4,5 -2 0.001 1 1 0");
	/* the default, the last axis, on a sequence */
	check_axes(pasco_layer_layer_normalization(), 1, (int64_t[]){D},
	    "3,4,5 -1 0.001 1 1 0");
}

Test(layer_norm_axes, center_scale_and_rms_scaling_over_other_axes)
{
	pasco_layer l = ln_over(1, (int32_t[]){1});
	l.center      = false;
	l.epsilon     = 0.5;
	check_axes(l, 1, (int64_t[]){T}, "3,4,5 1 0.5 0 1 0");
	l       = ln_over(2, (int32_t[]){1, 2});
	l.scale = false;
	check_axes(l, 2, (int64_t[]){T, D}, "3,4,5 1,2 0.001 1 0 0");
	l             = ln_over(2, (int32_t[]){1, 2});
	l.rms_scaling = true;
	check_axes(l, 2, (int64_t[]){T, D}, "3,4,5 1,2 0.001 1 1 1");
}

Test(layer_norm_axes, the_axes_round_trip_and_bad_ones_are_refused)
{
	pasco_model *m, *back;
	char        *json, *again;
	pasco_layer_reset_names();
	m = seq_model(ln_over(2, (int32_t[]){1, 2}));
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(strstr(json, "\"axis\":[1,2]"), "%s", json);
	PASCO_PASS(pasco_model_from_json(json, &back));
	PASCO_PASS(pasco_model_to_json(back, &again));
	cr_assert_str_eq(json, again);
	cr_assert_eq(pasco_model_layer(back, 1)->ln_naxes, 2);
	cr_assert_eq(back->vars[0].rank, 2);
	free(json);
	free(again);
	pasco_model_free(back);
	pasco_model_free(m);
	/* one axis stays an int, as Keras's constructor takes it */
	m = seq_model(ln_over(1, (int32_t[]){1}));
	PASCO_PASS(pasco_model_to_json(m, &json));
	cr_assert(strstr(json, "\"axis\":1,"), "%s", json);
	free(json);
	pasco_model_free(m);
	/* refused when the model is built, naming the layer */
	static const struct {
		size_t      n;
		int32_t     axes[3];
		const char *says;
	} bad[] = {
	    {2, {1, -2}, "axis -2 is given twice"},
	    {1, {3}, "axis 3 is out of range for an input of rank 3"},
	    {1, {-4}, "axis -4 is out of range"},
	};
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		pasco_layer ls[] = {pasco_layer_reshape(2, (int64_t[]){T, D}),
		    ln_over(bad[k].n, bad[k].axes)};
		snprintf(ls[1].name, sizeof(ls[1].name), "ln");
		PASCO_FAIL(
		    pasco_model_sequential(&m, T * D, 2, ls, 3), PASCO_EINVAL);
		cr_assert(strstr(pasco_model_last_error(), bad[k].says) &&
		              strstr(pasco_model_last_error(), "ln"),
		    "%s", pasco_model_last_error());
	}
}
