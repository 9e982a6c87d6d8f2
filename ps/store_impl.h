/*
 * The store's insides, shared by store.c (the table of variables,
 * creates, reads, writes, gathers) and store_apply.c (optimizer applies,
 * BSP rounds, counters, slots). The invariants are at the top of store.c.
 */
#ifndef PASCO_PS_STORE_IMPL_H
#define PASCO_PS_STORE_IMPL_H

#include <pthread.h>

#include "budget.h"
#include "pasco/constraint.h"
#include "store.h"
#include "sync.h"

#define STORE_BUCKETS 1024

/* One variable: allocated by var_create, freed only by
 * pasci_store_destroy; its address is stable for the store's life. */
typedef struct ps_var {
	char           *name; /* immutable */
	pthread_mutex_t mu;
	/* The pointer and the tensor's dtype and shape are immutable; its
	 * data is protected by mu. */
	pasco_tensor *value;
	ps_slots      slots; /* protected by mu */
	ps_accum      accum; /* BSP round; protected by mu */
	/* applied after each optimizer update; set by the create (mu) */
	pasco_constraint constraint;
	struct ps_var   *next; /* bucket chain; protected by the table lock */
} ps_var;

struct ps_store {
	/* Protects the bucket chains (the heads and every next): write-held
	 * only to link a new variable at a chain's head. */
	pthread_rwlock_t lock;
	ps_var          *buckets[STORE_BUCKETS]; /* fixed: never rehashed */
	pasci_budget    *budget; /* the ps's, or own (immutable) */
	pasci_budget     own;    /* the budget of a store given none */
};

/* The variable named name, or NULL (err says so). Never freed or moved
 * while the store lives, so it outlives the table lock. */
ps_var *pasci_store_find(
    ps_store *s, const char *name, char *err, size_t errlen);

/* The value's buffer made v's own before a write (v's mutex held):
 * PASCO_ENOMEM with err set, nothing written. */
int pasci_store_value_own(ps_var *v, char *err, size_t errlen);

/* ids: i64, 1-D, each in [0, rows of v): PASCO_EINVAL otherwise. */
int pasci_store_check_ids(
    const ps_var *v, const pasco_tensor *ids, char *err, size_t errlen);

/* rows holds one row of v's dtype per id; what names the operation. */
int pasci_store_check_rows(const ps_var *v, const pasco_tensor *ids,
    const pasco_tensor *rows, const char *what, const char *name, char *err,
    size_t errlen);

/* Elements in one row of v's value. */
int64_t pasci_store_row_elems(const ps_var *v);

#endif
