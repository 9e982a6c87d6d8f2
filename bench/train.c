/*
 * Training throughput: the two models of the PyTorch peer
 * (bench/peers/torch_rpc.py) trained through Pasco, in steps/s and
 * examples/s with 1, 2, 4, 8 ... workers (up to the launch's, and that
 * count), beside the same step run in this one
 * process with no network (the compute ceiling: forward, backward and the
 * SGD update on local tensors).
 *
 *   mlp      784-256-10, ReLU, softmax cross-entropy
 *   softmax  784-10 softmax regression
 *
 * A fixed synthetic batch of 64 per worker, SGD 0.05, every parameter on
 * ps 0. A step (one closure) reads the parameters
 * (pasco_variable_read_all), computes the gradients and applies them on
 * the ps (pasco_variable_apply_gradients, SGD).
 *
 *     pasco launch --ps 1 --workers 4 -- build/bench/train [--steps N]
 *
 * N steps per figure (default 2000), best of 2.
 */
#include "train.h"

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	long   steps = 2000;
	size_t nw    = pasco_cluster_count(cluster, PASCO_ROLE_WORKER);
	size_t sizes[8], nsizes = 0;

	for (int i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "--steps") == 0) {
			steps = atol(argv[i + 1]);
		}
	}
	for (size_t w = 1; w <= nw && nsizes < 7; w *= 2) {
		sizes[nsizes++] = w;
	}
	if (nsizes > 0 && sizes[nsizes - 1] != nw) {
		sizes[nsizes++] = nw;
	}
	printf("training benchmark: batch %d, SGD %.2f, parameters on ps 0, "
	       "%ld steps per figure, best of %d\n",
	    BATCH, LR, steps, TRAIN_REPEATS);
	for (size_t k = 0; k < sizeof(MODELS) / sizeof(MODELS[0]); k++) {
		const model *m       = &MODELS[k];
		double       ceiling = in_process(m->nvars, steps);
		char         label[128];
		printf("%-40s %10.0f steps/s %10.0f examples/s\n", m->name,
		    ceiling, ceiling * BATCH);
		snprintf(label, sizeof(label), "%s, in one process", m->name);
		bench_json("train", label, ceiling, "steps/s", 0);
		for (size_t w = 0; w < nsizes; w++) {
			double rate = distributed(cluster, m, sizes[w], steps);
			if (rate <= 0) {
				fprintf(stderr,
				    "train: %s with %zu workers failed\n",
				    m->name, sizes[w]);
				return 1;
			}
			snprintf(label, sizeof(label), "%s, %zu worker%s",
			    m->name, sizes[w], sizes[w] > 1 ? "s" : "");
			printf(
			    "  %-38s %10.0f steps/s %10.0f examples/s  %.2fx "
			    "one process\n",
			    label, rate, rate * BATCH, rate / ceiling);
			bench_json("train", label, rate, "steps/s", ceiling);
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
