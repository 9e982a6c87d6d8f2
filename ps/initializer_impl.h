/*
 * What the ps's initializer fills share (ps/initializer_fill.c,
 * ps/init_orthogonal.c).
 */
#ifndef PASCI_INITIALIZER_IMPL_H
#define PASCI_INITIALIZER_IMPL_H

#include "pasco/initializer.h"

/* Standard normal draw number k of element g under seed (Box-Muller over
 * the counter-based generator). */
double pasci_init_std_normal(uint64_t seed, uint64_t g, uint64_t k);

/* Fills t, rows [row_offset, ...) of the whole variable of shape
 * (rank, shape), with Keras's Orthogonal of in (gain in->scale).
 * PASCO_EINVAL for a rank below 2 or a matrix past
 * PASCO_INIT_ORTHOGONAL_MAX; PASCO_ENOMEM. */
int pasci_init_orthogonal(const pasco_initializer *in, pasco_tensor *t,
    int32_t rank, const int64_t *shape, int64_t row_offset);

#endif
