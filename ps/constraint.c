/*
 * Keras's weight constraints on a ps (include/pasco/constraint.h): the
 * projection of a variable's shard after each optimizer update of it,
 * under the variable's lock (ps/store_apply.c). MaxNorm's norms are over
 * its axis within the shard: the create refused a reduction over the
 * first axis on a split variable, so a shard holds every element of each
 * norm. Pure; any thread.
 */
#include <math.h>

#include "constraint_impl.h"

#define NORM_EPSILON 1e-7 /* Keras's backend.epsilon() */

/* MaxNorm over axis a of t: for each position of the other axes, the
 * elements along a (stride inner, count n) scaled together. */
static void
max_norm(const pasco_constraint *c, pasco_tensor *t, int32_t a)
{
	int64_t n = t->shape[a], inner = 1, outer = 1;
	for (int32_t i = a + 1; i < t->rank; i++) {
		inner *= t->shape[i];
	}
	for (int32_t i = 0; i < a; i++) {
		outer *= t->shape[i];
	}
	for (int64_t o = 0; o < outer; o++) {
		for (int64_t j = 0; j < inner; j++) {
			int64_t base = o * n * inner + j;
			double  sum  = 0, norm, f;
			for (int64_t k = 0; k < n; k++) {
				double x =
				    pasco_tensor_get(t, base + k * inner);
				sum += x * x;
			}
			norm = sqrt(sum);
			f = fmin(norm, c->max_value) / (NORM_EPSILON + norm);
			for (int64_t k = 0; k < n; k++) {
				int64_t e = base + k * inner;
				pasco_tensor_set(
				    t, e, pasco_tensor_get(t, e) * f);
			}
		}
	}
}

int32_t
pasci_constraint_axis(const pasco_constraint *c, int32_t rank)
{
	int32_t a = c->axis < 0 ? c->axis + rank : c->axis;
	return rank == 0 ? 0 : a;
}

const char *
pasci_constraint_check(const pasco_constraint *c, int32_t rank)
{
	int32_t a;
	switch (c->kind) {
	case PASCO_CONSTRAINT_NONE:
	case PASCO_CONSTRAINT_NON_NEG:
		return NULL;
	case PASCO_CONSTRAINT_MAX_NORM:
		a = pasci_constraint_axis(c, rank);
		if (!(c->max_value > 0) || !isfinite(c->max_value)) {
			return "MaxNorm: max_value must be a number > 0";
		}
		return rank > 0 && (a < 0 || a >= rank)
		           ? "MaxNorm: axis is outside the variable's rank"
		           : NULL;
	}
	return "unknown constraint kind";
}

void
pasci_constraint_apply(const pasco_constraint *c, pasco_tensor *t)
{
	if (c->kind == PASCO_CONSTRAINT_NON_NEG) {
		for (int64_t i = 0; i < t->count; i++) {
			if (!(pasco_tensor_get(t, i) >= 0)) {
				pasco_tensor_set(t, i, 0);
			}
		}
	} else if (c->kind == PASCO_CONSTRAINT_MAX_NORM && t->count > 0) {
		if (t->rank == 0) { /* a scalar is its own norm */
			double x = pasco_tensor_get(t, 0);
			pasco_tensor_set(t, 0,
			    x * fmin(fabs(x), c->max_value) /
			        (NORM_EPSILON + fabs(x)));
			return;
		}
		max_norm(c, t, pasci_constraint_axis(c, t->rank));
	}
}
