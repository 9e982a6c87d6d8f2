/*
 * What an optimizer is, in one place: for each pasco_optimizer_kind, its
 * name in checkpoint manifests and pasco.optimizers.get ("adam"), its name
 * in messages ("Adam"), Keras's class name ("Adam"), its hyperparameters
 * by Keras's names (the compile config's fields), Keras's defaults (which
 * its constructor and a config that leaves a field out start from) and its
 * slots, by Keras's names, in the order the ps keeps them. The ps (its
 * slots, its checkpoint shards, its update table), the coordinator
 * (restoring slots from a manifest), the constructors
 * (client/optimizer_config.c) and the compile config (model/compile.c) all
 * read it, and every bound on the kinds comes from PASCI_OPT_KINDS: a
 * table indexed by kind that is not PASCI_OPT_KINDS long does not compile.
 *
 * Adding an optimizer: docs/ARCHITECTURE.md, "Adding an optimizer".
 */
#ifndef PASCI_OPTIMIZER_DESC_H
#define PASCI_OPTIMIZER_DESC_H

#include <stdbool.h>
#include <stddef.h>

#include "pasco/optimizer.h"

/* One more than the last pasco_optimizer_kind: the length of every table
 * indexed by kind (kind 0 is "none"). */
#define PASCI_OPT_KINDS (PASCO_OPT_FTRL + 1)

/* The most slots an optimizer has. */
#define PASCI_OPT_MAX_SLOTS 3

/* The most hyperparameters (config fields) an optimizer has. */
#define PASCI_OPT_MAX_FIELDS 8

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
} pasci_opt_desc;

/* The descriptor of kind, or NULL for a number that is no optimizer's.
 * Thread-safe. */
const pasci_opt_desc *pasci_opt_desc_of(int kind);

/* The descriptor named name ("adam"), or NULL. Thread-safe. */
const pasci_opt_desc *pasci_opt_desc_named(const char *name);

/* The descriptor whose Keras class name is keras ("Ftrl"), or NULL.
 * Thread-safe. */
const pasci_opt_desc *pasci_opt_desc_of_class(const char *keras);

/* d's field whose key is key, or NULL. Thread-safe. */
const pasci_opt_field *pasci_opt_field_named(
    const pasci_opt_desc *d, const char *key);

/* The index of the slot named slot in d, or -1. Thread-safe. */
int pasci_opt_slot_index(const pasci_opt_desc *d, const char *slot);

/* d's slot names, comma separated, into buf ("m, v, vhat"). */
void pasci_opt_slot_list(const pasci_opt_desc *d, char *buf, size_t len);

#endif
