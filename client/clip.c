/*
 * Keras's gradient clipping (optimizer.h: clipnorm, clipvalue,
 * global_clipnorm), where one apply call has every gradient whole: before
 * pasco_variable_apply_gradients* splits them into shard requests, so a
 * worker's train step clips over all of the step's gradients and a sharded
 * variable's gradient is clipped as one. A sparse gradient's rows are first
 * summed by id (the norm and the clipped values are its dense gradient's,
 * as Keras computes them). Arithmetic in double, stored in the gradient's
 * dtype. Stateless: any thread.
 */
#include "clip.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer_desc.h"
#include "util.h"

bool
pasci_clip_wanted(const pasco_optimizer *opt)
{
	return opt->clipnorm > 0 || opt->clipvalue > 0 ||
	       opt->global_clipnorm > 0;
}

static int64_t
id_at(const pasco_tensor *ids, int64_t i)
{
	return ids->dtype == PASCO_I64 ? ((const int64_t *) ids->data)[i]
	                               : ((const int32_t *) ids->data)[i];
}

/* Whether grads is shaped ids.shape + a row's shape, with integer ids:
 * else the apply refuses it, naming what is wrong, and it is left alone. */
static bool
sparse_shapes_fit(const pasco_tensor *ids, const pasco_tensor *grads)
{
	if ((ids->dtype != PASCO_I64 && ids->dtype != PASCO_I32) ||
	    grads->rank < ids->rank ||
	    grads->rank - ids->rank >= PASCO_MAX_RANK) {
		return false;
	}
	for (int32_t d = 0; d < ids->rank; d++) {
		if (ids->shape[d] != grads->shape[d]) {
			return false;
		}
	}
	return true;
}

typedef struct id_pos {
	int64_t id, pos;
} id_pos;

static int
id_pos_cmp(const void *a, const void *b)
{
	const id_pos *x = a, *y = b;
	if (x->id != y->id) {
		return x->id < y->id ? -1 : 1;
	}
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* ids and grads with the rows of equal ids summed: *uids (i64, rank 1)
 * and *ugrads ([n unique] + a row's shape), both new. */
static int
dedupe(const pasco_tensor *ids, const pasco_tensor *grads, pasco_tensor **uids,
    pasco_tensor **ugrads)
{
	int64_t n = ids->count, row = n > 0 ? grads->count / n : 0, u = 0;
	int64_t shape[PASCO_MAX_RANK];
	id_pos *order = malloc((size_t) (n > 0 ? n : 1) * sizeof(*order));
	int     rv;
	if (order == NULL) {
		return PASCO_ENOMEM;
	}
	for (int64_t i = 0; i < n; i++) {
		order[i] = (id_pos){id_at(ids, i), i};
	}
	qsort(order, (size_t) n, sizeof(*order), id_pos_cmp);
	for (int64_t i = 0; i < n; i++) {
		u += i == 0 || order[i].id != order[i - 1].id;
	}
	shape[0] = u;
	for (int32_t d = ids->rank; d < grads->rank; d++) {
		shape[1 + d - ids->rank] = grads->shape[d];
	}
	if ((rv = pasco_tensor_alloc(uids, PASCO_I64, 1, &u)) != 0 ||
	    (rv = pasco_tensor_alloc(ugrads, grads->dtype,
	         1 + grads->rank - ids->rank, shape)) != 0) {
		pasco_tensor_release(*uids);
		*uids = NULL;
		free(order);
		return rv;
	}
	for (int64_t i = 0, k = -1; i < n; i++) {
		if (i == 0 || order[i].id != order[i - 1].id) {
			((int64_t *) (*uids)->data)[++k] = order[i].id;
		}
		for (int64_t j = 0; j < row; j++) {
			double acc = pasco_tensor_get(*ugrads, k * row + j);
			pasco_tensor_set(*ugrads, k * row + j,
			    acc + pasco_tensor_get(
			              grads, order[i].pos * row + j));
		}
	}
	free(order);
	return PASCO_OK;
}

static double
sum_squares(const pasco_tensor *t)
{
	double s = 0;
	for (int64_t i = 0; i < t->count; i++) {
		double x = pasco_tensor_get(t, i);
		s += x * x;
	}
	return s;
}

static void
scale(pasco_tensor *t, double by)
{
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(t, i, pasco_tensor_get(t, i) * by);
	}
}

static void
clip_values(pasco_tensor *t, double c)
{
	for (int64_t i = 0; i < t->count; i++) {
		pasco_tensor_set(
		    t, i, fmin(fmax(pasco_tensor_get(t, i), -c), c));
	}
}

/* Keras's _clip_by_norm: g * c / max(norm, c) (0 stays 0). */
static double
norm_scale(double sq, double c)
{
	double norm = sq > 0 ? sqrt(sq) : sq;
	return c / fmax(norm, c);
}

/* Keras's clip_by_global_norm: c * min(1 / norm, 1 / c), NaN when the
 * norm is not finite. */
static double
global_scale(double sq, double c)
{
	double norm = sqrt(sq);
	return c * fmin(1.0 / norm, 1.0 / c) + (norm - norm);
}

int
pasci_clip_gradients(size_t n, const pasco_optimizer *opt,
    const pasco_tensor *const *ids, const pasco_tensor *const *grads,
    pasco_tensor **cids, pasco_tensor **cgrads)
{
	double sq = 0;
	int    rv = PASCO_OK;
	memset(cids, 0, n * sizeof(*cids));
	memset(cgrads, 0, n * sizeof(*cgrads));
	for (size_t k = 0; k < n && rv == 0; k++) {
		bool sparse = ids != NULL && ids[k] != NULL;
		if (sparse && !sparse_shapes_fit(ids[k], grads[k])) {
			continue; /* left as it is, for the apply to refuse */
		}
		rv = sparse ? dedupe(ids[k], grads[k], &cids[k], &cgrads[k])
		            : pasco_tensor_copy(&cgrads[k], grads[k]);
		if (rv == 0) {
			double s = sum_squares(cgrads[k]);
			sq += s;
			if (opt->clipnorm > 0) {
				scale(cgrads[k], norm_scale(s, opt->clipnorm));
			} else if (opt->clipvalue > 0) {
				clip_values(cgrads[k], opt->clipvalue);
			}
		}
	}
	for (size_t k = 0; k < n && rv == 0 && opt->global_clipnorm > 0; k++) {
		if (cgrads[k] != NULL) {
			scale(
			    cgrads[k], global_scale(sq, opt->global_clipnorm));
		}
	}
	if (rv != 0) {
		pasci_clip_release(n, cids, cgrads);
	}
	return rv;
}

void
pasci_clip_release(size_t n, pasco_tensor **cids, pasco_tensor **cgrads)
{
	for (size_t k = 0; k < n; k++) {
		pasco_tensor_release(cids[k]);
		pasco_tensor_release(cgrads[k]);
		cids[k]   = NULL;
		cgrads[k] = NULL;
	}
}
