/*
 * The tape's insides, shared by model/tape.c (arena, leaves, the backward
 * pass) and the op families (model/ops_*.c). A node's value and every
 * buffer an op saves live in the tape's arena; nodes are kept in creation
 * order, which is a topological order (an op's inputs exist before it).
 */
#ifndef PASCI_TAPE_IMPL_H
#define PASCI_TAPE_IMPL_H

#include <stdarg.h>

#include "pasco/tape.h"

typedef struct pasci_tape_op {
	const char *name;
	/* Adds the input gradients implied by n->grad into the gradient
	 * buffers of n's inputs (pasci_tape_grad_of). NULL for leaves. */
	void (*backward)(pasco_tape *tp, pasco_tnode *n);
} pasci_tape_op;

typedef enum pasci_leaf {
	PASCI_NOT_LEAF = 0,
	PASCI_CONSTANT,
	PASCI_WATCHED,
	PASCI_TABLE, /* whole embedding table */
	PASCI_ROWS,  /* rows gathered for ids */
} pasci_leaf;

/* One contribution of a lookup to a sparse source's gradient: count rows
 * (dtype of the source, dim wide) for the table ids ids[0..count). */
typedef struct pasci_sparse_part {
	struct pasci_sparse_part *next;
	int64_t                   count;
	int64_t                  *ids;
	void                     *rows;
} pasci_sparse_part;

struct pasco_tnode {
	pasco_tensor         value; /* data in the arena, or a leaf's tensor */
	pasco_tape          *tape;
	const pasci_tape_op *op;
	pasci_leaf           leaf;
	int64_t              index; /* position on the tape */
	pasco_tnode         *in[2];
	pasco_tnode        **ins; /* concat: n inputs */
	size_t               nin;
	bool                 needs_grad; /* depends on a watched source */
	void                *grad;     /* value's dtype and count; backward */
	bool                 grad_set; /* grad holds a sum (not garbage) */
	/* watched and rows leaves: the tensor whose data grad is, handed to
	 * the caller as it is (held by the tape until the next gradient or
	 * the tape's end); rows leaves: touched[k] once sorted row k has a
	 * gradient */
	pasco_tensor      *grad_t;
	unsigned char     *touched;
	pasci_sparse_part *parts; /* table leaves: backward */
	/* what an op's backward needs beyond its inputs and value */
	bool     flag[2];
	double   f;
	int64_t  i[2];
	void    *aux;
	int64_t *ids; /* rows leaf: sorted ids; lookup: resolved table ids */
	/* rows leaf of a dynamic table (watch_keys): ids are keys, any 64
	 * bits; only -1 is padding (else every negative id is) */
	bool keys64;
	/* rows leaf: row of each sorted id; lookup: the source's sorted row
	 * (a table: the id) */
	int64_t *pos;
};

/* Arena memory, 16-byte aligned, zero-filled; NULL (and the tape's error
 * set to PASCO_ENOMEM) when out of memory. The arena's blocks are kept
 * for the thread's next tape: a step that allocates what the last one did
 * costs no malloc. */
/* The library's train step under ASP takes its global step with its
 * reads, one round trip less: counter set (an unsplit integer counter,
 * pasci_step_can_prefetch) before pasco_tape_read makes the read
 * fetch-add it with the variables and keep the step (taken, t), which
 * pasco_tape_apply then uses for an optimizer whose iterations it is. A
 * step that fails between them leaves that global step unused. */
typedef struct pasci_tape_update pasci_tape_update;
typedef struct pasci_tape_step {
	pasco_variable *counter;
	int64_t         t;
	bool            taken;
	/* the updates recorded (pasci_tape_add_update), latest first */
	pasci_tape_update *updates;
} pasci_tape_step;

/* A non-gradient update that a layer's forward pass records on a
 * training tape (BatchNormalization's moving statistics): delta added to
 * the variable that the watched leaf var was read from. pasco_tape_apply
 * sends each as an assign_add in the requests of the step's gradients.
 * In the tape's arena. */
struct pasci_tape_update {
	pasci_tape_update  *next;
	pasco_tnode        *var;
	const pasco_tensor *delta; /* var's dtype and shape; the tape's */
};

/* Records that delta (of var's dtype and count; held by the tape until
 * it is freed, as pasco_tape_constant holds it) is to be added to the
 * variable of var, a leaf of pasco_tape_watch (pasco_tape_read's).
 * PASCO_EINVAL on the tape (and false) for another node or a delta that
 * does not fit. */
bool pasci_tape_add_update(
    pasco_tape *tp, pasco_tnode *var, const pasco_tensor *delta);

pasci_tape_step *pasci_tape_step_of(pasco_tape *tp);

void *pasci_tape_mem(pasco_tape *tp, size_t bytes);

/* pasci_tape_mem without the zero-fill, for what the caller writes whole. */
void *pasci_tape_mem_raw(pasco_tape *tp, size_t bytes);

/* The most bytes a tape's arena gives out in all (values, nodes): past
 * it an op fails with PASCO_ENOMEM naming the op, its dtype and shape and
 * the bound, as a node of a count past int64 does. The default, 16 GiB,
 * bounds what one step's graph may take; PASCO_MAX_TAPE_MB (megabytes,
 * read at the first use) sets it for the process; set returns the old
 * bound (for tests and fuzz targets). Thread-safe. */
#define PASCI_TAPE_MAX_BYTES ((size_t) 16 << 30)
size_t pasci_tape_set_max_bytes(size_t bytes);

/* The capacity of a tape's message (pasco_tape_message), '\0' included:
 * model/graph.c puts the node an op failed at before the op's message. */
#define PASCI_TAPE_MSG_MAX 512

/* Sets the tape's error (first one sticks) with a printf message; returns
 * NULL so an op can `return pasci_tape_fail(...)`. */
pasco_tnode *pasci_tape_fail(pasco_tape *tp, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* True when an op may run: the tape has no error and its inputs are
 * nodes of this tape (a NULL input with no error set is reported). Dense
 * inputs only: sparse sources are reported as misuse. */
bool pasci_tape_check(
    pasco_tape *tp, const char *op, size_t n, pasco_tnode *const *ins);

/* True when a and b have one dtype; else sets "op: spec and spec: dtypes
 * differ". */
bool pasci_tape_same_dtype(pasco_tape *tp, const char *op,
    const pasco_tnode *a, const pasco_tnode *b);

/* The axis in [0, rank) that axis (negative from the end) names, or -1
 * with the tape's error set. */
int32_t pasci_tape_axis(
    pasco_tape *tp, const char *op, const pasco_tnode *x, int32_t axis);

/* A new node of op with dtype, rank and shape, its value zero-filled in
 * the arena, inputs in[0..nin) (needs_grad from theirs). NULL on ENOMEM. */
pasco_tnode *pasci_tape_node(pasco_tape *tp, const pasci_tape_op *op,
    pasco_dtype dtype, int32_t rank, const int64_t *shape, size_t nin,
    pasco_tnode *const *in);

/* pasci_tape_node with the value not zero-filled: the op writes it whole. */
pasco_tnode *pasci_tape_node_raw(pasco_tape *tp, const pasci_tape_op *op,
    pasco_dtype dtype, int32_t rank, const int64_t *shape, size_t nin,
    pasco_tnode *const *in);

/* n's gradient buffer (zero-filled on first use), or NULL when n needs no
 * gradient or memory ran out. */
void *pasci_tape_grad_of(pasco_tape *tp, pasco_tnode *n);

/* n's gradient buffer to add into, or NULL as pasci_tape_grad_of. *fresh
 * is true when nothing was added yet: the buffer then holds garbage and
 * the caller must write (not add) every element, as gemm with beta 0
 * does; the buffer counts as written from then on. */
void *pasci_tape_grad_out(pasco_tape *tp, pasco_tnode *n, bool *fresh);

/* Gives x, an input of n whose gradient is n's unchanged (bias_add's x,
 * reshape's), n's gradient buffer as its own when x has none yet and is
 * not a leaf: no copy. n's backward is its last use of n->grad, so later
 * additions into x's gradient may write there. False (nothing done)
 * otherwise: the caller adds as usual. */
bool pasci_tape_grad_pass(pasco_tnode *x, pasco_tnode *n);

/* A rows leaf's gradient buffer ([n, dim], row k for its sorted id k,
 * allocated on first use) and *touched: touched[k] is 0 until row k is
 * written (its contents are garbage until then). NULL without memory. */
void *pasci_tape_rows_grad(
    pasco_tape *tp, pasco_tnode *s, unsigned char **touched);

/* Runs the statements that follow with T the C type of dt (float for
 * f32, double for f64): the dtype is tested once, outside an op's loops,
 * and the loops compile to typed code.
 *     PASCI_TYPED(dt, T, {
 *             const T *x = n->value.data;
 *             ...
 *     });                                                               */
#define PASCI_TYPED(dt, T, ...)                                               \
	do {                                                                  \
		if ((dt) == PASCO_F32) {                                      \
			typedef float T;                                      \
			__VA_ARGS__                                           \
		} else {                                                      \
			typedef double T;                                     \
			__VA_ARGS__                                           \
		}                                                             \
	} while (0)

/* dst[i] = expr for i in [0, n) when fresh, else dst[i] += expr: two
 * loops, each one the compiler can vectorise (expr may use i). */
#define PASCI_SET_OR_ADD(fresh, n, i, dst, expr)                              \
	do {                                                                  \
		if (fresh) {                                                  \
			for (int64_t i = 0; i < (n); i++) {                   \
				(dst)[i] = (expr);                            \
			}                                                     \
		} else {                                                      \
			for (int64_t i = 0; i < (n); i++) {                   \
				(dst)[i] += (expr);                           \
			}                                                     \
		}                                                             \
	} while (0)

/* Runs the statements that follow for i in [0, n), on blocks of 8 and
 * then the rest: a loop of a known count of 8 that gcc vectorises at -O2
 * (its cost model there takes no loop of unknown count), when the
 * pointers it writes through are restrict parameters of the function
 * (an elementwise kernel's). Each element is computed as the plain loop
 * computes it: the same values.
 *     PASCI_EACH8(n, i, { y[i] = x[i] > 0 ? x[i] : 0; });               */
#define PASCI_EACH8(n, i, ...)                                                \
	do {                                                                  \
		int64_t i##_b = 0;                                            \
		for (; i##_b + 8 <= (n); i##_b += 8) {                        \
			for (int i##_k = 0; i##_k < 8; i##_k++) {             \
				int64_t i = i##_b + i##_k;                    \
				__VA_ARGS__                                   \
			}                                                     \
		}                                                             \
		for (int64_t i = i##_b; i < (n); i++) {                       \
			__VA_ARGS__                                           \
		}                                                             \
	} while (0)

/* The tape's training flag and a seed for the op at position index. */
bool     pasci_tape_training(const pasco_tape *tp);
uint64_t pasci_tape_seed(const pasco_tape *tp, int64_t index);

/* qsort's comparison of int64_t values. */
int pasci_cmp_i64(const void *a, const void *b);

/* "f32[2,3]" for a node (buf of 64 bytes at least). */
const char *pasci_tnode_spec(const pasco_tnode *n, char *buf, size_t len);
#define PASCI_SPEC(n) pasci_tnode_spec((n), (char[80]){0}, 80)
const char *pasci_tensor_spec(const pasco_tensor *t, char *buf, size_t len);
#define PASCI_TSPEC(t) pasci_tensor_spec((t), (char[80]){0}, 80)

/* Element access on f32 / f64 buffers, for a scalar or a few elements:
 * a loop over a tensor tests the dtype once, with PASCI_TYPED. */
static inline double
pasci_ld(pasco_dtype dt, const void *p, int64_t i)
{
	return dt == PASCO_F32 ? (double) ((const float *) p)[i]
	                       : ((const double *) p)[i];
}

static inline void
pasci_st(pasco_dtype dt, void *p, int64_t i, double v)
{
	if (dt == PASCO_F32) {
		((float *) p)[i] = (float) v;
	} else {
		((double *) p)[i] = v;
	}
}

static inline void
pasci_acc(pasco_dtype dt, void *p, int64_t i, double v)
{
	if (dt == PASCO_F32) {
		((float *) p)[i] += (float) v;
	} else {
		((double *) p)[i] += v;
	}
}

/* The value's element i. */
static inline double
pasci_val(const pasco_tnode *n, int64_t i)
{
	return pasci_ld(n->value.dtype, n->value.data, i);
}

/* An id of an i32 or i64 tensor. */
static inline int64_t
pasci_id_at(const pasco_tensor *ids, int64_t i)
{
	return ids->dtype == PASCO_I64 ? ((const int64_t *) ids->data)[i]
	                               : ((const int32_t *) ids->data)[i];
}

#endif
