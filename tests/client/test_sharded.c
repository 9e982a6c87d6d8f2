/*
 * Sharded variables and initializers over an in-process cluster: the
 * reference's scenarios 92-95 and 105, gather / scatter routing, and
 * initial values independent of the sharding.
 */
#include "helpers.h"

#include <math.h>
#include <string.h>

#include "coordinator_impl.h"
#include "variable_impl.h"

TestSuite(sharded, .timeout = 60);

static test_cluster    tc;
static pasco_strategy *strategy;

static void
start(int nps, const pasco_partitioner *p)
{
	pasco_strategy_options o = {.partitioner = p};
	test_cluster_start(&tc, nps, 1);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, &o));
}

static void
stop(void)
{
	pasco_strategy_destroy(strategy);
	test_cluster_stop(&tc);
}

static pasco_tensor *
iota(pasco_dtype dt, int32_t rank, const int64_t *shape)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, dt, rank, shape));
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(t, i, (double) i);
	}
	return t;
}

/* Reads shard i straight from its ps, under its own name. */
static pasco_tensor *
read_shard(pasco_variable *v, int32_t i, int32_t want_task)
{
	pasco_variable *part;
	pasco_tensor   *t;
	int32_t         task;
	int64_t         off, rows, shape[PASCO_MAX_RANK];
	PASCO_PASS(pasco_variable_shard(v, i, &task, &off, &rows));
	cr_assert_eq(task, want_task, "shard %d of %s is on ps %d, want ps %d",
	    i, pasco_variable_name(v), task, want_task);
	memcpy(shape, pasco_variable_shape(v), sizeof(shape));
	shape[0] = rows;
	PASCO_PASS(pasci_variable_new(&part, v->shards[i].name,
	    pasco_variable_dtype(v), pasco_variable_rank(v), shape, 5000));
	PASCO_PASS(pasci_variable_add_shard(
	    part, v->shards[i].name, task, 0, rows, strategy->ps[task]));
	PASCO_PASS(pasco_variable_read(part, &t));
	pasco_variable_free(part);
	return t;
}

static void
expect_values(const pasco_tensor *t, const double *want, int64_t n)
{
	cr_assert_eq(t->count, n);
	for (int64_t i = 0; i < n; i++) {
		cr_assert_eq(pasco_tensor_get(t, i), want[i],
		    "element %lld: %g != %g", (long long) i,
		    pasco_tensor_get(t, i), want[i]);
	}
}

Test(sharded, fixed_two_shards_split_rows_and_alternate_ps) /* 92 */
{
	pasco_partitioner p = pasco_fixed_shards_partitioner(2);
	pasco_variable   *a, *b;
	pasco_tensor     *va = iota(PASCO_I64, 2, (int64_t[]){5, 2});
	pasco_tensor     *vb = iota(PASCO_I64, 2, (int64_t[]){6, 1});
	pasco_tensor     *t;
	start(2, &p);
	PASCO_PASS(pasco_variable_create(&a, strategy, "a", va));
	PASCO_PASS(pasco_variable_create(&b, strategy, "b", vb));
	cr_assert_eq(pasco_variable_num_shards(a), 2);
	cr_assert_str_eq(a->shards[1].name, "a/part_1");
	t = read_shard(a, 0, 0);
	expect_values(t, (double[]){0, 1, 2, 3, 4, 5}, 6);
	pasco_tensor_release(t);
	t = read_shard(a, 1, 1);
	expect_values(t, (double[]){6, 7, 8, 9}, 4);
	pasco_tensor_release(t);
	t = read_shard(b, 0, 0);
	expect_values(t, (double[]){0, 1, 2}, 3);
	pasco_tensor_release(t);
	t = read_shard(b, 1, 1);
	expect_values(t, (double[]){3, 4, 5}, 3);
	pasco_tensor_release(t);
	PASCO_PASS(pasco_variable_read(a, &t)); /* the whole, concatenated */
	expect_values(t, (double[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 10);
	pasco_tensor_release(t);
	pasco_tensor_release(va);
	pasco_tensor_release(vb);
	pasco_variable_free(a);
	pasco_variable_free(b);
	stop();
}

Test(sharded, four_shards_take_turns_on_two_ps) /* 93 */
{
	pasco_partitioner p = pasco_fixed_shards_partitioner(4);
	pasco_variable   *v;
	pasco_tensor     *init       = iota(PASCO_F32, 1, (int64_t[]){10}), *t;
	double            want[4][3] = {{0, 1, 2}, {3, 4, 5}, {6, 7}, {8, 9}};
	int64_t           n[4]       = {3, 3, 2, 2};
	start(2, &p);
	PASCO_PASS(pasco_variable_create(&v, strategy, "v", init));
	for (int32_t i = 0; i < 4; i++) {
		t = read_shard(v, i, i % 2);
		expect_values(t, want[i], n[i]);
		pasco_tensor_release(t);
	}
	pasco_tensor_release(init);
	pasco_variable_free(v);
	stop();
}

Test(sharded, never_more_shards_than_rows) /* 94 */
{
	pasco_partitioner p = pasco_fixed_shards_partitioner(4);
	pasco_variable   *v;
	pasco_tensor     *init = iota(PASCO_F32, 1, (int64_t[]){3});
	start(2, &p);
	PASCO_PASS(pasco_variable_create(&v, strategy, "v", init));
	cr_assert_eq(pasco_variable_num_shards(v), 3);
	for (int32_t i = 0; i < 3; i++) {
		pasco_tensor *t = read_shard(v, i, i % 2);
		expect_values(t, (double[]){(double) i}, 1);
		pasco_tensor_release(t);
	}
	pasco_tensor_release(init);
	pasco_variable_free(v);
	stop();
}

Test(sharded, partition_to_one_gives_plain_variables) /* 95 */
{
	pasco_partitioner p = pasco_min_size_partitioner(64 << 20, 2, 0);
	pasco_variable   *v1, *v2;
	pasco_tensor     *init = iota(PASCO_F32, 1, (int64_t[]){10});
	start(2, &p);
	PASCO_PASS(pasco_variable_create(&v1, strategy, "v1", init));
	PASCO_PASS(pasco_variable_create(&v2, strategy, "v2", init));
	cr_assert_eq(pasco_variable_num_shards(v1), 1);
	cr_assert_str_eq(v1->shards[0].name, "v1");
	cr_assert_eq(pasco_variable_ps_task(v1), 0);
	cr_assert_eq(pasco_variable_ps_task(v2), 1);
	pasco_tensor_release(init);
	pasco_variable_free(v1);
	pasco_variable_free(v2);
	stop();
}

static int
bad_partition(void *arg, pasco_dtype dt, int32_t rank, const int64_t *shape,
    int64_t *result, int32_t *len)
{
	(void) arg;
	(void) dt;
	(void) rank;
	(void) shape;
	result[0] = 2;
	result[1] = 2;
	*len      = 2;
	return PASCO_OK;
}

Test(sharded, an_invalid_partitioner_result_fails_creation) /* 99 */
{
	pasco_partitioner p = pasco_custom_partitioner(bad_partition, NULL);
	pasco_variable   *v;
	pasco_tensor     *init = iota(PASCO_F32, 2, (int64_t[]){4, 2});
	start(1, &p);
	PASCO_FAIL(
	    pasco_variable_create(&v, strategy, "v", init), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_strategy_error(strategy), "variable_partitioner"),
	    "%s", pasco_strategy_error(strategy));
	pasco_tensor_release(init);
	stop();
}

Test(sharded, assign_and_assign_add_slice_across_uneven_shards) /* 105 */
{
	pasco_partitioner p = pasco_fixed_shards_partitioner(3);
	pasco_variable   *v, *again;
	pasco_tensor *zeros, *value = iota(PASCO_F64, 2, (int64_t[]){4, 2}),
	                     *t;
	start(2, &p);
	PASCO_PASS(
	    pasco_tensor_alloc(&zeros, PASCO_F64, 2, (int64_t[]){4, 2}));
	PASCO_PASS(pasco_variable_create(&v, strategy, "v", zeros));
	cr_assert_eq(v->shards[0].rows, 2); /* 2, 1, 1 */
	cr_assert_eq(v->shards[2].rows, 1);
	PASCO_PASS(pasco_variable_assign(v, value));
	PASCO_PASS(pasco_variable_assign_add(v, value));
	PASCO_PASS(pasco_variable_read(v, &t));
	expect_values(t, (double[]){0, 2, 4, 6, 8, 10, 12, 14}, 8);
	pasco_tensor_release(t);
	/* the same name and spec: the same layout, values kept */
	PASCO_PASS(pasco_variable_create(&again, strategy, "v", zeros));
	cr_assert_eq(pasco_variable_num_shards(again), 3);
	cr_assert_eq(pasco_variable_ps_task(again), pasco_variable_ps_task(v));
	PASCO_PASS(pasco_variable_read(again, &t));
	cr_assert_eq(pasco_tensor_get(t, 7), 14);
	pasco_tensor_release(t);
	/* a wrong shape is refused before anything is sent */
	t = iota(PASCO_F64, 1, (int64_t[]){8});
	PASCO_FAIL(pasco_variable_assign(v, t), PASCO_EINVAL);
	cr_assert(strstr(pasco_variable_error(v), "f64[4,2]"), "%s",
	    pasco_variable_error(v));
	pasco_tensor_release(t);
	pasco_tensor_release(zeros);
	pasco_tensor_release(value);
	pasco_variable_free(v);
	pasco_variable_free(again);
	stop();
}

Test(sharded, read_all_and_apply_gradients_act_on_many_variables_at_once)
{
	pasco_partitioner p   = pasco_fixed_shards_partitioner(3);
	pasco_optimizer   sgd = pasco_sgd(0.5, 0, false);
	pasco_variable   *v[3];
	pasco_tensor     *init[3], *grads[3], *out[3];
	int64_t           rows[3] = {4, 7, 1};
	start(2, &p);
	for (int k = 0; k < 3; k++) {
		char name[16];
		snprintf(name, sizeof(name), "m%d", k);
		init[k]  = iota(PASCO_F32, 2, (int64_t[]){rows[k], 2});
		grads[k] = iota(PASCO_F32, 2, (int64_t[]){rows[k], 2});
		PASCO_PASS(
		    pasco_variable_create(&v[k], strategy, name, init[k]));
	}
	cr_assert_eq(pasco_variable_num_shards(v[1]), 3);
	/* w - 0.5 * g with w = g = iota: 0.5 * iota */
	PASCO_PASS(pasco_variable_apply_gradients(3, v, &sgd, grads));
	PASCO_PASS(pasco_variable_read_all(3, v, out));
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(out[k]->count, rows[k] * 2);
		for (int64_t i = 0; i < out[k]->count; i++) {
			cr_assert_float_eq(pasco_tensor_get(out[k], i),
			    0.5 * (double) i, 1e-6, "m%d[%lld]", k,
			    (long long) i);
		}
		pasco_tensor_release(out[k]);
	}
	/* one gradient that does not fit: nothing is applied */
	pasco_tensor_release(grads[2]);
	grads[2] = iota(PASCO_F32, 1, (int64_t[]){5});
	PASCO_FAIL(
	    pasco_variable_apply_gradients(3, v, &sgd, grads), PASCO_EINVAL);
	cr_assert(strstr(pasco_variable_error(v[2]), "f32[1,2]"), "%s",
	    pasco_variable_error(v[2]));
	PASCO_PASS(pasco_variable_read_all(3, v, out));
	for (int k = 0; k < 3; k++) {
		cr_assert_float_eq(pasco_tensor_get(out[k], 1), 0.5, 1e-6);
		pasco_tensor_release(out[k]);
	}
	for (int k = 0; k < 3; k++) {
		pasco_tensor_release(init[k]);
		pasco_tensor_release(grads[k]);
		pasco_variable_free(v[k]);
	}
	stop();
}

/* 32 rows in shards of 11, 11, 10. */
static pasco_variable *
table(void)
{
	pasco_partitioner p = pasco_fixed_shards_partitioner(3);
	pasco_variable   *v;
	pasco_tensor     *init = iota(PASCO_F32, 2, (int64_t[]){32, 2});
	start(3, &p);
	PASCO_PASS(pasco_variable_create(&v, strategy, "emb", init));
	pasco_tensor_release(init);
	return v;
}

Test(sharded, gather_routes_ids_and_keeps_their_order)
{
	pasco_variable *v     = table();
	int64_t         ids[] = {31, 0, 10, 11, 22, 10, 21};
	pasco_tensor   *t, *out;
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I64, 1, (int64_t[]){7}, ids, sizeof(ids)));
	PASCO_PASS(pasco_variable_gather(v, t, &out));
	cr_assert_eq(out->rank, 2);
	cr_assert_eq(out->shape[0], 7);
	cr_assert_eq(out->shape[1], 2);
	for (int i = 0; i < 7; i++) {
		cr_assert_eq(
		    pasco_tensor_get(out, 2 * i), 2.0 * (double) ids[i]);
		cr_assert_eq(pasco_tensor_get(out, 2 * i + 1),
		    2.0 * (double) ids[i] + 1);
	}
	pasco_tensor_release(out);
	pasco_tensor_release(t);
	/* ids of any shape: the result is ids.shape + row shape */
	int32_t ids2[] = {1, 2, 3, 30};
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I32, 2, (int64_t[]){2, 2}, ids2, sizeof(ids2)));
	PASCO_PASS(pasco_variable_gather(v, t, &out));
	cr_assert(out->rank == 3 && out->shape[0] == 2 && out->shape[2] == 2);
	cr_assert_eq(pasco_tensor_get(out, 6), 60);
	pasco_tensor_release(out);
	pasco_tensor_release(t);
	pasco_variable_free(v);
	stop();
}

Test(sharded, out_of_range_ids_are_an_error)
{
	pasco_variable *v     = table();
	int64_t         ids[] = {3, 32};
	pasco_tensor   *t, *out, *rows;
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I64, 1, (int64_t[]){2}, ids, sizeof(ids)));
	PASCO_FAIL(pasco_variable_gather(v, t, &out), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_variable_error(v), "id 32 is out of range [0, 32)"),
	    "%s", pasco_variable_error(v));
	PASCO_PASS(pasco_tensor_alloc(&rows, PASCO_F32, 2, (int64_t[]){2, 2}));
	PASCO_FAIL(pasco_variable_scatter_add(v, t, rows), PASCO_EINVAL);
	pasco_tensor_release(rows);
	pasco_tensor_release(t);
	pasco_variable_free(v);
	stop();
}

Test(sharded, scatter_add_on_uneven_shards_matches_the_dense_result) /* 105 */
{
	pasco_variable *v     = table();
	int64_t         ids[] = {0, 10, 11, 12, 30, 31};
	double          dense[64];
	pasco_tensor   *t, *rows, *out;
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I64, 1, (int64_t[]){6}, ids, sizeof(ids)));
	rows = iota(PASCO_F32, 2, (int64_t[]){6, 2});
	PASCO_PASS(pasco_variable_scatter_add(v, t, rows));
	for (int i = 0; i < 64; i++) {
		dense[i] = i;
	}
	for (int k = 0; k < 6; k++) {
		dense[2 * ids[k]] += 2 * k;
		dense[2 * ids[k] + 1] += 2 * k + 1;
	}
	PASCO_PASS(pasco_variable_read(v, &out));
	expect_values(out, dense, 64);
	pasco_tensor_release(out);
	pasco_tensor_release(rows);
	pasco_tensor_release(t);
	pasco_variable_free(v);
	stop();
}

Test(sharded, sparse_sgd_sums_duplicates_and_touches_only_those_rows)
{
	pasco_variable *v     = table();
	int64_t         ids[] = {5, 20, 5};
	pasco_tensor   *t, *grads, *out;
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I64, 1, (int64_t[]){3}, ids, sizeof(ids)));
	PASCO_PASS(
	    pasco_tensor_alloc(&grads, PASCO_F32, 2, (int64_t[]){3, 2}));
	for (int i = 0; i < 6; i++) {
		pasco_tensor_set(grads, i, 1);
	}
	PASCO_PASS(pasco_variable_apply_sgd_sparse(v, 0.5, t, grads));
	PASCO_PASS(pasco_variable_read(v, &out));
	for (int64_t i = 0; i < 64; i++) {
		double want = (double) i - ((i / 2 == 5)       ? 1.0
		                               : (i / 2 == 20) ? 0.5
		                                               : 0);
		cr_assert_eq(pasco_tensor_get(out, i), want, "element %lld",
		    (long long) i);
	}
	pasco_tensor_release(out);
	pasco_tensor_release(grads);
	pasco_tensor_release(t);
	pasco_variable_free(v);
	stop();
}

/* A batch big enough for the radix sort (3,000 ids, many repeated, ids
 * up to 10,000: two passes): gather returns each id's row in order, and
 * scatter_add adds every repeat. */
Test(sharded, big_batches_with_repeats_gather_and_add_every_row)
{
	pasco_partitioner p    = pasco_fixed_shards_partitioner(3);
	int64_t           rows = 10000, n = 3000;
	pasco_variable   *v;
	pasco_tensor     *init = iota(PASCO_F64, 2, (int64_t[]){rows, 2});
	pasco_tensor     *ids, *out, *ones;
	double           *want = malloc(sizeof(double) * (size_t) rows * 2);
	uint64_t          seed = 5;
	start(3, &p);
	PASCO_PASS(pasco_variable_create(&v, strategy, "big", init));
	PASCO_PASS(pasco_tensor_alloc(&ids, PASCO_I64, 1, &n));
	PASCO_PASS(pasco_tensor_alloc(&ones, PASCO_F64, 2, (int64_t[]){n, 2}));
	for (int64_t i = 0; i < rows * 2; i++) {
		want[i] = (double) i;
	}
	for (int64_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005u + 1442695040888963407u;
		/* every third id from a hot set of 16, the rest anywhere */
		int64_t id = i % 3 == 0 ? (int64_t) (seed >> 60)
		                        : (int64_t) ((seed >> 33) % 10000);
		((int64_t *) ids->data)[i] = id;
		pasco_tensor_set(ones, 2 * i, 1);
		pasco_tensor_set(ones, 2 * i + 1, (double) (i % 5));
		want[2 * id] += 1;
		want[2 * id + 1] += (double) (i % 5);
	}
	PASCO_PASS(pasco_variable_gather(v, ids, &out));
	for (int64_t i = 0; i < n; i++) {
		int64_t id = ((int64_t *) ids->data)[i];
		cr_assert_eq(pasco_tensor_get(out, 2 * i), 2.0 * (double) id,
		    "row %lld (id %lld)", (long long) i, (long long) id);
	}
	pasco_tensor_release(out);
	PASCO_PASS(pasco_variable_scatter_add(v, ids, ones));
	PASCO_PASS(pasco_variable_read(v, &out));
	expect_values(out, want, rows * 2);
	pasco_tensor_release(out);
	/* Adagrad is not linear: each row must get one update, with its
	 * repeats' gradients summed, as TensorFlow's optimizers do. */
	pasco_optimizer ada = pasco_adagrad(0.1);
	double         *sum = calloc((size_t) rows * 2, sizeof(double));
	for (int64_t i = 0; i < n * 2; i++) {
		sum[2 * ((int64_t *) ids->data)[i / 2] + i % 2] +=
		    pasco_tensor_get(ones, i);
	}
	for (int64_t e = 0; e < rows * 2; e++) {
		want[e] -=
		    0.1 * sum[e] /
		    (sqrt(ada.initial_accumulator_value + sum[e] * sum[e]) +
		        ada.epsilon);
	}
	PASCO_PASS(pasco_variable_apply_gradient_sparse(v, &ada, ids, ones));
	PASCO_PASS(pasco_variable_read(v, &out));
	for (int64_t e = 0; e < rows * 2; e++) {
		cr_assert_float_eq(pasco_tensor_get(out, e), want[e], 1e-12,
		    "element %lld: %.15g, want %.15g", (long long) e,
		    pasco_tensor_get(out, e), want[e]);
	}
	free(sum);
	pasco_tensor_release(out);
	pasco_tensor_release(ones);
	pasco_tensor_release(ids);
	pasco_tensor_release(init);
	free(want);
	pasco_variable_free(v);
	stop();
}

/* The same initializer with 1 shard and with 7 gives identical values. */
static void
same_values_however_sharded(pasco_initializer init)
{
	pasco_partitioner seven = pasco_fixed_shards_partitioner(7);
	pasco_variable   *one, *many;
	pasco_tensor     *a, *b;
	int64_t           shape[] = {23, 5};
	test_cluster_start(&tc, 3, 1);
	pasco_strategy_options o1 = {0}, o7 = {.partitioner = &seven};
	pasco_strategy        *s1, *s7;
	PASCO_PASS(pasco_strategy_create(&s1, tc.cluster, &o1));
	PASCO_PASS(pasco_variable_create_init(
	    &one, s1, "x", PASCO_F64, 2, shape, &init));
	PASCO_PASS(pasco_variable_read(one, &a));
	pasco_variable_free(one);
	pasco_strategy_destroy(s1);
	PASCO_PASS(pasco_strategy_create(&s7, tc.cluster, &o7));
	PASCO_PASS(pasco_variable_create_init(
	    &many, s7, "y", PASCO_F64, 2, shape, &init));
	cr_assert_eq(pasco_variable_num_shards(many), 7);
	PASCO_PASS(pasco_variable_read(many, &b));
	cr_assert_eq(memcmp(a->data, b->data, a->nbytes), 0,
	    "initializer %d: values depend on the sharding", init.kind);
	pasco_tensor_release(a);
	pasco_tensor_release(b);
	pasco_variable_free(many);
	pasco_strategy_destroy(s7);
	test_cluster_stop(&tc);
}

Test(sharded, initial_values_do_not_depend_on_the_sharding)
{
	same_values_however_sharded(pasco_init_uniform(-1, 1, 7));
	same_values_however_sharded(pasco_init_normal(0, 1, 7));
	same_values_however_sharded(pasco_init_truncated_normal(0, 1, 7));
	same_values_however_sharded(pasco_init_glorot_uniform(7));
}

TestSuite(initializer, .timeout = 10);

static pasco_tensor *
filled(pasco_initializer init, int32_t rank, const int64_t *shape)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F64, rank, shape));
	PASCO_PASS(pasco_initializer_fill(&init, t, rank, shape, 0));
	return t;
}

Test(initializer, distributions_have_their_bounds_and_moments)
{
	int64_t       shape[] = {200, 100};
	pasco_tensor *u       = filled(pasco_init_uniform(2, 3, 1), 2, shape);
	pasco_tensor *n       = filled(pasco_init_normal(1, 2, 1), 2, shape);
	pasco_tensor *tn =
	    filled(pasco_init_truncated_normal(0, 1, 1), 2, shape);
	pasco_tensor *g    = filled(pasco_init_glorot_uniform(1), 2, shape);
	pasco_tensor *c    = filled(pasco_init_constant(4.5), 2, shape);
	double        mean = 0, var = 0, limit = sqrt(6.0 / 300), gmax = 0;
	for (int64_t i = 0; i < n->count; i++) {
		double x = pasco_tensor_get(u, i);
		cr_assert(x >= 2 && x < 3);
		mean += pasco_tensor_get(n, i) / (double) n->count;
		cr_assert_leq(fabs(pasco_tensor_get(tn, i)), 2.0);
		cr_assert_leq(fabs(pasco_tensor_get(g, i)), limit);
		gmax = fmax(gmax, fabs(pasco_tensor_get(g, i)));
		cr_assert_eq(pasco_tensor_get(c, i), 4.5);
	}
	for (int64_t i = 0; i < n->count; i++) {
		double d = pasco_tensor_get(n, i) - mean;
		var += d * d / (double) n->count;
	}
	cr_assert_float_eq(mean, 1.0, 0.05);
	cr_assert_float_eq(sqrt(var), 2.0, 0.05);
	cr_assert_gt(gmax, 0.9 * limit, "glorot spans its limit");
	pasco_tensor *u2 = filled(pasco_init_uniform(2, 3, 2), 2, shape);
	cr_assert_neq(memcmp(u->data, u2->data, u->nbytes), 0, "seeds differ");
	pasco_tensor *u1 = filled(pasco_init_uniform(2, 3, 1), 2, shape);
	cr_assert_eq(
	    memcmp(u->data, u1->data, u->nbytes), 0, "same seed, same values");
	pasco_tensor *t[] = {u, n, tn, g, c, u2, u1};
	for (int i = 0; i < 7; i++) {
		pasco_tensor_release(t[i]);
	}
}

Test(initializer, a_shard_that_does_not_fit_is_rejected)
{
	pasco_initializer init = pasco_init_ones();
	pasco_tensor     *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 2, (int64_t[]){3, 2}));
	PASCO_FAIL(pasco_initializer_fill(&init, t, 2, (int64_t[]){4, 2}, 2),
	    PASCO_EINVAL);
	PASCO_FAIL(pasco_initializer_fill(&init, t, 2, (int64_t[]){10, 3}, 0),
	    PASCO_EINVAL);
	/* an offset that would overflow the bounds check (a stranger's
	 * VAR_CREATE once passed it), and one for a scalar */
	PASCO_FAIL(
	    pasco_initializer_fill(&init, t, 2, (int64_t[]){10, 2}, INT64_MAX),
	    PASCO_EINVAL);
	PASCO_PASS(pasco_initializer_fill(&init, t, 2, (int64_t[]){10, 2}, 7));
	cr_assert_eq(pasco_tensor_get(t, 5), 1.0);
	pasco_tensor_release(t);
}
