/*
 * What Keras's BatchNormalization (model/layers/batch_norm.c, which
 * defines these) and LayerNormalization (layer_norm.c) share: the
 * normalization on the tape out of its ops, so that the gradient goes
 * through the statistics as Keras's autodiff takes it, and the config
 * fields of their gamma and beta. Stateless: any thread.
 */
#ifndef PASCI_LAYER_NORMS_H
#define PASCI_LAYER_NORMS_H

#include "layer_desc.h"

/* The nodes of layer c->i's gamma (when has_gamma) and beta (when
 * has_beta), its first variables in that order, into *gamma and *beta
 * (NULL for one it lacks); the number of them. -1 with the tape's error
 * set when a node is missing. */
int pasci_norm_affine_nodes(pasci_layer_call *c, bool has_gamma, bool has_beta,
    pasco_tnode **gamma, pasco_tnode **beta);

/* The input node of layer c->i, checked: [batch, width] of width (its
 * statistics' count). NULL with the tape's error set. */
pasco_tnode *pasci_norm_input(pasci_layer_call *c, int64_t width);

/* x's mean and biased variance over axis (kept as 1), into *mean and
 * *var; returns x - mean. NULL with the tape's error set. */
pasco_tnode *pasci_norm_moments(pasco_tape *tp, pasco_tnode *x, int32_t axis,
    pasco_tnode **mean, pasco_tnode **var);

/* num / sqrt(var + epsilon), times gamma and plus beta when not NULL
 * (broadcasting as numpy). NULL with the tape's error set. */
pasco_tnode *pasci_norm_finish(pasco_tape *tp, pasco_tnode *num,
    pasco_tnode *var, double epsilon, pasco_tnode *gamma, pasco_tnode *beta);

/* Checks l's epsilon: a number >= 0. PASCO_EINVAL naming the layer. */
int pasci_norm_check(const pasco_layer *l);

/* The fields both write and read: axis (given to the writer; the
 * reader's into *axis, or -1 or 1 only when axis is NULL), epsilon,
 * center, scale, beta_initializer, gamma_initializer, and the
 * regularizers (L1, L2, L1L2) and constraints of beta and gamma. */
bool pasci_norm_write(cJSON *c, const pasco_layer *l, int32_t axis);
int  pasci_norm_read(
     const cJSON *c, pasco_layer *l, int32_t *axis, const char *at);

/* Layer c->i's gamma and beta regularizers' terms added to loss (the
 * nodes as pasci_norm_affine_nodes finds them). */
pasco_tnode *pasci_norm_penalty(
    pasci_layer_call *c, bool has_gamma, bool has_beta, pasco_tnode *loss);

#endif
