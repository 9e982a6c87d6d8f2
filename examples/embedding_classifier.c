/*
 * The tutorial model (tutorial.h) trained with pasco_model_fit (Model.fit)
 * on 2 ps. --checkpoint-dir: a checkpoint each epoch (keeping 3), resuming
 * from the newest intact one. --fit: the tutorial's callbacks (progress,
 * BackupAndRestore, TensorBoard in --logdir) and validation. An evaluator
 * task is a SidecarEvaluator of the checkpoints.
 *
 *     pasco launch --ps 2 --workers 2 -- build/examples/embedding_classifier
 */
#include "options.h"
#include "tutorial.h"

static int
print_epoch(void *user, pasco_fit_context *ctx, const pasco_logs *logs)
{
	double loss = NAN, acc = NAN;
	(void) user;
	pasco_logs_get(logs, "loss", &loss);
	pasco_logs_get(logs, "accuracy", &acc);
	printf("Finished epoch %d, loss = %.4f, accuracy = %.4f\n", ctx->epoch,
	    loss, acc);
	return fflush(stdout);
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	int epochs = 5, steps = 20, timeout = 300, fit = 0, first = 0, rv;
	const char        *ckpt = NULL, *logdir = NULL;
	char               dir[4096];
	double             acc = NAN, t0 = now_s();
	pasco_partitioner  two = pasco_fixed_shards_partitioner(2);
	pasco_strategy    *s   = NULL;
	pasco_coordinator *c   = NULL;
	pasco_callbacks   *cbs = NULL;
	pasco_logs         logs;
	pasco_model       *m      = tutorial_model(false);
	example_option     opts[] = {
	        {"epochs", OPTION_INT, &epochs, 1, 1e7, "N  epochs (5)"},
	        {"steps", OPTION_INT, &steps, 1, 1e7, "N  steps per epoch (20)"},
	        {"checkpoint-dir", OPTION_PATH, &ckpt, 0, 0,
	            "DIR  a checkpoint each epoch; resume from DIR's newest"},
	        {"fit", OPTION_FLAG, &fit, 0, 0,
	            "  progress, BackupAndRestore, TensorBoard, validation"},
	        {"logdir", OPTION_PATH, &logdir, 0, 0,
	            "DIR  with --fit: TensorBoard (and checkpoints) in DIR"},
	        {"eval-timeout", OPTION_INT, &timeout, 0, 1e6,
	            "S  the evaluator's wait for a checkpoint (300 s)"},
	        {NULL}};
	if ((rv = parse_options(argc, argv,
	         "pasco launch --ps N --workers M -- embedding_classifier "
	         "[OPTIONS]",
	         opts)) >= 0 ||
	    m == NULL) {
		pasco_model_free(m);
		return rv >= 0
		           ? rv
		           : report(1, "the model", pasco_model_last_error());
	}
	if (ckpt == NULL && logdir != NULL && fit) {
		snprintf(dir, sizeof(dir), "%s/checkpoints", logdir);
		ckpt = dir;
	}
	if (pasco_cluster_task_role(cluster) == PASCO_ROLE_EVALUATOR) {
		return evaluate_model_checkpoints(m, "eval_data", ckpt, logdir,
		    (int64_t) epochs * steps, timeout,
		    "--checkpoint-dir or --logdir");
	}
	if ((rv = pasco_strategy_create(&s, cluster,
	         &(pasco_strategy_options){.partitioner = &two})) != 0 ||
	    (rv = pasco_model_create_variables(m, s)) != 0) {
		report(rv, "creating the model", pasco_model_last_error());
		goto out;
	}
	print_layout(pasco_model_variable(m, 0));
	/* One step per worker at a time (TF's): RMSprop 0.1 hates staleness */
	if ((rv = pasco_coordinator_create(
	         &c, s, &(pasco_coordinator_options){.window = 1})) != 0 ||
	    (rv = resume_latest(s, fit ? NULL : ckpt, steps, &first)) != 0 ||
	    (rv = fit_callbacks(
	         s, fit, ckpt, 3, fit, fit ? logdir : NULL, 0.1, &cbs)) != 0 ||
	    (rv = pasco_callbacks_add(cbs, (pasco_callback){.name = "print",
	                                       .epoch_end = print_epoch})) !=
	        0) {
		goto out;
	}
	if ((rv = pasco_model_fit(c, m,
	         &(pasco_model_fit_options){.dataset = "train_data",
	             .epochs                         = epochs,
	             .steps_per_epoch                = steps,
	             .initial_epoch                  = first,
	             .validation_dataset = fit ? "eval_data" : NULL,
	             .callbacks          = cbs},
	         NULL)) == 0) {
		printf("trained %d steps in %.2f s: %.1f steps/s\n",
		    (epochs - first) * steps, now_s() - t0,
		    (epochs - first) * steps / (now_s() - t0));
	}
	if (rv != 0 ||
	    (rv = pasco_model_evaluate(c, m,
	         &(pasco_model_evaluate_options){.dataset = "eval_data"},
	         &logs)) != 0) {
		report(rv, "training failed", pasco_model_last_error());
	} else if (pasco_logs_get(&logs, "accuracy", &acc)) {
		printf("accuracy = %.4f\n", acc);
	}
out:
	pasco_callbacks_free(cbs);
	pasco_coordinator_destroy(c);
	pasco_model_free(m);
	pasco_strategy_destroy(s);
	return rv == 0 && acc >= 0.95 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
