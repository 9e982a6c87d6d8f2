/* tf.train.Example: byte-exact against TensorFlow's serialization,
 * round trips, errors, and a TFRecord -> parse -> batch pipeline. */
#include "helpers.h"
#include "kit/bytes_example.h"

#include <stdlib.h>
#include <string.h>

TestSuite(example, .timeout = 30);

/* {"a": int64_list [1, 2]} as TensorFlow serializes it. */
static const unsigned char tf_bytes[] = {0x0a, 0x0d, 0x0a, 0x0b, 0x0a, 0x01,
    0x61, 0x12, 0x06, 0x1a, 0x04, 0x0a, 0x02, 0x01, 0x02};

Test(example, matches_tensorflow_bytes_both_ways)
{
	pasco_feature_spec spec = {"a", PASCO_FEATURE_INT64, 0, false, 0, 0};
	pasco_value       *v;
	void              *out;
	size_t             len;
	char               err[256];
	int64_t            a[] = {1, 2};
	pasco_tensor      *t;
	PASCO_PASS(pasco_example_parse(
	    tf_bytes, sizeof(tf_bytes), &spec, 1, &v, err, sizeof(err)));
	t = (pasco_tensor *) pasco_value_as_tensor(pasco_value_get(v, "a"));
	cr_assert(t->dtype == PASCO_I64 && t->count == 2);
	cr_assert(
	    ((int64_t *) t->data)[0] == 1 && ((int64_t *) t->data)[1] == 2);
	pasco_value_free(v);
	PASCO_PASS(
	    pasco_tensor_from(&t, PASCO_I64, 1, (int64_t[]){2}, a, sizeof(a)));
	v = pasco_value_dict(1, "a", pasco_value_tensor(t));
	PASCO_PASS(pasco_example_encode(v, &out, &len));
	cr_assert_eq(len, sizeof(tf_bytes));
	cr_assert_eq(
	    memcmp(out, tf_bytes, len), 0, "encoding differs from TF's");
	free(out);
	pasco_value_free(v);
}

static pasco_value *
sample(int i)
{
	pasco_tensor *label, *ids, *vals, *name;
	int64_t       id[3] = {i, i * 10, i * 100};
	float         vs[3] = {0.5f * i, 1, 2};
	char          nm[16];
	snprintf(nm, sizeof(nm), "row%d", i);
	pasco_tensor_scalar(&label, PASCO_F32, i % 2);
	label->rank     = 1; /* [1] */
	label->shape[0] = 1;
	pasco_tensor_from(&ids, PASCO_I64, 1, (int64_t[]){1 + i % 3}, id,
	    sizeof(int64_t) * (size_t) (1 + i % 3));
	pasco_tensor_from(&vals, PASCO_F32, 1, (int64_t[]){3}, vs, sizeof(vs));
	pasco_tensor_from(&name, PASCO_U8, 1,
	    (int64_t[]){(int64_t) strlen(nm)}, nm, strlen(nm));
	return pasco_value_dict(4, "label", pasco_value_tensor(label), "ids",
	    pasco_value_tensor(ids), "values", pasco_value_tensor(vals),
	    "name", pasco_value_tensor(name));
}

static const pasco_feature_spec specs[] = {
    {"label", PASCO_FEATURE_FLOAT, 1, false, 0, 0},
    {"ids", PASCO_FEATURE_INT64, 0, false, 0, 0},
    {"values", PASCO_FEATURE_FLOAT, 3, false, 0, 0},
    {"name", PASCO_FEATURE_BYTES, 0, false, 0, 0},
    {"weight", PASCO_FEATURE_FLOAT, 2, true, 0.25, 0},
};

Test(example, round_trips_dense_variable_bytes_and_defaults)
{
	pasco_value *v = sample(7), *p;
	void        *buf;
	size_t       len;
	char         err[256];
	PASCO_PASS(pasco_example_encode(v, &buf, &len));
	PASCO_PASS(
	    pasco_example_parse(buf, len, specs, 5, &p, err, sizeof(err)));
	cr_assert_eq(pasco_value_scalar(pasco_value_get(p, "label")), 1);
	const pasco_tensor *ids =
	    pasco_value_as_tensor(pasco_value_get(p, "ids"));
	cr_assert(ids->count == 2 && ((int64_t *) ids->data)[1] == 70);
	const pasco_tensor *vals =
	    pasco_value_as_tensor(pasco_value_get(p, "values"));
	cr_assert_float_eq(pasco_tensor_get(vals, 0), 3.5, 1e-6);
	const pasco_tensor *name =
	    pasco_value_as_tensor(pasco_value_get(p, "name"));
	cr_assert(name->count == 4 && memcmp(name->data, "row7", 4) == 0);
	const pasco_tensor *w =
	    pasco_value_as_tensor(pasco_value_get(p, "weight"));
	cr_assert(
	    w->count == 2 && pasco_tensor_get(w, 1) == 0.25, "default used");
	pasco_value_free(p);
	free(buf);
	pasco_value_free(v);
}

Test(example, errors_name_the_feature)
{
	pasco_value       *v = sample(1), *p;
	void              *buf;
	size_t             len;
	char               err[256];
	pasco_feature_spec missing = {
	    "nope", PASCO_FEATURE_INT64, 1, false, 0, 0};
	pasco_feature_spec typed = {
	    "ids", PASCO_FEATURE_FLOAT, 0, false, 0, 0};
	pasco_feature_spec sized = {
	    "values", PASCO_FEATURE_FLOAT, 4, false, 0, 0};
	PASCO_PASS(pasco_example_encode(v, &buf, &len));
	PASCO_FAIL(
	    pasco_example_parse(buf, len, &missing, 1, &p, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "'nope' is missing"), "%s", err);
	PASCO_FAIL(
	    pasco_example_parse(buf, len, &typed, 1, &p, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(
	    strstr(err, "'ids' is an int64_list; the spec wants a float_list"),
	    "%s", err);
	PASCO_FAIL(
	    pasco_example_parse(buf, len, &sized, 1, &p, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "has 3 values; the spec wants 4"), "%s", err);
	PASCO_FAIL(pasco_example_parse(
	               "\xff\xff\xff", 3, specs, 1, &p, err, sizeof(err)),
	    PASCO_EPROTO);
	cr_assert_null(p);
	free(buf);
	pasco_value_free(v);
}

Test(example, tfrecord_parse_and_batch_pipeline)
{
	char        dir[]    = "/tmp/pasco-ex-XXXXXX", path[128], cmd[160];
	const char *files[1] = {path};
	pasco_tfrecord_writer *w;
	pasco_dataset         *ds;
	pasco_value           *batch;
	int                    batches = 0;
	/* label and values only: fixed lengths batch */
	pasco_feature_spec fixed[] = {specs[0], specs[2]};
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/data.tfrecord", dir);
	PASCO_PASS(pasco_tfrecord_writer_open(&w, path));
	for (int i = 0; i < 50; i++) {
		pasco_value *v = sample(i);
		void        *buf;
		size_t       len;
		PASCO_PASS(pasco_example_encode(v, &buf, &len));
		PASCO_PASS(pasco_tfrecord_write(w, buf, len));
		free(buf);
		pasco_value_free(v);
	}
	PASCO_PASS(pasco_tfrecord_writer_close(w));
	PASCO_PASS(pasco_dataset_tfrecord(&ds, files, 1, NULL));
	PASCO_PASS(pasco_dataset_parse_examples(&ds, ds, fixed, 2));
	PASCO_PASS(pasco_dataset_batch(&ds, ds, 10, false));
	while (pasco_dataset_next(ds, &batch) == PASCO_OK) {
		const pasco_tensor *vals =
		    pasco_value_as_tensor(pasco_value_get(batch, "values"));
		cr_assert(vals->rank == 2 && vals->shape[0] == 10 &&
		          vals->shape[1] == 3);
		cr_assert_float_eq(pasco_tensor_get(vals, 3 * 9),
		    0.5 * (batches * 10 + 9), 1e-5);
		pasco_value_free(batch);
		batches++;
	}
	cr_assert_eq(batches, 5);
	pasco_dataset_free(ds);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(example, a_record_that_is_no_example_names_itself_through_the_pipeline)
{
	char        dir[]    = "/tmp/pasco-ex-XXXXXX", path[128], cmd[160];
	const char *files[1] = {path};
	pasco_tfrecord_writer *w;
	pasco_dataset         *ds;
	pasco_value           *v;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bad.tfrecord", dir);
	PASCO_PASS(pasco_tfrecord_writer_open(&w, path));
	PASCO_PASS(pasco_tfrecord_write(w, "\xff\xff\xff", 3));
	PASCO_PASS(pasco_tfrecord_writer_close(w));
	PASCO_PASS(pasco_dataset_tfrecord(&ds, files, 1, NULL));
	PASCO_PASS(pasco_dataset_parse_examples(&ds, ds, specs, 1));
	PASCO_PASS(pasco_dataset_prefetch(&ds, ds, 2));
	PASCO_FAIL(pasco_dataset_next(ds, &v), PASCO_EPROTO);
	cr_assert(strstr(pasco_dataset_last_error(), "parse_examples") != NULL,
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

static const pasco_csv_column cols[] = {
    {"label", PASCO_FEATURE_INT64, false, 0, 0},
    {"x", PASCO_FEATURE_FLOAT, true, -1, 0},
    {"city", PASCO_FEATURE_BYTES, false, 0, 0},
};

static pasco_dataset *
csv_of(const char *text, char *path)
{
	pasco_dataset    *ds;
	const char       *files[1] = {path};
	pasco_csv_options o = {.columns = cols, .ncolumns = 3, .header = true};
	FILE             *f;
	strcpy(path, "/tmp/pasco-csv-XXXXXX");
	cr_assert_neq(mkstemp(path), -1);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	PASCO_PASS(pasco_dataset_csv(&ds, files, 1, &o));
	return ds;
}

Test(example, csv_typed_columns_header_defaults_and_quotes)
{
	char           path[64];
	pasco_dataset *ds =
	    csv_of("label,x,city\n1,2.5,paris\n0,,\"new, york\"\r\n\n"
	           "7,-3e2,oslo\n",
	        path);
	pasco_value *e;
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(pasco_value_scalar(pasco_value_get(e, "label")), 1);
	cr_assert_float_eq(
	    pasco_value_scalar(pasco_value_get(e, "x")), 2.5, 1e-6);
	pasco_value_free(e);
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(
	    pasco_value_scalar(pasco_value_get(e, "x")), -1, "the default");
	const pasco_tensor *city =
	    pasco_value_as_tensor(pasco_value_get(e, "city"));
	cr_assert(city->count == 9 && memcmp(city->data, "new, york", 9) == 0);
	pasco_value_free(e);
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(pasco_value_scalar(pasco_value_get(e, "x")), -300);
	pasco_value_free(e);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(ds);
	unlink(path);
}

Test(example, csv_errors_name_file_line_and_column)
{
	char           path[64];
	pasco_value   *e;
	pasco_dataset *ds = csv_of("label,x,city\n1,2,a\nx,2,b\n", path);
	PASCO_PASS(pasco_dataset_next(ds, &e));
	pasco_value_free(e);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(),
	              ":3: column 'label': 'x' is not "
	              "an integer"),
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);
	unlink(path);
	ds = csv_of("h\n,1,a\n", path);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(),
	              "'label' is empty and has no default"),
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);
	unlink(path);
	ds = csv_of("h\n1,2\n", path);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_dataset_last_error(), "2 fields; the columns are 3"),
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);
	unlink(path);
}

Test(example, csv_shards_keep_every_nth_data_line_before_parsing)
{
	static const pasco_csv_column one[] = {
	    {"v", PASCO_FEATURE_INT64, false, 0, 0}};
	char        path[2][64];
	const char *files[2] = {path[0], path[1]};
	const char *text[2] = {"v\n0\n1\n\n2\n3\n", "v\n4\nnot a number\n6\n"};
	for (int f = 0; f < 2; f++) {
		FILE *fp;
		strcpy(path[f], "/tmp/pasco-csv-XXXXXX");
		cr_assert_neq(mkstemp(path[f]), -1);
		fp = fopen(path[f], "w");
		fputs(text[f], fp);
		fclose(fp);
	}
	/* data lines 0..6 over both files (header and empty lines not
	 * counted); shard 0 of 3 takes 0, 3, 6, never parsing line 5's text */
	int64_t        want[] = {0, 3, 6};
	pasco_dataset *ds;
	pasco_value   *e;
	PASCO_PASS(pasco_dataset_csv(&ds, files, 2,
	    &(pasco_csv_options){.columns = one,
	        .ncolumns                 = 1,
	        .header                   = true,
	        .num_shards               = 3,
	        .shard_index              = 0}));
	for (int i = 0; i < 3; i++) {
		PASCO_PASS(pasco_dataset_next(ds, &e));
		cr_assert_eq(pasco_value_scalar(pasco_value_get(e, "v")),
		    (double) want[i], "element %d", i);
		pasco_value_free(e);
	}
	cr_assert_eq(pasco_dataset_next(ds, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(ds);
	/* shard 2 of 3 meets line 5 and says where it is */
	PASCO_PASS(pasco_dataset_csv(&ds, files, 2,
	    &(pasco_csv_options){.columns = one,
	        .ncolumns                 = 1,
	        .header                   = true,
	        .num_shards               = 3,
	        .shard_index              = 2}));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(pasco_value_scalar(pasco_value_get(e, "v")), 2);
	pasco_value_free(e);
	cr_assert_eq(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(), ":3") != NULL ||
	              strstr(pasco_dataset_last_error(), "line 3") != NULL,
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);
	/* a shard index out of range is refused */
	cr_assert_eq(pasco_dataset_csv(&ds, files, 2,
	                 &(pasco_csv_options){.columns = one,
	                     .ncolumns                 = 1,
	                     .num_shards               = 3,
	                     .shard_index              = 3}),
	    PASCO_EINVAL);
	unlink(path[0]);
	unlink(path[1]);
}

/* The i64 tensor of feature name in v. */
static const int64_t *
keys_of(const pasco_value *v, const char *name, int64_t n)
{
	const pasco_tensor *t =
	    pasco_value_as_tensor(pasco_value_get(v, name));
	cr_assert_not_null(t, "no feature '%s'", name);
	cr_assert(t->dtype == PASCO_I64 && t->rank == 1 && t->shape[0] == n,
	    "'%s': dtype %d, %lld values, want i64 [%lld]", name,
	    (int) t->dtype, (long long) t->count, (long long) n);
	return t->data;
}

static const char *const tags[] = {"user:12345", "ad:42", "", "a"};

Test(example, hashed_bytes_features_are_the_keys_of_their_strings)
{
	pasco_feature_spec var = {
	    .name = "tags", .type = PASCO_FEATURE_HASHED};
	pasco_feature_spec fixed = {
	    .name = "tags", .type = PASCO_FEATURE_HASHED, .length = 4};
	pasco_value *v;
	void        *buf;
	size_t       len;
	char         err[256];
	bytes_example("tags", tags, 4, 1, &buf, &len);
	PASCO_PASS(
	    pasco_example_parse(buf, len, &var, 1, &v, err, sizeof(err)));
	const int64_t *k = keys_of(v, "tags", 4);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(k[i], pasco_hash_key(tags[i], strlen(tags[i])),
		    "'%s'", tags[i]);
	}
	cr_assert_eq(k[3], (int64_t) 0xD24EC4F1A98C6E5Bu, "XXH64 of 'a'");
	pasco_value_free(v);
	PASCO_PASS(
	    pasco_example_parse(buf, len, &fixed, 1, &v, err, sizeof(err)));
	keys_of(v, "tags", 4);
	pasco_value_free(v);
	fixed.length = 3;
	PASCO_FAIL(
	    pasco_example_parse(buf, len, &fixed, 1, &v, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(
	    strstr(err, "'tags' has 4 values; the spec wants 3"), "%s", err);
	free(buf);
}

Test(example, hashed_features_with_num_buckets_are_buckets)
{
	pasco_feature_spec spec = {
	    .name = "tags", .type = PASCO_FEATURE_HASHED, .num_buckets = 10};
	pasco_value *v;
	void        *buf;
	size_t       len;
	char         err[256];
	bytes_example("tags", tags, 4, 1, &buf, &len);
	PASCO_PASS(
	    pasco_example_parse(buf, len, &spec, 1, &v, err, sizeof(err)));
	const int64_t *k = keys_of(v, "tags", 4);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(
		    k[i], pasco_hash_bucket(tags[i], strlen(tags[i]), 10));
		cr_assert(k[i] >= 0 && k[i] < 10);
	}
	pasco_value_free(v);
	free(buf);
}

Test(example, hashed_feature_errors_name_the_feature)
{
	pasco_value       *v = sample(1), *p;
	void              *buf;
	size_t             len;
	char               err[256];
	pasco_feature_spec ids = {.name = "ids", .type = PASCO_FEATURE_HASHED};
	pasco_feature_spec gone = {
	    .name = "gone", .type = PASCO_FEATURE_HASHED, .length = 2};
	PASCO_PASS(pasco_example_encode(v, &buf, &len));
	pasco_value_free(v);
	PASCO_FAIL(
	    pasco_example_parse(buf, len, &ids, 1, &p, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(
	    strstr(err, "'ids' is an int64_list; the spec wants a bytes_list"),
	    "%s", err);
	ids.num_buckets = -1;
	PASCO_FAIL(
	    pasco_example_parse(buf, len, &ids, 1, &p, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "'ids': num_buckets -1"), "%s", err);
	ids.type        = PASCO_FEATURE_INT64;
	ids.num_buckets = 8;
	PASCO_FAIL(
	    pasco_example_parse(buf, len, &ids, 1, &p, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(strstr(err, "'ids': num_buckets 8") &&
	              strstr(err, "for a HASHED feature"),
	    "%s", err);
	/* a missing feature: INT64's rule, default_value as the key */
	PASCO_FAIL(
	    pasco_example_parse(buf, len, &gone, 1, &p, err, sizeof(err)),
	    PASCO_EINVAL);
	cr_assert(
	    strstr(err, "'gone' is missing and has no default"), "%s", err);
	gone.has_default   = true;
	gone.default_value = -1;
	PASCO_PASS(
	    pasco_example_parse(buf, len, &gone, 1, &p, err, sizeof(err)));
	const int64_t *k = keys_of(p, "gone", 2);
	cr_assert(k[0] == -1 && k[1] == -1);
	pasco_value_free(p);
	gone.length = 0;
	PASCO_PASS(
	    pasco_example_parse(buf, len, &gone, 1, &p, err, sizeof(err)));
	keys_of(p, "gone", 0);
	pasco_value_free(p);
	free(buf);
}

static const pasco_csv_column hashed_cols[] = {
    {.name = "city", .type = PASCO_FEATURE_HASHED},
    {.name             = "ad",
        .type          = PASCO_FEATURE_HASHED,
        .has_default   = true,
        .default_value = -1,
        .num_buckets   = 100},
};

/* A CSV source over text with columns (two of them). */
static pasco_dataset *
csv_with(const char *text, const pasco_csv_column *columns, char *path)
{
	pasco_dataset    *ds;
	const char       *files[1] = {path};
	pasco_csv_options o        = {.columns = columns, .ncolumns = 2};
	FILE             *f;
	strcpy(path, "/tmp/pasco-csv-XXXXXX");
	cr_assert_neq(mkstemp(path), -1);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	PASCO_PASS(pasco_dataset_csv(&ds, files, 1, &o));
	return ds;
}

static int64_t
key_of(const pasco_value *e, const char *name)
{
	const pasco_tensor *t =
	    pasco_value_as_tensor(pasco_value_get(e, name));
	cr_assert(t != NULL && t->dtype == PASCO_I64 && t->rank == 0);
	return *(const int64_t *) t->data;
}

Test(example, csv_hashed_columns_are_keys_of_the_unquoted_text)
{
	char           path[64];
	pasco_value   *e;
	pasco_dataset *ds =
	    csv_with("paris,ad:1\n\"new, york\",\n,x\n", hashed_cols, path);
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(key_of(e, "city"), pasco_hash_key("paris", 5));
	cr_assert_eq(key_of(e, "ad"), pasco_hash_bucket("ad:1", 4, 100));
	pasco_value_free(e);
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(key_of(e, "city"), pasco_hash_key("new, york", 9));
	cr_assert_eq(key_of(e, "ad"), -1, "the default");
	pasco_value_free(e);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(),
	              ":3: column 'city' is empty and has no default"),
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);
	unlink(path);
}

Test(example, csv_hashed_errors_name_the_column)
{
	char              path[64], text[1100 + 8];
	pasco_value      *e;
	pasco_dataset    *ds;
	pasco_csv_column  bad[2]   = {hashed_cols[0], hashed_cols[1]};
	const char       *files[1] = {"/nonexistent.csv"};
	pasco_csv_options o        = {.columns = bad, .ncolumns = 2};
	/* a field past the 1023 bytes read would hash its first bytes only */
	memset(text, 'x', 1100);
	strcpy(text + 1100, ",a\n");
	ds = csv_with(text, hashed_cols, path);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(),
	              ":1: column 'city': a field of 1100 bytes"),
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);
	unlink(path);
	bad[1].num_buckets = -3;
	PASCO_FAIL(pasco_dataset_csv(&ds, files, 1, &o), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_dataset_last_error(), "column 'ad': num_buckets -3"),
	    "%s", pasco_dataset_last_error());
	bad[1].num_buckets = 4;
	bad[1].type        = PASCO_FEATURE_FLOAT;
	PASCO_FAIL(pasco_dataset_csv(&ds, files, 1, &o), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(), "for a HASHED column"),
	    "%s", pasco_dataset_last_error());
}

/* pasco_example_encode writes a LIST of u8 tensors as one bytes_list,
 * which a HASHED spec reads back as the strings' keys. */
Test(example, a_list_of_strings_encodes_as_one_bytes_list)
{
	pasco_feature_spec spec = {
	    .name = "tags", .type = PASCO_FEATURE_HASHED};
	pasco_value *items[4], *dict, *v;
	void        *buf;
	size_t       len;
	char         err[256];
	for (int i = 0; i < 4; i++) {
		pasco_tensor *t;
		PASCO_PASS(pasco_tensor_from(&t, PASCO_U8, 1,
		    (int64_t[]){(int64_t) strlen(tags[i])}, tags[i],
		    strlen(tags[i])));
		items[i] = pasco_value_tensor(t);
	}
	dict = pasco_value_dict(1, "tags",
	    pasco_value_list(4, items[0], items[1], items[2], items[3]));
	PASCO_PASS(pasco_example_encode(dict, &buf, &len));
	PASCO_PASS(
	    pasco_example_parse(buf, len, &spec, 1, &v, err, sizeof(err)));
	const int64_t *k = keys_of(v, "tags", 4);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(k[i], pasco_hash_key(tags[i], strlen(tags[i])));
	}
	pasco_value_free(v);
	pasco_value_free(dict);
	free(buf);
	/* a list of anything else is refused */
	dict = pasco_value_dict(1, "x",
	    pasco_value_list(
	        1, pasco_value_tensor(test_scalar(PASCO_F32, 1))));
	PASCO_FAIL(pasco_example_encode(dict, &buf, &len), PASCO_EINVAL);
	pasco_value_free(dict);
}
