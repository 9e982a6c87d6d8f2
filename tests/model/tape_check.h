/* Helpers of the tape's tests (tests/model/test_tape*.c): random
 * tensors from a seed, a weighted sum that turns any node into a scalar,
 * and the check of a tape's gradients against central finite
 * differences. */
#ifndef PASCO_TEST_TAPE_CHECK_H
#define PASCO_TEST_TAPE_CHECK_H

#include "helpers.h"

#include <math.h>
#include <string.h>

/* A tensor of dtype with uniform values in [lo, hi) from seed. */
static inline pasco_tensor *
rnd(pasco_dtype dt, int32_t rank, const int64_t *shape, uint64_t seed,
    double lo, double hi)
{
	pasco_tensor *t;
	uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
	PASCO_PASS(pasco_tensor_alloc(&t, dt, rank, shape));
	for (int64_t i = 0; i < t->count; i++) {
		s = s * 6364136223846793005ULL + 1442695040888963407ULL;
		pasco_tensor_set(
		    t, i, lo + (hi - lo) * (double) (s >> 11) * 0x1p-53);
	}
	return t;
}

static inline pasco_tensor *
ids_of(int32_t rank, const int64_t *shape, const int64_t *v)
{
	pasco_tensor *t;
	int64_t       n = 1;
	for (int32_t d = 0; d < rank; d++) {
		n *= shape[d];
	}
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I64, rank, shape, v, (size_t) n * sizeof(int64_t)));
	return t;
}

/* sum(x * R), R fixed random of x's shape: a scalar whose gradient sends
 * a different weight to every element of x. */
static inline pasco_tnode *
weighted(pasco_tape *tp, pasco_tnode *x)
{
	const pasco_tensor *v = pasco_tnode_value(x);
	pasco_tensor       *r;
	pasco_tnode        *n;
	if (v == NULL) {
		return NULL;
	}
	r = rnd(v->dtype, v->rank, v->shape, 99, -1, 1);
	n = pasco_t_reduce_sum(tp,
	    pasco_t_mul(tp, x, pasco_tape_constant(tp, r)), PASCO_T_ALL_AXES);
	pasco_tensor_release(r);
	return n;
}

typedef pasco_tnode *(*build_fn)(
    pasco_tape *tp, pasco_tnode *const *s, void *ctx);

enum { DENSE = 0, TABLE = 1 };

/* Builds f on a fresh tape (training, seed 7) with srcs watched. */
static inline pasco_tnode *
build(pasco_tape **tp, build_fn f, void *ctx, size_t n, pasco_tensor **srcs,
    const int *kinds, pasco_tnode **nodes)
{
	pasco_tnode *loss;
	PASCO_PASS(pasco_tape_alloc(tp, true, 7));
	for (size_t k = 0; k < n; k++) {
		nodes[k] = kinds != NULL && kinds[k] == TABLE
		               ? pasco_tape_watch_table(*tp, srcs[k])
		               : pasco_tape_watch(*tp, srcs[k]);
	}
	loss = f(*tp, nodes, ctx);
	cr_assert(loss != NULL, "building the loss failed: %s",
	    pasco_tape_message(*tp));
	return loss;
}

static inline double
loss_at(build_fn f, void *ctx, size_t n, pasco_tensor **srcs, const int *kinds)
{
	pasco_tape  *tp;
	pasco_tnode *nodes[8];
	pasco_tnode *loss = build(&tp, f, ctx, n, srcs, kinds, nodes);
	double       v    = pasco_tensor_get(pasco_tnode_value(loss), 0);
	pasco_tape_free(tp);
	return v;
}

/* The analytic gradient of source k, dense (a sparse one scattered). */
static inline double
grad_elem(const pasco_tape_grad *g, const pasco_tensor *src, int64_t i)
{
	int64_t dim, row;
	if (g->dense != NULL) {
		return pasco_tensor_get(g->dense, i);
	}
	if (g->ids == NULL) {
		return 0; /* None: the loss does not depend on it */
	}
	dim = src->shape[1];
	row = i / dim;
	for (int64_t r = 0; r < g->ids->count; r++) {
		if (pasco_tensor_get(g->ids, r) == (double) row) {
			return pasco_tensor_get(g->rows, r * dim + i % dim);
		}
	}
	return 0;
}

/* Every element of every source: analytic against central differences. */
static inline void
check_fd(const char *what, build_fn f, void *ctx, size_t n,
    pasco_tensor **srcs, const int *kinds)
{
	const double    eps = 1e-6;
	pasco_tape     *tp;
	pasco_tnode    *nodes[8];
	pasco_tape_grad g[8];
	pasco_tnode    *loss = build(&tp, f, ctx, n, srcs, kinds, nodes);
	PASCO_PASS(pasco_tape_gradient(tp, loss, n, nodes, g));
	for (size_t k = 0; k < n; k++) {
		for (int64_t i = 0; i < srcs[k]->count; i++) {
			double keep = pasco_tensor_get(srcs[k], i), up, down;
			double num, ana = grad_elem(&g[k], srcs[k], i);
			pasco_tensor_set(srcs[k], i, keep + eps);
			up = loss_at(f, ctx, n, srcs, kinds);
			pasco_tensor_set(srcs[k], i, keep - eps);
			down = loss_at(f, ctx, n, srcs, kinds);
			pasco_tensor_set(srcs[k], i, keep);
			num = (up - down) / (2 * eps);
			cr_assert(fabs(num - ana) <= 1e-6 + 1e-5 * fabs(num),
			    "%s: d/d source %zu [%lld]: analytic %.10g, "
			    "numeric %.10g",
			    what, k, (long long) i, ana, num);
		}
	}
	pasco_tape_grad_fini(g, n);
	pasco_tape_free(tp);
}

static inline pasco_tensor *
r64(int32_t rank, const int64_t *shape, uint64_t seed)
{
	return rnd(PASCO_F64, rank, shape, seed, -1, 1);
}

static inline pasco_tensor *
binary_labels(pasco_dtype dt, int64_t n)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, dt, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		pasco_tensor_set(t, i, (double) ((i * 7 + 3) % 3 == 0));
	}
	return t;
}

static inline pasco_tensor *
class_labels(int64_t n, int64_t classes)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_I32, 1, &n));
	for (int64_t i = 0; i < n; i++) {
		pasco_tensor_set(t, i, (double) ((i * 5 + 1) % classes));
	}
	return t;
}

/* A cluster of nps in-process ps and one worker, and a strategy over it:
 * what the model tests that need variables start with. */
typedef struct setup {
	test_cluster    tc;
	pasco_strategy *s;
} setup;

static inline void
setup_start(setup *st, int nps)
{
	test_cluster_start(&st->tc, nps, 1);
	PASCO_PASS(pasco_strategy_create(&st->s, st->tc.cluster, NULL));
}

static inline void
setup_stop(setup *st)
{
	pasco_strategy_destroy(st->s);
	test_cluster_stop(&st->tc);
}

#endif
