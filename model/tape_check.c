/*
 * The checks and names the tape's ops share (tape_impl.h): an op's
 * inputs, dtypes and axes checked with the message naming the op, specs
 * such as "f32[2,3]" for messages, and the sort order of ids. Stateless:
 * any thread.
 */
#include "tape_impl.h"
#include "tensor_impl.h"

const char *
pasci_tensor_spec(const pasco_tensor *t, char *buf, size_t len)
{
	return pasco_tensor_spec_string(t->dtype, t->rank, t->shape, buf, len);
}

const char *
pasci_tnode_spec(const pasco_tnode *n, char *buf, size_t len)
{
	return pasci_tensor_spec(&n->value, buf, len);
}

bool
pasci_tape_check(
    pasco_tape *tp, const char *op, size_t n, pasco_tnode *const *ins)
{
	if (pasco_tape_error(tp) != PASCO_OK) {
		return false;
	}
	for (size_t k = 0; k < n; k++) {
		if (ins[k] == NULL) {
			pasci_tape_fail(
			    tp, PASCO_EINVAL, "%s: input %zu is NULL", op, k);
			return false;
		}
		if (ins[k]->tape != tp) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "%s: input %zu belongs to another tape", op, k);
			return false;
		}
		if (ins[k]->leaf == PASCI_TABLE ||
		    ins[k]->leaf == PASCI_ROWS) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "%s: input %zu (%s) is an embedding table: read "
			    "it "
			    "with embedding_lookup",
			    op, k, PASCI_SPEC(ins[k]));
			return false;
		}
	}
	return true;
}

int
pasci_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
	return (x > y) - (x < y);
}

bool
pasci_tape_same_dtype(
    pasco_tape *tp, const char *op, const pasco_tnode *a, const pasco_tnode *b)
{
	if (a->value.dtype == b->value.dtype) {
		return true;
	}
	pasci_tape_fail(tp, PASCO_EINVAL, "%s: %s and %s: dtypes differ", op,
	    PASCI_SPEC(a), PASCI_SPEC(b));
	return false;
}

int32_t
pasci_tape_axis(
    pasco_tape *tp, const char *op, const pasco_tnode *x, int32_t axis)
{
	int32_t r = x->value.rank;
	if (axis < -r || axis >= r) {
		pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: %s: axis %d is outside [%d, %d)", op, PASCI_SPEC(x),
		    (int) axis, (int) -r, (int) r);
		return -1;
	}
	return axis < 0 ? axis + r : axis;
}
