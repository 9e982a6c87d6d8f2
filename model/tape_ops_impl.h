/*
 * What the op families share beyond the tape's insides (tape_impl.h):
 * numpy broadcasting (model/ops_bcast.c), which model/ops_dense.c's add,
 * sub and mul fall back to when neither shape is the other's trailing
 * dimensions, and small helpers the composed ops use.
 */
#ifndef PASCI_TAPE_OPS_IMPL_H
#define PASCI_TAPE_OPS_IMPL_H

#include "tape_impl.h"

/* A broadcast of up to three tensors: the output's shape (rank 1 at
 * least: a scalar is [1]) and each input's stride per output dimension,
 * 0 where it repeats; rows * len elements, len the last dimension. */
typedef struct pasci_bc_plan {
	int32_t rank;
	int64_t dim[PASCO_MAX_RANK];
	int64_t st[3][PASCO_MAX_RANK];
	int64_t rows, len;
} pasci_bc_plan;

/* Plans the broadcast of ts[0..n) (n <= 3); false when they do not
 * broadcast. */
bool pasci_bc_plan_of(
    pasci_bc_plan *p, size_t n, const pasco_tensor *const *ts);

/* Moves idx (over every dimension but the last, zeroed at the start) and
 * the inputs' row offsets off[0..n) (zeroed at the start) to the next
 * row:
 *     for (int64_t r = 0; r < p.rows; r++, pasci_bc_next(&p, n, idx, off))
 *             for (int64_t j = 0; j < p.len; j++)
 *                     ... x[off[0] + j * p.st[0][p.rank - 1]] ...      */
void pasci_bc_next(
    const pasci_bc_plan *p, size_t n, int64_t *idx, int64_t *off);

/* The elementwise kinds of pasci_t_broadcast. */
typedef enum pasci_bc_kind {
	PASCI_BC_ADD,
	PASCI_BC_SUB,
	PASCI_BC_MUL,
	PASCI_BC_DIV,
	PASCI_BC_MAX,
	PASCI_BC_MIN,
	PASCI_BC_GT, /* the comparisons: 0/1, no gradient */
	PASCI_BC_GE,
	PASCI_BC_LT,
	PASCI_BC_LE,
	PASCI_BC_EQ,
	PASCI_BC_NE,
	PASCI_BC_KINDS,
} pasci_bc_kind;

/* a kind b with numpy broadcasting (shapes aligned from the right, a
 * dimension of 1 or a missing one repeats); NULL with the tape's error
 * set ("divide: f32[32,8] and f32[7]: shapes do not broadcast"). */
pasco_tnode *pasci_t_broadcast(
    pasco_tape *tp, pasci_bc_kind kind, pasco_tnode *a, pasco_tnode *b);

/* c = beta c + op(a) op(b), row-major, m x n, inner k, with beta 0 or 1
 * (0: c, of cbytes, is written whole, even when k is 0); cblas. */
void pasci_gemm(pasco_dtype dt, bool ta, bool tb, int64_t m, int64_t n,
    int64_t k, const void *a, int64_t lda, const void *b, int64_t ldb,
    double beta, void *c, int64_t ldc, size_t cbytes);

/* A node of dtype and shape holding v everywhere, with no inputs (no
 * gradient flows into it). */
pasco_tnode *pasci_t_fill(pasco_tape *tp, pasco_dtype dtype, int32_t rank,
    const int64_t *shape, double v);

/* matmul of rank 3 inputs: [batch, m, k] x [batch, k, n], op() transposing
 * the last two dimensions when asked, the batch dimensions equal. */
pasco_tnode *pasci_t_batch_matmul(
    pasco_tape *tp, pasco_tnode *a, pasco_tnode *b, bool ta, bool tb);

/* An integer tensor (i32 or i64) of shape in the tape's arena, zero-filled,
 * owned by the tape: a hold and a release never free it. NULL with the
 * tape's error set. */
pasco_tensor *pasci_tape_ints(
    pasco_tape *tp, pasco_dtype dtype, int32_t rank, const int64_t *shape);

#endif
