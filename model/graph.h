/*
 * Op graphs (docs/GRAPHS.md), read and run on a tape: the interface
 * between model/graph.c (the reader and runner) and its users: custom
 * layers (model/layers/custom.c), custom losses (model/compile.c) and
 * traced steps (worker/graph_step.c). A parsed graph is read-only: any
 * number of threads may run it at once, each on its own tape.
 */
#ifndef PASCI_GRAPH_H
#define PASCI_GRAPH_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "graph_ops.h"
#include "pasco/initializer.h"

typedef struct pasci_graph pasci_graph;

/* A layer graph's weight ("weights" in the JSON). */
typedef struct pasci_graph_weight {
	char              name[64];
	pasco_dtype       dtype;
	int32_t           rank;
	int64_t           shape[PASCO_MAX_RANK];
	pasco_initializer init;
	double            l1, l2; /* regularizer; 0: none */
	bool              trainable;
} pasci_graph_weight;

/* What a graph may hold besides the op table's ops and its leaves
 * (input, weight, constant). */
typedef enum pasci_graph_kind {
	PASCI_GRAPH_LAYER = 1, /* weights allowed */
	PASCI_GRAPH_LOSS,      /* inputs y_true, y_pred; no weights */
	PASCI_GRAPH_STEP,      /* the step-only nodes: next, arg, model,
	                          read, gradient, global_step */
} pasci_graph_kind;

/* Reads graph JSON g (a "graph" object) of kind into *out. Every node is
 * checked: its op (a row of graph_ops.c, a leaf, or for a step a
 * step-only op, whose attributes the step's runner checks), its inputs
 * (earlier nodes), its attributes, its shape and dtype. PASCO_EINVAL with
 * pasci_model_fail naming at, the node index and the op ("fm: nodes[4]
 * (matmul): ..."); PASCO_ENOMEM. *out NULL on failure. */
int pasci_graph_parse(const cJSON *g, pasci_graph_kind kind, const char *at,
    pasci_graph **out);

/* The same graph written back (deterministic: the same graph gives the
 * same JSON); NULL without memory. */
cJSON *pasci_graph_to_json(const pasci_graph *g);

void pasci_graph_free(pasci_graph *g);

/* The memory g holds, about (a model cache's bound counts it). */
size_t pasci_graph_bytes(const pasci_graph *g);

size_t pasci_graph_num_inputs(const pasci_graph *g);
size_t pasci_graph_num_weights(const pasci_graph *g);
size_t pasci_graph_num_nodes(const pasci_graph *g);
size_t pasci_graph_num_outputs(const pasci_graph *g);

/* Input k's static dtype, rank and shape (-1: any). */
pasco_dtype pasci_graph_input(
    const pasci_graph *g, size_t k, int32_t *rank, const int64_t **shape);
const pasci_graph_weight *pasci_graph_weight_at(const pasci_graph *g, size_t k);

/* Output k's node index; node i's static dtype, rank and shape. */
size_t      pasci_graph_output(const pasci_graph *g, size_t k);
pasco_dtype pasci_graph_node_spec(
    const pasci_graph *g, size_t i, int32_t *rank, const int64_t **shape);

/* Node i's op name and its JSON (the graph keeps a copy: a step's runner
 * reads its step-only nodes' attributes there). */
const char  *pasci_graph_node_op(const pasci_graph *g, size_t i);
const cJSON *pasci_graph_node_json(const pasci_graph *g, size_t i);

/* A step's runner computes its step-only nodes: node i (op
 * pasci_graph_node_op) from its inputs in[0..n) into *out; false with the
 * tape's error set. */
typedef struct pasci_graph_hook {
	void *arg;
	bool (*node)(void *arg, pasco_tape *tp, size_t i, size_t n,
	    const pasci_gval *in, pasci_gval *out);
} pasci_graph_hook;

/* Runs g on tp: inputs[0..num_inputs) (an input of a float dtype must be
 * a node, of an integer one ints; a float input given as ints, or ints of
 * another integer dtype, is converted), weights[0..num_weights) (their
 * nodes; NULL for a graph without), hook (NULL but for steps). values, if
 * not NULL, gets every node's value (num_nodes entries); outputs gets the
 * graph's outputs. Each node's value is checked against its static shape
 * (-1 matches any size). False with the tape's error set, naming at, the
 * node index, the op and the shapes ("fm: nodes[4] (matmul): f32[32,8] x
 * f32[16,4]: inner dimensions 8 and 16 differ"). */
bool pasci_graph_run(const pasci_graph *g, pasco_tape *tp, const char *at,
    const pasci_gval *inputs, pasco_tnode *const *weights,
    const pasci_graph_hook *hook, pasci_gval *values, pasci_gval *outputs);

#endif
