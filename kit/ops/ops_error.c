/*
 * The kernels' error messages: one per thread, written by the op that
 * failed just before it returns, read by pasco_ops_last_error and by the
 * worker when a step function fails without a message of its own.
 */
#include <stdarg.h>
#include <stdio.h>

#include "ops_impl.h"
#include "util.h"

_Thread_local char pasci_ops_error[PASCI_OPS_ERROR_CAP];

const char *
pasco_ops_last_error(void)
{
	return pasci_ops_error;
}

int
pasci_ops_fail(int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(pasci_ops_error, sizeof(pasci_ops_error), fmt, ap);
	va_end(ap);
	pasci_error_note(pasci_ops_error);
	return err;
}

const char *
pasci_ops_shape(char *buf, size_t len, const pasco_tensor *t)
{
	size_t n = 0;
	if (t == NULL) {
		return pasci_fmt(buf, len, "NULL");
	}
	buf[0] = 0;
	for (int32_t i = 0; i < t->rank && n < len; i++) {
		n += (size_t) snprintf(buf + n, len - n, "%s%lld",
		    i == 0 ? "[" : ", ", (long long) t->shape[i]);
	}
	if (n < len) {
		snprintf(buf + n, len - n, "%s", t->rank == 0 ? "[]" : "]");
	}
	return buf;
}

const char *
pasci_ops_desc(char *buf, size_t len, const pasco_tensor *t)
{
	char shape[160];
	if (t == NULL) {
		return pasci_fmt(buf, len, "NULL");
	}
	return pasci_fmt(buf, len, "%s %s", pasco_dtype_name(t->dtype),
	    pasci_ops_shape(shape, sizeof(shape), t));
}

int
pasci_ops_want_f32(
    const char *op, const char *name, const pasco_tensor *t, int32_t rank)
{
	char desc[192];
	if (t != NULL && t->dtype == PASCO_F32 &&
	    (rank < 0 || t->rank == rank)) {
		return PASCO_OK;
	}
	if (rank < 0) {
		return pasci_ops_fail(PASCO_EINVAL, "%s: %s is %s; want f32",
		    op, name, pasci_ops_desc(desc, sizeof(desc), t));
	}
	return pasci_ops_fail(PASCO_EINVAL,
	    "%s: %s is %s; want f32 of rank %d", op, name,
	    pasci_ops_desc(desc, sizeof(desc), t), (int) rank);
}
