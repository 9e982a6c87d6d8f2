/*
 * A dynamic embedding table on a ps (issue 22): rows of f32 keyed by
 * 64-bit keys, made on first touch by a per-key initializer, admitted
 * after a minimum count, evicted when unseen for a number of steps or when
 * the table is at its cap (least recently used first), updated by the six
 * optimizers with slots made and dropped with each row.
 *
 * Keys travel as i64 tensors holding the key's 64 bits (a u64 key is the
 * same bits). A table is its own lock: every function is thread-safe and
 * each call is atomic with respect to the others. Tables are kept in a
 * set (pasci_dyn_set) by name; like the store's variables, a table once
 * added is never removed or moved until the set is destroyed.
 */
#ifndef PASCO_PS_DYN_TABLE_H
#define PASCO_PS_DYN_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "budget.h"
#include "optimizer_apply.h"
#include "pasco/initializer.h"
#include "pasco/optimizer.h"
#include "pasco/tensor.h"

/* A table's configuration (the same on every ps; wire: DynamicOptions). */
typedef struct pasci_dyn_config {
	int64_t           dim;  /* row length (f32 elements) */
	pasco_initializer init; /* a new row's values, from its key */
	/* Training lookups of a key before it gets a row of its own (<= 1:
	 * at the first); until then it reads the default row. */
	int64_t min_count;
	int64_t evict_after; /* rows unseen for more steps go (0: never) */
	int64_t max_rows;    /* rows on this ps at most (0: no cap) */
	/* What a key without a row reads (evaluation, or not admitted yet):
	 * zeros when set, else the row its initializer would give it. */
	bool default_zeros;
} pasci_dyn_config;

/* A table's counts since it was made (or restored, for the totals a
 * checkpoint carries). */
typedef struct pasci_dyn_stats {
	int64_t rows;        /* held now */
	int64_t pending;     /* keys counted, waiting for admission */
	int64_t created;     /* rows made */
	int64_t evicted_age; /* rows dropped for being unseen */
	int64_t evicted_cap; /* rows dropped to make room */
	int64_t refused;     /* training lookups answered without a row */
	int64_t step;        /* the table's clock: the last apply's step */
} pasci_dyn_stats;

/* Defined in initializer_fill.c: row (dim elements) as the initializer
 * gives key's row in the table whose name gives table_seed
 * (pasci_dyn_name_seed): element j from (the initializer's seed,
 * table_seed, key, j) alone, so a key's first row is the same on any ps
 * and in any run, and differs between tables. PASCO_EINVAL for Glorot (a
 * table has no fans) or a bad kind. */
int pasci_initializer_fill_key(const pasco_initializer *init,
    uint64_t table_seed, uint64_t key, float *row, int64_t dim);

/* The seed of the table named name in its rows' values. */
uint64_t pasci_dyn_name_seed(const char *name);

typedef struct pasci_dyn_table pasci_dyn_table;

/* Checks c (dim in [1, 1 << 20], an initializer that works per key, no
 * negative counts, max_rows below 2^32 - 1): PASCO_EINVAL, err says why. */
int pasci_dyn_config_check(
    const pasci_dyn_config *c, char *err, size_t errlen);

/* Rows of keys[0..n) into out (n * dim floats). Training (insert): a key
 * with a row is touched (its age reset, first in line against the cap);
 * one without is counted, and gets a row once counted min_count times
 * (evicting the least recently used row if the table is at its cap);
 * otherwise it reads the default. Not training: keys without a row read
 * the default, and nothing changes. Key -1 (all 64 bits set) is padding,
 * as on the tape: it reads zeros and never gets a row. A row that cannot
 * be made (past the ps's memory budget or its limit per variable, or out
 * of memory) is refused as a key not admitted is: the key reads the
 * default, counts as refused, and the ps logs why (at most every 10 s per
 * table). Always PASCO_OK (err is not written). */
int pasci_dyn_lookup(pasci_dyn_table *t, const int64_t *keys, int64_t n,
    bool insert, float *out, char *err, size_t errlen);

/* Applies the gradient rows grad [n, dim] (f32) of keys with opt. step >
 * 0 is the global step (Adam's t, and the table's clock); 0: the table
 * counts its applies. Keys without a row (not admitted, or evicted since
 * their lookup) are skipped. Then rows unseen for more than evict_after
 * steps are evicted. AdamW decays every row of the table, as Keras decays
 * the whole variable, lazily (dyn_decay.c): a row is decayed when it is
 * next read, updated or exported, so an apply costs O(n) still. PASCO_EINVAL
 * (nothing changes) for bad hyperparameters, or slots of another optimizer
 * already in the table. */
int pasci_dyn_apply(pasci_dyn_table *t, const pasco_optimizer *opt,
    const int64_t *keys, int64_t n, const pasco_tensor *grad, int64_t step,
    char *err, size_t errlen);

void pasci_dyn_stats_of(pasci_dyn_table *t, pasci_dyn_stats *s);
const pasci_dyn_config *pasci_dyn_config_of(const pasci_dyn_table *t);

/* A table's whole state, as a checkpoint holds it: rows in key order
 * of their making is not kept; any order restores the same table. */
typedef struct pasci_dyn_state {
	pasco_tensor *keys;        /* i64 [n] */
	pasco_tensor *values;      /* f32 [n, dim] */
	pasco_tensor *last_step;   /* i64 [n]: the step each was last seen */
	pasco_optimizer_kind kind; /* slots' optimizer (0: none yet) */
	int                  nslots;
	pasco_tensor   *slot[PASCI_OPT_MAX_SLOTS]; /* f32 [n, dim] or NULL */
	double          slot_init[PASCI_OPT_MAX_SLOTS];
	int64_t         applies;        /* the table's own count (Adam's t) */
	pasco_tensor   *pending_keys;   /* i64 [p] */
	pasco_tensor   *pending_counts; /* i64 [p] */
	pasci_dyn_stats stats;
} pasci_dyn_state;

/* A copy of t's state, taken under its lock. */
int  pasci_dyn_export(pasci_dyn_table *t, pasci_dyn_state *out);
void pasci_dyn_state_fini(pasci_dyn_state *s);

/* Adds the rows (and pending counts) of s to t, replacing rows of the
 * same keys; only the keys k with keep(arg, k) true (NULL: all), so a ps
 * takes its own share of another ps count's checkpoint. Key -1 (padding)
 * is skipped; pending keys past the table's bound on them are dropped
 * (they count again from their next lookup); a row past the ps's memory
 * budget or its limit per variable fails the import, PASCO_ENOMEM (the
 * rows before it stay). The clock takes
 * the larger; the state's counts add up when all its keys are taken (a
 * share counts its rows as created: counts cannot be split by key).
 * replace: t is emptied first (pasci_dyn_clear), once s has been checked,
 * so a bad state leaves t as it was. Checked
 * first (shapes, dtypes, an unknown slot kind or one that differs from
 * t's, values, slots or slot starts that are not finite numbers):
 * PASCO_EINVAL, nothing changes. */
int pasci_dyn_import(pasci_dyn_table *t, const pasci_dyn_state *s,
    bool (*keep)(void *arg, uint64_t key), void *arg, bool replace, char *err,
    size_t errlen);

/* Drops every row, pending count, slot and count of t (its config
 * stays): a restore's first step. */
void pasci_dyn_clear(pasci_dyn_table *t);

/* The most keys a table counts towards admission at once (4M): past it
 * the counts start again. Tests lower it; set it before any table is
 * used. */
extern size_t pasci_dyn_pending_max;

/* The tables of a ps, by name. */
typedef struct pasci_dyn_set pasci_dyn_set;

/* A set whose tables charge their memory to budget (which must outlive
 * it; NULL: no limit) and hold at most max_var_bytes of rows each. */
int pasci_dyn_set_create_with(
    pasci_dyn_set **out, pasci_budget *budget, size_t max_var_bytes);
int  pasci_dyn_set_create(pasci_dyn_set **out);
void pasci_dyn_set_destroy(pasci_dyn_set *s);

/* The table named name, or NULL. */
pasci_dyn_table *pasci_dyn_find(pasci_dyn_set *s, const char *name);

/* Adds a table named name with c; an existing one with the same config is
 * left alone (PASCO_OK), another config is PASCO_EEXIST (err says how
 * they differ), one past the budget PASCO_ENOMEM (err names it). */
int pasci_dyn_add(pasci_dyn_set *s, const char *name,
    const pasci_dyn_config *c, char *err, size_t errlen);

/* Calls fn for every table (in no set order), stopping at the first
 * nonzero return, which it returns. */
int pasci_dyn_each(pasci_dyn_set *s,
    int (*fn)(void *arg, const char *name, pasci_dyn_table *t), void *arg);

#endif
