/*
 * Tensor internals: storage that can be owned by something other than the
 * tensor (a received nng message), so received tensors are views into the
 * message instead of copies.
 */
#ifndef PASCI_TENSOR_IMPL_H
#define PASCI_TENSOR_IMPL_H

#include "pasco/tensor.h"

/* Storage with a reference count; free_fn(owner) runs with the last
 * release. */
pasco_storage *pasci_storage_new(void (*free_fn)(void *), void *owner);
void           pasci_storage_hold(pasco_storage *s);
void           pasci_storage_release(pasco_storage *s);

/* Checks dtype, rank, shape; computes count and byte size. */
int pasci_tensor_check_spec(pasco_dtype dtype, int32_t rank,
    const int64_t *shape, int64_t *count, size_t *nbytes);

/* pasco_tensor_alloc without the zero fill, for data about to be
 * overwritten whole. */
int pasci_tensor_alloc_raw(
    pasco_tensor **out, pasco_dtype dtype, int32_t rank, const int64_t *shape);

/* A tensor viewing data held by storage (the tensor takes a storage
 * reference). */
int pasci_tensor_view(pasco_tensor **out, pasco_dtype dtype, int32_t rank,
    const int64_t *shape, void *data, pasco_storage *storage);

/* Gives t a buffer of its own before it is written: when t's storage is
 * shared (a view of it is being read elsewhere, as a ps sends a value
 * from its own memory), t's data is copied to a new buffer and t moves to
 * it; the views keep the old one, unchanged. The caller serializes every
 * writer and view-maker of t (a ps: the variable's lock). PASCO_ENOMEM
 * (t unchanged). */
int pasci_tensor_unshare(pasco_tensor *t);

#endif
