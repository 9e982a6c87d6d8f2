/*
 * Traced steps on the worker (docs/GRAPHS.md, "A traced step"): the step
 * JSON parsed once per process and kept by its bytes
 * (worker/graph_step_parse.c), and the library step function
 * "pasco.graph_step" that binds a call's arguments to it and runs it
 * (worker/graph_step.c). A parsed step is read-only: any number of calls
 * run it at once, each on its own tape.
 */
#ifndef PASCI_GRAPH_STEP_H
#define PASCI_GRAPH_STEP_H

#include <stdbool.h>
#include <stddef.h>

#include "graph.h"
#include "pasco/function.h"
#include "pasco/layers.h"
#include "pasco/optimizer.h"
#include "pasco/tape.h"

/* The kinds of a step's arguments ("args"). */
typedef enum pasci_gstep_kind {
	PASCI_GSTEP_ITERATOR = 1,
	PASCI_GSTEP_MODEL,
	PASCI_GSTEP_VARIABLE,
	PASCI_GSTEP_TENSOR,
	PASCI_GSTEP_GLOBAL_STEP,
} pasci_gstep_kind;

typedef struct pasci_gstep_arg {
	pasci_gstep_kind kind;
	pasco_dtype      dtype; /* variable, tensor */
	int32_t          rank;  /* variable, tensor; -1 in shape: any */
	int64_t          shape[PASCO_MAX_RANK];
} pasci_gstep_arg;

/* The step-only ops; 0: a node of the op table or a leaf. */
typedef enum pasci_gstep_op {
	PASCI_GSTEP_OP_NONE = 0,
	PASCI_GSTEP_OP_NEXT,
	PASCI_GSTEP_OP_ARG,
	PASCI_GSTEP_OP_MODEL,
	PASCI_GSTEP_OP_READ,
	PASCI_GSTEP_OP_GRADIENT,
	PASCI_GSTEP_OP_GLOBAL_STEP,
} pasci_gstep_op;

/* A node's step-only attributes, read once. */
typedef struct pasci_gstep_node {
	pasci_gstep_op op;
	pasco_dtype    dtype; /* the node's */
	int64_t        arg;   /* next, arg, model: the step argument */
	int64_t        call;  /* next: which next() of that iterator */
	const cJSON   *path;  /* next: into the element (the graph's copy) */
	int64_t        var;   /* read, gradient: the step variable */
	bool           training; /* model */
	int64_t        target;   /* gradient: in[0] */
	/* gradient: the first gradient node of the same target, which
	 * computes every gradient asked of that target */
	size_t leader;
	/* the first node that takes this one as an input; -1: none */
	int64_t used_by;
} pasci_gstep_node;

typedef struct pasci_gstep_apply {
	pasco_optimizer opt; /* iterations unset: the call sets it */
	bool            global_step;
	size_t          n;
	int64_t        *grads; /* node indices */
	int64_t        *vars;  /* step variables */
} pasci_gstep_apply;

typedef struct pasci_gstep_update {
	int64_t var;   /* a step variable */
	int64_t value; /* a node */
} pasci_gstep_update;

typedef struct pasci_gstep {
	char                name[128];
	size_t              nargs;
	pasci_gstep_arg    *args;
	int64_t             global_step_arg; /* -1: none */
	size_t              nvar_args;       /* variable arguments */
	pasci_graph        *graph;
	size_t              nnodes;
	pasci_gstep_node   *nodes;
	int64_t            *outputs; /* the graph's output nodes */
	size_t              noutputs;
	bool                training; /* a model node says training: true */
	size_t              napplies;
	pasci_gstep_apply  *applies;
	size_t              nupdates;
	pasci_gstep_update *updates;
} pasci_gstep;

/* The parsed step of JSON bytes[0..len) (not 0-terminated), held for the
 * caller (pasci_gstep_release): kept from an earlier call with the same
 * bytes, or parsed now and kept (at most PASCI_GSTEP_CACHE_ENTRIES steps,
 * the least recently used dropped first). On failure *out is NULL and
 * pasco_model_last_error names the step, the field or node and what is
 * wrong (PASCO_EINVAL; PASCO_ENOMEM). Nothing is parsed under the
 * cache's lock. Thread-safe. */
#define PASCI_GSTEP_CACHE_ENTRIES 32
int pasci_gstep_get(const void *bytes, size_t len, const pasci_gstep **out);

/* Drops the caller's hold; NULL is a no-op. Thread-safe. */
void pasci_gstep_release(const pasci_gstep *s);

/* Empties the cache (steps still held are freed by their last holder),
 * and whether bytes[0..len) is kept: for tests. Thread-safe. */
void pasci_gstep_cache_reset(void);
bool pasci_gstep_cache_holds(const void *bytes, size_t len);

/* A dataset element taken by the next nodes of one (argument, call). */
typedef struct pasci_gstep_elem {
	int64_t      arg, call;
	pasco_value *v;
} pasci_gstep_elem;

/* A source read after a variable's first (graph_step.c). */
typedef struct pasci_gstep_src {
	pasco_tnode            *node;
	struct pasci_gstep_src *next;
} pasci_gstep_src;

/* One call's binding and state (graph_step.c; bound by
 * graph_step_bind.c); every array is the call's own. */
typedef struct pasci_gstep_run {
	const pasci_gstep *s;
	pasco_call        *call;
	pasco_tape        *tp;
	/* per step argument */
	pasco_model        **models;
	pasco_dataset      **its;
	const pasco_tensor **tensors;
	size_t              *model_var0; /* a model's first step variable */
	pasco_variable      *global_step;
	/* per step variable: every model's, then the variable arguments */
	size_t           nvars;
	pasco_variable **vars;
	bool            *sparse; /* an embedding table, read by rows */
	pasco_tnode    **src;    /* its node once read: watched, or a
	                          * constant (a read node's, not
	                          * differentiated) */
	pasco_tensor **ints;     /* an integer one's value (a read node's);
	                          * tape memory */
	/* an embedding table's rows read again by a later call of its
	 * model (that call's ids), newest first; tape memory */
	struct pasci_gstep_src **more;
	size_t                   nmore;
	/* per node */
	pasco_tape_grad  *grads; /* gradient nodes: their variable's */
	bool             *no_grad;
	pasci_gval       *values;
	pasci_gstep_elem *elems;
	size_t            nelems;
} pasci_gstep_run;

/* Binds r->call's arguments after the JSON to r->s's args (a mismatch
 * names the argument, the kind it wants and what came; the models' copies
 * made), lists the step's variables and checks what depends on them
 * (variable indices, a sparse gradient taken by nothing but applies).
 * Fails the call (pasco_call_fail) naming the step. r's per-argument
 * arrays are allocated; the rest is allocated here. Blocks not. */
int pasci_gstep_bind(pasci_gstep_run *r);

/* Fails node i of the run; false. pasci_graph_run puts the step's name,
 * the node's index and its op before the message. The tape keeps its
 * first error: a failure of the tape's own (a read) stays as it is. */
bool pasci_gstep_fail(pasci_gstep_run *r, size_t i, int err, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

/* Gradient node i (graph_step_grad.c): its leader computes every
 * gradient of its target; out gets a dense one as a constant node (zeros
 * for TensorFlow's None), nothing for a sparse one. */
bool pasci_gstep_gradient(
    pasci_gstep_run *r, size_t i, const pasci_gval *in, pasci_gval *out);

/* The step function "pasco.graph_step" (pasci_model_function_find). */
int pasci_graph_step(pasco_call *call);

#endif
