/*
 * Status codes. Every fallible Pasco function returns a pasco_err; PASCO_OK
 * is zero. Codes are named after TensorFlow's status codes where they mean
 * the same thing. The message of a failure is pasco_last_error() on the
 * thread that made the failing call, whichever object failed:
 *
 *     if (pasco_model_fit(c, m, &o, NULL) != 0)
 *             fprintf(stderr, "fit: %s\n", pasco_last_error());
 *
 * Errors with detail also stay on the object that failed
 * (pasco_remote_value_error, pasco_coordinator_error, ...).
 */
#ifndef PASCO_ERROR_H
#define PASCO_ERROR_H

/* X(name, value, message) */
#define PASCO_ERRNO_MAP(X)                                                    \
	X(OK, 0, "ok")                                                        \
	X(EINVAL, 1, "invalid argument")                                      \
	X(ENOMEM, 2, "out of memory")                                         \
	X(ENOTFOUND, 3, "not found")                                          \
	X(EEXIST, 4, "already exists")                                        \
	X(EUNAVAILABLE, 5, "unavailable")                                     \
	X(ECANCELLED, 6, "cancelled")                                         \
	X(EABORTED, 7, "aborted")                                             \
	X(ETIMEDOUT, 8, "deadline exceeded")                                  \
	X(EOUTOFRANGE, 9, "out of range (end of sequence)")                   \
	X(EPRECONDITION, 10, "failed precondition")                           \
	X(EINTERNAL, 11, "internal error")                                    \
	X(EIO, 12, "input/output error")                                      \
	X(EPROTO, 13, "malformed message")                                    \
	X(ECLOSED, 14, "object closed")                                       \
	X(EUNKNOWN, 15, "unknown error")                                      \
	X(EPERM, 16, "permission denied")

typedef enum pasco_err {
#define PASCO_ERR_ENUM(name, value, msg) PASCO_##name = value,
	PASCO_ERRNO_MAP(PASCO_ERR_ENUM)
#undef PASCO_ERR_ENUM
} pasco_err;

/* A string literal describing err; unknown codes give "unknown error code".
 * Thread-safe. */
const char *pasco_strerror(int err);

/* The symbolic name of err ("PASCO_EINVAL"). Thread-safe. */
const char *pasco_errname(int err);

/* The message of the last Pasco call that failed on this thread,
 * whichever object or family failed (model, strategy, dataset, fit,
 * coordinator, variable, ops, ...): what that family's own getter
 * (pasco_model_last_error, pasco_strategy_error, pasco_dataset_last_error,
 * pasco_fit_error, pasco_coordinator_error, ...) returns for it. "" before
 * any failure; a call that succeeds leaves it, so read it right after the
 * failing call. Another thread's failures never change it. The string is
 * this thread's, overwritten by its next failure. Thread-safe. */
const char *pasco_last_error(void);

#endif
