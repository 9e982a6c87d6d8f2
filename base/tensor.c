/*
 * Tensors over reference-counted storage. Reference counts are atomic, so
 * tensors can be shared by threads; the data itself is not synchronised.
 */
#include "tensor_impl.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bufcache.h"
#include "util.h"

/* A tensor's data block of n bytes (at least one, so data is never
 * NULL), zeroed when asked, and *free_fn for it: a big block (1 MB or
 * more) comes from the process's cache of big buffers (bufcache.h), so a
 * step's big tensors are not faulted in again each step, the rest from
 * malloc. NULL when memory is short. */
static void *
tensor_data_alloc(size_t n, bool zero, void (**free_fn)(void *))
{
	void *data;
	if (n >= PASCI_BUFCACHE_MIN) {
		*free_fn = pasci_bufcache_free;
		if ((data = pasci_bufcache_alloc(n)) != NULL && zero) {
			memset(data, 0, n);
		}
		return data;
	}
	*free_fn = free;
	return zero ? pasci_calloc(1, n > 0 ? n : 1) : malloc(n > 0 ? n : 1);
}

struct pasco_storage {
	atomic_int refs;
	void (*free_fn)(void *);
	void *owner;
};

pasco_storage *
pasci_storage_new(void (*free_fn)(void *), void *owner)
{
	pasco_storage *s = malloc(sizeof(*s));
	if (s == NULL) {
		return NULL;
	}
	atomic_init(&s->refs, 1);
	s->free_fn = free_fn;
	s->owner   = owner;
	return s;
}

void
pasci_storage_hold(pasco_storage *s)
{
	atomic_fetch_add(&s->refs, 1);
}

void
pasci_storage_release(pasco_storage *s)
{
	if (s != NULL && atomic_fetch_sub(&s->refs, 1) == 1) {
		s->free_fn(s->owner);
		free(s);
	}
}

int
pasci_tensor_unshare(pasco_tensor *t)
{
	pasco_storage *s;
	void          *data;
	void (*free_fn)(void *);
	if (atomic_load(&t->storage->refs) == 1) {
		return PASCO_OK;
	}
	if ((data = tensor_data_alloc(t->nbytes, false, &free_fn)) == NULL) {
		return PASCO_ENOMEM;
	}
	if ((s = pasci_storage_new(free_fn, data)) == NULL) {
		free_fn(data);
		return PASCO_ENOMEM;
	}
	memcpy(data, t->data, t->nbytes);
	pasci_storage_release(t->storage);
	t->storage = s;
	t->data    = data;
	return PASCO_OK;
}

size_t
pasco_dtype_size(pasco_dtype dtype)
{
	switch (dtype) {
	case PASCO_F32:
	case PASCO_I32:
		return 4;
	case PASCO_F64:
	case PASCO_I64:
		return 8;
	case PASCO_U8:
		return 1;
	}
	return 0;
}

const char *
pasco_dtype_name(pasco_dtype dtype)
{
	switch (dtype) {
	case PASCO_F32:
		return "f32";
	case PASCO_F64:
		return "f64";
	case PASCO_I32:
		return "i32";
	case PASCO_I64:
		return "i64";
	case PASCO_U8:
		return "u8";
	}
	return "invalid";
}

int
pasci_tensor_check_spec(pasco_dtype dtype, int32_t rank, const int64_t *shape,
    int64_t *count, size_t *nbytes)
{
	int64_t n     = 1;
	size_t  esize = pasco_dtype_size(dtype);

	if (esize == 0 || rank < 0 || rank > PASCO_MAX_RANK ||
	    (rank > 0 && shape == NULL)) {
		return PASCO_EINVAL;
	}
	for (int32_t i = 0; i < rank; i++) {
		if (shape[i] < 0 ||
		    (shape[i] > 0 && n > INT64_MAX / 16 / shape[i])) {
			return PASCO_EINVAL;
		}
		n *= shape[i];
	}
	*count  = n;
	*nbytes = (size_t) n * esize;
	return PASCO_OK;
}

static int
tensor_new(
    pasco_tensor **out, pasco_dtype dtype, int32_t rank, const int64_t *shape)
{
	pasco_tensor *t;
	int64_t       count;
	size_t        nbytes;
	int           rv;

	*out = NULL;
	if ((rv = pasci_tensor_check_spec(
	         dtype, rank, shape, &count, &nbytes)) != 0) {
		return rv;
	}
	if ((t = pasci_calloc(1, sizeof(*t))) == NULL) {
		return PASCO_ENOMEM;
	}
	t->dtype = dtype;
	t->rank  = rank;
	for (int32_t i = 0; i < rank; i++) {
		t->shape[i] = shape[i];
	}
	t->count  = count;
	t->nbytes = nbytes;
	t->refs   = 1;
	*out      = t;
	return PASCO_OK;
}

static int
tensor_alloc(pasco_tensor **out, pasco_dtype dtype, int32_t rank,
    const int64_t *shape, bool zero)
{
	pasco_tensor *t;
	void         *data;
	void (*free_fn)(void *);
	int rv;

	if ((rv = tensor_new(&t, dtype, rank, shape)) != 0) {
		*out = NULL;
		return rv;
	}
	if ((data = tensor_data_alloc(t->nbytes, zero, &free_fn)) == NULL) {
		goto fail_data;
	}
	if ((t->storage = pasci_storage_new(free_fn, data)) == NULL) {
		goto fail_storage;
	}
	t->data = data;
	*out    = t;
	return PASCO_OK;

fail_storage:
	free_fn(data);
fail_data:
	free(t);
	*out = NULL;
	return PASCO_ENOMEM;
}

int
pasco_tensor_alloc(
    pasco_tensor **out, pasco_dtype dtype, int32_t rank, const int64_t *shape)
{
	return tensor_alloc(out, dtype, rank, shape, true);
}

int
pasci_tensor_alloc_raw(
    pasco_tensor **out, pasco_dtype dtype, int32_t rank, const int64_t *shape)
{
	return tensor_alloc(out, dtype, rank, shape, false);
}

int
pasci_tensor_view(pasco_tensor **out, pasco_dtype dtype, int32_t rank,
    const int64_t *shape, void *data, pasco_storage *storage)
{
	int rv;
	if ((rv = tensor_new(out, dtype, rank, shape)) != 0) {
		return rv;
	}
	pasci_storage_hold(storage);
	(*out)->storage = storage;
	(*out)->data    = data;
	return PASCO_OK;
}

int
pasco_tensor_from(pasco_tensor **out, pasco_dtype dtype, int32_t rank,
    const int64_t *shape, const void *data, size_t nbytes)
{
	int rv;
	if ((rv = pasco_tensor_alloc(out, dtype, rank, shape)) != 0) {
		return rv;
	}
	if (nbytes != (*out)->nbytes || (nbytes > 0 && data == NULL)) {
		pasco_tensor_release(*out);
		*out = NULL;
		return PASCO_EINVAL;
	}
	if (nbytes > 0) {
		memcpy((*out)->data, data, nbytes);
	}
	return PASCO_OK;
}

int
pasco_tensor_scalar(pasco_tensor **out, pasco_dtype dtype, double value)
{
	int rv;
	if ((rv = pasco_tensor_alloc(out, dtype, 0, NULL)) != 0) {
		return rv;
	}
	pasco_tensor_set(*out, 0, value);
	return PASCO_OK;
}

int
pasco_tensor_copy(pasco_tensor **out, const pasco_tensor *t)
{
	return pasco_tensor_from(
	    out, t->dtype, t->rank, t->shape, t->data, t->nbytes);
}

pasco_tensor *
pasco_tensor_hold(pasco_tensor *t)
{
	__atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
	return t;
}

void
pasco_tensor_release(pasco_tensor *t)
{
	if (t == NULL ||
	    __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) > 0) {
		return;
	}
	pasci_storage_release(t->storage);
	free(t);
}

double
pasco_tensor_get(const pasco_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case PASCO_F32:
		return ((const float *) t->data)[i];
	case PASCO_F64:
		return ((const double *) t->data)[i];
	case PASCO_I32:
		return ((const int32_t *) t->data)[i];
	case PASCO_I64:
		return (double) ((const int64_t *) t->data)[i];
	case PASCO_U8:
		return ((const uint8_t *) t->data)[i];
	}
	return NAN;
}

/* value truncated into [lo, hi], NaN as 0: a cast of a double outside an
 * integer type's range is undefined, and values come from requests. */
static double
saturate(double value, double lo, double hi)
{
	if (isnan(value)) {
		return 0;
	}
	return value < lo ? lo : value > hi ? hi : value;
}

void
pasco_tensor_set(pasco_tensor *t, int64_t i, double value)
{
	switch (t->dtype) {
	case PASCO_F32:
		((float *) t->data)[i] = (float) value;
		break;
	case PASCO_F64:
		((double *) t->data)[i] = value;
		break;
	case PASCO_I32:
		((int32_t *) t->data)[i] =
		    (int32_t) saturate(value, INT32_MIN, INT32_MAX);
		break;
	case PASCO_I64:
		/* 2^63 is INT64_MAX rounded up: not representable */
		((int64_t *) t->data)[i] =
		    value >= 0x1p63
		        ? INT64_MAX
		        : (int64_t) saturate(value, -0x1p63, 0x1p63);
		break;
	case PASCO_U8:
		((uint8_t *) t->data)[i] = (uint8_t) saturate(value, 0, 255);
		break;
	}
}

bool
pasco_tensor_same_spec(const pasco_tensor *a, const pasco_tensor *b)
{
	if (a->dtype != b->dtype || a->rank != b->rank) {
		return false;
	}
	for (int32_t i = 0; i < a->rank; i++) {
		if (a->shape[i] != b->shape[i]) {
			return false;
		}
	}
	return true;
}

char *
pasco_tensor_spec_string(pasco_dtype dtype, int32_t rank, const int64_t *shape,
    char *buf, size_t len)
{
	size_t n;
	if (len == 0) {
		return buf;
	}
	n = (size_t) snprintf(buf, len, "%s[", pasco_dtype_name(dtype));
	for (int32_t i = 0; i < rank && n < len; i++) {
		n += (size_t) snprintf(buf + n, len - n, "%s%lld",
		    i > 0 ? "," : "", (long long) shape[i]);
	}
	if (n < len) {
		snprintf(buf + n, len - n, "]");
	}
	return buf;
}
