/*
 * The callback list's internals that the fit loops (fit.c, model_fit.c)
 * share: its context, writable, for what the loop sets on it (the learning
 * rate at the start, the running logs of a progress call) and what a list
 * run inside another passes back and forth.
 */
#ifndef PASCO_CALLBACKS_IMPL_H
#define PASCO_CALLBACKS_IMPL_H

#include "pasco/fit.h"

/* cbs's context (borrowed, writable). */
pasco_fit_context *pasci_callbacks_ctx(pasco_callbacks *cbs);

#endif
