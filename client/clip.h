/*
 * Gradient clipping before an apply (client/clip.c): Keras's clipnorm,
 * clipvalue and global_clipnorm over the gradients of one apply call.
 */
#ifndef PASCI_CLIP_H
#define PASCI_CLIP_H

#include <stdbool.h>
#include <stddef.h>

#include "pasco/optimizer.h"

/* Whether opt clips at all. */
bool pasci_clip_wanted(const pasco_optimizer *opt);

/* The n gradients clipped by opt's clipping: cgrads[k] a new tensor
 * (grads[k] scaled or clipped; for a sparse one, ids[k] not NULL, its rows
 * summed by id first, cids[k] the new ids, i64), cids[k] NULL for a dense
 * one; both NULL for a sparse one whose ids and rows do not fit (the
 * apply refuses it, naming why). The inputs are only read. On success the
 * caller owns the new tensors (pasci_clip_release); on failure (PASCO_ENOMEM)
 * none is left. Thread-safe. */
int pasci_clip_gradients(size_t n, const pasco_optimizer *opt,
    const pasco_tensor *const *ids, const pasco_tensor *const *grads,
    pasco_tensor **cids, pasco_tensor **cgrads);

/* Releases what pasci_clip_gradients made, and sets it to NULL. */
void pasci_clip_release(size_t n, pasco_tensor **cids, pasco_tensor **cgrads);

#endif
