/*
 * The preprocessing layers' C API (layers.h, "Preprocessing"): the
 * constructors with Keras's index layout, a model of a string input
 * (pasco_model_set_string_input) through StringLookup into an Embedding
 * whose rows are the looked-up ids, the constructors' errors naming the
 * layer and the value, and a files dataset's CSV read by feature (string
 * columns as fingerprints, kit/data/files_csv.c). The numerics of every
 * layer against numpy are tests/python/prep_layers.py's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "files_dataset.h"
#include "helpers.h"
#include "pasco/hash.h"
#include "pasco/layers.h"
#include "pasco/tape.h"

TestSuite(prep, .timeout = 30);

static pasco_tensor *
strings(int64_t n, const char *const *s)
{
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_I64, 2, (int64_t[]){n, 1}));
	for (int64_t k = 0; k < n; k++) {
		((int64_t *) t->data)[k] = pasco_hash_key(s[k], strlen(s[k]));
	}
	return t;
}

Test(prep, a_string_lookup_feeds_an_embedding_the_keras_indices)
{
	const char          *vocab[] = {"paris", "rome", "oslo"};
	pasco_lookup_options o       = pasco_lookup_defaults();
	pasco_layer          l[2];
	pasco_model         *m;
	pasco_tape          *tp;
	o.mask_token = "";
	pasco_layer_reset_names();
	PASCO_PASS(pasco_layer_string_lookup(&l[0], 3, vocab, &o));
	cr_assert_str_eq(l[0].name, "string_lookup");
	l[1] = pasco_layer_on(pasco_layer_embedding(5, 2), 1, (int32_t[]){0});
	l[1].combiner        = PASCO_COMBINE_SUM;
	pasco_model_input in = {"city", 1, true};
	PASCO_PASS(pasco_model_functional(&m, 1, &in, 2, l, 1));
	pasco_layer_release(&l[0]);
	PASCO_PASS(pasco_model_set_string_input(m, 0));
	cr_assert_eq(pasco_model_output_width(m), 2);

	/* row r of the table is (r, 10 r): the output names the index */
	pasco_tensor *table,
	    *x = strings(4, (const char *[]){"oslo", "", "lima", "paris"});
	PASCO_PASS(
	    pasco_tensor_alloc(&table, PASCO_F32, 2, (int64_t[]){5, 2}));
	for (int r = 0; r < 5; r++) {
		((float *) table->data)[2 * r]     = (float) r;
		((float *) table->data)[2 * r + 1] = 10.0f * (float) r;
	}
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tnode *nodes[] = {pasco_tape_watch_table(tp, table)};
	pasco_tnode *out     = pasco_model_call_with(m, tp, &x, nodes);
	cr_assert_not_null(out, "%s", pasco_tape_message(tp));
	/* mask 0, OOV 1, then paris 2, rome 3, oslo 4 */
	const float *v      = pasco_tnode_value(out)->data;
	const float  want[] = {4, 40, 0, 0, 1, 10, 2, 20};
	for (int k = 0; k < 8; k++) {
		cr_assert_float_eq(
		    v[k], want[k], 0, "element %d: %g", k, v[k]);
	}
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_tensor_release(table);
	pasco_model_free(m);
}

Test(prep, a_lookup_on_numbers_and_a_feature_input_of_strings_are_refused)
{
	pasco_layer  l;
	pasco_model *m;
	pasco_tape  *tp;
	PASCO_PASS(
	    pasco_layer_string_lookup(&l, 1, (const char *[]){"a"}, NULL));
	snprintf(l.name, sizeof(l.name), "words");
	pasco_model_input in = {"x", 1, true};
	PASCO_PASS(pasco_model_functional(&m, 1, &in, 1, &l, 1));
	pasco_layer_release(&l);
	pasco_tensor *x;
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_I64, 2, (int64_t[]){1, 1}));
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	cr_assert_null(pasco_model_call_with(m, tp, &x, NULL));
	cr_assert(strstr(pasco_tape_message(tp), "words") &&
	              strstr(pasco_tape_message(tp), "not strings"),
	    "%s", pasco_tape_message(tp));
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_model_free(m);
	pasco_model_input feats = {"f", 1, false};
	PASCO_PASS(pasco_layer_hashing(&l, 4, NULL));
	PASCO_PASS(pasco_model_functional(&m, 1, &feats, 1, &l, 1));
	pasco_layer_release(&l);
	PASCO_FAIL(pasco_model_set_string_input(m, 0), PASCO_EINVAL);
	pasco_model_free(m);
}

Test(prep, bad_options_name_the_layer_and_the_value)
{
	pasco_layer          l;
	pasco_lookup_options o = pasco_lookup_defaults();
	pasco_layer_reset_names();
	PASCO_FAIL(pasco_layer_hashing(&l, 0, NULL), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "hashing: num_bins must be "
	                                           ">= 1, got 0"),
	    "%s", pasco_model_last_error());
	cr_assert_eq(l.prep, NULL);
	PASCO_FAIL(pasco_layer_string_lookup(
	               &l, 3, (const char *[]){"x", "y", "x"}, NULL),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "'x' at index 2 repeats 'x' at index 0"),
	    "%s", pasco_model_last_error());
	PASCO_FAIL(pasco_layer_category_encoding(&l, 3, (pasco_output_mode) 9),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "category_encoding"), "%s",
	    pasco_model_last_error());
	o.max_tokens = 3;
	PASCO_FAIL(
	    pasco_layer_integer_lookup(&l, 3, (const int64_t[]){4, 5, 6}, &o),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "larger than max_tokens 3"),
	    "%s", pasco_model_last_error());
	PASCO_FAIL(pasco_layer_discretization(
	               &l, 2, (const double[]){1, 0}, PASCO_OUTPUT_INT),
	    PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "ascending"), "%s",
	    pasco_model_last_error());
	o                 = pasco_lookup_defaults();
	o.vocabulary_file = "/nonexistent/vocab.txt";
	PASCO_FAIL(pasco_layer_string_lookup(&l, 0, NULL, &o), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "/nonexistent/vocab.txt"),
	    "%s", pasco_model_last_error());
}

Test(prep, a_vocabulary_file_gives_one_token_per_line)
{
	char                 path[] = "/tmp/pasco-vocab-XXXXXX";
	int                  fd     = mkstemp(path);
	pasco_lookup_options o      = pasco_lookup_defaults();
	pasco_layer          l;
	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, "b\na\n\n", 5), 5);
	close(fd);
	o.vocabulary_file = path;
	o.num_oov_indices = 2;
	PASCO_PASS(pasco_layer_string_lookup(&l, 0, NULL, &o));
	cr_assert_eq(l.prep != NULL, true);
	pasco_model      *m;
	pasco_model_input in = {"s", 1, true};
	PASCO_PASS(pasco_model_functional(&m, 1, &in, 1, &l, 1));
	pasco_layer_release(&l);
	PASCO_PASS(pasco_model_set_string_input(m, 0));
	pasco_tensor *x = strings(2, (const char *[]){"a", "b"});
	pasco_tape   *tp;
	PASCO_PASS(pasco_tape_alloc(&tp, false, 1));
	pasco_tnode *out = pasco_model_call_with(m, tp, &x, NULL);
	cr_assert_not_null(out, "%s", pasco_tape_message(tp));
	const float *v = pasco_tnode_value(out)->data;
	cr_assert(v[0] == 3 && v[1] == 2, "a %g, b %g", v[0], v[1]);
	pasco_tape_free(tp);
	pasco_tensor_release(x);
	pasco_model_free(m);
	unlink(path);
}

Test(prep, a_csv_read_by_feature_gives_each_column_its_input)
{
	char                  dir[] = "/tmp/pasco-prep-XXXXXX", spec[1024];
	char                  file[64];
	pasco_dataset_context ctx = {0, 1, 0, NULL};
	pasco_dataset        *ds;
	pasco_value          *e;
	cr_assert_not_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/t.csv", dir);
	FILE *f = fopen(file, "w");
	fprintf(f, "city,n,age,label\nrome,3,1.5,1\n\"oslo\",4,2,0\n");
	fclose(f);
	snprintf(spec, sizeof(spec),
	    "{\"format\":\"csv\",\"files\":[\"%s\"],\"label\":\"label\","
	    "\"batch_size\":2,\"features\":{\"city\":{\"type\":\"string\"},"
	    "\"age\":{\"type\":\"float\"}}}",
	    file);
	PASCO_PASS(pasci_files_dataset(spec, &ctx, &ds));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	const pasco_value  *x = pasco_value_item(e, 0);
	const pasco_tensor *city =
	    pasco_value_as_tensor(pasco_value_get(x, "city"));
	const pasco_tensor *age =
	    pasco_value_as_tensor(pasco_value_get(x, "age"));
	const pasco_tensor *y = pasco_value_as_tensor(pasco_value_item(e, 1));
	cr_assert(city != NULL && age != NULL && y != NULL);
	cr_assert(city->dtype == PASCO_I64 && city->rank == 2 &&
	          city->shape[0] == 2 && city->shape[1] == 1);
	cr_assert_eq(((int64_t *) city->data)[0], pasco_hash_key("rome", 4));
	cr_assert_eq(((int64_t *) city->data)[1], pasco_hash_key("oslo", 4));
	cr_assert(age->dtype == PASCO_F32 && ((float *) age->data)[0] == 1.5f);
	cr_assert_eq(((int64_t *) y->data)[1], 0);
	cr_assert_null(pasco_value_get(x, "n"));
	pasco_value_free(e);
	pasco_dataset_free(ds);
	/* a feature that is no column is refused naming it */
	snprintf(spec, sizeof(spec),
	    "{\"format\":\"csv\",\"files\":[\"%s\"],\"label\":\"label\","
	    "\"features\":{\"town\":{\"type\":\"string\"}}}",
	    file);
	PASCO_FAIL(pasci_files_dataset(spec, &ctx, &ds), PASCO_EINVAL);
	cr_assert(strstr(pasco_dataset_last_error(), "features.town"), "%s",
	    pasco_dataset_last_error());
	unlink(file);
	rmdir(dir);
}
