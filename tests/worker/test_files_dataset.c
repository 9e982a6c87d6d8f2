/* The library's files dataset ("pasco.files:{spec}"), built through the
 * worker's dataset lookup as a worker builds it: CSV and TFRecord (with
 * a hashed string feature), sharding by records and by files, repeat,
 * and errors that name the field or the file. */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pasco/example.h"
#include "pasco/hash.h"
#include "pasco/tfrecord.h"
#include "registry.h"

TestSuite(files_dataset, .timeout = 20);

static char dir[64];

/* DIR/a.csv (rows 0..5) and DIR/b.csv (rows 6..9): x = (i, 2i), label
 * i % 3. */
static void
write_csvs(void)
{
	strcpy(dir, "/tmp/pasco_files_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	for (int f = 0; f < 2; f++) {
		char  path[128];
		FILE *fp;
		snprintf(path, sizeof(path), "%s/%c.csv", dir, "ab"[f]);
		cr_assert_not_null(fp = fopen(path, "w"));
		fprintf(fp, "x0,x1,label\n");
		for (int i = f == 0 ? 0 : 6; i < (f == 0 ? 6 : 10); i++) {
			fprintf(fp, "%d,%d,%d\n", i, 2 * i, i % 3);
		}
		fclose(fp);
	}
}

static pasco_dataset *
build(const char *spec, int32_t worker, int32_t workers)
{
	char                  name[2048];
	pasco_dataset_context ctx = {worker, workers, 0, NULL};
	pasco_dataset        *ds;
	snprintf(name, sizeof(name), "pasco.files:%s", spec);
	cr_assert(pasci_dataset_known(name));
	int rv = pasci_dataset_build(name, &ctx, &ds);
	cr_assert_eq(rv, 0, "build: %s: %s", pasco_strerror(rv),
	    pasco_dataset_last_error());
	return ds;
}

/* The x0 values of every batch, in order, into seen (count returned). */
static int
drain_x0(pasco_dataset *ds, double *seen, int cap)
{
	pasco_value *e;
	int          n = 0, rv;
	while ((rv = pasco_dataset_next(ds, &e)) == 0) {
		const pasco_tensor *x =
		    pasco_value_as_tensor(pasco_value_item(e, 0));
		const pasco_tensor *y =
		    pasco_value_as_tensor(pasco_value_item(e, 1));
		cr_assert_eq(x->rank, 2);
		cr_assert_eq(x->shape[1], 2);
		cr_assert_eq(y->dtype, PASCO_I64);
		for (int64_t i = 0; i < x->shape[0]; i++) {
			double v = pasco_tensor_get(x, 2 * i);
			cr_assert_eq(pasco_tensor_get(x, 2 * i + 1), 2 * v);
			cr_assert_eq(pasco_tensor_get(y, i), (int) v % 3);
			cr_assert_lt(n, cap);
			seen[n++] = v;
		}
		pasco_value_free(e);
	}
	cr_assert_eq(rv, PASCO_EOUTOFRANGE, "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);
	return n;
}

static void
cleanup(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(files_dataset, csv_sharded_by_records_covers_every_row_once)
{
	char   spec[512];
	double seen[2][16];
	int    n[2];
	bool   got[10] = {false};
	write_csvs();
	/* one pattern and one file name: the order of the spec */
	snprintf(spec, sizeof(spec),
	    "{\"format\": \"csv\", \"files\": [\"%s/a*.csv\", \"%s/b.csv\"], "
	    "\"label\": \"label\", \"batch_size\": 4, \"shard\": "
	    "\"records\"}",
	    dir, dir);
	for (int w = 0; w < 2; w++) {
		n[w] = drain_x0(build(spec, w, 2), seen[w], 16);
		for (int i = 0; i < n[w]; i++) {
			int v = (int) seen[w][i];
			cr_assert_eq(v % 2, w, "worker %d got row %d", w, v);
			cr_assert_not(got[v]);
			got[v] = true;
		}
	}
	cr_assert_eq(n[0] + n[1], 10);
	cleanup();
}

Test(files_dataset, csv_sharded_by_files_and_repeated)
{
	char   spec[512];
	double seen[64];
	int    n;
	write_csvs();
	snprintf(spec, sizeof(spec),
	    "{\"format\": \"csv\", \"files\": [\"%s/*.csv\"], \"label\": "
	    "\"label\", \"columns\": [\"x0\", \"x1\"], \"batch_size\": 3, "
	    "\"repeat\": 2}",
	    dir);
	/* auto with 2 files and 2 workers: by files; worker 1 has b.csv */
	n = drain_x0(build(spec, 1, 2), seen, 64);
	cr_assert_eq(n, 8); /* rows 6..9, twice */
	for (int i = 0; i < n; i++) {
		cr_assert_eq(seen[i], 6 + i % 4);
	}
	/* repeat -1: forever (more than two passes of all 10 rows) */
	snprintf(spec, sizeof(spec),
	    "{\"format\": \"csv\", \"files\": [\"%s/*.csv\"], \"label\": "
	    "\"label\", \"repeat\": -1, \"shuffle\": 8, \"seed\": 3}",
	    dir);
	pasco_dataset *ds = build(spec, 0, 1);
	for (int k = 0; k < 25; k++) {
		pasco_value *e;
		PASCO_PASS(pasco_dataset_next(ds, &e));
		pasco_value_free(e);
	}
	pasco_dataset_free(ds);
	cleanup();
}

Test(files_dataset, tfrecord_with_a_hashed_feature)
{
	char                   spec[512], path[128];
	pasco_tfrecord_writer *w;
	pasco_value           *e;
	strcpy(dir, "/tmp/pasco_files_XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/data.tfrecord", dir);
	PASCO_PASS(pasco_tfrecord_writer_open(&w, path));
	for (int i = 0; i < 3; i++) {
		pasco_tensor *f, *label, *word;
		float         v[2] = {(float) i, (float) -i};
		void         *buf;
		size_t        len;
		PASCO_PASS(pasco_tensor_from(
		    &f, PASCO_F32, 1, (int64_t[]){2}, v, sizeof(v)));
		PASCO_PASS(pasco_tensor_scalar(&label, PASCO_I64, i));
		PASCO_PASS(pasco_tensor_from(
		    &word, PASCO_U8, 1, (int64_t[]){3}, "abc", 3));
		pasco_value *ex = pasco_value_dict(3, "f",
		    pasco_value_tensor(f), "label", pasco_value_tensor(label),
		    "w", pasco_value_list(1, pasco_value_tensor(word)));
		PASCO_PASS(pasco_example_encode(ex, &buf, &len));
		PASCO_PASS(pasco_tfrecord_write(w, buf, len));
		free(buf);
		pasco_value_free(ex);
	}
	PASCO_PASS(pasco_tfrecord_writer_close(w));
	snprintf(spec, sizeof(spec),
	    "{\"format\": \"tfrecord\", \"files\": [\"%s/*.tfrecord\"], "
	    "\"features\": {\"f\": {\"type\": \"float\", \"width\": 2}, "
	    "\"w\": {\"type\": \"hashed\", \"width\": 2}}, \"label\": "
	    "\"label\", \"batch_size\": 8}",
	    dir);
	pasco_dataset *ds = build(spec, 0, 1);
	PASCO_PASS(pasco_dataset_next(ds, &e));
	const pasco_value  *x = pasco_value_item(e, 0);
	const pasco_tensor *f = pasco_value_as_tensor(pasco_value_get(x, "f"));
	const pasco_tensor *k = pasco_value_as_tensor(pasco_value_get(x, "w"));
	const pasco_tensor *y = pasco_value_as_tensor(pasco_value_item(e, 1));
	cr_assert(f != NULL && k != NULL && y != NULL);
	cr_assert_eq(f->shape[0], 3);
	cr_assert_eq(pasco_tensor_get(f, 5), -2);
	cr_assert_eq(k->dtype, PASCO_I64);
	cr_assert_eq(((const int64_t *) k->data)[0], pasco_hash_key("abc", 3));
	cr_assert_eq(((const int64_t *) k->data)[1], -1); /* padding */
	cr_assert_eq(pasco_tensor_get(y, 2), 2);
	pasco_value_free(e);
	cr_assert_eq(pasco_dataset_next(ds, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(ds);
	cleanup();
}

/* The spec's error and its message (which must contain want). */
static void
assert_fails(const char *spec, int err, const char *want)
{
	char                  name[512];
	pasco_dataset_context ctx = {0, 1, 0, NULL};
	pasco_dataset        *ds  = (pasco_dataset *) &ctx;
	snprintf(name, sizeof(name), "pasco.files:%s", spec);
	cr_assert_eq(pasci_dataset_build(name, &ctx, &ds), err, "%s", spec);
	cr_assert_null(ds);
	cr_assert_not_null(strstr(pasco_dataset_last_error(), want),
	    "'%s' lacks '%s'", pasco_dataset_last_error(), want);
}

Test(files_dataset, errors_name_what_is_wrong)
{
	assert_fails("{\"format\": \"csv\"", PASCO_EINVAL, "not JSON");
	assert_fails("{\"format\": \"parquet\", \"files\": [\"x\"]}",
	    PASCO_EINVAL, "format must be");
	assert_fails(
	    "{\"format\": \"csv\", \"files\": [\"x\"], \"labels\": \"y\"}",
	    PASCO_EINVAL, "unknown field 'labels'");
	assert_fails(
	    "{\"format\": \"csv\", \"files\": [\"/nonexistent/*.csv\"], "
	    "\"label\": \"y\"}",
	    PASCO_ENOTFOUND, "no file matches '/nonexistent/*.csv'");
	assert_fails("{\"format\": \"csv\", \"files\": [\"x\"], \"label\": "
	             "\"y\", \"batch_size\": 0}",
	    PASCO_EINVAL, "batch_size must be an integer >= 1");
	assert_fails("{\"format\": \"tfrecord\", \"files\": [\"x\"], "
	             "\"features\": {\"a\": {\"type\": \"bytes\"}}}",
	    PASCO_EINVAL, "type must be");
	assert_fails("{\"format\": \"csv\", \"files\": [\"x\"]}", PASCO_EINVAL,
	    "needs a label");
	/* a sequence's labels (label_shape): tfrecord only, with a label,
	 * [T] or [T, D], no class_weight */
	assert_fails("{\"format\": \"csv\", \"files\": [\"x\"], \"label\": "
	             "\"y\", \"label_shape\": [4]}",
	    PASCO_EINVAL, "label_shape is for tfrecord datasets");
	assert_fails("{\"format\": \"tfrecord\", \"files\": [\"x\"], "
	             "\"features\": {\"a\": {}}, \"label_shape\": [4]}",
	    PASCO_EINVAL, "label_shape without a label");
	assert_fails("{\"format\": \"tfrecord\", \"files\": [\"x\"], "
	             "\"features\": {\"a\": {}}, \"label\": \"y\", "
	             "\"label_shape\": [4, 2, 1]}",
	    PASCO_EINVAL, "label_shape must be a list of at most 2");
	assert_fails("{\"format\": \"tfrecord\", \"files\": [\"x\"], "
	             "\"features\": {\"a\": {}}, \"label\": \"y\", "
	             "\"label_shape\": [4, 0]}",
	    PASCO_EINVAL, "label_shape[1] must be an integer in [1,");
	assert_fails("{\"format\": \"tfrecord\", \"files\": [\"x\"], "
	             "\"features\": {\"a\": {}}, \"label\": \"y\", "
	             "\"label_shape\": [4], \"class_weight\": {\"1\": 2}}",
	    PASCO_EINVAL,
	    "a sequence's labels (label_shape) have one per step");
	/* a sample_weight feature: width 1, or T with a label_shape [T] */
	assert_fails("{\"format\": \"tfrecord\", \"files\": [\"x\"], "
	             "\"features\": {\"a\": {}, \"w\": {\"width\": 3}}, "
	             "\"label\": \"y\", \"label_shape\": [4], "
	             "\"sample_weight\": \"w\"}",
	    PASCO_EINVAL,
	    "sample_weight 'w' has width 3; want 1 (one weight per example) "
	    "or the label_shape's steps T");
	assert_fails("{\"format\": \"tfrecord\", \"files\": [\"x\"], "
	             "\"features\": {\"a\": {}, \"w\": {\"width\": 4}}, "
	             "\"label\": \"y\", \"sample_weight\": \"w\"}",
	    PASCO_EINVAL, "sample_weight 'w' has width 4; want 1");
	/* width T (or 1) with label_shape [T] passes to the files */
	assert_fails("{\"format\": \"tfrecord\", \"files\": "
	             "[\"/nonexistent/x\"], \"features\": {\"a\": {}, "
	             "\"w\": {\"width\": 4}}, \"label\": \"y\", "
	             "\"label_shape\": [4, 2], \"sample_weight\": \"w\"}",
	    PASCO_ENOTFOUND, "no file matches");
	/* a name that is neither a files dataset nor registered */
	pasco_dataset_context ctx = {0, 1, 0, NULL};
	pasco_dataset        *ds;
	cr_assert_not(pasci_dataset_known("pasco.file:{}"));
	cr_assert_eq(
	    pasci_dataset_build("pasco.file:{}", &ctx, &ds), PASCO_ENOTFOUND);
}

static int
range_factory(const pasco_dataset_context *ctx, pasco_dataset **out)
{
	/* this shard's share of 0..9 */
	return pasco_dataset_range(
	    out, ctx->worker_index, 10, ctx->num_workers);
}

/* The public pasco_dataset_from_name builds what a worker builds: a files
 * spec (shard 1 of 2: every other row; 0 of 1: all of them), a registered
 * factory called as the shard, and errors that say what was wrong. */
Test(files_dataset, from_name_builds_a_shard_as_a_worker_does)
{
	char           name[512];
	double         seen[16];
	pasco_dataset *ds = NULL;
	pasco_value   *e;
	int64_t        sum = 0;
	int            n, rv;
	write_csvs();
	snprintf(name, sizeof(name),
	    "pasco.files:{\"format\": \"csv\", \"files\": [\"%s/*.csv\"], "
	    "\"label\": \"label\", \"batch_size\": 3, \"shard\": "
	    "\"records\"}",
	    dir);
	rv = pasco_dataset_from_name(&ds, name, 1, 2);
	cr_assert_eq(rv, 0, "%s", pasco_dataset_last_error());
	n = drain_x0(ds, seen, 16);
	cr_assert_eq(n, 5);
	for (int i = 0; i < n; i++) {
		cr_assert_eq((int) seen[i], 2 * i + 1);
	}
	cr_assert_eq(pasco_dataset_from_name(&ds, name, 0, 1), 0);
	cr_assert_eq(drain_x0(ds, seen, 16), 10);

	cr_assert_eq(
	    pasco_dataset_register("test_from_name_range", range_factory), 0);
	cr_assert_eq(
	    pasco_dataset_from_name(&ds, "test_from_name_range", 1, 3), 0);
	while ((rv = pasco_dataset_next(ds, &e)) == 0) {
		sum += (int64_t) pasco_value_scalar(e); /* 1 + 4 + 7 */
		pasco_value_free(e);
	}
	cr_assert_eq(rv, PASCO_EOUTOFRANGE);
	cr_assert_eq(sum, 12);
	pasco_dataset_free(ds);

	ds = (pasco_dataset *) &sum;
	cr_assert_eq(pasco_dataset_from_name(&ds, name, 2, 2), PASCO_EINVAL);
	cr_assert_null(ds);
	cr_assert_not_null(strstr(pasco_dataset_last_error(), "shard 2 of 2"),
	    "%s", pasco_dataset_last_error());
	cr_assert_eq(pasco_dataset_from_name(&ds, "", 0, 1), PASCO_EINVAL);
	cr_assert_eq(pasco_dataset_from_name(&ds, "no_such_factory", 0, 1),
	    PASCO_ENOTFOUND);
	cr_assert_not_null(
	    strstr(pasco_dataset_last_error(), "'no_such_factory'"));
	snprintf(name, sizeof(name),
	    "pasco.files:{\"format\": \"csv\", \"files\": [\"%s/none*.csv\"], "
	    "\"label\": \"label\"}",
	    dir);
	cr_assert_eq(
	    pasco_dataset_from_name(&ds, name, 0, 1), PASCO_ENOTFOUND);
	cr_assert_not_null(strstr(pasco_dataset_last_error(), "none*.csv"),
	    "%s", pasco_dataset_last_error());
	cleanup();
}
