/* Kernels: values against naive loops, gradients against central finite
 * differences of a scalar objective. */
#include "helpers.h"

#include <math.h>
#include <string.h>

TestSuite(ops, .timeout = 20);

static pasco_tensor *
rnd(int32_t rank, const int64_t *shape, uint64_t seed, double lo, double hi)
{
	pasco_tensor     *t;
	pasco_initializer u = pasco_init_uniform(lo, hi, seed);
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, rank, shape));
	PASCO_PASS(pasco_initializer_fill(&u, t, rank, shape, 0));
	return t;
}

/* sum(out * weights) */
static double
dot(const pasco_tensor *a, const pasco_tensor *b)
{
	double s = 0;
	for (int64_t i = 0; i < a->count; i++) {
		s += pasco_tensor_get(a, i) * pasco_tensor_get(b, i);
	}
	return s;
}

typedef double (*objective)(void *ctx, pasco_tensor *x);

/* Checks analytic (the gradient of f at x) against central differences. */
static void
check_grad(objective f, void *ctx, pasco_tensor *x,
    const pasco_tensor *analytic, const char *what)
{
	const double eps = 1e-2;
	for (int64_t i = 0; i < x->count; i++) {
		double keep = pasco_tensor_get(x, i), up, down, num, ana;
		pasco_tensor_set(x, i, keep + eps);
		up = f(ctx, x);
		pasco_tensor_set(x, i, keep - eps);
		down = f(ctx, x);
		pasco_tensor_set(x, i, keep);
		num = (up - down) / (2 * eps);
		ana = pasco_tensor_get(analytic, i);
		cr_assert(fabs(num - ana) <= 2e-3 + 2e-2 * fabs(num),
		    "%s: d/dx[%lld] analytic %g, numeric %g", what,
		    (long long) i, ana, num);
	}
}

typedef struct mm_ctx {
	pasco_tensor *b, *r;
	bool          ta, tb;
} mm_ctx;

static double
mm_obj(void *p, pasco_tensor *a)
{
	mm_ctx       *c = p;
	pasco_tensor *out;
	double        v;
	PASCO_PASS(pasco_matmul(a, c->ta, c->b, c->tb, &out));
	v = dot(out, c->r);
	pasco_tensor_release(out);
	return v;
}

Test(ops, matmul_values_and_gradient_for_every_transpose)
{
	for (int ta = 0; ta < 2; ta++) {
		for (int tb = 0; tb < 2; tb++) {
			pasco_tensor *a =
			    rnd(2, ta ? (int64_t[]){4, 3} : (int64_t[]){3, 4},
			        1, -1, 1);
			pasco_tensor *b =
			    rnd(2, tb ? (int64_t[]){5, 4} : (int64_t[]){4, 5},
			        2, -1, 1);
			pasco_tensor *r = rnd(2, (int64_t[]){3, 5}, 3, -1, 1);
			pasco_tensor *out, *da, *tmp;
			mm_ctx        c = {b, r, ta, tb};
			PASCO_PASS(pasco_matmul(a, ta, b, tb, &out));
			cr_assert(out->shape[0] == 3 && out->shape[1] == 5);
			for (int i = 0; i < 3; i++) {
				for (int j = 0; j < 5; j++) {
					double s = 0;
					for (int k = 0; k < 4; k++) {
						s += pasco_tensor_get(
						         a, ta ? k * 3 + i
						               : i * 4 + k) *
						     pasco_tensor_get(
						         b, tb ? j * 4 + k
						               : k * 5 + j);
					}
					cr_assert_float_eq(
					    pasco_tensor_get(out, i * 5 + j),
					    s, 1e-5);
				}
			}
			/* d(sum(C * R))/dA = R op(B)^T, transposed back if ta
			 */
			PASCO_PASS(pasco_matmul(r, false, b, !tb, &tmp));
			if (ta) {
				pasco_tensor *eye;
				PASCO_PASS(pasco_tensor_alloc(
				    &eye, PASCO_F32, 2, (int64_t[]){3, 3}));
				for (int i = 0; i < 3; i++) {
					pasco_tensor_set(eye, i * 4, 1);
				}
				PASCO_PASS(
				    pasco_matmul(tmp, true, eye, false, &da));
				pasco_tensor_release(eye);
			} else {
				da = pasco_tensor_hold(tmp);
			}
			check_grad(mm_obj, &c, a, da, "matmul");
			pasco_tensor *all[] = {a, b, r, out, da, tmp};
			for (int i = 0; i < 6; i++) {
				pasco_tensor_release(all[i]);
			}
		}
	}
}

typedef struct unary_ctx {
	pasco_activation f;
	pasco_tensor    *r, *other;
	int              which;
} unary_ctx;

static double
act_obj(void *p, pasco_tensor *x)
{
	unary_ctx    *c = p;
	pasco_tensor *y;
	double        v;
	PASCO_PASS(pasco_activate(c->f, x, &y));
	v = dot(y, c->r);
	pasco_tensor_release(y);
	return v;
}

Test(ops, activation_gradients)
{
	pasco_activation fs[] = {PASCO_RELU, PASCO_SIGMOID, PASCO_TANH};
	for (int k = 0; k < 3; k++) {
		pasco_tensor *x = rnd(2, (int64_t[]){3, 4}, 4, 0.1, 2);
		pasco_tensor *r = rnd(2, (int64_t[]){3, 4}, 5, -1, 1);
		pasco_tensor *y, *dx;
		unary_ctx     c = {fs[k], r, NULL, 0};
		for (int64_t i = 0; i < x->count;
		     i += 2) { /* both signs, off 0 */
			pasco_tensor_set(x, i, -pasco_tensor_get(x, i));
		}
		PASCO_PASS(pasco_activate(fs[k], x, &y));
		PASCO_PASS(pasco_activate_grad(fs[k], y, r, &dx));
		check_grad(act_obj, &c, x, dx, "activation");
		pasco_tensor_release(x);
		pasco_tensor_release(r);
		pasco_tensor_release(y);
		pasco_tensor_release(dx);
	}
}

static double
bias_obj(void *p, pasco_tensor *bias)
{
	unary_ctx    *c = p;
	pasco_tensor *y;
	double        v;
	PASCO_PASS(pasco_bias_add(c->other, bias, &y));
	v = dot(y, c->r);
	pasco_tensor_release(y);
	return v;
}

Test(ops, bias_add_and_its_gradient)
{
	pasco_tensor *x = rnd(2, (int64_t[]){3, 4}, 6, -1, 1);
	pasco_tensor *b = rnd(1, (int64_t[]){4}, 7, -1, 1);
	pasco_tensor *r = rnd(2, (int64_t[]){3, 4}, 8, -1, 1);
	pasco_tensor *y, *db;
	unary_ctx     c = {0, r, x, 0};
	PASCO_PASS(pasco_bias_add(x, b, &y));
	cr_assert_float_eq(pasco_tensor_get(y, 6),
	    pasco_tensor_get(x, 6) + pasco_tensor_get(b, 2), 1e-6);
	pasco_tensor_release(y);
	PASCO_PASS(pasco_bias_add_grad(r, &db));
	check_grad(bias_obj, &c, b, db, "bias_add");
	PASCO_FAIL(pasco_bias_add(x, r, &y), PASCO_EINVAL);
	cr_assert_null(y);
	pasco_tensor *all[] = {x, b, r, db};
	for (int i = 0; i < 4; i++) {
		pasco_tensor_release(all[i]);
	}
}

static double
combine_obj(void *p, pasco_tensor *rows)
{
	unary_ctx    *c = p;
	pasco_tensor *y;
	double        v;
	PASCO_PASS(
	    pasco_embedding_combine(rows, (pasco_combiner) c->which, &y));
	v = dot(y, c->r);
	pasco_tensor_release(y);
	return v;
}

Test(ops, embedding_combine_and_its_gradient)
{
	for (int comb = PASCO_COMBINE_SUM; comb <= PASCO_COMBINE_MEAN;
	     comb++) {
		pasco_tensor *rows = rnd(3, (int64_t[]){2, 3, 4}, 9, -1, 1);
		pasco_tensor *r    = rnd(2, (int64_t[]){2, 4}, 10, -1, 1);
		pasco_tensor *y, *drows;
		unary_ctx     c = {0, r, NULL, comb};
		PASCO_PASS(
		    pasco_embedding_combine(rows, (pasco_combiner) comb, &y));
		double want = pasco_tensor_get(rows, 4) +
		              pasco_tensor_get(rows, 8) +
		              pasco_tensor_get(rows, 0);
		cr_assert_float_eq(pasco_tensor_get(y, 0),
		    comb == PASCO_COMBINE_MEAN ? want / 3 : want, 1e-5);
		PASCO_PASS(pasco_embedding_combine_grad(
		    r, 3, (pasco_combiner) comb, &drows));
		check_grad(combine_obj, &c, rows, drows, "embedding_combine");
		pasco_tensor_release(rows);
		pasco_tensor_release(r);
		pasco_tensor_release(y);
		pasco_tensor_release(drows);
	}
}

typedef struct loss_ctx {
	int           kind;
	pasco_tensor *labels;
} loss_ctx;

static double
loss_of(loss_ctx *c, pasco_tensor *x, pasco_tensor **grad)
{
	double loss = NAN;
	switch (c->kind) {
	case 0:
		PASCO_PASS(pasco_mse(x, c->labels, &loss, grad));
		break;
	case 1:
		PASCO_PASS(
		    pasco_binary_crossentropy(x, c->labels, &loss, grad));
		break;
	case 2:
		PASCO_PASS(pasco_binary_crossentropy_logits(
		    x, c->labels, &loss, grad));
		break;
	case 3:
		PASCO_PASS(
		    pasco_softmax_crossentropy(x, c->labels, &loss, grad));
		break;
	}
	return loss;
}

static double
loss_obj(void *p, pasco_tensor *x)
{
	pasco_tensor *g;
	double        v = loss_of(p, x, &g);
	pasco_tensor_release(g);
	return v;
}

Test(ops, loss_values_and_gradients)
{
	pasco_tensor *binary, *classes, *x, *g;
	float         yb[] = {1, 0, 1, 0, 0, 1};
	int64_t       yc[] = {2, 0};
	PASCO_PASS(pasco_tensor_from(
	    &binary, PASCO_F32, 1, (int64_t[]){6}, yb, sizeof(yb)));
	PASCO_PASS(pasco_tensor_from(
	    &classes, PASCO_I64, 1, (int64_t[]){2}, yc, sizeof(yc)));
	for (int kind = 0; kind < 4; kind++) {
		loss_ctx c  = {kind, kind == 3 ? classes : binary};
		x           = kind == 1 ? rnd(1, (int64_t[]){6}, 11, 0.1, 0.9)
		              : kind == 3 ? rnd(2, (int64_t[]){2, 3}, 12, -2, 2)
		                          : rnd(1, (int64_t[]){6}, 13, -2, 2);
		double loss = loss_of(&c, x, &g);
		cr_assert(isfinite(loss) && loss > 0);
		check_grad(loss_obj, &c, x, g, "loss");
		pasco_tensor_release(g);
		pasco_tensor_release(x);
	}
	/* known values: BCE of p = 0.5 is log 2; softmax of equal logits is
	 * log(classes) */
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_F32, 1, (int64_t[]){6}));
	for (int i = 0; i < 6; i++) {
		pasco_tensor_set(x, i, 0.5);
	}
	loss_ctx bce = {1, binary};
	{
		double l =
		    loss_of(&bce, x, &g); /* once: the macro repeats args */
		cr_assert_float_eq(l, log(2.0), 1e-6);
	}
	pasco_tensor_release(g);
	pasco_tensor_release(x);
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_F32, 2, (int64_t[]){2, 3}));
	loss_ctx sce = {3, classes};
	{
		double l =
		    loss_of(&sce, x, &g); /* once: the macro repeats args */
		cr_assert_float_eq(l, log(3.0), 1e-6);
	}
	pasco_tensor_release(g);
	((int64_t *) classes->data)[0] = 3; /* out of range */
	PASCO_FAIL(pasco_softmax_crossentropy(x, classes, &(double){0}, &g),
	    PASCO_EINVAL);
	pasco_tensor_release(x);
	pasco_tensor_release(binary);
	pasco_tensor_release(classes);
}

static double
l2_obj(void *p, pasco_tensor *w)
{
	(void) p;
	return pasco_l2_penalty(w, 0.3, NULL);
}

Test(ops, l2_penalty_and_its_gradient)
{
	pasco_tensor *w = rnd(1, (int64_t[]){5}, 14, -1, 1), *g;
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F32, 1, (int64_t[]){5}));
	double pen = pasco_l2_penalty(w, 0.3, g);
	cr_assert_float_eq(pen, 0.3 * dot(w, w), 1e-6);
	check_grad(l2_obj, NULL, w, g, "l2");
	pasco_tensor_release(w);
	pasco_tensor_release(g);
}

/* Each op's error names the op and what it was given. */
Test(ops, errors_name_the_op_and_the_shapes_and_dtypes)
{
	pasco_tensor *a = rnd(2, (int64_t[]){32, 64}, 15, -1, 1);
	pasco_tensor *b = rnd(2, (int64_t[]){10, 64}, 16, -1, 1);
	pasco_tensor *p = rnd(1, (int64_t[]){32}, 17, 0.1, 0.9);
	pasco_tensor *bias, *ids, *ids10, *bytes, *out;
	double        loss;
	PASCO_PASS(pasco_tensor_alloc(&bias, PASCO_F32, 1, (int64_t[]){10}));
	PASCO_PASS(pasco_tensor_alloc(&ids10, PASCO_I32, 1, (int64_t[]){10}));
	PASCO_PASS(pasco_tensor_alloc(&ids, PASCO_I32, 1, (int64_t[]){32}));
	PASCO_PASS(pasco_tensor_alloc(&bytes, PASCO_U8, 1, (int64_t[]){32}));
	static const struct {
		int         which;
		const char *want;
	} cases[] = {
	    {0, "matmul: [32, 64] x [10, 64]: inner dimensions 64 and 10 "
	        "differ"},
	    {1, "matmul: [32, 64]^T x [10, 64]^T: inner dimensions 32 and "
	        "64 differ"},
	    {2, "matmul: b is i32 [32]; want f32 of rank 2"},
	    {3, "bias_add: x [32, 64] + bias [10]: the bias has 10 elements, "
	        "x 64 columns"},
	    {4, "activate: unknown activation 9 (PASCO_RELU, PASCO_SIGMOID "
	        "or PASCO_TANH)"},
	    {5, "embedding_combine: rows is f32 [32, 64]; want f32 of rank "
	        "3"},
	    {6, "mse: pred [32, 64] against labels f32 [10, 64]: their "
	        "element counts differ"},
	    {7, "binary_crossentropy: the labels are u8 [32]; want f32, f64, "
	        "i32 or i64 (u8 tensors hold bytes)"},
	    {8, "softmax_crossentropy: logits [32, 64] against labels i32 "
	        "[10]: want one label per row"},
	    {9, "softmax_crossentropy: the labels are f32 [10]; want class "
	        "ids, i32 or i64"},
	    {10, "activate_grad: y [32, 64] and dy [10, 64] differ in size"},
	    {11, "softmax_crossentropy: label 70 (row 3) is not a class of "
	         "[0, 64)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rv = PASCO_OK;
		out    = NULL;
		switch (cases[i].which) {
		case 0:
			rv = pasco_matmul(a, false, b, false, &out);
			break;
		case 1:
			rv = pasco_matmul(a, true, b, true, &out);
			break;
		case 2:
			rv = pasco_matmul(a, false, ids, false, &out);
			break;
		case 3:
			rv = pasco_bias_add(a, bias, &out);
			break;
		case 4:
			rv = pasco_activate((pasco_activation) 9, a, &out);
			break;
		case 5:
			rv = pasco_embedding_combine(
			    a, PASCO_COMBINE_SUM, &out);
			break;
		case 6:
			rv = pasco_mse(a, b, &loss, &out);
			break;
		case 7:
			rv =
			    pasco_binary_crossentropy(ids, bytes, &loss, &out);
			if (rv == PASCO_EINVAL) { /* ids is i32: first that */
				cr_assert(strstr(pasco_ops_last_error(),
				              "binary_crossentropy: prob is "
				              "i32 [32]; "
				              "want f32") != NULL,
				    "%s", pasco_ops_last_error());
			}
			rv = pasco_binary_crossentropy(p, bytes, &loss, &out);
			break;
		case 8:
			rv = pasco_softmax_crossentropy(a, ids10, &loss, &out);
			break;
		case 9:
			rv = pasco_softmax_crossentropy(b, bias, &loss, &out);
			break;
		case 10:
			rv = pasco_activate_grad(PASCO_RELU, a, b, &out);
			break;
		case 11:
			pasco_tensor_set(ids10, 3, 70);
			rv = pasco_softmax_crossentropy(b, ids10, &loss, &out);
			break;
		}
		cr_assert_eq(
		    rv, PASCO_EINVAL, "case %zu: %s", i, pasco_errname(rv));
		cr_assert_null(out);
		cr_assert(strstr(pasco_ops_last_error(), cases[i].want) ==
		              pasco_ops_last_error(),
		    "case %zu: got \"%s\"\nwant \"%s\"", i,
		    pasco_ops_last_error(), cases[i].want);
	}
	pasco_tensor *all[] = {a, b, p, bias, ids, ids10, bytes};
	for (int i = 0; i < 7; i++) {
		pasco_tensor_release(all[i]);
	}
}

/* Labels as the data layer gives them (an int64 Example feature is i64),
 * or i32, f64: the same loss and gradient as f32 labels. */
Test(ops, integer_labels_give_the_float_labels_result)
{
	static const double      y[]      = {1, 0, 1, 1, 0, 0, 1, 0};
	static const pasco_dtype dtypes[] = {PASCO_I64, PASCO_I32, PASCO_F64};
	pasco_tensor            *p = rnd(1, (int64_t[]){8}, 18, 0.05, 0.95);
	pasco_tensor            *logits = rnd(2, (int64_t[]){8, 1}, 19, -3, 3);
	pasco_tensor            *fl;
	PASCO_PASS(pasco_tensor_alloc(&fl, PASCO_F32, 1, (int64_t[]){8}));
	for (int i = 0; i < 8; i++) {
		pasco_tensor_set(fl, i, y[i]);
	}
	for (int kind = 0; kind < 3; kind++) {
		pasco_tensor *x  = kind == 2 ? logits : p, *g0, *g1, *lab;
		double        l0 = NAN, l1 = NAN;
		int (*fn)(const pasco_tensor *, const pasco_tensor *, double *,
		    pasco_tensor **) = kind == 0 ? pasco_binary_crossentropy
		                       : kind == 1
		                           ? pasco_mse
		                           : pasco_binary_crossentropy_logits;
		PASCO_PASS(fn(x, fl, &l0, &g0));
		for (size_t d = 0; d < 3; d++) {
			PASCO_PASS(pasco_tensor_alloc(
			    &lab, dtypes[d], 1, (int64_t[]){8}));
			for (int i = 0; i < 8; i++) {
				pasco_tensor_set(lab, i, y[i]);
			}
			PASCO_PASS(fn(x, lab, &l1, &g1));
			cr_assert_eq(l1, l0,
			    "loss %d, labels %s: %.17g != %.17g", kind,
			    pasco_dtype_name(dtypes[d]), l1, l0);
			cr_assert_eq(memcmp(g1->data, g0->data, g0->nbytes), 0,
			    "gradient %d, labels %s", kind,
			    pasco_dtype_name(dtypes[d]));
			pasco_tensor_release(g1);
			pasco_tensor_release(lab);
		}
		pasco_tensor_release(g0);
	}
	pasco_tensor_release(p);
	pasco_tensor_release(logits);
	pasco_tensor_release(fl);
}
