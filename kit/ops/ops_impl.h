/*
 * What the kernels (kit/ops/dense.c, loss.c) share: the calling thread's
 * message for the last op that failed (pasco_ops_last_error), which names
 * the op and the shapes and dtypes it was given, and the checks that
 * write it. The worker reports that message when a step function passes
 * an op's error on as it is (worker/worker_server.c).
 */
#ifndef PASCI_OPS_IMPL_H
#define PASCI_OPS_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "pasco/ops.h"

#define PASCI_OPS_ERROR_CAP 512
extern _Thread_local char pasci_ops_error[PASCI_OPS_ERROR_CAP];

/* Writes the message (which starts with the op's name) and returns err. */
int pasci_ops_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* t's dtype and shape, "f32 [32, 64]" ("NULL" for none), into buf. */
const char *pasci_ops_desc(char *buf, size_t len, const pasco_tensor *t);

/* t's shape alone, "[32, 64]", into buf. */
const char *pasci_ops_shape(char *buf, size_t len, const pasco_tensor *t);

/* PASCO_OK when t is f32 of rank (any rank when rank < 0); else
 * PASCO_EINVAL and "op: name is i32 [10]; want f32 of rank 2". */
int pasci_ops_want_f32(
    const char *op, const char *name, const pasco_tensor *t, int32_t rank);

#endif
