/*
 * What the optimizer files (base/optimizers/<file>.c) share: the field and
 * slot macros of their descriptors and the loop that runs an f32 kernel
 * over the rows of an apply. f32 variables are updated in f32 arithmetic,
 * as Keras updates float32 variables, by one loop per optimizer over plain
 * arrays, which the compiler vectorizes: GCC's -O2 cost model leaves these
 * loops scalar, and sqrtf is vectorized only without errno
 * (base/meson.build builds these files with -fno-math-errno; the operands
 * are never negative). optimize() is GCC's; clang's vectorizer runs at
 * -O2. The kernel is called directly from its rows loop in its own file
 * (PASCI_OPT_F32_ROWS), so its arrays stay in registers: through a
 * pointer per row, SGD's sparse rows were 1.5x slower.
 */
#ifndef PASCI_OPT_KERNEL_H
#define PASCI_OPT_KERNEL_H

#include <math.h>
#include <stddef.h>

#include "optimizer_desc.h"

/* The slot names, and their count derived from them. */
#define SLOTS(...)                                                            \
	.slots  = {__VA_ARGS__},                                              \
	.nslots = (int) (sizeof((const char *[]){__VA_ARGS__}) /              \
	                 sizeof(const char *))

/* The config's fields, and their count derived from them. */
#define FIELDS(...)                                                           \
	.fields  = {__VA_ARGS__},                                             \
	.nfields = (int) (sizeof((pasci_opt_field[]){__VA_ARGS__}) /          \
	                  sizeof(pasci_opt_field))

/* A field: Keras's key and the pasco_optimizer member that keeps it (its
 * type says whether it is a bool). */
// clang-format off
#define F(k, member)                                                          \
	{                                                                     \
		.key = (k), .off = offsetof(pasco_optimizer, member),         \
		.is_bool = _Generic(((pasco_optimizer *) 0)->member,          \
		    bool: true, default: false)                               \
	}
// clang-format on

#define LR F("learning_rate", learning_rate)
#define EPS F("epsilon", epsilon)
#define ACC F("initial_accumulator_value", initial_accumulator_value)

/* The arrays an f32 kernel updates: n elements of w from g, and the
 * slots (NULL for one its optimizer does not use). */
typedef struct pasci_opt_f32 {
	float *restrict w;
	const float *restrict g;
	float *restrict s0, *restrict s1, *restrict s2;
	int64_t n;
} pasci_opt_f32;

#if defined(__clang__)
#define PASCI_F32_KERNEL static
#else
#define PASCI_F32_KERNEL __attribute__((optimize("O3"))) static
#endif

/* Rows of a big table are cache misses: the loop asks for the row this
 * many ahead (value and slots) while it updates this one. */
#define PASCI_OPT_PREFETCH_AHEAD 12

static inline void
pasci_opt_prefetch_row(const pasci_opt_rows *r, int64_t at)
{
	size_t bytes = (size_t) r->row_elems * sizeof(float);
	for (size_t off = 0; off < bytes; off += 64) {
		__builtin_prefetch((const char *) (r->w + at) + off, 1);
		for (int k = 0; k < PASCI_OPT_MAX_SLOTS; k++) {
			if (r->slot[k] != NULL) {
				__builtin_prefetch(
				    (const char *) (r->slot[k] + at) + off, 1);
			}
		}
	}
}

/* The row i of r as the arrays of a kernel. */
static inline pasci_opt_f32
pasci_opt_row(const pasci_opt_rows *r, int64_t i)
{
	int64_t at = r->ids != NULL ? r->ids[i] * r->row_elems
	                            : r->at + i * r->row_elems;
	return (pasci_opt_f32){.w = r->w + at,
	    .g                    = r->g + i * r->row_elems,
	    .s0 = r->slot[0] != NULL ? r->slot[0] + at : NULL,
	    .s1 = r->slot[1] != NULL ? r->slot[1] + at : NULL,
	    .s2 = r->slot[2] != NULL ? r->slot[2] + at : NULL,
	    .n  = r->row_elems};
}

/* Defines `static void name(o, k, r)`, the descriptor's f32_rows: the
 * kernel `kernel(o, k, pasci_opt_f32)` over every row of r. */
#define PASCI_OPT_F32_ROWS(name, kernel)                                      \
	static void name(const pasco_optimizer *o, const double *k,           \
	    const pasci_opt_rows *r)                                          \
	{                                                                     \
		for (int64_t i = 0; i < r->nrows; i++) {                      \
			if (r->ids != NULL &&                                 \
			    i + PASCI_OPT_PREFETCH_AHEAD < r->nrows) {        \
				pasci_opt_prefetch_row(                       \
				    r, r->ids[i + PASCI_OPT_PREFETCH_AHEAD] * \
				           r->row_elems);                     \
			}                                                     \
			kernel(o, k, pasci_opt_row(r, i));                    \
		}                                                             \
	}

/* Slot initial values most optimizers share. */
double pasci_opt_zero_init(const pasco_optimizer *o, int k);
/* Slot 0 at initial_accumulator_value, the others at 0 (Adagrad, FTRL). */
double pasci_opt_accumulator_init(const pasco_optimizer *o, int k);

/* Adam's parts that AdamW shares (base/optimizers/adam.c): one element's
 * update in double, the check of beta_1 and beta_2, which slots a
 * configuration uses (no v_hat without amsgrad), the step size at t. */
void pasci_opt_adam_update(
    const pasco_optimizer *o, const double *k, double *w, double g, double *s);
const char *pasci_opt_adam_check(const pasco_optimizer *o);
bool        pasci_opt_adam_slot_used(const pasco_optimizer *o, int k);
void pasci_opt_adam_scalars(const pasco_optimizer *o, double t, double *k);

#endif
