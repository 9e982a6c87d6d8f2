#include "helpers.h"

#include <string.h>

#include "dataset_impl.h"
#include "util.h"

TestSuite(dataset, .timeout = 10);

/* Reads up to max elements as scalars; returns how many. */
static int
drain(pasco_dataset *ds, double *out, int max)
{
	pasco_value *e;
	int          n = 0, rv;
	while (n < max && (rv = pasco_dataset_next(ds, &e)) == PASCO_OK) {
		out[n++] = pasco_value_scalar(e);
		pasco_value_free(e);
	}
	return n;
}

Test(dataset, range_counts_up_and_down)
{
	pasco_dataset *ds;
	double         v[16];
	PASCO_PASS(pasco_dataset_range(&ds, 0, 5, 2));
	cr_assert_eq(drain(ds, v, 16), 3);
	cr_assert(v[0] == 0 && v[1] == 2 && v[2] == 4);
	pasco_dataset_free(ds);
	PASCO_PASS(pasco_dataset_range(&ds, 3, 0, -1));
	cr_assert_eq(drain(ds, v, 16), 3);
	cr_assert_eq(v[2], 1);
	pasco_dataset_free(ds);
	PASCO_FAIL(pasco_dataset_range(&ds, 0, 5, 0), PASCO_EINVAL);
}

Test(dataset, batch_stacks_and_keeps_the_remainder)
{
	pasco_dataset *ds, *b;
	pasco_value   *e;
	PASCO_PASS(pasco_dataset_range(&ds, 1, 11, 1));
	PASCO_PASS(pasco_dataset_batch(&b, ds, 4, false));
	PASCO_PASS(pasco_dataset_next(b, &e));
	const pasco_tensor *t = pasco_value_as_tensor(e);
	cr_assert_eq(t->rank, 1);
	cr_assert_eq(t->shape[0], 4);
	cr_assert(
	    ((int64_t *) t->data)[0] == 1 && ((int64_t *) t->data)[3] == 4);
	pasco_value_free(e);
	PASCO_PASS(pasco_dataset_next(b, &e));
	pasco_value_free(e);
	PASCO_PASS(pasco_dataset_next(b, &e));
	cr_assert_eq(pasco_value_as_tensor(e)->shape[0], 2, "remainder of 2");
	pasco_value_free(e);
	PASCO_FAIL(pasco_dataset_next(b, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(b);
}

Test(dataset, batch_can_drop_the_remainder)
{
	pasco_dataset *ds, *b;
	double         v[8];
	PASCO_PASS(pasco_dataset_range(&ds, 0, 10, 1));
	PASCO_PASS(pasco_dataset_batch(&b, ds, 4, true));
	cr_assert_eq(drain(b, v, 8), 2);
	pasco_dataset_free(b);
}

Test(dataset, from_tensors_slices_rows_of_lists)
{
	int64_t        shape[] = {3, 2};
	pasco_tensor  *x, *y;
	pasco_dataset *ds;
	pasco_value   *e;
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_F32, 2, shape));
	PASCO_PASS(pasco_tensor_alloc(&y, PASCO_I32, 1, shape));
	for (int i = 0; i < 6; i++) {
		pasco_tensor_set(x, i, i);
	}
	for (int i = 0; i < 3; i++) {
		pasco_tensor_set(y, i, 10 + i);
	}
	pasco_value *v =
	    pasco_value_list(2, pasco_value_tensor(x), pasco_value_tensor(y));
	PASCO_PASS(pasco_dataset_from_tensors(&ds, v));
	pasco_value_free(v);
	for (int i = 0; i < 2; i++) {
		PASCO_PASS(pasco_dataset_next(ds, &e));
		pasco_value_free(e);
	}
	/* third row */
	PASCO_PASS(pasco_dataset_next(ds, &e));
	const pasco_tensor *row =
	    pasco_value_as_tensor(pasco_value_item(e, 0));
	cr_assert_eq(row->rank, 1);
	cr_assert_eq(pasco_tensor_get(row, 1), 5);
	cr_assert_eq(pasco_value_scalar(pasco_value_item(e, 1)), 12);
	pasco_value_free(e);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(ds);
}

Test(dataset, from_tensors_rejects_unequal_rows)
{
	pasco_tensor  *a, *b;
	pasco_dataset *ds;
	PASCO_PASS(pasco_tensor_alloc(&a, PASCO_F32, 1, (int64_t[]){3}));
	PASCO_PASS(pasco_tensor_alloc(&b, PASCO_F32, 1, (int64_t[]){4}));
	pasco_value *v =
	    pasco_value_list(2, pasco_value_tensor(a), pasco_value_tensor(b));
	PASCO_FAIL(pasco_dataset_from_tensors(&ds, v), PASCO_EINVAL);
	pasco_value_free(v);
}

Test(dataset, repeat_and_take)
{
	pasco_dataset *ds, *r, *t;
	double         v[16];
	PASCO_PASS(pasco_dataset_range(&ds, 0, 3, 1));
	cr_assert_not(pasco_dataset_is_infinite(ds));
	PASCO_PASS(pasco_dataset_repeat(&r, ds, -1));
	cr_assert(pasco_dataset_is_infinite(r));
	PASCO_PASS(pasco_dataset_batch(&r, r, 2, false)); /* inherited */
	cr_assert(pasco_dataset_is_infinite(r));
	PASCO_PASS(pasco_dataset_take(&t, r, 4)); /* cut */
	cr_assert_not(pasco_dataset_is_infinite(t));
	cr_assert_eq(drain(t, v, 16), 4);
	pasco_dataset_free(t);
	PASCO_PASS(pasco_dataset_range(&ds, 0, 3, 1));
	PASCO_PASS(pasco_dataset_repeat(&r, ds, -1));
	PASCO_PASS(pasco_dataset_take(&t, r, 7));
	cr_assert_eq(drain(t, v, 16), 7);
	cr_assert(v[3] == 0 && v[6] == 0 && v[5] == 2);
	pasco_dataset_free(t);
	PASCO_PASS(pasco_dataset_range(&ds, 0, 3, 1));
	PASCO_PASS(pasco_dataset_repeat(&r, ds, 2));
	cr_assert_not(pasco_dataset_is_infinite(r));
	cr_assert_eq(drain(r, v, 16), 6);
	pasco_dataset_free(r);
}

Test(dataset, repeat_of_an_empty_dataset_ends)
{
	pasco_dataset *ds, *r;
	double         v[4];
	PASCO_PASS(pasco_dataset_range(&ds, 0, 0, 1));
	PASCO_PASS(pasco_dataset_repeat(&r, ds, -1));
	cr_assert_eq(drain(r, v, 4), 0);
	pasco_dataset_free(r);
}

Test(dataset, shard_keeps_every_nth)
{
	pasco_dataset *ds, *s;
	double         v[16];
	PASCO_PASS(pasco_dataset_range(&ds, 0, 10, 1));
	PASCO_PASS(pasco_dataset_shard(&s, ds, 5, 3));
	cr_assert_eq(drain(s, v, 16), 2);
	cr_assert(v[0] == 3 && v[1] == 8);
	pasco_dataset_free(s);
	PASCO_PASS(pasco_dataset_range(&ds, 0, 10, 1));
	PASCO_FAIL(pasco_dataset_shard(&s, ds, 2, 2), PASCO_EINVAL);
}

Test(dataset, shuffle_is_a_seeded_permutation)
{
	pasco_dataset *ds, *s;
	double         a[100], b[100], sum = 0;
	int            moved = 0;
	PASCO_PASS(pasco_dataset_range(&ds, 0, 100, 1));
	PASCO_PASS(pasco_dataset_shuffle(&s, ds, 100, 7));
	cr_assert_eq(drain(s, a, 100), 100);
	pasco_dataset_free(s);
	PASCO_PASS(pasco_dataset_range(&ds, 0, 100, 1));
	PASCO_PASS(pasco_dataset_shuffle(&s, ds, 100, 7));
	cr_assert_eq(drain(s, b, 100), 100);
	pasco_dataset_free(s);
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(a[i], b[i], "same seed, same order");
		sum += a[i];
		moved += a[i] != i;
	}
	cr_assert_eq(sum, 4950, "a permutation");
	cr_assert_gt(moved, 50);
}

static int
add_ten(void *arg, const pasco_value *e, pasco_value **out)
{
	(void) arg;
	*out = pasco_value_tensor(
	    test_scalar(PASCO_I64, pasco_value_scalar(e) + 10));
	return PASCO_OK;
}

Test(dataset, map_transforms_each_element)
{
	pasco_dataset *ds, *m;
	double         v[16];
	PASCO_PASS(pasco_dataset_range(&ds, 0, 10, 1));
	PASCO_PASS(pasco_dataset_map(&m, ds, add_ten, NULL));
	cr_assert_eq(drain(m, v, 16), 10);
	cr_assert_eq(v[0], 10); /* scenario 19: the first element is 10 */
	pasco_dataset_free(m);
}

static int
countdown(void *arg, pasco_value **out)
{
	int *n = arg;
	if (*n == 0) {
		return PASCO_EOUTOFRANGE;
	}
	*out = pasco_value_tensor(test_scalar(PASCO_I32, (*n)--));
	return PASCO_OK;
}

Test(dataset, generator_without_reset_cannot_repeat)
{
	int            n = 2;
	pasco_dataset *g, *r;
	pasco_value   *e;
	double         v[8];
	PASCO_PASS(
	    pasco_dataset_from_generator(&g, countdown, NULL, NULL, &n));
	PASCO_PASS(pasco_dataset_repeat(&r, g, 3));
	for (int i = 0; i < 2; i++) {
		PASCO_PASS(pasco_dataset_next(r, &e));
		v[i] = pasco_value_scalar(e);
		pasco_value_free(e);
	}
	cr_assert(v[0] == 2 && v[1] == 1);
	PASCO_FAIL(pasco_dataset_next(r, &e), PASCO_EPRECONDITION);
	pasco_dataset_free(r);
}

Test(dataset, batch_stacks_nested_elements_of_any_size)
{
	int64_t        shape[] = {3000, 2};
	pasco_tensor  *x;
	pasco_dataset *ds, *b;
	pasco_value   *e;
	PASCO_PASS(pasco_tensor_alloc(&x, PASCO_F32, 2, shape));
	for (int i = 0; i < 6000; i++) {
		pasco_tensor_set(x, i, i);
	}
	pasco_value *v =
	    pasco_value_dict(2, "x", pasco_value_tensor(pasco_tensor_hold(x)),
	        "n", pasco_value_tensor(test_scalar(PASCO_I32, 0)));
	cr_assert_not_null(v);
	/* a scalar leaf has no rows: from_tensors refuses it */
	PASCO_FAIL(pasco_dataset_from_tensors(&ds, v), PASCO_EINVAL);
	pasco_value_free(v);
	v = pasco_value_dict(1, "x", pasco_value_tensor(x));
	PASCO_PASS(pasco_dataset_from_tensors(&ds, v));
	pasco_value_free(v);
	PASCO_PASS(pasco_dataset_batch(&b, ds, 2000, false));
	PASCO_PASS(pasco_dataset_next(b, &e));
	const pasco_tensor *t = pasco_value_as_tensor(pasco_value_get(e, "x"));
	cr_assert_eq(t->rank, 2);
	cr_assert_eq(t->shape[0], 2000);
	cr_assert_eq(t->shape[1], 2);
	cr_assert_eq(pasco_tensor_get(t, 3999), 3999);
	pasco_value_free(e);
	pasco_dataset_free(b);
}

static int
keep_even(void *arg, const pasco_value *e, bool *keep)
{
	(void) arg;
	*keep = (int64_t) pasco_value_scalar(e) % 2 == 0;
	return PASCO_OK;
}

Test(dataset, filter_keeps_what_the_predicate_accepts)
{
	pasco_dataset *ds;
	double         v[16];
	PASCO_PASS(pasco_dataset_range(&ds, 0, 10, 1));
	PASCO_PASS(pasco_dataset_filter(&ds, ds, keep_even, NULL));
	cr_assert_eq(drain(ds, v, 16), 5);
	cr_assert(v[0] == 0 && v[4] == 8);
	pasco_dataset_free(ds);
}

Test(dataset, prefetch_yields_everything_in_order_then_the_end)
{
	pasco_dataset *ds;
	pasco_value   *e;
	double         v[1100];
	PASCO_PASS(pasco_dataset_range(&ds, 0, 1000, 1));
	PASCO_PASS(pasco_dataset_prefetch(&ds, ds, 8));
	cr_assert_eq(drain(ds, v, 1100), 1000);
	for (int i = 0; i < 1000; i++) {
		cr_assert_eq(v[i], i);
	}
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(ds);
	/* repeated over a prefetch: reset restarts the reader */
	PASCO_PASS(pasco_dataset_range(&ds, 0, 3, 1));
	PASCO_PASS(pasco_dataset_prefetch(&ds, ds, 2));
	PASCO_PASS(pasco_dataset_repeat(&ds, ds, 3));
	cr_assert_eq(drain(ds, v, 16), 9);
	cr_assert(v[3] == 0 && v[8] == 2);
	pasco_dataset_free(ds);
	/* freed while the producer is blocked on a full ring */
	PASCO_PASS(pasco_dataset_range(&ds, 0, 1000000, 1));
	PASCO_PASS(pasco_dataset_prefetch(&ds, ds, 4));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	pasco_value_free(e);
	pasco_dataset_free(ds);
}

/* Yields 0, 1, ... after - 1, then fails with err, leaving msg (when not
 * NULL) as the thread's data error as the file sources do. */
typedef struct failing {
	int         after, err;
	const char *msg;
} failing;

static int
failing_next(void *arg, pasco_value **out)
{
	failing *f = arg;
	if (f->after == 0) {
		if (f->msg != NULL) {
			pasci_fmt(pasci_data_error, sizeof(pasci_data_error),
			    "%s", f->msg);
		}
		return f->err;
	}
	*out = pasco_value_tensor(test_scalar(PASCO_I64, 3 - f->after--));
	return PASCO_OK;
}

static int
keep_all(void *arg, const pasco_value *e, bool *keep)
{
	(void) arg;
	(void) e;
	*keep = true;
	return PASCO_OK;
}

/* An error raised on the prefetch thread comes after the elements before
 * it, with its code and the message that thread had for it; through two
 * prefetches (a producer thread is the consumer of the inner one) too. */
Test(dataset, prefetch_passes_a_generator_error_with_its_message)
{
	failing        f = {3, PASCO_EIO, "gen: element 3 is unreadable"};
	pasco_dataset *ds;
	pasco_value   *e;
	double         v[8];
	PASCO_PASS(
	    pasco_dataset_from_generator(&ds, failing_next, NULL, NULL, &f));
	PASCO_PASS(pasco_dataset_prefetch(&ds, ds, 2));
	cr_assert_eq(drain(ds, v, 8), 3);
	cr_assert(v[0] == 0 && v[2] == 2);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EIO);
	cr_assert_null(e);
	cr_assert_str_eq(
	    pasco_dataset_last_error(), "gen: element 3 is unreadable");
	pasco_dataset_free(ds);

	pasci_data_error[0] = 0;
	f                   = (failing){2, PASCO_EINVAL, "gen: nested"};
	PASCO_PASS(
	    pasco_dataset_from_generator(&ds, failing_next, NULL, NULL, &f));
	PASCO_PASS(pasco_dataset_prefetch(&ds, ds, 1));
	PASCO_PASS(pasco_dataset_filter(&ds, ds, keep_all, NULL));
	PASCO_PASS(pasco_dataset_prefetch(&ds, ds, 1));
	cr_assert_eq(drain(ds, v, 8), 2);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	cr_assert_str_eq(pasco_dataset_last_error(), "gen: nested");
	pasco_dataset_free(ds);
}

/* A generator error without a message still ends a prefetch with its
 * code. */
Test(dataset, prefetch_passes_a_plain_generator_error)
{
	failing        f = {2, PASCO_EUNAVAILABLE, NULL};
	pasco_dataset *ds;
	pasco_value   *e;
	double         v[8];
	PASCO_PASS(
	    pasco_dataset_from_generator(&ds, failing_next, NULL, NULL, &f));
	PASCO_PASS(pasco_dataset_prefetch(&ds, ds, 4));
	cr_assert_eq(drain(ds, v, 8), 2);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EUNAVAILABLE);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EUNAVAILABLE);
	pasco_dataset_free(ds);
}

Test(dataset, unseeded_shuffles_differ)
{
	pasco_dataset *a, *b;
	double         x[100], y[100];
	int            same = 0;
	PASCO_PASS(pasco_dataset_range(&a, 0, 100, 1));
	PASCO_PASS(pasco_dataset_shuffle(&a, a, 100, 0));
	PASCO_PASS(pasco_dataset_range(&b, 0, 100, 1));
	PASCO_PASS(pasco_dataset_shuffle(&b, b, 100, 0));
	drain(a, x, 100);
	drain(b, y, 100);
	for (int i = 0; i < 100; i++) {
		same += x[i] == y[i];
	}
	cr_assert_lt(
	    same, 20, "two unseeded shuffles agree on %d of 100", same);
	pasco_dataset_free(a);
	pasco_dataset_free(b);
}

/* x -> x repeated 6 times */
static int
six_of(void *arg, const pasco_value *e, pasco_dataset **out)
{
	int64_t x = (int64_t) pasco_value_scalar(e);
	int     rv;
	(void) arg;
	if (x == *(int64_t *) arg) {
		return PASCO_EINVAL; /* the element this test makes fail */
	}
	if ((rv = pasco_dataset_range(out, x, x + 1, 1)) != 0) {
		return rv;
	}
	return pasco_dataset_repeat(out, *out, 6);
}

Test(dataset, interleave_follows_tensorflows_order)
{
	/* range(1, 6).interleave(lambda x: from_tensors(x).repeat(6),
	 * cycle_length=2, block_length=4), from tf.data's documentation */
	static const double want[] = {1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3,
	    3, 3, 4, 4, 4, 4, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5};
	pasco_dataset      *ds;
	double              v[128];
	int64_t             none = -1;
	PASCO_PASS(pasco_dataset_range(&ds, 1, 6, 1));
	PASCO_PASS(pasco_dataset_interleave(&ds, ds, six_of, &none, 2, 4));
	PASCO_PASS(
	    pasco_dataset_repeat(&ds, ds, 2)); /* and again after reset */
	cr_assert_eq(drain(ds, v, 128), 60);
	for (int i = 0; i < 60; i++) {
		cr_assert_eq(v[i], want[i % 30], "element %d: %g, want %g", i,
		    v[i], want[i % 30]);
	}
	pasco_dataset_free(ds);
}

Test(dataset, interleave_reports_errors_and_bad_arguments)
{
	pasco_dataset *ds;
	pasco_value   *e;
	double         v[6];
	int64_t        bad = 2;
	PASCO_PASS(pasco_dataset_range(&ds, 1, 6, 1));
	PASCO_PASS(pasco_dataset_interleave(&ds, ds, six_of, &bad, 1, 1));
	cr_assert_eq(drain(ds, v, 6), 6); /* all of 1 */
	PASCO_FAIL(
	    pasco_dataset_next(ds, &e), PASCO_EINVAL); /* then 2 fails */
	cr_assert_null(e);
	pasco_dataset_free(ds);
	PASCO_PASS(pasco_dataset_range(&ds, 1, 6, 1));
	PASCO_FAIL(pasco_dataset_interleave(&ds, ds, six_of, &bad, 0, 1),
	    PASCO_EINVAL);
	cr_assert_null(ds);
}

/* Variable-length rows [1], [2, 3], [4, 5, 6] */
static pasco_value *
ragged_row(int64_t i)
{
	pasco_tensor *ids, *w;
	int64_t       n = i + 1, v[3];
	float         f[3];
	for (int64_t k = 0; k < n; k++) {
		v[k] = i * (i + 1) / 2 + k + 1;
		f[k] = (float) v[k] / 10;
	}
	pasco_tensor_from(
	    &ids, PASCO_I64, 1, &n, v, sizeof(int64_t) * (size_t) n);
	pasco_tensor_from(&w, PASCO_F32, 1, &n, f, sizeof(float) * (size_t) n);
	return pasco_value_list(
	    2, pasco_value_tensor(ids), pasco_value_tensor(w));
}

static int
ragged_next(void *arg, pasco_value **element)
{
	int64_t *i = arg;
	if (*i == 3) {
		return PASCO_EOUTOFRANGE;
	}
	*element = ragged_row((*i)++);
	return PASCO_OK;
}

Test(dataset, padded_batch_pads_variable_length_features)
{
	pasco_dataset *ds;
	pasco_value   *e;
	int64_t        at = 0;
	PASCO_PASS(
	    pasco_dataset_from_generator(&ds, ragged_next, NULL, NULL, &at));
	PASCO_PASS(pasco_dataset_padded_batch(&ds, ds, 3, false, -1));
	PASCO_PASS(pasco_dataset_next(ds, &e));
	const pasco_tensor *ids =
	    pasco_value_as_tensor(pasco_value_item(e, 0));
	const pasco_tensor *w = pasco_value_as_tensor(pasco_value_item(e, 1));
	cr_assert(ids->rank == 2 && ids->shape[0] == 3 && ids->shape[1] == 3);
	static const double want[] = {1, -1, -1, 2, 3, -1, 4, 5, 6};
	for (int i = 0; i < 9; i++) {
		cr_assert_eq(pasco_tensor_get(ids, i), want[i], "ids[%d]", i);
		cr_assert_float_eq(pasco_tensor_get(w, i),
		    want[i] < 0 ? -1 : want[i] / 10, 1e-6, "w[%d]", i);
	}
	pasco_value_free(e);
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EOUTOFRANGE);
	pasco_dataset_free(ds);

	/* a plain batch refuses them */
	at = 0;
	PASCO_PASS(
	    pasco_dataset_from_generator(&ds, ragged_next, NULL, NULL, &at));
	PASCO_PASS(pasco_dataset_batch(&ds, ds, 3, false));
	PASCO_FAIL(pasco_dataset_next(ds, &e), PASCO_EINVAL);
	pasco_dataset_free(ds);
}
