/*
 * What an optimizer is, in one file of its own, base/optimizers/<file>.c,
 * holding its descriptor: for each pasco_optimizer_kind, its name in checkpoint manifests and pasco.optimizers.get ("adam"), its name
 * in messages ("Adam"), Keras's class name ("Adam"), its hyperparameters
 * by Keras's names (the compile config's fields), Keras's defaults (which
 * its constructor and a config that leaves a field out start from) and its
 * slots, by Keras's names, in the order the ps keeps them; and its update
 * (hyperparameter check, slots' initial values, per-apply scalars, the
 * update in double and its f32 kernel). The table of descriptors
 * (base/optimizer_desc.c) is made from include/pasco/optimizer_kinds.h.
 * The ps (its slots, its checkpoint shards, its updates), the coordinator
 * (restoring slots from a manifest), the constructors
 * (in each kind's file) and the compile config (model/compile.c) all
 * read it, and every bound on the kinds comes from PASCI_OPT_KINDS: a
 * table indexed by kind that is not PASCI_OPT_KINDS long does not compile.
 *
 * Adding an optimizer: docs/ARCHITECTURE.md, "Adding an optimizer".
 */
#ifndef PASCI_OPTIMIZER_DESC_H
#define PASCI_OPTIMIZER_DESC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pasco/optimizer.h"

/* One more than the last pasco_optimizer_kind: the length of every table
 * indexed by kind (kind 0 is "none"). */
#define PASCI_OPT_KINDS PASCO_OPT_KIND_COUNT

/* The most slots an optimizer has. */
#define PASCI_OPT_MAX_SLOTS 3

/* The most hyperparameters (config fields) an optimizer has. */
#define PASCI_OPT_MAX_FIELDS 8

/* The most per-apply scalars (Adam's step size, ...) an optimizer has. */
#define PASCI_OPT_MAX_SCALARS 6

/* The f32 arrays of one apply, for an optimizer's f32 kernel: nrows rows
 * of row_elems elements of w and of its slots, each updated from the next
 * row of g. Row i is the element ids[i] * row_elems of w (a sparse apply)
 * or, with ids NULL, at + i * row_elems (a dense span). */
typedef struct pasci_opt_rows {
	float         *w;
	float         *slot[PASCI_OPT_MAX_SLOTS]; /* NULL: unused */
	const float   *g;
	const int64_t *ids;
	int64_t        nrows, row_elems, at;
} pasci_opt_rows;

/* One hyperparameter: its key in Keras's optimizer config and where
 * pasco_optimizer keeps it (a double, or a bool when is_bool). */
typedef struct pasci_opt_field {
	const char *key;
	size_t      off;
	bool        is_bool;
} pasci_opt_field;

typedef struct pasci_opt_desc {
	pasco_optimizer_kind kind;
	const char          *name;  /* in manifests: "adam" */
	const char          *title; /* in messages: "Adam" */
	const char          *keras; /* Keras's class name: "Adam" */
	int                  nslots;
	/* Keras's slot names (tf.keras optimizer_v2 add_slot), slot k of a
	 * ps's variable being named slots[k] */
	const char *slots[PASCI_OPT_MAX_SLOTS];
	/* its config's fields, in the order the config is written
	 * (learning_rate first) */
	int             nfields;
	pasci_opt_field fields[PASCI_OPT_MAX_FIELDS];
	/* Keras's defaults for every field (iterations NULL) */
	pasco_optimizer defaults;

	/* The update, on the ps (ps/optimizer_apply.c calls these with the
	 * shard's lock held; none blocks). o's learning_rate is the one of
	 * this apply. */
	/* Keras's ValueErrors for the hyperparameters beyond learning_rate,
	 * epsilon and momentum: what is wrong, or NULL. NULL: none. */
	const char *(*check)(const pasco_optimizer *o);
	/* The initial value of slot k. */
	double (*slot_init)(const pasco_optimizer *o, int k);
	/* Whether the update reads slot k (an unused slot is never
	 * allocated: it reads as 0); NULL: every slot is used. */
	bool (*slot_used)(const pasco_optimizer *o, int k);
	/* The per-apply scalars k[] at the apply's step t (1, 2, ...: the
	 * global step, or the shard's count of applies); NULL: none. */
	void (*scalars)(const pasco_optimizer *o, double t, double *k);
	/* One element in double: w and its slots s[] from gradient g. */
	void (*update)(const pasco_optimizer *o, const double *k, double *w,
	    double g, double *s);
	/* The f32 case in f32 arithmetic, as Keras updates float32
	 * variables (base/optimizers/opt_kernel.h); NULL: update in double,
	 * element by element, rounded to f32. */
	void (*f32_rows)(const pasco_optimizer *o, const double *k,
	    const pasci_opt_rows *r);
	/* Decoupled weight decay (AdamW; NULL: none): Keras decays the
	 * whole variable before each update (w -= w * weight_decay * lr),
	 * so its update and f32 kernel decay the elements they update, and
	 * these decay the others: one element in double, and n in f32 as the
	 * f32 kernel does. A sparse apply decays its whole shard with them
	 * and then updates its rows with weight_decay 0
	 * (ps/optimizer_apply.c); a dynamic table decays its rows lazily
	 * (ps/dyn_decay.c). */
	void (*decay)(const pasco_optimizer *o, double *w);
	void (*decay_f32)(const pasco_optimizer *o, float *w, int64_t n);
	/* Tests: its public constructor at Keras's defaults (which must give
	 * `defaults`), and a configuration whose update uses every slot. */
	pasco_optimizer (*keras_default)(void);
	pasco_optimizer (*every_slot)(void);
} pasci_opt_desc;

/* The fields every optimizer's config has after its own, Keras's base
 * optimizer's: clipnorm, clipvalue, global_clipnorm (0: none, written as
 * null). They act where the gradients are sent (client/clip.c), not on
 * the ps, so they are not among a descriptor's fields nor on the wire. */
#define PASCI_OPT_COMMON_FIELDS 3
extern const pasci_opt_field pasci_opt_common_fields[PASCI_OPT_COMMON_FIELDS];

/* Keras's ValueErrors for the clipping fields of o (a negative or
 * non-finite one, more than one set): what is wrong, or NULL.
 * Thread-safe. */
const char *pasci_opt_clip_error(const pasco_optimizer *o);

/* The descriptor of kind, or NULL for a number that is no optimizer's.
 * Thread-safe. */
const pasci_opt_desc *pasci_opt_desc_of(int kind);

/* Whether o (NULL: none) decays its variables apart from their
 * gradients (AdamW with weight_decay > 0): then Keras decays the whole
 * variable on every apply, so every shard of a sparsely updated variable
 * takes each apply, rows or none (client/variable_sparse.c), and decays
 * all its rows (ps/optimizer_apply.c, ps/dyn_decay.c). Thread-safe. */
bool pasci_opt_decays(const pasco_optimizer *o);

/* The descriptor named name ("adam"), or NULL. Thread-safe. */
const pasci_opt_desc *pasci_opt_desc_named(const char *name);

/* The descriptor whose Keras class name is keras ("Ftrl"), or NULL.
 * Thread-safe. */
const pasci_opt_desc *pasci_opt_desc_of_class(const char *keras);

/* d's field whose key is key (its own, then the common ones), or NULL.
 * Thread-safe. */
const pasci_opt_field *pasci_opt_field_named(
    const pasci_opt_desc *d, const char *key);

/* The index of the slot named slot in d, or -1. Thread-safe. */
int pasci_opt_slot_index(const pasci_opt_desc *d, const char *slot);

/* d's slot names, comma separated, into buf ("m, v, vhat"). */
void pasci_opt_slot_list(const pasci_opt_desc *d, char *buf, size_t len);

#endif
