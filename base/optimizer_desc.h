/*
 * What an optimizer is, in one place: for each pasco_optimizer_kind, its
 * name in checkpoint manifests ("adam"), its name in messages ("Adam") and
 * its slots, by Keras's names, in the order the ps keeps them. The ps (its
 * slots, its checkpoint shards, its update table) and the coordinator
 * (restoring slots from a manifest) both read it, and every bound on the
 * kinds comes from PASCI_OPT_KINDS: a table indexed by kind that is not
 * PASCI_OPT_KINDS long does not compile.
 *
 * Adding an optimizer: docs/ARCHITECTURE.md, "Adding an optimizer".
 */
#ifndef PASCI_OPTIMIZER_DESC_H
#define PASCI_OPTIMIZER_DESC_H

#include <stddef.h>

#include "pasco/optimizer.h"

/* One more than the last pasco_optimizer_kind: the length of every table
 * indexed by kind (kind 0 is "none"). */
#define PASCI_OPT_KINDS (PASCO_OPT_FTRL + 1)

/* The most slots an optimizer has. */
#define PASCI_OPT_MAX_SLOTS 3

typedef struct pasci_opt_desc {
	pasco_optimizer_kind kind;
	const char          *name;  /* in manifests: "adam" */
	const char          *title; /* in messages: "Adam" */
	int                  nslots;
	/* Keras's slot names (tf.keras optimizer_v2 add_slot), slot k of a
	 * ps's variable being named slots[k] */
	const char *slots[PASCI_OPT_MAX_SLOTS];
} pasci_opt_desc;

/* The descriptor of kind, or NULL for a number that is no optimizer's.
 * Thread-safe. */
const pasci_opt_desc *pasci_opt_desc_of(int kind);

/* The descriptor named name ("adam"), or NULL. Thread-safe. */
const pasci_opt_desc *pasci_opt_desc_named(const char *name);

/* The index of the slot named slot in d, or -1. Thread-safe. */
int pasci_opt_slot_index(const pasci_opt_desc *d, const char *slot);

/* d's slot names, comma separated, into buf ("m, v, vhat"). */
void pasci_opt_slot_list(const pasci_opt_desc *d, char *buf, size_t len);

#endif
