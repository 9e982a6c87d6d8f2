/*
 * Reductions over a list of axes, with Keras's keepdims: sum, mean, max
 * (the gradient to the first maximum in row-major order, as TensorFlow's
 * argmax picks it), and argmax over one axis (an i64 tensor, no
 * gradient). The reduced shape with its axes kept as 1 broadcasts to the
 * input's, so a reduction walks the input with the broadcast plan of
 * model/ops_bcast.c: each input element meets its output element through
 * the plan's strides, 0 on the reduced axes. The one-axis reductions of
 * model/ops_dense.c stay as they are.
 */
#include <math.h>
#include <string.h>

#include "tape_ops_impl.h"

enum { R_SUM, R_MEAN, R_MAX };

/* What a reduction's backward needs: the plan (input 0: x, 1: the kept
 * output) and, for max, the input index of each output's maximum. */
typedef struct red_state {
	pasci_bc_plan p;
	int64_t      *arg;
} red_state;

/* Marks the axes to reduce in red[0..rank) (NULL axes: every one) and
 * the kept shape in keep; false with the tape's error set. */
static bool
red_axes(pasco_tape *tp, const char *name, const pasco_tnode *x, size_t naxes,
    const int32_t *axes, bool *red, pasco_tensor *keep)
{
	int32_t rank = x->value.rank;
	memset(keep, 0, sizeof(*keep));
	keep->rank = rank;
	for (int32_t d = 0; d < rank; d++) {
		red[d]         = axes == NULL;
		keep->shape[d] = x->value.shape[d];
	}
	for (size_t k = 0; axes != NULL && k < naxes; k++) {
		int32_t a = pasci_tape_axis(tp, name, x, axes[k]);
		if (a < 0) {
			return false;
		}
		if (red[a]) {
			pasci_tape_fail(tp, PASCO_EINVAL,
			    "%s: %s: axis %d is given twice", name,
			    PASCI_SPEC(x), (int) axes[k]);
			return false;
		}
		red[a] = true;
	}
	for (int32_t d = 0; d < rank; d++) {
		keep->shape[d] = red[d] ? 1 : keep->shape[d];
	}
	return true;
}

static void
red_backward(pasco_tape *tp, pasco_tnode *n)
{
	const red_state     *s    = n->aux;
	const pasci_bc_plan *p    = &s->p;
	int64_t              last = p->rank - 1, len = p->len;
	int64_t              s0 = p->st[0][last], s1 = p->st[1][last];
	int64_t              idx[PASCO_MAX_RANK] = {0}, off[2] = {0};
	bool                 fresh;
	void                *dx = pasci_tape_grad_out(tp, n->in[0], &fresh);
	if (dx == NULL) {
		return;
	}
	PASCI_TYPED(n->value.dtype, T, {
		const T *g = n->grad;
		T       *d = dx;
		if (s->arg != NULL) {
			if (fresh) {
				memset(d, 0, n->in[0]->value.nbytes);
			}
			for (int64_t o = 0; o < n->value.count; o++) {
				d[s->arg[o]] += g[o];
			}
			return;
		}
		for (int64_t r = 0; r < p->rows; r++) {
			T       *dd = d + off[0];
			const T *gg = g + off[1];
			T        f  = (T) n->f;
			for (int64_t j = 0; fresh && j < len; j++) {
				dd[j * s0] = f * gg[j * s1];
			}
			for (int64_t j = 0; !fresh && j < len; j++) {
				dd[j * s0] += f * gg[j * s1];
			}
			pasci_bc_next(p, 2, idx, off);
		}
	});
}

static const pasci_tape_op red_ops[] = {
    [R_SUM]  = {"reduce_sum", red_backward},
    [R_MEAN] = {"reduce_mean", red_backward},
    [R_MAX]  = {"reduce_max", red_backward},
};

/* The forward of sum and mean (y zero-filled): y += x * f per element. */
static void
red_sum(const red_state *s, pasco_tnode *n, const pasco_tnode *x)
{
	const pasci_bc_plan *p    = &s->p;
	int64_t              last = p->rank - 1, len = p->len;
	int64_t              s0 = p->st[0][last], s1 = p->st[1][last];
	int64_t              idx[PASCO_MAX_RANK] = {0}, off[2] = {0};
	PASCI_TYPED(n->value.dtype, T, {
		T *y = n->value.data;
		for (int64_t r = 0; r < p->rows; r++) {
			const T *xs = (const T *) x->value.data + off[0];
			for (int64_t j = 0; j < len; j++) {
				y[off[1] + j * s1] += xs[j * s0];
			}
			pasci_bc_next(p, 2, idx, off);
		}
		for (int64_t o = 0; o < n->value.count; o++) {
			y[o] = (T) (n->f * (double) y[o]);
		}
	});
}

/* The forward of max: the first maximum in row-major order wins. */
static void
red_max(const red_state *s, pasco_tnode *n, const pasco_tnode *x)
{
	const pasci_bc_plan *p    = &s->p;
	int64_t              last = p->rank - 1, len = p->len;
	int64_t              s0 = p->st[0][last], s1 = p->st[1][last];
	int64_t              idx[PASCO_MAX_RANK] = {0}, off[2] = {0};
	for (int64_t o = 0; o < n->value.count; o++) {
		s->arg[o] = -1;
	}
	PASCI_TYPED(n->value.dtype, T, {
		T       *y  = n->value.data;
		const T *xs = x->value.data;
		for (int64_t r = 0; r < p->rows; r++) {
			for (int64_t j = 0; j < len; j++) {
				int64_t i = off[0] + j * s0,
				        o = off[1] + j * s1;
				if (s->arg[o] < 0 || xs[i] > y[o]) {
					y[o]      = xs[i];
					s->arg[o] = i;
				}
			}
			pasci_bc_next(p, 2, idx, off);
		}
	});
}

static pasco_tnode *
reduce_axes(pasco_tape *tp, int kind, pasco_tnode *x, size_t naxes,
    const int32_t *axes, bool keepdims)
{
	const char  *name = red_ops[kind].name;
	bool         red[PASCO_MAX_RANK];
	pasco_tensor keep;
	int64_t      shape[PASCO_MAX_RANK];
	int32_t      rank = 0;
	red_state   *s;
	pasco_tnode *n;
	if (!pasci_tape_check(tp, name, 1, &x) ||
	    !red_axes(tp, name, x, naxes, axes, red, &keep) ||
	    (s = pasci_tape_mem(tp, sizeof(*s))) == NULL) {
		return NULL;
	}
	pasci_bc_plan_of(&s->p, 2, (const pasco_tensor *[]){&x->value, &keep});
	for (int32_t d = 0; d < x->value.rank; d++) {
		if (keepdims || !red[d]) {
			shape[rank++] = keep.shape[d];
		}
	}
	n = pasci_tape_node(
	    tp, &red_ops[kind], x->value.dtype, rank, shape, 1, &x);
	if (n == NULL) {
		return NULL;
	}
	if (kind != R_SUM && n->value.count > 0 &&
	    x->value.count / n->value.count == 0) {
		return pasci_tape_fail(tp, PASCO_EINVAL,
		    "%s: %s: the %s of no elements", name, PASCI_SPEC(x),
		    kind == R_MEAN ? "mean" : "maximum");
	}
	n->aux = s;
	n->f   = kind == R_MEAN
	             ? (double) n->value.count / (double) x->value.count
	             : 1.0;
	if (kind != R_MAX) {
		red_sum(s, n, x);
	} else if ((s->arg = pasci_tape_mem_raw(
	                tp, (size_t) n->value.count * sizeof(int64_t) + 8)) !=
	           NULL) {
		red_max(s, n, x);
	} else {
		return NULL;
	}
	return n;
}

pasco_tnode *
pasco_t_reduce_sum_axes(pasco_tape *tp, pasco_tnode *x, size_t naxes,
    const int32_t *axes, bool keepdims)
{
	return reduce_axes(tp, R_SUM, x, naxes, axes, keepdims);
}

pasco_tnode *
pasco_t_reduce_mean_axes(pasco_tape *tp, pasco_tnode *x, size_t naxes,
    const int32_t *axes, bool keepdims)
{
	return reduce_axes(tp, R_MEAN, x, naxes, axes, keepdims);
}

pasco_tnode *
pasco_t_reduce_max(pasco_tape *tp, pasco_tnode *x, size_t naxes,
    const int32_t *axes, bool keepdims)
{
	return reduce_axes(tp, R_MAX, x, naxes, axes, keepdims);
}

const pasco_tensor *
pasco_t_argmax(pasco_tape *tp, pasco_tnode *x, int32_t axis)
{
	pasco_tnode   *m;
	pasco_tensor  *t;
	const int64_t *arg;
	int64_t        inner = 1, len;
	int32_t        a;
	if (!pasci_tape_check(tp, "argmax", 1, &x) ||
	    (a = pasci_tape_axis(tp, "argmax", x, axis)) < 0 ||
	    (m = reduce_axes(tp, R_MAX, x, 1, &a, false)) == NULL ||
	    (t = pasci_tape_ints(
	         tp, PASCO_I64, m->value.rank, m->value.shape)) == NULL) {
		return NULL;
	}
	arg = ((const red_state *) m->aux)->arg;
	len = x->value.shape[a];
	for (int32_t d = a + 1; d < x->value.rank; d++) {
		inner *= x->value.shape[d];
	}
	for (int64_t o = 0; o < t->count; o++) {
		((int64_t *) t->data)[o] = arg[o] / inner % len;
	}
	return t;
}
