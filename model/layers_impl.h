/*
 * The model's insides, shared by model/layers.c (descriptions, names,
 * variables, bind), model/sequential.c (the forward pass, losses, the
 * train step) and coordinator/model_vars.c (creating the variables).
 */
#ifndef PASCI_LAYERS_IMPL_H
#define PASCI_LAYERS_IMPL_H

#include "metric_spec.h"
#include "pasco/layers.h"

typedef struct pasci_model_var {
	char              name[PASCO_LAYER_NAME_MAX + 16];
	int32_t           rank;
	int64_t           shape[PASCO_MAX_RANK];
	pasco_initializer init;
	pasco_constraint  constraint; /* the layer's for it; kind 0: none */
	size_t            layer;      /* the layer it belongs to */
	pasco_variable   *handle;
} pasci_model_var;

/* A layer output's shape per example (the batch left out): rank 1
 * ([batch, width]) to PASCI_ESHAPE_MAX (an Embedding's sequence (L, dim),
 * a Reshape's target); the layer's width (out_width) is the product. */
#define PASCI_ESHAPE_MAX 3
/* The most values per example a layer with a shape hook may give. */
#define PASCI_ESHAPE_MAX_COUNT ((int64_t) 1 << 31)
typedef struct pasci_eshape {
	int32_t rank;
	int64_t dim[PASCI_ESHAPE_MAX];
} pasci_eshape;

typedef struct pasci_model_input {
	char    name[PASCO_LAYER_NAME_MAX];
	int64_t width;
	bool    ids;
	bool    strings; /* fingerprints (pasco_model_set_string_input) */
} pasci_model_input;

/* Metric kinds of a compiled model ("accuracy" resolved). */
typedef enum pasci_metric_kind {
	PASCI_METRIC_BINARY_ACCURACY      = 1,
	PASCI_METRIC_SPARSE_CAT_ACCURACY  = 2,
	PASCI_METRIC_CATEGORICAL_ACCURACY = 3,
	PASCI_METRIC_AUC                  = 4,
	PASCI_METRIC_MAE                  = 5,
	PASCI_METRIC_PRECISION            = 6,
	PASCI_METRIC_RECALL               = 7,
	PASCI_METRIC_MSE                  = 8,
	PASCI_METRIC_RMSE                 = 9,
	PASCI_METRIC_BCE                  = 10,
	PASCI_METRIC_TOP_K                = 11,
	PASCI_METRIC_SPARSE_TOP_K         = 12,
} pasci_metric_kind;

#define PASCI_MAX_METRICS 8
#define PASCI_METRIC_NAME_MAX 40

/* What pasco_model_compile keeps: the loss, the optimizer (iterations
 * unset: the step sets the global step it is given), the metrics with
 * their kinds and where their counts sit in the state vector. */
typedef struct pasci_loss_graph pasci_loss_graph; /* model/loss_graph.c */

typedef struct pasci_compile {
	bool            compiled;
	char            loss_name[48];
	pasco_loss      loss;
	/* loss.kind PASCO_LOSS_GRAPH: the loss's graph, a reference held by
	 * the model (released by pasco_model_free, held by a clone) */
	pasci_loss_graph *loss_graph;
	pasco_optimizer opt;
	bool            global_step; /* iterations = the global step */
	/* opt.iterations_base is the optimizer's start on the global step,
	 * set by its first fit (or read from a config that has it); false
	 * after compile: the next fit sets it */
	bool base_known;
	size_t          nmetrics;
	char            metric_names[PASCI_MAX_METRICS][PASCI_METRIC_NAME_MAX];
	pasci_metric_kind metric_kinds[PASCI_MAX_METRICS];
	pasci_metric_spec metric_specs[PASCI_MAX_METRICS]; /* their parameters */
	size_t            metric_off[PASCI_MAX_METRICS];
	/* compile's weighted_metrics (after the others): counted with the
	 * batch's sample weights */
	bool metric_weighted[PASCI_MAX_METRICS];
	size_t            state_len; /* counts of every metric together */
	/* compile's loss_weights: the loss's scale (1 unless given) and
	 * whether it was given (the config writes it then) */
	double loss_weight;
	bool   has_loss_weight;
} pasci_compile;

/* A Normalization layer's adapted statistics (pasco_model_adapt), f64
 * [width] each, and its count variable (chief: made by
 * create_variables, owned by the model). */
typedef struct pasci_model_norm {
	double         *mean, *variance;
	int64_t         count; /* samples adapted; 0: never adapted */
	pasco_variable *count_var;
} pasci_model_norm;

struct pasco_model {
	char               name[PASCO_LAYER_NAME_MAX];
	bool               functional;
	pasco_partitioner *parts; /* per layer: its own (kind 0: none) */
	pasci_compile      compile;
	pasco_tensor      *config; /* the JSON as u8, for pasco_model_args */
	uint64_t           seed;
	size_t             ninputs, nlayers, nvars;
	size_t             capvars; /* vars' length (the layers' max_vars) */
	pasci_model_input *inputs;
	pasco_layer       *layers;    /* inputs resolved: ninputs >= 1 */
	int64_t           *out_width; /* per layer */
	pasci_eshape      *out_shape; /* per layer, per example */
	size_t            *first_var; /* per layer: its first variable */
	pasci_model_var   *vars;
	bool               owns; /* handles made by create_variables */
	pasci_model_norm  *norm; /* per layer (Normalization only) */
};

/* A layer of kind with Keras's defaults and no name. */
pasco_layer pasci_layer_defaults(pasco_layer_kind kind);

/* A copy of m, unbound (no handles), with its compile config; no config
 * tensor. PASCO_ENOMEM. */
int pasci_model_clone(const pasco_model *m, pasco_model **out);

/* The bytes an unbound model (from a config, or a clone) holds: its
 * struct and its per-layer and per-input arrays. */
size_t pasci_model_bytes(const pasco_model *m);

/* The bound variables read onto tp (one round trip); their nodes, in the
 * tape's arena, or NULL with the tape's error set. vars gets the reads. */
pasco_tnode **pasci_model_read(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, pasco_tape_var *vars);

/* pasco_model_loss that also gives the model's output node (*out), each
 * example's loss weighted by sw (NULL: unweighted; a Graph loss's too,
 * pasci_loss_graph_run). */
pasco_tnode *pasci_model_loss_out(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, pasco_loss loss, pasco_tnode *const *nodes,
    pasco_tnode **out);

/* Writes layer i's adapted statistics to its variables (mean, variance,
 * count) when the model has made them; a no-op otherwise. Blocks. */
int pasci_model_norm_write(pasco_model *m, size_t i);

/* Frees the statistics and count variables of m's Normalization layers. */
void pasci_model_norm_free(pasco_model *m);

/* Frees the handles m created (pasco_model_create_variables: the model's
 * and its Normalization layers' count variables), leaving it unbound:
 * before the strategy they were made on goes. */
void pasci_model_drop_variables(pasco_model *m);

/* Records this thread's last model error (pasco_model_last_error) and
 * returns err. */
int pasci_model_fail(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "[32, 63]" into buf. */
const char *pasci_shape_str(
    int32_t rank, const int64_t *shape, char *buf, size_t len);
#define PASCI_SHAPE(r, s) pasci_shape_str((r), (s), (char[96]){0}, 96)

/* "(10, 8)": a per-example shape, Keras's way. */
const char *pasci_eshape_str(const pasci_eshape *s, char *buf, size_t len);
#define PASCI_ESHAPE(s) pasci_eshape_str((s), (char[96]){0}, 96)

/* The product of s's dimensions; INT64_MAX past it (or a negative
 * dimension). */
int64_t pasci_eshape_count(const pasci_eshape *s);

#endif
