/*
 * ps memory: how many resident bytes a ps uses per byte of variables and
 * optimizer slots it stores. The benchmark starts its own ps process (this
 * binary in the ps role), reads its resident set (/proc/<pid>/statm) when
 * empty and again after variables are created (values computed on the ps)
 * and one Adam step has been applied to each (two slots per variable),
 * then idle for 2.5 s (a ps keeps its last big transfer buffers for 1 s),
 * and reports the growth beside the bytes stored (baseline: ratio 1.00 is
 * no overhead at all).
 *
 *     pasco launch --ps 1 --workers 1 -- build/bench/ps_memory [--quick]
 *
 * Two layouts: 8 variables of 32 MB (2 MB each with --quick), and 20,000
 * variables of 1 KB (2,000 with --quick).
 */
#include <pasco.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "bench.h"

/* Creates n variables of `floats` f32 each, applies one Adam step to each;
 * returns the bytes stored (values and two slots), or -1. */
static double
fill(pasco_strategy *s, const char *prefix, int n, int64_t floats)
{
	pasco_initializer init = pasco_init_uniform(-1, 1, 3);
	pasco_optimizer   adam = pasco_adam(0.001, false);
	pasco_tensor     *grad;
	int               rv = 0;
	pasco_tensor_alloc(&grad, PASCO_F32, 1, &floats);
	for (int64_t i = 0; i < floats; i++) {
		((float *) grad->data)[i] = 0.01f;
	}
	for (int i = 0; i < n && rv == 0; i++) {
		pasco_variable *v;
		char            name[64];
		snprintf(name, sizeof(name), "%s_%d", prefix, i);
		rv = pasco_variable_create_init(
		    &v, s, name, PASCO_F32, 1, &floats, &init);
		if (rv == 0) {
			rv = pasco_variable_apply_gradient(v, &adam, grad);
			pasco_variable_free(v);
		}
	}
	pasco_tensor_release(grad);
	return rv == 0 ? 3.0 * (double) n * (double) floats * 4 : -1;
}

static int
chief(const pasco_cluster *launch, int argc, char **argv)
{
	bool            quick = false;
	pasco_cluster  *cluster;
	pasco_strategy *s;
	int             failed = 0;
	struct {
		const char *label, *prefix;
		int         n;
		int64_t     floats;
	} layouts[2];

	for (int i = 1; i < argc; i++) {
		quick |= strcmp(argv[i], "--quick") == 0;
	}
	layouts[0].label =
	    quick ? "8 x 2 MB f32 + Adam slots" : "8 x 32 MB f32 + Adam slots";
	layouts[0].prefix = "big";
	layouts[0].n      = 8;
	layouts[0].floats = (quick ? 2 : 32) << 18;
	layouts[1].label  = quick ? "2,000 x 1 KB f32 + Adam slots"
	                          : "20,000 x 1 KB f32 + Adam slots";
	layouts[1].prefix = "small";
	layouts[1].n      = quick ? 2000 : 20000;
	layouts[1].floats = 256;

	printf("ps memory benchmark: resident bytes a ps gains per byte of "
	       "variables + slots stored\n");
	printf("%-34s %14s %14s %8s\n", "layout", "stored MB", "RSS growth MB",
	    "ratio");
	for (int k = 0; k < 2 && !failed; k++) {
		pid_t ps = bench_start_ps(argv[0], launch, &cluster);
		if (ps < 0 || pasco_strategy_create(&s, cluster, NULL) != 0) {
			fprintf(stderr, "ps_memory: the ps did not start\n");
			return 1;
		}
		double before = bench_rss_bytes(ps);
		double stored = fill(
		    s, layouts[k].prefix, layouts[k].n, layouts[k].floats);
		/* steady state: a process keeps its last big transfer buffers
		 * for 1 s of reuse (net/bufcache.c), then lets them go */
		usleep(2500 * 1000);
		double after = bench_rss_bytes(ps);
		if (before < 0 || stored < 0 || after < 0) {
			fprintf(stderr, "ps_memory: %s failed\n",
			    layouts[k].label);
			failed = 1;
		} else {
			printf("%-34s %14.1f %14.1f %7.3fx\n",
			    layouts[k].label, stored / 1e6,
			    (after - before) / 1e6, (after - before) / stored);
			bench_json("ps_memory", layouts[k].label,
			    after - before, "bytes", stored);
		}
		pasco_strategy_destroy(s);
		pasco_cluster_free(cluster);
		kill(ps, SIGTERM);
		waitpid(ps, NULL, 0);
	}
	return failed;
}

int
main(int argc, char **argv)
{
	return pasco_main(argc, argv, chief);
}
