/*
 * Dynamic embedding tables against real ps processes (issue 22): rows made
 * on first touch and the same key always on the same ps, unseen keys in
 * evaluation, the admission count, eviction by age and by cap with exact
 * counts, sparse updates, key -1 as padding, and bad requests refused
 * with messages.
 */
#include "helpers.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "dyn_table.h"
#include "util.h"
#include "variable_impl.h"
#include "wire.h"

TestSuite(dynamic, .timeout = 120);

#define MAX_PS 3

static pid_t           pids[MAX_PS + 1];
static int             nprocs;
static pasco_cluster  *cluster;
static pasco_strategy *strategy;

/* Starts nps ps processes and a worker (PASCO_TASK_PROGRAM) on free
 * loopback ports, and a strategy over them as the chief. */
static void
start(int nps)
{
	const char *program = getenv("PASCO_TASK_PROGRAM");
	int         ports[MAX_PS + 2];
	char        hosts[512] = "", tf[1024], err[256];
	size_t      n          = 0;
	if (program == NULL) {
		cr_skip_test(
		    "PASCO_TASK_PROGRAM is not set (run through meson)");
	}
	for (int i = 0; i < nps + 2; i++) {
		ports[i] = test_free_port();
	}
	for (int i = 0; i < nps; i++) {
		n += (size_t) snprintf(hosts + n, sizeof(hosts) - n,
		    "%s\"127.0.0.1:%d\"", i ? "," : "", ports[i]);
	}
	nprocs = 0;
	for (int i = 0; i <= nps; i++) {
		bool  ps = i < nps;
		pid_t pid;
		snprintf(tf, sizeof(tf),
		    "{\"cluster\": {\"chief\": [\"127.0.0.1:%d\"], \"ps\": "
		    "[%s], "
		    "\"worker\": [\"127.0.0.1:%d\"]}, \"task\": {\"type\": "
		    "\"%s\", \"index\": %d}}",
		    ports[nps + 1], hosts, ports[nps], ps ? "ps" : "worker",
		    ps ? i : 0);
		if ((pid = fork()) == 0) {
			setenv("TF_CONFIG", tf, 1);
			setenv("PASCO_LOG", "error", 1);
			setenv("PASCO_MAX_VARIABLE_MB", "1", 1);
			execl(program, program, (char *) NULL);
			_exit(127);
		}
		cr_assert_gt(pid, 0);
		pids[nprocs++] = pid;
	}
	snprintf(tf, sizeof(tf),
	    "{\"cluster\": {\"chief\": [\"127.0.0.1:%d\"], \"ps\": [%s], "
	    "\"worker\": [\"127.0.0.1:%d\"]}, \"task\": {\"type\": \"chief\", "
	    "\"index\": 0}}",
	    ports[nps + 1], hosts, ports[nps]);
	PASCO_PASS(pasco_cluster_parse_json(&cluster, tf, err, sizeof(err)));
	PASCO_PASS(pasco_strategy_create(&strategy, cluster, NULL));
}

static void
stop(void)
{
	int status;
	pasco_strategy_destroy(strategy);
	pasco_cluster_free(cluster);
	for (int i = 0; i < nprocs; i++) {
		kill(pids[i], SIGTERM);
		waitpid(pids[i], &status, 0);
	}
}

static pasco_variable *
table(const char *name, const pasco_dynamic_options *o)
{
	pasco_variable *v;
	int rv = pasco_dynamic_variable_create(&v, strategy, name, o);
	cr_assert_eq(rv, PASCO_OK, "create %s: %s", name,
	    pasco_strategy_error(strategy));
	return v;
}

static pasco_tensor *
keys_of(int64_t n, const int64_t *k)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_I64, 1, &n));
	memcpy(t->data, k, sizeof(int64_t) * (size_t) n);
	return t;
}

static pasco_tensor *
lookup(pasco_variable *v, int64_t n, const int64_t *k)
{
	pasco_tensor *keys = keys_of(n, k), *rows;
	int           rv   = pasco_variable_gather(v, keys, &rows);
	cr_assert_eq(rv, PASCO_OK, "gather: %s", pasco_variable_error(v));
	pasco_tensor_release(keys);
	return rows;
}

static pasco_dynamic_stats
stats(pasco_variable *v)
{
	pasco_dynamic_stats s;
	int                 rv = pasco_variable_dynamic_stats(v, &s);
	cr_assert_eq(rv, PASCO_OK, "stats: %s", pasco_variable_error(v));
	return s;
}

/* The counts of v's share on ps task alone. */
static pasco_dynamic_stats
stats_on(pasco_variable *v, int32_t task)
{
	pasco_variable     *one;
	pasco_dynamic_stats s;
	PASCO_PASS(
	    pasci_variable_new(&one, v->name, PASCO_F32, 2, v->shape, 5000));
	PASCO_PASS(pasci_variable_add_shard(
	    one, v->name, task, 0, 0, v->shards[task].client));
	one->dynamic = true;
	PASCO_PASS(pasco_variable_dynamic_stats(one, &s));
	pasco_variable_free(one);
	return s;
}

/* SGD with learning rate 1 and a gradient of g everywhere on keys. */
static void
update(pasco_variable *v, int64_t n, const int64_t *k, float g)
{
	pasco_tensor   *keys = keys_of(n, k), *grad;
	pasco_optimizer sgd  = pasco_sgd(1.0, 0, false);
	int64_t         dim  = pasco_variable_shape(v)[1];
	PASCO_PASS(
	    pasco_tensor_alloc(&grad, PASCO_F32, 2, (int64_t[]){n, dim}));
	for (int64_t i = 0; i < n * dim; i++) {
		((float *) grad->data)[i] = g;
	}
	int rv = pasco_variable_apply_gradient_sparse(v, &sgd, keys, grad);
	cr_assert_eq(rv, PASCO_OK, "apply: %s", pasco_variable_error(v));
	pasco_tensor_release(keys);
	pasco_tensor_release(grad);
}

Test(dynamic, rows_are_made_on_first_touch_and_a_key_stays_on_its_ps)
{
	pasco_dynamic_options o = {.dim = 8};
	enum { N = 600 };
	int64_t       keys[N], per_ps[MAX_PS] = {0};
	uint64_t      x = 99;
	pasco_tensor *rows, *again;
	float         want[8];
	start(3);
	pasco_variable *v = table("users", &o);
	cr_assert(pasco_variable_is_dynamic(v));
	cr_assert_eq(pasco_variable_num_shards(v), 3);
	for (int i = 0; i < N; i++) {
		x = pasci_mix64(x);
		keys[i] =
		    i % 3 == 0 ? (int64_t) x : i; /* all 64 bits, and small */
		per_ps[pasci_dyn_shard((uint64_t) keys[i], 3)]++;
	}
	rows = lookup(v, N, keys);
	cr_assert_eq(rows->shape[0], N);
	cr_assert_eq(rows->shape[1], 8);
	for (int i = 0; i < N; i++) { /* Keras's default: U(-0.05, 0.05) */
		pasco_initializer u = pasco_init_uniform(-0.05, 0.05, 0);
		pasci_initializer_fill_key(&u, pasci_dyn_name_seed("users"),
		    (uint64_t) keys[i], want, 8);
		cr_assert_arr_eq(
		    (float *) rows->data + i * 8, want, sizeof(want));
	}
	cr_assert_eq(stats(v).created, N);
	cr_assert_eq(stats(v).rows, N);
	for (int32_t t = 0; t < 3; t++) {
		cr_assert_eq(stats_on(v, t).rows, per_ps[t],
		    "ps %d holds %lld rows, want %lld", t,
		    (long long) stats_on(v, t).rows, (long long) per_ps[t]);
	}
	update(v, N, keys, 1.0f);
	again = lookup(v, N, keys);
	for (int64_t i = 0; i < N * 8; i++) {
		cr_assert_float_eq(((float *) again->data)[i],
		    ((float *) rows->data)[i] - 1.0f, 1e-6);
	}
	cr_assert_eq(stats(v).created, N, "no key was made twice");
	pasco_tensor_release(rows);
	pasco_tensor_release(again);
	pasco_variable_free(v);
	stop();
}

Test(dynamic, unseen_keys_in_evaluation_read_the_default_and_insert_nothing)
{
	pasco_dynamic_options o = {
	    .dim = 4, .initializer = pasco_init_constant(0.5)};
	pasco_dynamic_options oz   = {.dim = 4, .default_zeros = true};
	int64_t               k[2] = {7, -7};
	start(2);
	pasco_variable *v = table("items", &o), *z = table("zitems", &oz);
	PASCO_PASS(pasco_variable_set_find_only(v, true));
	PASCO_PASS(pasco_variable_set_find_only(z, true));
	pasco_tensor *rows = lookup(v, 2, k), *zrows = lookup(z, 2, k);
	for (int i = 0; i < 8; i++) {
		cr_assert_float_eq(((float *) rows->data)[i], 0.5f, 0);
		cr_assert_float_eq(((float *) zrows->data)[i], 0.0f, 0);
	}
	cr_assert_eq(stats(v).rows, 0);
	cr_assert_eq(stats(z).rows, 0);
	PASCO_PASS(pasco_variable_set_find_only(z, false));
	pasco_tensor_release(lookup(z, 2, k));
	cr_assert_eq(stats(z).rows, 2, "training lookups insert");
	pasco_tensor_release(rows);
	pasco_tensor_release(zrows);
	pasco_variable_free(v);
	pasco_variable_free(z);
	stop();
}

Test(dynamic, a_key_is_admitted_at_its_count_and_rows_go_by_age_and_cap)
{
	pasco_dynamic_options adm = {
	    .dim = 2, .min_count = 3, .default_zeros = true};
	pasco_dynamic_options age = {.dim = 2, .evict_after = 2};
	pasco_dynamic_options cap = {.dim = 2, .max_rows_per_ps = 4};
	int64_t               k = 12345, a = 1, b = 2, ks[10];
	start(2);
	pasco_variable *va = table("adm", &adm), *vg = table("age", &age),
	               *vc = table("cap", &cap);

	for (int i = 1; i <= 2; i++) {
		pasco_tensor_release(lookup(va, 1, &k));
		cr_assert_eq(stats(va).refused, i);
		cr_assert_eq(stats(va).pending, 1);
		cr_assert_eq(stats(va).rows, 0);
	}
	pasco_tensor_release(lookup(va, 1, &k));
	cr_assert_eq(stats(va).rows, 1);
	cr_assert_eq(stats(va).pending, 0);

	/* a and b on the same ps, so one table's clock counts their steps */
	for (b = 2; pasci_dyn_shard((uint64_t) b, 2) !=
	            pasci_dyn_shard((uint64_t) a, 2);
	     b++) {
	}
	pasco_tensor_release(lookup(vg, 1, &a));
	pasco_tensor_release(lookup(vg, 1, &b));
	update(vg, 1, &a, 1); /* step 1 */
	update(vg, 1, &b, 1); /* 2 */
	update(vg, 1, &b, 1); /* 3: a unseen for 2 steps, kept */
	cr_assert_eq(stats(vg).rows, 2);
	update(vg, 1, &b, 1); /* 4: a unseen for 3, evicted */
	cr_assert_eq(stats(vg).rows, 1);
	cr_assert_eq(stats(vg).evicted_age, 1);

	/* ten keys of one ps through a cap of 4 */
	for (int64_t key = 0, n = 0; n < 10; key++) {
		if (pasci_dyn_shard((uint64_t) key, 2) == 0) {
			ks[n++] = key;
		}
	}
	for (int i = 0; i < 10; i++) {
		pasco_tensor_release(lookup(vc, 1, &ks[i]));
	}
	cr_assert_eq(stats_on(vc, 0).rows, 4);
	cr_assert_eq(stats_on(vc, 0).evicted_cap, 6);
	cr_assert_eq(stats_on(vc, 1).rows, 0);
	pasco_variable_free(va);
	pasco_variable_free(vg);
	pasco_variable_free(vc);
	stop();
}

/* pasco_variable_gather agrees with the tape: key -1 is padding, a row of
 * zeros, and never gets a row of its own on any ps. */
Test(dynamic, key_minus_one_is_padding_in_a_gather_as_on_the_tape)
{
	pasco_dynamic_options o    = {.dim = 4};
	int64_t               k[3] = {-1, 5, -1};
	float                 want[4], zeros[4] = {0};
	pasco_initializer     u = pasco_init_uniform(-0.05, 0.05, 0);
	start(2);
	pasco_variable *v    = table("pad", &o);
	pasco_tensor   *rows = lookup(v, 3, k);
	pasci_initializer_fill_key(&u, pasci_dyn_name_seed("pad"), 5, want, 4);
	cr_assert_arr_eq((float *) rows->data, zeros, sizeof(zeros));
	cr_assert_arr_eq((float *) rows->data + 4, want, sizeof(want));
	cr_assert_arr_eq((float *) rows->data + 8, zeros, sizeof(zeros));
	cr_assert_eq(stats(v).rows, 1);
	cr_assert_eq(stats(v).created, 1);
	update(v, 3, k, 1.0f);
	cr_assert_eq(stats(v).rows, 1);
	pasco_tensor_release(rows);
	pasco_variable_free(v);
	stop();
}

/* A raw request to ps 0 for v's table; the reply's status and message. */
static int
raw(pasco_variable *v, pasci_method m, pasco_tensor *t, char *msg, size_t len)
{
	pasci_wire_builder b;
	pasci_wire_msg     reply;
	int                rv;
	pasci_wire_builder_init(&b, m);
	b.hdr.name = v->name;
	if (t != NULL) {
		pasci_wire_add_tensor(&b, t, NULL);
	}
	rv = pasci_rpc_call(v->shards[0].client, &b, 5000, &reply, msg, len);
	pasci_wire_builder_fini(&b);
	if (rv == 0) {
		pasci_wire_msg_fini(&reply);
	}
	return rv;
}

Test(dynamic, bad_requests_are_refused_with_messages)
{
	pasco_dynamic_options o = {.dim = 4}, other = {.dim = 5};
	pasco_variable       *v, *w;
	pasco_tensor         *t, *rows;
	char                  msg[512] = "";
	int64_t               n        = 100000; /* 1.6 MB of rows > 1 MB */
	start(1);
	v = table("t", &o);

	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_I32, 1, (int64_t[]){2}));
	PASCO_FAIL(pasco_variable_gather(v, t, &rows), PASCO_EINVAL);
	cr_assert(strstr(pasco_variable_error(v), "i64") != NULL, "%s",
	    pasco_variable_error(v));
	PASCO_FAIL(raw(v, PASCI_METHOD_VAR_GATHER, t, msg, sizeof(msg)),
	    PASCO_EINVAL);
	cr_assert(strstr(msg, "1-D i64") != NULL, "%s", msg);
	pasco_tensor_release(t);

	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_I64, 1, &n));
	PASCO_FAIL(raw(v, PASCI_METHOD_VAR_GATHER, t, msg, sizeof(msg)),
	    PASCO_EINVAL);
	cr_assert(strstr(msg, "send fewer keys") != NULL, "%s", msg);
	pasco_tensor_release(t);
	cr_assert_eq(stats(v).rows, 0, "a refused lookup makes no row");

	PASCO_FAIL(raw(v, PASCI_METHOD_VAR_READ, NULL, msg, sizeof(msg)),
	    PASCO_EINVAL);
	cr_assert(strstr(msg, "dynamic embedding table") != NULL, "%s", msg);
	PASCO_FAIL(pasco_variable_read(v, &rows), PASCO_EINVAL);

	PASCO_FAIL(pasco_dynamic_variable_create(&w, strategy, "t", &other),
	    PASCO_EEXIST);
	cr_assert(
	    strstr(pasco_strategy_error(strategy), "another dim") != NULL,
	    "%s", pasco_strategy_error(strategy));
	other.dim         = 4;
	other.initializer = pasco_init_glorot_uniform(1);
	PASCO_FAIL(pasco_dynamic_variable_create(&w, strategy, "g", &other),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_strategy_error(strategy), "Glorot") != NULL,
	    "%s", pasco_strategy_error(strategy));
	pasco_variable_free(v);
	stop();
}
