/*
 * The C chief of the Python-chief benchmark (bench/python_chief.py runs it
 * alternately with bench/python_chief_fit.py, the same chief in Python):
 * examples/mlp_csv's MLP (64-64-64-10, Adam 1e-3) fit for N steps on the
 * dataset named by its argument (the "pasco.files:{spec}" name the
 * Python package gives DIR/train.csv, so both read the same data the same
 * way), no validation, no display. Prints one line,
 *     python_chief: c N steps WALL_S s CPU_S s
 * WALL_S the wall time of pasco_model_fit, CPU_S this process's CPU time
 * (CLOCK_PROCESS_CPUTIME_ID) over it.
 *
 *     pasco launch --ps 2 --workers 2 -- build/bench/python_chief NAME N
 */
#include <pasco.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double
seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int
chief(const pasco_cluster *cluster, int argc, char **argv)
{
	pasco_layer        l[]  = {pasco_layer_dense(64, PASCO_ACT_RELU),
	            pasco_layer_dense(64, PASCO_ACT_RELU),
	            pasco_layer_dense(10, PASCO_ACT_SOFTMAX)};
	pasco_model       *m    = NULL;
	pasco_strategy    *s    = NULL;
	pasco_coordinator *c    = NULL;
	double             wall = 0, cpu = 0;
	long               steps;
	if (cluster == NULL || argc != 3 || (steps = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: pasco launch ... -- python_chief "
		                "DATASET-NAME STEPS\n");
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
	         pasco_model_create_variables(m, s);
	if (rv == 0) {
		wall = seconds(CLOCK_MONOTONIC);
		cpu  = seconds(CLOCK_PROCESS_CPUTIME_ID);
		rv   = pasco_model_fit(c, m,
		      &(pasco_model_fit_options){.dataset = argv[1],
		          .epochs                         = 1,
		          .steps_per_epoch                = steps},
		      NULL);
		cpu  = seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu;
		wall = seconds(CLOCK_MONOTONIC) - wall;
	}
	if (rv != 0) {
		fprintf(stderr, "python_chief: %s%s\n",
		    pasco_model_last_error(), pasco_strategy_error(s));
	} else {
		printf("python_chief: c %ld steps %.6f s %.6f s\n", steps,
		    wall, cpu);
	}
	pasco_coordinator_destroy(c);
	pasco_model_free(m);
	pasco_strategy_destroy(s);
	return rv != 0;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
