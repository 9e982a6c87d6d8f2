/*
 * Variable store of a ps task. The table is guarded by a reader-writer lock
 * (writers only when a variable is created); each variable has a mutex over
 * its value, so updates to different variables run in parallel and each
 * update is atomic with respect to reads of the same variable.
 */
#include "ps/store.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define STORE_BUCKETS 1024

typedef struct ps_var {
	char           *name;
	pthread_mutex_t mu;
	pasco_tensor  *value; /* protected by mu (contents, not the pointer) */
	struct ps_var *next;  /* bucket chain; protected by the table lock */
} ps_var;

struct ps_store {
	pthread_rwlock_t lock;
	ps_var          *buckets[STORE_BUCKETS];
};

static uint64_t
hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	while (*s) {
		h = (h ^ (uint8_t) *s++) * 1099511628211ULL;
	}
	return h;
}

int
ps_store_create(ps_store **out)
{
	ps_store *s = calloc(1, sizeof(*s));
	*out        = s;
	if (s == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_rwlock_init(&s->lock, NULL);
	return PASCO_OK;
}

void
ps_store_destroy(ps_store *s)
{
	if (s == NULL) {
		return;
	}
	for (int i = 0; i < STORE_BUCKETS; i++) {
		ps_var *v = s->buckets[i];
		while (v != NULL) {
			ps_var *next = v->next;
			pasco_tensor_release(v->value);
			pthread_mutex_destroy(&v->mu);
			free(v->name);
			free(v);
			v = next;
		}
	}
	pthread_rwlock_destroy(&s->lock);
	free(s);
}

static ps_var *
find_locked(ps_store *s, const char *name)
{
	ps_var *v = s->buckets[hash_name(name) % STORE_BUCKETS];
	while (v != NULL && strcmp(v->name, name) != 0) {
		v = v->next;
	}
	return v;
}

static ps_var *
store_find(ps_store *s, const char *name, char *err, size_t errlen)
{
	ps_var *v;
	pthread_rwlock_rdlock(&s->lock);
	v = find_locked(s, name);
	pthread_rwlock_unlock(&s->lock);
	if (v == NULL) {
		pasci_fmt(
		    err, errlen, "no variable named '%s' on this ps", name);
	}
	return v;
}

int
ps_store_var_create(ps_store *s, const char *name, const pasco_tensor *init,
    char *err, size_t errlen)
{
	ps_var *v;
	char    have[64], want[64];
	int     rv = PASCO_OK;

	if (name == NULL || *name == 0) {
		pasci_fmt(err, errlen, "a variable needs a non-empty name");
		return PASCO_EINVAL;
	}
	pthread_rwlock_wrlock(&s->lock);
	if ((v = find_locked(s, name)) != NULL) {
		if (!pasco_tensor_same_spec(v->value, init)) {
			pasci_fmt(err, errlen,
			    "variable '%s' already exists as "
			    "%s; cannot create it as %s",
			    name,
			    pasco_tensor_spec_string(v->value->dtype,
			        v->value->rank, v->value->shape, have,
			        sizeof(have)),
			    pasco_tensor_spec_string(init->dtype, init->rank,
			        init->shape, want, sizeof(want)));
			rv = PASCO_EEXIST;
		}
		pthread_rwlock_unlock(&s->lock);
		return rv;
	}
	if ((v = calloc(1, sizeof(*v))) == NULL ||
	    (v->name = pasci_strdup(name)) == NULL ||
	    pasco_tensor_copy(&v->value, init) != 0) {
		pthread_rwlock_unlock(&s->lock);
		if (v != NULL) {
			free(v->name);
		}
		free(v);
		pasci_fmt(err, errlen, "out of memory creating '%s'", name);
		return PASCO_ENOMEM;
	}
	pthread_mutex_init(&v->mu, NULL);
	v->next = s->buckets[hash_name(name) % STORE_BUCKETS];
	s->buckets[hash_name(name) % STORE_BUCKETS] = v;
	pthread_rwlock_unlock(&s->lock);
	return PASCO_OK;
}

int
ps_store_var_with(ps_store *s, const char                 *name,
    int (*fn)(void *arg, const pasco_tensor *value), void *arg, char *err,
    size_t errlen)
{
	ps_var *v = store_find(s, name, err, errlen);
	int     rv;
	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	pthread_mutex_lock(&v->mu);
	rv = fn(arg, v->value);
	pthread_mutex_unlock(&v->mu);
	return rv;
}

/* dst (+)= alpha * src, elementwise, in dst's dtype. */
static void
axpy(pasco_tensor *dst, double alpha, const pasco_tensor *src, bool add)
{
	int64_t n = dst->count;
	if (!add) {
		memcpy(dst->data, src->data, dst->nbytes);
		return;
	}
	switch (dst->dtype) {
	case PASCO_F32:
		cblas_saxpy(
		    (blasint) n, (float) alpha, src->data, 1, dst->data, 1);
		break;
	case PASCO_F64:
		cblas_daxpy((blasint) n, alpha, src->data, 1, dst->data, 1);
		break;
	default:
		for (int64_t i = 0; i < n; i++) {
			pasco_tensor_set(dst, i,
			    pasco_tensor_get(dst, i) +
			        alpha * pasco_tensor_get(src, i));
		}
		break;
	}
}

static const char *
update_name(ps_update op)
{
	return op == PS_ASSIGN       ? "assign"
	       : op == PS_ASSIGN_ADD ? "assign_add"
	                             : "apply_sgd";
}

int
ps_store_var_update(ps_store *s, const char *name, ps_update op, double lr,
    const pasco_tensor *t, char *err, size_t errlen)
{
	ps_var *v = store_find(s, name, err, errlen);
	char    have[64], got[64];

	if (v == NULL) {
		return PASCO_ENOTFOUND;
	}
	/* dtype and shape never change after creation: check without lock */
	if (!pasco_tensor_same_spec(v->value, t)) {
		pasci_fmt(err, errlen,
		    "%s to '%s' (%s) with a %s tensor: dtype "
		    "and shape must match",
		    update_name(op), name,
		    pasco_tensor_spec_string(v->value->dtype, v->value->rank,
		        v->value->shape, have, sizeof(have)),
		    pasco_tensor_spec_string(
		        t->dtype, t->rank, t->shape, got, sizeof(got)));
		return PASCO_EINVAL;
	}
	if (op == PS_APPLY_SGD && t->dtype != PASCO_F32 &&
	    t->dtype != PASCO_F64) {
		pasci_fmt(err, errlen,
		    "apply_sgd to '%s': SGD needs a float "
		    "variable, not %s",
		    name, pasco_dtype_name(t->dtype));
		return PASCO_EINVAL;
	}
	pthread_mutex_lock(&v->mu);
	axpy(v->value, op == PS_APPLY_SGD ? -lr : 1.0, t, op != PS_ASSIGN);
	pthread_mutex_unlock(&v->mu);
	return PASCO_OK;
}
