/*
 * Optimizers on the ps against reference updates written here, straight
 * from the Keras formulas: several steps, dense and sparse.
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "optimizer_desc.h"
#include "store.h"
#include "store_read.h"

TestSuite(optimizer, .timeout = 20);

#define N 4
#define STEPS 6

/* The gradient of element i at step t. */
static double
grad_at(int t, int i)
{
	return 0.3 * sin(1.7 * t + i) + 0.1 * (i - 1);
}

/* Reference state of one element: w and up to 3 slots. */
typedef struct ref {
	double w, s[3];
	int    t;
	double u_product; /* Nadam's, as Keras keeps it */
} ref;

static void
ref_init(ref *r, const pasco_optimizer *o, double w)
{
	memset(r, 0, sizeof(*r));
	r->w         = w;
	r->u_product = 1;
	if (o->kind == PASCO_OPT_ADAGRAD || o->kind == PASCO_OPT_FTRL) {
		r->s[0] = o->initial_accumulator_value;
	}
}

static void
ref_step(ref *r, const pasco_optimizer *o, double g)
{
	double lr = o->learning_rate;
	r->t++;
	switch (o->kind) {
	case PASCO_OPT_SGD:
		if (o->momentum == 0) {
			r->w = r->w - lr * g;
		} else {
			double vel = o->momentum * r->s[0] - lr * g;
			r->s[0]    = vel;
			r->w = o->nesterov ? r->w + o->momentum * vel - lr * g
			                   : r->w + vel;
		}
		break;
	case PASCO_OPT_ADAGRAD:
		r->s[0] = r->s[0] + g * g;
		r->w    = r->w - lr * g / (sqrt(r->s[0]) + o->epsilon);
		break;
	case PASCO_OPT_RMSPROP: {
		double ms = o->rho * r->s[0] + (1 - o->rho) * g * g;
		double mg = o->rho * r->s[2] + (1 - o->rho) * g;
		double denom =
		    o->centered ? ms - mg * mg + o->epsilon : ms + o->epsilon;
		double inc = lr * g / sqrt(denom);
		r->s[0]    = ms;
		r->s[2]    = mg;
		if (o->momentum > 0) {
			r->s[1] = o->momentum * r->s[1] + inc;
			r->w    = r->w - r->s[1];
		} else {
			r->w = r->w - inc;
		}
		break;
	}
	case PASCO_OPT_ADAM: {
		double b1t = pow(o->beta_1, r->t), b2t = pow(o->beta_2, r->t);
		double m  = o->beta_1 * r->s[0] + (1 - o->beta_1) * g;
		double v  = o->beta_2 * r->s[1] + (1 - o->beta_2) * g * g;
		double vh = fmax(r->s[2], v);
		r->s[0]   = m;
		r->s[1]   = v;
		r->s[2]   = vh;
		r->w -= lr * sqrt(1 - b2t) / (1 - b1t) * m /
		        (sqrt(o->amsgrad ? vh : v) + o->epsilon);
		break;
	}
	case PASCO_OPT_ADAMW: { /* Keras 3: decay first, then Adam */
		double b1t = pow(o->beta_1, r->t), b2t = pow(o->beta_2, r->t);
		r->w    = r->w - r->w * o->weight_decay * lr;
		r->s[0] = o->beta_1 * r->s[0] + (1 - o->beta_1) * g;
		r->s[1] = o->beta_2 * r->s[1] + (1 - o->beta_2) * g * g;
		r->s[2] = fmax(r->s[2], r->s[1]);
		r->w -= lr * sqrt(1 - b2t) / (1 - b1t) * r->s[0] /
		        (sqrt(o->amsgrad ? r->s[2] : r->s[1]) + o->epsilon);
		break;
	}
	case PASCO_OPT_NADAM: { /* Keras 3's nadam.py, step by step */
		double u_t  = o->beta_1 * (1 - 0.5 * pow(0.96, r->t));
		double u_t1 = o->beta_1 * (1 - 0.5 * pow(0.96, r->t + 1));
		r->u_product *= u_t;
		double u_prod1 = r->u_product * u_t1;
		r->s[0]        = r->s[0] + (g - r->s[0]) * (1 - o->beta_1);
		r->s[1]        = r->s[1] + (g * g - r->s[1]) * (1 - o->beta_2);
		double m_hat   = u_t1 * r->s[0] / (1 - u_prod1) +
		               (1 - u_t) * g / (1 - r->u_product);
		double v_hat = r->s[1] / (1 - pow(o->beta_2, r->t));
		r->w -= m_hat * lr / (sqrt(v_hat) + o->epsilon);
		break;
	}
	case PASCO_OPT_FTRL: {
		double n = r->s[0], z = r->s[1], p = -o->learning_rate_power;
		double n_new = n + g * g;
		double sigma = (pow(n_new, p) - pow(n, p)) / lr;
		double gs    = g + 2 * o->l2_shrinkage * r->w;
		z            = z + gs - sigma * r->w;
		double quad =
		    pow(n_new, p) / lr + 2 * (o->l2 + o->beta / (2 * lr));
		r->w    = fabs(z) <= o->l1
		              ? 0
		              : ((z > 0 ? o->l1 : -o->l1) - z) / quad;
		r->s[0] = n_new;
		r->s[1] = z;
		break;
	}
	}
}

/* Runs STEPS dense applies and compares every step with the reference. */
static void
check_dense(pasco_optimizer o, const char *what)
{
	ps_store     *s;
	pasco_tensor *w0, *g, *now;
	ref           r[N];
	char          err[256];
	PASCO_PASS(pasci_store_create(&s));
	PASCO_PASS(pasco_tensor_alloc(&w0, PASCO_F64, 1, (int64_t[]){N}));
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F64, 1, (int64_t[]){N}));
	for (int i = 0; i < N; i++) {
		pasco_tensor_set(w0, i, 0.5 - 0.25 * i);
		ref_init(&r[i], &o, 0.5 - 0.25 * i);
	}
	PASCO_PASS(pasci_store_var_create(s, "w", w0, err, sizeof(err)));
	for (int t = 1; t <= STEPS; t++) {
		for (int i = 0; i < N; i++) {
			pasco_tensor_set(g, i, grad_at(t, i));
			ref_step(&r[i], &o, grad_at(t, i));
		}
		int rv =
		    pasci_store_var_apply(s, "w", &o, g, err, sizeof(err));
		cr_assert_eq(rv, PASCO_OK, "%s: %s", what, err);
		now = read_var(s, "w");
		for (int i = 0; i < N; i++) {
			cr_assert_float_eq(pasco_tensor_get(now, i), r[i].w,
			    1e-12,
			    "%s step %d element %d: %.15g, reference %.15g",
			    what, t, i, pasco_tensor_get(now, i), r[i].w);
		}
		pasco_tensor_release(now);
	}
	pasco_tensor_release(w0);
	pasco_tensor_release(g);
	pasci_store_destroy(s);
}

Test(optimizer, dense_updates_follow_the_keras_formulas)
{
	pasco_optimizer ftrl = pasco_ftrl(0.2, 0.05, 0.1);
	ftrl.l2_shrinkage    = 0.01;
	ftrl.beta            = 0.5;
	check_dense(pasco_sgd(0.1, 0, false), "SGD");
	check_dense(pasco_sgd(0.1, 0.9, false), "SGD momentum");
	check_dense(pasco_sgd(0.1, 0.9, true), "SGD Nesterov");
	check_dense(pasco_adagrad(0.1), "Adagrad");
	check_dense(pasco_rmsprop(0.01, 0.9, 0, false), "RMSprop");
	check_dense(
	    pasco_rmsprop(0.01, 0.8, 0.5, true), "RMSprop momentum centered");
	check_dense(pasco_adam(0.01, false), "Adam");
	check_dense(pasco_adam(0.01, true), "Adam amsgrad");
	check_dense(pasco_ftrl(0.2, 0, 0), "FTRL");
	check_dense(ftrl, "FTRL l1 l2 shrinkage beta");
	check_dense(pasco_adamw(0.01, 0.004, false), "AdamW");
	check_dense(pasco_adamw(0.05, 0.3, true), "AdamW amsgrad");
	check_dense(pasco_nadam(0.01), "Nadam");
	check_dense(pasco_nadam(0.2), "Nadam 0.2");
}

/* Applies the same gradients, dense and sparse (a duplicate id), to an f32
 * and an f64 copy of a variable with each kind's configuration that uses
 * every slot: the f32 kernels (f32 arithmetic) agree with the updates in
 * double to f32 rounding, step after step. */
Test(optimizer, every_kinds_f32_kernel_agrees_with_its_update_in_double)
{
	int64_t id_list[] = {2, 0, 2};
	for (int kind = 1; kind < PASCI_OPT_KINDS; kind++) {
		const pasci_opt_desc *d = pasci_opt_desc_of(kind);
		pasco_optimizer       o = d->every_slot();
		ps_store             *s;
		pasco_tensor *w32, *w64, *g32, *g64, *ids, *r32, *r64, *a, *b;
		char          err[256];
		PASCO_PASS(pasci_store_create(&s));
		PASCO_PASS(
		    pasco_tensor_alloc(&w32, PASCO_F32, 2, (int64_t[]){4, 3}));
		PASCO_PASS(
		    pasco_tensor_alloc(&w64, PASCO_F64, 2, (int64_t[]){4, 3}));
		PASCO_PASS(
		    pasco_tensor_alloc(&g32, PASCO_F32, 2, (int64_t[]){4, 3}));
		PASCO_PASS(
		    pasco_tensor_alloc(&g64, PASCO_F64, 2, (int64_t[]){4, 3}));
		PASCO_PASS(
		    pasco_tensor_alloc(&r32, PASCO_F32, 2, (int64_t[]){3, 3}));
		PASCO_PASS(
		    pasco_tensor_alloc(&r64, PASCO_F64, 2, (int64_t[]){3, 3}));
		PASCO_PASS(pasco_tensor_from(&ids, PASCO_I64, 1,
		    (int64_t[]){3}, id_list, sizeof(id_list)));
		for (int i = 0; i < 12; i++) {
			pasco_tensor_set(w32, i, (float) (0.5 - 0.1 * i));
			pasco_tensor_set(w64, i, (float) (0.5 - 0.1 * i));
		}
		PASCO_PASS(
		    pasci_store_var_create(s, "a", w32, err, sizeof(err)));
		PASCO_PASS(
		    pasci_store_var_create(s, "b", w64, err, sizeof(err)));
		for (int t = 1; t <= STEPS; t++) {
			for (int i = 0; i < 12; i++) {
				float x = (float) grad_at(t, i);
				pasco_tensor_set(g32, i, x);
				pasco_tensor_set(g64, i, x);
			}
			for (int i = 0; i < 9; i++) {
				float x = (float) grad_at(t + 7, i);
				pasco_tensor_set(r32, i, x);
				pasco_tensor_set(r64, i, x);
			}
			PASCO_PASS(pasci_store_var_apply(
			    s, "a", &o, g32, err, sizeof(err)));
			PASCO_PASS(pasci_store_var_apply(
			    s, "b", &o, g64, err, sizeof(err)));
			PASCO_PASS(pasci_store_var_apply_sparse(
			    s, "a", &o, ids, r32, err, sizeof(err)));
			PASCO_PASS(pasci_store_var_apply_sparse(
			    s, "b", &o, ids, r64, err, sizeof(err)));
		}
		a = read_var(s, "a");
		b = read_var(s, "b");
		for (int i = 0; i < 12; i++) {
			double x = pasco_tensor_get(a, i);
			double y = pasco_tensor_get(b, i);
			cr_assert(fabs(x - y) <= 1e-5 * (1 + fabs(y)),
			    "%s element %d: f32 %.9g, f64 %.9g", d->keras, i,
			    x, y);
		}
		pasco_tensor_release(a);
		pasco_tensor_release(b);
		pasco_tensor_release(w32);
		pasco_tensor_release(w64);
		pasco_tensor_release(g32);
		pasco_tensor_release(g64);
		pasco_tensor_release(r32);
		pasco_tensor_release(r64);
		pasco_tensor_release(ids);
		pasci_store_destroy(s);
	}
}

/* Rows 1 and 3 of a 4x2 variable get STEPS sparse Adam updates (one with a
 * duplicate id); rows 0 and 2, and their slots, must not move. */
Test(optimizer, sparse_updates_touch_only_the_given_rows_and_their_slots)
{
	ps_store       *s;
	pasco_tensor   *w0, *ids, *rows, *now, *g;
	pasco_optimizer o = pasco_adam(0.05, false);
	ref             r[8];
	char            err[256];
	int64_t         id_list[] = {1, 3};
	PASCO_PASS(pasci_store_create(&s));
	PASCO_PASS(pasco_tensor_alloc(&w0, PASCO_F32, 2, (int64_t[]){4, 2}));
	for (int i = 0; i < 8; i++) {
		pasco_tensor_set(w0, i, i);
		ref_init(&r[i], &o, i);
	}
	PASCO_PASS(pasci_store_var_create(s, "e", w0, err, sizeof(err)));
	PASCO_PASS(pasco_tensor_from(
	    &ids, PASCO_I64, 1, (int64_t[]){2}, id_list, sizeof(id_list)));
	PASCO_PASS(pasco_tensor_alloc(&rows, PASCO_F32, 2, (int64_t[]){2, 2}));
	for (int t = 1; t <= STEPS; t++) {
		for (int k = 0; k < 2; k++) {
			for (int j = 0; j < 2; j++) {
				int e = (int) id_list[k] * 2 + j;
				pasco_tensor_set(
				    rows, k * 2 + j, (float) grad_at(t, e));
				ref_step(&r[e], &o, (float) grad_at(t, e));
			}
		}
		PASCO_PASS(pasci_store_var_apply_sparse(
		    s, "e", &o, ids, rows, err, sizeof(err)));
	}
	now = read_var(s, "e");
	for (int e = 0; e < 8; e++) {
		cr_assert_float_eq(pasco_tensor_get(now, e), (float) r[e].w,
		    1e-5, "element %d: %g vs %g", e, pasco_tensor_get(now, e),
		    r[e].w);
	}
	pasco_tensor_release(now);
	/* A first dense step now: rows 0 and 2 must behave as at t = 1 for
	 * their slots (zero moments), which shows the sparse steps left
	 * them alone; Adam's t, per variable, is 7 for every row. */
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F32, 2, (int64_t[]){4, 2}));
	for (int e = 0; e < 8; e++) {
		pasco_tensor_set(g, e, 0.2f);
	}
	PASCO_PASS(pasci_store_var_apply(s, "e", &o, g, err, sizeof(err)));
	now = read_var(s, "e");
	{
		double b1t = pow(0.9, 7), b2t = pow(0.999, 7);
		double m = 0.1 * 0.2f, v = 0.001 * 0.2f * 0.2f;
		double want = 0 - 0.05 * sqrt(1 - b2t) / (1 - b1t) * m /
		                      (sqrt(v) + 1e-7);
		cr_assert_float_eq(pasco_tensor_get(now, 0), want, 1e-5,
		    "row 0: %g vs %g", pasco_tensor_get(now, 0), want);
	}
	pasco_tensor_release(now);
	pasco_tensor_release(g);
	pasco_tensor_release(w0);
	pasco_tensor_release(ids);
	pasco_tensor_release(rows);
	pasci_store_destroy(s);
}

Test(optimizer, bad_hyperparameters_and_mixed_optimizers_are_rejected)
{
	ps_store       *s;
	pasco_tensor   *w, *g;
	char            err[256];
	pasco_optimizer bad = pasco_ftrl(0.1, -1, 0);
	PASCO_PASS(pasci_store_create(&s));
	PASCO_PASS(pasco_tensor_alloc(&w, PASCO_F32, 1, (int64_t[]){2}));
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F32, 1, (int64_t[]){2}));
	PASCO_PASS(pasci_store_var_create(s, "w", w, err, sizeof(err)));
	PASCO_FAIL(pasci_store_var_apply(s, "w", &bad, g, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "FTRL") != NULL, "%s", err);
	PASCO_PASS(pasci_store_var_apply(s, "w",
	    &(pasco_optimizer){.kind = PASCO_OPT_ADAM,
	        .learning_rate       = 0.1,
	        .beta_1              = 0.9,
	        .beta_2              = 0.999},
	    g, err, sizeof(err)));
	pasco_optimizer ada = pasco_adagrad(0.1);
	PASCO_FAIL(pasci_store_var_apply(s, "w", &ada, g, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "Adam slots") != NULL, "%s", err);
	pasco_tensor_release(w);
	pasco_tensor_release(g);
	pasci_store_destroy(s);
}
