#include "bufcache.h"
#include "helpers.h"
#include "util.h"

#include <math.h>

TestSuite(tensor, .timeout = 10);

Test(tensor, alloc_sets_descriptor_and_zeroes_data)
{
	int64_t       shape[] = {2, 3};
	pasco_tensor *t;
	PASCO_PASS(pasco_tensor_alloc(&t, PASCO_F64, 2, shape));
	cr_assert_eq(t->rank, 2);
	cr_assert_eq(t->count, 6);
	cr_assert_eq(t->nbytes, 48);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(((double *) t->data)[i], 0.0);
	}
	pasco_tensor_release(t);
}

Test(tensor, rejects_bad_specs)
{
	int64_t       neg[]  = {2, -1};
	int64_t       big[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	pasco_tensor *t      = (pasco_tensor *) 1;
	PASCO_FAIL(pasco_tensor_alloc(&t, PASCO_F32, 2, neg), PASCO_EINVAL);
	cr_assert_null(t);
	PASCO_FAIL(pasco_tensor_alloc(&t, PASCO_F32, 9, big), PASCO_EINVAL);
	PASCO_FAIL(
	    pasco_tensor_alloc(&t, (pasco_dtype) 99, 0, NULL), PASCO_EINVAL);
	PASCO_FAIL(
	    pasco_tensor_from(&t, PASCO_F32, 1, (int64_t[]){2}, "abc", 3),
	    PASCO_EINVAL);
}

Test(tensor, hold_and_release_count_references)
{
	pasco_tensor *t = test_scalar(PASCO_I32, 7);
	cr_assert_eq(pasco_tensor_hold(t), t);
	pasco_tensor_release(t);
	cr_assert_eq(pasco_tensor_get(t, 0), 7.0); /* still alive */
	pasco_tensor_release(t);
	pasco_tensor_release(NULL);
}

Test(tensor, get_and_set_convert_every_dtype)
{
	pasco_dtype types[] = {
	    PASCO_F32, PASCO_F64, PASCO_I32, PASCO_I64, PASCO_U8};
	for (int i = 0; i < 5; i++) {
		pasco_tensor *t = test_scalar(types[i], 42);
		cr_assert_eq(pasco_tensor_get(t, 0), 42.0, "%s",
		    pasco_dtype_name(types[i]));
		pasco_tensor_release(t);
	}
}

Test(tensor, copy_is_deep)
{
	pasco_tensor *a = test_scalar(PASCO_F32, 1), *b;
	PASCO_PASS(pasco_tensor_copy(&b, a));
	pasco_tensor_set(a, 0, 5);
	cr_assert_eq(pasco_tensor_get(b, 0), 1.0);
	cr_assert(pasco_tensor_same_spec(a, b));
	pasco_tensor_release(a);
	pasco_tensor_release(b);
}

Test(tensor, spec_string_names_dtype_and_shape)
{
	char buf[64];
	cr_assert_str_eq(pasco_tensor_spec_string(PASCO_F32, 2,
	                     (int64_t[]){2, 3}, buf, sizeof(buf)),
	    "f32[2,3]");
	cr_assert_str_eq(
	    pasco_tensor_spec_string(PASCO_I64, 0, NULL, buf, sizeof(buf)),
	    "i64[]");
}

TestSuite(value, .timeout = 10);

Test(value, builds_and_reads_nested_structures)
{
	pasco_value *v = pasco_value_list(3,
	    pasco_value_tensor(test_scalar(PASCO_F32, 2)),
	    pasco_value_list(1, pasco_value_tensor(test_scalar(PASCO_F32, 3))),
	    pasco_value_dict(
	        1, "v", pasco_value_tensor(test_scalar(PASCO_F32, 1))));
	cr_assert_not_null(v);
	cr_assert_eq(pasco_value_kind_of(v), PASCO_VALUE_LIST);
	cr_assert_eq(pasco_value_size(v), 3);
	cr_assert_eq(pasco_value_scalar(pasco_value_item(v, 0)), 2.0);
	cr_assert_eq(pasco_value_scalar(pasco_value_item(v, 1)), 3.0);
	cr_assert_eq(
	    pasco_value_scalar(pasco_value_get(pasco_value_item(v, 2), "v")),
	    1.0);
	cr_assert_str_eq(pasco_value_key(pasco_value_item(v, 2), 0), "v");
	cr_assert_null(pasco_value_item(v, 3));
	cr_assert(isnan(pasco_value_scalar(v)));
	pasco_value_free(v);
}

Test(value, null_child_fails_and_frees_the_rest)
{
	cr_assert_null(pasco_value_list(2, pasco_value_none(), NULL));
	cr_assert_null(pasco_value_dict(
	    2, "a", pasco_value_none(), "a", pasco_value_none()));
}

Test(value, clone_shares_tensors)
{
	pasco_tensor *t = test_scalar(PASCO_F32, 4);
	pasco_value  *v =
	    pasco_value_list(1, pasco_value_tensor(pasco_tensor_hold(t)));
	pasco_value *c = pasco_value_clone(v);
	pasco_value_free(v);
	cr_assert_eq(pasco_value_as_tensor(pasco_value_item(c, 0)), t);
	pasco_value_free(c);
	pasco_tensor_release(t);
}

Test(error, strerror_and_errname_cover_every_code)
{
	cr_assert_str_eq(pasco_strerror(PASCO_OK), "ok");
	cr_assert_str_eq(pasco_errname(PASCO_ECANCELLED), "PASCO_ECANCELLED");
	cr_assert_str_eq(pasco_strerror(12345), "unknown error code");
}

Test(value, lists_have_no_length_limit)
{
	pasco_value *items[100];
	for (int i = 0; i < 100; i++) {
		items[i] = pasco_value_tensor(test_scalar(PASCO_I32, i));
	}
	pasco_value *v = pasco_value_list_of(100, items);
	cr_assert_eq(pasco_value_size(v), 100);
	cr_assert_eq(pasco_value_scalar(pasco_value_item(v, 99)), 99);
	pasco_value_free(v);
}

/* pasci_calloc (base/util.h): zeroed blocks on both sides of the size where
 * it leaves malloc for calloc, even after the same sizes were freed dirty,
 * and NULL when count * size overflows. */
Test(alloc, pasci_calloc_zeroes_every_size_and_refuses_overflow)
{
	static const size_t sizes[] = {0, 1, 7, 128, PASCI_CALLOC_CACHED - 1,
	    PASCI_CALLOC_CACHED, PASCI_CALLOC_CACHED + 1, 64 << 10};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t         n = sizes[i];
		unsigned char *dirty, *z;
		/* a freed dirty block of the size, for the next to reuse */
		cr_assert_not_null(dirty = malloc(n > 0 ? n : 1));
		memset(dirty, 0xa5, n > 0 ? n : 1);
		free(dirty);
		cr_assert_not_null(z = pasci_calloc(1, n), "size %zu", n);
		for (size_t k = 0; k < n; k++) {
			cr_assert_eq(
			    z[k], 0, "size %zu: byte %zu is %d", n, k, z[k]);
		}
		free(z);
		cr_assert_not_null(z = pasci_calloc(n, 3));
		for (size_t k = 0; k < 3 * n; k++) {
			cr_assert_eq(z[k], 0, "%zu x 3: byte %zu", n, k);
		}
		free(z);
	}
	cr_assert_null(pasci_calloc(SIZE_MAX / 2, 3));
	cr_assert_null(pasci_calloc(3, SIZE_MAX / 2));
}

/* A big tensor's block (1 MB or more) comes back from the process's cache
 * of big buffers: the next tensor of that size gets the same block, zeroed
 * by pasco_tensor_alloc although the last one left it dirty, and the cache
 * holds it while no tensor does. */
Test(alloc, a_big_tensors_block_is_reused_and_zeroed_again)
{
	int64_t       shape[1] = {(int64_t) (PASCI_BUFCACHE_MIN / 4) + 10};
	pasco_tensor *a, *b;
	size_t        n, bytes;
	void         *first;
	PASCO_PASS(pasco_tensor_alloc(&a, PASCO_F32, 1, shape));
	first = a->data;
	memset(a->data, 0x5a, a->nbytes);
	pasco_tensor_release(a);
	pasci_bufcache_stats(&n, &bytes);
	cr_assert_geq(n, 1, "the released block is cached");
	cr_assert_geq(bytes, PASCI_BUFCACHE_MIN);
	PASCO_PASS(pasco_tensor_alloc(&b, PASCO_F32, 1, shape));
	cr_assert_eq(b->data, first, "the same block again");
	for (int64_t i = 0; i < shape[0]; i++) {
		cr_assert_eq(((const float *) b->data)[i], 0.0f,
		    "element %lld", (long long) i);
	}
	pasco_tensor_release(b);
}

/* The big-buffer cache keeps the buffers freed last within its 256 MB:
 * three of 100 MB freed leave the last two cached, the first given back. */
Test(alloc, the_big_buffer_cache_keeps_at_most_256_mb)
{
	size_t mb = (size_t) 1 << 20, n, bytes;
	void  *b[3];
	for (int i = 0; i < 3; i++) {
		cr_assert_not_null(b[i] = pasci_bufcache_alloc(100 * mb));
	}
	for (int i = 0; i < 3; i++) {
		pasci_bufcache_free(b[i]);
	}
	pasci_bufcache_stats(&n, &bytes);
	cr_assert_eq(n, 2, "%zu buffers cached", n);
	cr_assert_leq(bytes, 256 * mb, "%zu MB cached", bytes / mb);
}
