/* A training cluster for the metrics tests (tests/node/metrics_cluster.py):
 * an MLP on make_table's DIR/train.csv, fit for EPOCHS epochs of 100 steps
 * with no validation or checkpoints, so steps go on for as long as a test
 * scrapes. pasco launch ... -- metrics_train DIR EPOCHS */
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>

PASCO_DATASET(train)
{
	char        path[4096];
	const char *files[] = {path};
	snprintf(path, sizeof(path), "%s/train.csv", ctx->argv[1]);
	return pasco_dataset_make_csv(out, files, 1,
	    &(pasco_csv_dataset_options){.label_name = "label",
	        .batch_size                          = 32,
	        .num_epochs                          = 0,
	        .num_shards                          = ctx->num_workers,
	        .shard_index                         = ctx->worker_index});
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	pasco_layer        l[] = {pasco_layer_dense(32, PASCO_ACT_RELU),
	           pasco_layer_dense(10, PASCO_ACT_SOFTMAX)};
	pasco_model       *m   = NULL;
	pasco_strategy    *s   = NULL;
	pasco_coordinator *c   = NULL;
	if (cluster == NULL || argc != 3 || atoi(argv[2]) < 1) {
		fprintf(stderr, "usage: metrics_train DIR EPOCHS\n");
		return 2;
	}
	int rv = pasco_model_sequential(&m, 64, 2, l, 42) ||
	         pasco_model_compile(m,
	             &(pasco_compile_options){
	                 .loss      = "sparse_categorical_crossentropy",
	                 .optimizer = pasco_adam(1e-3, false)}) ||
	         pasco_strategy_create(&s, cluster, NULL) ||
	         pasco_coordinator_create(&c, s, NULL) ||
	         pasco_model_fit(c, m,
	             &(pasco_model_fit_options){.dataset = "train",
	                 .epochs          = atoi(argv[2]),
	                 .steps_per_epoch = 100},
	             NULL);
	if (rv != 0) {
		fprintf(stderr, "metrics_train: %s\n", pasco_last_error());
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
