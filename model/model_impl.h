/*
 * Models as data and compiled models, between model/config.c (the JSON
 * of layers), model/compile.c (the compile config, metrics' counts),
 * model/sequential.c (the batch steps), and the layers above that run
 * them: worker/model_steps.c (the built-in step functions) and
 * coordinator/model_fit.c (fit, evaluate, predict).
 */
#ifndef PASCI_MODEL_IMPL_H
#define PASCI_MODEL_IMPL_H

#include <cjson/cJSON.h>

#include "layers_impl.h"
#include "pasco/model.h"

/* JSON readers: each names `where` in its message (pasco_model_last_error)
 * and returns PASCO_EINVAL on a bad field. */
int pasci_json_check_keys(
    const cJSON *o, const char *const *keys, size_t n, const char *where);
int pasci_json_number(const cJSON *o, const char *key, double *v,
    bool integral, double lo, const char *where);
int pasci_json_bool(
    const cJSON *o, const char *key, bool *v, const char *where);
int pasci_json_int(
    const cJSON *o, const char *key, int64_t *v, double lo, const char *where);
/* A size field (pasci_json_int's) at most `most`, past which it is
 * refused naming the field and the bound ("layers[0] (d): units is
 * 9000000000000000; the most is 2^31 (2147483648)"). The bounds, checked as a
 * config is read, before any variable is made: */
int pasci_json_size(const cJSON *o, const char *key, int64_t *v, double lo,
    int64_t most, const char *where);
/* That refusal for a value v already read: PASCO_EINVAL past most. */
int pasci_json_bound(
    const char *where, const char *key, int64_t v, int64_t most);
/* A width: Dense units, Embedding output_dim, an input's width, a
 * Custom layer's output_width, CategoryEncoding num_tokens, a lookup's
 * num_oov_indices and max_tokens, a Reshape or noise_shape dimension
 * (2^31: a variable read whole each step holds at most 2^31 elements, as a
 * graph's weight). */
#define PASCI_MAX_WIDTH ((int64_t) 1 << 31)
/* A count of ids: Embedding input_dim (its table at most 2^40 elements),
 * Hashing and HashedCrossing num_bins, Discretization num_bins. */
#define PASCI_MAX_IDS ((int64_t) 1 << 40)
/* A seed: a whole number, or a string of digits (past 2^53). */
int pasci_json_seed(const cJSON *o, uint64_t *seed, const char *where);
int pasci_json_string(
    const cJSON *o, const char *key, const char **s, const char *where);
int pasci_json_read_class(const cJSON *o, const char *const *names, size_t n,
    int *kind, const cJSON **config, const char *where);
/* {"class_name": cls, "config": {}} under key; the config, or NULL. */
cJSON *pasci_json_class(cJSON *parent, const char *key, const char *cls);

/* The compile config into root ("compile_config") when m is compiled;
 * false without memory. And back: m compiled from root's, if any. */
bool pasci_compile_to_json(cJSON *root, const pasco_model *m);
/* A learning-rate schedule from Keras's serialized form ({"class_name":
 * "ExponentialDecay", "config": {...}}): PASCO_EINVAL naming what is wrong
 * (pasco_model_last_error). And s in that form, a malloc'd string (NULL
 * without memory or for no schedule). */
int   pasci_lr_schedule_from_json(const char *text, pasco_lr_schedule *s);
char *pasci_lr_schedule_json(const pasco_lr_schedule *s);
/* The optimizer's check at compile (kind, learning_rate, clipping):
 * PASCO_EINVAL naming what is wrong (model/optimizer_config.c). */
int pasci_opt_compile_check(const pasco_optimizer *o);
/* Writes opt's hyperparameters, by Keras's names, into config (the
 * "config" of its compile config's optimizer). False when opt's kind is no
 * optimizer's or cJSON runs out of memory. */
bool pasci_opt_config_write(cJSON *config, const pasco_optimizer *opt);
/* Reads a compile config's optimizer, {"class_name": Keras's class name,
 * "config": its fields}, into opt: the kind's defaults (Keras's) with the
 * fields given; o NULL is RMSprop's defaults. PASCO_EINVAL, naming the
 * class or the field, for a class that is no optimizer's, a field that
 * is not the optimizer's, or a value of the wrong type. */
int pasci_opt_config_read(const cJSON *o, pasco_optimizer *opt);
int pasci_compile_from_json(const cJSON *root, pasco_model *m);

/* A compile config's loss of class Graph (its "config": name, graph)
 * parsed into *out, holding one reference. PASCO_EINVAL naming at and
 * what was wrong; PASCO_ENOMEM. */
int pasci_loss_graph_read(
    const cJSON *config, pasci_loss_graph **out, const char *at);
pasci_loss_graph *pasci_loss_graph_hold(pasci_loss_graph *lg);
void              pasci_loss_graph_release(pasci_loss_graph *lg);
const char       *pasci_loss_graph_name(const pasci_loss_graph *lg);
/* Its memory, about; 0 for NULL. */
size_t pasci_loss_graph_bytes(const pasci_loss_graph *lg);
/* Whether its y_true, as traced, holds class ids: integers, or a rank
 * below y_pred's (Keras's test for sparse labels). */
bool pasci_loss_graph_sparse_labels(const pasci_loss_graph *lg);
/* {"class_name": "Graph", "config": {"name", "graph"}} under key. */
bool pasci_loss_graph_write(
    cJSON *parent, const char *key, const pasci_loss_graph *lg);
/* The loss of pred against targets y on tp (a scalar node), or NULL with
 * the tape's error set. sw (NULL: none): one weight per example of pred,
 * [batch] or [batch, 1]; the loss is then Keras's sum(w_i * l_i) / batch
 * of the graph's per-example losses (a scalar loss: loss * mean(w)). */
pasco_tnode *pasci_loss_graph_run(const pasci_loss_graph *lg, pasco_tape *tp,
    const pasco_tensor *y, pasco_tnode *pred, const pasco_tensor *sw);

/* Metric k of c from text (o->metrics[k]: a name, or the JSON of a Keras
 * metric object, {"class_name": ..., "config": {...}}): its kind, spec
 * and unique log name into c. PASCO_EINVAL naming metrics[k] and the
 * field. (model/metric_spec.c) */
int pasci_metric_read(
    const pasco_model *m, pasci_compile *c, size_t k, const char *text);
/* The counts metric kind with spec s adds to the state vector. */
size_t pasci_metric_state_len(
    pasci_metric_kind kind, const pasci_metric_spec *s);
/* Metric k of c appended to a compile config's "metrics" array as it was
 * given (a name, or {"class_name", "config"}). False without memory. */
bool pasci_metric_write(cJSON *metrics, const pasci_compile *c, size_t k);
/* A compile config's "metrics" (names, or objects printed into owned[k],
 * which the caller frees) into texts and *n. PASCO_EINVAL naming the
 * entry that is neither. */
int pasci_metric_texts(
    const cJSON *ms, const char **texts, char **owned, size_t *n);

/* Adds a batch's metric counts (output `pred` against targets y) into
 * state (m->compile.state_len numbers). PASCO_EINVAL with a message
 * naming the metric and shapes when y does not fit. */
int pasci_metric_counts(const pasco_model *m, const pasco_tensor *pred,
    const pasco_tensor *y, double *state);
/* The same with sample weights sw (one per example, or NULL): the
 * weighted metrics (compile's weighted_metrics) count each example's
 * values times its weight, and weigh its count by it (Keras's
 * update_state(y, pred, sample_weight)); the others count it once. */
int pasci_metric_counts_weighted(const pasco_model *m,
    const pasco_tensor *pred, const pasco_tensor *y, const pasco_tensor *sw,
    double *state);
/* The same with the output's mask (NULL: none; else one number per row
 * of pred, a sequence's [batch, steps]): a sequence output counts per
 * step, and the metrics Keras masks count only the steps whose mask is
 * not 0 (metric_counts.c). PASCO_EINVAL naming both shapes when the mask
 * does not fit. */
int pasci_metric_counts_masked(const pasco_model *m, const pasco_tensor *pred,
    const pasco_tensor *y, const pasco_tensor *sw, const pasco_tensor *mask,
    double *state);

/* Metric k's value from the state (NaN when nothing was counted). */
double pasci_metric_result(
    const pasco_model *m, size_t k, const double *state);

/* pasci_model_loss_out (layers_impl.h) that also gives the output's
 * mask in *mask (an Embedding's mask_zero carried to it; NULL: none),
 * which weighs the loss as Keras's does (pasci_loss_mask_weights) and
 * which the metrics take (pasci_metric_counts_masked). */
pasco_tnode *pasci_model_loss_masked(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, pasco_loss loss, pasco_tnode *const *nodes,
    pasco_tnode **out, pasco_tnode **mask);

/* A training step on a batch: read, loss (each example's times its
 * sample weight in sw, when not NULL), gradient, one mixed apply with
 * opt; *loss gets the loss; state (may be NULL) the metrics' counts. On
 * failure the tape's error. Blocks. */
int pasci_model_train_batch(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, const pasco_optimizer *opt, double *loss,
    double *state);

/* The forward pass on tp (pasco_model_call_with) with the variables'
 * nodes (pasci_model_read's), the inputs' tensors (ids are looked up in
 * them) and feats (may be NULL; else ninputs entries, each NULL or the
 * node that is that feature input, made on tp, so a gradient reaches what
 * made it; a NULL one becomes a constant of its tensor). The output node,
 * or NULL with the tape's error set. */
pasco_tnode *pasci_model_forward(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, pasco_tnode *const *feats,
    pasco_tnode *const *nodes);

/* An evaluation on a batch: read, loss (weighted by sw, as the train
 * step's); sums[0] += loss * batch, sums[1] += batch, sums + 2 gets the
 * metrics' counts. */
int pasci_model_eval_batch(const pasco_model *m, pasco_tape *tp,
    const pasco_tensor *const *inputs, const pasco_tensor *y,
    const pasco_tensor *sw, double *sums);

/* x, y and the sample weights of a dataset element (a LIST (x, y) or
 * (x, y, sample_weight), or x alone when y is not needed: *y NULL; *sw
 * NULL without weights; sw may be NULL when the caller takes none), and
 * the model's inputs from x (a tensor for a model with one input, or a
 * DICT by input name), borrowed from e. */
int pasci_model_element(const pasco_model *m, const pasco_value *e,
    bool need_y, const pasco_tensor **inputs, const pasco_tensor **y,
    const pasco_tensor **sw);

/* Sample weights sw (NULL: none) as one weight per element of x (each
 * element its row's weight), in tp's arena, into *w (NULL for no sw).
 * PASCO_EINVAL with the tape failed naming `name` and the shapes when sw
 * is not one number per example of x. (model/ops_loss.c) */
int pasci_loss_weights(pasco_tape *tp, const char *name, const pasco_tnode *x,
    const pasco_tensor *sw, const double **w);
/* mse (kind PASCO_LOSS_MSE) or binary crossentropy (of probabilities, a
 * sigmoid's taken through its logits, or of logits) of pred against
 * labels, each example weighted by sw (NULL: unweighted). */
pasco_tnode *pasci_t_elem_loss(pasco_tape *tp, pasco_loss_kind kind,
    bool from_logits, pasco_tnode *pred, const pasco_tensor *labels,
    const pasco_tensor *sw);
/* pasco_t_softmax_crossentropy with each example weighted by sw. */
pasco_tnode *pasci_t_softmax_crossentropy_w(pasco_tape *tp, pasco_tnode *x,
    const pasco_tensor *labels, const pasco_tensor *sw);

/* The batch size of an element's first input. */
int64_t pasci_model_batch_size(
    const pasco_model *m, const pasco_tensor *const *in);

/* Keras's losses as data (model/losses.c). pasci_loss_check: l's
 * parameters as Keras takes them (PASCO_EINVAL naming at and the field).
 * pasci_loss_config_read: a name (a string) or a class's config
 * ({"class_name", "config"}) into l with Keras's defaults for what it does
 * not give. pasci_loss_config_write: {"class_name", "config"} under key,
 * every argument of the class; false without memory.
 * pasci_loss_smooth_labels: *out the labels smoothed as l's
 * label_smoothing says (f64, owned by the caller), or NULL when l has
 * none. */
int  pasci_loss_check(const pasco_loss *l, const char *at);
int  pasci_loss_config_read(const cJSON *o, pasco_loss *l, const char *at);
bool pasci_loss_config_write(
    cJSON *parent, const char *key, const pasco_loss *l);
int pasci_loss_smooth_labels(const pasco_loss *l, const pasco_tensor *y,
    int64_t classes, pasco_tensor **out);

/* Keras's mask and sample weights of a loss as one weight per row of the
 * output out (its rows: [batch * steps...] of a sequence [batch,
 * steps..., dim], else [batch]), the loss's sample weights once out is
 * flattened to rows: row r of example b weighs sw[b] (sw NULL: 1; sw
 * of one weight per step, pasci_loss_step_weights: sw[r]) times,
 * with a mask (one number per row, 0: masked; NULL: none), 0 for a masked
 * row and rows / (unmasked rows) for another (Keras's apply_mask with
 * sum_over_batch_size: the loss is the weighted sum over the unmasked
 * rows divided by their count; 0 when all are masked). *w (f64 [rows],
 * owned by the caller) is NULL when sw serves as it is (no mask, one row
 * per example). PASCO_EINVAL naming layer and the shapes when the mask or
 * the weights do not fit out. Any thread. */
/* Whether sw holds one weight per step of the sequence output out
 * (Keras's [batch, T] weights of a [batch, T, D] output: sw's shape is
 * out's without its last dimension, out of rank 3 or more). */
bool pasci_loss_step_weights(const pasco_tensor *sw, const pasco_tensor *out);

int pasci_loss_mask_weights(const pasco_tensor *out, const pasco_tensor *mask,
    const pasco_tensor *sw, const char *layer, pasco_tensor **w);

/* A layer's constraint under key (model/constraint_config.c): null for
 * none, else Keras's {"class_name": "MaxNorm", "config": {"max_value",
 * "axis"}} or {"class_name": "NonNeg", "config": {}}; and back (absent or
 * null: none; PASCO_EINVAL naming where and the field). */
bool pasci_json_write_constraint(
    cJSON *parent, const char *key, const pasco_constraint *c);
int pasci_json_read_constraint(const cJSON *parent, const char *key,
    pasco_constraint *c, const char *where);

#endif
