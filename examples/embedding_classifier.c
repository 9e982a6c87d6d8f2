/*
 * The model of TensorFlow's "Parameter server training with
 * ParameterServerStrategy" tutorial, in Pasco.
 *
 * Examples are 3 distinct words from a 7-word vocabulary; the label is yes
 * (1) iff "avenger" is one of them. Words are looked up in the vocabulary
 * (index 0 is out-of-vocabulary, as Keras's StringLookup), embedded by an
 * [8, 16384] table split in 2 shards by the fixed partitioner, averaged over
 * the 3 words, and fed to one sigmoid unit with an L2(1e-4) kernel
 * regulariser. RMSprop(0.1) and binary cross-entropy; a training accuracy
 * metric lives on a ps. Epochs of scheduled steps join at epoch boundaries;
 * then evaluation both ways the tutorial shows: on the coordinator, and
 * scheduled on workers with the eval metric on a ps (printed last as
 * `accuracy = <value>`).
 *
 *     pasco launch --ps 2 --workers 2 -- build/examples/embedding_classifier
 *
 * Options: --epochs N (5), --steps N (20 per epoch), --eval-steps N (20),
 * --checkpoint-dir DIR: save a checkpoint each epoch (keeping 3) and, when
 * DIR already holds one, resume from the newest intact one
 * (pasco_checkpoint_restore_latest: a damaged newer one is skipped), as
 * the tutorial's CheckpointManager loop does after a coordinator restart.
 * --fit: train through pasco_fit instead (the tutorial's Model.fit), with
 * its callbacks: a progress display, ModelCheckpoint in --checkpoint-dir
 * (keeping 3), BackupAndRestore in DIR/backup (a restarted chief resumes
 * at the interrupted epoch), TensorBoard in --logdir DIR (DIR/train,
 * DIR/eval), and validation each epoch, exactly once over the held-out
 * examples. With --logdir and no --checkpoint-dir, checkpoints go to
 * DIR/checkpoints. An evaluator task (pasco launch --evaluator) is a
 * sidecar evaluator of those checkpoints (the tutorial's
 * SidecarEvaluator): one JSON line per checkpoint, eval scalars in
 * DIR/eval, and it ends after the final one:
 *
 *     pasco launch --ps 2 --workers 2 --evaluator -- \
 *         build/examples/embedding_classifier --fit --logdir /tmp/run
 *
 * RMSprop at 0.1 (the tutorial's rate) oscillates once the loss is near 0,
 * because its running mean of squared gradients collapses: the tutorial
 * trains 20 steps; 100 are plenty.
 */
#include <math.h>
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "embedding_model.h"
#include "options.h"

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Creates the model's variables and the two metric states; on failure
 * those made so far are left for the caller to free (the rest are NULL). */
static int
create_model(pasco_strategy *s, model *m, pasco_variable **acc,
    pasco_variable **eval_acc)
{
	pasco_initializer emb_init    = pasco_init_uniform(-0.05, 0.05, 1);
	pasco_initializer kernel_init = pasco_init_glorot_uniform(2);
	pasco_initializer zeros       = pasco_init_zeros();
	int32_t           rank;
	int64_t           shape[2];
	int               rv;

	pasco_metric_state_shape(PASCO_METRIC_ACCURACY, &rank, shape);
	if ((rv = pasco_variable_create_init(&m->emb, s, "embedding",
	         PASCO_F32, 2, (int64_t[]){TABLE_ROWS, DIM}, &emb_init)) !=
	        0 ||
	    (rv = pasco_variable_create_init(&m->kernel, s, "dense/kernel",
	         PASCO_F32, 2, (int64_t[]){DIM, 1}, &kernel_init)) != 0 ||
	    (rv = pasco_variable_create_init(&m->bias, s, "dense/bias",
	         PASCO_F32, 1, (int64_t[]){1}, &zeros)) != 0 ||
	    (rv = pasco_variable_create_init(
	         acc, s, "accuracy", PASCO_F64, rank, shape, &zeros)) != 0 ||
	    (rv = pasco_variable_create_init(eval_acc, s, "eval_accuracy",
	         PASCO_F64, rank, shape, &zeros)) != 0) {
		report(rv, "creating the model's variables",
		    pasco_strategy_error(s));
	}
	return rv;
}

/* A fresh iterator of the per-worker dataset made by factory. */
static int
make_iterator(pasco_coordinator *c, const char *factory,
    pasco_per_worker_dataset **d, pasco_per_worker_iterator **it)
{
	int rv;
	*it = NULL;
	if ((rv = pasco_per_worker_dataset_create(d, c, factory)) != 0 ||
	    (rv = pasco_per_worker_iterator_create(it, *d)) != 0) {
		char what[128];
		snprintf(
		    what, sizeof(what), "creating the %s iterator", factory);
		return report(rv, what, NULL);
	}
	return PASCO_OK;
}

/* One epoch of steps; prints its loss and accuracy. */
static int
train_epoch(pasco_coordinator *c, pasco_variable *acc, pasco_arg *args, int e,
    int steps)
{
	double loss, accuracy;
	int    rv;

	if ((rv = pasco_metric_reset(acc)) != 0) {
		return report(
		    rv, "resetting the accuracy", pasco_variable_error(acc));
	}
	if ((rv = run_epoch(c, "train_step", args, 5, steps, &loss)) != 0) {
		return rv;
	}
	if ((rv = pasco_metric_result(
	         acc, PASCO_METRIC_ACCURACY, &accuracy)) != 0) {
		return report(
		    rv, "reading the accuracy", pasco_variable_error(acc));
	}
	printf("Finished epoch %d, loss = %.4f, accuracy = %.4f\n", e, loss,
	    accuracy);
	fflush(stdout);
	return PASCO_OK;
}

static int
train(pasco_coordinator *c, model *m, pasco_variable *acc, int first,
    int epochs, int steps, pasco_strategy *s, const char *ckpt_dir)
{
	pasco_per_worker_dataset  *d     = NULL;
	pasco_per_worker_iterator *it    = NULL;
	double                     start = now_s();
	int                        rv;

	if ((rv = make_iterator(c, "train_data", &d, &it)) != 0) {
		goto out;
	}
	pasco_arg args[] = {pasco_arg_iterator(it), pasco_arg_variable(m->emb),
	    pasco_arg_variable(m->kernel), pasco_arg_variable(m->bias),
	    pasco_arg_variable(acc)};
	for (int e = first; e < epochs && rv == 0; e++) {
		rv = train_epoch(c, acc, args, e, steps);
		/* the tutorial's CheckpointManager: save each epoch, keep 3 */
		if (rv == 0 && ckpt_dir != NULL &&
		    (rv = pasco_checkpoint_save(
		         s, ckpt_dir, (int64_t) (e + 1) * steps, 3)) != 0) {
			report(rv, "checkpoint", pasco_strategy_error(s));
		}
	}
	if (rv == 0) {
		double secs = now_s() - start;
		printf("trained %d steps in %.2f s: %.1f steps/s\n",
		    (epochs - first) * steps, secs,
		    (epochs - first) * steps / secs);
	}
out:
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	return rv;
}

/* The tutorial's Model.fit path: pasco_fit with a progress display and
 * the tutorial's three callbacks, TensorBoard (--logdir), ModelCheckpoint
 * (--checkpoint-dir, keeping 3) and BackupAndRestore (DIR/backup), which
 * resumes an interrupted run at its epoch; validation each epoch on the
 * held-out examples, exactly once (eval_shard). */
static int
train_fit(pasco_coordinator *c, pasco_strategy *s, model *m,
    pasco_variable *acc, int epochs, int steps, const char *ckpt_dir,
    const char *logdir)
{
	pasco_per_worker_dataset  *d   = NULL;
	pasco_per_worker_iterator *it  = NULL;
	pasco_callbacks           *cbs = NULL;
	pasco_callback             cb;
	pasco_history              h       = {0};
	const char                *names[] = {"accuracy"};
	char                       backup[4096];
	int                        rv;

	if ((rv = make_iterator(c, "train_data", &d, &it)) != 0) {
		goto out;
	}
	pasco_arg args[] = {pasco_arg_iterator(it), pasco_arg_variable(m->emb),
	    pasco_arg_variable(m->kernel), pasco_arg_variable(m->bias),
	    pasco_arg_variable(acc)};
	if ((rv = pasco_callbacks_create(&cbs)) == 0 && ckpt_dir != NULL) {
		snprintf(backup, sizeof(backup), "%s/backup", ckpt_dir);
		if ((rv = pasco_callback_backup_restore(&cb, s, backup)) ==
		    0) {
			rv = pasco_callbacks_add(cbs, cb);
		}
		if (rv == 0 &&
		    (rv = pasco_callback_checkpoint(&cb,
		         &(pasco_checkpoint_callback_options){
		             .strategy = s, .dir = ckpt_dir, .keep = 3})) ==
		        0) {
			rv = pasco_callbacks_add(cbs, cb);
		}
	}
	if (rv == 0 && logdir != NULL &&
	    (rv = pasco_callback_tensorboard(
	         &cb, &(pasco_tensorboard_options){
	                  .logdir = logdir, .learning_rate = 0.1})) == 0) {
		rv = pasco_callbacks_add(cbs, cb);
	}
	if (rv == 0 && (rv = pasco_callback_progress(&cb, NULL)) == 0) {
		rv = pasco_callbacks_add(cbs, cb);
	}
	if (rv != 0) {
		report(rv, "setting up the callbacks", pasco_fit_error());
		goto out;
	}
	pasco_fit_options o = {.epochs = epochs,
	    .steps_per_epoch           = steps,
	    .step_function             = "fit_step",
	    .args                      = args,
	    .nargs                     = 5,
	    .metric_names              = names,
	    .nmetrics                  = 1,
	    .validation_function       = "eval_shard",
	    .validation_args           = args + 1,
	    .nvalidation_args          = 3,
	    .callbacks                 = cbs};
	if ((rv = pasco_fit(c, &o, &h)) != 0) {
		report(rv, "training failed", pasco_fit_error());
	} else if (h.count > 0) {
		double loss, val;
		pasco_logs_get(&h.epochs[h.count - 1], "loss", &loss);
		pasco_logs_get(&h.epochs[h.count - 1], "val_accuracy", &val);
		printf(
		    "fit: %d epochs from epoch %d, loss = %.4f, val_accuracy "
		    "= %.4f\n",
		    (int) h.count, (int) h.initial_epoch, loss, val);
	}
out:
	pasco_history_fini(&h);
	pasco_callbacks_free(cbs);
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	return rv;
}

/* Inline evaluation on the coordinator: the tutorial's first way. */
static int
evaluate_on_coordinator(model *m, double *accuracy)
{
	pasco_value        *examples = make_examples(64, 3);
	pasco_tensor       *pred = NULL, *avg = NULL, *kernel = NULL;
	int                 rv, correct = 0;
	const pasco_tensor *ids =
	    pasco_value_as_tensor(pasco_value_item(examples, 0));
	const pasco_tensor *labels =
	    pasco_value_as_tensor(pasco_value_item(examples, 1));
	if (examples == NULL) {
		return report(
		    PASCO_ENOMEM, "making the evaluation examples", NULL);
	}
	if ((rv = forward(m, ids, NULL, &pred, &avg, &kernel)) == 0) {
		for (int64_t i = 0; i < pred->count; i++) {
			correct += (pasco_tensor_get(pred, i) > 0.5) ==
			           (pasco_tensor_get(labels, i) > 0.5);
		}
		*accuracy = (double) correct / (double) pred->count;
	} else {
		report(rv, "evaluating on the coordinator",
		    pasco_variable_error(m->emb)[0]
		        ? pasco_variable_error(m->emb)
		    : pasco_variable_error(m->kernel)[0]
		        ? pasco_variable_error(m->kernel)
		        : pasco_variable_error(m->bias));
	}
	pasco_tensor_release(pred);
	pasco_tensor_release(avg);
	pasco_tensor_release(kernel);
	pasco_value_free(examples);
	return rv;
}

/* Distributed evaluation: eval steps scheduled on workers, the metric on
 * a ps: the tutorial's second way. */
static int
evaluate_on_workers(pasco_coordinator *c, model *m, pasco_variable *eval_acc,
    int steps, double *accuracy)
{
	pasco_per_worker_dataset  *d  = NULL;
	pasco_per_worker_iterator *it = NULL;
	int                        rv;
	/* a fresh count: a restored state would mix in an earlier run's */
	if ((rv = pasco_metric_reset(eval_acc)) != 0) {
		return report(rv, "resetting the eval accuracy",
		    pasco_variable_error(eval_acc));
	}
	if ((rv = make_iterator(c, "eval_data", &d, &it)) != 0) {
		goto out;
	}
	pasco_arg args[] = {pasco_arg_iterator(it), pasco_arg_variable(m->emb),
	    pasco_arg_variable(m->kernel), pasco_arg_variable(m->bias),
	    pasco_arg_variable(eval_acc)};
	for (int i = 0; i < steps && rv == 0; i++) {
		rv = pasco_schedule(c, "eval_step", args, 5, NULL);
	}
	if (rv == 0) {
		rv = pasco_join(c);
	}
	if (rv != 0) {
		report(rv, "evaluation on the workers failed",
		    pasco_coordinator_error(c));
	} else if ((rv = pasco_metric_result(
	                eval_acc, PASCO_METRIC_ACCURACY, accuracy)) != 0) {
		report(rv, "reading the eval accuracy",
		    pasco_variable_error(eval_acc));
	}
out:
	pasco_per_worker_iterator_free(it);
	pasco_per_worker_dataset_free(d);
	return rv;
}

/* Prints how the embedding is split over the ps tasks. */
static int
print_layout(pasco_variable *emb)
{
	for (int32_t i = 0; i < pasco_variable_num_shards(emb); i++) {
		int32_t task;
		int64_t off, rows;
		int     rv = pasco_variable_shard(emb, i, &task, &off, &rows);
		if (rv != 0) {
			return report(
			    rv, "reading the embedding's layout", NULL);
		}
		printf("embedding/part_%d: rows [%lld, %lld) on ps %d\n", i,
		    (long long) off, (long long) (off + rows), task);
	}
	return PASCO_OK;
}

/* Restores the newest intact checkpoint in dir, if any (a damaged newer
 * one is skipped, with a warning naming it), into *first_epoch. */
static int
resume(pasco_strategy *s, const char *dir, int steps, int *first_epoch)
{
	char    path[4096];
	int64_t step;
	int     rv = pasco_checkpoint_latest(dir, path, sizeof(path), &step);
	if (rv == PASCO_ENOTFOUND) {
		return PASCO_OK; /* a fresh start */
	}
	if ((rv = pasco_checkpoint_restore_latest(s, dir, &step)) != 0) {
		return report(
		    rv, "restoring a checkpoint", pasco_strategy_error(s));
	}
	*first_epoch = (int) (step / steps);
	printf("resuming from %s/ckpt-%lld: step %lld, epoch %d\n", dir,
	    (long long) step, (long long) step, *first_epoch);
	return PASCO_OK;
}

/* The evaluator task: a sidecar evaluator of the chief's checkpoints in
 * ckpt_dir, evaluating each on the held-out examples (eval_shard, over 4
 * shards, exactly once), until the one of step final_step. */
static int
evaluate_checkpoints(const char *ckpt_dir, const char *logdir,
    int64_t final_step, int timeout_s)
{
	static const char *const metrics[] = {"accuracy"};
	pasco_evaluator         *e         = NULL;
	pasco_variable          *acc = NULL, *eval_acc = NULL;
	model                    m = {NULL, NULL, NULL};
	pasco_evaluator_options  o = {.checkpoint_dir = ckpt_dir,
	     .eval_fn                                 = "eval_shard",
	     .num_shards                              = 4,
	     .metric_names                            = metrics,
	     .num_metrics                             = 1,
	     .logdir                                  = logdir,
	     .final_step                              = final_step,
	     .timeout_ms = (int64_t) timeout_s * 1000};
	int                      rv;

	if (ckpt_dir == NULL) {
		printf(
		    "evaluator: nothing to evaluate without --checkpoint-dir "
		    "or --logdir\n");
		return 0;
	}
	if ((rv = pasco_evaluator_create(&e, &o)) != 0) {
		return report(
		    rv, "starting the evaluator", pasco_evaluator_error(NULL));
	}
	if ((rv = create_model(
	         pasco_evaluator_strategy(e), &m, &acc, &eval_acc)) == 0) {
		pasco_arg args[] = {pasco_arg_variable(m.emb),
		    pasco_arg_variable(m.kernel), pasco_arg_variable(m.bias)};
		if ((rv = pasco_evaluator_run(e, args, 3)) != 0) {
			report(rv, "evaluation", pasco_evaluator_error(e));
		} else {
			printf(
			    "evaluator: evaluated %lld checkpoints, the last "
			    "at step %lld\n",
			    (long long) pasco_evaluator_count(e),
			    (long long) pasco_evaluator_last_step(e));
		}
	}
	pasco_variable_free(m.emb);
	pasco_variable_free(m.kernel);
	pasco_variable_free(m.bias);
	pasco_variable_free(acc);
	pasco_variable_free(eval_acc);
	pasco_evaluator_destroy(e);
	return rv == 0 ? 0 : 1;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	int                    epochs = 5, steps = 20, eval_steps = 20;
	int                    eval_timeout = 300;
	char                   default_ckpt[4096];
	pasco_partitioner      two = pasco_fixed_shards_partitioner(2);
	pasco_strategy_options so  = {.partitioner = &two};
	pasco_strategy        *s   = NULL;
	pasco_coordinator     *c   = NULL;
	pasco_variable        *acc = NULL, *eval_acc = NULL;
	model                  m          = {NULL, NULL, NULL};
	double                 inline_acc = NAN, worker_acc = NAN;
	const char            *ckpt_dir = NULL, *logdir = NULL;
	int                    first = 0, use_fit = 0, rv;
	example_option         opts[] = {
	            {"epochs", OPTION_INT, &epochs, 1, 1e7, "N  epochs (5)"},
	            {"steps", OPTION_INT, &steps, 1, 1e7, "N  steps per epoch (20)"},
	            {"eval-steps", OPTION_INT, &eval_steps, 1, 1e7,
	                "N  evaluation steps on the workers (20)"},
	            {"checkpoint-dir", OPTION_PATH, &ckpt_dir, 0, 0,
	                "DIR  save a checkpoint each epoch; resume from DIR's latest"},
	            {"fit", OPTION_FLAG, &use_fit, 0, 0,
	                "  train with pasco_fit and callbacks (the tutorial's "
	                        "Model.fit)"},
	            {"logdir", OPTION_PATH, &logdir, 0, 0,
	                "DIR  with --fit: TensorBoard event files in DIR/train, "
	                        "DIR/eval (and checkpoints in DIR/checkpoints)"},
	            {"eval-timeout", OPTION_INT, &eval_timeout, 0, 1e6,
	                "S  the evaluator ends after S s without a new "
	                        "checkpoint (300; 0: never)"},
	            {NULL}};

	if ((rv = parse_options(argc, argv,
	         "pasco launch --ps N --workers M -- embedding_classifier "
	         "[OPTIONS]",
	         opts)) >= 0) {
		return rv;
	}
	if (ckpt_dir == NULL && logdir != NULL && use_fit) {
		snprintf(default_ckpt, sizeof(default_ckpt), "%s/checkpoints",
		    logdir);
		ckpt_dir = default_ckpt;
	}
	if (pasco_cluster_task_role(cluster) == PASCO_ROLE_EVALUATOR) {
		return evaluate_checkpoints(
		    ckpt_dir, logdir, (int64_t) epochs * steps, eval_timeout);
	}
	if ((rv = pasco_strategy_create(&s, cluster, &so)) != 0) {
		report(rv, "cannot reach the cluster",
		    pasco_strategy_error(NULL));
		goto out;
	}
	if ((rv = create_model(s, &m, &acc, &eval_acc)) != 0 ||
	    (rv = print_layout(m.emb)) != 0) {
		goto out;
	}
	/* One closure in flight per worker, as TensorFlow: RMSprop at 0.1 is
	 * sensitive to stale gradients. */
	pasco_coordinator_options co = {.window = 1};
	if ((rv = pasco_coordinator_create(&c, s, &co)) != 0) {
		report(rv, "creating the coordinator", NULL);
		goto out;
	}
	if (use_fit) {
		rv = train_fit(c, s, &m, acc, epochs, steps, ckpt_dir, logdir);
	} else if (ckpt_dir == NULL ||
	           (rv = resume(s, ckpt_dir, steps, &first)) == 0) {
		rv = train(c, &m, acc, first, epochs, steps, s, ckpt_dir);
	}
	if (rv != 0 || (rv = evaluate_on_coordinator(&m, &inline_acc)) != 0) {
		goto out;
	}
	printf("Evaluation accuracy (on the coordinator): %.4f\n", inline_acc);
	if ((rv = evaluate_on_workers(
	         c, &m, eval_acc, eval_steps, &worker_acc)) != 0) {
		goto out;
	}
	printf("accuracy = %.4f\n", worker_acc);
	if (!(worker_acc >= 0.95)) {
		fprintf(stderr, "accuracy %.4f is below 0.95\n", worker_acc);
	}
out:
	pasco_coordinator_destroy(c);
	pasco_variable_free(m.emb);
	pasco_variable_free(m.kernel);
	pasco_variable_free(m.bias);
	pasco_variable_free(acc);
	pasco_variable_free(eval_acc);
	pasco_strategy_destroy(s);
	return rv == 0 && worker_acc >= 0.95 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
