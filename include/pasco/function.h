/*
 * Step functions: what the coordinator schedules and workers run. A step
 * function is a C function registered by name (PASCO_FUNCTION); the same
 * program registers them in every role, and the coordinator names them in
 * pasco_schedule. On a worker the function gets a pasco_call: its arguments
 * (tensors, variable handles, this worker's iterator of a per-worker
 * dataset), a way to return a result, and a way to fail with a message.
 *
 * A function may run more than once for one schedule (at-least-once, as in
 * TensorFlow), and several may run at once on one worker, so functions must
 * be thread-safe. Everything a pasco_call hands out is valid until the
 * function returns.
 */
#ifndef PASCO_FUNCTION_H
#define PASCO_FUNCTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "error.h"
#include "tensor.h"
#include "value.h"
#include "variable.h"

typedef struct pasco_call pasco_call;

/* A step function: returns PASCO_OK, or an error that the coordinator
 * reports from pasco_join, with the message set by pasco_call_fail; a
 * function that returns an op's or a dataset's error as it is, without
 * pasco_call_fail, is reported with that op's message
 * (pasco_ops_last_error: the op, the shapes and dtypes it got) or the
 * data layer's (pasco_dataset_last_error: the file and what is wrong). */
typedef int (*pasco_function)(pasco_call *call);

/* Registers fn under name; PASCO_FUNCTION does it at program start.
 * PASCO_EEXIST if the name is taken. Thread-safe. */
int pasco_function_register(const char *name, pasco_function fn);

/* Defines and registers a step function; the body sees `call`:
 *     PASCO_FUNCTION(add_one) { ... return PASCO_OK; } */
#define PASCO_FUNCTION(name)                                                  \
	static int                               name(pasco_call *call);      \
	__attribute__((constructor)) static void pasco_function_reg_##name(   \
	    void)                                                             \
	{                                                                     \
		(void) pasco_function_register(#name, name);                  \
	}                                                                     \
	static int name(pasco_call *call)

/* Number of arguments given to pasco_schedule. */
size_t pasco_call_arg_count(const pasco_call *call);

/* Argument i as a tensor, borrowed. PASCO_EINVAL (with the call's error
 * message set) when i is out of range or not a tensor. */
int pasco_call_tensor(pasco_call *call, size_t i, const pasco_tensor **out);

/* Argument i as a variable handle, borrowed. */
int pasco_call_variable(pasco_call *call, size_t i, pasco_variable **out);

/* Argument i, a per-worker iterator: this worker's dataset, borrowed. */
int pasco_call_iterator(pasco_call *call, size_t i, pasco_dataset **out);

/* Argument i, a per-worker variable (pasco_arg_per_worker_variable):
 * adds delta, of the same dtype and shape, to this worker's copy. The add
 * is atomic: closures running at once on this worker each add theirs.
 * PASCO_EINVAL (with the call's error message set) when argument i is not
 * a per-worker variable or delta does not match. */
int pasco_call_per_worker_add(
    pasco_call *call, size_t i, const pasco_tensor *delta);

/* Argument i, a per-worker variable: *out gets a copy of this worker's
 * value, owned by the caller (pasco_tensor_release). */
int pasco_call_per_worker_read(pasco_call *call, size_t i, pasco_tensor **out);

/* Which call of a packed closure this is: 0 to repeat - 1 (see
 * pasco_schedule_options); 0 for an unpacked one. */
uint32_t pasco_call_repetition(const pasco_call *call);

/* True once the coordinator has cancelled this closure: an earlier
 * closure failed, and the coordinator is raising that error (TensorFlow
 * aborts the functions still running then; C cannot stop a function from
 * outside). A long function should check it between steps and stop with
 * `return pasco_call_fail(call, PASCO_ECANCELLED, "...")`: its remote value
 * then reports PASCO_ECANCELLED and join stops waiting for it. A function
 * that does not check runs to its end and keeps its result; join waits for
 * it. The worker itself does not start a cancelled closure, nor the next
 * call of a cancelled packed one. */
bool pasco_call_is_cancelled(const pasco_call *call);

/* This worker's index and the number of workers. */
int32_t pasco_call_worker_index(const pasco_call *call);
int32_t pasco_call_num_workers(const pasco_call *call);

/* Sets the function's result, taking over value (any earlier result is
 * freed). A function that sets none returns NONE. */
void pasco_call_return(pasco_call *call, pasco_value *value);

/* Records err with a printf-style message and returns err, for
 * `return pasco_call_fail(call, PASCO_EINVAL, "x must be > 0, got %g", x);` */
int pasco_call_fail(pasco_call *call, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
