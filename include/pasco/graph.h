/*
 * Custom layers (issue 32): a layer whose forward pass is an op graph
 * (docs/GRAPHS.md, traced from Python's pasco.layers.Layer subclasses),
 * or a C function registered by name. Both are kind PASCO_LAYER_CUSTOM
 * ("Custom" in a model's config), run by the workers on the gradient
 * tape, their weights model variables <layer name>/<weight name> created
 * on the ps as the model's others are.
 *
 * A C layer: the same program registers it on the chief and every worker
 * (as PASCO_FUNCTION step functions are), before the first model that
 * names it is made or read:
 *
 *     // y = relu(x @ kernel + bias): Dense's, written by hand
 *     static int dense_vars(const char *options, size_t n,
 *         const int64_t *widths, pasco_layer_weight *w, size_t *nw,
 *         int64_t *out, char *err, size_t errlen)
 *     {
 *             int64_t units = 8;           // or read from options' JSON
 *             (void) options; (void) err; (void) errlen;
 *             if (n != 1)
 *                     return PASCO_EINVAL;
 *             w[0] = (pasco_layer_weight){"kernel", 2, {widths[0], units},
 *                 pasco_init_glorot_uniform(0), 0, 0, true};
 *             w[1] = (pasco_layer_weight){"bias", 1, {units},
 *                 pasco_init_zeros(), 0, 0, true};
 *             *nw = 2;
 *             *out = units;
 *             return PASCO_OK;
 *     }
 *     static pasco_tnode *dense_call(pasco_tape *tp, const char *options,
 *         size_t n, pasco_tnode *const *x, const pasco_tensor *const *ids,
 *         pasco_tnode *const *w)
 *     {
 *             (void) options; (void) n; (void) ids;
 *             return pasco_t_relu(tp, pasco_t_bias_add(tp,
 *                 pasco_t_matmul(tp, x[0], w[0], false, false), w[1]));
 *     }
 *     static const pasco_layer_fn my_dense = {dense_vars, dense_call};
 *
 *     int main(int argc, char **argv)
 *     {
 *             pasco_layer_register("my_dense", &my_dense);  // every role
 *             return pasco_main(argc, argv, chief);
 *     }
 *     // in chief: a layer on an input 4 wide, then a model of it
 *     pasco_layer l[2];
 *     pasco_layer_function(&l[0], "my_dense", "{}", 1, (int64_t[]){4});
 *     l[1] = pasco_layer_dense(1, PASCO_ACT_SIGMOID);
 *     pasco_model_sequential(&m, 4, 2, l, seed);
 *     pasco_layer_release(&l[0]);     // the model holds its own
 *
 * Its config: {"class_name": "Custom", "config": {"name": "custom",
 * "class": "my_dense", "input_widths": [4], "output_width": 8,
 * "function": "my_dense", "options": {}}}; a worker reading a config
 * that names a function nobody registered fails, naming it.
 *
 * Inputs and output are [batch, width] tensors: a layer's inputs are
 * float nodes (the outputs of earlier layers or model inputs of
 * features); a model input of ids (pasco_model_input.ids) reaches the
 * layer as its integer tensor (ids[j], inputs[j] NULL). A weight that is
 * not trainable is read by a step but enters the tape as a constant (no
 * gradient, never applied); l1 and l2 add Keras's regularizers to the
 * training loss.
 */
#ifndef PASCO_GRAPH_H
#define PASCO_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "initializer.h"
#include "layers.h"
#include "tape.h"
#include "tensor.h"

/* The most weights of a C layer (a graph's may have more). */
#define PASCO_LAYER_FN_MAX_WEIGHTS 16

/* A weight of a C layer, declared by its variables callback: the
 * variable <layer name>/<name>, f32 of shape[0..rank). An initializer of
 * seed 0 gets the model's (layers.h, "Seeds"). */
typedef struct pasco_layer_weight {
	char              name[64]; /* no '/' */
	int32_t           rank;
	int64_t           shape[PASCO_MAX_RANK];
	pasco_initializer init;
	double            l1, l2; /* Keras's regularizers; 0: none */
	bool              trainable;
} pasco_layer_weight;

/* A C layer's functions. Both are called from any thread, several at
 * once (each call has its own tape), and must not block. */
typedef struct pasco_layer_fn {
	/* Its weights and output width from options (the config's
	 * "options", JSON text, "{}" when none) and its inputs' widths
	 * [0..ninputs): weights[0..*nweights), at most
	 * PASCO_LAYER_FN_MAX_WEIGHTS, and *output_width. Called once, when
	 * the layer is made (pasco_layer_function, or a config read).
	 * PASCO_OK, or an error with a message in err (errlen bytes). */
	int (*variables)(const char *options, size_t ninputs,
	    const int64_t *widths, pasco_layer_weight *weights,
	    size_t *nweights, int64_t *output_width, char *err, size_t errlen);
	/* The forward pass on tp: inputs[j] the node of input j (NULL for
	 * an ids input, which is ids[j], i32 or i64), weights[k] the node
	 * of weight k. The output [batch, output_width], or NULL (with the
	 * tape's error set by the op that failed). Whether it trains:
	 * the tape's training flag (pasco_tape_alloc). */
	pasco_tnode *(*call)(pasco_tape *tp, const char *options,
	    size_t ninputs, pasco_tnode *const *inputs,
	    const pasco_tensor *const *ids, pasco_tnode *const *weights);
} pasco_layer_fn;

/* Registers fn (borrowed: it must outlive the program's models) under
 * name (1 to 63 bytes). Registering a name again with the same fn is a
 * no-op; with another, PASCO_EEXIST. PASCO_EINVAL for a bad name or a fn
 * without both functions. Thread-safe. */
int pasco_layer_register(const char *name, const pasco_layer_fn *fn);

/* A Custom layer calling the function registered as name, with options
 * (JSON object text; NULL is "{}"), on ninputs inputs of widths[0..
 * ninputs) (1 to PASCO_LAYER_MAX_INPUTS; the model checks them against
 * what the layer is called on). Named as constructed ("custom",
 * "custom_1", ...). *out holds a reference to the layer's definition:
 * pasco_layer_release it once the models are made (each model holds its
 * own). PASCO_EINVAL (pasco_model_last_error names what was wrong: an
 * unregistered name, options that are no JSON object, the variables
 * callback's message), PASCO_ENOMEM; *out is left alone on failure.
 * Thread-safe. */
int pasco_layer_function(pasco_layer *out, const char *name,
    const char *options, size_t ninputs, const int64_t *widths);

/* A Custom layer from its config (docs/GRAPHS.md, "A custom layer in a
 * model's config": the object under "config", JSON text): an op graph
 * ("graph", and "inference_graph" for a tape that is not training) or a
 * registered function ("function", "options"). The graph is parsed and
 * checked once, here, and shared by every model made from the layer
 * (and their copies on a worker). Its name is the config's, else
 * automatic. Ownership and errors as pasco_layer_function. Thread-safe. */
int pasco_layer_graph(pasco_layer *out, const char *config);

/* Releases what l holds (a Custom layer's definition; other kinds hold
 * nothing) and clears that field. Thread-safe on distinct l. */
void pasco_layer_release(pasco_layer *l);

#endif
