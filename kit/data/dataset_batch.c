/*
 * batch and padded_batch: consecutive elements stacked along a new first
 * dimension, structure by structure (lists and dicts child by child),
 * with padding to the longest for variable-length features. Runs under
 * the chain's outer lock (see kit/data/dataset.c).
 */
#include <stdlib.h>
#include <string.h>

#include "dataset_impl.h"
#include "util.h"
#include "value_impl.h"

static int stack(
    pasco_value *const *vals, int64_t n, const double *pad, pasco_value **out);

/* Stacks the children of n lists (or dicts) of one structure, child by
 * child. */
static int
stack_children(
    pasco_value *const *vals, int64_t n, const double *pad, pasco_value **out)
{
	const pasco_value *v0    = vals[0];
	pasco_value      **items = pasci_calloc(v0->n + 1, sizeof(*items));
	pasco_value      **col   = pasci_calloc((size_t) n, sizeof(*col));
	int rv = items != NULL && col != NULL ? PASCO_OK : PASCO_ENOMEM;

	for (size_t k = 0; k < v0->n && rv == 0; k++) {
		for (int64_t i = 0; i < n; i++) {
			col[i] = vals[i]->items[k];
		}
		rv = stack(col, n, pad, &items[k]);
	}
	if (rv == 0) {
		*out = v0->kind == PASCO_VALUE_LIST
		           ? pasco_value_list_of(v0->n, items)
		           : pasci_value_dict_of(
		                 v0->n, (const char *const *) v0->keys, items);
		rv   = *out != NULL ? PASCO_OK : PASCO_ENOMEM;
	} else {
		for (size_t k = 0; items != NULL && k < v0->n; k++) {
			pasco_value_free(items[k]);
		}
	}
	free(items);
	free(col);
	return rv;
}

/* Whether tensors a and b stack: the same spec, or, when padding, the
 * same dtype and rank and dimensions but the first. */
static bool
stackable(const pasco_tensor *a, const pasco_tensor *b, const double *pad)
{
	if (pad == NULL || a->rank == 0) {
		return pasco_tensor_same_spec(a, b);
	}
	return a->dtype == b->dtype && a->rank == b->rank &&
	       memcmp(a->shape + 1, b->shape + 1,
	           sizeof(int64_t) * (size_t) (a->rank - 1)) == 0;
}

/* Stacks tensors padded at the end of dimension 0 to the longest. */
static int
stack_padded(
    pasco_value *const *vals, int64_t n, double pad, pasco_value **out)
{
	const pasco_tensor *t0 = vals[0]->tensor;
	int64_t             shape[PASCO_MAX_RANK], longest = 0;
	pasco_tensor       *t;
	size_t              row, slot;
	for (int64_t i = 0; i < n; i++) {
		if (vals[i]->tensor->shape[0] > longest) {
			longest = vals[i]->tensor->shape[0];
		}
	}
	shape[0] = n;
	shape[1] = longest;
	memcpy(shape + 2, t0->shape + 1,
	    sizeof(int64_t) * (size_t) (t0->rank - 1));
	if (pasco_tensor_alloc(&t, t0->dtype, t0->rank + 1, shape) != 0) {
		return PASCO_ENOMEM;
	}
	row = pasco_dtype_size(t0->dtype); /* bytes of one index of dim 0 */
	for (int32_t d = 1; d < t0->rank; d++) {
		row *= (size_t) t0->shape[d];
	}
	slot = row * (size_t) longest;
	for (int64_t i = 0; pad != 0 && i < t->count; i++) {
		pasco_tensor_set(t, i, pad);
	}
	for (int64_t i = 0; i < n; i++) {
		memcpy((char *) t->data + (size_t) i * slot,
		    vals[i]->tensor->data, vals[i]->tensor->nbytes);
	}
	*out = pasco_value_tensor(t);
	return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
}

/* Stacks n values of one structure along a new dimension 0; with pad, a
 * tensor's first dimension may vary and is padded with *pad. */
static int
stack(
    pasco_value *const *vals, int64_t n, const double *pad, pasco_value **out)
{
	const pasco_value *v0 = vals[0];
	for (int64_t i = 1; i < n; i++) {
		if (vals[i]->kind != v0->kind || vals[i]->n != v0->n ||
		    (v0->kind == PASCO_VALUE_TENSOR &&
		        !stackable(vals[i]->tensor, v0->tensor, pad))) {
			return PASCO_EINVAL;
		}
	}
	if (v0->kind == PASCO_VALUE_TENSOR && pad != NULL &&
	    v0->tensor->rank > 0) {
		if (v0->tensor->rank >= PASCO_MAX_RANK) {
			return PASCO_EINVAL;
		}
		return stack_padded(vals, n, *pad, out);
	}
	if (v0->kind == PASCO_VALUE_TENSOR) {
		const pasco_tensor *t0 = v0->tensor;
		int64_t             shape[PASCO_MAX_RANK];
		pasco_tensor       *t;
		if (t0->rank >= PASCO_MAX_RANK) {
			return PASCO_EINVAL;
		}
		shape[0] = n;
		memcpy(
		    shape + 1, t0->shape, sizeof(int64_t) * (size_t) t0->rank);
		if (pasco_tensor_alloc(&t, t0->dtype, t0->rank + 1, shape) !=
		    0) {
			return PASCO_ENOMEM;
		}
		for (int64_t i = 0; i < n; i++) {
			memcpy((char *) t->data + (size_t) i * t0->nbytes,
			    vals[i]->tensor->data, t0->nbytes);
		}
		*out = pasco_value_tensor(t);
		return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
	}
	if (v0->kind == PASCO_VALUE_NONE) {
		*out = pasco_value_none();
		return *out != NULL ? PASCO_OK : PASCO_ENOMEM;
	}
	return stack_children(vals, n, pad, out);
}

/* batch and padded_batch: one kind, padded or not. */
typedef struct batch {
	int64_t size;
	bool    drop_remainder;
	bool    padded;
	double  pad_value; /* when padded */
} batch;

static int
batch_next(pasco_dataset *ds, pasco_value **out)
{
	batch        *b    = ds->state;
	pasco_value **vals = pasci_calloc((size_t) b->size, sizeof(*vals));
	int64_t       n    = 0;
	int           rv   = PASCO_OK;

	if (vals == NULL) {
		return PASCO_ENOMEM;
	}
	while (n < b->size &&
	       (rv = ds->input->ops->next(ds->input, &vals[n])) == 0) {
		n++;
	}
	if (rv == PASCO_EOUTOFRANGE && n > 0 &&
	    !(b->drop_remainder && n < b->size)) {
		rv = PASCO_OK;
	}
	if (rv == 0) {
		rv = stack(vals, n, b->padded ? &b->pad_value : NULL, out);
		if (rv == PASCO_EINVAL) {
			pasci_log(PASCI_LOG_ERROR,
			    "batch: elements differ in "
			    "structure, dtype or shape and cannot be stacked");
		}
	}
	for (int64_t i = 0; i < n; i++) {
		pasco_value_free(vals[i]);
	}
	free(vals);
	return rv;
}

static const struct dataset_ops batch_ops = {
    .next = batch_next, .reset = pasci_dataset_input_reset, .fini = NULL};

int
pasco_dataset_batch(pasco_dataset **out, pasco_dataset *in, int64_t batch_size,
    bool drop_remainder)
{
	int rv;
	if (in == NULL || batch_size < 1) {
		pasco_dataset_free(in);
		*out = NULL;
		return PASCO_EINVAL;
	}
	if ((rv = pasci_dataset_new(out, &batch_ops, in, sizeof(batch))) ==
	    0) {
		*(batch *) (*out)->state = (batch){
		    .size = batch_size, .drop_remainder = drop_remainder};
	}
	return rv;
}

int
pasco_dataset_padded_batch(pasco_dataset **out, pasco_dataset *in,
    int64_t batch_size, bool drop_remainder, double pad_value)
{
	int rv = pasco_dataset_batch(out, in, batch_size, drop_remainder);
	if (rv == 0) {
		batch *b     = (*out)->state;
		b->padded    = true;
		b->pad_value = pad_value;
	}
	return rv;
}
