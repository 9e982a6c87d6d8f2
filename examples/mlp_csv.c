/*
 * An MLP classifier of a CSV file with a header: 64 numeric columns and a
 * "label" (a class of 10), as examples/make_table writes them in
 * DIR/train.csv and DIR/eval.csv; fit by the workers on the ps, with
 * validation, checkpoints in DIR/ckpt, TensorBoard in DIR/train, DIR/eval.
 *
 *     pasco launch --ps 2 --workers 2 --checkpoint-root DIR -- mlp_csv DIR
 */
#include <pasco.h>
#include <stdio.h>

/* Shard worker_index of num_workers of DIR/name, batches of 32. */
static int
csv(const pasco_dataset_context *ctx, const char *name, int64_t epochs,
    pasco_dataset **out)
{
	char        path[4096];
	const char *files[] = {path};
	snprintf(path, sizeof(path), "%s/%s", ctx->argv[1], name);
	int rv = pasco_dataset_make_csv(out, files, 1,
	    &(pasco_csv_dataset_options){.label_name = "label",
	        .batch_size                          = 32,
	        .num_epochs                          = epochs,
	        .shuffle_buffer_size                 = 1000});
	return rv ? rv
	          : pasco_dataset_shard(
	                out, *out, ctx->num_workers, ctx->worker_index);
}

PASCO_DATASET(train)
{
	return csv(ctx, "train.csv", 0, out); /* 0: repeated */
}

PASCO_DATASET(eval)
{
	return csv(ctx, "eval.csv", 1, out);
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	pasco_layer        l[] = {pasco_layer_dense(64, PASCO_ACT_RELU),
	           pasco_layer_dense(64, PASCO_ACT_RELU),
	           pasco_layer_dense(10, PASCO_ACT_SOFTMAX)};
	pasco_model       *m   = NULL;
	pasco_strategy    *s   = NULL;
	pasco_coordinator *c   = NULL;
	pasco_callbacks   *cb  = NULL;
	pasco_callback     ck, tb;
	pasco_logs         logs;
	double             acc;
	char               dir[4096];
	if (cluster == NULL || argc != 2) {
		fprintf(stderr, "usage: pasco launch ... -- mlp_csv DIR\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/ckpt", argv[1]);
	int rv =
	    pasco_model_sequential(&m, 64, 3, l, 42) ||
	    pasco_model_compile(m,
	        &(pasco_compile_options){
	            .loss      = "sparse_categorical_crossentropy",
	            .optimizer = pasco_adam(1e-3, false),
	            .metrics   = (const char *[]){"accuracy"},
	            .nmetrics  = 1}) ||
	    pasco_strategy_create(&s, cluster, NULL) ||
	    pasco_coordinator_create(&c, s, NULL) ||
	    pasco_callbacks_create(&cb) ||
	    pasco_callback_checkpoint(
	        &ck, &(pasco_checkpoint_callback_options){.strategy = s,
	                 .dir                                       = dir}) ||
	    pasco_callbacks_add(cb, ck) ||
	    pasco_callback_tensorboard(
	        &tb, &(pasco_tensorboard_options){.logdir = argv[1]}) ||
	    pasco_callbacks_add(cb, tb) ||
	    pasco_model_fit(c, m,
	        &(pasco_model_fit_options){.dataset = "train",
	            .epochs                         = 5,
	            .steps_per_epoch                = 100,
	            .validation_dataset             = "eval",
	            .callbacks                      = cb},
	        NULL) ||
	    pasco_model_evaluate(c, m,
	        &(pasco_model_evaluate_options){.dataset = "eval"}, &logs) ||
	    !pasco_logs_get(&logs, "accuracy", &acc);
	if (rv) {
		fprintf(stderr, "mlp_csv: %s %s\n", pasco_model_last_error(),
		    pasco_strategy_error(s));
	} else {
		printf("accuracy = %.4f\n", acc);
	}
	pasco_callbacks_free(cb);
	pasco_coordinator_destroy(c);
	pasco_model_free(m);
	pasco_strategy_destroy(s);
	return rv;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
