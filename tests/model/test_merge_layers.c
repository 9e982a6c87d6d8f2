/* Issue 33's shape and merge layers (model/layers/flatten.c, reshape.c,
 * add.c, multiply.c, average.c, dot.c, global_average_pooling1d.c,
 * Embedding's sequence and mask_zero, Dropout's noise_shape and seed):
 * the per-example shapes a model gives each layer, the errors that name
 * the layer and the shapes, and configs that read back as written. Their
 * values and gradients are checked against numpy by
 * tests/python/layers_merge_numerics.py. */
#include "helpers.h"

#include <stdlib.h>
#include <string.h>

TestSuite(merge_layers, .timeout = 30);

#define IN(k) PASCO_MODEL_INPUT(k)

/* A functional model of inputs in[0..ni) and layers l[0..n): its error
 * (PASCO_EINVAL) and message, or the model. */
static int
make(pasco_model **m, size_t ni, const pasco_model_input *in, size_t n,
    const pasco_layer *l)
{
	return pasco_model_functional(m, ni, in, n, l, 1);
}

static void
assert_shape(const pasco_model *m, size_t i, int32_t rank, int64_t d0,
    int64_t d1, int64_t d2)
{
	const int64_t *dims;
	int64_t        want[3] = {d0, d1, d2};
	cr_assert_eq(
	    pasco_model_layer_shape(m, i, &dims), rank, "layer %zu's rank", i);
	for (int32_t k = 0; k < rank; k++) {
		cr_assert_eq(dims[k], want[k], "layer %zu, dimension %d: %lld",
		    i, (int) k, (long long) dims[k]);
	}
}

Test(merge_layers, each_layer_has_its_keras_shape_per_example)
{
	pasco_model_input in[] = {{"ids", 5, true}, {"f", 12, false}};
	pasco_layer       l[]  = {
	           pasco_layer_on(pasco_layer_embedding_sequence(9, 4, true), 1,
	               (int32_t[]){IN(0)}), /* 0 */
	           pasco_layer_on(
	               pasco_layer_dropout(0.5), 1, (int32_t[]){0}), /* 1 */
	           pasco_layer_on(pasco_layer_global_average_pooling1d(), 1,
	               (int32_t[]){1}), /* 2 */
	           pasco_layer_on(pasco_layer_flatten(), 1, (int32_t[]){0}), /* 3 */
	           pasco_layer_on(pasco_layer_reshape(2, (int64_t[]){-1, 4}), 1,
	               (int32_t[]){IN(1)}), /* 4 */
	           pasco_layer_on(pasco_layer_add(), 2, (int32_t[]){0, 0}), /* 5 */
	           pasco_layer_on(pasco_layer_flatten(), 1, (int32_t[]){4}), /* 6 */
	           pasco_layer_on(pasco_layer_dense(4, PASCO_ACT_LINEAR), 1,
	               (int32_t[]){6}), /* 7 */
	           pasco_layer_on(
	               pasco_layer_dot(1, true), 2, (int32_t[]){2, 7}), /* 8 */
        };
	pasco_model *m;
	cr_assert_eq(make(&m, 2, in, 9, l), 0, "%s", pasco_model_last_error());
	assert_shape(m, 0, 2, 5, 4, 0);
	assert_shape(m, 1, 2, 5, 4, 0);
	assert_shape(m, 2, 1, 4, 0, 0);
	assert_shape(m, 3, 1, 20, 0, 0);
	assert_shape(m, 4, 2, 3, 4, 0);
	assert_shape(m, 5, 2, 5, 4, 0);
	assert_shape(m, 6, 1, 12, 0, 0);
	assert_shape(m, 8, 1, 1, 0, 0);
	cr_assert_eq(pasco_model_output_width(m), 1);
	pasco_model_free(m);
}

/* The model of one input f [batch, width] and layers l, refused with a
 * message holding each of want[0..n). */
static void
assert_refused(int64_t width, size_t nl, const pasco_layer *l, size_t n,
    const char *const *want)
{
	pasco_model_input in[] = {{"f", width, false}};
	pasco_model      *m    = NULL;
	cr_assert_eq(make(&m, 1, in, nl, l), PASCO_EINVAL);
	cr_assert_null(m);
	for (size_t k = 0; k < n; k++) {
		cr_assert(strstr(pasco_model_last_error(), want[k]) != NULL,
		    "'%s' does not say '%s'", pasco_model_last_error(),
		    want[k]);
	}
}

Test(merge_layers, a_reshape_of_another_size_names_the_layer_and_both_shapes)
{
	pasco_layer r = pasco_layer_reshape(2, (int64_t[]){5, -1});
	snprintf(r.name, sizeof(r.name), "to_grid");
	assert_refused(
	    12, 1, &r, 3, (const char *[]){"to_grid", "(12,)", "[5, -1]"});
	r = pasco_layer_reshape(2, (int64_t[]){-1, -1});
	assert_refused(
	    12, 1, &r, 2, (const char *[]){"one at most -1", "[-1, -1]"});
	/* sizes whose product passes int64: refused, not overflowed */
	r = pasco_layer_reshape(3, (int64_t[]){4096, (int64_t) 1 << 53, -1});
	assert_refused(4096, 1, &r, 1, (const char *[]){"cannot reshape"});
}

Test(merge_layers, a_sequence_past_2_to_the_31_values_is_refused)
{
	pasco_model_input in[] = {{"ids", (int64_t) 1 << 20, true}};
	pasco_layer       e =
	    pasco_layer_embedding_sequence(9, (int64_t) 1 << 40, false);
	pasco_model *m;
	cr_assert_eq(make(&m, 1, in, 1, &e), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(), "at most 2^31 values") != NULL,
	    "%s", pasco_model_last_error());
}

Test(merge_layers, merges_of_other_shapes_name_the_layer_and_both_shapes)
{
	pasco_model_input in[] = {{"a", 3, false}, {"b", 4, false}};
	pasco_layer       add =
	    pasco_layer_on(pasco_layer_add(), 2, (int32_t[]){IN(0), IN(1)});
	pasco_layer dot = pasco_layer_on(
	    pasco_layer_dot(1, false), 2, (int32_t[]){IN(0), IN(1)});
	pasco_layer one =
	    pasco_layer_on(pasco_layer_multiply(), 1, (int32_t[]){IN(0)});
	pasco_model *m;
	snprintf(add.name, sizeof(add.name), "sum_ab");
	cr_assert_eq(make(&m, 2, in, 1, &add), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "sum_ab: inputs 0 and 1 are (3,) and (4,) per "
	              "example; an Add takes inputs of one shape") != NULL,
	    "%s", pasco_model_last_error());
	cr_assert_eq(make(&m, 2, in, 1, &dot), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "(3,) and (4,)") != NULL,
	    "%s", pasco_model_last_error());
	cr_assert_eq(make(&m, 2, in, 1, &one), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "2 or more inputs") != NULL,
	    "%s", pasco_model_last_error());
	dot = pasco_layer_on(
	    pasco_layer_dot(2, false), 2, (int32_t[]){IN(0), IN(0)});
	cr_assert_eq(make(&m, 2, in, 1, &dot), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(), "axes (2, 2)") != NULL,
	    "%s", pasco_model_last_error());
}

Test(merge_layers, a_sequence_is_refused_by_a_concatenate_naming_a_flatten)
{
	pasco_model_input in[] = {{"ids", 5, true}};
	pasco_layer       l[]  = {pasco_layer_embedding_sequence(9, 4, false),
	           pasco_layer_on(pasco_layer_concatenate(), 2, (int32_t[]){0, 0})};
	pasco_model      *m;
	snprintf(l[1].name, sizeof(l[1].name), "both");
	cr_assert_eq(make(&m, 1, in, 2, l), PASCO_EINVAL);
	cr_assert(strstr(pasco_model_last_error(),
	              "both: a Concatenate takes [batch, width] inputs; input "
	              "0 is (5, 4) per example (put a Flatten") != NULL,
	    "%s", pasco_model_last_error());
}

Test(merge_layers, a_dense_on_a_sequence_works_on_its_last_axis)
{
	pasco_model_input in[] = {{"ids", 5, true}};
	pasco_layer       l[]  = {pasco_layer_embedding_sequence(9, 4, true),
	           pasco_layer_dense(3, PASCO_ACT_RELU)};
	pasco_model      *m;
	const int64_t    *shape;
	cr_assert_eq(make(&m, 1, in, 2, l), 0, "%s", pasco_model_last_error());
	assert_shape(m, 1, 2, 5, 3, 0);
	cr_assert_eq(pasco_model_variable_shape(m, 1, &shape), 2);
	cr_assert(shape[0] == 4 && shape[1] == 3, "kernel [%lld, %lld]",
	    (long long) shape[0], (long long) shape[1]);
	pasco_model_free(m);
}

Test(merge_layers, bad_options_are_refused_naming_the_layer)
{
	pasco_layer pool = pasco_layer_global_average_pooling1d();
	assert_refused(
	    6, 1, &pool, 2, (const char *[]){pool.name, "(6,) per example"});
	pasco_layer d    = pasco_layer_dropout(0.5);
	d.noise_rank     = 2;
	d.noise_shape[0] = -1;
	d.noise_shape[1] = 3;
	assert_refused(6, 1, &d, 2, (const char *[]){d.name, "noise_shape"});
	pasco_model_input in[] = {{"ids", 5, true}};
	pasco_layer       e    = pasco_layer_embedding(9, 4);
	pasco_model      *m;
	e.mask_zero = true; /* with combiner mean */
	cr_assert_eq(make(&m, 1, in, 1, &e), PASCO_EINVAL);
	cr_assert(
	    strstr(pasco_model_last_error(), "combiner must be none") != NULL,
	    "%s", pasco_model_last_error());
}

Test(merge_layers, every_new_kinds_config_reads_back_as_written)
{
	pasco_model_input in[] = {{"ids", 5, true}, {"f", 12, false}};
	pasco_layer       l[]  = {
	           pasco_layer_on(pasco_layer_embedding_sequence(9, 4, true), 1,
	               (int32_t[]){IN(0)}),
	           pasco_layer_on(pasco_layer_dropout(0.25), 1, (int32_t[]){0}),
	           pasco_layer_on(pasco_layer_multiply(), 2, (int32_t[]){0, 1}),
	           pasco_layer_on(pasco_layer_average(), 2, (int32_t[]){0, 2}),
	           pasco_layer_on(
	               pasco_layer_global_average_pooling1d(), 1, (int32_t[]){3}),
	           pasco_layer_on(pasco_layer_reshape(2, (int64_t[]){4, 3}), 1,
	               (int32_t[]){IN(1)}),
	           pasco_layer_on(pasco_layer_flatten(), 1, (int32_t[]){5}),
	           pasco_layer_on(
	               pasco_layer_dense(4, PASCO_ACT_LINEAR), 1, (int32_t[]){6}),
	           pasco_layer_on(pasco_layer_dot(-1, true), 2, (int32_t[]){4, 7}),
        };
	pasco_model *m, *back;
	char        *one, *two;
	l[1].noise_rank     = 3;
	l[1].noise_shape[0] = -1;
	l[1].noise_shape[1] = 1;
	l[1].noise_shape[2] = 4;
	l[1].dropout_seed   = 12;
	l[4].keepdims       = false;
	l[5].channels_first = false;
	l[6].channels_first = true;
	cr_assert_eq(make(&m, 2, in, 9, l), 0, "%s", pasco_model_last_error());
	PASCO_PASS(pasco_model_to_json(m, &one));
	cr_assert_eq(pasco_model_from_json(one, &back), 0, "%s: %s", one,
	    pasco_model_last_error());
	PASCO_PASS(pasco_model_to_json(back, &two));
	cr_assert_str_eq(one, two);
	for (const char *const *s = (const char *const[]){"\"combiner\":null",
	         "\"mask_zero\":true", "\"noise_shape\":[null,1,4]",
	         "\"seed\":12", "\"target_shape\":[4,3]",
	         "\"data_format\":\"channels_first\"", "\"axes\":-1",
	         "\"normalize\":true", "\"keepdims\":false",
	         "\"class_name\":\"GlobalAveragePooling1D\"", NULL};
	     *s != NULL; s++) {
		cr_assert(strstr(one, *s) != NULL, "%s lacks %s", one, *s);
	}
	free(one);
	free(two);
	pasco_model_free(back);
	pasco_model_free(m);
}
