/*
 * Tensors: a visible descriptor (dtype, rank, shape, element count, byte
 * size, data) over reference-counted storage. Kernels read the descriptor
 * directly. A tensor is created with one reference, owned by the caller;
 * pasco_tensor_hold adds one, pasco_tensor_release drops one and frees the
 * tensor with the last. Data is dense, row-major, naturally aligned.
 *
 * A tensor may be read from several threads at once. Writing its data while
 * another thread reads it is the caller's race to avoid.
 */
#ifndef PASCO_TENSOR_H
#define PASCO_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PASCO_MAX_RANK 8

typedef enum pasco_dtype {
	PASCO_F32 = 1,
	PASCO_F64 = 2,
	PASCO_I32 = 3,
	PASCO_I64 = 4,
	PASCO_U8  = 5,
} pasco_dtype;

typedef struct pasco_storage pasco_storage;

typedef struct pasco_tensor {
	pasco_dtype    dtype;
	int32_t        rank;
	int64_t        shape[PASCO_MAX_RANK];
	int64_t        count;  /* number of elements: product of shape */
	size_t         nbytes; /* count * pasco_dtype_size(dtype) */
	void          *data;
	pasco_storage *storage; /* private: owner of data */
	int32_t        refs;    /* private: updated atomically */
} pasco_tensor;

/* An array of tensors a function only reads (a model's inputs): either
 * const pasco_tensor *[] (a tensor from pasco_value_as_tensor goes in as
 * it is) or pasco_tensor *[], passed as they are. A transparent union (GCC
 * and clang): C converts pasco_tensor ** to const pasco_tensor *const *
 * only with a cast, and this takes both with none. The function reads .c. */
typedef union pasco_tensor_array {
	const pasco_tensor *const *c;
	pasco_tensor *const       *m;
} pasco_tensor_array __attribute__((transparent_union));

/* Bytes per element, or 0 for an invalid dtype. Thread-safe. */
size_t pasco_dtype_size(pasco_dtype dtype);

/* "f32", "f64", "i32", "i64", "u8", or "invalid". Thread-safe. */
const char *pasco_dtype_name(pasco_dtype dtype);

/* Allocates a zero-filled tensor. shape may be NULL when rank is 0.
 * Returns PASCO_EINVAL for a bad dtype, a rank outside [0, 8] or a negative
 * dimension, PASCO_ENOMEM. On failure *out is NULL. Thread-safe. */
int pasco_tensor_alloc(
    pasco_tensor **out, pasco_dtype dtype, int32_t rank, const int64_t *shape);

/* Like pasco_tensor_alloc, then copies nbytes of data (which must equal the
 * tensor's byte size, else PASCO_EINVAL). Thread-safe. */
int pasco_tensor_from(pasco_tensor **out, pasco_dtype dtype, int32_t rank,
    const int64_t *shape, const void *data, size_t nbytes);

/* A rank-0 tensor holding value converted to dtype. Thread-safe. */
int pasco_tensor_scalar(pasco_tensor **out, pasco_dtype dtype, double value);

/* A deep copy with its own storage. Thread-safe. */
int pasco_tensor_copy(pasco_tensor **out, const pasco_tensor *t);

/* Adds a reference; returns t. Thread-safe. */
pasco_tensor *pasco_tensor_hold(pasco_tensor *t);

/* Drops a reference; frees with the last. NULL is a no-op. Thread-safe. */
void pasco_tensor_release(pasco_tensor *t);

/* Element i converted to double (any dtype). i must be < t->count. */
double pasco_tensor_get(const pasco_tensor *t, int64_t i);

/* Stores value, converted to t's dtype, at element i. An integer dtype
 * takes it truncated toward zero and saturated to its range (NaN as 0). */
void pasco_tensor_set(pasco_tensor *t, int64_t i, double value);

/* True when a and b have the same dtype and shape. Thread-safe. */
bool pasco_tensor_same_spec(const pasco_tensor *a, const pasco_tensor *b);

/* Writes "f32[2,3]" into buf (always NUL-terminated); returns buf. */
char *pasco_tensor_spec_string(pasco_dtype dtype, int32_t rank,
    const int64_t *shape, char *buf, size_t len);

#endif
