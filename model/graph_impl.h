/*
 * A parsed op graph's insides (graph.h), shared by its reader
 * (model/graph.c) and its runner (model/graph_run.c). Read-only once
 * parsed.
 */
#ifndef PASCI_GRAPH_IMPL_H
#define PASCI_GRAPH_IMPL_H

#include "graph.h"

/* What a node is besides an op of the table. */
typedef enum node_kind {
	NODE_OP = 0,
	NODE_INPUT,
	NODE_WEIGHT,
	NODE_CONSTANT,
	NODE_STEP, /* a step-only op: the step's runner (the hook) runs it */
} node_kind;

typedef struct graph_node {
	node_kind             kind;
	const pasci_graph_op *op; /* NODE_OP */
	const char           *name;
	const cJSON          *json;          /* in the graph's copy */
	size_t                nin, first_in; /* g->ins[first_in..+nin) */
	int64_t               index;         /* input's or weight's */
	pasco_tensor         *constant;
	pasci_graph_attrs     a; /* dtype, rank and shape always set */
} graph_node;

typedef struct graph_input {
	pasco_dtype dtype;
	int32_t     rank;
	int64_t     shape[PASCO_MAX_RANK];
} graph_input;

struct pasci_graph {
	pasci_graph_kind    kind;
	cJSON              *json; /* the graph as read (to_json, node_json) */
	size_t              ninputs, nweights, nnodes, noutputs, nins;
	graph_input        *inputs;
	pasci_graph_weight *weights;
	graph_node         *nodes;
	size_t             *ins, *outputs;
	size_t              max_in;    /* the most inputs of one node */
	size_t              bytes;     /* what it holds (pasci_graph_bytes) */
	int64_t             constants; /* elements of every constant */
};

/* Node n's constant (n->a its spec) from node's "value" into
 * n->constant, counted in g->constants and in the process's
 * (model/graph_const.c). PASCO_EINVAL naming at and the bound past one. */
int pasci_graph_read_constant(
    pasci_graph *g, const cJSON *node, graph_node *n, const char *at);

/* g's constants' count given back to the process's (pasci_graph_free). */
void pasci_graph_constants_given_back(int64_t count);

/* "float32", ... as graphs name dtypes. */
const char *pasci_graph_dtype_name(pasco_dtype d);

/* "f32[-1, 8]" into buf (112 bytes). */
const char *pasci_graph_spec(
    pasco_dtype d, int32_t rank, const int64_t *shape, char *buf);
#define PASCI_GSPEC(d, r, s) pasci_graph_spec((d), (r), (s), (char[112]){0})

#endif
