/*
 * The worker's resource table. The table lock guards the id map and the
 * reference counts; datasets synchronise their own iteration, and a
 * per-worker variable's value has its own lock (value_mu).
 */
#include "resources.h"

#include <pthread.h>
#include <stdlib.h>

#include "util.h"

#define RESOURCE_BUCKETS 64

struct resource {
	uint64_t         id;
	pasco_dataset   *ds;       /* a dataset, or */
	pasco_tensor    *value;    /* a per-worker variable's value */
	pthread_mutex_t  value_mu; /* guards value's contents */
	int              refs;     /* protected by the table lock */
	resource_table  *table;
	struct resource *next;
};

struct resource_table {
	pthread_mutex_t mu;
	resource       *buckets[RESOURCE_BUCKETS]; /* protected by mu */
};

int
pasci_resource_table_create(resource_table **out)
{
	*out = pasci_calloc(1, sizeof(**out));
	if (*out == NULL) {
		return PASCO_ENOMEM;
	}
	pthread_mutex_init(&(*out)->mu, NULL);
	return PASCO_OK;
}

static resource *
unlink_locked(resource_table *t, uint64_t id)
{
	for (resource **p = &t->buckets[id % RESOURCE_BUCKETS]; *p != NULL;
	     p            = &(*p)->next) {
		if ((*p)->id == id) {
			resource *r = *p;
			*p          = r->next;
			return r;
		}
	}
	return NULL;
}

/* Drops one reference; returns the resource to free, if it was the last. */
static resource *
unref_locked(resource *r)
{
	return (r != NULL && --r->refs == 0) ? r : NULL;
}

static void
resource_free(resource *r)
{
	if (r != NULL) {
		pasco_dataset_free(r->ds);
		pasco_tensor_release(r->value);
		pthread_mutex_destroy(&r->value_mu);
		free(r);
	}
}

/* Adds r (ds or value set) under id, replacing any previous. */
static int
table_put(resource_table *t, uint64_t id, resource *r)
{
	resource *old;
	r->id    = id;
	r->refs  = 1; /* the table's */
	r->table = t;
	pthread_mutex_init(&r->value_mu, NULL);
	pthread_mutex_lock(&t->mu);
	old                               = unref_locked(unlink_locked(t, id));
	r->next                           = t->buckets[id % RESOURCE_BUCKETS];
	t->buckets[id % RESOURCE_BUCKETS] = r;
	pthread_mutex_unlock(&t->mu);
	resource_free(old);
	return PASCO_OK;
}

int
pasci_resource_table_put(resource_table *t, uint64_t id, pasco_dataset *ds)
{
	resource *r = pasci_calloc(1, sizeof(*r));
	if (r == NULL) {
		pasco_dataset_free(ds);
		return PASCO_ENOMEM;
	}
	r->ds = ds;
	return table_put(t, id, r);
}

int
pasci_resource_table_put_value(
    resource_table *t, uint64_t id, pasco_tensor *value)
{
	resource *r = pasci_calloc(1, sizeof(*r));
	if (r == NULL) {
		pasco_tensor_release(value);
		return PASCO_ENOMEM;
	}
	r->value = value;
	return table_put(t, id, r);
}

resource *
pasci_resource_table_hold(resource_table *t, uint64_t id)
{
	resource *r;
	pthread_mutex_lock(&t->mu);
	for (r = t->buckets[id % RESOURCE_BUCKETS]; r != NULL && r->id != id;
	     r = r->next) {
	}
	if (r != NULL) {
		r->refs++;
	}
	pthread_mutex_unlock(&t->mu);
	return r;
}

pasco_dataset *
pasci_resource_dataset(resource *r)
{
	return r->ds;
}

int
pasci_resource_value_add(
    resource *r, const pasco_tensor *delta, char *err, size_t len)
{
	if (r->value == NULL || !pasco_tensor_same_spec(r->value, delta)) {
		char want[128] = "a dataset", got[128];
		if (r->value != NULL) {
			pasco_tensor_spec_string(r->value->dtype,
			    r->value->rank, r->value->shape, want,
			    sizeof(want));
		}
		pasco_tensor_spec_string(
		    delta->dtype, delta->rank, delta->shape, got, sizeof(got));
		pasci_fmt(err, len,
		    "cannot add a %s to per-worker resource %llu: it is %s",
		    got, (unsigned long long) r->id, want);
		return PASCO_EINVAL;
	}
	pthread_mutex_lock(&r->value_mu);
	for (int64_t i = 0; i < delta->count; i++) {
		pasco_tensor_set(r->value, i,
		    pasco_tensor_get(r->value, i) +
		        pasco_tensor_get(delta, i));
	}
	pthread_mutex_unlock(&r->value_mu);
	return PASCO_OK;
}

int
pasci_resource_value_read(resource *r, pasco_tensor **out)
{
	int rv;
	*out = NULL;
	if (r->value == NULL) {
		return PASCO_EINVAL;
	}
	pthread_mutex_lock(&r->value_mu);
	rv = pasco_tensor_copy(out, r->value);
	pthread_mutex_unlock(&r->value_mu);
	return rv;
}

size_t
pasci_resource_table_count(resource_table *t)
{
	size_t n = 0;
	pthread_mutex_lock(&t->mu);
	for (int i = 0; i < RESOURCE_BUCKETS; i++) {
		for (resource *r = t->buckets[i]; r != NULL; r = r->next) {
			n++;
		}
	}
	pthread_mutex_unlock(&t->mu);
	return n;
}

void
pasci_resource_release(resource *r)
{
	resource *dead;
	if (r == NULL) {
		return;
	}
	pthread_mutex_lock(&r->table->mu);
	dead = unref_locked(r);
	pthread_mutex_unlock(&r->table->mu);
	resource_free(dead);
}

void
pasci_resource_table_remove(resource_table *t, uint64_t id)
{
	resource *dead;
	pthread_mutex_lock(&t->mu);
	dead = unref_locked(unlink_locked(t, id));
	pthread_mutex_unlock(&t->mu);
	resource_free(dead);
}

void
pasci_resource_table_destroy(resource_table *t)
{
	if (t == NULL) {
		return;
	}
	for (int i = 0; i < RESOURCE_BUCKETS; i++) {
		while (t->buckets[i] != NULL) {
			resource *r   = t->buckets[i];
			t->buckets[i] = r->next;
			resource_free(r); /* no closure runs during teardown */
		}
	}
	pthread_mutex_destroy(&t->mu);
	free(t);
}
