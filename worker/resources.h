/*
 * Per-worker resources: datasets (iterators) built by factories at the
 * coordinator's request, and per-worker variables (a tensor each, made by
 * a step function), keyed by a coordinator-chosen id. A resource in use by
 * a closure is held, so releasing it mid-closure is safe.
 */
#ifndef PASCO_WORKER_RESOURCES_H
#define PASCO_WORKER_RESOURCES_H

#include <stdint.h>

#include "pasco/dataset.h"

typedef struct resource_table resource_table;
typedef struct resource       resource;

int  pasci_resource_table_create(resource_table **out);
void pasci_resource_table_destroy(resource_table *t);

/* Adds ds (taken over) under id, replacing (and releasing) any previous. */
int pasci_resource_table_put(
    resource_table *t, uint64_t id, pasco_dataset *ds);

/* Adds a per-worker variable's value (taken over) under id, as put. */
int pasci_resource_table_put_value(
    resource_table *t, uint64_t id, pasco_tensor *value);

/* Holds and returns the resource, or NULL. */
resource *pasci_resource_table_hold(resource_table *t, uint64_t id);
/* r's dataset; NULL when r is a per-worker variable. */
pasco_dataset *pasci_resource_dataset(resource *r);
void           pasci_resource_release(resource *r);

/* A per-worker variable's value += delta (same dtype and shape), under the
 * value's own lock, so closures running at once add atomically.
 * PASCO_EINVAL with a message in err when r is no per-worker variable or
 * delta does not match. */
int pasci_resource_value_add(
    resource *r, const pasco_tensor *delta, char *err, size_t len);

/* A copy of a per-worker variable's value (*out owned by the caller);
 * PASCO_EINVAL when r is no per-worker variable. */
int pasci_resource_value_read(resource *r, pasco_tensor **out);

/* How many resources the table holds (datasets and values). */
size_t pasci_resource_table_count(resource_table *t);

/* Removes id; the dataset is freed when its last holder releases it. */
void pasci_resource_table_remove(resource_table *t, uint64_t id);

#endif
