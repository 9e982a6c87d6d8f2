/*
 * Dynamic embedding tables in checkpoints, against real ps processes: a
 * table trained with Adam (the global step as its t) and admission saved,
 * then restored into 1, 2 and 3 ps with keys, rows, slots, steps and
 * pending counts bit-identical and every key on the ps pasci_dyn_shard
 * picks; a killed ps recovered with its keys; a damaged table tensor
 * failing its checksum; inspect's listing; a name collision refused.
 */
#include "helpers.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "checkpoint_impl.h"
#include "dyn_table.h"
#include "safetensors.h"
#include "util.h"
#include "variable_impl.h"

TestSuite(checkpoint_dynamic, .timeout = 120);

#define MAX_PS 3
#define DIM 4
#define NKEYS 60

static pid_t           pids[MAX_PS + 1];
static int             ports[MAX_PS + 2];
static int             nps;
static char            dir[64], tf_ps[MAX_PS][1024];
static pasco_cluster  *cluster;
static pasco_strategy *strategy;

static const pasco_dynamic_options opts = {.dim = DIM,
    .initializer                                = {.kind = PASCO_INIT_UNIFORM,
                                       .minval           = -0.5,
                                       .maxval           = 0.5,
                                       .seed             = 0xfedcba9876543210ULL},
    .min_count                                  = 3,
    .default_zeros                              = true};

static void
make_dir(void)
{
	strcpy(dir, "/tmp/pasco-dynckpt-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void
remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

static pid_t
spawn(const char *tf)
{
	const char *program = getenv("PASCO_TASK_PROGRAM");
	pid_t       parent  = getpid(), pid;
	if ((pid = fork()) == 0) {
		/* a failed test leaves no task behind */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) {
			_exit(127);
		}
		setenv("TF_CONFIG", tf, 1);
		setenv("PASCO_LOG", "error", 1);
		setenv("PASCO_CHECKPOINT_DIR", dir, 1);
		execl(program, program, (char *) NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	return pid;
}

/* n ps processes and a worker on loopback ports, and a strategy over them
 * (recovering a lost ps from dir when recover is set). */
static void
start(int n, bool recover)
{
	char                   hosts[512] = "", tf[1024], err[256];
	size_t                 len        = 0;
	pasco_strategy_options so         = {.connect_timeout_ms = 20000,
	            .checkpoint_dir         = recover ? dir : NULL,
	            .ps_recovery_timeout_ms = 30000};
	if (getenv("PASCO_TASK_PROGRAM") == NULL) {
		cr_skip_test(
		    "PASCO_TASK_PROGRAM is not set (run through meson)");
	}
	nps = n;
	for (int i = 0; i < n + 2; i++) {
		ports[i] = test_free_port();
	}
	for (int i = 0; i < n; i++) {
		len += (size_t) snprintf(hosts + len, sizeof(hosts) - len,
		    "%s\"127.0.0.1:%d\"", i ? "," : "", ports[i]);
	}
	for (int i = 0; i <= n; i++) {
		bool ps = i < n;
		snprintf(ps ? tf_ps[i] : tf, sizeof(tf),
		    "{\"cluster\": {\"chief\": [\"127.0.0.1:%d\"], \"ps\": "
		    "[%s], \"worker\": [\"127.0.0.1:%d\"]}, \"task\": "
		    "{\"type\": \"%s\", \"index\": %d}}",
		    ports[n + 1], hosts, ports[n], ps ? "ps" : "worker",
		    ps ? i : 0);
		pids[i] = spawn(ps ? tf_ps[i] : tf);
	}
	snprintf(tf, sizeof(tf),
	    "{\"cluster\": {\"chief\": [\"127.0.0.1:%d\"], \"ps\": [%s], "
	    "\"worker\": [\"127.0.0.1:%d\"]}, \"task\": {\"type\": \"chief\", "
	    "\"index\": 0}}",
	    ports[n + 1], hosts, ports[n]);
	PASCO_PASS(pasco_cluster_parse_json(&cluster, tf, err, sizeof(err)));
	PASCO_PASS(pasco_strategy_create(&strategy, cluster, &so));
}

static void
stop(void)
{
	pasco_strategy_destroy(strategy);
	pasco_cluster_free(cluster);
	for (int i = 0; i <= nps; i++) {
		kill(pids[i], SIGTERM);
		waitpid(pids[i], NULL, 0);
	}
}

static pasco_variable *
table(void)
{
	pasco_variable *v;
	int rv = pasco_dynamic_variable_create(&v, strategy, "emb", &opts);
	cr_assert_eq(rv, PASCO_OK, "%s", pasco_strategy_error(strategy));
	return v;
}

static pasco_tensor *
keys_of(int64_t n, const int64_t *k)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_from(
	    &t, PASCO_I64, 1, &n, k, sizeof(int64_t) * (size_t) n));
	return t;
}

/* Rows of keys: a training lookup (counts towards admission) or not. */
static pasco_tensor *
lookup(pasco_variable *v, bool train, int64_t n, const int64_t *k)
{
	pasco_tensor *keys = keys_of(n, k), *rows;
	PASCO_PASS(pasco_variable_set_find_only(v, !train));
	int rv = pasco_variable_gather(v, keys, &rows);
	cr_assert_eq(rv, PASCO_OK, "gather: %s", pasco_variable_error(v));
	pasco_tensor_release(keys);
	return rows;
}

static int64_t train_keys[NKEYS];
/* P: one training lookup short of admission (min_count 3); Q: two. */
static const int64_t key_p = (int64_t) 0x9e3779b97f4a7c15ULL, key_q = -77;

/* Trains v: every key looked up 3 times (admitted at the third), then
 * Adam updates with the global step as t; P looked up twice, Q once. */
static void
train(pasco_variable *v, pasco_variable *gs)
{
	pasco_optimizer adam = pasco_adam(0.05, false);
	uint64_t        x    = 5;
	adam.iterations      = gs;
	for (int i = 0; i < NKEYS; i++) {
		x             = pasci_mix64(x);
		train_keys[i] = i % 2 ? (int64_t) x : i * 1000;
	}
	for (int r = 0; r < 6; r++) {
		pasco_tensor *rows = lookup(v, true, NKEYS, train_keys);
		pasco_tensor *keys = keys_of(NKEYS, train_keys), *grad;
		PASCO_PASS(pasco_tensor_alloc(
		    &grad, PASCO_F32, 2, (int64_t[]){NKEYS, DIM}));
		for (int64_t i = 0; i < NKEYS * DIM; i++) {
			((float *) grad->data)[i] =
			    0.1f * (float) ((i * 7 + r) % 11) - 0.5f;
		}
		int rv =
		    pasco_variable_apply_gradient_sparse(v, &adam, keys, grad);
		cr_assert_eq(
		    rv, PASCO_OK, "apply: %s", pasco_variable_error(v));
		pasco_tensor_release(rows);
		pasco_tensor_release(keys);
		pasco_tensor_release(grad);
	}
	pasco_tensor_release(lookup(v, true, 1, &key_p));
	pasco_tensor_release(lookup(v, true, 1, &key_p));
	pasco_tensor_release(lookup(v, true, 1, &key_q));
}

/* --- a table's state read back from a checkpoint's files --- */

typedef struct row_rec {
	int64_t key, last;
	float   vals[3][DIM]; /* value, m, v */
	int     file;
} row_rec;

typedef struct table_dump {
	row_rec *rows;
	int64_t  n;
	int64_t  pend[16][2]; /* key, count */
	int64_t  npend;
} table_dump;

static int
by_key(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
	return x < y ? -1 : x > y;
}

static const pasco_tensor *
find(const pasci_safetensors *f, const char *name)
{
	const pasco_tensor *t = pasci_safetensors_find(f, name);
	cr_assert_not_null(t, "no tensor %s", name);
	return t;
}

/* Every row and pending key of "emb" in checkpoint ckpt-<step> of dir,
 * sorted by key; each row's file must be the one pasci_dyn_shard picks
 * among nfiles. */
static void
dump(int64_t step, int nfiles, table_dump *d)
{
	memset(d, 0, sizeof(*d));
	d->rows = calloc(NKEYS + 8, sizeof(row_rec));
	for (int i = 0; i < nfiles; i++) {
		pasci_safetensors f;
		char              path[256], err[512];
		snprintf(path, sizeof(path), "%s/ckpt-%lld/ps-%d.safetensors",
		    dir, (long long) step, i);
		PASCO_PASS(pasci_safetensors_read(&f, path, err, sizeof(err)));
		const pasco_tensor *k        = find(&f, "emb/keys");
		const pasco_tensor *parts[3] = {find(&f, "emb/values"),
		    find(&f, "emb/m"), find(&f, "emb/v")};
		const pasco_tensor *last     = find(&f, "emb/last_step");
		const pasco_tensor *pk       = find(&f, "emb/pending_keys");
		const pasco_tensor *pc       = find(&f, "emb/pending_counts");
		cr_assert_null(pasci_safetensors_find(&f, "emb/vhat"));
		for (int64_t r = 0; r < k->count; r++) {
			row_rec *rr = &d->rows[d->n++];
			cr_assert_leq(d->n, NKEYS + 8);
			rr->key  = ((int64_t *) k->data)[r];
			rr->last = ((int64_t *) last->data)[r];
			rr->file = i;
			for (int p = 0; p < 3; p++) {
				memcpy(rr->vals[p],
				    (float *) parts[p]->data + r * DIM,
				    sizeof(float) * DIM);
			}
			cr_assert_eq(
			    pasci_dyn_shard((uint64_t) rr->key, nfiles), i,
			    "key %lld is in file %d", (long long) rr->key, i);
		}
		for (int64_t r = 0; r < pk->count; r++) {
			d->pend[d->npend][0] = ((int64_t *) pk->data)[r];
			d->pend[d->npend][1] = ((int64_t *) pc->data)[r];
			cr_assert_eq(
			    pasci_dyn_shard(
			        (uint64_t) d->pend[d->npend][0], nfiles),
			    i);
			d->npend++;
		}
		pasci_safetensors_fini(&f);
	}
	qsort(d->rows, (size_t) d->n, sizeof(row_rec), by_key);
	qsort(d->pend, (size_t) d->npend, sizeof(d->pend[0]), by_key);
}

static void
expect_same(const table_dump *a, const table_dump *b)
{
	cr_assert_eq(a->n, b->n, "%lld rows, want %lld", (long long) b->n,
	    (long long) a->n);
	for (int64_t i = 0; i < a->n; i++) {
		cr_assert_eq(a->rows[i].key, b->rows[i].key);
		cr_assert_eq(a->rows[i].last, b->rows[i].last);
		cr_assert_arr_eq(a->rows[i].vals, b->rows[i].vals,
		    sizeof(a->rows[i].vals), "key %lld: value or slots differ",
		    (long long) a->rows[i].key);
	}
	cr_assert_eq(a->npend, b->npend);
	cr_assert_arr_eq(a->pend, b->pend, sizeof(a->pend[0]) * a->npend);
}

/* The saved table: trained in 2 ps, saved at step 1 of dir. */
static void
save_trained(pasco_dynamic_stats *st, pasco_tensor **rows, table_dump *d)
{
	pasco_variable *v, *gs;
	start(2, false);
	v = table();
	PASCO_PASS(pasco_strategy_global_step(strategy, &gs));
	train(v, gs);
	cr_assert_eq(test_read_scalar(gs), 6);
	PASCO_PASS(pasco_variable_dynamic_stats(v, st));
	cr_assert_eq(st->rows, NKEYS);
	cr_assert_eq(st->pending, 2);
	*rows = lookup(v, false, NKEYS, train_keys);
	PASCO_PASS(pasco_checkpoint_save(strategy, dir, 1, 0));
	dump(1, 2, d);
	cr_assert_eq(d->n, NKEYS);
	cr_assert_eq(d->npend, 2);
	pasco_variable_free(v);
	pasco_variable_free(gs);
	stop();
}

Test(checkpoint_dynamic, restores_into_one_two_and_three_ps_bit_identical)
{
	pasco_dynamic_stats saved, st;
	pasco_tensor       *rows, *again, *p;
	table_dump          d0, d1;
	char                path[256];
	float               zeros[DIM] = {0};
	make_dir();
	save_trained(&saved, &rows, &d0);
	snprintf(path, sizeof(path), "%s/ckpt-1", dir);
	for (int n = 1; n <= 3; n++) {
		pasco_variable *v, *gs;
		/* 3 ps: requests of ~1 KB, a share split into many */
		pasci_ckpt_dyn_request_bytes = n == 3 ? 1024 : (64u << 20);
		start(n, false);
		v = table();
		PASCO_PASS(pasco_strategy_global_step(strategy, &gs));
		pasco_tensor_release(
		    lookup(v, true, 3, train_keys)); /* noise */
		int rv = pasco_checkpoint_restore(strategy, path, NULL);
		cr_assert_eq(
		    rv, PASCO_OK, "%s", pasco_strategy_error(strategy));
		cr_assert_eq(test_read_scalar(gs), 6);
		again = lookup(v, false, NKEYS, train_keys);
		cr_assert_arr_eq(again->data, rows->data, rows->nbytes,
		    "rows differ after a restore into %d ps", n);
		pasco_tensor_release(again);
		PASCO_PASS(pasco_variable_dynamic_stats(v, &st));
		cr_assert_eq(st.rows, NKEYS);
		cr_assert_eq(st.pending, 2);
		cr_assert_eq(st.step, saved.step);
		cr_assert_eq(st.created, n == 2 ? saved.created : NKEYS,
		    "created %lld", (long long) st.created);
		cr_assert_eq(st.refused, n == 2 ? saved.refused : 0);
		/* keys, rows, slots, steps, pending: saved again, the same */
		PASCO_PASS(pasco_checkpoint_save(strategy, dir, 10 + n, 0));
		dump(10 + n, n, &d1);
		expect_same(&d0, &d1);
		free(d1.rows);
		/* P is admitted by exactly one more lookup, Q is not */
		p = lookup(v, false, 1, &key_p);
		cr_assert_arr_eq(p->data, zeros, sizeof(zeros));
		pasco_tensor_release(p);
		pasco_tensor_release(lookup(v, true, 1, &key_p));
		pasco_tensor_release(lookup(v, true, 1, &key_q));
		p = lookup(v, false, 1, &key_p);
		cr_assert(memcmp(p->data, zeros, sizeof(zeros)) != 0,
		    "P was not admitted by its third lookup");
		pasco_tensor_release(p);
		p = lookup(v, false, 1, &key_q);
		cr_assert_arr_eq(p->data, zeros, sizeof(zeros));
		pasco_tensor_release(p);
		PASCO_PASS(pasco_variable_dynamic_stats(v, &st));
		cr_assert_eq(st.rows, NKEYS + 1);
		pasco_variable_free(v);
		pasco_variable_free(gs);
		stop();
	}
	pasci_ckpt_dyn_request_bytes = 64u << 20;
	pasco_tensor_release(rows);
	free(d0.rows);
	remove_dir();
}

/* The rows of "emb" that ps task of v holds. */
static int64_t
rows_on(pasco_variable *v, int32_t task)
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
	return s.rows;
}

Test(checkpoint_dynamic, a_restarted_ps_gets_its_keys_back, .timeout = 180)
{
	pasco_variable *v, *gs;
	pasco_tensor   *rows, *again;
	int64_t         on1 = 0;
	make_dir();
	start(2, true);
	v = table();
	PASCO_PASS(pasco_strategy_global_step(strategy, &gs));
	train(v, gs);
	rows = lookup(v, false, NKEYS, train_keys);
	PASCO_PASS(pasco_checkpoint_save(strategy, dir, 6, 0));
	for (int i = 0; i < NKEYS; i++) {
		on1 += pasci_dyn_shard((uint64_t) train_keys[i], 2) == 1;
	}
	cr_assert(on1 > 0 && on1 < NKEYS);
	cr_assert_eq(rows_on(v, 1), on1);
	kill(pids[1], SIGKILL);
	waitpid(pids[1], NULL, 0);
	pids[1] = spawn(tf_ps[1]);
	for (int i = 0;
	     i < 9000 && pasco_strategy_ps_recoveries(strategy, NULL) < 1;
	     i++) {
		usleep(10 * 1000);
	}
	cr_assert_eq(pasco_strategy_ps_recoveries(strategy, NULL), 1,
	    "ps 1 was not recovered in 90 s");
	cr_assert_eq(rows_on(v, 1), on1);
	cr_assert_eq(rows_on(v, 0), NKEYS - on1);
	again = lookup(v, false, NKEYS, train_keys);
	cr_assert_arr_eq(again->data, rows->data, rows->nbytes,
	    "rows differ after ps 1 was recovered");
	pasco_tensor_release(again);
	pasco_tensor_release(rows);
	pasco_variable_free(v);
	pasco_variable_free(gs);
	stop();
	remove_dir();
}

/* Flips one byte in the middle of tensor name of ckpt-<step>/file. */
static void
flip(int64_t step, const char *file, const char *name)
{
	pasci_safetensors f;
	char              path[256], err[512], cmd[1024];
	int               rv;
	snprintf(path, sizeof(path), "%s/ckpt-%lld/%s", dir, (long long) step,
	    file);
	PASCO_PASS(pasci_safetensors_read(&f, path, err, sizeof(err)));
	cr_assert_not_null(pasci_safetensors_find(&f, name));
	pasci_safetensors_fini(&f);
	snprintf(cmd, sizeof(cmd),
	    "/usr/bin/python3 -c 'import json, struct\n"
	    "p = \"%s\"\n"
	    "b = bytearray(open(p, \"rb\").read())\n"
	    "n = struct.unpack(\"<Q\", b[:8])[0]\n"
	    "s, t = json.loads(b[8:8 + n])[\"%s\"][\"data_offsets\"]\n"
	    "b[8 + n + (s + t) // 2] ^= 0x10\n"
	    "open(p, \"wb\").write(b)'",
	    path, name);
	rv = system(cmd);
	cr_assert_eq(rv, 0, "could not damage %s", name);
}

Test(checkpoint_dynamic, inspect_lists_tables_and_damage_fails_the_checksum)
{
	pasco_dynamic_stats st;
	pasco_tensor       *rows;
	table_dump          d;
	char                path[256], err[1024], *text = NULL, want[128];
	size_t              len = 0;
	int64_t             on0 = 0;
	FILE               *out;
	make_dir();
	save_trained(&st, &rows, &d);
	for (int64_t i = 0; i < d.n; i++) {
		on0 += d.rows[i].file == 0;
	}
	snprintf(path, sizeof(path), "%s/ckpt-1", dir);
	out = open_memstream(&text, &len);
	PASCO_PASS(pasco_checkpoint_inspect(path, out));
	fclose(out);
	snprintf(want, sizeof(want), "ps 0 in ps-0.safetensors: %lld row(s), ",
	    (long long) on0);
	cr_assert(strstr(text, "emb: dynamic table, dim 4, 60 row(s) in 2 "
	                       "file(s), adam slots") &&
	              strstr(text, want) && strstr(text, "slots m v\n"),
	    "%s", text);
	free(text);
	flip(1, "ps-1.safetensors", "emb/m");
	PASCO_FAIL(
	    pasco_checkpoint_verify(path, err, sizeof(err)), PASCO_EPROTO);
	cr_assert(strstr(err, "ps-1.safetensors") &&
	              strstr(err, "tensor 'emb/m' is damaged"),
	    "%s", err);
	start(1, false);
	pasco_variable *v = table();
	PASCO_FAIL(
	    pasco_checkpoint_restore(strategy, path, NULL), PASCO_EPROTO);
	cr_assert(strstr(pasco_strategy_error(strategy), "emb/m"), "%s",
	    pasco_strategy_error(strategy));
	pasco_variable_free(v);
	stop();
	pasco_tensor_release(rows);
	free(d.rows);
	remove_dir();
}

Test(checkpoint_dynamic, a_variable_named_like_a_table_tensor_is_refused)
{
	pasco_variable *v, *w;
	pasco_tensor   *t = test_scalar(PASCO_F32, 1);
	make_dir();
	start(1, false);
	v = table();
	PASCO_PASS(pasco_variable_create(&w, strategy, "emb/keys", t));
	PASCO_FAIL(pasco_checkpoint_save(strategy, dir, 1, 0), PASCO_EEXIST);
	cr_assert(strstr(pasco_strategy_error(strategy), "'emb/keys'") &&
	              strstr(pasco_strategy_error(strategy), "dynamic table"),
	    "%s", pasco_strategy_error(strategy));
	pasco_tensor_release(t);
	pasco_variable_free(v);
	pasco_variable_free(w);
	stop();
	remove_dir();
}
