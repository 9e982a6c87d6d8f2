/*
 * A model as data, compiled and trained: Keras's get_config / from_config,
 * compile, fit, evaluate and predict under a parameter-server strategy
 * (issue 20). Layers and the model's wiring are in layers.h; this header
 * is what a program does with a model.
 *
 *     PASCO_DATASET(train_data) { ... (x [batch, 64], y [batch]) batches }
 *     PASCO_DATASET(val_data)   { ... finite: shard ctx->worker_index of
 *                                 ctx->num_workers }
 *
 *     pasco_layer l[] = {pasco_layer_dense(64, PASCO_ACT_RELU),
 *                        pasco_layer_dense(10, PASCO_ACT_SOFTMAX)};
 *     pasco_model *m;
 *     pasco_model_sequential(&m, 64, 2, l, 42);
 *     pasco_model_compile(m, &(pasco_compile_options){
 *         .loss = "sparse_categorical_crossentropy",
 *         .optimizer = pasco_adam(1e-3, false),
 *         .metrics = (const char *[]){"accuracy"}, .nmetrics = 1});
 *     pasco_history h;
 *     pasco_model_fit(coord, m, &(pasco_model_fit_options){
 *         .dataset = "train_data", .epochs = 5, .steps_per_epoch = 100,
 *         .validation_dataset = "val_data", .callbacks = cbs}, &h);
 *     pasco_logs eval;
 *     pasco_model_evaluate(coord, m, &(pasco_model_evaluate_options){
 *         .dataset = "val_data"}, &eval);     // "loss", "accuracy"
 *     pasco_model_predict(coord, m, &(pasco_model_predict_options){
 *         .dataset = "test_data", .dir = "/shared/out"}, NULL);
 *
 * Workers need none of this code: the model travels to them as step
 * arguments (its config, as JSON, and its variable handles), and the
 * library's own step functions (train, evaluate, predict) rebuild it there.
 * Workers need only the dataset factories.
 *
 * Dataset elements, as Keras takes them: a LIST (x, y), x a tensor (a model
 * with one input) or a DICT input name -> tensor, y the targets (mse: the
 * output's shape; binary_crossentropy: 0/1 [batch] or [batch, 1]; sparse
 * categorical: class ids [batch]). Features are f32 or f64 [batch, width];
 * an Embedding's input ids i32 or i64 [batch, k] (or [batch]). predict
 * takes (x, y), y ignored, or x alone.
 *
 * Sample weights (Keras's sample_weight, docs/sample-weights.md): an
 * element may be a LIST (x, y, sample_weight), sample_weight one number
 * per example (f32, f64, i32 or i64 [batch] or [batch, 1]; a NONE item is
 * no weights). fit's training steps and evaluate then weigh each
 * example's loss by it, Keras's "sum_over_batch_size" reduction:
 * sum_i(w_i * loss_i) / batch (so the logged loss is not divided by the
 * weights' sum), regularization penalties added unweighted; the
 * weighted_metrics of compile count with them, the metrics without. A
 * pasco.files dataset (files_dataset.h) yields such triples when its spec
 * names a "sample_weight" feature, and derives them from the labels with
 * "class_weight" ({"<class id>": weight, ...}: Keras's class_weight, the
 * class of a label its integer, or a one-hot row's argmax; a class not
 * named weighs 1). A custom (graph) loss takes no weights (PASCO_EINVAL
 * from the step).
 *
 * Errors: PASCO_EINVAL (bad config, options, data), a step's error, a
 * strategy's; the message, naming the layer, field, op or shapes, is in
 * pasco_model_last_error (this thread's). A step's error ("dense_1: input
 * [32, 63] does not match kernel [64, 10]") comes back from the worker.
 */
#ifndef PASCO_MODEL_H
#define PASCO_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coordinator.h"
#include "evaluator.h"
#include "fit.h"
#include "function.h"
#include "layers.h"
#include "optimizer.h"

/* The model's name ("sequential", "functional" until set). */
const char *pasco_model_name(const pasco_model *m);
int         pasco_model_set_name(pasco_model *m, const char *name);

/* The model's config as JSON, in Keras's get_config spirit, into *out
 * (malloc'd, the caller frees it):
 *   {"class_name": "Sequential" | "Functional",
 *    "config": {"name": ..., "seed": ...,
 *      "inputs": [{"name": ..., "width": ..., "ids": ...}, ...],
 *      "layers": [{"class_name": "Dense", "config": {"name": "dense",
 *          "units": 64, "activation": "relu", "use_bias": true,
 *          "kernel_initializer": {"class_name": "GlorotUniform",
 *              "config": {"seed": 0}},
 *          "bias_initializer": {"class_name": "Zeros", "config": {}},
 *          "kernel_regularizer": null | {"class_name": "L2",
 *              "config": {"l2": 0.01}}},
 *        "inbound_nodes": ["input", ...]}, ...]},   (Functional only)
 *    "compile_config": {...}}                        (once compiled)
 * Embedding: input_dim, output_dim, combiner ("mean", "sum"),
 * embeddings_initializer, partitioner (null, or {"class_name":
 * "FixedShardsPartitioner" | "MinSizePartitioner" | "MaxSizePartitioner" |
 * "CustomPartitioner", "config": {...}}: a custom one's function is not
 * data: a model made from it cannot create its variables); Dropout: rate;
 * Activation: activation; Concatenate: axis (-1). Initializers by Keras's
 * class names (Zeros, Ones, Constant {value}, RandomUniform {minval,
 * maxval, seed}, RandomNormal and TruncatedNormal {mean, stddev, seed},
 * GlorotUniform, GlorotNormal, HeNormal, HeUniform, LecunNormal,
 * LecunUniform {seed}, VarianceScaling {scale, mode, distribution, seed},
 * Orthogonal {gain, seed}: initializer.h); seed 0 means the model's seed
 * decides (layers.h).
 * Seeds above 2^53 are written as strings. Deterministic: the same model
 * gives the same bytes. Thread-safe. */
int pasco_model_to_json(const pasco_model *m, char **out);

/* A model (unbound, no variables) from such JSON; its compile_config, if
 * any, compiled. Unknown fields and bad values are PASCO_EINVAL naming the
 * layer and the field ("layers[1] (dense_1): units must be a positive
 * integer"). *out NULL on failure. Thread-safe. */
int pasco_model_from_json(const char *json, pasco_model **out);

/* compile. loss: Keras's name ("mse", "mean_squared_error",
 * "binary_crossentropy", "sparse_categorical_crossentropy" (class ids),
 * "categorical_crossentropy" (one-hot labels [batch, classes]), "mae",
 * "huber", ...: pasco_loss_from_name's, layers.h) with from_logits, or the
 * JSON of a Keras loss class's config with its parameters ({"class_name":
 * "Huber", "config": {"delta": 2.0}}: pasco_loss_from_config's), which the
 * compile config keeps as such. optimizer: any kind (pasco_sgd, pasco_adagrad, ...; kind 0:
 * Keras's default, RMSprop(0.001)); its iterations field is ignored: with
 * no_global_step false the step applies through the strategy's global
 * step (one step per train step), else each shard counts its applies.
 * metrics: Keras's names: "accuracy" (or "acc": binary accuracy for an
 * output of width 1; sparse categorical accuracy with the
 * sparse_categorical_crossentropy loss; categorical accuracy otherwise),
 * "binary_accuracy", "sparse_categorical_accuracy",
 * "categorical_accuracy", "auc", "precision", "recall" (one probability
 * per example: an output of width 1), "mae", "mse",
 * "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy"
 * (k 5). Binary metrics threshold at 0.5; AUC has 200 thresholds
 * (metrics.h); a from_logits output goes through its sigmoid or softmax
 * first. Logs name a metric as given.
 * A metric with parameters: an entry that starts with '{' is a Keras 3
 * metric object as Keras serializes it, JSON text
 *   {"class_name": "AUC", "config": {"name": "auc_1", "curve": "PR"}}
 * ("module" and "registered_name" beside them are read and ignored; a
 * field left out takes Keras's default): AUC (num_thresholds 200, at most
 * 2048; curve "ROC" | "PR" | "PRGAIN" (or lower case); summation_method
 * "interpolation" | "minoring" | "majoring"; thresholds: a list of at
 * most 64 in [0, 1] instead; from_logits false; multi_label false: every
 * output one label, label_weights (one per output column) weighing their
 * counts; true: one AUC per column (num_labels, if given, is the
 * output's width), averaged, weighted by label_weights), Precision and
 * Recall (thresholds: null (0.5), or one number; top_k; class_id, below
 * the output's width; labels of the output's shape), TopKCategorical
 * Accuracy (k 5; one-hot labels), SparseTopKCategoricalAccuracy (k 5,
 * from_sorted_ids false), MeanSquaredError, RootMeanSquaredError,
 * MeanAbsoluteError, BinaryCrossentropy (from_logits false,
 * label_smoothing 0), BinaryAccuracy (threshold 0.5),
 * SparseCategoricalAccuracy, CategoricalAccuracy; "dtype" null or a
 * name. An object's metric is computed on the raw output, as Keras's is,
 * with Keras 3's definitions (a prediction above a threshold, compared in
 * float32, is positive; a label not 0 is positive). It logs under its
 * config's "name" (the class's snake-case name without one). A name
 * that an earlier metric has gets _1, _2, ... (Keras's auc, auc_1). A
 * bad field is PASCO_EINVAL naming "metrics[k] (Class): field". The
 * compile config travels with the model's config, each metric as it was
 * given. */
typedef struct pasco_compile_options {
	const char        *loss;
	/* A custom loss (docs/GRAPHS.md, "A custom loss"), used instead of
	 * loss when not NULL: the JSON text of {"name": ..., "graph": {...}},
	 * a loss op graph of inputs y_true (the targets, cast to its traced
	 * dtype) and y_pred (the model's output) whose output is the loss, a
	 * scalar, or per-example losses [batch] averaged. Parsed and checked
	 * here (PASCO_EINVAL naming the node and what was wrong); the compile
	 * config writes it as {"class_name": "Graph", "config": {...}} and
	 * the workers run it in fit's and evaluate's steps. from_logits does
	 * not apply. */
	const char        *loss_graph;
	bool               from_logits;
	pasco_optimizer    optimizer;
	const char *const *metrics;  /* names or metric objects' JSON */
	size_t             nmetrics; /* at most 8 */
	bool               no_global_step;
	/* Keras 3's weighted_metrics: metrics as above, counted with each
	 * batch's sample weights (each example's values times its weight,
	 * the weights' sum its count); those of metrics count every example
	 * once. Together with metrics at most 8; logs name one whose name
	 * an earlier metric has weighted_<name> (Keras's). The compile
	 * config keeps them under "weighted_metrics". */
	const char *const *weighted_metrics;
	size_t             nweighted_metrics;
	/* Keras 3's loss_weights: one number per output of the model, its
	 * loss's weight in the total (NULL or 0 of them: 1). A Pasco model
	 * has one output, so at most one; the loss (what fit trains on and
	 * what fit and evaluate report as "loss") is that weight times the
	 * loss's value, plus the regularizers' terms, unscaled, as Keras's
	 * total loss adds them. A weight must be finite; more
	 * weights than outputs are refused naming the count (PASCO_EINVAL).
	 * The compile config keeps it as "loss_weights": a number. */
	const double *loss_weights;
	size_t        nloss_weights;
} pasco_compile_options;

int pasco_model_compile(pasco_model *m, const pasco_compile_options *o);

/* pasco_t_loss (layers.h) with each example's loss times its weight in
 * sample_weight (one number per example of pred, [batch] or [batch, 1];
 * NULL: unweighted), then Keras's "sum_over_batch_size": the weighted sum
 * over the batch's elements divided by their count (kl_divergence and
 * cosine_similarity: by the examples), as keras.losses.Loss.__call__(
 * y_true, y_pred, sample_weight) reduces. The weights are read during the
 * call only. NULL with the tape's error set, naming the shapes, when the
 * weights do not fit. Thread-safe: one tape per thread. */
pasco_tnode *pasco_t_loss_weighted(pasco_tape *tp, const pasco_loss *loss,
    pasco_tnode *pred, const pasco_tensor *labels,
    const pasco_tensor *sample_weight);

/* Keras's optimizer.learning_rate = value, between epochs
 * (ReduceLROnPlateau, LearningRateScheduler): the compiled optimizer's
 * learning rate from the next step scheduled on. PASCO_EINVAL, naming
 * why, when m is not compiled, value is not a finite number > 0, or the
 * optimizer has a learning-rate schedule (as Keras refuses to set the rate
 * of an optimizer made with one). Not thread-safe: call while no step of
 * m is being scheduled. And the learning rate the next step uses
 * (a schedule's value at global_step). */
int    pasco_model_set_learning_rate(pasco_model *m, double value);
double pasco_model_learning_rate(const pasco_model *m, int64_t global_step);

/* Chief: appends the model's step arguments to args (up to cap): its
 * config as one u8 tensor (JSON, owned by the model: valid until it is
 * freed or changed) then its variable handles (pasco_model_create_variables
 * first). *n (in: entries used, out: after the model's) grows by
 * pasco_model_num_args. PASCO_EINVAL without room or variables. */
size_t pasco_model_num_args(const pasco_model *m);
int pasco_model_args(pasco_model *m, pasco_arg *args, size_t cap, size_t *n);

/* Worker, in a step function: the model whose arguments start at argument
 * first (as pasco_model_args put them), rebuilt from its config and bound
 * to the call's handles; owned by the caller (pasco_model_free). The
 * parsed config is cached per process by its bytes, so a step does not
 * parse JSON again: at most PASCO_MODEL_CACHE_ENTRIES configs (16) and
 * PASCO_MODEL_CACHE_MB megabytes (64, configs and their parsed models
 * together), the least recently used dropped first; a config over the
 * bytes alone is parsed at every call (warned once); 0 turns the cache
 * off. Errors are set on the call (pasco_call_fail). Thread-safe. */
int pasco_model_from_call(pasco_call *call, size_t first, pasco_model **out);

/* fit's training steps in flight per worker unless
 * pasco_model_fit_options.window says otherwise: TensorFlow's one (a step
 * computes on variables read before the steps beside it applied theirs;
 * docs/fit.md and docs/benchmarks.md have the measurements). */
#define PASCO_FIT_DEFAULT_WINDOW 1

/* fit: the library's train step (forward, loss, tape, one mixed apply;
 * it returns its loss and its batch's metric counts), steps_per_epoch
 * steps an epoch on the workers' per-worker datasets from `dataset` (a
 * factory name; its elements are (x, y) batches, and it should repeat),
 * through
 * pasco_fit (fit.h): epochs, steps_per_execution, callbacks (checkpoints,
 * TensorBoard, early stopping, backup and restore, progress). Each epoch's
 * logs: "loss" (the mean of its steps' losses), each metric over the
 * epoch's examples (the counts its steps returned, each finished step's
 * once: nothing is kept on a ps, so a ps restored from a checkpoint
 * mid-epoch neither rolls the counts back nor brings back an earlier
 * epoch's, while the batches of steps that finished before it count
 * though their updates to that ps were rolled back), and with
 * validation_dataset, "val_loss" and "val_<metric>", evaluated exactly
 * once as pasco_model_evaluate does; each validation shard's dataset is
 * built once at fit's start, so a missing file fails fit before any
 * training. A ps lost for good, or this chief replaced by a newer one,
 * is named first in the message, before what it made fail. The
 * variables are created first if the model has none. history (may be
 * NULL) gets Keras's History:
 * pasco_history_fini it. Message: pasco_model_last_error. Blocks. Not
 * thread-safe: one fit per coordinator at a time. */
typedef struct pasco_model_fit_options {
	const char      *dataset;
	int32_t          epochs;          /* 0 means 1 */
	int64_t          steps_per_epoch; /* required */
	int32_t          initial_epoch;
	uint32_t         steps_per_execution; /* 0 means 1 */
	const char      *validation_dataset;  /* NULL: none */
	int32_t          validation_shards;   /* 0: the worker count */
	pasco_callbacks *callbacks;           /* not taken over */
	/* Shorthands for the callbacks most runs want, run before those of
	 * callbacks (if any): checkpoint_dir: ModelCheckpoint at each
	 * epoch's end into checkpoint_dir/ckpt-<step>, keeping the newest
	 * checkpoint_keep (0 means 5; below 0, all); logdir: TensorBoard
	 * event files in
	 * logdir/train and logdir/eval, with the optimizer's learning rate as
	 * epoch_learning_rate (a schedule's value at the epoch's end). */
	const char *checkpoint_dir;
	int32_t     checkpoint_keep;
	const char *logdir;
	/* With checkpoint_dir: before training, the newest intact checkpoint
	 * there is restored (a damaged newer one is skipped, with a warning
	 * naming it) and training starts at the epoch it was saved in
	 * (its step / steps_per_epoch, when that is past initial_epoch): a
	 * run started again, after a crash or with more epochs, goes on
	 * where the last one ended. None there: a fresh start. With verbose,
	 * says which it restored. */
	bool resume;
	/* Keras's verbose: a progress display (pasco_callback_progress in
	 * progress_style: on a terminal Keras 3's progress bar; elsewhere a
	 * line at each epoch's end with its logs, val_ ones included);
	 * first, a line for
	 * each shard of a variable split over the ps ("embedding/embeddings/
	 * part_1: rows [4, 8) on ps 1"). */
	bool verbose;
	/* Training steps in flight per worker while fit runs (the
	 * coordinator's window is set to it for the fit, then set back);
	 * 0 means PASCO_FIT_DEFAULT_WINDOW. */
	uint32_t window;
	/* With verbose, Keras's verbose: PASCO_PROGRESS_AUTO ("auto": the
	 * progress bar on a terminal, a line per epoch elsewhere),
	 * PASCO_PROGRESS_BAR (1) or PASCO_PROGRESS_LINES (2); fit.h. */
	pasco_progress_style progress_style;
	/* Exact epochs (Python's fit on numpy arrays,
	 * docs/sample-weights.md): when not NULL, each training step reads
	 * the one batch named for it instead of the next batch of its
	 * worker's `dataset` (which is then not read): step_dataset writes
	 * into name (len bytes, NUL-terminated) the dataset factory name of
	 * step `step` (from 0) of `epoch`, whose first element is that
	 * step's batch; the step function pasco.model_train_batch, on
	 * whichever worker runs it (and again on another after a lost
	 * worker), builds that dataset (worker_index 0 of 1) and trains on
	 * its first element. Names that partition the examples among an
	 * epoch's steps so give each example exactly once per epoch,
	 * whatever the worker count. Called on fit's thread before each
	 * step is scheduled, for every step of a closure of
	 * steps_per_execution steps before it is (its worker reads each
	 * step's batch in turn); an epoch's closures are whole, as Keras's
	 * executions, so steps up to ceil(steps_per_epoch /
	 * steps_per_execution) * steps_per_execution - 1 are asked for.
	 * PASCO_EOUTOFRANGE: the data ran out before
	 * this step, Keras's "input ran out of data": the closure stops
	 * before it, and at a closure's first step the epoch ends there
	 * (its logs over the steps run; an epoch's first step must have
	 * data). Another non-OK return ends fit with that error. */
	int (*step_dataset)(
	    void *user, int32_t epoch, int64_t step, char *name, size_t len);
	void *step_user;
} pasco_model_fit_options;

int pasco_model_fit(pasco_coordinator *c, pasco_model *m,
    const pasco_model_fit_options *o, pasco_history *history);

/* evaluate, exactly once: the factory `dataset` is called once per shard
 * k of `shards` (0: the worker count) with worker_index k and num_workers
 * shards, and must yield that shard's batches and end (a dataset that
 * repeats forever, pasco_dataset_is_infinite, is refused with
 * PASCO_EINVAL, as Keras refuses an infinite dataset without steps;
 * predict the same); a shard cut off by
 * a worker failure is evaluated again from its start, so every example
 * counts once. logs gets "loss" (the mean over examples, regularisation
 * included, as Keras) then each metric by its compile name. Blocks. */
typedef struct pasco_model_evaluate_options {
	const char *dataset;
	int32_t     shards;
} pasco_model_evaluate_options;

int pasco_model_evaluate(pasco_coordinator *c, pasco_model *m,
    const pasco_model_evaluate_options *o, pasco_logs *logs);

/* The file format of pasco_model_predict's output. */
typedef enum pasco_predict_format {
	PASCO_PREDICT_CSV      = 0, /* predictions-KKKKK-of-NNNNN.csv */
	PASCO_PREDICT_TFRECORD = 1, /* predictions-KKKKK-of-NNNNN.tfrecord */
} pasco_predict_format;

/* predict: batch scoring of the shards of `dataset` (called as evaluate
 * calls it), one file per shard, dir/predictions-KKKKK-of-NNNNN.<ext>,
 * in `format`:
 * - PASCO_PREDICT_CSV (the default): .csv, with a header (output, or
 *   output_0, output_1, ... for a wider output) and a row per example
 *   in the shard's order (the factory's shard: sharded by records, as
 *   make_csv's num_shards and a pasco.files dataset with fewer files
 *   than shards are, shard k holds examples k, k + shards, ...; Python's
 *   predict puts the rows back in the files' order);
 * - PASCO_PREDICT_TFRECORD: .tfrecord, a record per example in the
 *   shard's order, each a tf.train.Example with one float_list feature
 *   "output" holding the example's output row (all its values), framed
 *   as pasco_tfrecord_writer writes (tfrecord.h).
 * A shard's file is written to a temporary name and renamed when
 * complete, so a shard run again after a worker failure replaces it:
 * each example once. dir must exist and be reachable by every worker.
 * *rows (may be NULL) gets the number of examples written. An unknown
 * format is PASCO_EINVAL naming the field. Blocks. */
typedef struct pasco_model_predict_options {
	const char          *dataset;
	int32_t              shards;
	const char          *dir;
	pasco_predict_format format;
} pasco_model_predict_options;

int pasco_model_predict(pasco_coordinator *c, pasco_model *m,
    const pasco_model_predict_options *o, int64_t *rows);

/* A sidecar evaluator of the compiled model m's checkpoints (Keras's
 * SidecarEvaluator, evaluator.h): an evaluator with o's options
 * (checkpoint_dir, logdir, final_step, timeout_ms, latest_only, json_out,
 * on_evaluated; num_shards 0 means 4), m's variables made on its own
 * strategy, and each checkpoint evaluated as pasco_model_evaluate does,
 * exactly once over the shards of the factory `dataset`, reported as
 * "loss" and m's metrics by their compile names. o's eval_fn,
 * metric_names and reduce are m's (leave them unset). *count and
 * *last_step (may be NULL) get how many checkpoints were evaluated and
 * the last one's step. Returns as pasco_evaluator_run does; the message
 * is in pasco_model_last_error. Blocks. */
int pasco_model_evaluator_run(pasco_model *m, const char *dataset,
    const pasco_evaluator_options *o, int64_t *count, int64_t *last_step);

/* Saving (Keras's model.save, load_model, save_weights, load_weights).
 *
 * A weights file is one safetensors file (readable by numpy, the
 * safetensors package and every common framework) holding the model's
 * variables whole by their names ("dense/kernel"; a partitioned one's
 * shards put together), their optimizer slots by Keras's names
 * ("dense/kernel/m", "dense/kernel/v": checkpoint.h lists them), the
 * global step ("global_step": the optimizer's iterations), and each
 * dynamic embedding table's keys, rows, slots and admission counts as its
 * ps tasks held them ("<table>/ps_<k>/keys", ...), with the manifest of
 * that layout in the file's metadata ("format": "pasco-weights-1",
 * "manifest": the JSON of a one-file checkpoint, checkpoint_impl.h, with
 * every tensor's CRC-32C). Keras 3 writes HDF5 (.weights.h5); Pasco writes
 * safetensors because its checkpoints already are (base/safetensors.c,
 * checked by CRC-32C), it needs no HDF5 library, and it is a flat header
 * plus raw bytes that a reader can check before it trusts it.
 *
 * A .keras file is a zip (as Keras's) of config.json (pasco_model_to_json:
 * the model's config with its compile_config), metadata.json
 * ({"pasco_version", "date_saved" as Keras writes it, "weights",
 * "ps_tasks" of the saving cluster, "variables"}) and
 * model.weights.safetensors, stored uncompressed (no zip64: a model of
 * 4 GiB or more is refused, naming the size; save its weights alone).
 *
 * Saving: every ps writes its shards and slots into a staging directory
 * made beside path (".pasco-save-XXXXXX", removed after), which must be
 * on storage the ps tasks reach and under their checkpoint root
 * (PASCO_CHECKPOINT_DIR), as a checkpoint directory must; the chief reads
 * it back, checks it and writes path (atomically: a temporary file
 * renamed over it). Loading is done by the chief alone: the file is read
 * and checked, then each variable is assigned as the strategy now places
 * and partitions it and its slots set, whatever the ps count then and now
 * (pasco_checkpoint_restore's rules; a dynamic table's rows go to the ps
 * their key's hash picks). So a model loaded into another cluster predicts
 * the same, bit for bit, and a fit after it continues where the saved one
 * stopped (the same slots and optimizer iterations).
 *
 * Errors: PASCO_EINVAL (no variables created yet, a path of the wrong
 * suffix, a file lacking one of the model's variables, a variable of
 * another shape), PASCO_EPROTO (a damaged or foreign file: not a zip, a
 * CRC that does not match, no manifest), PASCO_ENOTFOUND, PASCO_EIO, or a
 * ps's error; the message, naming the file and what is wrong, is in
 * pasco_model_last_error. All block; none is thread-safe against a fit of
 * the same model. */

/* The weights of m's variables (created through s) to path. */
int pasco_model_save_weights(
    pasco_strategy *s, const pasco_model *m, const char *path);

/* Loads path (a weights file, or a .keras file's weights) into m's
 * variables, created through s; the global step too when m counts its
 * steps by it. Variables of the file that m lacks are left out. */
int pasco_model_load_weights(pasco_strategy *s, pasco_model *m, const char *path);

/* Saves m (compiled or not, its variables created through s) to path,
 * which must end in ".keras" (PASCO_EINVAL: "Invalid filepath extension
 * for saving. ..."). */
int pasco_model_save(pasco_strategy *s, const pasco_model *m, const char *path);

/* The model saved at path (a ".keras" file): made from its config
 * (compiled when it was), its variables created through s and loaded.
 * *out is the caller's (pasco_model_free), NULL on failure. */
int pasco_model_load(pasco_model **out, pasco_strategy *s, const char *path);

/* Keras's model.summary() into *out (malloc'd text, the caller frees
 * it): 'Model: "<name>"', the table of layers (Layer (type), Output
 * Shape, Param #; a functional model also has its InputLayer rows and
 * Connected to, "dense[0][0]"), the totals as Keras prints them ("Total
 * params: 1,234 (4.82 KB)", trainable and non-trainable: a
 * Normalization's mean, variance and count, and variables named
 * .../moving_mean or .../moving_variance, take no gradient), then a line
 * per variable: its name, its shape and where it lives: "ps 1", or each
 * shard's rows and ps task ("part_0 rows [0, 10) on ps 0, part_1 rows
 * [10, 20) on ps 1"), or "dynamic table, keys hashed over ps 0, 1" (a
 * dynamic table's rows grow on the ps: they count for no parameters), or
 * "not created yet". PASCO_EINVAL for a NULL model, PASCO_ENOMEM.
 * Thread-safe against other readers of m. */
int pasco_model_summary(const pasco_model *m, char **out);

#endif
