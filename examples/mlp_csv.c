/* An MLP on DIR/train.csv and DIR/eval.csv (64 numbers and a label of 10
 * classes, from examples/make_table), fit with validation, checkpoints and
 * TensorBoard in DIR: pasco launch --ps 2 --workers 2 -- mlp_csv DIR */
#include <pasco.h>
#include <stdio.h>

/* This worker's shard of DIR/name (DIR: the program's argument). */
static int
csv(const pasco_dataset_context *ctx, const char *name, int64_t epochs,
    pasco_dataset **out)
{
	char        path[4096];
	const char *files[] = {path};
	snprintf(path, sizeof(path), "%s/%s", ctx->argv[1], name);
	return pasco_dataset_make_csv(out, files, 1,
	    &(pasco_csv_dataset_options){.label_name = "label",
	        .batch_size                          = 32,
	        .num_epochs                          = epochs,
	        .shuffle_buffer_size                 = 1000,
	        .num_shards                          = ctx->num_workers,
	        .shard_index                         = ctx->worker_index});
}

PASCO_DATASET(train)
{
	return csv(ctx, "train.csv", 0, out);
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
	if (cluster == NULL || argc != 2) {
		fprintf(stderr, "usage: pasco launch ... -- mlp_csv DIR\n");
		return 2;
	}
	int rv = pasco_model_sequential(&m, 64, 3, l, 42) ||
	         pasco_model_compile(m,
	             &(pasco_compile_options){
	                 .loss      = "sparse_categorical_crossentropy",
	                 .optimizer = pasco_adam(1e-3, false),
	                 .metrics   = (const char *[]){"accuracy"},
	                 .nmetrics  = 1}) ||
	         pasco_strategy_create(&s, cluster, NULL) ||
	         pasco_coordinator_create(&c, s, NULL) ||
	         pasco_model_fit(c, m,
	             &(pasco_model_fit_options){.dataset = "train",
	                 .epochs                         = 5,
	                 .steps_per_epoch                = 100,
	                 .validation_dataset             = "eval",
	                 .checkpoint_dir                 = argv[1],
	                 .logdir                         = argv[1],
	                 .verbose                        = true},
	             NULL);
	if (rv != 0) {
		fprintf(stderr, "mlp_csv: %s\n", pasco_last_error());
	}
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
