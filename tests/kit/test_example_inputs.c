/* Example features into model inputs by name: (x dict, y) batches, ids
 * and hashed string keys padded with -1 to their input's width, errors
 * naming the feature. */
#include "helpers.h"
#include "kit/bytes_example.h"

#include <string.h>

#include "pasco/example.h"

TestSuite(example_inputs, .timeout = 10);

#define RECORDS 5

/* Serialized Examples, one per call, as a TFRecord dataset yields them. */
typedef struct records {
	pasco_tensor *r[RECORDS + 1];
	int           n, at;
} records;

static int
records_next(void *arg, pasco_value **out)
{
	records *rs = arg;
	if (rs->at >= rs->n) {
		return PASCO_EOUTOFRANGE;
	}
	*out = pasco_value_tensor(pasco_tensor_hold(rs->r[rs->at++]));
	return PASCO_OK;
}

static void
records_free(void *arg)
{
	records *rs = arg;
	for (int i = 0; i < rs->n; i++) {
		pasco_tensor_release(rs->r[i]);
	}
	free(rs);
}

static void
add(records *rs, pasco_value *ex)
{
	void  *buf;
	size_t len;
	PASCO_PASS(pasco_example_encode(ex, &buf, &len));
	PASCO_PASS(pasco_tensor_from(&rs->r[rs->n++], PASCO_U8, 1,
	    (int64_t[]){(int64_t) len}, buf, len));
	free(buf);
	pasco_value_free(ex);
}

static pasco_value *
tensor_of(pasco_dtype dt, int64_t n, const void *v)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_from(
	    &t, dt, 1, &n, v, (size_t) n * pasco_dtype_size(dt)));
	return pasco_value_tensor(t);
}

/* Example i: "dense" 2 floats, "cats" i % 4 ids (0 .. 3 of them),
 * "label" i % 3, "other" ignored. */
static pasco_dataset *
examples(int n, int64_t extra_ids)
{
	records       *rs = calloc(1, sizeof(*rs));
	pasco_dataset *ds;
	for (int i = 0; i < n; i++) {
		float   d[2]   = {(float) i, -(float) i};
		int64_t ids[8] = {10 + i, 20 + i, 30 + i, 40, 50, 60, 70, 80};
		int64_t l      = i % 3;
		add(rs, pasco_value_dict(4, "dense",
		            tensor_of(PASCO_F32, 2, d), "cats",
		            tensor_of(PASCO_I64,
		                i % 4 + (i == n - 1 ? extra_ids : 0), ids),
		            "label", tensor_of(PASCO_I64, 1, &l), "other",
		            tensor_of(PASCO_F32, 1, d)));
	}
	PASCO_PASS(pasco_dataset_from_generator(
	    &ds, records_next, NULL, records_free, rs));
	return ds;
}

static const pasco_example_input inputs[] = {
    {"dense", PASCO_FEATURE_FLOAT, 2, false, 0, 0},
    {"cats", PASCO_FEATURE_INT64, 3, false, 0, 0},
};

Test(example_inputs, features_by_name_make_x_and_ids_are_padded)
{
	pasco_dataset *ds = examples(RECORDS, 0);
	pasco_value   *e;
	PASCO_PASS(pasco_dataset_parse_example_inputs(
	    &ds, ds, inputs, 2, "label", PASCO_FEATURE_INT64, 4, false));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(pasco_value_kind_of(e), PASCO_VALUE_LIST);
	const pasco_value *x = pasco_value_item(e, 0);
	cr_assert_eq(pasco_value_kind_of(x), PASCO_VALUE_DICT);
	cr_assert_eq(pasco_value_size(x), 2, "only the inputs");
	const pasco_tensor *d =
	    pasco_value_as_tensor(pasco_value_get(x, "dense"));
	const pasco_tensor *c =
	    pasco_value_as_tensor(pasco_value_get(x, "cats"));
	const pasco_tensor *y = pasco_value_as_tensor(pasco_value_item(e, 1));
	cr_assert(d->dtype == PASCO_F32 && d->rank == 2 && d->shape[0] == 4 &&
	          d->shape[1] == 2);
	cr_assert(((float *) d->data)[6] == 3 && ((float *) d->data)[7] == -3);
	cr_assert(c->dtype == PASCO_I64 && c->rank == 2 && c->shape[1] == 3);
	const int64_t want[] = {
	    -1, -1, -1, 11, -1, -1, 12, 22, -1, 13, 23, 33};
	cr_assert_arr_eq(c->data, want, sizeof(want));
	cr_assert(y->dtype == PASCO_I64 && y->rank == 1 && y->shape[0] == 4);
	const int64_t labels[] = {0, 1, 2, 0};
	cr_assert_arr_eq(y->data, labels, sizeof(labels));
	pasco_value_free(e);
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(
	    pasco_value_as_tensor(pasco_value_item(e, 1))->shape[0], 1);
	pasco_value_free(e);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(ds);

	/* no label: x alone, for predict; a FLOAT label */
	ds = examples(RECORDS, 0);
	PASCO_PASS(pasco_dataset_parse_example_inputs(
	    &ds, ds, inputs, 1, NULL, 0, 5, true));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	cr_assert_eq(pasco_value_kind_of(e), PASCO_VALUE_DICT);
	cr_assert_eq(pasco_value_size(e), 1);
	pasco_value_free(e);
	pasco_dataset_free(ds);
	ds = examples(RECORDS, 0);
	PASCO_PASS(pasco_dataset_parse_example_inputs(
	    &ds, ds, inputs, 1, "other", PASCO_FEATURE_FLOAT, 5, true));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	y = pasco_value_as_tensor(pasco_value_item(e, 1));
	cr_assert(y->dtype == PASCO_F32 && y->rank == 1 && y->shape[0] == 5);
	cr_assert(((float *) y->data)[4] == 4);
	pasco_value_free(e);
	pasco_dataset_free(ds);
}

Test(example_inputs, errors_name_the_feature)
{
	pasco_dataset *ds = examples(2, 5); /* the last has 6 ids */
	pasco_value   *e;
	PASCO_PASS(pasco_dataset_parse_example_inputs(
	    &ds, ds, inputs, 2, "label", PASCO_FEATURE_INT64, 4, false));
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert_str_eq(pasco_dataset_last_error(),
	    "example_inputs: feature 'cats' has 6 ids; its input takes at "
	    "most 3");
	pasco_dataset_free(ds);

	ds = examples(2, 0);
	PASCO_PASS(pasco_dataset_parse_example_inputs(
	    &ds, ds, inputs, 2, "nolabel", PASCO_FEATURE_INT64, 4, false));
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(), "nolabel") != NULL, "%s",
	    pasco_dataset_last_error());
	pasco_dataset_free(ds);

	pasco_example_input bad = {
	    "text", PASCO_FEATURE_BYTES, 1, false, 0, 0};
	ds = examples(1, 0);
	PASCO_FAIL(pasco_dataset_parse_example_inputs(&ds, ds, &bad, 1,
	               "label", PASCO_FEATURE_INT64, 4, false),
	    PASCO_EINVAL);
	cr_assert_null(ds);
	cr_assert(strstr(pasco_dataset_last_error(), "'text'") != NULL);
}

/* Records of "tags": record i has the first i % 3 of three strings. */
static const char *const tag_text[] = {"user:1", "ad:2", "city:oslo"};

static pasco_dataset *
tag_examples(int n, int last_count)
{
	records       *rs = calloc(1, sizeof(*rs));
	pasco_dataset *ds;
	for (int i = 0; i < n; i++) {
		void  *buf;
		size_t len;
		bytes_example("tags", tag_text,
		    i == n - 1 && last_count >= 0 ? (size_t) last_count
		                                  : (size_t) (i % 3),
		    i, &buf, &len);
		PASCO_PASS(pasco_tensor_from(&rs->r[rs->n++], PASCO_U8, 1,
		    (int64_t[]){(int64_t) len}, buf, len));
		free(buf);
	}
	PASCO_PASS(pasco_dataset_from_generator(
	    &ds, records_next, NULL, records_free, rs));
	return ds;
}

Test(example_inputs, hashed_strings_are_keys_padded_like_ids)
{
	pasco_example_input in[2] = {
	    {.name = "tags", .type = PASCO_FEATURE_HASHED, .width = 3},
	    {.name           = "tag_bucket",
	        .type        = PASCO_FEATURE_HASHED,
	        .width       = 2,
	        .num_buckets = 7}};
	pasco_dataset      *ds = tag_examples(3, -1);
	pasco_value        *e;
	const pasco_tensor *k;
	int64_t             want[9];
	PASCO_PASS(pasco_dataset_parse_example_inputs(
	    &ds, ds, in, 1, "label", PASCO_FEATURE_INT64, 3, false));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	k = pasco_value_as_tensor(
	    pasco_value_get(pasco_value_item(e, 0), "tags"));
	cr_assert(k->dtype == PASCO_I64 && k->rank == 2 && k->shape[0] == 3 &&
	          k->shape[1] == 3);
	for (int i = 0; i < 3; i++) {
		for (int j = 0; j < 3; j++) {
			want[i * 3 + j] = j < i % 3
			                      ? pasco_hash_key(tag_text[j],
			                            strlen(tag_text[j]))
			                      : -1;
		}
	}
	cr_assert_arr_eq(k->data, want, sizeof(want));
	pasco_value_free(e);
	pasco_dataset_free(ds);

	/* buckets of 7 in a width of 2 */
	in[1].name = "tags";
	ds         = tag_examples(3, -1);
	PASCO_PASS(pasco_dataset_parse_example_inputs(
	    &ds, ds, &in[1], 1, NULL, 0, 3, false));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	k = pasco_value_as_tensor(pasco_value_get(e, "tags"));
	cr_assert(k->rank == 2 && k->shape[0] == 3 && k->shape[1] == 2);
	const int64_t buckets[] = {-1, -1, pasco_hash_bucket("user:1", 6, 7),
	    -1, pasco_hash_bucket("user:1", 6, 7),
	    pasco_hash_bucket("ad:2", 4, 7)};
	cr_assert_arr_eq(k->data, buckets, sizeof(buckets));
	pasco_value_free(e);
	pasco_dataset_free(ds);
}

Test(example_inputs, hashed_errors_name_the_feature)
{
	pasco_example_input in = {
	    .name = "tags", .type = PASCO_FEATURE_HASHED, .width = 2};
	pasco_dataset *ds = tag_examples(2, 3); /* the last has 3 */
	pasco_value   *e;
	PASCO_PASS(pasco_dataset_parse_example_inputs(
	    &ds, ds, &in, 1, "label", PASCO_FEATURE_INT64, 4, false));
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert_str_eq(pasco_dataset_last_error(),
	    "example_inputs: feature 'tags' has 3 ids; its input takes at "
	    "most 2");
	pasco_dataset_free(ds);

	/* an int64_list where strings are wanted */
	in.name = "cats";
	ds      = examples(2, 0);
	PASCO_PASS(pasco_dataset_parse_example_inputs(
	    &ds, ds, &in, 1, "label", PASCO_FEATURE_INT64, 4, false));
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(),
	              "'cats' is an int64_list; the spec wants a bytes_list"),
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);

	in.num_buckets = -2;
	ds             = examples(1, 0);
	PASCO_FAIL(pasco_dataset_parse_example_inputs(&ds, ds, &in, 1, "label",
	               PASCO_FEATURE_INT64, 4, false),
	    PASCO_EINVAL);
	cr_assert_null(ds);
	cr_assert(
	    strstr(pasco_dataset_last_error(), "('cats'): num_buckets -2"),
	    "%s", pasco_dataset_last_error());
	in.num_buckets = 5;
	in.type        = PASCO_FEATURE_INT64;
	ds             = examples(1, 0);
	PASCO_FAIL(pasco_dataset_parse_example_inputs(&ds, ds, &in, 1, "label",
	               PASCO_FEATURE_INT64, 4, false),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(), "for a HASHED input"),
	    "%s", pasco_dataset_last_error());
}

/* Example i of a sequence tagger's data: "tok" 3 ids, "tags" 3 class ids
 * (one per step), "tgt" 6 floats (2 per step), "short" 2 ids. */
static pasco_dataset *
sequences(int n)
{
	records       *rs = calloc(1, sizeof(*rs));
	pasco_dataset *ds;
	for (int i = 0; i < n; i++) {
		int64_t tok[3]  = {i + 1, i + 2, 0};
		int64_t tags[3] = {i % 4, (i + 1) % 4, 0};
		float   tgt[6]  = {(float) i, 0.5f, 1, 2, 3, -(float) i};
		add(rs,
		    pasco_value_dict(4, "tok", tensor_of(PASCO_I64, 3, tok),
		        "tags", tensor_of(PASCO_I64, 3, tags), "tgt",
		        tensor_of(PASCO_F32, 6, tgt), "short",
		        tensor_of(PASCO_I64, 2, tags)));
	}
	PASCO_PASS(pasco_dataset_from_generator(
	    &ds, records_next, NULL, records_free, rs));
	return ds;
}

Test(example_inputs, sequence_labels_batch_as_batch_steps_dims)
{
	static const pasco_example_input tok[] = {
	    {"tok", PASCO_FEATURE_INT64, 3, false, 0, 0}};
	pasco_example_label tags = {"tags", PASCO_FEATURE_INT64, 1, {3}};
	pasco_example_label tgt  = {"tgt", PASCO_FEATURE_FLOAT, 2, {3, 2}};
	pasco_dataset      *ds   = sequences(RECORDS);
	pasco_value        *e;
	PASCO_PASS(pasco_dataset_parse_example_labeled(
	    &ds, ds, tok, 1, &tags, 4, false));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	const pasco_tensor *y = pasco_value_as_tensor(pasco_value_item(e, 1));
	cr_assert(y->dtype == PASCO_I64 && y->rank == 2 && y->shape[0] == 4 &&
	              y->shape[1] == 3,
	    "y [batch, T]: rank %d", (int) y->rank);
	const int64_t want[] = {0, 1, 0, 1, 2, 0, 2, 3, 0, 3, 0, 0};
	cr_assert_arr_eq(y->data, want, sizeof(want));
	pasco_value_free(e);
	pasco_dataset_free(ds);

	ds = sequences(RECORDS);
	PASCO_PASS(pasco_dataset_parse_example_labeled(
	    &ds, ds, tok, 1, &tgt, 5, false));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	y = pasco_value_as_tensor(pasco_value_item(e, 1));
	cr_assert(y->dtype == PASCO_F32 && y->rank == 3 && y->shape[0] == 5 &&
	              y->shape[1] == 3 && y->shape[2] == 2,
	    "y [batch, T, D]: rank %d", (int) y->rank);
	cr_assert(((float *) y->data)[4 * 6] == 4 &&
	          ((float *) y->data)[4 * 6 + 5] == -4);
	pasco_value_free(e);
	pasco_dataset_free(ds);

	/* rank 0: one value per example, as pasco_dataset_parse_example_
	 * inputs reads it; a label with other than T values is refused at
	 * its record, naming the feature and both counts */
	pasco_example_label one = {"tags", PASCO_FEATURE_INT64, 0, {0}};
	ds                      = sequences(1);
	PASCO_PASS(pasco_dataset_parse_example_labeled(
	    &ds, ds, tok, 1, &one, 4, false));
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(),
	              "feature 'tags' has 3 values; the spec wants 1"),
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);
	tags.name = "short";
	ds        = sequences(1);
	PASCO_PASS(pasco_dataset_parse_example_labeled(
	    &ds, ds, tok, 1, &tags, 4, false));
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(),
	              "feature 'short' has 2 values; the spec wants 3"),
	    "%s", pasco_dataset_last_error());
	pasco_dataset_free(ds);

	/* a bad shape is refused at the call */
	pasco_example_label bad = {"tags", PASCO_FEATURE_INT64, 3, {3, 1}};
	ds                      = sequences(1);
	PASCO_FAIL(pasco_dataset_parse_example_labeled(
	               &ds, ds, tok, 1, &bad, 4, false),
	    PASCO_EINVAL);
	cr_assert_null(ds);
	cr_assert(strstr(pasco_dataset_last_error(),
	              "label 'tags': its shape must be [] (one value), [T] "
	              "or [T, D]"),
	    "%s", pasco_dataset_last_error());
	bad.rank     = 1;
	bad.shape[0] = 0;
	ds           = sequences(1);
	PASCO_FAIL(pasco_dataset_parse_example_labeled(
	               &ds, ds, tok, 1, &bad, 4, false),
	    PASCO_EINVAL);
}
