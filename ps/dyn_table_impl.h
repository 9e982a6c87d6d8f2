/*
 * Dynamic tables' insides, shared by dyn_table.c (rows, lookups,
 * updates) and dyn_state.c (a table's state in and out, the set of
 * tables). Everything here runs with the table's lock held.
 */
#ifndef PASCO_PS_DYN_TABLE_IMPL_H
#define PASCO_PS_DYN_TABLE_IMPL_H

#include <pthread.h>

#include "budget.h"
#include "dyn_table.h"

#define CHUNK_ROWS 1024                 /* rows per chunk at most */
#define CHUNK_BYTES ((int64_t) 1 << 20) /* a chunk's values: about this */
#define NO_ROW UINT32_MAX
#define PENDING_MAX pasci_dyn_pending_max
#define MAX_DIM ((int64_t) 1 << 20)
#define PAD_KEY UINT64_MAX /* -1: padding, never a row (the tape's) */

typedef struct map_entry {
	uint64_t key;
	uint32_t val; /* NO_ROW: empty */
	uint32_t pad;
} map_entry;

typedef struct key_map {
	map_entry *e;
	size_t     cap, n; /* cap: a power of two, or 0 */
} key_map;

typedef struct dyn_chunk {
	pasco_tensor *value; /* [crows, dim] */
	ps_slots      slots;
	int64_t       stamp; /* the apply that last prepared its slots */
	uint64_t      key[CHUNK_ROWS];
	int64_t       last[CHUNK_ROWS];
	/* the table's decay when the row was last brought up to date
	 * (dyn_decay.c) */
	double   dstamp[CHUNK_ROWS];
	uint32_t prev[CHUNK_ROWS], next[CHUNK_ROWS];
} dyn_chunk;

struct pasci_dyn_table {
	pthread_mutex_t  mu;
	pasci_dyn_config c;
	char            *name;      /* immutable */
	uint64_t         seed;      /* the name's: in every row's values */
	pasci_budget    *budget;    /* the ps's (immutable) */
	int64_t          row_limit; /* rows at most: PASCO_MAX_VARIABLE_MB */
	size_t           charged;   /* bytes charged to budget for rows */
	/* the last apply's optimizer: a new chunk's slots (kind 0: none) */
	pasco_optimizer opt;
	int64_t         warned_ms; /* when a refused row was last logged */
	key_map         rows, pending;
	dyn_chunk     **chunks;
	size_t          nchunks, chunk_cap;
	/* rows per chunk: CHUNK_BYTES of values, 1 to CHUNK_ROWS (a wide
	 * row's table does not take CHUNK_ROWS rows at its first) */
	uint32_t crows;
	uint32_t nrows_made; /* rows ever handed out (< nchunks * crows) */
	uint32_t free_head;  /* freed rows, linked by next */
	uint32_t head, tail; /* recency: head most recent */
	pasco_optimizer_kind kind;
	int                  nslots;
	double               slot_init[PASCI_OPT_MAX_SLOTS];
	int64_t              applies;
	pasci_dyn_stats      st;
	/* AdamW's weight decay, lazily (dyn_decay.c): the product of its
	 * factors over the applies since it last started again at 1, and
	 * during an apply the product with this apply's */
	double decay, decay_next;
};

static inline dyn_chunk *
chunk_of(const pasci_dyn_table *t, uint32_t r)
{
	return t->chunks[r / t->crows];
}

static inline float *
row_data(const pasci_dyn_table *t, uint32_t r)
{
	return (float *) chunk_of(t, r)->value->data +
	       (size_t) (r % t->crows) * (size_t) t->c.dim;
}

#define LINK(t, r, f) (chunk_of(t, r)->f[(r) % (t)->crows])

/* AdamW's decoupled weight decay, lazily (dyn_decay.c). Row r brought up
 * to date: multiplied by the factors of the applies since its stamp. */
void pasci_dyn_row_current(pasci_dyn_table *t, uint32_t r);
/* Every row brought up to date, and the product started again at 1. */
void pasci_dyn_all_current(pasci_dyn_table *t);
/* Before an apply with `at` (the optimizer at this apply's step, which
 * decays: pasci_opt_decays): *rows_opt is what its rows are updated with
 * (at, or at without its decay when the rows were decayed eagerly, for a
 * factor that is not positive; returns false then). Then each row to be
 * updated goes through pasci_dyn_decay_row first (brought up to date, to
 * be decayed by the update's kernel; once per apply), and
 * pasci_dyn_decay_end closes the apply. */
bool pasci_dyn_decay_begin(
    pasci_dyn_table *t, const pasco_optimizer *at, pasco_optimizer *rows_opt);
void pasci_dyn_decay_row(pasci_dyn_table *t, uint32_t r);
void pasci_dyn_decay_end(pasci_dyn_table *t);

/* Charges bytes of t's to the ps's budget (PASCO_ENOMEM when they do not
 * fit), and gives them back. */
int  pasci_dyn_charge(pasci_dyn_table *t, size_t bytes);
void pasci_dyn_uncharge(pasci_dyn_table *t, size_t bytes);

/* The row (or count) of key, or NO_ROW. */
uint32_t pasci_dyn_map_get(const key_map *m, uint64_t key);
/* Sets key's value in t's map m (the map grows as needed, charged to the
 * budget): PASCO_ENOMEM. */
int pasci_dyn_map_set(
    pasci_dyn_table *t, key_map *m, uint64_t key, uint32_t val);
/* A new row for key (*out): freed or new, the least recent evicted at
 * the cap, its values from the initializer, its slots at their start.
 * PASCO_ENOMEM when no row may be made (past the limit per variable or
 * the ps's budget, or out of memory): err says which. */
int pasci_dyn_row_make(
    pasci_dyn_table *t, uint64_t key, uint32_t *out, char *err, size_t errlen);
/* Marks row r seen now (and most recent). */
void pasci_dyn_touch(pasci_dyn_table *t, uint32_t r);
/* Frees t's rows and counts (their bytes given back to the budget),
 * keeping its config and lock. */
void pasci_dyn_table_empty(pasci_dyn_table *t);
/* A table named name with c, whose rows are charged to budget and at
 * most max_var_bytes together. */
int  pasci_dyn_table_new(pasci_dyn_table **out, const char *name,
     const pasci_dyn_config *c, pasci_budget *budget, size_t max_var_bytes);
void pasci_dyn_table_free(pasci_dyn_table *t);

#endif
