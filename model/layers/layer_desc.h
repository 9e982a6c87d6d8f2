/*
 * What a layer kind is, in one place (DESIGN.md 11, "Kinds as
 * descriptors"): for each pasco_layer_kind, one descriptor in its own file
 * under model/layers/ (its Keras class name, its automatic name, its
 * config fields, its defaults, its checks, its variables, its call on the
 * tape, its JSON writer and reader), and one table of them
 * (model/layers/table.c) whose length is checked against
 * PASCO_LAYER_KIND_COUNT at compile time. The model's builder
 * (model/layers.c), its forward pass (model/sequential.c), the config's
 * reader and writer (model/config.c) and the automatic names go through
 * the table; tests/python/layer_table.py checks the Python classes
 * against it. Constant tables: any thread.
 *
 * Adding a layer: docs/ARCHITECTURE.md, "Adding a layer".
 */
#ifndef PASCI_LAYER_DESC_H
#define PASCI_LAYER_DESC_H

#include <cjson/cJSON.h>

#include "layers_impl.h"
#include "pasco/graph.h"

/* The length of every table indexed by kind (kind 0 is none). */
#define PASCI_LAYER_KINDS PASCO_LAYER_KIND_COUNT

/* The most variables a layer has unless its kind says (max_vars; a
 * Dense: kernel and bias): the model keeps this many per layer, and
 * pasci_model_add_var aborts past it. */
#define PASCI_LAYER_MAX_VARS 2

/* The most config fields of a kind, "name" included (BatchNormalization
 * has 16). */
#define PASCI_LAYER_MAX_KEYS 18

/* A layer's call on the tape: what it is given and what it tells. */
typedef struct pasci_layer_call {
	const pasco_model   *m;
	pasco_tape          *tp;
	size_t               i;      /* the layer's index */
	pasco_tnode *const  *in;     /* its input nodes (not for ids) */
	const pasco_tensor *const *inputs; /* the model's inputs */
	pasco_tnode *const  *nodes;  /* the variables' nodes */
	/* Out: the input of its activation and that activation (linear
	 * unless set), for a loss that differentiates through logits. */
	pasco_tnode *pre;
	pasco_act    act;
	/* Keras's masks (an Embedding's mask_zero): per input, NULL or an
	 * f32 [batch, steps] constant, 1 at the steps kept; and the
	 * output's, which call may set (else a keeps_shape kind passes its
	 * first input's on, and the others drop it). */
	pasco_tnode *const *in_mask;
	pasco_tnode        *mask;
	/* Out: a scalar the layer adds to the loss (Keras's add_loss in
	 * call: an Embedding's embeddings_regularizer), or NULL. */
	pasco_tnode *loss;
} pasci_layer_call;

struct pasci_prep_call; /* model/prep.h */

/* A kind's descriptor, named pasci_layer_<prefix>_desc in its file and
 * listed in model/layers/table.c. Its functions take no lock and do not
 * block (call records ops on its tape); any thread. */
typedef struct pasci_layer_desc {
	pasco_layer_kind kind;
	const char      *class_name; /* Keras's, in configs: "Dense" */
	const char      *prefix;     /* automatic names: "dense", "dense_1" */
	/* Its config's fields, "name" first, NULL-ended: what the reader
	 * accepts. args: those Keras's constructor requires (no default),
	 * NULL-ended. */
	const char *keys[PASCI_LAYER_MAX_KEYS];
	const char *args[4];
	/* Called on one model input of ids (an Embedding), else on
	 * features; min_inputs > 1: on that many or more (up to
	 * PASCO_LAYER_MAX_INPUTS), else on one. */
	bool ids;
	int  min_inputs;
	/* Called on 1 to PASCO_LAYER_MAX_INPUTS inputs, of features or ids
	 * alike (Custom): an ids input's node is NULL in call's in. */
	bool any_inputs;
	/* Keras's defaults into l (kind set, the rest zero); NULL: none. */
	void (*defaults)(pasco_layer *l);
	/* Checks l's options against its inputs' widths[0..l->ninputs);
	 * *out (preset to widths[0]) gets its output's width (for a kind
	 * with a shape hook, below, the product of its shape instead). PASCO_EINVAL
	 * with pasci_model_fail naming the layer. */
	int (*check)(
	    const pasco_layer *l, const int64_t *widths, int64_t *out);
	/* Per-example shapes (layers_impl.h, pasci_eshape), after check:
	 * the output's (*out, preset to in[0]) from the inputs'
	 * in[0..l->ninputs); its width becomes the product. NULL: a kind
	 * of [batch, width] inputs only (rank 1 each; another is refused
	 * naming a Flatten), its output (check's width), unless
	 * keeps_shape. PASCO_EINVAL with pasci_model_fail naming the layer
	 * and the shapes. */
	int (*shape)(const pasco_layer *l, const pasci_eshape *in,
	    pasci_eshape *out);
	/* Its output has its input's shape, any rank, and the input's mask
	 * (Keras's supports_masking): Dropout, Activation. */
	bool keeps_shape;
	/* The most variables layer l adds; NULL: PASCI_LAYER_MAX_VARS. */
	size_t (*max_vars)(const pasco_layer *l);
	/* Adds layer i's variables (pasci_model_add_var), its input being
	 * widths[0] wide; NULL: none. */
	void (*variables)(pasco_model *m, size_t i, const int64_t *widths);
	/* The forward pass of layer c->i: its output node, or NULL with the
	 * tape's error set. */
	pasco_tnode *(*call)(pasci_layer_call *c);
	/* Its regularizers' terms of layer c->i added to loss (its
	 * variables' nodes in c->nodes); NULL: none (Dense's kernel_l2 is
	 * sequential.c's). */
	pasco_tnode *(*penalty)(pasci_layer_call *c, pasco_tnode *loss);
	/* A model's copy of l takes a reference to what l holds (hold),
	 * and drops it (release); NULL: l holds nothing. */
	void (*hold)(pasco_layer *l);
	void (*release)(pasco_layer *l);
	/* The memory what l holds takes (a model cache's bound counts
	 * it); NULL: none. */
	size_t (*bytes)(const pasco_layer *l);
	/* Its config fields but "name" into c; false without memory. */
	bool (*write)(cJSON *c, const pasco_layer *l);
	/* Its options from config c (keys checked already), over its
	 * defaults; a partitioner goes into part. PASCO_EINVAL naming at. */
	int (*read)(const cJSON *c, pasco_layer *l, pasco_partitioner *part,
	    const char *at);
	/* Preprocessing kinds (model/prep.h): fills c->idx, one index per
	 * element of its first input, from its inputs' tensors before the
	 * step's reads; NULL: not one. prep_depth: the depth of its
	 * non-int encodings. */
	int (*prep)(struct pasci_prep_call *c);
	int64_t (*prep_depth)(const pasco_layer *l);
} pasci_layer_desc;

/* The descriptor of kind, or NULL for a number that is no kind. */
const pasci_layer_desc *pasci_layer_desc_of(int kind);

/* The descriptor of Keras class name cls ("Dense"), or NULL. */
const pasci_layer_desc *pasci_layer_desc_named(const char *cls);

/* The class names, comma separated, into buf ("Dense, Embedding, ..."). */
const char *pasci_layer_class_list(char *buf, size_t len);

/* l named as Keras names it as it is constructed (dense, dense_1, ...). */
pasco_layer pasci_layer_named(pasco_layer l);

/* Adds variable <layer i's name>/what of rank 1 ([d0]) or 2 ([d0, d1]);
 * an initializer of seed 0 gets the model's (layers.h, "Seeds"). */
void pasci_model_add_var(pasco_model *m, size_t i, const char *what,
    int32_t rank, int64_t d0, int64_t d1, pasco_initializer init);

/* The same of any rank (up to PASCO_MAX_RANK). */
void pasci_model_add_var_shape(pasco_model *m, size_t i, const char *what,
    int32_t rank, const int64_t *shape, pasco_initializer init);

/* The node of layer i's variable j, or NULL with the tape's error set
 * when the caller gave none. */
pasco_tnode *pasci_layer_var_node(const pasco_model *m, pasco_tape *tp,
    size_t i, size_t j, pasco_tnode *const *nodes);

/* The per-example shape of layer i's input j (an earlier layer's
 * output, or a model input's (width)). */
pasci_eshape pasci_layer_in_shape(const pasco_model *m, size_t i, size_t j);

/* The model input that layer i (called on ids) is called on. */
size_t pasci_layer_input_of(const pasco_model *m, size_t i);

/* activation a of x on tp (linear: x). */
pasco_tnode *pasci_layer_activate(pasco_tape *tp, pasco_tnode *x, pasco_act a);

/* The merge layers' shared parts (model/layers/add.c): every input of
 * one per-example shape (else PASCO_EINVAL naming the layer and the two
 * shapes); and the output's mask, Keras's: the OR of the inputs' masks
 * when each has one, else none (NULL, also on the tape's error). */
int pasci_merge_shape(
    const pasco_layer *l, const pasci_eshape *in, pasci_eshape *out);
pasco_tnode *pasci_merge_mask(pasci_layer_call *c);

/* The writer and reader of a kind with no config fields but "name" (the
 * merge layers'): nothing to write or read. */
bool pasci_layer_no_fields_write(cJSON *c, const pasco_layer *l);
int  pasci_layer_no_fields_read(
     const cJSON *c, pasco_layer *l, pasco_partitioner *part, const char *at);

/* A mask's value [batch, steps] as a condition for x of rank 3 ([batch,
 * steps, 1], for pasco_t_where's broadcasting) into view, sharing its
 * data: valid while the tape is. */
const pasco_tensor *pasci_mask_cond(
    pasco_tnode *mask, int32_t rank, pasco_tensor *view);

/* A config's list of dimensions under key (model/layers/reshape.c):
 * absent or null: *rank 0; else 1 to max whole
 * numbers >= -1, null read as -1 when null_ok (Keras's None). PASCO_EINVAL
 * naming at and key. And the writer: -1 written as null when null_ok. */
int  pasci_json_read_dims(const cJSON *c, const char *key, int32_t *rank,
     int64_t *dims, int32_t max, bool null_ok, const char *at);
bool pasci_json_write_dims(cJSON *c, const char *key, int32_t rank,
    const int64_t *dims, bool null_ok);

/* Keras's regularizers (model/layers/dense.c): L1, L2 or L1L2 under
 * key into *l1, *l2 (absent or null: none; PASCO_EINVAL naming where and
 * key); the writer (null when both are 0); and their term added to loss:
 * l1 * sum|w| + l2 * sum w^2 (w NULL or both 0: loss as it is; loss
 * NULL: the term alone). */
int  pasci_json_read_reg(const cJSON *c, const char *key, double *l1,
     double *l2, const char *where);
bool pasci_json_write_reg(cJSON *c, const char *key, double l1, double l2);
pasco_tnode *pasci_layer_reg_term(
    pasco_tape *tp, pasco_tnode *loss, pasco_tnode *w, double l1, double l2);

/* Keras's activity_regularizer of layer l's output y, (l1 sum|y| + l2
 * sum y^2) / batch, added to acc (NULL: none yet); acc itself when l has
 * none (model/layers/dense.c). */
pasco_tnode *pasci_layer_activity_term(
    pasco_tape *tp, pasco_tnode *acc, const pasco_layer *l, pasco_tnode *y);

/* The factors' check every kind with an activity_regularizer shares:
 * PASCO_EINVAL naming the layer for a negative one, or for one set on a
 * kind that does not take it (any but Dense and Embedding). */
int pasci_layer_check_activity(const pasco_layer *l);

/* "data_format": "channels_last" (or null) or "channels_first". */
int pasci_json_read_data_format(
    const cJSON *c, bool *channels_first, const char *at);

/* The config readers and writers the kinds share (model/config.c). */
bool pasci_json_write_init(
    cJSON *parent, const char *key, const pasco_initializer *in);
int pasci_json_read_init(const cJSON *parent, const char *key,
    pasco_initializer *in, const char *where);
int pasci_json_read_act(const cJSON *c, pasco_act *a, const char *where);
/* "axis": absent or -1 (the last axis). */
int pasci_json_read_axis(const cJSON *c, const char *where);

#endif
