/*
 * Keras's gradient clipping (client/clip.c) through
 * pasco_variable_apply_gradients_mixed on a real ps cluster: a sharded
 * dense variable and a sharded table with a sparse gradient (a duplicate
 * id) in one call, with SGD at learning rate 1 so each variable moves by
 * minus its clipped gradient. The references are Keras 3's formulas
 * (optimizers/base_optimizer.py: _clip_by_norm, clip_by_global_norm,
 * ops.clip) on the dense gradients, written here.
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

TestSuite(clip, .timeout = 60);

#define WR 6 /* w: 6 x 2, 3 shards */
#define ER 5 /* e: 5 x 2, 2 shards */

typedef struct clip_run {
	test_cluster      tc;
	pasco_partitioner p;
	pasco_strategy   *s;
	pasco_variable   *v[2];
} clip_run;

static void
clip_start(clip_run *r)
{
	pasco_strategy_options o = {.partitioner = &r->p};
	pasco_tensor          *t;
	r->p = pasco_fixed_shards_partitioner(3);
	test_cluster_start(&r->tc, 2, 1);
	PASCO_PASS(pasco_strategy_create(&r->s, r->tc.cluster, &o));
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F64, 2, (int64_t[]){WR, 2}));
	PASCO_PASS(pasco_variable_create(&r->v[0], r->s, "w", t));
	pasco_tensor_release(t);
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F64, 2, (int64_t[]){ER, 2}));
	PASCO_PASS(pasco_variable_create(&r->v[1], r->s, "e", t));
	pasco_tensor_release(t);
}

static void
clip_stop(clip_run *r)
{
	pasco_variable_free(r->v[0]);
	pasco_variable_free(r->v[1]);
	pasco_strategy_destroy(r->s);
	test_cluster_stop(&r->tc);
}

static const int64_t ids_list[] = {3, 1, 3};

/* The dense gradient of w (gw) and of e (ge: the sparse rows summed). */
static void
gradients(double scale, double *gw, double *ge, pasco_tensor **w,
    pasco_tensor **rows)
{
	PASCO_PASS(pasco_tensor_alloc(w, PASCO_F64, 2, (int64_t[]){WR, 2}));
	PASCO_PASS(pasco_tensor_alloc(rows, PASCO_F64, 2, (int64_t[]){3, 2}));
	memset(ge, 0, ER * 2 * sizeof(double));
	for (int i = 0; i < WR * 2; i++) {
		gw[i] = scale * (sin(1.3 * i) + 0.2);
		pasco_tensor_set(*w, i, gw[i]);
	}
	for (int k = 0; k < 3; k++) {
		for (int j = 0; j < 2; j++) {
			double x = scale * (0.7 - 0.4 * k + 0.3 * j);
			pasco_tensor_set(*rows, k * 2 + j, x);
			ge[ids_list[k] * 2 + j] += x;
		}
	}
}

static double
norm_of(const double *g, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++) {
		s += g[i] * g[i];
	}
	return sqrt(s);
}

/* Applies once with opt (SGD, lr 1) and checks that each variable moved
 * by minus the reference's clipped gradient. */
static void
check(pasco_optimizer opt, double scale, const char *what)
{
	clip_run      r;
	double        gw[WR * 2], ge[ER * 2], n_w, n_e, total;
	pasco_tensor *w, *rows, *ids, *got;
	clip_start(&r);
	gradients(scale, gw, ge, &w, &rows);
	PASCO_PASS(pasco_tensor_from(
	    &ids, PASCO_I64, 1, (int64_t[]){3}, ids_list, sizeof(ids_list)));
	PASCO_PASS(pasco_variable_apply_gradients_mixed(2, r.v, &opt,
	    (const pasco_tensor *[]){NULL, ids},
	    (const pasco_tensor *const[]){w, rows}));
	n_w   = norm_of(gw, WR * 2);
	n_e   = norm_of(ge, ER * 2);
	total = sqrt(n_w * n_w + n_e * n_e);
	for (int v = 0; v < 2; v++) {
		double *g = v == 0 ? gw : ge, n = v == 0 ? n_w : n_e;
		int     count = v == 0 ? WR * 2 : ER * 2;
		PASCO_PASS(pasco_variable_read(r.v[v], &got));
		for (int i = 0; i < count; i++) {
			double want = g[i];
			if (opt.clipnorm > 0) {
				want = g[i] * opt.clipnorm /
				       fmax(n, opt.clipnorm);
			} else if (opt.global_clipnorm > 0) {
				want =
				    g[i] * opt.global_clipnorm *
				    fmin(1 / total, 1 / opt.global_clipnorm);
			} else if (opt.clipvalue > 0) {
				want = fmin(
				    fmax(g[i], -opt.clipvalue), opt.clipvalue);
			}
			cr_assert_float_eq(pasco_tensor_get(got, i), -want,
			    1e-12, "%s: %s[%d] moved by %.15g, want %.15g",
			    what, v == 0 ? "w" : "e", i,
			    -pasco_tensor_get(got, i), want);
		}
		pasco_tensor_release(got);
	}
	pasco_tensor_release(w);
	pasco_tensor_release(rows);
	pasco_tensor_release(ids);
	clip_stop(&r);
}

Test(clip, clipnorm_scales_each_whole_gradient_to_its_bound)
{
	pasco_optimizer o = pasco_sgd(1, 0, false);
	o.clipnorm        = 0.5;
	check(o, 1, "clipnorm 0.5");
	/* e's summed rows (duplicate id 3) are what is clipped */
	o.clipnorm = 1.2;
	check(o, 0.4, "clipnorm 1.2, w under, e over");
}

Test(clip, global_clipnorm_scales_all_of_a_calls_gradients_together)
{
	pasco_optimizer o = pasco_sgd(1, 0, false);
	o.global_clipnorm = 0.7;
	check(o, 1, "global_clipnorm 0.7");
	o.global_clipnorm = 100;
	check(o, 1, "global_clipnorm 100 (under it: unchanged)");
}

Test(clip, clipvalue_clips_each_element_of_the_summed_gradient)
{
	pasco_optimizer o = pasco_sgd(1, 0, false);
	o.clipvalue       = 0.6;
	check(o, 1, "clipvalue 0.6");
}

Test(clip, two_clippings_at_once_are_refused_naming_them)
{
	clip_run        r;
	pasco_optimizer o = pasco_sgd(1, 0, false);
	pasco_tensor   *g;
	o.clipnorm  = 1;
	o.clipvalue = 1;
	clip_start(&r);
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F64, 2, (int64_t[]){WR, 2}));
	PASCO_FAIL(pasco_variable_apply_gradient(r.v[0], &o, g), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_variable_error(r.v[0]),
	        "only one of clipnorm, clipvalue and global_clipnorm") != NULL,
	    "%s", pasco_variable_error(r.v[0]));
	o.clipvalue = -1;
	o.clipnorm  = 0;
	PASCO_FAIL(pasco_variable_apply_gradient(r.v[0], &o, g), PASCO_EINVAL);
	cr_assert(strstr(pasco_variable_error(r.v[0]), ">= 0") != NULL, "%s",
	    pasco_variable_error(r.v[0]));
	pasco_tensor_release(g);
	clip_stop(&r);
}
