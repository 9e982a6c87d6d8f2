/*
 * Layers and models (Sequential, or functional without a config yet) on
 * the gradient tape, with Keras's names, defaults and initializers
 * (issue 20).
 *
 *     pasco_layer l[] = {pasco_layer_dense(16, PASCO_ACT_RELU),
 *                        pasco_layer_dropout(0.1),
 *                        pasco_layer_dense(3, PASCO_ACT_SOFTMAX)};
 *     pasco_model *m;
 *     pasco_model_sequential(&m, 8, 3, l, 42);  // input [batch, 8]
 *     // chief: the variables on the ps ("dense/kernel", "dense/bias",
 *     // "dense_1/kernel", "dense_1/bias"), placed round-robin
 *     pasco_model_create_variables(m, strategy);
 *     // worker, in a step function given the handles as arguments in
 *     // pasco_model_variable order (pasco_call_variable): the same layers
 *     // made there, then pasco_model_bind(m, n, handles). Workers cannot
 *     // look variables up by name: the handles come as arguments.
 *     pasco_tape *tp;
 *     pasco_tape_alloc(&tp, true, step);        // training: dropout on
 *     pasco_loss loss = {.kind = PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY};
 *     double value;
 *     if (pasco_model_train_step(m, tp, &x, y, loss, &opt, &value))
 *             fprintf(stderr, "%s\n", pasco_tape_message(tp));
 *     pasco_tape_free(tp);
 *
 * Layers. A pasco_layer is a description (kind and options), made by the
 * constructors below with Keras's defaults; fields may be changed before
 * the model is made. Variables are f32.
 *   Dense: units, activation (default linear), use_bias (true),
 *     kernel_initializer (glorot_uniform), bias_initializer (zeros),
 *     kernel_l2 and kernel_l1 (Keras's kernel_regularizer=L1L2(kernel_l1,
 *     kernel_l2); 0: none), bias_l1 and bias_l2 (bias_regularizer),
 *     kernel_constraint and bias_constraint (none; constraint.h).
 *     Variables <name>/kernel [in, units] and <name>/bias [units].
 *   Embedding: input_dim, output_dim, embeddings_initializer (Keras's
 *     'uniform': U(-0.05, 0.05)), embeddings_constraint (none), combiner (several ids per example,
 *     [batch, k], combined by mean (default) or sum into [batch,
 *     output_dim], as tf.nn.embedding_lookup_sparse; negative ids are
 *     padding), partitioner (NULL: the strategy's). Variable
 *     <name>/embeddings [input_dim, output_dim]. Its input is a model
 *     input of ids (i32 or i64), [batch] or [batch, k]: in a Sequential
 *     model it is the first layer. A step reads only the rows of the ids
 *     it looks up.
 *   Embedding, dynamic (pasco_layer_dynamic_embedding, or dynamic set):
 *     no input_dim: its ids are 64-bit feature keys (i64; hashed strings
 *     from pasco_hash_key, example.h's HASHED features) of a dynamic table
 *     <name>/embeddings [0, output_dim] on every ps (coordinator.h,
 *     pasco_dynamic_variable_create), whose rows are made on first
 *     lookup in training and never in evaluation or prediction (an unseen
 *     key reads the default). dynamic_options sets admission (min_count),
 *     eviction (evict_after, max_rows_per_ps) and the default
 *     (default_zeros); its dim and initializer are output_dim and
 *     embeddings_initializer. Only -1 is padding (a key may be negative).
 *     fit's TensorBoard and verbose logs report each dynamic table's rows,
 *     created, evicted and refused counts per epoch.
 *   Dropout: rate; active only on a training tape (pasco_tape_alloc's
 *     training flag is Keras's training argument).
 *   Activation: activation.
 *   Concatenate: its inputs along the last axis (functional models).
 *   Custom: an op graph or a registered C function (graph.h).
 *   Normalization: Keras's (2.x) keras.layers.Normalization(axis=-1):
 *     (x - mean) / max(sqrt(variance), 1e-7) per feature (the last axis),
 *     mean and variance adapted from data by pasco_model_adapt. Variables
 *     <name>/mean [width] (zeros until adapted) and <name>/variance
 *     [width] (ones), non-trainable: read by a step like the others (in
 *     the same round trip) but never differentiated, so no gradient or
 *     optimizer changes them; and <name>/count (i64 scalar, the samples
 *     adapted), created on the ps and saved with them but not among
 *     pasco_model_variable (a step never reads it; a worker binds only
 *     mean and variance).
 *   BatchNormalization: Keras 3's keras.layers.BatchNormalization on
 *     [batch, width] (axis -1): gamma * (x - mean) / sqrt(variance +
 *     epsilon) + beta per feature. momentum (0.99), epsilon (1e-3), center
 *     (beta; true), scale (gamma; true), beta_initializer (zeros),
 *     gamma_initializer (ones), moving_mean_initializer (zeros),
 *     moving_variance_initializer (ones). Variables <name>/gamma, /beta
 *     (trainable), /moving_mean and /moving_variance [width]
 *     (non-trainable: never differentiated). On a training tape mean and
 *     variance are the batch's (variance biased) and the gradient goes
 *     through them, and the layer records an update of each moving
 *     statistic, moving += (batch - moving_read) * (1 - momentum),
 *     computed against the value the step read: pasco_tape_apply sends
 *     it as an assign_add in the requests of the step's gradients
 *     (TensorFlow's assign_moving_average under its ParameterServer-
 *     Strategy: every step's update is added once; two workers that read
 *     the same value each add their own, so their updates overlap by
 *     (1 - momentum)^2, as their gradients are stale). Otherwise
 *     (evaluation, prediction) mean and variance are the moving ones.
 *   LayerNormalization: Keras 3's keras.layers.LayerNormalization on an
 *     input of any rank: gamma * (x - mean) / sqrt(variance + epsilon) +
 *     beta, mean and (biased) variance of each example over its axes
 *     (ln_axes, ln_naxes of them, counted with the batch's: -1 the last,
 *     1 the first per example, never 0; none: -1), in any order, sorted
 *     as Keras sorts them; a repeated axis is refused. epsilon (1e-3),
 *     center, scale, beta_initializer, gamma_initializer as above;
 *     rms_scaling (false): x / sqrt(variance + epsilon) * gamma, no beta
 *     (Keras's, which takes the variance, not the mean square). Variables
 *     <name>/gamma and /beta of the input's dimensions at those axes, in
 *     order (Keras's shape: [D] for axis -1 of [B, T, D], [T, D] for
 *     axis [1, 2]), broadcast along the others.
 *   Both take Keras's gamma_regularizer and beta_regularizer (gamma_l1,
 *     gamma_l2, beta_l1, beta_l2) and gamma_constraint, beta_constraint.
 *     BatchNormalization's bn_axis (-1) is Keras's axis: one feature axis
 *     of an input of any rank, counted with the batch's (1: the first per
 *     example; -2: the one before the last), the statistics over every
 *     other axis, its variables [size of that axis]; frozen is Keras's
 *     trainable=False: every step runs it in inference mode (the moving
 *     statistics, never updated) and gamma and beta enter as constants
 *     (no gradient, no regularization). A masked input (mask_zero: a
 *     mask [batch, steps] over [batch, steps, dim]) takes Keras's masked
 *     moments in training: sums over the unmasked steps only, each
 *     divided by (their count + 1e-7); every step is normalized with
 *     them and the moving statistics move toward them.
 *
 * Regularizers. Keras 3's layer.losses are added to the loss of
 * pasco_model_loss and pasco_model_train_step: Dense's kernel and bias
 * regularizers, the normalization layers' gamma and beta ones (each
 * l1 * sum|w| + l2 * sum w^2 over the whole variable, as Keras's), and
 * activity_l1 / activity_l2 of a Dense or an Embedding (Keras's
 * activity_regularizer: of the layer's output, divided by the batch
 * size, as Keras 3 does). An Embedding's embeddings_l1 / embeddings_l2
 * (Keras's embeddings_regularizer) apply to the distinct rows the step
 * looks up, each once (ids of the step's batch; padding ids left out),
 * not to the whole table as Keras does: a step reads only those rows, and
 * the whole table of a ps-partitioned or dynamic embedding would cost a
 * read of every shard per step. So an L2 here decays a row only in the
 * steps that use it.
 *
 * Names. A layer gets its name when constructed, as Keras names it: the
 * kind in snake case, then _1, _2, ... for later layers of that kind in
 * the program (dense, dense_1, embedding, ...); pasco_layer_reset_names
 * starts again (keras.backend.clear_session). A layer with name "" gets
 * one when the model is made; names in one model must differ.
 *
 * Seeds. An initializer whose seed is 0 gets seed
 * model_seed * 1000 + k + 1 for the model's variable k, so two kernels do
 * not start equal and a model seed reproduces every value; a non-zero
 * seed is used as it is (the same values as pasco_variable_create_init
 * with that initializer).
 *
 * Errors. Functions that make or bind a model return PASCO_EINVAL (or
 * PASCO_ENOMEM) with a message in pasco_model_last_error (this thread's
 * last failure). The forward pass and the train step record theirs on the
 * tape, naming the layer and the shapes: "dense_1: input [32, 63] does
 * not match kernel [64, 10]".
 *
 * A model is read-only once made and bound: several threads may run
 * steps on it, each with its own tape. Making a model is cheap: a step
 * function may make and bind one per call.
 */
#ifndef PASCO_LAYERS_H
#define PASCO_LAYERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "constraint.h"
#include "dataset.h"
#include "error.h"
#include "initializer.h"
#include "layer_kinds.h"
#include "ops.h"
#include "optimizer.h"
#include "partitioner.h"
#include "tape.h"
#include "tensor.h"
#include "variable.h"

typedef struct pasco_strategy pasco_strategy; /* coordinator.h */

/* PASCO_LAYER_DENSE = 1, PASCO_LAYER_EMBEDDING, PASCO_LAYER_DROPOUT,
 * PASCO_LAYER_ACTIVATION, PASCO_LAYER_CONCATENATE,
 * PASCO_LAYER_NORMALIZATION, PASCO_LAYER_CUSTOM (graph.h), ...: one per
 * line of layer_kinds.h, in its order. */
#define PASCO_LAYER_ENUM_(name, file) PASCO_LAYER_##name,
typedef enum pasco_layer_kind {
	PASCO_LAYER_NO_KIND = 0, /* a pasco_layer not made by a constructor */
	PASCO_LAYER_KIND_LIST(PASCO_LAYER_ENUM_)
	/* Not a kind: one past the last. */
	PASCO_LAYER_KIND_COUNT
} pasco_layer_kind;
#undef PASCO_LAYER_ENUM_

/* Keras's activations (ops.h's pasco_activation values, and more). */
typedef enum pasco_act {
	PASCO_ACT_LINEAR  = 0, /* Keras's None / "linear" */
	PASCO_ACT_RELU    = 1,
	PASCO_ACT_SIGMOID = 2,
	PASCO_ACT_TANH    = 3,
	PASCO_ACT_SOFTMAX = 4,
} pasco_act;

#define PASCO_LAYER_NAME_MAX 64
/* The most dimensions per example (the batch left out) of a layer's
 * output: Embedding's sequence (steps, dim), a Reshape's target. */
#define PASCO_LAYER_MAX_SHAPE 3
/* Embedding's combiner for Keras's own output, the sequence [batch,
 * steps, output_dim] (pasco_layer_embedding_sequence). */
#define PASCO_COMBINE_NONE ((pasco_combiner) 0)
#define PASCO_LAYER_MAX_INPUTS 8

/* In pasco_layer.inputs: the model's input k (else a layer's index). */
#define PASCO_MODEL_INPUT(k) (-1 - (int32_t) (k))

typedef struct pasco_custom pasco_custom; /* graph.h */
typedef struct pasco_prep   pasco_prep;   /* below, "Preprocessing" */

typedef struct pasco_layer {
	pasco_layer_kind kind;
	char             name[PASCO_LAYER_NAME_MAX];
	/* Dense */
	int64_t           units;
	pasco_act         activation; /* Dense, Activation */
	bool              use_bias;
	pasco_initializer kernel_initializer, bias_initializer;
	double            kernel_l2;
	/* Keras's kernel_regularizer's L1 and bias_regularizer's L1 and L2
	 * factors (regularizers.L1, L2, L1L2; 0: none) */
	double kernel_l1, bias_l1, bias_l2;
	/* Keras's kernel_constraint, bias_constraint (Dense) and
	 * embeddings_constraint (Embedding, not dynamic): constraint.h,
	 * applied by the ps after each update; kind 0: none */
	pasco_constraint kernel_constraint, bias_constraint;
	pasco_constraint embeddings_constraint;
	/* Keras's activity_regularizer (Dense, Embedding; 0: none): l1 *
	 * sum|y| + l2 * sum y^2 of the layer's output y, divided by the
	 * batch size, added to the loss (Keras 3's layer.losses); and
	 * Embedding's embeddings_regularizer, on the rows a step looks up
	 * (not Keras's whole table: "Regularizers" below) */
	double activity_l1, activity_l2, embeddings_l1, embeddings_l2;
	/* Embedding */
	int64_t                  input_dim, output_dim;
	pasco_combiner           combiner;
	pasco_initializer        embeddings_initializer;
	const pasco_partitioner *partitioner; /* borrowed until created */
	bool                     dynamic; /* keys, not ids below input_dim */
	pasco_dynamic_options    dynamic_options; /* but dim, initializer */
	/* Dropout */
	double rate;
	/* Custom (graph.h): its definition, a reference held by each model
	 * and by the description pasco_layer_graph or pasco_layer_function
	 * made (pasco_layer_release drops it). */
	pasco_custom *custom;
	/* Issue 33's shape and merge layers (their paragraph at the end) */
	bool    mask_zero;  /* Embedding (a sequence's) */
	int32_t noise_rank; /* Dropout: 0 = noise_shape None */
	int64_t noise_shape[PASCO_LAYER_MAX_SHAPE + 1]; /* -1 = None */
	int64_t dropout_seed; /* Dropout: -1 = seed None */
	int32_t target_rank;  /* Reshape */
	int64_t target_shape[PASCO_LAYER_MAX_SHAPE];
	int32_t dot_axes[2];    /* Dot: 1 or -1 each */
	bool    normalize;      /* Dot */
	bool    channels_first; /* Flatten, GlobalAveragePooling1D */
	bool    keepdims;       /* GlobalAveragePooling1D */
	/* What the layer is called on (pasco_model_functional): ninputs
	 * entries, each an earlier layer's index or PASCO_MODEL_INPUT(k);
	 * ninputs 0: the previous layer's output (the first layer: input
	 * 0), as in a Sequential model. */
	int32_t inputs[PASCO_LAYER_MAX_INPUTS];
	size_t  ninputs;
	/* BatchNormalization (momentum, the moving statistics' initializers)
	 * and LayerNormalization (rms_scaling): epsilon, center (beta), scale
	 * (gamma), beta_initializer, gamma_initializer */
	double            momentum, epsilon;
	bool              center, scale, rms_scaling;
	pasco_initializer beta_initializer, gamma_initializer;
	pasco_initializer moving_mean_initializer, moving_variance_initializer;
	/* Both: Keras's gamma_regularizer and beta_regularizer (L1 and L2
	 * factors; 0: none), gamma_constraint and beta_constraint (kind 0:
	 * none) */
	double           gamma_l1, gamma_l2, beta_l1, beta_l2;
	pasco_constraint gamma_constraint, beta_constraint;
	/* BatchNormalization: Keras's axis (-1 the last; counted with the
	 * batch axis, so 1 is the first per-example axis; never 0) and
	 * Keras's trainable=False (frozen: inference mode in every step) */
	int32_t bn_axis;
	bool    frozen;
	/* LayerNormalization: Keras's axis, ln_naxes axes counted with the
	 * batch's (-1 the last; never 0), the statistics over them per
	 * example; ln_naxes 0: Keras's default, -1 */
	int32_t ln_axes[PASCO_LAYER_MAX_SHAPE];
	size_t  ln_naxes;
	/* Preprocessing layers (Hashing, StringLookup, IntegerLookup,
	 * CategoryEncoding, Discretization, HashedCrossing): their options
	 * and tables, a reference held by each model and by the description
	 * the constructor made (pasco_layer_release drops it); NULL: the
	 * kind's defaults. */
	pasco_prep *prep;
} pasco_layer;

/* Layers with Keras's defaults, each named as it is constructed. */
pasco_layer pasco_layer_dense(int64_t units, pasco_act activation);
pasco_layer pasco_layer_embedding(int64_t input_dim, int64_t output_dim);
pasco_layer pasco_layer_dynamic_embedding(int64_t output_dim);
pasco_layer pasco_layer_dropout(double rate);
pasco_layer pasco_layer_activation(pasco_act activation);
pasco_layer pasco_layer_concatenate(void);
pasco_layer pasco_layer_normalization(void);
pasco_layer pasco_layer_batch_normalization(void);
pasco_layer pasco_layer_layer_normalization(void);

/* Sets l's inputs (pasco_model_functional) and returns it:
 * pasco_layer_on(pasco_layer_concatenate(), 2, (int32_t[]){0, 1}). */
pasco_layer pasco_layer_on(pasco_layer l, size_t n, const int32_t *inputs);

/* Starts Keras's automatic names again (dense, embedding, ...).
 * Thread-safe. */
void pasco_layer_reset_names(void);

/* "linear", "relu", "sigmoid", "tanh", "softmax"; NULL otherwise. */
const char *pasco_act_name(pasco_act a);

typedef struct pasco_model pasco_model;

/* The most layers, and the most inputs, a model may have: a model (or a
 * config, pasco_model_from_json) of more is PASCO_EINVAL naming the cap.
 * Building, copying and reading a model take time linear in its layers.
 * Sizes are bounded too, before anything is allocated: a layer's output
 * is at most 2^31 wide, a variable read whole each step (a Dense's
 * kernel) has at most 2^31 elements, an embedding table at most 2^40;
 * past them the model is PASCO_EINVAL naming the layer, the variable and
 * its shape. A config's size fields are bounded as they are read, each
 * refused past its bound naming the layer, the field and the bound
 * ("layers[0] (d): units is 9000000000000000; the most is 2^31
 * (2147483648)"): 2^31 for a width (Dense units, Embedding output_dim, an
 * input's width, a Custom layer's output_width and input_widths,
 * CategoryEncoding num_tokens, a lookup's num_oov_indices and max_tokens,
 * each dimension of Reshape's target_shape and Dropout's noise_shape),
 * 2^40 for a count of ids (Embedding input_dim, num_bins of Hashing,
 * HashedCrossing and Discretization), 2^32 - 2 for a dynamic table's
 * max_rows_per_ps. */
#define PASCO_MODEL_MAX_LAYERS 32768

/* A Sequential model of layers[0..n) (copied), each on the previous
 * one's output, on one input [batch, input_width] (for a first Embedding:
 * ids [batch, input_width], or [batch] with width 1). Widths are checked
 * layer by layer: a bad option is PASCO_EINVAL naming the layer; layer
 * names must differ (PASCO_EINVAL naming both layers). *out NULL on
 * failure. */
int pasco_model_sequential(pasco_model **out, int64_t input_width, size_t n,
    const pasco_layer *layers, uint64_t seed);

/* A model input: its name, its width (features, or ids per example), and
 * whether it holds ids (i32 or i64, for Embedding layers only; [batch] is
 * width 1) or features (f32 or f64 [batch, width]). */
typedef struct pasco_model_input {
	const char *name;
	int64_t     width;
	bool        ids;
} pasco_model_input;

/* Keras's functional model without its config yet: inputs[0..ninputs)
 * and layers[0..n), each called on the inputs its `inputs` field names
 * (earlier layers or model inputs); the last layer's output is the
 * model's. An Embedding is called on one ids input; a Concatenate on 2 or
 * more feature tensors (along the last axis); the others on one feature
 * tensor. Wide and deep:
 *     pasco_model_input in[] = {{"dense", 13, false}, {"cat", 3, true}};
 *     pasco_layer l[] = {
 *         pasco_layer_on(pasco_layer_embedding(1000, 8), 1,
 *             (int32_t[]){PASCO_MODEL_INPUT(1)}),
 *         pasco_layer_on(pasco_layer_concatenate(), 2,
 *             (int32_t[]){PASCO_MODEL_INPUT(0), 0}),
 *         pasco_layer_dense(32, PASCO_ACT_RELU),      // on layer 1
 *         pasco_layer_dense(1, PASCO_ACT_SIGMOID)};
 *     pasco_model_functional(&m, 2, in, 4, l, seed); */
int pasco_model_functional(pasco_model **out, size_t ninputs,
    const pasco_model_input *inputs, size_t n, const pasco_layer *layers,
    uint64_t seed);

/* Frees the model and the variable handles it created (not those it was
 * bound to). NULL is a no-op. */
void pasco_model_free(pasco_model *m);

/* This thread's last failure of a model function ("" if none). */
const char *pasco_model_last_error(void);

size_t             pasco_model_num_inputs(const pasco_model *m);
size_t             pasco_model_num_layers(const pasco_model *m);
const pasco_layer *pasco_model_layer(const pasco_model *m, size_t i);
int64_t            pasco_model_output_width(const pasco_model *m);

/* The model's variables, in layer order (a Dense's kernel, then its bias):
 * Keras's path ("dense/kernel"), shape, the initializer it is created with
 * (the seed resolved as above), and its handle once created or bound
 * (NULL before). */
size_t      pasco_model_num_variables(const pasco_model *m);
const char *pasco_model_variable_name(const pasco_model *m, size_t k);
int32_t     pasco_model_variable_shape(
        const pasco_model *m, size_t k, const int64_t **shape);
pasco_initializer pasco_model_variable_init(const pasco_model *m, size_t k);
pasco_variable   *pasco_model_variable(const pasco_model *m, size_t k);

/* Chief: creates every variable on the ps through s
 * (pasco_variable_create_init, or pasco_variable_create_partitioned for
 * an Embedding with its own partitioner): round-robin placement, the
 * strategy's partitioner, saved and restored by checkpoints under those
 * names. An existing variable of the same name and shape is reused (its
 * value left alone), as pasco_variable_create does. The model owns the
 * handles. The strategy's message is in pasco_model_last_error. Blocks. */
int pasco_model_create_variables(pasco_model *m, pasco_strategy *s);

/* Chief: Keras's Normalization.adapt. The per-feature mean and (population)
 * variance of every element of ds, as the input of the Normalization
 * layer at index layer, which must be called on a model input: an element
 * is a tensor [n, width] (f32, f64, i32 or i64; [n] for width 1), or a
 * LIST (x, y, ...) whose x is such a tensor or a DICT holding one under
 * the model input's name (what pasco_dataset_make_csv yields). ds is
 * read to its end (give it a finite one: repeat forever never ends);
 * the model keeps the result (previous adaptations are replaced), and
 * pasco_model_create_variables writes it to the ps; if the variables
 * exist already, they are written now. ds stays the caller's.
 * PASCO_EINVAL (with pasco_model_last_error naming the layer and what was
 * wrong: not a Normalization, not on a model input, an element of another
 * shape, no data), or the dataset's or the variables' error. Blocks. */
int pasco_model_adapt(pasco_model *m, size_t layer, pasco_dataset *ds);

/* The same over the rows of one tensor data [n, width]. */
int pasco_model_adapt_tensor(
    pasco_model *m, size_t layer, const pasco_tensor *data);

/* Worker: binds the model to handles vars[0..n) in pasco_model_variable
 * order, as a step function gets them (pasco_call_variable): n, each
 * handle's dtype and shape, and its name's last part ("kernel", "bias",
 * "embeddings") must match; the layers take the names of their variables
 * ("dense_3/kernel" names its layer dense_3), as a model rebuilt on a
 * worker keeps the chief's names. Borrowed: the handles must outlive the
 * model's use. */
int pasco_model_bind(pasco_model *m, size_t n, pasco_variable *const *vars);

/* The forward pass on tp of inputs[0..pasco_model_num_inputs) (a
 * Sequential model has one) with the variables as nodes, nodes[k] for
 * variable k (pasco_tape_watch of a tensor, pasco_tape_watch_table of a
 * table, or pasco_tape_read's nodes): the output node, or NULL with the
 * tape's error set. Feature inputs are held by the tape as
 * pasco_tape_constant does; ids are read during the call. inputs are only
 * read: an array of const tensors (pasco_value_as_tensor's, as they are)
 * or of non-const ones (pasco_tensor_array), here and in the calls
 * below. Whether Dropout is active is the tape's training flag (Keras's
 * training argument). */
pasco_tnode *pasco_model_call_with(const pasco_model *m, pasco_tape *tp,
    pasco_tensor_array inputs, pasco_tnode *const *nodes);

/* The bound variables read onto tp (pasco_tape_read: one round trip;
 * an Embedding's rows for its input's ids only), then the forward pass.
 * vars (pasco_model_num_variables entries) gets the reads, for
 * pasco_tape_apply. */
pasco_tnode *pasco_model_call(const pasco_model *m, pasco_tape *tp,
    pasco_tensor_array inputs, pasco_tape_var *vars);

typedef enum pasco_loss_kind {
	PASCO_LOSS_MSE                             = 1,
	PASCO_LOSS_BINARY_CROSSENTROPY             = 2,
	PASCO_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY = 3,
	PASCO_LOSS_CATEGORICAL_CROSSENTROPY        = 4, /* one-hot labels */
	/* the model's compiled loss graph (pasco_compile_options.loss_graph):
	 * for pasco_model_loss and pasco_model_train_step on a model
	 * compiled with one */
	PASCO_LOSS_GRAPH = 5,
	/* Keras 3's (keras/src/losses/losses.py), each the mean over the
	 * last axis, then over the batch ("sum_over_batch_size"), unless
	 * said: */
	PASCO_LOSS_MAE  = 6, /* |y - p| */
	PASCO_LOSS_MAPE = 7, /* 100 |y - p| / max(|y|, 1e-7) */
	/* e = p - y: 0.5 e^2 where |e| <= delta, else delta |e| - 0.5 delta^2 */
	PASCO_LOSS_HUBER    = 8,
	PASCO_LOSS_LOG_COSH = 9, /* log(cosh(p - y)) */
	/* max(1 - y p, 0) (squared), labels 0/1 taken as -1/1 when every
	 * label is 0 or 1 */
	PASCO_LOSS_HINGE         = 10,
	PASCO_LOSS_SQUARED_HINGE = 11,
	/* y log(y / p), y and p clipped to [1e-7, 1]: summed over the last
	 * axis */
	PASCO_LOSS_KL_DIVERGENCE = 12,
	PASCO_LOSS_POISSON       = 13, /* p - y log(p + 1e-7) */
	/* -sum(l2_normalize(y) * l2_normalize(p)) over the last axis (axis -1
	 * only), x / sqrt(max(sum x^2, 1e-14)) */
	PASCO_LOSS_COSINE_SIMILARITY = 14,
	/* (1 - p_t)^gamma bce, p_t = y p + (1 - y)(1 - p), times y alpha +
	 * (1 - y)(1 - alpha) with apply_class_balancing; p the sigmoid of
	 * the output with from_logits, clipped to [1e-7, 1 - 1e-7] in bce */
	PASCO_LOSS_BINARY_FOCAL_CROSSENTROPY = 15,
} pasco_loss_kind;

/* A Keras loss, reduced by the mean over the batch. from_logits: the
 * output is logits. Without it, as Keras does, a last layer with sigmoid
 * (binary) or softmax (categorical) activation is differentiated through
 * its logits; the categorical crossentropies need logits or a softmax
 * output. The parameters are Keras's; pasco_loss_from_name and
 * pasco_loss_from_config give Keras's defaults, which a struct filled by
 * hand must give too (a Huber of delta 0 is refused). */
typedef struct pasco_loss {
	pasco_loss_kind kind;
	bool            from_logits; /* binary, categorical, focal */
	double          delta;       /* Huber: 1.0, > 0 */
	/* binary, categorical and binary focal crossentropy: 0, in [0, 1]:
	 * y (1 - s) + s / 2 (binary), y (1 - s) + s / classes */
	double label_smoothing;
	/* binary focal crossentropy: 0.25, 2.0 (>= 0) and false */
	double  alpha, gamma;
	bool    apply_class_balancing;
	int32_t axis; /* -1: the last (the only one taken) */
} pasco_loss;

/* Keras's names and aliases: "mse" or "mean_squared_error", "mae" or
 * "mean_absolute_error", "mape" or "mean_absolute_percentage_error",
 * "huber" (delta 1), "log_cosh" or "logcosh", "hinge", "squared_hinge",
 * "kl_divergence" or "kld", "poisson", "cosine_similarity",
 * "binary_crossentropy" or "bce", "binary_focal_crossentropy",
 * "sparse_categorical_crossentropy" (labels: class ids),
 * "categorical_crossentropy" (labels: one-hot [batch, classes]), with
 * Keras's defaults. PASCO_EINVAL for another. Thread-safe. */
int pasco_loss_from_name(const char *name, bool from_logits, pasco_loss *out);

/* A loss from the JSON of Keras's config of a loss object,
 * {"class_name": "Huber", "config": {"delta": 2.0}}: its class name
 * (MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
 * Huber, LogCosh, Hinge, SquaredHinge, KLDivergence, Poisson,
 * CosineSimilarity, BinaryCrossentropy, BinaryFocalCrossentropy,
 * CategoricalCrossentropy, SparseCategoricalCrossentropy) or a name as
 * pasco_loss_from_name takes, and the class's arguments (Keras's name,
 * reduction "sum_over_batch_size" and dtype null or "float32" are taken
 * and ignored); the ones not given keep Keras's defaults. PASCO_EINVAL
 * naming the class or the field (pasco_model_last_error). Thread-safe. */
int pasco_loss_from_config(const char *json, pasco_loss *out);

/* Keras's loss function of (labels, pred) on tp, for every kind but
 * PASCO_LOSS_GRAPH: a scalar, whose gradient reaches pred (f32 or f64).
 * pred is the model's output: probabilities, or logits with from_logits
 * (the categorical ones: [batch, classes]; probabilities go through
 * log(clip(p / sum p)), as Keras's); labels as pasco_model_loss takes
 * them, read during the call only, label-smoothed as loss says. NULL
 * with the tape's error set for bad parameters or labels that do not
 * fit. */
pasco_tnode *pasco_t_loss(pasco_tape *tp, const pasco_loss *loss,
    pasco_tnode *pred, const pasco_tensor *labels);

/* The loss of the model on (inputs, y) on tp, Dense kernel_l2 terms added
 * (Keras's model.losses): y is the target (mse: f32/f64 of the output's
 * element count), labels 0/1 (binary) or class ids i32/i64 [batch]
 * (sparse categorical). NULL with the tape's error set on failure. */
pasco_tnode *pasco_model_loss(const pasco_model *m, pasco_tape *tp,
    pasco_tensor_array inputs, const pasco_tensor *y, pasco_loss loss,
    pasco_tnode *const *nodes);

/* One training step of a bound model: pasco_model_call (one read), the
 * loss as pasco_model_loss computes it, its gradient, one
 * pasco_tape_apply with opt (one mixed apply; one global step with
 * opt->iterations). *loss_value (may be NULL) gets the loss. On failure
 * the tape's error (naming the layer, the variable or the op) is
 * returned. Blocks. */
int pasco_model_train_step(const pasco_model *m, pasco_tape *tp,
    pasco_tensor_array inputs, const pasco_tensor *y, pasco_loss loss,
    const pasco_optimizer *opt, double *loss_value);

/* ---- Issue 33: shapes, merges, masks (Keras 3's) ----
 *
 * Per-example shapes. A layer's output is [batch, ...] with up to
 * PASCO_LAYER_MAX_SHAPE dimensions per example; its width
 * (pasco_model_output_width) is their product. Model inputs are [batch,
 * width]. Dense, Concatenate, Normalization and Custom take [batch, width]
 * inputs only: on a sequence they are refused, naming the layer, the
 * shape and a Flatten (a Custom layer's equivalent of Keras's Lambda,
 * pasco_layer_graph or pasco_layer_function in graph.h, too). Dropout and
 * Activation keep any shape, and a mask.
 *   Embedding, sequence (pasco_layer_embedding_sequence, or combiner
 *     PASCO_COMBINE_NONE; Python's combiner=None or mask_zero=True): its
 *     ids [batch, steps] give Keras's [batch, steps, output_dim], one row
 *     per id (a negative id: zeros). mask_zero: id 0 is padding, masked:
 *     the mask [batch, steps] passes through Dropout, Activation, Dense
 *     (per step), BatchNormalization and the merge layers and makes
 *     GlobalAveragePooling1D average over the kept steps. Reaching the
 *     output, it weighs the built-in losses as Keras's does (the mean of
 *     the per-step losses over the unmasked steps, each example's sample
 *     weight on its steps; 0 when every step is masked) and the metrics
 *     Keras masks (accuracies, mse, mae, binary crossentropy: over the
 *     unmasked steps); a Graph loss of a masked output is refused
 *     (docs/sequences.md). mask_zero needs the sequence (PASCO_EINVAL).
 *   Dropout: noise_shape (noise_rank dimensions, the batch's first, -1
 *     for None: the input's; each else 1 or the input's), Keras's: one
 *     draw per element of noise_shape, broadcast over the dimensions of
 *     1; dropout_seed >= 0 mixes the layer's seed into the tape's (a
 *     seeded layer draws its own masks, the same for one tape seed).
 *   Flatten: (d0, d1, ...) -> (d0 * d1 * ...,); channels_first (Keras's
 *     data_format="channels_first") moves the first axis last first.
 *   Reshape: target_shape (target_rank dimensions, one may be -1,
 *     inferred), of the input's element count (else PASCO_EINVAL naming
 *     the layer and both shapes).
 *   Add, Multiply, Average: 2 or more inputs of one shape (else
 *     PASCO_EINVAL naming the layer and the shapes); their sum, product,
 *     mean. With masks as Keras's merges (Multiply counts a masked step
 *     as 1; the output's mask is the OR when every input has one).
 *   Dot: two inputs [batch, d], axes 1 or -1 (Keras's axes), giving
 *     [batch, 1]: the dot product of each pair of rows; normalize: each
 *     row l2-normalized first, x / sqrt(max(sum x^2, 1e-14)) (Keras's
 *     normalize, epsilon 1e-7 squared).
 *   GlobalAveragePooling1D: (steps, d) -> (d,) (keepdims: (1, d)), the
 *     mean over the steps; channels_first: (d, steps). With a mask, the
 *     mean over the kept steps; a sequence with none kept gives zeros
 *     (Keras's 0/0 would be NaN).
 * Keras's Lambda is Python's (pasco.layers.Lambda, traced into a Custom
 * layer); in C, pasco_layer_graph or pasco_layer_function (graph.h). */
pasco_layer pasco_layer_embedding_sequence(
    int64_t input_dim, int64_t output_dim, bool mask_zero);
pasco_layer pasco_layer_flatten(void);
pasco_layer pasco_layer_reshape(int32_t rank, const int64_t *target_shape);
pasco_layer pasco_layer_add(void);
pasco_layer pasco_layer_multiply(void);
pasco_layer pasco_layer_average(void);
pasco_layer pasco_layer_dot(int32_t axes, bool normalize);
pasco_layer pasco_layer_global_average_pooling1d(void);

/* Layer i's output shape per example: its rank (1 to
 * PASCO_LAYER_MAX_SHAPE), *dims its dimensions (the model's memory);
 * 0 and NULL for no layer i. */
int32_t pasco_model_layer_shape(
    const pasco_model *m, size_t i, const int64_t **dims);
/*
 * Preprocessing (issue 33): Keras 3's Hashing, StringLookup,
 * IntegerLookup, CategoryEncoding, Discretization and HashedCrossing, run
 * inside the model on the worker. Each is computed from its inputs'
 * tensors before the step reads its variables (an Embedding after a
 * lookup reads only the rows of the looked-up ids) and is not
 * differentiated. A preprocessing layer is called on model inputs or on
 * other preprocessing layers; in output_mode PASCO_OUTPUT_INT its output
 * is ids (i64, its input's shape: for an Embedding, another
 * preprocessing layer, or a feature layer, which reads them as f32), in
 * the other modes features f32 [batch, depth].
 *
 * Strings are carried as their fingerprints: a string input
 * (pasco_model_input.strings) holds pasco_hash_key of each string's
 * bytes (hash.h), as a dataset's "string" feature reads it (CSV and
 * TFRecord, dataset.h). StringLookup matches its vocabulary by
 * fingerprint: a vocabulary of two tokens with one fingerprint (or one
 * token twice) is refused when the layer is made, naming both, so each
 * token gets exactly Keras's index. Hashing and HashedCrossing hash the
 * fingerprints: deterministic and uniform, but not Keras's FarmHash bins.
 *
 * Index layout, as Keras's: in output_mode INT, the mask token's index 0
 * when a mask is set, then num_oov_indices OOV indices, then the
 * vocabulary in order; in the other modes no mask index (a masked input
 * counts nowhere) and the depth is that of the layout (max_tokens with
 * pad_to_max_tokens). An OOV token goes to OOV index
 * (fingerprint as unsigned) % num_oov_indices (StringLookup) or
 * floormod(value, num_oov_indices) (IntegerLookup); with no OOV index
 * (0) it fails the step naming the layer and the value. invert maps
 * indices back to the vocabulary (IntegerLookup: the values; StringLookup:
 * the tokens' fingerprints), the mask index to the mask, others to the
 * OOV token.
 *
 * Constructors: *out gets the layer (named as Keras names it) holding
 * its tables; PASCO_EINVAL, with pasco_model_last_error naming the layer
 * and the value, for a bad option (num_bins < 1, an unknown mode, a
 * vocabulary with duplicates, larger than max_tokens or holding the mask
 * or OOV token, an unreadable vocabulary file); PASCO_ENOMEM. The caller
 * drops its reference with pasco_layer_release once the model is made.
 * Thread-safe.
 */
typedef enum pasco_output_mode {
	PASCO_OUTPUT_INT       = 0, /* Keras's "int": ids */
	PASCO_OUTPUT_ONE_HOT   = 1,
	PASCO_OUTPUT_MULTI_HOT = 2,
	PASCO_OUTPUT_COUNT     = 3,
	/* StringLookup and IntegerLookup only: COUNT times each index's
	 * inverse document frequency (pasco_lookup_options.idf_weights) */
	PASCO_OUTPUT_TF_IDF = 4,
} pasco_output_mode;

/* "int", "one_hot", "multi_hot", "count", "tf_idf"; NULL otherwise. */
const char *pasco_output_mode_name(pasco_output_mode m);

/* Keras's Hashing(num_bins, mask_value=None, salt=None, output_mode):
 * a bin of [0, num_bins) for each value (strings by fingerprint,
 * integers by their decimal text's fingerprint, floats cast to integers
 * first, as Keras does), XXH64 of the fingerprint's 8 bytes seeded with
 * salt when has_salt, else the fingerprint as unsigned, modulo the bins;
 * with a mask (mask_string for a string input, else mask_value) the
 * mask goes to bin 0 and the others to 1 + the hash modulo num_bins - 1. */
typedef struct pasco_hashing_options {
	bool              has_mask;
	int64_t           mask_value;
	const char       *mask_string;
	bool              has_salt;
	uint64_t          salt;
	pasco_output_mode output_mode;
} pasco_hashing_options;

int pasco_layer_hashing(
    pasco_layer *out, int64_t num_bins, const pasco_hashing_options *opts);

/* StringLookup's and IntegerLookup's options; pasco_lookup_defaults gives
 * Keras's (max_tokens none, one OOV index, no mask, OOV token "[UNK]" /
 * -1, int output). max_tokens 0: no bound. vocabulary_file: one token per
 * line (trailing empty lines dropped), read instead of the vocabulary
 * given. */
typedef struct pasco_lookup_options {
	int64_t           max_tokens;
	int64_t           num_oov_indices;
	const char       *mask_token; /* StringLookup; NULL: none */
	const char       *oov_token;
	bool              has_mask; /* IntegerLookup */
	int64_t           mask_value, oov_value;
	bool              invert, pad_to_max_tokens;
	pasco_output_mode output_mode;
	const char       *vocabulary_file;
	/* Keras's idf_weights, for output_mode TF_IDF (required there, NULL
	 * otherwise): one weight per vocabulary token, in its order (copied;
	 * Python's adapt computes Keras's log(1 + documents / (1 +
	 * documents holding the token))). The OOV indices get their mean,
	 * the padding to max_tokens 0, as Keras's. */
	const double *idf_weights;
	size_t        num_idf_weights;
} pasco_lookup_options;

pasco_lookup_options pasco_lookup_defaults(void);

/* vocabulary[0..n) (copied); opts NULL: the defaults. */
int pasco_layer_string_lookup(pasco_layer *out, size_t n,
    const char *const *vocabulary, const pasco_lookup_options *opts);
int pasco_layer_integer_lookup(pasco_layer *out, size_t n,
    const int64_t *vocabulary, const pasco_lookup_options *opts);

/* Keras's CategoryEncoding(num_tokens, output_mode): integer inputs in
 * [0, num_tokens) into f32 [batch, num_tokens]: ONE_HOT (one value per
 * example), MULTI_HOT (default in Keras) or COUNT. A value outside
 * fails the step naming the layer and the value. */
int pasco_layer_category_encoding(
    pasco_layer *out, int64_t num_tokens, pasco_output_mode mode);

/* Keras's Discretization(bin_boundaries): the bin of each value, right-
 * open ([b[i-1], b[i]) is bin i: numpy's digitize), boundaries[0..n)
 * ascending (copied); Keras's adapt (num_bins, epsilon) is the Python
 * layer's, which writes the boundaries it finds into the config. */
int pasco_layer_discretization(pasco_layer *out, size_t n,
    const double *boundaries, pasco_output_mode mode);

/* Keras's HashedCrossing(num_bins, output_mode): its two inputs (strings
 * or integers, one width) crossed element by element into a bin of
 * [0, num_bins): XXH64 of the two keys (as Hashing takes them) modulo
 * num_bins. INT or ONE_HOT. */
int pasco_layer_hashed_crossing(
    pasco_layer *out, int64_t num_bins, pasco_output_mode mode);

/* Marks model input k (an ids input) as strings: each i64 is the
 * fingerprint of a string, pasco_hash_key of its bytes (hash.h), as a
 * dataset's "string" feature reads it; what StringLookup takes (and
 * Hashing hashes as it is). Keras's Input(dtype="string"); in a config,
 * the input's "dtype": "string". Call before the model is used.
 * PASCO_EINVAL for k past the inputs or an input of features. Not
 * thread-safe: call from the thread that made the model. */
int pasco_model_set_string_input(pasco_model *m, size_t k);

#endif
