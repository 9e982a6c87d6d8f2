/*
 * Checkpoints over in-process clusters: save, restore into other layouts
 * (scenario 101), optimizer slots, a crash mid-save, keeping the last N,
 * and the files read back by an independent reader (python3, stdlib only).
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TestSuite(checkpoint, .timeout = 60);

static char dir[64];

static void
make_dir(void)
{
	strcpy(dir, "/tmp/pasco-ckpt-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	/* the ps tasks started next may write under it, and nowhere else */
	setenv("PASCO_CHECKPOINT_DIR", dir, 1);
}

static void
remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* A cluster of nps ps tasks, a strategy splitting variables in `shards`. */
typedef struct setup {
	test_cluster      tc;
	pasco_partitioner p;
	pasco_strategy   *s;
} setup;

static void
setup_start(setup *st, int nps, int shards)
{
	pasco_strategy_options o = {.partitioner = &st->p};
	st->p                    = pasco_fixed_shards_partitioner(shards);
	test_cluster_start(&st->tc, nps, 1);
	PASCO_PASS(pasco_strategy_create(&st->s, st->tc.cluster, &o));
}

static void
setup_stop(setup *st)
{
	pasco_strategy_destroy(st->s);
	test_cluster_stop(&st->tc);
}

static pasco_variable *
var(setup *st, const char *name, int64_t rows, float base)
{
	pasco_variable *v;
	pasco_tensor   *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F32, 2, (int64_t[]){rows, 2}));
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(t, i, base + (float) i);
	}
	PASCO_PASS(pasco_variable_create(&v, st->s, name, t));
	pasco_tensor_release(t);
	return v;
}

static void
expect_values(pasco_variable *v, float base, int64_t n)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_variable_read(v, &t));
	cr_assert_eq(t->count, n);
	for (int64_t i = 0; i < n; i++) {
		cr_assert_eq(pasco_tensor_get(t, i), base + (float) i,
		    "element %lld", (long long) i);
	}
	pasco_tensor_release(t);
}

Test(checkpoint, restores_into_other_shard_and_ps_counts) /* 101 */
{
	setup           a, b;
	pasco_variable *v, *w;
	int64_t         step = 0;
	char            path[256];
	int             layouts[][2] = {{2, 2}, {3, 4}, {1, 1}, {2, 3}};
	make_dir();
	setup_start(&a, 2, 2);
	v = var(&a, "v", 4, 1); /* [1..8] as 4 rows of 2 */
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 7, 0));
	pasco_variable_free(v);
	setup_stop(&a);
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), &step));
	cr_assert_eq(step, 7);
	for (int k = 0; k < 4; k++) {
		setup_start(&b, layouts[k][0], layouts[k][1]);
		w = var(
		    &b, "v", 4, 100); /* different values before the restore */
		cr_assert_eq(pasco_variable_num_shards(w), layouts[k][1]);
		step = 0;
		PASCO_PASS(pasco_checkpoint_restore(b.s, path, &step));
		cr_assert_eq(step, 7);
		expect_values(w, 1, 8);
		pasco_variable_free(w);
		setup_stop(&b);
	}
	remove_dir();
}

Test(checkpoint, optimizer_slots_and_steps_are_restored)
{
	setup           a, b;
	pasco_variable *v, *w;
	pasco_tensor   *g, *va, *vb;
	pasco_optimizer adam = pasco_adam(0.1, false);
	char            path[256];
	make_dir();
	setup_start(&a, 2, 2);
	v = var(&a, "v", 4, 0);
	PASCO_PASS(pasco_tensor_alloc(&g, PASCO_F32, 2, (int64_t[]){4, 2}));
	for (int i = 0; i < 8; i++) {
		pasco_tensor_set(g, i, 0.1 * (i - 3));
	}
	PASCO_PASS(pasco_variable_apply_gradient(v, &adam, g));
	PASCO_PASS(pasco_variable_apply_gradient(v, &adam, g));
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 2, 0));
	PASCO_PASS(pasco_variable_apply_gradient(v, &adam, g)); /* step 3 */
	PASCO_PASS(pasco_variable_read(v, &va));
	/* the same third step from the checkpoint, in one shard */
	setup_start(&b, 1, 1);
	w = var(&b, "v", 4, 50);
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), NULL));
	PASCO_PASS(pasco_checkpoint_restore(b.s, path, NULL));
	PASCO_PASS(pasco_variable_apply_gradient(w, &adam, g));
	PASCO_PASS(pasco_variable_read(w, &vb));
	for (int i = 0; i < 8; i++) {
		cr_assert_float_eq(pasco_tensor_get(va, i),
		    pasco_tensor_get(vb, i), 1e-6, "element %d: %g vs %g", i,
		    pasco_tensor_get(va, i), pasco_tensor_get(vb, i));
	}
	pasco_tensor_release(g);
	pasco_tensor_release(va);
	pasco_tensor_release(vb);
	pasco_variable_free(v);
	pasco_variable_free(w);
	setup_stop(&b);
	setup_stop(&a);
	remove_dir();
}

Test(checkpoint, a_save_without_manifest_leaves_the_previous_latest)
{
	setup           a;
	pasco_variable *v;
	char            path[256], cmd[512];
	int64_t         step;
	make_dir();
	setup_start(&a, 2, 2);
	v = var(&a, "v", 4, 0);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 10, 0));
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 20, 0));
	/* a crash after the ps files, before the manifest */
	snprintf(cmd, sizeof(cmd), "rm %s/ckpt-20/manifest.json", dir);
	cr_assert_eq(system(cmd), 0);
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), &step));
	cr_assert_eq(step, 10);
	cr_assert(strstr(path, "ckpt-10") != NULL);
	pasco_variable_free(v);
	setup_stop(&a);
	remove_dir();
}

Test(checkpoint, the_manager_keeps_the_newest_n)
{
	setup           a;
	pasco_variable *v;
	char            path[256];
	struct stat     st;
	int64_t         step;
	make_dir();
	setup_start(&a, 1, 1);
	v = var(&a, "v", 2, 0);
	for (int s = 1; s <= 5; s++) {
		PASCO_PASS(pasco_checkpoint_save(a.s, dir, s, 2));
	}
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), &step));
	cr_assert_eq(step, 5);
	for (int s = 1; s <= 5; s++) {
		snprintf(path, sizeof(path), "%s/ckpt-%d", dir, s);
		cr_assert_eq(stat(path, &st) == 0, s >= 4, "ckpt-%d %s", s,
		    s >= 4 ? "is gone" : "was kept");
	}
	PASCO_FAIL(
	    pasco_checkpoint_latest("/nonexistent", path, sizeof(path), &step),
	    PASCO_ENOTFOUND);
	pasco_variable_free(v);
	setup_stop(&a);
	remove_dir();
}

Test(checkpoint, a_mismatched_variable_is_refused)
{
	setup           a, b;
	pasco_variable *v, *w;
	char            path[256];
	make_dir();
	setup_start(&a, 1, 1);
	v = var(&a, "v", 4, 0);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 1, 0));
	setup_start(&b, 1, 1);
	w = var(&b, "v", 5, 0);
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), NULL));
	PASCO_FAIL(pasco_checkpoint_restore(b.s, path, NULL), PASCO_EINVAL);
	cr_assert(strstr(pasco_strategy_error(b.s), "another dtype or shape"),
	    "%s", pasco_strategy_error(b.s));
	pasco_variable_free(v);
	pasco_variable_free(w);
	setup_stop(&b);
	setup_stop(&a);
	remove_dir();
}

Test(checkpoint, files_read_back_with_an_independent_reader_and_inspect)
{
	setup           a;
	pasco_variable *v;
	char            cmd[2048], path[256], *text = NULL;
	size_t          len = 0;
	FILE           *out;
	make_dir();
	setup_start(&a, 2, 2);
	v = var(&a, "emb", 4, 1);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 3, 0));
	/* emb/part_0 holds rows 0-1 (values 1..4) in ps-0.safetensors */
	snprintf(cmd, sizeof(cmd),
	    "/usr/bin/python3 -c 'import json, struct, sys\n"
	    "b = open(\"%s/ckpt-3/ps-0.safetensors\", \"rb\").read()\n"
	    "n = struct.unpack(\"<Q\", b[:8])[0]\n"
	    "h = json.loads(b[8:8 + n])\n"
	    "e = h[\"emb/part_0\"]\n"
	    "s, t = e[\"data_offsets\"]\n"
	    "v = struct.unpack(\"<4f\", b[8 + n + s:8 + n + t])\n"
	    "sys.exit(0 if e[\"dtype\"] == \"F32\" and e[\"shape\"] == [2, 2] "
	    "and v == (1, 2, 3, 4) else 1)'",
	    dir);
	cr_assert_eq(system(cmd), 0, "python3 could not read the values back");
	out = open_memstream(&text, &len);
	PASCO_PASS(pasco_checkpoint_inspect(dir, out));
	fclose(out);
	cr_assert(
	    strstr(text, "step 3") &&
	        strstr(text, "emb f32[4,2], 2 shard(s)") &&
	        strstr(text,
	            "emb/part_1: rows [2, 4) on ps 1 in ps-1.safetensors"),
	    "%s", text);
	free(text);
	snprintf(path, sizeof(path), "%s/ckpt-3/manifest.json", dir);
	cr_assert_eq(access(path, R_OK), 0);
	pasco_variable_free(v);
	setup_stop(&a);
	remove_dir();
}

/* A ps writes only under its checkpoint root; a chief restores only the
 * files of the checkpoint's own directory. */
Test(checkpoint, no_path_escapes_the_checkpoint_root)
{
	setup           a;
	pasco_variable *v;
	pasco_tensor   *t = test_scalar(PASCO_F32, 2);
	char            outside[128], path[256], cmd[512];
	make_dir();
	setup_start(&a, 1, 1);
	PASCO_PASS(pasco_variable_create(&v, a.s, "v", t));
	/* the root itself is fine */
	snprintf(path, sizeof(path), "%s/ok", dir);
	PASCO_PASS(pasco_checkpoint_save(a.s, path, 1, 1));
	/* a directory outside it, named outright or through .. or a link */
	strcpy(outside, "/tmp/pasco-outside-XXXXXX");
	cr_assert_not_null(mkdtemp(outside));
	snprintf(path, sizeof(path), "%s/c", outside);
	PASCO_FAIL(pasco_checkpoint_save(a.s, path, 1, 1), PASCO_EPERM);
	cr_assert(strstr(pasco_strategy_error(a.s), "outside this ps's "
	                                            "checkpoint root") != NULL,
	    "%s", pasco_strategy_error(a.s));
	snprintf(path, sizeof(path), "%s/../%s/c", dir, outside + 5);
	PASCO_FAIL(pasco_checkpoint_save(a.s, path, 1, 1), PASCO_EPERM);
	snprintf(cmd, sizeof(cmd), "ln -s %s %s/link", outside, dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/link/c", dir);
	PASCO_FAIL(pasco_checkpoint_save(a.s, path, 1, 1), PASCO_EPERM);
	/* nothing was written outside */
	snprintf(cmd, sizeof(cmd), "test -z \"$(find %s -type f)\"", outside);
	cr_assert_eq(system(cmd), 0, "a file was written outside the root");

	/* a manifest naming a file outside its directory is not followed */
	snprintf(cmd, sizeof(cmd),
	    "sed -i 's|\"file\":[[:space:]]*\"[^\"]*\"|\"file\": "
	    "\"../../etc/passwd\"|' "
	    "%s/ok/ckpt-1/manifest.json",
	    dir);
	cr_assert_eq(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/ok/ckpt-1", dir);
	cr_assert_neq(pasco_checkpoint_restore(a.s, path, NULL), PASCO_OK);
	cr_assert(strstr(pasco_strategy_error(a.s), "not a file of that "
	                                            "directory") != NULL,
	    "%s", pasco_strategy_error(a.s));
	pasco_variable_free(v);
	pasco_tensor_release(t);
	setup_stop(&a);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", outside);
	cr_assert_eq(system(cmd), 0);
	remove_dir();
}

Test(checkpoint, a_ps_without_a_root_refuses_checkpoints)
{
	setup           a;
	pasco_variable *v;
	pasco_tensor   *t = test_scalar(PASCO_F32, 2);
	char            path[128];
	make_dir();
	unsetenv("PASCO_CHECKPOINT_DIR");
	setup_start(&a, 1, 1);
	PASCO_PASS(pasco_variable_create(&v, a.s, "v", t));
	snprintf(path, sizeof(path), "%s/c", dir);
	PASCO_FAIL(
	    pasco_checkpoint_save(a.s, path, 1, 1), PASCO_EPRECONDITION);
	cr_assert(
	    strstr(pasco_strategy_error(a.s), "PASCO_CHECKPOINT_DIR") != NULL,
	    "%s", pasco_strategy_error(a.s));
	pasco_variable_free(v);
	pasco_tensor_release(t);
	setup_stop(&a);
	remove_dir();
}

/* Runs a python3 snippet (stdlib only) with DIR as its argument. */
static int
py(const char *code)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c '%s' %s", code, dir);
	return system(cmd);
}

/* Flips one byte in the middle of tensor `name` of file ckpt-<step>/file. */
static void
flip(int64_t step, const char *file, const char *name)
{
	char code[1024];
	snprintf(code, sizeof(code),
	    "import json, struct, sys\n"
	    "p = sys.argv[1] + \"/ckpt-%lld/%s\"\n"
	    "b = bytearray(open(p, \"rb\").read())\n"
	    "n = struct.unpack(\"<Q\", b[:8])[0]\n"
	    "s, t = json.loads(b[8:8 + n])[\"%s\"][\"data_offsets\"]\n"
	    "b[8 + n + (s + t) // 2] ^= 0x10\n"
	    "open(p, \"wb\").write(b)\n",
	    (long long) step, file, name);
	cr_assert_eq(py(code), 0, "could not damage %s", name);
}

/* Runs fn with stderr going to a string: the log it wrote. */
static char *
capture_stderr(int (*fn)(void *), void *arg, int *rv)
{
	char  *text = NULL;
	size_t len  = 0;
	FILE  *tmp  = tmpfile();
	int    saved;
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(tmp), 2);
	*rv = fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	len  = (size_t) ftell(tmp);
	text = calloc(len + 1, 1);
	rewind(tmp);
	cr_assert_eq(fread(text, 1, len, tmp), len);
	fclose(tmp);
	return text;
}

Test(checkpoint, a_damaged_tensor_is_named_and_nothing_is_restored)
{
	setup           a;
	pasco_variable *v, *w;
	char            path[256], err[512], *text = NULL;
	size_t          len = 0;
	FILE           *out;
	pasco_tensor   *t100;
	make_dir();
	setup_start(&a, 2, 2);
	v = var(&a, "v", 4, 1); /* v/part_0 on ps 0, v/part_1 on ps 1 */
	w = var(&a, "w", 2, 1);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 1, 0));
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), NULL));
	PASCO_PASS(pasco_checkpoint_verify(path, err, sizeof(err)));
	flip(1, "ps-1.safetensors", "v/part_1");
	PASCO_FAIL(
	    pasco_checkpoint_verify(path, err, sizeof(err)), PASCO_EPROTO);
	/* the variables change after the save: a restore would undo it */
	PASCO_PASS(pasco_tensor_alloc(&t100, PASCO_F32, 2, (int64_t[]){4, 2}));
	for (int i = 0; i < 8; i++) {
		pasco_tensor_set(t100, i, 100 + i);
	}
	PASCO_PASS(pasco_variable_assign(v, t100));
	PASCO_FAIL(pasco_checkpoint_restore(a.s, path, NULL), PASCO_EPROTO);
	cr_assert(strstr(pasco_strategy_error(a.s), "ckpt-1") &&
	              strstr(pasco_strategy_error(a.s), "ps-1.safetensors") &&
	              strstr(pasco_strategy_error(a.s),
	                  "tensor 'v/part_1' is damaged"),
	    "%s", pasco_strategy_error(a.s));
	expect_values(v, 100, 8); /* untouched, both halves */
	expect_values(w, 1, 4);
	/* inspect reads the data and names the damage */
	out = open_memstream(&text, &len);
	PASCO_FAIL(pasco_checkpoint_inspect(path, out), PASCO_EPROTO);
	fclose(out);
	cr_assert(strstr(text, "ps-0.safetensors: 2 tensor(s), checksums "
	                       "match") &&
	              strstr(text, "ps-1.safetensors: DAMAGED") &&
	              strstr(text, "tensor 'v/part_1' is damaged"),
	    "%s", text);
	free(text);
	pasco_tensor_release(t100);
	pasco_variable_free(v);
	pasco_variable_free(w);
	setup_stop(&a);
	remove_dir();
}

typedef struct latest_arg {
	pasco_strategy *s;
	int64_t         step;
} latest_arg;

static int
restore_latest(void *arg)
{
	latest_arg *l = arg;
	return pasco_checkpoint_restore_latest(l->s, dir, &l->step);
}

Test(checkpoint, resuming_skips_damaged_checkpoints_and_says_so)
{
	setup           a;
	pasco_variable *v;
	pasco_tensor   *t;
	latest_arg      l = {0};
	char           *log, cmd[512];
	int             rv;
	make_dir();
	setup_start(&a, 2, 1);
	v = var(&a, "v", 2, 10);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 10, 0));
	for (int s = 20; s <= 30; s += 10) {
		PASCO_PASS(
		    pasco_tensor_alloc(&t, PASCO_F32, 2, (int64_t[]){2, 2}));
		for (int i = 0; i < 4; i++) {
			pasco_tensor_set(t, i, s + i);
		}
		PASCO_PASS(pasco_variable_assign(v, t));
		pasco_tensor_release(t);
		PASCO_PASS(pasco_checkpoint_save(a.s, dir, s, 0));
	}
	flip(30, "ps-0.safetensors", "v"); /* damaged */
	snprintf(cmd, sizeof(cmd), "rm %s/ckpt-20/ps-0.safetensors", dir);
	cr_assert_eq(system(cmd), 0); /* incomplete */
	l.s = a.s;
	log = capture_stderr(restore_latest, &l, &rv);
	PASCO_PASS(rv);
	cr_assert_eq(l.step, 10);
	expect_values(v, 10, 4);
	cr_assert(strstr(log, "skipping checkpoint") &&
	              strstr(log, "ckpt-30: ") &&
	              strstr(log, "tensor 'v' is damaged") &&
	              strstr(log, "ckpt-20: "),
	    "%s", log);
	free(log);
	/* pasco_checkpoint_latest still names the newest complete one */
	char path[256];
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), &l.step));
	cr_assert_eq(l.step, 30);
	flip(10, "ps-0.safetensors", "v");
	log = capture_stderr(restore_latest, &l, &rv);
	PASCO_FAIL(rv, PASCO_ENOTFOUND);
	cr_assert(strstr(pasco_strategy_error(a.s), "no intact checkpoint") &&
	              strstr(pasco_strategy_error(a.s), "ckpt-30"),
	    "%s", pasco_strategy_error(a.s));
	free(log);
	pasco_variable_free(v);
	setup_stop(&a);
	remove_dir();
}

static void
adam_steps(pasco_variable *v, pasco_tensor **g, int n)
{
	pasco_optimizer adam = pasco_adam(0.1, true);
	if (*g == NULL) {
		PASCO_PASS(
		    pasco_tensor_alloc(g, PASCO_F32, 2, (int64_t[]){4, 2}));
		for (int i = 0; i < 8; i++) {
			pasco_tensor_set(*g, i, 0.1 * (i - 3));
		}
	}
	for (int i = 0; i < n; i++) {
		PASCO_PASS(pasco_variable_apply_gradient(v, &adam, *g));
	}
}

static void
expect_same(pasco_variable *a, pasco_variable *b)
{
	pasco_tensor *ta, *tb;
	PASCO_PASS(pasco_variable_read(a, &ta));
	PASCO_PASS(pasco_variable_read(b, &tb));
	for (int64_t i = 0; i < ta->count; i++) {
		cr_assert_float_eq(pasco_tensor_get(ta, i),
		    pasco_tensor_get(tb, i), 1e-6, "element %lld",
		    (long long) i);
	}
	pasco_tensor_release(ta);
	pasco_tensor_release(tb);
}

Test(checkpoint, slots_are_named_by_meaning)
{
	setup           a;
	pasco_variable *v;
	pasco_tensor   *g = NULL;
	make_dir();
	setup_start(&a, 1, 1);
	v = var(&a, "v", 4, 0);
	adam_steps(v, &g, 2);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 2, 0));
	cr_assert_eq(
	    py("import json, struct, sys\n"
	       "d = sys.argv[1] + \"/ckpt-2/\"\n"
	       "b = open(d + \"ps-0.safetensors\", \"rb\").read()\n"
	       "n = struct.unpack(\"<Q\", b[:8])[0]\n"
	       "h = json.loads(b[8:8 + n])\n"
	       "m = json.load(open(d + \"manifest.json\"))\n"
	       "sl = m[\"variables\"][0][\"shards\"][0][\"slots\"]\n"
	       "crc = m[\"files\"][\"ps-0.safetensors\"][\"crc32c\"]\n"
	       "ok = set(h) - {\"__metadata__\"} == "
	       "{\"v\", \"v/m\", \"v/v\", \"v/vhat\"} == set(crc) "
	       "and sl[\"optimizer\"] == \"adam\" "
	       "and sl[\"names\"] == [\"m\", \"v\", \"vhat\"] "
	       "and m[\"format\"] == \"pasco-checkpoint-2\"\n"
	       "sys.exit(0 if ok else 1)\n"),
	    0, "slot names or manifest");
	pasco_tensor_release(g);
	pasco_variable_free(v);
	setup_stop(&a);
	remove_dir();
}

/* A format 1 checkpoint (slots "<shard>/.slot/<k>", the optimizer a
 * number, no checksums), made from a format 2 one the way Pasco wrote
 * them before, still restores when asked for: the next Adam step
 * matches. */
Test(checkpoint, a_format_1_checkpoint_still_restores)
{
	setup           a, b;
	pasco_variable *v, *w;
	pasco_tensor   *g = NULL;
	char            path[256];
	make_dir();
	setup_start(&a, 2, 2);
	v = var(&a, "v", 4, 0);
	adam_steps(v, &g, 2);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 2, 0));
	cr_assert_eq(
	    py("import json, struct, sys, glob\n"
	       "d = sys.argv[1] + \"/ckpt-2/\"\n"
	       "k = {\"m\": 0, \"v\": 1, \"vhat\": 2}\n"
	       "for p in glob.glob(d + \"ps-*.safetensors\"):\n"
	       "  b = open(p, \"rb\").read()\n"
	       "  n = struct.unpack(\"<Q\", b[:8])[0]\n"
	       "  h = json.loads(b[8:8 + n])\n"
	       "  o = {}\n"
	       "  for x, e in h.items():\n"
	       "    s = x.rsplit(\"/\", 1)\n"
	       "    o[s[0] + \"/.slot/%d\" % k[s[1]] if len(s) == 2 and "
	       "s[1] in k else x] = e\n"
	       "  j = json.dumps(o).encode()\n"
	       "  j += b\" \" * (-len(j) % 8)\n"
	       "  open(p, \"wb\").write(struct.pack(\"<Q\", len(j)) + j + "
	       "b[8 + n:])\n"
	       "m = json.load(open(d + \"manifest.json\"))\n"
	       "m[\"format\"] = \"pasco-checkpoint-1\"\n"
	       "del m[\"files\"]\n"
	       "for sh in m[\"variables\"][0][\"shards\"]:\n"
	       "  sh[\"slots\"][\"optimizer\"] = 4\n"
	       "  del sh[\"slots\"][\"names\"]\n"
	       "json.dump(m, open(d + \"manifest.json\", \"w\"))\n"),
	    0, "could not write the old format");
	adam_steps(v, &g, 1); /* step 3 */
	setup_start(&b, 1, 1);
	w = var(&b, "v", 4, 50);
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), NULL));
	PASCO_PASS(pasco_checkpoint_restore_with(b.s, path,
	    &(pasco_checkpoint_read_options){.allow_format_1 = true}, NULL));
	adam_steps(w, &g, 1);
	expect_same(v, w);
	pasco_tensor_release(g);
	pasco_variable_free(v);
	pasco_variable_free(w);
	setup_stop(&b);
	setup_stop(&a);
	remove_dir();
}

/* Files are written under a fresh temporary name (O_EXCL, O_NOFOLLOW),
 * then renamed: a hard link someone left at NAME.tmp, pointing outside
 * the root, is neither written through nor truncated. */
Test(checkpoint, a_hard_link_at_a_temporary_name_is_not_written_through)
{
	setup           a;
	pasco_variable *v;
	char            outside[64], cmd[1024], path[256];
	make_dir();
	setup_start(&a, 1, 1);
	v = var(&a, "v", 2, 1);
	strcpy(outside, "/tmp/pasco-outside-XXXXXX");
	cr_assert_not_null(mkdtemp(outside));
	snprintf(cmd, sizeof(cmd),
	    "printf precious > %s/victim && mkdir %s/ckpt-1 && "
	    "ln %s/victim %s/ckpt-1/ps-0.safetensors.tmp && "
	    "ln %s/victim %s/ckpt-1/manifest.json.tmp",
	    outside, dir, outside, dir, outside, dir);
	cr_assert_eq(system(cmd), 0);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 1, 0));
	snprintf(
	    cmd, sizeof(cmd), "test \"$(cat %s/victim)\" = precious", outside);
	cr_assert_eq(system(cmd), 0, "the file outside the root changed");
	snprintf(path, sizeof(path), "%s/ckpt-1", dir);
	PASCO_PASS(pasco_checkpoint_restore(a.s, path, NULL));
	expect_values(v, 1, 4);
	pasco_variable_free(v);
	setup_stop(&a);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", outside);
	cr_assert_eq(system(cmd), 0);
	remove_dir();
}

typedef struct restore_arg {
	pasco_strategy *s;
	const char     *path;
	bool            allow;
	FILE           *out;
} restore_arg;

static int
restore_allowing(void *arg)
{
	restore_arg *r = arg;
	return pasco_checkpoint_restore_with(r->s, r->path,
	    &(pasco_checkpoint_read_options){.allow_format_1 = r->allow},
	    NULL);
}

static int
inspect_allowing(void *arg)
{
	restore_arg *r = arg;
	return pasco_checkpoint_inspect_with(r->path, r->out,
	    &(pasco_checkpoint_read_options){.allow_format_1 = r->allow});
}

/* A manifest relabelled as format 1 (no checksums) does not switch the
 * checks off: restore, verify and inspect refuse it, naming the
 * checkpoint and why; only an explicit allow_format_1 reads it, with a
 * warning that nothing was checked. A format 2 manifest without its
 * checksums is refused too. */
Test(checkpoint, a_manifest_relabelled_as_format_1_is_not_read_unchecked)
{
	setup           a;
	pasco_variable *v;
	char            path[256], err[512], *log, *text = NULL;
	size_t          len = 0;
	restore_arg     r;
	int             rv;
	make_dir();
	setup_start(&a, 1, 1);
	v = var(&a, "v", 2, 1);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 1, 0));
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 2, 0));
	flip(1, "ps-0.safetensors", "v");
	flip(2, "ps-0.safetensors", "v");
	cr_assert_eq(py("import json, sys\n"
	                "for s, f in ((1, \"pasco-checkpoint-1\"), "
	                "(2, \"pasco-checkpoint-2\")):\n"
	                "  p = sys.argv[1] + \"/ckpt-%d/manifest.json\" % s\n"
	                "  m = json.load(open(p))\n"
	                "  m[\"format\"] = f\n"
	                "  del m[\"files\"]\n"
	                "  json.dump(m, open(p, \"w\"))\n"),
	    0, "could not relabel the manifests");
	snprintf(path, sizeof(path), "%s/ckpt-1", dir);
	r = (restore_arg){.s = a.s, .path = path};
	PASCO_FAIL(
	    pasco_checkpoint_restore(a.s, path, NULL), PASCO_EPRECONDITION);
	cr_assert(strstr(pasco_strategy_error(a.s), "ckpt-1") &&
	              strstr(pasco_strategy_error(a.s), "format 1") &&
	              strstr(pasco_strategy_error(a.s), "no checksums") &&
	              strstr(pasco_strategy_error(a.s), "allow_format_1"),
	    "%s", pasco_strategy_error(a.s));
	expect_values(v, 1, 4);
	PASCO_FAIL(pasco_checkpoint_verify(path, err, sizeof(err)),
	    PASCO_EPRECONDITION);
	cr_assert(strstr(err, "format 1"), "%s", err);
	r.out = open_memstream(&text, &len);
	free(capture_stderr(inspect_allowing, &r, &rv));
	fclose(r.out);
	PASCO_FAIL(rv, PASCO_EPRECONDITION);
	cr_assert(strstr(text, "format 1") && strstr(text, "no checksums") &&
	              strstr(text, "--allow-format-1"),
	    "%s", text);
	free(text);
	/* asked for: it restores (the damage goes unseen), with a warning */
	r.allow = true;
	log     = capture_stderr(restore_allowing, &r, &rv);
	PASCO_PASS(rv);
	cr_assert(strstr(log, "ckpt-1") && strstr(log, "format 1") &&
	              strstr(log, "no checksums"),
	    "%s", log);
	free(log);
	r.out = open_memstream(&text, &len);
	free(capture_stderr(inspect_allowing, &r, &rv));
	fclose(r.out);
	PASCO_PASS(rv);
	cr_assert(strstr(text, "no checksums to check"), "%s", text);
	free(text);
	/* "format 2" without checksums: refused, even when format 1 is
	 * allowed */
	snprintf(path, sizeof(path), "%s/ckpt-2", dir);
	log = capture_stderr(restore_allowing, &r, &rv);
	free(log);
	PASCO_FAIL(rv, PASCO_EPROTO);
	cr_assert(strstr(pasco_strategy_error(a.s), "ckpt-2") &&
	              strstr(pasco_strategy_error(a.s), "no checksums"),
	    "%s", pasco_strategy_error(a.s));
	pasco_variable_free(v);
	setup_stop(&a);
	remove_dir();
}

/* A manifest whose "format" is a number (a hand-edited or foreign one) is
 * refused saying that, not as a manifest whose format is missing. */
Test(checkpoint, a_numeric_format_is_named_as_a_number_not_missing)
{
	setup           a;
	pasco_variable *v;
	char            path[256], err[512];
	make_dir();
	setup_start(&a, 1, 1);
	v = var(&a, "v", 2, 1);
	PASCO_PASS(pasco_checkpoint_save(a.s, dir, 1, 0));
	cr_assert_eq(py("import json, sys\n"
	                "p = sys.argv[1] + \"/ckpt-1/manifest.json\"\n"
	                "m = json.load(open(p))\n"
	                "m[\"format\"] = 1\n"
	                "json.dump(m, open(p, \"w\"))\n"),
	    0, "could not edit the manifest");
	snprintf(path, sizeof(path), "%s/ckpt-1", dir);
	cr_assert_neq(pasco_checkpoint_restore(a.s, path, NULL), PASCO_OK);
	cr_assert(strstr(pasco_strategy_error(a.s),
	              "format must be a string (\"pasco-checkpoint-2\"), "
	              "got a number") != NULL,
	    "%s", pasco_strategy_error(a.s));
	cr_assert_neq(pasco_checkpoint_verify(path, err, sizeof(err)), 0);
	cr_assert(
	    strstr(err, "got a number") && !strstr(err, "missing"), "%s", err);
	pasco_variable_free(v);
	setup_stop(&a);
	remove_dir();
}

typedef struct save_arg {
	pasco_strategy *s;
	int64_t         step;
} save_arg;

static int
save_keeping_3(void *arg)
{
	save_arg *a = arg;
	return pasco_checkpoint_save(a->s, dir, a->step, 3);
}

static bool
has_checkpoint(int64_t step)
{
	char        path[256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/ckpt-%lld", dir, (long long) step);
	return stat(path, &st) == 0;
}

/* Saves step 50 in DIR/x, DIR/y, then DIR/x again. */
static int
save_twice_elsewhere(void *arg)
{
	char x[128], y[128];
	int  rv;
	snprintf(x, sizeof(x), "%s/x", dir);
	snprintf(y, sizeof(y), "%s/y", dir);
	if ((rv = pasco_checkpoint_save(arg, x, 50, 0)) == 0 &&
	    (rv = pasco_checkpoint_save(arg, y, 50, 0)) == 0) {
		rv = pasco_checkpoint_save(arg, x, 50, 0);
	}
	return rv;
}

/* A new run saving into a directory an earlier run left checkpoints of
 * later steps in: it is said at its first save, its checkpoints are the
 * latest (kept by when they were saved, not by step) and the earlier
 * run's are the first removed. */
Test(checkpoint, a_reused_directory_keeps_checkpoints_by_recency_and_says_so)
{
	setup           a, b;
	pasco_variable *v, *w;
	save_arg        arg;
	char           *log, path[256];
	int64_t         step;
	int             rv;
	make_dir();
	setup_start(&a, 1, 1);
	v = var(&a, "v", 2, 300);
	for (int s = 100; s <= 300; s += 100) {
		PASCO_PASS(pasco_checkpoint_save(a.s, dir, s, 3));
	}
	pasco_variable_free(v);
	setup_stop(&a);
	/* the new run, from step 10 */
	setup_start(&b, 1, 1);
	w   = var(&b, "v", 2, 10);
	arg = (save_arg){b.s, 10};
	log = capture_stderr(save_keeping_3, &arg, &rv);
	PASCO_PASS(rv);
	cr_assert(strstr(log, dir) &&
	              strstr(log, "holds checkpoints up to step 300 from an "
	                          "earlier run") &&
	              strstr(log, "this run saves step 10"),
	    "%s", log);
	free(log);
	cr_assert(has_checkpoint(10), "the new run's checkpoint was removed");
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), &step));
	cr_assert_eq(step, 10);
	cr_assert(!has_checkpoint(100) && has_checkpoint(200) &&
	          has_checkpoint(300));
	arg.step = 20; /* said once */
	log      = capture_stderr(save_keeping_3, &arg, &rv);
	PASCO_PASS(rv);
	cr_assert(strstr(log, "earlier run") == NULL, "%s", log);
	free(log);
	for (arg.step = 30; arg.step <= 40; arg.step += 10) {
		PASCO_PASS(save_keeping_3(&arg));
	}
	for (int s = 100; s <= 300; s += 100) {
		cr_assert(!has_checkpoint(s), "ckpt-%d was kept", s);
	}
	cr_assert(has_checkpoint(20) && has_checkpoint(30) &&
	          has_checkpoint(40) && !has_checkpoint(10));
	PASCO_PASS(pasco_checkpoint_latest(dir, path, sizeof(path), &step));
	cr_assert_eq(step, 40);
	PASCO_PASS(pasco_checkpoint_restore_latest(b.s, dir, &step));
	cr_assert_eq(step, 40);
	expect_values(w, 10, 4);
	/* this run's own checkpoint of a step, saved again after a save
	 * elsewhere, is not an earlier run's */
	log = capture_stderr(save_twice_elsewhere, b.s, &rv);
	PASCO_PASS(rv);
	cr_assert(strstr(log, "earlier run") == NULL, "%s", log);
	free(log);
	pasco_variable_free(w);
	setup_stop(&b);
	remove_dir();
}
