/*
 * Reading a variable of a ps store whole in the ps tests
 * (test_optimizer.c, test_adamw.c).
 */
#ifndef TESTS_PS_STORE_READ_H
#define TESTS_PS_STORE_READ_H

#include "helpers.h"
#include "store.h"

static inline int
store_read_copy(void *arg, const pasco_tensor *value)
{
	return pasco_tensor_copy(arg, value);
}

/* A copy of the variable's value (the caller frees it), failing the test
 * when the store has no such variable. */
static inline pasco_tensor *
read_var(ps_store *s, const char *name)
{
	pasco_tensor *t;
	char          err[256];
	PASCO_PASS(pasci_store_var_with(
	    s, name, store_read_copy, &t, err, sizeof(err)));
	return t;
}

#endif
