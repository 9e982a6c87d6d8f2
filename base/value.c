/*
 * Nested values (none, tensor, list, dict). Immutable after construction,
 * so they can be shared between threads once built.
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "value_impl.h"

static pasco_value *
value_new(pasco_value_kind kind, size_t n)
{
	pasco_value *v = pasci_calloc(1, sizeof(*v));
	if (v == NULL) {
		return NULL;
	}
	v->kind = kind;
	v->n    = n;
	if (n > 0 && (v->items = pasci_calloc(n, sizeof(*v->items))) == NULL) {
		free(v);
		return NULL;
	}
	if (kind == PASCO_VALUE_DICT && n > 0 &&
	    (v->keys = pasci_calloc(n, sizeof(*v->keys))) == NULL) {
		free(v->items);
		free(v);
		return NULL;
	}
	return v;
}

pasco_value *
pasco_value_none(void)
{
	return value_new(PASCO_VALUE_NONE, 0);
}

pasco_value *
pasco_value_tensor(pasco_tensor *t)
{
	pasco_value *v;
	if (t == NULL) {
		return NULL;
	}
	if ((v = value_new(PASCO_VALUE_TENSOR, 0)) == NULL) {
		pasco_tensor_release(t);
		return NULL;
	}
	v->tensor = t;
	return v;
}

pasco_value *
pasco_value_list_of(size_t n, pasco_value *const *items)
{
	pasco_value *v     = value_new(PASCO_VALUE_LIST, n);
	bool         valid = v != NULL;

	for (size_t i = 0; i < n; i++) {
		valid = valid && items[i] != NULL;
	}
	if (!valid) {
		for (size_t i = 0; i < n; i++) {
			pasco_value_free(items[i]);
		}
		pasco_value_free(v);
		return NULL;
	}
	if (n > 0) { /* an empty list has no items array to copy into */
		memcpy(v->items, items, n * sizeof(*items));
	}
	return v;
}

pasco_value *
pasco_value_list(size_t n, ...)
{
	pasco_value **items = pasci_calloc(n + 1, sizeof(*items));
	pasco_value  *out;
	va_list       ap;

	va_start(ap, n);
	for (size_t i = 0; i < n; i++) {
		pasco_value *child = va_arg(ap, pasco_value *);
		if (items != NULL) {
			items[i] = child;
		} else {
			pasco_value_free(child);
		}
	}
	va_end(ap);
	if (items == NULL) {
		return NULL;
	}
	out = pasco_value_list_of(n, items);
	free(items);
	return out;
}

pasco_value *
pasci_value_dict_of(
    size_t n, const char *const *keys, pasco_value *const *items)
{
	pasco_value *v     = value_new(PASCO_VALUE_DICT, n);
	bool         valid = v != NULL;

	for (size_t i = 0; i < n; i++) {
		if (v == NULL) {
			pasco_value_free(items[i]);
			continue;
		}
		v->items[i] = items[i];
		v->keys[i]  = keys[i] != NULL ? pasci_strdup(keys[i]) : NULL;
		valid = valid && items[i] != NULL && v->keys[i] != NULL &&
		        pasci_value_get_n(v, keys[i], i) == NULL;
	}
	if (!valid) {
		pasco_value_free(v);
		return NULL;
	}
	return v;
}

pasco_value *
pasco_value_dict(size_t n, ...)
{
	const char  **keys  = pasci_calloc(n + 1, sizeof(*keys));
	pasco_value **items = pasci_calloc(n + 1, sizeof(*items));
	pasco_value  *out   = NULL;
	va_list       ap;

	va_start(ap, n);
	for (size_t i = 0; i < n; i++) {
		const char  *key   = va_arg(ap, const char *);
		pasco_value *child = va_arg(ap, pasco_value *);
		if (keys != NULL && items != NULL) {
			keys[i]  = key;
			items[i] = child;
		} else {
			pasco_value_free(child);
		}
	}
	va_end(ap);
	if (keys != NULL && items != NULL) {
		out = pasci_value_dict_of(n, keys, items);
	}
	free(keys);
	free(items);
	return out;
}

void
pasco_value_free(pasco_value *v)
{
	if (v == NULL) {
		return;
	}
	for (size_t i = 0; i < v->n; i++) {
		pasco_value_free(v->items[i]);
		if (v->keys != NULL) {
			free(v->keys[i]);
		}
	}
	free(v->items);
	free(v->keys);
	pasco_tensor_release(v->tensor);
	free(v);
}

pasco_value *
pasco_value_clone(const pasco_value *v)
{
	pasco_value *c;
	if (v == NULL || (c = value_new(v->kind, v->n)) == NULL) {
		return NULL;
	}
	if (v->tensor != NULL) {
		c->tensor = pasco_tensor_hold(v->tensor);
	}
	for (size_t i = 0; i < v->n; i++) {
		c->items[i] = pasco_value_clone(v->items[i]);
		if (v->keys != NULL) {
			c->keys[i] = pasci_strdup(v->keys[i]);
		}
		if (c->items[i] == NULL ||
		    (v->keys != NULL && c->keys[i] == NULL)) {
			pasco_value_free(c);
			return NULL;
		}
	}
	return c;
}

pasco_value_kind
pasco_value_kind_of(const pasco_value *v)
{
	return v != NULL ? v->kind : PASCO_VALUE_NONE;
}

size_t
pasco_value_size(const pasco_value *v)
{
	return v != NULL ? v->n : 0;
}

const pasco_value *
pasco_value_item(const pasco_value *v, size_t i)
{
	return (v != NULL && i < v->n) ? v->items[i] : NULL;
}

const char *
pasco_value_key(const pasco_value *v, size_t i)
{
	return (v != NULL && v->keys != NULL && i < v->n) ? v->keys[i] : NULL;
}

const pasco_value *
pasci_value_get_n(const pasco_value *v, const char *key, size_t n)
{
	if (v == NULL || v->kind != PASCO_VALUE_DICT || key == NULL) {
		return NULL;
	}
	for (size_t i = 0; i < n && i < v->n; i++) {
		if (v->keys[i] != NULL && strcmp(v->keys[i], key) == 0) {
			return v->items[i];
		}
	}
	return NULL;
}

const pasco_value *
pasco_value_get(const pasco_value *v, const char *key)
{
	return pasci_value_get_n(v, key, v != NULL ? v->n : 0);
}

const pasco_tensor *
pasco_value_as_tensor(const pasco_value *v)
{
	return (v != NULL && v->kind == PASCO_VALUE_TENSOR) ? v->tensor : NULL;
}

double
pasco_value_scalar(const pasco_value *v)
{
	if (v != NULL && v->kind == PASCO_VALUE_LIST && v->n == 1) {
		v = v->items[0];
	}
	if (v == NULL || v->kind != PASCO_VALUE_TENSOR ||
	    v->tensor->count < 1) {
		return NAN;
	}
	return pasco_tensor_get(v->tensor, 0);
}
