/*
 * Closures: one scheduled call (RUN) or one per-worker resource operation
 * (RESOURCE_CREATE / RESOURCE_RELEASE, "tagged" for one worker). A closure
 * owns copies or references of everything it needs, so the user may free
 * what they passed to pasco_schedule at once.
 */
#ifndef PASCO_COORDINATOR_CLOSURE_H
#define PASCO_COORDINATOR_CLOSURE_H

#include <stdbool.h>
#include <stdint.h>

#include "pasco/coordinator.h"

typedef enum closure_kind {
	CLOSURE_RUN,
	CLOSURE_RESOURCE_CREATE,
	CLOSURE_RESOURCE_RELEASE,
	CLOSURE_RESOURCE_READ, /* a per-worker variable's value, into rv */
} closure_kind;

typedef struct closure_arg {
	pasco_arg_kind  kind;
	pasco_tensor   *tensor;   /* TENSOR: held */
	pasco_variable *variable; /* VARIABLE: a copy of the handle */
	pasco_per_worker_iterator *iterator; /* ITERATOR: held */
} closure_arg;

typedef struct closure {
	closure_kind               kind;
	uint64_t                   id;
	char                      *name; /* function or factory */
	size_t                     nargs;
	closure_arg               *args;
	pasco_remote_value        *rv;          /* RUN, READ: held, or NULL */
	pasco_per_worker_iterator *iterator;    /* CREATE: held */
	uint64_t                   resource;    /* CREATE, RELEASE, READ */
	uint32_t                   repeat;      /* RUN: calls per closure */
	bool                       sum_results; /* RUN: sums the calls' */
	bool                       small;       /* RUN: may ride in a batch */
	uint64_t        ps_epoch;  /* RUN: ps recovery epoch at send */
	uint32_t        ps_holds;  /* RUN: retries held back */
	int64_t         queued_ns; /* RUN: when it last entered the queue */
	struct closure *next;      /* queue link */
} closure;

/* Frees c and drops what it holds. NULL is a no-op. */
void pasci_closure_free(closure *c);

/* Sets c's remote value to cancelled, then frees c. */
void pasci_closure_cancel(closure *c);

#endif
