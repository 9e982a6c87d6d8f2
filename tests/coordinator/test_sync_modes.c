/*
 * The global step and the consistency modes (include/pasco/optimizer.h)
 * over in-process clusters: Adam's t from the global step makes a sparse
 * run independent of the sharding; BSP applies the average of N gradients
 * once per round and drops stale ones; SSP drops a gradient older than s
 * and applies one within s; ASP counts every apply; a partial BSP round is
 * applied by a flush; bad configurations are refused with a message; the
 * mode travels with the global step to a step function; the global step
 * is saved and restored by checkpoints.
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "variable_impl.h"

TestSuite(sync_modes, .timeout = 60);

typedef struct setup {
	test_cluster      tc;
	pasco_partitioner p;
	pasco_strategy   *s;
	pasco_variable   *gs;
} setup;

static void
setup_start(setup *st, int nps, int shards, pasco_consistency mode,
    int32_t replicas, int32_t staleness)
{
	pasco_strategy_options o = {.partitioner = shards > 1 ? &st->p : NULL,
	    .consistency                         = mode,
	    .replicas_to_aggregate               = replicas,
	    .staleness                           = staleness};
	st->p                    = pasco_fixed_shards_partitioner(shards);
	test_cluster_start(&st->tc, nps, 1);
	PASCO_PASS(pasco_strategy_create(&st->s, st->tc.cluster, &o));
	PASCO_PASS(pasco_strategy_global_step(st->s, &st->gs));
}

static void
setup_stop(setup *st)
{
	pasco_variable_free(st->gs);
	pasco_strategy_destroy(st->s);
	test_cluster_stop(&st->tc);
}

static pasco_variable *
zeros(setup *st, const char *name, int64_t n)
{
	pasco_variable   *v;
	pasco_initializer z = pasco_init_zeros();
	PASCO_PASS(pasco_variable_create_init(
	    &v, st->s, name, PASCO_F32, 1, (int64_t[]){n}, &z));
	return v;
}

static pasco_tensor *
vec(int64_t n, const float *x)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_F32, 1, &n, x, sizeof(float) * (size_t) n));
	return t;
}

static int64_t
read_step(pasco_variable *gs)
{
	return (int64_t) test_read_scalar(gs);
}

/* Applies g to v with SGD(lr 0.1) through gs, after reading gs when read
 * is set (the version of the step's parameters). */
static int
apply(pasco_variable *v, pasco_variable *gs, float g0, float g1)
{
	pasco_optimizer sgd = pasco_sgd(0.1, 0, false);
	pasco_tensor   *g   = vec(2, (float[]){g0, g1});
	int             rv;
	sgd.iterations = gs;
	rv             = pasco_variable_apply_gradient(v, &sgd, g);
	pasco_tensor_release(g);
	return rv;
}

static void
assert_vec(pasco_variable *v, double x0, double x1)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_variable_read(v, &t));
	cr_assert_float_eq(pasco_tensor_get(t, 0), x0, 1e-6, "got %g want %g",
	    pasco_tensor_get(t, 0), x0);
	cr_assert_float_eq(pasco_tensor_get(t, 1), x1, 1e-6, "got %g want %g",
	    pasco_tensor_get(t, 1), x1);
	pasco_tensor_release(t);
}

/* 10 sparse Adam steps on a [6, 2] table in `shards` shards; the ids of
 * a step leave some shards out. */
static void
sparse_adam(
    int nps, int shards, bool global, pasco_tensor **out, int64_t *steps)
{
	setup             st;
	pasco_variable   *emb;
	pasco_initializer u    = pasco_init_uniform(-0.5, 0.5, 3);
	pasco_optimizer   adam = pasco_adam(0.1, false);
	setup_start(&st, nps, shards, PASCO_ASP, 0, 0);
	PASCO_PASS(pasco_variable_create_init(
	    &emb, st.s, "emb", PASCO_F32, 2, (int64_t[]){6, 2}, &u));
	cr_assert_eq(pasco_variable_num_shards(emb), shards);
	adam.iterations = global ? st.gs : NULL;
	for (int i = 0; i < 10; i++) {
		int64_t       ids[2] = {i % 6, (i * 5) % 2};
		float         g[4]   = {0.3f * (float) (i + 1), -0.2f, 0.5f,
		              0.1f * (float) (i % 3)};
		pasco_tensor *it, *gt;
		PASCO_PASS(pasco_tensor_from(
		    &it, PASCO_I64, 1, (int64_t[]){2}, ids, sizeof(ids)));
		PASCO_PASS(pasco_tensor_from(
		    &gt, PASCO_F32, 2, (int64_t[]){2, 2}, g, sizeof(g)));
		PASCO_PASS(
		    pasco_variable_apply_gradient_sparse(emb, &adam, it, gt));
		pasco_tensor_release(it);
		pasco_tensor_release(gt);
	}
	PASCO_PASS(pasco_variable_read(emb, out));
	*steps = read_step(st.gs);
	pasco_variable_free(emb);
	setup_stop(&st);
}

static double
max_diff(const pasco_tensor *a, const pasco_tensor *b)
{
	double d = 0;
	for (int64_t k = 0; k < a->count; k++) {
		d = fmax(
		    d, fabs(pasco_tensor_get(a, k) - pasco_tensor_get(b, k)));
	}
	return d;
}

Test(sync_modes, global_step_makes_sparse_adam_independent_of_shards)
{
	pasco_tensor *one, *three, *one_local, *three_local;
	int64_t       s1, s3, unused;
	sparse_adam(1, 1, true, &one, &s1);
	sparse_adam(3, 3, true, &three, &s3);
	cr_assert_eq(s1, 10, "the global step is %lld", (long long) s1);
	cr_assert_eq(s3, 10, "the global step is %lld", (long long) s3);
	cr_assert(max_diff(one, three) < 1e-6, "1 vs 3 shards differ by %g",
	    max_diff(one, three));
	/* without it each shard counts its own steps: they differ */
	sparse_adam(1, 1, false, &one_local, &unused);
	sparse_adam(3, 3, false, &three_local, &unused);
	cr_assert(max_diff(one_local, three_local) > 1e-3,
	    "per-shard counts differ by only %g",
	    max_diff(one_local, three_local));
	cr_assert(max_diff(one, one_local) < 1e-6); /* one shard: same t */
	pasco_tensor_release(one);
	pasco_tensor_release(three);
	pasco_tensor_release(one_local);
	pasco_tensor_release(three_local);
}

/* One step of a model with an embedding table (sparse gradient, 3 shards)
 * and a dense layer, applied by one pasco_variable_apply_gradients_mixed
 * call: the global step advances once per step, and the values are those
 * of separate sparse and dense applies with the same t (ids cover every
 * shard, so without the global step each shard's t is the step too). A
 * gradient that does not fit fails the call with nothing applied. */
Test(sync_modes, a_mixed_sparse_and_dense_apply_is_one_global_step)
{
	setup             st;
	pasco_initializer u = pasco_init_uniform(-0.5, 0.5, 3);
	pasco_variable   *emb, *w, *emb2, *w2;
	pasco_optimizer   adam = pasco_adam(0.1, false), local = adam;
	pasco_tensor     *a, *b, *bad;
	setup_start(&st, 2, 3, PASCO_ASP, 0, 0);
	PASCO_PASS(pasco_variable_create_init(
	    &emb, st.s, "emb", PASCO_F32, 2, (int64_t[]){6, 2}, &u));
	PASCO_PASS(pasco_variable_create_init(
	    &emb2, st.s, "emb2", PASCO_F32, 2, (int64_t[]){6, 2}, &u));
	cr_assert_eq(pasco_variable_num_shards(emb), 3);
	w               = zeros(&st, "w", 2);
	w2              = zeros(&st, "w2", 2);
	adam.iterations = st.gs;
	for (int i = 0; i < 5; i++) {
		int64_t       ids[4] = {i % 6, 5 - i % 2, 2, i % 6};
		float         rows[8], dense[2] = {0.2f * (float) i, -0.4f};
		pasco_tensor *it, *rt, *gt;
		for (int k = 0; k < 8; k++) {
			rows[k] = 0.1f * (float) (k + i) - 0.3f;
		}
		PASCO_PASS(pasco_tensor_from(
		    &it, PASCO_I64, 1, (int64_t[]){4}, ids, sizeof(ids)));
		PASCO_PASS(pasco_tensor_from(
		    &rt, PASCO_F32, 2, (int64_t[]){4, 2}, rows, sizeof(rows)));
		gt                           = vec(2, dense);
		pasco_variable     *vars[]   = {emb, w};
		const pasco_tensor *idlist[] = {it, NULL};
		pasco_tensor       *grads[]  = {rt, gt};
		PASCO_PASS(pasco_variable_apply_gradients_mixed(
		    2, vars, &adam, idlist, grads));
		cr_assert_eq(read_step(st.gs), i + 1);
		PASCO_PASS(pasco_variable_apply_gradient_sparse(
		    emb2, &local, it, rt));
		PASCO_PASS(pasco_variable_apply_gradient(w2, &local, gt));
		pasco_tensor_release(it);
		pasco_tensor_release(rt);
		pasco_tensor_release(gt);
	}
	PASCO_PASS(pasco_variable_read(emb, &a));
	PASCO_PASS(pasco_variable_read(emb2, &b));
	cr_assert(max_diff(a, b) < 1e-6, "embedding: mixed vs separate %g",
	    max_diff(a, b));
	pasco_tensor_release(b);
	PASCO_PASS(pasco_variable_read(w, &b));
	PASCO_PASS(pasco_variable_read(w2, &bad));
	cr_assert(max_diff(b, bad) < 1e-6, "dense: mixed vs separate %g",
	    max_diff(b, bad));
	pasco_tensor_release(b);
	pasco_tensor_release(bad);
	/* a dense gradient of the wrong shape: nothing applied, no step */
	{
		int64_t             ids[1] = {1};
		pasco_tensor       *it, *rt, *tb;
		pasco_variable     *vars[]   = {emb, w};
		const pasco_tensor *idlist[] = {NULL, NULL};
		PASCO_PASS(pasco_tensor_from(
		    &it, PASCO_I64, 1, (int64_t[]){1}, ids, sizeof(ids)));
		PASCO_PASS(pasco_tensor_from(&rt, PASCO_F32, 2,
		    (int64_t[]){1, 2}, (float[]){1, 1}, 2 * sizeof(float)));
		bad                   = vec(3, (float[]){1, 1, 1});
		idlist[0]             = it;
		pasco_tensor *grads[] = {rt, bad};
		PASCO_FAIL(pasco_variable_apply_gradients_mixed(
		               2, vars, &adam, idlist, grads),
		    PASCO_EINVAL);
		cr_assert_eq(read_step(st.gs), 5);
		PASCO_PASS(pasco_variable_read(emb, &tb));
		cr_assert(max_diff(a, tb) == 0, "the table moved");
		pasco_tensor_release(tb);
		pasco_tensor_release(it);
		pasco_tensor_release(rt);
		pasco_tensor_release(bad);
	}
	pasco_tensor_release(a);
	pasco_variable_free(emb);
	pasco_variable_free(emb2);
	pasco_variable_free(w);
	pasco_variable_free(w2);
	setup_stop(&st);
}

Test(sync_modes, asp_applies_every_gradient_and_counts_it)
{
	setup           st;
	pasco_variable *w;
	int64_t         value;
	setup_start(&st, 2, 1, PASCO_ASP, 0, 0);
	w = zeros(&st, "w", 2);
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(apply(w, st.gs, 1, -2)); /* no read needed */
	}
	assert_vec(w, -0.3, 0.6);
	cr_assert_eq(read_step(st.gs), 3);
	PASCO_PASS(pasco_variable_fetch_add(st.gs, 10, &value));
	cr_assert_eq(value, 13);
	cr_assert_eq(pasco_variable_dropped(st.gs), 0);
	pasco_variable_free(w);
	setup_stop(&st);
}

Test(sync_modes, bsp_applies_the_average_once_per_round)
{
	setup           st;
	pasco_variable *w, *late;
	setup_start(&st, 2, 2, PASCO_BSP, 2, 0);
	PASCO_PASS(pasco_strategy_global_step(st.s, &late));
	w = zeros(&st, "w", 2); /* two shards, on two ps */
	cr_assert_eq(pasco_variable_num_shards(w), 2);
	cr_assert_eq(read_step(late), 0); /* late read round 0 */
	double x0 = 0, x1 = 0;
	for (int k = 0; k < 3; k++) {
		float a = (float) (k + 1), b = (float) (2 * k - 1);
		cr_assert_eq(read_step(st.gs), k);
		PASCO_PASS(apply(w, st.gs, a, b));
		/* half a round: nothing applied, the step has not moved */
		assert_vec(w, x0, x1);
		cr_assert_eq(read_step(st.gs), k);
		PASCO_PASS(apply(w, st.gs, 3 * a, -b));
		x0 -= 0.1 * (a + 3 * a) / 2;
		x1 -= 0.1 * (b - b) / 2;
		assert_vec(w, x0, x1);
		cr_assert_eq(read_step(st.gs), k + 1);
	}
	/* computed from round 0's parameters: stale, dropped */
	PASCO_PASS(apply(w, late, 100, 100));
	assert_vec(w, x0, x1);
	cr_assert_eq(pasco_variable_dropped(late), 1);
	cr_assert_eq(read_step(st.gs), 3);
	/* a third gradient of a full round is dropped too */
	pasco_variable *third;
	PASCO_PASS(pasco_strategy_global_step(st.s, &third));
	cr_assert_eq(read_step(third), 3);
	PASCO_PASS(apply(w, st.gs, 1, 1));
	PASCO_PASS(apply(w, st.gs, 1, 1));
	PASCO_PASS(apply(w, third, 50, 50));
	cr_assert_eq(pasco_variable_dropped(third), 1);
	assert_vec(w, x0 - 0.1, x1 - 0.1);
	cr_assert_eq(read_step(st.gs), 4);
	pasco_variable_free(third);
	pasco_variable_free(late);
	pasco_variable_free(w);
	setup_stop(&st);
}

Test(sync_modes, bsp_flush_applies_a_partial_round)
{
	setup           st;
	pasco_variable *w;
	setup_start(&st, 1, 1, PASCO_BSP, 3, 0);
	w = zeros(&st, "w", 2);
	cr_assert_eq(read_step(st.gs), 0);
	PASCO_PASS(apply(w, st.gs, 1, 2));
	PASCO_PASS(apply(w, st.gs, 3, 4));
	assert_vec(w, 0, 0); /* 2 of 3: waiting, nobody blocked */
	PASCO_PASS(pasco_strategy_sync_flush(st.s));
	assert_vec(w, -0.1 * 2, -0.1 * 3); /* the average of the two */
	cr_assert_eq(read_step(st.gs), 1);
	PASCO_PASS(pasco_strategy_sync_flush(st.s)); /* nothing left */
	cr_assert_eq(read_step(st.gs), 1);
	/* the next round starts clean */
	PASCO_PASS(apply(w, st.gs, 1, 1));
	PASCO_PASS(apply(w, st.gs, 1, 1));
	PASCO_PASS(apply(w, st.gs, 1, 1));
	assert_vec(w, -0.3, -0.4);
	cr_assert_eq(read_step(st.gs), 2);
	pasco_variable_free(w);
	setup_stop(&st);
}

Test(sync_modes, ssp_drops_a_gradient_older_than_s)
{
	setup           st;
	pasco_variable *w, *old, *recent;
	setup_start(&st, 1, 1, PASCO_SSP, 0, 1);
	PASCO_PASS(pasco_strategy_global_step(st.s, &old));
	PASCO_PASS(pasco_strategy_global_step(st.s, &recent));
	w = zeros(&st, "w", 2);
	cr_assert_eq(read_step(old), 0);
	cr_assert_eq(read_step(st.gs), 0);
	PASCO_PASS(apply(w, st.gs, 1, 0)); /* step 1 */
	cr_assert_eq(read_step(recent), 1);
	cr_assert_eq(read_step(st.gs), 1);
	PASCO_PASS(apply(w, st.gs, 1, 0)); /* step 2 */
	/* read at 0, now 2: 2 steps old > s = 1: dropped */
	PASCO_PASS(apply(w, old, 0, 100));
	cr_assert_eq(pasco_variable_dropped(old), 1);
	assert_vec(w, -0.2, 0);
	cr_assert_eq(read_step(st.gs), 2);
	/* read at 1, now 2: within s: applied, step 3 */
	PASCO_PASS(apply(w, recent, 0, 1));
	cr_assert_eq(pasco_variable_dropped(recent), 0);
	assert_vec(w, -0.2, -0.1);
	cr_assert_eq(read_step(st.gs), 3);
	pasco_variable_free(old);
	pasco_variable_free(recent);
	pasco_variable_free(w);
	setup_stop(&st);
}

Test(sync_modes, a_step_must_read_the_global_step_under_bsp_and_ssp)
{
	setup           st;
	pasco_variable *w;
	setup_start(&st, 1, 1, PASCO_SSP, 0, 2);
	w = zeros(&st, "w", 2);
	PASCO_FAIL(apply(w, st.gs, 1, 1), PASCO_EPRECONDITION);
	cr_assert(
	    strstr(pasco_variable_error(w), "read the global step") != NULL,
	    "%s", pasco_variable_error(w));
	assert_vec(w, 0, 0);
	pasco_variable_free(w);
	setup_stop(&st);
}

Test(sync_modes, bad_configurations_are_refused_with_a_message)
{
	test_cluster           tc;
	pasco_strategy        *s;
	pasco_strategy_options bad[] = {{.consistency = (pasco_consistency) 7},
	    {.consistency = PASCO_SSP, .staleness = -1},
	    {.consistency = PASCO_BSP, .replicas_to_aggregate = -2}};
	const char *want[] = {"unknown consistency mode 7", "staleness (-1)",
	    "replicas_to_aggregate (-2)"};
	test_cluster_start(&tc, 1, 1);
	for (size_t i = 0; i < 3; i++) {
		PASCO_FAIL(pasco_strategy_create(&s, tc.cluster, &bad[i]),
		    PASCO_EINVAL);
		cr_assert_null(s);
		cr_assert(strstr(pasco_strategy_error(NULL), want[i]) != NULL,
		    "%s", pasco_strategy_error(NULL));
	}
	test_cluster_stop(&tc);

	/* a ps refuses a bad mode in a request, changing nothing */
	setup           st;
	pasco_variable *w;
	setup_start(&st, 1, 1, PASCO_BSP, 2, 0);
	w                    = zeros(&st, "w", 2);
	st.gs->sync.replicas = 0;
	cr_assert_eq(read_step(st.gs), 0);
	PASCO_FAIL(apply(w, st.gs, 1, 1), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_variable_error(w), "replicas_to_aggregate") != NULL,
	    "%s", pasco_variable_error(w));
	st.gs->sync.mode = 9;
	PASCO_FAIL(apply(w, st.gs, 1, 1), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_variable_error(w), "consistency mode 9") != NULL,
	    "%s", pasco_variable_error(w));
	assert_vec(w, 0, 0);
	cr_assert_eq(read_step(st.gs), 0);
	/* a fetch_add on a float variable */
	PASCO_FAIL(pasco_variable_fetch_add(w, 1, NULL), PASCO_EINVAL);
	pasco_variable_free(w);
	setup_stop(&st);
}

/* args: w, global step. Reads both, applies the gradient [1, 1]. */
PASCO_FUNCTION(sync_modes_step)
{
	pasco_variable *w, *gs;
	pasco_tensor   *vals[2] = {NULL, NULL}, *g;
	pasco_optimizer sgd     = pasco_sgd(0.1, 0, false);
	int             rv;
	if ((rv = pasco_call_variable(call, 0, &w)) != 0 ||
	    (rv = pasco_call_variable(call, 1, &gs)) != 0) {
		return rv;
	}
	pasco_variable *both[] = {w, gs};
	if ((rv = pasco_variable_read_all(2, both, vals)) != 0) {
		return rv;
	}
	g              = vec(2, (float[]){1, 1});
	sgd.iterations = gs;
	rv             = pasco_variable_apply_gradient(w, &sgd, g);
	pasco_tensor_release(g);
	pasco_tensor_release(vals[0]);
	pasco_tensor_release(vals[1]);
	return rv;
}

Test(sync_modes, the_mode_travels_with_the_global_step_to_a_step)
{
	setup                     st;
	pasco_variable           *w;
	pasco_coordinator        *c;
	pasco_coordinator_options co = {.window = 1};
	setup_start(&st, 2, 1, PASCO_BSP, 2, 0);
	w = zeros(&st, "w", 2);
	PASCO_PASS(pasco_coordinator_create(&c, st.s, &co));
	pasco_arg args[] = {pasco_arg_variable(w), pasco_arg_variable(st.gs)};
	for (int i = 0; i < 7; i++) { /* one worker, one at a time */
		PASCO_PASS(
		    pasco_schedule(c, "sync_modes_step", args, 2, NULL));
	}
	PASCO_PASS(pasco_join(c));
	cr_assert_eq(read_step(st.gs), 3); /* 3 rounds, the 7th waits */
	assert_vec(w, -0.3, -0.3);
	PASCO_PASS(pasco_strategy_sync_flush(st.s));
	cr_assert_eq(read_step(st.gs), 4);
	assert_vec(w, -0.4, -0.4);
	pasco_coordinator_destroy(c);
	pasco_variable_free(w);
	setup_stop(&st);
}

Test(sync_modes, the_global_step_is_checkpointed)
{
	char  dir[64] = "/tmp/pasco-gstep-XXXXXX", path[512], cmd[96];
	setup st;
	pasco_variable *again;
	int64_t         step;
	cr_assert_not_null(mkdtemp(dir));
	setenv("PASCO_CHECKPOINT_DIR", dir, 1);
	setup_start(&st, 2, 1, PASCO_ASP, 0, 0);
	cr_assert_eq(pasco_variable_dtype(st.gs), PASCO_I64);
	cr_assert_eq(pasco_variable_rank(st.gs), 0);
	PASCO_PASS(pasco_variable_fetch_add(st.gs, 42, NULL));
	PASCO_PASS(pasco_checkpoint_save(st.s, dir, 42, 0));
	PASCO_PASS(pasco_variable_fetch_add(st.gs, 8, NULL));
	cr_assert_eq(read_step(st.gs), 50);
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), &step));
	PASCO_PASS(pasco_checkpoint_restore(st.s, path, NULL));
	cr_assert_eq(read_step(st.gs), 42);
	/* asking again gives the same variable, its value left alone */
	PASCO_PASS(pasco_strategy_global_step(st.s, &again));
	cr_assert_eq(read_step(again), 42);
	pasco_variable_free(again);
	setup_stop(&st);
	unsetenv("PASCO_CHECKPOINT_DIR");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
