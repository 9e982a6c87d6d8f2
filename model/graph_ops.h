/*
 * The op table of graphs (docs/GRAPHS.md): one row per op name, with its
 * arity, its attributes (parsed once, when a graph is read) and the tape
 * op(s) that run it. model/graph.c reads graphs and runs their nodes
 * through these rows; model/graph_ops.c holds the rows. Constant tables:
 * any thread.
 */
#ifndef PASCI_GRAPH_OPS_H
#define PASCI_GRAPH_OPS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "tape_impl.h"

/* A value in a running graph: a float tensor on the tape (node), or an
 * integer tensor (ints: i32 or i64; ids, labels, indices), never both.
 * Integer tensors made by ops live in the tape's arena
 * (pasci_graph_ints). */
typedef struct pasci_gval {
	pasco_tnode        *node;
	const pasco_tensor *ints;
} pasci_gval;

#define PASCI_GRAPH_MAX_LIST 8

/* A node's attributes, parsed once: each op's parse fills what it uses. */
typedef struct pasci_graph_attrs {
	bool        b[2];   /* transpose_a/b, keepdims, from_logits */
	bool        all;    /* axis null: every axis */
	int64_t     axis;   /* axis, depth */
	double      f[2];   /* clip's min, max; rate; epsilon */
	int64_t     list[PASCI_GRAPH_MAX_LIST];  /* axes, shape, perm, begin */
	size_t      nlist;
	int64_t     list2[PASCI_GRAPH_MAX_LIST]; /* size, batch_dot's axes */
	size_t      nlist2;
	pasco_dtype dtype; /* the node's dtype (cast's target) */
	int32_t     rank;  /* the node's static shape */
	int64_t     shape[PASCO_MAX_RANK];
} pasci_graph_attrs;

typedef struct pasci_graph_op {
	const char *name;
	int         min_in, max_in;
	/* Its attribute keys (besides op, in, shape, dtype), NULL-ended: a
	 * node with another key is refused. */
	const char *keys[6];
	/* Reads node's attributes into a (a->dtype, rank and shape already
	 * set from the node). PASCO_EINVAL with pasci_model_fail naming at
	 * ("nodes[4] (clip)") and the field. NULL: no attributes. */
	int (*parse)(const cJSON *node, pasci_graph_attrs *a, const char *at);
	/* Runs the op on in[0..n) into *out. False with the tape's error set
	 * (naming the op and the shapes) on failure. */
	bool (*run)(pasco_tape *tp, size_t n, const pasci_gval *in,
	    const pasci_graph_attrs *a, pasci_gval *out);
} pasci_graph_op;

/* The row of op name, or NULL. */
const pasci_graph_op *pasci_graph_op_named(const char *name);

/* The op names, comma separated, into buf. */
const char *pasci_graph_op_list(char *buf, size_t len);

/* An integer tensor of dtype (i32 or i64) and shape in tp's arena, its
 * data zero-filled; NULL with the tape's error set without memory. */
pasco_tensor *pasci_graph_ints(
    pasco_tape *tp, pasco_dtype dtype, int32_t rank, const int64_t *shape);

#endif
