/*
 * Nested values: what step functions return and what datasets yield. A value
 * is NONE, a TENSOR, a LIST of values, or a DICT of string keys to values
 * (kept in insertion order), nested to any depth, like the structures a
 * TensorFlow function may return.
 *
 * The builders return the new value, or NULL when memory runs out; they take
 * ownership of what they are given (a tensor reference, child values) even
 * when they fail, so calls can nest:
 *
 *     pasco_value *v = pasco_value_list(2, pasco_value_tensor(a),
 *         pasco_value_dict(1, "v", pasco_value_tensor(b)));
 *
 * (Returning the pointer rather than using an out-parameter is what lets
 * them nest; they are the one exception to the out-parameter rule.)
 * Values are immutable once built and may be read from several threads.
 */
#ifndef PASCO_VALUE_H
#define PASCO_VALUE_H

#include <stddef.h>

#include "tensor.h"

typedef enum pasco_value_kind {
	PASCO_VALUE_NONE   = 0,
	PASCO_VALUE_TENSOR = 1,
	PASCO_VALUE_LIST   = 2,
	PASCO_VALUE_DICT   = 3,
} pasco_value_kind;

typedef struct pasco_value pasco_value;

/* A NONE value. */
pasco_value *pasco_value_none(void);

/* Wraps t, taking over the caller's reference. NULL t gives NULL. */
pasco_value *pasco_value_tensor(pasco_tensor *t);

/* A list of n children, given as pasco_value * arguments. */
pasco_value *pasco_value_list(size_t n, ...);

/* A list of n children from an array; takes over the children. */
pasco_value *pasco_value_list_of(size_t n, pasco_value *const *items);

/* A dict of n entries, given as (const char *key, pasco_value *child) pairs.
 * Keys are copied. Duplicate keys give NULL. */
pasco_value *pasco_value_dict(size_t n, ...);

/* Frees v and everything under it. NULL is a no-op. */
void pasco_value_free(pasco_value *v);

/* A deep copy (tensors are shared, by reference). NULL on no memory. */
pasco_value *pasco_value_clone(const pasco_value *v);

pasco_value_kind pasco_value_kind_of(const pasco_value *v);

/* Children of a LIST or DICT; 0 for others. */
size_t pasco_value_size(const pasco_value *v);

/* Child i of a LIST or DICT, borrowed from v; NULL when out of range. */
const pasco_value *pasco_value_item(const pasco_value *v, size_t i);

/* Key of child i of a DICT, borrowed; NULL otherwise. */
const char *pasco_value_key(const pasco_value *v, size_t i);

/* The child of a DICT under key, borrowed; NULL when absent. */
const pasco_value *pasco_value_get(const pasco_value *v, const char *key);

/* The tensor of a TENSOR value, borrowed; NULL otherwise. */
const pasco_tensor *pasco_value_as_tensor(const pasco_value *v);

/* Shortcut: element 0 of the tensor of a TENSOR value, as double, or of a
 * one-element LIST holding one. Returns NaN for anything else. */
double pasco_value_scalar(const pasco_value *v);

#endif
