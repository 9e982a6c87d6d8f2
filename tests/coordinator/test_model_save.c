/*
 * Saving a model (model.h, "Saving") over in-process clusters: a model
 * with an Embedding split in 2 shards, a dynamic embedding table and a
 * Dense layer, trained by Adam (no amsgrad) through the global step with
 * gradients that shrink (so a v_hat taken for a used slot would change
 * the updates), saved on 2 ps and loaded on 3: every variable, every
 * table row, and 3 more steps equal bit for bit to the run that was not
 * interrupted. And the errors: a wrong suffix, a file of another model,
 * a damaged file.
 */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "layers_impl.h"
#include "model_zip.h"

TestSuite(model_save, .timeout = 120);

static const char *config =
    "{\"class_name\": \"Functional\", \"config\": {\"name\": \"m\", "
    "\"seed\": 5, \"inputs\": [{\"name\": \"ids\", \"width\": 2, \"ids\": "
    "true}, {\"name\": \"keys\", \"width\": 1, \"ids\": true}], "
    "\"layers\": [{\"class_name\": \"Embedding\", \"config\": {\"name\": "
    "\"embedding\", \"input_dim\": 10, \"output_dim\": 2, \"partitioner\": "
    "{\"class_name\": \"FixedShardsPartitioner\", \"config\": "
    "{\"num_shards\": 2}}}, \"inbound_nodes\": [\"ids\"]}, "
    "{\"class_name\": \"Embedding\", \"config\": {\"name\": \"table\", "
    "\"output_dim\": 2, \"dynamic\": {}}, \"inbound_nodes\": [\"keys\"]}, "
    "{\"class_name\": \"Concatenate\", \"config\": {\"name\": \"cat\"}, "
    "\"inbound_nodes\": [\"embedding\", \"table\"]}, {\"class_name\": "
    "\"Dense\", \"config\": {\"name\": \"dense\", \"units\": 1}, "
    "\"inbound_nodes\": [\"cat\"]}]}, \"compile_config\": {\"loss\": "
    "\"mse\", \"optimizer\": {\"class_name\": \"Adam\", \"config\": "
    "{\"learning_rate\": 0.05}}, \"metrics\": []}}";

static char dir[64];

typedef struct run {
	test_cluster    tc;
	pasco_strategy *s;
	pasco_model    *m;
	pasco_variable *gs;
} run;

/* A cluster of nps ps; shards > 0: a strategy that splits every
 * variable in that many shards (an Embedding with its own partitioner
 * keeps its own). */
static void
run_start_split(run *r, int nps, int shards)
{
	static pasco_partitioner p;
	pasco_strategy_options   o = {.partitioner = shards > 0 ? &p : NULL};
	p                          = pasco_fixed_shards_partitioner(shards);
	test_cluster_start(&r->tc, nps, 1);
	PASCO_PASS(pasco_strategy_create(&r->s, r->tc.cluster, &o));
	r->m  = NULL;
	r->gs = NULL;
}

static void
run_start(run *r, int nps)
{
	run_start_split(r, nps, 0);
}

static void
run_stop(run *r)
{
	pasco_variable_free(r->gs);
	pasco_model_free(r->m);
	pasco_strategy_destroy(r->s);
	test_cluster_stop(&r->tc);
}

static const int64_t keys[4] = {7, 1001, 123456789012LL, -5LL};

/* One Adam step on every variable of the model: rows 1, 3 and 8 of the
 * embedding, the four keys of the table, the dense kernel and bias; the
 * gradients shrink with the step. */
static void
train_step(run *r, int step)
{
	pasco_tensor   *ids, *keyt, *g[4];
	pasco_variable *v[4];
	float           scale = 1.0f / (float) (1 + step * step);
	pasco_optimizer opt   = pasco_adam(0.05, false);
	if (r->gs == NULL) {
		PASCO_PASS(pasco_strategy_global_step(r->s, &r->gs));
	}
	opt.iterations = r->gs;
	for (int k = 0; k < 4; k++) {
		v[k] = pasco_model_variable(r->m, (size_t) k);
	}
	PASCO_PASS(pasco_tensor_from(&ids, PASCO_I64, 1, (int64_t[]){3},
	    (int64_t[]){1, 3, 8}, 3 * sizeof(int64_t)));
	PASCO_PASS(pasco_tensor_from(
	    &keyt, PASCO_I64, 1, (int64_t[]){4}, keys, sizeof(keys)));
	PASCO_PASS(pasco_tensor_alloc(&g[0], PASCO_F32, 2, (int64_t[]){3, 2}));
	PASCO_PASS(pasco_tensor_alloc(&g[1], PASCO_F32, 2, (int64_t[]){4, 2}));
	PASCO_PASS(pasco_tensor_alloc(&g[2], PASCO_F32, 2, (int64_t[]){4, 1}));
	PASCO_PASS(pasco_tensor_alloc(&g[3], PASCO_F32, 1, (int64_t[]){1}));
	for (int k = 0; k < 4; k++) {
		for (int64_t i = 0; i < g[k]->count; i++) {
			pasco_tensor_set(g[k], i,
			    scale * (float) ((i * 7 + k * 3 + step) % 5 - 2));
		}
	}
	const pasco_tensor *idl[4] = {ids, keyt, NULL, NULL};
	PASCO_PASS(pasco_variable_apply_gradients_mixed(
	    4, v, &opt, idl, (const pasco_tensor *const *) g));
	for (int k = 0; k < 4; k++) {
		pasco_tensor_release(g[k]);
	}
	pasco_tensor_release(ids);
	pasco_tensor_release(keyt);
}

/* The model's dense values and the table's rows of keys, in one tensor
 * each (the caller releases them). */
static void
snapshot(run *r, pasco_tensor **out)
{
	pasco_tensor *keyt;
	for (int k = 0; k < 4; k++) {
		if (k == 1) {
			pasco_variable *t = pasco_model_variable(r->m, 1);
			PASCO_PASS(pasco_tensor_from(&keyt, PASCO_I64, 1,
			    (int64_t[]){4}, keys, sizeof(keys)));
			PASCO_PASS(pasco_variable_set_find_only(t, true));
			PASCO_PASS(pasco_variable_gather(t, keyt, &out[k]));
			PASCO_PASS(pasco_variable_set_find_only(t, false));
			pasco_tensor_release(keyt);
			continue;
		}
		PASCO_PASS(pasco_variable_read(
		    pasco_model_variable(r->m, (size_t) k), &out[k]));
	}
}

static void
expect_equal(pasco_tensor **a, pasco_tensor **b, const char *what)
{
	for (int k = 0; k < 4; k++) {
		cr_assert_eq(a[k]->nbytes, b[k]->nbytes);
		cr_assert(memcmp(a[k]->data, b[k]->data, a[k]->nbytes) == 0,
		    "%s: variable %d differs (first %g, %g)", what, k,
		    pasco_tensor_get(a[k], 0), pasco_tensor_get(b[k], 0));
	}
}

static void
release(pasco_tensor **t)
{
	for (int k = 0; k < 4; k++) {
		pasco_tensor_release(t[k]);
	}
}

static void
make_dir(void)
{
	strcpy(dir, "/tmp/pasco-msave-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	setenv("PASCO_CHECKPOINT_DIR", dir, 1); /* the ps stage there */
}

static void
remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(model_save, a_model_saved_on_2_ps_loads_on_3_and_trains_on_the_same,
    .init = make_dir, .fini = remove_dir)
{
	run           a, b, c;
	char          keras[128], weights[128];
	pasco_tensor *saved[4], *end_a[4], *got[4];
	snprintf(keras, sizeof(keras), "%s/m.keras", dir);
	snprintf(weights, sizeof(weights), "%s/m.weights.safetensors", dir);

	run_start(&a, 2);
	PASCO_PASS(pasco_model_from_json(config, &a.m));
	PASCO_PASS(pasco_model_create_variables(a.m, a.s));
	for (int step = 0; step < 3; step++) {
		train_step(&a, step);
	}
	snapshot(&a, saved);
	PASCO_PASS(pasco_model_save(a.s, a.m, keras));
	PASCO_PASS(pasco_model_save_weights(a.s, a.m, weights));
	for (int step = 3; step < 6; step++) {
		train_step(&a, step);
	}
	snapshot(&a, end_a);
	cr_assert_eq(test_read_scalar(a.gs), 6);

	/* load_model on 3 ps whose strategy splits the dense kernel in 3:
	 * the saved values, then the same 3 steps */
	run_start_split(&b, 3, 3);
	PASCO_PASS(pasco_model_load(&b.m, b.s, keras));
	cr_assert_eq(
	    pasco_variable_num_shards(pasco_model_variable(b.m, 2)), 3);
	cr_assert_eq(
	    pasco_variable_num_shards(pasco_model_variable(a.m, 2)), 1);
	PASCO_PASS(pasco_strategy_global_step(b.s, &b.gs));
	cr_assert_eq(test_read_scalar(b.gs), 3, "the iterations restored");
	snapshot(&b, got);
	expect_equal(saved, got, "loaded");
	release(got);
	for (int step = 3; step < 6; step++) {
		train_step(&b, step);
	}
	snapshot(&b, got);
	expect_equal(end_a, got, "trained after load_model");
	release(got);

	/* load_weights over a's variables (trained past the save) on 2 ps */
	PASCO_PASS(pasco_model_load_weights(a.s, a.m, weights));
	snapshot(&a, got);
	expect_equal(saved, got, "load_weights");
	release(got);

	/* a model of other names, a damaged file, a wrong suffix */
	run_start(&c, 1);
	char *other = strdup(config), *at = strstr(other, "\"dense\"");
	memcpy(at, "\"dens2\"", 7);
	PASCO_PASS(pasco_model_from_json(other, &c.m));
	free(other);
	PASCO_PASS(pasco_model_create_variables(c.m, c.s));
	PASCO_FAIL(pasco_model_load_weights(c.s, c.m, weights), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(), "holds no variable dens2/kernel"),
	    "%s", pasco_model_last_error());
	FILE *f = fopen(weights, "r+b");
	cr_assert_not_null(f);
	fseek(f, -3, SEEK_END); /* the last tensor's bytes */
	fputc(0x5a, f);
	fclose(f);
	PASCO_FAIL(pasco_model_load_weights(a.s, a.m, weights), PASCO_EPROTO);
	cr_assert(strstr(pasco_model_last_error(), "is damaged (CRC-32C"),
	    "%s", pasco_model_last_error());
	PASCO_FAIL(pasco_model_save(a.s, a.m, "/tmp/m.h5"), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "Invalid filepath extension for saving"),
	    "%s", pasco_model_last_error());
	pasco_model *none;
	PASCO_FAIL(pasco_model_load(&none, c.s, "/tmp/m.h5"), PASCO_EINVAL);
	cr_assert_null(none);

	/* a .keras file cut anywhere is refused, never read past its end */
	void  *whole;
	size_t len;
	char   cut[160], err[256];
	snprintf(cut, sizeof(cut), "%s/cut.keras", dir);
	PASCO_PASS(pasci_file_read(keras, &whole, &len, err, sizeof(err)));
	for (size_t n = 0; n < len; n += 1 + n / 3) {
		FILE *g = fopen(cut, "wb");
		fwrite(whole, 1, n, g);
		fclose(g);
		cr_assert_neq(pasco_model_load_weights(a.s, a.m, cut), 0,
		    "a cut at %zu of %zu bytes loaded", n, len);
	}
	free(whole);

	release(saved);
	release(end_a);
	run_stop(&c);
	run_stop(&b);
	run_stop(&a);
}

/* A Normalization's adapted statistics and its count (a variable no step
 * reads, outside the model's list) come back from a weights file. */
Test(model_save, a_normalizations_statistics_and_count_are_saved,
    .init = make_dir, .fini = remove_dir)
{
	static const char *seq =
	    "{\"class_name\": \"Sequential\", \"config\": {\"name\": \"s\", "
	    "\"seed\": 1, \"inputs\": [{\"name\": \"x\", \"width\": 2, "
	    "\"ids\": false}], \"layers\": [{\"class_name\": "
	    "\"Normalization\", \"config\": {\"name\": \"normalization\"}}, "
	    "{\"class_name\": \"Dense\", \"config\": {\"name\": \"dense\", "
	    "\"units\": 1}}]}}";
	run           a;
	char          weights[128];
	pasco_tensor *data, *zero, *mean;
	snprintf(weights, sizeof(weights), "%s/n.weights.safetensors", dir);
	run_start(&a, 2);
	PASCO_PASS(pasco_model_from_json(seq, &a.m));
	PASCO_PASS(pasco_model_create_variables(a.m, a.s));
	PASCO_PASS(pasco_tensor_from(&data, PASCO_F32, 2, (int64_t[]){4, 2},
	    (float[]){1, 10, 2, 20, 3, 30, 4, 40}, 8 * sizeof(float)));
	PASCO_PASS(pasco_model_adapt_tensor(a.m, 0, data));
	PASCO_PASS(pasco_model_save_weights(a.s, a.m, weights));
	pasco_variable *count = a.m->norm[0].count_var;
	pasco_variable *mv    = pasco_model_variable(a.m, 0);
	cr_assert_str_eq(pasco_variable_name(mv), "normalization/mean");
	cr_assert_eq(test_read_scalar(count), 4);
	PASCO_PASS(pasco_tensor_alloc(&zero, PASCO_I64, 0, NULL));
	PASCO_PASS(pasco_variable_assign(count, zero));
	pasco_tensor_release(zero);
	PASCO_PASS(pasco_tensor_alloc(&zero, PASCO_F32, 1, (int64_t[]){2}));
	PASCO_PASS(pasco_variable_assign(mv, zero));
	pasco_tensor_release(zero);
	PASCO_PASS(pasco_model_load_weights(a.s, a.m, weights));
	cr_assert_eq(test_read_scalar(count), 4, "the count restored");
	PASCO_PASS(pasco_variable_read(mv, &mean));
	cr_assert(pasco_tensor_get(mean, 0) == 2.5 &&
	              pasco_tensor_get(mean, 1) == 25,
	    "mean %g %g", pasco_tensor_get(mean, 0),
	    pasco_tensor_get(mean, 1));
	pasco_tensor_release(mean);
	pasco_tensor_release(data);
	run_stop(&a);
}

/* ps tasks that may not write where the file goes: the save fails naming
 * their checkpoint root, and leaves nothing beside the file. */
Test(model_save, a_save_the_ps_may_not_stage_says_why_and_leaves_nothing,
    .init = make_dir, .fini = remove_dir)
{
	run  a;
	char weights[128], cmd[160];
	unsetenv("PASCO_CHECKPOINT_DIR"); /* the ps started next: no root */
	snprintf(weights, sizeof(weights), "%s/w.weights.safetensors", dir);
	run_start(&a, 1);
	PASCO_PASS(pasco_model_from_json(config, &a.m));
	PASCO_PASS(pasco_model_create_variables(a.m, a.s));
	cr_assert_neq(pasco_model_save_weights(a.s, a.m, weights), 0);
	cr_assert(strstr(pasco_model_last_error(), "PASCO_CHECKPOINT_DIR") &&
	              strstr(pasco_model_last_error(), dir),
	    "%s", pasco_model_last_error());
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A %s)\"", dir);
	cr_assert_eq(
	    system(cmd), 0, "the staging directory is left in %s", dir);
	run_stop(&a);
}

/* A deflated entry whose header claims more bytes than deflate can make
 * of its compressed ones (4 GB of 20) is refused before anything is
 * allocated for it. The archive is Python's zipfile's, patched. */
Test(model_save, a_zip_entry_that_claims_too_many_bytes_is_refused,
    .init = make_dir, .fini = remove_dir)
{
	char   cmd[1024], path[128], err[256];
	void  *buf, *out;
	size_t len, outlen;
	snprintf(path, sizeof(path), "%s/lie.keras", dir);
	snprintf(cmd, sizeof(cmd),
	    "python3 -c \"import zipfile, struct\n"
	    "z = zipfile.ZipFile('%s', 'w', zipfile.ZIP_DEFLATED)\n"
	    "z.writestr('config.json', '{}' * 10)\n"
	    "z.close()\n"
	    "b = bytearray(open('%s', 'rb').read())\n"
	    "c = b.rindex(b'PK\\\\x01\\\\x02')\n"
	    "b[c + 24:c + 28] = struct.pack('<I', 0xF0000000)\n"
	    "open('%s', 'wb').write(b)\"",
	    path, path, path);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	PASCO_PASS(pasci_file_read(path, &buf, &len, err, sizeof(err)));
	PASCO_FAIL(pasci_zip_entry_read(buf, len, path, "config.json", &out,
	               &outlen, err, sizeof(err)),
	    PASCO_EPROTO);
	cr_assert(strstr(err, "claims more bytes"), "%s", err);
	cr_assert_null(out);
	free(buf);
}
