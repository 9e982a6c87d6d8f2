/*
 * The strategy (coordinator/strategy.c): connecting, placement of variables
 * and their shards round-robin over the ps tasks, idempotent re-creation,
 * partitioner limits, and the errors of a bad request, each with its
 * message. The round robin across a mix of sharded and plain variables,
 * and what a failed creation leaves, are tested here; the shards' values
 * in tests/client/test_sharded.c.
 */
#include "helpers.h"

#include <criterion/redirect.h>
#include <string.h>
#include <sys/stat.h>

#include "coordinator_impl.h"
#include "key.h"
#include "variable_impl.h"

TestSuite(strategy, .timeout = 60);

static test_cluster    tc;
static pasco_strategy *strategy;

static void
start_with(int nps, const pasco_partitioner *p)
{
	pasco_strategy_options o = {
	    .partitioner = p, .heartbeat_interval_ms = -1};
	test_cluster_start(&tc, nps, 1);
	PASCO_PASS(pasco_strategy_create(&strategy, tc.cluster, &o));
}

static void
stop(void)
{
	pasco_strategy_destroy(strategy);
	test_cluster_stop(&tc);
}

static pasco_variable *
make(const char *name, int32_t rank, const int64_t *shape)
{
	pasco_variable *v;
	pasco_tensor   *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, rank, shape));
	PASCO_PASS(pasco_variable_create(&v, strategy, name, t));
	pasco_tensor_release(t);
	return v;
}

static int32_t
task_of(const pasco_variable *v, int32_t shard)
{
	int32_t task;
	int64_t off, rows;
	PASCO_PASS(pasco_variable_shard(v, shard, &task, &off, &rows));
	return task;
}

static void
expect_error(const char *part)
{
	cr_assert(strstr(pasco_strategy_error(strategy), part) != NULL,
	    "want '%s' in: '%s'", part, pasco_strategy_error(strategy));
}

Test(strategy, counts_its_tasks)
{
	start_with(3, NULL);
	cr_assert_eq(pasco_strategy_num_ps(strategy), 3);
	cr_assert_eq(pasco_strategy_num_workers(strategy), 1);
	cr_assert_str_eq(pasco_strategy_error(strategy), "");
	stop();
	pasco_strategy_destroy(NULL);
}

Test(strategy, a_missing_or_invalid_cluster_is_einval)
{
	pasco_strategy *s = (pasco_strategy *) 1;
	pasco_cluster  *c;
	char            err[256];
	PASCO_FAIL(pasco_strategy_create(&s, NULL, NULL), PASCO_EINVAL);
	cr_assert_null(s);
	PASCO_PASS(pasco_cluster_parse_json(&c,
	    "{\"cluster\":{\"chief\":[\"inproc://c\"],"
	    "\"worker\":[\"inproc://w\"]}}",
	    err, sizeof(err)));
	s = (pasco_strategy *) 1;
	PASCO_FAIL(pasco_strategy_create(&s, c, NULL), PASCO_EINVAL);
	cr_assert_null(s);
	pasco_cluster_free(c);
}

/* Nobody listens at the ps's address: creation gives up at the connect
 * timeout and logs which task did not answer. */
Test(strategy, an_unreachable_task_times_out_and_is_named,
    .init = cr_redirect_stderr)
{
	pasco_strategy        *s = (pasco_strategy *) 1;
	pasco_cluster         *c;
	pasco_strategy_options o = {.connect_timeout_ms = 300};
	char                   json[256], err[256], want[128], log[4096];
	int                    port = test_free_port();
	double                 t0;
	size_t                 n;

	snprintf(json, sizeof(json),
	    "{\"cluster\":{\"chief\":[\"inproc://c%d\"],"
	    "\"ps\":[\"tcp://127.0.0.1:%d\"],\"worker\":[\"inproc://w%d\"]}}",
	    (int) getpid(), port, (int) getpid());
	PASCO_PASS(pasco_cluster_parse_json(&c, json, err, sizeof(err)));
	t0 = pasco_test_now();
	PASCO_FAIL(pasco_strategy_create(&s, c, &o), PASCO_ETIMEDOUT);
	cr_assert_lt(pasco_test_now() - t0, 5.0);
	cr_assert_null(s);
	fflush(stderr);
	n      = fread(log, 1, sizeof(log) - 1, cr_get_redirected_stderr());
	log[n] = 0;
	snprintf(want, sizeof(want),
	    "ps 0 at tcp://127.0.0.1:%d did not answer within 300 ms", port);
	cr_assert(
	    strstr(log, want) != NULL, "want '%s' in the log: %s", want, log);
	/* and the caller, who has no strategy, can ask */
	cr_assert(strstr(pasco_strategy_error(NULL), want) != NULL,
	    "pasco_strategy_error(NULL) = '%s'", pasco_strategy_error(NULL));
	pasco_cluster_free(c);
}

/* The counter advances once per shard, across variables, as TensorFlow's
 * round robin over ps tasks does. */
Test(strategy, shards_and_plain_variables_share_one_round_robin)
{
	pasco_partitioner p = pasco_fixed_shards_partitioner(2);
	pasco_variable   *a, *s, *b;
	start_with(3, &p);
	a = make("a", 1, (int64_t[]){4});
	s = make("s", 0, NULL); /* a scalar is never split */
	b = make("b", 2, (int64_t[]){5, 2});
	cr_assert_eq(pasco_variable_num_shards(a), 2);
	cr_assert_eq(task_of(a, 0), 0);
	cr_assert_eq(task_of(a, 1), 1);
	cr_assert_eq(pasco_variable_num_shards(s), 1);
	cr_assert_eq(task_of(s, 0), 2);
	cr_assert_eq(task_of(b, 0), 0);
	cr_assert_eq(task_of(b, 1), 1);
	cr_assert_str_eq(b->shards[0].name, "b/part_0");
	cr_assert_str_eq(b->shards[1].name, "b/part_1");
	cr_assert_str_eq(s->shards[0].name, "s");
	pasco_variable_free(a);
	pasco_variable_free(s);
	pasco_variable_free(b);
	stop();
}

Test(strategy, recreating_returns_the_same_layout_and_does_not_advance)
{
	pasco_partitioner p = pasco_fixed_shards_partitioner(3);
	pasco_variable   *a, *again, *next;
	int32_t           t1, t2;
	int64_t           off1, off2, rows1, rows2;
	start_with(2, &p);
	a     = make("emb", 2, (int64_t[]){7, 2});
	again = make("emb", 2, (int64_t[]){7, 2});
	cr_assert_eq(pasco_variable_num_shards(again), 3);
	for (int32_t i = 0; i < 3; i++) {
		PASCO_PASS(pasco_variable_shard(a, i, &t1, &off1, &rows1));
		PASCO_PASS(pasco_variable_shard(again, i, &t2, &off2, &rows2));
		cr_assert(t1 == t2 && off1 == off2 && rows1 == rows2,
		    "shard %d moved", i);
	}
	next = make("next", 0, NULL);
	cr_assert_eq(task_of(next, 0), 1, "3 shards took ps 0, 1, 0");
	pasco_variable_free(a);
	pasco_variable_free(again);
	pasco_variable_free(next);
	stop();
}

static int
bad_partition(void *arg, pasco_dtype dtype, int32_t rank, const int64_t *shape,
    int64_t *result, int32_t *result_len)
{
	(void) arg;
	(void) dtype;
	(void) shape;
	for (int32_t i = 0; i < rank; i++) {
		result[i] = 2;
	}
	*result_len = rank;
	return PASCO_OK;
}

Test(strategy, a_partitioner_error_names_the_variable_and_places_nothing)
{
	pasco_partitioner p = pasco_custom_partitioner(bad_partition, NULL);
	pasco_variable   *v = (pasco_variable *) 1, *next;
	pasco_tensor     *t;
	start_with(2, &p);
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 2, (int64_t[]){4, 4}));
	PASCO_FAIL(pasco_variable_create(&v, strategy, "m", t), PASCO_EINVAL);
	cr_assert_null(v);
	expect_error("partitioning 'm': ");
	next = make("plain", 0, NULL);
	cr_assert_eq(task_of(next, 0), 0, "the failure took no ps turn");
	pasco_tensor_release(t);
	pasco_variable_free(next);
	stop();
}

Test(strategy, more_than_1024_shards_are_refused)
{
	pasco_partitioner p = pasco_fixed_shards_partitioner(2000);
	pasco_variable   *v = (pasco_variable *) 1, *few;
	pasco_tensor     *t;
	start_with(1, &p);
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_U8, 1, (int64_t[]){3000}));
	PASCO_FAIL(
	    pasco_variable_create(&v, strategy, "big", t), PASCO_EINVAL);
	cr_assert_null(v);
	expect_error("'big' would have 2000 shards; at most 1024");
	/* never more shards than rows */
	few = make("few", 1, (int64_t[]){3});
	cr_assert_eq(pasco_variable_num_shards(few), 3);
	pasco_tensor_release(t);
	pasco_variable_free(few);
	stop();
}

Test(strategy, a_variable_needs_a_name_a_value_and_a_valid_spec)
{
	pasco_variable   *v    = (pasco_variable *) 1;
	pasco_tensor     *t    = test_scalar(PASCO_F32, 1);
	pasco_initializer init = pasco_init_zeros();
	pasco_initializer bad  = {.kind = (pasco_init_kind) 99};
	start_with(1, NULL);
	PASCO_FAIL(pasco_variable_create(&v, strategy, NULL, t), PASCO_EINVAL);
	cr_assert_null(v);
	expect_error("a variable needs a name");
	PASCO_FAIL(pasco_variable_create(&v, strategy, "", t), PASCO_EINVAL);
	PASCO_FAIL(
	    pasco_variable_create(&v, strategy, "x", NULL), PASCO_EINVAL);
	expect_error("'x' needs an initial value");
	PASCO_FAIL(pasco_variable_create_init(&v, strategy, "y", PASCO_F32, 1,
	               (int64_t[]){-2}, &init),
	    PASCO_EINVAL);
	expect_error("a valid dtype and shape");
	PASCO_FAIL(pasco_variable_create_init(
	               &v, strategy, "y", (pasco_dtype) 0, 0, NULL, &init),
	    PASCO_EINVAL);
	PASCO_FAIL(pasco_variable_create_init(
	               &v, strategy, "y", PASCO_F32, 0, NULL, &bad),
	    PASCO_EINVAL);
	expect_error("'y' needs a valid initializer");
	PASCO_FAIL(pasco_variable_create_init(
	               &v, strategy, "y", PASCO_F32, 0, NULL, NULL),
	    PASCO_EINVAL);
	cr_assert_null(v);
	pasco_tensor_release(t);
	stop();
}

Test(strategy, create_init_computes_values_on_the_ps_per_shard)
{
	pasco_partitioner p    = pasco_fixed_shards_partitioner(2);
	pasco_initializer init = pasco_init_constant(2.5);
	pasco_variable   *v, *again;
	pasco_tensor     *t;
	start_with(2, &p);
	PASCO_PASS(pasco_variable_create_init(
	    &v, strategy, "c", PASCO_F64, 2, (int64_t[]){3, 2}, &init));
	cr_assert_eq(pasco_variable_num_shards(v), 2);
	PASCO_PASS(pasco_variable_read(v, &t));
	cr_assert_eq(t->count, 6);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(pasco_tensor_get(t, i), 2.5);
	}
	pasco_tensor_release(t);
	/* re-creation through the other entry point finds it, by spec */
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F64, 2, (int64_t[]){3, 2}));
	PASCO_PASS(pasco_variable_create(&again, strategy, "c", t));
	pasco_tensor_release(t);
	PASCO_PASS(pasco_variable_read(again, &t));
	cr_assert_eq(pasco_tensor_get(t, 5), 2.5, "the value was left alone");
	pasco_tensor_release(t);
	PASCO_FAIL(pasco_variable_create_init(&again, strategy, "c", PASCO_F32,
	               2, (int64_t[]){3, 2}, &init),
	    PASCO_EEXIST);
	expect_error("'c' already exists as f64[3,2]; cannot create it as "
	             "f32[3,2]");
	pasco_variable_free(v);
	stop();
}

PASCO_DATASET(count_up)
{
	(void) ctx;
	return pasco_dataset_range(out, 0, 1000, 1);
}

/* args: iterator. Returns its next element. */
PASCO_FUNCTION(take_one)
{
	pasco_dataset *it;
	pasco_value   *e;
	int            rv;
	if ((rv = pasco_call_iterator(call, 0, &it)) != 0 ||
	    (rv = pasco_dataset_next(it, &e)) != 0) {
		return rv;
	}
	pasco_call_return(call, e);
	return PASCO_OK;
}

/* The next n elements of it, which must be first, first + 1, ... */
static void
take(pasco_coordinator *c, pasco_per_worker_iterator *it, int n, int first)
{
	pasco_arg args[] = {pasco_arg_iterator(it)};
	for (int i = 0; i < n; i++) {
		pasco_remote_value *rv;
		const pasco_value  *v;
		PASCO_PASS(pasco_schedule(c, "take_one", args, 1, &rv));
		PASCO_PASS(pasco_remote_value_fetch(rv, &v));
		cr_assert_eq(pasco_value_scalar(v), first + i,
		    "element %d of the iterator is %g", first + i,
		    pasco_value_scalar(v));
		pasco_remote_value_free(rv);
	}
}

/* A ps and a worker on loopback TCP, and the cluster as seen by a chief
 * at chief_port. */
static pasco_cluster *
tcp_cluster(int chief_port, int ps_port, int w_port)
{
	pasco_cluster *c;
	char           json[512], err[256];
	snprintf(json, sizeof(json),
	    "{\"cluster\": {\"chief\": [\"127.0.0.1:%d\"], \"ps\": "
	    "[\"127.0.0.1:%d\"], \"worker\": [\"127.0.0.1:%d\"]}}",
	    chief_port, ps_port, w_port);
	PASCO_PASS(pasco_cluster_parse_json(&c, json, err, sizeof(err)));
	return c;
}

/* Two chiefs on one cluster numbered their per-worker iterators alike,
 * so the second's release dropped the first's: a task serves one chief,
 * refuses another naming it, and the first trains on unharmed. */
Test(strategy, a_second_chief_is_refused_and_the_first_trains_on)
{
	int             port_a = test_free_port(), port_b = test_free_port();
	int             ps_port = test_free_port(), w_port = test_free_port();
	pasco_cluster  *a = tcp_cluster(port_a, ps_port, w_port);
	pasco_cluster  *b = tcp_cluster(port_b, ps_port, w_port);
	pasco_server   *ps, *worker;
	pasco_strategy *sa, *sb = NULL;
	pasco_coordinator         *ca;
	pasco_per_worker_dataset  *d;
	pasco_per_worker_iterator *it;
	char                       want[128];
	pasco_strategy_options     o = {.heartbeat_interval_ms = -1};

	PASCO_PASS(pasco_server_start(&ps, a, PASCO_ROLE_PS, 0));
	PASCO_PASS(pasco_server_start(&worker, a, PASCO_ROLE_WORKER, 0));
	PASCO_PASS(pasco_strategy_create(&sa, a, &o));
	PASCO_PASS(pasco_coordinator_create(&ca, sa, NULL));
	PASCO_PASS(pasco_per_worker_dataset_create(&d, ca, "count_up"));
	PASCO_PASS(pasco_per_worker_iterator_create(&it, d));
	take(ca, it, 3, 0);

	/* another chief (another address) on the same tasks */
	PASCO_FAIL(pasco_strategy_create(&sb, b, &o), PASCO_EUNAVAILABLE);
	cr_assert_null(sb);
	snprintf(want, sizeof(want), "already serves chief tcp://127.0.0.1:%d",
	    port_a);
	cr_assert(strstr(pasco_strategy_error(NULL), want) != NULL,
	    "want '%s' in '%s'", want, pasco_strategy_error(NULL));
	snprintf(
	    want, sizeof(want), "refused chief tcp://127.0.0.1:%d", port_b);
	cr_assert(strstr(pasco_strategy_error(NULL), want) != NULL,
	    "want '%s' in '%s'", want, pasco_strategy_error(NULL));

	/* the first chief's iterator goes on where it was */
	take(ca, it, 3, 3);
	PASCO_PASS(pasco_join(ca));
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	pasco_coordinator_destroy(ca);
	pasco_strategy_destroy(sa);
	pasco_server_stop(worker);
	pasco_server_stop(ps);
	pasco_cluster_free(a);
	pasco_cluster_free(b);
}

/* A key file of 32 bytes made from seed, mode 600, at path. */
static void
write_key_file(const char *path, uint8_t seed)
{
	uint8_t bytes[32];
	FILE   *f;
	for (int i = 0; i < 32; i++) {
		bytes[i] = (uint8_t) (seed + 29 * i);
	}
	cr_assert_not_null(f = fopen(path, "w"));
	cr_assert_eq(fwrite(bytes, 1, sizeof(bytes), f), sizeof(bytes));
	fclose(f);
	cr_assert_eq(chmod(path, 0600), 0);
}

/* A chief whose key file is not the servers' is told so in a second or
 * two, naming its key file (never the key), instead of waiting out the
 * connect timeout to say that no Pasco task has answered. */
Test(strategy, a_chief_with_another_key_fails_fast_naming_its_key_file)
{
	char            good[64], stale[64];
	int             ps_port = test_free_port(), w_port = test_free_port();
	pasco_cluster  *c = tcp_cluster(test_free_port(), ps_port, w_port);
	pasco_server   *ps, *worker;
	pasco_strategy *s = NULL;
	double          t0;

	snprintf(good, sizeof(good), "/tmp/pasco-key-good-%d", (int) getpid());
	snprintf(
	    stale, sizeof(stale), "/tmp/pasco-key-stale-%d", (int) getpid());
	write_key_file(good, 1);
	write_key_file(stale, 2);
	setenv("PASCO_KEY_FILE", good, 1);
	pasci_cluster_key_forget();
	PASCO_PASS(pasco_server_start(&ps, c, PASCO_ROLE_PS, 0));
	PASCO_PASS(pasco_server_start(&worker, c, PASCO_ROLE_WORKER, 0));
	setenv("PASCO_KEY_FILE", stale, 1); /* the chief's */
	pasci_cluster_key_forget();
	t0 = pasco_test_now();
	PASCO_FAIL(pasco_strategy_create(&s, c,
	               &(pasco_strategy_options){.connect_timeout_ms = 30000,
	                   .heartbeat_interval_ms                    = -1}),
	    PASCO_EUNAVAILABLE);
	cr_assert_lt(
	    pasco_test_now() - t0, 5.0, "took %.1f s", pasco_test_now() - t0);
	cr_assert_null(s);
	cr_assert(strstr(pasco_strategy_error(NULL),
	              "refused this process's cluster key") &&
	              strstr(pasco_strategy_error(NULL), stale) &&
	              strstr(pasco_strategy_error(NULL), "PASCO_KEY_FILE"),
	    "%s", pasco_strategy_error(NULL));
	pasco_server_stop(worker);
	pasco_server_stop(ps);
	pasco_cluster_free(c);
	unsetenv("PASCO_KEY_FILE");
	pasci_cluster_key_forget();
	unlink(good);
	unlink(stale);
}
